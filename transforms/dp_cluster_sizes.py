"""DPClusterSizes: noisy conversation counts per cluster (PipelineDP, Laplace, user-level)."""

from __future__ import annotations

import apache_beam as beam

from dp_ops.dp_counts import DPCountParams
from dp_ops.run_budget import RunBudget
from transforms.assign_clusters import user_cluster_pairs
from transforms.dp_count import DPCountPerPartition


def cluster_size_params(epsilon: float, max_conversations_per_user: int) -> DPCountParams:
    # A user has <= C conversations, each in one cluster: L1 sensitivity C, whatever the clusters.
    return DPCountParams(stage="cluster_sizes", epsilon=epsilon, noise="laplace",
                         max_contributions=max_conversations_per_user)


class DPClusterSizes(beam.PTransform):
    """Input: assigned ConversationBlocks. Output: (cluster_id, noisy size) for every cluster id in
    range(num_clusters): the partitions are public, so empty clusters get a noisy size too."""

    def __init__(self, num_clusters: int, params: DPCountParams, budget: RunBudget | None):
        super().__init__()
        self._num_clusters = num_clusters
        self._params = params
        self._budget = budget
        self.spend = None

    def expand(self, assigned_blocks):
        count = DPCountPerPartition(self._params, list(range(self._num_clusters)),
                                    "PipelineDP COUNT per cluster, public partitions", self._budget)
        sizes = (assigned_blocks
                 | "user and cluster per conversation" >> beam.FlatMap(user_cluster_pairs)
                 | "DP count per cluster" >> count)
        self.spend = count.spend
        return sizes


def keep_large_clusters(noisy_sizes, min_cluster_size: float):
    """Clusters whose noisy size is >= tau (post-processing of the DP sizes)."""
    return noisy_sizes | "drop clusters below tau" >> beam.Filter(lambda pair: pair[1] >= min_cluster_size)
