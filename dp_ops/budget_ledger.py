"""The privacy-budget ledger: what nightly runs spent per privacy unit, and the window cap.

A user can appear on many nights, so spends compose. Each entry stores its run's dp-accounting
events (dp_ops.dp_events, as JSON), and a window's spend is the PLD composition of the events of all
runs dated in it: not the sum of their epsilons, which overstates it (nightly runs of Gaussian and
Laplace noise compose like one run with sqrt(n)-times less noise, not n times the epsilon). A new run
is allowed only if every window of `window_days` consecutive days that contains its date stays within
the caps (checking only the window ending on its date would let a backfill overspend later windows).

Every window is composed at one fixed delta, `max_delta_per_window` (default DEFAULT_WINDOW_DELTA),
never at the sum of its runs' deltas: a sum lets a run launched with a larger --delta raise the
delta its window is read at and so lower the window's epsilon. The caps are on epsilon at that delta
and on that delta: a window whose (epsilon, delta) events (partition selection, old entries) alone
need more delta than that is refused whatever its epsilon. A window is never charged more than the
basic composition of its runs' own (epsilon, delta) where that applies (the window's delta covers
the sum of theirs; the PLD's pessimistic discretisation can round a legacy entry's epsilon up by 1e-3).

An entry covers the days of the data its spend was computed from: a nightly run's one day (its
date), a keyword set built from several days' logs all of them (`days`, ending on its date). It
counts in every window that holds any of its days, once.

Version-1 ledgers (entries with only epsilon and delta) are read: such an entry is the (epsilon,
delta) event of its own figure, which is sound (that is its guarantee) if loose. The ledger is
written as version 2, or as version 3 once it holds an entry of several days, which a version-2 job
would not know to count in the windows of its earlier days: it refuses such a ledger instead.

Entries are never deleted by the job. A run reserves its spend before reading data and marks it
committed, failed or rejected at the end; reserved, failed and rejected runs still count, because
noise may already have been drawn and a partial output may exist.
"""

from __future__ import annotations

import dataclasses
import datetime as dt
import math
import secrets

import dp_accounting

from core.dates import parse_date, utc_timestamp
from dp_ops.dp_events import EpsilonDeltaDpEvent, composed_epsilon, delta_floor, event_from_json, event_to_json

LEDGER_VERSION = 2
MULTI_DAY_LEDGER_VERSION = 3
READABLE_VERSIONS = (1, 2, 3)
# Keyword-set builds (beam_jobs.build_keywords) are charged once, on the days of the data they were
# built from (--date and --data_days), under the run id written into the set's file (by the build
# with --privacy_ledger, else by the first nightly run that uses the set); they are not nightly runs,
# so they do not make a nightly run on one of those days a re-run.
KEYWORD_SET_RUN_PREFIX = "keyword-set-"
STATUSES = ("reserved", "committed", "failed", "rejected")
# The delta every window is composed at. A window's users are everyone seen in it, so this is the
# window's chance of an unbounded loss: 10x a night's default --delta (1e-6), which leaves room for a DP
# keyword set's (epsilon, delta) partition selection (delta 5e-7); keep it well under 1 / users.
DEFAULT_WINDOW_DELTA = 1e-5


def new_keyword_set_run_id() -> str:
    """A keyword-set build's ledger run id. Random only: it is written into the public keyword-set
    file next to its creation time, and a start time beside that would publish the build's duration."""
    return KEYWORD_SET_RUN_PREFIX + secrets.token_hex(8)


class BudgetRefused(Exception):
    """The run would exceed the privacy budget, or re-run a date without --allow_rerun."""


@dataclasses.dataclass(frozen=True)
class LedgerEntry:
    run_id: str
    date: str
    epsilon: float
    delta: float
    status: str
    recorded_at: str
    output: str
    rerun: bool = False
    # The run's dp-accounting events as JSON; empty in version-1 entries (see dp_events()).
    events: tuple[dict, ...] = ()
    # Days of data the spend was computed from, ending on `date`: 1 for a nightly run, a keyword
    # set's --data_days. The entry counts in every window holding any of them.
    days: int = 1

    def __post_init__(self):
        parse_date(self.date)
        if not isinstance(self.days, int) or self.days < 1:
            raise ValueError(f"ledger entry {self.run_id}: days must be an integer >= 1, got {self.days!r}")
        if self.status not in STATUSES:
            raise ValueError(f"ledger status must be one of {STATUSES}, got {self.status!r}")
        if self.epsilon < 0 or not 0 <= self.delta < 1:
            raise ValueError(f"ledger entry {self.run_id}: bad epsilon/delta {self.epsilon}/{self.delta}")
        object.__setattr__(self, "events", tuple(self.events))
        try:
            self.dp_events()
        except ValueError as error:
            raise ValueError(f"ledger entry {self.run_id}: {error}") from error

    def dp_events(self) -> list[dp_accounting.DpEvent]:
        """What the window composes: the stored events, or for a version-1 entry its own (epsilon, delta)."""
        return _dp_events(self.epsilon, self.delta, self.events or None)

    def in_window(self, start: dt.date, end: dt.date) -> bool:
        """Whether any of the entry's days falls in [start, end]."""
        last = parse_date(self.date)
        return last >= start and last - dt.timedelta(days=self.days - 1) <= end


