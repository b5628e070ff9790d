"""How often the released 95% share intervals hold the true share, for topics of a few users (issue 59).

    python -m eval.utility.share_coverage                  # topics of 10, 20, 50, 100 users, 2,000 draws each
    python -m eval.utility.share_coverage --users 20 --draws 10000 --only facet --noise_seed none --epsilon 3

A share interval is post-processing of a Gaussian release of weighted votes: a facet's topic x answer
cross-tab (dp_ops/facets.py), or a topic's category and keyword votes (dp_ops/keyword_votes.py), each
shown as `share_low`..`share_high` by dp_ops.fixed_histogram.histogram_rows (through
transforms.voted_labels.vote_shares for the votes). This simulates those releases as the job draws
them and counts how often the interval holds the true share (the exact weighted sum of the column over
the exact sum of all the columns the share is taken over):

- **calibration**: the job's joint calibration of the run's stages at these flags
  (eval.urania_inprocess.joint_calibration, at the job's defaults unless flags say otherwise),
  so each release's sigma is the one a run at that epsilon draws;
- **noise**: dp_ops.keyword_votes.noisy_vote_sums, the job's own draw, on its noise stream, seeded
  per draw (`--noise_seed none`: PyDP's secure sampler, as production draws; same distribution);
- **topics**: a topic of n users, each keeping 1-C conversations (C = --max_conversations_per_user,
  heavy-tailed: min(C, Zipf(2))), each conversation weighing 1/n_u (dp_ops.contribution_bounding);
  facets: each user has a main answer drawn from the facet's profile (`PROFILES`, near the shares
  measured on the shared real mix, docs/report.md#facets) and keeps it for 70% of their
  conversations; votes: dp_ops.keyword_votes.conversation_votes with the job's keywords per vote and
  category share over the bundled keyword set, 70% of users in one (non-sensitive) category, the rest in
  three others, each conversation voting two of its category's first eight keywords.

Printed per release and topic size: sigma, how many noisy values the share's total sums, and for the
released interval (the job's code) and the delta-method interval it replaced (`delta_method`, for
comparison only) the coverage pooled over every scored share (facets: every answer with a true share
above 0; categories: the topic's true largest category; keywords: its true lead keyword, over all of
K), the worst coverage of an answer scored in at least half the draws, and the median width. Under
a row, the shares a page shows only when the noisy release passes a rule, a selection the marginal
95% does not cover: the facet answers drawn as a topic's bars (noisy share at least 5%, their true
share 0 or not) and the category the votes name (the largest that cleared the category floor:
transforms.voted_labels.voted_categories). A 95% interval should hold at least 0.95 in every row; with
D draws a coverage is within about 2 sqrt(0.05 x 0.95 / D) of its true value (0.010 at 2,000 draws).
Nothing is written. docs/report.md#share-intervals has the table and what it took.
"""

from __future__ import annotations

import argparse
import dataclasses
import math
import time
from collections.abc import Callable, Iterator, Sequence

import numpy as np

from backends.facet_set import selected_facets
from backends.keyword_set import load_keyword_set
from dp_ops import facets as facet_release
from dp_ops.contribution_bounding import contribution_weight
from dp_ops.fixed_histogram import Z_95, histogram_rows
from dp_ops.keyword_votes import NOISE_STREAM as VOTE_STREAM
from dp_ops.keyword_votes import CategoryVote, conversation_votes, noisy_vote_sums
from eval.config_flags import JOB_DEFAULT, add_config_flags, config_from
from eval.urania_inprocess import UraniaConfig, joint_calibration
from publishing.report_html import FACET_BAR_MIN_SHARE
from transforms.voted_labels import vote_floors, vote_shares, voted_categories

# Each facet's answer shares in the simulated topics, near the exact shares on the shared real mix
# (docs/report.md#facets); an answer not listed has none, `unknown` (a failed classification) 1%.
PROFILES = {
    "language": {"en": 0.80, "zh": 0.05, "es": 0.04, "ru": 0.03, "fr": 0.02, "de": 0.02, "ja": 0.02, "pt": 0.01,
                 "other": 0.01},
    "request_kind": {"brainstorming": 0.18, "advice": 0.15, "role_play": 0.14, "small_talk": 0.12, "other": 0.12,
                     "coding": 0.08, "writing": 0.07, "explanation": 0.06, "analysis": 0.04, "math": 0.03,
                     "translation": 0.01},
    "concern": {"none": 0.65, "low": 0.17, "elevated": 0.12, "high": 0.06},
}
UNKNOWN_SHARE = 0.01
# A user keeps their main answer (or category) for this share of their conversations.
LOYALTY = 0.7
# Vote-topic shape: the users of its main category, its other categories, the keywords a category's
# conversations draw from (its first ones, more often the first).
MAIN_CATEGORY_SHARE = 0.7
OTHER_CATEGORIES = 3
KEYWORDS_DRAWN = 8
# The shares a page shows only when the noisy release passes a rule, scored apart (a selection): a
# topic's facet bars (noisy share >= FACET_BAR_MIN_SHARE, whatever the truth), and the category a topic's
# votes name (the largest that cleared the category floor; a topic with none has no category row).
SHOWN_BARS = f"drawn as a bar (noisy share >= {FACET_BAR_MIN_SHARE:.0%})"
NAMED_CATEGORY = "the category its votes name (cleared the floor)"


