"""Shows or changes the window policy a privacy ledger enforces (dp_ops/budget_ledger.py).

    python -m beam_jobs.ledger_policy --privacy_ledger PATH
    python -m beam_jobs.ledger_policy --privacy_ledger PATH --max_epsilon_per_window 30 \\
        --max_delta_per_window 1e-5 --window_days 30 --cadence_days 1 --reason "..."

The first capped run on a ledger writes its flags there as the ledger's policy, and every later run
must pass the same ones (a run whose flags differ is refused with exit code 4). Changing the policy
is this command alone: it composes every window of the ledger's entries under the new policy and
refuses (exit code 4, nothing written) if one breaks it; otherwise it writes the new policy and logs
the change, with who made it and why, in the ledger's `policy_log` and in this process's log.
The four policy flags are the insights job's own (config/run.py RunParams, with its bounds), but a
flag not given keeps the ledger's value: with the job's defaults, re-affirming the cap alone reset
the other three (a window delta of 1e-7 became 1e-5). Only a ledger without a policy takes the job's
defaults, for every flag but the cap. The command prints each field that changes before writing it,
and writes nothing when none does.
"""

from __future__ import annotations

import argparse
import dataclasses
import getpass
import json
import logging

from beam_jobs.job_runtime import EXIT_BAD_OPTIONS, EXIT_BUDGET_REFUSED, fail, run_as_command
from config.flags import add_flags
from config.run import RunParams
from core.json_store import read_json_or_none
from dp_ops.budget_ledger import POLICY_FLAGS, BudgetRefused, Ledger, LedgerPolicy
from dp_ops.ledger_updates import change_ledger_policy

log = logging.getLogger("urania.ledger_policy")


def argument_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="python -m beam_jobs.ledger_policy", formatter_class=argparse.ArgumentDefaultsHelpFormatter,
        description="Show a privacy ledger's window policy, or change it after checking every window under the "
                    "new one. Without --reason it only shows the policy.")
    add_flags(parser, RunParams, _describe, only=("privacy_ledger", *POLICY_FLAGS))
    parser.set_defaults(**dict.fromkeys(POLICY_FLAGS))  # not given: the ledger's value (requested_policy)
    parser.add_argument("--reason", default=None,
                        help="Why the policy changes (required to change it; kept in the ledger's policy_log).")
    parser.add_argument("--by", default=None, help="Who changes it (default: this process's user name).")
    return parser


def _describe(field: dataclasses.Field) -> str:
    """A flag's help here: the job's, and for a policy flag what leaving it out means to this command."""
    if field.name not in POLICY_FLAGS:
        return field.metadata["help"]
    first = ("required for a ledger's first policy" if field.default is None
             else f"on a ledger without a policy, the job's default {field.default:g}")
    return f"{field.metadata['help']} Not given: the ledger's current value ({first})."


def requested_policy(args: argparse.Namespace, current: LedgerPolicy | None) -> LedgerPolicy:
    """The policy the flags ask for: each policy flag given, the ledger's `current` value for the others
    (the job's defaults if it has no policy; the cap has none, so a first policy needs it). Built as the
    job builds it, so the job's flag bounds apply. Raises ValueError naming a bad or missing flag."""
    given = {name: getattr(args, name) for name in POLICY_FLAGS if getattr(args, name) is not None}
    kept = {} if current is None else current.to_json()
    policy = RunParams(privacy_ledger=args.privacy_ledger, **{**kept, **given}).ledger_policy()
    if policy is None:
        raise ValueError("--max_epsilon_per_window is required to set a ledger's first policy")
    return policy


def policy_changes(current: LedgerPolicy | None, policy: LedgerPolicy) -> list[str]:
    """Each field `policy` sets differently from `current` (None: the ledger has no policy), "name: old → new"."""
    def shown(of: LedgerPolicy | None, name: str) -> str:
        return "none" if of is None else f"{getattr(of, name):g}"

    return [f"{name}: {shown(current, name)} → {shown(policy, name)}" for name in POLICY_FLAGS
            if current is None or getattr(current, name) != getattr(policy, name)]


def _user() -> str:
    try:
        return getpass.getuser()
    except Exception:  # no login name in some containers: the change is still logged, by "unknown"
        return "unknown"


def describe(ledger: Ledger) -> dict:
    """What the command prints: the policy, its history and the worst window under it."""
    shown = {"policy": None if ledger.policy is None else ledger.policy.to_json(),
             "policy_log": list(ledger.policy_log), "entries": len(ledger.entries)}
    if ledger.policy is not None:
        worst = ledger.worst_window(ledger.policy.window_days, ledger.policy.max_delta_per_window)
        if worst is not None:
            epsilon, delta, start, inside = worst
            shown["worst_window"] = {"start": start, "epsilon": epsilon, "delta": delta, "runs": len(inside)}
    return shown


def run(argv: list[str] | None = None) -> int:
    args = argument_parser().parse_args(argv)
    if not args.privacy_ledger:
        return fail(EXIT_BAD_OPTIONS, "bad_options", "bad options: --privacy_ledger is required")
    try:
        ledger = Ledger.from_json(read_json_or_none(args.privacy_ledger))
    except (OSError, ValueError, BudgetRefused) as error:
        return fail(EXIT_BAD_OPTIONS, "bad_options", f"bad options: cannot read the ledger: {error}")
    if args.reason is None:
        print(json.dumps(describe(ledger), indent=2))
        return 0
    try:
        policy = requested_policy(args, ledger.policy)
    except ValueError as error:
        return fail(EXIT_BAD_OPTIONS, "bad_options", f"bad options: {error}")
    changes = policy_changes(ledger.policy, policy)
    if not changes:
        print(f"no change: the ledger's policy is already {policy.flags()}")
        return 0
    print("\n".join(changes))
    try:
        ledger = change_ledger_policy(args.privacy_ledger, policy, args.by or _user(), args.reason,
                                      previous=ledger.policy)
    except BudgetRefused as error:
        return fail(EXIT_BUDGET_REFUSED, "ledger_policy_refused", f"policy not changed: {error}")
    except (OSError, ValueError) as error:
        return fail(EXIT_BAD_OPTIONS, "bad_options", f"bad options: {error}")
    change = ledger.policy_log[-1]
    log.warning("ledger policy changed", extra={"event": "ledger_policy_changed", "by": change["by"],
                                                "previous": change["previous"], "policy": change["policy"],
                                                "reason": change["reason"]})
    print(json.dumps(describe(ledger), indent=2))
    return 0


if __name__ == "__main__":
    run_as_command(run)
