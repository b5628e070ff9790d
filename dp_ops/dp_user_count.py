"""A DP count of the users in a run, for choosing the clustering dimension (dp_kmeans.auto_dimension).

After contribution bounding every user's conversations carry weights that sum to exactly 1
(dp_ops.contribution_bounding), so the sum of all weights is the number of users, and adding or
removing a user changes it by exactly 1: L1 = L2 sensitivity 1. One Gaussian release of that sum,
with its noise calibrated jointly with the other stages (dp_ops.joint_calibration, stage
`user_count`), is registered in the run's budget like any DP stage; everything chosen from it is
post-processing. It is not published in the report's topics: only the dimension chosen from it is.
"""

from __future__ import annotations

import dataclasses

import dp_accounting
import numpy as np

from core.dp_stages import USER_COUNT
from core.spend import MechanismSpend
from dp_ops.dp_events import event_to_json
from dp_ops.gaussian_accounting import epsilon_of_gaussian_releases
from dp_ops.gaussian_noise import add_gaussian_noise

# A user adds exactly 1 to the sum of weights (their weights sum to 1).
USER_COUNT_SENSITIVITY = 1.0
# The test-noise stream of this release (add_gaussian_noise's `release`): no k-means release uses it.
_NOISE_STREAM = 0xC0C0


@dataclasses.dataclass(frozen=True)
class UserCountNoise:
    noise_multiplier: float
    delta: float

    @property
    def sigma(self) -> float:
        return self.noise_multiplier * USER_COUNT_SENSITIVITY

    def event(self) -> dp_accounting.DpEvent:
        return dp_accounting.GaussianDpEvent(self.noise_multiplier)

    def spend(self) -> MechanismSpend:
        return MechanismSpend(
            stage=USER_COUNT,
            mechanism="Gaussian release of the sum of the users' contribution weights (= the number of users), "
                      "used only to choose the DP k-means dimension",
            epsilon=epsilon_of_gaussian_releases(self.noise_multiplier, 1, self.delta),
            delta=self.delta,
            sensitivity=USER_COUNT_SENSITIVITY,
            noise={"kind": "gaussian", "sigma": self.sigma, "per": "the one count", "releases": 1},
            event=event_to_json(self.event()),
        )


def noisy_user_count(total_weight: float, sigma: float, noise_seed: int | None) -> float:
    """The sum of the contribution weights plus N(0, sigma^2): PyDP's secure sampler in production,
    numpy when `noise_seed` is set (tests and evaluations only; see dp_kmeans.add_gaussian_noise)."""
    if not sigma > 0:
        raise ValueError(f"sigma must be > 0, got {sigma}")
    return float(add_gaussian_noise(np.array([[float(total_weight)]]), sigma, noise_seed, _NOISE_STREAM)[0, 0])
