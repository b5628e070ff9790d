"""The insights job's DP stages, each declared once: its name (a constant of core/dp_stages.py, which
every layer that files something under the stage imports), its default share of the run's epsilon,
its calibration request, what it releases and its progress line.

Everything that lists the stages reads this tuple: the --epsilon_weights flag (names, defaults, help),
the joint calibration of the job and of the in-process evaluation (`stage_requests`), the nightly
plans, the progress lines (beam_jobs/progress.py) and the report, whose privacy panel says what each
mechanism released (`releases`, written next to the stage's spend in report.json).

A new DP stage is one DPStageSpec here, its transform (a transforms.dp_stage.DPStage, which
registers its spend with the run's budget, with its in-process form `local`) and its place in
transforms/topic_stages.topic_stages, which both the job and the in-process evaluation run.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Mapping

from core.dp_stages import (
    CLUSTER_SIZES,
    CLUSTERING,
    FACET_TOPICS,
    FACETS,
    KEYWORD_HISTOGRAMS,
    KEYWORD_SET,
    THEMES,
    TOKEN_DECODING,
    USER_COUNT,
)
from core.progress_stage import ProgressStage
from dp_ops.fixed_histogram import fixed_partition_request
from dp_ops.joint_calibration import (
    StageRequest,
    clustering_request,
    count_request,
    keyword_votes_request,
    user_count_request,
)
from dp_ops.theme_histogram import theme_request
from dp_ops.token_decoding import TokenDecodingParams, token_decoding_request


@dataclasses.dataclass(frozen=True)
class StageSettings:
    """The public run settings a stage's calibration request depends on (never data)."""

    weights: Mapping[str, float]
    kmeans_iterations: int
    max_conversations_per_user: int
    keyword_noise: str | None  # None: no keyword histogram (--keyword_mode centroid)
    keyword_partitions_per_user: int
    keyword_votes: str = "weighted"
    counts_users: bool = False  # --projection_dim auto without --expected_users
    themes: bool = False  # --themes: the fixed themes' DP histogram (dp_ops/theme_histogram.py)
    facets: int = 0  # --facets: how many facets are released (dp_ops/facets.py), one Gaussian each per stage
    token_decoding: TokenDecodingParams | None = None  # --token_decoding_steps > 0 (dp_ops/token_decoding.py)


@dataclasses.dataclass(frozen=True)
class DPStageSpec:
    """One DP stage. `default_weight` None: not part of a run's joint calibration (the DP keyword set is
    built and spent by its own job, beam_jobs/build_keywords.py). `optional`: --epsilon_weights may leave
    the stage out (it gets its default weight). `request` gives the stage's calibration request, or None
    when these settings do not run it. `progress` is its progress line, shown after the stage whose
    registry key is `progress.after`."""

    name: str
    releases: str
    default_weight: float | None = None
    optional: bool = False
    request: Callable[[StageSettings], StageRequest | None] | None = None
    progress: ProgressStage | None = None


def _user_count(settings: StageSettings) -> StageRequest | None:
    return user_count_request(settings.weights[USER_COUNT]) if settings.counts_users else None


def _clustering(settings: StageSettings) -> StageRequest:
    return clustering_request(settings.weights[CLUSTERING], settings.kmeans_iterations)


def _cluster_sizes(settings: StageSettings) -> StageRequest:
    # A user adds <= C to one partition each time: L1 = C.
    return count_request(CLUSTER_SIZES, settings.weights[CLUSTER_SIZES], "laplace", l0=1,
                         linf=settings.max_conversations_per_user)


def _keyword_histograms(settings: StageSettings) -> StageRequest | None:
    if settings.keyword_noise is None:
        return None
    weight = settings.weights[KEYWORD_HISTOGRAMS]
    if settings.keyword_votes == "weighted":
        return keyword_votes_request(weight)
    return count_request(KEYWORD_HISTOGRAMS, weight, settings.keyword_noise, l0=settings.keyword_partitions_per_user)


def _themes(settings: StageSettings) -> StageRequest | None:
    return theme_request(settings.weights[THEMES]) if settings.themes else None


