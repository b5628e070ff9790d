"""DP spherical k-means (DP-Lloyd) with user-level sensitivity: the mechanism, without Beam.

Algorithm (all randomness that touches the data is Gaussian noise accounted below):
 1. Rotate the unit embeddings into a data-independent orthonormal basis (`clustering_basis`:
    random, or the principal directions of the public keyword set's embeddings), keep the first
    d coordinates and re-normalise. Noise norm grows with sigma * sqrt(d) while a cluster's sum
    grows with its users, so the best d grows with the data: a small d buys signal-to-noise on a
    small data set and throws away separation on a large one. `--projection_dim auto` (the
    default) takes d from a DP count of the users (`auto_dimension`), post-processing only.
 2. Seeding (release 1): hash every point with `lsh_bits` random hyperplanes (SimHash), release the
    noisy weighted sum of the points in every bucket, and start from the directions of the
    `num_clusters` buckets with the largest noisy sums. Unlike random centres, this puts centres
    where the data is, and it costs one Gaussian release instead of a separate DP seeding scheme.
 3. Lloyd steps (releases 2..T+1): assign each point to its nearest centre (cosine), release the
    noisy weighted sum per centre, and take its direction as the new centre. A centre with no
    points gets a pure-noise sum, i.e. a random restart, for free. With a warm start, a centre that
    a previous release's centre seeded takes the direction of its noisy sum plus `warm_prior` times
    that centre: a mean over the nights that keeps a steady topic's centre steady, post-processing
    of public releases (`lean_on_warm_centres`).

User-level sensitivity: a user's conversations are weighted 1/n_u (n_u <= C after contribution
bounding), so one user's points carry total weight <= 1. Each point has norm <= 1, so adding or
removing a user moves the stacked per-cluster sums by at most 1 in L2 (triangle inequality), in
every release. With sigma = z * 1, the T+1 releases compose as a self-composed Gaussian, which
dp-accounting's PLD accountant turns into the epsilon we report (`NoiseCalibration.event`). The noise
is calibrated to the stage's own (epsilon, delta), or given as a noise multiplier when the run's
stages are calibrated jointly (dp_ops.joint_calibration). Weighting also keeps a heavy user
from dominating a topic; with every user at exactly C conversations it equals the unweighted sum
with sensitivity C, and is strictly better otherwise.

Only the centres are released; assignments stay private.
"""

from __future__ import annotations

import dataclasses
import functools
import math

import numpy as np

from core.dp_stages import CLUSTERING
from core.spend import MechanismSpend
from dp_ops.dp_events import event_to_json
from dp_ops.gaussian_accounting import (
    calibrate_gaussian_noise_multiplier,
    composed_gaussian_event,
    epsilon_of_gaussian_releases,
)
from dp_ops.gaussian_noise import add_gaussian_noise
from dp_ops.rowwise import rowwise_matmul

# A user's points carry total weight <= 1 and each point has norm <= 1 (see module docstring).
USER_L2_SENSITIVITY = 1.0
AUTO_DIMENSION = -1
BASES = ("random", "pca")
# auto_dimension's rule, fitted on the shared evaluation data (docs/performance.md; the retired one-off
# study `git show 6cd222c:eval/clustering_dimension.py`):
# d = (DIMENSION_SIGNAL_RATIO * users per cluster / sigma)^2, clipped.
DIMENSION_SIGNAL_RATIO = 0.2
MIN_AUTO_DIMENSION = 32

# How much a previous release's centre counts beside tonight's direction in a Lloyd step of the cluster
# it seeded (lean_on_warm_centres). Measured on the generated 60-night stream (eval/utility/nightly_stream.py:
# cap 30 over 30 nights, k = 20, one Lloyd step, themes at weight 2, 5 runs each) against 0 and against a
# weight in units of the noise norm: docs/production.md ("Last night's centre as a prior").
DEFAULT_WARM_PRIOR = 1.0


