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

from core.report_html import render_comparison, render_report, table_rows
from tests.report_fixtures import sample_report, theme_embed, themed_topics

CHROMIUM, CHROMEDRIVER = "/usr/bin/chromium", "/usr/bin/chromedriver"
SCREENSHOTS = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "out", "screenshots")
XSS_NAME = '<script>window.__xss = 1</script><img src=x onerror="window.__xss = 2">'

pytestmark = [
    pytest.mark.slow,
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
