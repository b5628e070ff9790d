import dataclasses
import json

import dp_accounting
import pytest
from dp_accounting.pld import pld_privacy_accountant

from dp_ops.budget_ledger import DEFAULT_WINDOW_DELTA, BudgetRefused, Charge, Ledger, LedgerEntry, LedgerPolicy
from dp_ops.dp_events import EpsilonDeltaDpEvent, composed_epsilon, event_from_json, event_to_json
from dp_ops.nightly_plan import plan_nights


def _entry(run_id, date, epsilon, status="committed"):
    return LedgerEntry(run_id=run_id, date=date, epsilon=epsilon, delta=1e-6, status=status,
                       recorded_at="2026-11-01T00:00:00+00:00", output="out")


def _ledger(*entries):
    ledger = Ledger()
    for entry in entries:
        ledger = ledger.with_entry(entry)
    return ledger


def test_run_within_the_cap_is_allowed_and_one_over_it_refused():
    ledger = _ledger(_entry("a", "2026-11-01", 7.0), _entry("b", "2026-11-02", 7.0))
    ledger.check("2026-11-03", 7.0, max_epsilon_per_window=21.0, window_days=7, allow_rerun=False)
    with pytest.raises(BudgetRefused, match="cap 20"):
        ledger.check("2026-11-03", 7.0, max_epsilon_per_window=20.0, window_days=7, allow_rerun=False)


def test_runs_outside_the_window_do_not_count():
    ledger = _ledger(_entry("a", "2026-10-01", 7.0))
    ledger.check("2026-11-01", 7.0, max_epsilon_per_window=7.0, window_days=30, allow_rerun=False)


def test_a_backfill_cannot_overspend_a_later_window():
    # Runs on 11-10 and 11-12; backfilling 11-06 keeps the window ending 11-06 low, but the window
    # 11-06..11-12 would hold all three.
    ledger = _ledger(_entry("a", "2026-11-10", 5.0), _entry("b", "2026-11-12", 5.0))
    with pytest.raises(BudgetRefused, match="window starting 2026-11-06"):
        ledger.check("2026-11-06", 5.0, max_epsilon_per_window=12.0, window_days=7, allow_rerun=False)


def test_rerunning_a_date_is_refused_unless_allowed_and_then_counts_twice():
    ledger = _ledger(_entry("a", "2026-11-01", 7.0))
    with pytest.raises(BudgetRefused, match="allow_rerun"):
        ledger.check("2026-11-01", 7.0, None, 30, allow_rerun=False)
    ledger.check("2026-11-01", 7.0, None, 30, allow_rerun=True)
    with pytest.raises(BudgetRefused):
        ledger.check("2026-11-01", 7.0, max_epsilon_per_window=10.0, window_days=30, allow_rerun=True)


@pytest.mark.parametrize("status", ["reserved", "failed", "rejected"])
def test_unfinished_and_rejected_runs_still_count(status):
    ledger = _ledger(_entry("a", "2026-11-01", 7.0, status=status))
    with pytest.raises(BudgetRefused):
        ledger.check("2026-11-02", 7.0, max_epsilon_per_window=10.0, window_days=7, allow_rerun=False)


def test_status_updates_and_json_round_trip():
    ledger = _ledger(_entry("a", "2026-11-01", 7.0, status="reserved")).with_status("a", "committed")
    again = Ledger.from_json(ledger.to_json())
    assert again == ledger and again.entries[0].status == "committed"
    with pytest.raises(KeyError):
        ledger.with_status("zzz", "failed")
    with pytest.raises(ValueError):
        ledger.with_entry(_entry("a", "2026-11-02", 1.0))
    with pytest.raises(ValueError):
        _entry("x", "2026-13-01", 1.0)


