"""report.json -> report.html, and a comparison -> compare.html: self-contained pages, no network at view time.

Pure functions of released data (the report dict) to an HTML string: inline CSS, static inline SVG
and a little vanilla JS (search filter, JSON/CSV download built from the embedded table). Every
string from the report is escaped: topic names may come from a model. The release gate scans the
page as text, so the markup avoids what its patterns look for (no URLs, no space-separated runs of
digits, integers only in the SVG).
"""

from __future__ import annotations

import html
import json
import math

from core.dates import day_of_run_id

_CSS = """
body{font-family:system-ui,-apple-system,Segoe UI,Roboto,sans-serif;margin:0;color:#1d2433;background:#f6f7f9}
main{max-width:1100px;margin:auto;padding:16px 24px 48px}
h1{font-size:1.6em;margin:8px 0 4px}h2{font-size:1.2em;margin:28px 0 8px}
.sub{color:#5b6478}.panel{background:#fff;border:1px solid #dde1e8;border-radius:8px;padding:12px 16px}
.warn{background:#fff4e5;border-color:#f0b46a}
table{border-collapse:collapse;width:100%;background:#fff}
th,td{border-bottom:1px solid #e4e7ec;padding:6px 8px;text-align:left;vertical-align:top}
th{background:#eef1f5;font-weight:600}td.num,th.num{text-align:right;font-variant-numeric:tabular-nums;white-space:nowrap}
.kw{display:inline-block;background:#e8eefc;color:#23408e;border-radius:10px;padding:1px 8px;margin:1px 2px;
font-size:.9em}
.toolbar{display:flex;gap:12px;align-items:center;flex-wrap:wrap;margin:12px 0}
.toolbar input{font-size:1em;padding:6px 10px;min-width:280px;border:1px solid #b8c0cc;border-radius:6px}
.toolbar a{color:#23408e}details.group{background:#fff;border:1px solid #dde1e8;border-radius:8px;margin:6px 0}
details.group>summary{cursor:pointer;padding:8px 12px;font-weight:600}
details.group .desc{color:#5b6478;font-weight:400;margin-left:6px}
details.group table{border-top:1px solid #e4e7ec}
svg text{font-size:12px;fill:#1d2433}svg .bar rect{fill:#4f6bd8}svg .grow rect{fill:#2e9e5b}
svg .shrink rect{fill:#d0553f}.status{font-weight:600}
.exemplars{margin-top:6px;font-size:.92em}.exemplars ul{margin:2px 0 0 0;padding-left:18px}
.exemplars li{font-style:italic;color:#38415a}
"""

_FILTER_JS = """
(function () {
  var box = document.getElementById('search');
  var counter = document.getElementById('match-count');
  function filter() {
    var query = box.value.trim().toLowerCase();
    var rows = document.querySelectorAll('tr[data-search]');
    for (var i = 0; i < rows.length; i++) {
      rows[i].hidden = query !== '' && rows[i].getAttribute('data-search').indexOf(query) < 0;
    }
    var groups = document.querySelectorAll('details.group');
    for (var g = 0; g < groups.length; g++) {
      var shown = groups[g].querySelectorAll('tr[data-search]:not([hidden])').length;
      groups[g].hidden = shown === 0;
      if (query !== '') { groups[g].open = shown > 0; }
    }
    var listed = document.querySelectorAll('#topics tr[data-search]:not([hidden])').length;
    counter.textContent = listed + ' shown';
  }
  box.addEventListener('input', filter);
  filter();
})();
"""

_DOWNLOAD_JS = """
(function () {
  var data = JSON.parse(document.getElementById('table-data').textContent);
  function cell(value) {
    var text = Array.isArray(value) ? value.join('; ') : String(value === null ? '' : value);
    return /[",\\n\\r]/.test(text) ? '"' + text.replace(/"/g, '""') + '"' : text;
  }
  var lines = [data.columns.join(',')];
  data.rows.forEach(function (row) {
    lines.push(data.columns.map(function (column) { return cell(row[column]); }).join(','));
  });
  document.getElementById('download-csv').href =
    'data:text/csv;charset=utf-8,' + encodeURIComponent(lines.join('\\n') + '\\n');
  document.getElementById('download-json').href =
    'data:application/json;charset=utf-8,' + encodeURIComponent(JSON.stringify(data.rows, null, 2));
})();
"""


