"""DPKMeans: ConversationBlocks -> DP cluster centres (the only release), on Beam.

Distributed: each block contributes partial per-cluster sums (a small k x dim array), the partials
are summed by a global combine, and only the summed array meets the noise on one worker; no step
gathers embeddings. The mechanism, its release schedule and its accounting are in dp_ops/dp_kmeans.py;
this transform runs the same `release_schedule` as `fit_dp_kmeans`, so it releases the same centres.

The shapes are fixed when the pipeline is built; the dimension the points keep (`active_dim`) may be
known only at run time (--projection_dim auto: from the DP user count), so it is a singleton side
input (ClusteringDimension), and so is the basis (the pca basis embeds the public keyword set on a
worker). Projection, assignment and the centroid keywords all read these same two singletons.
"""

from __future__ import annotations

import dataclasses
import functools

import apache_beam as beam
import numpy as np

from backends import embedding
from backends.keyword_categories import KeywordCategories
from backends.keyword_set import load_keyword_set
from config.embedding import Encoder
from core.records import ConversationBlock
from dp_ops import dp_kmeans as mechanism
from dp_ops.run_budget import RunBudget
from dp_ops.theme_histogram import ThemeRule, theme_anchor, theme_columns
from transforms.dp_stage import DPStage
from transforms.stage_timing import timed
from transforms.sum_arrays import SumArraysFn
from transforms.vectors import keyword_vectors, project_block


def basis_keyword_vectors(encoder: Encoder) -> np.ndarray:
    """The public vectors of the pca basis: the BUNDLED keyword set's embeddings by the run's encoder (never a
    run's own --keyword_set, which may be built from data), so the basis is fixed before any data is read.
    Each keyword is embedded once per process (encode_public): a worker, or the evaluation's hundreds of runs."""
    return embedding.encode_public(encoder, load_keyword_set(None).keywords)


def make_basis(_, params: mechanism.DPKMeansParams, encoder: Encoder | None) -> np.ndarray | None:
    # The pca basis does not depend on the seed: one eigendecomposition per process, whatever the runs' seeds.
    return _basis(dataclasses.replace(params, seed=0) if params.basis == "pca" else params, encoder)


@functools.lru_cache(maxsize=8)
def _basis(params: mechanism.DPKMeansParams, encoder: Encoder | None) -> np.ndarray | None:
    return mechanism.clustering_basis(params, basis_keyword_vectors(encoder) if params.basis == "pca" else None)


class ClusteringDimension(beam.PTransform):
    """Input: ConversationBlocks. Output: a singleton int, the dimension DP k-means keeps
    (dp_kmeans.active_dimension): fixed, or from the public `expected_users`, or from the DP count
    of `user_count` (a DPUserCount stage, registered with the run's budget)."""

    def __init__(self, params: mechanism.DPKMeansParams, sigma: float, user_count: DPStage | None = None,
                 expected_users: int | None = None):
        super().__init__()
        if params.automatic and (user_count is None) == (expected_users is None):
            raise ValueError("projection_dim auto needs either a DP user count or expected_users")
        self._params, self._sigma = params, sigma
        self._user_count, self._expected_users = user_count, expected_users

    def local(self, blocks: list[ConversationBlock]) -> int:
        """In-process (transforms/engine.py)."""
        users = (self._user_count.local(blocks) if self._params.automatic and self._expected_users is None
                 else self._expected_users)
        return mechanism.active_dimension(self._params, self._sigma, users)

    def expand(self, blocks):
        params, sigma = self._params, self._sigma
        if not params.automatic or self._expected_users is not None:
            return blocks.pipeline | "public dimension" >> beam.Create(
                [mechanism.active_dimension(params, sigma, self._expected_users)])
        return (blocks | "DP user count" >> self._user_count
                | "dimension from the DP count" >> beam.Map(lambda users: mechanism.active_dimension(params, sigma, users)))


def points_and_weights(block: ConversationBlock) -> tuple[np.ndarray, np.ndarray]:
    return block.points, block.weights


def without_points(block: ConversationBlock) -> ConversationBlock:
    """The block for the assignment stage, which projects it again (AssignClusters says why)."""
    return dataclasses.replace(block, points=None)


def concatenate(pairs: list[tuple[np.ndarray, np.ndarray]]) -> tuple[np.ndarray, np.ndarray]:
    return np.concatenate([p for p, _ in pairs]), np.concatenate([w for _, w in pairs])


