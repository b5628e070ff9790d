"""The URANIA job's mechanisms run in-process on pre-computed embeddings, for evaluations that need
hundreds of runs (membership inference: 400; the sweep: 5 configurations per data set).

Shared with the Beam job (the same functions, not copies):
  contribution bounding's choice rule and weights (dp_ops.contribution_bounding, via eval.data);
  the clustering dimension (dp_ops.dp_user_count's DP user count, or --expected_users, then
  dp_kmeans.active_dimension, as transforms/dp_kmeans.ChooseClusteringDimension);
  DP k-means (dp_ops.dp_kmeans: calibrate, clustering_basis, project_points, fit_centres,
  assign_nearest: fit_dp_kmeans's steps; fit_centres runs the release_schedule that the Beam
  transform runs too);
  DP cluster sizes and keyword histograms: dp_ops.pipeline_dp_engine.release_with_pipeline_dp with
  the job's DPCountParams (cluster_size_params, keyword_count_params) and spend_from_accountant, on
  PipelineDP's LocalBackend instead of its BeamBackend; public partitions as in the job;
  Poisson sampling for keywords (poisson_keep, keyword_sampling_rate), the offline
  EmbeddingKeywordSelector, the filter to K, the weighted keyword and category votes
  (dp_ops.keyword_votes), transforms.voted_labels' floors and labels, KeywordClusterNamer with the
  keyword set's KeywordCategories, distinct_names, build_hierarchy (on the DP centres) and
  core.report.build_report.
Differs from the Beam job: no Beam and no release gate; the DP k-means calibration is memoised
across runs with equal parameters (it is deterministic); k-means noise is numpy's Gaussian seeded per
run when `noise_seed` is given (same distribution as the production PyDP sampler, reproducible;
never for real releases), PyDP's otherwise. epsilon = inf switches every mechanism off (exact
k-means, exact counts, keyword floor 1): the non-private URANIA of the paper's sweep.
"""

from __future__ import annotations

import dataclasses
import functools
import math

import numpy as np
import pipeline_dp

from backends import embedding
from backends.exemplars import evolve_exemplars
from backends.interfaces import ExemplarWriter
from backends.keyword_categories import KeywordCategories
from backends.keyword_set import load_keyword_set
from backends.offline import EmbeddingKeywordSelector, KeywordClusterNamer
from backends.offline_exemplars import TemplateExemplarWriter
from beam_jobs.options import (
    DEFAULT_EPSILON,
    OFFLINE_SELECTOR,
    ClusteringParams,
    EmbeddingParams,
    ExemplarParams,
    KeywordParams,
    PrivacyParams,
)
from core.lineage import LOOKBACK_NIGHTS, PreviousNights
from core.report import build_report, labelling_section, report_topics
from core.spend import MechanismSpend
from dp_ops import dp_kmeans as km
from dp_ops.dp_counts import DPCountParams, spend_from_accountant
from dp_ops.dp_user_count import UserCountNoise, noisy_user_count
from dp_ops.joint_calibration import JointCalibration, calibrate_jointly
from dp_ops.keyword_votes import (
    conversation_votes,
    exact_vote_sums,
    noisy_vote_sums,
    released_histogram,
    vote_columns,
    vote_spend,
)
from dp_ops.pipeline_dp_engine import release_with_pipeline_dp
from dp_ops.run_budget import RunBudget
from dp_ops.sampling import keyword_sampling_rate, poisson_keep
from eval.data import bound_contributions
from transforms import dp_stage_specs
from transforms.centroid_keywords import nearest_keywords
from transforms.dp_cluster_sizes import cluster_size_params
from transforms.dp_kmeans import basis_keyword_vectors
from transforms.dp_stage_specs import StageSettings
from transforms.keyword_histograms import keyword_count_params
from transforms.name_clusters import distinct_names, name_topic
from transforms.topic_hierarchy import build_hierarchy
from transforms.topic_lineage import lineage_section
from transforms.voted_labels import (
    VoteFloors,
    category_votes_section,
    label_keywords,
    min_users_to_label,
    vote_floors,
    voted_keywords,
)


