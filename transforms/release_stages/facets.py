"""Each selected facet's answers overall and per kept topic (transforms/facet_histograms.py), as a release
stage: report.json's `facets`, for the facets --facets selects from --facet_set."""

from __future__ import annotations

from backends.facet_set import selected_facets
from core.dp_stages import FACET_TOPICS, FACETS
from dp_ops.fixed_histogram import fixed_partition_request
from dp_ops.joint_calibration import StageRequest
from transforms.facet_histograms import AnswerFacetsFn, FacetHistograms
from transforms.release_stage import ReleaseStage, StageInputs, StageRelease, noise_multiplier


class Facets(ReleaseStage):
    name = FACETS
    dp_stages = (FACETS, FACET_TOPICS)
    report_key = "facets"

    def enabled(self, plan) -> bool:
        return bool(plan.facets)

    def requests(self, params) -> list[StageRequest]:
        count = len(selected_facets(params.keywords.facets, params.keywords.facet_set))
        weights = params.privacy.stage_weights()
        # One Gaussian release per facet in each stage: the answers overall, and per kept topic.
        return [fixed_partition_request(stage, weights[stage], count) for stage in self.dp_stages] if count else []

    def build(self, engine, inputs: StageInputs, plan, budget) -> StageRelease:
        multipliers = (tuple(noise_multiplier(plan, stage) for stage in self.dp_stages) if plan.private else None)
        answers = AnswerFacetsFn(tuple(facet for _, facet in plan.facets), plan.keywords, plan.categories, plan.encoder)
        output = engine.apply("facets", FacetHistograms(
            plan.facets, answers, plan.kmeans.num_clusters, inputs.kept_ids, multipliers, plan.delta, budget,
            plan.noise_seed), inputs.assigned)
        return StageRelease(section=output.section, private=output.unknown)


STAGE = Facets()
