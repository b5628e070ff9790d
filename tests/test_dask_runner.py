"""The whole job on Beam's DaskRunner over a local multi-process dask.distributed cluster."""

import glob
import json
import os

import pytest

from beam_jobs.generate_sample import write_sample
from beam_jobs.insights import run

pytestmark = pytest.mark.slow

COMMON = ["--num_clusters", "8", "--min_cluster_size", "5", "--seed", "3", "--noise_seed", "4"]


def _assignments(output: str) -> dict:
    rows = [json.loads(line) for path in glob.glob(os.path.join(output, "private", "assignments", "*"))
            for line in open(path)]
    return {row["conversation_id"]: row["cluster_id"] for row in rows}


def _stats(output: str) -> dict:
    stats = json.load(open(os.path.join(output, "private", "run_stats.json")))
    return {key: stats[key] for key in ("read", "valid", "dead_lettered", "dead_letter_reasons", "users",
                                        "conversations_after_bounding")}


def test_dask_multi_process_run_matches_the_direct_runner(tmp_path):
    from dask.distributed import LocalCluster

    data = str(tmp_path / "day.jsonl")
    write_sample(data, 600, 200, seed=9, malformed=9)
    direct = str(tmp_path / "direct")
    assert run(["--input", data, "--output", direct, *COMMON]) == 0

    with LocalCluster(n_workers=2, threads_per_worker=1, processes=True, dashboard_address=None) as cluster:
        on_dask = str(tmp_path / "dask")
        assert run(["--input", data, "--output", on_dask, *COMMON, "--runner",
                    "beam_jobs.dask_runner.PersistingDaskRunner", "--dask_client_address",
                    cluster.scheduler_address]) == 0

    # Deterministic given the seeds: validation, bounding, embeddings, DP k-means (seeded noise),
    # and so every assignment. PipelineDP's noise is never seeded, so sizes and keywords may differ.
    assert _stats(on_dask) == _stats(direct)
    assert _assignments(on_dask) == _assignments(direct)
    assert len(_assignments(direct)) == _stats(direct)["conversations_after_bounding"]
    assert len(glob.glob(os.path.join(on_dask, "private", "dead_letter", "*.jsonl"))) >= 1
    report = json.load(open(os.path.join(on_dask, "release", "report.json")))
    assert report["topics"] and 6.99 < report["privacy"]["epsilon"] <= 7.0