def test_a_keyword_set_charge_is_checked_on_its_date_and_recorded_once():
    ledger = _ledger(_entry("a", "2026-11-01", 7.0))
    with pytest.raises(BudgetRefused, match="keyword set keyword-set-1 \\(dated 2026-11-02\\).*cap 8"):
        ledger.with_keyword_set(Charge("keyword-set-1", "2026-11-02", 1.5, 1e-7, "kw.json"), "committed", 8.0, 7)
    charged = ledger.with_keyword_set(Charge("keyword-set-1", "2026-11-01", 1.0, 1e-7, "kw.json"), "committed", 8.0, 7)
    assert charged.has_run("keyword-set-1") and not ledger.has_run("keyword-set-1")
    with pytest.raises(ValueError, match="already"):
        charged.with_keyword_set(Charge("keyword-set-1", "2026-11-01", 1.0, 1e-7, "kw.json"), "committed", None, 7)
    with pytest.raises(ValueError, match="keyword-set-"):
        ledger.with_keyword_set(Charge("nightly-1", "2026-11-01", 1.0, 1e-7, "kw.json"), "committed", None, 7)


def test_a_keyword_set_built_from_several_days_counts_in_every_window_holding_one_of_them():
    # A set built from October's logs (31 days to 10-31), 7-day windows: a night on 10-05 shares no
    # window with 10-31, but it shares one with the data the set was built from.
    ledger = _ledger(_entry("a", "2026-10-05", 7.0))
    ledger.with_keyword_set(Charge("keyword-set-1", "2026-10-31", 1.5, 1e-7, "kw.json"), "committed", 8.0, 7)
    with pytest.raises(BudgetRefused, match=r"keyword set keyword-set-1 \(31 days of data to 2026-10-31\).*cap 8"):
        ledger.with_keyword_set(Charge("keyword-set-1", "2026-10-31", 1.5, 1e-7, "kw.json", days=31), "committed", 8.0, 7)
    charged = _ledger(_entry("a", "2026-10-05", 5.0)).with_keyword_set(
        Charge("keyword-set-1", "2026-10-31", 1.5, 1e-7, "kw.json", days=31), "committed", 8.0, 7)
    # A later night inside the set's days, far from its last one, finds it in its windows too ...
    with pytest.raises(BudgetRefused):
        charged.check("2026-10-12", 7.0, max_epsilon_per_window=8.0, window_days=7, allow_rerun=False)
    # ... but not once the window is past its first day's last window, nor before its days began.
    charged.check("2026-11-07", 7.0, max_epsilon_per_window=8.0, window_days=7, allow_rerun=False)
    charged.check("2026-09-24", 7.0, max_epsilon_per_window=8.0, window_days=7, allow_rerun=False)
    with pytest.raises(BudgetRefused):
        charged.check("2026-09-25", 7.0, max_epsilon_per_window=8.0, window_days=7, allow_rerun=False)


def test_a_ledger_with_a_multi_day_entry_is_version_3_and_round_trips():
    one_day = _ledger(_entry("a", "2026-10-05", 1.0))
    assert one_day.to_json()["version"] == 2 and "days" not in one_day.to_json()["entries"][0]
    several = one_day.with_keyword_set(Charge("keyword-set-1", "2026-10-31", 1.5, 1e-7, "kw.json", days=31), "committed",
                                       None, 7)
    written = json.loads(json.dumps(several.to_json()))
    assert written["version"] == 3 and written["entries"][1]["days"] == 31 and "days" not in written["entries"][0]
    assert Ledger.from_json(written) == several and Ledger.from_json(written).entries[1].days == 31
    with pytest.raises(ValueError, match="days"):
        dataclasses.replace(_entry("b", "2026-10-05", 1.0), days=0)


# --- PLD composition across nights ---

NIGHT = [dp_accounting.SelfComposedDpEvent(dp_accounting.GaussianDpEvent(2.4514), 4), dp_accounting.LaplaceDpEvent(1.0),
         dp_accounting.GaussianDpEvent(2.2988)]  # today's default noise: 5.35 at delta 1e-6
NIGHT_EPSILON = composed_epsilon(NIGHT, 1e-6)


def _night(run_id, date, events=NIGHT):
    return LedgerEntry(run_id=run_id, date=date, epsilon=NIGHT_EPSILON, delta=1e-6, status="committed",
                       recorded_at="2026-11-01T00:00:00+00:00", output="out",
                       events=tuple(event_to_json(e) for e in events))


