"""Weighted keyword and category votes: a user-level Gaussian sum per (cluster, keyword) and per
(cluster, category), without Beam.

Every kept conversation carries its contribution weight w = 1/n_u (n_u <= C conversations its user
kept; dp_ops.contribution_bounding), the same weight DP k-means gives it, so a user's weights sum to
at most 1. A conversation votes for its `j` best keywords of K (the selector's order), w / sqrt(j')
to each of the j' <= j it has: its vote vector over all (cluster, keyword) partitions has L2 norm
<= w, and one user's votes, summed, have L2 norm <= sum of w <= 1 (triangle inequality). Adding or
removing a user therefore moves the vector of all sums by at most 1 in L2: one Gaussian release of
L2 sensitivity 1 over the public partitions (kept clusters x K), whatever the number of partitions
a user touches. A PipelineDP COUNT with L0 = 10 pairs and Linf = 1 pays sqrt(10) for the same
partitions, and PipelineDP has no weighted count (its VECTOR_SUM crashes with public partitions),
so the sums are taken here and noised with dp_ops.gaussian_noise, as DP k-means' are.

Category votes share the same vector: with a category share s > 0 (--category_vote_share) and a
keyword set that has categories, a conversation gives norm w * sqrt(1 - s) to its keywords and
w * sqrt(s) to their categories (in proportion to how many of its keywords each holds), so the whole
vector still has L2 norm <= w and the release keeps sensitivity 1: (cluster, category) partitions
(kept clusters x the set's categories, `CategoryVote` columns) are noised in the same release at no
further spend. A category gathers every vote of its ~40 keywords, so a topic's category clears its
floor with far fewer users than any one keyword does (transforms/voted_labels.py).

A partition's noisy sum is in users: a topic whose every user votes keyword x with all their
weight has sum ~ its user count at x. The spend is one GaussianDpEvent of the calibrated noise
multiplier (sigma / 1), composed by PLD with the run's other stages (dp_ops.joint_calibration).
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from typing import NamedTuple

import dp_accounting
import numpy as np

from core.dp_stages import KEYWORD_HISTOGRAMS
from core.spend import MechanismSpend
from dp_ops.dp_events import event_to_json
from dp_ops.gaussian_accounting import epsilon_of_gaussian_releases
from dp_ops.gaussian_noise import add_gaussian_noise

STAGE = KEYWORD_HISTOGRAMS
# One user's vote vector over every (cluster, keyword) partition has L2 norm <= 1 (module docstring).
VOTE_L2_SENSITIVITY = 1.0
# The numpy test noise's stream (dp_ops.gaussian_noise): distinct from DP k-means' releases.
NOISE_STREAM = 0x4B57


class CategoryVote(NamedTuple):
    """The column of a (cluster, category) partition: never equal to a keyword (a str)."""

    category: str


def vote_columns(keywords: Sequence[str], categories: Sequence[str] = ()) -> tuple:
    """The release's columns, in order: every keyword of K, then a CategoryVote per category."""
    return tuple(keywords) + tuple(CategoryVote(category) for category in categories)


def conversation_votes(keywords: Sequence[str], weight: float, keywords_per_vote: int,
                       category_of: Mapping[str, str | None] | None = None,
                       category_share: float = 0.0) -> list[tuple[str | CategoryVote, float]]:
    """A conversation's votes: its first `keywords_per_vote` distinct keywords, weight / sqrt(j') each
    (j' of them), so the vote vector's L2 norm is `weight` (0 with no keyword). With `category_of` and
    a `category_share` s > 0, the keywords get norm weight * sqrt(1 - s) and the categories of those
    that have one get norm weight * sqrt(s), each in proportion to how many of the keywords it holds;
    a conversation none of whose keywords has a category gives its keywords the whole norm."""
    if keywords_per_vote < 1:
        raise ValueError(f"keywords_per_vote must be >= 1, got {keywords_per_vote}")
    if not 0 <= weight <= 1:
        raise ValueError(f"a conversation's weight must be in [0, 1], got {weight}")
    if not 0 <= category_share < 1:
        raise ValueError(f"category_share must be in [0, 1), got {category_share}")
    chosen = list(dict.fromkeys(keywords))[:keywords_per_vote]
    in_category = Counter(category_of[k] for k in chosen if category_of.get(k) is not None) if (
        category_of and category_share > 0) else Counter()
    keyword_norm = weight * math.sqrt(1 - category_share) if in_category else weight
    votes: list[tuple[str | CategoryVote, float]] = [(k, keyword_norm / math.sqrt(len(chosen))) for k in chosen]
    if in_category:
        per_keyword = weight * math.sqrt(category_share) / math.sqrt(sum(n * n for n in in_category.values()))
        votes += [(CategoryVote(category), n * per_keyword) for category, n in in_category.items()]
    return votes


