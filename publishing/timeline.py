"""The public topic timeline of nightly runs: each topic lineage's noisy size night by night, with a 95%
interval and a status, built from released reports only (post-processing: it costs no privacy budget).

A *lineage* is a topic followed from night to night: every topic of a report carries `lineage`, an id
that stays the same for the same topic across nights (a report written before lineages existed is read
as if each topic were its own lineage, `DATE#ID`).

**Interval.** A night's size is the true count plus the noise that night's `cluster_sizes` mechanism
drew (its `noise` entry in `privacy.mechanisms`). `low`/`high` hold the true count 95% of the time:
size ± b·ln 20 for Laplace noise of scale b (P(|X| > b·ln 20) = 1/20), size ± 1.96σ for Gaussian
noise; `low` is clamped at 0. Rounding and the clamp of a noisy size at 0 are ignored (sizes of
released topics are well above 0).

**Status** of a lineage on a night it was released, one of `STATUSES`:

- `first night`: its first night in the timeline. Not a change yet: a cluster that forms on one night
  only (a re-found topic under a fresh id, a blip of the noise) is never announced;
- `new`: its next released night when it comes within `RECENT_NIGHTS` nights of its first (released on
  `MIN_RECENT_NIGHTS` of its first `RECENT_NIGHTS` nights, as "New this week" asks), unless its first
  night is the timeline's first (nothing was there before to be new against) or it split from a known
  lineage (below). A lineage that
  disappears and comes back keeps its history: its return is judged against its earlier nights like
  any other night, not called new again, so a topic hovering at the release threshold does not flicker
  between new and vanished. On the generated 60-night stream (5 runs) a third of the steady topics'
  `new` flags were such one-night lineages;
- `emerging`: nights 2 to `EMERGING_NIGHTS` of a lineage that may be new (as above: counted in timeline
  nights since its first) when its size is more than `Z_EMERGING` standard deviations above its first
  night's;
- `growing` / `shrinking`: tonight's size is more than `Z` standard deviations above / below the
  mean of its previous up to `BASELINE_NIGHTS` released nights, and not within `Z_WEEKDAY` standard
  deviations of the mean of its released nights on the same weekday (7, 14, ... days before; up to
  `WEEKDAY_NIGHTS`), when it has any: a night that repeats last week's peak or trough is the weekly
  pattern, not news, while a real step differs from the same weekday as well;
- `steady` otherwise.

**Split lineages** (`split_from`, publishing.lineage.split_parents): a lineage whose first night's DP centre is
within the matching's MIN_COSINE of a lineage released in the nights before it. The nightly matching is
one-to-one, so that topic would have continued the known lineage had another of the night's topics not
been closer to it: it is a part of a known topic (a cluster that split in two, or took a share of its
neighbour's conversations), not something that was not there before. It is never `new` nor `emerging`
(it may grow like any lineage) and joins "New this week" only through `also_new`. On the generated
60-night stream (5 runs) this and the weekday rule took steady topics' change flags from 2.7-3.9 to
1.5-2.4 per 100 topic-nights, and the weekly topic was never called new or emerging (1-3 times a run
before); the emerging topic's first flag (theme or topic) stayed within 2-4 nights.

The standard deviation is that of (tonight - baseline mean) when the topic's true rate has not changed
(`change_z`): tonight's noise variance + the mean of the baseline nights' noise variances / n, plus
the natural night-to-night variation of a true count, taken as Poisson overdispersed by
`DAY_TO_DAY_CV` (variance mu + (cv mu)^2, mu the baseline mean; for tonight and for the mean of n
baseline nights: times 1 + 1/n).

Why these constants (tests/publishing/test_timeline.py simulates them: Poisson true counts, Laplace noise of
scale 2-20, sizes 30-3000, 60 nights). Z = 3: a steady topic is flagged on under 1% of its nights
(5% allowed), Laplace's heavier tails included. DAY_TO_DAY_CV: with 0, a weekday swing of +-15% of a
3,000-conversation topic is flagged on 77% of nights; 0.06 brought that under 1% while a 30% step in
it was still flagged growing within 3 nights (100%; with 0.1, 19%). On the generated 60-night stream
of DP clusters (eval/utility/nightly_stream.py), though, a steady topic's cluster also gains and loses some of
its neighbours' conversations from night to night, and 0.10 with Z_EMERGING = 3 (instead of 0.06 and
2) cut steady topics' false flags from 5.0-5.4 to 2.4-3.7 per 100 topic-nights without delaying the
emerging topic's flag (its first night, `new`). The price: a 30% step of a very large topic is
flagged late, and a topic tripling in its first week is called `emerging` about 60% of the time (98% at
Z_EMERGING = 2; it is `new` on its first night either way). Both were chosen on that stream. A larger
DAY_TO_DAY_CV (0.15-0.20) would halve steady topics' growing flags on that stream, but a topic halving
from 200 to 100 would then be flagged shrinking within 2 nights in half the simulated seeds only.

**A night a lineage is missing** after having been present (it was not released) gets one entry with
null size, interval and share; later missing nights get none until it reappears. Its status says
whether missing is news (`missed_night_status`): a topic is released only when its noisy size reaches
the release threshold tau (the report's `config.min_cluster_size`; 0 for a report that does not state
it), so a topic hovering near tau misses nights by noise alone.

- `vanished`: its recent sizes (the mean of its last up to `BASELINE_NIGHTS` released nights) were so
  far above tau that tonight's size falling under it is more than `Z` standard deviations of the
  difference (the same standard deviation as `change_z`'s, tonight's noise included): as if released
  at tau, at most, it would have been `shrinking`. A change flag.
- `below threshold`: otherwise. Not a change: its true size may well be what it was; a quiet status
  that no alert list (`rising`) holds. On simulated steady topics of true size 27-40 against tau 25
  (Laplace noise of scale 5), counting every missed night as `vanished` flagged 16% of their nights;
  with `below threshold` they carry a change flag on 0.1% (tests/publishing/test_timeline.py).

**Only a topic named by its own DP votes is announced.** A night whose status would be `new`,
`emerging`, `growing` or `shrinking` is `unlabelled change` instead when that night's topic is not
labelled from its own DP keyword or category votes (its `label_source` is not one of
publishing.report.VOTE_SOURCES: its keywords are the ones nearest its DP centre, or it has none). Such a
topic is too thin or too mixed for its votes to say what it is, so a flag on it would send a reader to
a topic nobody can name; and its size moves most when DP k-means re-draws a miscellany. On the
real-text stream (eval/utility/real_stream.py, 5 runs) 22 of the 23 false flags of steady topics were
on such nights; on the generated stream, 5 of the 31 flags of the changing topics were, and neither the
emerging nor the fading topic's first flag moved (their themes flag first). What is new among them
shows in the themes (publishing/theme_timeline.py). A lineage whose latest night is not vote-labelled is not in
New this week either, unless `also_new` lists it.

`CHANGE_STATUSES` are the statuses that flag a change (`new`, `emerging`, `growing`, `shrinking`,
`vanished`); `first night`, `steady`, `unlabelled change` and `below threshold` are not.

**Weekly status** (`week` of each released night, `weekly` of the lineage as of its last released night):
the themes' weekly rule (publishing/theme_timeline.py; `weekly_status`, one implementation for both) on the
lineage's released sizes: `rising` / `falling` when the mean of its last `WEEK` released nights is more than
`Z` standard deviations above / below the mean of the up to `PRIOR_WEEKS` * `WEEK` released nights before
them (`weekly_z`: both means' noise and natural variation, and LINEAGE_DRIFT_CV of the size for the
cluster's drift from week to week), `steady` otherwise, `too few nights` before
`WEEK` + 1 released nights; a night it was not released has none. A slow riser never stands out from one
night's noise: at the nightly budget (Laplace noise of scale about 9 on a topic of 40 conversations) a
topic doubling over three weeks grows 3.4% a night, and on real logs one lineage grew from about 40 to 120
conversations over 21 nights and was `steady` every night (issue 59). A mean of 7 nights has about 1/sqrt(7) of one night's noise,
so the week shows it. The sizes are the released (noisy) ones: post-processing, no budget. On a generated
stream's counts with that noise (tests/publishing/test_timeline.py; 3 streams x 5 noise draws) a topic
doubling over nights 28-48 was first in "Rising" 5-19 nights after it began (with the drift allowance; 9-17
before it), its week never rising before; steady topics carried a flag (nightly or weekly) on 0.49 of 100 nights.
`rising` names a lineage released on the last night whose status is `growing` or `emerging` or whose week is
`rising`: the page's "Rising".

**New this week** (`new_this_week`): lineages first seen on one of the timeline's last `WEEK_NIGHTS`
nights and released on at least `MIN_RECENT_NIGHTS` of its last `RECENT_NIGHTS` nights, so a topic
released on one night only (a cluster that formed once, a re-found topic under a fresh id, a topic
near tau) is not announced. `build_timeline`'s `also_new` lists lineages that need not meet the
second condition (the hook for another reason to announce a topic, e.g. its theme rose).

**Label evidence.** Each released night keeps its topic's `label_evidence` (backends/label_evidence.py:
whether that night's label rested on the topic's own DP votes or was a guess from its centre; null for
a vanished night or a report written before it existed): a lineage's name is its latest night's, and a
topic named from its votes one night may be a guess the next.
"""

