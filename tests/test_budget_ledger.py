import pytest

from dp_ops.budget_ledger import BudgetRefused, Ledger, LedgerEntry


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
        ledger.with_keyword_set("keyword-set-1", "2026-11-02", 1.5, 1e-7, "committed", "kw.json", 8.0, 7)
    charged = ledger.with_keyword_set("keyword-set-1", "2026-11-01", 1.0, 1e-7, "committed", "kw.json", 8.0, 7)
    assert charged.has_run("keyword-set-1") and not ledger.has_run("keyword-set-1")
    with pytest.raises(ValueError, match="already"):
        charged.with_keyword_set("keyword-set-1", "2026-11-01", 1.0, 1e-7, "committed", "kw.json", None, 7)
    with pytest.raises(ValueError, match="keyword-set-"):
        ledger.with_keyword_set("nightly-1", "2026-11-01", 1.0, 1e-7, "committed", "kw.json", None, 7)
