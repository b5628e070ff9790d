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
interval from the noise drawn, and its share of the whole with an interval for the share
(post-processing). The themes (dp_ops/theme_histogram.py) and the facets (dp_ops/facets.py) are
such releases.
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
    clamped ones would add ~0.4 sigma per empty column). The share's interval is 1.96 times its
    delta-method standard deviation: share p = s_a / S moves by (e_a - p sum(e)) / S for noise e, of
    variance sigma^2 ((1 - p)^2 + (k - 1) p^2) / S^2 over k columns. Post-processing only."""
    total = sum(noisy.values())
    k = len(noisy)
    margin = Z_95 * sigma
    rows = []
    for column, value in noisy.items():
        share = min(1.0, max(0.0, value) / total) if total > 0 else 0.0
        spread = (Z_95 * sigma * math.sqrt((1 - share) ** 2 + (k - 1) * share ** 2) / total
                  if total > 0 else 1.0)
        rows.append({key: column, "size": round(value, 2), "low": round(max(0.0, value - margin), 2),
                     "high": round(value + margin, 2), "share": round(share, 6),
                     "share_low": round(max(0.0, share - spread), 6),
                     "share_high": round(min(1.0, share + spread), 6)})
    return rows


def columns_of(release: Mapping[tuple[int, str], float], cluster: int, columns: Sequence[str]) -> dict[str, float]:
    """One cluster's noisy sums from a (cluster, column) release, in the partition's order."""
    return {column: release[(cluster, column)] for column in columns}