def esc(value) -> str:
    return html.escape("" if value is None else str(value), quote=True)


def _json_for_script(value) -> str:
    """JSON that cannot close its <script> element or open a new one."""
    return (json.dumps(value, ensure_ascii=False)
            .replace("&", "\\u0026").replace("<", "\\u003c").replace(">", "\\u003e"))


def _number(value: float) -> str:
    """Short, gate-safe rendering of an epsilon, delta or noise parameter."""
    if value == 0:
        return "0"
    if abs(value) < 1e-3:
        return f"{value:.1e}"
    return f"{value:.4g}"


def _page(title: str, body: str, scripts: list[str]) -> str:
    script_tags = "".join(f"<script>{script}</script>" for script in scripts)
    return ("<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">"
            "<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">"
            f"<title>{esc(title)}</title><style>{_CSS}</style></head>"
            f"<body><main>{body}</main>{script_tags}</body></html>\n")


def _keywords(keywords) -> str:
    return "".join(f"<span class=\"kw\">{esc(k)}</span>" for k in keywords) or "<span class=\"sub\">none</span>"


_LABEL_SOURCES = {
    "dp_keyword_histogram": "from the DP keyword votes",
    "nearest_keywords_to_dp_centre": "nearest to the topic's DP centre (too few votes to clear the noise)",
    "none": "no keyword cleared the noise",
}


# What a label's evidence (backends/label_evidence.py) adds on the page: a guess is never shown as a finding.
_LABEL_EVIDENCE = {
    "approximate": "approximate label: no vote of its own conversations behind it",
    "unverified": ("unverified: its nearest keywords lie in a sensitive category, with no vote of its own "
                   "conversations behind them; not evidence of that activity"),
}


def _label_source(topic: dict) -> str:
    source = topic.get("label_source")
    if source is None:
        return ""
    evidence = topic.get("label_evidence", "")
    shown = _LABEL_SOURCES.get(source, source) + (f"; {_LABEL_EVIDENCE[evidence]}" if evidence in _LABEL_EVIDENCE else "")
    return (f"<div class=\"sub label-source\" data-source=\"{esc(source)}\" data-evidence=\"{esc(evidence)}\">"
            f"{esc(shown)}</div>")


def _search_text(*parts) -> str:
    words = []
    for part in parts:
        words += part if isinstance(part, list) else [part or ""]
    return esc(" ".join(words).lower())


def _truncate(text: str, limit: int) -> str:
    return text if len(text) <= limit else text[: limit - 1] + "\u2026"


# ---------------------------------------------------------------------------------------------- report


def _size_noise(privacy: dict) -> dict | None:
    for mechanism in privacy.get("mechanisms", []):
        if mechanism.get("stage") == "cluster_sizes":
            return mechanism.get("noise")
    return None


def noise_margin(noise: dict | None) -> float | None:
    """Half-width of the interval a noisy count falls in around the true one 95% of the time."""
    if not noise:
        return None
    if noise.get("kind") == "laplace" and "scale" in noise:
        return noise["scale"] * math.log(20)
    std = noise.get("std", noise.get("sigma"))
    return None if std is None else 1.96 * std


_STAGE_RELEASES = {
    "keyword_set": "the keyword list itself",
    "clustering": "which topics exist (the cluster centres)",
    "cluster_sizes": "each topic's size",
    "keyword_histograms": "each topic's keywords",
}


def _threshold(value) -> str:
    return "the release threshold" if not isinstance(value, (int, float)) else _number(value)


