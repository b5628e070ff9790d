"""dp-accounting events: the one description of each mechanism's noise that the PLD accountant
composes, their JSON form (in spends, reports and the ledger), and the accountant itself.

Every mechanism of the project maps to an event of dp-accounting 0.6.0 that its PLD accountant
composes exactly, except partition selection: PipelineDP's thresholding (Gaussian, Laplace or
truncated geometric) has no PLD event in dp-accounting, so it is accounted as the (epsilon, delta)
that PipelineDP calibrated it to, as an `EpsilonDeltaDpEvent`. Its privacy loss distribution is
dp-accounting's `from_privacy_parameters`: the worst case over all (epsilon, delta)-DP mechanisms
(loss +inf with probability delta, +-epsilon otherwise; Kairouz, Oh and Viswanath 2015), so composing
it is sound for any mechanism with that guarantee, if loose. The same event stands for a spend
written before spends carried events (a keyword-set file, a version-1 ledger entry): its own
(epsilon, delta) is all that is known of it.

The accountant adds exactly that event to dp-accounting's `PLDAccountant` (add-or-remove-one
neighbouring, the user-level relation of every stage); everything else is the library's.
"""

from __future__ import annotations

import collections
import json
import math
from collections.abc import Iterable

import attr
import dp_accounting
from dp_accounting import dp_event
from dp_accounting.pld import common, pld_privacy_accountant, privacy_loss_distribution

# PLD discretisation: the reported epsilon is within ~1e-2 of the exact value for a run's handful
# of events, and pessimistic (privacy losses are rounded up), so it is an upper bound.
PLD_DISCRETIZATION = 1e-3
COMPOSITION = "PLD"
ACCOUNTANT = (f"dp-accounting PLDAccountant, add-or-remove-one user, pessimistic, discretisation {PLD_DISCRETIZATION}; "
              "partition selection as an (epsilon, delta) worst case")


@attr.s(frozen=True, slots=True, auto_attribs=True)
class EpsilonDeltaDpEvent(dp_event.DpEvent):
    """A mechanism known only to be (epsilon, delta)-DP (see the module docstring)."""

    epsilon: float
    delta: float


class PLDAccountant(pld_privacy_accountant.PLDAccountant):
    """dp-accounting's PLD accountant, which also composes `EpsilonDeltaDpEvent`."""

    def __init__(self):
        super().__init__(value_discretization_interval=PLD_DISCRETIZATION)

    def _maybe_compose(self, event, count, do_compose):
        if not isinstance(event, EpsilonDeltaDpEvent):
            return super()._maybe_compose(event, count, do_compose)
        if do_compose:
            worst_case = privacy_loss_distribution.from_privacy_parameters(
                common.DifferentialPrivacyParameters(event.epsilon, event.delta),
                value_discretization_interval=PLD_DISCRETIZATION)
            self._pld = self._pld.compose(worst_case.self_compose(count))
        return None


_EVENT_TYPES = {cls.__name__: cls for cls in (
    dp_accounting.GaussianDpEvent, dp_accounting.LaplaceDpEvent, dp_event.DiscreteLaplaceDpEvent,
    dp_accounting.SelfComposedDpEvent, dp_accounting.ComposedDpEvent, EpsilonDeltaDpEvent)}


def event_to_json(event: dp_accounting.DpEvent) -> dict:
    """{"type": class name, field: value, ...}, nested events likewise."""
    cls = type(event)
    if _EVENT_TYPES.get(cls.__name__) is not cls:
        raise ValueError(f"no JSON form for {cls.__name__}; known: {sorted(_EVENT_TYPES)}")
    data = {"type": cls.__name__}
    for field in attr.fields(cls):
        value = getattr(event, field.name)
        if isinstance(value, dp_accounting.DpEvent):
            value = event_to_json(value)
        elif isinstance(value, (list, tuple)):
            value = [event_to_json(v) for v in value]
        data[field.name] = value
    return data


