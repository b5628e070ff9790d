"""A user-level DP histogram over a declared fixed public partition, without Beam.

A declaration (`FixedPartition`) says everything about such a release but the data: its stage (its
share of the run's epsilon), its columns (public, fixed before any data), what its mechanism is and
its seeded test noise's stream. The rule mapping a conversation to one column is the caller's (a
public rule, one conversation at a time). Each conversation votes its contribution weight w = 1/n_u
for its one column (a user's weights sum to at most 1), so a user's vote vector over the columns has
L2 norm <= L1 norm <= 1, and one Gaussian sum of L2 sensitivity 1 releases all columns: the keyword
votes' mechanism (dp_ops.keyword_votes.weighted_vote_spend), which transforms.keyword_histograms.
DPKeywordVotes draws. Over "clusters" (the released topics, say) the same holds: a conversation is in
one cluster, so the user's vector over every (cluster, column) still has L2 norm <= 1.

`histogram_rows` turns a release into the rows a report shows: each column's noisy size with its 95%
interval from the noise drawn, and its share of the whole with a 95% interval for the share that holds
at any size, the total's noise included (`share_interval`, Fieller's method; post-processing). The
themes (dp_ops/theme_histogram.py) and the facets (dp_ops/facets.py) are such releases.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Mapping, Sequence

from core.spend import MechanismSpend
from dp_ops.joint_calibration import StageRequest
from dp_ops.keyword_votes import VOTE_L2_SENSITIVITY, weighted_vote_spend

# Two-sided 95% interval of a Gaussian.
Z_95 = 1.959963984540054


@dataclasses.dataclass(frozen=True)
class FixedPartition:
    """One fixed public partition's release: `stage` (its calibration's name), `columns` (in order),
    `mechanism` and `per` (how the report names it and its unit), `noise_stream` (the seeded test
    noise's stream, dp_ops.gaussian_noise: distinct for every release of a run)."""

    stage: str
    columns: tuple[str, ...]
    mechanism: str
    per: str
    noise_stream: int

    def __post_init__(self):
        if not self.columns or len(set(self.columns)) != len(self.columns):
            raise ValueError(f"{self.stage}: a partition needs distinct columns, got {self.columns}")

    def spend(self, noise_multiplier: float, delta: float) -> MechanismSpend:
        """One Gaussian sum of L2 sensitivity 1 with sigma = multiplier x 1 (the module docstring)."""
        return weighted_vote_spend(self.stage, self.mechanism, self.per, noise_multiplier, delta)


def fixed_partition_request(stage: str, weight: float, releases: int = 1) -> StageRequest:
    """The calibration request of `releases` such histograms in one stage: Gaussian sums of L2
    sensitivity 1 each, drawn by dp_ops.gaussian_noise from the stage's noise multiplier."""
    return StageRequest(stage, "gaussian", VOTE_L2_SENSITIVITY, weight, releases=releases,
                        drawn_by_pipeline_dp=False)


def histogram_rows(noisy: Mapping[str, float], sigma: float, key: str = "answer") -> list[dict]:
    """Each column's noisy size (users) with its 95% interval from the noise drawn, and its share of
    all columns: max(0, size) / total, total the sum of the noisy sizes (unclamped, so unbiased; the
    clamped ones would add ~0.4 sigma per empty column), with its 95% interval (`share_interval`).
    `size` is the noisy value as released, below 0 where the noise took it there (pages and tables clamp
    it when they show it: publishing.report.shown_count). Post-processing only."""
    total = sum(noisy.values())
    k = len(noisy)
    margin = Z_95 * sigma
    rows = []
    for column, value in noisy.items():
        share = min(1.0, max(0.0, value) / total) if total > 0 else 0.0
        share_low, share_high = share_interval(value, total, k, sigma, share)
        rows.append({key: column, "size": round(value, 2), "low": round(max(0.0, value - margin), 2),
                     "high": round(value + margin, 2), "share": round(share, 6),
                     "share_low": math.floor(share_low * 1e6) / 1e6, "share_high": math.ceil(share_high * 1e6) / 1e6})
    return rows


def share_interval(part: float, total: float, columns: int, sigma: float, share: float) -> tuple[float, float]:
    """A 95% confidence interval for a column's true share p = t / T (t its exact sum, T the exact sum
    of all `columns` columns, itself among them) from its noisy sum `part` and the noisy `total`, each
    column carrying independent N(0, sigma^2) noise (Fieller's method). Whatever the truth,
    part - p total = e - p sum(e) exactly, a Gaussian of variance sigma^2 (1 - 2p + columns p^2), so the
    p in [0, 1] with (part - p total)^2 <= 1.96^2 sigma^2 (1 - 2p + columns p^2) hold the true share
    95% of the time, at any topic size: the noise of the denominator counts as much as the numerator's.
    The delta method this replaced (share +- 1.96 sd, linearised at the noisy share) held a 20-user
    topic's English share 81% of the time, its leading category's 84% and its lead keyword's 74%, where
    the total's noise is as large as the total (eval/utility/share_coverage.py, docs/report.md).
    Returned: the hull of those p, widened to hold `share` (the point shown); where no p in [0, 1]
    passes (a draw the interval misses anyway), `share` alone; [0, 1] where the total is within the
    noise of 0 (nothing is known). sigma = 0: the exact share."""
    z2 = (Z_95 * sigma) ** 2
    # (part - p total)^2 - z2 (1 - 2p + columns p^2) = a p^2 - 2 b p + c <= 0.
    a, b, c = total * total - z2 * columns, part * total - z2, part * part - z2
    inside = [p for p in (0.0, 1.0) if (a * p - 2 * b) * p + c <= 0] + [p for p in _roots(a, b, c) if 0 <= p <= 1]
    if not inside:
        return share, share
    return min(min(inside), share), max(max(inside), share)


def _roots(a: float, b: float, c: float) -> list[float]:
    """The real roots of a p^2 - 2 b p + c, computed stably (q = b + sign(b) sqrt(b^2 - a c))."""
    discriminant = b * b - a * c
    if discriminant < 0:
        return []
    q = b + math.copysign(math.sqrt(discriminant), b)
    return [r for r in ((q / a) if a else None, (c / q) if q else None) if r is not None]


def columns_of(release: Mapping[tuple[int, str], float], cluster: int, columns: Sequence[str]) -> dict[str, float]:
    """One cluster's noisy sums from a (cluster, column) release, in the partition's order."""
    return {column: release[(cluster, column)] for column in columns}
