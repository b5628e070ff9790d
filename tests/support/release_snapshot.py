"""The release snapshot: one small job whose release must stay byte-for-byte what it was when the
snapshot was written, so that a refactor (moving stages, rewiring the pipeline) is shown not to change
what the job releases. The in-process job of the evaluation (eval.urania_inprocess.run_urania), whose
reports every figure of docs/evaluation.md comes from, is held to its snapshot the same way
(IN_PROCESS_CONFIGURATIONS: its report.json; the page is the job's renderer, held by the job's snapshots).

The job's own Gaussian releases (DP k-means, the keyword votes) are reproducible through --noise_seed;
PipelineDP's (the cluster sizes, count votes) draw from PyDP's secure sampler, which takes no seed, and
PipelineDP samples contributions down to their bounds at random (numpy's global generator in-process,
Beam's Sample.FixedSizePerKey on Beam); so the snapshot run replaces that noise by zero and those
samples by a fixed one (`pipeline_dp_reproducible`).
Nothing else is patched: the embedding model, clustering, labelling and the report are the production code.

The comparison (`differences`) is byte-for-byte except for decimal numbers, which may differ by one unit
in their last printed digit or by a relative 1e-9: numpy's vectorised maths (the accountant's PLDs, the
k-means centres) differs in the last bits between CPUs with and without AVX-512, and CI does not always
run on the CPU that wrote the snapshot. A refactor that changes the release changes more than that.

A change that is meant to change the release rewrites the snapshot and says so in its commit:
    python -m tests.support.release_snapshot --write
"""

from __future__ import annotations

import argparse
import contextlib
import hashlib
import os
import re
import sys
import tempfile
import types
from collections.abc import Iterator
from unittest import mock

import pipeline_dp
import pipeline_dp.dp_computations
import pipeline_dp.pipeline_backend
import pipeline_dp.sampling_utils

SNAPSHOT_DIR = os.path.join(os.path.dirname(os.path.dirname(__file__)), "data", "release_snapshot")
RELEASED_FILES = ("report.json", "report.html")
JOB_FLAGS = ("--seed", "5", "--noise_seed", "3", "--num_clusters", "12")
# Each configuration is a snapshot folder: the defaults, and one that takes the keyword step's other
# branches (both modes, Poisson sampling, count votes through PipelineDP, candidates, exemplars).
CONFIGURATIONS = {
    "defaults": (),
    "keyword_variants": ("--keyword_mode", "both", "--samples_per_cluster", "40", "--keyword_votes", "count",
                         "--keyword_candidates", "30", "--exemplars_per_topic", "2"),
}
SAMPLE = {"num_conversations": 1500, "num_users": 900, "seed": 11, "malformed": 2}
# run_urania's options (eval.urania_inprocess.UraniaConfig), seed and noise seed: the job's defaults with
# weighted votes, and count votes with candidates and exemplars; the non-private baseline.
IN_PROCESS_CONFIGURATIONS = {
    "in_process_defaults": ({"num_clusters": 12}, 5, 3),
    "in_process_variants": ({"num_clusters": 12, "keyword_votes": "count", "keyword_candidates": 30,
                             "exemplars_per_topic": 2, "min_cluster_size": 10}, 5, 3),
    "in_process_non_private": ({"num_clusters": 12, "epsilon": float("inf")}, 5, None),
}


class _NoNoise:
    """A PyDP mechanism whose add_noise returns its input; everything else (std, parameters) is the
    real mechanism's, so calibration and the report's noise figures are unchanged."""

    def __init__(self, mechanism):
        self._mechanism = mechanism

    def add_noise(self, value, *_):
        return value

    def __getattr__(self, name):
        return getattr(self._mechanism, name)


class _NoNoiseFactory:
    """Stands in for a PyDP mechanism class: its constructor and create_* methods give _NoNoise."""

    def __init__(self, mechanism_class):
        self._class = mechanism_class

    def __call__(self, *args, **kwargs):
        return _NoNoise(self._class(*args, **kwargs))

    def __getattr__(self, name):
        attribute = getattr(self._class, name)
        if name.startswith("create"):
            return lambda *args, **kwargs: _NoNoise(attribute(*args, **kwargs))
        return attribute


def fixed_sample(items: list, size: int) -> list:
    """A stand-in for PipelineDP's uniform sample without replacement: the `size` items first by a hash
    of their repr, whatever order they arrive in."""
    if len(items) <= size:
        return items
    return sorted(items, key=lambda item: hashlib.sha256(repr(item).encode()).digest())[:size]


def _local_fixed_per_key(backend, col, n: int, stage_name: str | None = None):
    return pipeline_dp.pipeline_backend.ReiterableLazyIterable(
        (key, fixed_sample(list(values), n)) for key, values in backend.group_by_key(col))


def _beam_fixed_per_key(backend, col, n: int, stage_name: str):
    import apache_beam as beam
    return col | backend._ulg.unique(stage_name) >> (
        beam.GroupByKey() | beam.MapTuple(lambda key, values: (key, fixed_sample(list(values), n))))


@contextlib.contextmanager
def pipeline_dp_reproducible() -> Iterator[None]:
    """Inside this block PipelineDP adds no noise and samples contributions by `fixed_sample`: its
    cross-partition sample, and its per-key samples on the local and the Beam backend (in this process:
    in-process runner only)."""
    real = pipeline_dp.dp_computations.dp_mechanisms
    shim = types.SimpleNamespace(**{name: getattr(real, name) for name in dir(real) if not name.startswith("__")})
    shim.LaplaceMechanism = _NoNoiseFactory(real.LaplaceMechanism)
    shim.GaussianMechanism = _NoNoiseFactory(real.GaussianMechanism)
    with mock.patch.object(pipeline_dp.dp_computations, "dp_mechanisms", shim), \
            mock.patch.object(pipeline_dp.sampling_utils, "choose_from_list_without_replacement", fixed_sample), \
            mock.patch.object(pipeline_dp.pipeline_backend.LocalBackend, "sample_fixed_per_key", _local_fixed_per_key), \
            mock.patch.object(pipeline_dp.BeamBackend, "sample_fixed_per_key", _beam_fixed_per_key):
        yield


