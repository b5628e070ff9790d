"""The nightly budget plan: the per-night noise that lets a run on every scheduled night fit every window.

The same users come back every night, so a window's spend is the PLD composition of its nights'
releases (dp_ops.budget_ledger). Without a plan, a night spends a fixed --epsilon and the window
fills up: 30 default nights compose to epsilon ~68, so a cap of 30 refuses the tenth night and the
report goes dark for the rest of the window. The plan instead calibrates one night's stages (the
same joint calibration and stage weights as a single run, dp_ops.joint_calibration) so that a full
window of nights, one every `cadence_days`, plus the spends every window holds anyway (a DP keyword
set's), compose to exactly the cap at the window's fixed delta. A run every night then keeps every
window within the cap indefinitely: any `window_days` consecutive days hold at most
`nights_per_window` nights of the same noise.

The plan depends on public parameters only (cap, window, cadence, deltas, stage weights and shapes),
never on data, so it costs nothing and every night of a schedule gets the same noise. The ledger
still checks each night (a re-run or an extra run in a window is refused, not squeezed in).
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Sequence

import dp_accounting

from dp_ops.budget_ledger import check_window_delta
from dp_ops.dp_events import composed_epsilon, event_to_json
from dp_ops.joint_calibration import JointCalibration, StageRequest, calibrate_jointly

DEFAULT_CADENCE_DAYS = 1


def nights_per_window(window_days: int, cadence_days: int) -> int:
    """The most runs one cadence puts in any window of `window_days` consecutive days."""
    if window_days < 1 or cadence_days < 1:
        raise ValueError(f"window_days and cadence_days must be >= 1, got {window_days}, {cadence_days}")
    return math.ceil(window_days / cadence_days)


@dataclasses.dataclass(frozen=True)
class NightlyPlan:
    """One night's calibrated noise (`calibration`) and what it spends: `night_epsilon` at the run's
    own `night_delta`, and `window_epsilon` for a full window of nights (plus the fixed spends) at
    `window_delta`, which is <= `max_epsilon_per_window`."""

    max_epsilon_per_window: float
    window_delta: float
    window_days: int
    cadence_days: int
    night_delta: float
    calibration: JointCalibration
    night_epsilon: float
    window_epsilon: float
    fixed_events: tuple = ()

    @property
    def nights_per_window(self) -> int:
        return nights_per_window(self.window_days, self.cadence_days)

    def to_json(self) -> dict:
        """The plan as the report states it (all public parameters and what they imply)."""
        return {
            "rule": (f"every night gets the noise that lets {self.nights_per_window} nights (one every "
                     f"{self.cadence_days} day(s), a full {self.window_days}-day window) compose to the window cap"
                     + (" with the keyword set's one-time spend" if self.fixed_events else "")),
            "per_night_epsilon": self.night_epsilon,
            "per_night_delta": self.night_delta,
            "window_days": self.window_days,
            "cadence_days": self.cadence_days,
            "nights_per_window": self.nights_per_window,
            "max_epsilon_per_window": self.max_epsilon_per_window,
            "window_delta": self.window_delta,
            "window_epsilon_planned": self.window_epsilon,
            "fixed_events": [event_to_json(e) for e in self.fixed_events],
        }


def plan_nights(requests: Sequence[StageRequest], *, max_epsilon_per_window: float, window_delta: float,
                window_days: int, cadence_days: int = DEFAULT_CADENCE_DAYS, night_delta: float,
                fixed_events: Sequence[dp_accounting.DpEvent] = ()) -> NightlyPlan:
    """The plan for a night of `requests` (beam_jobs.topic_plan.stage_requests). `fixed_events`:
    spends every window may hold besides the nights (a DP keyword set, charged once). Raises
    ValueError when the fixed spends alone exceed the cap, or for a window delta no ledger accepts."""
    if not (max_epsilon_per_window > 0 and math.isfinite(max_epsilon_per_window)):
        raise ValueError(f"the window cap must be > 0 and finite, got {max_epsilon_per_window}")
    check_window_delta(window_delta)
    fixed_events = tuple(fixed_events)
    if fixed_events and composed_epsilon(fixed_events, window_delta) >= max_epsilon_per_window:
        raise ValueError(f"the keyword set's own spend already reaches the window cap {max_epsilon_per_window:g} "
                         f"at delta {window_delta:g}: no night fits")
    nights = nights_per_window(window_days, cadence_days)
    calibration = calibrate_jointly(max_epsilon_per_window, night_delta, requests, repetitions=nights,
                                    target_delta=window_delta, fixed_events=fixed_events)
    return NightlyPlan(max_epsilon_per_window=max_epsilon_per_window, window_delta=window_delta,
                       window_days=window_days, cadence_days=cadence_days, night_delta=night_delta,
                       calibration=calibration, night_epsilon=composed_epsilon(calibration.events(), night_delta),
                       window_epsilon=calibration.epsilon_spent, fixed_events=fixed_events)