def exact_vote_sums(votes: Iterable[tuple[int, str | CategoryVote, float]], num_clusters: int,
                    columns: Sequence[str | CategoryVote]) -> np.ndarray:
    """(num_clusters, |columns|) sums of (cluster, column, value) votes; votes outside the columns
    (vote_columns: K, then the categories) are refused."""
    index = {column: j for j, column in enumerate(columns)}
    sums = np.zeros((num_clusters, len(columns)), dtype=np.float64)
    for cluster, column, value in votes:
        sums[cluster, index[column]] += value
    return sums


def noisy_vote_sums(exact_sums: np.ndarray, sigma: float, noise_seed: int | None = None,
                    noise_stream: int = NOISE_STREAM) -> np.ndarray:
    """The release: every coordinate plus N(0, sigma^2). sigma = 0 only for the evaluations'
    non-private baseline. `noise_stream`: the seeded test noise's stream of the release (another
    histogram of weighted votes, dp_ops/theme_histogram.py, draws its own)."""
    if sigma < 0:
        raise ValueError(f"sigma must be >= 0, got {sigma}")
    return exact_sums.copy() if sigma == 0 else add_gaussian_noise(exact_sums, sigma, noise_seed, 0, noise_stream)


def released_histogram(noisy_sums: np.ndarray, kept_cluster_ids: Iterable[int],
                       columns: Sequence[str | CategoryVote]) -> dict[tuple[int, str | CategoryVote], float]:
    """(cluster, column) -> noisy sum for every kept cluster x column: the public partitions."""
    return {(int(c), column): float(noisy_sums[c, j]) for c in sorted(kept_cluster_ids)
            for j, column in enumerate(columns)}


def vote_spend(noise_multiplier: float, delta: float) -> MechanismSpend:
    """The stage's spend: one Gaussian release of L2 sensitivity 1 with sigma = multiplier x 1; its
    own epsilon is the PLD epsilon of that event at `delta`."""
    return weighted_vote_spend(
        STAGE, "weighted keyword votes: Gaussian sum per (cluster, keyword) and (cluster, category) over "
               "public partitions (each conversation weighs 1/n_u; user L2 <= 1)",
        "(cluster, keyword or category) sum, in users", noise_multiplier, delta)


def weighted_vote_spend(stage: str, mechanism: str, per: str, noise_multiplier: float, delta: float) -> MechanismSpend:
    """The spend of one Gaussian sum of weighted votes (each user's vote vector of L2 norm <= 1) over
    public partitions, with sigma = multiplier x 1: the keyword votes' (`vote_spend`) and any other
    histogram of such votes over a fixed public partition (dp_ops/theme_histogram.py)."""
    event = dp_accounting.GaussianDpEvent(noise_multiplier)
    sigma = noise_multiplier * VOTE_L2_SENSITIVITY
    return MechanismSpend(
        stage=stage,
        mechanism=mechanism,
        epsilon=epsilon_of_gaussian_releases(noise_multiplier, 1, delta),
        delta=delta,
        sensitivity=VOTE_L2_SENSITIVITY,
        noise={"kind": "gaussian", "sigma": sigma, "std": sigma, "per": per},
        event=event_to_json(event),
    )
