"""The URANIA job run in-process on pre-computed embeddings, for evaluations that need hundreds of
runs (membership inference: 400; the sweep: 5 configurations per data set).

The job's own stages on the local engine (transforms/engine.py): run_urania bounds contributions by the
job's rule (dp_ops.contribution_bounding, via eval.data), puts the kept conversations in one
ConversationBlock and runs transforms.topic_stages.topic_stages on it, the wiring the Beam job runs,
with the job's joint calibration (dp_ops.joint_calibration, from the stages' declarations) and the
offline backends. It then builds report.json as the job does (core.report.build_report).
Differs from the Beam job: no reading, facets or embedding (the vectors are given), no release gate
and no files; k-means sums all points at once (the job: per block); the keyword set, categories and
selector are set up once per process. With `noise_seed` the noise is seeded as the job's --noise_seed
(never for real releases). epsilon = inf switches every mechanism off (exact k-means, exact counts,
keyword floor 1): the non-private URANIA of the paper's sweep.
"""

from __future__ import annotations

import dataclasses
import functools
import math

import numpy as np

from backends.centre_decoder import NameBank, TemplateLabelWriter, load_bank
from backends.facet_set import load_facet_set
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
    facet_names,
)
from core.lineage import LOOKBACK_NIGHTS
from core.previous_nights import PreviousNights
from core.records import ConversationBlock
from core.report import build_report
from dp_ops import dp_kmeans as km
from dp_ops.joint_calibration import JointCalibration, calibrate_jointly
from dp_ops.run_budget import RunBudget
from dp_ops.token_decoding import STAGE as TOKEN_DECODING_STAGE
from dp_ops.token_decoding import token_decoding_request
from eval.data import bound_contributions
from transforms import dp_stage_specs
from transforms.decode_centres import DecoderSettings
from transforms.dp_stage_specs import StageSettings
from transforms.engine import LocalEngine
from transforms.keyword_histograms import DPKeywordVotes
from transforms.token_decoding import TokenDecodingPlan
from transforms.topic_keywords import KeywordSettings
from transforms.topic_release import ExemplarSettings
from transforms.topic_stages import TopicPlan, topic_stages


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
    centre_decoder: bool = ExemplarParams.centre_decoder
    warm_start: str = ClusteringParams.warm_start
    themes: bool = KeywordParams.themes
    facets: str = KeywordParams.facets
    facet_set: str | None = KeywordParams.facet_set

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
                                  config.max_keyword_partitions_per_user, config.counts_users, config.themes,
                                  len(facet_names(config.facets)))


@functools.lru_cache(maxsize=32)
def _joint_calibration_for(epsilon: float, epsilon_weights: str, delta: float, kmeans_iterations: int,
                           max_conversations_per_user: int, keyword_votes: str, keyword_noise: str | None,
                           max_keyword_partitions_per_user: int | None, counts_users: bool,
                           themes: bool, facets: int) -> JointCalibration:
    privacy = _privacy_params(epsilon, epsilon_weights, delta, keyword_votes, keyword_noise,
                              max_keyword_partitions_per_user)
    return calibrate_jointly(epsilon, delta, _requests(privacy, kmeans_iterations, max_conversations_per_user,
                                                       counts_users, themes, facets))


def stage_requests(config: UraniaConfig) -> list:
    """The job's DP stages for this config as calibration requests (what joint_calibration calibrates,
    and what a nightly plan calibrates over a window: eval/utility/nightly_stream.py, eval/audit/nightly_privacy_modes.py)."""
    privacy = _privacy_params(DEFAULT_EPSILON, config.epsilon_weights, config.delta, config.keyword_votes,
                              config.keyword_noise, config.max_keyword_partitions_per_user)
    return _requests(privacy, config.kmeans_iterations, config.max_conversations_per_user, config.counts_users,
                     config.themes, len(facet_names(config.facets)))


def _requests(privacy: PrivacyParams, kmeans_iterations: int, max_conversations_per_user: int, counts_users: bool,
              themes: bool, facets: int):
    return dp_stage_specs.stage_requests(StageSettings(
        privacy.stage_weights(), kmeans_iterations, max_conversations_per_user, privacy.histogram_noise,
        privacy.keyword_partitions_per_user, privacy.keyword_votes, counts_users, themes,
        facets))


def _privacy_params(epsilon: float, epsilon_weights: str, delta: float, keyword_votes: str,
                    keyword_noise: str | None, max_keyword_partitions_per_user: int | None) -> PrivacyParams:
    """The job's privacy params (they check and resolve the keyword flags as the job's do)."""
    return PrivacyParams(epsilon=epsilon, epsilon_weights=epsilon_weights, delta=delta, keyword_votes=keyword_votes,
                         keyword_noise=keyword_noise, max_keyword_partitions_per_user=max_keyword_partitions_per_user)