from __future__ import annotations

import math
from collections.abc import Collection

from core.dates import parse_date
from core.label_sources import VOTE_SOURCES
from publishing.lineage import split_parents
from publishing.report import noise_margin, shown_counts, size_noise_of

FIRST_NIGHT = "first night"
UNLABELLED_CHANGE = "unlabelled change"
STATUSES = (FIRST_NIGHT, "new", "emerging", "growing", "steady", "shrinking", UNLABELLED_CHANGE, "vanished",
            "below threshold")
# The statuses that flag a change; `first night`, `steady`, `unlabelled change` (a change of a topic not
# named by its own votes) and `below threshold` (a missed night within the noise of the release
# threshold) do not.
CHANGE_STATUSES = ("new", "emerging", "growing", "shrinking", "vanished")
# The released night's statuses that only a topic named by its own DP votes carries (module docstring).
LABELLED_CHANGES = ("new", "emerging", "growing", "shrinking")
# How many standard deviations a change must exceed to count (see the module docstring).
Z = 3.0
# Tonight is compared with the mean of at most this many of the lineage's previous released nights: a
# week, so a weekday pattern averages out and a change from last week is still visible.
BASELINE_NIGHTS = 7
# ...and only once it has at least this many: a DP cluster's first nights are its centre settling (on real
# text a cluster of 44 users took in a neighbour's and stood at 124 on its third night), not its topic's
# usage changing.
MIN_BASELINE_NIGHTS = 3
# A lineage can be `emerging` on its nights 2..EMERGING_NIGHTS (its first week), when it is more than
# Z_EMERGING standard deviations above its first night.
EMERGING_NIGHTS = 7
Z_EMERGING = 3.0
# Natural relative night-to-night variation of a topic's true count beyond Poisson (weekday effects,
# and a DP cluster's share of its neighbours' conversations moving a little as its centre moves).
# 0.10 and Z_EMERGING = 3: see the module docstring.
DAY_TO_DAY_CV = 0.10
# A growing or shrinking night is steady when within Z_WEEKDAY standard deviations of the mean of up to
# WEEKDAY_NIGHTS of the lineage's released nights on the same weekday (7, 14, ... days before): a weekly
# peak is not news. 2, not Z: a real step must not hide behind it, and with one or two same-weekday nights
# (the first weeks) a halving from 200 to 100 is only about 3 standard deviations from them.
WEEKDAY_NIGHTS = 4
Z_WEEKDAY = 2.0
# The weekly status (`weekly_status`; the themes', publishing/theme_timeline.py, and the lineages'): the mean
# of the last WEEK nights against the mean of the PRIOR_WEEKS * WEEK nights before them.
WEEK = 7
PRIOR_WEEKS = 4
WEEKLY_STATUSES = ("rising", "falling", "steady", "too few nights")
# A lineage's week also allows for its cluster's drift: the cluster is found anew every night from noisy
# centres, so the share of the same conversations it holds wanders by some percent from week to week, and that
# does not average out over a week's nights as the noise does. Without it, steady topics of the generated
# 60-night stream through the whole job had a week rising or falling on 19.8 of 100 nights (issue 59; their
# themes, fixed partitions, 0.09). Measured on that stream (docs/report.md, "Weekly status").
LINEAGE_DRIFT_CV = 0.10
# `new_this_week`: lineages first seen on one of the timeline's last this-many nights...
WEEK_NIGHTS = 7
# ...and released on at least MIN_RECENT_NIGHTS of its last RECENT_NIGHTS nights (no one-night blips).
RECENT_NIGHTS = 3
MIN_RECENT_NIGHTS = 2


