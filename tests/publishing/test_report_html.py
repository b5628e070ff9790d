"""report.html and compare.html as strings: content, escaping, self-containedness, and the release gate."""

import json
import re

from publishing.release_gate import scan
from publishing.report import noise_margin, size_noise_of
from publishing.report_html import TABLE_COLUMNS, render_comparison, render_report, table_columns, table_rows
from tests.support.report_fixtures import sample_report, themed_topics

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


def test_the_size_noise_is_the_cluster_sizes_mechanisms():
    privacy = sample_report()["privacy"]
    assert size_noise_of(privacy) == {"kind": "laplace", "scale": 5.0, "std": 7.0710678118654755}
    assert size_noise_of({"mechanisms": [m for m in privacy["mechanisms"] if m["stage"] != "cluster_sizes"]}) is None


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
    from tests.support.report_fixtures import theme_embed
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


def _facet_report(topics=None, labels=None):
    from tests.support.report_fixtures import sample_facets
    report = sample_report(topics)
    report["facets"] = sample_facets(report["topics"], labels)
    return report


def test_no_facets_no_facet_section_column_or_filter():
    page = render_report(sample_report())
    for absent in ('id="facets"', 'id="facet-filter"', 'id="facet-data"', 'class="facets"', 'class="facet-bar'):
        assert absent not in page
    assert "<th>facets (share, 95%)</th>" not in page


def test_the_overall_facet_table_shows_every_answer_with_its_size_interval_and_share_from_the_report():
    report = _facet_report()
    page = render_report(report)
    section = page[page.index('<section id="facets">'):page.index('<section id="ranking">')]
    assert "Every size and share here is a DP estimate with a 95% interval" in section
    assert "noisy share" in section  # what the filter compares, said on the page
    for facet, data in report["facets"].items():
        table = section[section.index(f'<table class="facet-table" data-facet="{facet}">'):]
        table = table[:table.index("</table>")]
        assert data["question"] in table
        assert re.findall(r'<tr data-answer="([^"]+)">', table) == data["answers"]  # fixed order, unknown last
        for row in data["overall"]:
            line = re.search(rf'<tr data-answer="{row["answer"]}">(.*?)</tr>', table).group(1)
            cells = re.findall(r"<td[^>]*>(.*?)</td>", line)
            assert cells[1:] == [f"{row['size']:,.0f}", f"{row['low']:,.0f} to {row['high']:,.0f}",
                                 f"{100 * row['share']:.1f}%",
                                 f"{100 * row['share_low']:.1f}% to {100 * row['share_high']:.1f}%"]
    assert "<td>Spanish (es)</td>" in section and "<td>unknown</td>" in section


def test_each_topic_has_a_bar_per_facet_for_its_answers_of_at_least_five_percent():
    report = _facet_report()
    page = render_report(report)
    table = page[page.index('<table id="topics">'):]
    table = table[:table.index("</table>")]
    for topic in report["topics"]:
        row = re.search(rf'<tr data-search="[^"]*" data-topic="{topic["id"]}">(.*?)</tr>', table, re.S).group(1)
        for facet, data in report["facets"].items():
            cell = row[row.index(f'<div class="facet-bars" data-facet="{facet}">'):]
            cell = cell[:cell.index("</div>")]
            rows = data["by_topic"][str(topic["id"])]
            expected = sorted((r for r in rows if r["share"] >= 0.05), key=lambda r: -r["share"])[:4]
            assert re.findall(r'<g class="facet-bar" data-answer="([^"]+)">', cell) == [r["answer"] for r in expected]
            widths = [int(w) for w in re.findall(r'<rect x="\d+" y="\d+" width="(\d+)"', cell)]
            assert widths == [max(1, round(120 * r["share"])) for r in expected]  # full width is 100%
            for r in expected:  # the whisker spans the share's 95% interval, read from the report
                assert f"(95%: {100 * r['share_low']:.1f}% to {100 * r['share_high']:.1f}%)" in cell
                assert f'x1="{110 + round(120 * r["share_low"])}" x2="{110 + round(120 * r["share_high"])}"' in cell


def test_the_filter_data_is_each_topics_noisy_share_by_facet_and_answer():
    report = _facet_report()
    page = render_report(report)
    data = json.loads(re.search(r'<script type="application/json" id="facet-data">(.*?)</script>', page, re.S).group(1))
    assert data == {facet: {topic: {r["answer"]: r["share"] for r in rows} for topic, rows in section["by_topic"].items()}
                    for facet, section in report["facets"].items()}
    assert page.lower().count("<script") == 4  # filter, download, the table and the facet data (JSON, not code)


