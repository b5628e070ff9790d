"""DPCountPerPartition: a user-level DP count over public partitions, with PipelineDP."""

from __future__ import annotations

import apache_beam as beam
import pipeline_dp

from dp_ops.dp_counts import DPCountParams, spend_from_accountant
from dp_ops.pipeline_dp_engine import release_with_pipeline_dp
from dp_ops.run_budget import RunBudget
from transforms.dp_stage import DPStage
from transforms.stage_timing import timed


def _identity(element):
    return element


class DPCountPerPartition(DPStage):
    """Input: (user_id, partition_key) pairs. Output: (partition_key, noisy count) for every public
    partition, present in the data or not (so absence is not revealed).

    `self.spend` is what PipelineDP's accountant gave the aggregation; it is set, and registered
    with `budget`, by expand(), which calls compute_budgets() on this stage's own accountant.
    """

    def __init__(self, params: DPCountParams, public_partitions, mechanism_name: str, budget: RunBudget | None):
        super().__init__(budget)
        self._params = params
        self._public_partitions = public_partitions
        self._mechanism_name = mechanism_name

    def expand(self, user_partition_pairs):
        counted = user_partition_pairs | "count contributions" >> beam.Map(timed(self._params.stage, _identity))
        counts, spend = release_with_pipeline_dp(
            counted, pipeline_dp.BeamBackend(), self._params, self._params.aggregate_params(), spend_from_accountant,
            self._mechanism_name, public_partitions=self._public_partitions)
        self._spends(spend)
        return counts | "unpack noisy counts" >> beam.MapTuple(lambda partition, metrics: (partition, metrics.count))