def size_noise(report: dict) -> dict | None:
    """The `noise` entry of the report's cluster_sizes mechanism, or None (a non-DP baseline)."""
    return size_noise_of(report.get("privacy", {}))  # publishing.report reads it for the page too: one place knows the shape


def size_noise_std(report: dict) -> float:
    """Standard deviation of the noise on each released topic size; 0 for exact (non-DP) sizes."""
    noise = size_noise(report) or {}
    if "std" in noise or "sigma" in noise:
        return float(noise.get("std", noise.get("sigma")))
    if noise.get("kind") == "laplace" and "scale" in noise:
        return math.sqrt(2) * float(noise["scale"])
    return 0.0


def size_margin(report: dict) -> float:
    """Half-width of the 95% interval of a true size around its noisy size (0 without noise)."""
    return noise_margin(size_noise(report)) or 0.0


def release_threshold(report: dict) -> float:
    """The report's release threshold tau (`config.min_cluster_size`: a topic is released when its noisy
    size reaches it); 0 when the report does not state it (older reports)."""
    value = report.get("config", {}).get("min_cluster_size")
    if isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value) and value > 0:
        return float(value)
    return 0.0


def change_z(size: float, variance: float, baseline: list[tuple[float, float]],
             day_to_day_cv: float | None = None) -> float:
    """(size - mean of the baseline sizes) / its standard deviation under "nothing changed".

    `variance` is the noise variance of `size`; `baseline` holds (size, noise variance) of earlier nights.
    Under no change, each night's true count is a draw with mean mu and variance mu + (cv mu)^2 (Poisson,
    overdispersed), estimated from the baseline mean; the noises are independent of it and of each other."""
    if not baseline:
        raise ValueError("change_z needs at least one baseline night")
    cv = DAY_TO_DAY_CV if day_to_day_cv is None else day_to_day_cv
    n = len(baseline)
    mean = sum(s for s, _ in baseline) / n
    mu = max(mean, 0.0)
    natural = mu + (cv * mu) ** 2
    total = variance + sum(v for _, v in baseline) / n / n + natural * (1 + 1 / n)
    if total <= 0:  # exact sizes of a topic with no conversations: any change is real
        return 0.0 if size == mean else math.copysign(math.inf, size - mean)
    return (size - mean) / math.sqrt(total)


