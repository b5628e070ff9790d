"""One PipelineDP release over (user_id, partition) pairs, on any PipelineDP backend, and its spend.

Every PipelineDP stage (DP cluster sizes and keyword histograms, the keyword-set build's term
selection, and the evaluation's in-process runs) goes through `release_with_pipeline_dp`: a DPEngine
over the stage's own budget accountant, one aggregation or partition selection, compute_budgets(),
and the spend read back from that accountant. The Beam stages pass pipeline_dp.BeamBackend(), the
evaluation pipeline_dp.LocalBackend(): the mechanism is the same.

`pipeline_dp_spend` gives that spend before any data: PipelineDP's combiners request their budget when
the aggregation is built, not when it runs, so the same call over a LocalBackend stand-in that is never
iterated reads back what the real release will be given. A stage knows its spend from its construction,
and `release_with_pipeline_dp(..., expected=)` refuses a release whose accountant gave anything else.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pipeline_dp

from core.spend import MechanismSpend


def _user(pair):
    return pair[0]


def _partition(pair):
    return pair[1]


def _no_value(pair):
    return 0


# Module-level functions, not lambdas: Beam pickles the extractors to its workers by reference.
USER_PARTITION_PAIRS = pipeline_dp.DataExtractors(privacy_id_extractor=_user, partition_extractor=_partition,
                                                  value_extractor=_no_value)


def release_with_pipeline_dp(
        pairs, backend: pipeline_dp.PipelineBackend, params,
        engine_params: pipeline_dp.AggregateParams | pipeline_dp.SelectPartitionsParams,
        spend_from_accountant: Callable[[Any, pipeline_dp.NaiveBudgetAccountant, str], MechanismSpend],
        mechanism: str, public_partitions=None, expected: MechanismSpend | None = None) -> tuple[Any, MechanismSpend]:
    """(the release, its spend). `params` is the stage's parameters (DPCountParams or
    TermSelectionParams): its `budget_accountant()` holds exactly the stage's budget, and
    `spend_from_accountant(params, accountant, mechanism)` (its module's) reads back what PipelineDP
    gave the mechanism. SelectPartitionsParams select partitions; AggregateParams aggregate, over
    `public_partitions` if given. The release is the backend's collection: on LocalBackend a lazy
    iterable, valid only now that compute_budgets() has run. `expected` (the stage's `pipeline_dp_spend`):
    RuntimeError unless PipelineDP gave the release exactly that budget and noise."""
    accountant = params.budget_accountant()
    engine = pipeline_dp.DPEngine(accountant, backend)
    if isinstance(engine_params, pipeline_dp.SelectPartitionsParams):
        if public_partitions is not None:
            raise ValueError("partition selection chooses the partitions itself: give no public_partitions")
        released = engine.select_partitions(pairs, engine_params, USER_PARTITION_PAIRS)
    else:
        released = engine.aggregate(pairs, engine_params, USER_PARTITION_PAIRS, public_partitions=public_partitions)
    accountant.compute_budgets()
    spend = spend_from_accountant(params, accountant, mechanism)
    if expected is not None and _accounted(spend) != _accounted(expected):
        raise RuntimeError(f"{spend.stage}: PipelineDP gave the release {_accounted(spend)}, not the "
                           f"{_accounted(expected)} its stage was constructed with")
    return released, spend


def _accounted(spend: MechanismSpend) -> tuple:
    # What the budget composes and the report shows of the noise; the mechanism's name says which
    # engine drew it (the in-process form is named so) and is no part of the accounting.
    return spend.stage, spend.epsilon, spend.delta, spend.sensitivity, spend.noise, spend.event


_STAND_IN_PAIRS = (("no user", "no partition"),)


def pipeline_dp_spend(
        params, engine_params: pipeline_dp.AggregateParams | pipeline_dp.SelectPartitionsParams,
        spend_from_accountant: Callable[[Any, pipeline_dp.NaiveBudgetAccountant, str], MechanismSpend],
        mechanism: str, public_partitions: bool = False) -> MechanismSpend:
    """The spend `release_with_pipeline_dp` will read back for this release (`public_partitions`: whether
    it aggregates over public partitions, which spares the selection's budget), known before any data:
    the same DPEngine call on a LocalBackend over a stand-in pair, never iterated, so no noise is drawn."""
    _, spend = release_with_pipeline_dp(
        list(_STAND_IN_PAIRS), pipeline_dp.LocalBackend(), params, engine_params, spend_from_accountant, mechanism,
        public_partitions=["no partition"] if public_partitions else None)
    return spend
