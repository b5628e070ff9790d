"""Writes the public topic timeline of the nightly runs listed in OUTPUT/index.json (local or gs://).

OUTPUT/timeline.json   the timeline (publishing.timeline.build_timeline): nights, lineages and their nights, and
                       with --themes the fixed themes' (publishing.theme_timeline.themes_part), with --facets
                       each facet answer's (publishing.facet_timeline.facets_part)
OUTPUT/timeline.html   the same as a page (publishing.timeline_html)
OUTPUT/timeline.csv    long format, one row per lineage and night, then per theme and night (publishing.timeline.ROW_COLUMNS)
OUTPUT/timeline.parquet  the same rows with an explicit schema (`row_schema`), for BigQuery and Looker
OUTPUT/facets.csv, facets.parquet  with --facets, one row per night, facet, answer and topic (overall: no
                       topic), publishing.facet_rows.FACET_COLUMNS

Only committed (published) runs are read (publishing.released_runs), from their release/report.json: the
timeline is post-processing of released values and costs no privacy budget. It covers the last `TIMELINE_NIGHTS`
dates; the `BASELINE_NIGHTS` dates before them are read too, as the first nights' baselines. Files
are rewritten whole each time (the next night or `python -m beam_jobs.timeline` rebuilds them).
"""

from __future__ import annotations

import csv
import datetime as dt
import io
import json

from apache_beam.io.filesystems import FileSystems

from publishing.facet_rows import FACET_COLUMNS, facet_rows, facet_schema
from publishing.facet_timeline import facets_part
from publishing.released_runs import released_reports
from publishing.theme_timeline import lineages_of_themes, themes_part
from publishing.timeline import BASELINE_NIGHTS, ROW_COLUMNS, build_timeline, timeline_rows
from publishing.timeline_html import render_timeline_html

# Dates shown: about three months of nights, enough for a quarter's trend while each nightly rebuild
# reads at most TIMELINE_NIGHTS + BASELINE_NIGHTS small report.json files.
TIMELINE_NIGHTS = 90
TIMELINE_FILES = {"json": "timeline.json", "html": "timeline.html", "csv": "timeline.csv", "parquet": "timeline.parquet"}


def row_schema():
    """The Parquet schema: dates as DATE (date32) so BigQuery partitions and filters on them; size an
    int64 (a theme's, in users, rounded) and the interval and share float64, all nullable (a night a
    topic was not released has none); kind: topic or theme."""
    import pyarrow as pa
    return pa.schema([("lineage_id", pa.string()), ("name", pa.string()), ("keywords", pa.string()),
                      ("date", pa.date32()), ("size", pa.int64()), ("low", pa.float64()), ("high", pa.float64()),
                      ("share", pa.float64()), ("status", pa.string()), ("kind", pa.string())])


def _write_bytes(path: str, data: bytes) -> None:
    with FileSystems.create(path) as handle:
        handle.write(data)


def rows_csv(rows: list[dict], columns=ROW_COLUMNS) -> str:
    """CSV with a header; an empty cell is null (BigQuery's and Looker's reading of it)."""
    out = io.StringIO()
    writer = csv.DictWriter(out, fieldnames=columns, lineterminator="\n")
    writer.writeheader()
    writer.writerows({k: "" if v is None else v for k, v in row.items()} for row in rows)
    return out.getvalue()


def rows_parquet(rows: list[dict], schema=None) -> bytes:
    import pyarrow as pa
    import pyarrow.parquet as pq
    table = pa.Table.from_pylist([{**row, "date": dt.date.fromisoformat(row["date"])} for row in rows],
                                 schema=schema or row_schema())
    sink = io.BytesIO()  # built in memory, then written through FileSystems: one path for local and gs://
    pq.write_table(table, sink)
    return sink.getvalue()


def write_timeline(output_root: str) -> dict:
    """Rebuilds OUTPUT/timeline.{json,html,csv,parquet} from the committed runs in OUTPUT/index.json
    (publishing.released_runs: the last run of each date; one whose report cannot be read is skipped, never
    fatal). Returns {"files": {kind: path}, "nights", "lineages"}. Raises FileNotFoundError if there is
    no index.json: nothing says which runs were published."""
    index = FileSystems.join(output_root, "index.json")
    if not FileSystems.exists(index):
        raise FileNotFoundError(f"no index of dated runs at {index}")
    runs = released_reports(output_root, nights=TIMELINE_NIGHTS + BASELINE_NIGHTS)
    # The fixed themes and facets, when the reports have them; a new topic of a theme that rose is new from its first night.
    shown = [date for date, _ in runs][-TIMELINE_NIGHTS:]
    themes = themes_part(runs, shown)
    also_new = lineages_of_themes(runs[-1][1], themes.get("rising_themes", [])) if runs else []
    timeline = {**build_timeline(runs, max_nights=TIMELINE_NIGHTS, also_new=also_new), **themes,
                **facets_part(runs, shown)}
    rows = timeline_rows(timeline)
    files = {kind: FileSystems.join(output_root, name) for kind, name in TIMELINE_FILES.items()}
    _write_bytes(files["json"], json.dumps(timeline, indent=2).encode("utf-8"))
    _write_bytes(files["html"], render_timeline_html(timeline).encode("utf-8"))
    _write_bytes(files["csv"], rows_csv(rows).encode("utf-8"))
    _write_bytes(files["parquet"], rows_parquet(rows))
    facets = [row for date, report in runs[-TIMELINE_NIGHTS:] for row in facet_rows(date, report)]
    if facets:  # runs with --facets
        files["facets_csv"] = FileSystems.join(output_root, "facets.csv")
        files["facets_parquet"] = FileSystems.join(output_root, "facets.parquet")
        _write_bytes(files["facets_csv"], rows_csv(facets, FACET_COLUMNS).encode("utf-8"))
        _write_bytes(files["facets_parquet"], rows_parquet(facets, facet_schema()))
    return {"files": files, "nights": len(timeline["nights"]), "lineages": len(timeline["lineages"])}