@dataclasses.dataclass(frozen=True)
class DPKMeansParams:
    """`epsilon`: calibrate the noise so that the releases alone are (epsilon, delta)-DP; or, with
    epsilon=None, `noise_multiplier`: use sigma = noise_multiplier x sensitivity as given (from
    dp_ops.joint_calibration), and report the epsilon it spends at `delta`."""

    num_clusters: int
    epsilon: float | None
    delta: float
    input_dim: int
    iterations: int = 3
    projection_dim: int = 32  # AUTO_DIMENSION: chosen at run time from a DP user count (auto_dimension)
    lsh_bits: int | None = None
    seed: int = 0
    noise_multiplier: float | None = None
    basis: str = "random"
    warm_prior: float = DEFAULT_WARM_PRIOR

    def __post_init__(self):
        if self.num_clusters < 1:
            raise ValueError(f"num_clusters must be >= 1, got {self.num_clusters}")
        if (self.epsilon is None) == (self.noise_multiplier is None):
            raise ValueError("give DP k-means either epsilon or noise_multiplier, not both or neither")
        if self.epsilon is not None and not (self.epsilon > 0 and math.isfinite(self.epsilon)):
            raise ValueError(f"epsilon for clustering must be > 0 and finite, got {self.epsilon}")
        if self.noise_multiplier is not None and not (self.noise_multiplier > 0 and math.isfinite(self.noise_multiplier)):
            raise ValueError(f"noise_multiplier for clustering must be > 0 and finite, got {self.noise_multiplier}")
        if not 0 < self.delta < 1:
            raise ValueError(f"delta for clustering must be in (0, 1), got {self.delta}")
        if self.iterations < 1:
            raise ValueError(f"kmeans iterations must be >= 1, got {self.iterations}")
        if self.input_dim < 1:
            raise ValueError(f"input_dim must be >= 1, got {self.input_dim}")
        if self.projection_dim < 0 and self.projection_dim != AUTO_DIMENSION:
            raise ValueError(f"projection_dim must be >= 0 (0 = no projection) or {AUTO_DIMENSION} (auto), "
                             f"got {self.projection_dim}")
        if self.basis not in BASES:
            raise ValueError(f"basis must be one of {BASES}, got {self.basis!r}")
        if not (self.warm_prior >= 0 and math.isfinite(self.warm_prior)):
            raise ValueError(f"warm_prior must be >= 0 and finite, got {self.warm_prior}")
        if self.lsh_bits is not None and not 1 <= self.lsh_bits <= 20:
            raise ValueError(f"lsh_bits must be in [1, 20], got {self.lsh_bits}")
        if (1 << self.seeding_bits) < self.num_clusters:
            raise ValueError(f"lsh_bits={self.seeding_bits} gives fewer buckets than {self.num_clusters} clusters")

    @property
    def automatic(self) -> bool:
        return self.projection_dim == AUTO_DIMENSION

    @property
    def dim(self) -> int:
        """Width of the projected points and of every release: the fixed dimension, or the input
        dimension when d is chosen at run time (coordinates beyond d are then zero)."""
        if self.automatic or self.projection_dim == 0 or self.projection_dim >= self.input_dim:
            return self.input_dim
        return self.projection_dim

    @property
    def seeding_bits(self) -> int:
        # At least 4 buckets per centre, so the top-k buckets are not forced onto empty ones.
        return self.lsh_bits or min(20, max(4, math.ceil(math.log2(self.num_clusters)) + 2))

    @property
    def releases(self) -> int:
        return self.iterations + 1


@dataclasses.dataclass(frozen=True)
class NoiseCalibration:
    noise_multiplier: float
    sigma: float
    epsilon_spent: float
    delta: float
    releases: int

    def event(self):
        """The releases as dp-accounting composes them: `releases` Gaussians of multiplier z."""
        return composed_gaussian_event(self.noise_multiplier, self.releases)

    def spend(self, params: DPKMeansParams) -> MechanismSpend:
        return MechanismSpend(
            stage=CLUSTERING,
            mechanism=f"DP spherical k-means: {self.releases} Gaussian releases of per-cluster sums "
                      f"(1 LSH seeding + {self.releases - 1} Lloyd steps), PLD composition",
            epsilon=self.epsilon_spent,
            delta=self.delta,
            sensitivity=USER_L2_SENSITIVITY,
            noise={"kind": "gaussian", "sigma": self.sigma, "per": "coordinate of each cluster sum",
                   "releases": self.releases,
                   "dimension": ("auto: from the number of users (the DP user count, or --expected_users)"
                                 if params.automatic else params.dim)},
            event=event_to_json(self.event()),
        )