def _privacy_panel(report: dict) -> str:
    privacy, config = report.get("privacy", {}), report.get("config", {})
    limit = privacy.get("max_conversations_per_user", config.get("max_conversations_per_user"))
    epsilon, delta = privacy.get("epsilon", 0.0), privacy.get("delta", 0.0)
    rows = "".join(
        f"<tr><td>{esc(m.get('stage'))}</td><td>{esc(_STAGE_RELEASES.get(m.get('stage'), m.get('stage')))}</td>"
        f"<td>{esc(m.get('mechanism'))}</td><td class=\"num\">{_number(m.get('epsilon', 0.0))}</td>"
        f"<td class=\"num\">{_number(m.get('delta', 0.0))}</td></tr>"
        for m in privacy.get("mechanisms", []))
    rows += (f"<tr><th colspan=\"3\">total ({esc(privacy.get('composition', 'basic composition'))})</th>"
             f"<th class=\"num\">{_number(epsilon)}</th><th class=\"num\">{_number(delta)}</th></tr>")
    parts = [
        "<p><b>Unit of privacy: one user</b> (at most "
        f"{esc(limit)} of each user's conversations are used). Adding or removing everything one user wrote "
        f"changes the probability of any result on this page by at most a factor of e<sup>&epsilon;</sup> with "
        f"&epsilon; = {_number(epsilon)}, except with probability &delta; = {_number(delta)}. "
        "No text on this page was written by a user: names, descriptions and keywords come from a public keyword "
        "list, chosen by noisy counts" + (", and the example requests are synthetic" if report.get("exemplars_note")
                                          else "") + ".</p>",
        "<table id=\"privacy-spend\"><tr><th>stage</th><th>what it released</th><th>mechanism</th>"
        f"<th class=\"num\">&epsilon;</th><th class=\"num\">&delta;</th></tr>{rows}</table>",
    ]
    noise = _size_noise(privacy)
    margin = noise_margin(noise)
    if margin is not None:
        std = noise.get("std", noise.get("sigma", 0.0))
        parts.append(
            f"<p><b>What the noise means for small counts.</b> Each topic size is the number of its conversations "
            f"plus random {esc(noise.get('kind', ''))} noise with a standard deviation of {std:.1f} conversations: "
            f"95% of the time the shown size is within &plusmn;{margin:.0f} of the true one. "
            f"Sizes below about {2 * margin:.0f} are mostly noise; read them as \"small\", not as a number. "
            f"Topics whose noisy size was below {_threshold(config.get('min_cluster_size'))} "
            "are not shown.</p>")
    for mechanism in privacy.get("mechanisms", []):
        if mechanism.get("stage") == "keyword_histograms" and mechanism.get("noise"):
            keyword_std = mechanism["noise"].get("std", mechanism["noise"].get("sigma", 0.0))
            parts.append(
                f"<p>Keyword votes had noise with a standard deviation of {keyword_std:.1f}; only keywords clearly "
                "above that noise are released, so a small or mixed topic can show fewer keywords, or none "
                "(\"Unlabelled topic\"). Under each topic's keywords, the page says where they came from.</p>")
    if report.get("exemplars_note"):
        parts.append(f"<p id=\"exemplars-note\"><b>Example requests.</b> {esc(report['exemplars_note'])}</p>")
    if privacy.get("labelling_note"):
        parts.append(f"<p id=\"labelling\"><b>Which topics can be labelled.</b> {esc(privacy['labelling_note'])}</p>")
    parts.append("<p>The groups below are computed from released data only (the topics' keywords and the "
                 "keyword set's public categories; post-processing): they cost no privacy budget.</p>")
    ledger = config.get("privacy_ledger")
    if ledger:
        cap = ledger.get("max_epsilon_per_window")
        cap_text = (f"no run may bring any {esc(ledger.get('window_days'))}-day window over "
                    f"&epsilon; = {_number(cap)}" if cap else "no cap was set")
        parts.append(f"<p><b>Ledger:</b> this run's spend was recorded in the privacy ledger before any data was "
                     f"read ({cap_text}); it is marked committed when this release is published. Runs over the "
                     "same users compose: the ledger charges a window the PLD composition of its runs, which is at "
                     "most the sum of their &epsilon;.</p>")
    else:
        parts.append("<p><b>Ledger:</b> this run did not use a privacy ledger, so its spend was not checked against "
                     "a cap across runs. Runs over the same users add up: a user seen in two runs is protected at "
                     "the sum of their &epsilon;.</p>")
    warning = ""
    if config.get("noise_seed_fixed"):
        warning = ("<p class=\"panel warn\"><b>Test run:</b> the clustering and keyword-vote noise was seeded (--noise_seed), "
                   "which voids its guarantee for anyone who knows the seed.</p>")
    return f"<section id=\"privacy\"><h2>Privacy</h2>{warning}<div class=\"panel\">{''.join(parts)}</div></section>"