@functools.lru_cache(maxsize=4)
def _keywords(path: str | None):
    return load_keyword_set(path)


@functools.lru_cache(maxsize=4)
def _categories(path: str | None, model: str) -> KeywordCategories:
    categories = KeywordCategories.of_keyword_set(_keywords(path), model)
    categories.setup()
    return categories


@functools.lru_cache(maxsize=1)
def _bank() -> NameBank:
    return load_bank()


@functools.lru_cache(maxsize=4)
def _selector(keywords: tuple[str, ...], model: str, min_similarity: float) -> EmbeddingKeywordSelector:
    selector = EmbeddingKeywordSelector(keywords, model, min_similarity)
    selector.setup()
    return selector


def topic_plan(config: UraniaConfig, joint: JointCalibration | None, input_dim: int, seed: int,
               noise_seed: int | None, exemplar_writer: ExemplarWriter | None, date: str | None,
               previous_reports, label_writer: ExemplarWriter | None = None) -> TopicPlan:
    """The job's topic stages' plan for this config (beam_jobs.insights.topic_plan's counterpart), with
    the offline backends, memoised across runs where they are set up (keyword set, categories, selector).
    Non-private (no `joint`): any noise multiplier, never drawn. `label_writer`: with
    config.centre_decoder, the decoder's writer (default: the offline template writer)."""
    keywords = _keywords(config.keyword_set).keywords
    categories = _categories(config.keyword_set, config.embedding_model)
    privacy = _privacy_params(DEFAULT_EPSILON, config.epsilon_weights, config.delta, config.keyword_votes,
                              config.keyword_noise, config.max_keyword_partitions_per_user)
    settings = KeywordSettings(
        mode="histogram", top_t=config.keywords_per_cluster, candidates=config.keyword_candidates or None,
        label_fallback=config.label_fallback,
        samples_per_cluster=KeywordParams(samples_per_cluster=config.samples_per_cluster).resolved_samples_per_cluster(
            OFFLINE_SELECTOR),
        min_similarity=config.keyword_min_similarity, weighted=config.keyword_votes == "weighted",
        keywords_per_vote=config.keywords_per_vote, max_keywords_per_conversation=config.max_keywords_per_conversation,
        category_vote_share=config.category_vote_share, false_keywords_per_topic=config.false_keywords_per_topic,
        min_noisy_count=None, seed=seed)
    exemplars = ExemplarSettings(config.exemplars_per_topic, config.exemplar_candidates, config.exemplar_rounds,
                                 (exemplar_writer or TemplateExemplarWriter()) if config.exemplars_per_topic else None,
                                 EmbeddingParams.embedding_backend, EmbeddingParams.embedding_device)
    return TopicPlan(
        calibration=joint, delta=config.delta, max_conversations_per_user=config.max_conversations_per_user,
        kmeans=km.DPKMeansParams(num_clusters=config.num_clusters, epsilon=None, delta=config.delta,
                                 noise_multiplier=joint.stages["clustering"].noise_multiplier if joint else 1.0,
                                 input_dim=input_dim, iterations=config.kmeans_iterations,
                                 projection_dim=config.projection_dim, seed=seed, basis=config.projection_basis),
        expected_users=config.expected_users,
        min_cluster_size=config.min_cluster_size,
        keyword_settings=settings,
        histogram_noise=privacy.histogram_noise,
        keyword_partitions_per_user=privacy.keyword_partitions_per_user,
        keywords=keywords,
        categories=categories,
        selector=_selector(keywords, config.embedding_model, config.keyword_min_similarity),
        namer=KeywordClusterNamer(categories),
        previous=PreviousNights.of(list(previous_reports)[-LOOKBACK_NIGHTS:], config.embedding_model,
                                   warm_start=config.warm_start == "auto", dim=input_dim),
        new_lineage_prefix=date or f"seed{seed}",
        model=config.embedding_model,
        exemplars=exemplars,
        noise_seed=noise_seed,
        themes=config.themes,
        facets=(load_facet_set(config.facet_set).select(facet_names(config.facets)) if config.facets.strip()
                else ()),
        decoder=(DecoderSettings(label_writer or TemplateLabelWriter(), _bank(), EmbeddingParams.embedding_backend,
                                 EmbeddingParams.embedding_device) if config.centre_decoder else None),
    )


