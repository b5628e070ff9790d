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
from backends.keyword_categories import KeywordCategories, dominant_category
from backends.label_evidence import APPROXIMATE_SUFFIX, CATEGORY_VOTED, UNVERIFIED, labelled_topic
from backends.offline import MAX_NAME_WORDS, cut_name
from transforms.stage_timing import timed


def _with_distinguisher(name: str, distinguisher: str) -> str:
    """`name (distinguisher)`, the name cut at a word boundary so that the whole has <= 10 words. The
    cut must never drop how far the label can be trusted: an approximate name (an unverified one's
    too) keeps its APPROXIMATE_SUFFIX last."""
    suffix = APPROXIMATE_SUFFIX if name.endswith(APPROXIMATE_SUFFIX) else ""
    words = MAX_NAME_WORDS - len(distinguisher.split()) - len(suffix.split())
    name = cut_name(name[: len(name) - len(suffix)], words)
    return name + f" ({distinguisher})" + suffix


def _distinguisher(topic: dict, taken: set[str], category_of: dict[str, str | None]) -> str | None:
    """The topic's best-ranked keyword that is not in its name yet, not used for another topic of the
    same name, and of the name's category (so that the name still never joins two categories). None
    for an unverified label: its keywords are what is left of a guess, and its name is fixed."""
    if topic.get("label_evidence") in (UNVERIFIED, CATEGORY_VOTED):
        # A category-named topic's keywords are guesses inside its voted category: in its name they
        # would read as a finding, so such topics are numbered instead.
        return None
    name = topic["name"].casefold()
    category = dominant_category(topic["keywords"], category_of)
    for keyword in topic["keywords"]:
        if keyword.casefold() in name or keyword in taken:
            continue
        if category is None or category_of.get(keyword) == category:
            return keyword
    return None


def distinct_names(named_topics: dict, category_of: dict[str, str | None] | None = None) -> dict:
    """{cluster_id: topic} with every name distinct (case-insensitively): topics that share a name each
    get their best distinguishing keyword in brackets; of those with none left, the first (by cluster
    id) keeps the name and the others get a number. Deterministic; a name no other topic has is unchanged."""
    category_of = category_of or {}
    topics = {cluster_id: dict(topic) for cluster_id, topic in named_topics.items()}
    for _ in range(len(topics) + 1):
        by_name: dict[str, list] = {}
        for cluster_id in sorted(topics):
            by_name.setdefault(topics[cluster_id]["name"].casefold(), []).append(cluster_id)
        shared = [ids for ids in by_name.values() if len(ids) > 1]
        if not shared:
            return topics
        for ids in shared:
            taken: set[str] = set()
            without = []
            for cluster_id in ids:
                keyword = _distinguisher(topics[cluster_id], taken, category_of)
                if keyword is None:
                    without.append(cluster_id)
                else:
                    taken.add(keyword)
                    topics[cluster_id]["name"] = _with_distinguisher(topics[cluster_id]["name"], keyword)
            # The first topic with nothing to tell it apart keeps the name; any others are numbered.
            for number, cluster_id in enumerate(without[1:], start=2):
                topics[cluster_id]["name"] = _with_distinguisher(topics[cluster_id]["name"], str(number))
    raise AssertionError("distinct_names did not converge")  # each round leaves one topic per shared name


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


class _DistinctNamesFn(beam.DoFn):
    def __init__(self, categories: KeywordCategories | None):
        self._categories = categories

    def setup(self):
        if self._categories is not None:
            self._categories.setup()

    def process(self, named_topics: list):
        category_of = self._categories.category_of if self._categories is not None else {}
        yield from sorted(distinct_names(dict(named_topics), category_of).items())


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
        distinct = _DistinctNamesFn(self._categories)
        distinct.setup()
        return dict(distinct.process(named))

    def expand(self, top_keywords):
        return (top_keywords
                | "name each cluster from its keywords" >> beam.ParDo(_NameClusterFn(self._namer, self._categories))
                | "all names" >> beam.combiners.ToList()
                | "make names distinct" >> beam.ParDo(_DistinctNamesFn(self._categories)))
