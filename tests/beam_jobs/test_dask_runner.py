"""The whole job on Beam's DaskRunner over a local multi-process dask.distributed cluster."""

import glob
import json
import os

import pytest

from beam_jobs.insights import run
from synthetic.sample import write_sample

pytestmark = pytest.mark.e2e

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
    write_sample(data, 300, 100, seed=9, malformed=9)
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


def _counted(path: str):
    def count(value):
        with open(path, "a") as calls:  # a file: the workers are other processes
            calls.write(f"{value}\n")
        return value
    return count


def test_a_bag_read_by_several_transforms_is_computed_once(tmp_path):
    """A chain of side inputs over one shared bag (as the k-means steps over the clustering points):
    each side input is computed on its own, and without persisting the shared bag each computation
    re-ran everything upstream of it (the embedding, in the job)."""
    import apache_beam as beam
    from apache_beam.options.pipeline_options import PipelineOptions
    from dask.distributed import LocalCluster

    calls, out = str(tmp_path / "calls"), str(tmp_path / "out")
    with LocalCluster(n_workers=2, threads_per_worker=1, processes=True, dashboard_address=None) as cluster:
        options = PipelineOptions(["--runner", "beam_jobs.dask_runner.PersistingDaskRunner",
                                   "--dask_client_address", cluster.scheduler_address])
        with beam.Pipeline(options=options) as pipeline:
            points = pipeline | beam.Create(range(20)) | "count" >> beam.Map(_counted(calls))
            first = points | "first" >> beam.CombineGlobally(sum)
            second = (points | "shift" >> beam.Map(lambda x, s: x + s, beam.pvalue.AsSingleton(first))
                      | "second" >> beam.CombineGlobally(sum))
            (points | "last" >> beam.Map(lambda x, s: x * s, beam.pvalue.AsSingleton(second))
             | beam.Map(lambda x: open(out, "a").write(f"{x}\n")))
    assert sorted(int(line) for line in open(calls)) == list(range(20))
    second_sum = sum(range(20)) + 20 * sum(range(20))
    assert sorted(int(line) for line in open(out)) == [x * second_sum for x in range(20)]


def test_a_group_by_key_spreads_its_groups_over_the_partitions():
    """The job starts from a Create of a few file ranges (one partition); its GroupByKeys must spread
    the groups, or one worker runs the whole job."""
    from dask import bag as db

    from beam_jobs.dask_runner import _SpreadingGroupByKey

    pairs = db.from_sequence([(k % 5, k) for k in range(40)], npartitions=1)
    grouped = _SpreadingGroupByKey(None, {}, partitions=4).apply(pairs)  # Beam's translation ignores `applied`
    assert grouped.npartitions == 4
    assert {key: sorted(values) for key, values in grouped.compute(scheduler="sync")} == {
        key: list(range(key, 40, 5)) for key in range(5)}
