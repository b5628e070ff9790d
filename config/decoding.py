"""The decoding group: token-level private decoding (dp_ops/token_decoding.py)."""

from __future__ import annotations

from core.params import Params, advanced_flag, params_group
from dp_ops.token_decoding import TokenDecodingParams

MAX_TOKEN_DECODING_STEPS = 64


@params_group
class DecodingParams(Params):
    """Token-level private decoding: each kept topic described by a frozen local LM that reads a sample of its
    members' conversations, one DP stage of the run (dp_ops/token_decoding.py)."""

    token_decoding_steps: int = advanced_flag(
        0, "T: tokens of each kept topic's description decoded under DP (0: off). Each step averages the "
           "clipped final hidden states of a sample of the topic's members (one conversation of one topic per "
           "user), adds Gaussian noise and takes the LM head's argmax; the T steps are the token_decoding stage "
           "of the joint calibration (its share of --epsilon by --epsilon_weights). Needs the bundled model "
           "(requirements-models.txt); the report marks these descriptions dp_token_decoded "
           "(docs/privacy.md#token-level-private-decoding).", type=int, ge=0, le=MAX_TOKEN_DECODING_STEPS)
    token_decoding_sample: int = advanced_flag(
        8, "n: members sampled per topic for --token_decoding_steps, the public denominator of each mean (a "
           "step's L2 sensitivity is 2C/n).", type=int, ge=1)
    token_decoding_clip: float = advanced_flag(
        40.0, "C: L2 bound on each member's final hidden state for --token_decoding_steps (the bundled model's "
              "are about 45).", type=float, gt=0, finite=True)

    @property
    def token_decoding(self) -> TokenDecodingParams | None:
        """The stage's public parameters, or None when it is off."""
        return (TokenDecodingParams(self.token_decoding_steps, self.token_decoding_sample, self.token_decoding_clip)
                if self.token_decoding_steps else None)

    def derived_public_values(self) -> dict:
        # Shown only when on: a run without it releases the same report (config included) as before it existed.
        return {"token_decoding": {"steps": self.token_decoding_steps, "sample_size": self.token_decoding_sample,
                                   "clip_norm": self.token_decoding_clip}} if self.token_decoding_steps else {}
