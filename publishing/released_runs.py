"""The released nights of an output folder: OUTPUT/index.json's published runs and their reports.

Public files only (index.json and each run's release/report.json), so whatever a run derives from
them (warm starts, lineages, the timeline) is post-processing of released values.
"""

from __future__ import annotations

import logging

from core.json_store import read_json_or_none

log = logging.getLogger("urania.released_runs")


def _join(root: str, *parts: str) -> str:
    return "/".join([root.rstrip("/"), *(p.strip("/") for p in parts if p)])


def committed_dates(output_root: str) -> frozenset[str]:
    """Every date of a published dated run (what a lineage id's date must be one of, however far
    back: publishing/lineage.py). An unreadable index gives none, as for released_reports."""
    return frozenset(_committed_runs(output_root))


def released_reports(output_root: str, before: str | None = None, nights: int | None = None) -> list[tuple[str, dict]]:
    """(date, report) of the published dated runs, oldest first: those dated before `before` (all if
    None), the last `nights` dates of them (all if None), one run a date (the last listed: a re-run
    replaces the night). An index or a listed report that cannot be read, or an entry that is not
    what the job writes (a path with '..' included), is skipped with a warning, never fatal: it only
    costs a warm start or a lineage match."""
    latest = _committed_runs(output_root, before)
    dates = sorted(latest)[-nights:] if nights else sorted(latest)
    reports = []
    for date in dates:
        path = _join(output_root, latest[date]["path"], "release", "report.json")
        try:
            report = read_json_or_none(path)
        except Exception as error:  # OSError, bad JSON, a storage client's own errors
            log.warning("released report unreadable", extra={"event": "released_report_unreadable", "path": path,
                                                             "error": str(error)})
            continue
        if not isinstance(report, dict):
            log.warning("released report missing", extra={"event": "released_report_missing", "path": path})
        else:
            reports.append((date, report))
    return reports


def _committed_runs(output_root: str, before: str | None = None) -> dict[str, dict]:
    """{date: the last committed run of that date listed in OUTPUT/index.json} of the entries the job
    writes, dated before `before` (all if None); empty, with a warning, if the index cannot be read."""
    try:
        index = read_json_or_none(_join(output_root, "index.json")) or {}
    except Exception as error:  # an unreadable index costs the warm start and the lineages, not the run
        log.warning("report index unreadable", extra={"event": "report_index_unreadable", "error": str(error)})
        return {}
    latest: dict[str, dict] = {}
    runs = index.get("runs") if isinstance(index, dict) else None
    for run in runs if isinstance(runs, list) else []:
        if (isinstance(run, dict) and run.get("status") == "committed" and isinstance(run.get("date"), str)
                and isinstance(run.get("path"), str) and ".." not in run["path"].split("/")
                and (before is None or run["date"] < before)):
            latest[run["date"]] = run
    return latest
