"""The run group: where a run writes, its date, its seed, the privacy ledger, the release gate, progress."""

from __future__ import annotations

import dataclasses
import random

from core.params import Params, advanced_flag, check, flag, params_group, parse_bool
from dp_ops.budget_ledger import DEFAULT_WINDOW_DELTA, MAX_WINDOW_DELTA, LedgerPolicy
from dp_ops.nightly_plan import DEFAULT_CADENCE_DAYS


@params_group
class RunParams(Params):
    """One run: where it writes, its date, its seed, the privacy ledger, the release gate, progress."""

    output: str | None = flag(None, "Output folder (local or gs://): release/ and private/ go under it "
                                      "(README.md, What comes out).")
    private_output: str | None = flag(
        None, "Folder (local or gs://) for private/ (dead letters, exact counts, assignments); default: "
              "under --output. Point it at a bucket with tighter access and retention.")
    date: str | None = flag(
        None, "Run date YYYY-MM-DD, or 'today'/'yesterday' (UTC). Fills a {date} placeholder in --input, "
              "writes under OUTPUT/dt=DATE/run=RUN_ID/ and lists the run in OUTPUT/index.json.")
    seed: int | None = advanced_flag(
        None, "Seed for contribution bounding, keyword sampling, the projection and LSH planes "
              "(not the DP noise). Default: drawn at random and recorded in private/run_stats.json.", type=int)
    privacy_ledger: str | None = flag(
        None, "JSON privacy-budget ledger (local or gs://) that records every run's spend per privacy unit.")
    max_epsilon_per_window: float | None = flag(
        None, "The window cap: refuse, before reading any data, a run that would bring any --window_days window over "
              "this epsilon. It needs --privacy_ledger (and the insights job {date} in --input, since a run is "
              "charged on its --date). The first capped run writes this and the other window flags "
              "(--max_delta_per_window, --window_days, --cadence_days) into the ledger as its policy; a later "
              "run with other values is refused (exit code 4). Change it with python -m beam_jobs.ledger_policy "
              "(docs/production.md#the-ledgers-policy).", type=float, gt=0)
    max_delta_per_window: float = advanced_flag(
        DEFAULT_WINDOW_DELTA, "The one delta at which every window's runs are composed and its epsilon checked "
                              "against --max_epsilon_per_window; a window whose runs need a larger delta is refused "
                              "too. Keep it well under 1 / (users in a window).",
        type=float, gt=0, le=MAX_WINDOW_DELTA)
    window_days: int = flag(30, "Length of the ledger's budget window in days.", type=int, ge=1)
    cadence_days: int = flag(
        DEFAULT_CADENCE_DAYS, "Days between scheduled runs. With --max_epsilon_per_window and no --epsilon, each "
                              "run's budget is planned so that ceil(--window_days / this) runs fit every window.",
        type=int, ge=1)
    allow_rerun: bool = flag(
        False, "Allow a second run for a date already in the ledger, recorded as a second spend. Give it as "
               "--allow_rerun or --allow_rerun=true (as Flex Templates pass it).",
        type=parse_bool, nargs="?", const=True)
    canary_file: str | None = flag(
        None, "Strings (one per line, or JSON Lines with a canary field) that the release gate must never "
              "find in release/.")
    progress: str = advanced_flag(
        "auto", "Print the running stage, its progress and an ETA to stderr every 10 s. auto: on for the "
                "DirectRunner's in-process engine; never on Dataflow, which has its own monitoring.",
        choices=("auto", "on", "off"))

    def check_values(self):
        # --output is required by each job, with its own meaning (a folder here, a file for the
        # keyword-set builder).
        check(self.max_epsilon_per_window is None or self.privacy_ledger is not None,
              "--max_epsilon_per_window needs --privacy_ledger")

    def derived_public_values(self) -> dict:
        # Whether the spend was checked against a cap across runs (not where the ledger lives).
        return {"privacy_ledger": ({"window_days": self.window_days,
                                    "max_epsilon_per_window": self.max_epsilon_per_window,
                                    "max_delta_per_window": self.max_delta_per_window,
                                    "cadence_days": self.cadence_days}
                                   if self.privacy_ledger else None)}

    def ledger_policy(self) -> LedgerPolicy | None:
        """The window policy these flags ask the ledger to enforce; None without a cap (the ledger only
        records). A ledger holding another policy refuses the run (dp_ops/budget_ledger.py)."""
        if self.max_epsilon_per_window is None:
            return None
        return LedgerPolicy(self.max_epsilon_per_window, self.max_delta_per_window, self.window_days,
                            self.cadence_days)

    def with_seed(self) -> RunParams:
        """These params with a seed: --seed, else one drawn at random (recorded in private/run_stats.json)."""
        return self if self.seed is not None else dataclasses.replace(self, seed=random.SystemRandom().randrange(2**31))