@dataclasses.dataclass(frozen=True)
class UraniaConfig:
    """The job's options that matter here, with the job's defaults (its params classes')."""

    num_clusters: int = ClusteringParams.num_clusters
    max_conversations_per_user: int = PrivacyParams.max_conversations_per_user
    epsilon: float = DEFAULT_EPSILON  # math.inf: every mechanism switched off
    epsilon_weights: str = PrivacyParams.epsilon_weights
    delta: float = PrivacyParams.delta
    min_cluster_size: float = ClusteringParams.min_cluster_size
    samples_per_cluster: str = KeywordParams.samples_per_cluster  # the offline selector is free: "auto" = all
    keywords_per_cluster: int = KeywordParams.keywords_per_cluster
    max_keywords_per_conversation: int = KeywordParams.max_keywords_per_conversation
    max_keyword_partitions_per_user: int | None = PrivacyParams.max_keyword_partitions_per_user  # count votes only
    keyword_min_similarity: float = KeywordParams.keyword_min_similarity
    kmeans_iterations: int = ClusteringParams.kmeans_iterations
    projection_dim: int = ClusteringParams.projection_dim
    projection_basis: str = ClusteringParams.projection_basis
    expected_users: int | None = ClusteringParams.expected_users
    keyword_noise: str | None = PrivacyParams.keyword_noise  # count votes only
    keyword_votes: str = PrivacyParams.keyword_votes
    keywords_per_vote: int = KeywordParams.keywords_per_vote
    category_vote_share: float = KeywordParams.category_vote_share
    false_keywords_per_topic: float = KeywordParams.false_keywords_per_topic
    keyword_candidates: int = KeywordParams.keyword_candidates
    label_fallback: str = KeywordParams.label_fallback
    embedding_model: str = EmbeddingParams.embedding_model
    keyword_set: str | None = KeywordParams.keyword_set
    exemplars_per_topic: int = ExemplarParams.exemplars_per_topic
    exemplar_candidates: int = ExemplarParams.exemplar_candidates
    exemplar_rounds: int = ExemplarParams.exemplar_rounds
    warm_start: str = ClusteringParams.warm_start

    @property
    def private(self) -> bool:
        return math.isfinite(self.epsilon)

    @property
    def counts_users(self) -> bool:
        return ClusteringParams(projection_dim=self.projection_dim, expected_users=self.expected_users).counts_users


def joint_calibration(config: UraniaConfig) -> JointCalibration:
    """The job's joint calibration of its stages' noise (memoised on the parameters it depends on:
    a sweep over dimensions or bases calibrates once)."""
    return _joint_calibration_for(config.epsilon, config.epsilon_weights, config.delta, config.kmeans_iterations,
                                  config.max_conversations_per_user, config.keyword_votes, config.keyword_noise,
                                  config.max_keyword_partitions_per_user, config.counts_users)


@functools.lru_cache(maxsize=32)
def _joint_calibration_for(epsilon: float, epsilon_weights: str, delta: float, kmeans_iterations: int,
                           max_conversations_per_user: int, keyword_votes: str, keyword_noise: str | None,
                           max_keyword_partitions_per_user: int | None, counts_users: bool) -> JointCalibration:
    privacy = _privacy_params(epsilon, epsilon_weights, delta, keyword_votes, keyword_noise,
                              max_keyword_partitions_per_user)
    return calibrate_jointly(epsilon, delta, _requests(privacy, kmeans_iterations, max_conversations_per_user,
                                                       counts_users))


def stage_requests(config: UraniaConfig) -> list:
    """The job's DP stages for this config as calibration requests (what joint_calibration calibrates,
    and what a nightly plan calibrates over a window: eval/utility/nightly_stream.py, eval/audit/nightly_privacy_modes.py)."""
    privacy = _privacy_params(DEFAULT_EPSILON, config.epsilon_weights, config.delta, config.keyword_votes,
                              config.keyword_noise, config.max_keyword_partitions_per_user)
    return _requests(privacy, config.kmeans_iterations, config.max_conversations_per_user, config.counts_users)