@dataclasses.dataclass(frozen=True)
class PendingSpend:
    """What a run or a keyword set is about to spend: its own (epsilon, delta) and its events (the
    (epsilon, delta) event of its own figure if None)."""

    epsilon: float
    delta: float
    events: tuple[dict, ...] | None = None

    def dp_events(self) -> list[dp_accounting.DpEvent]:
        return _dp_events(self.epsilon, self.delta, self.events)


def _dp_events(epsilon: float, delta: float, events) -> list[dp_accounting.DpEvent]:
    if events is None:
        return [EpsilonDeltaDpEvent(epsilon, delta)]
    return [event_from_json(event) for event in events]


def events_json(events) -> tuple[dict, ...]:
    """DpEvents (or their JSON) as a ledger entry stores them."""
    return tuple(e if isinstance(e, dict) else event_to_json(e) for e in events)


def window_spend(charges, window_delta: float) -> tuple[float, float]:
    """(epsilon, delta) of running all `charges` (entries or PendingSpends) on the same users: the PLD
    composition of their events at `window_delta`, and never more than the sum of their epsilons when
    that delta covers the sum of their deltas (basic composition then holds too)."""
    charges = list(charges)
    if not charges:
        return 0.0, window_delta
    events = [event for c in charges for event in c.dp_events()]
    epsilon = composed_epsilon(events, window_delta)
    if window_delta >= sum(c.delta for c in charges):
        epsilon = min(epsilon, sum(c.epsilon for c in charges))
    return epsilon, window_delta


