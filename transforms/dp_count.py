"""DPCountPerPartition: a user-level DP count over public partitions, with PipelineDP. ExactCountPerPartition:
the exact count, for the evaluation's non-private baseline only (epsilon = inf), never a release."""

from __future__ import annotations

import apache_beam as beam
import pipeline_dp

from core.spend import MechanismSpend
from dp_ops.dp_counts import DPCountParams, spend_from_accountant
from dp_ops.pipeline_dp_engine import pipeline_dp_spend, release_with_pipeline_dp
from dp_ops.run_budget import RunBudget
from transforms.dp_stage import DPStage
from transforms.stage_timing import timed


def _identity(element):
    return element


class DPCountPerPartition(DPStage):
    """Input: (user_id, partition_key) pairs. Output: (partition_key, noisy count) for every public
    partition, present in the data or not (so absence is not revealed).

    `self.spend` is what PipelineDP's accountant gives the aggregation, known at construction; it is
    registered with `budget` when the stage is applied (expand() or local()), which calls
    compute_budgets() on this stage's own accountant and checks it gave exactly that.
    """

    def __init__(self, params: DPCountParams, public_partitions, mechanism_name: str, budget: RunBudget | None):
        super().__init__(budget)
        self._params = params
        self._public_partitions = public_partitions
        self._mechanism_name = mechanism_name
        self.spend = count_spend(params, mechanism_name)

    def local(self, user_partition_pairs: list) -> dict:
        """In-process (transforms/engine.py): the same PipelineDP aggregation on its LocalBackend;
        {partition_key: noisy count} for every public partition (`public_partitions` a list)."""
        pairs = list(user_partition_pairs)
        if not pairs:
            # PipelineDP's LocalBackend refuses empty input; pairs outside the public partitions are
            # dropped, so one such pair gives every public partition a pure-noise count, as on Beam.
            pairs = [("no user", ("no partition",))]
        released, spend = release_with_pipeline_dp(
            pairs, pipeline_dp.LocalBackend(), self._params, self._params.aggregate_params(), spend_from_accountant,
            f"{self._mechanism_name} (in-process)", public_partitions=self._public_partitions, expected=self.spend)
        self._spends(spend)
        return {partition: metrics.count for partition, metrics in released}

    def expand(self, user_partition_pairs):
        counted = user_partition_pairs | "count contributions" >> beam.Map(timed(self._params.stage, _identity))
        counts, spend = release_with_pipeline_dp(
            counted, pipeline_dp.BeamBackend(), self._params, self._params.aggregate_params(), spend_from_accountant,
            self._mechanism_name, public_partitions=self._public_partitions, expected=self.spend)
        self._spends(spend)
        return counts | "unpack noisy counts" >> beam.MapTuple(lambda partition, metrics: (partition, metrics.count))


def count_spend(params: DPCountParams, mechanism_name: str) -> MechanismSpend:
    """What a DPCountPerPartition with these params spends (PipelineDP's own accountant, before any data)."""
    return pipeline_dp_spend(params, params.aggregate_params(), spend_from_accountant, mechanism_name,
                             public_partitions=True)


def exact_counts(partitions, keys) -> dict:
    """{partition: how many of `keys` are it} for every public partition (a float, as PipelineDP's counts)."""
    counts = {partition: 0.0 for partition in partitions}
    for key in keys:
        if key in counts:
            counts[key] += 1
    return counts


class ExactCountPerPartition(beam.PTransform):
    """DPCountPerPartition without noise or bounding: input (user_id, partition_key) pairs, output
    (partition_key, exact count) for every public partition (a list, or on Beam a PCollection)."""

    def __init__(self, public_partitions):
        super().__init__()
        self._public_partitions = public_partitions
        self.spend = None

    def local(self, user_partition_pairs: list) -> dict:
        return exact_counts(self._public_partitions, (partition for _, partition in user_partition_pairs))

    def expand(self, user_partition_pairs):
        partitions = self._public_partitions
        if isinstance(partitions, beam.PCollection):
            partitions = beam.pvalue.AsList(partitions)
        return (user_partition_pairs
                | "partition keys" >> beam.Values()
                | "all keys" >> beam.combiners.ToList()
                | "exact counts" >> beam.FlatMap(lambda keys, partitions: exact_counts(partitions, keys).items(),
                                                 partitions))
