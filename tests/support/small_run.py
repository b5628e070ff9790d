"""One small finished run of the insights job, shared by the whole pytest run (tests/conftest.py's `small_run`
fixture): for the tests that read what a finished run wrote and need no options of their own. Its flags are
what those tests need together: the themes stage (tests/dp_ops/test_theme_histogram.py), progress lines every 0.5 s
over several embedding blocks (tests/beam_jobs/test_progress.py) and seeded noise, so that the in-process evaluation run
can be compared with it (tests/eval/test_eval_pipelines.py). A test that needs other flags runs its own job."""

from __future__ import annotations

import contextlib
import dataclasses
import io
import os

CONVERSATIONS, USERS, SAMPLE_SEED = 400, 150, 3
SEED, NOISE_SEED, NUM_CLUSTERS, MIN_CLUSTER_SIZE = 1, 6, 6, 5


@dataclasses.dataclass(frozen=True)
class SmallRun:
    data: str  # the input JSONL
    output: str  # the job's --output
    stderr: str  # what the job printed to stderr (its progress lines)


def run_small_job(folder: str) -> SmallRun:
    import pytest

    from beam_jobs import progress
    from beam_jobs.insights import run
    from synthetic.sample import write_sample

    data, output = os.path.join(folder, "conversations.jsonl"), os.path.join(folder, "out")
    write_sample(data, CONVERSATIONS, USERS, seed=SAMPLE_SEED)
    stderr = io.StringIO()
    with pytest.MonkeyPatch.context() as patch, contextlib.redirect_stderr(stderr):
        patch.setattr(progress, "DEFAULT_INTERVAL_SECONDS", 0.5)
        code = run(["--input", data, "--output", output, "--seed", str(SEED), "--noise_seed", str(NOISE_SEED),
                    "--num_clusters", str(NUM_CLUSTERS), "--min_cluster_size", str(MIN_CLUSTER_SIZE),
                    "--embedding_block_size", "64", "--themes", "--progress", "on"])
    assert code == 0, stderr.getvalue()[-3000:]
    return SmallRun(data, output, stderr.getvalue())
