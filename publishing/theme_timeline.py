"""The fixed themes' trends night by night (report.json's `themes`, dp_ops/theme_histogram.py): each
theme's noisy size with its 95% interval, its share, a nightly status and a weekly one. Post-processing
of released reports only.

A theme is the same public partition every night, so its nights need no lineage: a theme absent from a
report (a night run without --themes) is simply missing that night.

- **Nightly status**, as a topic lineage's (publishing/timeline.py `night_status`, the same Z and
  day-to-day variation): `growing`/`shrinking` when tonight's size is more than Z standard deviations
  above/below the mean of the theme's previous up to BASELINE_NIGHTS nights, else `steady`; its first
  night in the timeline is `first night` (a fixed theme is never "new").
- **Weekly status**: the mean of the last WEEK nights against the mean of the PRIOR_WEEKS * WEEK nights
  before them: the mean of 7 nights has about
  sqrt(7) times less noise than one night, so a slow riser that no single night separates from the
  noise shows here. `rising` / `falling` beyond Z, `steady` otherwise, and `too few nights` until the
  theme has a full week and at least one night before it. A weekly pattern (a theme larger on one
  weekday) moves both means alike and is not flagged. Both sides' noise and natural variation are those
  of a mean of their nights (publishing.timeline `weekly_z`; topic lineages get the same weekly status).
"""

from __future__ import annotations

from publishing.timeline import (  # the weekly rule (weekly_status) is the lineages' too: one implementation
    BASELINE_NIGHTS,
    EMERGING_NIGHTS,
    FIRST_NIGHT,
    PRIOR_WEEKS,
    WEEK,
    Z,
    day_number,
    night_status,
    same_weekday_history,
    weekly_status,
    weekly_summary,
)

# At most this many of tonight's k-means seeds go to risen themes (themes_to_seed): the other slots keep
# last night's topics and the fresh seeds.
MAX_THEME_SEEDS = 2


def _themes(report: dict) -> list[dict] | None:
    section = report.get("themes") if isinstance(report, dict) else None
    themes = section.get("themes") if isinstance(section, dict) else None
    return themes if isinstance(themes, list) else None


def _variance(report: dict) -> float:
    sigma = report["themes"].get("sigma", 0.0)
    return float(sigma) ** 2 if isinstance(sigma, (int, float)) else 0.0


class PartitionSeries:
    """One column of a fixed public partition (a theme, a facet's answer) night by night: each night's
    nightly status (`first night`, then growing/shrinking/steady; a fixed column is never new nor
    emerging) and the weekly status as of that night."""

    def __init__(self):
        self._history: list[tuple[float, float]] = []
        self._by_day: dict[int, tuple[float, float]] = {}

    def add(self, date: str, size: float, variance: float) -> dict:
        """Tonight's {"status", "week"}; `variance`: tonight's noise variance."""
        day = day_number(date)
        status = FIRST_NIGHT if not self._history else night_status(
            size, variance, self._history, EMERGING_NIGHTS, same_weekday=same_weekday_history(self._by_day, day))
        self._history.append((size, variance))
        if day is not None:
            self._by_day[day] = (size, variance)
        return {"status": status, "week": weekly_status(self._history)}

    def weekly(self) -> dict:
        """{"status", "week_mean", "prior_mean"} as of the last night added."""
        return weekly_summary(self._history)


