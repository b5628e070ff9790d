"""A two-level topic hierarchy (URANIA §H, as in CLIO): released topics grouped into ~sqrt(k) groups.

Pure post-processing of the release: it embeds the released topic names and keywords, clusters the
embeddings deterministically and names each group through the ClusterNamer from the members'
released keywords. No conversation is touched, so it costs no privacy budget. `BuildTopicHierarchy`
is the job's stage for it (its model calls happen here, not in the report writer); WriteReport then
places its singleton output into report.json.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence

import apache_beam as beam
import numpy as np

from backends.interfaces import ClusterNamer
from core.report import report_topics
from transforms.stage_timing import timed

GROUP_KEYWORDS = 5
METHOD = ("post-processing of released data: released topic names and keywords embedded with the run's "
          "embedding model (a topic is the mean of its name's and keywords' embeddings), k-means (seeded) into "
          "about sqrt(topics) groups, groups named by the cluster namer "
          "from their members' released keywords; no privacy budget")


def topic_vectors(topics: Sequence[dict], embed: Callable[[list[str]], np.ndarray]) -> np.ndarray:
    """One unit vector per topic: the mean of the embeddings of its released name and of each of its
    released keywords. (A comma-joined keyword list embeds poorly: "python, unit testing, error
    message" landed next to "symptoms" with all-MiniLM-L6-v2; the mean of the parts does not.)"""
    texts, owners = [], []
    for index, topic in enumerate(topics):
        for text in [topic["name"], *topic["keywords"]]:
            texts.append(text)
            owners.append(index)
    if not texts:
        return np.zeros((0, 0))
    embedded = np.asarray(embed(texts), dtype=np.float64)
    owners = np.asarray(owners)
    vectors = np.stack([embedded[owners == i].mean(axis=0) for i in range(len(topics))])
    return vectors / np.maximum(np.linalg.norm(vectors, axis=1, keepdims=True), 1e-12)


def number_of_groups(topics: int) -> int:
    return 0 if topics == 0 else max(1, round(math.sqrt(topics)))


def group_labels(vectors: np.ndarray, groups: int, seed: int = 0) -> np.ndarray:
    """Deterministic k-means labels for unit vectors; fewer groups if there are fewer distinct rows."""
    distinct = len(np.unique(np.round(vectors, 6), axis=0))
    groups = min(groups, distinct)
    if groups <= 1:
        return np.zeros(len(vectors), dtype=int)
    from sklearn.cluster import KMeans
    return KMeans(n_clusters=groups, n_init=10, random_state=seed).fit_predict(vectors)


def group_keywords(members: Sequence[dict], limit: int = GROUP_KEYWORDS) -> list[str]:
    """The members' released keywords, weighted by the members' noisy sizes, best first."""
    weights: dict[str, float] = {}
    first_seen: dict[str, int] = {}
    for member in members:
        for rank, keyword in enumerate(member["keywords"]):
            # A topic's first keyword counts a little more than its last: they are listed by noisy count.
            weights[keyword] = weights.get(keyword, 0.0) + max(member["size"], 1) * (1.0 - 0.1 * rank)
            first_seen.setdefault(keyword, len(first_seen))
    return sorted(weights, key=lambda k: (-weights[k], first_seen[k]))[:limit]


def build_hierarchy(topics: Sequence[dict], embed: Callable[[list[str]], np.ndarray], namer: ClusterNamer,
                    seed: int = 0) -> dict:
    """{"method", "groups": [{"name", "description", "keywords", "size", "topic_ids"}]}, groups by size.

    `topics` are report.json topics; `embed` maps texts to unit vectors (the run's embedding model).
    """
    topics = list(topics)
    if not topics:
        return {"method": METHOD, "groups": []}
    vectors = topic_vectors(topics, embed)
    labels = group_labels(vectors, number_of_groups(len(topics)), seed)
    groups = []
    for label in sorted(set(labels.tolist())):
        members = sorted((t for t, topic_label in zip(topics, labels) if topic_label == label),
                         key=lambda t: (-t["size"], t["id"]))
        keywords = group_keywords(members)
        name, description = namer.name_group(keywords, [m["name"] for m in members])
        groups.append({"name": name, "description": description, "keywords": keywords,
                       "size": sum(m["size"] for m in members), "topic_ids": [m["id"] for m in members]})
    groups.sort(key=lambda g: (-g["size"], g["topic_ids"][0]))
    return {"method": METHOD, "groups": groups}


class _BuildHierarchyFn(beam.DoFn):
    def __init__(self, embedding_model: str, namer: ClusterNamer):
        self._embedding_model = embedding_model
        self._namer = namer

    def setup(self):
        self._namer.setup()
        self._timed_build = timed("topic_hierarchy", build_hierarchy)

    def teardown(self):
        self._namer.teardown()

    def process(self, named_topics: list, noisy_sizes: dict):
        from backends.embedding import embed_texts
        model = self._embedding_model
        topics = report_topics(dict(named_topics), noisy_sizes)
        yield self._timed_build(topics, lambda texts: embed_texts(model, texts), self._namer)


class BuildTopicHierarchy(beam.PTransform):
    """Input: (cluster_id, named topic) for the kept clusters; side input: their noisy sizes.
    Output: a singleton hierarchy (`build_hierarchy` of the report's topics; groups [] for none)."""

    def __init__(self, kept_sizes, embedding_model: str, namer: ClusterNamer):
        super().__init__()
        self._kept_sizes = kept_sizes
        self._embedding_model = embedding_model
        self._namer = namer

    def expand(self, named_topics):
        return (named_topics
                | "all named topics" >> beam.combiners.ToList()
                | "group and name topics" >> beam.ParDo(_BuildHierarchyFn(self._embedding_model, self._namer),
                                                        beam.pvalue.AsDict(self._kept_sizes)))
