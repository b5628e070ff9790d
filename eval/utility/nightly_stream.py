"""Nightly runs over a generated stream with planted trends: budget, trend flags and lineage stability.

    python -m eval.utility.nightly_stream                      # 60 nights x ~1,000 conversations, 3,000 users
    python -m eval.utility.nightly_stream --warm_start both    # the same, cold and warm-started, side by side

Generates (or reuses) a stream with beam_jobs.generate_stream (--stream; planted.json is the ground
truth, read here only to score), embeds each night's conversations once (eval/data.py's cache), and
runs the job's mechanisms in-process night after night (eval/urania_inprocess.run_urania), as a
scheduled job with a privacy ledger would:

- the nightly plan (dp_ops.nightly_plan.plan_nights): every night gets the noise that lets a full
  window of nights (--window_days, one a night) compose to the cap (--max_epsilon_per_window) at the
  window's delta (--window_delta);
- before each night, the in-memory ledger (dp_ops.budget_ledger.Ledger.check) is asked, with the
  planned events, as the job asks before reading data; a refused night is skipped (not released);
  a run night is recorded with the events its report lists;
- each night gets the earlier released reports (the last LOOKBACK_NIGHTS, oldest first, as the job
  reads them from index.json): warm start (with --warm_start auto) and topic lineages;
- the timeline (publishing.timeline.build_timeline) of the released reports gives each lineage's status.

Printed (and returned by `evaluate`, written with --json):
- nights run and refused;
- the largest window epsilon, recomputed here from the ledger's stored events (every window of
  --window_days days, its entries' events composed with the PLD accountant at the window delta,
  dp_ops.dp_events.composed_epsilon), not by the ledger's own check; and the cap;
- the night each planted change was flagged: the emerging topic's first night (from its planted
  start) on which its lineage, or a released topic at least EMERGING_PURITY of whose conversations
  are about it, has status new, emerging or growing (a small new topic often starts inside a
  neighbour's cluster while a fresh seed finds it on another night: either shows the analyst a
  rise), and nights to flag, by each rule; the fading topic's
  lineage (the one it had on the last night before its decline) first shrinking or vanished;
- with --growing_topic (a topic that doubles over three weeks, beam_jobs.generate_stream), the night its
  majority lineage is first under the page's "Rising" (growing, emerging, or its week rising: the lineages'
  weekly status, publishing.timeline.weekly_status) and the night its week first rose;
- false flags per 100 steady topic-nights: a steady planted topic's lineage with a change status
  (publishing.timeline.CHANGE_STATUSES) or a week rising or falling (its first night in the stream excluded);
- the share of the nights a steady topic is released on which it carries the lineage id it had the
  last night it was released (what the timeline follows; the check), and, stricter, the share of
  consecutive run nights on which it keeps its id, with why it did not when it did not (its cluster
  not released on one of the nights; a new lineage; another one);
- cosines of released centres: a steady topic's on consecutive nights, and distinct topics' on the
  same night (what publishing/lineage.py's MIN_COSINE has to separate).

A planted topic's lineage on a night is the lineage of the released topic holding most of its kept
conversations that night (report["_private"]["assignments"]: private, for evaluation only); none
when that cluster was not released.

With the themes stage (on by default, as in the job) the fixed themes' flags are scored too (`theme_figures`: each
planted topic's theme is where most of its conversations go by the job's public rule); with `--set themes=false`, the
free alternative
(`with_free_themes`: the same histogram summed from the released per-topic category votes, no budget of
its own) is scored the same way. Pass/fail against issue 40's targets (`verdicts`): every night run with
no refusal, every window within the cap, the emerging change flagged as a theme or a topic within 7
nights and the fading one within 10, the weekly one never new, emerging or rising and flagged at most
once a week, steady topics' and steady themes' false flags <= 3 per 100 nights each, lineage kept on
>= 90% of nights, per-night NMI >= 0.79.

    python -m eval.utility.nightly_stream --growing_topic gardening
    python -m eval.utility.nightly_stream --seed 11 --nights 35 --emerging_topic investing --emerging_share 0.03
    python -m eval.utility.nightly_stream --real_stream --stream eval/results/real_stream

the second: the default stream with "gardening" doubling over nights 28-48 (issue 59: scored against its
21 nights in `verdicts`); the third: another generated stream whose emerging topic is near an existing one
("personal finance") at 3% of a night; the fourth: real conversations (eval/utility/real_stream.py).
"""

from __future__ import annotations

import argparse
import collections
import dataclasses
import datetime as dt
import json
import math
import os
import time

import numpy as np

from config.embedding import Encoder
from core.dates import utc_timestamp
from dp_ops.budget_ledger import DEFAULT_WINDOW_DELTA, BudgetRefused, Ledger, LedgerEntry, events_json
from dp_ops.dp_events import composed_epsilon, event_from_json
from dp_ops.nightly_plan import NightlyPlan, plan_nights
from eval.config_flags import add_config_flags, config_from
from eval.data import DEFAULT_CACHE_DIR, RESULTS_DIR, embed_cached, load_dataset, planted_topics
from eval.urania_inprocess import NightContext, UraniaConfig, run_encoder, run_urania, stage_requests
from eval.utility.topic_quality import nmi
from publishing.lineage import LOOKBACK_NIGHTS, MIN_COSINE, report_centres
from publishing.timeline import CHANGE_STATUSES, FIRST_NIGHT, build_timeline
from synthetic.stream import (
    WEEKDAYS,
    StreamSpec,
    add_stream_arguments,
    night_path,
    planted_or_written,
    spec_from_args,
    spec_json,
    write_stream,
)

DEFAULT_STREAM = os.path.join(RESULTS_DIR, "stream")
FLAG_STATUSES = ("new", "emerging", "growing")
FADE_STATUSES = ("shrinking", "vanished")
# The targets (issue 40): a change flagged as a theme or a topic, whichever is first.
MAX_NIGHTS_TO_FLAG = 7
MAX_NIGHTS_TO_FLAG_FADING = 10
MAX_FALSE_FLAGS_PER_100 = 3.0  # steady topics and steady themes, each
# A lineage's weekly status that flags a change (publishing.timeline.weekly_status), counted as a flag of
# its night as the nightly statuses are; RISING: what puts a lineage under the page's "Rising".
WEEK_FLAGS = ("rising", "falling")
RISING_STATUSES = ("growing", "emerging")
MIN_LINEAGE_KEPT = 0.90
MIN_MEAN_NMI = 0.79
# A cluster is "shared with a changing topic" when at least this share of its conversations that
# night are about an emerging, fading or weekly planted topic.
CHANGING_SHARE = 0.2
# A released topic at least this share of whose conversations are about the emerging planted topic
# is "mostly about it": flagged new, emerging or growing, it shows the analyst the new theme.
EMERGING_PURITY = 0.5
EMERGING_RULES = ("its majority lineage", "a topic mostly about it")


