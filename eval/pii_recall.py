"""Span-level recall of the pseudonymizer on the generated labelled set (eval/pii_corpus.py).

A private entity (a private person's name, e-mail, phone) counts as replaced when the detector's
spans cover every one of its letters and digits (a first name replaced with the surname left in the
text is a miss); a "keep" entity (public figure, organisation, product, place) counts as intact
when no detected span touches it. Cost is wall time per text of `Pseudonymizer.detect`, after a
warm-up, on this shared machine.

    PYTHONPATH=. python -m eval.pii_recall --split heldout
    PYTHONPATH=. python -m eval.pii_recall --split heldout --configs current,default --show_misses 20
"""

from __future__ import annotations

import argparse
import collections
import time

from backends.llm.pseudonymize import Pseudonymizer
from eval.pii_corpus import KEEP_KINDS, PRIVATE_KINDS, SPLITS, generate


def _covered(text: str, start: int, end: int, spans: list[tuple[int, int]]) -> bool:
    return all(any(s <= i < e for s, e in spans) for i in range(start, end) if text[i].isalnum())


def _touched(start: int, end: int, spans: list[tuple[int, int]]) -> bool:
    return any(s < end and start < e for s, e in spans)


def evaluate_spans(detect, examples: list[dict]) -> dict:
    """detect(text) -> [(type, start, end)]: per entity kind, how many were replaced (private) or
    left intact (keep), with the misses, and the mean ms per text."""
    hits, totals = collections.Counter(), collections.Counter()
    misses: dict[str, list] = collections.defaultdict(list)
    started = time.perf_counter()
    for example in examples:
        text = example["text"]
        spans = [(start, end) for _, start, end in detect(text)]
        for entity in example["entities"]:
            kind, start, end = entity["kind"], entity["start"], entity["end"]
            totals[kind] += 1
            ok = (_covered(text, start, end, spans) if kind in PRIVATE_KINDS
                  else not _touched(start, end, spans))
            hits[kind] += ok
            if not ok:
                misses[kind].append((entity["value"], text))
    ms = 1000 * (time.perf_counter() - started) / max(1, len(examples))
    private = sum(hits[k] for k in PRIVATE_KINDS), sum(totals[k] for k in PRIVATE_KINDS)
    keep = sum(hits[k] for k in KEEP_KINDS), sum(totals[k] for k in KEEP_KINDS)
    return {"per_kind": {k: (hits[k], totals[k]) for k in PRIVATE_KINDS + KEEP_KINDS if totals[k]},
            "private": private, "keep": keep, "ms_per_text": ms, "misses": dict(misses)}


def configurations() -> dict[str, Pseudonymizer]:
    return {"current": Pseudonymizer(name_rules=False),
            "default": Pseudonymizer()}


def _share(pair: tuple[int, int]) -> str:
    return f"{pair[0]}/{pair[1]} = {pair[0] / max(1, pair[1]):.1%}"


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--split", choices=SPLITS, default="heldout")
    parser.add_argument("--examples", type=int, default=600)
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument("--configs", default="current,default",
                        help=f"comma-separated, of: {', '.join(configurations())}")
    parser.add_argument("--show_misses", type=int, default=0, help="print up to N misses per kind (made-up data)")
    args = parser.parse_args(argv)
    examples = generate(args.split, args.examples, args.seed)
    entities = sum(len(e["entities"]) for e in examples)
    print(f"split {args.split}: {len(examples)} texts, {entities} labelled entities (seed {args.seed})")
    available = configurations()
    for name in args.configs.split(","):
        pseudonymizer = available[name]
        pseudonymizer.setup()
        pseudonymizer.detect("warm-up text for Jane Doe")
        result = evaluate_spans(pseudonymizer.detect, examples)
        per_kind = "  ".join(f"{k} {_share(v)}" for k, v in result["per_kind"].items())
        print(f"\n{name}: private names {_share(result['per_kind']['PERSON'])}, all private PII "
              f"{_share(result['private'])}, keep intact {_share(result['keep'])}, "
              f"{result['ms_per_text']:.1f} ms/text\n  {per_kind}")
        for kind, rows in result["misses"].items():
            for value, text in rows[:args.show_misses]:
                print(f"  miss {kind}: {value!r} in {text!r}")


if __name__ == "__main__":
    main()