def test_a_windows_spend_is_the_pld_composition_of_its_nights_events():
    ledger = _ledger(*[_night(f"n{day}", f"2026-11-0{day}") for day in range(1, 5)])
    epsilon, delta, _ = ledger.worst_window_spend("2026-11-04", 7, max_delta_per_window=1e-6)
    # Recomputed with a fresh dp-accounting accountant from the stored JSON.
    accountant = pld_privacy_accountant.PLDAccountant(value_discretization_interval=1e-4)
    for entry in ledger.entries:
        for event in entry.events:
            accountant.compose(event_from_json(event))
    assert delta == 1e-6 and epsilon == pytest.approx(accountant.get_epsilon(1e-6), abs=5e-3)
    assert epsilon < 0.62 * 4 * NIGHT_EPSILON  # 13.1 against 21.4 by adding epsilons
    # Without a window delta, the default one: never the sum of the nights' deltas.
    assert ledger.worst_window_spend("2026-11-04", 7)[1] == DEFAULT_WINDOW_DELTA


def test_a_night_with_a_larger_delta_never_lowers_its_windows_epsilon():
    """Issue 25's reproduction: three nights, then a fourth at --delta 0.05 passed a cap of 20 when the
    window was read at the sum of its runs' deltas (12.37) although it spends 22.33 at delta 4e-6."""
    three = _ledger(*[_night(f"n{day}", f"2026-11-0{day}") for day in range(1, 4)])
    wide = dataclasses.replace(_night("n4", "2026-11-04"), delta=0.05)
    before = three.worst_window_spend("2026-11-04", 30)[0]
    after = three.with_entry(wide).worst_window_spend("2026-11-04", 30)[0]
    plain = three.with_entry(_night("n4", "2026-11-04")).worst_window_spend("2026-11-04", 30)[0]
    assert before < after == pytest.approx(plain)
    with pytest.raises(BudgetRefused):
        three.check("2026-11-04", NIGHT_EPSILON, after - 0.01, 30, False, delta=0.05, events=NIGHT)


def test_the_epsilon_cap_admits_what_pld_composition_fits_and_refuses_one_night_more():
    ledger = _ledger(*[_night(f"n{day}", f"2026-11-0{day}") for day in range(1, 4)])
    four = ledger.with_entry(_night("n4", "2026-11-04")).worst_window_spend("2026-11-04", 30, 1e-6)[0]
    # Adding epsilons, a fourth night of 5.35 would need a cap of 21.4.
    ledger.check("2026-11-04", NIGHT_EPSILON, four + 0.01, 30, False, delta=1e-6, events=NIGHT,
                 max_delta_per_window=1e-6)
    with pytest.raises(BudgetRefused, match="PLD composition at delta 1e-06"):
        ledger.check("2026-11-04", NIGHT_EPSILON, four - 0.01, 30, False, delta=1e-6, events=NIGHT,
                     max_delta_per_window=1e-6)


def test_the_delta_cap_refuses_a_window_whose_epsilon_delta_events_need_more_delta():
    keyword_set = LedgerEntry(run_id="keyword-set-1", date="2026-11-01", epsilon=1.0, delta=1e-6, status="committed",
                              recorded_at="2026-11-01T00:00:00+00:00", output="kw.json",
                              events=(event_to_json(EpsilonDeltaDpEvent(1.0, 1e-6)),))
    ledger = _ledger(keyword_set)
    ledger.check("2026-11-02", NIGHT_EPSILON, 100.0, 30, False, delta=1e-6, events=NIGHT, max_delta_per_window=2e-6)
    with pytest.raises(BudgetRefused, match="delta 1e-06 from its \\(epsilon, delta\\) mechanisms alone, >= cap 1e-06"):
        ledger.check("2026-11-02", NIGHT_EPSILON, 100.0, 30, False, delta=1e-6, events=NIGHT,
                     max_delta_per_window=1e-6)
    with pytest.raises(BudgetRefused, match="cap 5e-07"):  # however large the epsilon cap
        ledger.check("2026-11-02", NIGHT_EPSILON, 1e6, 30, False, delta=1e-6, events=NIGHT, max_delta_per_window=5e-7)
    # A ledger without an epsilon cap only records (an old ledger's entries cannot stop the nights).
    ledger.check("2026-11-02", NIGHT_EPSILON, None, 30, False, delta=1e-6, events=NIGHT, max_delta_per_window=5e-7)


