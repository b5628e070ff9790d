"""timeline.html in a real headless browser (Debian's chromium, as in tests/publishing/test_report_browser.py,
whose module-scoped `browser` fixture and helpers this imports): it loads without console errors, draws
one chart per lineage, lists the new and rising topics, and shows a script-like name as text without
running it. The screenshot goes to the test's tmp_path and out/screenshots/ (git-ignored)."""

import os

import pytest

from publishing.timeline import build_timeline
from publishing.timeline_html import render_timeline_html
from tests.publishing.test_report_browser import CHROMEDRIVER, CHROMIUM, XSS_NAME, _errors, _open, _screenshot, browser  # noqa: F401
from tests.publishing.test_timeline import _date, _report, _topic

pytestmark = [
    pytest.mark.browser,
    pytest.mark.skipif(not (os.path.exists(CHROMIUM) and os.path.exists(CHROMEDRIVER)),
                       reason="Debian chromium + chromium-driver not installed (.ci/run installs them)"),
]


def _timeline() -> dict:
    """Fourteen nights: two steady topics, one named like a script, one that vanishes for good, and
    one that appears three nights before the end and triples."""
    runs = []
    for night in range(14):
        topics = [_topic("steady", 400 + (night % 3) * 5, name="Programming and software: python",
                         keywords=["python", "unit testing"], topic_id=0),
                  _topic("xss", 150, name=XSS_NAME, keywords=["<b>bold</b>"], topic_id=1)]
        if night < 8:
            topics.append(_topic("gone", 90, name="Travel: visas", keywords=["visa"], topic_id=2))
        if night >= 11:
            topics.append(_topic("fresh", 40 + 40 * (night - 11), name="Health and wellbeing: insomnia",
                                 keywords=["insomnia", "sleep"], topic_id=3))
        runs.append((_date(night), _report(_date(night), topics)))
    return build_timeline(runs)


def test_timeline_page_renders_charts_lists_and_escapes_names(browser, tmp_path):  # noqa: F811
    from selenium.webdriver.common.by import By
    timeline = _timeline()
    page = tmp_path / "timeline.html"
    page.write_text(render_timeline_html(timeline), encoding="utf-8")
    _open(browser, page)

    assert _errors(browser) == []
    assert browser.execute_script("return window.__xss === undefined")

    charts = browser.find_elements(By.CSS_SELECTOR, "article.lineage svg.timeline-chart")
    assert len(charts) == len(timeline["lineages"]) == 4
    for chart, lineage in zip(charts, timeline["lineages"]):
        assert chart.size["width"] > 0 and chart.size["height"] > 0
        markers = chart.find_elements(By.CSS_SELECTOR, "circle.marker")
        assert [m.get_attribute("data-status") for m in markers] == [n["status"] for n in lineage["nights"]]
        assert all(m.size["width"] > 0 for m in markers)
        released = [n for n in lineage["nights"] if n["size"] is not None]
        drawn = chart.find_elements(By.CSS_SELECTOR, "polygon.band, line.band-bar")
        assert drawn and all(band.size["height"] > 0 for band in drawn)  # the 95% interval is shaded
        if len(released) > 1:
            assert chart.find_elements(By.CSS_SELECTOR, "polyline.size-line")

    new_items = browser.find_elements(By.CSS_SELECTOR, "#new-this-week li")
    assert [item.find_element(By.TAG_NAME, "a").text for item in new_items] == ["Health and wellbeing: insomnia"]
    rising = browser.find_element(By.ID, "rising").text
    assert "Health and wellbeing: insomnia" in rising and "emerging" in rising

    (xss_article,) = [a for a in browser.find_elements(By.CSS_SELECTOR, "article.lineage")
                      if a.get_attribute("data-lineage") == "xss"]
    assert XSS_NAME in xss_article.find_element(By.CSS_SELECTOR, "h3 .name").text  # shown as text, not run
    assert "<b>bold</b>" in xss_article.text
    assert browser.find_elements(By.TAG_NAME, "img") == []  # the name's <img onerror> did not become one
    (gone,) = [a for a in browser.find_elements(By.CSS_SELECTOR, "article.lineage")
               if a.get_attribute("data-lineage") == "gone"]
    assert gone.get_attribute("data-status") == "vanished"

    _screenshot(browser, tmp_path, "timeline.png")

    new_items[0].find_element(By.TAG_NAME, "a").click()  # the list links to the topic's chart
    assert browser.execute_script("return location.hash") == "#lineage-" + str(
        [lineage["id"] for lineage in timeline["lineages"]].index("fresh"))
    assert _errors(browser) == []


