"""report.html and compare.html as strings: content, escaping, self-containedness, and the release gate."""

import json
import re

from core.release_gate import scan
from core.report_html import noise_margin, render_comparison, render_report, table_rows
from tests.report_fixtures import sample_report, themed_topics

XSS_NAME = '<script>window.__xss = 1</script><img src=x onerror="window.__xss = 2">'


def _embedded_table(page: str) -> dict:
    match = re.search(r'<script type="application/json" id="table-data">(.*?)</script>', page, re.S)
    return json.loads(match.group(1))


def test_page_lists_every_topic_in_rank_order_with_keywords_and_groups():
    report = sample_report()
    page = render_report(report)
    positions = [page.index(f"<td>{t['name']}</td>") for t in report["topics"]]
    assert positions == sorted(positions)
    for topic in report["topics"]:
        for keyword in topic["keywords"]:
            assert f'<span class="kw">{keyword}</span>' in page
    assert page.count('<details class="group">') == len(report["hierarchy"]["groups"]) == 3
    assert page.count('<g class="bar">') == len(report["topics"])
    assert "2026-11-21" in page and report["config"]["run_id"] in page


def test_page_is_self_contained():
    page = render_report(sample_report())
    lowered = page.lower()
    for reference in ("http:", "https:", "src=", "<link", "@import", "url("):
        assert reference not in lowered
    assert lowered.count("<script") == 3  # filter, download, and the embedded table (JSON, not code)


def test_every_string_from_the_report_is_escaped():
    topics = themed_topics()
    topics[0] = {**topics[0], "name": XSS_NAME, "description": "a & b <i class=evil>c</i>",
                 "keywords": ['"quoted"', "<b onclick=evil>"]}
    report = sample_report(topics)
    report["hierarchy"]["groups"][0]["name"] = XSS_NAME
    page = render_report(report)
    for raw in ("<script>window", "<img", "<b onclick", "<i class=evil", '"quoted"'):
        assert raw not in page
    assert "&lt;script&gt;window.__xss = 1&lt;/script&gt;" in page
    assert 'data-search="&lt;script&gt;' in page
    # The embedded table cannot close its <script> element, and still decodes to the original strings.
    assert _embedded_table(page)["rows"][0]["name"] == XSS_NAME


def test_downloadable_table_matches_the_report():
    report = sample_report()
    table = _embedded_table(render_report(report))
    assert table["rows"] == table_rows(report)
    assert [row["name"] for row in table["rows"]] == [t["name"] for t in report["topics"]]
    groups = {i: g["name"] for g in report["hierarchy"]["groups"] for i in g["topic_ids"]}
    assert all(row["group"] == groups[row["id"]] for row in table["rows"])


def test_privacy_panel_says_the_spend_the_noise_and_the_ledger_in_plain_words():
    report = sample_report()
    page = render_report(report)
    privacy = page[page.index('<section id="privacy">'):]
    assert "Unit of privacy: one user" in privacy and "at most 5 of each user" in privacy
    for stage in ("clustering", "cluster_sizes", "keyword_histograms"):
        assert f"<td>{stage}</td>" in privacy
    assert "&epsilon; = 7," in privacy and "5.0e-07" in privacy and "1.0e-06" in privacy
    # Laplace(5): 95% of noisy sizes lie within 5 ln 20 = 15 of the truth; below ~30 is mostly noise.
    assert noise_margin(report["privacy"]["mechanisms"][1]["noise"]) == 5.0 * 2.995732273553991
    assert "within &plusmn;15 of the true one" in privacy and "Sizes below about 30 are mostly noise" in privacy
    assert "cost no privacy budget" in privacy
    assert "did not use a privacy ledger" in privacy
    ledgered = render_report(sample_report(privacy_ledger={"window_days": 30, "max_epsilon_per_window": 30.0}))
    assert "recorded in the privacy ledger before any data was read" in ledgered
    assert "any 30-day window over &epsilon; = 30" in ledgered
    assert "Test run:" not in page and "Test run:" in render_report(sample_report(noise_seed_fixed=True))


def test_gaussian_size_noise_margin_is_two_standard_deviations():
    assert noise_margin({"kind": "gaussian", "sigma": 10.0, "std": 10.0}) == 1.96 * 10.0
    assert noise_margin(None) is None


def test_empty_release_renders_without_chart():
    page = render_report(sample_report(topics=[]))
    assert 'id="no-topics"' in page and "<svg" not in page and "0 topics released" in page


def test_release_gate_passes_a_clean_page_and_still_sees_what_a_namer_might_leak():
    report = sample_report()
    assert scan("release.pending/report.html", render_report(report).encode()) == []
    leaky = themed_topics()
    leaky[3] = {**leaky[3], "name": "Ask jane.doe@example.com at 415 555 0134"}
    findings = scan("release.pending/report.html", render_report(sample_report(leaky)).encode(), ("zebra-canary-7",))
    assert {f.kind for f in findings} >= {"email", "phone"}
    canary = themed_topics()
    canary[0] = {**canary[0], "description": "mentions zebra-canary-7"}
    findings = scan("release.pending/report.html", render_report(sample_report(canary)).encode(), ("zebra-canary-7",))
    assert "canary" in {f.kind for f in findings}


def _comparison():
    from beam_jobs.compare_reports import compare
    from tests.report_fixtures import theme_embed
    old = sample_report(themed_topics()[:5])
    new_topics = themed_topics()[1:7]
    new_topics[0] = {**new_topics[0], "size": new_topics[0]["size"] + 100}
    return compare(old, sample_report(new_topics), theme_embed, threshold=0.5)


def test_comparison_page_lists_every_row_escaped_and_gate_clean():
    comparison = _comparison()
    comparison["rows"][0]["new"] = {**comparison["rows"][0]["new"], "name": XSS_NAME}
    page = render_comparison(comparison)
    assert page.count("<tr data-search=") == len(comparison["rows"])
    assert "<script>window" not in page and "&lt;script&gt;window" in page
    assert [row["status"] for row in _embedded_table(page)["rows"]] == [r["status"] for r in comparison["rows"]]
    clean = render_comparison(_comparison())
    assert scan("compare.html", clean.encode()) == []
    assert clean.lower().count("<script") == 3 and "http" not in clean.lower()


def test_the_page_and_the_table_say_when_a_label_is_a_guess_not_a_finding():
    topics = themed_topics()
    topics[0] = {**topics[0], "name": "Possibly crime and fraud (unverified)", "label_source": "nearest_keywords_to_dp_centre",
                 "label_evidence": "unverified"}
    topics[1] = {**topics[1], "name": topics[1]["name"] + " (approximate)",
                 "label_source": "nearest_keywords_to_dp_centre", "label_evidence": "approximate"}
    topics[2] = {**topics[2], "label_source": "dp_keyword_histogram", "label_evidence": "dp_votes"}
    topics[3] = {**topics[3], "name": "Writing and editing", "label_source": "dp_category_votes",
                 "label_evidence": "dp_category_votes", "voted_category": "Writing and editing"}
    report = sample_report(topics)
    page = render_report(report)
    assert 'data-evidence="dp_category_votes"' in page and "its category from the DP category votes" in page
    assert 'data-evidence="unverified"' in page and "not evidence of that activity" in page
    assert 'data-evidence="approximate"' in page and "no vote of its own conversations behind it" in page
    assert 'data-evidence="dp_votes"' in page
    rows = {row["id"]: row for row in table_rows(report)}
    assert [rows[t["id"]]["label_evidence"] for t in topics[:3]] == ["unverified", "approximate", "dp_votes"]
