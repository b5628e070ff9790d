"""The facets' answers night by night (report.json's `facets`, dp_ops/facets.py): each answer's noisy
size in users with its 95% interval, and its noisy share of the night's conversations with the share's
interval, as each night's report released them (nothing is recomputed). Post-processing of released
reports only.

A facet's answers are the same fixed public partition every night, so, as a theme, an answer needs no
lineage: a night whose report has no such facet (a run without --facets) is simply missing. Only the
overall release is followed; the topic x answer cells follow their topics in facets.csv
(publishing/facet_rows.py), which carries each cell's lineage.
"""

from __future__ import annotations

from publishing.theme_timeline import PartitionSeries

# The timeline page draws the answers whose noisy share reached this on one of the nights shown: the
# rest (a language of a user or two) are noise on a chart; timeline.json and facets.csv hold them all.
SHOWN_SHARE = 0.02
NIGHT_KEYS = ("size", "low", "high", "share", "share_low", "share_high")


def _sections(report: dict) -> dict:
    facets = report.get("facets") if isinstance(report, dict) else None
    return facets if isinstance(facets, dict) else {}


def _overall_variance(section: dict) -> float:
    """The noise variance of the facet's overall release (its section's sigma), 0 if it states none."""
    sigma = section.get("sigma")
    sigma = sigma.get("overall") if isinstance(sigma, dict) else sigma
    return float(sigma) ** 2 if isinstance(sigma, (int, float)) else 0.0


def facet_timeline(runs: list[tuple[str, dict]]) -> dict:
    """{facet: {"question", "answers": [{"answer", "label", "nights": [{"date", "size", "low", "high",
    "share", "share_low", "share_high", "status", "week"}], "weekly": {...}}]}} over `runs` ((date,
    report), oldest first, one a date): each night's overall row of the answer as its report has it,
    with the themes' nightly and weekly statuses (publishing.theme_timeline.PartitionSeries: an answer is a
    column of a fixed partition, as a theme is). Facets and answers in the latest
    report's order (one only older reports had comes after); a label is the latest report's."""
    timeline: dict[str, dict] = {}
    for date, report in runs:
        for facet, section in _sections(report).items():
            if not isinstance(section, dict) or not isinstance(section.get("overall"), list):
                continue
            item = timeline.setdefault(facet, {"question": "", "answers": {}})
            item["question"] = section.get("question", "")
            labels = section.get("labels") or {}
            variance = _overall_variance(section)
            for row in section["overall"]:
                answer = item["answers"].setdefault(row["answer"], {"answer": row["answer"], "nights": [],
                                                                    "_series": PartitionSeries()})
                answer["label"] = labels.get(row["answer"], row["answer"])
                night = {"date": date, **{key: row.get(key) for key in NIGHT_KEYS}}
                if isinstance(row.get("size"), (int, float)):  # a status needs a size
                    night.update(answer["_series"].add(date, float(row["size"]), variance))
                answer["nights"].append(night)
    for item in timeline.values():
        for answer in item["answers"].values():
            answer["weekly"] = answer.pop("_series").weekly()
    latest = _sections(runs[-1][1]) if runs else {}

    def order(names, first):
        return [name for name in first if name in names] + [name for name in names if name not in first]

    return {facet: {"question": timeline[facet]["question"],
                    "answers": [timeline[facet]["answers"][answer] for answer in order(
                        timeline[facet]["answers"], [row["answer"] for row in latest.get(facet, {}).get("overall", [])])]}
            for facet in order(timeline, list(latest))}


def facets_part(runs: list[tuple[str, dict]], shown: list[str]) -> dict:
    """timeline.json's "facets" key for `runs` ((date, report), oldest first), their nights limited
    to the dates `shown` (the timeline's: statuses are computed over every run, as the themes'); none
    when no shown night has facets."""
    shown_dates = set(shown)
    facets = facet_timeline(runs)
    for facet in facets.values():
        for answer in facet["answers"]:
            answer["nights"] = [night for night in answer["nights"] if night["date"] in shown_dates]
        facet["answers"] = [answer for answer in facet["answers"] if answer["nights"]]
    facets = {name: facet for name, facet in facets.items() if facet["answers"]}
    return {"facets": facets} if facets else {}


def shown_answers(facet: dict) -> list[dict]:
    """The answers the page draws: those whose noisy share reached SHOWN_SHARE on a night."""
    return [answer for answer in facet["answers"]
            if any((night["share"] or 0.0) >= SHOWN_SHARE for night in answer["nights"])]
