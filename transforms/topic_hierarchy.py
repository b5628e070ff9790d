"""A two-level topic hierarchy (URANIA §H, as in CLIO): released topics grouped by what they are about.

Pure post-processing of the release: a topic's group is the dominant keyword-set category of its
released keywords (public categories, `backends.keyword_categories`); a topic without one joins the
group whose members' DP cluster centres are nearest its own (cosine in the clustering space), and a
group of fewer than `MIN_GROUP_TOPICS` topics merges into the group nearest it by the same centres.
With no categories at all, the topics are grouped by seeded k-means on their centres. A category
group is named by its category (its members' top keywords in the description), any other group
through the ClusterNamer. No conversation is touched, so it costs no privacy budget.
`BuildTopicHierarchy` is the job's stage for it; WriteReport places its singleton output into report.json.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence

import apache_beam as beam
import numpy as np

from backends.interfaces import ClusterNamer
from backends.keyword_categories import KeywordCategories, dominant_category
from backends.offline import in_running_text, join_words
from core.report import report_topics
from transforms.stage_timing import timed

GROUP_KEYWORDS = 5
MIN_GROUP_TOPICS = 2
METHOD = ("post-processing of released data: each topic in the group of the dominant public keyword category of "
          "its released keywords; topics without one, and groups of fewer than "
          f"{MIN_GROUP_TOPICS} topics, join the group whose DP cluster centres are nearest (cosine); "
          "without categories, seeded k-means on the DP centres; no privacy budget")


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


def _mean_centre(members: list[dict], centres: np.ndarray) -> np.ndarray:
    return _unit(np.mean([centres[m["id"]] for m in members], axis=0))


def _nearest_group(centre: np.ndarray, groups: list[list[dict]], centres: np.ndarray) -> int:
    """Index of the group whose mean member centre has the highest cosine with `centre` (first on ties)."""
    similarities = [float(_unit(centre) @ _mean_centre(g, centres)) for g in groups]
    return int(np.argmax(similarities))


def category_groups(topics: Sequence[dict], centres: np.ndarray, category_of: dict[str, str | None],
                    min_group_topics: int = MIN_GROUP_TOPICS) -> list[tuple[str | None, list[dict]]]:
    """[(category, member topics)]: topics by the dominant category of their keywords, the rest and
    the small groups joined to the nearest group by centres; [] when no topic has a category."""
    by_category: dict[str, list[dict]] = {}
    without = []
    for topic in sorted(topics, key=lambda t: t["id"]):
        category = dominant_category(topic["keywords"], category_of)
        (by_category.setdefault(category, []) if category is not None else without).append(topic)
    if not by_category:
        return []
    groups = [(category, by_category[category]) for category in sorted(by_category)]
    # Against the categorised groups only, so a topic's group never depends on the order of the others.
    targets = [nearest for nearest in (_nearest_group(centres[t["id"]], [g for _, g in groups], centres)
                                       for t in without)]
    for topic, target in zip(without, targets):
        groups[target][1].append(topic)
    while len(groups) > 1:
        small = [i for i, (_, members) in enumerate(groups) if len(members) < min_group_topics]
        if not small:
            break
        # The smallest first (fewest topics, then fewest conversations, then category name).
        i = min(small, key=lambda j: (len(groups[j][1]), sum(m["size"] for m in groups[j][1]), groups[j][0]))
        category, members = groups.pop(i)
        target = _nearest_group(_mean_centre(members, centres), [g for _, g in groups], centres)
        groups[target][1].extend(members)
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
    in_category = sum(dominant_category(m["keywords"], category_of) == category for m in members)
    if in_category == len(members):
        return f"{about}. All of its {len(members)} topics have keywords mostly in this category."
    others = "the other" if len(members) - in_category == 1 else "the others"
    return (f"{about}. {in_category} of its {len(members)} topics {'has' if in_category == 1 else 'have'} keywords "
            f"mostly in this category; {others} joined it by the nearest DP cluster centres.")


def build_hierarchy(topics: Sequence[dict], centres: np.ndarray, category_of: dict[str, str | None],
                    namer: ClusterNamer, min_group_topics: int = MIN_GROUP_TOPICS, seed: int = 0) -> dict:
    """{"method", "groups": [{"name", "description", "keywords", "size", "topic_ids"}]}, groups by size.

    `topics` are report.json topics; `centres` the DP k-means centres (row i: cluster i's, in the
    clustering space); `category_of` the keyword set's {keyword: category}.
    """
    topics = list(topics)
    if not topics:
        return {"method": METHOD, "groups": []}
    centres = np.asarray(centres, dtype=np.float64)
    grouped = category_groups(topics, centres, category_of, min_group_topics) or [
        (None, members) for members in centre_groups(topics, centres, seed)]
    groups = []
    for category, members in grouped:
        members = sorted(members, key=lambda t: (-t["size"], t["id"]))
        keywords = group_keywords(members)
        if category is not None:
            name, description = category, describe_category_group(category, members, keywords, category_of)
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

    def expand(self, named_topics):
        return (named_topics
                | "all named topics" >> beam.combiners.ToList()
                | "group and name topics" >> beam.ParDo(_BuildHierarchyFn(self._categories, self._namer),
                                                        beam.pvalue.AsDict(self._kept_sizes),
                                                        beam.pvalue.AsSingleton(self._centres)))