@dataclasses.dataclass
class Night:
    """One night's conversations as the job would read them, embedded, with their planted topics."""

    index: int
    date: str
    conversation_ids: list[str]
    user_ids: list[str]
    facets: list[str]
    embeddings: np.ndarray
    planted: dict[str, str]  # conversation id -> planted topic (ground truth)


def prepare_stream(folder: str, spec: StreamSpec) -> dict:
    """planted.json of the stream in `folder`, generated first unless it holds this spec's stream."""
    return planted_or_written(folder, spec_json(spec), lambda: write_stream(folder, spec))


def load_nights(folder: str, planted: dict, model: str, cache_dir: str | None = DEFAULT_CACHE_DIR,
                log=print) -> list[Night]:
    """Every night of the stream, parsed with the job's validation and embedded (cached on disk)."""
    nights = []
    for index, date in enumerate(planted["dates"]):
        started = time.time()
        path = night_path(folder, date)
        dataset = load_dataset(path)
        vectors = embed_cached(dataset.facets, model, cache_dir)
        nights.append(Night(index, date, dataset.conversation_ids, dataset.user_ids, dataset.facets, vectors,
                            planted_topics(path)))
        if log and time.time() - started > 5:
            log(f"  embedded {date}: {len(dataset)} conversations in {time.time() - started:.0f} s")
    return nights


def make_plan(config: UraniaConfig, cap: float, window_days: int, window_delta: float) -> NightlyPlan:
    return plan_nights(stage_requests(config), max_epsilon_per_window=cap, window_delta=window_delta,
                       window_days=window_days, cadence_days=1, night_delta=config.delta)


@dataclasses.dataclass
class StreamRun:
    """What a schedule of nightly runs released and what its ledger holds."""

    ledger: Ledger
    reports: dict[str, dict]  # date -> released report (run nights only)
    refused: dict[str, str]  # date -> the ledger's reason
    seconds: float


def run_stream(nights: list[Night], config: UraniaConfig, plan: NightlyPlan, *, cap: float, window_days: int,
               window_delta: float, seed: int, noise_seed: int | None, log=print) -> StreamRun:
    """Runs every night in order with the ledger's check before each (as the job reserves its budget
    before reading data) and the earlier released reports as the job would read them."""
    ledger, reports, refused = Ledger(), {}, {}
    planned_events = list(plan.calibration.events())
    started = time.time()
    for night in nights:
        try:
            ledger.check(night.date, plan.night_epsilon, cap, window_days, allow_rerun=False, delta=config.delta,
                         events=planned_events, max_delta_per_window=window_delta)
        except BudgetRefused as error:
            refused[night.date] = str(error)
            if log:
                log(f"  {night.date}: refused by the ledger: {error}")
            continue
        previous = [reports[d] for d in sorted(reports)][-LOOKBACK_NIGHTS:]
        report = run_urania(night.conversation_ids, night.user_ids, night.facets, night.embeddings, config,
                            seed=seed * 1000 + night.index,
                            noise_seed=None if noise_seed is None else noise_seed * 1000 + night.index,
                            night=NightContext(night.date, previous, plan.calibration))
        events = [m["event"] for m in report["privacy"]["mechanisms"] if m.get("stage") != "keyword_set"]
        ledger = ledger.with_entry(LedgerEntry(
            run_id=f"nightly-{night.date}", date=night.date, epsilon=float(report["privacy"]["epsilon"]),
            delta=float(report["privacy"]["delta"]), status="committed", recorded_at=utc_timestamp(),
            output="in-process", events=events_json(events)))
        reports[night.date] = report
    return StreamRun(ledger, reports, refused, time.time() - started)


def window_epsilons(ledger: Ledger, window_days: int, window_delta: float) -> list[dict]:
    """Every window of `window_days` consecutive days holding a ledger entry: its runs and its epsilon,
    the PLD composition of their stored events at `window_delta` (independent of the ledger's check)."""
    if not ledger.entries:
        return []
    days = sorted({dt.date.fromisoformat(e.date) for e in ledger.entries})
    first, last = days[0] - dt.timedelta(days=window_days - 1), days[-1]
    composed: dict[tuple[str, ...], float] = {}
    windows = []
    day = first
    while day <= last:
        end = day + dt.timedelta(days=window_days - 1)
        inside = [e for e in ledger.entries if day <= dt.date.fromisoformat(e.date) <= end]
        key = tuple(sorted(e.run_id for e in inside))
        if key and key not in composed:
            composed[key] = composed_epsilon([event_from_json(ev) for e in inside for ev in e.events], window_delta)
        if key:
            windows.append({"start": day.isoformat(), "end": end.isoformat(), "runs": len(key),
                            "epsilon": composed[key]})
        day += dt.timedelta(days=1)
    return windows


def lineage_id(topic: dict, date: str) -> str:
    """A released topic's lineage id as the timeline reads it (`DATE#ID` for a topic without one)."""
    return str(topic["lineage"]) if topic.get("lineage") is not None else f"{date}#{topic['id']}"


def _votes(night: Night, report: dict) -> dict[str, collections.Counter]:
    """planted topic -> Counter of the clusters its kept conversations were assigned to that night."""
    votes: dict[str, collections.Counter] = collections.defaultdict(collections.Counter)
    for conversation, cluster in report["_private"]["assignments"].items():
        topic = night.planted.get(conversation)
        if topic is not None:
            votes[topic][int(cluster)] += 1
    return votes


def planted_clusters(nights: list[Night], reports: dict[str, dict]) -> dict[str, dict[str, int]]:
    """date -> {planted topic: the cluster holding most of its kept conversations}, for the run nights."""
    return {night.date: {topic: counts.most_common(1)[0][0]
                         for topic, counts in _votes(night, reports[night.date]).items()}
            for night in nights if night.date in reports}


def planted_lineages(nights: list[Night], reports: dict[str, dict]) -> dict[str, dict[str, str | None]]:
    """date -> {planted topic: lineage of the released topic holding most of its kept conversations,
    or None when that cluster was not released}, for the run nights."""
    mapped = {}
    for date, clusters in planted_clusters(nights, reports).items():
        lineage_of = {int(t["id"]): lineage_id(t, date) for t in reports[date]["topics"]}
        mapped[date] = {topic: lineage_of.get(cluster) for topic, cluster in clusters.items()}
    return mapped


