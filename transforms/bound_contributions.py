"""BoundUserContributions: keep at most C conversations per user, uniformly at random (seeded).

Runs before any aggregate: every DP stage's sensitivity argument counts on it. Which conversations
a user keeps and what each weighs is dp_ops/contribution_bounding.py's rule (the C smallest keyed
hashes, weight 1/n_u), the one the evaluation uses too; this transform applies it per user with a
combiner, so no worker ever holds more than a few times C of one user's conversations.

The combiner carries each conversation pickled, as one bytes object, and unpickles only the kept
ones: the DirectRunner holds every user's accumulator decoded in one in-memory table until the
combine runs, and a conversation as Python objects (messages, strings, dataclasses) is larger than
its pickle (1M generated conversations: this step's peak RSS 3,623 -> 3,345 MiB; docs/performance.md,
"Memory").
"""

from __future__ import annotations

import itertools
import pickle

import apache_beam as beam
from apache_beam.metrics import Metrics

from core.records import Conversation, WeightedConversation
from dp_ops.contribution_bounding import bounding_rank, contribution_weight, keep_first
from transforms.stage_timing import timed


def _ranked_and_pickled(conversation: Conversation, seed: int):
    return conversation.user_id, (bounding_rank(seed, conversation.conversation_id), pickle.dumps(conversation))


class _KeepFirstFn(beam.CombineFn):
    """One user's kept conversations, from conversations that may arrive on any number of workers.
    The accumulator holds (rank, pickled conversation) pairs, trimmed to the best C once it reaches 2C."""

    def __init__(self, limit: int):
        self._limit = limit

    def create_accumulator(self):
        return []

    def add_input(self, ranked, ranked_conversation):
        ranked.append(ranked_conversation)
        return keep_first(ranked, self._limit) if len(ranked) >= 2 * self._limit else ranked

    def merge_accumulators(self, accumulators):
        return keep_first(itertools.chain.from_iterable(accumulators), self._limit)

    def extract_output(self, ranked) -> list[Conversation]:
        return [pickle.loads(pickled) for _, pickled in keep_first(ranked, self._limit)]


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
            | "key by user" >> beam.Map(_ranked_and_pickled, self._seed)
            | "keep C random conversations per user" >> beam.CombinePerKey(_KeepFirstFn(self._limit))
        )
        return kept_per_user | "weight kept conversations" >> beam.FlatMap(timed("bound_contributions", _weighted))


def _weighted(user_and_conversations: tuple[str, list[Conversation]]):
    _, kept = user_and_conversations
    Metrics.counter("bound", "users").inc()
    Metrics.counter("bound", "conversations_kept").inc(len(kept))
    weight = contribution_weight(len(kept))
    for conversation in kept:
        yield WeightedConversation(conversation, weight)
