"""DP k-means: the Beam stage (DirectRunner) vs. the same algorithm in one numpy process vs. sklearn.

    .venv/bin/python bench/bench_dp_kmeans.py --sizes 10000 100000 --clusters 50 200 1000
    .venv/bin/python bench/bench_dp_kmeans.py --sizes 1000000 --clusters 50 1000 --sklearn_max_n_k 50000000

Data: a planted mixture on the 384-d unit sphere (k random directions, each point = its topic's
direction + isotropic Gaussian noise, re-normalised; cosine to its topic ~0.75), written once to a
.npy file that both implementations read through the same memory map, in blocks of 512 rows
(the embedding stage's block size), so the Beam run pays the same I/O as the numpy run.

For each (n, k), the three fits run interleaved in one process (Beam, numpy, sklearn, Beam, numpy,
...) for --repeats rounds so that load from other processes on a shared machine hits all of them;
the figure per method is the median wall time. Quality, from one fit each:
 - objective: the k-means objective of the fit's assignment in the 384-d embedding space (sum of
   squared distances to the mean of each assigned cluster, divided by n), so the private fits (which
   cluster in 32 dimensions) and sklearn are scored the same way;
 - ARI and NMI of the assignment against the planted labels.
The Beam stage and the numpy reference use the same noise seed, so they must release the same
centres; the script checks this. It also reports how many elements the Beam stage processed: blocks,
not vectors, and the runner's fixed cost: the same pipeline run on one block, which is what the
Beam time would be if n were tiny (pipeline translation, a bundle per stage, T+1 barriers).
"""

from __future__ import annotations

import argparse
import functools
import os
import platform
import shlex
import statistics
import sys
import tempfile
import time

import numpy as np

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)
import apache_beam as beam  # noqa: E402
from apache_beam.metrics.metric import MetricsFilter  # noqa: E402
from apache_beam.options.pipeline_options import PipelineOptions  # noqa: E402

from bench.bench_pipeline import cpu_model  # noqa: E402
from core.records import ConversationBlock  # noqa: E402
from dp_ops import dp_kmeans as dk  # noqa: E402
from transforms.dp_kmeans import DPKMeans  # noqa: E402

DIM = 384
BLOCK = 512  # the job's --embedding_block_size default

# Noise calibration (a PLD accountant search, several seconds) depends on the parameters only and
# runs before any data is read, in the job as here; it is cached so the timings compare the
# clustering itself, and its cost is printed once per k.
dk.calibrate = functools.lru_cache(maxsize=None)(dk.calibrate)


def planted_mixture(path: str, n: int, k: int, seed: int, noise: float = 0.045) -> np.ndarray:
    """Writes n unit vectors to `path` (.npy) in chunks and returns their planted labels."""
    rng = np.random.default_rng(seed)
    topics = dk.normalise_rows(rng.standard_normal((k, DIM)).astype(np.float32))
    # Heavy-ish topic sizes (Zipf-like), like real topics; every topic gets at least one point.
    popularity = 1.0 / np.arange(1, k + 1) ** 0.7
    labels = rng.choice(k, size=n, p=popularity / popularity.sum())
    labels[:k] = np.arange(k)[: min(k, n)]
    out = np.lib.format.open_memmap(path, mode="w+", dtype=np.float32, shape=(n, DIM))
    for start in range(0, n, 65536):
        stop = min(n, start + 65536)
        chunk = topics[labels[start:stop]] + rng.normal(0, noise, size=(stop - start, DIM)).astype(np.float32)
        out[start:stop] = dk.normalise_rows(chunk)
    out.flush()
    del out
    return labels


class _Embeddings:
    """The .npy file, memory-mapped once per worker process like the numpy run's single np.load
    (re-opening it for every block cost the Beam run ~1 s per 1M points of header parsing, which is
    not the stage's cost). Pickles as its path, so workers open their own map."""

    def __init__(self, path: str):
        self.path = path
        self._map = None

    def __getstate__(self):
        return {"path": self.path, "_map": None}

    def rows(self, start: int, stop: int) -> np.ndarray:
        if self._map is None:
            self._map = np.load(self.path, mmap_mode="r")
        return self._map[start:stop]


def _read_block(start: int, embeddings_file: _Embeddings, n: int) -> ConversationBlock:
    embeddings = embeddings_file.rows(start, min(n, start + BLOCK))
    rows = len(embeddings)
    return ConversationBlock(conversation_ids=[""] * rows, user_ids=[""] * rows,
                             weights=np.ones(rows, dtype=np.float64), facets=[""] * rows,
                             embeddings=np.ascontiguousarray(embeddings))


