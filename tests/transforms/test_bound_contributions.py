import collections

import apache_beam as beam
import pytest
from apache_beam.testing.util import assert_that

from core.records import Conversation, Message
from dp_ops.contribution_bounding import bounding_rank, keep_first
from tests.conftest import assert_together, checked, local_pipeline
from transforms.bound_contributions import BoundUserContributions


def _conversations(counts: dict[str, int]):
    return [Conversation(f"{user}-{i}", user, None, (Message("user", "hi"),))
            for user, n in counts.items() for i in range(n)]


def _bound(conversations, limit, seed, check):
    """Bounds the conversations in a pipeline; check(the kept conversations) runs as its assert_that."""
    with local_pipeline() as pipeline:
        kept = pipeline | beam.Create(conversations) | BoundUserContributions(limit, seed)
        assert_that(kept, checked(check), label="kept")


def test_user_with_many_conversations_is_capped_at_c():
    def capped(kept):
        per_user = collections.Counter(k.conversation.user_id for k in kept)
        assert per_user == {"heavy": 5, "light": 2}

    _bound(_conversations({"heavy": 40, "light": 2}), limit=5, seed=1, check=capped)


def test_weights_of_each_user_sum_to_one():
    def sum_to_one(kept):
        totals = collections.defaultdict(float)
        for k in kept:
            totals[k.conversation.user_id] += k.weight
        assert totals == pytest.approx({"a": 1.0, "b": 1.0, "c": 1.0})

    _bound(_conversations({"a": 9, "b": 3, "c": 1}), limit=4, seed=2, check=sum_to_one)


def test_same_seed_keeps_same_conversations():
    data = _conversations({"heavy": 30})

    def kept_ids(pipeline, name, rows):
        return (pipeline | f"create {name}" >> beam.Create(rows) | f"bound {name}" >> BoundUserContributions(5, 7)
                | f"ids {name}" >> beam.Map(lambda k: k.conversation.conversation_id))

    def same(first, second):
        assert set(first) == set(second)

    with local_pipeline() as pipeline:
        assert_together(same, "same kept", first=kept_ids(pipeline, "first", data),
                        second=kept_ids(pipeline, "second", list(reversed(data))))


def test_choice_is_uniform_across_seeds():
    # The kept set is the C smallest keyed hashes; over many seeds every conversation of a
    # 10-conversation user is kept with probability C/10 = 0.3.
    ids = [f"heavy-{i}" for i in range(10)]
    hits = collections.Counter()
    seeds = 3000
    for seed in range(seeds):
        hits.update(cid for _, cid in keep_first(((bounding_rank(seed, cid), cid) for cid in ids), 3))
    for cid in ids:
        assert abs(hits[cid] / seeds - 0.3) < 0.04  # > 4 standard errors


def test_the_rule_kept_on_parts_then_on_their_union_keeps_what_it_keeps_on_all():
    # What lets the Beam combiner apply it per bundle and again when merging.
    ranked = [(bounding_rank(5, f"c{i}"), f"c{i}") for i in range(50)]
    whole = keep_first(ranked, 4)
    parts = [keep_first(ranked[start:start + 7], 4) for start in range(0, 50, 7)]
    assert keep_first([pair for part in parts for pair in part], 4) == whole
    assert [cid for _, cid in whole] == sorted((cid for _, cid in ranked), key=lambda c: bounding_rank(5, c))[:4]


def test_the_transform_keeps_what_the_rule_keeps_from_all_of_a_users_conversations():
    data = _conversations({"heavy": 40, "light": 3})
    expected = {cid for user in ("heavy", "light") for _, cid in keep_first(
        ((bounding_rank(3, c.conversation_id), c.conversation_id) for c in data if c.user_id == user), 5)}

    def as_the_rule(kept):
        kept = {k.conversation.conversation_id for k in kept}
        assert kept == expected and len(kept) == 8

    _bound(data, 5, 3, as_the_rule)


def test_limit_must_be_positive():
    with pytest.raises(ValueError):
        BoundUserContributions(0, 1)
