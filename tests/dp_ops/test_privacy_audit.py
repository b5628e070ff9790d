"""An empirical privacy audit of each DP mechanism the job runs (tests/support/privacy_audit.py): on two
neighbouring tiny inputs, without and with one heavy user who contributes C times, the mechanism as
the job runs it (its production noise source) never shows more privacy loss than its accounted
epsilon, and the audit is not vacuous: a deliberately under-noised copy of the mechanism is caught.

The audited epsilon is the accountant's figure for the event the mechanism registers (dp_ops.
dp_events.composed_epsilon), for one release of the mechanism.

Where outputs of one run are independent repetitions of the audited mechanism (the public partitions
of a PipelineDP count each hold their own heavy user and draw independent noise; the Gaussian noise
of separate document-frequency vectors), a run yields many samples at once.
"""

import dataclasses

import numpy as np
import pipeline_dp
import pytest
from dp_accounting import GaussianDpEvent

from dp_ops import dp_kmeans as km
from dp_ops.dp_counts import spend_from_accountant
from dp_ops.dp_events import composed_epsilon, event_from_json
from dp_ops.tfidf import (
    DocumentFrequencyParams,
    add_gaussian_noise,
    bucket_of,
    calibrated_document_frequencies,
    clip_counts,
    document_vector_indices,
    user_term_counts,
)
from tests.support.privacy_audit import epsilon_lower_bound
from transforms.dp_cluster_sizes import cluster_size_params
from transforms.keyword_histograms import keyword_count_params

C = 5  # conversations of the heavy user (the job's default max_conversations_per_user)
# Laplace noise is pure epsilon-DP, but dp-accounting's Laplace PLD puts its truncated tail (~1e-22)
# at infinite loss, so its epsilon is read, and the audit run, at a negligible delta instead of 0.
PURE_DELTA = 1e-12


def test_the_audit_is_tight_on_an_exactly_known_mechanism_and_never_above_it():
    # Laplace of scale 1 on a count of sensitivity 1 is exactly 1-DP: tails beyond the shift have
    # likelihood ratio e, so the audit gets close to 1 from below.
    rng = np.random.default_rng(0)
    bounds = [epsilon_lower_bound(rng.laplace(0, 1, 20000), 1 + rng.laplace(0, 1, 20000), 0.0) for _ in range(3)]
    assert all(0.85 < bound <= 1.0 for bound in bounds)


# --- DP k-means: one Gaussian release of the per-cluster sums (dp_ops.dp_kmeans) ---

def _kmeans_sums(with_heavy_user: bool) -> np.ndarray:
    """Exact per-cluster sums of weighted unit points, 2 clusters in 2 dimensions; the heavy user's C
    conversations weigh 1/C each (the job's 1/n_u weighting) and sit at one point of cluster 0."""
    points = [[0.6, 0.8], [0.0, 1.0], [-1.0, 0.0]]
    weights, labels = [1.0, 0.5, 0.5], [0, 1, 1]
    if with_heavy_user:
        points += [[1.0, 0.0]] * C
        weights += [1.0 / C] * C
        labels += [0] * C
    return km.weighted_sums(np.array(points, dtype=np.float32), np.array(weights), np.array(labels), 2)


def _kmeans_scores(sigma: float, samples: int) -> tuple[np.ndarray, np.ndarray]:
    """Each release projected on the heavy user's contribution (the likelihood-ratio test for a Gaussian)."""
    sums0, sums1 = _kmeans_sums(False), _kmeans_sums(True)
    direction = (sums1 - sums0) / np.linalg.norm(sums1 - sums0)
    scores = []
    for sums in (sums0, sums1):
        # Production noise (noise_seed=None: PyDP's secure sampler), `samples` releases at once.
        noisy = km.add_gaussian_noise(np.broadcast_to(sums, (samples, *sums.shape)), sigma, None, 0)
        scores.append(((noisy - sums0) * direction).sum(axis=(1, 2)))
    return scores[0], scores[1]


def test_kmeans_gaussian_release_never_shows_more_than_its_accounted_epsilon():
    params = km.DPKMeansParams(num_clusters=2, epsilon=4.0, delta=1e-6, input_dim=2, projection_dim=0)
    calibration = km.calibrate(params)
    assert np.linalg.norm(_kmeans_sums(True) - _kmeans_sums(False)) == pytest.approx(km.USER_L2_SENSITIVITY)
    # The run registers releases x Gaussian(z); one release is Gaussian(z).
    claimed = composed_epsilon([GaussianDpEvent(calibration.noise_multiplier)], params.delta)
    audited = epsilon_lower_bound(*_kmeans_scores(calibration.sigma, 40000), params.delta)
    # The floor only shows the audit has power: 12 audits here gave 0.50-0.82, and CI once saw 0.28
    # (production noise is unseeded), so 0.2, not 0.3.
    assert 0.2 < audited <= claimed
    under_noised = epsilon_lower_bound(*_kmeans_scores(calibration.sigma / 4, 15000), params.delta)
    assert under_noised > claimed


# --- PipelineDP counts over public partitions, on its LocalBackend ---

def _pipeline_dp_counts(params, pairs, partitions):
    accountant = params.budget_accountant()
    engine = pipeline_dp.DPEngine(accountant, pipeline_dp.LocalBackend())
    extractors = pipeline_dp.DataExtractors(privacy_id_extractor=lambda pair: pair[0],
                                            partition_extractor=lambda pair: pair[1], value_extractor=lambda pair: 0)
    result = engine.aggregate(pairs, params.aggregate_params(), extractors, public_partitions=partitions)
    accountant.compute_budgets()
    counts = {partition: metrics.count for partition, metrics in result}
    return counts, spend_from_accountant(params, accountant, "audit")


