"""How the DP k-means dimension and basis affect clustering quality, on cached embeddings.

    HF_HUB_OFFLINE=1 PYTHONPATH=. .venv/bin/python -m eval.clustering_dimension \
        --data /work/evaldata/gen20k.jsonl:30 /work/evaldata/gen5k.jsonl:50 \
        /work/shared/data/hh_rlhf_harmless_test.jsonl:30 /work/shared/data/arena_hard_v2_prompts.jsonl:15 \
        --subset /work/evaldata/gen20k.jsonl:30:1100

Each data set (PATH:K, or PATH:K:N for the users seen in the first N records, with all their
conversations: fewer users, the same topics) runs the job's
contribution bounding and DP k-means in-process (eval.urania_inprocess: choose_dimension and
fit_kmeans, the job's functions) at the job's default epsilon and weights, for every fixed
dimension and basis in --dims/--bases and for `auto`, over --seeds noise seeds, and prints the mean
NMI (sklearn normalized_mutual_info_score) of the private assignments against `planted_topic`
(generated data) or, where there is none (real data), against non-private k-means on the same
embeddings, which is printed beside (sklearn KMeans, n_init 3, on the full embeddings).
Embeddings come from the cache only (eval.data.embed_cached): a data set not embedded yet is skipped.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import os
import sys
import time

import numpy as np
from sklearn.cluster import KMeans
from sklearn.metrics import normalized_mutual_info_score

from dp_ops import dp_kmeans as km
from eval.data import bound_contributions, cache_path, embed_cached, load_dataset, planted_topics
from eval.urania_inprocess import UraniaConfig, choose_dimension, fit_kmeans, joint_calibration


@dataclasses.dataclass
class Data:
    name: str
    k: int
    embeddings: np.ndarray
    user_ids: list[str]
    conversation_ids: list[str]
    labels: np.ndarray | None  # planted topics, or None for real data


def _load(spec: str, subset: bool) -> Data | None:
    path, k, *rest = spec.split(":")
    dataset = load_dataset(path)
    if not os.path.exists(cache_path(dataset.facets)):
        print(f"skipped {path}: not in the embedding cache yet", file=sys.stderr)
        return None
    embeddings = embed_cached(dataset.facets)
    topics = planted_topics(path)
    labels = [topics.get(c) for c in dataset.conversation_ids]
    index = np.arange(len(dataset))
    name = os.path.basename(path).removesuffix(".jsonl")
    if subset:
        # The users seen in the first N records, with all their conversations: fewer users (what the
        # noise cares about), the same topics.
        wanted, users, count = int(rest[0]), set(), 0
        for user in dataset.user_ids:
            if user not in users and count >= wanted:
                break
            users.add(user)
            count += 1
        index = np.array([i for i, u in enumerate(dataset.user_ids) if u in users])
        name = f"{name}[:{len(index)}]"
    return Data(name, int(k), embeddings[index], [dataset.user_ids[i] for i in index],
                [dataset.conversation_ids[i] for i in index],
                None if any(label is None for label in labels) else np.array([labels[i] for i in index]))


def _private_nmi(data: Data, reference: np.ndarray, config: UraniaConfig, seed: int) -> tuple[float, int]:
    kept, weights = bound_contributions(data.user_ids, data.conversation_ids, config.max_conversations_per_user, seed)
    joint = joint_calibration(config)
    params = km.DPKMeansParams(num_clusters=config.num_clusters, epsilon=None, delta=config.delta,
                               noise_multiplier=joint.stages["clustering"].noise_multiplier,
                               input_dim=data.embeddings.shape[1], iterations=config.kmeans_iterations,
                               projection_dim=config.projection_dim, seed=seed, basis=config.projection_basis)
    active_dim, _ = choose_dimension(params, weights, config, joint, noise_seed=seed)
    centres, points, _ = fit_kmeans(data.embeddings[kept], weights, params, True, seed, active_dim)
    return normalized_mutual_info_score(reference[kept], km.assign_nearest(points, centres)), active_dim


def evaluate(data: Data, dims: list[int], bases: list[str], iterations: list[int], seeds: int) -> list[dict]:
    started = time.time()
    non_private = KMeans(n_clusters=data.k, n_init=3, random_state=0).fit_predict(data.embeddings)
    reference = data.labels if data.labels is not None else non_private
    users = len(set(data.user_ids))
    rows = []
    for basis in bases:
        for iters in iterations:
            for dim in [km.AUTO_DIMENSION, *dims]:
                config = UraniaConfig(num_clusters=data.k, projection_dim=dim, projection_basis=basis,
                                      kmeans_iterations=iters)
                results = [_private_nmi(data, reference, config, seed) for seed in range(seeds)]
                rows.append({"data": data.name, "k": data.k, "conversations": len(data.user_ids), "users": users,
                             "basis": basis, "iterations": iters, "dim": "auto" if dim == km.AUTO_DIMENSION else dim,
                             "chosen_dim": sorted({d for _, d in results}),
                             "sigma": round(joint_calibration(config).stages["clustering"].noise_std_parameter, 3),
                             "nmi": float(np.mean([n for n, _ in results])),
                             "nmi_sd": float(np.std([n for n, _ in results]))})
    non_private_nmi = (normalized_mutual_info_score(data.labels, non_private) if data.labels is not None else 1.0)
    for row in rows:
        row["non_private_nmi"] = non_private_nmi
    print(f"# {data.name}: {time.time() - started:.0f} s", file=sys.stderr)
    return rows


def print_table(rows: list[dict]) -> None:
    print("| data | k | users | basis | T | dim | d used | NMI (sd) | non-private |")
    print("|---|---|---|---|---|---|---|---|---|")
    for row in rows:
        print(f"| {row['data']} | {row['k']} | {row['users']} | {row['basis']} | {row['iterations']} | {row['dim']} | "
              f"{','.join(map(str, row['chosen_dim']))} | {row['nmi']:.3f} ({row['nmi_sd']:.3f}) | "
              f"{row['non_private_nmi']:.3f} |")


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--data", nargs="*", default=[], help="PATH:K data sets")
    parser.add_argument("--subset", nargs="*", default=[], help="PATH:K:N: the users seen in the first N records")
    parser.add_argument("--dims", type=int, nargs="*", default=[16, 32, 64, 128, 0])
    parser.add_argument("--bases", nargs="*", default=list(km.BASES), choices=km.BASES)
    parser.add_argument("--iterations", type=int, nargs="*", default=[3])
    parser.add_argument("--seeds", type=int, default=3)
    parser.add_argument("--json", help="also write the rows here")
    args = parser.parse_args(argv)
    rows = []
    for spec, subset in [(s, False) for s in args.data] + [(s, True) for s in args.subset]:
        data = _load(spec, subset)
        if data is not None:
            rows += evaluate(data, args.dims, args.bases, args.iterations, args.seeds)
            print_table([r for r in rows if r["data"] == data.name])
            sys.stdout.flush()
    if args.json:
        with open(args.json, "w") as handle:
            json.dump(rows, handle, indent=1)


if __name__ == "__main__":
    main()
