"""The DP mechanisms behind the keyword-set builders: partition selection, TF-IDF and its DF release
(the discrete Laplace sampler itself: tests/test_discrete_laplace.py)."""

import math

import apache_beam as beam
import numpy as np
import pytest

from dp_ops import discrete_laplace
from dp_ops.partition_selection import TermSelectionParams
from dp_ops.tfidf import (
    DocumentFrequencyParams,
    NoisyDocumentFrequencies,
    bucket_of,
    clip_counts,
    document_vector_indices,
    top_tfidf_terms,
)
from tests.conftest import local_pipeline
from transforms.dp_document_frequencies import DPDocumentFrequencies
from transforms.dp_select_terms import DPSelectTerms
from transforms.tfidf_terms import ClippedTerms


def _select(pairs, collector, **params):
    params = TermSelectionParams(stage="keyword_set", **params)
    with local_pipeline() as pipeline:
        select = DPSelectTerms(params, None)
        collector(pipeline | beam.Create(pairs) | select, "released")
    return dict(collector.result("released")), select.spend


@pytest.mark.parametrize("strategy", ["gaussian", "truncated_geometric"])
def test_selection_keeps_frequent_terms_and_drops_a_term_one_user_repeats(collector, strategy):
    pairs = [(f"user-{u}", "python") for u in range(300)] + [(f"user-{u}", "recipe") for u in range(300, 500)]
    # One user repeats a term a thousand times (and in many conversations): it counts as one user.
    pairs += [("loud-user", "secretword")] * 1000 + [("loud-user", "python")]
    released, _ = _select(pairs, collector, epsilon=1.0, delta=1e-6, max_partitions_per_user=5, strategy=strategy)
    assert {"python", "recipe"} <= set(released)
    assert "secretword" not in released


def test_selection_drops_every_single_user_term_over_many_trials(collector):
    # 200 different terms, each used by one user 50 times: with delta=1e-6 none may come out.
    pairs = [(f"user-{i}", f"term{i}") for i in range(200) for _ in range(50)]
    released, _ = _select(pairs, collector, epsilon=2.0, delta=1e-6, max_partitions_per_user=3)
    assert released == {}


@pytest.mark.parametrize("with_counts,strategy", [(False, "gaussian"), (True, "gaussian"),
                                                  (False, "truncated_geometric"), (True, "laplace")])
def test_spent_epsilon_and_delta_are_what_was_asked(collector, with_counts, strategy):
    # 600 users: with counts half the budget goes to the selection, whose threshold is then ~150 users.
    pairs = [(f"user-{u}", "python") for u in range(600)]
    released, spend = _select(pairs, collector, epsilon=0.7, delta=2e-6, max_partitions_per_user=4,
                              with_counts=with_counts, strategy=strategy)
    assert spend.epsilon == pytest.approx(0.7) and spend.delta == pytest.approx(2e-6)
    assert spend.stage == "keyword_set" and spend.sensitivity == 4
    if with_counts:
        assert abs(released["python"] - 600) < 150  # Laplace scale ~ 4/0.35 = 11
    else:
        assert released == {"python": None}


def test_clipping_bounds_l1_and_support():
    clipped = clip_counts(["a"] * 10 + ["b"] * 3 + ["c", "d", "e"], 12)
    assert clipped == {"a": 10, "b": 2}
    assert sum(clip_counts([f"w{i}" for i in range(100)], 7).values()) == 7


def test_document_frequency_release_has_c_times_l_plus_1_sensitivity_and_the_right_noise(collector):
    params = DocumentFrequencyParams(epsilon=2.0, max_conversations_per_user=3, max_terms_per_conversation=4,
                                     buckets=64)
    assert params.sensitivity == 15 and params.spend().epsilon == pytest.approx(2.0)
    clipped = [ClippedTerms(f"c{i}", f"u{i}", {"python": 2, "error": 1}) for i in range(500)]
    with local_pipeline() as pipeline:
        collector(pipeline | beam.Create(clipped) | DPDocumentFrequencies(params, None), "df")
    [noisy] = collector.result("df")
    # The noise is unseeded: each check fails by chance with P(|Z| >= 8 std) = 1.3e-5 (scale 7.5).
    tolerance = 8 * math.sqrt(discrete_laplace.variance(params.scale))
    assert abs(noisy.documents - 500) < tolerance
    assert abs(noisy.frequencies[bucket_of("python", 64)] - 500) < tolerance
    assert len(document_vector_indices({"python": 2, "error": 1}, 64)) <= 3


def test_tfidf_prefers_terms_rare_across_documents():
    frequencies = np.zeros(1 << 10, dtype=np.int64)
    frequencies[bucket_of("python", 1 << 10)] = 900
    noisy = NoisyDocumentFrequencies(frequencies, 1000)
    assert top_tfidf_terms({"python": 2, "keyerror": 1, "pandas": 1}, noisy, 2) == ["keyerror", "pandas"]