def delta_method(noisy: Sequence[float], sigma: float, column: int) -> tuple[float, float]:
    """The share interval the job released before issue 59, for comparison only: share +- 1.96 times its
    delta-method standard deviation sigma sqrt((1 - p)^2 + (k - 1) p^2) / total, clipped to [0, 1]."""
    total, k = float(sum(noisy)), len(noisy)
    if total <= 0:
        return 0.0, 1.0
    share = min(1.0, max(0.0, noisy[column]) / total)
    spread = Z_95 * sigma * math.sqrt((1 - share) ** 2 + (k - 1) * share ** 2) / total
    return max(0.0, share - spread), min(1.0, share + spread)


@dataclasses.dataclass
class Tally:
    """Hits per scored column, for both intervals, and their widths; and the hits of the shares a page
    shows only when the noisy release passes a rule (`extras`, by label: a selection)."""

    hits: dict = dataclasses.field(default_factory=dict)  # (interval, column) -> [covered, draws]
    widths: dict = dataclasses.field(default_factory=dict)  # interval -> [width]
    extras: dict = dataclasses.field(default_factory=dict)  # (label, interval) -> [covered, draws]

    def add(self, interval: str, column, bounds: tuple[float, float], truth: float) -> None:
        cell = self.hits.setdefault((interval, column), [0, 0])
        cell[0] += _holds(bounds, truth)
        cell[1] += 1
        self.widths.setdefault(interval, []).append(bounds[1] - bounds[0])

    def add_extra(self, label: str, interval: str, bounds: tuple[float, float], truth: float) -> None:
        cell = self.extras.setdefault((label, interval), [0, 0])
        cell[0] += _holds(bounds, truth)
        cell[1] += 1

    def pooled(self, interval: str) -> float:
        cells = [v for (i, _), v in self.hits.items() if i == interval]
        return sum(c for c, _ in cells) / max(1, sum(n for _, n in cells))

    def worst(self, interval: str, min_draws: int) -> float:
        """The lowest coverage of a column scored in at least `min_draws` draws (a rarer one's estimate
        is too noisy to rank)."""
        cells = [c / n for (i, _), (c, n) in self.hits.items() if i == interval and n >= min_draws]
        return min(cells) if cells else math.nan

    def median_width(self, interval: str) -> float:
        return float(np.median(self.widths[interval]))

    def extra(self, label: str, interval: str) -> tuple[float, int]:
        covered, draws = self.extras.get((label, interval), [0, 0])
        return (covered / draws if draws else math.nan), draws


def _holds(bounds: tuple[float, float], truth: float) -> bool:
    return bounds[0] - 1e-9 <= truth <= bounds[1] + 1e-9


@dataclasses.dataclass(frozen=True)
class Release:
    """One released histogram: its columns, sigma and noise stream, how a topic's exact sums over the
    columns are drawn, and which of its shares are scored (column index -> the released row's key)."""

    name: str
    columns: tuple
    sigma: float
    stream: int
    exact: Callable[[np.random.Generator, int], np.ndarray]
    score: Callable[[np.ndarray, np.ndarray, float, Tally], None]
    over: int  # how many noisy values a share's total sums
    labelled: tuple[str, ...] = ()  # scored shares printed one by one under the row


def users_conversations(rng: np.random.Generator, users: int, limit: int) -> list[int]:
    """Each user's kept conversations: heavy-tailed, at most `limit`."""
    return [int(min(limit, rng.zipf(2.0))) for _ in range(users)]


def loyal_conversations(rng: np.random.Generator, users: int, limit: int, probabilities: np.ndarray):
    """(kept, choice) for each kept conversation of each user (users_conversations): a user has a main choice
    drawn from `probabilities`, and each conversation takes it with probability LOYALTY, else a fresh draw.
    A generator, so the caller's own draws for a conversation come before the next one's."""
    for kept in users_conversations(rng, users, limit):
        main = rng.choice(len(probabilities), p=probabilities)
        for _ in range(kept):
            yield kept, (main if rng.random() < LOYALTY else rng.choice(len(probabilities), p=probabilities))


