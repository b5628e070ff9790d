"""A topic's label from the keyword stage's release: category first, then keywords inside it.

Post-processing of released values only (no budget): the noisy (cluster, keyword) and, with category
votes (dp_ops/keyword_votes.py), (cluster, category) sums of every kept cluster, the public keyword
set and its categories, and the DP centres' nearest keywords for the fallback.

Why category first: a topic's users spread their votes over many related keywords ("cover letter",
"essay", "proofreading"), so no single keyword may clear the noise floor while their category
("Writing and editing") gathers all of them and clears it. A topic's label is then:
1. its voted categories: those whose noisy sum clears the category floor (the value pure noise
   exceeds for `false_per_topic` of a topic's categories; a sensitive category's floor is set for a
   tenth of that, `SENSITIVE_FALSE_ALARM_SHARE`, as a false alarm there is the costliest error);
2. its keywords: those of the voted categories that clear the floor of that smaller pool of
   candidates (lower than the floor over all of K), and keywords without a category that clear the
   floor over all of K. A keyword of a category the votes do not support is never released, which
   keeps stray keywords of another theme out;
3. a topic with a voted category and no keyword is named by the category (`CATEGORY_SOURCE`); its
   keywords are then that category's keywords nearest its DP centre (post-processing, a guess
   within the category its votes support; backends/label_evidence.py shows none of a sensitive one).
Without category votes (--category_vote_share 0, count votes, or a keyword set without categories)
the keywords are those over the floor over all of K, as before.

Then, a topic none of whose votes cleared is labelled by the keywords nearest its DP centre
(`CENTROID_SOURCE`, a guess: backends/label_evidence.py marks it), when the fallback is on.

A sensitive category that cleared its floor still names a topic only when its votes are a large share
of the topic's votes (backends/label_evidence.py: the lower 95% bound of the share, at the release's
noise, must reach one half). With category votes the share is the category's vote over the sum of
all of the topic's category votes; without them, its keywords' votes over the sum of all of the
topic's candidate keywords' votes (a sum over all of K is noisy: without --keyword_candidates only a
large topic reaches the bound). A category that falls short is treated as not voted: its keywords
are not released and the topic is labelled by its other votes, or, with none, as a topic none of
whose votes cleared; its share goes with the label (`VotedLabel.sensitive_share`) into the topic.

Each label also carries the shares of the topic's votes its keywords and category hold (`vote_shares`:
dp_ops.fixed_histogram.histogram_rows over the topic's candidate keywords, and over its categories),
with 95% intervals, so that a name is published with how much of its topic it stands for and is kept
only when that is a meaningful share (backends/label_evidence.py, `NAME_SHARE`).
"""

from __future__ import annotations

import dataclasses
from typing import NamedTuple

import apache_beam as beam

from backends.keyword_categories import dominant_category
from backends.label_evidence import may_name, vote_share
from core.label_sources import CATEGORY_SOURCE, CENTROID_SOURCE, HISTOGRAM_SOURCE, NO_SOURCE
from dp_ops.dp_counts import min_users_to_clear, release_floor
from dp_ops.fixed_histogram import histogram_rows
from dp_ops.keyword_votes import CategoryVote

# A sensitive category's floor is set for this share of the false categories a topic may get, so
# pure noise puts a topic in one of the (here 7 of 40) sensitive categories ten times less often.
SENSITIVE_FALSE_ALARM_SHARE = 0.1


@dataclasses.dataclass(frozen=True)
class VoteFloors:
    """The release floors of one run's votes. `noise`: the release's noise (None: no noise, the
    non-private evaluation, where every floor is `fixed`); `keyword`: the floor over all of a topic's
    candidate keywords; `fixed`: --keyword_min_noisy_count, which replaces every keyword floor."""

    noise: dict | None
    false_per_topic: float
    keyword: float
    fixed: float | None = None

    def category(self, categories: int, sensitive: bool) -> float:
        if self.noise is None:
            return self.keyword
        rate = self.false_per_topic * (SENSITIVE_FALSE_ALARM_SHARE if sensitive else 1.0)
        return release_floor(self.noise, categories, rate)

    def pool(self, candidates: int) -> float:
        """The floor of a keyword among `candidates` keywords of the voted categories."""
        if self.fixed is not None or self.noise is None:
            return self.keyword
        return release_floor(self.noise, candidates, self.false_per_topic)