def _quantiles(values: list[float]) -> dict | None:
    if not values:
        return None
    q = np.quantile(values, [0.0, 0.1, 0.5, 0.9, 1.0])
    return {"n": len(values), "min": float(q[0]), "p10": float(q[1]), "median": float(q[2]), "p90": float(q[3]),
            "max": float(q[4])}


def centre_cosines(nights: list[Night], reports: dict[str, dict], topics: list[str], model: str) -> dict:
    """Cosines of released centres (report["centres"]): a planted topic's centre on consecutive run
    nights (its majority cluster both nights, released both nights), and, on the same night, centres
    of released clusters whose majority planted topics differ. What publishing/lineage.py's MIN_COSINE
    separates."""
    clusters = planted_clusters(nights, reports)
    dates = [n.date for n in nights if n.date in reports]
    centres = {d: report_centres(reports[d], model) for d in dates}
    same = []
    for topic in topics:
        for before, after in zip(dates, dates[1:]):
            a, b = clusters[before].get(topic), clusters[after].get(topic)
            if a in centres[before] and b in centres[after]:
                same.append(float(centres[before][a] @ centres[after][b]))
    distinct = []
    for night in nights:
        if night.date not in reports:
            continue
        dominant = {}  # released cluster -> its majority planted topic
        for topic, counts in _votes(night, reports[night.date]).items():
            for cluster, n in counts.items():
                if cluster in centres[night.date] and n > dominant.get(cluster, (None, 0))[1]:
                    dominant[cluster] = (topic, n)
        ids = sorted(dominant)
        distinct += [float(centres[night.date][a] @ centres[night.date][b]) for i, a in enumerate(ids)
                     for b in ids[i + 1:] if dominant[a][0] != dominant[b][0]]
    return {"same_topic_consecutive_nights": _quantiles(same), "distinct_topics_same_night": _quantiles(distinct),
            "min_cosine": MIN_COSINE}


def cluster_purity(night: Night, report: dict, lineage: str, topic: str) -> float | None:
    """Share of the kept conversations in `lineage`'s cluster that night that are about `topic`."""
    clusters = [int(t["id"]) for t in report["topics"] if lineage_id(t, night.date) == lineage]
    if not clusters:
        return None
    inside = [night.planted.get(c) for c, k in report["_private"]["assignments"].items() if int(k) == clusters[0]]
    return sum(t == topic for t in inside) / len(inside) if inside else None


def trend_figures(planted: dict, nights: list[Night], run: StreamRun,
                  model: str = UraniaConfig.embedding_model) -> dict:
    """Flags of the planted changes, steady topics' false flags and lineage keeping (see the module docstring)."""
    timeline = build_timeline(sorted(run.reports.items()))
    status = {lineage["id"]: {n["date"]: n["status"] for n in lineage["nights"]} for lineage in timeline["lineages"]}
    week = {lineage["id"]: {n["date"]: n.get("week") for n in lineage["nights"]} for lineage in timeline["lineages"]}
    mapped = planted_lineages(nights, run.reports)
    by_date = {n.date: n for n in nights}
    run_dates = [n.date for n in nights if n.date in run.reports]
    figures: dict = {"timeline_lineages": len(timeline["lineages"])}

    def status_of(lineage: str | None, date: str) -> str | None:
        return None if lineage is None else status.get(lineage, {}).get(date)

    def week_of(lineage: str | None, date: str) -> str | None:
        return None if lineage is None else week.get(lineage, {}).get(date)

    emerging = next((t for t in planted["trends"] if t["kind"] == "emerging"), None)
    if emerging is not None:
        start = emerging["start_night"]
        flags = {}  # rule -> its first flag
        for date in run_dates:
            night = by_date[date]
            if night.index < start:
                continue
            candidates = {EMERGING_RULES[0]: mapped[date].get(emerging["topic"])}
            mostly = [lineage for lineage in (lineage_id(t, date) for t in run.reports[date]["topics"])
                      if (cluster_purity(night, run.reports[date], lineage, emerging["topic"]) or 0) >= EMERGING_PURITY]
            candidates[EMERGING_RULES[1]] = next(
                (lineage for lineage in mostly if status_of(lineage, date) in FLAG_STATUSES), None)
            for rule, lineage in candidates.items():
                if rule not in flags and status_of(lineage, date) in FLAG_STATUSES:
                    flags[rule] = {"date": date, "night": night.index, "nights_to_flag": night.index - start,
                                   "status": status_of(lineage, date), "lineage": lineage, "rule": rule,
                                   "purity": cluster_purity(night, run.reports[date], lineage, emerging["topic"])}
        first = min(flags.values(), key=lambda f: f["night"], default=None)
        figures["emerging"] = {"topic": emerging["topic"], "start_night": start,
                               "start_date": emerging["start_date"],
                               "in_stream": start < len(nights), "flagged": first, "flagged_by_rule": flags}

    fading = next((t for t in planted["trends"] if t["kind"] == "fading"), None)
    if fading is not None:
        start = fading["start_night"]
        before = [mapped[d].get(fading["topic"]) for d in run_dates if by_date[d].index < start]
        lineage = next((x for x in reversed(before) if x is not None), None)
        flag = None
        if lineage is not None:
            for date in run_dates:
                if by_date[date].index >= start and status_of(lineage, date) in FADE_STATUSES:
                    flag = {"date": date, "night": by_date[date].index,
                            "nights_to_flag": by_date[date].index - start, "status": status_of(lineage, date)}
                    break
        figures["fading"] = {"topic": fading["topic"], "start_night": start, "start_date": fading["start_date"],
                             "gone_night": fading.get("gone_night"), "in_stream": start < len(nights),
                             "lineage": lineage, "flagged": flag}

    weekly = next((t for t in planted["trends"] if t["kind"] == "weekly"), None)
    if weekly is not None:
        on_day, off_day = [0, 0], [0, 0]  # [flagged growing/emerging, nights with a lineage]
        called_new, flagged_dates = 0, []
        for date in run_dates:
            lineage = mapped[date].get(weekly["topic"])
            if lineage is None:
                continue
            tally = on_day if dt.date.fromisoformat(date).weekday() == WEEKDAYS.index(weekly["weekday"]) else off_day
            tally[0] += status_of(lineage, date) in ("growing", "emerging")
            tally[1] += 1
            if date != run_dates[0]:  # every lineage is new on the stream's first night
                called_new += status_of(lineage, date) in ("new", "emerging")
                if status_of(lineage, date) in FLAG_STATUSES:
                    flagged_dates.append(date)
        figures["weekly"] = {"topic": weekly["topic"], "weekday": weekly["weekday"],
                             "growing_on_weekday": on_day[0], "weekday_nights": on_day[1],
                             "growing_other_days": off_day[0], "other_nights": off_day[1],
                             "called_new_or_emerging": called_new,
                             "weeks_flagged_more_than_once": weeks_flagged_more_than_once(flagged_dates)}

    growing = next((t for t in planted["trends"] if t["kind"] == "growing"), None)
    if growing is not None:
        figures["growing"] = growing_figures(growing, [(by_date[d].index, d) for d in run_dates], mapped, status_of,
                                             week_of, len(nights))

    steady = [t["topic"] for t in planted["trends"] if t["kind"] == "steady"]
    flags, counted, unmapped, kept, pairs = 0, 0, 0, 0, 0
    flagged_by_status: collections.Counter = collections.Counter()
    first_date = nights[0].date if nights else None
    breaks: collections.Counter = collections.Counter()
    # A steady topic's cluster that also holds a changing topic's conversations changes for real:
    # its flags are counted apart too ("shared with a changing topic").
    changing = {t["topic"] for t in planted["trends"] if t["kind"] != "steady"}
    clusters = planted_clusters(nights, run.reports)
    mixed: dict[str, set[int]] = {}
    for night in nights:
        if night.date in run.reports:
            held: dict[int, collections.Counter] = collections.defaultdict(collections.Counter)
            for topic, counts in _votes(night, run.reports[night.date]).items():
                for cluster, n in counts.items():
                    held[cluster][topic in changing] += n
            mixed[night.date] = {c for c, n in held.items() if n[True] >= CHANGING_SHARE * (n[True] + n[False])}
    shared_flags, shared_nights = 0, 0
    released_kept, released_pairs = 0, 0
    for topic in steady:
        previous = last_released = None
        for position, date in enumerate(run_dates):
            lineage = mapped[date].get(topic)
            if lineage is not None:
                if last_released is not None:
                    released_pairs += 1
                    released_kept += lineage == last_released
                last_released = lineage
            if position > 0:
                pairs += 1
                if lineage is not None and lineage == previous:
                    kept += 1
                else:
                    breaks["cluster not released" if lineage is None or previous is None
                           else "new lineage" if status_of(lineage, date) in ("new", FIRST_NIGHT) else "another lineage"] += 1
            previous = lineage
            if date == first_date:
                continue
            if lineage is None:
                unmapped += 1
                continue
            counted += 1
            current = status_of(lineage, date)
            shared = clusters[date][topic] in mixed[date]
            shared_nights += shared
            weekly = week_of(lineage, date)
            if current in CHANGE_STATUSES or weekly in WEEK_FLAGS:
                flags += 1
                flagged_by_status[current if current in CHANGE_STATUSES else f"week {weekly}"] += 1
                shared_flags += shared
    figures["steady"] = {
        "topics": len(steady), "topic_nights": counted, "unreleased_topic_nights": unmapped,
        "false_flags": flags, "false_flags_per_100": 100 * flags / counted if counted else None,
        "false_flags_by_status": dict(flagged_by_status),
        "shared_with_changing_topic": {"topic_nights": shared_nights, "false_flags": shared_flags},
        "false_flags_per_100_unshared": (100 * (flags - shared_flags) / (counted - shared_nights)
                                         if counted > shared_nights else None),
        "lineage_pairs": pairs, "lineage_kept": kept, "lineage_kept_share": kept / pairs if pairs else None,
        "lineage_breaks": dict(breaks),
        "released_lineage_pairs": released_pairs, "released_lineage_kept": released_kept,
        "released_lineage_kept_share": released_kept / released_pairs if released_pairs else None,
    }
    figures["centre_cosines"] = centre_cosines(nights, run.reports, steady, model)
    figures["quality"] = night_quality(nights, run.reports)
    return figures


