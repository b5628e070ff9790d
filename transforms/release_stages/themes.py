"""The fixed public themes' DP histogram, every night (transforms/theme_histogram.py), as a release stage:
report.json's `themes`, on with --themes."""

from __future__ import annotations

from core.dp_stages import THEMES
from dp_ops.joint_calibration import StageRequest
from dp_ops.theme_histogram import theme_request
from transforms.release_stage import ReleaseStage, StageInputs, StageRelease, noise_multiplier
from transforms.theme_histogram import ThemeHistogram


class Themes(ReleaseStage):
    name = THEMES
    dp_stages = (THEMES,)
    report_key = "themes"

    def enabled(self, plan) -> bool:
        return plan.params.keywords.themes

    def requests(self, params) -> list[StageRequest]:
        return [theme_request(params.privacy.stage_weights()[THEMES])] if params.keywords.themes else []

    def build(self, engine, inputs: StageInputs, plan, budget) -> StageRelease:
        output = engine.apply("themes", ThemeHistogram(
            plan.keywords, plan.categories, plan.encoder, noise_multiplier(plan, THEMES), plan.delta, budget,
            plan.noise_seed), inputs.blocks)
        return StageRelease(section=output.section, dead_letter=output.dead_letter)


STAGE = Themes()
