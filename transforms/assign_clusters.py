"""AssignClusters: each conversation -> its nearest DP centre (private; never released)."""

from __future__ import annotations

import dataclasses

import apache_beam as beam

from core.records import ConversationBlock
from dp_ops.dp_kmeans import assign_nearest
from transforms.stage_timing import timed


def _assign(block: ConversationBlock, centres) -> ConversationBlock:
    return dataclasses.replace(block, cluster_ids=assign_nearest(block.points, centres))


class AssignClusters(beam.PTransform):
    """Input: projected ConversationBlocks; side input: the centres. Output: blocks with cluster_ids."""

    def __init__(self, centres):
        super().__init__()
        self._centres = centres

    def expand(self, projected_blocks):
        return projected_blocks | "assign nearest centre" >> beam.Map(
            timed("assign_clusters", _assign), beam.pvalue.AsSingleton(self._centres))


def user_cluster_pairs(block: ConversationBlock):
    """(user_id, cluster_id) per conversation: the input of the DP size count."""
    for user_id, cluster_id in zip(block.user_ids, block.cluster_ids):
        yield user_id, int(cluster_id)


def assignment_rows(block: ConversationBlock):
    for conversation_id, user_id, cluster_id in zip(block.conversation_ids, block.user_ids, block.cluster_ids):
        yield {"conversation_id": conversation_id, "user_id": user_id, "cluster_id": int(cluster_id)}