def night_status(size: float, variance: float, history: list[tuple[float, float]], age: int,
                 may_be_new: bool = True, same_weekday: list[tuple[float, float]] = ()) -> str:
    """The status of a released night. `history`: the lineage's earlier released nights, oldest first,
    as (size, noise variance); `age`: timeline nights since the lineage's first (0 on its first);
    `may_be_new`: False for a lineage first seen on the timeline's first night (nothing before it to be
    new against); `same_weekday`: those of its released nights 7, 14, ... days earlier (up to
    WEEKDAY_NIGHTS), which a growing or shrinking night must also differ from (a weekly pattern)."""
    if not history:
        return FIRST_NIGHT
    if may_be_new and len(history) == 1 and age < RECENT_NIGHTS:  # its second night, soon enough
        return "new"
    if may_be_new and 1 <= age < EMERGING_NIGHTS and change_z(size, variance, history[:1]) > Z_EMERGING:
        return "emerging"
    if len(history) < MIN_BASELINE_NIGHTS:
        return "steady"
    score = _weekly_pattern_aware(change_z(size, variance, history[-BASELINE_NIGHTS:]), size, variance,
                                  same_weekday)
    return "growing" if score > Z else "shrinking" if score < -Z else "steady"


def weekly_z(sizes: list[tuple[float, float]], drift_cv: float = 0.0) -> float:
    """(mean of the last WEEK nights - mean of up to PRIOR_WEEKS * WEEK nights before them) / its standard
    deviation when nothing changed. `sizes`: (size, noise variance), oldest first, more than WEEK of them.
    As change_z, but both sides are means of several nights: each side's noise variance and natural
    variation (Poisson, overdispersed by DAY_TO_DAY_CV) shrink with its number of nights. `drift_cv`: a
    week-to-week variation of the mean itself (LINEAGE_DRIFT_CV for a lineage), whole for the week and shrinking
    with the prior side's number of weeks."""
    week, before = sizes[-WEEK:], sizes[-WEEK * (PRIOR_WEEKS + 1):-WEEK]
    week_mean = sum(size for size, _ in week) / len(week)
    prior_mean = sum(size for size, _ in before) / len(before)
    mu = max(prior_mean, 0.0)
    natural = mu + (DAY_TO_DAY_CV * mu) ** 2
    variance = (sum(v for _, v in week) / len(week) ** 2 + sum(v for _, v in before) / len(before) ** 2
                + natural * (1 / len(week) + 1 / len(before)) + (drift_cv * mu) ** 2 * (1 + WEEK / len(before)))
    if variance <= 0:
        return 0.0 if week_mean == prior_mean else math.copysign(math.inf, week_mean - prior_mean)
    return (week_mean - prior_mean) / math.sqrt(variance)