def calibrate(params: DPKMeansParams) -> NoiseCalibration:
    return _calibrate(params.epsilon, params.noise_multiplier, params.delta, params.releases)


@functools.lru_cache(maxsize=64)
def _calibrate(epsilon: float | None, noise_multiplier: float | None, delta: float, releases: int) -> NoiseCalibration:
    # Memoised: deterministic in these four (never the data, seed or shapes), and the in-process
    # evaluation calibrates the same parameters for each of its hundreds of runs.
    z = (noise_multiplier if noise_multiplier is not None
         else calibrate_gaussian_noise_multiplier(epsilon, delta, releases))
    return NoiseCalibration(
        noise_multiplier=z,
        sigma=z * USER_L2_SENSITIVITY,
        epsilon_spent=epsilon_of_gaussian_releases(z, releases, delta),
        delta=delta,
        releases=releases,
    )


def random_basis(input_dim: int, seed: int) -> np.ndarray:
    """A seeded random orthonormal basis of the embedding space (columns), data-independent."""
    rng = np.random.default_rng([seed, 0x5EED])
    q, _ = np.linalg.qr(rng.standard_normal((input_dim, input_dim)))
    return q


def principal_basis(public_vectors: np.ndarray) -> np.ndarray:
    """The principal directions of PUBLIC vectors (the keyword set's embeddings), by decreasing
    variance, as an orthonormal basis (columns) of the whole space: directions the public vectors do
    not span come last. Deterministic: each column's sign makes its largest entry positive."""
    vectors = np.asarray(public_vectors, dtype=np.float64)
    if vectors.ndim != 2 or len(vectors) < 2:
        raise ValueError(f"a principal basis needs >= 2 public vectors, got shape {vectors.shape}")
    centred = vectors - vectors.mean(axis=0)
    variances, directions = np.linalg.eigh(centred.T @ centred)
    directions = directions[:, np.argsort(-variances, kind="stable")]
    signs = np.sign(directions[np.abs(directions).argmax(axis=0), np.arange(directions.shape[1])])
    return directions * np.where(signs == 0, 1.0, signs)


def clustering_basis(params: DPKMeansParams, public_vectors: np.ndarray | None = None) -> np.ndarray | None:
    """The first `params.dim` columns of the basis the clustering runs in (input_dim x dim), or None
    for the embedding space itself (fixed full dimension, random basis: a rotation would change
    nothing). `public_vectors` (basis "pca") must be public: the bundled keyword set's embeddings."""
    if params.basis == "pca":
        if public_vectors is None:
            raise ValueError("the pca basis needs the public keyword set's embeddings")
        if public_vectors.shape[1] != params.input_dim:
            raise ValueError(f"public vectors are {public_vectors.shape[1]}-d, the embeddings {params.input_dim}-d")
        return principal_basis(public_vectors)[:, :params.dim].astype(np.float32)
    if params.dim == params.input_dim and not params.automatic:
        return None
    return random_basis(params.input_dim, params.seed)[:, :params.dim].astype(np.float32)


def auto_dimension(noisy_users: float, num_clusters: int, sigma: float, input_dim: int) -> int:
    """The dimension to cluster in for about `noisy_users` users (a DP release or a public hint).

    A cluster's weighted sum has norm ~ its users (each user's weights sum to 1), the noise on it
    norm ~ sigma * sqrt(d): d = (DIMENSION_SIGNAL_RATIO * users per cluster / sigma)^2 keeps that
    ratio fixed, so more users buy more dimensions (more separation) at the same signal-to-noise.
    Clipped to [MIN_AUTO_DIMENSION, input_dim]. Monotone in the users; uses no other data."""
    if not (sigma > 0 and math.isfinite(sigma)):
        raise ValueError(f"sigma must be > 0 and finite, got {sigma}")
    per_cluster = max(float(noisy_users), 0.0) / num_clusters
    wanted = (DIMENSION_SIGNAL_RATIO * per_cluster / sigma) ** 2
    return int(min(max(math.floor(wanted), MIN_AUTO_DIMENSION), input_dim))


