"""The ledger's window policy: written by the first capped run, enforced on every later one, changed
only by beam_jobs.ledger_policy after every window is checked under the new one (issue 39's audit:
a run with another --max_delta_per_window, cap or --window_days read the same ledger under a looser
rule and was admitted, and a --window_days 1 night brought a 30-day window to epsilon 49 > 30).

Nights are reserved as the insights job reserves them: its flags parsed (insights_params), its nightly
plan calibrated (calibrate_night) and its events charged with reserve_budget under the flags' policy.
"""

import datetime as dt
import functools
import json
import os

import pytest

from backends.keyword_set import load_keyword_set
from beam_jobs import ledger_policy
from beam_jobs.insights import calibrate_night, run
from beam_jobs.job_runtime import EXIT_BAD_OPTIONS, EXIT_BUDGET_REFUSED
from config.insights import InsightsOptions, insights_params
from dp_ops.budget_ledger import DEFAULT_WINDOW_DELTA, BudgetRefused, Ledger, LedgerPolicy, LedgerPolicyMismatch
from dp_ops.dp_events import composed_epsilon
from dp_ops.ledger_updates import Charge, reserve_budget, set_ledger_status
from eval.utility.nightly_stream import window_epsilons
from synthetic.sample import write_sample

NIGHTLY = ("--max_epsilon_per_window", "30", "--window_days", "30")  # docs/production.md's nightly command
FIRST_NIGHT = dt.date(2026, 1, 1)


def _date(night: int) -> str:
    return (FIRST_NIGHT + dt.timedelta(days=night - 1)).isoformat()


def _params(ledger: str, flags):
    return insights_params(InsightsOptions(["--input", "logs/dt={date}/in.jsonl", "--output", "out",
                                            "--privacy_ledger", ledger, *flags]))


@functools.lru_cache(maxsize=None)
def _planned_night(flags: tuple[str, ...]) -> tuple[float, tuple]:
    """(epsilon at --delta, events) of the night the job plans for `flags` (public parameters only)."""
    params = _params("ledger.json", flags)
    events = tuple(calibrate_night(params, load_keyword_set(None)).calibration.events())
    return composed_epsilon(events, params.privacy.delta), events


def _night(ledger: str, night: int, flags=NIGHTLY, run_id: str | None = None) -> str:
    """Reserves and commits `night` as the job would with `flags`; raises BudgetRefused as it would."""
    params = _params(ledger, flags)
    epsilon, events = _planned_night(tuple(flags))
    run_id = run_id or f"night-{night}"
    reserve_budget(ledger, params.run.ledger_policy(), allow_rerun=params.run.allow_rerun,
                   run=Charge(run_id, _date(night), epsilon, params.privacy.delta, f"out/{run_id}", events=events))
    set_ledger_status(ledger, run_id, "committed")
    return run_id


def _ledger(path: str) -> Ledger:
    return Ledger.from_json(json.load(open(path)))


def test_the_first_capped_run_writes_its_window_flags_into_the_ledger(tmp_path):
    ledger = str(tmp_path / "ledger.json")
    _night(ledger, 1)
    document = json.load(open(ledger))
    assert document["version"] == 4
    assert document["policy"] == {"max_epsilon_per_window": 30.0, "max_delta_per_window": DEFAULT_WINDOW_DELTA,
                                  "window_days": 30, "cadence_days": 1}
    assert [(change["by"], change["previous"]) for change in document["policy_log"]] == [("night-1", None)]
    assert [entry["window_delta"] for entry in document["entries"]] == [DEFAULT_WINDOW_DELTA]


MISTAKES = {
    "a larger window delta": (*NIGHTLY, "--max_delta_per_window", "1e-4"),
    "a larger cap": ("--max_epsilon_per_window", "60", "--window_days", "30"),
    "a one-day window": ("--max_epsilon_per_window", "30", "--window_days", "1"),
    "another cadence": (*NIGHTLY, "--cadence_days", "2"),
    "no cap": ("--window_days", "30"),
}


