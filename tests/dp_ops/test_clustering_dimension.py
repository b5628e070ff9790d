"""The DP k-means dimension: the DP user count, the dimension rule, the bases and the Beam stage."""

import apache_beam as beam
import numpy as np
import pytest
from apache_beam.testing.util import assert_that, equal_to

from config.clustering import ClusteringParams
from config.embedding import Encoder
from config.insights import InsightsOptions, insights_params
from config.privacy import DEFAULT_EPSILON_WEIGHTS, PrivacyParams
from core.records import ConversationBlock
from dp_ops import dp_kmeans as dk
from dp_ops.dp_events import composed_epsilon
from dp_ops.dp_user_count import UserCountNoise, noisy_user_count
from dp_ops.joint_calibration import calibrate_jointly
from dp_ops.run_budget import RunBudget
from tests.conftest import checked, local_pipeline
from tests.support.job_requests import job_requests
from transforms import dp_kmeans as dp_kmeans_transform
from transforms.dp_kmeans import DPKMeans
from transforms.dp_user_count import DPUserCount


@pytest.mark.parametrize("noise_seed", [None, 5])
def test_the_user_count_has_the_calibrated_gaussian_noise(noise_seed):
    # Production (PyDP) and test (numpy) noise: 3,000 draws, relative SE of the sd ~1.3%.
    sigma = 12.0
    draws = np.array([noisy_user_count(400.0, sigma, None if noise_seed is None else noise_seed + i)
                      for i in range(3000)])
    assert draws.mean() == pytest.approx(400.0, abs=4 * sigma / np.sqrt(3000))
    assert draws.std() == pytest.approx(sigma, rel=0.06)
    with pytest.raises(ValueError, match="sigma"):
        noisy_user_count(400.0, 0.0, None)


def _requests(*flags):
    """The job's calibration requests for the topic stages alone, 3 k-means iterations, C = 5."""
    return job_requests("--kmeans_iterations", "3", "--max_conversations_per_user", "5", *flags)


def test_the_user_count_is_a_registered_stage_and_the_run_still_meets_its_epsilon():
    weights = PrivacyParams().stage_weights()
    assert weights["user_count"] == 0.1
    # Left out of --epsilon_weights, the user count gets its default share.
    assert PrivacyParams(epsilon_weights="clustering:4,cluster_sizes:1,keyword_histograms:2").stage_weights() == weights
    joint = calibrate_jointly(7.0, 1e-6, _requests())
    assert list(joint.stages) == ["user_count", "clustering", "cluster_sizes", "keyword_histograms"]
    count = UserCountNoise(joint.stages["user_count"].noise_multiplier, 1e-6)
    assert count.sigma == pytest.approx(joint.stages["user_count"].noise_std_parameter)
    # The share is small: the count is noisy (tens of users) and costs clustering ~1% of its noise.
    assert 10 < count.sigma < 60
    without = calibrate_jointly(7.0, 1e-6, _requests("--expected_users", "1000"))
    ratio = joint.stages["clustering"].noise_multiplier / without.stages["clustering"].noise_multiplier
    assert 1.0 < ratio < 1.03
    budget = RunBudget(1e-6)
    stage = DPUserCount(count, budget)
    assert [s.stage for s in budget.entries] == ["user_count"] and stage.registered
    # The composition of every stage's event, the user count included, is the run's --epsilon.
    events = [count.event()] + [joint.stages[s].event() for s in ("clustering", "cluster_sizes", "keyword_histograms")]
    assert 6.99 < composed_epsilon(events, 1e-6) <= 7.0


def test_only_the_automatic_dimension_without_a_hint_counts_users():
    assert ClusteringParams().counts_users
    assert not ClusteringParams(expected_users=3000).counts_users
    assert not ClusteringParams(projection_dim=64).counts_users
    params = insights_params(InsightsOptions(
        ["--input", "x", "--output", "y", "--projection_dim", "auto"]))
    assert params.clustering.projection_dim == dk.AUTO_DIMENSION
    with pytest.raises(ValueError, match="projection_dim"):
        ClusteringParams(projection_dim=-3)
    with pytest.raises(ValueError, match="expected_users"):
        ClusteringParams(expected_users=0)
    assert "user_count:0.1" in DEFAULT_EPSILON_WEIGHTS


def test_the_dimension_grows_with_the_users_and_is_clipped():
    dims = [dk.auto_dimension(users, 30, 3.0, 384) for users in range(0, 200_000, 500)]
    assert all(a <= b for a, b in zip(dims, dims[1:]))
    assert dims[0] == dk.MIN_AUTO_DIMENSION and dims[-1] == 384
    assert dk.auto_dimension(-50, 30, 3.0, 384) == dk.MIN_AUTO_DIMENSION  # a noisy count may be negative
    assert dk.auto_dimension(10**9, 30, 3.0, 100) == 100
    # More noise, or more clusters sharing the users: fewer dimensions.
    assert dk.auto_dimension(5_000, 30, 6.0, 384) < dk.auto_dimension(5_000, 30, 3.0, 384) < 384
    assert dk.auto_dimension(5_000, 60, 3.0, 384) < dk.auto_dimension(5_000, 30, 3.0, 384)


def test_the_automatic_dimension_needs_a_dp_or_public_user_count():
    params = dk.DPKMeansParams(num_clusters=4, epsilon=1.0, delta=1e-6, input_dim=64, projection_dim=dk.AUTO_DIMENSION)
    assert params.dim == 64
    with pytest.raises(ValueError, match="user count"):
        dk.active_dimension(params, 2.0, None)
    with pytest.raises(ValueError, match="DP user count or expected_users"):
        DPKMeans(params, None)
    fixed = dk.DPKMeansParams(num_clusters=4, epsilon=1.0, delta=1e-6, input_dim=64, projection_dim=16)
    assert dk.active_dimension(fixed, 2.0, None) == 16


