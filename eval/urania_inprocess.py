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
import typing

import numpy as np

from backends.centre_decoder import NameBank, TemplateLabelWriter, load_bank
from backends.interfaces import ExemplarWriter
from backends.keyword_categories import KeywordCategories
from backends.keyword_set import load_keyword_set
from backends.offline import EmbeddingKeywordSelector, KeywordClusterNamer
from backends.offline_exemplars import TemplateExemplarWriter
from beam_jobs.topic_plan import TopicBackends
from beam_jobs.topic_plan import stage_requests as job_stage_requests
from beam_jobs.topic_plan import topic_plan as job_topic_plan
from config.embedding import Encoder
from config.insights import InsightsParams
from config.privacy import DEFAULT_EPSILON
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
from publishing.report import ReleasePrivacy, build_report
from transforms.dp_votes import DPKeywordVotes
from transforms.engine import LocalEngine
from transforms.release_stage import report_parts
from transforms.token_decoding import TokenDecodingPlan
from transforms.topic_stages import TopicPlan, topic_stages

# The flags the report's config has always shown, in its order (the in-process snapshots compare its text).
# UraniaConfig has these fields first, then every other flag of the groups below that this run honours.
REPORTED_FLAGS = (
    "num_clusters", "max_conversations_per_user", "epsilon", "epsilon_weights", "delta", "min_cluster_size",
    "samples_per_cluster", "keywords_per_cluster", "max_keywords_per_conversation",
    "max_keyword_partitions_per_user", "keyword_min_similarity", "kmeans_iterations", "projection_dim",
    "projection_basis", "expected_users", "keyword_noise", "keyword_votes", "keywords_per_vote",
    "category_vote_share", "false_keywords_per_topic", "keyword_candidates", "label_fallback", "embedding_model",
    "keyword_set", "exemplars_per_topic", "exemplar_candidates", "exemplar_rounds", "centre_decoder",
    "warm_start", "warm_prior", "themes", "facets", "facet_set")
# The job's groups this run has no part of: it reads no files, writes none, keeps no ledger, calls no LLM
# (the offline backends), and takes token decoding as its own argument (run_urania's `token_decoding`).
UNRUN_GROUPS = ("reading", "decoding", "llm", "run")
# Flags of the groups it runs that it cannot honour, and why.
UNHONOURED_FLAGS = {
    "noise_seed": "run_urania's own noise_seed argument",
    "epsilon_clustering": "retired", "epsilon_size": "retired", "epsilon_keywords": "retired",
    "embedding_backend": "the vectors are given; keywords and exemplars are embedded with torch on the CPU",
    "embedding_device": "the vectors are given; keywords and exemplars are embedded with torch on the CPU",
    "embedding_threads": "no worker processes",
    "embedding_block_size": "the kept conversations are one block",
}


def _declared(job: type) -> dict[str, tuple[str, dataclasses.Field]]:
    """Each flag of the groups this run has (all of `job`'s but UNRUN_GROUPS): its group's name and field."""
    return {field.name: (name, field) for name, group in typing.get_type_hints(job).items()
            if name not in UNRUN_GROUPS for field in flag_fields(group)}


def honoured_flags(job: type = InsightsParams) -> tuple[str, ...]:
    """The job's flags a config for `job` (InsightsParams or one with more flags) has: REPORTED_FLAGS, then
    the others of the groups it runs, in their groups' order, less UNHONOURED_FLAGS."""
    declared = _declared(job)
    missing = set(REPORTED_FLAGS) - set(declared)
    if missing:
        raise ValueError(f"REPORTED_FLAGS names flags no group declares: {sorted(missing)}")
    return REPORTED_FLAGS + tuple(name for name in declared
                                  if name not in REPORTED_FLAGS and name not in UNHONOURED_FLAGS)


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
    if name not in UraniaConfig.flags:
        raise ValueError(f"{name!r} is not a flag the in-process run honours: {', '.join(UraniaConfig.flags)}")
    return UraniaConfig.declared[name]