def test_an_old_ledger_is_read_and_its_entries_compose_as_their_own_epsilon_delta():
    old = {"version": 1, "unit": "user", "entries": [
        {"run_id": "a", "date": "2026-11-01", "epsilon": 7.0, "delta": 1e-6, "status": "committed",
         "recorded_at": "2026-11-01T00:00:00+00:00", "output": "out", "rerun": False}]}
    ledger = Ledger.from_json(old)
    assert ledger.entries[0].dp_events() == [EpsilonDeltaDpEvent(7.0, 1e-6)]
    # An old entry counts at its full epsilon: 7 + a 5.35 night fits 12.4, not 12 (at the sum of their deltas).
    ledger.check("2026-11-02", NIGHT_EPSILON, 12.4, 30, False, delta=1e-6, events=NIGHT, max_delta_per_window=2e-6)
    with pytest.raises(BudgetRefused):
        ledger.check("2026-11-02", NIGHT_EPSILON, 12.0, 30, False, delta=1e-6, events=NIGHT, max_delta_per_window=2e-6)
    written = ledger.with_entry(_night("b", "2026-11-02")).to_json()
    assert written["version"] == 2 and written["entries"][0]["events"] == []
    assert Ledger.from_json(json.loads(json.dumps(written))) == ledger.with_entry(_night("b", "2026-11-02"))


def test_a_newer_ledger_or_a_bad_event_is_refused():
    with pytest.raises(ValueError, match="version 5"):
        Ledger.from_json({"version": 5, "unit": "user", "entries": []})
    bad = dataclasses.asdict(_night("a", "2026-11-01"))
    bad["events"] = [{"type": "GaussianDpEvent", "noise_multiplier": -1.0}]
    with pytest.raises(ValueError, match="ledger entry a"):
        Ledger.from_json({"version": 2, "unit": "user", "entries": [bad]})


# --- the ledger's policy ---

POLICY = LedgerPolicy(30.0, DEFAULT_WINDOW_DELTA, 30, 1)


def test_a_ledger_whose_policy_was_removed_beside_its_log_is_refused():
    """The review's: "policy": null beside a non-empty policy_log was adopted again from the next run's
    flags with no check (a window delta of 0.5 was admitted)."""
    document = Ledger().adopting(POLICY, by="a").to_json()
    document["policy"] = None
    with pytest.raises(BudgetRefused, match="policy is null but its policy_log holds 1 change"):
        Ledger.from_json(document)
    assert Ledger.from_json({**document, "policy_log": []}).policy is None  # no log: a ledger that only records


@pytest.mark.parametrize("delta", [2e-3, 0.5])
def test_a_window_delta_above_1e_3_is_refused(delta):
    LedgerPolicy(30.0, 1e-3, 30, 1)
    with pytest.raises(ValueError, match="window delta must be in \\(0, 0.001\\]"):
        LedgerPolicy(30.0, delta, 30, 1)
    with pytest.raises(ValueError, match="window delta must be in \\(0, 0.001\\]"):
        Ledger().check("2026-11-01", 1.0, 30.0, 30, allow_rerun=False, max_delta_per_window=delta)
    with pytest.raises(ValueError, match="window delta must be in \\(0, 0.001\\]"):  # nor planned for
        plan_nights([], max_epsilon_per_window=30.0, window_delta=delta, window_days=30, night_delta=1e-6)
    document = Ledger().adopting(POLICY, by="a").to_json()
    document["policy"]["max_delta_per_window"] = delta
    with pytest.raises(ValueError, match="window delta"):
        Ledger.from_json(document)
