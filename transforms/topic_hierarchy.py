"""A two-level topic hierarchy (URANIA §H, as in CLIO): released topics grouped by what they are about.

Pure post-processing of the release: a topic's group is the dominant keyword-set category of its
released keywords (public categories, `backends.keyword_categories`), a group of one topic included.
Two exceptions, each one group of its own: a topic whose label is UNVERIFIED (backends/label_evidence.py:
keywords nearest its DP centre lying mostly in a sensitive category, no vote of its own behind them; it
is named by the rest of them, or unlabelled) goes to `UNVERIFIED_GROUP`, never to a category's group;
a topic without a dominant category (no keywords, or none with a category) goes to the group of
uncategorised topics. No topic is placed by the distance
between DP cluster centres: those centres are noisy, and placing by them put "Python coding" topics
under "Home and garden". Only when the keyword set has no categories at all are the topics grouped by
seeded k-means on their centres. A category group is named by its category (its members' top keywords in the description),
the unverified group by `UNVERIFIED_GROUP`, any other group through the ClusterNamer. No conversation
is touched, so it costs no privacy budget.
`BuildTopicHierarchy` is the job's stage for it; WriteReport places its singleton output into report.json.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence

import apache_beam as beam
import numpy as np

from backends.interfaces import ClusterNamer
from backends.keyword_categories import KeywordCategories, dominant_category
from backends.label_evidence import UNVERIFIED, UNVERIFIED_GROUP
from backends.offline import in_running_text, join_words
from publishing.report import report_topics
from transforms.stage_timing import timed

GROUP_KEYWORDS = 5
METHOD = ("post-processing of released data: each topic in the group of the dominant public keyword category of "
          "its released keywords, a group of one topic included; topics with an unverified label (keywords "
          f"nearest their DP centre in a sensitive category) in one group, \"{UNVERIFIED_GROUP}\"; topics without "
          "a category in one group of their own; for a keyword set without categories, seeded k-means on the DP centres; "
          "no privacy budget")
# The kinds of group `category_groups` returns.
KIND_CATEGORY = "category"
KIND_UNVERIFIED = "unverified"
KIND_UNCATEGORISED = "uncategorised"


def topic_vectors(topics: Sequence[dict], embed: Callable[[list[str]], np.ndarray]) -> np.ndarray:
    """One unit vector per topic (beam_jobs.compare_reports matches two runs' topics by these): the mean
    of the embeddings of its released name and of each of its released keywords. (A comma-joined
    keyword list embeds poorly: "python, unit testing, error message" landed next to "symptoms" with
    all-MiniLM-L6-v2; the mean of the parts does not.)"""
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


def _unit(rows: np.ndarray) -> np.ndarray:
    rows = np.asarray(rows, dtype=np.float64)
    return rows / np.maximum(np.linalg.norm(rows, axis=-1, keepdims=True), 1e-12)


def category_groups(topics: Sequence[dict], category_of: dict[str, str | None]) -> list[tuple[str, str | None, list[dict]]]:
    """[(kind, category, member topics)]: the category groups by name (kind KIND_CATEGORY), then the
    UNVERIFIED topics (kind KIND_UNVERIFIED, category None), then the topics without a dominant category
    (kind KIND_UNCATEGORISED, category None), each only when it has members."""
    by_category: dict[str, list[dict]] = {}
    unverified, without = [], []
    for topic in sorted(topics, key=lambda t: t["id"]):
        # The category its votes support, else its keywords' (a topic named by its category has none).
        category = topic.get("voted_category") or dominant_category(topic["keywords"], category_of)
        if topic.get("label_evidence") == UNVERIFIED:
            # The keywords nearest its DP centre lie mostly in a sensitive category, no vote of its own
            # behind them: in any category's group (its name's included) it would read as a finding.
            unverified.append(topic)
        elif category is None:
            # Not placed by DP centre distance: the centres are noisy, and the nearest ones put
            # unrelated topics together ("Python coding" under "Home and garden").
            without.append(topic)
        else:
            # A group of one topic stays: merging it by centre distance is close to random.
            by_category.setdefault(category, []).append(topic)
    groups: list[tuple[str, str | None, list[dict]]] = [
        (KIND_CATEGORY, category, by_category[category]) for category in sorted(by_category)]
    if unverified:
        groups.append((KIND_UNVERIFIED, None, unverified))
    if without:
        groups.append((KIND_UNCATEGORISED, None, without))
    return groups


def centre_groups(topics: Sequence[dict], centres: np.ndarray, seed: int = 0) -> list[list[dict]]:
    """Without categories: about sqrt(topics) groups by seeded k-means on the topics' DP centres."""
    topics = sorted(topics, key=lambda t: t["id"])
    labels = group_labels(_unit(np.stack([centres[t["id"]] for t in topics])), number_of_groups(len(topics)), seed)
    return [[t for t, label in zip(topics, labels) if label == group] for group in sorted(set(labels.tolist()))]


def describe_category_group(category: str, members: list[dict], keywords: list[str],
                            category_of: dict[str, str | None]) -> str:
    """Two sentences: what the group's topics are about, and how many of them are in its category."""
    own = [k for k in keywords if category_of.get(k) == category and k.casefold() != category.casefold()]
    about = f"Topics about {in_running_text(category)}" + (f", most often {join_words(own[:3])}" if own else "")
    if len(members) == 1:
        return f"{about}. Its one topic's votes or keywords place it in this category."
    return f"{about}. All of its {len(members)} topics' votes or keywords place them in this category."


def describe_unverified_group() -> str:
    """Why the group's topics are together, and why not in the category their names suggest."""
    return ("Topics for which no keyword vote of their own conversations cleared the privacy noise. Most of "
            "the keywords nearest their DP centres lie in a sensitive category, with no votes of their own "
            "supporting it, so that guess is not shown and they sit in no category's group: treat them as "
            "unlabelled.")


def build_hierarchy(topics: Sequence[dict], centres: np.ndarray, category_of: dict[str, str | None],
                    namer: ClusterNamer, seed: int = 0) -> dict:
    """{"method", "groups": [{"name", "description", "keywords", "size", "topic_ids"}]}, groups by size.

    `topics` are report.json topics; `centres` the DP k-means centres (row i: cluster i's, in the
    clustering space; only the fallback without categories uses them); `category_of` the keyword
    set's {keyword: category}. A topic's optional `label_evidence` (backends/label_evidence.py) keeps
    an UNVERIFIED one out of its category's group.
    """
    topics = list(topics)
    if not topics:
        return {"method": METHOD, "groups": []}
    centres = np.asarray(centres, dtype=np.float64)
    # Centres only when the keyword set has no categories at all: a night whose topics happen to have
    # none (all unlabelled, say) still gets the one uncategorised group, never a grouping by noise.
    grouped = (category_groups(topics, category_of) if any(category_of.values()) else
               [(KIND_UNCATEGORISED, None, members) for members in centre_groups(topics, centres, seed)])
    groups = []
    for kind, category, members in grouped:
        members = sorted(members, key=lambda t: (-t["size"], t["id"]))
        # The unverified group lists no keywords: its members' are what is left of a guess.
        keywords = [] if kind == KIND_UNVERIFIED else group_keywords(members)
        if kind == KIND_CATEGORY:
            name, description = category, describe_category_group(category, members, keywords, category_of)
        elif kind == KIND_UNVERIFIED:
            name, description = UNVERIFIED_GROUP, describe_unverified_group()
        else:
            name, description = namer.name_group(keywords, [m["name"] for m in members])
        groups.append({"name": name, "description": description, "keywords": keywords,
                       "size": sum(m["size"] for m in members), "topic_ids": [m["id"] for m in members]})
    groups.sort(key=lambda g: (-g["size"], g["topic_ids"][0]))
    return {"method": METHOD, "groups": groups}


class _BuildHierarchyFn(beam.DoFn):
    def __init__(self, categories: KeywordCategories, namer: ClusterNamer):
        self._categories = categories
        self._namer = namer

    def setup(self):
        self._categories.setup()
        self._namer.setup()
        self._timed_build = timed("topic_hierarchy", build_hierarchy)

    def teardown(self):
        self._namer.teardown()

    def process(self, named_topics: list, noisy_sizes: dict, centres):
        # report_topics keeps each topic's `label_evidence`, which keeps unverified labels apart.
        topics = report_topics(dict(named_topics), noisy_sizes)
        yield self._timed_build(topics, centres, self._categories.category_of, self._namer)


class BuildTopicHierarchy(beam.PTransform):
    """Input: (cluster_id, named topic) for the kept clusters; side inputs: their noisy sizes and the
    DP k-means centres (a singleton, k x dim). Output: a singleton hierarchy (`build_hierarchy` of the
    report's topics; groups [] for none)."""

    def __init__(self, kept_sizes, centres, categories: KeywordCategories, namer: ClusterNamer):
        super().__init__()
        self._kept_sizes = kept_sizes
        self._centres = centres
        self._categories = categories
        self._namer = namer

    def local(self, named_topics: dict) -> dict:
        """In-process (transforms/engine.py): the same DoFn; `kept_sizes` a dict, `centres` an array."""
        build = _BuildHierarchyFn(self._categories, self._namer)
        build.setup()
        try:
            (hierarchy,) = build.process(list(named_topics.items()), self._kept_sizes, self._centres)
        finally:
            build.teardown()
        return hierarchy

    def expand(self, named_topics):
        return (named_topics
                | "all named topics" >> beam.combiners.ToList()
                | "group and name topics" >> beam.ParDo(_BuildHierarchyFn(self._categories, self._namer),
                                                        beam.pvalue.AsDict(self._kept_sizes),
                                                        beam.pvalue.AsSingleton(self._centres)))
