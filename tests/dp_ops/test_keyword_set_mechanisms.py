"""The DP mechanisms behind the keyword-set builders: partition selection (thresholds, what a user
nominates), TF-IDF and its Gaussian user-level DF release (noise, calibration with the selection;
its empirical privacy audit: tests/dp_ops/test_privacy_audit.py)."""

import math

import apache_beam as beam
import numpy as np
import pytest
from apache_beam.testing.util import assert_that, equal_to
from dp_accounting import GaussianDpEvent

from dp_ops.dp_events import EpsilonDeltaDpEvent, composed_epsilon
from dp_ops.partition_selection import TermSelectionParams, top_terms_per_user
from dp_ops.tfidf import (
    DocumentFrequencyParams,
    NoisyDocumentFrequencies,
    bucket_of,
    calibrated_document_frequencies,
    clip_counts,
    document_terms,
    document_vector_indices,
    top_tfidf_terms,
    user_term_counts,
)
from tests.conftest import check_dp_stage, checked, local_pipeline
from transforms.keyword_set.dp_document_frequencies import DPDocumentFrequencies
from transforms.keyword_set.dp_select_terms import DPSelectTerms
from transforms.keyword_set.nominate_terms import NominateTerms
from transforms.keyword_set.propose_keywords import proposal_weight


def _select(pairs, check, **params):
    """Selects terms in a pipeline; check(the released terms as a dict, the stage's spend) runs as its assert_that."""
    params = TermSelectionParams(stage="keyword_set", **params)
    check_dp_stage(DPSelectTerms(params, None), pairs, check)


@pytest.mark.parametrize("strategy", ["gaussian", "truncated_geometric"])
def test_selection_keeps_frequent_terms_and_drops_a_term_one_user_repeats(strategy):
    pairs = [(f"user-{u}", "python") for u in range(300)] + [(f"user-{u}", "recipe") for u in range(300, 500)]
    # One user repeats a term a thousand times (and in many conversations): it counts as one user.
    pairs += [("loud-user", "secretword")] * 1000 + [("loud-user", "python")]

    def frequent_kept_repeated_dropped(released, _):
        assert {"python", "recipe"} <= set(released)
        assert "secretword" not in released

    _select(pairs, frequent_kept_repeated_dropped, epsilon=1.0, delta=1e-6, max_partitions_per_user=5,
            strategy=strategy)


def test_selection_drops_every_single_user_term_over_many_trials():
    # 200 different terms, each used by one user 50 times: with delta=1e-6 none may come out.
    pairs = [(f"user-{i}", f"term{i}") for i in range(200) for _ in range(50)]

    def none_released(released, _):
        assert released == {}

    _select(pairs, none_released, epsilon=2.0, delta=1e-6, max_partitions_per_user=3)


@pytest.mark.parametrize("with_counts,strategy", [(False, "gaussian"), (True, "gaussian"),
                                                  (False, "truncated_geometric"), (True, "laplace")])
def test_spent_epsilon_and_delta_are_what_was_asked(with_counts, strategy):
    # 600 users: with counts half the budget goes to the selection, whose threshold is then ~150 users.
    pairs = [(f"user-{u}", "python") for u in range(600)]

    def as_asked(released, spend):
        assert spend.epsilon == pytest.approx(0.7) and spend.delta == pytest.approx(2e-6)
        assert spend.stage == "keyword_set" and spend.sensitivity == 4
        if with_counts:
            assert abs(released["python"] - 600) < 150  # Laplace scale ~ 4/0.35 = 11
        else:
            assert released == {"python": None}

    _select(pairs, as_asked, epsilon=0.7, delta=2e-6, max_partitions_per_user=4, with_counts=with_counts,
            strategy=strategy)


def test_clipping_bounds_l1_and_support():
    clipped = clip_counts(["a"] * 10 + ["b"] * 3 + ["c", "d", "e"], 12)
    assert clipped == {"a": 10, "b": 2}
    assert sum(clip_counts([f"w{i}" for i in range(100)], 7).values()) == 7


def test_calibrated_frequencies_and_selection_compose_to_the_asked_budget_and_no_less_noise_would():
    params = calibrated_document_frequencies(1.0, 1e-6, 0.75, 5e-7, terms_per_user=16, buckets=64)
    selection = EpsilonDeltaDpEvent(0.75, 5e-7)
    composed = composed_epsilon([params.event(), selection], 1e-6)
    assert 0.99 < composed <= 1.0
    assert composed_epsilon([GaussianDpEvent(params.noise_multiplier * 0.98), selection], 1e-6) > 1.0
    assert params.sensitivity == pytest.approx(math.sqrt(17)) and params.delta == pytest.approx(5e-7)
    # PLD composition beats adding the two epsilons: the Gaussian alone spends more than 1 - 0.75.
    assert params.spend().epsilon > 0.25
    with pytest.raises(ValueError, match="selection's epsilon"):
        calibrated_document_frequencies(1.0, 1e-6, 1.0, 5e-7, terms_per_user=16, buckets=64)