def vote_floors(noise: dict | None, candidates_per_topic: int, false_per_topic: float,
                fixed: float | None = None) -> VoteFloors:
    """The run's floors: over all of a topic's candidate keywords (the noise quantile at rate /
    candidates), or `fixed` (--keyword_min_noisy_count)."""
    keyword = fixed if fixed is not None else release_floor(noise, candidates_per_topic, false_per_topic)
    return VoteFloors(noise, false_per_topic, keyword, fixed)


def category_votes_section(floors: VoteFloors, category_share: float, categories: tuple[str, ...]) -> dict | None:
    """The report's account of the category floors (publishing.report.labelling_section); None without category votes."""
    if not categories:
        return None
    return {"category_vote_share": category_share, "categories": len(categories),
            "category_release_floor": floors.category(len(categories), False),
            "sensitive_category_release_floor": floors.category(len(categories), True)}


def top_keywords(cluster_and_counts, top_t: int, min_noisy_count: float, candidates=None):
    """The `top_t` keywords with the largest noisy values >= the floor; with `candidates` (a
    collection of keywords), only those are considered."""
    cluster_id, keyword_counts = cluster_and_counts
    ranked = sorted(((count, keyword) for keyword, count in keyword_counts
                     if count >= min_noisy_count and (candidates is None or keyword in candidates)),
                    key=lambda pair: (-pair[0], pair[1]))
    return cluster_id, [keyword for _, keyword in ranked[:top_t]]


def voted_categories(category_values: dict[str, float], floors: VoteFloors, sensitive: frozenset[str]) -> list[str]:
    """The categories whose noisy sum clears their floor, largest first."""
    floor = {False: floors.category(len(category_values), False), True: floors.category(len(category_values), True)}
    voted = [c for c, value in category_values.items() if value >= floor[c in sensitive]]
    return sorted(voted, key=lambda c: (-category_values[c], c))


class VotedLabel(NamedTuple):
    """What a topic's votes give: its released keywords, the category they support (None: none), and
    the share of its votes of its strongest sensitive category that cleared its floor (None: none did),
    as `backends.label_evidence.vote_share` gives it."""

    keywords: list[str]
    category: str | None
    sensitive_share: dict | None


def _thin_sensitive(shares: list[dict]) -> tuple[set[str], dict | None]:
    """The sensitive categories whose share may not name the topic, and the share to release: the
    first of `shares` (the strongest by noisy votes)."""
    return {s["category"] for s in shares if not may_name(s)}, (shares[0] if shares else None)


def voted_label(column_values, top_t: int, floors: VoteFloors, category_of: dict[str, str | None],
                sensitive: frozenset[str], candidates=None) -> VotedLabel:
    """A topic's VotedLabel from its (column, noisy value) pairs (columns: keywords, and CategoryVote
    with category votes). A sensitive category whose share of the votes is too small or uncertain to
    name the topic is left out, with its keywords (module docstring)."""
    column_values = list(column_values)
    keyword_values = [(k, v) for k, v in column_values if isinstance(k, str)]
    category_values = {c.category: v for c, v in column_values if isinstance(c, CategoryVote)}
    allowed = [(k, v) for k, v in keyword_values if candidates is None or k in candidates]
    if not category_values:
        cleared = top_keywords((None, keyword_values), len(keyword_values), floors.keyword, candidates)[1]
        found = _by_votes({category_of.get(k) for k in cleared[:top_t]} & sensitive, allowed, category_of)
        thin, share = _thin_sensitive([_keyword_share(c, allowed, category_of, floors.noise) for c in found])
        # A thin category's keywords give way to the next ones that cleared.
        return VotedLabel([k for k in cleared if category_of.get(k) not in thin][:top_t], None, share)
    voted = voted_categories(category_values, floors, sensitive)
    total = sum(category_values.values())
    thin, share = _thin_sensitive([vote_share(c, category_values[c], 1, total - category_values[c],
                                              len(category_values) - 1, floors.noise)
                                   for c in voted if c in sensitive])
    voted = [c for c in voted if c not in thin]
    in_voted = frozenset(voted)
    pool = [(k, v) for k, v in allowed if category_of.get(k) in in_voted]
    without_category = [(k, v) for k, v in allowed if category_of.get(k) is None]
    cleared = (top_keywords((None, pool), top_t, floors.pool(len(pool)))[1]
               + top_keywords((None, without_category), top_t, floors.keyword)[1])
    value = dict(keyword_values)
    keywords = sorted(cleared, key=lambda k: (-value[k], k))[:top_t]
    # The keywords' own category when they have one (the name is made from them), else the top vote.
    category = dominant_category(keywords, category_of) or (voted[0] if voted else None)
    return VotedLabel(keywords, category, share)


