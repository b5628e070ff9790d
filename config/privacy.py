"""The privacy group: contribution bounds, the run's total budget and how the DP stages share it,
how keyword votes are counted and their noise."""

from __future__ import annotations

import math

from core.params import Params, advanced_flag, check, flag, params_group
from dp_ops import dp_stage_specs

# The stages and their default weights are declared in dp_ops/dp_stage_specs.py.
DEFAULT_EPSILON_WEIGHTS = dp_stage_specs.default_weights()
# Still parsed (Beam would silently drop an unknown flag, and the run would spend what the user did
# not ask for), but refused; not Flex Template parameters.
RETIRED_FLAGS = ("epsilon_clustering", "epsilon_size", "epsilon_keywords")
RETIRED_EPSILON_FLAGS = ("give the run's total with --epsilon and the stages' shares with --epsilon_weights "
                         f"(default {DEFAULT_EPSILON_WEIGHTS}); e.g. --epsilon_clustering 4 --epsilon_size 1 "
                         "--epsilon_keywords 2 becomes --epsilon 7, and the stages then get less noise than before, "
                         "as their releases are composed with PLD instead of added up.")
RETIRED_HELP = "Retired: passing it is an error that says how to give --epsilon and --epsilon_weights instead."


KEYWORD_VOTES = ("weighted", "count")
# A run's epsilon when neither --epsilon nor a nightly plan (--max_epsilon_per_window) sets it.
DEFAULT_EPSILON = 7.0
DEFAULT_KEYWORD_PARTITIONS_PER_USER = 10


