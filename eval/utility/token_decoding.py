"""Token-level private decoding's privacy-utility table (issue 41, the paper's style: epsilon x utility):
each DP topic's 12-token description (transforms/token_decoding.py) against its keyword-vote name, on the
generated sample with planted topics.

    python -m eval.utility.token_decoding --conversations 1500 --users 600 --k 6 --sample_size 8 \
        --epsilons 8 30 100 300 inf

Utility, judged by all-mpnet-base-v2 (not the job's embedding model):
- label fit top-3 (eval.utility.label_fit): is a conversation's own topic's label among the 3 labels
  most similar to its text;
- cosine to the reference name: each topic's label against the planted topic most of its members come
  from (its name, e.g. "car maintenance"), averaged over topics.
`epsilon` is the run's total (one budget, jointly calibrated); `stage eps` is the token stage's own share
of it, as its spend states. `inf`: no noise anywhere (the decoding's ceiling on this model).
"""

from __future__ import annotations

import argparse
import collections
import json
import math
import os
import tempfile
import time

import numpy as np

from backends.token_decoder import TokenDecoder
from dp_ops.token_decoding import STAGE, TokenDecodingParams
from eval.data import TextEmbedder, embed_cached, load_dataset
from eval.urania_inprocess import UraniaConfig, Writers, run_urania
from eval.utility.label_fit import JUDGE_MODEL, label_fit, topic_label_text
from synthetic.sample import write_sample
from transforms.token_decoding import TokenDecodingPlan

WEIGHTS = "clustering:4,cluster_sizes:1,keyword_histograms:2,token_decoding:8"


def _planted(path: str) -> dict[str, str]:
    with open(path, encoding="utf-8") as lines:
        rows = [json.loads(line) for line in lines if line.strip()]
    return {r["conversation_id"]: r["planted_topic"] for r in rows if "planted_topic" in r}


def _cosine_to_reference(labels: dict[int, str], references: dict[int, str], judge) -> float:
    topics = [t for t in labels if t in references]
    a = judge([labels[t] for t in topics])
    b = judge([references[t] for t in topics])
    a = a / np.linalg.norm(a, axis=1, keepdims=True)
    b = b / np.linalg.norm(b, axis=1, keepdims=True)
    return float(np.mean(np.sum(a * b, axis=1)))


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--conversations", type=int, default=1500)
    parser.add_argument("--users", type=int, default=600)
    parser.add_argument("--k", type=int, default=6)
    parser.add_argument("--steps", type=int, default=12)
    parser.add_argument("--sample_size", type=int, default=8)
    parser.add_argument("--clip_norm", type=float, default=40.0)
    parser.add_argument("--epsilons", type=float, nargs="+", default=[8, 30, 100, 300, math.inf])
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--show", action="store_true", help="print each topic's names (generated data only)")
    args = parser.parse_args(argv)
    path = os.path.join(tempfile.mkdtemp(), "sample.jsonl")
    write_sample(path, args.conversations, args.users, 7)
    dataset, planted = load_dataset(path), _planted(path)
    embeddings = embed_cached(dataset.facets, UraniaConfig.embedding_model)
    judge = TextEmbedder(JUDGE_MODEL, dict(zip(dataset.facets, embed_cached(dataset.facets, JUDGE_MODEL))))
    texts = dict(zip(dataset.conversation_ids, dataset.facets))
    params = TokenDecodingParams(args.steps, args.sample_size, args.clip_norm)
    decoder = TokenDecoder()
    print(f"generated: {len(dataset)} conversations, {args.users} users, k={args.k}; T={args.steps} n={args.sample_size} "
          f"C={args.clip_norm}; weights {WEIGHTS}; judge {JUDGE_MODEL}")
    print(f"{'epsilon':>8} {'stage eps':>9} {'topics':>6} {'mean size':>9} | {'votes top3':>10} {'votes cos':>9} | "
          f"{'token top3':>10} {'token cos':>9} {'time':>5}")
    for epsilon in args.epsilons:
        started = time.perf_counter()
        config = UraniaConfig(num_clusters=args.k, epsilon=epsilon, epsilon_weights=WEIGHTS)
        report = run_urania(dataset.conversation_ids, dataset.user_ids, dataset.facets, embeddings, config,
                            seed=args.seed, noise_seed=None,
                            writers=Writers(token_decoding=TokenDecodingPlan(params, decoder, args.seed)))
        assignments = report["_private"]["assignments"]
        topics = {t["id"]: t for t in report["topics"]}
        members = collections.defaultdict(list)
        for cid, topic in assignments.items():
            if topic in topics and cid in planted:
                members[topic].append(planted[cid])
        references = {t: collections.Counter(m).most_common(1)[0][0] for t, m in members.items()}
        votes = {t: topic_label_text(topic) for t, topic in topics.items()}
        tokens = {t: topic.get("token_decoded", {}).get("description") or "(none)" for t, topic in topics.items()}
        fit_votes, fit_tokens = label_fit(votes, assignments, texts, judge), label_fit(tokens, assignments, texts, judge)
        stage_eps = next((s["epsilon"] for s in report["privacy"].get("mechanisms", []) if s["stage"] == STAGE), math.nan) \
            if math.isfinite(epsilon) else math.inf
        sizes = [t.get("size", 0) for t in topics.values()]
        print(f"{epsilon:>8g} {stage_eps:>9.1f} {len(topics):>6} {np.mean(sizes):>9.0f} | {fit_votes['top3']:>10.3f} "
              f"{_cosine_to_reference(votes, references, judge):>9.3f} | {fit_tokens['top3']:>10.3f} "
              f"{_cosine_to_reference(tokens, references, judge):>9.3f} {time.perf_counter() - started:>4.0f}s",
              flush=True)
        if args.show:
            for t in sorted(topics):
                print(f"    {references.get(t)!r}: votes {votes[t]!r} | tokens {tokens[t]!r}")


if __name__ == "__main__":
    main()