def _facets(settings: StageSettings) -> StageRequest | None:
    return fixed_partition_request(FACETS, settings.weights[FACETS], settings.facets) if (
        settings.facets) else None


def _facet_topics(settings: StageSettings) -> StageRequest | None:
    return fixed_partition_request(FACET_TOPICS, settings.weights[FACET_TOPICS], settings.facets) if (
        settings.facets) else None


def _token_decoding(settings: StageSettings) -> StageRequest | None:
    return (token_decoding_request(settings.weights[TOKEN_DECODING], settings.token_decoding)
            if settings.token_decoding else None)


# In pipeline order. The default weights are the former per-stage epsilons' proportions (4 + 1 + 2),
# now composed with PLD; the user count only chooses the k-means dimension, so a rough figure will do.
DP_STAGE_SPECS: tuple[DPStageSpec, ...] = (
    DPStageSpec(KEYWORD_SET, "the keyword list itself"),
    DPStageSpec(USER_COUNT, "the number of users (it chooses the clustering dimension)", 0.1, optional=True,
                request=_user_count,
                progress=ProgressStage("user_count", "DP user count", "blocks", "blocks", after="embed")),
    DPStageSpec(CLUSTERING, "which topics exist (the cluster centres)", 4.0, request=_clustering,
                progress=ProgressStage("dp_kmeans", "DP k-means", "block passes", "kmeans_passes", after="user_count")),
    DPStageSpec(CLUSTER_SIZES, "each topic's size", 1.0, request=_cluster_sizes,
                progress=ProgressStage("cluster_sizes", "DP cluster sizes", "conversations", "kept",
                                       after="assign_clusters")),
    DPStageSpec(KEYWORD_HISTOGRAMS, "each topic's keywords", 2.0, request=_keyword_histograms,
                progress=ProgressStage("keyword_histograms", "DP keyword histograms", "keyword pairs", None,
                                       after="select_keywords")),
    # Themes weigh 2.5: they lead what is new (docs/production.md#themes). The real-text stream's held-back
    # theme (~6 users' votes a night) was flagged within 7 nights in 0 of 5 runs at weight 1, 7 of 10 at 2 and
    # 9 of 10 at 2.5; with the warm prior, the generated stream's per-night NMI was 0.792-0.829 at 2 and
    # 0.789-0.814 at 2.5 (10 runs each).
    DPStageSpec(THEMES, "each fixed public theme's size (the keyword set's categories and Other), every night",
                2.5, optional=True, request=_themes),
    DPStageSpec(FACETS, "each selected facet's answers (a fixed public question's fixed answers) over all "
                              "conversations, every night", 1.0, optional=True, request=_facets),
    DPStageSpec(FACET_TOPICS, "each selected facet's answers per released topic (the topic x answer cross-tab)",
                1.0, optional=True, request=_facet_topics),
    DPStageSpec(TOKEN_DECODING, "each kept topic's token-decoded description (T noisy means of its sampled "
                                      "members' hidden states)", 1.0, optional=True, request=_token_decoding),
)


def calibrated_specs() -> tuple[DPStageSpec, ...]:
    """The stages a run's joint calibration shares its epsilon between (read at call time, so a test
    can add one)."""
    return tuple(spec for spec in DP_STAGE_SPECS if spec.default_weight is not None)


def default_weights() -> str:
    """--epsilon_weights' default: every calibrated stage's default weight, optional stages last."""
    specs = sorted(calibrated_specs(), key=lambda spec: spec.optional)
    return ",".join(f"{spec.name}:{spec.default_weight:g}" for spec in specs)


def stage_requests(settings: StageSettings) -> list[StageRequest]:
    """The run's DP stages as calibration requests, in pipeline order (those these settings run).
    The job, the in-process evaluation and the nightly plans all calibrate from this list."""
    requests = (spec.request(settings) for spec in calibrated_specs())
    return [request for request in requests if request is not None]


def stage_releases() -> dict[str, str]:
    """What each stage releases, for the report (by stage name)."""
    return {spec.name: spec.releases for spec in DP_STAGE_SPECS}
