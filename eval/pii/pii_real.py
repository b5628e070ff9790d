"""Pseudonymization on real prompts: hand labels over the shared hh-rlhf and arena-hard data.

eval/data/pii_real_labels.jsonl labels people and places in the user turns of the shared data sets
(../shared/data/hh_rlhf_harmless_test.jsonl, arena_hard_v2_prompts.jsonl) by reference only: one row
per span, {"conversation_id", "message" (index into its messages), "start", "end" (characters of that
message's content), "label", "sha256" (the first 12 hex digits of the span text's SHA-256), "split",
and "invented": true for a character the user made up}. The text stays in the shared data set; this
script reads it from there at run time (--data_dir) and checks every span against its hash. The
labelling rule is in docs/evaluation.md ("Private names in real prompts").

Labels: private_person (to be replaced), public_figure, fictional_character, place (to be kept
intact), ambiguous (not scored). A private person counts as replaced when the detected spans cover
every one of its letters and digits; a kept entity counts as intact when no detected span touches it
(eval/pii/pii_recall.py's rules). Each conversation is detected as the job pseudonymizes it: all of its
messages together, so a name found in one turn is replaced where it recurs.

The split is fixed in the file: "dev" is the half (by a hash of the conversation id) whose misses the
rules were written against, "heldout" the half only scored, and "second" a later set of conversations
outside both halves, labelled after the rules and the judge's prompt were written (docs/evaluation.md,
"The second set"), only scored. --show_misses prints real text: it only shows the dev split's, and
writes nothing.

    .venv/bin/python -m eval.pii.pii_real --configs current,default
    .venv/bin/python -m eval.pii.pii_real --configs default --show_misses 50
    .venv/bin/python -m eval.pii.pii_real --configs judge --splits dev --judge_cache /tmp/judge-cache
    .venv/bin/python -m eval.pii.pii_real --configs default --splits second

The "judge" configuration adds the local model's public-figure verdicts (backends/pii/person_judge.py,
--llm_model, one llama.cpp thread); --splits dev scores the dev half alone (what a change is tuned on).
Without --splits, all three splits are scored. The "score" configuration (issue 61) adds the local
model's P(yes) (person_judge.ScoreJudge) to the default's keep-list of public figures and hard private-context rules;
--curve 0.27,0.31,0.30/1.1 scores it at several thresholds (after a slash: a given name alone's) from one
run of the model; "without_keeplist" is the default before the keep-list was switched on.

    .venv/bin/python -m eval.pii.pii_real --configs without_keeplist,score --splits dev --judge_cache /tmp/sc --curve 0.29,0.31
"""

from __future__ import annotations

import argparse
import collections
import hashlib
import json
import os
import time

from eval.pii.pii_recall import configurations, covered, touched
from eval.tables import count_share

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
LABELS = os.path.join(ROOT, "eval", "data", "pii_real_labels.jsonl")
DATA_DIR = os.path.join(ROOT, "..", "shared", "data")
SOURCES = {"hh_harmless-": "hh_rlhf_harmless_test.jsonl", "arena_v2-": "arena_hard_v2_prompts.jsonl"}
PRIVATE = "private_person"
KEEP = ("public_figure", "fictional_character", "place")
LABEL_KINDS = (PRIVATE, *KEEP, "ambiguous")
# The two halves of the first labelling; the rules were tuned on "dev".
SPLITS = ("dev", "heldout")
# Labelled later, in conversations outside both halves: never tuned on.
SECOND = "second"
ALL_SPLITS = (*SPLITS, SECOND)
# The bars the shipped detector must meet on every split (tests/backends/test_pii_real.py).
PRIVATE_BAR = 0.90
KEEP_BAR = 0.90


class DataMissing(FileNotFoundError):
    pass


