"""BoundUserContributions: keep at most C conversations per user, uniformly at random (seeded).

Runs before any aggregate: every DP stage's sensitivity argument counts on it. The sample is the C
conversations with the smallest keyed hash of (seed, conversation_id) per user, i.e. a uniform
random subset, identical on every runner and retry. Each kept conversation gets weight 1/n_u,
n_u <= C being how many its user kept (used by DP k-means; see dp_ops/dp_kmeans.py).
"""

from __future__ import annotations

import apache_beam as beam
from apache_beam.metrics import Metrics

from core.records import Conversation, WeightedConversation
from dp_ops.sampling import keyed_uniform
from transforms.stage_timing import timed


class BoundUserContributions(beam.PTransform):
    def __init__(self, max_conversations_per_user: int, seed: int):
        super().__init__()
        if max_conversations_per_user < 1:
            raise ValueError(f"max_conversations_per_user must be >= 1, got {max_conversations_per_user}")
        self._limit = max_conversations_per_user
        self._seed = seed

    def expand(self, conversations):
        seed = self._seed
        kept_per_user = (
            conversations
            | "key by user" >> beam.Map(lambda c: (c.user_id, c))
            | "keep C random conversations per user" >> beam.combiners.Top.PerKey(
                self._limit, key=lambda c: -keyed_uniform(seed, "bound", c.conversation_id))
        )
        return kept_per_user | "weight kept conversations" >> beam.FlatMap(timed("bound_contributions", _weighted))


def _weighted(user_and_conversations: tuple[str, list[Conversation]]):
    _, kept = user_and_conversations
    Metrics.counter("bound", "users").inc()
    Metrics.counter("bound", "conversations_kept").inc(len(kept))
    for conversation in kept:
        yield WeightedConversation(conversation, 1.0 / len(kept))
