"""Measures the pseudonymizer on hand-labelled made-up examples (eval/data/pii_labelled.jsonl).

Prints, for the shipped configuration and for one that also replaces ORGANIZATION entities:
- PII recall: labelled PII values that no longer appear in the pseudonymized text (overall, per type);
- topic entities wrongly replaced: labelled topic-bearing words (languages, countries, products,
  programming tools) that the pseudonymizer removed.

    python -m eval.pii.pseudonymization
"""

from __future__ import annotations

import argparse
import collections
import json
import os
import time

from backends.pii.pseudonymize import PII_ENTITIES, Pseudonymizer

DATA = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "data", "pii_labelled.jsonl")


def evaluate(pseudonymizer: Pseudonymizer, examples: list[dict]) -> dict:
    found, total = collections.Counter(), collections.Counter()
    wrongly_replaced, missed, lost = 0, [], []
    keep_total = 0
    started = time.perf_counter()
    for example in examples:
        out = pseudonymizer.pseudonymize(example["text"])
        for kind, value in example["pii"]:
            total[kind] += 1
            if value in out:
                missed.append((kind, value))
            else:
                found[kind] += 1
        for word in example["keep"]:
            keep_total += 1
            if word not in out:
                wrongly_replaced += 1
                lost.append(word)
    seconds = time.perf_counter() - started
    return {"recall": sum(found.values()) / max(1, sum(total.values())), "pii": sum(total.values()),
            "found": sum(found.values()), "per_type": {k: f"{found[k]}/{total[k]}" for k in sorted(total)},
            "topic_entities": keep_total, "topic_entities_replaced": wrongly_replaced, "lost": lost,
            "missed": missed, "ms_per_text": 1000 * seconds / len(examples)}


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--data", default=DATA)
    parser.add_argument("--show_misses", action="store_true", help="print the missed values (made-up data)")
    args = parser.parse_args(argv)
    examples = [json.loads(line) for line in open(args.data, encoding="utf-8") if line.strip()]
    configs = {"shipped (ORGANIZATION kept)": Pseudonymizer(),
               "also replacing ORGANIZATION": Pseudonymizer(entities=PII_ENTITIES + ("ORGANIZATION",))}
    print(f"{len(examples)} hand-labelled examples ({args.data})")
    for label, pseudonymizer in configs.items():
        pseudonymizer.setup()
        pseudonymizer.pseudonymize("warm-up")
        result = evaluate(pseudonymizer, examples)
        print(f"\n{label}")
        print(f"  PII recall: {result['found']}/{result['pii']} = {result['recall']:.1%}  per type: {result['per_type']}")
        print(f"  topic-bearing entities wrongly replaced: {result['topic_entities_replaced']}/"
              f"{result['topic_entities']} {result['lost']}")
        print(f"  {result['ms_per_text']:.1f} ms per text")
        if args.show_misses:
            print(f"  missed: {result['missed']}")


if __name__ == "__main__":
    main()
