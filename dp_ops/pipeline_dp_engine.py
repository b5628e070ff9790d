"""One PipelineDP release over (user_id, partition) pairs, on any PipelineDP backend, and its spend.

Every PipelineDP stage (DP cluster sizes and keyword histograms, the keyword-set build's term
selection, and the evaluation's in-process runs) goes through `release_with_pipeline_dp`: a DPEngine
over the stage's own budget accountant, one aggregation or partition selection, compute_budgets(),
and the spend read back from that accountant. The Beam stages pass pipeline_dp.BeamBackend(), the
evaluation pipeline_dp.LocalBackend(): the mechanism is the same.
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
        mechanism: str, public_partitions=None) -> tuple[Any, MechanismSpend]:
    """(the release, its spend). `params` is the stage's parameters (DPCountParams or
    TermSelectionParams): its `budget_accountant()` holds exactly the stage's budget, and
    `spend_from_accountant(params, accountant, mechanism)` (its module's) reads back what PipelineDP
    gave the mechanism. SelectPartitionsParams select partitions; AggregateParams aggregate, over
    `public_partitions` if given. The release is the backend's collection: on LocalBackend a lazy
    iterable, valid only now that compute_budgets() has run."""
    accountant = params.budget_accountant()
    engine = pipeline_dp.DPEngine(accountant, backend)
    if isinstance(engine_params, pipeline_dp.SelectPartitionsParams):
        if public_partitions is not None:
            raise ValueError("partition selection chooses the partitions itself: give no public_partitions")
        released = engine.select_partitions(pairs, engine_params, USER_PARTITION_PAIRS)
    else:
        released = engine.aggregate(pairs, engine_params, USER_PARTITION_PAIRS, public_partitions=public_partitions)
    accountant.compute_budgets()
    return released, spend_from_accountant(params, accountant, mechanism)