def _by_votes(categories: set[str], keyword_values, category_of: dict[str, str | None]) -> list[str]:
    """`categories` by the summed noisy votes of their keywords among `keyword_values`, largest first."""
    votes = {c: sum(v for k, v in keyword_values if category_of.get(k) == c) for c in categories}
    return sorted(categories, key=lambda c: (-votes[c], c))


def _keyword_share(category: str, keyword_values, category_of: dict[str, str | None], noise: dict | None) -> dict:
    """`vote_share` of `category` among a topic's candidate keywords' votes (no category votes)."""
    inside = [v for k, v in keyword_values if category_of.get(k) == category]
    outside = [v for k, v in keyword_values if category_of.get(k) != category]
    return vote_share(category, sum(inside), len(inside), sum(outside), len(outside), noise)


def voted_keywords(column_values, top_t: int, floors: VoteFloors, category_of: dict[str, str | None],
                   sensitive: frozenset[str], candidates=None) -> tuple[list[str], str | None]:
    """A topic's released keywords and the category its votes support (None: none): `voted_label`
    without the share."""
    label = voted_label(column_values, top_t, floors, category_of, sensitive, candidates)
    return label.keywords, label.category


def label_keywords(histogram_keywords: list[str], centre_ranking: list[str] | None, top_t: int,
                   voted_category: str | None = None,
                   category_of: dict[str, str | None] | None = None) -> tuple[list[str], str, str | None]:
    """A topic's (label keywords, where they came from, the category its votes support): the votes'
    keywords when any cleared the floor; else its voted category, with that category's keywords
    nearest its DP centre; else (with the fallback on) the keywords nearest its DP centre, with no
    category; else none. `centre_ranking`: K by closeness to the topic's DP centre (None: no
    fallback), of which `top_t` are taken."""
    if histogram_keywords:
        return list(histogram_keywords), HISTOGRAM_SOURCE, voted_category
    ranking = list(centre_ranking or [])
    if voted_category is not None:
        inside = [k for k in ranking if (category_of or {}).get(k) == voted_category]
        return inside[:top_t], CATEGORY_SOURCE, voted_category
    if ranking:
        return ranking[:top_t], CENTROID_SOURCE, None
    return [], NO_SOURCE, None


def vote_shares(column_values, keywords: list[str], category: str | None, noise: dict | None,
                candidates=None) -> dict:
    """{"keywords": [a row per label keyword], "category": a row for `category`, or None}: each one's
    noisy votes and their share of the topic's votes with 95% intervals (histogram_rows' rows, keyed
    "keyword" or "category"). A keyword's share is of the votes of the topic's candidate keywords (all
    of K without --keyword_candidates), a category's of its category votes; a keyword outside the
    candidates (a centre guess) has no row. `noise`: each released value's (None: exact values).
    Post-processing of the release."""
    std = 0.0 if noise is None else noise["std"]
    column_values = list(column_values)
    keyword_values = {k: v for k, v in column_values if isinstance(k, str) and (candidates is None or k in candidates)}
    category_values = {c.category: v for c, v in column_values if isinstance(c, CategoryVote)}
    rows = {row["keyword"]: row for row in histogram_rows(keyword_values, std, "keyword")} if keyword_values else {}
    category_row = next((row for row in histogram_rows(category_values, std, "category")
                         if row["category"] == category), None) if category in category_values else None
    return {"keywords": [rows[k] for k in keywords if k in rows], "category": category_row}


