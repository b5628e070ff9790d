"""Each kept topic's token-decoded description (transforms/token_decoding.py), as a release stage: the
topics' `token_decoded`, with --token_decoding_steps > 0."""

from __future__ import annotations

from core.dp_stages import TOKEN_DECODING
from dp_ops.joint_calibration import StageRequest
from dp_ops.token_decoding import token_decoding_request
from publishing.report import TOKEN_DECODING_NOTE
from transforms.release_stage import ReleaseStage, StageInputs, StageRelease, noise_multiplier


class TokenDecoding(ReleaseStage):
    name = TOKEN_DECODING
    dp_stages = (TOKEN_DECODING,)
    topic_field = "token_decoded"
    notes = {"token_decoding_note": TOKEN_DECODING_NOTE}

    def enabled(self, plan) -> bool:
        # The plan holds the decoder (a backend) exactly when the run decodes: the job's from
        # --token_decoding_steps, the in-process run's from its own argument.
        return plan.token_decoding is not None

    def requests(self, params) -> list[StageRequest]:
        decoding = params.decoding.token_decoding
        return ([token_decoding_request(params.privacy.stage_weights()[TOKEN_DECODING], decoding)]
                if decoding else [])

    def build(self, engine, inputs: StageInputs, plan, budget) -> StageRelease:
        output = engine.apply("token decoding", plan.token_decoding.stage(
            noise_multiplier(plan, TOKEN_DECODING), plan.delta, budget, inputs.kept_ids, plan.noise_seed),
            inputs.assigned)
        return StageRelease(topic_fields=output.descriptions, dead_letter=output.dead_letter)


STAGE = TokenDecoding()
