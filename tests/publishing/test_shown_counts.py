"""Issue 59 item 6: pages and tables show noisy counts clamped at 0 (publishing.report.shown_count), while
report.json and timeline.json keep the released values, and report.json says so."""

import re

from dp_ops.facets import facet_columns, facet_section
from publishing.facet_rows import facet_rows
from publishing.report import NOISY_COUNTS_NOTE, ReleasePrivacy, build_report, shown_count, shown_counts
from publishing.report_html import render_report
from publishing.theme_timeline import themes_part
from publishing.timeline import build_timeline, timeline_rows
from publishing.timeline_html import render_timeline_html
from tests.support.report_fixtures import sample_report

SIGMA = 3.0


def _facets(topic_ids) -> dict:
    """A language facet whose Spanish answer drew noise under 0 overall (-2.4) and in topic 0 (-7.3: its
    interval's high end is under 0 too)."""
    columns = facet_columns(["en", "es"])
    overall = {(0, "en"): 40.2, (0, "es"): -2.4, (0, "unknown"): 0.6}
    by_topic = {(t, c): v for t in topic_ids for c, v in zip(columns, (20.0, -7.3 if t == 0 else 3.1, 0.4))}
    return {"language": facet_section("Which language?", columns, overall, SIGMA, by_topic, SIGMA, list(topic_ids))}


def _report() -> dict:
    report = sample_report()
    report["facets"] = _facets([t["id"] for t in report["topics"]])
    return report


def test_a_shown_count_is_clamped_at_0_and_keeps_its_type():
    assert [shown_count(v) for v in (-2.4, -3, 0, 0.0, 5, 7.25, None)] == [0.0, 0, 0, 0.0, 5, 7.25, None]
    assert isinstance(shown_count(-3), int) and isinstance(shown_count(-2.4), float)
    row = {"answer": "es", "size": -7.3, "low": 0.0, "high": -1.42, "share": 0.0, "share_low": 0.0}
    assert shown_counts(row) == {**row, "size": 0.0, "high": 0.0}


def test_report_json_keeps_the_released_values_and_says_the_displays_clamp_them():
    facets = _facets([0])
    report = build_report({}, {}, ReleasePrivacy([], 5), {}, sections={"facets": facets})
    rows = {row["answer"]: row for row in report["facets"]["language"]["overall"]}
    assert rows["es"]["size"] == -2.4 and rows["es"]["high"] < 4  # as released: -2.4 + 1.96 x 3
    assert report["facets"]["language"]["by_topic"]["0"][1]["high"] < 0  # -7.3 + 5.88: the interval as released
    assert report["noisy_counts"] == NOISY_COUNTS_NOTE and "clamped at 0" in NOISY_COUNTS_NOTE
    assert "below 0" in NOISY_COUNTS_NOTE and "report.html" in NOISY_COUNTS_NOTE


def test_the_report_page_shows_no_negative_count():
    report = _report()
    page = render_report(report)
    section = page[page.index('<section id="facets">'):page.index('<section id="ranking">')]
    spanish = re.search(r'<tr data-answer="es">(.*?)</tr>', section).group(1)
    cells = re.findall(r"<td[^>]*>(.*?)</td>", spanish)
    assert cells[1:3] == ["0", "0 to 3"]  # -2.4 [0, 3.48] as released
    english = re.findall(r"<td[^>]*>(.*?)</td>", re.search(r'<tr data-answer="en">(.*?)</tr>', section).group(1))
    assert english[1:3] == ["40", "34 to 46"]  # a positive count as it was
    visible = re.sub(r"<script.*?</script>", "", page, flags=re.S)
    assert not re.search(r"(?<![\w.-])-\d", re.sub(r"<[^>]*>", " ", visible)), "a negative number is shown"


def _theme_runs(nights: int = 9):
    """A theme no user chose: its released size is the noise alone, below 0 on its last night."""
    runs = []
    for night in range(nights):
        value = -1.6 if night == nights - 1 else (-0.8 if night % 2 else 0.9)
        themes = [{"id": "Travel", "name": "Travel", "kind": "category", "sensitive": False, "size": 30.0 + night,
                   "low": 24.0 + night, "high": 36.0 + night, "share": 1.0},
                  {"id": "Poetry", "name": "Poetry", "kind": "category", "sensitive": False, "size": value,
                   "low": 0.0, "high": value + 5.88, "share": 0.0}]
        runs.append((f"2026-03-{night + 1:02d}", {"topics": [], "themes": {"sigma": SIGMA, "themes": themes},
                                                    "facets": _facets([])}))
    return runs


def test_the_timeline_page_and_its_tables_clamp_while_timeline_json_keeps_the_values():
    runs = _theme_runs()
    timeline = build_timeline(runs)
    timeline.update(themes_part(runs, timeline["nights"]))
    poetry = next(t for t in timeline["themes"] if t["id"] == "Poetry")
    assert poetry["nights"][-1]["size"] == -1.6  # timeline.json: as released
    page = render_timeline_html(timeline)
    row = re.search(r'<tr data-theme="Poetry">(.*?)</tr>', page, re.S).group(1)
    assert re.findall(r"<td>(.*?)</td>", row)[1:3] == ["0", "0 to 4"]
    assert not re.search(r"(?<![\w.-])-\d", re.sub(r"<[^>]*>", " ", page)), "a negative number is shown"
    rows = [r for r in timeline_rows(timeline) if r["lineage_id"] == "Poetry"]
    assert rows and min(r["size"] for r in rows) == 0 and all(r["size"] >= 0 for r in rows)
    facets = facet_rows("2026-03-09", runs[-1][1])
    assert [(r["answer"], r["size"]) for r in facets] == [("en", 40.2), ("es", 0.0), ("unknown", 0.6)]