def active_dimension(params: DPKMeansParams, sigma: float, noisy_users: float | None) -> int:
    """How many leading coordinates carry the points: the fixed dimension, or auto_dimension."""
    if not params.automatic:
        return params.dim
    if noisy_users is None:
        raise ValueError("projection_dim auto needs a (DP or public) user count")
    return auto_dimension(noisy_users, params.num_clusters, sigma, params.input_dim)


def lsh_hyperplanes(params: DPKMeansParams) -> np.ndarray:
    rng = np.random.default_rng([params.seed, 0x1511])
    return rng.standard_normal((params.dim, params.seeding_bits)).astype(np.float32)


def normalise_rows(vectors: np.ndarray) -> np.ndarray:
    """Unit-norm rows; zero rows stay zero (they then contribute nothing to any sum)."""
    norms = np.linalg.norm(vectors, axis=1, keepdims=True)
    return np.divide(vectors, norms, out=np.zeros_like(vectors), where=norms > 0)


def project_points(embeddings: np.ndarray, projection: np.ndarray | None, active_dim: int | None = None) -> np.ndarray:
    """Projects, zeroes every coordinate from `active_dim` on (None: keep all) and re-normalises, so
    every point has norm <= 1 (the sensitivity argument)."""
    points = embeddings if projection is None else rowwise_matmul(embeddings, projection)
    points = np.array(points, dtype=np.float32, copy=True if active_dim is not None else None)
    if active_dim is not None:
        points[:, active_dim:] = 0.0
    return normalise_rows(points)


def lsh_buckets(points: np.ndarray, hyperplanes: np.ndarray) -> np.ndarray:
    bits = rowwise_matmul(points, hyperplanes) > 0
    return (bits * (1 << np.arange(hyperplanes.shape[1]))).sum(axis=1).astype(np.int64)


def weighted_sums(points: np.ndarray, weights: np.ndarray, labels: np.ndarray, num_groups: int) -> np.ndarray:
    """Per-group sums of weighted points, shape (num_groups, dim), float64 for exact merging."""
    weighted = points.astype(np.float64) * weights[:, None]
    sums = np.zeros((num_groups, points.shape[1]), dtype=np.float64)
    np.add.at(sums, labels, weighted)
    return sums


def seed_centres(noisy_bucket_sums: np.ndarray, num_clusters: int) -> np.ndarray:
    """Directions of the buckets with the largest noisy sums (post-processing of a DP release)."""
    norms = np.linalg.norm(noisy_bucket_sums, axis=1)
    order = np.argsort(-norms, kind="stable")
    chosen = noisy_bucket_sums[order[:num_clusters]]
    if len(chosen) < num_clusters:
        raise ValueError(f"{len(chosen)} LSH buckets cannot seed {num_clusters} centres; raise lsh_bits")
    return normalise_rows(chosen).astype(np.float32)


# A fresh seed (a noisy LSH bucket) is skipped when its direction is this close (cosine) to a centre
# already chosen: it would seed a second centre on a topic a warm centre already covers. On the
# generated 60-night stream (eval/utility/nightly_stream.py, warm starts, one Lloyd step, 5 runs) 0.6 against
# 0.8: lineages kept on 90.8-93.3% of released nights (88.3-92.2%), per-night NMI 0.79-0.80 (0.79),
# the emerging topic flagged within 7 nights in 3 of 5 runs either way (0.4: lower NMI).
FRESH_SEED_MAX_COSINE = 0.6