@pytest.mark.parametrize("flags", MISTAKES.values(), ids=MISTAKES)
def test_a_run_whose_window_flags_differ_from_the_ledgers_is_refused_and_writes_nothing(tmp_path, flags):
    ledger = str(tmp_path / "ledger.json")
    _night(ledger, 1)
    before = open(ledger).read()
    with pytest.raises(LedgerPolicyMismatch, match="beam_jobs.ledger_policy"):
        _night(ledger, 2, flags)
    assert open(ledger).read() == before


def test_a_ledger_that_only_records_stays_so_until_a_capped_run():
    assert Ledger().adopting(None, by="a").policy is None
    policy = LedgerPolicy(30.0, DEFAULT_WINDOW_DELTA, 30, 1)
    adopted = Ledger().adopting(policy, by="a")
    assert adopted.policy == policy and adopted.adopting(policy, by="b") is adopted
    # A caller of the window arithmetic cannot loosen the ledger's policy either.
    with pytest.raises(LedgerPolicyMismatch):
        adopted.check("2026-01-01", 1.0, 30.0, 30, allow_rerun=False, max_delta_per_window=1e-4)


@pytest.mark.e2e
def test_sixty_planned_nights_with_one_mistaken_night_keep_every_window_within_the_cap(tmp_path):
    """The nightly schedule of docs/production.md for 60 nights. Night 31 is first launched with
    --window_days 1 (the audit's: it was admitted and brought the 30-day window to epsilon 49.21),
    refused, then launched again with the right flags. A re-run of night 45 with the right flags
    (--allow_rerun) is refused by the cap, since the plan leaves no room. Every window, recomputed from
    the ledger's events alone, stays within the cap."""
    ledger = str(tmp_path / "ledger.json")
    refused = {}
    for night in range(1, 61):
        if night == 31:
            with pytest.raises(LedgerPolicyMismatch) as mistaken:
                _night(ledger, night, ("--max_epsilon_per_window", "30", "--window_days", "1"))
            refused[night] = str(mistaken.value)
        _night(ledger, night)
        if night == 45:
            with pytest.raises(BudgetRefused, match="> cap 30") as rerun:
                _night(ledger, night, (*NIGHTLY, "--allow_rerun"), run_id="night-45-rerun")
            refused["45 rerun"] = str(rerun.value)
    entries = _ledger(ledger).entries
    assert [e.date for e in entries] == [_date(night) for night in range(1, 61)]
    assert all(e.status == "committed" and e.window_delta == DEFAULT_WINDOW_DELTA for e in entries)
    assert "--window_days: the ledger's 30, this run's 1" in refused[31]
    windows = window_epsilons(_ledger(ledger), 30, DEFAULT_WINDOW_DELTA)
    assert len(windows) == 89 and max(w["runs"] for w in windows) == 30
    assert 29.9 < max(w["epsilon"] for w in windows) <= 30.0 + 1e-9


def test_the_policy_command_shows_changes_and_logs_the_policy_or_refuses_a_change_a_window_breaks(tmp_path, capsys):
    ledger = str(tmp_path / "ledger.json")
    for night in range(1, 31):
        _night(ledger, night)
    before = open(ledger).read()
    assert ledger_policy.run(["--privacy_ledger", ledger]) == 0
    shown = json.loads(capsys.readouterr().out)
    assert shown["policy"]["max_epsilon_per_window"] == 30.0 and shown["entries"] == 30
    assert 29.9 < shown["worst_window"]["epsilon"] <= 30.0 and shown["worst_window"]["runs"] == 30
    # A lower cap: the 30 nights already spent break it, so it is refused and nothing is written.
    lower = ["--privacy_ledger", ledger, "--max_epsilon_per_window", "20", "--window_days", "30"]
    assert ledger_policy.run([*lower, "--reason", "tighter"]) == EXIT_BUDGET_REFUSED
    assert "already spends epsilon" in capsys.readouterr().err
    assert ledger_policy.run([*lower, "--reason", " "]) == EXIT_BAD_OPTIONS
    assert open(ledger).read() == before
    # A higher cap holds for every window: written, logged, and then the runs' flags must follow it.
    assert ledger_policy.run(["--privacy_ledger", ledger, "--max_epsilon_per_window", "40", "--window_days", "30",
                              "--reason", "quarterly review", "--by", "privacy-oncall"]) == 0
    document = json.load(open(ledger))
    assert document["policy"]["max_epsilon_per_window"] == 40.0
    assert {k: document["policy_log"][-1][k] for k in ("by", "reason")} == {
        "by": "privacy-oncall", "reason": "quarterly review"}
    assert document["policy_log"][-1]["previous"]["max_epsilon_per_window"] == 30.0
    with pytest.raises(LedgerPolicyMismatch):
        _night(ledger, 31)
    _night(ledger, 31, ("--max_epsilon_per_window", "40", "--window_days", "30"))


