"""Changes to the privacy-budget ledger file: a job's reservation, and the status of a recorded run.

Both jobs (beam_jobs.insights, beam_jobs.build_keywords), a run's last step
(transforms.finalize_run) and the policy command (beam_jobs.ledger_policy) change the ledger only
through these functions. Each is one atomic
read-modify-write of the shared file (core.json_store), so concurrent jobs never lose an entry and a
refused reservation writes nothing. The accounting itself (what a window holds, what the cap
allows) is dp_ops.budget_ledger's.
"""

from __future__ import annotations

from core import json_store
from core.dates import utc_timestamp
from dp_ops.budget_ledger import KEYWORD_SET_RUN_PREFIX, BudgetRefused, Charge, Ledger, LedgerEntry, LedgerPolicy, events_json


def reserve_budget(ledger_path: str, policy: LedgerPolicy | None, *, run: Charge | None = None,
                   keyword_set: Charge | None = None, keyword_set_status: str = "reserved",
                   allow_rerun: bool = False) -> bool:
    """In one atomic update: checks that `policy` (the job's window flags; None: no cap) is the
    ledger's (writing it there at the ledger's first capped reservation); charges `keyword_set` with
    `keyword_set_status` unless the ledger already holds its run id (a keyword set is charged once per
    ledger, by its build or by the first night that uses it), checked against the cap on its own days;
    then checks `run` against the cap and against re-runs of its date, and records it `reserved`.
    Every entry records the window delta it was checked at. Raises BudgetRefused (LedgerPolicyMismatch
    for other window flags than the ledger's; nothing is written) if any is refused. Returns whether
    the keyword set was charged."""
    if run is None and keyword_set is None:
        raise ValueError("reserve_budget needs a run or a keyword set to charge")
    if run is not None and run.days != 1:
        raise ValueError("a run is charged on its one date (days=1); only a keyword set spans several days")
    # Ledger.check's arguments; without a policy no window is checked (only re-runs).
    max_epsilon_per_window, window_days = (None, 1) if policy is None else (policy.max_epsilon_per_window,
                                                                            policy.window_days)
    window_delta = None if policy is None else policy.max_delta_per_window
    checked = {} if policy is None else {"max_delta_per_window": window_delta}
    charged_set = False

    def reserve(document):
        nonlocal charged_set  # update_json may call this again on a concurrent update: reset each time
        ledger = Ledger.from_json(document).adopting(policy, by=(run or keyword_set).run_id)
        charged_set = keyword_set is not None and not ledger.has_run(keyword_set.run_id)
        if charged_set:
            ledger = ledger.with_keyword_set(keyword_set, keyword_set_status, max_epsilon_per_window, window_days,
                                             **checked)
        if run is not None:
            ledger.check(run.date, run.epsilon, max_epsilon_per_window, window_days, allow_rerun, delta=run.delta,
                         events=run.events, **checked)
            ledger = ledger.with_entry(LedgerEntry(
                run_id=run.run_id, date=run.date, epsilon=run.epsilon, delta=run.delta, status="reserved",
                recorded_at=utc_timestamp(), output=run.output, events=events_json(run.events or ()),
                rerun=any(not e.run_id.startswith(KEYWORD_SET_RUN_PREFIX) for e in ledger.runs_on(run.date)),
                window_delta=window_delta))
        return ledger.to_json()

    json_store.update_json(ledger_path, reserve)
    return charged_set


def change_ledger_policy(ledger_path: str, policy: LedgerPolicy, by: str, reason: str, *,
                         previous: LedgerPolicy | None) -> Ledger:
    """Sets the ledger's window policy from `previous` (the one the caller read and showed the change
    from) to `policy` (beam_jobs.ledger_policy), logged with `by` and `reason`, after checking every
    window of its entries under it (Ledger.with_changed_policy). Raises BudgetRefused (nothing is
    written) if one breaks it, or if the ledger's policy is no longer `previous`: a change written
    meanwhile is not overwritten unseen. Returns the updated ledger."""
    updated = None

    def change(document):
        nonlocal updated
        ledger = Ledger.from_json(document)
        if ledger.policy != previous:
            now = "none" if ledger.policy is None else ledger.policy.flags()
            raise BudgetRefused(f"the ledger's policy changed while this command ran (now: {now}); run it again")
        updated = ledger.with_changed_policy(policy, by, reason)
        return updated.to_json()

    json_store.update_json(ledger_path, change)
    return updated


def set_ledger_status(ledger_path: str, run_id: str, status: str) -> None:
    """Sets (not adds: safe to repeat) the status of a recorded run or keyword set. Raises KeyError
    if the ledger does not hold `run_id`."""
    json_store.update_json(ledger_path, lambda document: Ledger.from_json(document).with_status(run_id, status).to_json())
