"""The insights job's DP stages, each declared once: its name (a constant of core/dp_stages.py, which
every layer that files something under the stage imports), its default share of the run's epsilon,
what it releases and its progress line.

Everything that lists the stages reads this tuple: the --epsilon_weights flag (names, defaults, help),
the order of the calibration requests (beam_jobs/topic_plan.stage_requests), the progress lines
(beam_jobs/progress.py) and the report, whose privacy panel says what each mechanism released
(`releases`, written next to the stage's spend in report.json). A stage's calibration request and its
transform belong to the stage itself: the topic stages' in beam_jobs/topic_plan.py and
transforms/topic_stages.py, each release stage's in its module of transforms/release_stages/.

A new DP stage beside the topics is one DPStageSpec here, its mechanism (dp_ops/), its module in
transforms/release_stages/ (its transform, a transforms.dp_stage.DPStage that registers its spend with the
run's budget, with its in-process form `local`) and its flag (config/).
"""

from __future__ import annotations

import dataclasses

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


@dataclasses.dataclass(frozen=True)
class DPStageSpec:
    """One DP stage. `default_weight` None: not part of a run's joint calibration (the DP keyword set is
    built and spent by its own job, beam_jobs/build_keywords.py). `optional`: --epsilon_weights may leave
    the stage out (it gets its default weight). `progress` is its progress line, shown after the stage
    whose registry key is `progress.after`."""

    name: str
    releases: str
    default_weight: float | None = None
    optional: bool = False
    progress: ProgressStage | None = None


# In pipeline order. The default weights are the former per-stage epsilons' proportions (4 + 1 + 2),
# now composed with PLD; the user count only chooses the k-means dimension, so a rough figure will do.
DP_STAGE_SPECS: tuple[DPStageSpec, ...] = (
    DPStageSpec(KEYWORD_SET, "the keyword list itself"),
    DPStageSpec(USER_COUNT, "the number of users (it chooses the clustering dimension)", 0.1, optional=True,
                progress=ProgressStage("user_count", "DP user count", "blocks", "blocks", after="embed")),
    DPStageSpec(CLUSTERING, "which topics exist (the cluster centres)", 4.0,
                progress=ProgressStage("dp_kmeans", "DP k-means", "block passes", "kmeans_passes", after="user_count")),
    DPStageSpec(CLUSTER_SIZES, "each topic's size", 1.0,
                progress=ProgressStage("cluster_sizes", "DP cluster sizes", "conversations", "kept",
                                       after="assign_clusters")),
    DPStageSpec(KEYWORD_HISTOGRAMS, "each topic's keywords", 2.0,
                progress=ProgressStage("keyword_histograms", "DP keyword histograms", "keyword pairs", None,
                                       after="select_keywords")),
    # Themes weigh 2.5: they lead what is new (docs/production.md#themes). The real-text stream's held-back
    # theme (~6 users' votes a night) was flagged within 7 nights in 0 of 5 runs at weight 1, 7 of 10 at 2 and
    # 9 of 10 at 2.5; with the warm prior, the generated stream's per-night NMI was 0.792-0.829 at 2 and
    # 0.789-0.814 at 2.5 (10 runs each).
    DPStageSpec(THEMES, "each fixed public theme's size (the keyword set's categories and Other), every night",
                2.5, optional=True),
    DPStageSpec(FACETS, "each selected facet's answers (a fixed public question's fixed answers) over all "
                              "conversations, every night", 1.0, optional=True),
    DPStageSpec(FACET_TOPICS, "each selected facet's answers per released topic (the topic x answer cross-tab)",
                1.0, optional=True),
    DPStageSpec(TOKEN_DECODING, "each kept topic's token-decoded description (T noisy means of its sampled "
                                      "members' hidden states)", 1.0, optional=True),
)


def calibrated_specs() -> tuple[DPStageSpec, ...]:
    """The stages a run's joint calibration shares its epsilon between (read at call time, so a test
    can add one)."""
    return tuple(spec for spec in DP_STAGE_SPECS if spec.default_weight is not None)


def default_weights() -> str:
    """--epsilon_weights' default: every calibrated stage's default weight, optional stages last."""
    specs = sorted(calibrated_specs(), key=lambda spec: spec.optional)
    return ",".join(f"{spec.name}:{spec.default_weight:g}" for spec in specs)


def stage_releases() -> dict[str, str]:
    """What each stage releases, for the report (by stage name)."""
    return {spec.name: spec.releases for spec in DP_STAGE_SPECS}