def test_document_frequencies_count_each_user_once_in_at_most_l_df_terms():
    counts = user_term_counts([{"python": 3, "error": 1}, {"python": 2, "pandas": 2, "numpy": 1}])
    assert counts == {"python": 5, "error": 1, "pandas": 2, "numpy": 1}
    assert document_terms(counts, 2) == ["python", "pandas"]
    indices = document_vector_indices(counts, 2, 1 << 20)
    assert len(indices) == 3 and indices[-1] == 1 << 20 and len(set(indices)) == 3


def test_document_frequency_release_is_exact_plus_gaussian_noise_of_the_calibrated_sigma():
    params = DocumentFrequencyParams(noise_multiplier=2.0, delta=5e-7, terms_per_user=3, buckets=4096)
    assert params.sigma == pytest.approx(4.0)
    # 400 users with "python" (one of them in 50 conversations: still one user) and 100 with "pandas".
    users = [(f"u{i}", {"python": 2, "error": 1}) for i in range(399)] + [("heavy", {"python": 50})]
    users += [(f"p{i}", {"pandas": 1}) for i in range(100)]

    def exact_plus_calibrated_noise(released):
        [noisy] = released
        used = {bucket_of(t, 4096) for t in ("python", "error", "pandas")}
        empty = np.array([v for b, v in enumerate(noisy.frequencies) if b not in used])
        # Unseeded noise; chance failures: the std check at 7 standard errors, the counts at 6 sigma.
        assert np.std(empty) == pytest.approx(params.sigma, rel=7 / math.sqrt(2 * len(empty)))
        assert abs(np.mean(empty)) < 6 * params.sigma / math.sqrt(len(empty))
        assert abs(noisy.frequency("python") - 400) < 6 * params.sigma
        assert abs(noisy.frequency("pandas") - 100) < 6 * params.sigma
        assert abs(noisy.documents - 500) < 6 * params.sigma

    with local_pipeline() as pipeline:
        assert_that(pipeline | beam.Create(users) | DPDocumentFrequencies(params, None),
                    checked(exact_plus_calibrated_noise), label="df")


def test_a_user_nominates_their_heaviest_terms_once_each():
    weighted = [("python", 1.0), ("error", 0.9), ("python", 1.0), ("pandas", 0.8), ("numpy", 0.8), ("error", 0.6)]
    assert top_terms_per_user(weighted, 3) == ["python", "error", "numpy"]  # ties: alphabetical
    assert top_terms_per_user(weighted, 10) == ["python", "error", "numpy", "pandas"]
    # A keyword proposed for two conversations outweighs any proposed for one.
    assert 2 * proposal_weight(4, 5) > proposal_weight(0, 5) > proposal_weight(1, 5)


def test_nominate_terms_keeps_each_users_heaviest_terms_in_a_pipeline():
    pairs = [("u1", ("python", 1.0)), ("u1", ("python", 0.9)), ("u1", ("error", 0.9)), ("u1", ("pandas", 0.5)),
             ("u2", ("recipe", 1.0)), ("u2", ("recipe", 1.0))]
    with local_pipeline() as pipeline:
        assert_that(pipeline | beam.Create(pairs) | NominateTerms(2),
                    equal_to([("u1", "error"), ("u1", "python"), ("u2", "recipe")]), label="nominated")


@pytest.mark.parametrize("strategy,users_kept,users_dropped", [("gaussian", 110, 20), ("laplace", 150, 25)])
def test_selection_threshold_at_l0_5(strategy, users_kept, users_dropped):
    # Epsilon 1, delta 1e-6, L0 = 5: a term needs ~53 users (Gaussian), ~75 (Laplace) for even odds.
    pairs = [(f"kept-{t}-{u}", f"common{t}") for t in range(10) for u in range(users_kept)]
    pairs += [(f"dropped-{t}-{u}", f"rare{t}") for t in range(10) for u in range(users_dropped)]

    def common_kept_rare_dropped(released, spend):
        assert set(released) == {f"common{t}" for t in range(10)}
        assert spend.epsilon == pytest.approx(1.0) and spend.delta == pytest.approx(1e-6)

    _select(pairs, common_kept_rare_dropped, epsilon=1.0, delta=1e-6, max_partitions_per_user=5, strategy=strategy)


def test_tfidf_prefers_terms_rare_across_documents():
    frequencies = np.zeros(1 << 10, dtype=np.float64)
    frequencies[bucket_of("python", 1 << 10)] = 900
    noisy = NoisyDocumentFrequencies(frequencies, 1000)
    assert top_tfidf_terms({"python": 2, "keyerror": 1, "pandas": 1}, noisy, 2) == ["keyerror", "pandas"]