def weeks_flagged_more_than_once(dates: list[str]) -> int:
    """How many calendar weeks (Monday to Sunday) hold more than one of `dates`."""
    weeks = collections.Counter(dt.date.fromisoformat(d).isocalendar()[:2] for d in dates)
    return sum(n > 1 for n in weeks.values())


def growing_figures(trend: dict, run_nights: list[tuple[int, str]], mapped: dict[str, dict[str, str | None]],
                    status_of, week_of, stream_nights: int) -> dict:
    """The growing planted topic (a slow riser): the first night from its start on which its majority
    lineage is under the page's "Rising" (its night growing or emerging, or its week rising), the first
    on which its week is rising, how many of its run nights since the start it was in Rising, and how many
    lineages it had over them. `run_nights`: (night index, date) of the run nights."""
    start, full = trend["start_night"], trend["full_night"]
    first = first_week = None
    rising_nights = counted = 0
    lineages = set()
    unreleased = 0
    for index, date in run_nights:
        if index < start:
            continue
        lineage = mapped[date].get(trend["topic"])
        lineages.add(lineage)
        counted += 1
        unreleased += lineage is None
        night, weekly = status_of(lineage, date), week_of(lineage, date)
        flag = {"date": date, "night": index, "nights_to_flag": index - start, "status": night, "week": weekly,
                "lineage": lineage}
        if night in RISING_STATUSES or weekly == "rising":
            rising_nights += 1
            first = first or flag
        if weekly == "rising":
            first_week = first_week or flag
    return {"topic": trend["topic"], "start_night": start, "full_night": full, "factor": trend.get("factor"),
            "ramp_nights": full - start + 1, "in_stream": start < stream_nights, "flagged": first,
            "flagged_weekly": first_week, "rising_nights": rising_nights, "nights_since_start": counted,
            "lineages": len(lineages - {None}), "nights_unreleased": unreleased}


THEME_NIGHT_FLAGS = ("growing", "shrinking")
THEME_WEEK_FLAGS = ("rising", "falling")