@dataclasses.dataclass(frozen=True)
class Ledger:
    unit: str = "user"
    entries: tuple[LedgerEntry, ...] = ()

    @classmethod
    def from_json(cls, data: dict | None) -> "Ledger":
        if not data:
            return cls()
        if data.get("version") not in READABLE_VERSIONS:
            raise ValueError(f"unsupported ledger version {data.get('version')!r} (this job reads {READABLE_VERSIONS})")
        return cls(unit=data["unit"], entries=tuple(LedgerEntry(**e) for e in data["entries"]))

    def to_json(self) -> dict:
        """Version 2 while every entry is one day (`days` left out), else version 3 (see the module)."""
        multi_day = any(e.days > 1 for e in self.entries)
        entries = []
        for e in self.entries:
            entry = {**dataclasses.asdict(e), "events": list(e.events)}
            if e.days == 1:
                del entry["days"]
            entries.append(entry)
        return {"version": MULTI_DAY_LEDGER_VERSION if multi_day else LEDGER_VERSION, "unit": self.unit,
                "entries": entries}

    def runs_on(self, date: str) -> list[LedgerEntry]:
        return [e for e in self.entries if e.date == date]

    def _windows(self, date: str, window_days: int, days: int = 1):
        """(first day, entries with a day in it) of every window of `window_days` days holding any of
        the `days` days ending on `date`."""
        last = parse_date(date)
        for offset in range(window_days + days - 1):
            start = last - dt.timedelta(days=window_days + days - 2 - offset)
            end = start + dt.timedelta(days=window_days - 1)
            yield start.isoformat(), [e for e in self.entries if e.in_window(start, end)]

    def _worst_window(self, date: str, window_days: int, max_delta_per_window: float,
                      charge: PendingSpend | None, days: int = 1) -> tuple[float, float, str, list[LedgerEntry]]:
        windows = list(self._windows(date, window_days, days))
        # At a fixed delta, a window whose runs are a subset of another's spends no more (composing
        # one more mechanism never lowers epsilon), so only the largest windows are composed.
        runs = [{e.run_id for e in inside} for _, inside in windows]
        windows = [window for window, ids in zip(windows, runs) if not any(ids < other for other in runs)]
        worst, spent = None, {}
        for start, inside in windows:
            key = tuple(e.run_id for e in inside)
            if key not in spent:  # neighbouring windows often hold the same runs
                spent[key] = window_spend(inside + ([charge] if charge else []), max_delta_per_window)
            epsilon, delta = spent[key]
            if worst is None or epsilon > worst[0]:
                worst = (epsilon, delta, start, inside)
        return worst

    def worst_window_spend(self, date: str, window_days: int,
                           max_delta_per_window: float = DEFAULT_WINDOW_DELTA) -> tuple[float, float, str]:
        """(epsilon, delta, first day) of the most-spent window of `window_days` days containing `date`
        (PLD composition of its runs' events; see the module docstring for its delta)."""
        epsilon, delta, start, _ = self._worst_window(date, window_days, max_delta_per_window, None)
        return epsilon, delta, start

    def check(self, date: str, epsilon: float, max_epsilon_per_window: float | None, window_days: int,
              allow_rerun: bool, *, delta: float = 0.0, events=None,
              max_delta_per_window: float = DEFAULT_WINDOW_DELTA, days: int = 1) -> None:
        """Raises BudgetRefused if a run of (`epsilon`, `delta`) with `events` (DpEvents or their
        JSON; None: the (epsilon, delta) event itself) on `date` (and the `days` - 1 days before it:
        every window holding any of them is checked) is not allowed."""
        earlier = [e for e in self.runs_on(date) if not e.run_id.startswith(KEYWORD_SET_RUN_PREFIX)]
        if earlier and not allow_rerun:
            ids = ", ".join(e.run_id for e in earlier)
            raise BudgetRefused(f"{date} already has run(s) {ids} in the ledger; re-running would spend again. "
                                f"Pass --allow_rerun to record a second spend explicitly.")
        if not 0 < max_delta_per_window < 1:
            raise ValueError(f"the window delta must be in (0, 1), got {max_delta_per_window}")
        if max_epsilon_per_window is None:  # a ledger that only records: no window is checked
            return
        charge = PendingSpend(epsilon, delta, None if events is None else events_json(events))
        total, window_delta, start, inside = self._worst_window(date, window_days, max_delta_per_window, charge,
                                                                days)
        spent, _ = window_spend(inside, max_delta_per_window)
        if math.isinf(total):
            floor = delta_floor([event for c in [*inside, charge] for event in c.dp_events()])
            raise BudgetRefused(
                f"the run on {date} would bring the {window_days}-day window starting {start} to delta {floor:.3g} "
                f"from its (epsilon, delta) mechanisms alone, >= cap {max_delta_per_window:.3g}")
        if max_epsilon_per_window is not None and total > max_epsilon_per_window + 1e-9:
            raise BudgetRefused(
                f"epsilon {epsilon:.4g} on {date} would bring the {window_days}-day window starting {start} to "
                f"{total:.4g} (PLD composition at delta {window_delta:.3g}) > cap {max_epsilon_per_window:.4g} "
                f"(already spent {spent:.4g})")

    def has_run(self, run_id: str) -> bool:
        return any(e.run_id == run_id for e in self.entries)

    def with_keyword_set(self, run_id: str, date: str, epsilon: float, delta: float, status: str, output: str,
                         max_epsilon_per_window: float | None, window_days: int, *, events=None,
                         max_delta_per_window: float = DEFAULT_WINDOW_DELTA, days: int = 1) -> "Ledger":
        """Charges a keyword-set build on the `days` days of its data ending on `date`: checked against
        the caps in every window holding any of them like a run, but never a re-run. Raises
        BudgetRefused (naming the set) or ValueError if already charged. `events`: as for `check`;
        None records the set as the (epsilon, delta) event of its figure."""
        if not run_id.startswith(KEYWORD_SET_RUN_PREFIX):
            raise ValueError(f"a keyword-set run id starts with {KEYWORD_SET_RUN_PREFIX!r}, got {run_id!r}")
        try:
            self.check(date, epsilon, max_epsilon_per_window, window_days, allow_rerun=True, delta=delta,
                       events=events, max_delta_per_window=max_delta_per_window, days=days)
        except BudgetRefused as error:
            dated = f"dated {date}" if days == 1 else f"{days} days of data to {date}"
            raise BudgetRefused(f"keyword set {run_id} ({dated}): {error}") from error
        return self.with_entry(LedgerEntry(
            run_id=run_id, date=date, epsilon=epsilon, delta=delta, status=status,
            recorded_at=utc_timestamp(), output=output,
            events=() if events is None else events_json(events), days=days))

    def with_entry(self, entry: LedgerEntry) -> "Ledger":
        if self.has_run(entry.run_id):
            raise ValueError(f"run id {entry.run_id} is already in the ledger")
        return dataclasses.replace(self, entries=self.entries + (entry,))

    def with_status(self, run_id: str, status: str, epsilon: float | None = None,
                    delta: float | None = None) -> "Ledger":
        updated, found = [], False
        for entry in self.entries:
            if entry.run_id == run_id:
                found = True
                entry = dataclasses.replace(entry, status=status,
                                            epsilon=entry.epsilon if epsilon is None else epsilon,
                                            delta=entry.delta if delta is None else delta)
            updated.append(entry)
        if not found:
            raise KeyError(f"run id {run_id} is not in the ledger")
        return dataclasses.replace(self, entries=tuple(updated))