def _requests(privacy: PrivacyParams, kmeans_iterations: int, max_conversations_per_user: int, counts_users: bool):
    return dp_stage_specs.stage_requests(StageSettings(
        privacy.stage_weights(), kmeans_iterations, max_conversations_per_user, privacy.histogram_noise,
        privacy.keyword_partitions_per_user, privacy.keyword_votes, counts_users))


def _privacy_params(epsilon: float, epsilon_weights: str, delta: float, keyword_votes: str,
                    keyword_noise: str | None, max_keyword_partitions_per_user: int | None) -> PrivacyParams:
    """The job's privacy params (they check and resolve the keyword flags as the job's do)."""
    return PrivacyParams(epsilon=epsilon, epsilon_weights=epsilon_weights, delta=delta, keyword_votes=keyword_votes,
                         keyword_noise=keyword_noise, max_keyword_partitions_per_user=max_keyword_partitions_per_user)


def _calibration(params: km.DPKMeansParams) -> km.NoiseCalibration:
    # calibrate() depends on (epsilon or noise multiplier, delta, releases) only; the seed and shapes
    # vary per run.
    return _calibration_for(params.epsilon, params.noise_multiplier, params.delta, params.iterations)


@functools.lru_cache(maxsize=32)
def _calibration_for(epsilon: float | None, noise_multiplier: float | None, delta: float,
                     iterations: int) -> km.NoiseCalibration:
    return km.calibrate(km.DPKMeansParams(num_clusters=1, epsilon=epsilon, noise_multiplier=noise_multiplier,
                                          delta=delta, input_dim=1, iterations=iterations))


@functools.lru_cache(maxsize=4)
def _keywords(path: str | None):
    return load_keyword_set(path)


@functools.lru_cache(maxsize=4)
def _categories(path: str | None, model: str) -> KeywordCategories:
    categories = KeywordCategories.of_keyword_set(_keywords(path), model)
    categories.setup()
    return categories


@functools.lru_cache(maxsize=4)
def _selector(keywords: tuple[str, ...], model: str, min_similarity: float) -> EmbeddingKeywordSelector:
    selector = EmbeddingKeywordSelector(keywords, model, min_similarity)
    selector.setup()
    return selector


@functools.lru_cache(maxsize=4)
def _keyword_embeddings(keywords: tuple[str, ...], model: str) -> np.ndarray:
    return embedding.embed_texts(model, list(keywords))


@functools.lru_cache(maxsize=2)
def _public_vectors(model: str) -> np.ndarray:
    return basis_keyword_vectors(model)


def _basis(params: km.DPKMeansParams, model: str) -> np.ndarray | None:
    # The pca basis does not depend on the seed: without this, runs with a seed each (membership
    # inference: one per run) would redo its 384 x 384 eigendecomposition every time.
    return _cached_basis(dataclasses.replace(params, seed=0) if params.basis == "pca" else params, model)


@functools.lru_cache(maxsize=4)
def _cached_basis(params: km.DPKMeansParams, model: str) -> np.ndarray | None:
    return km.clustering_basis(params, _public_vectors(model) if params.basis == "pca" else None)


def choose_dimension(params: km.DPKMeansParams, weights: np.ndarray, config: UraniaConfig,
                     joint: JointCalibration | None, noise_seed: int | None) -> tuple[int, MechanismSpend | None]:
    """The job's ChooseClusteringDimension in-process: (active dimension, the user count's spend or
    None). Non-private: the whole width (no noise to trade separation against)."""
    if not config.private or not params.automatic:
        return params.dim, None
    sigma = joint.stages["clustering"].noise_std_parameter
    if config.expected_users is not None:
        return km.active_dimension(params, sigma, config.expected_users), None
    count = UserCountNoise(joint.stages["user_count"].noise_multiplier, config.delta)
    users = noisy_user_count(float(np.sum(weights)), count.sigma, noise_seed)
    return km.active_dimension(params, sigma, users), count.spend()