def weekly_status(sizes: list[tuple[float, float]], drift_cv: float = 0.0) -> str:
    """The weekly status of a series whose nights, oldest first, are (size, noise variance): `rising` /
    `falling` when weekly_z is beyond Z, `steady` otherwise, `too few nights` before a full week and one
    night before it."""
    if len(sizes) < WEEK + 1:
        return "too few nights"
    score = weekly_z(sizes, drift_cv)
    return "rising" if score > Z else "falling" if score < -Z else "steady"


def weekly_summary(sizes: list[tuple[float, float]], drift_cv: float = 0.0) -> dict:
    """{"status", "week_mean", "prior_mean"} of a series of (size, noise variance), oldest first, as of its
    last night (the means rounded; None for a side with no night)."""
    week, before = sizes[-WEEK:], sizes[-WEEK * (PRIOR_WEEKS + 1):-WEEK]
    return {"status": weekly_status(sizes, drift_cv),
            "week_mean": round(sum(s for s, _ in week) / len(week), 2) if week else None,
            "prior_mean": round(sum(s for s, _ in before) / len(before), 2) if before else None}


def _weekly_pattern_aware(score: float, size: float, variance: float,
                          same_weekday: list[tuple[float, float]]) -> float:
    """`score`, unless tonight is close to the lineage's recent nights on the same weekday (within
    Z_WEEKDAY standard deviations of their mean): then 0. A night that repeats last week's peak or trough
    is the weekly pattern, not news; a real step differs from the same weekday too."""
    if not same_weekday or abs(score) <= Z:
        return score
    return 0.0 if abs(change_z(size, variance, same_weekday[-WEEKDAY_NIGHTS:])) < Z_WEEKDAY else score


def missed_night_status(variance: float, history: list[tuple[float, float]], threshold: float) -> str:
    """The status of the first night a lineage was not released: `vanished` when the mean of its last up to
    BASELINE_NIGHTS released sizes exceeds the release threshold by more than Z standard deviations of the
    difference (change_z with tonight's size at its largest possible value, the threshold: the drop is more
    than noise), else `below threshold`. `variance`: tonight's noise variance; `history` as night_status's."""
    if not history:
        raise ValueError("missed_night_status needs at least one released night")
    return "vanished" if change_z(threshold, variance, history[-BASELINE_NIGHTS:]) < -Z else "below threshold"


def _lineage_of(topic: dict, date: str) -> str:
    return str(topic["lineage"]) if topic.get("lineage") is not None else f"{date}#{topic['id']}"


