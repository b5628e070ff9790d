"""report.html and compare.html in a real headless browser (Debian's chromium; .ci/run installs it).

Chromium runs offline (no background networking, component updates or sync) with a fresh profile,
through Debian's chromedriver, so Selenium never downloads a driver. Screenshots are saved in the
test's tmp_path and copied to out/screenshots/ (git-ignored).
"""

import csv
import io
import json
import os
import shutil
import urllib.parse

import pytest

from publishing.report_html import TABLE_COLUMNS, render_comparison, render_report, table_columns, table_rows
from tests.support.report_fixtures import sample_report, theme_embed, themed_topics

CHROMIUM, CHROMEDRIVER = "/usr/bin/chromium", "/usr/bin/chromedriver"
SCREENSHOTS = os.path.join(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))), "out", "screenshots")
XSS_NAME = '<script>window.__xss = 1</script><img src=x onerror="window.__xss = 2">'

pytestmark = [
    pytest.mark.browser,
    pytest.mark.skipif(not (os.path.exists(CHROMIUM) and os.path.exists(CHROMEDRIVER)),
                       reason="Debian chromium + chromium-driver not installed (.ci/run installs them)"),
]


@pytest.fixture(scope="module")
def browser(tmp_path_factory):
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service
    options = webdriver.ChromeOptions()
    options.binary_location = CHROMIUM
    for flag in ("--headless=new", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
                 "--disable-background-networking", "--disable-component-update", "--disable-sync",
                 "--disable-dev-shm-usage", "--window-size=1280,1600",
                 f"--user-data-dir={tmp_path_factory.mktemp('chromium-profile')}"):
        options.add_argument(flag)
    options.set_capability("goog:loggingPrefs", {"browser": "ALL"})
    driver = webdriver.Chrome(service=Service(CHROMEDRIVER), options=options)
    yield driver
    driver.quit()


def _open(browser, path):
    browser.get("file://" + str(path))
    browser.get_log("browser")  # nothing before this page
    browser.refresh()


def _errors(browser):
    return [entry for entry in browser.get_log("browser") if entry["level"] in ("SEVERE", "WARNING")]


def _screenshot(browser, tmp_path, name):
    path = tmp_path / name
    browser.save_screenshot(str(path))
    os.makedirs(SCREENSHOTS, exist_ok=True)
    shutil.copy(path, os.path.join(SCREENSHOTS, name))
    print(f"screenshot: {path} (copy in {os.path.join(SCREENSHOTS, name)})")
    assert path.stat().st_size > 10_000
    return path


def _visible_topic_rows(browser):
    from selenium.webdriver.common.by import By
    return [row for row in browser.find_elements(By.CSS_SELECTOR, "#topics tr[data-search]") if row.is_displayed()]


def _data_uri(browser, element_id):
    from selenium.webdriver.common.by import By
    href = browser.find_element(By.ID, element_id).get_attribute("href")
    prefix, _, payload = href.partition(",")
    return prefix, urllib.parse.unquote(payload)


def test_report_page_renders_filters_and_downloads(browser, tmp_path):
    from selenium.webdriver.common.by import By
    topics = themed_topics()
    topics[-1] = {**topics[-1], "name": XSS_NAME}
    report = sample_report(topics)
    page = tmp_path / "report.html"
    page.write_text(render_report(report), encoding="utf-8")
    _open(browser, page)

    assert _errors(browser) == []
    assert browser.execute_script("return window.__xss === undefined")
    assert XSS_NAME in browser.find_element(By.ID, "topics").text  # shown as text, not run

    chart = browser.find_element(By.ID, "chart")
    assert chart.size["width"] > 0 and chart.size["height"] > 0
    bars = chart.find_elements(By.CSS_SELECTOR, "g.bar rect")
    assert len(bars) == len(topics)
    widths = [bar.size["width"] for bar in bars]
    assert all(width > 0 and bar.size["height"] > 0 for width, bar in zip(widths, bars))
    assert widths == sorted(widths, reverse=True)  # ranked by noisy size

    assert len(_visible_topic_rows(browser)) == len(topics)
    assert browser.find_element(By.ID, "match-count").text == f"{len(topics)} shown"
    groups = browser.find_elements(By.CSS_SELECTOR, "details.group:not(#config)")
    assert len(groups) == 3 and not any(g.get_attribute("open") for g in groups)

    _screenshot(browser, tmp_path, "report.png")

    box = browser.find_element(By.ID, "search")
    box.send_keys("cooking")
    shown = [row.find_elements(By.TAG_NAME, "td")[1].text for row in _visible_topic_rows(browser)]
    assert shown == [t["name"] for t in topics if "cooking" in " ".join([t["name"], *t["keywords"]]).lower()]
    assert browser.find_element(By.ID, "match-count").text == f"{len(shown)} shown"
    opened = [g for g in groups if g.is_displayed()]
    assert len(opened) == 1 and opened[0].get_attribute("open")  # the matching group opens, others hide
    box.clear()
    box.send_keys("postgresql")  # a keyword that is not in the name's first words
    assert len(_visible_topic_rows(browser)) == 1
    box.clear()
    box.send_keys(" ")
    box.clear()
    browser.execute_script("document.getElementById('search').dispatchEvent(new Event('input'))")
    assert len(_visible_topic_rows(browser)) == len(topics)

    prefix, text = _data_uri(browser, "download-csv")
    assert prefix == "data:text/csv;charset=utf-8"
    rows = list(csv.DictReader(io.StringIO(text)))
    expected = table_rows(report)
    assert [r["name"] for r in rows] == [e["name"] for e in expected]
    assert [int(r["size"]) for r in rows] == [e["size"] for e in expected]
    assert rows[0]["keywords"] == "; ".join(expected[0]["keywords"])
    prefix, text = _data_uri(browser, "download-json")
    assert prefix == "data:application/json;charset=utf-8" and json.loads(text) == expected
    assert _errors(browser) == []


