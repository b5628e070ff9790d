"""The facets' long-format rows (date, facet, answer, topic, lineage, size, low, high, share) from
released reports: post-processing of their `facets` sections (dp_ops/facets.py), no budget. A row
with no topic is the facet's answer over all the night's conversations. The rows are facets.csv's and
facets.parquet's, tables people open: their counts are shown ones, clamped at 0
(publishing.report.shown_counts); the reports keep the released values."""

from __future__ import annotations

from publishing.report import shown_counts

FACET_COLUMNS = ("date", "facet", "answer", "topic", "lineage", "size", "low", "high", "share")


def facet_rows(date: str, report: dict) -> list[dict]:
    """One night's rows: per facet, its overall answers, then each released topic's."""
    lineages = {topic["id"]: topic.get("lineage") for topic in report.get("topics", [])}
    rows = []
    for facet, section in (report.get("facets") or {}).items():
        cells = [(None, row) for row in section["overall"]] + [
            (int(topic), row) for topic, topic_rows in section["by_topic"].items() for row in topic_rows]
        rows += [shown_counts({"date": date, "facet": facet, "answer": row["answer"], "topic": topic,
                               "lineage": None if topic is None else lineages.get(topic), "size": row["size"],
                               "low": row["low"], "high": row["high"], "share": row["share"]})
                 for topic, row in cells]
    return rows


def facet_schema():
    """The Parquet schema: date as DATE (BigQuery partitions on it), topic an int64, nullable."""
    import pyarrow as pa
    return pa.schema([("date", pa.date32()), ("facet", pa.string()), ("answer", pa.string()), ("topic", pa.int64()),
                      ("lineage", pa.string()), ("size", pa.float64()), ("low", pa.float64()),
                      ("high", pa.float64()), ("share", pa.float64())])