def _night_topics(date: str, report: dict) -> dict[str, dict]:
    """The night's released topics by lineage; should a report hold a lineage twice, its largest topic."""
    topics = {}
    for topic in sorted(report.get("topics", []), key=lambda t: -(t.get("size") or 0)):
        topics.setdefault(_lineage_of(topic, date), topic)
    return topics


def build_timeline(runs: list[tuple[str, dict]], max_nights: int | None = None,
                   also_new: Collection[str] = ()) -> dict:
    """The timeline of released nights `runs` ((date, report), any order; of two reports of one date
    the later in the list wins). With `max_nights`, statuses are computed over every run given but only
    the last `max_nights` nights are returned: the earlier runs serve as the first nights' baselines.
    `also_new`: lineage ids that join `new_this_week` when first seen in the week even if not released on
    MIN_RECENT_NIGHTS of the last RECENT_NIGHTS nights (a hook: e.g. lineages whose theme rose).

    Returns {"nights": [dates], "lineages": [{"id", "name", "keywords", "split_from", "nights": [{"date", "size", "low",
    "high", "share", "status", "week", "label_evidence"}], "weekly": {"status", "week_mean", "prior_mean"}}],
    "new_this_week": [lineage ids], "rising": [lineage ids],
    "status_rule": {...}, "generated_from": [{"date", "run_id"}]} (the fixed themes' keys are added by
    publishing.theme_timeline.themes_part, the facets' by publishing.facet_timeline.facets_part). Lineages are ordered:
    released on the last night first, by size, then
    the vanished ones, most recently seen first."""
    by_date = {}
    for date, report in runs:
        by_date[date] = report
    dates = sorted(by_date)
    nights = []
    for date in dates:
        report = by_date[date]
        topics = _night_topics(date, report)
        nights.append({"date": date, "topics": topics, "variance": size_noise_std(report) ** 2,
                       "margin": size_margin(report), "threshold": release_threshold(report),
                       "total": sum(t.get("size") or 0 for t in topics.values()), "day": day_number(date)})

    first_seen: dict[str, int] = {}
    for index, night in enumerate(nights):
        for lineage in night["topics"]:
            first_seen.setdefault(lineage, index)

    split_from = split_parents([by_date[date] for date in dates])
    lineages = []
    for lineage, first in first_seen.items():
        entries, history, latest, last_index, present, released = [], [], None, first, False, []
        by_day: dict[int, tuple[float, float]] = {}  # the history by day number, for the weekday baseline
        for index in range(first, len(nights)):
            night = nights[index]
            topic = night["topics"].get(lineage)
            if topic is None:
                if present:
                    entries.append(_missed(night["date"], index,
                                           missed_night_status(night["variance"], history, night["threshold"])))
                present = False
                continue
            size = int(topic.get("size") or 0)
            status = night_status(size, night["variance"], history, index - first,
                                  may_be_new=first > 0 and lineage not in split_from,
                                  same_weekday=same_weekday_history(by_day, night["day"]))
            if status in LABELLED_CHANGES and not _named_by_votes(topic):
                status = UNLABELLED_CHANGE
            history.append((size, night["variance"]))
            entries.append({"date": night["date"], "size": size, "low": round(max(0.0, size - night["margin"]), 2),
                            "high": round(size + night["margin"], 2),
                            "share": round(size / night["total"], 6) if night["total"] else 0.0,
                            "status": status, "week": weekly_status(history, LINEAGE_DRIFT_CV),
                            "label_evidence": topic.get("label_evidence"), "_index": index})
            if night["day"] is not None:
                by_day[night["day"]] = (size, night["variance"])
            released.append(index)
            latest, last_index, present = topic, index, True
        lineages.append({"id": lineage, "name": latest.get("name", ""), "keywords": list(latest.get("keywords", [])),
                         "split_from": split_from.get(lineage), "nights": entries,
                         "weekly": weekly_summary(history, LINEAGE_DRIFT_CV),
                         "_first": first, "_last": last_index,
                         "_size": latest.get("size") or 0, "_named_by_votes": _named_by_votes(latest),
                         "_released": released})

    last = len(nights) - 1
    lineages.sort(key=lambda item: (item["_last"] != last, -item["_size"] if item["_last"] == last else -item["_last"],
                                    item["id"]))
    start = 0 if max_nights is None else max(0, len(nights) - max_nights)
    week_start = max(0, len(nights) - WEEK_NIGHTS)
    kept = []
    for item in lineages:
        entries = [{k: v for k, v in e.items() if k != "_index"} for e in item["nights"] if e["_index"] >= start]
        if entries:
            kept.append({"id": item["id"], "name": item["name"], "keywords": item["keywords"],
                         "split_from": item["split_from"], "nights": entries, "weekly": item["weekly"],
                         "_first": item["_first"], "_released": item["_released"],
                         "_named_by_votes": item["_named_by_votes"]})
    recent_start = max(0, len(nights) - RECENT_NIGHTS)
    new_this_week = [item["id"] for item in kept if _new_this_week(item, week_start, recent_start, also_new)]
    for item in kept:
        del item["_first"], item["_released"], item["_named_by_votes"]
    rising = [item["id"] for item in kept if _rising(item["nights"][-1])]
    return {
        "nights": [night["date"] for night in nights[start:]],
        "lineages": kept,
        "new_this_week": new_this_week,
        "rising": rising,
        "status_rule": status_rule(),
        "generated_from": [{"date": date, "run_id": by_date[date].get("config", {}).get("run_id")}
                           for date in dates[start:]],
    }


