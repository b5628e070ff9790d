"""BoundUserContributions: keep at most C conversations per user, uniformly at random (seeded).

Runs before any aggregate: every DP stage's sensitivity argument counts on it. Which conversations
a user keeps and what each weighs is dp_ops/contribution_bounding.py's rule (the C smallest keyed
hashes, weight 1/n_u), the one the evaluation uses too; this transform applies it per user with a
combiner, so no worker ever holds more than a few times C of one user's conversations.
"""

from __future__ import annotations

import itertools

import apache_beam as beam
from apache_beam.metrics import Metrics

from core.records import Conversation, WeightedConversation
from dp_ops.contribution_bounding import bounding_rank, contribution_weight, keep_first
from transforms.stage_timing import timed


class _KeepFirstFn(beam.CombineFn):
    """One user's kept conversations, from conversations that may arrive on any number of workers.
    The accumulator holds (rank, conversation) pairs, trimmed to the best C once it reaches 2C."""

    def __init__(self, limit: int, seed: int):
        self._limit = limit
        self._seed = seed

    def create_accumulator(self):
        return []

    def add_input(self, ranked, conversation: Conversation):
        ranked.append((bounding_rank(self._seed, conversation.conversation_id), conversation))
        return keep_first(ranked, self._limit) if len(ranked) >= 2 * self._limit else ranked

    def merge_accumulators(self, accumulators):
        return keep_first(itertools.chain.from_iterable(accumulators), self._limit)

    def extract_output(self, ranked) -> list[Conversation]:
        return [conversation for _, conversation in keep_first(ranked, self._limit)]


class BoundUserContributions(beam.PTransform):
    def __init__(self, max_conversations_per_user: int, seed: int):
        super().__init__()
        if max_conversations_per_user < 1:
            raise ValueError(f"max_conversations_per_user must be >= 1, got {max_conversations_per_user}")
        self._limit = max_conversations_per_user
        self._seed = seed

    def expand(self, conversations):
        kept_per_user = (
            conversations
            | "key by user" >> beam.Map(lambda c: (c.user_id, c))
            | "keep C random conversations per user" >> beam.CombinePerKey(_KeepFirstFn(self._limit, self._seed))
        )
        return kept_per_user | "weight kept conversations" >> beam.FlatMap(timed("bound_contributions", _weighted))


def _weighted(user_and_conversations: tuple[str, list[Conversation]]):
    _, kept = user_and_conversations
    Metrics.counter("bound", "users").inc()
    Metrics.counter("bound", "conversations_kept").inc(len(kept))
    weight = contribution_weight(len(kept))
    for conversation in kept:
        yield WeightedConversation(conversation, weight)
