"""The URANIA job run in-process on pre-computed embeddings, for evaluations that need hundreds of
runs (membership inference: 400; the sweep: 5 configurations per data set).

The job's own stages on the local engine (transforms/engine.py): run_urania bounds contributions by the
job's rule (dp_ops.contribution_bounding, via eval.data), puts the kept conversations in one
ConversationBlock and runs transforms.topic_stages.topic_stages on it, the wiring the Beam job runs,
with the job's joint calibration (dp_ops.joint_calibration, from the stages' declarations) and the
offline backends. It then builds report.json as the job does (publishing.report.build_report).
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
from backends.interfaces import ExemplarWriter
from backends.keyword_categories import KeywordCategories
from backends.keyword_set import load_keyword_set
from backends.llm.config import LLMParams
from backends.offline import EmbeddingKeywordSelector, KeywordClusterNamer
from backends.offline_exemplars import TemplateExemplarWriter
from beam_jobs.options import InsightsParams
from beam_jobs.topic_plan import TopicBackends
from beam_jobs.topic_plan import stage_requests as job_stage_requests
from beam_jobs.topic_plan import topic_plan as job_topic_plan
from config.clustering import ClusteringParams
from config.decoding import DecodingParams
from config.embedding import EmbeddingParams
from config.exemplars import ExemplarParams
from config.keywords import KeywordParams
from config.privacy import DEFAULT_EPSILON, PrivacyParams
from config.reading import ReadingParams
from config.run import RunParams
from core.params import flag_fields
from core.records import ConversationBlock
from dp_ops import dp_stage_specs
from dp_ops.joint_calibration import JointCalibration, StageRequest, calibrate_jointly
from dp_ops.run_budget import RunBudget
from dp_ops.token_decoding import STAGE as TOKEN_DECODING_STAGE
from dp_ops.token_decoding import token_decoding_request
from eval.data import bound_contributions
from publishing.lineage import LOOKBACK_NIGHTS
from publishing.previous_nights import PreviousNights
from publishing.report import build_report
from transforms.engine import LocalEngine
from transforms.keyword_histograms import DPKeywordVotes
from transforms.token_decoding import TokenDecodingPlan
from transforms.topic_stages import TopicPlan, topic_stages

# The job's flags this in-process run honours, in the order the report shows them. Their types, defaults
# and checks are the job's params groups' (beam_jobs/options.py), read below, so a flag is declared
# once. The job's other flags are about reading, workers, LLM backends and run storage, which this
# run does not have.
CONFIG_FLAGS = (
    "num_clusters", "max_conversations_per_user", "epsilon", "epsilon_weights", "delta", "min_cluster_size",
    "samples_per_cluster", "keywords_per_cluster", "max_keywords_per_conversation",
    "max_keyword_partitions_per_user", "keyword_min_similarity", "kmeans_iterations", "projection_dim",
    "projection_basis", "expected_users", "keyword_noise", "keyword_votes", "keywords_per_vote",
    "category_vote_share", "false_keywords_per_topic", "keyword_candidates", "label_fallback", "embedding_model",
    "keyword_set", "exemplars_per_topic", "exemplar_candidates", "exemplar_rounds", "centre_decoder",
    "warm_start", "warm_prior", "themes", "facets", "facet_set")
_GROUPS = {"privacy": PrivacyParams, "clustering": ClusteringParams, "embedding": EmbeddingParams,
           "keywords": KeywordParams, "exemplars": ExemplarParams}
_GROUP_OF = {field.name: group for group, params in _GROUPS.items() for field in flag_fields(params)}


class _ConfigMethods:
    def __post_init__(self):
        job_params(self)  # refuses what the job's flags refuse, naming the flag

    @property
    def private(self) -> bool:
        return math.isfinite(self.epsilon)

    @property
    def counts_users(self) -> bool:
        return job_params(self).clustering.counts_users


def job_flag(name: str) -> dataclasses.Field:
    """The job's declaration of the flag `name` (its default, type and help), from its params group."""
    if name not in CONFIG_FLAGS:
        raise ValueError(f"{name!r} is not a flag the in-process run honours: {', '.join(CONFIG_FLAGS)}")
    return {field.name: field for field in flag_fields(_GROUPS[_GROUP_OF[name]])}[name]


