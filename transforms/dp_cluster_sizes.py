"""DPClusterSizes: noisy conversation counts per cluster (PipelineDP, Laplace, user-level); KeepLargeClusters:
those of noisy size >= tau (KeptClusters: their sizes and ids). Each has its in-process form, `local` (transforms/engine.py)."""

from __future__ import annotations

import dataclasses
from typing import Any

import apache_beam as beam

from core.dp_stages import CLUSTER_SIZES
from core.records import ConversationBlock
from dp_ops.dp_counts import DPCountParams
from dp_ops.joint_calibration import StageNoise
from dp_ops.run_budget import RunBudget
from transforms.dp_count import DPCountPerPartition, ExactCountPerPartition


def user_cluster_pairs(block: ConversationBlock):
    """(user_id, cluster_id) per conversation: the input of the DP size count."""
    for user_id, cluster_id in zip(block.user_ids, block.cluster_ids):
        yield user_id, int(cluster_id)


def cluster_size_params(epsilon: float, max_conversations_per_user: int) -> DPCountParams:
    # A user has <= C conversations, each in one cluster: L1 sensitivity C, whatever the clusters.
    return DPCountParams(stage=CLUSTER_SIZES, epsilon=epsilon, noise="laplace",
                         max_contributions=max_conversations_per_user)


def calibrated_size_params(stage: StageNoise, max_conversations_per_user: int) -> DPCountParams:
    """The count's params for the joint calibration's cluster_sizes stage: Laplace, as the job's
    stage request; Gaussian where a calibration asked for it (an evaluated nightly mode,
    eval/audit/nightly_privacy_modes.py)."""
    params = cluster_size_params(stage.pipeline_dp_budget[0], max_conversations_per_user)
    if stage.request.noise == "gaussian":
        params = dataclasses.replace(params, noise="gaussian", delta=stage.pipeline_dp_budget[1])
    return params


class DPClusterSizes(beam.PTransform):
    """Input: assigned ConversationBlocks. Output: (cluster_id, noisy size) for every cluster id in
    range(num_clusters): the partitions are public, so empty clusters get a noisy size too. `params`
    None: the exact sizes of the evaluation's non-private baseline (never the job)."""

    def __init__(self, num_clusters: int, params: DPCountParams | None, budget: RunBudget | None):
        super().__init__()
        clusters = list(range(num_clusters))
        self._count = (ExactCountPerPartition(clusters) if params is None else
                       DPCountPerPartition(params, clusters, "PipelineDP COUNT per cluster, public partitions", budget))
        self.spend = self._count.spend  # known now; registered when the count is applied

    def local(self, assigned_blocks: list[ConversationBlock]) -> dict:
        return self._count.local([pair for block in assigned_blocks for pair in user_cluster_pairs(block)])

    def expand(self, assigned_blocks):
        return (assigned_blocks
                | "user and cluster per conversation" >> beam.FlatMap(user_cluster_pairs)
                | "DP count per cluster" >> self._count)


@dataclasses.dataclass(frozen=True)
class KeptClusters:
    """The clusters KeepLargeClusters kept: `sizes`, (cluster_id, noisy size), and `ids`, their ids
    (ClusterIds). On Beam PCollections; in-process a dict and a list."""

    sizes: Any
    ids: Any


class KeepLargeClusters(beam.PTransform):
    """(cluster_id, noisy size) -> those of size >= tau (post-processing of the DP sizes)."""

    def __init__(self, min_cluster_size: float):
        super().__init__()
        self._min_cluster_size = min_cluster_size

    def local(self, noisy_sizes: dict) -> dict:
        return {cluster: size for cluster, size in noisy_sizes.items() if size >= self._min_cluster_size}

    def expand(self, noisy_sizes):
        minimum = self._min_cluster_size
        return noisy_sizes | "drop clusters below tau" >> beam.Filter(lambda pair: pair[1] >= minimum)


class ClusterIds(beam.PTransform):
    """(cluster_id, size) -> cluster_id."""

    def local(self, sizes: dict) -> list[int]:
        return list(sizes)

    def expand(self, sizes):
        return sizes | "ids" >> beam.Keys()