def warm_seed_centres(noisy_bucket_sums: np.ndarray, warm_centres: np.ndarray, num_clusters: int) -> np.ndarray:
    """Seeds from a previous release's centres (public: post-processing, no budget), largest topics
    first, and the remaining slots from the noisy LSH buckets with the largest sums, skipping buckets
    pointing where a chosen centre already is (so the fresh seeds go to topics that are new); if too
    few buckets are that far from every chosen centre, the next largest are taken anyway."""
    # Warm centre j stays cluster j (its lineage follows it: publishing/lineage.py), even a zero one (a
    # direction outside tonight's dimensions), which then restarts from its noise like an empty centre.
    warm = normalise_rows(np.asarray(warm_centres, dtype=np.float64))[:num_clusters]
    candidates = normalise_rows(noisy_bucket_sums[np.argsort(-np.linalg.norm(noisy_bucket_sums, axis=1),
                                                             kind="stable")])
    chosen, skipped = list(warm), []
    for candidate in candidates:
        if len(chosen) == num_clusters:
            break
        if not np.any(candidate):
            continue
        if chosen and max(float(candidate @ c) for c in chosen) >= FRESH_SEED_MAX_COSINE:
            skipped.append(candidate)
        else:
            chosen.append(candidate)
    chosen += skipped[:num_clusters - len(chosen)]
    if len(chosen) < num_clusters:
        raise ValueError(f"{len(chosen)} seeds for {num_clusters} centres; raise lsh_bits")
    return np.asarray(chosen, dtype=np.float32)


def lean_on_warm_centres(noisy_sums: np.ndarray, warm_centres: np.ndarray, warm_prior: float) -> np.ndarray:
    """Tonight's centres before normalising: for each of the first len(warm_centres) clusters (those a
    previous release's centres seeded, in order) the direction of its noisy sum plus `warm_prior` times
    its seed's direction; the other rows' noisy sums as they are.

    A topic's direction on consecutive nights is mostly the same while each night's noise on it is
    fresh, so averaging tonight's direction with the centre it was seeded from (itself such an average)
    is an exponentially weighted mean over the nights: with warm_prior 1 tonight weighs 1/2, last night
    1/4, ..., which halves the spread of a steady topic's centre and lets a moving topic's centre
    follow within a few nights. Post-processing of this release and public earlier ones: no budget."""
    sums = np.array(noisy_sums, dtype=np.float64)
    rows = min(len(warm_centres), len(sums))
    if rows and warm_prior > 0:
        sums[:rows] = (normalise_rows(sums[:rows])
                       + warm_prior * normalise_rows(np.asarray(warm_centres[:rows], dtype=np.float64)))
    return sums


def update_centres(noisy_sums: np.ndarray) -> np.ndarray:
    """New centres are the directions of the noisy sums (spherical k-means)."""
    return normalise_rows(noisy_sums).astype(np.float32)


def assign_nearest(points: np.ndarray, centres: np.ndarray) -> np.ndarray:
    return np.argmax(rowwise_matmul(points, centres.T), axis=1).astype(np.int64)


