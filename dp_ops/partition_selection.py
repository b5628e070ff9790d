"""User-level DP partition selection of free-form terms with PipelineDP: parameters and spend.

A term is released only if PipelineDP's partition selection keeps it; each user counts once per
term and for at most `max_partitions_per_user` terms (PipelineDP samples a user's terms down to that
bound), so a term used by one user is kept with probability at most ~delta however often that
user repeats it. With `with_counts`, the kept terms also get a noisy user count (Laplace), which the
budget accountant pays for out of the same epsilon.

Accounting: dp-accounting has no privacy loss distribution for thresholding, so the selection is
accounted as the (epsilon, delta) PipelineDP calibrated it to (dp_ops.dp_events.EpsilonDeltaDpEvent:
sound for any mechanism with that guarantee), and the optional counts as the Laplace noise they draw.
"""

from __future__ import annotations

import dataclasses
import math

import dp_accounting
import pipeline_dp
from pipeline_dp import budget_accounting, dp_computations

from core.spend import MechanismSpend
from dp_ops.dp_counts import accountant_spent, additive_noise_event
from dp_ops.dp_events import EpsilonDeltaDpEvent, event_to_json

# Gaussian thresholding is the default: its threshold grows with sqrt(max_partitions_per_user), the
# others' linearly (at epsilon 1, delta 1e-6 and 25 terms per user, a term needs ~122 users against
# ~325 with truncated geometric). Both are accounted by PipelineDP's NaiveBudgetAccountant.
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