@pytest.mark.parametrize("basis", dk.BASES)
def test_bases_are_orthonormal_and_deterministic(basis):
    rng = np.random.default_rng(3)
    public = rng.standard_normal((50, 24)) * np.linspace(3, 0.1, 24)
    params = dk.DPKMeansParams(num_clusters=3, epsilon=1.0, delta=1e-6, input_dim=24,
                               projection_dim=dk.AUTO_DIMENSION, basis=basis, seed=7)
    first = dk.clustering_basis(params, public)
    assert first.shape == (24, 24)
    np.testing.assert_allclose(first.T @ first, np.eye(24), atol=1e-5)
    np.testing.assert_array_equal(first, dk.clustering_basis(params, public.copy()))
    truncated = dk.clustering_basis(
        dk.DPKMeansParams(num_clusters=3, epsilon=1.0, delta=1e-6, input_dim=24, projection_dim=8, basis=basis, seed=7),
        public)
    np.testing.assert_array_equal(truncated, first[:, :8])


def test_the_pca_basis_orders_the_public_vectors_directions_by_variance():
    rng = np.random.default_rng(4)
    rotation, _ = np.linalg.qr(rng.standard_normal((16, 16)))
    public = (rng.standard_normal((2000, 16)) * 0.5 ** np.arange(16)) @ rotation.T
    basis = dk.principal_basis(public)
    # The k-th direction is the k-th axis of the rotated ellipsoid (up to sign).
    assert np.all(np.abs(np.sum(basis[:, :4] * rotation[:, :4], axis=0)) > 0.99)
    variances = ((public - public.mean(axis=0)) @ basis).var(axis=0)
    assert np.all(np.diff(variances) <= 1e-9)
    with pytest.raises(ValueError, match="public"):
        dk.clustering_basis(dk.DPKMeansParams(num_clusters=2, epsilon=1.0, delta=1e-6, input_dim=16, basis="pca"))


def test_the_pca_basis_embeds_the_bundled_keyword_set_only(monkeypatch):
    from backends.keyword_set import load_keyword_set
    seen = {}

    def fake_embed(model, texts, *args, **kwargs):
        seen["model"], seen["texts"] = model, list(texts)
        return np.zeros((len(texts), 4), dtype=np.float32)

    monkeypatch.setattr(dp_kmeans_transform.embedding, "embed_public_texts", fake_embed)
    dp_kmeans_transform.basis_keyword_vectors(Encoder("some-model"))
    assert seen == {"model": "some-model", "texts": list(load_keyword_set(None).keywords)}


def test_noise_touches_only_the_kept_coordinates():
    params = dk.DPKMeansParams(num_clusters=3, epsilon=1.0, delta=1e-6, input_dim=12, projection_dim=dk.AUTO_DIMENSION)
    rng = np.random.default_rng(0)
    points = dk.project_points(dk.normalise_rows(rng.standard_normal((90, 12))), None, active_dim=5)
    assert np.all(points[:, 5:] == 0) and np.allclose(np.linalg.norm(points, axis=1), 1)
    centres = dk.fit_centres(points, np.ones(90), params, sigma=3.0, noise_seed=1, active_dim=5)
    assert np.all(centres[:, 5:] == 0) and np.allclose(np.linalg.norm(centres, axis=1), 1)


def _blocks(points: np.ndarray, weights: np.ndarray, users: list[str], block_size: int):
    return [ConversationBlock([f"c{i}" for i in range(s, min(s + block_size, len(points)))], users[s:s + block_size],
                              weights[s:s + block_size], [""] * len(points[s:s + block_size]), points[s:s + block_size])
            for s in range(0, len(points), block_size)]


@pytest.mark.parametrize("hint", [None, 280])
def test_the_beam_stage_clusters_at_the_dimension_the_in_process_fit_chooses(hint):
    # 300 users with 1-3 conversations each: weights 1/n sum to 300.
    rng = np.random.default_rng(2)
    users = [f"u{i}" for i in range(300) for _ in range(1 + i % 3)]
    counts = {u: users.count(u) for u in set(users)}
    weights = np.array([1 / counts[u] for u in users])
    points = dk.normalise_rows(rng.standard_normal((len(users), 48))).astype(np.float32)
    # Noise for which ~300 users choose a dimension between the floor and the input's 48.
    target = (dk.MIN_AUTO_DIMENSION + 48) / 2
    params = dk.DPKMeansParams(num_clusters=3, epsilon=None, delta=1e-6, input_dim=48, seed=4,
                               noise_multiplier=dk.DIMENSION_SIGNAL_RATIO * 100 / np.sqrt(target),
                               projection_dim=dk.AUTO_DIMENSION)
    noise = UserCountNoise(2.0, 1e-6)
    sigma = dk.calibrate(params).sigma
    users_seen = noisy_user_count(300.0, noise.sigma, 6) if hint is None else hint
    active = dk.active_dimension(params, sigma, users_seen)
    assert dk.MIN_AUTO_DIMENSION <= active < 48
    expected, _ = dk.fit_dp_kmeans(points, weights, params, noise_seed=6, active_dim=active)
    stage = DPKMeans(params, RunBudget(1e-6), noise_seed=6,
                     user_count=None if hint else DPUserCount(noise, None, noise_seed=6), expected_users=hint)
    with local_pipeline() as pipeline:
        output = pipeline | beam.Create(_blocks(points, weights, users, 100)) | stage
        assert_that(output.active_dim, equal_to([active]), label="dim")
        assert_that(output.centres, checked(lambda centres: np.testing.assert_allclose(centres[0], expected, atol=1e-5)),
                    label="centres")