_NUMBER = re.compile(r"-?\d+(?:\.(\d+))?(?:[eE][-+]?\d+)?")


def _same_number(expected: re.Match, actual: re.Match) -> bool:
    if expected.group() == actual.group():
        return True
    if expected.group(1) is None or actual.group(1) is None:  # integers are exact
        return False
    a, b = float(expected.group()), float(actual.group())
    last_digit = 10.0 ** -max(len(expected.group(1)), len(actual.group(1)))
    exponent = re.search(r"[eE]([-+]?\d+)$", expected.group())
    if exponent:
        last_digit *= 10.0 ** int(exponent.group(1))
    return abs(a - b) <= max(1e-9 * max(abs(a), abs(b)), 1.000001 * last_digit)


def differences(expected: str, actual: str, context: int = 60) -> list[str]:
    """Where `actual` differs from `expected` beyond the last-digit tolerance (the module's docstring):
    the text around each difference, at most 10."""
    found = []
    expected_numbers, actual_numbers = list(_NUMBER.finditer(expected)), list(_NUMBER.finditer(actual))
    skeletons = [_NUMBER.sub("#", expected), _NUMBER.sub("#", actual)]
    if skeletons[0] != skeletons[1] or len(expected_numbers) != len(actual_numbers):
        position = next((i for i, (a, b) in enumerate(zip(*skeletons)) if a != b), min(map(len, skeletons)))
        found.append(f"text differs: ...{skeletons[0][max(0, position - context):position + context]!r} vs "
                     f"...{skeletons[1][max(0, position - context):position + context]!r}")
    for e, a in zip(expected_numbers, actual_numbers):
        if not _same_number(e, a):
            found.append(f"{e.group()} vs {a.group()} at ...{expected[max(0, e.start() - context):e.start()]!r}")
    return found[:10]


def _normalised(text: str, run_id: str) -> str:
    # The run id and the run's date are the only things that change from run to run by design.
    text = text.replace(run_id, "RUN_ID")
    return re.sub(r"\d{4}-\d{2}-\d{2}, run RUN_ID", "DATE, run RUN_ID", text)


def released_files(folder: str, configuration: str) -> dict[str, str]:
    """Runs the snapshot job of `configuration` in `folder` and returns its released files, normalised."""
    import json

    from beam_jobs.insights import run
    from synthetic.sample import write_sample

    data = os.path.join(folder, "conversations.jsonl")
    write_sample(data, SAMPLE["num_conversations"], SAMPLE["num_users"], seed=SAMPLE["seed"],
                 malformed=SAMPLE["malformed"])
    if configuration in IN_PROCESS_CONFIGURATIONS:
        return _in_process_files(data, *IN_PROCESS_CONFIGURATIONS[configuration])
    output = os.path.join(folder, "out")
    with pipeline_dp_reproducible():
        assert run(["--input", data, "--output", output, *JOB_FLAGS, *CONFIGURATIONS[configuration]]) == 0
    release = os.path.join(output, "release")
    run_id = json.load(open(os.path.join(release, "report.json")))["config"]["run_id"]
    return {name: _normalised(open(os.path.join(release, name), encoding="utf-8").read(), run_id)
            for name in RELEASED_FILES}


def _in_process_files(data: str, options: dict, seed: int, noise_seed: int | None) -> dict[str, str]:
    import json

    from eval.data import embed_cached, load_dataset
    from eval.urania_inprocess import UraniaConfig, run_urania

    dataset = load_dataset(data)
    with pipeline_dp_reproducible():
        report = run_urania(dataset.conversation_ids, dataset.user_ids, dataset.facets,
                            embed_cached(dataset.facets, cache_dir=None), UraniaConfig(**options), seed=seed,
                            noise_seed=noise_seed)
    report.pop("_private")
    return {"report.json": json.dumps(report, indent=2)}


def snapshot(configuration: str) -> dict[str, str]:
    """The stored files of `configuration`, by name."""
    folder = os.path.join(SNAPSHOT_DIR, configuration)
    return {name: open(os.path.join(folder, name), encoding="utf-8").read() for name in sorted(os.listdir(folder))}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--write", action="store_true", help="rewrite tests/data/release_snapshot/ (else compare)")
    args = parser.parse_args(argv)
    changed = []
    for configuration in [*CONFIGURATIONS, *IN_PROCESS_CONFIGURATIONS]:
        with tempfile.TemporaryDirectory() as folder:
            files = released_files(folder, configuration)
        if not args.write:
            changed += [f"{configuration}/{name}" for name, text in files.items()
                        if differences(snapshot(configuration)[name], text)]
            continue
        os.makedirs(os.path.join(SNAPSHOT_DIR, configuration), exist_ok=True)
        for name, text in files.items():
            with open(os.path.join(SNAPSHOT_DIR, configuration, name), "w", encoding="utf-8") as handle:
                handle.write(text)
        print(f"wrote {configuration}: {', '.join(files)}")
    if not args.write:
        print("release differs from the snapshot: " + ", ".join(changed) if changed else "releases match the snapshot")
    return 1 if changed else 0


if __name__ == "__main__":
    sys.exit(main())
