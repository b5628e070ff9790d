"""DP spherical k-means (DP-Lloyd) with user-level sensitivity: the mechanism, without Beam.

Algorithm (all randomness that touches the data is Gaussian noise accounted below):
 1. Project the unit embeddings with a data-independent random orthonormal matrix to
    `projection_dim` dimensions and re-normalise. Noise norm grows with sqrt(dimension), so
    clustering in 32 dimensions instead of 384 buys ~3.5x signal-to-noise; topics that are far apart
    in the embedding space stay far apart (Johnson-Lindenstrauss).
 2. Seeding (release 1): hash every point with `lsh_bits` random hyperplanes (SimHash), release the
    noisy weighted sum of the points in every bucket, and start from the directions of the
    `num_clusters` buckets with the largest noisy sums. Unlike random centres, this puts centres
    where the data is, and it costs one Gaussian release instead of a separate DP seeding scheme.
 3. Lloyd steps (releases 2..T+1): assign each point to its nearest centre (cosine), release the
    noisy weighted sum per centre, and take its direction as the new centre. A centre with no
    points gets a pure-noise sum, i.e. a random restart, for free.

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
import math

import numpy as np

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
    projection_dim: int = 32
    lsh_bits: int | None = None
    seed: int = 0
    noise_multiplier: float | None = None

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
        if self.projection_dim < 0:
            raise ValueError(f"projection_dim must be >= 0 (0 = no projection), got {self.projection_dim}")
        if self.lsh_bits is not None and not 1 <= self.lsh_bits <= 20:
            raise ValueError(f"lsh_bits must be in [1, 20], got {self.lsh_bits}")
        if (1 << self.seeding_bits) < self.num_clusters:
            raise ValueError(f"lsh_bits={self.seeding_bits} gives fewer buckets than {self.num_clusters} clusters")

    @property
    def dim(self) -> int:
        """Dimension the clustering runs in."""
        if self.projection_dim == 0 or self.projection_dim >= self.input_dim:
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
            stage="clustering",
            mechanism=f"DP spherical k-means: {self.releases} Gaussian releases of per-cluster sums "
                      f"(1 LSH seeding + {self.releases - 1} Lloyd steps), PLD composition",
            epsilon=self.epsilon_spent,
            delta=self.delta,
            sensitivity=USER_L2_SENSITIVITY,
            noise={"kind": "gaussian", "sigma": self.sigma, "per": "coordinate of each cluster sum",
                   "releases": self.releases, "dimension": params.dim},
            event=event_to_json(self.event()),
        )


def calibrate(params: DPKMeansParams) -> NoiseCalibration:
    z = (params.noise_multiplier if params.noise_multiplier is not None
         else calibrate_gaussian_noise_multiplier(params.epsilon, params.delta, params.releases))
    return NoiseCalibration(
        noise_multiplier=z,
        sigma=z * USER_L2_SENSITIVITY,
        epsilon_spent=epsilon_of_gaussian_releases(z, params.releases, params.delta),
        delta=params.delta,
        releases=params.releases,
    )


def projection_matrix(params: DPKMeansParams) -> np.ndarray | None:
    """Data-independent random orthonormal projection (input_dim x dim), or None for identity."""
    if params.dim == params.input_dim:
        return None
    rng = np.random.default_rng([params.seed, 0x5EED])
    gaussian = rng.standard_normal((params.input_dim, params.dim))
    q, _ = np.linalg.qr(gaussian)
    return q.astype(np.float32)


def lsh_hyperplanes(params: DPKMeansParams) -> np.ndarray:
    rng = np.random.default_rng([params.seed, 0x1511])
    return rng.standard_normal((params.dim, params.seeding_bits)).astype(np.float32)


def normalise_rows(vectors: np.ndarray) -> np.ndarray:
    """Unit-norm rows; zero rows stay zero (they then contribute nothing to any sum)."""
    norms = np.linalg.norm(vectors, axis=1, keepdims=True)
    return np.divide(vectors, norms, out=np.zeros_like(vectors), where=norms > 0)


def project_points(embeddings: np.ndarray, projection: np.ndarray | None) -> np.ndarray:
    """Projects and re-normalises, so every point has norm <= 1 (the sensitivity argument)."""
    points = embeddings if projection is None else rowwise_matmul(embeddings, projection)
    return normalise_rows(points.astype(np.float32, copy=False))


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

    def centres(self, exact_sums: np.ndarray, sigma: float, noise_seed: int | None) -> np.ndarray:
        """The released centres: directions of the noisy sums (of the largest noisy bucket sums when
        seeding). sigma = 0 adds no noise and is not DP: only evaluations' non-private baseline."""
        if sigma < 0:
            raise ValueError(f"sigma must be >= 0, got {sigma}")
        noisy = exact_sums if sigma == 0 else add_gaussian_noise(exact_sums, sigma, noise_seed, self.number)
        return seed_centres(noisy, self.num_clusters) if self.seeding else update_centres(noisy)


def release_schedule(params: DPKMeansParams) -> list[Release]:
    """The releases in order: LSH seeding, then `params.iterations` Lloyd steps."""
    seeding = Release(0, 1 << params.seeding_bits, params.num_clusters, params.dim, lsh_hyperplanes(params))
    return [seeding] + [Release(step, params.num_clusters, params.num_clusters, params.dim)
                        for step in range(1, params.releases)]


def fit_centres(points: np.ndarray, weights: np.ndarray, params: DPKMeansParams, sigma: float,
                noise_seed: int | None = None) -> np.ndarray:
    """Every release in one process, on projected points (`project_points`); the centres of the last."""
    centres = None
    for release in release_schedule(params):
        centres = release.centres(release.sums(points, weights, centres), sigma, noise_seed)
    return centres


def fit_dp_kmeans(embeddings: np.ndarray, weights: np.ndarray, params: DPKMeansParams,
                  noise_seed: int | None = None) -> tuple[np.ndarray, NoiseCalibration]:
    """Single-process DP k-means; the Beam transform computes the same releases.

    Returns the centres (num_clusters x dim, unit rows, in the projected space) and the calibration.
    """
    calibration = calibrate(params)
    points = project_points(embeddings, projection_matrix(params))
    return fit_centres(points, weights, params, calibration.sigma, noise_seed), calibration
