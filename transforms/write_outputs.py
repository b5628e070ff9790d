"""Writing the job's outputs: release/report.json and report.html, private/run_stats.json, private JSON Lines."""

from __future__ import annotations

import collections
import dataclasses
import json
from typing import Any

import apache_beam as beam
from apache_beam.io.filesystems import FileSystems

from publishing.report import ReleasePrivacy, build_report
from publishing.report_html import render_report
from transforms.release_stage import StageRelease, report_parts


def write_json(path: str, document: dict) -> None:
    """Writes a JSON document to a local path or any Beam filesystem (gs://...)."""
    with FileSystems.create(path) as handle:
        handle.write(json.dumps(document, indent=2, sort_keys=False).encode("utf-8"))


def read_json(path: str) -> dict:
    with FileSystems.open(path) as handle:
        return json.loads(handle.read().decode("utf-8"))


def write_text(path: str, text: str) -> None:
    with FileSystems.create(path) as handle:
        handle.write(text.encode("utf-8"))


def html_path(report_path: str) -> str:
    """report.html next to report.json (both in private/release.pending/, so the release gate scans both)."""
    return report_path.rsplit("/", 1)[0] + "/report.html"


@dataclasses.dataclass(frozen=True)
class ReportInputs:
    """The report's data-dependent parts, as the stages give them (PCollections): the kept clusters' noisy
    sizes, the topic hierarchy (a singleton, transforms.topic_hierarchy.BuildTopicHierarchy), the lineages (a
    singleton, transforms.topic_lineage.lineage_section), the public values known only at run time (a singleton
    dict added to the config, e.g. the DP-chosen clustering dimension), each topic's centroid keywords (None
    unless --keyword_mode both) and the release stages that ran, as (ReleaseStage, StageRelease) pairs."""

    kept_sizes: Any
    hierarchy: Any
    lineage: Any
    run_time_config: Any
    centroid_keywords: Any = None
    releases: tuple = ()


class WriteReport(beam.PTransform):
    """Input: (cluster_id, named topic) for kept clusters. Writes report.json from the topics, `inputs`
    (ReportInputs), `privacy` (publishing.report.ReleasePrivacy: plain values, known before the run) and the
    public `config`; and report.html, rendered from report.json alone."""

    def __init__(self, path: str, inputs: ReportInputs, privacy: ReleasePrivacy, config: dict):
        super().__init__()
        self._path, self._inputs, self._privacy, self._config = path, inputs, privacy, config

    def expand(self, named_topics):
        path, privacy, config, inputs = self._path, self._privacy, self._config, self._inputs
        ran = [stage for stage, _ in inputs.releases]

        def write(_, topics, sizes, hierarchy, centroid, run_time_config, lineage, parts):
            # The stages' outputs as plain values, so report_parts lays them out as in the in-process run.
            sections = {name: value for kind, name, value in parts if kind == "section"}
            fields = collections.defaultdict(list)
            for kind, name, value in parts:
                if kind == "field":
                    fields[name].append(value)
            sections, topic_fields = report_parts(
                [(stage, StageRelease(section=sections.get(stage.name), topic_fields=fields[stage.name])) for stage in ran])
            report = build_report(topics, sizes, privacy, {**config, **run_time_config}, centroid, hierarchy, lineage,
                                  sections, topic_fields)
            write_json(path, report)
            write_text(html_path(path), render_report(report))
            return path

        pipeline = named_topics.pipeline
        # Each release stage's section and topic fields, tagged with its name: one side input for all of them.
        parts = [release.section | f"{stage.name}: section" >> beam.Map(lambda s, n=stage.name: ("section", n, s))
                 for stage, release in inputs.releases if stage.report_key is not None]
        parts += [release.topic_fields | f"{stage.name}: topic fields" >> beam.Map(lambda f, n=stage.name: ("field", n, f))
                  for stage, release in inputs.releases if stage.topic_field is not None]
        parts = parts | "release stages' parts" >> beam.Flatten(pipeline=pipeline)
        centroid = (beam.pvalue.AsDict(inputs.centroid_keywords) if inputs.centroid_keywords is not None
                    else beam.pvalue.AsSingleton(pipeline | "no centroid keywords" >> beam.Create([None])))
        return (pipeline
                | "report trigger" >> beam.Create([None])
                | "build and write report.json" >> beam.Map(
                    write, beam.pvalue.AsDict(named_topics), beam.pvalue.AsDict(inputs.kept_sizes),
                    beam.pvalue.AsSingleton(inputs.hierarchy), centroid, beam.pvalue.AsSingleton(inputs.run_time_config),
                    beam.pvalue.AsSingleton(inputs.lineage), beam.pvalue.AsList(parts)))


