"""Writing the job's outputs: release/report.json and report.html, private/run_stats.json, private JSON Lines."""

from __future__ import annotations

import json

import apache_beam as beam
from apache_beam.io.filesystems import FileSystems

from core.spend import MechanismSpend
from dp_ops import dp_stage_specs
from publishing.report import build_report
from publishing.report_html import render_report


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


class WriteReport(beam.PTransform):
    """Input: (cluster_id, named topic) for kept clusters; side inputs: kept noisy sizes and the
    topic hierarchy (a singleton from transforms.topic_hierarchy.BuildTopicHierarchy).

    Writes report.json (with the hierarchy placed as it is) and report.html, rendered from report.json alone.
    """

    def __init__(self, path: str, kept_sizes, spends: list[MechanismSpend], composition: dict,
                 max_conversations_per_user: int, config: dict, hierarchy, centroid_keywords=None,
                 labelling: dict | None = None, run_time_config=None, lineage=None, plan: dict | None = None,
                 themes=None, facets=None, token_descriptions=None):
        """`spends`: every DP stage's, with its event; `composition`: the run's PLD total
        (dp_ops.run_budget.RunBudget.composition); `labelling`: publishing.report.labelling_section.
        `run_time_config`: a singleton dict of public values known only at run time (DP-derived, e.g.
        the clustering dimension), added to `config`. `lineage`: a singleton
        transforms.topic_lineage.lineage_section; `plan`: the nightly budget plan (privacy.plan); `themes`:
        a singleton dp_ops.theme_histogram.themes_section (--themes); `facets`: a singleton {facet:
        dp_ops.facets.facet_section} (--facets); `token_descriptions`: (cluster id, {"description", "evidence"})
        per kept topic (--token_decoding_steps, transforms/token_decoding.py)."""
        super().__init__()
        self._labelling = labelling
        self._composition = composition
        self._centroid_keywords = centroid_keywords
        self._path = path
        self._kept_sizes = kept_sizes
        self._spends = spends
        self._max_conversations_per_user = max_conversations_per_user
        self._config = config
        self._hierarchy = hierarchy
        self._run_time_config = run_time_config
        self._lineage = lineage
        self._plan = plan
        self._themes = themes
        self._facets = facets
        self._token_descriptions = token_descriptions

    def expand(self, named_topics):
        path, spends, limit, config = self._path, self._spends, self._max_conversations_per_user, self._config
        composition, labelling, plan = self._composition, self._labelling, self._plan

        def write(_, topics, sizes, hierarchy, centroid, run_time_config, lineage, themes, facets, token_descriptions):
            report = build_report(topics, sizes, spends, limit, {**config, **run_time_config}, centroid, hierarchy,
                                  composition, labelling, lineage, plan, dp_stage_specs.stage_releases(), themes,
                                  facets, token_descriptions)
            write_json(path, report)
            write_text(html_path(path), render_report(report))
            return path

        centroid = (beam.pvalue.AsDict(self._centroid_keywords) if self._centroid_keywords is not None
                    else beam.pvalue.AsSingleton(named_topics.pipeline | "no centroid keywords" >> beam.Create([None])))
        run_time_config = beam.pvalue.AsSingleton(
            self._run_time_config if self._run_time_config is not None
            else named_topics.pipeline | "no run-time config" >> beam.Create([{}]))
        lineage = beam.pvalue.AsSingleton(
            self._lineage if self._lineage is not None
            else named_topics.pipeline | "no lineage" >> beam.Create([None]))
        themes = beam.pvalue.AsSingleton(
            self._themes if self._themes is not None
            else named_topics.pipeline | "no themes" >> beam.Create([None]))
        facets = beam.pvalue.AsSingleton(
            self._facets if self._facets is not None
            else named_topics.pipeline | "no facets" >> beam.Create([None]))
        token_descriptions = (beam.pvalue.AsDict(self._token_descriptions) if self._token_descriptions is not None
                              else beam.pvalue.AsSingleton(named_topics.pipeline
                                                           | "no token descriptions" >> beam.Create([None])))
        return (named_topics.pipeline
                | "report trigger" >> beam.Create([None])
                | "build and write report.json" >> beam.Map(
                    write, beam.pvalue.AsDict(named_topics), beam.pvalue.AsDict(self._kept_sizes),
                    beam.pvalue.AsSingleton(self._hierarchy), centroid, run_time_config, lineage, themes,
                    facets, token_descriptions))


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