@pytest.mark.e2e
def test_the_job_exits_4_on_other_window_flags_before_reading_data(tmp_path):
    ledger, output = str(tmp_path / "ledger.json"), str(tmp_path / "out")
    _night(ledger, 1)
    before = open(ledger).read()
    os.makedirs(tmp_path / f"dt={_date(2)}")
    write_sample(str(tmp_path / f"dt={_date(2)}" / "in.jsonl"), 40, 20, seed=1)
    code = run(["--input", str(tmp_path / "dt={date}" / "in.jsonl"), "--output", output, "--date", _date(2),
                "--privacy_ledger", ledger, "--max_epsilon_per_window", "30", "--window_days", "1"])
    assert code == EXIT_BUDGET_REFUSED
    assert open(ledger).read() == before
    assert not os.path.exists(os.path.join(output, f"dt={_date(2)}"))


def _ledger_with_policy(tmp_path, policy: LedgerPolicy) -> str:
    ledger = str(tmp_path / "ledger.json")
    with open(ledger, "w") as handle:
        json.dump(Ledger().adopting(policy, by="night-1").to_json(), handle)
    return ledger


def test_the_policy_command_keeps_each_field_it_is_not_given_and_prints_what_changes(tmp_path, capsys):
    """The review's: re-affirming only the cap on {cap 100, window delta 1e-7, window 7, cadence 7} wrote
    the job's defaults for the other three (a window delta 100x looser), with exit 0."""
    ledger = _ledger_with_policy(tmp_path, LedgerPolicy(100.0, 1e-7, 7, 7))
    before = open(ledger).read()
    assert ledger_policy.run(["--privacy_ledger", ledger, "--max_epsilon_per_window", "100",
                              "--reason", "re-affirm"]) == 0
    assert "no change" in capsys.readouterr().out
    assert open(ledger).read() == before
    assert ledger_policy.run(["--privacy_ledger", ledger, "--window_days", "14", "--reason", "longer window"]) == 0
    out = capsys.readouterr().out
    assert "window_days: 7 → 14" in out and "max_delta_per_window" not in out.split("{")[0]
    assert _ledger(ledger).policy == LedgerPolicy(100.0, 1e-7, 14, 7)


def test_a_first_policy_takes_the_jobs_defaults_for_the_flags_not_given_but_needs_the_cap(tmp_path, capsys):
    ledger = str(tmp_path / "ledger.json")
    assert ledger_policy.run(["--privacy_ledger", ledger, "--window_days", "7", "--reason", "first"]) \
        == EXIT_BAD_OPTIONS
    assert "--max_epsilon_per_window is required" in capsys.readouterr().err
    assert ledger_policy.run(["--privacy_ledger", ledger, "--max_epsilon_per_window", "30", "--reason", "first"]) == 0
    assert "max_epsilon_per_window: none → 30" in capsys.readouterr().out
    assert _ledger(ledger).policy == LedgerPolicy(30.0, DEFAULT_WINDOW_DELTA, 30, 1)