def count_globally(pcoll, label: str):
    return pcoll | label >> beam.combiners.Count.Globally()


def dead_letter_summary(tallies: list[tuple[tuple[str, str], tuple[int, int]]]) -> dict:
    """run_stats.json's dead-letter fields from ((stage, reason), (dead letters, unread bytes))."""
    reasons: dict[str, int] = {}
    stages: dict[str, int] = {}
    unread_bytes = unreadable = 0
    for (stage, reason), (count, unread) in tallies:
        reasons[reason] = reasons.get(reason, 0) + count
        stages[stage] = stages.get(stage, 0) + count
        if reason == "unreadable_file":
            unreadable += count
            unread_bytes += unread
    return {"dead_letter_reasons": dict(sorted(reasons.items())),
            "dead_lettered_by_stage": dict(sorted(stages.items())),
            "dead_lettered": sum(reasons.values()),
            # A file that fails to read is one dead letter per range that hit the failure.
            "unreadable_file_ranges": unreadable, "unread_bytes": unread_bytes}


def _add_pairs(pairs) -> tuple[int, int]:
    pairs = list(pairs)
    return sum(p[0] for p in pairs), sum(p[1] for p in pairs)


class WriteRunStats(beam.PTransform):
    """Exact operational counts (private). `counts` maps names to singleton PCollections of numbers
    and must hold "valid"; `dead_letters` holds every DeadLetter of the run, from any stage.

    read = valid + the dead letters of the "read" stage, and read = processed + dead_lettered, where
    processed counts the valid records that no later per-record step dead-lettered.
    """

    def __init__(self, path: str, counts: dict, dead_letters):
        super().__init__()
        self._path = path
        self._counts = counts
        self._dead_letters = dead_letters

    def expand(self, pbegin):
        path, names = self._path, list(self._counts)

        def write(_, tallies, *values):
            stats = dict(zip(names, values))
            stats.update(dead_letter_summary(tallies))
            stats["read"] = stats["valid"] + stats["dead_lettered_by_stage"].get("read", 0)
            stats["processed"] = stats["read"] - stats["dead_lettered"]
            write_json(path, stats)
            return stats

        tallies = (self._dead_letters
                   | "key dead letters" >> beam.Map(lambda d: ((d.stage, d.reason), (1, d.unread_bytes or 0)))
                   | "tally per stage and reason" >> beam.CombinePerKey(_add_pairs))
        return (pbegin
                | "run stats trigger" >> beam.Create([None])
                | "write run_stats.json" >> beam.Map(
                    write, beam.pvalue.AsList(tallies),
                    *[beam.pvalue.AsSingleton(self._counts[name]) for name in names]))


def json_line(row: dict) -> str:
    """One JSON Lines row, never failing: text that cannot be UTF-8 (a lone surrogate in an exception
    message, say) is written with ASCII escapes instead of failing the writer, and every other row."""
    text = json.dumps(row, ensure_ascii=False, default=str)
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        text = json.dumps(row, ensure_ascii=True, default=str)
    return text


class WriteJsonLines(beam.PTransform):
    """Private JSON Lines shards under `prefix` (dead letters, assignments)."""

    def __init__(self, prefix: str):
        super().__init__()
        self._prefix = prefix

    def expand(self, rows):
        return (rows
                | "to json" >> beam.Map(json_line)
                | "write shards" >> beam.io.WriteToText(self._prefix, file_name_suffix=".jsonl"))


class WriteDeadLetters(beam.PTransform):
    """Every DeadLetter of the run as private JSON Lines under `prefix`."""

    def __init__(self, prefix: str):
        super().__init__()
        self._prefix = prefix

    def expand(self, dead_letters):
        return (dead_letters
                | "dead letters to rows" >> beam.Map(lambda d: d.to_json())
                | "write dead letters" >> WriteJsonLines(self._prefix))