def config_class(job: type = InsightsParams) -> type:
    """The in-process run's config for the job's params `job`: a frozen dataclass with a field per
    honoured flag (honoured_flags), typed and defaulted as its group declares it."""
    flags, declared = honoured_flags(job), _declared(job)

    def field_of(name: str) -> tuple[str, object, dataclasses.Field]:
        _, field = declared[name]
        # epsilon: the job's default budget when none is given (the job plans one from a ledger's cap,
        # which this run has not); math.inf switches every mechanism off.
        if name == "epsilon":
            return name, "float", dataclasses.field(default=DEFAULT_EPSILON)
        return name, field.type, dataclasses.field(default=field.default)

    return dataclasses.make_dataclass(
        "UraniaConfig", [field_of(name) for name in flags], bases=(_ConfigMethods,), frozen=True,
        namespace={"__doc__": "The job's flags this run honours (honoured_flags), with the job's defaults.",
                   "__module__": __name__, "job": job, "flags": flags,
                   "declared": {name: declared[name][1] for name in flags},
                   "group_of": {name: declared[name][0] for name in flags}})


UraniaConfig = config_class()
CONFIG_FLAGS = UraniaConfig.flags


def job_params(config: UraniaConfig, seed: int = 0, noise_seed: int | None = None) -> InsightsParams:
    """The job's params for this config, checked as the job checks its flags. The privacy group gets the
    job's default epsilon (its own check refuses math.inf): the run calibrates config.epsilon itself."""
    groups = typing.get_type_hints(config.job)
    values: dict[str, dict] = {group: {} for group in groups}
    for name in config.flags:
        values[config.group_of[name]][name] = getattr(config, name)
    values["privacy"].update(epsilon=DEFAULT_EPSILON, noise_seed=noise_seed)
    values["run"].update(seed=seed)
    return config.job(**{group: params(**values[group]) for group, params in groups.items()})


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


def run_encoder(config: UraniaConfig) -> Encoder:
    """The run's one encoder (the job's EmbeddingParams.encoder): config.embedding_model, run as the job's
    default flags run it (torch on the CPU: UNHONOURED_FLAGS). Every public text of the run is embedded with it;
    the evaluations that build the stages themselves take theirs from here too."""
    return job_params(config).embedding.encoder


@functools.lru_cache(maxsize=4)
def _keywords(path: str | None):
    return load_keyword_set(path)


@functools.lru_cache(maxsize=4)
def _categories(path: str | None, encoder: Encoder) -> KeywordCategories:
    categories = KeywordCategories.of_keyword_set(_keywords(path), encoder)
    categories.setup()
    return categories


@functools.lru_cache(maxsize=1)
def _bank() -> NameBank:
    return load_bank()


@functools.lru_cache(maxsize=4)
def _selector(keywords: tuple[str, ...], encoder: Encoder, min_similarity: float) -> EmbeddingKeywordSelector:
    selector = EmbeddingKeywordSelector(keywords, encoder, min_similarity)
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
    encoder = params.embedding.encoder  # the run's one encoder (run_encoder), which the plan's stages embed with too
    keywords = _keywords(config.keyword_set).keywords
    categories = _categories(config.keyword_set, encoder)
    return job_topic_plan(params, joint, input_dim, TopicBackends(
        keywords=keywords,
        categories=categories,
        selector=_selector(keywords, encoder, config.keyword_min_similarity),
        namer=KeywordClusterNamer(categories),
        previous=PreviousNights.of(list(previous_reports)[-LOOKBACK_NIGHTS:], encoder.model,
                                   warm_start=config.warm_start == "auto", dim=input_dim),
        new_lineage_prefix=date or f"seed{seed}",
        exemplar_writer=exemplar_writer or TemplateExemplarWriter(),
        label_writer=label_writer or TemplateLabelWriter(),
        name_bank=_bank() if config.centre_decoder else None))


def config_shown(config: UraniaConfig) -> dict:
    """The config as the report shows it: REPORTED_FLAGS, then any other flag set away from the job's default,
    so a run on defaults shows what it always has and no setting that changes the run is left out."""
    shown = {name: getattr(config, name) for name in REPORTED_FLAGS}
    if shown["keyword_min_similarity"] is None:  # the encoder's own floor: show the value the run used
        shown["keyword_min_similarity"] = run_encoder(config).floors.keyword_vote
    shown.update({name: getattr(config, name) for name in config.flags[len(REPORTED_FLAGS):]
                  if getattr(config, name) != config.declared[name].default})
    return shown


@dataclasses.dataclass(frozen=True)
class NightContext:
    """Where a run sits in a stream of nights: its `date` (new lineages are named by it), the earlier nights'
    released reports, oldest first (as run_urania returns them, or the job writes them), and the night's
    precomputed calibration `joint` (a nightly plan's: eval/audit/nightly_privacy_modes.py), used instead of
    calibrating config.epsilon; its cluster sizes may be a Gaussian count."""

    date: str | None = None
    previous_reports: typing.Sequence[dict] = ()
    joint: JointCalibration | None = None