def day_number(date: str) -> int | None:
    """The date's day number, or None for a night keyed by something else (no weekday baseline then)."""
    try:
        return parse_date(date).toordinal()
    except ValueError:
        return None


def same_weekday_history(by_day: dict[int, tuple[float, float]], day: int | None) -> list[tuple[float, float]]:
    """The released nights 7, 14, ... days before `day` (up to WEEKDAY_NIGHTS), oldest first."""
    if day is None:
        return []
    return [by_day[day - 7 * weeks] for weeks in range(WEEKDAY_NIGHTS, 0, -1) if day - 7 * weeks in by_day]


def _new_this_week(item: dict, week_start: int, recent_start: int, also_new: Collection[str]) -> bool:
    """First seen in the week, and either listed in `also_new` or named by its votes on its latest night, not
    split from a known lineage and released on MIN_RECENT_NIGHTS of the last RECENT_NIGHTS nights (see
    build_timeline)."""
    if item["_first"] < week_start:
        return False
    return item["id"] in also_new or (item["_named_by_votes"] and item["split_from"] is None and
                                      sum(index >= recent_start for index in item["_released"]) >= MIN_RECENT_NIGHTS)


def _named_by_votes(topic: dict) -> bool:
    """Whether a released topic's label rests on its own DP votes (publishing.report.VOTE_SOURCES)."""
    return topic.get("label_source") in VOTE_SOURCES


def _rising(night: dict) -> bool:
    """Whether a lineage whose latest entry is `night` is "Rising": released that night and either growing
    or emerging, or its week rising (a slow riser no single night separates from the noise)."""
    return night["status"] in ("growing", "emerging") or night.get("week") == "rising"


def _missed(date: str, index: int, status: str) -> dict:
    """The entry of the first night a lineage was not released (`vanished` or `below threshold`)."""
    return {"date": date, "size": None, "low": None, "high": None, "share": None, "status": status,
            "week": None, "label_evidence": None, "_index": index}