def span_hash(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()[:12]


def load_labels(path: str = LABELS) -> list[dict]:
    with open(path, encoding="utf-8") as handle:
        return [json.loads(line) for line in handle if line.strip()]


def load(labels_path: str = LABELS, data_dir: str = DATA_DIR) -> tuple[dict[str, list[str]], list[dict]]:
    """({conversation_id: its messages' contents}, labels) for the labelled conversations; raises
    DataMissing when a shared data file is absent and ValueError when a span's text does not match
    its hash (the data set changed under the labels)."""
    labels = load_labels(labels_path)
    wanted = {row["conversation_id"] for row in labels}
    conversations: dict[str, list[str]] = {}
    for prefix, name in SOURCES.items():
        if not any(cid.startswith(prefix) for cid in wanted):
            continue
        path = os.path.join(data_dir, name)
        if not os.path.isfile(path):
            raise DataMissing(f"{path} is not there: the labels point into the shared data set "
                              f"(--data_dir, default ../shared/data)")
        with open(path, encoding="utf-8") as handle:
            for line in handle:
                record = json.loads(line)
                if record["conversation_id"] in wanted:
                    conversations[record["conversation_id"]] = [m.get("content") or "" for m in record["messages"]]
    stale = []
    for row in labels:
        texts = conversations.get(row["conversation_id"])
        text = texts[row["message"]] if texts is not None and row["message"] < len(texts) else None
        if text is None or span_hash(text[row["start"]:row["end"]]) != row["sha256"]:
            stale.append(f"{row['conversation_id']}/{row['message']}:{row['start']}-{row['end']}")
    if stale:
        raise ValueError(f"{len(stale)} labelled spans do not match their hash, e.g. {stale[:5]}")
    return conversations, labels


def kind_of(row: dict) -> str:
    return f"{PRIVATE} (invented)" if row["label"] == PRIVATE and row.get("invented") else row["label"]


def evaluate(detect_texts, conversations: dict[str, list[str]], labels: list[dict]) -> dict:
    """detect_texts(texts) -> [[(type, start, end)] per text]: per split and kind, (hits, total) and
    the misses (with their text: print, never store), and the mean ms per conversation."""
    by_conversation = collections.defaultdict(list)
    for row in labels:
        if row["label"] != "ambiguous":
            by_conversation[row["conversation_id"]].append(row)
    hits, totals = collections.Counter(), collections.Counter()
    misses = []
    started = time.perf_counter()
    for cid, rows in sorted(by_conversation.items()):
        texts = conversations[cid]
        found = detect_texts(texts)
        for row in rows:
            text = texts[row["message"]]
            spans = [(s, e) for _, s, e in found[row["message"]]]
            ok = (covered(text, row["start"], row["end"], spans) if row["label"] == PRIVATE
                  else not touched(row["start"], row["end"], spans))
            for split in (row["split"], "all"):
                totals[split, kind_of(row)] += 1
                hits[split, kind_of(row)] += ok
            if not ok:
                misses.append({**row, "text": text[row["start"]:row["end"]], "context": text})
    ms = 1000 * (time.perf_counter() - started) / max(1, len(by_conversation))
    result = {"ms_per_conversation": ms, "misses": misses, "splits": {}}
    for split in (*ALL_SPLITS, "all"):
        per_kind = {k: (hits[split, k], totals[split, k]) for k in sorted({k for s, k in totals if s == split})}
        private = [v for k, v in per_kind.items() if k.startswith(PRIVATE)]
        keep = [v for k, v in per_kind.items() if k in KEEP]
        result["splits"][split] = {
            "per_kind": per_kind,
            "private": (sum(h for h, _ in private), sum(t for _, t in private)),
            "keep": (sum(h for h, _ in keep), sum(t for _, t in keep))}
    return result


def share(pair: tuple[int, int]) -> float:
    return pair[0] / pair[1] if pair[1] else float("nan")


def curve(detector, conversations: dict[str, list[str]], labels: list[dict], thresholds: list[tuple]) -> list[dict]:
    """The score configuration scored at each (threshold, given-name-alone threshold or None): [{"threshold",
    "given", "splits": evaluate's per split}]. The judge's scores are remembered (ScoreJudge's memo), so
    only the first pass asks the model."""
    judge = detector.person_judge
    kept = judge.threshold, judge.given_name_threshold
    rows = []
    try:
        for threshold, given in thresholds:
            judge.threshold, judge.given_name_threshold = threshold, given
            rows.append({"threshold": threshold, "given": given,
                         "splits": evaluate(detector.detect_texts, conversations, labels)["splits"]})
    finally:
        judge.threshold, judge.given_name_threshold = kept
    return rows


def parse_curve(spec: str) -> list[tuple]:
    """"0.3,0.5/0.9": thresholds, each optionally with a given-name-alone threshold after a slash."""
    out = []
    for item in spec.split(","):
        threshold, _, given = item.partition("/")
        out.append((float(threshold), float(given) if given else None))
    return out


def print_curve(detector, conversations, labels, splits, thresholds: list[tuple]) -> None:
    print("  curve (threshold[/given-name]: private names replaced | public figures kept | places kept | fictional kept):")
    for row in curve(detector, conversations, labels, thresholds):
        for split in splits:
            kinds = row["splits"][split]["per_kind"]
            name = f"{row['threshold']:.2f}" + (f"/{row['given']:.2f}" if row["given"] is not None else "")
            print(f"    {name} {split}: {count_share(row['splits'][split]['private'])} | "
                  f"{count_share(kinds.get('public_figure', (0, 0)))} | {count_share(kinds.get('place', (0, 0)))} | "
                  f"{count_share(kinds.get('fictional_character', (0, 0)))}")


def _context(miss: dict, width: int = 90) -> str:
    text, start, end = miss["context"], miss["start"], miss["end"]
    return (text[max(0, start - width):start] + "[[" + text[start:end] + "]]" + text[end:end + width]).replace("\n", " ⏎ ")


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--labels", default=LABELS)
    parser.add_argument("--data_dir", default=DATA_DIR, help="folder with the shared data sets (default ../shared/data)")
    parser.add_argument("--configs", default="default",
                        help="comma-separated, of eval/pii/pii_recall.py's: current, rules, model, default, ...")
    parser.add_argument("--show_misses", type=int, default=0, help="print up to N misses per kind of the dev split")
    parser.add_argument("--splits", default=",".join(ALL_SPLITS),
                        help=f"comma-separated splits to score, of {', '.join(ALL_SPLITS)} (default all)")
    parser.add_argument("--llm_model", default="qwen2.5-coder-0.5b", help="the local model of the judge configuration")
    parser.add_argument("--judge_cache", help="folder of the judge's answer cache (PRIVATE: verdicts on real names)")
    parser.add_argument("--threshold", type=float, help="the score configuration's P(yes) threshold (default SCORE_THRESHOLD)")
    parser.add_argument("--curve", default="",
                        help="comma-separated P(yes) thresholds, each optionally /a given-name name's (0.5/0.9): the score "
                             "configuration is scored at each (one run of the model, its scores reused), a line per "
                             "threshold and split")
    args = parser.parse_args(argv)
    unknown = set(args.splits.split(",")) - set(ALL_SPLITS)
    if unknown:
        parser.error(f"unknown split(s) {sorted(unknown)}: use {', '.join(ALL_SPLITS)}")
    splits = tuple(s for s in ALL_SPLITS if s in args.splits.split(","))
    try:
        conversations, labels = load(args.labels, args.data_dir)
    except DataMissing as missing:
        print(f"skipped: {missing}")
        return
    labels = [row for row in labels if row["split"] in splits]
    conversations = {cid: texts for cid, texts in conversations.items()
                     if cid in {row["conversation_id"] for row in labels}}
    counts = collections.Counter((row["split"], kind_of(row)) for row in labels)
    print(f"{len(labels)} labelled spans in {len(conversations)} conversations ({args.labels}): "
          + "; ".join(f"{split}: " + ", ".join(f"{k} {counts[split, k]}" for k in sorted({k for s, k in counts if s == split}))
                      for split in splits))
    available = configurations(argparse.Namespace(gazetteer_rank=1000, llm_model=args.llm_model,
                                                  judge_cache=args.judge_cache, threshold=args.threshold))
    for name in args.configs.split(","):
        loaded = time.perf_counter()
        detector, note = available[name]()
        detector.detect("warm-up text for Jane Doe")
        load_s = time.perf_counter() - loaded
        result = evaluate(detector.detect_texts, conversations, labels)
        print(f"\n{name} ({note}; set-up {load_s:.1f} s, {result['ms_per_conversation']:.0f} ms per conversation)")
        if getattr(detector, "person_judge", None) is not None:
            print(f"  person judge: {detector.person_judge.counts}")
        for split in (*splits, "all"):
            figures = result["splits"][split]
            per_kind = "  ".join(f"{k} {count_share(v)}" for k, v in figures["per_kind"].items())
            print(f"  {split}: private names replaced {count_share(figures['private'])}, "
                  f"kept intact {count_share(figures['keep'])}\n"
                  f"    {per_kind}")
        if args.curve and hasattr(getattr(detector, "person_judge", None), "threshold"):
            print_curve(detector, conversations, labels, splits, parse_curve(args.curve))
        shown = collections.Counter()
        for miss in result["misses"]:
            if miss["split"] == "dev" and shown[kind_of(miss)] < args.show_misses:
                shown[kind_of(miss)] += 1
                print(f"  miss {kind_of(miss)} {miss['conversation_id']}/{miss['message']}: {miss['text']!r} in {_context(miss)}")


if __name__ == "__main__":
    main()
