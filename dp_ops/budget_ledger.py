"""The privacy-budget ledger: what nightly runs spent per privacy unit, and the window cap.

A user can appear on many nights, so spends compose. With basic composition, a user's total over
any `window_days` consecutive days is at most the sum of the epsilons of the runs dated in those
days; a new run is allowed only if every window that contains its date stays under the cap
(checking only the window ending on its date would let a backfill overspend later windows).

Entries are never deleted by the job. A run reserves its spend before reading data and marks it
committed, failed or rejected at the end; reserved, failed and rejected runs still count, because
noise may already have been drawn and a partial output may exist.
"""

from __future__ import annotations

import dataclasses
import datetime as dt
import secrets

LEDGER_VERSION = 1
# Keyword-set builds (beam_jobs.build_keywords) are charged once, on their build date, under the
# run id written into the set's file (by the build with --privacy_ledger, else by the first nightly
# run that uses the set); they are not nightly runs, so they do not make that date's nightly run a re-run.
KEYWORD_SET_RUN_PREFIX = "keyword-set-"
STATUSES = ("reserved", "committed", "failed", "rejected")


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

    def __post_init__(self):
        dt.date.fromisoformat(self.date)
        if self.status not in STATUSES:
            raise ValueError(f"ledger status must be one of {STATUSES}, got {self.status!r}")
        if self.epsilon < 0 or not 0 <= self.delta < 1:
            raise ValueError(f"ledger entry {self.run_id}: bad epsilon/delta {self.epsilon}/{self.delta}")


@dataclasses.dataclass(frozen=True)
class Ledger:
    unit: str = "user"
    entries: tuple[LedgerEntry, ...] = ()

    @classmethod
    def from_json(cls, data: dict | None) -> "Ledger":
        if not data:
            return cls()
        if data.get("version") != LEDGER_VERSION:
            raise ValueError(f"unsupported ledger version {data.get('version')!r}")
        return cls(unit=data["unit"], entries=tuple(LedgerEntry(**e) for e in data["entries"]))

    def to_json(self) -> dict:
        return {"version": LEDGER_VERSION, "unit": self.unit,
                "entries": [dataclasses.asdict(e) for e in self.entries]}

    def runs_on(self, date: str) -> list[LedgerEntry]:
        return [e for e in self.entries if e.date == date]

    def worst_window_spend(self, date: str, window_days: int) -> tuple[float, float, str]:
        """(epsilon, delta, first day) of the most-spent window of `window_days` days containing `date`."""
        day = dt.date.fromisoformat(date)
        worst = (0.0, 0.0, date)
        for offset in range(window_days):
            start = day - dt.timedelta(days=window_days - 1 - offset)
            end = start + dt.timedelta(days=window_days - 1)
            inside = [e for e in self.entries if start <= dt.date.fromisoformat(e.date) <= end]
            spend = (sum(e.epsilon for e in inside), sum(e.delta for e in inside), start.isoformat())
            if spend[0] > worst[0]:
                worst = spend
        return worst

    def check(self, date: str, epsilon: float, max_epsilon_per_window: float | None, window_days: int,
              allow_rerun: bool) -> None:
        """Raises BudgetRefused if a run of `epsilon` on `date` is not allowed."""
        earlier = [e for e in self.runs_on(date) if not e.run_id.startswith(KEYWORD_SET_RUN_PREFIX)]
        if earlier and not allow_rerun:
            ids = ", ".join(e.run_id for e in earlier)
            raise BudgetRefused(f"{date} already has run(s) {ids} in the ledger; re-running would spend again. "
                                f"Pass --allow_rerun to record a second spend explicitly.")
        if max_epsilon_per_window is None:
            return
        spent, _, start = self.worst_window_spend(date, window_days)
        if spent + epsilon > max_epsilon_per_window + 1e-9:
            raise BudgetRefused(
                f"epsilon {epsilon:.4g} on {date} would bring the {window_days}-day window starting {start} to "
                f"{spent + epsilon:.4g} > cap {max_epsilon_per_window:.4g} (already spent {spent:.4g})")

    def has_run(self, run_id: str) -> bool:
        return any(e.run_id == run_id for e in self.entries)

    def with_keyword_set(self, run_id: str, date: str, epsilon: float, delta: float, status: str, output: str,
                         max_epsilon_per_window: float | None, window_days: int) -> "Ledger":
        """Charges a keyword-set build: checked against the cap on its own date like a run, but never
        a re-run of that date. Raises BudgetRefused (naming the set) or ValueError if already charged."""
        if not run_id.startswith(KEYWORD_SET_RUN_PREFIX):
            raise ValueError(f"a keyword-set run id starts with {KEYWORD_SET_RUN_PREFIX!r}, got {run_id!r}")
        try:
            self.check(date, epsilon, max_epsilon_per_window, window_days, allow_rerun=True)
        except BudgetRefused as error:
            raise BudgetRefused(f"keyword set {run_id} (dated {date}): {error}") from error
        return self.with_entry(LedgerEntry(
            run_id=run_id, date=date, epsilon=epsilon, delta=delta, status=status,
            recorded_at=dt.datetime.now(dt.timezone.utc).isoformat(timespec="seconds"), output=output))

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