def status_rule() -> dict:
    """The rule and its constants, as written into timeline.json so a reader need not find this module."""
    return {
        "z": Z, "z_emerging": Z_EMERGING, "baseline_nights": BASELINE_NIGHTS,
        "min_baseline_nights": MIN_BASELINE_NIGHTS, "emerging_nights": EMERGING_NIGHTS,
        "day_to_day_cv": DAY_TO_DAY_CV, "new_this_week_nights": WEEK_NIGHTS,
        "new_this_week_recent_nights": RECENT_NIGHTS, "new_this_week_min_recent_nights": MIN_RECENT_NIGHTS,
        "weekday_nights": WEEKDAY_NIGHTS, "z_weekday": Z_WEEKDAY, "change_statuses": list(CHANGE_STATUSES),
        "week_nights": WEEK, "prior_weeks": PRIOR_WEEKS, "week_flags": ["rising", "falling"],
        "lineage_drift_cv": LINEAGE_DRIFT_CV,
        "text": (f"first night: a lineage's first night, not yet a change. new: its second released night within "
                 f"{RECENT_NIGHTS} nights of its first, unless it split from a known lineage (its first centre close "
                 "to one released before it) or started on the timeline's first night. emerging: such a lineage's "
                 f"nights 2-{EMERGING_NIGHTS}, more than {Z_EMERGING:g} "
                 f"standard deviations above its first night. growing/shrinking: more than {Z:g} standard deviations above/below "
                 f"the mean of its previous up to {BASELINE_NIGHTS} released nights (once it has {MIN_BASELINE_NIGHTS}), "
                 f"unless within {Z_WEEKDAY:g} of the "
                 f"mean of its up to {WEEKDAY_NIGHTS} released nights on the same weekday (a weekly pattern). "
                 "steady: otherwise. unlabelled change: what would be new, emerging, growing or shrinking for a "
                 "topic whose label does not rest on its own DP votes (not a change flag: nothing says what it is). "
                 "On the first "
                 "night a lineage was not released: vanished when the mean of its previous up to "
                 f"{BASELINE_NIGHTS} released nights was more than {Z:g} standard deviations above the release "
                 "threshold (the run's minimum topic size), a real drop; below threshold otherwise, not a change: "
                 "its size may just have drawn low noise under the threshold. New this week: first seen in the last "
                 f"{WEEK_NIGHTS} nights, named by its own DP votes, not split from a known lineage and released on at "
                 f"least {MIN_RECENT_NIGHTS} of the last {RECENT_NIGHTS}. "
                 f"Week (each released night, as the themes'): rising/falling when the mean of the lineage's last {WEEK} "
                 f"released nights is more than {Z:g} standard deviations above/below the mean of the up to "
                 f"{WEEK * PRIOR_WEEKS} released nights before them (a mean of 7 nights has about 1/sqrt(7) of one "
                 "night's noise, so a slow riser that no single night shows is seen), the standard deviation also "
                 f"allowing {LINEAGE_DRIFT_CV:.0%} of the size for the cluster's drift from week to week; too few nights before "
                 f"{WEEK + 1} released nights. Rising: released on the last night and growing, emerging or its week "
                 "rising. "
                 "The standard deviation combines both nights' privacy noise and a "
                 f"true count's natural variation (Poisson, plus {DAY_TO_DAY_CV:.0%} of its size). Interval: 95% for "
                 "the true size from the noise drawn that night (Laplace: b ln 20; Gaussian: 1.96 sigma)."),
    }


ROW_COLUMNS = ("lineage_id", "name", "keywords", "date", "size", "low", "high", "share", "status", "kind")


def timeline_rows(timeline: dict) -> list[dict]:
    """Long format: one row per lineage and night it has an entry for, then one per theme and night
    (columns `ROW_COLUMNS`; `kind` says which: "topic" or "theme", and a theme's id is in `lineage_id`).
    Its counts are shown ones, clamped at 0 (publishing.report.shown_counts: timeline.csv and .parquet are
    what people open; timeline.json keeps the released values)."""
    topics = [{"lineage_id": lineage["id"], "name": lineage["name"], "keywords": "; ".join(lineage["keywords"]),
               "date": night["date"], "size": night["size"], "low": night["low"], "high": night["high"],
               "share": night["share"], "status": night["status"], "kind": "topic"}
              for lineage in timeline["lineages"] for night in lineage["nights"]]
    themes = [{"lineage_id": theme["id"], "name": theme["name"], "keywords": "", "date": night["date"],
               "size": round(night["size"]), "low": night["low"], "high": night["high"], "share": night["share"],
               "status": night["status"], "kind": "theme"}
              for theme in timeline.get("themes", []) for night in theme["nights"]]
    return [shown_counts(row) for row in topics + themes]