def _no_points(params: mechanism.DPKMeansParams) -> tuple[np.ndarray, np.ndarray]:
    return np.zeros((0, params.dim), dtype=np.float32), np.zeros(0, dtype=np.float64)


# Rows per element of the clustering passes. The T+1 passes re-read their input, so it carries only
# (points, weights) -- 32 floats and a weight per conversation, not the 384-d embedding and the
# texts -- in a few large arrays, so per-element costs (serialisation, Python calls) are paid rarely.
CLUSTERING_ROWS_PER_ELEMENT = 16384


@dataclasses.dataclass(frozen=True)
class DPKMeansOutput:
    """The released centres (a singleton: k x dim, unit rows) and the singletons the points were
    projected with: the basis (input_dim x dim, or None) and the active dimension (DP-derived or
    public), and the input blocks as they came, without points, for the assignment stage, which
    projects them again with those (AssignClusters). In-process (DPKMeans.local) each is the value itself."""

    centres: beam.PCollection
    blocks: beam.PCollection
    basis: beam.PCollection
    active_dim: beam.PCollection


@dataclasses.dataclass(frozen=True)
class ThemeSeeds:
    """Themes whose public anchors (dp_ops.theme_histogram.theme_anchor) seed tonight's DP k-means
    (publishing.lineage.PreviousNights.seed_themes). The anchors are computed where the embedding model is: on
    the worker that seeds the clustering, or in-process, with the run's `encoder`."""

    themes: tuple[str, ...]
    keywords: tuple[str, ...]
    categories: KeywordCategories
    encoder: Encoder

    def anchors(self) -> np.ndarray:
        """(themes with keywords, d) unit rows, in the order of `themes`."""
        self.categories.setup()
        columns = theme_columns(self.categories.names)
        vectors = keyword_vectors(self.encoder, self.keywords)
        rule = ThemeRule.of(vectors, self.keywords, self.categories.category_of, columns[:-1],
                            min_similarity=self.encoder.floors.theme)
        anchors = [theme_anchor(rule, columns.index(theme)) for theme in self.themes if theme in columns[:-1]]
        return np.array([a for a in anchors if a is not None], dtype=np.float64).reshape(-1, vectors.shape[1])


@dataclasses.dataclass(frozen=True)
class WarmStart:
    """The public directions DP k-means seeds first (seed_directions): `centres`, a previous release's
    centres as embedding-space directions (publishing.previous_nights.PreviousNights.warm_centres), then
    `theme_seeds`' anchors. None: no directions of that kind."""

    centres: np.ndarray | None = None
    theme_seeds: ThemeSeeds | None = None


def seed_directions(warm_centres: np.ndarray | None, theme_seeds: ThemeSeeds | None) -> np.ndarray | None:
    """The public directions DP k-means seeds first: last night's centres, then the risen themes' anchors."""
    anchors = theme_seeds.anchors() if theme_seeds is not None else None
    parts = [np.asarray(part, dtype=np.float64) for part in (warm_centres, anchors) if part is not None and len(part)]
    return np.concatenate(parts) if parts else None