@dataclasses.dataclass(frozen=True)
class Writers:
    """The model-backed steps' writers, for the steps the config turns on (None: the offline ones).
    `exemplar_writer`: with config.exemplars_per_topic (default: the offline template writer). `label_writer`:
    with config.centre_decoder, the decoder's writer (default: templates). `token_decoding`: the token-level
    private decoding stage (transforms/token_decoding.py), calibrated jointly with the others at its
    --epsilon_weights share."""

    exemplar_writer: ExemplarWriter | None = None
    label_writer: ExemplarWriter | None = None
    token_decoding: TokenDecodingPlan | None = None


def run_urania(conversation_ids: list[str], user_ids: list[str], facets: list[str], embeddings: np.ndarray,
               config: UraniaConfig = UraniaConfig(), seed: int = 0, noise_seed: int | None = None,
               night: NightContext = NightContext(), writers: Writers = Writers()) -> dict:
    """The report the job would release for these conversations, plus `_private` (assignments; the
    released centres and, with exemplars, each topic's Evolution for evaluation). With `night`'s earlier
    reports, as the job's --warm_start auto, k-means starts from the latest one's centres (if
    config.warm_start is "auto"), and each topic gets the lineage id it continues (publishing/lineage.py).
    With a label writer, each topic's DecodedLabel is in `_private["centre_decodings"]`; with token
    decoding, each topic's description is its "token_decoded", as the job's."""
    joint, token_decoding = night.joint, writers.token_decoding
    kept, weights = bound_contributions(user_ids, conversation_ids, config.max_conversations_per_user, seed)
    kept_ids = [conversation_ids[i] for i in kept]
    block = ConversationBlock(kept_ids, [user_ids[i] for i in kept], weights, [facets[i] for i in kept],
                              embeddings[kept])
    if token_decoding is not None and config.private and joint is None:
        weights = job_params(config).privacy.stage_weights()
        joint = calibrate_jointly(config.epsilon, config.delta, [
            *stage_requests(config), token_decoding_request(weights[TOKEN_DECODING_STAGE], token_decoding.params)])
    joint = (joint or joint_calibration(config)) if config.private else None
    if joint is not None:
        missing = sorted({request.stage for request in stage_requests(config)} - set(joint.stages))
        if missing:
            raise ValueError(f"the given calibration has no noise for the stages {missing} that this config "
                             "enables: calibrate them too, or turn them off in the config")
    budget = RunBudget(config.delta) if config.private else None
    engine = LocalEngine()
    plan = topic_plan(config, joint, embeddings.shape[1], seed, noise_seed, writers.exemplar_writer, night.date,
                      night.previous_reports, writers.label_writer)
    stages = topic_stages(engine, [block], dataclasses.replace(plan, token_decoding=token_decoding), budget)
    kmeans, released = stages.kmeans, stages.released
    sections, topic_fields = report_parts(stages.releases)
    privacy = ReleasePrivacy(list(budget.entries) if budget else [], config.max_conversations_per_user,
                             budget.composition() if budget else None, dp_stage_specs.stage_releases(),
                             stages.keywords.labelling)
    report = build_report(released.topics, stages.kept_sizes, privacy,
                          {"pipeline": "urania (in-process evaluation run)", **config_shown(config),
                           "seed": seed, "clustering_dimension": kmeans.active_dim}, hierarchy=released.hierarchy,
                          lineage=released.lineage, sections=sections, topic_fields=topic_fields)
    if not config.private:
        report["privacy"] = {"differentially_private": False, "note": "epsilon = inf: every mechanism switched off"}
    else:
        report["privacy"]["differentially_private"] = True
    clusters = np.concatenate([assigned.cluster_ids for assigned in stages.assigned])
    report["_private"] = {"assignments": dict(zip(kept_ids, clusters.tolist())), "centres": kmeans.centres,
                          "basis": kmeans.basis,  # with config.clustering_dimension, the centres' projection
                          "exemplar_evolutions": engine.private.get("exemplar_evolutions", {}),
                          "centre_decodings": engine.private.get("centre_decodings", {}),
                          # the weighted votes' noisy release, for the free themes (nightly_stream.with_free_themes)
                          "keyword_votes": ({"release": dict(stages.keywords.release), "sigma": stages.keywords.stage.sigma}
                                            if isinstance(stages.keywords.stage, DPKeywordVotes) else None)}
    return report
