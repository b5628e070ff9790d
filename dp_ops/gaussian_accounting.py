"""Calibrating and accounting repeated Gaussian releases with dp-accounting (PLD)."""

from __future__ import annotations

from collections.abc import Sequence

import dp_accounting

from dp_ops.dp_events import PLDAccountant, composed_epsilon


def composed_gaussian_event(noise_multiplier: float, releases: int) -> dp_accounting.DpEvent:
    return dp_accounting.SelfComposedDpEvent(dp_accounting.GaussianDpEvent(noise_multiplier), releases)


def epsilon_of_gaussian_releases(noise_multiplier: float, releases: int, delta: float,
                                 alongside: Sequence[dp_accounting.DpEvent] = ()) -> float:
    """Epsilon at `delta` of `releases` Gaussian releases, each with sigma = multiplier * L2 sensitivity,
    composed with the `alongside` events (other mechanisms run on the same users)."""
    return composed_epsilon([composed_gaussian_event(noise_multiplier, releases), *alongside], delta)


def calibrate_gaussian_noise_multiplier(epsilon: float, delta: float, releases: int,
                                        alongside: Sequence[dp_accounting.DpEvent] = ()) -> float:
    """Smallest noise multiplier whose `releases`-fold composition, with the `alongside` events, is
    (epsilon, delta)-DP (PLD): the Gaussian gets what the other mechanisms leave of the budget.

    The bracketing search returns a value within a tolerance of the optimum; it is then nudged up
    until the accountant confirms the target, so the result never overspends.
    """
    if epsilon <= 0 or not 0 < delta < 1 or releases < 1:
        raise ValueError(f"need epsilon > 0, 0 < delta < 1, releases >= 1; got {epsilon}, {delta}, {releases}")
    multiplier = dp_accounting.calibrate_dp_mechanism(
        PLDAccountant,
        lambda z: dp_accounting.ComposedDpEvent([composed_gaussian_event(z, releases), *alongside]),
        target_epsilon=epsilon,
        target_delta=delta,
        bracket_interval=dp_accounting.LowerEndpointAndGuess(0.2, 1.0),
        tol=1e-4,
    )
    while epsilon_of_gaussian_releases(multiplier, releases, delta, alongside) > epsilon:
        multiplier *= 1.001
    return multiplier