def theme_figures(planted: dict, nights: list[Night], run: StreamRun, encoder: Encoder,
                  keyword_set: str | None = None) -> dict | None:
    """With --themes (config.themes): the planted changes as the fixed themes show them. Each planted
    topic's theme is where most of its conversations go by the job's public rule (ground truth known
    here only); a change is flagged on the first night from its start when its theme's nightly status
    is growing (fading: shrinking) or its weekly status rising (falling). Steady themes, those no changing
    topic maps to, count a false flag on each night past their first with any flag. None without themes.
    `encoder`: the run's (run_encoder), the one the nights' conversations were embedded with."""
    from backends.keyword_categories import KeywordCategories
    from backends.keyword_set import load_keyword_set
    from core.blas_threads import one_blas_thread
    from dp_ops.theme_histogram import ThemeRule, nearest_theme, theme_columns
    from publishing.theme_timeline import theme_timeline
    from transforms.vectors import keyword_vectors

    themes = {t["id"]: t for t in theme_timeline(sorted((d, r) for d, r in run.reports.items()))}
    if not themes:
        return None
    keywords = load_keyword_set(keyword_set)
    categories = KeywordCategories.of_keyword_set(keywords, encoder)
    columns = theme_columns(categories.names)
    rule = ThemeRule.of(keyword_vectors(encoder, keywords.keywords), keywords.keywords, categories.category_of,
                        columns[:-1], min_similarity=encoder.floors.theme)
    counts: dict[str, collections.Counter] = collections.defaultdict(collections.Counter)
    with one_blas_thread():
        for night in nights:
            for conversation_id, embedding in zip(night.conversation_ids, night.embeddings):
                topic = night.planted.get(conversation_id)
                if topic is not None:
                    counts[topic][columns[nearest_theme(embedding, rule)]] += 1
    theme_of = {topic: c.most_common(1)[0][0] for topic, c in counts.items()}
    index = {n.date: n.index for n in nights}

    def first_flag(theme: str, start: int, night_flags: tuple, week_flags: tuple) -> dict | None:
        for entry in themes[theme]["nights"]:
            if index[entry["date"]] >= start and (entry["status"] in night_flags or entry["week"] in week_flags):
                return {"date": entry["date"], "nights_to_flag": index[entry["date"]] - start,
                        "status": entry["status"], "week": entry["week"]}
        return None

    figures: dict = {"themes": len(themes)}
    for kind, night_flags, week_flags in (("emerging", ("growing",), ("rising",)),
                                          ("fading", ("shrinking",), ("falling",)),
                                          ("growing", ("growing",), ("rising",))):
        trend = next((t for t in planted["trends"] if t["kind"] == kind), None)
        if trend is not None and trend["topic"] in theme_of:
            theme = theme_of[trend["topic"]]
            figures[kind] = {"topic": trend["topic"], "theme": theme,
                             "topic_share_in_theme": counts[trend["topic"]][theme] / sum(counts[trend["topic"]].values()),
                             "flagged": first_flag(theme, trend["start_night"], night_flags, week_flags)}
    weekly = next((t for t in planted["trends"] if t["kind"] == "weekly"), None)
    if weekly is not None and weekly["topic"] in theme_of:
        entries = themes[theme_of[weekly["topic"]]]["nights"]
        on_day = [e for e in entries if dt.date.fromisoformat(e["date"]).weekday() == WEEKDAYS.index(weekly["weekday"])]
        figures["weekly"] = {"topic": weekly["topic"], "theme": theme_of[weekly["topic"]],
                             "flagged_on_weekday": sum(e["status"] == "growing" or e["week"] == "rising"
                                                       for e in on_day), "weekday_nights": len(on_day),
                             "called_rising": sum(e["week"] == "rising" for e in entries),
                             "weeks_flagged_more_than_once": weeks_flagged_more_than_once(
                                 [e["date"] for e in entries if e["status"] == "growing" or e["week"] == "rising"])}
    changing = {theme_of[t["topic"]] for t in planted["trends"] if t["kind"] != "steady" and t["topic"] in theme_of}
    flags = nights_counted = 0
    for theme, item in themes.items():
        if theme in changing:
            continue
        for entry in item["nights"][1:]:
            nights_counted += 1
            flags += entry["status"] in THEME_NIGHT_FLAGS or entry["week"] in THEME_WEEK_FLAGS
    figures["steady"] = {"themes": len(themes) - len(changing), "theme_nights": nights_counted,
                         "false_flags": flags, "false_flags_per_100": 100 * flags / nights_counted if nights_counted
                         else None}
    return figures


def with_free_themes(run: StreamRun, category_share: float, sensitive: frozenset[str] = frozenset()) -> StreamRun | None:
    """The free alternative to the themes' own release: each night's theme sizes summed from the released
    per-topic category votes (post-processing, no budget; issue 40). A category's sum over the kept
    clusters has the noise of that many partitions (sigma * sqrt(clusters)); dividing by sqrt(s) puts it
    in about the themes' unit (a conversation gives norm w * sqrt(s) to its categories). Other (no
    category) has no votes and is left out. The run's reports with `themes` so replaced; None without
    weighted category votes (s = 0, count votes)."""
    from dp_ops.keyword_votes import CategoryVote
    from dp_ops.theme_histogram import themes_section

    if not category_share > 0:
        return None
    reports = {}
    for date, report in run.reports.items():
        kept = report["_private"].get("keyword_votes")
        if kept is None:
            return None
        sums: dict[str, float] = collections.defaultdict(float)
        clusters = set()
        for (cluster, column), value in kept["release"].items():
            clusters.add(cluster)
            if isinstance(column, CategoryVote):
                sums[column.category] += value
        if not sums:
            return None
        scale = math.sqrt(category_share)
        sigma = kept["sigma"] * math.sqrt(len(clusters)) / scale
        reports[date] = {**report, "themes": themes_section({c: v / scale for c, v in sorted(sums.items())}, sigma,
                                                             sensitive)}
    return dataclasses.replace(run, reports=reports)


def night_quality(nights: list[Night], reports: dict[str, dict]) -> dict:
    """Per-night topic quality: NMI of the DP clusters against the planted topics (kept conversations,
    eval/utility/topic_quality.nmi) and released topics, averaged over the run nights."""
    scores, released = [], []
    for night in nights:
        if night.date not in reports:
            continue
        pairs = [(night.planted[c], k) for c, k in reports[night.date]["_private"]["assignments"].items()
                 if c in night.planted]
        value = nmi([p for p, _ in pairs], [k for _, k in pairs]) if pairs else None
        if value is not None:
            scores.append(value)
        released.append(len(reports[night.date]["topics"]))
    return {"mean_nmi": float(np.mean(scores)) if scores else None,
            "mean_topics_released": float(np.mean(released)) if released else None}


def first_flags(figures: dict) -> dict[str, int | None]:
    """Nights from each planted change's start to its first flag as a topic or as a theme, whichever is
    first (None: never flagged)."""
    trends = figures["trends"]
    themes = trends.get("themes") or trends.get("free_themes") or {}
    first = {}
    for kind in ("emerging", "fading") + (("growing",) if "growing" in trends else ()):
        candidates = [item["flagged"]["nights_to_flag"] for item in (trends.get(kind), themes.get(kind))
                      if item and item.get("flagged")]
        first[kind] = min(candidates, default=None)
    return first


