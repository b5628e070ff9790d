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

The window policy (the cap, the window's delta, the window's length and the nights' cadence) lives
in the ledger, not in each run's flags: a run's flags decide only whether it may run. The first
capped reservation writes its flags into the ledger as its `policy`, once every window of the entries
already there fits them (the uncapped runs before it were never checked); every later job on that ledger
must pass the same four flags or is refused (LedgerPolicyMismatch), since a schedule edited by
mistake (a larger window delta, a shorter window, a higher cap) would otherwise read the same
entries under a looser rule and admit a night that breaks the windows the other nights were
planned for. The policy changes only through `with_changed_policy` (beam_jobs.ledger_policy, an
explicit, logged command), which re-checks every existing window under the new policy; each change
is kept in `policy_log`, so a ledger whose policy is null beside a non-empty log was edited by hand,
and is refused. No window delta above MAX_WINDOW_DELTA is accepted. Each entry records the window
delta it was checked at.

Version-1 ledgers (entries with only epsilon and delta) are read: such an entry is the (epsilon,
delta) event of its own figure, which is sound (that is its guarantee) if loose. The ledger is
written as version 2, as version 3 once it holds an entry of several days, which a version-2 job
would not know to count in the windows of its earlier days, and as version 4 once it holds a policy,
which an older job would not enforce: each older job refuses the newer versions instead.

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
POLICY_LEDGER_VERSION = 4
READABLE_VERSIONS = (1, 2, 3, 4)
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
# The largest window delta any policy or check accepts. It is each user's chance, per window, of an
# unbounded loss: above 1e-3 a cap bounds little for any population worth capping (it should be well
# under 1 / users), so a larger one is a mistake, not a policy (the review's ledger admitted 0.5).
MAX_WINDOW_DELTA = 1e-3


def new_keyword_set_run_id() -> str:
    """A keyword-set build's ledger run id. Random only: it is written into the public keyword-set
    file next to its creation time, and a start time beside that would publish the build's duration."""
    return KEYWORD_SET_RUN_PREFIX + secrets.token_hex(8)


class BudgetRefused(Exception):
    """The run would exceed the privacy budget, or re-run a date without --allow_rerun."""


class LedgerPolicyMismatch(BudgetRefused):
    """The run's window flags are not the policy the ledger holds."""


# The flags a policy is made of, in the order messages list them.
POLICY_FLAGS = ("max_epsilon_per_window", "max_delta_per_window", "window_days", "cadence_days")


@dataclasses.dataclass(frozen=True)
class LedgerPolicy:
    """What every window of the ledger is held to: epsilon at most `max_epsilon_per_window` at
    `max_delta_per_window`, over any `window_days` consecutive days, for nights planned one every
    `cadence_days` (the nightly plan's rule: dp_ops.nightly_plan). Each field is the flag of its name."""

    max_epsilon_per_window: float
    max_delta_per_window: float
    window_days: int
    cadence_days: int

    def __post_init__(self):
        if not (_number(self.max_epsilon_per_window) and self.max_epsilon_per_window > 0):
            raise ValueError(f"the window cap must be a finite number > 0, got {self.max_epsilon_per_window!r}")
        check_window_delta(self.max_delta_per_window)
        for name in ("window_days", "cadence_days"):
            value = getattr(self, name)
            if not (isinstance(value, int) and not isinstance(value, bool) and value >= 1):
                raise ValueError(f"{name} must be an integer >= 1, got {value!r}")

    @classmethod
    def from_json(cls, data) -> "LedgerPolicy":
        if not isinstance(data, dict) or set(data) != set(POLICY_FLAGS):
            raise ValueError(f"a ledger policy has exactly the fields {list(POLICY_FLAGS)}, got {data!r}")
        return cls(**data)

    def to_json(self) -> dict:
        return dataclasses.asdict(self)

    def flags(self) -> str:
        """The policy as the command-line flags that give it."""
        return " ".join(f"--{name} {getattr(self, name):g}" for name in POLICY_FLAGS)

    def differences(self, other: "LedgerPolicy | None") -> list[str]:
        """What `other` (a run's flags; None: no window cap) sets differently, flag by flag."""
        if other is None:
            return ["--max_epsilon_per_window: not given"]
        return [f"--{name}: the ledger's {getattr(self, name):g}, this run's {getattr(other, name):g}"
                for name in POLICY_FLAGS if getattr(self, name) != getattr(other, name)]


def _number(value) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value)


def check_window_delta(value) -> None:
    """Raises ValueError unless `value` is a window delta a policy or a check may use: in (0, MAX_WINDOW_DELTA]."""
    if not (_number(value) and 0 < value <= MAX_WINDOW_DELTA):
        raise ValueError(f"the window delta must be in (0, {MAX_WINDOW_DELTA:g}], got {value!r}")


