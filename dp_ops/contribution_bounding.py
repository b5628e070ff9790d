"""Contribution bounding's choice rule: which C conversations of a user are kept, and their weight.

A user keeps the C conversations with the smallest keyed hash of (seed, "bound", conversation_id)
(dp_ops.sampling.keyed_uniform): a uniform random subset, the same on every runner, retry and
evaluation run, whatever order the conversations arrive in. Every DP stage's sensitivity argument
counts on it. Each kept conversation weighs 1/n_u, n_u <= C being how many its user kept (DP k-means
relies on a user's weights summing to 1; dp_ops/dp_kmeans.py).

The rule composes: the C smallest of a union are among the C smallest of each part, so `keep_first`
may run on parts and again on the union of their results (the Beam transform's combiner does).
"""

from __future__ import annotations

import heapq
from collections.abc import Iterable
from typing import TypeVar

from dp_ops.sampling import keyed_uniform

PURPOSE = "bound"

T = TypeVar("T")
Rank = tuple[float, str]


def bounding_rank(seed: int, conversation_id: str) -> Rank:
    """A conversation's rank among its user's (smallest kept first); the id breaks hash ties."""
    return keyed_uniform(seed, PURPOSE, conversation_id), conversation_id


def keep_first(ranked: Iterable[tuple[Rank, T]], limit: int) -> list[tuple[Rank, T]]:
    """Of one user's (bounding_rank, item) pairs, the (at most) `limit` that bounding keeps, best first."""
    if limit < 1:
        raise ValueError(f"max_conversations_per_user must be >= 1, got {limit}")
    return heapq.nsmallest(limit, ranked, key=lambda pair: pair[0])


def contribution_weight(kept: int) -> float:
    """The weight of each of a user's `kept` conversations: together they weigh 1."""
    return 1.0 / kept
