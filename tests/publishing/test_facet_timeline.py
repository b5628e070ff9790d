"""The facets' series on the timeline (publishing/facet_timeline.py): each answer's overall size, interval and
share night by night as the reports released them, in timeline.json and on timeline.html."""

from __future__ import annotations

import json
import os
import re

from dp_ops.facets import facet_columns, facet_section
from publishing.facet_timeline import SHOWN_SHARE, facet_timeline, facets_part, shown_answers
from publishing.timeline import build_timeline
from publishing.timeline_html import render_timeline_html
from tests.publishing.test_timeline import XSS_NAME, _date, _report, _topic, _write

LABELS = {"en": "English", "es": "Spanish", "de": "German", "other": "Another language"}


def _language(users: dict[str, float], labels=LABELS, sigma: float = 3.0) -> dict:
    """A language facet section made by the job's own facet_section: `users` per answer overall, one topic (id 0)."""
    columns = facet_columns(list(labels))
    overall = {(0, c): users.get(c, 0.0) for c in columns}
    return facet_section("Which language?", columns, overall, sigma, {(0, c): users.get(c, 0.0) / 2 for c in columns},
                         sigma, [0], labels)


def _runs(nights: int = 10, facets_from: int = 0) -> list[tuple[str, dict]]:
    """Nights of one topic; from `facets_from` on, a language facet whose Spanish share climbs."""
    runs = []
    for night in range(nights):
        report = _report(_date(night), [_topic("t", 300)])
        if night >= facets_from:
            report["facets"] = {"language": _language({"en": 200.0 - 5 * night, "es": 20.0 + 5 * night, "de": 8.0,
                                                       "other": 1.0})}
        runs.append((_date(night), report))
    return runs


def test_each_answers_nights_are_the_reports_rows_unchanged():
    runs = _runs(facets_from=3)
    series = facet_timeline(runs)
    assert list(series) == ["language"] and series["language"]["question"] == "Which language?"
    answers = series["language"]["answers"]
    assert [a["answer"] for a in answers] == ["en", "es", "de", "other", "unknown"]  # the facet's order
    assert answers[1]["label"] == "Spanish"
    for answer in answers:
        assert [n["date"] for n in answer["nights"]] == [_date(i) for i in range(3, 10)]  # nights without facets: missing
        for night, (date, report) in zip(answer["nights"], runs[3:]):
            row = next(r for r in report["facets"]["language"]["overall"] if r["answer"] == answer["answer"])
            assert {k: v for k, v in night.items() if k not in ("status", "week")} == {
                "date": date, **{k: row[k] for k in ("size", "low", "high", "share", "share_low", "share_high")}}
    spanish = [n["share"] for n in answers[1]["nights"]]
    assert spanish == sorted(spanish) and spanish[-1] > spanish[0]


def test_an_answer_carries_the_themes_statuses_computed_over_every_run():
    # Spanish climbs by 5 users a night against sigma 3: too slow for one night, but the week sees it;
    # German stays flat.
    runs = _runs(nights=12)
    answers = {a["answer"]: a for a in facet_timeline(runs)["language"]["answers"]}
    spanish, german = answers["es"], answers["de"]
    assert spanish["nights"][0]["status"] == "first night" and german["nights"][0]["status"] == "first night"
    assert {n["status"] for n in german["nights"][1:]} == {"steady"}
    assert german["weekly"]["status"] == "steady" and spanish["weekly"]["status"] == "rising"
    assert spanish["nights"][-1]["week"] == "rising" and spanish["nights"][0]["week"] == "too few nights"
    # The shown nights keep the statuses computed over every run (the first shown night is not a first night).
    part = facets_part(runs, [_date(i) for i in range(8, 12)])
    shown = next(a for a in part["facets"]["language"]["answers"] if a["answer"] == "es")
    assert shown["nights"][0]["status"] != "first night" and shown["weekly"] == spanish["weekly"]