def _cluster_size_scores(params, clusters: int):
    """Noisy size of cluster k without and with heavy user k (C conversations in cluster k); every
    cluster is one repetition. A background user outside the audited clusters keeps the input non-empty."""
    partitions = list(range(clusters + 1))
    background = [("background", clusters)]
    without, spend = _pipeline_dp_counts(params, background, partitions)
    with_users, _ = _pipeline_dp_counts(params, background + [(f"heavy-{k}", k) for k in range(clusters)
                                                              for _ in range(C)], partitions)
    scores = [np.array([counts[k] for k in range(clusters)]) for counts in (without, with_users)]
    return scores[0], scores[1], spend


def test_laplace_cluster_size_never_shows_more_than_its_accounted_epsilon():
    # 30,000 repetitions: with 12,000 the audited bound (typically 0.7-0.9) once fell to 0.52 in CI;
    # with 30,000 it measured 0.89-0.95 over 12 runs (production noise, so it varies run to run)
    scores0, scores1, spend = _cluster_size_scores(cluster_size_params(1.0, C), 30000)
    claimed = composed_epsilon([event_from_json(spend.event)], PURE_DELTA)
    assert claimed == pytest.approx(spend.epsilon, abs=2e-3)
    audited = epsilon_lower_bound(scores0, scores1, PURE_DELTA)
    assert 0.6 < audited <= claimed
    scores0, scores1, _ = _cluster_size_scores(cluster_size_params(3.0, C), 4000)  # noise for epsilon 3
    assert epsilon_lower_bound(scores0, scores1, PURE_DELTA) > claimed


def _keyword_scores(params, groups: int):
    """Group g holds 10 (cluster, keyword) partitions; heavy user g has C conversations that each
    pick all 10 (PipelineDP counts the user once per pair, in <= 10 pairs). The score is the sum of
    the group's noisy counts: the likelihood-ratio test for Gaussian noise on that shift."""
    partitions = [(g, j) for g in range(groups) for j in range(10)] + [("background", 0)]
    background = [("background", ("background", 0))]
    heavy = [(f"heavy-{g}", (g, j)) for g in range(groups) for j in range(10) for _ in range(C)]
    without, spend = _pipeline_dp_counts(params, background, partitions)
    with_users, _ = _pipeline_dp_counts(params, background + heavy, partitions)
    scores = [np.array([sum(counts[(g, j)] for j in range(10)) for g in range(groups)])
              for counts in (without, with_users)]
    return scores[0], scores[1], spend


@pytest.mark.e2e
def test_gaussian_keyword_count_never_shows_more_than_its_accounted_epsilon():
    params = keyword_count_params(2.0, 1e-6, "gaussian", 10)
    scores0, scores1, spend = _keyword_scores(params, 3000)
    claimed = composed_epsilon([event_from_json(spend.event)], params.delta)
    assert claimed == pytest.approx(2.0, abs=0.02)
    audited = epsilon_lower_bound(scores0, scores1, params.delta)
    assert audited <= claimed
    scores0, scores1, _ = _keyword_scores(keyword_count_params(20.0, 1e-6, "gaussian", 10), 1000)
    assert epsilon_lower_bound(scores0, scores1, params.delta) > claimed


# --- Gaussian user-level document frequencies (dp_ops.tfidf) ---

def _document_frequency_vector(users: list[list[list[str]]], params: DocumentFrequencyParams) -> np.ndarray:
    vector = np.zeros(params.buckets + 1, dtype=np.int64)
    for conversations in users:
        counts = user_term_counts(clip_counts(terms, len(terms)) for terms in conversations)
        np.add.at(vector, document_vector_indices(counts, params.terms_per_user, params.buckets), 1)
    return vector


def _document_frequency_scores(params: DocumentFrequencyParams, samples: int):
    """The heavy user's C conversations each use more than L_df terms in distinct buckets, repeated:
    the user still adds 1 to L_df buckets and the user count, an L2 shift of sqrt(L_df + 1), its
    sensitivity. The score is the projection on that shift (the likelihood-ratio test for a Gaussian)."""
    terms = []
    for word in ("alpha", "beta", "gamma", "delta", "epsilon", "zeta", "eta", "theta"):
        if bucket_of(word, params.buckets) not in {bucket_of(t, params.buckets) for t in terms}:
            terms.append(word)
    assert len(terms) > params.terms_per_user
    background = [[["alpha"]], [["beta", "gamma"]]]
    exact0 = _document_frequency_vector(background, params)
    exact1 = _document_frequency_vector(background + [[terms * 3] * C], params)
    shift = (exact1 - exact0).astype(np.float64)
    assert np.linalg.norm(shift) == pytest.approx(params.sensitivity) and shift.max() == 1
    direction = shift / np.linalg.norm(shift)
    scores = []
    for exact in (exact0, exact1):
        noisy = add_gaussian_noise(np.broadcast_to(exact, (samples, len(exact))), params)
        scores.append(((noisy - exact0) * direction).sum(axis=1))
    return scores[0], scores[1]


def test_gaussian_document_frequencies_never_show_more_than_their_accounted_epsilon():
    params = calibrated_document_frequencies(4.0, 1e-6, 1.0, 5e-7, terms_per_user=2, buckets=4)
    claimed = composed_epsilon([event_from_json(params.spend().event)], params.delta)
    audited = epsilon_lower_bound(*_document_frequency_scores(params, 40000), params.delta)
    assert 0.3 < audited <= claimed
    under_noised = dataclasses.replace(params, noise_multiplier=params.noise_multiplier / 4)
    assert epsilon_lower_bound(*_document_frequency_scores(under_noised, 15000), params.delta) > claimed
