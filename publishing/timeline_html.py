"""timeline.json -> timeline.html: a self-contained page (inline CSS and static SVG, no script, no network).

Rendered by Jinja2 from publishing/templates/timeline.html.j2 (which includes the report page's look,
report.css.j2) with autoescaping on for every value: topic names and keywords may come from a model.
The chart geometry is computed here so the template only places it. It shows released data and its
post-processing only. A status's CSS class is `status_class` of it (`below threshold` ->
`st-below-threshold`); `below threshold` is drawn as a quiet status, apart from the change flags
(publishing.timeline.CHANGE_STATUSES).
"""

from __future__ import annotations

import functools
import math
import re

from publishing.facet_timeline import SHOWN_SHARE, shown_answers
from publishing.report import shown_count, shown_counts
from publishing.report_html import answer_label, template_environment
from publishing.timeline import CHANGE_STATUSES, PRIOR_WEEKS, STATUSES, WEEK, status_rule

CHART_WIDTH, CHART_HEIGHT = 960, 150
_LEFT, _RIGHT, _TOP, _BOTTOM = 48, 14, 10, 24
STATUS_COLOURS = {"first night": "#8a94a6", "new": "#4f6bd8", "emerging": "#8e44ad", "growing": "#2e9e5b", "steady": "#8a94a6",
                  "shrinking": "#d0553f", "unlabelled change": "#b3a48a", "vanished": "#1d2433",
                  "below threshold": "#c3c9d4"}
# What a missed night's marker says (the status of a night without a size).
MISSED_TITLES = {"vanished": "not released: its recent sizes were far above the release threshold (vanished)",
                 "below threshold": "not released: within the noise of the release threshold (below threshold)"}


def status_class(status: str) -> str:
    """The CSS class of a status: `st-` and its words joined by hyphens."""
    return "st-" + re.sub(r"[^a-z0-9]+", "-", str(status).lower()).strip("-")


@functools.cache
def _template():
    return template_environment(status_class=status_class).get_template("timeline.html.j2")


def _nice_ceiling(value: float) -> float:
    """The smallest of 1, 2, 2.5, 5 x 10^k at or above `value`: round axis labels."""
    if value <= 0:
        return 1.0
    power = 10 ** math.floor(math.log10(value))
    return next(step * power for step in (1, 2, 2.5, 5, 10) if step * power >= value)


def _f(value: float) -> str:
    return f"{value:.1f}"


