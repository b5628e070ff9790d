"""User-level DP counts over public partitions with PipelineDP: parameters, noise and spend.

The Beam wiring is in transforms/; this module decides the contribution bounds and reads back, from
PipelineDP's own budget accountant, what the aggregation spent and the dp-accounting event of the
noise it drew. PipelineDP derives its noise from an (epsilon, delta) budget (Laplace: scale =
L1 / epsilon; Gaussian: PyDP's analytic-Gaussian sigma); `pipeline_dp_budget` inverts that, for a
noise calibrated elsewhere (dp_ops.joint_calibration).
"""

from __future__ import annotations

import dataclasses
import math
import statistics

import dp_accounting
import pipeline_dp
from pipeline_dp import budget_accounting, dp_computations

from core.spend import MechanismSpend
from dp_ops.dp_events import event_to_json

NOISE_KINDS = {"laplace": pipeline_dp.NoiseKind.LAPLACE, "gaussian": pipeline_dp.NoiseKind.GAUSSIAN}


@dataclasses.dataclass(frozen=True)
class DPCountParams:
    """A COUNT per public partition where each user adds at most `max_partitions_contributed`
    elements to distinct partitions and at most `max_contributions_per_partition` to any one.

    With `max_contributions` set instead, a user adds at most that many elements in total, anywhere
    (PipelineDP then bounds L1 = L2 = max_contributions).
    """

    stage: str
    epsilon: float
    delta: float = 0.0
    noise: str = "laplace"
    max_partitions_contributed: int | None = None
    max_contributions_per_partition: int | None = None
    max_contributions: int | None = None

    def __post_init__(self):
        if self.noise not in NOISE_KINDS:
            raise ValueError(f"{self.stage}: noise must be one of {sorted(NOISE_KINDS)}, got {self.noise!r}")
        if not (self.epsilon > 0 and math.isfinite(self.epsilon)):
            raise ValueError(f"{self.stage}: epsilon must be > 0 and finite, got {self.epsilon}")
        if self.noise == "gaussian" and not 0 < self.delta < 1:
            raise ValueError(f"{self.stage}: Gaussian noise needs 0 < delta < 1, got {self.delta}")
        if self.noise == "laplace" and self.delta != 0:
            raise ValueError(f"{self.stage}: Laplace noise is pure epsilon-DP; give delta=0")
        per_user = self.max_contributions is not None
        per_partition = self.max_partitions_contributed is not None and self.max_contributions_per_partition is not None
        if per_user == per_partition:
            raise ValueError(f"{self.stage}: give either max_contributions or both per-partition bounds")
        for bound in (self.max_contributions, self.max_partitions_contributed, self.max_contributions_per_partition):
            if bound is not None and bound < 1:
                raise ValueError(f"{self.stage}: contribution bounds must be >= 1")

    def aggregate_params(self) -> pipeline_dp.AggregateParams:
        return pipeline_dp.AggregateParams(
            metrics=[pipeline_dp.Metrics.COUNT],
            noise_kind=NOISE_KINDS[self.noise],
            max_contributions=self.max_contributions,
            max_partitions_contributed=self.max_partitions_contributed,
            max_contributions_per_partition=self.max_contributions_per_partition,
        )

    def sensitivity(self) -> float:
        """L1 sensitivity for Laplace, L2 for Gaussian, as PipelineDP computes them for COUNT."""
        sensitivities = dp_computations.compute_sensitivities_for_count(self.aggregate_params())
        return float(sensitivities.l1 if self.noise == "laplace" else sensitivities.l2)

    def budget_accountant(self) -> pipeline_dp.NaiveBudgetAccountant:
        # One accountant per stage, holding exactly this stage's budget: the stage's only
        # aggregation gets all of it, and we read back what it was given after compute_budgets().
        return pipeline_dp.NaiveBudgetAccountant(total_epsilon=self.epsilon, total_delta=self.delta)


def noise_description(noise: str, epsilon: float, delta: float, sensitivity: float) -> dict:
    if noise == "laplace":
        scale = sensitivity / epsilon
        return {"kind": "laplace", "scale": scale, "std": math.sqrt(2) * scale}
    sigma = dp_computations.compute_sigma(epsilon, delta, sensitivity)
    return {"kind": "gaussian", "sigma": sigma, "std": sigma}


def noise_upper_quantile(noise: dict, tail_probability: float) -> float:
    """The value that pure noise exceeds with probability `tail_probability`."""
    if not 0 < tail_probability < 0.5:
        raise ValueError(f"tail_probability must be in (0, 0.5), got {tail_probability}")
    if noise["kind"] == "laplace":
        return noise["scale"] * math.log(1 / (2 * tail_probability))
    return noise["sigma"] * statistics.NormalDist().inv_cdf(1 - tail_probability)


DEFAULT_FALSE_KEYWORDS_PER_TOPIC = 0.05


def release_floor(noise: dict, partitions_per_group: int,
                  expected_false_per_group: float = DEFAULT_FALSE_KEYWORDS_PER_TOPIC) -> float:
    """A noisy-count floor under which a partition is not released, chosen so that among a group of
    `partitions_per_group` partitions with no data at all, on average at most
    `expected_false_per_group` would clear it (a union bound). Post-processing: costs no budget."""
    return noise_upper_quantile(noise, expected_false_per_group / max(1, partitions_per_group))


