"""Reading a data set the way the job does, and embedding it once (with an on-disk cache).

Records are parsed with the job's own validation (transforms/validation.parse_record), facets come
from the job's offline FacetExtractor and embeddings from backends/embedding.py with the same model,
so the evaluation sees what the pipeline sees. Embedding is the slow part (~100-150 conversations/s
on 2 cores), so embeddings are cached under eval/results/cache/ (git-ignored), keyed by the model
and a hash of the facet texts: a changed data set or model is never served a stale cache.
"""

from __future__ import annotations

import dataclasses
import hashlib
import os

import numpy as np

from backends import embedding
from backends.offline import UserTurnsFacetExtractor
from core.records import Conversation
from dp_ops.contribution_bounding import bounding_rank, contribution_weight, keep_first
from transforms.validation import DEFAULT_MAX_RECORD_BYTES, parse_record

RESULTS_DIR = os.path.join(os.path.dirname(os.path.abspath(__file__)), "results")
DEFAULT_CACHE_DIR = os.path.join(RESULTS_DIR, "cache")


@dataclasses.dataclass
class Dataset:
    """Valid conversations with their facets, in input order; `dead_lettered` counts rejected lines."""

    conversations: list[Conversation]
    facets: list[str]
    dead_lettered: int = 0

    @property
    def conversation_ids(self) -> list[str]:
        return [c.conversation_id for c in self.conversations]

    @property
    def user_ids(self) -> list[str]:
        return [c.user_id for c in self.conversations]

    def __len__(self) -> int:
        return len(self.conversations)


def load_dataset(path: str, facet_max_chars: int = 1000, limit: int | None = None) -> Dataset:
    """Parses JSON Lines file(s) with the job's validation; invalid lines are counted, not kept.
    `path`: one file, or several joined by commas (read in order, as one data set)."""
    if "," in path:
        parts = [load_dataset(part, facet_max_chars) for part in path.split(",")]
        joined = Dataset([c for p in parts for c in p.conversations], [f for p in parts for f in p.facets],
                         sum(p.dead_lettered for p in parts))
        return joined if limit is None else Dataset(joined.conversations[:limit], joined.facets[:limit],
                                                    joined.dead_lettered)
    extractor = UserTurnsFacetExtractor(max_chars=facet_max_chars)
    conversations, dead = [], 0
    opener = open
    if path.endswith(".gz"):
        import gzip
        opener = gzip.open
    with opener(path, "rb") as handle:
        for line_number, line in enumerate(handle, start=1):
            parsed = parse_record(line.rstrip(b"\r\n"), path, line_number, DEFAULT_MAX_RECORD_BYTES)
            if isinstance(parsed, Conversation):
                conversations.append(parsed)
                if limit is not None and len(conversations) >= limit:
                    break
            else:
                dead += 1
    return Dataset(conversations, [extractor.extract(c) for c in conversations], dead)


def with_users(dataset: Dataset, users: int, seed: int) -> Dataset:
    """The same conversations spread over `users` simulated users with the generator's heavy-tailed
    activity (synthetic.sample.user_activity_weights; seeded): real texts at another user
    count, for figures that depend on how many users a topic has (the shared real sets have few)."""
    import random

    from synthetic.sample import user_activity_weights
    if users < 1:
        raise ValueError(f"users must be >= 1, got {users}")
    rng = random.Random(seed)
    owners = rng.choices(range(users), weights=user_activity_weights(users, rng), k=len(dataset))
    return Dataset([dataclasses.replace(c, user_id=f"sim{u}") for c, u in zip(dataset.conversations, owners)],
                   list(dataset.facets), dataset.dead_lettered)


def planted_topics(path: str) -> dict[str, str]:
    """{conversation id: planted topic} of a generated data set's records (beam_jobs.generate_sample
    writes `planted_topic`, which the job ignores); {} for data without it. Lines that are not JSON
    objects are skipped: load_dataset counts them. `path`: as load_dataset's."""
    import json
    if "," in path:
        return {cid: topic for part in path.split(",") for cid, topic in planted_topics(part).items()}
    planted = {}
    opener = open
    if path.endswith(".gz"):
        import gzip
        opener = gzip.open
    with opener(path, "rb") as handle:
        for line in handle:
            try:
                record = json.loads(line)
            except ValueError:
                continue
            if isinstance(record, dict) and "planted_topic" in record:
                planted[str(record.get("conversation_id"))] = record["planted_topic"]
    return planted


