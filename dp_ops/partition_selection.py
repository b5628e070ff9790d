"""User-level DP partition selection of free-form terms with PipelineDP: parameters, spend, and
which terms a user nominates.

A term is released only if PipelineDP's partition selection keeps it; each user counts once per
term (Linf = 1) and for at most L0 = `max_partitions_per_user` terms, so a term used by one user is
kept with probability at most ~delta however often that user repeats it. The threshold a term's
user count must clear grows with L0 (Gaussian thresholding: with sqrt(L0); Laplace thresholding and
truncated geometric: linearly, see `STRATEGIES`), so each user nominates only their L0 best terms
(`top_terms_per_user`: the largest total weight over their conversations, e.g. the number of their
conversations a term is proposed for). Which terms a user nominates depends on that user's data (and
on earlier DP releases) only, which is all partition selection's guarantee asks; PipelineDP's own
L0 sampling then has nothing left to drop. With `with_counts`, the kept terms also get a noisy user
count (Laplace), which the budget accountant pays for out of the same epsilon.

Accounting: dp-accounting has no privacy loss distribution for thresholding, so the selection is
accounted as the (epsilon, delta) PipelineDP calibrated it to (dp_ops.dp_events.EpsilonDeltaDpEvent:
sound for any mechanism with that guarantee), and the optional counts as the Laplace noise they draw.
"""

from __future__ import annotations

import collections
import dataclasses
import math
from collections.abc import Iterable

import dp_accounting
import pipeline_dp
from pipeline_dp import budget_accounting, dp_computations

from core.spend import MechanismSpend
from dp_ops.dp_counts import accountant_spent, additive_noise_event
from dp_ops.dp_events import EpsilonDeltaDpEvent, event_to_json

# Gaussian thresholding is the default: its threshold grows with sqrt(max_partitions_per_user), the
# others' linearly. Users a term needs to be kept with probability 1/2 at epsilon 1, delta 1e-6 (the
# retired one-off study `git show 7fc46f9:eval/keyword_set_sizes.py`, --thresholds; docs/keyword_sets.md):
# L0 = 1: 23 (Gaussian) / 15 (Laplace) / 14 (truncated geometric); L0 = 3: 40 / 44 / 40; L0 = 5:
# 53 / 75 / 67; L0 = 25: 121 / 411 / 331. Each is accounted by PipelineDP's NaiveBudgetAccountant
# (truncated geometric over-spends under its PLD accountant).
STRATEGIES = {
    "gaussian": pipeline_dp.PartitionSelectionStrategy.GAUSSIAN_THRESHOLDING,
    "truncated_geometric": pipeline_dp.PartitionSelectionStrategy.TRUNCATED_GEOMETRIC,
    "laplace": pipeline_dp.PartitionSelectionStrategy.LAPLACE_THRESHOLDING,
}


@dataclasses.dataclass(frozen=True)
class TermSelectionParams:
    stage: str
    epsilon: float
    delta: float
    max_partitions_per_user: int
    with_counts: bool = False
    strategy: str = "gaussian"

    def __post_init__(self):
        if not (self.epsilon > 0 and math.isfinite(self.epsilon)):
            raise ValueError(f"{self.stage}: epsilon must be > 0 and finite, got {self.epsilon}")
        if not 0 < self.delta < 1:
            raise ValueError(f"{self.stage}: partition selection needs 0 < delta < 1, got {self.delta}")
        if self.strategy not in STRATEGIES:
            raise ValueError(f"{self.stage}: partition selection must be one of {sorted(STRATEGIES)}")
        if self.max_partitions_per_user < 1:
            raise ValueError(f"{self.stage}: max_partitions_per_user must be >= 1")

    def budget_accountant(self) -> pipeline_dp.NaiveBudgetAccountant:
        # Its own accountant holding exactly this stage's budget; read back after compute_budgets().
        return pipeline_dp.NaiveBudgetAccountant(total_epsilon=self.epsilon, total_delta=self.delta)

    def select_params(self) -> pipeline_dp.SelectPartitionsParams:
        return pipeline_dp.SelectPartitionsParams(max_partitions_contributed=self.max_partitions_per_user,
                                                  partition_selection_strategy=STRATEGIES[self.strategy])

    def count_params(self) -> pipeline_dp.AggregateParams:
        return pipeline_dp.AggregateParams(
            metrics=[pipeline_dp.Metrics.PRIVACY_ID_COUNT], noise_kind=pipeline_dp.NoiseKind.LAPLACE,
            max_partitions_contributed=self.max_partitions_per_user, max_contributions_per_partition=1,
            partition_selection_strategy=STRATEGIES[self.strategy])


def top_terms_per_user(weighted_terms: Iterable[tuple[str, float]], max_terms: int) -> list[str]:
    """The `max_terms` distinct terms with the largest total weight (ties: alphabetical): what one
    user nominates for partition selection, each term once."""
    if max_terms < 1:
        raise ValueError(f"max_terms must be >= 1, got {max_terms}")
    totals: dict[str, float] = collections.defaultdict(float)
    for term, weight in weighted_terms:
        totals[term] += weight
    return sorted(totals, key=lambda term: (-totals[term], term))[:max_terms]


def selection_event(params: TermSelectionParams, accountant: pipeline_dp.NaiveBudgetAccountant) -> dp_accounting.DpEvent:
    """Each of the stage's PipelineDP mechanisms as dp-accounting composes it (see the module docstring)."""
    events = []
    for spec in accountant.mechanism_specs:
        if spec.mechanism_type in (budget_accounting.MechanismType.LAPLACE, budget_accounting.MechanismType.GAUSSIAN):
            # The user counts: one per term, a user in <= max_partitions_per_user terms.
            sensitivities = dp_computations.compute_sensitivities_for_privacy_id_count(params.count_params())
            events.append(additive_noise_event(spec, sensitivities))
        else:  # a partition selection strategy
            events.append(EpsilonDeltaDpEvent(spec.eps, spec.delta or 0.0))
    return dp_accounting.ComposedDpEvent(events)


def spend_from_accountant(params: TermSelectionParams, accountant: pipeline_dp.NaiveBudgetAccountant,
                          mechanism: str) -> MechanismSpend:
    specs = accountant.mechanism_specs
    epsilon, delta = accountant_spent(accountant, params.stage)
    noise = {"kind": "partition_selection", "strategy": params.strategy,
             "max_partitions_per_user": params.max_partitions_per_user,
             "mechanisms": [{"kind": str(spec.mechanism_type.name).lower(), "epsilon": spec.eps,
                             "delta": spec.delta or 0.0} for spec in specs]}
    return MechanismSpend(stage=params.stage, mechanism=mechanism, epsilon=epsilon, delta=delta,
                          sensitivity=float(params.max_partitions_per_user), noise=noise,
                          event=event_to_json(selection_event(params, accountant)))