def verdicts(figures: dict, nights: int, cap: float) -> dict[str, bool]:
    """Pass/fail against the targets (issue 40's; the themes' parts with the themes' release or, without
    it, the free themes summed from the category votes)."""
    trends = figures["trends"]
    themes = trends.get("themes") or trends.get("free_themes") or {}
    first = first_flags(figures)
    steady = trends["steady"]
    weekly, theme_weekly = trends.get("weekly") or {}, themes.get("weekly") or {}
    theme_flags = (themes.get("steady") or {}).get("false_flags_per_100")
    growing = trends.get("growing")
    growing_verdict = {} if not (growing and growing["in_stream"]) else {
        f"growing topic in Rising (its lineage) within its {growing['ramp_nights']} nights": (
            growing["flagged"] is not None and growing["flagged"]["nights_to_flag"] < growing["ramp_nights"])}
    return {
        f"{nights} nights run, none refused": figures["nights_run"] == nights and not figures["nights_refused"],
        "every window epsilon <= cap": figures["max_window_epsilon"] <= cap + 1e-9,
        f"emerging flagged (theme or topic) within {MAX_NIGHTS_TO_FLAG} nights": (
            first["emerging"] is not None and first["emerging"] <= MAX_NIGHTS_TO_FLAG),
        f"fading flagged (theme or topic) within {MAX_NIGHTS_TO_FLAG_FADING} nights": (
            first["fading"] is not None and first["fading"] <= MAX_NIGHTS_TO_FLAG_FADING),
        "weekly never new, emerging or rising, flagged at most once a week": (
            not weekly.get("called_new_or_emerging") and not weekly.get("weeks_flagged_more_than_once")
            and not theme_weekly.get("called_rising") and not theme_weekly.get("weeks_flagged_more_than_once")),
        f"steady false flags <= {MAX_FALSE_FLAGS_PER_100:g} per 100 topic-nights (and theme-nights)": (
            steady["false_flags_per_100"] is not None and steady["false_flags_per_100"] <= MAX_FALSE_FLAGS_PER_100
            and (theme_flags is None or theme_flags <= MAX_FALSE_FLAGS_PER_100)),
        f"lineage kept on >= {MIN_LINEAGE_KEPT:.0%} of the nights a steady topic is released": (
            steady["released_lineage_kept_share"] is not None
            and steady["released_lineage_kept_share"] >= MIN_LINEAGE_KEPT),
        f"per-night NMI >= {MIN_MEAN_NMI:g}": (trends["quality"]["mean_nmi"] or 0) >= MIN_MEAN_NMI,
        **growing_verdict,
    }


def evaluate(nights: list[Night], planted: dict, config: UraniaConfig, *, cap: float = 30.0, window_days: int = 30,
             window_delta: float = DEFAULT_WINDOW_DELTA, seed: int = 7, noise_seed: int | None = 0,
             log=print) -> dict:
    """Runs the nights with `config` and returns the figures (see the module docstring)."""
    plan = make_plan(config, cap, window_days, window_delta)
    config = dataclasses.replace(config, epsilon=plan.night_epsilon)  # what the report states; the noise is the plan's
    run = run_stream(nights, config, plan, cap=cap, window_days=window_days, window_delta=window_delta, seed=seed,
                     noise_seed=noise_seed, log=log)
    windows = window_epsilons(run.ledger, window_days, window_delta)
    worst = max(windows, key=lambda w: w["epsilon"]) if windows else None
    night_epsilons = [e.epsilon for e in run.ledger.entries]
    figures = {
        "warm_start": getattr(config, "warm_start", None),
        "nights": len(nights), "nights_run": len(run.reports), "nights_refused": len(run.refused),
        "refused": run.refused,
        "plan": plan.to_json(),
        "night_epsilon": {"planned": plan.night_epsilon, "reported_min": min(night_epsilons, default=None),
                          "reported_max": max(night_epsilons, default=None)},
        "cap": cap, "window_days": window_days, "window_delta": window_delta,
        "max_window_epsilon": worst["epsilon"] if worst else 0.0, "worst_window": worst, "windows": windows,
        "run_seconds": run.seconds,
        "topics_per_night": [len(run.reports[d]["topics"]) for d in sorted(run.reports)],
        "trends": trend_figures(planted, nights, run, config.embedding_model),
    }
    themes = theme_figures(planted, nights, run, run_encoder(config), config.keyword_set)
    if themes is not None:
        figures["trends"]["themes"] = themes
    else:  # the free alternative: the same histogram summed from the per-topic category votes
        free = with_free_themes(run, config.category_vote_share)
        if free is not None:
            figures["trends"]["free_themes"] = theme_figures(planted, nights, free, run_encoder(config),
                                                             config.keyword_set)
    figures["verdicts"] = verdicts(figures, len(nights), cap)
    figures["_run"] = run  # not JSON: the ledger and reports, for callers that check more
    return figures