class DPKMeans(DPStage):
    """Input: ConversationBlocks. Output: DPKMeansOutput. `self.calibration` and `self.spend` are
    known, and the spend registered with `budget`, at construction: the noise depends on the
    parameters alone."""

    rows_per_element = CLUSTERING_ROWS_PER_ELEMENT

    def __init__(self, params: mechanism.DPKMeansParams, budget: RunBudget | None, noise_seed: int | None = None,
                 encoder: Encoder | None = None, user_count: DPStage | None = None, expected_users: int | None = None,
                 warm: WarmStart = WarmStart(), private: bool = True):
        """`user_count` / `expected_users`: where --projection_dim auto takes the number of users
        from (one of them; neither for a fixed dimension). `encoder`: the run's, which embeds the pca basis's keywords
        (needed with basis "pca" only: a random basis embeds nothing).
        `warm`: its centres, a previous release's centres as embedding-space directions (public), seeded
        first (dp_ops.dp_kmeans.warm_seed_centres), then its theme seeds' anchors; the Lloyd steps lean
        the clusters the warm centres seeded toward them (params.warm_prior), not the anchors' clusters.
        `private` False (the evaluation's non-private baseline, epsilon = inf; never the job): the same
        releases without noise, at the whole width, spending nothing."""
        super().__init__(budget)
        if params.basis == "pca" and encoder is None:
            raise ValueError("the pca basis embeds the bundled keyword set: DPKMeans needs the run's encoder")
        self.params = params
        self.noise_seed = noise_seed
        self.encoder = encoder
        self.warm_centres = warm.centres
        # How many of the seed directions (seed_directions: the warm centres first) are earlier centres.
        self.warm_rows = 0 if warm.centres is None else min(len(warm.centres), params.num_clusters)
        self.theme_seeds = warm.theme_seeds
        if private:
            self.calibration = mechanism.calibrate(params)
            self.sigma = self.calibration.sigma
            self._dimension = ClusteringDimension(params, self.sigma, user_count, expected_users)
            self._spends(self.calibration.spend(params))
        else:
            self.calibration, self.sigma = None, 0.0
            self._dimension = ClusteringDimension(dataclasses.replace(params, projection_dim=params.dim), 0.0)

    def local(self, blocks: list[ConversationBlock]) -> DPKMeansOutput:
        """In-process (transforms/engine.py): every release on all the points at once (fit_centres)."""
        blocks = list(blocks)
        active_dim = self._dimension.local(blocks)
        basis = make_basis(None, self.params, self.encoder)
        projected = [project_block(block, basis, active_dim) for block in blocks]
        points, weights = concatenate([points_and_weights(block) for block in projected] + [_no_points(self.params)])
        directions = seed_directions(self.warm_centres, self.theme_seeds)
        warm = None if directions is None else mechanism.to_clustering_space(directions, basis, active_dim)
        centres = mechanism.fit_centres(points, weights, self.params, self.sigma, self.noise_seed, active_dim, warm,
                                        self.warm_rows)
        return DPKMeansOutput(centres=centres, blocks=[without_points(block) for block in projected], basis=basis,
                              active_dim=active_dim)

    def expand(self, blocks) -> DPKMeansOutput:
        params, sigma, noise_seed = self.params, self.sigma, self.noise_seed
        active_dim = blocks | "choose dimension" >> self._dimension
        basis = (blocks.pipeline | "basis trigger" >> beam.Create([None])
                 | "clustering basis" >> beam.Map(make_basis, params, self.encoder))
        active = beam.pvalue.AsSingleton(active_dim)
        projected = blocks | "project to clustering space" >> beam.Map(
            timed("dp_kmeans", project_block), beam.pvalue.AsSingleton(basis), active)
        # Both readers of the projected blocks run in the projection's own stage, so the blocks with
        # their points are never held whole: only the points, for the passes, and the blocks without
        # them, for the assignment. (The assignment does not read `blocks` itself: two readers of one
        # PCollection may be fused into one stage, and its side input, the centres, comes from this one.)
        clustered_blocks = projected | "blocks without points" >> beam.Map(without_points)
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
        no_points = blocks.pipeline | "a zero-row element" >> beam.Create([_no_points(params)])
        points = (points, no_points) | "with the zero-row element" >> beam.Flatten()

        # The warm seeds in this run's space (post-processing of a public release), or None.
        warm = (blocks.pipeline | "warm centres" >> beam.Create([None])
                | "with the theme seeds" >> beam.Map(
                    lambda _, warm_centres, theme_seeds: seed_directions(warm_centres, theme_seeds),
                    self.warm_centres, self.theme_seeds)
                | "warm centres to clustering space" >> beam.Map(
                    lambda directions, basis, dim: None if directions is None
                    else mechanism.to_clustering_space(directions, basis, dim),
                    beam.pvalue.AsSingleton(basis), active))
        centres = None
        for release in mechanism.release_schedule(params):
            # Partial sums per element, one global total, and the noise on the one worker holding it.
            previous = {} if centres is None else {"centres": beam.pvalue.AsSingleton(centres)}
            centres = (
                points
                | f"{release.label}: partial sums" >> beam.MapTuple(timed("dp_kmeans", release.sums), **previous)
                | f"{release.label}: total sums" >> beam.CombineGlobally(SumArraysFn(release.shape)).without_defaults()
                | f"{release.label}: noisy sums to centres" >> beam.Map(
                    release.centres, sigma, noise_seed, active, warm_centres=beam.pvalue.AsSingleton(warm),
                    warm_rows=self.warm_rows)
            )
        return DPKMeansOutput(centres=centres, blocks=clustered_blocks, basis=basis, active_dim=active_dim)
