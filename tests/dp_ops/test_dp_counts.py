"""Statistical tests of the PipelineDP stages: noise scale, spent budget, user-level bounds."""


import apache_beam as beam
import numpy as np
import pytest
from apache_beam.testing.util import assert_that, equal_to

from dp_ops.dp_counts import DPCountParams, noise_upper_quantile, release_floor
from tests.conftest import check_dp_stage, local_pipeline
from transforms.dp_cluster_sizes import KeepLargeClusters, cluster_size_params
from transforms.dp_count import DPCountPerPartition
from transforms.keyword_histograms import keyword_count_params


def _noisy_counts(pairs, params, partitions, check):
    """Counts the pairs in a pipeline; check(the noisy counts as a dict, the stage's spend) runs as its assert_that."""
    check_dp_stage(DPCountPerPartition(params, partitions, "test", None), pairs, check)


def test_cluster_size_noise_is_laplace_with_scale_c_over_epsilon():
    # 2000 partitions, each with 10 contributions from distinct users.
    params = cluster_size_params(epsilon=1.0, max_conversations_per_user=5)
    pairs = [(f"u{p}-{i}", p) for p in range(2000) for i in range(10)]

    def laplace(counts, spend):
        errors = np.array([counts[p] - 10 for p in range(2000)])
        assert spend.noise["kind"] == "laplace" and spend.noise["scale"] == pytest.approx(5.0)
        assert errors.std() == pytest.approx(spend.noise["std"], rel=0.12)  # SE of a Laplace std ~ 3%
        assert abs(errors.mean()) < 0.6
        assert spend.epsilon == pytest.approx(1.0) and spend.delta == 0 and spend.sensitivity == 5

    _noisy_counts(pairs, params, list(range(2000)), laplace)


def test_keyword_noise_is_gaussian_with_the_reported_sigma():
    params = keyword_count_params(epsilon=2.0, delta=5e-7, noise="gaussian", max_partitions_per_user=10)
    partitions = [(c, f"kw{k}") for c in range(20) for k in range(100)]
    pairs = [(f"user-{c}-{k}", (c, f"kw{k}")) for c, k in ((c, k) for c in range(20) for k in range(100))]

    def gaussian(counts, spend):
        errors = np.array([counts[p] - 1 for p in partitions])
        assert spend.noise["kind"] == "gaussian"
        assert spend.sensitivity == pytest.approx(np.sqrt(10))
        assert errors.std() == pytest.approx(spend.noise["sigma"], rel=0.08)
        assert spend.epsilon == pytest.approx(2.0) and spend.delta == pytest.approx(5e-7)

    _noisy_counts(pairs, params, partitions, gaussian)


def test_one_user_repeating_a_partition_moves_it_by_at_most_the_bound():
    # A single user with 500 contributions to one cluster counts at most C=5 there (epsilon large so
    # the noise is negligible).
    params = cluster_size_params(epsilon=200.0, max_conversations_per_user=5)
    pairs = [("spammer", 0)] * 500 + [(f"u{i}", 1) for i in range(30)]

    def bounded(counts, _):
        assert counts[0] == pytest.approx(5, abs=1)
        assert counts[1] == pytest.approx(30, abs=1)
        assert counts[2] == pytest.approx(0, abs=1)  # public partition without data is still released

    _noisy_counts(pairs, params, [0, 1, 2], bounded)


def test_keyword_histogram_counts_a_user_once_per_pair():
    params = keyword_count_params(epsilon=500.0, delta=1e-6, noise="gaussian", max_partitions_per_user=10)
    pairs = [("fan", (0, "python"))] * 50 + [(f"u{i}", (0, "rust")) for i in range(7)]

    def once_per_pair(counts, _):
        assert counts[(0, "python")] == pytest.approx(1, abs=0.5)
        assert counts[(0, "rust")] == pytest.approx(7, abs=0.5)

    _noisy_counts(pairs, params, [(0, "python"), (0, "rust")], once_per_pair)


def test_clusters_below_tau_are_dropped():
    with local_pipeline() as pipeline:
        sizes = pipeline | beam.Create([(0, 24.9), (1, 25.0), (2, 300.0), (3, -4.0)])
        assert_that(sizes | KeepLargeClusters(25), equal_to([(1, 25.0), (2, 300.0)]), label="kept")


def test_release_floor_keeps_pure_noise_out_of_almost_every_group():
    rng = np.random.default_rng(0)
    sigma = 7.0
    floor = release_floor({"kind": "gaussian", "sigma": sigma}, partitions_per_group=300)
    pure_noise = rng.normal(0, sigma, size=(2000, 300))
    false_per_group = (pure_noise >= floor).sum(axis=1).mean()
    assert false_per_group <= 0.08
    laplace_floor = release_floor({"kind": "laplace", "scale": 5.0}, partitions_per_group=300)
    assert (rng.laplace(0, 5.0, size=(2000, 300)) >= laplace_floor).sum(axis=1).mean() <= 0.08


def test_noise_quantile_matches_the_distribution():
    assert noise_upper_quantile({"kind": "gaussian", "sigma": 1.0}, 0.025) == pytest.approx(1.96, abs=0.01)
    assert noise_upper_quantile({"kind": "laplace", "scale": 1.0}, 0.05) == pytest.approx(np.log(10), abs=1e-9)


@pytest.mark.parametrize("kwargs", [
    dict(noise="uniform", max_contributions=1),
    dict(noise="gaussian", delta=0, max_contributions=1),
    dict(noise="laplace", delta=1e-6, max_contributions=1),
    dict(noise="laplace"),
    dict(noise="laplace", max_contributions=1, max_partitions_contributed=1, max_contributions_per_partition=1),
    dict(noise="laplace", max_contributions=0),
    dict(epsilon=0, noise="laplace", max_contributions=1),
])
def test_bad_count_parameters_fail_at_construction(kwargs):
    with pytest.raises(ValueError):
        DPCountParams(**{"stage": "s", "epsilon": 1.0, **kwargs})