def min_users_to_label(floors: VoteFloors, category_share: float, categories: int) -> int:
    """The fewest users who can bring a topic's expected noisy sum to a floor: at a keyword over all
    of K (a user adds at most 1 to one), or, with category votes, at a non-sensitive category (a user
    adds at most sqrt(s) to one, all of its keywords in it)."""
    keyword = min_users_to_clear(floors.keyword)
    if not categories or category_share <= 0:
        return keyword
    return min(keyword, min_users_to_clear(floors.category(categories, False), category_share ** 0.5))


def _label(cluster_and_values, top_t, floors, categories, centroid_by_cluster, candidates_by_cluster):
    cluster_id, column_values = cluster_and_values
    candidates = (None if candidates_by_cluster is None
                  else frozenset(candidates_by_cluster.get(cluster_id, ())))
    category_of, sensitive = ({}, frozenset()) if categories is None else (categories.category_of,
                                                                          categories.sensitive)
    column_values = list(column_values)
    label = voted_label(column_values, top_t, floors, category_of, sensitive, candidates)
    ranking = None if centroid_by_cluster is None else centroid_by_cluster.get(cluster_id, [])
    keywords, source, category = label_keywords(label.keywords, ranking, top_t, label.category, category_of)
    return cluster_id, (keywords, source, category, label.sensitive_share,
                        vote_shares(column_values, keywords, category, floors.noise, candidates))


class _LabelFn(beam.DoFn):
    def __init__(self, top_t, floors, categories):
        self._args = (top_t, floors, categories)

    def setup(self):
        if self._args[2] is not None:
            self._args[2].setup()

    def process(self, cluster_and_values, centroid_by_cluster=None, candidates_by_cluster=None):
        yield _label(cluster_and_values, *self._args, centroid_by_cluster, candidates_by_cluster)


class LabelTopics(beam.PTransform):
    """Input: the release, ((cluster_id, column), noisy value) for every kept cluster x column. Output:
    (cluster_id, (keywords, label source, voted category or None, sensitive share or None, vote shares))
    for every kept cluster (the share: `VotedLabel.sensitive_share`; the shares: `vote_shares`).
    `categories`: the keyword set's (KeywordCategories), or None; `centroid_keywords`: (cluster_id,
    [K by closeness to its DP centre]) for the fallback, or None; `candidates`: (cluster_id, [its
    candidate keywords]), when a topic's keywords are chosen among them only (--keyword_candidates)."""

    def __init__(self, top_t: int, floors: VoteFloors, categories=None, centroid_keywords=None, candidates=None):
        super().__init__()
        self._fn = _LabelFn(top_t, floors, categories)
        self._centroid_keywords = centroid_keywords
        self._candidates = candidates

    def local(self, release: dict) -> dict:
        """In-process (transforms/engine.py): {(cluster_id, column): value} -> {cluster_id: label};
        `centroid_keywords` and `candidates` dicts (or None)."""
        per_cluster: dict[int, list] = {}
        for (cluster_id, column), value in release.items():
            per_cluster.setdefault(cluster_id, []).append((column, value))
        self._fn.setup()
        return dict(label for item in per_cluster.items()
                    for label in self._fn.process(item, self._centroid_keywords, self._candidates))

    def expand(self, release):
        side = {name: beam.pvalue.AsDict(collection) for name, collection in
                (("centroid_by_cluster", self._centroid_keywords), ("candidates_by_cluster", self._candidates))
                if collection is not None}
        return (release
                | "key by cluster" >> beam.MapTuple(lambda partition, value: (partition[0], (partition[1], value)))
                | "group columns per cluster" >> beam.GroupByKey()
                | "label from votes, category first" >> beam.ParDo(self._fn, **side))