def fit_kmeans(embeddings: np.ndarray, weights: np.ndarray, params: km.DPKMeansParams, private: bool,
               noise_seed: int | None, active_dim: int | None = None,
               model: str = EmbeddingParams.embedding_model,
               warm_directions: np.ndarray | None = None) -> tuple[np.ndarray, np.ndarray, km.NoiseCalibration | None]:
    """dp_ops.dp_kmeans.fit_centres with the memoised calibration, at `active_dim` (None: all of
    params.dim); returns (centres, projected points, calibration). Non-private: the same releases
    with zero noise (exact spherical k-means). `warm_directions`: a previous release's centres
    (embedding space), seeded first as the job's warm start."""
    calibration = _calibration(params) if private else None
    basis = _basis(params, model)
    points = km.project_points(embeddings, basis, active_dim)
    warm = None if warm_directions is None else km.to_clustering_space(warm_directions, basis, active_dim)
    centres = km.fit_centres(points, weights, params, calibration.sigma if private else 0.0, noise_seed, active_dim,
                             warm)
    return centres, points, calibration


def _dp_count(params: DPCountParams, pairs: list[tuple[str, object]], partitions: list) -> tuple[dict, object]:
    """(partition -> noisy count for every public partition, spend), PipelineDP on LocalBackend."""
    if not pairs:
        # PipelineDP refuses empty input; data outside the public partitions is dropped, so one
        # such element gives every public partition a pure-noise count, as the job would release.
        pairs = [("no user", ("no partition",))]
    released, spend = release_with_pipeline_dp(pairs, pipeline_dp.LocalBackend(), params, params.aggregate_params(),
                                               spend_from_accountant, "PipelineDP COUNT, public partitions (in-process)",
                                               public_partitions=partitions)
    return {partition: metrics.count for partition, metrics in released}, spend


def _exact_count(pairs, partitions, per_user_cap: int | None = None) -> dict:
    counts = {p: 0.0 for p in partitions}
    for _, partition in pairs:
        if partition in counts:
            counts[partition] += 1
    return counts