def _texts_key(model: str, texts: list[str]) -> str:
    digest = hashlib.sha256(model.encode())
    for text in texts:
        digest.update(b"\x1e" + text.encode("utf-8", "surrogatepass"))
    return digest.hexdigest()[:24]


def cache_path(texts: list[str], model: str = embedding.DEFAULT_EMBEDDING_MODEL,
               cache_dir: str = DEFAULT_CACHE_DIR) -> str:
    """Where embed_cached keeps (or will keep) the embeddings of `texts`: to check without embedding."""
    return os.path.join(cache_dir, f"emb-{_texts_key(model, texts)}.npy")


def embed_cached(texts: list[str], model: str = embedding.DEFAULT_EMBEDDING_MODEL,
                 cache_dir: str | None = DEFAULT_CACHE_DIR) -> np.ndarray:
    """Unit-normalised embeddings of `texts` (backends.embedding), cached on disk by content."""
    if not texts:
        return np.zeros((0, embedding.embedding_dimension(model)), dtype=np.float32)
    path = None
    if cache_dir:
        path = cache_path(texts, model, cache_dir)
        if os.path.exists(path):
            return np.load(path)
    vectors = embedding.embed_texts(model, texts)
    if path:
        os.makedirs(cache_dir, exist_ok=True)
        np.save(path + ".tmp.npy", vectors)
        os.replace(path + ".tmp.npy", path)
    return vectors


class TextEmbedder:
    """Embeds short texts (released summaries) with an in-memory memo: DP summaries repeat a lot.
    `known`: texts already embedded with `model` (say by embed_cached), served from their vectors."""

    def __init__(self, model: str = embedding.DEFAULT_EMBEDDING_MODEL, known: dict[str, np.ndarray] | None = None):
        self.model = model
        self._memo: dict[str, np.ndarray] = dict(known or {})

    def __call__(self, texts: list[str]) -> np.ndarray:
        missing = list(dict.fromkeys(t for t in texts if t not in self._memo))
        if missing:
            for text, vector in zip(missing, embedding.embed_texts(self.model, missing)):
                self._memo[text] = vector
        if not texts:
            return np.zeros((0, embedding.embedding_dimension(self.model)), dtype=np.float32)
        return np.stack([self._memo[t] for t in texts])


def bound_contributions(user_ids: list[str], conversation_ids: list[str], limit: int,
                        seed: int) -> tuple[np.ndarray, np.ndarray]:
    """The job's contribution bounding (dp_ops.contribution_bounding, as transforms/bound_contributions.py
    applies it) on lists. Returns (indices kept, in input order; their weights)."""
    by_user: dict[str, list] = {}
    for index, (user, conversation) in enumerate(zip(user_ids, conversation_ids)):
        by_user.setdefault(user, []).append((bounding_rank(seed, conversation), index))
    weights = {}
    for ranked in by_user.values():
        kept = keep_first(ranked, limit)
        for _, index in kept:
            weights[index] = contribution_weight(len(kept))
    kept_indices = sorted(weights)
    return np.array(kept_indices, dtype=np.int64), np.array([weights[i] for i in kept_indices], dtype=np.float64)


def main(argv: list[str] | None = None) -> None:
    """Pre-embeds data sets into the cache: python -m eval.data FILE [FILE ...]"""
    import argparse
    import time
    parser = argparse.ArgumentParser(description="Embed data sets once into the evaluation cache.")
    parser.add_argument("paths", nargs="+")
    parser.add_argument("--embedding_model", default=embedding.DEFAULT_EMBEDDING_MODEL)
    args = parser.parse_args(argv)
    for path in args.paths:
        started = time.time()
        dataset = load_dataset(path)
        vectors = embed_cached(dataset.facets, args.embedding_model)
        print(f"{path}: {len(dataset)} conversations ({dataset.dead_lettered} invalid), {vectors.shape} "
              f"embedded or cached in {time.time() - started:.1f} s")


if __name__ == "__main__":
    main()
