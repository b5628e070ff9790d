"""Cost per record of the pseudonymizer's person judge (backends/pii/person_judge.py) on real prompts.

Records are conversations of the shared hh-rlhf and arena-hard data (../shared/data), the first
--records of them taken alternately from each file, cut as the facet step cuts them (6,000 characters
of turns plus the 200-character margin, backends/llm/steps.py) and pseudonymized as the job does, all
turns in one call. Each record runs twice, interleaved so that load on this shared machine hits both
alike: the shipped detector alone, then with the judge (no answer cache: every name the judge would be
asked about costs a call). Prints ms per record (mean, median, p95) of each, the judge's calls per
record and seconds per call, and the server's prompt tokens computed per call (the instructions'
head is reused from the public-prefix cache). No text is printed or written.

    PYTHONPATH=. .venv/bin/python bench/bench_person_judge.py --records 60 --model qwen2.5-coder-0.5b
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import time

from backends.llm.steps import MAX_CONVERSATION_CHARS, PSEUDONYMIZE_MARGIN_CHARS, cut_turns
from backends.pii.person_judge import local_person_judge
from backends.pii.pseudonymize import Pseudonymizer

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
DATA_DIR = os.path.join(ROOT, "..", "shared", "data")
FILES = ("hh_rlhf_harmless_test.jsonl", "arena_hard_v2_prompts.jsonl")


def records(data_dir: str, count: int) -> list[list[str]]:
    """The cut turns of `count` conversations, alternately from each shared file."""
    per_file = []
    for name in FILES:
        rows = []
        with open(os.path.join(data_dir, name), encoding="utf-8") as handle:
            for line in handle:
                messages = [m for m in json.loads(line)["messages"]
                            if m.get("role") in ("user", "assistant") and (m.get("content") or "").strip()]
                if messages:
                    turns = cut_turns([(m["role"], m["content"]) for m in messages],
                                      MAX_CONVERSATION_CHARS + PSEUDONYMIZE_MARGIN_CHARS)
                    rows.append([content for _, content, _ in turns])
                if len(rows) >= count:
                    break
        per_file.append(rows)
    mixed = [row for pair in zip(*per_file) for row in pair]
    return mixed[:count]


def _summary(ms: list[float]) -> str:
    ordered = sorted(ms)
    p95 = ordered[min(len(ordered) - 1, int(0.95 * len(ordered)))]
    return f"mean {statistics.mean(ms):.0f} ms, median {statistics.median(ms):.0f} ms, p95 {p95:.0f} ms"


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--records", type=int, default=60)
    parser.add_argument("--model", default="qwen2.5-coder-0.5b", help="a LOCAL_MODELS name or a GGUF path")
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--data_dir", default=DATA_DIR)
    args = parser.parse_args(argv)
    rows = records(args.data_dir, args.records)
    base = Pseudonymizer()
    base.setup()
    started = time.perf_counter()
    judge = local_person_judge(args.model, threads=args.threads)
    judged = Pseudonymizer(person_judge=judge)
    judged.setup()
    judged.detect("warm-up text: what would Jane Doe say?")  # computes the instructions' head once
    print(f"{len(rows)} records; judge set-up (server start, spaCy, head) {time.perf_counter() - started:.1f} s; "
          f"model {judge.model}, {args.threads} thread(s)")
    server = judge.client.server
    before_metrics = server.metrics()
    before_counts = dict(judge.counts)
    alone, with_judge, calls = [], [], []
    for texts in rows:
        t0 = time.perf_counter()
        base.detect_texts(texts)
        t1 = time.perf_counter()
        asked = judge.counts["asked"]
        judged.detect_texts(texts)
        t2 = time.perf_counter()
        alone.append(1000 * (t1 - t0))
        with_judge.append(1000 * (t2 - t1))
        calls.append(judge.counts["asked"] - asked)
    after = server.metrics()
    counts = {k: judge.counts[k] - before_counts[k] for k in judge.counts}
    total_calls = max(1, sum(calls))
    extra_s = (sum(with_judge) - sum(alone)) / 1000
    print(f"detector alone:  {_summary(alone)}")
    print(f"with the judge:  {_summary(with_judge)}")
    print(f"judge calls: {sum(calls)} ({sum(calls) / len(rows):.2f} per record, {sum(c > 0 for c in calls)} records "
          f"with any, max {max(calls)}); verdicts {counts}")
    print(f"added time per call {extra_s / total_calls:.2f} s; prompt tokens computed per call "
          f"{(after.get('prompt_tokens_total', 0) - before_metrics.get('prompt_tokens_total', 0)) / total_calls:.0f}, "
          f"generated per call "
          f"{(after.get('tokens_predicted_total', 0) - before_metrics.get('tokens_predicted_total', 0)) / total_calls:.0f}")
    judge.client.close()


if __name__ == "__main__":
    main()
