"""Empirical privacy auditing, after Google's DP stochastic tester and dp-auditing (Jagielski, Ullman
and Oprea 2020; Nasr et al. 2021): a lower bound on a mechanism's epsilon from its outputs.

Run the mechanism many times on two neighbouring inputs D0 and D1 and reduce each output to a score
(larger: more like D1). For any event E, (epsilon, delta)-DP implies P1(E) <= e^epsilon P0(E) + delta
and P0(E') <= e^epsilon P1(E') + delta, so with E = {score > t} (and E' its complement)

    epsilon >= log((P1(E) - delta) / P0(E)),    epsilon >= log((P0(E') - delta) / P1(E')).

The probabilities are replaced by one-sided Clopper-Pearson bounds (P1 from below, P0 from above), so
the bound holds with probability >= 1 - 2 alpha. The threshold and direction are chosen on a first
half of each sample and the bound is computed on the second half only, so choosing them does not
bias it. A correct mechanism never gives a bound above its accounted epsilon (but for that 2 alpha);
the bound is weaker than the truth, since a finite sample cannot see rare events.
"""

from __future__ import annotations

import math

import numpy as np
from scipy import stats


def clopper_pearson(successes: int, trials: int, alpha: float) -> tuple[float, float]:
    """One-sided (lower, upper) bounds on a binomial probability, each holding with probability 1 - alpha."""
    lower = 0.0 if successes == 0 else float(stats.beta.ppf(alpha, successes, trials - successes + 1))
    upper = 1.0 if successes == trials else float(stats.beta.ppf(1 - alpha, successes + 1, trials - successes))
    return lower, upper


def _bound(hits_in: int, trials_in: int, hits_out: int, trials_out: int, delta: float, alpha: float) -> float:
    """log((P_in(E) lower - delta) / P_out(E) upper), or -inf when the numerator is not positive."""
    lower, _ = clopper_pearson(hits_in, trials_in, alpha)
    _, upper = clopper_pearson(hits_out, trials_out, alpha)
    return math.log((lower - delta) / upper) if lower > delta else -math.inf


def _event_bounds(scores0: np.ndarray, scores1: np.ndarray, threshold: float, delta: float, alpha: float):
    above0, above1 = int(np.sum(scores0 > threshold)), int(np.sum(scores1 > threshold))
    n0, n1 = len(scores0), len(scores1)
    return {"above": _bound(above1, n1, above0, n0, delta, alpha),
            "below": _bound(n0 - above0, n0, n1 - above1, n1, delta, alpha)}


def epsilon_lower_bound(scores0, scores1, delta: float, alpha: float = 1e-3, candidates: int = 200) -> float:
    """A lower bound, holding with probability >= 1 - 2 alpha, on the epsilon at `delta` of the mechanism
    whose outputs on D0 and D1 scored `scores0` and `scores1` (see the module docstring)."""
    scores0, scores1 = np.asarray(scores0, dtype=float), np.asarray(scores1, dtype=float)
    pilot0, fresh0 = scores0[: len(scores0) // 2], scores0[len(scores0) // 2:]
    pilot1, fresh1 = scores1[: len(scores1) // 2], scores1[len(scores1) // 2:]
    thresholds = np.unique(np.quantile(np.concatenate([pilot0, pilot1]), np.linspace(0.001, 0.999, candidates)))
    best = (-math.inf, thresholds[0], "above")
    for threshold in thresholds:
        for direction, bound in _event_bounds(pilot0, pilot1, threshold, delta, alpha).items():
            if bound > best[0]:
                best = (bound, threshold, direction)
    _, threshold, direction = best
    return _event_bounds(fresh0, fresh1, threshold, delta, alpha)[direction]
