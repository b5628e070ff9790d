"""NameClusters: (cluster_id, (label keywords, their source, voted category, sensitive share)) -> name and
description, via a ClusterNamer; then says how far each label can be trusted (backends/label_evidence.py:
"(approximate)"; a sensitive guess without votes behind it is named by its nearest non-sensitive category
or "Unlabelled topic", never by the guess), and makes the names of all released topics distinct.

The namer sees the released keywords (and the keyword set's public categories) and nothing else,
and the distinct-names step sees the named topics only, so the output is post-processing.
"""

from __future__ import annotations

import apache_beam as beam

from backends.interfaces import ClusterNamer
from backends.keyword_categories import KeywordCategories
from backends.label_evidence import labelled_topic
from transforms.distinct_names import DistinctNamesFn
from transforms.stage_timing import timed


def name_topic(namer: ClusterNamer, keywords: list[str], source: str, categories: KeywordCategories | None,
               voted_category: str | None = None, sensitive_share: dict | None = None,
               shares: dict | None = None) -> dict:
    """{"name", "description", "keywords", "label_source", "label_evidence"} (and "voted_category",
    "sensitive_share", "keyword_shares", "category_share") of one topic: the namer's name for its label
    keywords, or its voted category's, marked by how far they rest on its own DP votes."""
    category_of, sensitive = ({}, frozenset()) if categories is None else (categories.category_of, categories.sensitive)
    return labelled_topic(namer.name, list(keywords), source, category_of, sensitive, voted_category,
                          sensitive_share, shares)


class _NameClusterFn(beam.DoFn):
    def __init__(self, namer: ClusterNamer, categories: KeywordCategories | None):
        self._namer = namer
        self._categories = categories

    def setup(self):
        self._namer.setup()
        if self._categories is not None:
            self._categories.setup()
        self._timed_name = timed("name_clusters", name_topic)

    def teardown(self):
        self._namer.teardown()

    def process(self, cluster_and_label):
        # A label from LabelTopics carries its sensitive share and vote shares; one without votes has none.
        cluster_id, (keywords, source, voted_category, *shares) = cluster_and_label
        share, vote_shares = (list(shares) + [None, None])[:2]
        yield cluster_id, self._timed_name(self._namer, list(keywords), source, self._categories, voted_category,
                                           share, vote_shares)


class NameClusters(beam.PTransform):
    """(cluster_id, (label keywords, label source, voted category or None[, sensitive share or None[, vote
    shares]])) ->
    (cluster_id, name_topic's dict), names distinct.
    `categories`: the keyword set's, for the sensitive marks and the keywords that tell two topics of
    one name apart."""

    def __init__(self, namer: ClusterNamer, categories: KeywordCategories | None = None):
        super().__init__()
        self._namer = namer
        self._categories = categories

    def local(self, labels: dict) -> dict:
        """In-process (transforms/engine.py): the same DoFns on {cluster_id: label} -> {cluster_id: topic}."""
        name = _NameClusterFn(self._namer, self._categories)
        name.setup()
        try:
            named = [topic for item in labels.items() for topic in name.process(item)]
        finally:
            name.teardown()
        distinct = DistinctNamesFn(self._categories)
        distinct.setup()
        return dict(distinct.process(named))

    def expand(self, top_keywords):
        return (top_keywords
                | "name each cluster from its keywords" >> beam.ParDo(_NameClusterFn(self._namer, self._categories))
                | "all names" >> beam.combiners.ToList()
                | "make names distinct" >> beam.ParDo(DistinctNamesFn(self._categories)))