def test_comparison_page_renders_in_the_browser(browser, tmp_path):
    from selenium.webdriver.common.by import By

    from beam_jobs.compare_reports import compare
    old_topics = themed_topics()[:6]
    new_topics = [{**t, "size": t["size"] + (60 if i == 0 else -60 if i == 1 else 3)}
                  for i, t in enumerate(themed_topics()[1:8])]
    comparison = compare(sample_report(old_topics), sample_report(new_topics), theme_embed, threshold=0.5)
    page = tmp_path / "compare.html"
    page.write_text(render_comparison(comparison), encoding="utf-8")
    _open(browser, page)
    assert _errors(browser) == []
    chart = browser.find_element(By.ID, "chart")
    rects = chart.find_elements(By.TAG_NAME, "rect")
    assert len(rects) == len(comparison["rows"]) and all(r.size["width"] > 0 for r in rects)
    assert len(_visible_topic_rows(browser)) == len(comparison["rows"])
    _screenshot(browser, tmp_path, "compare.png")
    browser.find_element(By.ID, "search").send_keys("insomnia")
    visible = _visible_topic_rows(browser)
    assert 1 <= len(visible) < len(comparison["rows"]) and all("insomnia" in r.text.lower() for r in visible)
    prefix, text = _data_uri(browser, "download-json")
    assert [row["status"] for row in json.loads(text)] == [r["status"] for r in comparison["rows"]]


def _shown_topic_ids(browser):
    return [row.get_attribute("data-topic") for row in _visible_topic_rows(browser)]


