import dataclasses

import numpy as np
import pytest

from dp_ops import dp_kmeans as dk


def _mixture(modes: int, n: int, dim: int, spread: float, seed: int):
    rng = np.random.default_rng(seed)
    centres = dk.normalise_rows(rng.standard_normal((modes, dim)))
    labels = rng.integers(0, modes, n)
    points = dk.normalise_rows(centres[labels] + rng.standard_normal((n, dim)) * spread)
    return centres, labels, points.astype(np.float32)


def test_finds_every_mode_of_a_well_separated_mixture():
    modes, labels, points = _mixture(modes=10, n=4000, dim=64, spread=0.06, seed=1)
    params = dk.DPKMeansParams(num_clusters=20, epsilon=4.0, delta=1e-6, input_dim=64, projection_dim=0, seed=2)
    centres, _ = dk.fit_dp_kmeans(points, np.ones(len(points)), params, noise_seed=3)
    # Every true mode has a released centre within ~25 degrees of it.
    assert (modes @ centres.T).max(axis=1).min() > 0.9
    assigned = dk.assign_nearest(points, centres)
    purity = sum(np.bincount(labels[assigned == j]).max() for j in set(assigned)) / len(labels)
    assert purity > 0.95


def test_finds_modes_after_random_projection():
    modes, labels, points = _mixture(modes=8, n=4000, dim=384, spread=0.03, seed=4)
    params = dk.DPKMeansParams(num_clusters=16, epsilon=4.0, delta=1e-6, input_dim=384, projection_dim=32, seed=5)
    centres, _ = dk.fit_dp_kmeans(points, np.ones(len(points)), params, noise_seed=6)
    projected_modes = dk.project_points(modes, dk.clustering_basis(params))
    assert (projected_modes @ centres.T).max(axis=1).min() > 0.9


def test_a_users_total_contribution_to_the_sums_has_l2_norm_at_most_one():
    rng = np.random.default_rng(0)
    points = dk.normalise_rows(rng.standard_normal((5, 16)))
    # Worst case: all of the user's C=5 points identical and in one cluster.
    worst = np.repeat(points[:1], 5, axis=0)
    for user_points in (points, worst):
        weights = np.full(len(user_points), 1 / len(user_points))
        labels = rng.integers(0, 3, len(user_points))
        contribution = dk.weighted_sums(user_points, weights, labels, 3)
        assert np.linalg.norm(contribution) <= 1 + 1e-9


def test_projected_points_never_exceed_unit_norm():
    rng = np.random.default_rng(1)
    params = dk.DPKMeansParams(num_clusters=4, epsilon=1, delta=1e-6, input_dim=100, projection_dim=10)
    projected = dk.project_points(rng.standard_normal((500, 100)) * 5, dk.clustering_basis(params))
    assert np.linalg.norm(projected, axis=1).max() <= 1 + 1e-6


@pytest.mark.parametrize("noise_seed", [None, 11])
def test_noise_has_the_calibrated_standard_deviation(noise_seed):
    # Both noise sources (PyDP's secure sampler in production, numpy when seeded for tests).
    sigma = 2.5
    noisy = dk.add_gaussian_noise(np.zeros((200, 100)), sigma, noise_seed, release=0)
    assert noisy.mean() == pytest.approx(0, abs=0.05)
    assert noisy.std() == pytest.approx(sigma, rel=0.03)  # 20,000 draws: relative SE 0.5%


def test_spend_reports_what_the_accountant_computed():
    params = dk.DPKMeansParams(num_clusters=5, epsilon=3.0, delta=1e-6, input_dim=8, iterations=4)
    calibration = dk.calibrate(params)
    spend = calibration.spend(params)
    assert spend.epsilon <= 3.0 and spend.epsilon > 2.9
    assert spend.delta == 1e-6 and spend.sensitivity == 1.0
    assert spend.noise["releases"] == 5 and spend.noise["sigma"] == calibration.sigma


def test_new_centres_are_the_directions_of_the_noisy_sums():
    noisy = dk.update_centres(np.zeros((3, 4)) + np.array([[1, 0, 0, 0], [0, 0, 0, 0], [0, 2, 0, 0]]))
    assert np.allclose(noisy[0], [1, 0, 0, 0]) and np.allclose(noisy[1], 0)


@pytest.mark.parametrize("kwargs", [dict(num_clusters=0), dict(epsilon=0), dict(delta=0), dict(iterations=0),
                                    dict(projection_dim=-2), dict(basis="learned"), dict(lsh_bits=2, num_clusters=10),
                                    dict(noise_multiplier=2.0), dict(epsilon=None),
                                    dict(epsilon=None, noise_multiplier=0.0), dict(warm_prior=-0.5),
                                    dict(warm_prior=float("inf"))])
def test_bad_parameters_fail_at_construction(kwargs):
    base = dict(num_clusters=5, epsilon=1.0, delta=1e-6, input_dim=8)
    with pytest.raises(ValueError):
        dk.DPKMeansParams(**{**base, **kwargs})


def test_the_schedule_is_lsh_seeding_then_one_lloyd_step_per_iteration():
    params = dk.DPKMeansParams(num_clusters=6, epsilon=2.0, delta=1e-6, input_dim=24, projection_dim=8,
                               iterations=3, lsh_bits=5)
    schedule = dk.release_schedule(params)
    assert [r.number for r in schedule] == [0, 1, 2, 3] and len(schedule) == params.releases
    assert [r.seeding for r in schedule] == [True, False, False, False]
    assert [r.shape for r in schedule] == [(32, 8), (6, 8), (6, 8), (6, 8)]