def _config_field(name: str) -> tuple[str, str, dataclasses.Field]:
    declared = job_flag(name)
    # epsilon: the job's default budget when none is given (the job plans one from a ledger's cap,
    # which this run has not); math.inf switches every mechanism off.
    if name == "epsilon":
        return name, "float", dataclasses.field(default=DEFAULT_EPSILON)
    return name, declared.type, dataclasses.field(default=declared.default)


UraniaConfig = dataclasses.make_dataclass(
    "UraniaConfig", [_config_field(name) for name in CONFIG_FLAGS], bases=(_ConfigMethods,), frozen=True,
    namespace={"__doc__": "The job's options that matter here (CONFIG_FLAGS), with the job's defaults.",
               "__module__": __name__})


def job_params(config: UraniaConfig, seed: int = 0, noise_seed: int | None = None) -> InsightsParams:
    """The job's params for this config, checked as the job checks its flags. The privacy group gets the
    job's default epsilon (its own check refuses math.inf): the run calibrates config.epsilon itself."""
    values: dict[str, dict] = {group: {} for group in _GROUPS}
    for name in CONFIG_FLAGS:
        values[_GROUP_OF[name]][name] = getattr(config, name)
    values["privacy"].update(epsilon=DEFAULT_EPSILON, noise_seed=noise_seed)
    return InsightsParams(reading=ReadingParams(), decoding=DecodingParams(), llm=LLMParams(),
                          run=RunParams(seed=seed),
                          **{group: params(**values[group]) for group, params in _GROUPS.items()})


def joint_calibration(config: UraniaConfig) -> JointCalibration:
    """The job's joint calibration of its stages' noise (memoised on what it depends on: a sweep over
    dimensions or bases calibrates once)."""
    return _joint_calibration_for(config.epsilon, config.delta, tuple(stage_requests(config)))


@functools.lru_cache(maxsize=32)
def _joint_calibration_for(epsilon: float, delta: float, requests: tuple[StageRequest, ...]) -> JointCalibration:
    return calibrate_jointly(epsilon, delta, list(requests))


def stage_requests(config: UraniaConfig) -> list[StageRequest]:
    """The job's DP stages for this config as calibration requests (what joint_calibration calibrates,
    and what a nightly plan calibrates over a window: eval/utility/nightly_stream.py, eval/audit/nightly_privacy_modes.py)."""
    return job_stage_requests(job_params(config))


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
    """The job's topic stages' plan for this config (beam_jobs/topic_plan.py), with the offline backends,
    memoised across runs where they are set up (keyword set, categories, selector). Non-private (no
    `joint`): no noise is drawn. `label_writer`: with config.centre_decoder, the decoder's writer
    (default: the offline template writer)."""
    params = job_params(config, seed, noise_seed)
    keywords = _keywords(config.keyword_set).keywords
    categories = _categories(config.keyword_set, config.embedding_model)
    return job_topic_plan(params, joint, input_dim, TopicBackends(
        keywords=keywords,
        categories=categories,
        selector=_selector(keywords, config.embedding_model, config.keyword_min_similarity),
        namer=KeywordClusterNamer(categories),
        previous=PreviousNights.of(list(previous_reports)[-LOOKBACK_NIGHTS:], config.embedding_model,
                                   warm_start=config.warm_start == "auto", dim=input_dim),
        new_lineage_prefix=date or f"seed{seed}",
        exemplar_writer=exemplar_writer or TemplateExemplarWriter(),
        label_writer=label_writer or TemplateLabelWriter(),
        name_bank=_bank() if config.centre_decoder else None))


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
    is "auto"), and each topic gets the lineage id it continues (publishing/lineage.py), new ones named by
    `date`. `label_writer`: with config.centre_decoder, the decoder's writer (default: templates); each
    topic's DecodedLabel is then in `_private["centre_decodings"]`. `token_decoding`:
    the token-level private decoding stage (transforms/token_decoding.py), calibrated jointly with the
    others at its --epsilon_weights share; its descriptions are in report["token_decoding"]."""
    kept, weights = bound_contributions(user_ids, conversation_ids, config.max_conversations_per_user, seed)
    kept_ids = [conversation_ids[i] for i in kept]
    block = ConversationBlock(kept_ids, [user_ids[i] for i in kept], weights, [facets[i] for i in kept],
                              embeddings[kept])
    if token_decoding is not None and config.private and joint is None:
        weights = job_params(config).privacy.stage_weights()
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