def format_figures(figures: dict) -> list[str]:
    """The printed summary of one evaluation."""
    trends, steady = figures["trends"], figures["trends"]["steady"]
    lines = [
        f"warm start: {figures['warm_start']}",
        f"nights run: {figures['nights_run']} of {figures['nights']}; refused by the ledger: "
        f"{figures['nights_refused']}" + (f" ({', '.join(sorted(figures['refused']))})" if figures["refused"] else ""),
        f"per-night epsilon: planned {figures['night_epsilon']['planned']:.4f}, reported "
        f"{figures['night_epsilon']['reported_min'] or 0:.4f}..{figures['night_epsilon']['reported_max'] or 0:.4f}",
    ]
    worst = figures["worst_window"]
    if worst:
        lines.append(f"largest {figures['window_days']}-day window epsilon (recomputed from the ledger's events, PLD "
                     f"at delta {figures['window_delta']:g}): {worst['epsilon']:.4f} ({worst['start']}..{worst['end']}, "
                     f"{worst['runs']} runs); cap {figures['cap']:g}")
    emerging = trends.get("emerging")
    if emerging:
        flag, by_rule = emerging["flagged"], emerging["flagged_by_rule"]
        lines.append(f"emerging '{emerging['topic']}' (planted from night {emerging['start_night']}, "
                     f"{emerging['start_date']}): " + (
                         f"flagged {flag['status']} on {flag['date']} (night {flag['night']}), "
                         f"{flag['nights_to_flag']} nights after its start; lineage {flag['lineage']} "
                         f"(purity {flag['purity'] if flag['purity'] is None else round(flag['purity'], 2)}, "
                         f"{flag['rule']}); by rule: " + ", ".join(
                             f"{rule} after {by_rule[rule]['nights_to_flag'] if rule in by_rule else 'never'}"
                             for rule in EMERGING_RULES)
                         if flag else ("not flagged" if emerging["in_stream"] else "starts after the stream")))
    fading = trends.get("fading")
    if fading:
        flag = fading["flagged"]
        lines.append(f"fading '{fading['topic']}' (planted from night {fading['start_night']}, {fading['start_date']}"
                     f", gone from night {fading['gone_night']}): lineage {fading['lineage']} " + (
                         f"{flag['status']} on {flag['date']} (night {flag['night']}), "
                         f"{flag['nights_to_flag']} nights after the decline began"
                         if flag else ("not flagged" if fading["in_stream"] else "starts after the stream")))
    weekly = trends.get("weekly")
    if weekly:
        lines.append(f"weekly '{weekly['topic']}': growing/emerging on {weekly['growing_on_weekday']} of "
                     f"{weekly['weekday_nights']} {weekly['weekday']}s, {weekly['growing_other_days']} of "
                     f"{weekly['other_nights']} other nights; called new or emerging on "
                     f"{weekly['called_new_or_emerging']} nights; weeks flagged more than once: "
                     f"{weekly['weeks_flagged_more_than_once']}")
    lines += format_growing(trends.get("growing"))
    per_100 = steady["false_flags_per_100"]
    kept, released = steady["lineage_kept_share"], steady["released_lineage_kept_share"]
    lines += [
        f"steady topics: {steady['false_flags']} false flags in {steady['topic_nights']} topic-nights = "
        f"{'n/a' if per_100 is None else f'{per_100:.2f}'} per 100 {steady['false_flags_by_status']}; "
        f"{steady['unreleased_topic_nights']} topic-nights with the topic's cluster not released; "
        f"{steady['shared_with_changing_topic']['false_flags']} of the flags in the "
        f"{steady['shared_with_changing_topic']['topic_nights']} topic-nights whose cluster was >= "
        f"{CHANGING_SHARE:.0%} a changing topic's; without those: " + (
            "n/a" if steady["false_flags_per_100_unshared"] is None
            else f"{steady['false_flags_per_100_unshared']:.2f} per 100"),
        f"lineage kept on released nights: {steady['released_lineage_kept']} of {steady['released_lineage_pairs']} "
        f"= {'n/a' if released is None else f'{released:.1%}'}; on consecutive nights: {steady['lineage_kept']} of "
        f"{steady['lineage_pairs']} = {'n/a' if kept is None else f'{kept:.1%}'}, breaks {steady['lineage_breaks']}",
        "centre cosines: " + "; ".join(
            f"{name.replace('_', ' ')} " + ("n/a" if q is None else
                                            f"p10 {q['p10']:.2f} median {q['median']:.2f} p90 {q['p90']:.2f}")
            for name, q in trends["centre_cosines"].items() if name != "min_cosine")
        + f" (lineage match needs >= {trends['centre_cosines']['min_cosine']:g})",
        f"topics per night: min {min(figures['topics_per_night'], default=0)}, "
        f"max {max(figures['topics_per_night'], default=0)}; lineages in the timeline: {trends['timeline_lineages']}; "
        f"runs took {figures['run_seconds']:.0f} s",
        f"per-night quality: NMI against the planted topics {trends['quality']['mean_nmi']:.3f} (mean of the nights), "
        f"{trends['quality']['mean_topics_released']:.1f} topics released a night",
    ]
    lines += format_theme_figures(trends.get("themes"))
    lines += [line.replace("themes:", "free themes (summed category votes):", 1)
              for line in format_theme_figures(trends.get("free_themes"))]
    lines += [f"  [{'PASS' if ok else 'FAIL'}] {name}" for name, ok in figures["verdicts"].items()]
    return lines


def format_growing(growing: dict | None) -> list[str]:
    """The growing topic's line of the summary (none without --growing_topic)."""
    if not growing:
        return []
    flag, week = growing["flagged"], growing["flagged_weekly"]
    head = (f"growing '{growing['topic']}' (x{growing['factor']:g} over {growing['ramp_nights']} nights from night "
            f"{growing['start_night']}): ")
    if not growing["in_stream"]:
        return [head + "starts after the stream"]
    return [head + ("never in Rising" if flag is None else
                    f"in Rising on {flag['date']} (night {flag['night']}), {flag['nights_to_flag']} nights after its start "
                    f"({flag['status']}, week {flag['week']}); week rising first after "
                    + ("never" if week is None else f"{week['nights_to_flag']} nights"))
            + f"; in Rising on {growing['rising_nights']} of {growing['nights_since_start']} nights since its start; "
            f"{growing['lineages']} lineage(s), not released on {growing['nights_unreleased']} nights"]


def format_theme_figures(themes: dict | None) -> list[str]:
    """The themes' lines of the summary (none with --set themes=false and no category votes)."""
    if themes is None:
        return []
    lines = []
    for kind in ("emerging", "fading", "growing"):
        if kind in themes:
            item, flag = themes[kind], themes[kind]["flagged"]
            lines.append(f"themes: {kind} '{item['topic']}' -> theme '{item['theme']}' "
                         f"({item['topic_share_in_theme']:.0%} of its conversations): "
                         + ("not flagged" if flag is None else
                            f"flagged after {flag['nights_to_flag']} nights ({flag['status']}, week {flag['week']})"))
    if "weekly" in themes:
        weekly = themes["weekly"]
        lines.append(f"themes: weekly '{weekly['topic']}' -> '{weekly['theme']}': flagged on "
                     f"{weekly['flagged_on_weekday']} of {weekly['weekday_nights']} peak days, called rising on "
                     f"{weekly['called_rising']} nights, weeks flagged more than once: "
                     f"{weekly['weeks_flagged_more_than_once']}")
    steady = themes["steady"]
    per_100 = steady["false_flags_per_100"]
    lines.append(f"themes: {steady['themes']} steady themes, {steady['false_flags']} false flags in "
                 f"{steady['theme_nights']} theme-nights = {'n/a' if per_100 is None else f'{per_100:.2f}'} per 100")
    return lines


