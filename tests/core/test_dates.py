import datetime as dt

import pytest

from core.dates import day_of_run_id, iso_date, resolve_date, run_id_prefix, utc_day_of, utc_timestamp

NOW = dt.datetime(2026, 11, 22, 3, 4, 5, 678, tzinfo=dt.timezone.utc)


def test_dates_are_normalised_to_yyyy_mm_dd_and_anything_else_is_refused():
    assert iso_date("2026-02-03") == "2026-02-03"
    assert iso_date("20260203") == "2026-02-03"  # ledger entries compare dates as strings
    for bad in ("22/11/2026", "2026-02-30", None, 20260203):
        with pytest.raises(ValueError):
            iso_date(bad)


def test_date_words_and_an_empty_flag():
    assert resolve_date(None) is None
    assert resolve_date("today", NOW.date()) == "2026-11-22" and resolve_date("yesterday", NOW.date()) == "2026-11-21"
    assert resolve_date("today") == dt.datetime.now(dt.timezone.utc).date().isoformat()


def test_timestamps_are_utc_to_the_second():
    assert utc_timestamp(NOW) == "2026-11-22T03:04:05+00:00"
    assert utc_timestamp(NOW.astimezone(dt.timezone(dt.timedelta(hours=-5)))) == "2026-11-22T03:04:05+00:00"
    assert dt.datetime.fromisoformat(utc_timestamp()).utcoffset() == dt.timedelta(0)


def test_the_utc_day_of_a_time_and_of_a_time_without_a_zone():
    assert utc_day_of("2026-11-09T23:30:00-02:00") == "2026-11-10"
    assert utc_day_of("2026-11-09T23:30:00") == "2026-11-09"


def test_a_run_ids_day_is_read_back_from_its_start_time():
    run_id = run_id_prefix(NOW) + "-abc123"
    assert run_id.startswith("20261122T030405Z") and day_of_run_id(run_id) == "2026-11-22"
    assert day_of_run_id("keyword-set-0123") is None and day_of_run_id("") is None
