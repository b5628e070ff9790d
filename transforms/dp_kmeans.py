"""DPKMeans: ConversationBlocks -> DP cluster centres (the only release), on Beam.

Distributed: each block contributes partial per-cluster sums (a small k x dim array), the partials
are summed by a global combine, and only the summed array meets the noise on one worker; no step
gathers embeddings. The mechanism, its release schedule and its accounting are in dp_ops/dp_kmeans.py;
this transform runs the same `release_schedule` as `fit_dp_kmeans`, so it releases the same centres.
"""

from __future__ import annotations

import dataclasses

import apache_beam as beam
import numpy as np
import threadpoolctl

from core.records import ConversationBlock
from dp_ops import dp_kmeans as mechanism
from dp_ops.run_budget import RunBudget
from transforms.dp_stage import DPStage
from transforms.stage_timing import timed
from transforms.sum_arrays import SumArraysFn


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


@dataclasses.dataclass(frozen=True)
class DPKMeansOutput:
    """The released centres (a singleton: k x dim, unit rows) and the input blocks with `points`
    filled in (private: for the assignment stage, never released)."""

    centres: beam.PCollection
    projected_blocks: beam.PCollection


class DPKMeans(DPStage):
    """Input: ConversationBlocks. Output: DPKMeansOutput. `self.calibration` and `self.spend` are
    known, and the spend registered with `budget`, at construction: the noise depends on the
    parameters alone."""

    def __init__(self, params: mechanism.DPKMeansParams, budget: RunBudget | None, noise_seed: int | None = None,
                 rows_per_element: int = CLUSTERING_ROWS_PER_ELEMENT):
        super().__init__(budget)
        self.rows_per_element = rows_per_element
        self.params = params
        self.noise_seed = noise_seed
        self.calibration = mechanism.calibrate(params)
        self._spends(self.calibration.spend(params))

    def expand(self, blocks) -> DPKMeansOutput:
        params, sigma, noise_seed = self.params, self.calibration.sigma, self.noise_seed
        projection = mechanism.projection_matrix(params)
        projected = blocks | "project to clustering space" >> beam.Map(timed("dp_kmeans", project_block), projection)
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

        centres = None
        for release in mechanism.release_schedule(params):
            # Partial sums per element, one global total, and the noise on the one worker holding it.
            previous = {} if centres is None else {"centres": beam.pvalue.AsSingleton(centres)}
            centres = (
                points
                | f"{release.label}: partial sums" >> beam.MapTuple(timed("dp_kmeans", release.sums), **previous)
                | f"{release.label}: total sums" >> beam.CombineGlobally(SumArraysFn(release.shape)).without_defaults()
                | f"{release.label}: noisy sums to centres" >> beam.Map(release.centres, sigma, noise_seed)
            )
        return DPKMeansOutput(centres=centres, projected_blocks=projected)
