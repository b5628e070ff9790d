import collections

import apache_beam as beam
import pytest

from core.records import Conversation, Message
from tests.conftest import local_pipeline
from transforms.bound_contributions import BoundUserContributions


def _conversations(counts: dict[str, int]):
    return [Conversation(f"{user}-{i}", user, None, (Message("user", "hi"),))
            for user, n in counts.items() for i in range(n)]


def _bound(conversations, limit, seed, collector, name="kept"):
    with local_pipeline() as pipeline:
        kept = pipeline | beam.Create(conversations) | BoundUserContributions(limit, seed)
        collector(kept, name)
    return collector.result(name)


def test_user_with_many_conversations_is_capped_at_c(collector):
    kept = _bound(_conversations({"heavy": 40, "light": 2}), limit=5, seed=1, collector=collector)
    per_user = collections.Counter(k.conversation.user_id for k in kept)
    assert per_user == {"heavy": 5, "light": 2}


def test_weights_of_each_user_sum_to_one(collector):
    kept = _bound(_conversations({"a": 9, "b": 3, "c": 1}), limit=4, seed=2, collector=collector)
    totals = collections.defaultdict(float)
    for k in kept:
        totals[k.conversation.user_id] += k.weight
    assert totals == pytest.approx({"a": 1.0, "b": 1.0, "c": 1.0})


def test_same_seed_keeps_same_conversations(collector):
    data = _conversations({"heavy": 30})
    first = {k.conversation.conversation_id for k in _bound(data, 5, 7, collector, "first")}
    second = {k.conversation.conversation_id for k in _bound(list(reversed(data)), 5, 7, collector, "second")}
    assert first == second


def test_choice_is_uniform_across_seeds():
    # The kept set is the C smallest keyed hashes; over many seeds every conversation of a
    # 10-conversation user is kept with probability C/10 = 0.3.
    from dp_ops.sampling import keyed_uniform
    ids = [f"heavy-{i}" for i in range(10)]
    hits = collections.Counter()
    seeds = 3000
    for seed in range(seeds):
        kept = sorted(ids, key=lambda cid: keyed_uniform(seed, "bound", cid))[:3]
        hits.update(kept)
    for cid in ids:
        assert abs(hits[cid] / seeds - 0.3) < 0.04  # > 4 standard errors


def test_limit_must_be_positive():
    with pytest.raises(ValueError):
        BoundUserContributions(0, 1)
