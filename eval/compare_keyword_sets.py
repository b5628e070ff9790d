"""Compares the keyword-set methods end to end: builds each set, runs the insights job with it
(--keyword_mode both, so one run gives histogram and centroid keywords) and prints a table.

    .venv/bin/python eval/compare_keyword_sets.py --workdir /tmp/kwcompare
    .venv/bin/python eval/compare_keyword_sets.py --datasets generated --conversations 2000

Datasets: `generated` (beam_jobs.generate_sample, planted topics; its public corpus is a second
generated sample with another seed, i.e. the same public topic descriptions, other users), and the
files in ../shared/data if present: `hh` (hh_rlhf_harmless_test.jsonl, public corpus: the arena
file) and `arena` (arena_hard_v2_prompts.jsonl, public corpus: the hh file). The shared files are
read in place; nothing of them is copied into the repository.

Columns: |K| keyword-set size, eps(K) the budget the set spent (from its file), eps total the run's
report total (includes eps(K)), topics released, topics whose histogram keywords are non-empty,
recovery (generated only: planted topics for which some released topic has a keyword sharing a word
with the topic's expected keywords; histogram / centroid keywords), and the mean Jaccard agreement of
histogram and centroid keywords per topic.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)

from backends.keyword_set import DEFAULT_KEYWORD_SET  # noqa: E402
from beam_jobs.sample_topics import PLANTED_TOPICS  # noqa: E402

SHARED = os.path.join(ROOT, "..", "shared", "data")
METHODS = ("bundled", "public", "tfidf", "llm", "hybrid")
DATASETS = {  # name: (main-job flags)
    "generated": ["--num_clusters", "25", "--min_cluster_size", "25"],
    "hh": ["--num_clusters", "10", "--min_cluster_size", "10"],
    "arena": ["--num_clusters", "5", "--min_cluster_size", "5"],
}


def _run(args: list[str], log) -> float:
    started = time.time()
    env = dict(os.environ, PYTHONPATH=ROOT, HF_HUB_OFFLINE="1")
    subprocess.run([sys.executable, *args], cwd=ROOT, env=env, check=True, stdout=log, stderr=log)
    return time.time() - started


def _words(keywords) -> set[str]:
    return {w for k in keywords for w in k.split()}


def recovery(topics: list[dict], field: str) -> int:
    released = [_words(t.get(field, [])) for t in topics]
    return sum(1 for p in PLANTED_TOPICS if any(_words(p.expected_keywords) & r for r in released))


def _dataset_files(name: str, workdir: str, conversations: int) -> tuple[str, str] | None:
    if name == "generated":
        data, public = os.path.join(workdir, "generated.jsonl"), os.path.join(workdir, "generated-public.jsonl")
        for path, count, users, seed in ((data, conversations, int(conversations * 0.36), 7), (public, 300, 300, 99)):
            if not os.path.exists(path):
                subprocess.run([sys.executable, "-m", "beam_jobs.generate_sample", "--output", path, "--conversations",
                                str(count), "--users", str(users), "--seed", str(seed)], cwd=ROOT, check=True,
                               env=dict(os.environ, PYTHONPATH=ROOT), stdout=subprocess.DEVNULL)
        return data, public
    hh, arena = (os.path.join(SHARED, f) for f in ("hh_rlhf_harmless_test.jsonl", "arena_hard_v2_prompts.jsonl"))
    if not (os.path.exists(hh) and os.path.exists(arena)):
        return None
    return (hh, arena) if name == "hh" else (arena, hh)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--workdir", default="/tmp/urania-kw-compare")
    parser.add_argument("--datasets", default="generated,hh,arena")
    parser.add_argument("--methods", default=",".join(METHODS))
    parser.add_argument("--conversations", type=int, default=5000, help="generated sample size (36%% as many users)")
    parser.add_argument("--epsilon_keyword_set", default="1.0")
    parser.add_argument("--seed", default="5")
    args = parser.parse_args(argv)
    os.makedirs(args.workdir, exist_ok=True)
    log = open(os.path.join(args.workdir, "log.txt"), "a")
    build_flags = ["--epsilon_keyword_set", args.epsilon_keyword_set, "--max_conversations_per_user", "2",
                   "--terms_per_conversation", "3", "--seed", args.seed]
    rows = []
    header = (f"{'dataset':<10} {'method':<8} {'|K|':>5} {'eps(K)':>7} {'eps total':>9} {'topics':>6} "
              f"{'w/ kw':>5} {'recovery hist/centroid':>22} {'agree':>6} {'build s':>7} {'run s':>6}")
    print(header, flush=True)
    for dataset in args.datasets.split(","):
        files = _dataset_files(dataset, args.workdir, args.conversations)
        if files is None:
            print(f"{dataset}: ../shared/data not found, skipped", flush=True)
            continue
        data, public = files
        for method in args.methods.split(","):
            keyword_file = os.path.join(args.workdir, "sets", f"{dataset}-{method}.json")
            build_seconds = 0.0
            if method == "bundled":
                keyword_file = DEFAULT_KEYWORD_SET
            else:
                try:
                    # The DP methods' private folder lies outside the sets' folder; no ledger here, so
                    # --date only labels the set's (uncharged) spend.
                    build_seconds = _run(["-m", "beam_jobs.build_keywords", "--method", method, "--input", data,
                                          "--public_corpus", public, "--output", keyword_file, "--private_output",
                                          os.path.join(args.workdir, "private", f"{dataset}-{method}"),
                                          "--date", "today", *build_flags], log)
                except subprocess.CalledProcessError:
                    print(f"{dataset:<10} {method:<8} build failed (e.g. no keyword passed DP selection); "
                          f"see {log.name}", flush=True)
                    continue
            output = os.path.join(args.workdir, f"{dataset}-{method}-run")
            run_seconds = _run(["-m", "beam_jobs.insights", "--input", data, "--output", output, "--keyword_set",
                                keyword_file, "--keyword_mode", "both", "--seed", args.seed, *DATASETS[dataset]], log)
            report = json.load(open(os.path.join(output, "release", "report.json")))
            topics = report["topics"]
            keyword_set = report["config"]["keyword_set"]
            epsilon_k = sum(m["epsilon"] for m in report["privacy"]["mechanisms"] if m["stage"] == "keyword_set")
            recovered = (f"{recovery(topics, 'keywords')}/{recovery(topics, 'centroid_keywords')} of "
                         f"{len(PLANTED_TOPICS)}" if dataset == "generated" else "n/a")
            agreement = report["keyword_agreement"]["mean_jaccard"]
            row = (f"{dataset:<10} {method:<8} {keyword_set['size']:>5} {epsilon_k:>7.2f} "
                   f"{report['privacy']['epsilon']:>9.2f} {len(topics):>6} {sum(1 for t in topics if t['keywords']):>5} "
                   f"{recovered:>22} {agreement if agreement is not None else float('nan'):>6.2f} "
                   f"{build_seconds:>7.0f} {run_seconds:>6.0f}")
            rows.append(row)
            print(row, flush=True)
    print("\n" + header)
    print("\n".join(rows))


if __name__ == "__main__":
    main()