def min_users_to_clear(floor: float, max_per_user: float = 1.0) -> int:
    """The fewest users whose votes can bring a partition's expected noisy value up to `floor` when
    each adds at most `max_per_user` to it: a topic with fewer users cannot be labelled more than
    half the time, even if every one of them votes the same keyword."""
    if not max_per_user > 0:
        raise ValueError(f"max_per_user must be > 0, got {max_per_user}")
    return max(1, math.ceil(floor / max_per_user - 1e-9))


def accountant_spent(accountant: pipeline_dp.NaiveBudgetAccountant, stage: str) -> tuple[float, float]:
    """(epsilon, delta) that PipelineDP's accountant actually gave the stage's mechanisms (basic composition)."""
    specs = accountant.mechanism_specs
    if not specs:
        raise RuntimeError(f"{stage}: no PipelineDP mechanism was registered")
    return sum(spec.eps for spec in specs), sum(spec.delta or 0.0 for spec in specs)


def additive_noise_event(spec: budget_accounting.MechanismSpec, sensitivities) -> dp_accounting.DpEvent:
    """The dp-accounting event of the noise PipelineDP draws for a Laplace or Gaussian `spec`, built
    with PipelineDP's own `create_additive_mechanism` (what its combiners call), so the event is the
    noise actually drawn, not a re-derivation of it."""
    if spec.count != 1:
        raise ValueError(f"a PipelineDP mechanism applied {spec.count} times is not accounted here")
    noise = dp_computations.create_additive_mechanism(spec, sensitivities)
    if noise.noise_kind == pipeline_dp.NoiseKind.LAPLACE:
        return dp_accounting.LaplaceDpEvent(noise.noise_parameter / noise.sensitivity)
    return dp_accounting.GaussianDpEvent(noise.std / noise.sensitivity)


def spend_from_accountant(params: DPCountParams, accountant: pipeline_dp.NaiveBudgetAccountant,
                          mechanism: str) -> MechanismSpend:
    """What the stage's aggregation was actually given by PipelineDP's accountant, with the event
    of the noise that budget draws."""
    epsilon, delta = accountant_spent(accountant, params.stage)
    sensitivity = params.sensitivity()
    (spec,) = accountant.mechanism_specs  # one COUNT per stage
    event = additive_noise_event(spec, dp_computations.compute_sensitivities_for_count(params.aggregate_params()))
    return MechanismSpend(
        stage=params.stage,
        mechanism=mechanism,
        epsilon=epsilon,
        delta=delta,
        sensitivity=sensitivity,
        noise=noise_description(params.noise, epsilon, delta, sensitivity),
        event=event_to_json(event),
    )


def pipeline_dp_budget(noise: str, noise_multiplier: float, delta: float, sensitivity: float) -> tuple[float, float]:
    """(epsilon, delta) to give PipelineDP for one aggregation so that it draws noise of at least
    `noise_multiplier` x `sensitivity` (Laplace scale, or Gaussian sigma), and barely more.

    Laplace: epsilon = 1 / multiplier, delta 0, exactly. Gaussian: PyDP's sigma for (epsilon, delta)
    is its analytic-Gaussian calibration, rounded up to a grid (a step function of epsilon), so this
    is the largest epsilon at the given `delta` whose sigma is still >= the target, by bisection;
    `noise_for_budget` gives the sigma PipelineDP will then actually draw.
    """
    if not (noise_multiplier > 0 and math.isfinite(noise_multiplier)) or sensitivity <= 0:
        raise ValueError(f"need noise_multiplier > 0 and sensitivity > 0, got {noise_multiplier}, {sensitivity}")
    if noise == "laplace":
        return 1.0 / noise_multiplier, 0.0
    if noise != "gaussian":
        raise ValueError(f"noise must be one of {sorted(NOISE_KINDS)}, got {noise!r}")
    if not 0 < delta < 1:
        raise ValueError(f"Gaussian noise needs 0 < delta < 1, got {delta}")
    target = noise_multiplier * sensitivity
    enough, too_little = 1e-6, 1.0  # epsilons with sigma >= target, and < target
    while dp_computations.compute_sigma(enough, delta, sensitivity) < target:
        enough /= 2
    while dp_computations.compute_sigma(too_little, delta, sensitivity) >= target:
        too_little *= 2
    while too_little - enough > 1e-12 * too_little:
        middle = (enough + too_little) / 2
        if dp_computations.compute_sigma(middle, delta, sensitivity) >= target:
            enough = middle
        else:
            too_little = middle
    return enough, delta


def noise_for_budget(noise: str, epsilon: float, delta: float, sensitivity: float) -> float:
    """The Laplace scale or Gaussian sigma PipelineDP draws for an aggregation given (epsilon, delta)."""
    kind = {"laplace": budget_accounting.MechanismType.LAPLACE, "gaussian": budget_accounting.MechanismType.GAUSSIAN}[noise]
    spec = budget_accounting.MechanismSpec(kind, _eps=epsilon, _delta=delta)
    mechanism = dp_computations.create_additive_mechanism(
        spec, dp_computations.Sensitivities(l1=sensitivity, l2=sensitivity))
    return mechanism.noise_parameter if noise == "laplace" else mechanism.std
