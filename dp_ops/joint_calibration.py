"""Calibrating all of a run's DP stages at once to one total (epsilon, delta), composed with PLD.

A user asks for a total epsilon at a total delta and gives each stage a weight (clustering 4,
cluster sizes 1, keyword histograms 2 are the old per-stage epsilons' proportions). Each stage first
gets a reference noise: what it would need alone for its weighted share of the total epsilon at the
total delta (Gaussian: the analytic Gaussian sigma, sqrt(releases) times for a self-composed one;
Laplace: sensitivity / share). One scale factor t then multiplies every stage's reference noise; t is
the smallest for which dp-accounting's PLD accountant finds the composition of all stages within
the total. The stages keep the relative noise their weights gave them, and all of them get less noise
than when each is calibrated to its share and the shares are added up.

Delta is not split: a Gaussian or Laplace stage has no delta of its own under PLD, only a privacy
loss distribution; the composition's epsilon is read at the one total delta. The per-stage delta
that remains is only where a stage's own figure is stated, and the knob that makes PipelineDP draw a
given Gaussian sigma (both the total delta here).

PipelineDP draws its noise from an (epsilon, delta) budget, so a PipelineDP stage also gets the
budget that makes it draw (at least, and barely more than) its calibrated noise (dp_counts.
pipeline_dp_budget); the final check composes the noise PipelineDP will actually draw. If that check
fails (it should not: PipelineDP only rounds its noise up), t is nudged up until it passes, as in
gaussian_accounting: the calibration never overspends.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Sequence

import dp_accounting
from pipeline_dp import dp_computations

from core.dp_stages import CLUSTERING, KEYWORD_HISTOGRAMS, USER_COUNT
from dp_ops.dp_counts import noise_for_budget, pipeline_dp_budget
from dp_ops.dp_events import PLDAccountant, composed_epsilon, merged
from dp_ops.dp_kmeans import USER_L2_SENSITIVITY
from dp_ops.dp_user_count import USER_COUNT_SENSITIVITY
from dp_ops.gaussian_accounting import calibrate_gaussian_noise_multiplier, composed_gaussian_event
from dp_ops.keyword_votes import VOTE_L2_SENSITIVITY

NOISE_KINDS = ("gaussian", "laplace")
# How close to the total the calibration gets (relative, on the noise scale factor).
_SCALE_TOLERANCE = 1e-4
# The largest epsilon share a Gaussian stage may get. PipelineDP's compute_sigma, which gives each
# stage's reference noise, overflows above ln(max float) ~ 709 and returns the smallest float, whose
# square is 0 in the composition (dp_ops.dp_events.merged divides by it): such a run cannot be calibrated.
MAX_GAUSSIAN_STAGE_EPSILON = 700.0


@dataclasses.dataclass(frozen=True)
class StageRequest:
    """One DP stage to calibrate: its noise kind, user-level sensitivity (L2 for Gaussian, L1 for
    Laplace), weight, number of composed releases, and whether PipelineDP draws its noise (then it
    needs an (epsilon, delta) budget) or the caller does from a noise multiplier (DP k-means)."""

    stage: str
    noise: str
    sensitivity: float
    weight: float
    releases: int = 1
    drawn_by_pipeline_dp: bool = True

    def __post_init__(self):
        if self.noise not in NOISE_KINDS:
            raise ValueError(f"{self.stage}: noise must be one of {NOISE_KINDS}, got {self.noise!r}")
        if not (self.sensitivity > 0 and math.isfinite(self.sensitivity)):
            raise ValueError(f"{self.stage}: sensitivity must be > 0 and finite, got {self.sensitivity}")
        if not (self.weight > 0 and math.isfinite(self.weight)):
            raise ValueError(f"{self.stage}: weight must be > 0 and finite, got {self.weight}")
        if self.releases < 1:
            raise ValueError(f"{self.stage}: releases must be >= 1, got {self.releases}")
        if self.drawn_by_pipeline_dp and self.releases != 1:
            raise ValueError(f"{self.stage}: a PipelineDP aggregation is one release")


def clustering_request(weight: float, kmeans_iterations: int) -> StageRequest:
    """DP k-means: 1 + iterations Gaussian releases of L2 sensitivity 1 (dp_ops.dp_kmeans), drawn by
    dp_kmeans.add_gaussian_noise from the noise multiplier."""
    return StageRequest(CLUSTERING, "gaussian", USER_L2_SENSITIVITY, weight, releases=kmeans_iterations + 1,
                        drawn_by_pipeline_dp=False)


def user_count_request(weight: float) -> StageRequest:
    """The DP user count that chooses the k-means dimension (dp_ops.dp_user_count): one Gaussian
    release of sensitivity 1, drawn by dp_user_count.noisy_user_count from the noise multiplier."""
    return StageRequest(USER_COUNT, "gaussian", USER_COUNT_SENSITIVITY, weight, drawn_by_pipeline_dp=False)


def count_request(stage: str, weight: float, noise: str, l0: int, linf: int = 1) -> StageRequest:
    """A PipelineDP COUNT where a user adds <= `linf` to each of <= `l0` partitions: L1 sensitivity
    l0 x linf (Laplace), L2 sqrt(l0) x linf (Gaussian), as PipelineDP computes them. Cluster sizes:
    l0 = 1, linf = C (with max_contributions = C PipelineDP bounds L1 = C). Keyword histograms:
    l0 = max_keyword_partitions_per_user, linf = 1."""
    sensitivities = dp_computations.Sensitivities(l0=l0, linf=linf)
    return StageRequest(stage, noise, sensitivities.l1 if noise == "laplace" else sensitivities.l2, weight)


def keyword_votes_request(weight: float) -> StageRequest:
    """The weighted keyword votes: one Gaussian sum of L2 sensitivity 1 (dp_ops.keyword_votes), drawn
    by dp_ops.gaussian_noise from the noise multiplier."""
    return StageRequest(KEYWORD_HISTOGRAMS, "gaussian", VOTE_L2_SENSITIVITY, weight, drawn_by_pipeline_dp=False)


@dataclasses.dataclass(frozen=True)
class StageNoise:
    """A stage's calibrated noise. `noise_multiplier` is the noise drawn divided by the sensitivity
    (Gaussian sigma or Laplace scale); a PipelineDP stage draws it from `pipeline_dp_budget` =
    (epsilon, delta) for its NaiveBudgetAccountant (DPCountParams.epsilon, .delta)."""

    request: StageRequest
    noise_multiplier: float
    pipeline_dp_budget: tuple[float, float] | None

    @property
    def stage(self) -> str:
        return self.request.stage

    @property
    def noise_std_parameter(self) -> float:
        """Sigma (Gaussian) or scale (Laplace) of the noise on each released coordinate."""
        return self.noise_multiplier * self.request.sensitivity

    def event(self) -> dp_accounting.DpEvent:
        if self.request.noise == "laplace":
            return dp_accounting.LaplaceDpEvent(self.noise_multiplier)
        if self.request.releases == 1:
            return dp_accounting.GaussianDpEvent(self.noise_multiplier)
        return composed_gaussian_event(self.noise_multiplier, self.request.releases)


@dataclasses.dataclass(frozen=True)
class JointCalibration:
    total_epsilon: float
    delta: float
    noise_scale: float  # t: every stage's noise is t x its reference noise
    stages: dict[str, StageNoise]
    epsilon_spent: float  # the PLD composition of the noise the stages will draw, at `delta`

    def events(self) -> list[dp_accounting.DpEvent]:
        return [stage.event() for stage in self.stages.values()]


def reference_noise_multiplier(request: StageRequest, epsilon: float, delta: float) -> float:
    """The stage's noise multiplier if it alone were (epsilon, delta)-DP. Only the stages' relative
    noise is taken from it, so the analytic formulas suffice: T Gaussians of multiplier z compose to
    one of multiplier z / sqrt(T) exactly; Laplace is epsilon-DP at multiplier 1 / epsilon."""
    if request.noise == "laplace":
        return 1.0 / epsilon
    return dp_computations.compute_sigma(epsilon, delta, 1.0) * math.sqrt(request.releases)


def calibrate_jointly(total_epsilon: float, delta: float, requests: Sequence[StageRequest], *,
                      repetitions: int = 1, target_delta: float | None = None,
                      fixed_events: Sequence[dp_accounting.DpEvent] = ()) -> JointCalibration:
    """Every stage's noise such that the PLD composition of all of them is (total_epsilon, delta)-DP
    and no noise could shrink by the same factor without exceeding it (to `_SCALE_TOLERANCE`).

    With `repetitions` n > 1 (a window of nightly runs over the same users, dp_ops.nightly_plan):
    the noise such that n runs of all the stages, plus `fixed_events` (spends the window holds
    anyway), compose to total_epsilon at `target_delta`; `delta` is then the run's own delta (at
    which PipelineDP is given its budget). `epsilon_spent` is always the composition calibrated."""
    target_delta = delta if target_delta is None else target_delta
    if not (total_epsilon > 0 and math.isfinite(total_epsilon)) or not 0 < delta < 1 or not 0 < target_delta < 1:
        raise ValueError(f"need total epsilon > 0 and finite and 0 < delta < 1, got {total_epsilon}, {delta}, "
                         f"{target_delta}")
    if repetitions < 1:
        raise ValueError(f"repetitions must be >= 1, got {repetitions}")
    if not requests:
        raise ValueError("no DP stage to calibrate")
    names = [r.stage for r in requests]
    if len(set(names)) != len(names):
        raise ValueError(f"stage names must be distinct, got {names}")
    weights = sum(r.weight for r in requests)
    # The reference splits one run's share of the total (basic composition's share of n runs): only
    # the stages' relative noise and the search's starting point come from it.
    run_share = total_epsilon / repetitions
    for r in requests:
        share = run_share * r.weight / weights
        if r.noise == "gaussian" and share > MAX_GAUSSIAN_STAGE_EPSILON:
            raise ValueError(
                f"epsilon {total_epsilon:g} is too large to calibrate: stage {r.stage} would get a share of "
                f"{share:.0f}, above {MAX_GAUSSIAN_STAGE_EPSILON:g}, where its Gaussian noise cannot be computed; "
                f"give a smaller --epsilon (or --max_epsilon_per_window), or {r.stage} a smaller weight in "
                "--epsilon_weights")
    reference = {r.stage: reference_noise_multiplier(r, run_share * r.weight / weights, delta) for r in requests}
    fixed_events = list(fixed_events)

    def window_events(run_events: list[dp_accounting.DpEvent]) -> list[dp_accounting.DpEvent]:
        # merged: n runs' Gaussians fold into one, the rest into self-compositions (cheap to compose).
        return merged([dp_accounting.SelfComposedDpEvent(dp_accounting.ComposedDpEvent(run_events), repetitions),
                       *fixed_events])

    def composed(scale: float) -> dp_accounting.DpEvent:
        return dp_accounting.ComposedDpEvent(
            window_events([StageNoise(r, scale * reference[r.stage], None).event() for r in requests]))

    scale = dp_accounting.calibrate_dp_mechanism(
        PLDAccountant, composed, target_epsilon=total_epsilon, target_delta=target_delta,
        bracket_interval=_bracket(lambda t: composed_epsilon([composed(t)], target_delta) > total_epsilon),
        tol=_SCALE_TOLERANCE)
    while True:
        stages = {r.stage: _drawn(r, scale * reference[r.stage], delta) for r in requests}
        spent = composed_epsilon(window_events([s.event() for s in stages.values()]), target_delta)
        if spent <= total_epsilon:
            return JointCalibration(total_epsilon, delta, scale, stages, spent)
        scale *= 1 + _SCALE_TOLERANCE


def calibrate_separately(requests: Sequence[StageRequest], budgets: dict[str, tuple[float, float]]) -> dict[str, StageNoise]:
    """Each stage calibrated alone to its own (epsilon, delta), as the job did before joint
    calibration (DP k-means by PLD, PipelineDP stages by PipelineDP): the noise to compare with."""
    stages = {}
    for request in requests:
        epsilon, delta = budgets[request.stage]
        if request.drawn_by_pipeline_dp:
            drawn = noise_for_budget(request.noise, epsilon, delta, request.sensitivity)
            stages[request.stage] = StageNoise(request, drawn / request.sensitivity, (epsilon, delta))
        elif request.noise == "gaussian":
            stages[request.stage] = StageNoise(
                request, calibrate_gaussian_noise_multiplier(epsilon, delta, request.releases), None)
        else:
            stages[request.stage] = StageNoise(request, 1.0 / epsilon, None)
    return stages


def _bracket(overspends) -> dp_accounting.ExplicitBracketInterval:
    """Scale factors either side of the solution, searched outwards from 1 (the stages' reference
    noise, whose shares add up to the total) in steps of 1.25: the accountant's own search would try
    tiny scales first, whose privacy loss distributions are huge."""
    low = high = 1.0
    if overspends(1.0):
        while overspends(high):
            low, high = high, high * 1.25
    else:
        while not overspends(low):
            low, high = low / 1.25, low
    return dp_accounting.ExplicitBracketInterval(low, high)


def _drawn(request: StageRequest, noise_multiplier: float, delta: float) -> StageNoise:
    """The stage's noise as it will be drawn: a PipelineDP stage's is what its budget makes it draw."""
    if not request.drawn_by_pipeline_dp:
        return StageNoise(request, noise_multiplier, None)
    budget = pipeline_dp_budget(request.noise, noise_multiplier, delta, request.sensitivity)
    drawn = noise_for_budget(request.noise, *budget, request.sensitivity)
    return StageNoise(request, drawn / request.sensitivity, budget)
