"""Adding Gaussian noise to arrays of sums: the one sampler of the stages that draw their own noise
(DP k-means' per-cluster sums, the weighted keyword votes), not through a PipelineDP aggregation."""

from __future__ import annotations

import numpy as np
import pipeline_dp.dp_computations


def add_gaussian_noise(sums: np.ndarray, sigma: float, noise_seed: int | None, release: int,
                       stream: int = 0xD9) -> np.ndarray:
    """Adds N(0, sigma^2) to every coordinate.

    Production (noise_seed=None) draws from PyDP's secure Gaussian sampler through PipelineDP, the
    same noise source as the PipelineDP stages. A fixed noise_seed switches to numpy so tests are
    reproducible; anyone who knows that seed can subtract the noise, so never set it in production.
    `stream` and `release` keep the test noise of different releases (and stages) independent.
    """
    if noise_seed is None:
        mechanism = pipeline_dp.dp_computations.GaussianMechanism.create_from_std_deviation(sigma, 1.0)
        return np.asarray(mechanism.add_noise(np.asarray(sums, dtype=np.float64)), dtype=np.float64)
    rng = np.random.default_rng([noise_seed, stream, release])
    return sums + rng.normal(0.0, sigma, size=np.shape(sums))