def _bar_chart(topics: list[dict], chart_id: str = "chart") -> str:
    if not topics:
        return "<p id=\"no-topics\" class=\"panel\">No topic was large enough to be released in this run.</p>"
    label_width, bar_width, row, top = 340, 520, 22, 8
    largest = max(max(t["size"] for t in topics), 1)
    height = top * 2 + row * len(topics)
    bars = []
    for index, topic in enumerate(topics):
        y = top + index * row
        width = max(1, round(bar_width * topic["size"] / largest))
        bars.append(
            f"<g class=\"bar\"><title>{esc(topic['name'])}: {topic['size']:,}</title>"
            f"<text x=\"{label_width - 8}\" y=\"{y + 15}\" text-anchor=\"end\">{esc(_truncate(topic['name'], 48))}"
            f"</text><rect x=\"{label_width}\" y=\"{y + 3}\" width=\"{width}\" height=\"{row - 6}\"></rect>"
            f"<text x=\"{label_width + width + 6}\" y=\"{y + 15}\">{topic['size']:,}</text></g>")
    return (f"<svg id=\"{chart_id}\" role=\"img\" aria-label=\"topics by noisy size\" "
            f"width=\"{label_width + bar_width + 80}\" height=\"{height}\">{''.join(bars)}</svg>")


def _exemplars(topic: dict) -> str:
    """The topic's synthetic exemplars under its description, labelled as such (report.EXEMPLARS_NOTE)."""
    exemplars = topic.get("exemplars") or []
    if not exemplars:
        return ""
    items = "".join(f"<li>{esc(e['text'])}</li>" for e in exemplars)
    return (f"<div class=\"exemplars\"><span class=\"sub\">Synthetic example requests, written from the "
            f"released labels, <a href=\"#exemplars-note\">not user text</a>:</span><ul>{items}</ul></div>")


def _topic_rows(topics: list[dict], ranks: dict[int, int], groups_by_topic: dict[int, str]) -> str:
    return "".join(
        f"<tr data-search=\"{_search_text(t['name'], t['keywords'], t.get('description', ''))}\">"
        f"<td class=\"num\">{ranks[t['id']]}</td><td>{esc(t['name'])}</td><td class=\"num\">{t['size']:,}</td>"
        f"<td>{_keywords(t['keywords'])}{_label_source(t)}</td><td>{esc(groups_by_topic.get(t['id'], ''))}</td>"
        f"<td>{esc(t.get('description', ''))}{_exemplars(t)}</td></tr>"
        for t in topics)


_TOPIC_HEADER = ("<tr><th class=\"num\">rank</th><th>topic</th><th class=\"num\">size</th><th>keywords</th>"
                 "<th>group</th><th>description</th></tr>")


def _groups(report: dict, by_id: dict[int, dict], ranks: dict[int, int], groups_by_topic: dict[int, str]) -> str:
    groups = (report.get("hierarchy") or {}).get("groups", [])
    if not groups:
        return ""
    blocks = []
    for group in groups:
        members = [by_id[i] for i in group["topic_ids"] if i in by_id]
        blocks.append(
            f"<details class=\"group\"><summary>{esc(group['name'])} "
            f"<span class=\"desc\">{len(members)} topic{'s' if len(members) != 1 else ''}, "
            f"{group['size']:,} conversations &middot; {_keywords(group['keywords'])}</span></summary>"
            f"<table>{_TOPIC_HEADER}{_topic_rows(members, ranks, groups_by_topic)}</table></details>")
    return ("<section id=\"groups\"><h2>Topic groups</h2><p class=\"sub\">Related topics, grouped by the "
            "categories of their released keywords (topics without one, and unverified labels, in groups of their "
            f"own). Click a group to open it.</p>{''.join(blocks)}</section>")


def _config_table(config: dict) -> str:
    def show(value):
        if isinstance(value, dict):
            return ", ".join(f"{k}: {show(v)}" for k, v in value.items())
        if isinstance(value, float):
            return _number(value)
        return str(value)

    rows = "".join(f"<tr><td>{esc(key)}</td><td>{esc(show(value))}</td></tr>" for key, value in config.items())
    return (f"<details id=\"config\" class=\"group\"><summary>Configuration of this run</summary>"
            f"<table><tr><th>option</th><th>value</th></tr>{rows}</table></details>")


def table_rows(report: dict) -> list[dict]:
    """The downloadable table: one row per released topic, ranked."""
    groups_by_topic = {i: g["name"] for g in (report.get("hierarchy") or {}).get("groups", []) for i in g["topic_ids"]}
    return [{"rank": rank, "id": t["id"], "name": t["name"], "size": t["size"], "keywords": list(t["keywords"]),
             "group": groups_by_topic.get(t["id"], ""), "description": t.get("description", ""),
             "label_source": t.get("label_source", ""), "label_evidence": t.get("label_evidence", ""),
             "synthetic_exemplars": [e["text"] for e in t.get("exemplars", [])]}
            for rank, t in enumerate(report.get("topics", []), start=1)]