@dataclasses.dataclass(frozen=True, eq=False)
class Release:
    """One of the T+1 Gaussian releases: number 0 seeds from LSH buckets, number t >= 1 is Lloyd step t.

    The in-process fit and the Beam transform both run exactly these: `sums` over all the points, or
    over parts whose results are added up (weighted sums are additive), then `centres` on the total.
    `number` seeds the test noise, so both draw the same noise for the same noise seed.
    """

    number: int
    num_groups: int
    num_clusters: int
    dim: int
    hyperplanes: np.ndarray | None = None  # seeding only
    warm_prior: float = 0.0  # Lloyd steps only: DPKMeansParams.warm_prior

    @property
    def seeding(self) -> bool:
        return self.number == 0

    @property
    def label(self) -> str:
        return "seeding" if self.seeding else f"step {self.number}"

    @property
    def shape(self) -> tuple[int, int]:
        return self.num_groups, self.dim

    def sums(self, points: np.ndarray, weights: np.ndarray, centres: np.ndarray | None = None) -> np.ndarray:
        """The weighted sums this release noises, per LSH bucket (seeding) or per nearest of the
        previous release's `centres` (a Lloyd step)."""
        groups = lsh_buckets(points, self.hyperplanes) if self.seeding else assign_nearest(points, centres)
        return weighted_sums(points, weights, groups, self.num_groups)

    def centres(self, exact_sums: np.ndarray, sigma: float, noise_seed: int | None,
                active_dim: int | None = None, warm_centres: np.ndarray | None = None,
                warm_rows: int | None = None) -> np.ndarray:
        """The released centres: directions of the noisy sums (of the largest noisy bucket sums when
        seeding). `warm_centres`: public directions in this space, a previous release's centres (the
        first `warm_rows` of them; None: all) then any other public seeds. Seeding takes them first
        (warm_seed_centres); with noise, a Lloyd step leans each of the first `warm_rows` clusters
        toward its previous centre by `warm_prior` (lean_on_warm_centres). Noise goes on the first `active_dim`
        coordinates (None: all): the points are zero beyond them, so those coordinates of the sums are
        zero for every data set. sigma = 0 adds no noise and is not DP: only evaluations' non-private
        baseline."""
        if sigma < 0:
            raise ValueError(f"sigma must be >= 0, got {sigma}")
        active = self.dim if active_dim is None else active_dim
        noisy = np.array(exact_sums, dtype=np.float64)
        if sigma > 0:
            noisy[:, :active] = add_gaussian_noise(noisy[:, :active], sigma, noise_seed, self.number)
        warm = None if warm_centres is None or not len(warm_centres) else warm_centres
        if not self.seeding:
            if warm is not None and sigma > 0:  # the non-private baseline stays exact k-means
                noisy = lean_on_warm_centres(noisy, warm[:len(warm) if warm_rows is None else warm_rows],
                                             self.warm_prior)
            return update_centres(noisy)
        if warm is not None:
            return warm_seed_centres(noisy, warm, self.num_clusters)
        return seed_centres(noisy, self.num_clusters)


def release_schedule(params: DPKMeansParams) -> list[Release]:
    """The releases in order: LSH seeding, then `params.iterations` Lloyd steps."""
    seeding = Release(0, 1 << params.seeding_bits, params.num_clusters, params.dim, lsh_hyperplanes(params))
    return [seeding] + [Release(step, params.num_clusters, params.num_clusters, params.dim,
                                warm_prior=params.warm_prior)
                        for step in range(1, params.releases)]


def fit_centres(points: np.ndarray, weights: np.ndarray, params: DPKMeansParams, sigma: float,
                noise_seed: int | None = None, active_dim: int | None = None,
                warm_centres: np.ndarray | None = None, warm_rows: int | None = None) -> np.ndarray:
    """Every release in one process, on projected points (`project_points` with the same
    `active_dim`); the centres of the last. `warm_centres`, `warm_rows`: see Release.centres."""
    centres = None
    for release in release_schedule(params):
        centres = release.centres(release.sums(points, weights, centres), sigma, noise_seed, active_dim,
                                  warm_centres, warm_rows)
    return centres


def to_embedding_space(centres: np.ndarray, basis: np.ndarray | None) -> np.ndarray:
    """Centres of the clustering space as unit directions of the embedding space (the basis's
    columns are orthonormal): comparable across runs whatever their basis or dimension."""
    full = np.asarray(centres, dtype=np.float64) if basis is None else np.asarray(centres, np.float64) @ basis.T
    return normalise_rows(full)


def to_clustering_space(directions: np.ndarray, basis: np.ndarray | None, active_dim: int | None) -> np.ndarray:
    """Embedding-space directions (another run's released centres) projected as points are
    (project_points): the warm seeds of a run in this basis and dimension."""
    return project_points(np.asarray(directions, dtype=np.float32), basis, active_dim)


def fit_dp_kmeans(embeddings: np.ndarray, weights: np.ndarray, params: DPKMeansParams,
                  noise_seed: int | None = None, active_dim: int | None = None,
                  public_vectors: np.ndarray | None = None) -> tuple[np.ndarray, NoiseCalibration]:
    """Single-process DP k-means at a given `active_dim` (None: all of params.dim); the Beam
    transform computes the same releases.

    Returns the centres (num_clusters x dim, unit rows, in the projected space) and the calibration.
    """
    calibration = calibrate(params)
    points = project_points(embeddings, clustering_basis(params, public_vectors), active_dim)
    return fit_centres(points, weights, params, calibration.sigma, noise_seed, active_dim), calibration
