"""Writing the job's outputs: release/report.json and report.html, private/run_stats.json, private JSON Lines."""

from __future__ import annotations

import json

import apache_beam as beam
from apache_beam.io.filesystems import FileSystems

from backends.interfaces import ClusterNamer
from beam_jobs.report_html import render_report
from dp_ops.spend import MechanismSpend, total_spend
from transforms.centroid_keywords import keyword_agreement
from transforms.topic_hierarchy import build_hierarchy


def write_json(path: str, document: dict) -> None:
    """Writes a JSON document to a local path or any Beam filesystem (gs://...)."""
    with FileSystems.create(path) as handle:
        handle.write(json.dumps(document, indent=2, sort_keys=False).encode("utf-8"))


def read_json(path: str) -> dict:
    with FileSystems.open(path) as handle:
        return json.loads(handle.read().decode("utf-8"))


def privacy_section(spends: list[MechanismSpend], max_conversations_per_user: int) -> dict:
    epsilon, delta = total_spend(spends)
    return {
        "unit": "user",
        "max_conversations_per_user": max_conversations_per_user,
        "composition": "basic (sum over stages; each stage's own composition is in its entry)",
        "epsilon": epsilon,
        "delta": delta,
        "mechanisms": [spend.to_json() for spend in spends],
    }


def build_report(named_topics: dict, noisy_sizes: dict, spends: list[MechanismSpend],
                 max_conversations_per_user: int, config: dict, centroid_keywords: dict | None = None) -> dict:
    """The release: DP outputs and their post-processing only. Topics ranked by noisy size.
    With `centroid_keywords` (--keyword_mode both), each topic also lists its centroid keywords and
    the report says how much they agree with the histogram's."""
    topics = [
        {
            "id": int(cluster_id),
            "name": topic["name"],
            "description": topic["description"],
            "keywords": topic["keywords"],
            "size": max(0, int(round(noisy_sizes[cluster_id]))),
        }
        for cluster_id, topic in named_topics.items()
    ]
    topics.sort(key=lambda t: (-t["size"], t["id"]))
    report = {"topics": topics, "privacy": privacy_section(spends, max_conversations_per_user), "config": config}
    if centroid_keywords is not None:
        for topic in topics:
            topic["centroid_keywords"] = centroid_keywords.get(topic["id"], [])
        report["keyword_agreement"] = keyword_agreement({t["id"]: t["keywords"] for t in topics}, centroid_keywords)
    return report


def add_hierarchy(report: dict, embedding_model: str, namer: ClusterNamer) -> dict:
    """The report with its topic hierarchy: post-processing of the released topics, no budget."""
    from backends.embedding import embed_texts
    namer.setup()
    hierarchy = build_hierarchy(report["topics"], lambda texts: embed_texts(embedding_model, texts), namer)
    return {**report, "hierarchy": hierarchy}


def write_text(path: str, text: str) -> None:
    with FileSystems.create(path) as handle:
        handle.write(text.encode("utf-8"))


def html_path(report_path: str) -> str:
    """report.html next to report.json (both in release.pending/, so the release gate scans both)."""
    return report_path.rsplit("/", 1)[0] + "/report.html"


class WriteReport(beam.PTransform):
    """Input: (cluster_id, named topic) for kept clusters; side input: kept noisy sizes.

    Writes report.json (with the topic hierarchy) and report.html, rendered from report.json alone.
    """

    def __init__(self, path: str, kept_sizes, spends: list[MechanismSpend], max_conversations_per_user: int,
                 config: dict, embedding_model: str, namer: ClusterNamer, centroid_keywords=None):
        super().__init__()
        self._centroid_keywords = centroid_keywords
        self._path = path
        self._kept_sizes = kept_sizes
        self._spends = spends
        self._max_conversations_per_user = max_conversations_per_user
        self._config = config
        self._embedding_model = embedding_model
        self._namer = namer

    def expand(self, named_topics):
        path, spends, limit, config = self._path, self._spends, self._max_conversations_per_user, self._config
        embedding_model, namer = self._embedding_model, self._namer

        def write(_, topics, sizes, centroid):
            report = add_hierarchy(build_report(topics, sizes, spends, limit, config, centroid), embedding_model, namer)
            write_json(path, report)
            write_text(html_path(path), render_report(report))
            return path

        centroid = (beam.pvalue.AsDict(self._centroid_keywords) if self._centroid_keywords is not None
                    else beam.pvalue.AsSingleton(named_topics.pipeline | "no centroid keywords" >> beam.Create([None])))
        return (named_topics.pipeline
                | "report trigger" >> beam.Create([None])
                | "build and write report.json" >> beam.Map(
                    write, beam.pvalue.AsDict(named_topics), beam.pvalue.AsDict(self._kept_sizes), centroid))


def count_globally(pcoll, label: str):
    return pcoll | label >> beam.combiners.Count.Globally()


class WriteRunStats(beam.PTransform):
    """Exact operational counts (private). `counts` maps names to singleton PCollections of numbers;
    `dead_letter_reasons` is a PCollection of (reason, count)."""

    def __init__(self, path: str, counts: dict, dead_letter_reasons):
        super().__init__()
        self._path = path
        self._counts = counts
        self._dead_letter_reasons = dead_letter_reasons

    def expand(self, pbegin):
        path, names = self._path, list(self._counts)

        def write(_, reasons, *values):
            stats = dict(zip(names, values))
            stats["dead_letter_reasons"] = dict(sorted(reasons.items()))
            stats["dead_lettered"] = sum(reasons.values())
            stats["read"] = stats["valid"] + stats["dead_lettered"]
            write_json(path, stats)
            return stats

        return (pbegin
                | "run stats trigger" >> beam.Create([None])
                | "write run_stats.json" >> beam.Map(
                    write, beam.pvalue.AsDict(self._dead_letter_reasons),
                    *[beam.pvalue.AsSingleton(self._counts[name]) for name in names]))


class WriteJsonLines(beam.PTransform):
    """Private JSON Lines shards under `prefix` (dead letters, assignments)."""

    def __init__(self, prefix: str):
        super().__init__()
        self._prefix = prefix

    def expand(self, rows):
        return (rows
                | "to json" >> beam.Map(lambda row: json.dumps(row, ensure_ascii=False))
                | "write shards" >> beam.io.WriteToText(self._prefix, file_name_suffix=".jsonl"))