def _config_shown(config: UraniaConfig) -> dict:
    """The config as the report shows it; centre_decoder only when on (as the job's derived_public_values)."""
    shown = dataclasses.asdict(config)
    if not config.centre_decoder:
        del shown["centre_decoder"]
    return shown


def run_urania(conversation_ids: list[str], user_ids: list[str], facets: list[str], embeddings: np.ndarray,
               config: UraniaConfig = UraniaConfig(), seed: int = 0, noise_seed: int | None = None,
               exemplar_writer: ExemplarWriter | None = None, joint: JointCalibration | None = None,
               date: str | None = None, previous_reports: list[dict] = (),
               label_writer: ExemplarWriter | None = None,
               token_decoding: TokenDecodingPlan | None = None) -> dict:
    """The report the job would release for these conversations, plus `_private` (assignments; the
    released centres and, with exemplars, each topic's Evolution for evaluation). `exemplar_writer`:
    with config.exemplars_per_topic, the writer (default: the offline template writer). `joint`: a
    precomputed calibration of the stages' noise (a nightly plan's, eval/audit/nightly_privacy_modes.py) used
    instead of calibrating config.epsilon; its cluster sizes may be a Gaussian count. `previous_reports`:
    the earlier nights' released reports, oldest first (as this returns them, or the job writes them):
    as the job's --warm_start auto, k-means starts from the latest one's centres (if config.warm_start
    is "auto"), and each topic gets the lineage id it continues (core/lineage.py), new ones named by
    `date`. `label_writer`: with config.centre_decoder, the decoder's writer (default: templates); each
    topic's DecodedLabel is then in `_private["centre_decodings"]`. `token_decoding`:
    the token-level private decoding stage (transforms/token_decoding.py), calibrated jointly with the
    others at its --epsilon_weights share; its descriptions are in report["token_decoding"]."""
    kept, weights = bound_contributions(user_ids, conversation_ids, config.max_conversations_per_user, seed)
    kept_ids = [conversation_ids[i] for i in kept]
    block = ConversationBlock(kept_ids, [user_ids[i] for i in kept], weights, [facets[i] for i in kept],
                              embeddings[kept])
    if token_decoding is not None and config.private and joint is None:
        weights = _privacy_params(DEFAULT_EPSILON, config.epsilon_weights, config.delta, config.keyword_votes,
                                  config.keyword_noise, config.max_keyword_partitions_per_user).stage_weights()
        joint = calibrate_jointly(config.epsilon, config.delta, [
            *stage_requests(config), token_decoding_request(weights[TOKEN_DECODING_STAGE], token_decoding.params)])
    joint = (joint or joint_calibration(config)) if config.private else None
    budget = RunBudget(config.delta) if config.private else None
    engine = LocalEngine()
    plan = topic_plan(config, joint, embeddings.shape[1], seed, noise_seed, exemplar_writer, date, previous_reports,
                      label_writer)
    stages = topic_stages(engine, [block], dataclasses.replace(plan, token_decoding=token_decoding), budget)
    kmeans, released = stages.kmeans, stages.released
    report = build_report(released.topics, stages.kept_sizes, list(budget.entries) if budget else [],
                          config.max_conversations_per_user,
                          {"pipeline": "urania (in-process evaluation run)", **_config_shown(config),
                           "seed": seed, "clustering_dimension": kmeans.active_dim}, hierarchy=released.hierarchy,
                          composition=budget.composition() if budget else None,
                          labelling=stages.keywords.labelling, lineage=released.lineage,
                          stage_releases=dp_stage_specs.stage_releases(),
                          themes=stages.themes.section if stages.themes else None,
                          facets=stages.facets.section if stages.facets else None)
    if not config.private:
        report["privacy"] = {"differentially_private": False, "note": "epsilon = inf: every mechanism switched off"}
    else:
        report["privacy"]["differentially_private"] = True
    if stages.token_decoding is not None:
        report["token_decoding"] = {str(c): row for c, row in sorted(stages.token_decoding.descriptions.items())}
    clusters = np.concatenate([assigned.cluster_ids for assigned in stages.assigned])
    report["_private"] = {"assignments": dict(zip(kept_ids, clusters.tolist())), "centres": kmeans.centres,
                          "basis": kmeans.basis,  # with config.clustering_dimension, the centres' projection
                          "exemplar_evolutions": engine.private.get("exemplar_evolutions", {}),
                          "centre_decodings": engine.private.get("centre_decodings", {}),
                          # the weighted votes' noisy release, for the free themes (nightly_stream.with_free_themes)
                          "keyword_votes": ({"release": dict(stages.keywords.release), "sigma": stages.keywords.stage.sigma}
                                            if isinstance(stages.keywords.stage, DPKeywordVotes) else None)}
    return report