def facet_release_of(facet, index: int, sigma: float, limit: int) -> Release:
    """A facet's topic x answer cross-tab for one topic: every answer's share of the topic."""
    columns = facet_release.facet_columns(facet.answer_ids)
    profile = np.array([PROFILES[facet.name].get(answer, 0.0) for answer in columns[:-1]] + [UNKNOWN_SHARE])
    profile = profile / profile.sum()

    def exact(rng: np.random.Generator, users: int) -> np.ndarray:
        sums = np.zeros(len(columns))
        for kept, answer in loyal_conversations(rng, users, limit, profile):
            sums[answer] += contribution_weight(kept)
        return sums

    def score(exact_sums: np.ndarray, noisy: np.ndarray, sigma: float, tally: Tally) -> None:
        rows = histogram_rows(dict(zip(columns, noisy.tolist())), sigma)
        truth = exact_sums / exact_sums.sum()
        for j, row in enumerate(rows):
            released, old = (row["share_low"], row["share_high"]), delta_method(noisy, sigma, j)
            if truth[j] > 0:
                tally.add("released", columns[j], released, truth[j])
                tally.add("delta method", columns[j], old, truth[j])
            if row["share"] >= FACET_BAR_MIN_SHARE:  # drawn as one of the topic's bars, its truth 0 or not
                tally.add_extra(SHOWN_BARS, "released", released, truth[j])
                tally.add_extra(SHOWN_BARS, "delta method", old, truth[j])

    return Release(f"facet {facet.name}", columns, sigma, facet_release.NOISE_STREAM + 2 * index + 1, exact, score,
                   len(columns), (SHOWN_BARS,))


def _vote_topic(keyword_set, limit: int, keywords_per_vote: int, category_share: float):
    """(columns: K then the categories, exact(rng, users) -> sums, main category's column, K's size)."""
    keywords = tuple(keyword_set.keywords)
    category_of = keyword_set.category_of()
    categories = tuple(sorted({c for c in keyword_set.categories if c}))
    by_category = {c: [k for k in keywords if category_of[k] == c] for c in categories}
    usable = [c for c in categories if c not in keyword_set.sensitive_categories and len(by_category[c]) >= KEYWORDS_DRAWN]
    topic_categories = usable[:1 + OTHER_CATEGORIES]
    columns = keywords + tuple(CategoryVote(c) for c in categories)
    index = {column: j for j, column in enumerate(columns)}
    rank_weights = 1.0 / np.arange(1, KEYWORDS_DRAWN + 1)
    rank_weights /= rank_weights.sum()
    category_weights = np.array([MAIN_CATEGORY_SHARE] + [(1 - MAIN_CATEGORY_SHARE) / OTHER_CATEGORIES] * OTHER_CATEGORIES)

    def exact(rng: np.random.Generator, users: int) -> np.ndarray:
        sums = np.zeros(len(columns))
        for kept, category in loyal_conversations(rng, users, limit, category_weights):
            pool = by_category[topic_categories[category]][:KEYWORDS_DRAWN]
            chosen = rng.choice(KEYWORDS_DRAWN, size=keywords_per_vote, replace=False, p=rank_weights)
            for column, value in conversation_votes([pool[i] for i in chosen], contribution_weight(kept),
                                                    keywords_per_vote, category_of, category_share):
                sums[index[column]] += value
        return sums

    return columns, exact, index[CategoryVote(topic_categories[0])], len(keywords)


def vote_releases(config: UraniaConfig, sigma: float) -> list[Release]:
    """The topic's category shares (of its category votes) and lead keyword's share (of all of K's
    votes), both from the one keyword-vote release."""
    keyword_set = load_keyword_set(config.keyword_set)
    columns, exact, main, k = _vote_topic(keyword_set, config.max_conversations_per_user, config.keywords_per_vote,
                                          config.category_vote_share)

    floors = vote_floors({"kind": "gaussian", "sigma": sigma, "std": sigma}, k, config.false_keywords_per_topic)
    sensitive = frozenset(keyword_set.sensitive_categories)

    def score_categories(exact_sums: np.ndarray, noisy: np.ndarray, sigma: float, tally: Tally) -> None:
        categories, truth = noisy[k:], exact_sums[k:] / exact_sums[k:].sum()
        values = list(zip(columns[k:], categories.tolist()))
        j = main - k
        row = vote_shares(values, [], columns[main].category, {"std": sigma})["category"]
        tally.add("released", "true largest", (row["share_low"], row["share_high"]), truth[j])
        tally.add("delta method", "true largest", delta_method(categories, sigma, j), truth[j])
        voted = voted_categories({c.category: v for c, v in values}, floors, sensitive)
        if voted:  # the category the votes name: the largest that cleared its floor (none: no category row)
            j = [c.category for c in columns[k:]].index(voted[0])
            row = vote_shares(values, [], voted[0], {"std": sigma})["category"]
            tally.add_extra(NAMED_CATEGORY, "released", (row["share_low"], row["share_high"]), truth[j])
            tally.add_extra(NAMED_CATEGORY, "delta method", delta_method(categories, sigma, j), truth[j])

    def score_keyword(exact_sums: np.ndarray, noisy: np.ndarray, sigma: float, tally: Tally) -> None:
        lead = int(np.argmax(exact_sums[:k]))
        values = list(zip(columns[:k], noisy[:k].tolist()))
        row = vote_shares(values, [columns[lead]], None, {"std": sigma})["keywords"][0]
        truth = exact_sums[lead] / exact_sums[:k].sum()
        tally.add("released", "lead keyword", (row["share_low"], row["share_high"]), truth)
        tally.add("delta method", "lead keyword", delta_method(noisy[:k], sigma, lead), truth)

    return [Release("category votes", columns, sigma, VOTE_STREAM, exact, score_categories, len(columns) - k,
                    (NAMED_CATEGORY,)),
            Release("keyword votes (all of K)", columns, sigma, VOTE_STREAM, exact, score_keyword, k)]


