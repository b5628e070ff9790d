"""ReleaseStage: a DP stage that releases beside the topics (the fixed themes, the facets, the token-decoded
descriptions) as one object, in the shape of PipelineDP's combiners: it says whether a run has it
(`enabled`), asks for its share of the budget (`requests`) and builds itself (`build`), and what it builds
carries its own report section, its per-topic fields and its dead letters.

The release stages are the modules of transforms/release_stages/, found there (one `STAGE` each), so the
wiring (transforms/topic_stages.py), the report writer, the job's dead letters and the in-process run loop
over them and never name one. A new stage is its declaration (dp_ops/dp_stage_specs.py), its mechanism
(dp_ops/), its module here with its transform, and its flag (config/).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from typing import Any

from dp_ops.joint_calibration import StageRequest


@dataclasses.dataclass(frozen=True)
class StageInputs:
    """What a release stage may read (PCollections on Beam, values in-process): the bounded, embedded
    ConversationBlocks; the same with their cluster ids (transforms.assign_clusters.AssignClusters); the
    kept clusters' ids, which are DP outputs."""

    blocks: Any
    assigned: Any
    kept_ids: Any


@dataclasses.dataclass(frozen=True)
class StageRelease:
    """A release stage's output. `section`: what report.json holds under the stage's `report_key` (a
    singleton on Beam); `topic_fields`: (cluster id, value) for the kept topics it adds its `topic_field`
    to; `dead_letter`: the records it could not use (DeadLetters); `private`: by-products the evaluations
    read in-process, never released. None: the stage has none."""

    section: Any = None
    topic_fields: Any = None
    dead_letter: Any = None
    private: Any = None


class ReleaseStage:
    """One release stage. `name`: its key among the run's stages (a constant of core/dp_stages.py or of its
    own module); `dp_stages`: the DP stages it draws noise for (their declarations: dp_ops/dp_stage_specs.py);
    `report_key`: report.json's key its section goes under; `topic_field`: the field it adds to each kept
    topic; `notes`: report.json keys with a fixed text, written when it runs."""

    name: str
    dp_stages: tuple[str, ...]
    report_key: str | None = None
    topic_field: str | None = None
    notes: Mapping[str, str] = {}

    def enabled(self, plan) -> bool:
        """Whether the run of `plan` (transforms.topic_stages.TopicPlan) has this stage."""
        raise NotImplementedError

    def requests(self, params) -> list[StageRequest]:
        """Its calibration requests for the job's params (InsightsParams: public settings only), in the order
        of `dp_stages`; none when these params leave it out."""
        raise NotImplementedError

    def build(self, engine, inputs: StageInputs, plan, budget) -> StageRelease:
        """Applies the stage on `engine` (transforms/engine.py); every DP release registers its spend with
        `budget` (None: the evaluation's exact baseline, nothing spent)."""
        raise NotImplementedError


def noise_multiplier(plan, dp_stage: str) -> float | None:
    """The calibrated noise multiplier of `dp_stage` in `plan`; None for a non-private plan (exact)."""
    return plan.calibration.stages[dp_stage].noise_multiplier if plan.private else None


def report_parts(stages_and_releases) -> tuple[dict, dict]:
    """report.json's parts from the release stages that ran, as publishing.report.build_report takes them:
    the sections ({report key: section}, the stages' notes included) and the topic fields ({field:
    {cluster id: value}}). `stages_and_releases`: (ReleaseStage, StageRelease) pairs with plain values."""
    sections: dict = {}
    topic_fields: dict = {}
    for stage, release in stages_and_releases:
        if stage.report_key is not None:
            sections[stage.report_key] = release.section
        sections.update(stage.notes)
        if stage.topic_field is not None:
            topic_fields[stage.topic_field] = dict(release.topic_fields)
    return sections, topic_fields