@dataclasses.dataclass(frozen=True)
class Charge:
    """A spend to record under `run_id` on `date` (YYYY-MM-DD); `output` is where its result went.
    `events`: its mechanisms' dp-accounting events (or their JSON), which the ledger composes with
    PLD across a window; None records it as the (epsilon, delta) event of its figure. `days`: the
    days of data it was computed from, ending on `date` (a keyword set's --data_days; a run's 1)."""

    run_id: str
    date: str
    epsilon: float
    delta: float
    output: str
    events: tuple | None = None
    days: int = 1


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
    # The window delta its windows were checked at when it was admitted (None: no cap was checked).
    window_delta: float | None = None

    def __post_init__(self):
        parse_date(self.date)
        if not isinstance(self.days, int) or self.days < 1:
            raise ValueError(f"ledger entry {self.run_id}: days must be an integer >= 1, got {self.days!r}")
        if self.status not in STATUSES:
            raise ValueError(f"ledger status must be one of {STATUSES}, got {self.status!r}")
        if self.epsilon < 0 or not 0 <= self.delta < 1:
            raise ValueError(f"ledger entry {self.run_id}: bad epsilon/delta {self.epsilon}/{self.delta}")
        if self.window_delta is not None and not (_number(self.window_delta) and 0 < self.window_delta < 1):
            raise ValueError(f"ledger entry {self.run_id}: bad window delta {self.window_delta!r}")
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
    # The window policy every capped run must pass (None: the ledger only records; see the module).
    policy: LedgerPolicy | None = None
    # Every time the policy was set or changed: {"at", "by", "policy", "previous", "reason"}.
    policy_log: tuple[dict, ...] = ()

    @classmethod
    def from_json(cls, data: dict | None) -> "Ledger":
        if not data:
            return cls()
        if data.get("version") not in READABLE_VERSIONS:
            raise ValueError(f"unsupported ledger version {data.get('version')!r} (this job reads {READABLE_VERSIONS})")
        policy = data.get("policy")
        log = data.get("policy_log", [])
        if not isinstance(log, list) or not all(isinstance(change, dict) for change in log):
            raise ValueError(f"a ledger's policy_log is a list of changes, got {log!r}")
        if policy is None and log:
            # Only an edit removes a policy; read as none, the next capped run would set its own flags unchecked.
            raise BudgetRefused(
                f"this ledger's policy is null but its policy_log holds {len(log)} change(s), the last to "
                f"{log[-1].get('policy')}: a policy is never removed, so the ledger was edited. Restore its "
                f"\"policy\" (the log's last), then change it with python -m beam_jobs.ledger_policy if needed.")
        return cls(unit=data["unit"], entries=tuple(LedgerEntry(**e) for e in data["entries"]),
                   policy=None if policy is None else LedgerPolicy.from_json(policy), policy_log=tuple(log))

    def to_json(self) -> dict:
        """Version 4 once it holds a policy, else 3 if an entry has several days, else 2 (see the module);
        an entry's `days` and `window_delta` are left out where they say nothing (1 day, no check)."""
        multi_day = any(e.days > 1 for e in self.entries)
        entries = []
        for e in self.entries:
            entry = {**dataclasses.asdict(e), "events": list(e.events)}
            if e.days == 1:
                del entry["days"]
            if e.window_delta is None:
                del entry["window_delta"]
            entries.append(entry)
        document = {"unit": self.unit, "entries": entries}
        if self.policy is not None or self.policy_log or any(e.window_delta is not None for e in self.entries):
            return {"version": POLICY_LEDGER_VERSION, **document,
                    "policy": None if self.policy is None else self.policy.to_json(),
                    "policy_log": list(self.policy_log)}
        return {"version": MULTI_DAY_LEDGER_VERSION if multi_day else LEDGER_VERSION, **document}

    def adopting(self, policy: LedgerPolicy | None, by: str) -> "Ledger":
        """This ledger once a run (`by`: its run id) with the window flags `policy` (None: no cap) may
        use it: unchanged if they are its policy (or neither has one), with `policy` as its policy if it
        has none yet (its first capped run), once every window of its entries fits `policy`, as for a
        change of policy (the uncapped runs before it were never checked). Raises LedgerPolicyMismatch
        if they differ from its policy, BudgetRefused if a window breaks the first one."""
        if self.policy is None:
            if policy is None:
                return self
            try:
                self._check_every_window(policy)
            except BudgetRefused as error:
                raise BudgetRefused(f"this ledger has no policy yet and this run's window flags would be its "
                                    f"first, but its entries already break them: {error}") from None
            return self._with_policy(policy, by, "first capped run on this ledger")
        differences = self.policy.differences(policy)
        if differences:
            raise LedgerPolicyMismatch(
                f"this ledger's window policy is {self.policy.flags()}, and this run's flags differ "
                f"({'; '.join(differences)}). Pass the ledger's flags; to change its policy, run "
                f"python -m beam_jobs.ledger_policy, which checks every window under the new one first.")
        return self

    def with_changed_policy(self, policy: LedgerPolicy, by: str, reason: str) -> "Ledger":
        """This ledger under `policy` from now on, logged with `reason`. Raises BudgetRefused if a
        window of the entries it holds already breaks `policy` (_check_every_window)."""
        if not reason.strip():
            raise ValueError("a change of the ledger's policy needs a reason")
        self._check_every_window(policy)
        return self._with_policy(policy, by, reason)

    def _check_every_window(self, policy: LedgerPolicy) -> None:
        """Raises BudgetRefused, naming the window and its excess, if a window of the entries this
        ledger holds already breaks `policy` (its cap or its delta): a policy must hold for every
        window, or the nights planned under it would not fit."""
        worst = self.worst_window(policy.window_days, policy.max_delta_per_window)
        if worst is None:
            return
        epsilon, _, start, inside = worst
        window = f"under {policy.flags()} the {policy.window_days}-day window starting {start}"
        if math.isinf(epsilon):
            floor = delta_floor([event for entry in inside for event in entry.dp_events()])
            raise BudgetRefused(f"{window} would need delta {floor:.3g} >= {policy.max_delta_per_window:.3g}")
        cap = policy.max_epsilon_per_window
        if epsilon > cap + 1e-9:
            raise BudgetRefused(f"{window} already spends epsilon {epsilon:.4g} > {cap:g} ({epsilon - cap:.4g} over)")

    def _with_policy(self, policy: LedgerPolicy, by: str, reason: str) -> "Ledger":
        change = {"at": utc_timestamp(), "by": by, "policy": policy.to_json(),
                  "previous": None if self.policy is None else self.policy.to_json(), "reason": reason}
        return dataclasses.replace(self, policy=policy, policy_log=self.policy_log + (change,))

    def worst_window(self, window_days: int, max_delta_per_window: float
                     ) -> tuple[float, float, str, list[LedgerEntry]] | None:
        """(epsilon, delta, first day, entries) of the most-spent window of `window_days` days among
        all windows holding an entry; None for an empty ledger."""
        if not self.entries:
            return None
        last = max(parse_date(e.date) for e in self.entries)
        first = min(parse_date(e.date) - dt.timedelta(days=e.days - 1) for e in self.entries)
        return self._worst_window(last.isoformat(), window_days, max_delta_per_window, None,
                                  (last - first).days + 1)

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
        check_window_delta(max_delta_per_window)
        if self.policy is not None:  # a caller's arguments never loosen the ledger's own policy
            self.adopting(None if max_epsilon_per_window is None else LedgerPolicy(
                max_epsilon_per_window, max_delta_per_window, window_days, self.policy.cadence_days), "check")
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

    def with_keyword_set(self, keyword_set: Charge, status: str, max_epsilon_per_window: float | None,
                         window_days: int, *, max_delta_per_window: float = DEFAULT_WINDOW_DELTA) -> "Ledger":
        """Charges a keyword-set build (`keyword_set`, recorded with `status`) on the `days` days of its
        data ending on its `date`: checked against the caps in every window holding any of them like a
        run, but never a re-run. Raises BudgetRefused (naming the set) or ValueError if already charged.
        Its `events`: as for `check`; None records the set as the (epsilon, delta) event of its figure."""
        run_id, date, days = keyword_set.run_id, keyword_set.date, keyword_set.days
        if not run_id.startswith(KEYWORD_SET_RUN_PREFIX):
            raise ValueError(f"a keyword-set run id starts with {KEYWORD_SET_RUN_PREFIX!r}, got {run_id!r}")
        try:
            self.check(date, keyword_set.epsilon, max_epsilon_per_window, window_days, allow_rerun=True,
                       delta=keyword_set.delta, events=keyword_set.events, max_delta_per_window=max_delta_per_window,
                       days=days)
        except BudgetRefused as error:
            dated = f"dated {date}" if days == 1 else f"{days} days of data to {date}"
            raise BudgetRefused(f"keyword set {run_id} ({dated}): {error}") from error
        return self.with_entry(LedgerEntry(
            run_id=run_id, date=date, epsilon=keyword_set.epsilon, delta=keyword_set.delta, status=status,
            recorded_at=utc_timestamp(), output=keyword_set.output,
            events=() if keyword_set.events is None else events_json(keyword_set.events), days=days,
            window_delta=None if max_epsilon_per_window is None else max_delta_per_window))

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