def test_partial_sums_of_parts_add_up_to_the_release_on_all_points():
    # What the Beam transform relies on: per-element sums, added up, release what one process does.
    rng = np.random.default_rng(7)
    points = dk.normalise_rows(rng.standard_normal((300, 8))).astype(np.float32)
    weights = rng.choice([1.0, 0.5], size=300)
    params = dk.DPKMeansParams(num_clusters=4, epsilon=2.0, delta=1e-6, input_dim=8, projection_dim=0, seed=1)
    sigma = dk.calibrate(params).sigma
    centres = None
    for release in dk.release_schedule(params):
        whole = release.sums(points, weights, centres)
        parts = sum(release.sums(points[s:s + 70], weights[s:s + 70], centres) for s in range(0, 300, 70))
        np.testing.assert_allclose(parts, whole, atol=1e-9)
        centres = release.centres(parts, sigma, noise_seed=2)
    np.testing.assert_allclose(centres, dk.fit_centres(points, weights, params, sigma, noise_seed=2), atol=1e-6)


def test_each_release_draws_its_own_noise_and_zero_sigma_draws_none():
    params = dk.DPKMeansParams(num_clusters=3, epsilon=2.0, delta=1e-6, input_dim=8, projection_dim=0)
    first, second = dk.release_schedule(params)[1:3]
    sums = np.eye(3, 8) * 5.0
    assert not np.allclose(first.centres(sums, 1.0, noise_seed=4), second.centres(sums, 1.0, noise_seed=4))
    np.testing.assert_allclose(first.centres(sums, 0.0, noise_seed=None), np.eye(3, 8))
    with pytest.raises(ValueError, match="sigma"):
        first.centres(sums, -1.0, noise_seed=4)


def test_a_lloyd_step_leans_each_warm_seeded_cluster_toward_its_earlier_centre():
    params = dk.DPKMeansParams(num_clusters=4, epsilon=2.0, delta=1e-6, input_dim=8, projection_dim=0,
                               warm_prior=0.7)
    step = dk.release_schedule(params)[1]
    rng = np.random.default_rng(3)
    sums = rng.standard_normal((4, 8)) * 6
    # Two earlier centres seeded clusters 0 and 1; a theme anchor seeded cluster 2 (not an earlier centre).
    seeds = dk.normalise_rows(rng.standard_normal((3, 8)))
    noisy = dk.add_gaussian_noise(sums, 1.5, 4, step.number)
    expected = dk.normalise_rows(noisy)
    expected[:2] = dk.normalise_rows(dk.normalise_rows(noisy[:2]) + 0.7 * seeds[:2])
    released = step.centres(sums, 1.5, noise_seed=4, warm_centres=seeds, warm_rows=2)
    np.testing.assert_allclose(released, expected, atol=1e-6)
    assert not np.allclose(released[:2], dk.normalise_rows(noisy[:2]), atol=1e-3)
    # No prior: without noise (the exact baseline), with warm_prior 0, or with no warm rows.
    np.testing.assert_allclose(step.centres(sums, 0.0, None, warm_centres=seeds, warm_rows=2),
                               dk.normalise_rows(sums), atol=1e-6)
    unleaned = dk.release_schedule(dataclasses.replace(params, warm_prior=0.0))[1]
    np.testing.assert_allclose(unleaned.centres(sums, 1.5, 4, warm_centres=seeds, warm_rows=2),
                               dk.normalise_rows(noisy), atol=1e-6)
    np.testing.assert_allclose(step.centres(sums, 1.5, 4, warm_centres=seeds, warm_rows=0),
                               dk.normalise_rows(noisy), atol=1e-6)


def _steady_topic_errors(warm_prior: float, nights: int = 40) -> float:
    """Mean cosine between a small steady topic's released centre and its true direction over
    `nights` warm-started nights (each night's centres seed the next), at a nightly plan's noise."""
    modes = dk.normalise_rows(np.random.default_rng(0).standard_normal((3, 32)))
    params = dk.DPKMeansParams(num_clusters=3, epsilon=None, noise_multiplier=2.5, delta=1e-6, input_dim=32,
                               projection_dim=0, iterations=1, warm_prior=warm_prior)
    warm, cosines = modes, []
    for night in range(nights):
        rng = np.random.default_rng(100 + night)
        labels = np.repeat(np.arange(3), 25)  # 25 users a topic, one conversation each
        points = dk.normalise_rows(modes[labels] + rng.standard_normal((75, 32)) * 0.12).astype(np.float32)
        centres = dk.fit_centres(points, np.ones(75), params, 2.5, noise_seed=night, warm_centres=warm)
        cosines.append(float(np.mean(np.sum(centres * modes, axis=1))))
        warm = centres
    return float(np.mean(cosines))


def test_the_prior_keeps_a_steady_topics_centre_nearer_its_direction():
    # Statistical: 40 nights x 3 topics; each night's direction has cosine ~0.8 to the truth at this
    # noise, and averaging over nights lifts it. A prior applied to the wrong rows, or pointing away,
    # would lower it.
    without, with_prior = _steady_topic_errors(0.0), _steady_topic_errors(dk.DEFAULT_WARM_PRIOR)
    assert without < 0.9
    assert with_prior > without + 0.04
