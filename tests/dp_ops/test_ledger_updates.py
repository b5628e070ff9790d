"""The two ledger updates every job and the run's last step share (dp_ops.ledger_updates)."""

import json

import pytest

from dp_ops.budget_ledger import DEFAULT_WINDOW_DELTA, BudgetRefused, Ledger, LedgerPolicy
from dp_ops.ledger_updates import Charge, change_ledger_policy, reserve_budget, set_ledger_status


def _cap(epsilon, window_days=7):
    return LedgerPolicy(epsilon, DEFAULT_WINDOW_DELTA, window_days, 1)


def _entries(path):
    return Ledger.from_json(json.load(open(path))).entries


def test_a_run_is_reserved_and_a_second_one_on_its_date_is_a_rerun(tmp_path):
    ledger = str(tmp_path / "ledger.json")
    assert reserve_budget(ledger, _cap(10.0), run=Charge("a", "2026-11-20", 4.0, 1e-7, "out/a")) is False
    with pytest.raises(BudgetRefused, match="allow_rerun"):
        reserve_budget(ledger, _cap(10.0), run=Charge("b", "2026-11-20", 4.0, 1e-7, "out/b"))
    reserve_budget(ledger, _cap(10.0), run=Charge("b", "2026-11-20", 4.0, 1e-7, "out/b"), allow_rerun=True)
    assert [(e.run_id, e.status, e.rerun, e.output) for e in _entries(ledger)] == [
        ("a", "reserved", False, "out/a"), ("b", "reserved", True, "out/b")]


def test_a_refused_reservation_writes_nothing_not_even_the_keyword_set(tmp_path):
    ledger = str(tmp_path / "ledger.json")
    reserve_budget(ledger, _cap(6.0), run=Charge("a", "2026-11-19", 4.0, 0.0, "out/a"))
    with pytest.raises(BudgetRefused, match="cap 6"):
        reserve_budget(ledger, _cap(6.0), run=Charge("b", "2026-11-20", 1.0, 0.0, "out/b"),
                       keyword_set=Charge("keyword-set-1", "2026-11-20", 1.5, 0.0, "kw.json"))
    assert [e.run_id for e in _entries(ledger)] == ["a"]


def test_a_keyword_set_is_charged_once_per_ledger_with_the_status_asked(tmp_path):
    ledger = str(tmp_path / "ledger.json")
    keyword_set = Charge("keyword-set-1", "2026-11-10", 1.5, 1e-7, "kw.json")
    assert reserve_budget(ledger, None, keyword_set=keyword_set, keyword_set_status="committed")
    assert not reserve_budget(ledger, None, run=Charge("a", "2026-11-20", 4.0, 0.0, "out/a"),
                              keyword_set=keyword_set)
    assert [(e.run_id, e.status) for e in _entries(ledger)] == [("keyword-set-1", "committed"), ("a", "reserved")]


def test_status_updates_set_the_status_and_an_unknown_run_is_an_error(tmp_path):
    ledger = str(tmp_path / "ledger.json")
    reserve_budget(ledger, None, run=Charge("a", "2026-11-20", 4.0, 0.0, "out/a"))
    set_ledger_status(ledger, "a", "committed")
    set_ledger_status(ledger, "a", "committed")
    assert [(e.run_id, e.status) for e in _entries(ledger)] == [("a", "committed")]
    with pytest.raises(KeyError):
        set_ledger_status(ledger, "nobody", "failed")


def test_nothing_to_reserve_is_an_error(tmp_path):
    with pytest.raises(ValueError):
        reserve_budget(str(tmp_path / "ledger.json"), None)


def test_the_first_capped_run_is_refused_when_an_earlier_window_already_breaks_its_flags(tmp_path):
    """The review's: five uncapped nights spend epsilon 5 in one 7-day window; a capped night (cap 4)
    four weeks later adopted its flags as the ledger's policy although that window already broke them
    (and the policy command then refused to re-affirm that same policy)."""
    ledger = str(tmp_path / "ledger.json")
    for day in range(1, 6):
        reserve_budget(ledger, None, run=Charge(f"n{day}", f"2026-11-0{day}", 1.0, 0.0, f"out/n{day}"))
    before = open(ledger).read()
    with pytest.raises(BudgetRefused, match=r"7-day window starting 2026-10-30 already spends epsilon 5 > 4 \(1 over\)"):
        reserve_budget(ledger, _cap(4.0), run=Charge("late", "2026-12-03", 1.0, 0.0, "out/late"))
    assert open(ledger).read() == before
    reserve_budget(ledger, _cap(5.0), run=Charge("late", "2026-12-03", 1.0, 0.0, "out/late"))
    assert Ledger.from_json(json.load(open(ledger))).policy == _cap(5.0)


def test_a_policy_change_is_refused_if_the_policy_changed_since_it_was_read(tmp_path):
    ledger = str(tmp_path / "ledger.json")
    reserve_budget(ledger, _cap(10.0), run=Charge("a", "2026-11-20", 4.0, 0.0, "out/a"))
    before = open(ledger).read()
    with pytest.raises(BudgetRefused, match="changed while this command ran"):
        change_ledger_policy(ledger, _cap(12.0), "oncall", "review", previous=None)
    assert open(ledger).read() == before
    assert change_ledger_policy(ledger, _cap(12.0), "oncall", "review", previous=_cap(10.0)).policy == _cap(12.0)
