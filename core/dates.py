"""Run and ledger dates and times: every place that parses or formats them uses these functions.

Dates are UTC calendar days written YYYY-MM-DD (ledger entries compare them as strings, so every
date is normalised here before it is stored); times are ISO 8601 UTC to the second. A run id starts
with its UTC start time, YYYYMMDDTHHMMSSZ, so its day can be read back without a clock.
"""

from __future__ import annotations

import datetime as dt

RUN_ID_TIME_FORMAT = "%Y%m%dT%H%M%SZ"


def utc_now() -> dt.datetime:
    return dt.datetime.now(dt.timezone.utc)


def utc_timestamp(moment: dt.datetime | None = None) -> str:
    """ISO 8601 to the second, in UTC (now unless given): recorded_at, created_at, finished_at."""
    return (moment or utc_now()).astimezone(dt.timezone.utc).isoformat(timespec="seconds")


def parse_date(value: str) -> dt.date:
    """The date `value` names (any form date.fromisoformat reads). Raises ValueError otherwise."""
    if not isinstance(value, str):
        raise ValueError(f"a date must be a string YYYY-MM-DD, got {value!r}")
    return dt.date.fromisoformat(value)


def iso_date(value: str) -> str:
    """`value` as YYYY-MM-DD (any form date.fromisoformat reads). Raises ValueError otherwise."""
    return parse_date(value).isoformat()


def resolve_date(value: str | None, today: dt.date | None = None) -> str | None:
    """YYYY-MM-DD, or 'today'/'yesterday' in UTC (what a scheduler that cannot compute dates passes)."""
    if value is None:
        return None
    today = today or utc_now().date()
    if value == "today":
        return today.isoformat()
    if value == "yesterday":
        return (today - dt.timedelta(days=1)).isoformat()
    try:
        return iso_date(value)
    except ValueError as error:
        raise ValueError(f"--date must be YYYY-MM-DD, 'today' or 'yesterday', got {value!r}") from error


def utc_day_of(timestamp: str) -> str:
    """The UTC day (YYYY-MM-DD) of an ISO 8601 time; one without a zone is taken as UTC."""
    moment = dt.datetime.fromisoformat(timestamp)
    moment = moment if moment.tzinfo else moment.replace(tzinfo=dt.timezone.utc)
    return moment.astimezone(dt.timezone.utc).date().isoformat()


def run_id_prefix(started: dt.datetime) -> str:
    """The time part a run id starts with, from the run's UTC start time; `day_of_run_id` reads it back."""
    return started.strftime(RUN_ID_TIME_FORMAT)


def day_of_run_id(run_id: str) -> str | None:
    """The UTC day a run started (YYYY-MM-DD), from its id; None if the id does not start with one."""
    try:
        return dt.datetime.strptime(run_id[:8], "%Y%m%d").date().isoformat()
    except ValueError:
        return None