def event_from_json(data: dict) -> dp_accounting.DpEvent:
    """The inverse of `event_to_json`, for the event types above only (a ledger is a file anyone
    with access can edit: nothing in it names code to import), with their parameters checked."""
    if not isinstance(data, dict) or data.get("type") not in _EVENT_TYPES:
        raise ValueError(f"not a known dp-accounting event: {data!r}")
    cls = _EVENT_TYPES[data["type"]]
    names = {field.name for field in attr.fields(cls)}
    if set(data) - {"type"} != names:
        raise ValueError(f"{data['type']} needs exactly the fields {sorted(names)}, got {sorted(set(data) - {'type'})}")
    values = {name: data[name] for name in names}
    if cls is dp_accounting.SelfComposedDpEvent:
        values["event"] = event_from_json(values["event"])
        _check(isinstance(values["count"], int) and values["count"] >= 1, data, "count must be an integer >= 1")
    elif cls is dp_accounting.ComposedDpEvent:
        _check(isinstance(values["events"], list), data, "events must be a list")
        values["events"] = [event_from_json(e) for e in values["events"]]
    elif cls is EpsilonDeltaDpEvent:
        _check(_number(values["epsilon"]) and values["epsilon"] >= 0, data, "epsilon must be finite and >= 0")
        _check(_number(values["delta"]) and 0 <= values["delta"] < 1, data, "delta must be in [0, 1)")
    elif cls is dp_event.DiscreteLaplaceDpEvent:
        _check(_number(values["noise_parameter"]) and values["noise_parameter"] > 0, data, "noise_parameter must be > 0")
        _check(isinstance(values["sensitivity"], int) and values["sensitivity"] >= 1, data,
               "sensitivity must be an integer >= 1")
    else:
        _check(_number(values["noise_multiplier"]) and values["noise_multiplier"] > 0, data,
               "noise_multiplier must be > 0")
    return cls(**values)


def _number(value) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value)


def _check(condition: bool, data: dict, message: str) -> None:
    if not condition:
        raise ValueError(f"{data['type']}: {message}; got {data!r}")


def merged(events: Iterable[dp_accounting.DpEvent]) -> list[dp_accounting.DpEvent]:
    """The same composition in fewer, cheaper events (a ledger window holds every stage of every night):
    equal events are counted once each (`SelfComposedDpEvent`: one self-composition instead of n
    compositions), and all Gaussian events become one. Gaussians of multipliers z_i compose to
    exactly the Gaussian of multiplier (sum 1 / z_i^2)^(-1/2): their privacy loss distributions are
    normal, with means and variances that add up (Dong, Roth and Su 2019, Gaussian DP)."""
    counts: collections.Counter = collections.Counter()

    def add(event, times):
        if isinstance(event, dp_accounting.SelfComposedDpEvent):
            add(event.event, times * event.count)
        elif isinstance(event, dp_accounting.ComposedDpEvent):
            for inner in event.events:
                add(inner, times)
        else:
            counts[json.dumps(event_to_json(event), sort_keys=True)] += times

    for event in events:
        add(event, 1)
    gaussian_precision = 0.0  # sum of count / z^2
    folded = []
    for key, count in counts.items():
        event = event_from_json(json.loads(key))
        if isinstance(event, dp_accounting.GaussianDpEvent):
            gaussian_precision += count / event.noise_multiplier ** 2
        else:
            folded.append(event if count == 1 else dp_accounting.SelfComposedDpEvent(event, count))
    if gaussian_precision:
        folded.append(dp_accounting.GaussianDpEvent(gaussian_precision ** -0.5))
    return folded


def delta_floor(events: Iterable[dp_accounting.DpEvent]) -> float:
    """The smallest delta at which the composition has a finite epsilon: the probability that some
    (epsilon, delta) event's loss is infinite (Gaussian and Laplace events have none)."""
    finite = 1.0
    for event in merged(events):
        count = event.count if isinstance(event, dp_accounting.SelfComposedDpEvent) else 1
        inner = event.event if isinstance(event, dp_accounting.SelfComposedDpEvent) else event
        if isinstance(inner, EpsilonDeltaDpEvent):
            finite *= (1 - inner.delta) ** count
    return 1 - finite


def composed_epsilon(events: Iterable[dp_accounting.DpEvent], delta: float) -> float:
    """Epsilon at `delta` of all `events` run on the same users (PLD composition); inf below their
    `delta_floor` (and at it, unless every other event is pure epsilon-DP)."""
    if not 0 <= delta < 1:
        raise ValueError(f"delta must be in [0, 1), got {delta}")
    accountant = PLDAccountant()
    for event in merged(events):
        accountant.compose(event)
    return accountant.get_epsilon(delta)
