"""Weighted keyword votes: a user-level Gaussian sum per (cluster, keyword), without Beam.

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

A partition's noisy sum is in users: a topic whose every user votes keyword x with all their
weight has sum ~ its user count at x. The spend is one GaussianDpEvent of the calibrated noise
multiplier (sigma / 1), composed by PLD with the run's other stages (dp_ops.joint_calibration).
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence

import dp_accounting
import numpy as np

from core.spend import MechanismSpend
from dp_ops.dp_events import event_to_json
from dp_ops.gaussian_accounting import epsilon_of_gaussian_releases
from dp_ops.gaussian_noise import add_gaussian_noise

STAGE = "keyword_histograms"
# One user's vote vector over every (cluster, keyword) partition has L2 norm <= 1 (module docstring).
VOTE_L2_SENSITIVITY = 1.0
# The numpy test noise's stream (dp_ops.gaussian_noise): distinct from DP k-means' releases.
_NOISE_STREAM = 0x4B57


def conversation_votes(keywords: Sequence[str], weight: float, keywords_per_vote: int) -> list[tuple[str, float]]:
    """A conversation's votes: its first `keywords_per_vote` distinct keywords, weight / sqrt(j') each
    (j' of them), so the vote vector's L2 norm is `weight` (0 with no keyword)."""
    if keywords_per_vote < 1:
        raise ValueError(f"keywords_per_vote must be >= 1, got {keywords_per_vote}")
    if not 0 <= weight <= 1:
        raise ValueError(f"a conversation's weight must be in [0, 1], got {weight}")
    chosen = list(dict.fromkeys(keywords))[:keywords_per_vote]
    return [(keyword, weight / math.sqrt(len(chosen))) for keyword in chosen]


def exact_vote_sums(votes: Iterable[tuple[int, str, float]], num_clusters: int,
                    keywords: Sequence[str]) -> np.ndarray:
    """(num_clusters, |K|) sums of (cluster, keyword, value) votes; votes outside K are refused."""
    index = {keyword: j for j, keyword in enumerate(keywords)}
    sums = np.zeros((num_clusters, len(keywords)), dtype=np.float64)
    for cluster, keyword, value in votes:
        sums[cluster, index[keyword]] += value
    return sums


def noisy_vote_sums(exact_sums: np.ndarray, sigma: float, noise_seed: int | None = None) -> np.ndarray:
    """The release: every coordinate plus N(0, sigma^2). sigma = 0 only for the evaluations'
    non-private baseline."""
    if sigma < 0:
        raise ValueError(f"sigma must be >= 0, got {sigma}")
    return exact_sums.copy() if sigma == 0 else add_gaussian_noise(exact_sums, sigma, noise_seed, 0, _NOISE_STREAM)


def released_histogram(noisy_sums: np.ndarray, kept_cluster_ids: Iterable[int],
                       keywords: Sequence[str]) -> dict[tuple[int, str], float]:
    """(cluster, keyword) -> noisy sum for every kept cluster x K: the public partitions."""
    return {(int(c), keyword): float(noisy_sums[c, j]) for c in sorted(kept_cluster_ids)
            for j, keyword in enumerate(keywords)}


def vote_spend(noise_multiplier: float, delta: float) -> MechanismSpend:
    """The stage's spend: one Gaussian release of L2 sensitivity 1 with sigma = multiplier x 1; its
    own epsilon is the PLD epsilon of that event at `delta`."""
    event = dp_accounting.GaussianDpEvent(noise_multiplier)
    sigma = noise_multiplier * VOTE_L2_SENSITIVITY
    return MechanismSpend(
        stage=STAGE,
        mechanism="weighted keyword votes: Gaussian sum per (cluster, keyword) over public partitions "
                  "(each conversation weighs 1/n_u; user L2 <= 1)",
        epsilon=epsilon_of_gaussian_releases(noise_multiplier, 1, delta),
        delta=delta,
        sensitivity=VOTE_L2_SENSITIVITY,
        noise={"kind": "gaussian", "sigma": sigma, "std": sigma, "per": "(cluster, keyword) sum, in users"},
        event=event_to_json(event),
    )