def releases(config: UraniaConfig) -> list[Release]:
    """Every share interval a run at `config` releases, each at its calibrated sigma."""
    stages = joint_calibration(config).stages
    found = []
    if "facet_topics" in stages:
        declared = selected_facets(config.facets, config.facet_set)
        sigma = stages["facet_topics"].noise_multiplier
        found += [facet_release_of(facet, index, sigma, config.max_conversations_per_user) for index, facet in declared]
    if "keyword_histograms" in stages:
        found += vote_releases(config, stages["keyword_histograms"].noise_multiplier)
    return found


def measure(release: Release, users: int, draws: int, seed: int, noise_seed: int | None) -> Tally:
    """`draws` fresh topics of `users` users, each released once."""
    rng = np.random.default_rng([seed, users, release.stream])
    tally = Tally()
    for draw in range(draws):
        exact = release.exact(rng, users)
        seed_of_draw = None if noise_seed is None else noise_seed * 10_000_000 + users * 100_000 + draw
        noisy = noisy_vote_sums(exact[None, :], release.sigma, seed_of_draw, release.stream)[0]
        release.score(exact, noisy, release.sigma, tally)
    return tally


def table(config: UraniaConfig, users: Sequence[int], draws: int, seed: int, noise_seed: int | None,
          only: str = "") -> Iterator[str]:
    """The table's lines, each row as soon as it is measured (of the releases whose name holds `only`)."""
    yield (f"epsilon {config.epsilon:g}, facets {config.facets or '(none)'}, {draws} draws a row "
           f"(a coverage is within +-{2 * math.sqrt(0.05 * 0.95 / draws):.3f} of its true value)")
    yield (f"{'release':<26} {'users':>5} {'sigma':>6} {'over':>5}  {'released: pooled':>16} {'worst':>6} "
           f"{'width':>6}  {'delta method: pooled':>20} {'worst':>6} {'width':>6}")
    for release in (r for r in releases(config) if only in r.name):
        for n in users:
            started = time.time()
            tally = measure(release, n, draws, seed, noise_seed)
            yield (f"{release.name:<26} {n:>5} {release.sigma:>6.2f} {release.over:>5}  "
                   f"{tally.pooled('released'):>16.3f} {tally.worst('released', draws // 2):>6.3f} "
                   f"{tally.median_width('released'):>6.2f}  {tally.pooled('delta method'):>20.3f} "
                   f"{tally.worst('delta method', draws // 2):>6.3f} {tally.median_width('delta method'):>6.2f}"
                   f"   ({time.time() - started:.0f} s)")
            for label in release.labelled:
                (covered, scored), (old, _) = tally.extra(label, "released"), tally.extra(label, "delta method")
                yield f"{'':<26}   {label}: released {covered:.3f}, delta method {old:.3f} ({scored} shown)"


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    add_config_flags(parser, facets=JOB_DEFAULT, epsilon=JOB_DEFAULT)
    parser.add_argument("--users", type=int, nargs="+", default=[10, 20, 50, 100], help="topic sizes, in users")
    parser.add_argument("--draws", type=int, default=2000, help="simulated topics (each released once) per row")
    parser.add_argument("--seed", type=int, default=0, help="the simulated topics' seed")
    parser.add_argument("--only", default="", help="measure only the releases whose name holds this ('facet', 'category')")
    parser.add_argument("--noise_seed", default="0",
                        help="the seeded noise's seed; 'none' draws PyDP's secure noise, as production does")
    args = parser.parse_args(argv)
    noise_seed = None if args.noise_seed.lower() == "none" else int(args.noise_seed)
    for line in table(config_from(args), args.users, args.draws, args.seed, noise_seed, args.only):
        print(line, flush=True)


if __name__ == "__main__":
    main()