def run_beam(path: str, n: int, params: dk.DPKMeansParams, noise_seed: int, runner_args: list[str]):
    """Centres from the Beam DPKMeans stage, the stage's summed processing time and element count."""
    # The runner pickles DoFns, so the centres come back through a file, not a closure.
    out_path = path + ".centres.npy"
    if os.path.exists(out_path):
        os.remove(out_path)

    pipeline = beam.Pipeline(options=PipelineOptions(runner_args))
    stage = DPKMeans(params, None, noise_seed=noise_seed)
    clustering = (pipeline
                  | "block starts" >> beam.Create(list(range(0, n, BLOCK)))
                  | "read blocks" >> beam.Map(_read_block, _Embeddings(path), n)
                  | "dp k-means" >> stage)
    _ = clustering.centres | "keep" >> beam.Map(lambda centres, p: np.save(p, centres), out_path)
    result = pipeline.run()
    result.wait_until_finish()
    metrics = result.metrics().query(MetricsFilter())["counters"]

    def counter(namespace, name):
        return sum(c.committed or 0 for c in metrics if c.key.metric.namespace == namespace
                   and c.key.metric.name == name)

    return (np.load(out_path) if os.path.exists(out_path) else None, counter("stage_micros", "dp_kmeans") / 1e6,
            counter("stage_elements", "dp_kmeans"))


def run_numpy(path: str, params: dk.DPKMeansParams, noise_seed: int) -> np.ndarray:
    embeddings = np.load(path, mmap_mode="r")
    embeddings = np.ascontiguousarray(embeddings)
    centres, _ = dk.fit_dp_kmeans(embeddings, np.ones(len(embeddings)), params, noise_seed=noise_seed)
    return centres


def run_sklearn(path: str, k: int, seed: int, max_iter: int):
    from sklearn.cluster import KMeans
    embeddings = np.ascontiguousarray(np.load(path, mmap_mode="r"))
    return KMeans(n_clusters=k, n_init=1, max_iter=max_iter, random_state=seed).fit(embeddings).labels_


def private_labels(path: str, params: dk.DPKMeansParams, centres: np.ndarray) -> np.ndarray:
    embeddings = np.load(path, mmap_mode="r")
    projection = dk.clustering_basis(params)
    return np.concatenate([
        dk.assign_nearest(dk.project_points(np.ascontiguousarray(embeddings[s:s + 65536]), projection), centres)
        for s in range(0, len(embeddings), 65536)])