TABLE_COLUMNS = ["rank", "id", "name", "size", "keywords", "group", "description", "label_source",
                 "label_evidence", "synthetic_exemplars"]


def run_label(report: dict) -> str:
    config = report.get("config", {})
    run_id = config.get("run_id") or ""
    date = config.get("date") or day_of_run_id(run_id) or "unknown date"
    return f"{date}, run {run_id}" if run_id else date


def render_report(report: dict) -> str:
    """The report page for one report.json dict."""
    topics = report.get("topics", [])
    by_id = {t["id"]: t for t in topics}
    ranks = {t["id"]: rank for rank, t in enumerate(topics, start=1)}
    groups_by_topic = {i: g["name"] for g in (report.get("hierarchy") or {}).get("groups", []) for i in g["topic_ids"]}
    config = report.get("config", {})
    header = (f"<h1>What people talk to the assistant about</h1><p class=\"sub\">{esc(run_label(report))} &middot; "
              f"{len(topics)} topics released &middot; model {esc(config.get('embedding_model', ''))} &middot; "
              "sizes are noisy counts of conversations &middot; <a href=\"#privacy\">user-level differential "
              f"privacy: &epsilon; = {_number(report.get('privacy', {}).get('epsilon', 0.0))}, "
              f"&delta; = {_number(report.get('privacy', {}).get('delta', 0.0))}</a></p>")
    toolbar = ("<div class=\"toolbar\"><input id=\"search\" type=\"search\" placeholder=\"Filter topics by name or "
               "keyword\" aria-label=\"filter topics\"><span id=\"match-count\" class=\"sub\"></span>"
               "<a id=\"download-csv\" download=\"topics.csv\" href=\"#\">Download CSV</a>"
               "<a id=\"download-json\" download=\"topics.json\" href=\"#\">Download JSON</a></div>")
    body = (header + toolbar
            + f"<section id=\"ranking\"><h2>Topics by size</h2>{_bar_chart(topics)}</section>"
            + _groups(report, by_id, ranks, groups_by_topic)
            + f"<section><h2>All topics</h2><table id=\"topics\">{_TOPIC_HEADER}"
            + _topic_rows(topics, ranks, groups_by_topic) + "</table></section>"
            + _privacy_panel(report)
            + f"<section><h2>Run</h2>{_config_table(config)}</section>"
            + "<script type=\"application/json\" id=\"table-data\">"
            + _json_for_script({"columns": TABLE_COLUMNS, "rows": table_rows(report)}) + "</script>")
    return _page("Topic insights " + run_label(report), body, [_FILTER_JS, _DOWNLOAD_JS])


# ------------------------------------------------------------------------------------------ comparison

STATUS_ORDER = ("grew", "shrank", "appeared", "vanished", "about the same")


def _change_chart(rows: list[dict]) -> str:
    changed = [r for r in rows if r["old"] is not None or r["new"] is not None]
    if not changed:
        return "<p class=\"panel\">Neither report released a topic.</p>"
    label_width, half, row, top = 340, 260, 22, 8
    changes = [(r["new"]["size"] if r["new"] else 0) - (r["old"]["size"] if r["old"] else 0) for r in changed]
    largest = max(max(abs(c) for c in changes), 1)
    centre = label_width + half
    bars = []
    for index, (item, change) in enumerate(zip(changed, changes)):
        y = top + index * row
        name = (item["new"] or item["old"])["name"]
        width = max(1, round(half * abs(change) / largest))
        x = centre if change >= 0 else centre - width
        kind = "grow" if change >= 0 else "shrink"
        value_x = centre + width + 6 if change >= 0 else centre - width - 6
        anchor = "start" if change >= 0 else "end"
        bars.append(
            f"<g class=\"{kind}\"><title>{esc(name)}: {esc(item['status'])} ({change:+,})</title>"
            f"<text x=\"{label_width - 8}\" y=\"{y + 15}\" text-anchor=\"end\">{esc(_truncate(name, 48))}</text>"
            f"<rect x=\"{x}\" y=\"{y + 3}\" width=\"{width}\" height=\"{row - 6}\"></rect>"
            f"<text x=\"{value_x}\" y=\"{y + 15}\" text-anchor=\"{anchor}\">{change:+,}</text></g>")
    height = top * 2 + row * len(changed)
    return (f"<svg id=\"chart\" role=\"img\" aria-label=\"change in noisy size\" width=\"{centre + half + 60}\" "
            f"height=\"{height}\">{''.join(bars)}</svg>")


