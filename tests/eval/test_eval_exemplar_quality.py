"""eval/utility/exemplar_quality.py: the exemplar metrics on blobs whose answer is known, and the blind reader
against the loopback chat server."""

import json
import re

import numpy as np
import pytest

from backends.exemplars import Evolution, Exemplar
from backends.llm.parsing import MalformedOutput
from config.llm import LLMParams
from eval.utility import exemplar_quality as eq
from tests.support.llm_server import FakeChatServer

DIM = 16


def _unit(rows: np.ndarray) -> np.ndarray:
    return rows / np.linalg.norm(rows, axis=1, keepdims=True)


def _world(seed: int = 0):
    """Three topics, each a tight blob of members around its own direction; texts "t<topic>-<i>" map
    to member i of the topic's blob, "far-<i>" to vectors of no topic."""
    rng = np.random.default_rng(seed)
    directions = _unit(rng.normal(size=(3, DIM)))
    members = {c: _unit(directions[c] + 0.15 * rng.normal(size=(40, DIM))) for c in range(3)}
    far = _unit(rng.normal(size=(10, DIM)))

    def embed(texts):
        rows = []
        for text in texts:
            kind, _, i = text.rpartition("-")
            rows.append(far[int(i)] if kind == "far" else members[int(kind[1:])][int(i)])
        return np.stack(rows) if rows else np.zeros((0, DIM))

    return members, embed


def _topics(exemplars_of):
    return [{"id": c, "name": f"t{c}-0", "keywords": [f"t{c}-1"],
             "exemplars": [{"text": t, "similarity_to_centre": 0.5} for t in exemplars_of(c)]} for c in range(3)]


def test_own_members_as_exemplars_beat_another_topics_and_a_weak_first_draft():
    members, embed = _world()
    topics = _topics(lambda c: [f"t{c}-{i}" for i in (2, 3, 4)])
    evolutions = {c: Evolution([], [Exemplar(f"far-{c}", 0.1, 0), Exemplar(f"far-{c + 3}", 0.1, 0)], 5, {})
                  for c in range(3)}
    planted_of = {0: "a", 1: "b", 2: "c"}
    planted = eq.unit_means({"a": members[0], "b": members[1], "c": members[2]})
    scores = eq.score_topics(topics, evolutions, members, embed, seed=1, planted_of_topic=planted_of,
                             planted_means=planted)
    assert sorted(scores) == [0, 1, 2]
    for score in scores.values():
        assert score.evolved > 0.7 and score.other_topic < 0.5 and score.first_draft < 0.5
        assert score.members == pytest.approx(score.evolved, abs=0.1)  # a member scores like a member
        assert score.evolved < score.ceiling < 1
        assert score.planted_evolved == 1.0 and score.planted_first is not None
        assert score.name_hits == [True, True, True]  # a topic's "name" is one of its own members
    figures = eq.run_figures(topics, scores, evolutions)
    assert figures["beats_first"] == figures["beats_other"] == figures["planted_evolved"] == 1.0
    assert figures["chance"] == pytest.approx(1 / 3) and figures["reader"] is None


def test_exemplars_of_the_wrong_topic_score_low_and_other_topic_follows_the_derangement():
    members, embed = _world()
    shifted = _topics(lambda c: [f"t{(c + 1) % 3}-{i}" for i in (2, 3)])  # each topic shows the next one's
    evolutions = {c: Evolution([], [], 2, {}) for c in range(3)}
    scores = eq.score_topics(shifted, evolutions, members, embed, seed=0,
                             planted_of_topic={0: "a", 1: "b", 2: "c"},
                             planted_means=eq.unit_means({"a": members[0], "b": members[1], "c": members[2]}))
    assert all(s.evolved < 0.5 for s in scores.values())
    assert all(s.planted_evolved == 0.0 and s.name_hits == [False, False] for s in scores.values())
    # "other topic": the exemplars the derangement assigns, scored against this topic's members
    other = eq.derangement(3, 0)
    for c in range(3):
        shown = embed([e["text"] for e in shifted[other[c]]["exemplars"]])
        assert scores[c].other_topic == pytest.approx(float((shown @ members[c].mean(axis=0)).mean()))


def test_derangement_moves_every_topic_and_cosine_helpers_are_exact():
    for count in (2, 3, 7, 50):
        for seed in range(5):
            other = eq.derangement(count, seed)
            assert sorted(other) == list(range(count)) and all(o != i for i, o in enumerate(other))
    rows = _unit(np.random.default_rng(3).normal(size=(6, DIM)))
    pairwise = rows @ rows.T
    assert eq.member_cohesion(rows) == pytest.approx((pairwise.sum() - 6) / 30)
    assert eq.member_cohesion(rows[:1]) is None
    assert eq.mean_cosine_to_members(rows[:2], rows) == pytest.approx(pairwise[:2].mean(axis=1))


def test_choice_parsing():
    assert eq.parse_choice('{"topic": 3}', 5) == (2, False)
    assert eq.parse_choice('```json\n{"Topic": "2"}\n```', 5) == (1, True)
    for bad in ('{"topic": 0}', '{"topic": 6}', '{"topic": true}', '{"topic": 2.5}', '{"name": 1}', "3", ""):
        with pytest.raises(MalformedOutput):
            eq.parse_choice(bad, 5)


def test_blind_reader_sees_only_names_and_the_exemplar_and_is_mapped_back_through_the_shuffle():
    topics = [{"id": c, "name": f"Topic {name}", "keywords": ["k"],
               "exemplars": [{"text": f"please help with {name} {i}"} for i in range(2)]}
              for c, name in enumerate(["alpha", "beta", "gamma", "delta"])]
    scores = {c: eq.TopicScore(0, 0, 0, None, None, 1, None, None, []) for c in range(4)}

    def answer(prompt):
        request = re.search(r"<request>\n(.*?)\n</request>", prompt, re.S).group(1)
        names = re.findall(r"^(\d+)\. Topic (\w+)$", prompt, re.M)
        if "delta 1" in request:
            return "I think it is delta."  # unreadable: counted as not answered
        wanted = request.split()[3]
        if wanted == "gamma":
            wanted = "alpha"  # a wrong pick
        return json.dumps({"topic": int(next(n for n, name in names if name == wanted))})

    with FakeChatServer(answer=answer) as server:
        config = LLMParams(llm_backend="openai", llm_model="reader", llm_base_url=server.base_url, llm_max_retries=0,
                           llm_timeout_s=5.0, pseudonymize="off", backoff_base_s=0.0)
        reader = eq.TopicReader(config)
        picked_numbers = eq.read_blind(reader, topics, scores, seed=0)
        prompts = [r["body"]["messages"][-1]["content"] for r in server.requests]
    assert len(prompts) == 8
    assert len({tuple(re.findall(r"^\d+\. (.*)$", p, re.M)) for p in prompts}) > 1  # orders differ
    assert scores[0].reader_hits == [True, True] and scores[1].reader_hits == [True, True]
    assert scores[2].reader_hits == [False, False] and scores[3].reader_hits == [True, None]
    figures = eq.run_figures(topics, scores, {})
    assert (figures["reader_asked"], figures["reader_answered"]) == (8, 7)
    assert figures["reader"] == pytest.approx(5 / 7)
    assert sum(picked_numbers.values()) == 7 and set(picked_numbers) <= {1, 2, 3, 4}
    assert reader.counters.totals["failures"] == 1