def headline(figures: dict) -> dict:
    """The figures the targets are about, for one run."""
    trends = figures["trends"]
    flag = (trends.get("emerging") or {}).get("flagged")
    fade = (trends.get("fading") or {}).get("flagged")
    return {"refused": figures["nights_refused"], "max_window_epsilon": figures["max_window_epsilon"],
            "emerging_nights_to_flag": None if flag is None else flag["nights_to_flag"],
            "emerging_by_rule": {rule: f["nights_to_flag"]
                                 for rule, f in (trends.get("emerging") or {}).get("flagged_by_rule", {}).items()},
            "fading_nights_to_flag": None if fade is None else fade["nights_to_flag"],
            "growing_nights_to_flag": ((trends.get("growing") or {}).get("flagged") or {}).get("nights_to_flag"),
            "false_flags_per_100": trends["steady"]["false_flags_per_100"],
            "lineage_kept": trends["steady"]["released_lineage_kept_share"],
            "lineage_kept_consecutive": trends["steady"]["lineage_kept_share"],
            "mean_nmi": trends["quality"]["mean_nmi"],
            "themes": _theme_headline(trends.get("themes") or trends.get("free_themes")),
            "first_flags": first_flags(figures)}


def _theme_headline(themes: dict | None) -> dict | None:
    if themes is None:
        return None
    flagged = {kind: (themes.get(kind) or {}).get("flagged") for kind in ("emerging", "fading")}
    weekly = themes.get("weekly") or {}
    return {**{f"{kind}_nights_to_flag": None if flag is None else flag["nights_to_flag"]
               for kind, flag in flagged.items()},
            "weekly_called_rising": weekly.get("called_rising"),
            "false_flags_per_100": themes["steady"]["false_flags_per_100"]}


def format_repeats(runs: list[dict]) -> list[str]:
    """One line per run of the headline figures, and how many runs passed each target."""
    lines = []
    for index, figures in enumerate(runs):
        row = headline(figures)
        lines.append(f"  run {index}: refused {row['refused']}, max window eps {row['max_window_epsilon']:.4f}, "
                     f"emerging flagged after {row['emerging_nights_to_flag']} nights "
                     f"({', '.join(f'{r}: {n}' for r, n in row['emerging_by_rule'].items()) or 'by no rule'}), fading after "
                     f"{row['fading_nights_to_flag']}, growing in Rising after {row['growing_nights_to_flag']}, "
                     f"false flags {row['false_flags_per_100'] or 0:.2f}/100, "
                     f"lineage kept {row['lineage_kept'] or 0:.1%} of released nights "
                     f"({row['lineage_kept_consecutive'] or 0:.1%} of consecutive nights), NMI {row['mean_nmi']:.3f}"
                     + ("" if row["themes"] is None else
                        f"; themes: emerging after {row['themes']['emerging_nights_to_flag']}, fading after "
                        f"{row['themes']['fading_nights_to_flag']}, weekly called rising "
                        f"{row['themes']['weekly_called_rising']}, false flags "
                        f"{row['themes']['false_flags_per_100'] or 0:.2f}/100")
                     + f"; first flag (theme or topic): emerging {row['first_flags']['emerging']}, "
                       f"fading {row['first_flags']['fading']}")
    for name in runs[0]["verdicts"]:
        lines.append(f"  {name}: passed in {sum(f['verdicts'][name] for f in runs)} of {len(runs)} runs")
    return lines


def _json_safe(figures: dict) -> dict:
    return {k: v for k, v in figures.items() if not k.startswith("_")}


def main(argv: list[str] | None = None) -> dict:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--stream", default=DEFAULT_STREAM,
                        help="stream folder (generated there unless it holds this stream already)")
    add_stream_arguments(parser)
    add_config_flags(parser, num_clusters=20)
    parser.add_argument("--max_epsilon_per_window", type=float, default=30.0)
    parser.add_argument("--window_days", type=int, default=30)
    parser.add_argument("--window_delta", type=float, default=DEFAULT_WINDOW_DELTA)
    parser.add_argument("--warm_start", choices=("auto", "off", "both"), default="auto",
                        help="both: run cold (off) and warm (auto) and print both")
    parser.add_argument("--noise_seed", type=int, default=0, help="seeds each night's k-means noise (reproducible)")
    parser.add_argument("--repeats", type=int, default=1,
                        help="runs of the whole stream per mode (noise seeds noise_seed, noise_seed + 1, ...)")
    parser.add_argument("--cache_dir", default=DEFAULT_CACHE_DIR)
    parser.add_argument("--json", default=None, help="also write the figures here")
    parser.add_argument("--real_stream", action="store_true",
                        help="a stream of real conversations from ../shared/data with one real theme held back, "
                             "then about 6%% a night (eval/utility/real_stream.py) instead of a generated one")
    args = parser.parse_args(argv)
    spec = spec_from_args(args)
    started = time.time()
    if args.real_stream:
        from eval.utility.real_stream import prepare_real_stream
        planted = prepare_real_stream(args.stream)
    else:
        planted = prepare_stream(args.stream, spec)
    base = config_from(args)  # --warm_start is this evaluation's ("both" runs the two): set per mode below
    nights = load_nights(args.stream, planted, base.embedding_model, args.cache_dir)
    users = len({u for n in nights for u in n.user_ids})
    print(f"stream {args.stream}: {len(nights)} nights, {sum(len(n.conversation_ids) for n in nights)} "
          f"conversations, {users} users; read and embedded in {time.time() - started:.0f} s")
    modes = ("off", "auto") if args.warm_start == "both" else (args.warm_start,)
    results: dict[str, list[dict]] = {}
    for mode in modes:
        config = dataclasses.replace(base, warm_start=mode)
        results[mode] = []
        for repeat in range(args.repeats):
            figures = evaluate(nights, planted, config, cap=args.max_epsilon_per_window,
                               window_days=args.window_days, window_delta=args.window_delta, seed=args.seed,
                               noise_seed=args.noise_seed + repeat, log=print)
            results[mode].append(figures)
            if repeat == 0:
                print(f"\n== warm start {mode} ==")
                for line in format_figures(figures):
                    print(line)
        if args.repeats > 1:
            print(f"-- warm start {mode}, {args.repeats} repeats (noise seeds {args.noise_seed}.."
                  f"{args.noise_seed + args.repeats - 1}; PipelineDP's count noise is unseeded) --")
            for line in format_repeats(results[mode]):
                print(line)
    print(f"\ntotal {time.time() - started:.0f} s")
    if args.json:
        os.makedirs(os.path.dirname(os.path.abspath(args.json)), exist_ok=True)
        with open(args.json, "w") as out:
            json.dump({mode: [_json_safe(f) for f in runs] for mode, runs in results.items()}, out, indent=1,
                      default=str)
    return results

if __name__ == "__main__":
    main()
