"""A DP keyword set is charged to every ledger that nightly runs use, once: by its build with
--privacy_ledger, else by the first nightly run (beam_jobs.job_runtime.reserve_run_budget) in the same
atomic update as that run's reservation and under the same cap."""

import datetime as dt
import json

import dp_accounting
import pytest

from backends.keyword_set import LEGACY_RUN_PREFIX, keyword_set_document, load_keyword_set, write_keyword_set
from beam_jobs.job_runtime import reserve_run_budget
from config.flags import params_from
from config.insights import InsightsOptions
from config.run import RunParams
from core.run_context import make_run_context
from core.spend import MechanismSpend
from dp_ops.budget_ledger import BudgetRefused, Ledger
from dp_ops.dp_events import event_to_json
from dp_ops.ledger_updates import Charge, reserve_budget
from dp_ops.run_budget import RunBudget

NOW = dt.datetime(2026, 11, 22, 3, 4, 5, tzinfo=dt.timezone.utc)
SET_SPEND = MechanismSpend(stage="keyword_set", mechanism="PipelineDP partition selection per term", epsilon=1.5,
                           delta=1e-7, sensitivity=3.0, noise={"kind": "partition_selection"})
RUN_SPENDS = [MechanismSpend(stage="clustering", mechanism="DP k-means", epsilon=4.0, delta=5e-7, sensitivity=1.0,
                             noise={"kind": "gaussian"},
                             event=event_to_json(dp_accounting.SelfComposedDpEvent(dp_accounting.GaussianDpEvent(2.4514), 4))),
              MechanismSpend(stage="cluster_sizes", mechanism="COUNT", epsilon=1.0, delta=0.0, sensitivity=5.0,
                             noise={"kind": "laplace"}, event=event_to_json(dp_accounting.LaplaceDpEvent(1.0)))]
# A night is charged the PLD composition of its stages at --delta (1e-6): ~4.77, not 4 + 1.
NIGHT_EPSILON = RunBudget.of(RUN_SPENDS, 1e-6).epsilon()
SET_ID = "keyword-set-0123456789abcdef"
# The window read at the set's and a night's deltas together, as basic composition would charge them.
WINDOW_DELTA = ("--max_delta_per_window", "1.1e-6")


def _dp_set(tmp_path, date="2026-11-10", days=1):
    path = str(tmp_path / "kw.json")
    write_keyword_set(path, keyword_set_document(["python", "sql"], "llm", {}, {}, [SET_SPEND],
                                                 ledger_run_id=SET_ID, ledger_date=date, ledger_days=days))
    return load_keyword_set(path)


def _night(tmp_path, keyword_set, date, *flags):
    """Reserves one nightly run's budget on `date` with the keyword set, as beam_jobs.insights.run does."""
    ledger = str(tmp_path / "ledger.json")
    run_params = params_from(InsightsOptions(["--privacy_ledger", ledger, *flags]), RunParams)
    context = make_run_context("in/*.jsonl", str(tmp_path / "out"), date, now=NOW)
    budget = RunBudget.of([*keyword_set.spend, *RUN_SPENDS], 1e-6 + sum(s.delta for s in keyword_set.spend))
    reserve_run_budget(run_params, context, budget, 1e-6, keyword_set)
    return context.run_id


def _entries(tmp_path):
    return Ledger.from_json(json.load(open(tmp_path / "ledger.json"))).entries


def test_a_set_built_without_a_ledger_is_charged_by_the_first_night_only(tmp_path):
    keyword_set = _dp_set(tmp_path)
    first = _night(tmp_path, keyword_set, "2026-11-20")
    second = _night(tmp_path, keyword_set, "2026-11-21")
    charged = [(e.run_id, e.date, e.epsilon, e.delta, e.status) for e in _entries(tmp_path)]
    assert 4.7 < NIGHT_EPSILON < 4.8
    assert charged == [(SET_ID, "2026-11-10", 1.5, 1e-7, "committed"),
                       (first, "2026-11-20", NIGHT_EPSILON, 1e-6, "reserved"),
                       (second, "2026-11-21", NIGHT_EPSILON, 1e-6, "reserved")]
    assert [e.events for e in _entries(tmp_path)[1:]] == [tuple(s.event for s in RUN_SPENDS)] * 2


def test_a_set_built_with_the_same_ledger_is_not_charged_again(tmp_path):
    keyword_set = _dp_set(tmp_path)
    # What beam_jobs.build_keywords.run records for its build with --privacy_ledger.
    charged = reserve_budget(str(tmp_path / "ledger.json"), None, keyword_set=Charge(
        keyword_set.ledger_run_id, keyword_set.ledger_date, 1.5, 1e-7, keyword_set.source))
    assert charged
    night = _night(tmp_path, keyword_set, "2026-11-20")
    assert [(e.run_id, e.date, e.epsilon) for e in _entries(tmp_path)] == [
        (SET_ID, "2026-11-10", 1.5), (night, "2026-11-20", NIGHT_EPSILON)]


