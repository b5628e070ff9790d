"""eval/pseudonym_agreement.py's scoring, on made-up step outputs (the model runs are measured, not tested)."""

import numpy as np

from eval.pseudonym_agreement import agreement, conversations_with_people, paired_difference, per_conversation


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
