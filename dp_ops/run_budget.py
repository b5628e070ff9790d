"""RunBudget: one privacy budget per run, the PLD composition of every DP stage's event.

Every DP stage registers its `MechanismSpend` with the dp-accounting event of the noise it drew
(dp_ops.dp_events); the run's (epsilon, delta) is the PLD composition of all registered events at the
run's delta, read from dp-accounting's accountant: not the sum of the stages' epsilons, which
overstates what a run of Gaussian and Laplace mechanisms spends (5.35 against 7.0 at delta 1e-6 for
the default noise). A stage's own spend keeps its own figure (its epsilon alone at its delta).

The stages are adaptive (each later stage runs on earlier DP outputs); PLD composition, like basic
composition, holds for adaptively chosen mechanisms whose privacy loss distributions are fixed in
advance, which these are: every stage's noise is fixed by the run's parameters before data is read.

A DP keyword set (beam_jobs.build_keywords) registers its spends too: it is charged once in the
ledger, on its own date, but the release depends on it, so the run's total includes it.
"""

from __future__ import annotations

import dataclasses

import dp_accounting

from core.spend import MechanismSpend
from dp_ops.dp_events import (
    ACCOUNTANT,
    COMPOSITION,
    EpsilonDeltaDpEvent,
    composed_epsilon,
    delta_floor,
    event_from_json,
    event_to_json,
)


def spend_event(spend: MechanismSpend) -> dp_accounting.DpEvent:
    """The event a spend carries; a spend written before spends carried events (an old keyword-set
    file) is the (epsilon, delta) event of its own figure: sound, since that is its guarantee."""
    if spend.event is None:
        return EpsilonDeltaDpEvent(spend.epsilon, spend.delta)
    return event_from_json(spend.event)


class RunBudget:
    """The run's privacy budget at `delta`: register every DP stage, then read `epsilon()`.

    `delta` is the run's total delta. The stages' Gaussian and Laplace noise needs no share of it
    (PLD reads the composition's epsilon at this one delta); (epsilon, delta) events (partition
    selection, old spends) do, as their delta is a probability of unbounded loss: `delta` must exceed
    their `delta_floor()`. A run that uses a DP keyword set therefore states its total at the nightly
    delta plus the set's delta.
    """

    def __init__(self, delta: float):
        if not 0 < delta < 1:
            raise ValueError(f"the run's delta must be in (0, 1), got {delta}")
        self.delta = delta
        self._entries: list[MechanismSpend] = []

    @classmethod
    def of(cls, spends, delta: float) -> "RunBudget":
        budget = cls(delta)
        for spend in spends:
            budget.register(spend)
        return budget

    def register(self, spend: MechanismSpend, event: dp_accounting.DpEvent | None = None) -> MechanismSpend:
        """Adds a stage; returns its spend carrying the event (serialised) the budget composes.
        `event` defaults to the one the spend carries (every dp_ops mechanism sets it)."""
        if event is None:
            event = spend_event(spend)
        entry = dataclasses.replace(spend, event=event_to_json(event))
        self._entries.append(entry)
        return entry

    @property
    def entries(self) -> tuple[MechanismSpend, ...]:
        """The registered spends, each with its event as JSON: what the report lists."""
        return tuple(self._entries)

    def events(self) -> list[dp_accounting.DpEvent]:
        return [event_from_json(entry.event) for entry in self._entries]

    def delta_floor(self) -> float:
        return delta_floor(self.events())

    def epsilon(self) -> float:
        """Epsilon of the whole run at `delta` (PLD composition). Raises if nothing was registered or
        if `delta` does not cover the registered (epsilon, delta) events."""
        if not self._entries:
            raise ValueError("no DP stage registered with the run's budget")
        floor = self.delta_floor()
        if self.delta <= floor:
            raise ValueError(f"the run's delta {self.delta:.3g} does not cover the (epsilon, delta) events' own "
                             f"{floor:.3g} (partition selection, old spends): state the total at a larger delta")
        return composed_epsilon(self.events(), self.delta)

    def total(self) -> tuple[float, float]:
        return self.epsilon(), self.delta

    def composition(self) -> dict:
        """The run's total as the report states it (publishing.report.privacy_section): plain data."""
        return {"composition": COMPOSITION, "accountant": ACCOUNTANT, "epsilon": self.epsilon(), "delta": self.delta}