def _open_clean(browser, tmp_path, timeline: dict) -> None:  # noqa: F811
    """Writes the timeline's page, opens it, and checks it loaded without console errors or running a name."""
    page = tmp_path / "timeline.html"
    page.write_text(render_timeline_html(timeline), encoding="utf-8")
    _open(browser, page)
    assert _errors(browser) == [] and browser.execute_script("return window.__xss === undefined")


def test_the_page_leads_with_the_fixed_themes(browser, tmp_path):  # noqa: F811
    """With --themes: the themes panel comes first, lists the rising theme, and shows every theme's
    last night (a script-like theme name stays text)."""
    from selenium.webdriver.common.by import By

    from publishing.theme_timeline import themes_part
    runs = []
    for night in range(40):
        travel = 30.0 if night < 30 else 30.0 + 12 * (night - 29)
        themes = [{"id": name, "name": name, "kind": "category", "sensitive": False, "size": size,
                   "low": size - 7.8, "high": size + 7.8, "share": 0.3}
                  for name, size in (("Travel", travel), (XSS_NAME, 20.0), ("Other", 50.0))]
        date = f"2026-03-{night + 1:02d}" if night < 31 else f"2026-04-{night - 30:02d}"
        runs.append((date, {**_report(date, [_topic("steady", 400, name="Python", keywords=["python"])]),
                            "themes": {"sigma": 4.0, "themes": themes}}))
    timeline = build_timeline(runs, max_nights=14)
    timeline.update(themes_part(runs, timeline["nights"]))
    _open_clean(browser, tmp_path, timeline)
    panels = browser.find_elements(By.CSS_SELECTOR, "main > div.panel")
    assert panels[0].get_attribute("id") == "themes" and panels[1].get_attribute("id") == "summary"
    assert browser.find_element(By.ID, "rising-themes").find_elements(By.TAG_NAME, "li")[0].text.startswith("Travel")
    rows = browser.find_elements(By.CSS_SELECTOR, "table.themes tbody tr")
    assert [r.get_attribute("data-theme") for r in rows] == ["Travel", XSS_NAME, "Other"]
    assert XSS_NAME in rows[1].text and browser.find_elements(By.TAG_NAME, "img") == []
    _screenshot(browser, tmp_path, "timeline_themes.png")


def test_the_page_shows_each_facet_answers_share_night_by_night(browser, tmp_path):  # noqa: F811
    """With --facets: a facets panel, one table per facet, a share sparkline (band and line) per answer
    shown, and a script-like label kept as text."""
    from selenium.webdriver.common.by import By

    from publishing.facet_timeline import facets_part
    from tests.publishing.test_facet_timeline import LABELS, _runs
    runs = _runs(nights=14)
    for _, report in runs:
        report["facets"]["language"]["labels"] = {**LABELS, "de": XSS_NAME}
    timeline = build_timeline(runs)
    timeline.update(facets_part(runs, timeline["nights"]))
    _open_clean(browser, tmp_path, timeline)
    panel = browser.find_element(By.ID, "facets")
    assert panel.is_displayed()
    rows = panel.find_elements(By.CSS_SELECTOR, 'table.facet-series[data-facet="language"] tbody tr')
    assert [r.get_attribute("data-answer") for r in rows] == ["en", "es", "de"]
    assert rows[1].text.startswith("Spanish (es)") and XSS_NAME in rows[2].text
    for row in rows:
        band = row.find_element(By.CSS_SELECTOR, "svg.sparkline polygon.band")
        line = row.find_element(By.CSS_SELECTOR, "svg.sparkline polyline.size-line")
        assert band.size["height"] > 0 and line.size["width"] > 0
    assert browser.find_elements(By.TAG_NAME, "img") == []
    browser.execute_script("arguments[0].scrollIntoView()", panel)
    _screenshot(browser, tmp_path, "timeline_facets.png")
