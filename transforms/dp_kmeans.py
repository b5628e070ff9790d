"""DPKMeans: ConversationBlocks -> DP cluster centres (the only release), on Beam.

Distributed: each block contributes partial per-cluster sums (a small k x dim array), the partials
are summed by a global combine, and only the summed array meets the noise on one worker; no step
gathers embeddings. The mechanism and its accounting are in dp_ops/dp_kmeans.py; this transform
computes exactly the releases of `fit_dp_kmeans`.
"""

from __future__ import annotations

import dataclasses

import apache_beam as beam
import numpy as np
import threadpoolctl

from core.records import ConversationBlock
from dp_ops import dp_kmeans as mechanism
from transforms.stage_timing import timed


class _SumArraysFn(beam.CombineFn):
    """Element-wise sum of equally shaped float64 arrays; zeros for an empty input."""

    def __init__(self, shape: tuple[int, int]):
        self._shape = shape

    def create_accumulator(self):
        return np.zeros(self._shape, dtype=np.float64)

    def add_input(self, accumulator, partial):
        accumulator += partial
        return accumulator

    def merge_accumulators(self, accumulators):
        accumulators = iter(accumulators)
        total = np.array(next(accumulators), dtype=np.float64)
        for accumulator in accumulators:
            total += accumulator
        return total

    def extract_output(self, accumulator):
        return accumulator


def project_block(block: ConversationBlock, projection: np.ndarray | None) -> ConversationBlock:
    # One BLAS thread: a block is a few hundred rows, too small to gain from threads, and a worker
    # already runs one process or bundle per core. With the BLAS default (a thread per core) each
    # small product waits for busy cores: 16-20x slower on the 2-vCPU bench machine when anything
    # else runs (bench/bench_dp_kmeans.py, README "Performance"). Same arithmetic, same points.
    with _one_blas_thread():
        points = mechanism.project_points(block.embeddings, projection)
    return dataclasses.replace(block, points=points)


_blas_controller = None


def _one_blas_thread():
    # The controller is made once per process: threadpool_limits() alone scans every loaded library
    # on each call (~5 ms, as slow as the problem it solves).
    global _blas_controller
    if _blas_controller is None:
        _blas_controller = threadpoolctl.ThreadpoolController()
    return _blas_controller.limit(limits=1, user_api="blas")


def points_and_weights(block: ConversationBlock) -> tuple[np.ndarray, np.ndarray]:
    return block.points, block.weights


def concatenate(pairs: list[tuple[np.ndarray, np.ndarray]]) -> tuple[np.ndarray, np.ndarray]:
    return np.concatenate([p for p, _ in pairs]), np.concatenate([w for _, w in pairs])


# Rows per element of the clustering passes. The T+1 passes re-read their input, so it carries only
# (points, weights) -- 32 floats and a weight per conversation, not the 384-d embedding and the
# texts -- in a few large arrays, so per-element costs (serialisation, Python calls) are paid rarely.
CLUSTERING_ROWS_PER_ELEMENT = 16384


class DPKMeans(beam.PTransform):
    """Input: ConversationBlocks. Output: a singleton PCollection of centres (k x dim, unit rows).

    `self.projected_blocks` (the input with `points` filled in) is set by expand() for the
    assignment stage; `self.calibration` and `self.spend` are known at construction time, since the
    noise is calibrated from the parameters alone.
    """

    def __init__(self, params: mechanism.DPKMeansParams, noise_seed: int | None = None,
                 rows_per_element: int = CLUSTERING_ROWS_PER_ELEMENT):
        super().__init__()
        self.rows_per_element = rows_per_element
        self.params = params
        self.noise_seed = noise_seed
        self.calibration = mechanism.calibrate(params)
        self.spend = self.calibration.spend(params)
        self.projected_blocks = None

    def expand(self, blocks):
        params, sigma, noise_seed = self.params, self.calibration.sigma, self.noise_seed
        projection = mechanism.projection_matrix(params)
        hyperplanes = mechanism.lsh_hyperplanes(params)
        buckets = 1 << params.seeding_bits
        projected = blocks | "project to clustering space" >> beam.Map(timed("dp_kmeans", project_block), projection)
        self.projected_blocks = projected
        points = (
            projected
            | "keep points and weights" >> beam.Map(points_and_weights)
            | "gather into large arrays" >> beam.BatchElements(
                min_batch_size=self.rows_per_element, max_batch_size=self.rows_per_element,
                element_size_fn=lambda pair: len(pair[1]))
            | "concatenate" >> beam.Map(timed("dp_kmeans", concatenate))
        )
        # One zero-row element guarantees every pass's combine an input, so the combines can skip
        # CombineGlobally's default-value injection (two extra runner stages per release: ~0.6 s of a
        # 10k-point run on the DirectRunner, bench/bench_dp_kmeans.py) and an empty input still
        # releases pure-noise centres.
        no_points = blocks.pipeline | "a zero-row element" >> beam.Create(
            [(np.zeros((0, params.dim), dtype=np.float32), np.zeros(0, dtype=np.float64))])
        points = (points, no_points) | "with the zero-row element" >> beam.Flatten()

        centres = (
            points
            | "seeding: sum points per LSH bucket" >> beam.Map(timed("dp_kmeans",
                lambda pw: mechanism.weighted_sums(pw[0], pw[1], mechanism.lsh_buckets(pw[0], hyperplanes),
                                                   buckets)))
            | "seeding: total bucket sums" >> beam.CombineGlobally(
                _SumArraysFn((buckets, params.dim))).without_defaults()
            | "seeding: noisy bucket sums to centres" >> beam.Map(
                lambda sums: mechanism.seed_centres(mechanism.add_gaussian_noise(sums, sigma, noise_seed, 0),
                                                    params.num_clusters))
        )
        for step in range(1, params.releases):
            centres = (
                points
                | f"step {step}: sum points per nearest centre" >> beam.Map(timed("dp_kmeans",
                    lambda pw, c: mechanism.weighted_sums(pw[0], pw[1], mechanism.assign_nearest(pw[0], c),
                                                          params.num_clusters)),
                    c=beam.pvalue.AsSingleton(centres))
                | f"step {step}: total cluster sums" >> beam.CombineGlobally(
                    _SumArraysFn((params.num_clusters, params.dim))).without_defaults()
                | f"step {step}: noisy sums to centres" >> beam.Map(
                    lambda sums, s=step: mechanism.update_centres(
                        mechanism.add_gaussian_noise(sums, sigma, noise_seed, s)))
            )
        return centres