def run_urania(conversation_ids: list[str], user_ids: list[str], facets: list[str], embeddings: np.ndarray,
               config: UraniaConfig = UraniaConfig(), seed: int = 0, noise_seed: int | None = None,
               exemplar_writer: ExemplarWriter | None = None, joint: JointCalibration | None = None,
               date: str | None = None, previous_reports: list[dict] = ()) -> dict:
    """The report the job would release for these conversations, plus `_private` (assignments; the
    released centres and, with exemplars, each topic's Evolution for evaluation). `exemplar_writer`:
    with config.exemplars_per_topic, the writer (default: the offline template writer). `joint`: a
    precomputed calibration of the stages' noise (a nightly plan's, eval/audit/nightly_privacy_modes.py) used
    instead of calibrating config.epsilon; its cluster sizes may be a Gaussian count. `previous_reports`:
    the earlier nights' released reports, oldest first (as this returns them, or the job writes them):
    as the job's --warm_start auto, k-means starts from the latest one's centres (if config.warm_start
    is "auto"), and each topic gets the lineage id it continues (core/lineage.py), new ones named by
    `date`."""
    keyword_set = _keywords(config.keyword_set)
    keywords = keyword_set.keywords
    kept, weights = bound_contributions(user_ids, conversation_ids, config.max_conversations_per_user, seed)
    kept_users = [user_ids[i] for i in kept]
    kept_ids = [conversation_ids[i] for i in kept]
    vectors = embeddings[kept]
    joint = (joint or joint_calibration(config)) if config.private else None
    # Non-private: any noise multiplier; fit_kmeans then adds none.
    params = km.DPKMeansParams(num_clusters=config.num_clusters, epsilon=None, delta=config.delta,
                               noise_multiplier=joint.stages["clustering"].noise_multiplier if joint else 1.0,
                               input_dim=embeddings.shape[1], iterations=config.kmeans_iterations,
                               projection_dim=config.projection_dim, seed=seed, basis=config.projection_basis)
    active_dim, count_spend = choose_dimension(params, weights, config, joint, noise_seed)
    previous = PreviousNights.of(list(previous_reports)[-LOOKBACK_NIGHTS:], config.embedding_model,
                                 warm_start=config.warm_start == "auto", dim=embeddings.shape[1])
    centres, points, calibration = fit_kmeans(vectors, weights, params, config.private, noise_seed, active_dim,
                                              config.embedding_model, previous.warm_centres)
    clusters = km.assign_nearest(points, centres)

    size_pairs = list(zip(kept_users, clusters.tolist()))
    spends = [count_spend] if count_spend is not None else []
    if config.private:
        spends.append(calibration.spend(params))
        size_stage = joint.stages["cluster_sizes"]
        size_params = cluster_size_params(size_stage.pipeline_dp_budget[0], config.max_conversations_per_user)
        if size_stage.request.noise == "gaussian":  # only a precomputed `joint`: the job's count is Laplace
            size_params = dataclasses.replace(size_params, noise="gaussian", delta=size_stage.pipeline_dp_budget[1])
        sizes, size_spend = _dp_count(size_params, size_pairs, list(range(config.num_clusters)))
        spends.append(size_spend)
    else:
        sizes = _exact_count(size_pairs, list(range(config.num_clusters)))
    kept_sizes = {c: s for c, s in sizes.items() if s >= config.min_cluster_size}

    keyword_params = KeywordParams(samples_per_cluster=config.samples_per_cluster)
    samples_per_cluster = keyword_params.resolved_samples_per_cluster(OFFLINE_SELECTOR)
    sample = np.array([c in kept_sizes and poisson_keep(keyword_sampling_rate(samples_per_cluster, kept_sizes[c]),
                                                        seed, "keywords", cid)
                       for cid, c in zip(kept_ids, clusters.tolist())], dtype=bool)
    selector = _selector(keywords, config.embedding_model, config.keyword_min_similarity)
    weighted = config.keyword_votes == "weighted"
    categories = _categories(config.keyword_set, config.embedding_model)
    # As the job: category votes with weighted votes and a keyword set that has categories.
    category_share = config.category_vote_share if weighted and categories.names else 0.0
    vote_categories = categories.names if category_share else ()
    category_of = categories.category_of if category_share else None
    columns = vote_columns(keywords, vote_categories)
    max_per_conversation = config.keywords_per_vote if weighted else config.max_keywords_per_conversation
    keyword_pairs, votes = [], []
    if sample.any() and kept_sizes:
        index = np.flatnonzero(sample)
        picks = selector.select([facets[kept[i]] for i in index], vectors[index], max_per_conversation)
        in_k = frozenset(keywords)
        for i, chosen in zip(index, picks):
            in_set = list(dict.fromkeys(k for k in chosen if k in in_k))[:max_per_conversation]
            if weighted:
                votes += [(int(clusters[i]), column, value)
                          for column, value in conversation_votes(in_set, float(weights[i]), config.keywords_per_vote,
                                                                  category_of, category_share)]
            else:
                keyword_pairs += [(kept_users[i], (int(clusters[i]), keyword)) for keyword in in_set]
    # Zero budget: the keywords nearest each DP centre (transforms/centroid_keywords.nearest_keywords).
    keyword_points = km.project_points(_keyword_embeddings(keywords, config.embedding_model),
                                       _basis(params, config.embedding_model), active_dim)
    nearest = nearest_keywords(centres, keyword_points, keywords, len(keywords))  # K ranked per centre
    candidates = ({c: nearest[c][:config.keyword_candidates] for c in kept_sizes} if config.keyword_candidates
                  else None)
    partitions = [(c, k) for c in sorted(kept_sizes) for k in keywords]
    candidates_per_topic = config.keyword_candidates or len(keywords)
    noise = None
    if config.private and weighted:
        stage = joint.stages["keyword_histograms"]
        histogram = released_histogram(
            noisy_vote_sums(exact_vote_sums(votes, config.num_clusters, columns), stage.noise_std_parameter,
                            noise_seed), kept_sizes, columns)
        histogram_spend = vote_spend(stage.noise_multiplier, config.delta)
        spends.append(histogram_spend)
        noise = histogram_spend.noise
    elif config.private:
        privacy = _privacy_params(config.epsilon, config.epsilon_weights, config.delta, config.keyword_votes,
                                  config.keyword_noise, config.max_keyword_partitions_per_user)
        count_params = keyword_count_params(*joint.stages["keyword_histograms"].pipeline_dp_budget,
                                            privacy.histogram_noise, privacy.keyword_partitions_per_user)
        if partitions:
            histogram, histogram_spend = _dp_count(count_params, keyword_pairs, partitions)
        else:  # nothing kept: the histogram stage releases nothing, but the job still accounts for it
            histogram, histogram_spend = {}, _dp_count(count_params, [], [(0, keywords[0])])[1]
        spends.append(histogram_spend)
        noise = histogram_spend.noise
    elif weighted:
        histogram = released_histogram(exact_vote_sums(votes, config.num_clusters, columns), kept_sizes, columns)
    else:
        histogram = _exact_count(keyword_pairs, partitions)
    # Non-private: no noise, so any vote releases (weighted) or one user's count (count).
    floors = (vote_floors(noise, candidates_per_topic, config.false_keywords_per_topic) if noise is not None
              else VoteFloors(None, config.false_keywords_per_topic, 1e-9 if weighted else 1.0))
    min_users = min_users_to_label(floors, category_share, len(vote_categories)) if noise is not None else None
    per_cluster: dict[int, list] = {c: [] for c in kept_sizes}
    for (cluster, column), value in histogram.items():
        per_cluster[cluster].append((column, value))
    namer = KeywordClusterNamer(categories)
    named = {}
    for cluster, values in per_cluster.items():
        chosen, voted_category = voted_keywords(values, config.keywords_per_cluster, floors, categories.category_of,
                                                categories.sensitive,
                                                None if candidates is None else frozenset(candidates[cluster]))
        chosen, source, voted_category = label_keywords(chosen, nearest[cluster] if config.label_fallback == "centroid"
                                                        else None, config.keywords_per_cluster, voted_category,
                                                        categories.category_of)
        named[cluster] = name_topic(namer, list(chosen), source, categories, voted_category)
    named = distinct_names(named, categories.category_of)
    hierarchy = build_hierarchy(report_topics(named, kept_sizes), centres, categories.category_of, namer)
    # As the job's AssignLineages (transforms/topic_lineage.py): post-processing of the DP centres.
    lineage = lineage_section(centres, _basis(params, config.embedding_model), list(kept_sizes), previous,
                              date or f"seed{seed}", config.embedding_model)
    evolutions = {}
    if config.exemplars_per_topic:
        # As transforms/write_exemplars.py: after naming, from the released topics and DP centres only.
        writer = exemplar_writer or TemplateExemplarWriter()
        writer.setup()
        basis = _basis(params, config.embedding_model)

        def points_of(texts: list[str]) -> np.ndarray:
            return km.project_points(embedding.embed_texts(config.embedding_model, texts), basis, active_dim)

        for cluster in sorted(named):
            evolutions[cluster] = evolve_exemplars(writer, named[cluster], centres[cluster], points_of,
                                                   config.exemplars_per_topic, config.exemplar_candidates,
                                                   config.exemplar_rounds)
            named[cluster] = {**named[cluster],
                              "exemplars": [e.to_json() for e in evolutions[cluster].exemplars]}
    budget = RunBudget.of(spends, config.delta) if config.private else None
    report = build_report(named, kept_sizes, list(budget.entries) if budget else spends,
                          config.max_conversations_per_user,
                          {"pipeline": "urania (in-process evaluation run)", **dataclasses.asdict(config),
                           "seed": seed, "clustering_dimension": active_dim}, hierarchy=hierarchy,
                          composition=budget.composition() if budget else None,
                          labelling=labelling_section(min_users, floors.keyword, candidates_per_topic,
                                                      config.false_keywords_per_topic,
                                                      category_votes_section(floors, category_share, vote_categories)
                                                      if noise is not None else None),
                          lineage=lineage, stage_releases=dp_stage_specs.stage_releases())
    if not config.private:
        report["privacy"] = {"differentially_private": False, "note": "epsilon = inf: every mechanism switched off"}
    else:
        report["privacy"]["differentially_private"] = True
    report["_private"] = {"assignments": dict(zip(kept_ids, clusters.tolist())), "centres": centres,
                          "exemplar_evolutions": evolutions}
    return report
