"""eval/pii/pseudonym_agreement.py's scoring, on made-up step outputs (the model runs are measured, not tested),
and its runs' record isolation against the loopback server."""

import numpy as np

from config.embedding import Encoder
from config.llm import LLMParams
from core.records import Conversation, Message
from eval.pii.pseudonym_agreement import (
    agreement,
    conversations_with_people,
    dead_lettered,
    paired_difference,
    per_conversation,
    run_condition,
)
from tests.support.llm_server import FakeChatServer


def _run(picks, embeddings, failed=0):
    return ([""] * len(picks), picks, np.asarray(embeddings, dtype=float), failed)


def test_agreement_scores_each_conversation_against_the_reference():
    reference = _run([["a", "b"], ["c"], []], [[1, 0], [0, 1], [1, 1]])
    candidate = _run([["b", "x"], ["c"], ["d"]], [[1, 0], [1, 0], [2, 2]], failed=2)
    scores = per_conversation(reference, candidate)
    assert np.allclose(scores["facet_cosine"], [1, 0, 1])
    assert np.allclose(scores["keyword_jaccard"], [1 / 3, 1, 0])
    assert np.allclose(scores["same_first_keyword"], [0, 1, 0])
    summary = agreement(reference, candidate)
    assert np.isclose(summary["facets_within_0.9"], 2 / 3) and summary["failed_calls"] == 2


def test_the_paired_difference_and_its_interval():
    a = np.zeros(200)
    mean, low, high = paired_difference(a, a + 0.1)
    assert np.isclose(mean, 0.1) and np.isclose(low, 0.1) and np.isclose(high, 0.1)
    rng = np.random.default_rng(1)
    mean, low, high = paired_difference(a, rng.normal(0, 1, 200))
    assert low < mean < high and low < 0 < high and high - low < 0.4


def test_the_conversations_are_single_requests_with_their_own_ids():
    conversations = conversations_with_people("heldout", 20, seed=3)
    assert len(conversations) == 20 and len({c.conversation_id for c in conversations}) == 20
    assert all(len(c.messages) == 1 and c.messages[0].role == "user" for c in conversations)


def test_a_dead_lettered_conversation_is_left_out_of_the_scores():
    reference = _run([["a"], ["b"], ["c"]], [[1, 0], [0, 1], [1, 1]])
    candidate = ([""] * 3, [["a"], None, ["x"]], np.array([[1, 0], [np.nan, np.nan], [1, -1]]), 1)
    scores = per_conversation(reference, candidate)
    assert np.isnan(scores["facet_cosine"][1]) and np.isnan(scores["keyword_jaccard"][1])
    summary = agreement(reference, candidate)
    assert summary["scored"] == 2 and summary["dead_lettered"] == 1 and dead_lettered(reference) == 0
    assert np.isclose(summary["keyword_jaccard"], 0.5) and np.isclose(summary["facets_within_0.9"], 0.5)
    mean, low, high = paired_difference(np.array([0.0, np.nan, 1.0]), np.array([1.0, 1.0, np.nan]))
    assert (mean, low, high) == (1.0, 1.0, 1.0)  # the first conversation only


def test_a_conversation_whose_call_fails_is_dead_lettered_alone_and_never_answered_offline(monkeypatch):
    import backends.embedding
    monkeypatch.setattr(backends.embedding, "embed_texts",
                        lambda name, texts, *a, **k: np.array([[1.0, float(len(t) % 5)] for t in texts]))
    texts = ["how do python decorators work", "broken request", "sourdough starter with nokeywords"]
    conversations = [Conversation(f"c{i}", f"u{i}", None, (Message("user", t),)) for i, t in enumerate(texts)]

    def fault_for(body, attempt):
        if b"broken" in body:
            return "500"  # the facet call
        return "garbage" if b"nokeywords" in body and b"<summary>" in body else None  # the keyword call

    with FakeChatServer() as server:
        monkeypatch.setattr(server, "fault_for", fault_for)
        config = LLMParams(llm_backend="openai", llm_model="m", llm_base_url=server.base_url, llm_max_retries=1,
                           llm_timeout_s=5, llm_steps="facets,keywords", pseudonymize="off", backoff_base_s=0.01)
        run = run_condition(conversations, config, ("python", "cooking"), Encoder("m"), 3)
    facets, picks, embeddings, failed = run
    assert facets[0] == "The user asks: how do python decorators work" and facets[1] is None
    assert facets[2].startswith("The user asks: sourdough")  # its facet passed; its keyword call failed
    assert "python" in picks[0] and picks[1] is None and picks[2] is None
    assert np.isnan(embeddings[1]).all() and not np.isnan(embeddings[[0, 2]]).any()
    assert failed == 2 and dead_lettered(run) == 2
    assert agreement(run, run)["scored"] == 1