def test_facet_answer_names_and_labels_are_escaped_and_the_page_stays_gate_clean():
    report = _facet_report(labels={"language": {"en": "English", "<b>es</b>": XSS_NAME, "de": "German",
                                                "other": "Another language"}})
    report["facets"]["language"]["question"] = "<i>Which</i> language?"
    page = render_report(report)
    for raw in ("<script>window", "<img", "<b>es</b>", "<i>Which"):
        assert raw not in page
    assert "&lt;b&gt;es&lt;/b&gt;" in page and "&lt;i&gt;Which&lt;/i&gt; language?" in page
    assert 'value="&lt;b&gt;es&lt;/b&gt;"' in page  # the filter's checkbox value, decoded by the browser
    data = json.loads(re.search(r'<script type="application/json" id="facet-data">(.*?)</script>', page, re.S).group(1))
    assert "<b>es</b>" in data["language"][str(report["topics"][0]["id"])]  # the JSON cannot close its element
    assert scan("release.pending/report.html", render_report(_facet_report()).encode()) == []


def test_the_downloads_carry_each_topics_facet_shares_and_their_intervals_in_flat_columns():
    report = _facet_report()
    del report["facets"]["concern"]["by_topic"][str(report["topics"][-1]["id"])]  # a topic without that facet's row
    table = _embedded_table(render_report(report))
    assert table["rows"] == table_rows(report)
    facet_columns = [f"facet:{facet}:{answer}:{value}" for facet, section in report["facets"].items()
                     for answer in section["answers"] for value in ("share", "share_low", "share_high")]
    assert table["columns"] == table_columns(report) == TABLE_COLUMNS + facet_columns
    for row, topic in zip(table["rows"], report["topics"]):
        assert set(row) == set(table["columns"])
        for facet, section in report["facets"].items():
            by_answer = {r["answer"]: r for r in section["by_topic"].get(str(topic["id"]), [])}
            for answer in section["answers"]:
                for value in ("share", "share_low", "share_high"):  # report.json's numbers, unrounded
                    expected = by_answer[answer][value] if by_answer else None
                    assert row[f"facet:{facet}:{answer}:{value}"] == expected
    last = table["rows"][-1]
    assert last["facet:concern:high:share"] is None and last["facet:language:es:share"] is not None
    assert table_columns(sample_report()) == TABLE_COLUMNS  # no facets, no facet columns


def test_facet_download_columns_stay_one_per_answer_whatever_the_names():
    # Names and ids come from a facet file: a ':' or '%' in one is percent-encoded, so facet "a:b"'s
    # answer "c" and facet "a"'s answer "b:c" get columns of their own.
    report = _facet_report(labels={"language": {"en": "English", "b:c": "Odd", "50%": "Half", '<b>x</b>,"y"': XSS_NAME},
                                   "concern": {"c": "C", "low": "Low", "elevated": "Elevated", "high": "High"}})
    report["facets"] = {"a": report["facets"]["language"], "a:b": report["facets"]["concern"]}
    columns = table_columns(report)
    assert len(columns) == len(set(columns)) == len(TABLE_COLUMNS) + 3 * (5 + 5)
    assert {"facet:a:b%3Ac:share", "facet:a%3Ab:c:share", "facet:a:50%25:share_low",
            'facet:a:<b>x</b>,"y":share_high'} <= set(columns)
    page = render_report(report)
    assert "<b>x</b>" not in page and _embedded_table(page)["columns"] == columns  # the JSON cannot close its element


def test_a_token_decoded_description_shows_under_its_topic_marked_as_decoded_and_escaped():
    report = sample_report()
    decoded, plain = report["topics"][0], report["topics"][1]
    decoded["token_decoded"] = {"description": '<b>"How to"</b> fix a bike', "evidence": "dp_token_decoded"}
    page = render_report(report)
    row = next(r for r in re.findall(r"<tr data-search.*?</tr>", page, re.S) if f'data-topic="{decoded["id"]}"' in r)
    assert "Decoded under DP from a sample" in row and "&lt;b&gt;&#34;How to&#34;&lt;/b&gt; fix a bike" in row
    other = next(r for r in re.findall(r"<tr data-search.*?</tr>", page, re.S) if f'data-topic="{plain["id"]}"' in r)
    assert "Decoded under DP" not in other
    assert "Decoded under DP" not in render_report(sample_report())  # without the stage, nothing
