"""AssignClusters: each conversation -> its nearest DP centre (private; never released)."""

from __future__ import annotations

import dataclasses

import apache_beam as beam

from core.records import ConversationBlock
from dp_ops.dp_kmeans import assign_nearest
from transforms.stage_timing import timed
from transforms.vectors import project_block


def _assign(block: ConversationBlock, centres, basis, active_dim: int) -> ConversationBlock:
    # The same block through the same projection: bit-for-bit the points DP k-means clustered.
    points = project_block(block, basis, active_dim).points
    return dataclasses.replace(block, cluster_ids=assign_nearest(points, centres))


class AssignClusters(beam.PTransform):
    """Input: the ConversationBlocks DP k-means clustered (DPKMeansOutput.blocks); side inputs: its
    centres, basis and active dimension. Output: the blocks with cluster_ids (and no points).

    It projects each block again rather than take blocks carrying their points from DP k-means: every
    block waits in the runner between the clustering passes and this step (on the DirectRunner, in
    memory), and at the full dimension the points double a block's size (1M generated conversations:
    1,645 MiB of blocks with points against 873 MiB without; docs/performance.md, "Memory")."""

    def __init__(self, clustering):
        super().__init__()
        self._clustering = clustering

    def local(self, blocks: list[ConversationBlock]) -> list[ConversationBlock]:
        """In-process (transforms/engine.py): `clustering` holds DPKMeans.local's values."""
        clustering = self._clustering
        return [_assign(block, clustering.centres, clustering.basis, clustering.active_dim) for block in blocks]

    def expand(self, blocks):
        clustering = self._clustering
        return blocks | "assign nearest centre" >> beam.Map(
            timed("assign_clusters", _assign), beam.pvalue.AsSingleton(clustering.centres),
            beam.pvalue.AsSingleton(clustering.basis), beam.pvalue.AsSingleton(clustering.active_dim))


def assignment_rows(block: ConversationBlock):
    for conversation_id, user_id, cluster_id in zip(block.conversation_ids, block.user_ids, block.cluster_ids):
        yield {"conversation_id": conversation_id, "user_id": user_id, "cluster_id": int(cluster_id)}
