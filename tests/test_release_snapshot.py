"""The job's release is unchanged by refactoring: same input, seed and noise, the same bytes
(tests/release_snapshot.py says how the snapshot is made and when to rewrite it)."""

import difflib
import json

import pytest

from dp_ops.gaussian_noise import add_gaussian_noise
from tests.release_snapshot import CONFIGURATIONS, pipeline_dp_noise_off, released_files, snapshot

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module", params=list(CONFIGURATIONS))
def release(request, tmp_path_factory):
    return request.param, released_files(str(tmp_path_factory.mktemp("snapshot")), request.param)


@pytest.mark.parametrize("name", ["report.json", "report.html"])
def test_release_matches_the_snapshot(release, name):
    configuration, files = release
    expected = snapshot(configuration)[name]
    if files[name] != expected:
        diff = difflib.unified_diff(expected.splitlines(), files[name].splitlines(), "snapshot", "this run",
                                    lineterm="", n=1)
        pytest.fail(f"{name} differs from tests/data/release_snapshot/{configuration}/{name}:\n" + "\n".join(list(diff)[:60]))


def test_the_snapshot_is_a_real_release(release):
    report = json.loads(release[1]["report.json"])
    assert len(report["topics"]) >= 5 and report["privacy"]["epsilon"] > 0
    assert report["config"]["noise_seed_fixed"] is True


def test_the_hook_removes_pipeline_dp_noise_and_only_inside_its_block():
    noisy = add_gaussian_noise([100.0] * 50, sigma=5.0, noise_seed=None, release=0)
    assert len(set(noisy.tolist())) == 50
    with pipeline_dp_noise_off():
        assert add_gaussian_noise([100.0] * 50, sigma=5.0, noise_seed=None, release=0).tolist() == [100.0] * 50
    assert len(set(add_gaussian_noise([100.0] * 50, sigma=5.0, noise_seed=None, release=0).tolist())) == 50