def render_comparison(comparison: dict) -> str:
    """The comparison page for a dict made by beam_jobs.compare_reports.compare."""
    rows = comparison["rows"]
    counts = comparison["counts"]
    summary = ", ".join(f"{counts.get(status, 0)} {status}" for status in STATUS_ORDER)
    margin = comparison.get("noise_margin")
    margin_text = (f"A matched topic grew or shrank when its size changed by more than {margin:.0f} conversations "
                   "(twice the standard deviation of the difference of two noisy sizes); smaller changes are "
                   "\"about the same\": they are within the privacy noise." if margin else "")
    header = (f"<h1>How the topics changed</h1><p class=\"sub\">from {esc(comparison['old']['label'])} "
              f"({comparison['old']['topics']} topics) to {esc(comparison['new']['label'])} "
              f"({comparison['new']['topics']} topics): {esc(summary)}</p>"
              "<div class=\"panel\"><p>Topics are matched by the similarity of their released names and keywords "
              f"(embedding cosine similarity at least {comparison['threshold']:.2f}, one-to-one, best total "
              f"similarity first). {margin_text} Everything here is computed from the two released reports: "
              "no additional privacy cost, but a user in both runs is protected at the sum of both runs' "
              "&epsilon;.</p></div>")
    toolbar = ("<div class=\"toolbar\"><input id=\"search\" type=\"search\" placeholder=\"Filter topics by name or "
               "keyword\" aria-label=\"filter topics\"><span id=\"match-count\" class=\"sub\"></span>"
               "<a id=\"download-csv\" download=\"comparison.csv\" href=\"#\">Download CSV</a>"
               "<a id=\"download-json\" download=\"comparison.json\" href=\"#\">Download JSON</a></div>")

    def side(topic):
        if topic is None:
            return "<td>&mdash;</td><td class=\"num\">&mdash;</td>"
        return (f"<td>{esc(topic['name'])}<br>{_keywords(topic['keywords'])}</td>"
                f"<td class=\"num\">{topic['size']:,}</td>")

    def searchable(row):
        topics = [t for t in (row["old"], row["new"]) if t]
        return _search_text(*(t["name"] for t in topics), *(t["keywords"] for t in topics))

    table_rows_html = "".join(
        f"<tr data-search=\"{searchable(r)}\">"
        f"<td class=\"status\">{esc(r['status'])}</td>{side(r['old'])}{side(r['new'])}"
        f"<td class=\"num\">{'' if r['change'] is None else format(r['change'], '+,')}</td>"
        f"<td class=\"num\">{'' if r['similarity'] is None else format(r['similarity'], '.2f')}</td></tr>"
        for r in rows)
    download = [{"status": r["status"], "old_name": r["old"]["name"] if r["old"] else "",
                 "old_size": r["old"]["size"] if r["old"] else "", "new_name": r["new"]["name"] if r["new"] else "",
                 "new_size": r["new"]["size"] if r["new"] else "", "change": "" if r["change"] is None else r["change"],
                 "similarity": "" if r["similarity"] is None else round(r["similarity"], 2)} for r in rows]
    columns = ["status", "old_name", "old_size", "new_name", "new_size", "change", "similarity"]
    body = (header + toolbar
            + f"<section id=\"ranking\"><h2>Change in size</h2>{_change_chart(rows)}</section>"
            + "<section><h2>Topics</h2><table id=\"topics\"><tr><th>status</th><th>before</th>"
            + "<th class=\"num\">size</th><th>after</th><th class=\"num\">size</th><th class=\"num\">change</th>"
            + f"<th class=\"num\">similarity</th></tr>{table_rows_html}</table></section>"
            + "<script type=\"application/json\" id=\"table-data\">"
            + _json_for_script({"columns": columns, "rows": download}) + "</script>")
    return _page("Topic comparison", body, [_FILTER_JS, _DOWNLOAD_JS])
