"""The clustering group: DP k-means and which clusters are released."""

from __future__ import annotations

from core.params import Params, advanced_flag, check, flag, params_group
from dp_ops.dp_kmeans import AUTO_DIMENSION, BASES, DEFAULT_WARM_PRIOR, DPKMeansParams


def parse_projection_dim(value) -> int:
    """--projection_dim: 'auto' (or -1) is AUTO_DIMENSION, else an integer."""
    if str(value).strip().lower() == "auto":
        return AUTO_DIMENSION
    return int(value)


@params_group
class ClusteringParams(Params):
    """DP k-means and which clusters are released."""

    num_clusters: int = flag(
        50, "k for DP k-means, fixed by the operator: it must not depend on the private data.", type=int,
        public=True, ge=1)
    kmeans_iterations: int = flag(3, "Lloyd steps after the DP LSH seeding step (each one more Gaussian release).",
                                  type=int, public=True, ge=1)
    projection_dim: int = advanced_flag(
        AUTO_DIMENSION, "Dimension d DP k-means runs in: auto (the default, or -1), N > 0 or 0 (the embedding "
        "dimension). Auto takes d from the number of users (--expected_users, else a DP count of them, stage "
        "user_count): d = (0.2 * users / k / sigma)^2, sigma the k-means noise, clipped to [32, the embedding "
        "dimension] (docs/performance.md). The d used is config.clustering_dimension in the report.",
        type=parse_projection_dim, public=True)
    projection_basis: str = advanced_flag(
        "pca", "Basis whose first coordinates DP k-means keeps: pca (the principal directions of the bundled "
        "public keyword set's embeddings: public, no budget) or random (seeded).", choices=BASES, public=True)
    expected_users: int | None = advanced_flag(
        None, "Public hint of the number of users for --projection_dim auto; skips the DP user count. It is "
        "released as given: never take it from the data being processed or from any private output (e.g. "
        "run_stats.json) of runs over the same users; a past report's DP figures are fine.", type=int, public=True, ge=1)
    # int | float: the default stays 25 in the report (a strict float would publish 25.0), a parsed value is a float.
    min_cluster_size: int | float = flag(25, "tau: clusters with a smaller noisy size are dropped.", type=float,
                                   public=True, ge=0)
    warm_start: str = advanced_flag(
        "auto", "Whether DP k-means starts from the latest earlier released night's topic centres (auto, with "
                "--date) or from LSH buckets only (off). With auto, those centres are read from OUTPUT/index.json "
                "(public: no budget), fresh LSH seeds filling the other slots, so topics keep their place and "
                "lineage id (docs/report.md); with off, lineages are still matched.", choices=("auto", "off"),
        public=True)
    warm_prior: float = advanced_flag(
        DEFAULT_WARM_PRIOR, "With a warm start, how much the earlier night's centre of a topic counts in "
        "tonight's Lloyd steps of the cluster it seeded. Tonight's centre is the direction of its noisy sum plus "
        "this times the earlier centre, a mean over the nights that steadies a steady topic's centre "
        "(post-processing of public releases: no budget). 0: tonight's noisy sums alone. See docs/production.md.",
        type=float, public=True, ge=0, finite=True)

    def check_values(self):
        check(self.projection_dim >= 0 or self.projection_dim == AUTO_DIMENSION,
              "--projection_dim must be auto, 0 or a positive dimension")

    def kmeans_params(self, delta: float, noise_multiplier: float, input_dim: int, seed: int) -> DPKMeansParams:
        """DP k-means' parameters: this group's, with what the run resolves: its noise multiplier (the joint
        calibration's share for clustering), the embedding size and the run's seed."""
        return DPKMeansParams(num_clusters=self.num_clusters, epsilon=None, delta=delta, noise_multiplier=noise_multiplier,
                              input_dim=input_dim, iterations=self.kmeans_iterations, projection_dim=self.projection_dim,
                              seed=seed, basis=self.projection_basis, warm_prior=self.warm_prior)

    @property
    def counts_users(self) -> bool:
        """Whether the run releases a DP user count (auto dimension without a public hint)."""
        return self.projection_dim == AUTO_DIMENSION and self.expected_users is None
