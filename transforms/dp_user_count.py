"""DPUserCount: ConversationBlocks (after contribution bounding) -> the DP number of users (a singleton).

Each user's contribution weights sum to exactly 1, so the total weight is the number of users, of
sensitivity 1 (dp_ops/dp_user_count.py). Only DP k-means reads the release, to choose its
dimension (transforms/dp_kmeans.ClusteringDimension); the spend is registered at construction.
"""

from __future__ import annotations

import apache_beam as beam
import numpy as np

from core.records import ConversationBlock
from dp_ops.dp_user_count import UserCountNoise, noisy_user_count
from dp_ops.run_budget import RunBudget
from transforms.dp_stage import DPStage
from transforms.stage_timing import timed


def block_weight(block: ConversationBlock) -> float:
    return float(np.sum(block.weights))


class DPUserCount(DPStage):
    """Input: ConversationBlocks. Output: a singleton float, the noisy sum of their weights."""

    def __init__(self, noise: UserCountNoise, budget: RunBudget | None, noise_seed: int | None = None):
        super().__init__(budget)
        self.noise = noise
        self.noise_seed = noise_seed
        self._spends(noise.spend())

    def local(self, blocks: list[ConversationBlock]) -> float:
        """In-process (transforms/engine.py)."""
        return noisy_user_count(sum(block_weight(block) for block in blocks), self.noise.sigma, self.noise_seed)

    def expand(self, blocks):
        return (blocks
                | "weight per block" >> beam.Map(timed("user_count", block_weight))
                | "total weight" >> beam.CombineGlobally(sum)
                | "add Gaussian noise" >> beam.Map(noisy_user_count, self.noise.sigma, self.noise_seed))