def test_facets_part_keeps_the_shown_nights_and_is_empty_without_facets():
    runs = _runs()
    part = facets_part(runs, [_date(i) for i in range(6, 10)])
    assert [n["date"] for n in part["facets"]["language"]["answers"][0]["nights"]] == [_date(i) for i in range(6, 10)]
    assert facets_part(_runs(facets_from=20), [_date(i) for i in range(10)]) == {}
    assert facets_part(runs, []) == {}


def test_answers_follow_the_latest_reports_order_and_keep_an_answer_it_dropped():
    runs = _runs(nights=2)
    later = {"en": "English", "fr": "French", "other": "Another language"}
    runs.append((_date(2), {**_report(_date(2), [_topic("t", 300)]),
                            "facets": {"language": _language({"en": 100.0, "fr": 30.0}, later)}}))
    answers = facet_timeline(runs)["language"]["answers"]
    assert [a["answer"] for a in answers] == ["en", "fr", "other", "unknown", "es", "de"]
    assert len(answers[0]["nights"]) == 3 and len(answers[1]["nights"]) == 1 and len(answers[4]["nights"]) == 2


def test_the_page_shows_the_answers_above_the_minimum_share_with_a_band_and_escapes_labels():
    runs = _runs()
    labels = {**LABELS, "de": XSS_NAME}
    for _, report in runs:
        report["facets"]["language"]["labels"] = labels
    timeline = build_timeline(runs)
    timeline.update(facets_part(runs, timeline["nights"]))
    page = render_timeline_html(timeline)
    panel = page[page.index('<div class="panel" id="facets">'):page.index('<div class="panel" id="summary">')]
    facet = timeline["facets"]["language"]
    shown = shown_answers(facet)
    assert [a["answer"] for a in shown] == ["en", "es", "de"]  # other and unknown never reach SHOWN_SHARE
    assert all(n["share"] < SHOWN_SHARE for a in facet["answers"] if a not in shown for n in a["nights"])
    assert re.findall(r'<tr data-answer="([^"]+)">', panel) == ["en", "es", "de"]
    assert "2 more answers under 2% every night" in panel
    spanish = panel[panel.index('<tr data-answer="es">'):]
    spanish = spanish[:spanish.index("</tr>")]
    last = facet["answers"][1]["nights"][-1]
    assert "Spanish (es)" in spanish and _date(9) in spanish
    assert f"{100 * last['share']:.1f}%" in spanish and f"{last['low']:.0f} to {last['high']:.0f}" in spanish
    assert '<polygon class="band"' in spanish and '<polyline class="size-line"' in spanish
    assert len(re.search(r'<polyline class="size-line" points="([^"]+)"', spanish).group(1).split()) == 10
    assert "<script>window" not in page and "&lt;script&gt;window.__xss = 1&lt;/script&gt;" in panel
    assert "DP estimate" in panel and "95% interval" in panel


def test_a_single_night_is_drawn_as_its_interval_and_no_facets_no_panel():
    runs = _runs(nights=1)
    timeline = {**build_timeline(runs), **facets_part(runs, [_date(0)])}
    page = render_timeline_html(timeline)
    assert 'id="facets"' in page and '<line class="band-bar"' in page and '<polygon class="band"' not in page
    assert 'id="facets"' not in render_timeline_html(build_timeline(_runs(facets_from=5)[:3]))


def test_write_timeline_adds_the_facets_to_timeline_json_and_html(tmp_path):
    from transforms.write_timeline import write_timeline
    output = str(tmp_path / "out")
    entries = []
    for date, report in _runs(nights=4):
        path = f"dt={date}/run={report['config']['run_id']}"
        _write(os.path.join(output, path, "release", "report.json"), report)
        entries.append({"run_id": report["config"]["run_id"], "date": date, "path": path, "status": "committed"})
    _write(os.path.join(output, "index.json"), {"runs": entries})
    result = write_timeline(output)
    timeline = json.load(open(result["files"]["json"]))
    assert [n["date"] for n in timeline["facets"]["language"]["answers"][1]["nights"]] == [_date(i) for i in range(4)]
    assert 'id="facets"' in open(result["files"]["html"]).read()
    assert os.path.exists(result["files"]["facets_csv"])