def objective(path: str, labels: np.ndarray, k: int) -> float:
    """Mean squared distance to the assigned cluster's mean, in the embedding space."""
    embeddings = np.load(path, mmap_mode="r")
    sums = np.zeros((k, DIM))
    counts = np.bincount(labels, minlength=k).astype(np.float64)
    for s in range(0, len(labels), 65536):
        chunk = np.asarray(embeddings[s:s + 65536], dtype=np.float64)
        np.add.at(sums, labels[s:s + 65536], chunk)
    means = sums / np.maximum(counts, 1)[:, None]
    # sum ||x - mu||^2 = sum ||x||^2 - sum_c n_c ||mu_c||^2 (rows are unit vectors)
    return float((len(labels) - (counts * (means ** 2).sum(axis=1)).sum()) / len(labels))


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=[10000, 100000])
    parser.add_argument("--clusters", type=int, nargs="+", default=[50, 200, 1000])
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--epsilon", type=float, default=4.0)
    parser.add_argument("--delta", type=float, default=5e-7)
    parser.add_argument("--iterations", type=int, default=3)
    parser.add_argument("--sklearn_max_iter", type=int, default=20)
    parser.add_argument("--sklearn_max_n_k", type=float, default=2e7,
                        help="skip sklearn when n * k exceeds this (its cost is O(n k d) per iteration)")
    parser.add_argument("--sklearn_repeats", action="store_true",
                        help="time sklearn in every round (default: the first round only; it is the slowest)")
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--workdir", default=None)
    parser.add_argument("--runner_args", default="", help="Beam flags in one string, e.g. "
                        "'--direct_num_workers=2 --direct_running_mode=multi_processing'")
    args = parser.parse_args(argv)
    from sklearn.metrics import adjusted_rand_score, normalized_mutual_info_score

    workdir = args.workdir or tempfile.mkdtemp(prefix="urania-bench-kmeans-")
    os.makedirs(workdir, exist_ok=True)
    print(f"machine: {os.cpu_count()} cores, {cpu_model()}, python {platform.python_version()}, "
          f"numpy {np.__version__}, beam {beam.__version__}")
    print(f"command: bench/bench_dp_kmeans.py {' '.join(argv if argv is not None else sys.argv[1:])}")
    print(f"DP: epsilon={args.epsilon} delta={args.delta} iterations={args.iterations} projection_dim=32; "
          f"sklearn: n_init=1 max_iter={args.sklearn_max_iter} (k-means++ init); median of {args.repeats} "
          f"interleaved rounds ({'all' if args.sklearn_repeats else 'the first'} for sklearn)")
    header = (f"{'n':>9}{'k':>6}  {'method':<8}{'seconds':>9}{'vs numpy':>9}{'vec/s':>12}"
              f"{'objective':>11}{'ARI':>7}{'NMI':>7}  notes")
    print(header, flush=True)
    for n in args.sizes:
        for k in args.clusters:
            path = os.path.join(workdir, f"mixture_{n}_{k}.npy")
            planted = planted_mixture(path, n, k, args.seed)
            params = dk.DPKMeansParams(num_clusters=k, epsilon=args.epsilon, delta=args.delta, input_dim=DIM,
                                       iterations=args.iterations, seed=args.seed)
            started = time.perf_counter()
            dk.calibrate(params)
            calibration_seconds = time.perf_counter() - started
            do_sklearn = n * k <= args.sklearn_max_n_k
            times = {"beam": [], "beam_one_block": [], "numpy": [], "sklearn": []}
            outputs = {}
            for _ in range(args.repeats):
                started = time.perf_counter()
                outputs["beam"] = run_beam(path, n, params, args.seed, shlex.split(args.runner_args))
                times["beam"].append(time.perf_counter() - started)
                # The same pipeline on the first block only: the runner's fixed cost (pipeline
                # translation, one bundle per stage, T+1 side-input barriers), independent of n.
                started = time.perf_counter()
                run_beam(path, min(n, BLOCK), params, args.seed, shlex.split(args.runner_args))
                times["beam_one_block"].append(time.perf_counter() - started)
                started = time.perf_counter()
                outputs["numpy"] = run_numpy(path, params, args.seed)
                times["numpy"].append(time.perf_counter() - started)
                if do_sklearn and (not times["sklearn"] or args.sklearn_repeats):
                    started = time.perf_counter()
                    outputs["sklearn"] = run_sklearn(path, k, args.seed, args.sklearn_max_iter)
                    times["sklearn"].append(time.perf_counter() - started)
            beam_centres, stage_seconds, stage_elements = outputs["beam"]
            same = beam_centres is not None and np.allclose(beam_centres, outputs["numpy"], atol=1e-5)
            labels = {"beam": private_labels(path, params, beam_centres),
                      "numpy": private_labels(path, params, outputs["numpy"])}
            if do_sklearn:
                labels["sklearn"] = outputs["sklearn"]
            numpy_seconds = statistics.median(times["numpy"])
            for method in ("beam", "numpy", "sklearn"):
                if method not in labels:
                    print(f"{n:>9,}{k:>6}  {method:<8}{'skipped':>9}  (n*k={n * k:.0e} > --sklearn_max_n_k: "
                          f"O(n k d) per iteration)", flush=True)
                    continue
                seconds = statistics.median(times[method])
                notes = ""
                if method == "beam":
                    fixed = statistics.median(times["beam_one_block"])
                    notes = (f"fixed runner cost (one block) {fixed:.2f} s, the rest {seconds - fixed:.2f} s = "
                             f"{(seconds - fixed) / numpy_seconds:.2f}x numpy; "
                             f"same centres as numpy: {same}; {stage_elements:,} elements through the stage's "
                             f"functions for {-(-n // BLOCK):,} input blocks; "
                             f"stage processing time {stage_seconds:.1f} s; noise calibration "
                             f"{calibration_seconds:.1f} s (not in either time)")
                print(f"{n:>9,}{k:>6}  {method:<8}{seconds:>9.2f}{seconds / numpy_seconds:>8.2f}x"
                      f"{n / seconds:>12,.0f}{objective(path, labels[method], k):>11.4f}"
                      f"{adjusted_rand_score(planted, labels[method]):>7.3f}"
                      f"{normalized_mutual_info_score(planted, labels[method]):>7.3f}  {notes}", flush=True)
            os.remove(path)


if __name__ == "__main__":
    main()
