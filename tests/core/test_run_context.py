import datetime as dt

import pytest

from core.dates import resolve_date
from core.run_context import make_run_context

NOW = dt.datetime(2026, 11, 22, 3, 4, 5, tzinfo=dt.timezone.utc)


def test_date_words_resolve_in_utc():
    assert resolve_date("yesterday", NOW.date()) == "2026-11-21"
    assert resolve_date("today", NOW.date()) == "2026-11-22"
    assert resolve_date("2026-02-03") == "2026-02-03"
    with pytest.raises(ValueError, match="YYYY-MM-DD"):
        resolve_date("22/11/2026")


def test_dated_run_fills_the_placeholder_and_gets_its_own_folder():
    context = make_run_context("gs://logs/dt={date}/*.jsonl", "gs://out", "yesterday", now=NOW)
    assert context.input_pattern == "gs://logs/dt=2026-11-21/*.jsonl"
    assert context.run_dir == f"gs://out/dt=2026-11-21/run={context.run_id}"
    assert context.run_id.startswith("20261122T030405Z-") and context.ledger_date == "2026-11-21"
    assert context.index == "gs://out/index.json"


def test_undated_run_writes_to_output_and_is_ledgered_on_its_start_day():
    context = make_run_context("in/*.jsonl", "out", None, now=NOW)
    assert context.run_dir == "out" and context.ledger_date == "2026-11-22"


def test_placeholder_without_date_is_an_error():
    with pytest.raises(ValueError, match="placeholder"):
        make_run_context("logs/dt={date}/*.jsonl", "out", None)


def test_private_outputs_can_live_in_their_own_bucket():
    context = make_run_context("in/*", "gs://releases/insights", "2026-11-01", now=NOW,
                               private_output="gs://private/insights")
    assert context.private("run_stats.json") == f"gs://private/insights/dt=2026-11-01/run={context.run_id}/private/run_stats.json"
    assert context.path("release", "report.json").startswith("gs://releases/insights/dt=2026-11-01/")
