"""Every released topic's name made distinct (`distinct_names`), after the namer (transforms/name_clusters.py)
and again after the centre decoder (transforms/decode_centres.py). It sees the named topics only, so it is
post-processing."""

from __future__ import annotations

import apache_beam as beam

from backends.keyword_categories import KeywordCategories, dominant_category
from backends.label_evidence import APPROXIMATE_SUFFIX, CATEGORY_VOTED, UNVERIFIED
from backends.offline import MAX_NAME_WORDS, cut_name


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


class DistinctNamesFn(beam.DoFn):
    """A list of (cluster_id, named topic) -> the same with every name distinct (`distinct_names`), one
    element per topic; the categories tell which keywords may tell a name apart."""

    def __init__(self, categories: KeywordCategories | None):
        self._categories = categories

    def setup(self):
        if self._categories is not None:
            self._categories.setup()

    def process(self, named_topics: list):
        category_of = self._categories.category_of if self._categories is not None else {}
        yield from sorted(distinct_names(dict(named_topics), category_of).items())
