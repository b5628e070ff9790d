"""The discrete Laplace (two-sided geometric) mechanism for integer counts, and its spend.

Adding Z with P(Z = z) proportional to exp(-|z| / scale) to an integer vector whose L1 sensitivity
is `sensitivity` is (sensitivity / scale, 0)-DP (Ghosh et al.; Canonne et al. 2020). Integer noise
on integer counts has none of the floating-point attacks on continuous Laplace.
"""

from __future__ import annotations

import math
import secrets

import numpy as np

from dp_ops.spend import MechanismSpend


def scale_for(epsilon: float, sensitivity: float) -> float:
    if not (epsilon > 0 and math.isfinite(epsilon)):
        raise ValueError(f"epsilon must be > 0 and finite, got {epsilon}")
    if sensitivity <= 0:
        raise ValueError(f"sensitivity must be > 0, got {sensitivity}")
    return sensitivity / epsilon


def sample(shape, scale: float, noise_seed: int | None = None) -> np.ndarray:
    """Discrete Laplace noise: the difference of two i.i.d. geometric variables with
    p = 1 - exp(-1/scale). Seeded from the OS unless a (testing-only) noise_seed is given."""
    rng = np.random.default_rng(secrets.randbits(128) if noise_seed is None else [noise_seed, 0xD15C])
    p = -math.expm1(-1.0 / scale)
    return (rng.geometric(p, size=shape) - rng.geometric(p, size=shape)).astype(np.int64)


def epsilon_of(scale: float, sensitivity: float) -> float:
    return sensitivity / scale


def variance(scale: float) -> float:
    a = math.exp(-1.0 / scale)
    return 2 * a / (1 - a) ** 2


def spend(stage: str, mechanism: str, scale: float, sensitivity: float) -> MechanismSpend:
    return MechanismSpend(stage=stage, mechanism=mechanism, epsilon=epsilon_of(scale, sensitivity), delta=0.0,
                          sensitivity=sensitivity,
                          noise={"kind": "discrete_laplace", "scale": scale, "std": math.sqrt(variance(scale))})
