"""The job's release is unchanged by refactoring: same input, seed and noise, the same bytes
(tests/support/release_snapshot.py says how the snapshot is made and when to rewrite it)."""

import json
import math

import apache_beam as beam
import pipeline_dp
import pipeline_dp.sampling_utils
import pytest
from apache_beam.testing.util import assert_that, equal_to

from dp_ops.gaussian_noise import add_gaussian_noise
from tests.conftest import local_pipeline
from tests.support.release_snapshot import (
    CONFIGURATIONS,
    IN_PROCESS_CONFIGURATIONS,
    differences,
    pipeline_dp_reproducible,
    released_files,
    snapshot,
)

pytestmark = pytest.mark.e2e


@pytest.fixture(scope="module", params=[*CONFIGURATIONS, *IN_PROCESS_CONFIGURATIONS])
def release(request, tmp_path_factory):
    return request.param, released_files(str(tmp_path_factory.mktemp("snapshot")), request.param)


def test_release_matches_the_snapshot(release):
    configuration, files = release
    expected = snapshot(configuration)
    assert set(files) == set(expected)
    found = {name: differences(expected[name], files[name]) for name in sorted(files)}
    if any(found.values()):
        pytest.fail("\n".join(f"{name} differs from tests/data/release_snapshot/{configuration}/{name} "
                               f"(snapshot vs this run):\n" + "\n".join(problems)
                               for name, problems in found.items() if problems))


def test_the_snapshot_is_a_real_release(release):
    configuration, files = release
    report = json.loads(files["report.json"])
    assert len(report["topics"]) >= 5
    if configuration in IN_PROCESS_CONFIGURATIONS:
        assert report["config"]["pipeline"] == "urania (in-process evaluation run)"
        private = math.isfinite(IN_PROCESS_CONFIGURATIONS[configuration][0].get("epsilon", 1.0))
        assert report["privacy"]["differentially_private"] is private
    else:
        assert report["privacy"]["epsilon"] > 0 and report["config"]["noise_seed_fixed"] is True


def test_the_hook_removes_pipeline_dp_noise_and_only_inside_its_block():
    noisy = add_gaussian_noise([100.0] * 50, sigma=5.0, noise_seed=None, release=0)
    assert len(set(noisy.tolist())) == 50
    with pipeline_dp_reproducible():
        assert add_gaussian_noise([100.0] * 50, sigma=5.0, noise_seed=None, release=0).tolist() == [100.0] * 50
    assert len(set(add_gaussian_noise([100.0] * 50, sigma=5.0, noise_seed=None, release=0).tolist())) == 50


def test_the_hook_fixes_pipeline_dps_contribution_sample_whatever_the_order():
    pairs = [((cluster, keyword), (1,)) for cluster in range(4) for keyword in ("fever", "cold and flu", "tax")]
    sample = pipeline_dp.sampling_utils.choose_from_list_without_replacement
    assert len({tuple(sample(pairs, 3)) for _ in range(20)}) > 1  # PipelineDP's own sample is random
    with pipeline_dp_reproducible():
        sample = pipeline_dp.sampling_utils.choose_from_list_without_replacement
        chosen = sample(pairs, 3)
        assert len(chosen) == 3 and set(chosen) <= set(pairs)
        assert set(sample(pairs[::-1], 3)) == set(chosen)
        assert sample(pairs[:2], 3) == pairs[:2]


@pytest.mark.parametrize("expected, actual, same", [
    ('{"sigma": 29.274179807537944}', '{"sigma": 29.274179807489}', True),  # last bits of the accountant
    ('"centre": [-0.03786, -0.0]', '"centre": [-0.03787, 0.0]', True),  # one unit in the last printed digit
    ('"centre": [-0.03786]', '"centre": [-0.03788]', False),
    ('"size": 123', '"size": 124', False),  # integers are exact
    ('"sigma": 29.27', '"sigma": 29.28', True),
    ('"sigma": 29.27', '"sigma": 29.3', False),
    ('"keywords": ["fever", "cold and flu"]', '"keywords": ["cold and flu", "fever"]', False),
    ('"epsilon": 1.5e-06', '"epsilon": 1.7e-06', False),
    ('"epsilon": 1.5e-06', '"epsilon": 1.5000000000001e-06', True),
])
def test_differences_tolerate_only_the_last_digit_of_decimals(expected, actual, same):
    assert (differences(expected, actual) == []) is same


def test_the_hook_fixes_pipeline_dps_per_key_samples_on_both_backends():
    pairs = [(("u1", "p"), value) for value in range(12)] + [(("u2", "p"), 99)]
    backend = pipeline_dp.LocalBackend()
    draws = {tuple(map(repr, backend.sample_fixed_per_key(pairs, 3))) for _ in range(20)}
    assert len(draws) > 1  # PipelineDP's own sample is random
    with pipeline_dp_reproducible():
        local = dict(backend.sample_fixed_per_key(pairs[::-1], 3))
        assert local == dict(backend.sample_fixed_per_key(pairs, 3))
        assert len(local[("u1", "p")]) == 3 and local[("u2", "p")] == [99]
        with local_pipeline() as pipeline:
            sampled = pipeline_dp.BeamBackend().sample_fixed_per_key(pipeline | beam.Create(pairs), 3, "sample")
            assert_that(sampled | beam.MapTuple(lambda key, values: (key, sorted(values))),
                        equal_to([(key, sorted(values)) for key, values in local.items()]))