def test_facets_show_a_table_bars_per_topic_and_a_filter_on_the_noisy_share(browser, tmp_path):
    from selenium.webdriver.common.by import By
    from selenium.webdriver.support.ui import Select

    from tests.support.report_fixtures import sample_facets
    report = sample_report()
    report["facets"] = sample_facets(report["topics"])
    page = tmp_path / "report.html"
    page.write_text(render_report(report), encoding="utf-8")
    _open(browser, page)
    assert _errors(browser) == []

    # The overall table sits above the ranking: every answer of each facet, in the facet's order.
    section = browser.find_element(By.ID, "facets")
    assert section.location["y"] < browser.find_element(By.ID, "ranking").location["y"]
    for facet, data in report["facets"].items():
        table = section.find_element(By.CSS_SELECTOR, f'table.facet-table[data-facet="{facet}"]')
        assert table.is_displayed()
        rows = table.find_elements(By.CSS_SELECTOR, "tr[data-answer]")
        assert [r.get_attribute("data-answer") for r in rows] == data["answers"]
    spanish = section.find_element(By.CSS_SELECTOR, 'table[data-facet="language"] tr[data-answer="es"]').text
    overall_es = next(r for r in report["facets"]["language"]["overall"] if r["answer"] == "es")
    assert spanish.startswith("Spanish (es)") and f"{100 * overall_es['share']:.1f}%" in spanish

    # Each topic: a chart per facet, bars drawn with a whisker over the share's interval.
    ids = [str(t["id"]) for t in report["topics"]]
    assert _shown_topic_ids(browser) == ids
    first = _visible_topic_rows(browser)[0]
    charts = first.find_elements(By.CSS_SELECTOR, "td.facets .facet-bars")
    assert [c.get_attribute("data-facet") for c in charts] == ["language", "concern"]
    for chart in charts:
        bars = chart.find_elements(By.CSS_SELECTOR, "g.facet-bar")
        assert bars and all(b.find_element(By.TAG_NAME, "rect").size["width"] > 0 for b in bars)
        widths = [b.find_element(By.TAG_NAME, "rect").size["width"] for b in bars]
        assert widths == sorted(widths, reverse=True)  # largest share first
        assert all(b.find_element(By.CSS_SELECTOR, "line.whisker").size["width"] > 0 for b in bars)
    _screenshot(browser, tmp_path, "report_facets.png")

    def shares(facet, answers):
        return {topic: sum(next(r["share"] for r in rows if r["answer"] == a) for a in answers)
                for topic, rows in report["facets"][facet]["by_topic"].items()}

    # "Topics where Spanish (es) > 20%": the answer boxes of the chosen facet only, then the threshold.
    Select(browser.find_element(By.ID, "facet-filter-facet")).select_by_value("language")
    answers = browser.find_element(By.CSS_SELECTOR, '#facet-filter .facet-answers[data-facet="language"]')
    assert answers.is_displayed()
    assert not browser.find_element(By.CSS_SELECTOR, '#facet-filter .facet-answers[data-facet="concern"]').is_displayed()
    assert _shown_topic_ids(browser) == ids  # no answer checked: no condition yet
    answers.find_element(By.CSS_SELECTOR, 'input[value="es"]').click()
    spanish_shares = shares("language", ["es"])
    expected = [i for i in ids if spanish_shares[i] > 0.20]
    assert 0 < len(expected) < len(ids) and _shown_topic_ids(browser) == expected
    assert browser.find_element(By.ID, "match-count").text == f"{len(expected)} shown"
    groups = browser.find_elements(By.CSS_SELECTOR, "details.group:not(#config)")
    assert all(g.is_displayed() == bool(g.find_elements(By.CSS_SELECTOR, "tr[data-search]:not([hidden])"))
               for g in groups)
    assert browser.find_element(By.ID, "config").is_displayed()  # the run's configuration is not a topic group
    share = browser.find_element(By.ID, "facet-filter-share")
    share.clear()
    share.send_keys("40")  # one topic has exactly 40%: "more than" leaves it out
    assert _shown_topic_ids(browser) == [i for i in ids if spanish_shares[i] > 0.40]
    Select(browser.find_element(By.ID, "facet-filter-op")).select_by_value("below")
    assert _shown_topic_ids(browser) == [i for i in ids if spanish_shares[i] < 0.40]

    # "Concern elevated or high": the two levels' shares added, together with the search box.
    Select(browser.find_element(By.ID, "facet-filter-facet")).select_by_value("concern")
    Select(browser.find_element(By.ID, "facet-filter-op")).select_by_value("above")
    share.clear()
    share.send_keys("10")
    concern = browser.find_element(By.CSS_SELECTOR, '#facet-filter .facet-answers[data-facet="concern"]')
    for level in ("elevated", "high"):
        concern.find_element(By.CSS_SELECTOR, f'input[value="{level}"]').click()
    concerning = shares("concern", ["elevated", "high"])
    expected = [i for i in ids if concerning[i] > 0.10]
    assert 0 < len(expected) < len(ids) and _shown_topic_ids(browser) == expected
    by_name = {str(t["id"]): t for t in report["topics"]}
    browser.find_element(By.ID, "search").send_keys("health")
    assert _shown_topic_ids(browser) == [i for i in expected if "health" in by_name[i]["name"].lower()
                                         or any("health" in k for k in by_name[i]["keywords"])]
    browser.find_element(By.ID, "search").clear()
    Select(browser.find_element(By.ID, "facet-filter-facet")).select_by_value("")
    browser.execute_script("document.getElementById('search').dispatchEvent(new Event('input'))")
    assert _shown_topic_ids(browser) == ids
    assert _errors(browser) == []


def test_the_downloads_carry_the_facet_shares_with_their_intervals(browser, tmp_path):
    from tests.support.report_fixtures import sample_facets
    report = sample_report()
    # an answer id a CSV must quote, and a topic without the concern facet's row
    report["facets"] = sample_facets(report["topics"], {"language": {"en": "English", 'es,"mx"': "Spanish",
                                                                     "de": "German", "other": "Another language"}})
    del report["facets"]["concern"]["by_topic"][str(report["topics"][-1]["id"])]
    page = tmp_path / "report.html"
    page.write_text(render_report(report), encoding="utf-8")
    _open(browser, page)
    assert _errors(browser) == []
    expected = table_rows(report)
    _, text = _data_uri(browser, "download-csv")
    header, *lines = list(csv.reader(io.StringIO(text)))
    assert header == table_columns(report) and 'facet:language:es,"mx":share_low' in header
    rows = [dict(zip(header, line)) for line in lines]
    for row, want in zip(rows, expected):
        for column in header[len(TABLE_COLUMNS):]:
            assert (None if row[column] == "" else float(row[column])) == want[column]
    assert rows[-1]["facet:concern:high:share"] == "" and float(rows[0]["facet:concern:high:share_high"]) > 0
    _, text = _data_uri(browser, "download-json")
    assert json.loads(text) == expected
    assert _errors(browser) == []