def test_the_cap_counts_the_set_and_a_refusal_charges_nothing(tmp_path):
    keyword_set = _dp_set(tmp_path, date="2026-11-20")
    # The run's ~4.77 fits a cap of 6 alone; with the set's (1.5, 1e-7) in the same window (~6.24 at the
    # window delta 1.1e-6, the sum of both) it does not.
    with pytest.raises(BudgetRefused, match="cap 6"):
        _night(tmp_path, keyword_set, "2026-11-20", "--max_epsilon_per_window", "6", *WINDOW_DELTA)
    assert not (tmp_path / "ledger.json").exists()
    _night(tmp_path, keyword_set, "2026-11-20", "--max_epsilon_per_window", "6.5", *WINDOW_DELTA)
    assert [e.epsilon for e in _entries(tmp_path)] == [1.5, NIGHT_EPSILON]


def test_the_set_is_checked_against_the_cap_on_its_own_date(tmp_path):
    # The set's build date is outside this night's windows, but a night there already used the cap.
    keyword_set = _dp_set(tmp_path, date="2026-10-01")
    _night(tmp_path, _public_set(), "2026-10-02", *WINDOW_DELTA)
    with pytest.raises(BudgetRefused, match=f"keyword set {SET_ID} \\(dated 2026-10-01\\).*cap 6"):
        _night(tmp_path, keyword_set, "2026-11-20", "--max_epsilon_per_window", "6", *WINDOW_DELTA)
    assert len(_entries(tmp_path)) == 1


def test_a_set_built_from_a_month_is_charged_on_all_of_its_days_by_the_night_that_charges_it(tmp_path):
    # Built from October's logs (31 days to 10-31). 7-day windows: a night on 10-02 shares none with
    # 10-31, but shares one with the set's data, so a night on 11-20 that would charge the set is refused.
    keyword_set = _dp_set(tmp_path, date="2026-10-31", days=31)
    _night(tmp_path, _public_set(), "2026-10-02", *WINDOW_DELTA)
    flags = ("--max_epsilon_per_window", "6", "--window_days", "7", *WINDOW_DELTA)
    with pytest.raises(BudgetRefused, match=f"keyword set {SET_ID} \\(31 days of data to 2026-10-31\\).*cap 6"):
        _night(tmp_path, keyword_set, "2026-11-20", *flags)
    assert len(_entries(tmp_path)) == 1
    # Charged on its last day only (what a one-day set is), it would have fitted.
    _night(tmp_path, _dp_set(tmp_path / "one-day", date="2026-10-31"), "2026-11-20", *flags)
    assert [(e.run_id, e.date, e.days) for e in _entries(tmp_path)][1] == (SET_ID, "2026-10-31", 1)


def test_the_set_does_not_make_its_build_dates_night_a_rerun(tmp_path):
    keyword_set = _dp_set(tmp_path, date="2026-11-20")
    _night(tmp_path, keyword_set, "2026-11-20")
    assert [e.rerun for e in _entries(tmp_path)] == [False, False]


def _public_set():
    return load_keyword_set(None)  # the bundled list: no spend


def test_a_set_without_spend_charges_nothing(tmp_path):
    night = _night(tmp_path, _public_set(), "2026-11-20")
    assert [e.run_id for e in _entries(tmp_path)] == [night]


def test_an_old_dp_set_is_charged_once_on_its_build_day_under_a_content_id(tmp_path):
    old = tmp_path / "old.json"
    old.write_text(json.dumps({"version": 1, "created_at": "2026-11-09T23:30:00-02:00", "method": "llm",
                               "keywords": ["python"], "privacy": {"mechanisms": [SET_SPEND.to_json()]}}))
    keyword_set = load_keyword_set(str(old))
    assert keyword_set.ledger_run_id.startswith(LEGACY_RUN_PREFIX) and keyword_set.ledger_date == "2026-11-10"
    assert load_keyword_set(str(old)).ledger_run_id == keyword_set.ledger_run_id
    _night(tmp_path, keyword_set, "2026-11-20")
    _night(tmp_path, load_keyword_set(str(old)), "2026-11-21")
    assert [(e.run_id, e.date) for e in _entries(tmp_path)][0] == (keyword_set.ledger_run_id, "2026-11-10")
    assert len(_entries(tmp_path)) == 3