def theme_timeline(runs: list[tuple[str, dict]]) -> list[dict]:
    """[{"id", "name", "kind", "sensitive", "nights": [{"date", "size", "low", "high", "share", "status",
    "week"}], "weekly": {"status", "week_mean", "prior_mean"}}] over `runs` (a night's "week": the weekly
    status as of that night; "weekly": as of the last) ((date, report), oldest first, one a
    date), in the order of the latest report's themes; [] when no report has themes."""
    series: dict[str, dict] = {}
    for date, report in runs:
        themes = _themes(report)
        if themes is None:
            continue
        variance = _variance(report)
        for theme in themes:
            if not (isinstance(theme, dict) and isinstance(theme.get("id"), str)
                    and isinstance(theme.get("size"), (int, float))):
                continue
            item = series.setdefault(theme["id"], {"id": theme["id"], "nights": [], "_series": PartitionSeries()})
            item.update(name=theme.get("name", theme["id"]), kind=theme.get("kind"), sensitive=bool(theme.get("sensitive")))
            size = float(theme["size"])
            item["nights"].append({"date": date, "size": size, "low": theme.get("low"), "high": theme.get("high"),
                                   "share": theme.get("share"), **item["_series"].add(date, size, variance)})
    timeline = []
    for item in series.values():
        item["weekly"] = item.pop("_series").weekly()
        timeline.append(item)
    return timeline


def themes_part(runs: list[tuple[str, dict]], shown: list[str]) -> dict:
    """timeline.json's themes keys ("themes", "rising_themes", "theme_rule") for `runs` ((date, report),
    oldest first), their nights limited to the dates `shown` (the timeline's: statuses are computed over
    every run); none when no report has themes."""
    themes = theme_timeline(runs)
    if not themes:
        return {}
    rising = rising_themes(themes)
    shown_dates = set(shown)
    for theme in themes:
        theme["nights"] = [night for night in theme["nights"] if night["date"] in shown_dates]
    return {"themes": themes, "rising_themes": rising, "theme_rule": theme_rule()}


def lineages_of_themes(report: dict, themes: list[str]) -> list[str]:
    """The lineages of `report`'s topics whose own DP votes support one of `themes` (their
    `voted_category`): a topic of a theme that rose joins "New this week" from its first night."""
    wanted = set(themes)
    return [topic["lineage"] for topic in report.get("topics", [])
            if isinstance(topic, dict) and topic.get("voted_category") in wanted and isinstance(topic.get("lineage"), str)]


def themes_to_seed(reports: list[dict], limit: int = MAX_THEME_SEEDS) -> tuple[str, ...]:
    """The themes (at most `limit`, in the themes' order) that rose as of the latest of `reports` (released
    nights, oldest first: `rising_themes`) while none of its topics' own DP votes supports them: a rise no
    released topic is about. Tonight's DP k-means starts a centre at each one's public anchor (issue 40's
    "topics split when a theme rises inside them"); post-processing of released themes. Never the rest
    theme, which has no anchor."""
    runs = [(report["config"]["date"], report) for report in reports
            if isinstance(report, dict) and isinstance(report.get("config"), dict)
            and isinstance(report["config"].get("date"), str)]
    themes = theme_timeline(runs)
    if not themes:
        return ()
    covered = {topic.get("voted_category") for topic in runs[-1][1].get("topics", []) if isinstance(topic, dict)}
    kinds = {theme["id"]: theme.get("kind") for theme in themes}
    return tuple(theme for theme in rising_themes(themes) if kinds[theme] == "category" and theme not in covered)[:limit]


def rising_themes(themes: list[dict]) -> list[str]:
    """The themes whose week rose, or whose last night grew: what "Rising" leads with."""
    return [t["id"] for t in themes
            if t["weekly"]["status"] == "rising" or (t["nights"] and t["nights"][-1]["status"] == "growing")]


def theme_rule() -> dict:
    """The themes' rule, as written into timeline.json."""
    return {"week_nights": WEEK, "prior_weeks": PRIOR_WEEKS, "z": Z, "baseline_nights": BASELINE_NIGHTS,
            "text": (f"Each theme is the same fixed public partition every night. Nightly: growing/shrinking when "
                     f"a night is more than {Z:g} standard deviations from the mean of the theme's previous up to "
                     f"{BASELINE_NIGHTS} nights. Weekly: rising/falling when the mean of the last {WEEK} nights is "
                     f"more than {Z:g} standard deviations from the mean of the {PRIOR_WEEKS * WEEK} nights before "
                     "them (the week's mean has about 1/sqrt(7) of one night's noise).")}