@params_group
class PrivacyParams(Params):
    """The privacy parameters: contribution bounds, the run's total budget and how the DP stages
    share it, how keyword votes are counted and their noise.

    One total (epsilon, delta) per run: the stages' noise is calibrated jointly so that the PLD
    composition of all their releases is exactly `epsilon` at `delta` (dp_ops/joint_calibration.py),
    each stage's share in proportion to its weight. The former per-stage epsilons are retired:
    summing them (basic composition) overstated the spend, and a stage's share of a PLD total is
    not an epsilon of its own.
    """

    max_conversations_per_user: int = flag(
        5, "C: conversations kept per user (uniformly at random) before any aggregate.", type=int, public=True, ge=1)
    epsilon: float | None = flag(
        None, f"Total epsilon of a run, default {DEFAULT_EPSILON:g} (with --max_epsilon_per_window: the nightly plan's). "
              "It is the PLD composition of all the run's DP releases at --delta (plus a DP keyword set's own spend, "
              "if one is used), and the stages' noise is calibrated jointly to meet it (docs/privacy.md). The nightly "
              "plan's is the largest that lets a run every --cadence_days keep every window within the cap "
              "(docs/production.md); a given --epsilon that would bring a window over the cap is refused.",
        type=float, public=True, gt=0, finite=True)
    epsilon_weights: str = advanced_flag(
        DEFAULT_EPSILON_WEIGHTS, "How the DP stages share --epsilon, as stage:weight pairs. The stages: "
        f"{', '.join(s.name for s in dp_stage_specs.calibrated_specs())}; of these, "
        f"{', '.join(f'{s.name} (weight {s.default_weight:g})' for s in dp_stage_specs.calibrated_specs() if s.optional)}"
        " may be left out. A stage's noise is calibrated to its "
        "weighted share, then all are scaled together until the composition meets --epsilon. A stage that "
        "does not run (keyword_histograms with --keyword_mode centroid; user_count unless --projection_dim "
        "auto without --expected_users; themes without --themes, facets and facet_topics without --facets, "
        "token_decoding without --token_decoding_steps) is left out, and its weight moves nothing.", public=True)
    delta: float = flag(1e-6, "Total delta of a run, at which its epsilon is composed (not split between stages).",
                        type=float, public=True, gt=0, lt=1)
    keyword_votes: str = advanced_flag(
        "weighted",
        "How conversations vote for their topic's keywords. With weighted, each conversation weighs 1/n_u "
        "(n_u: its user's kept conversations) and votes its best --keywords_per_vote keywords; one Gaussian "
        "sum of L2 sensitivity 1 per (cluster, keyword) (docs/privacy.md). With count, the former PipelineDP COUNT "
        "of users per (cluster, keyword), each conversation adding up to --max_keywords_per_conversation keywords "
        "and a user up to --max_keyword_partitions_per_user pairs, with --keyword_noise.",
        choices=KEYWORD_VOTES, public=True)
    keyword_noise: str | None = advanced_flag(
        None, "--keyword_votes count only: noise of the keyword counts (default gaussian). Weighted votes "
              "are always Gaussian.", choices=("gaussian", "laplace"), public=True)
    max_keyword_partitions_per_user: int | None = advanced_flag(
        None, "--keyword_votes count only: L0 bound, the (cluster, keyword) pairs one user may add 1 to "
              f"(default {DEFAULT_KEYWORD_PARTITIONS_PER_USER}). Weighted votes need none: a user's votes weigh 1 "
              "in total.", type=int, public=True, ge=1)
    # Private: the report says only whether it was set (derived_public_values).
    noise_seed: int | None = advanced_flag(
        None, "TESTING ONLY: makes the DP k-means and weighted keyword-vote noise reproducible, which voids "
              "their guarantee for anyone who knows the seed. PipelineDP's noise is never seeded.", type=int)
    epsilon_clustering: float | None = advanced_flag(None, RETIRED_HELP, type=float)
    epsilon_size: float | None = advanced_flag(None, RETIRED_HELP, type=float)
    epsilon_keywords: float | None = advanced_flag(None, RETIRED_HELP, type=float)

    def check_values(self):
        for name in RETIRED_FLAGS:
            check(getattr(self, name) is None, f"--{name} is retired: {RETIRED_EPSILON_FLAGS}")
        self.stage_weights()  # raises on a malformed --epsilon_weights
        for name in ("keyword_noise", "max_keyword_partitions_per_user"):
            check(self.keyword_votes == "count" or getattr(self, name) is None,
                  f"--{name} applies to --keyword_votes count only: weighted votes (the default) are one Gaussian "
                  "sum of L2 sensitivity 1 (each user's votes weigh 1 in total), so they need no L0 bound and "
                  "take no Laplace noise; drop the flag, or add --keyword_votes count")

    @property
    def histogram_noise(self) -> str:
        """The keyword stage's noise kind (weighted votes: always Gaussian)."""
        return self.keyword_noise or "gaussian"

    @property
    def keyword_partitions_per_user(self) -> int:
        """The count votes' L0 bound."""
        return self.max_keyword_partitions_per_user or DEFAULT_KEYWORD_PARTITIONS_PER_USER

    def derived_public_values(self) -> dict:
        return {"noise_seed_fixed": self.noise_seed is not None}

    def stage_weights(self) -> dict[str, float]:
        """--epsilon_weights as {stage: weight}; every stage named (or optional), each weight positive."""
        specs = dp_stage_specs.calibrated_specs()
        names = [spec.name for spec in specs]
        weights: dict[str, float] = {}
        for item in filter(None, (part.strip() for part in self.epsilon_weights.split(","))):
            stage, _, value = item.partition(":")
            stage = stage.strip()
            check(stage in names, f"--epsilon_weights: unknown stage {stage!r}; the stages are {', '.join(names)}")
            check(stage not in weights, f"--epsilon_weights: {stage} is given twice")
            try:
                weight = float(value)
            except ValueError:
                raise ValueError(f"--epsilon_weights: {stage}'s weight must be a number, got {value!r}") from None
            check(weight > 0 and math.isfinite(weight), f"--epsilon_weights: {stage}'s weight must be > 0")
            weights[stage] = weight
        for spec in specs:
            if spec.optional:
                weights.setdefault(spec.name, spec.default_weight)
        missing = [stage for stage in names if stage not in weights]
        check(not missing, f"--epsilon_weights: give a weight for {', '.join(missing)} "
                           f"(e.g. {dp_stage_specs.default_weights()})")
        return weights
