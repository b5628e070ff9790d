"""The discrete Laplace sampler draws from the exact pmf P(Z = z) = (1 - a) / (1 + a) * a^|z|, a = exp(-1/scale).

Each check is a fixed-size test: a chi-square goodness of fit against the pmf at p < 1e-6, and the
mean and the variance within 5 standard errors (two-sided normal tail 5.7e-7 each). With two scales
the suite fails by chance with probability about 2 * (1e-6 + 2 * 5.7e-7) = 4.3e-6 per run. The same
checks reject the sampler at a 5% wrong scale (chi-square non-centrality ~240 with 100,000 draws:
missed with probability ~2e-18) and rounded Gaussian noise of the right variance.
"""

import math

import numpy as np
import pytest
from scipy import stats

from dp_ops import discrete_laplace

DRAWS = 100_000  # ~9 us a draw: under a second per scale
P_VALUE = 1e-6
STANDARD_ERRORS = 5.0


def _pmf_bins(scale: float, bins: int = 50) -> tuple[np.ndarray, np.ndarray]:
    """(upper edge of each bin, exact pmf mass of each bin): consecutive integers grouped into about
    `bins` bins of equal mass (an integer heavier than 1/bins is a bin of its own), the tails
    beyond +-K, which hold < 1e-12, merged into the end bins."""
    a = math.exp(-1.0 / scale)
    k = math.ceil(28 * scale)  # a^K = exp(-28) < 1e-12
    z = np.arange(-k, k + 1)
    mass = (1 - a) / (1 + a) * a ** np.abs(z)
    tail = a ** (k + 1) / (1 + a)  # P(Z > K) = sum over z > K of the pmf
    mass[0] += tail
    mass[-1] += tail
    ends = np.unique(np.append(np.searchsorted(np.cumsum(mass), np.arange(1, bins) / bins), len(z) - 1))
    starts = np.insert(ends[:-1] + 1, 0, 0)
    return z[ends], np.add.reduceat(mass, starts)


def _moments(scale: float) -> tuple[float, float]:
    """(E[Z^2], E[Z^4]) summed from the pmf."""
    a = math.exp(-1.0 / scale)
    z = np.arange(-math.ceil(60 * scale), math.ceil(60 * scale) + 1).astype(np.float64)
    pmf = (1 - a) / (1 + a) * a ** np.abs(z)
    return float(np.sum(z ** 2 * pmf)), float(np.sum(z ** 4 * pmf))


def _chi_square_p_value(draws: np.ndarray, scale: float) -> float:
    upper, mass = _pmf_bins(scale)
    assert mass.sum() == pytest.approx(1.0, abs=1e-9) and len(mass) >= 10
    observed = np.bincount(np.searchsorted(upper, np.clip(draws, upper[0], upper[-1])), minlength=len(mass))
    return stats.chisquare(observed, len(draws) * mass / mass.sum()).pvalue


@pytest.mark.parametrize("scale", [2.5, 1000 / 3])  # non-integer; large and not a binary fraction
def test_draws_follow_the_exact_pmf_with_mean_zero_and_the_variance_formula(scale):
    draws = discrete_laplace.sample(DRAWS, scale)
    assert draws.dtype == np.int64 and draws.shape == (DRAWS,)
    assert _chi_square_p_value(draws, scale) > P_VALUE
    second, fourth = _moments(scale)
    assert discrete_laplace.variance(scale) == pytest.approx(second, rel=1e-9)  # the formula is the pmf's
    variance = discrete_laplace.variance(scale)
    assert abs(draws.mean()) < STANDARD_ERRORS * math.sqrt(variance / DRAWS)
    # The mean is known to be 0, so mean(Z^2) estimates the variance with variance (E[Z^4] - var^2) / n.
    assert abs(np.mean(draws.astype(np.float64) ** 2) - variance) < STANDARD_ERRORS * math.sqrt(
        (fourth - variance ** 2) / DRAWS)


def test_the_pmf_check_rejects_a_wrong_scale_and_a_wrong_shape():
    assert _chi_square_p_value(discrete_laplace.sample(DRAWS, 2.5 * 1.05), 2.5) < P_VALUE
    std = math.sqrt(discrete_laplace.variance(2.5))
    gaussian = np.rint(np.random.default_rng(0).normal(0, std, DRAWS)).astype(np.int64)
    assert _chi_square_p_value(gaussian, 2.5) < P_VALUE


def test_shape_and_the_privacy_map_agree_with_the_recorded_spend():
    assert discrete_laplace.sample((3, 4), 2.0).shape == (3, 4)
    assert discrete_laplace.sample(0, 2.0).shape == (0,)
    scale = discrete_laplace.scale_for(epsilon=0.5, sensitivity=3)
    # OpenDP's own privacy map of the measurement that draws the noise gives the epsilon we record.
    assert discrete_laplace.measurement(scale).map(3) == pytest.approx(discrete_laplace.epsilon_of(scale, 3))
    assert discrete_laplace.spend("s", "m", scale, 3).epsilon == pytest.approx(0.5)
