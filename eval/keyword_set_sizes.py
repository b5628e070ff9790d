"""How many keywords the DP keyword-set builders release: builds each (dataset, method, epsilon) set
with `python -m beam_jobs.build_keywords` (the job itself, default flags otherwise) and prints its
size, the planted topics it covers (generated data) and a sample of its words.

    .venv/bin/python eval/keyword_set_sizes.py --data /work/evaldata/gen20k.jsonl --epsilons 0.5,1,2
    .venv/bin/python eval/keyword_set_sizes.py --data a.jsonl,b.jsonl --methods tfidf --flags "--refine_to 0"
    .venv/bin/python eval/keyword_set_sizes.py --thresholds

--thresholds prints instead, for each partition-selection strategy and L0 (--max_terms_per_user),
how many users a term needs to be kept with probability 1/2 (PyDP's own selection, 400 draws per
count, bisection) at delta 1e-6.

Columns: |K| the released set's size (after refinement), eps(K) and delta(K) as the file records
them, topics: planted topics (beam_jobs.sample_topics) with an expected keyword's word in K (only
for files whose records carry `planted_topic`, out of those they carry), seconds of the build, and the first words of K
(best ranked first). A build that releases nothing prints `none` (the builder refuses an empty set).
"""

from __future__ import annotations

import argparse
import json
import os
import shlex
import subprocess
import sys
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)

from pipeline_dp import partition_selection  # noqa: E402

from beam_jobs.sample_topics import PLANTED_TOPICS  # noqa: E402
from dp_ops.partition_selection import STRATEGIES  # noqa: E402
from eval import data as eval_data  # noqa: E402


def planted_topics_in(path: str) -> list:
    """The planted topics the file's records carry (none for real data)."""
    names = set(eval_data.planted_topics(path).values())
    return [topic for topic in PLANTED_TOPICS if topic.name in names]


def topics_covered(keywords: list[str], topics: list) -> int:
    words = {w for k in keywords for w in k.split()}
    return sum(1 for topic in topics if words & {w for k in topic.expected_keywords for w in k.split()})


def build(data: str, method: str, epsilon: str, output: str, flags: list[str]) -> tuple[dict | None, float]:
    started = time.time()
    # A DP build needs a private folder outside the set's and the day of its data; no ledger here, so
    # that day only labels the set's (uncharged) spend.
    private = os.path.join(os.path.dirname(os.path.dirname(output)), "private", os.path.basename(output))
    command = [sys.executable, "-m", "beam_jobs.build_keywords", "--method", method, "--input", data,
               "--output", output, "--epsilon_keyword_set", epsilon, "--private_output", private,
               "--date", "today", *flags]
    env = dict(os.environ, PYTHONPATH=ROOT, HF_HUB_OFFLINE="1")
    done = subprocess.run(command, cwd=ROOT, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    seconds = time.time() - started
    if done.returncode != 0:
        if "no keyword survived" not in done.stdout:
            print(done.stdout[-2000:], file=sys.stderr)
        return None, seconds
    with open(output, encoding="utf-8") as document:
        return json.load(document), seconds


def users_for_even_odds(strategy: str, epsilon: float, delta: float, max_terms_per_user: int) -> int:
    selector = partition_selection.create_partition_selection_strategy(
        STRATEGIES[strategy], epsilon, delta, max_terms_per_user)
    low, high = 1, 100_000
    while low < high:
        middle = (low + high) // 2
        if sum(selector.should_keep(middle) for _ in range(400)) >= 200:
            high = middle
        else:
            low = middle + 1
    return low


def print_thresholds(epsilons: list[float], delta: float = 1e-6) -> None:
    levels = (1, 2, 3, 5, 8, 12, 25)
    print(f"{'eps':>4} {'strategy':<20} " + " ".join(f"L0={level:<3}" for level in levels))
    for epsilon in epsilons:
        for strategy in STRATEGIES:
            print(f"{epsilon:>4} {strategy:<20} " + " ".join(
                f"{users_for_even_odds(strategy, epsilon, delta, level):>6}" for level in levels), flush=True)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--data", help="comma-separated JSON Lines files")
    parser.add_argument("--thresholds", action="store_true", help="print selection thresholds instead")
    parser.add_argument("--methods", default="tfidf,llm")
    parser.add_argument("--epsilons", default="0.5,1,2")
    parser.add_argument("--flags", default="", help="more build_keywords flags, one shell-quoted string")
    parser.add_argument("--workdir", default="/tmp/urania-kw-sizes")
    parser.add_argument("--sample", type=int, default=12, help="words of K to print")
    args = parser.parse_args(argv)
    if args.thresholds:
        print_thresholds([float(e) for e in args.epsilons.split(",")])
        return
    if not args.data:
        parser.error("--data is required (or --thresholds)")
    os.makedirs(args.workdir, exist_ok=True)
    print(f"{'data':<34} {'method':<6} {'eps':>4} {'|K|':>5} {'eps(K)':>7} {'delta(K)':>8} {'topics':>6} "
          f"{'s':>4}  sample")
    for data in args.data.split(","):
        planted = planted_topics_in(data)
        name = os.path.basename(data)
        for method in args.methods.split(","):
            for epsilon in args.epsilons.split(","):
                output = os.path.join(args.workdir, "sets", f"{name}.{method}.{epsilon}.json")
                document, seconds = build(data, method, epsilon, output, shlex.split(args.flags))
                if document is None:
                    print(f"{name:<34} {method:<6} {epsilon:>4} {'none':>5} {'':>7} {'':>8} {'':>6} {seconds:>4.0f}",
                          flush=True)
                    continue
                keywords, privacy = document["keywords"], document["privacy"]
                topics = f"{topics_covered(keywords, planted)}/{len(planted)}" if planted else "n/a"
                print(f"{name:<34} {method:<6} {epsilon:>4} {len(keywords):>5} {privacy['epsilon']:>7.3f} "
                      f"{privacy['delta']:>8.1e} {topics:>6} {seconds:>4.0f}  {', '.join(keywords[:args.sample])}",
                      flush=True)


if __name__ == "__main__":
    main()