def _chart(lineage: dict, nights: list[str]) -> dict:
    """SVG geometry of one lineage: the band (95% interval) and line per run of consecutive released
    nights, a marker per night coloured by status, and axes. The x axis is the timeline's nights, the
    same for every lineage, so charts line up."""
    position = {date: i for i, date in enumerate(nights)}
    plot_width, plot_height = CHART_WIDTH - _LEFT - _RIGHT, CHART_HEIGHT - _TOP - _BOTTOM
    top = _nice_ceiling(max([e["high"] for e in lineage["nights"] if e["high"] is not None] or [1.0]))

    def x(date: str) -> float:
        return _LEFT + (plot_width * position[date] / (len(nights) - 1) if len(nights) > 1 else plot_width / 2)

    def y(value: float) -> float:
        return _TOP + plot_height * (1 - value / top)

    segments, current, previous = [], [], None
    for entry in lineage["nights"]:
        if entry["size"] is None or (previous is not None and position[entry["date"]] != position[previous] + 1):
            if current:
                segments.append(current)
            current = []
        if entry["size"] is not None:
            current.append(entry)
        previous = entry["date"]
    if current:
        segments.append(current)

    bands, lines, bars = [], [], []
    for segment in segments:
        if len(segment) == 1:  # one night alone: its interval as a bar
            e = segment[0]
            bars.append({"x": _f(x(e["date"])), "y1": _f(y(e["low"])), "y2": _f(y(e["high"]))})
            continue
        upper = [f"{_f(x(e['date']))},{_f(y(e['high']))}" for e in segment]
        lower = [f"{_f(x(e['date']))},{_f(y(e['low']))}" for e in reversed(segment)]
        bands.append(" ".join(upper + lower))
        lines.append(" ".join(f"{_f(x(e['date']))},{_f(y(e['size']))}" for e in segment))
    markers = []
    for entry in lineage["nights"]:
        if entry["size"] is None:
            status = entry["status"] if entry["status"] in MISSED_TITLES else "vanished"
            title = f"{entry['date']}: {MISSED_TITLES[status]}"
            markers.append({"x": _f(x(entry["date"])), "y": _f(y(0)), "status": status, "title": title})
        else:
            title = (f"{entry['date']}: {entry['size']} conversations (95%: {entry['low']:.0f} to {entry['high']:.0f}), "
                     f"{entry['status']}")
            markers.append({"x": _f(x(entry["date"])), "y": _f(y(entry["size"])), "status": entry["status"],
                            "title": title})
    y_ticks = [{"y": _f(y(v)), "label": f"{v:g}"} for v in (0, top / 2, top)]
    label_nights = nights if len(nights) <= 2 else [nights[0], nights[len(nights) // 2], nights[-1]]
    x_ticks = [{"x": _f(x(d)), "label": d, "anchor": "start" if i == 0 and len(label_nights) > 1 else
                "end" if i == len(label_nights) - 1 and len(label_nights) > 1 else "middle"}
               for i, d in enumerate(label_nights)]
    return {"width": CHART_WIDTH, "height": CHART_HEIGHT, "left": _LEFT, "right": CHART_WIDTH - _RIGHT,
            "bottom": _f(y(0)), "top": _TOP, "bands": bands, "lines": lines, "bars": bars, "markers": markers,
            "y_ticks": y_ticks, "x_ticks": x_ticks}


SPARK_WIDTH, SPARK_HEIGHT = 240, 36


def _share_sparkline(answer: dict, nights: list[str]) -> dict:
    """A facet answer's noisy share across the timeline's nights (publishing/facet_timeline.py): the band is
    the share's 95% interval, the line the share, on the same x axis as the lineages' charts; its y axis
    runs from 0 to a round ceiling of its highest interval, so a 5% answer's changes are visible."""
    released = [n for n in answer["nights"] if n["share"] is not None and n["date"] in nights]
    position = {date: i for i, date in enumerate(nights)}
    top = _nice_ceiling(max(n["share_high"] if n["share_high"] is not None else n["share"] for n in released))

    def x(date: str) -> float:
        return 2 + ((SPARK_WIDTH - 4) * position[date] / (len(nights) - 1) if len(nights) > 1 else (SPARK_WIDTH - 4) / 2)

    def y(value: float) -> float:
        return 2 + (SPARK_HEIGHT - 4) * (1 - (value or 0.0) / top)

    band = [f"{_f(x(n['date']))},{_f(y(n['share_high']))}" for n in released] + [
        f"{_f(x(n['date']))},{_f(y(n['share_low']))}" for n in reversed(released)]
    only = released[0]  # one night alone: its interval as a bar, as the lineages' charts draw it
    return {"width": SPARK_WIDTH, "height": SPARK_HEIGHT, "band": " ".join(band),
            "line": " ".join(f"{_f(x(n['date']))},{_f(y(n['share']))}" for n in released),
            "bar": None if len(released) > 1 else {"x": _f(x(only["date"])), "y1": _f(y(only["share_low"])),
                                                   "y2": _f(y(only["share_high"]))},
            "scale": f"0 to {100 * top:g}%"}


def _facets(timeline: dict) -> list[dict]:
    """The facets panel: per facet, its shown answers (publishing.facet_timeline.shown_answers), each with its
    latest night and a sparkline of its share."""
    nights = timeline.get("nights", [])
    facets = []
    for name, facet in (timeline.get("facets") or {}).items():
        answers = [{**answer, "shown_label": answer_label(answer["label"], answer["answer"]),
                    "latest": shown_counts(answer["nights"][-1]), "spark": _share_sparkline(answer, nights)}
                   for answer in shown_answers(facet) if any(n["date"] in nights for n in answer["nights"])]
        if answers:
            facets.append({"name": name, "question": facet["question"], "answers": answers,
                           "hidden": len(facet["answers"]) - len(answers)})
    return facets


def _shown_weekly(weekly: dict) -> dict:
    """A weekly status with its two means of noisy sizes as shown counts (publishing.report.shown_count)."""
    return {**weekly, **{key: shown_count(weekly.get(key)) for key in ("week_mean", "prior_mean")}}


def _lineage_week(lineage: dict) -> str | None:
    """What a lineage's weekly status says (publishing.timeline.weekly_summary, as of its last released night),
    None before it has a full week: "week: rising (74 a night over its last 7 released nights against 49 over
    the 28 before)"."""
    weekly = lineage.get("weekly") or {}
    if weekly.get("status") in (None, "too few nights") or weekly.get("prior_mean") is None:
        return None
    shown = _shown_weekly(weekly)
    return (f"week: {weekly['status']} ({shown['week_mean']:g} a night over its last {WEEK} released nights against "
            f"{shown['prior_mean']:g} over the up to {WEEK * PRIOR_WEEKS} before)")


def render_timeline_html(timeline: dict) -> str:
    """The timeline page for a timeline dict (publishing.timeline.build_timeline)."""
    nights = timeline.get("nights", [])
    lineages = []
    for number, lineage in enumerate(timeline.get("lineages", [])):
        released = [e for e in lineage["nights"] if e["size"] is not None]
        lineages.append({**lineage, "anchor": f"lineage-{number}", "chart": _chart(lineage, nights),
                         "latest": lineage["nights"][-1], "first_date": lineage["nights"][0]["date"],
                         "released_nights": len(released), "week_rising": lineage["nights"][-1].get("week") == "rising",
                         "week_text": _lineage_week(lineage)})
    by_id = {lineage["id"]: lineage for lineage in lineages}
    for lineage in lineages:  # a parent outside the nights shown is named by its id
        parent = lineage.get("split_from")
        lineage["split_from_name"] = by_id[parent]["name"] if parent in by_id else parent
    # The fixed themes lead the page (publishing/theme_timeline.py): each with its latest night, its counts
    # clamped at 0 as every shown count is (a theme nobody voted for draws noise below 0 half the time).
    themes = [{**theme, "latest": shown_counts(theme["nights"][-1]), "weekly": _shown_weekly(theme["weekly"])}
              for theme in timeline.get("themes", []) if theme["nights"]]
    theme_by_id = {theme["id"]: theme for theme in themes}
    return _template().render(
        themes=themes, rising_themes=[theme_by_id[i] for i in timeline.get("rising_themes", []) if i in theme_by_id],
        theme_rule=timeline.get("theme_rule"),
        facets=_facets(timeline), facet_min_share=f"{100 * SHOWN_SHARE:g}%",
        nights=nights, lineages=lineages,
        new_this_week=[by_id[i] for i in timeline.get("new_this_week", []) if i in by_id],
        rising=[by_id[i] for i in timeline.get("rising", []) if i in by_id],
        rule=timeline.get("status_rule") or status_rule(), week_nights=WEEK, prior_nights=WEEK * PRIOR_WEEKS,
        statuses=STATUSES, colours=STATUS_COLOURS,
        change_statuses=[s for s in STATUSES if s in CHANGE_STATUSES],
        quiet_statuses=[s for s in STATUSES if s not in CHANGE_STATUSES])
