"""report.json -> report.html, and a comparison -> compare.html: self-contained pages, no network at view time.

Pure functions of released data (the report dict) to an HTML string: inline CSS, static inline SVG
and a little vanilla JS (search and facet filter, JSON/CSV download built from the embedded table).
With report.json's `facets`, the page shows each facet's overall table and each topic's facet bars,
the downloads carry each topic's facet shares,
every number read from the report's rows (dp_ops.fixed_histogram.histogram_rows): nothing is
recomputed here. Rendered by
Jinja2 from publishing/templates/ (report.html.j2 and compare.html.j2 on the layout report_page.html.j2,
with report_macros.html.j2, the scripts report_filter.js.j2 and report_download.js.j2, and
report.css.j2, which the timeline page includes too) with autoescaping on for every value: topic names
may come from a model. This module only prepares the data (numbers formatted, chart geometry
computed); the markup is in the templates. The release gate scans the page as text, so the markup
avoids what its patterns look for (no URLs, no space-separated runs of digits, integers only in the SVG).
"""

from __future__ import annotations

import functools
import json

from jinja2 import Environment, PackageLoader, StrictUndefined, select_autoescape
from markupsafe import Markup

from core.dates import day_of_run_id
from core.dp_stages import KEYWORD_HISTOGRAMS
from publishing.report import noise_margin, shown_count, shown_counts, size_noise_of


def _json_for_script(value) -> Markup:
    """JSON that cannot close its <script> element or open a new one. Marked safe: a script element's
    text is not HTML-decoded, so escaping it as HTML would change the JSON."""
    return Markup(json.dumps(value, ensure_ascii=False)
                  .replace("&", "\\u0026").replace("<", "\\u003c").replace(">", "\\u003e"))


def template_environment(**filters) -> Environment:
    """The Jinja2 environment of the pages' templates (publishing/templates/), autoescaping every value,
    with the page's own `filters`. A page builds it once: loading and compiling the templates is the slow part."""
    environment = Environment(loader=PackageLoader("publishing", "templates"), undefined=StrictUndefined,
                              autoescape=select_autoescape(enabled_extensions=("html", "html.j2"), default=True),
                              trim_blocks=True, lstrip_blocks=True)
    environment.filters.update(filters)
    return environment


@functools.cache
def _environment() -> Environment:
    return template_environment(script_json=_json_for_script)


def _template(name: str):
    return _environment().get_template(name)


def _text(value) -> str:
    """A value as the page shows it: None as nothing."""
    return "" if value is None else str(value)


def _number(value: float) -> str:
    """Short, gate-safe rendering of an epsilon, delta or noise parameter."""
    if value == 0:
        return "0"
    if abs(value) < 1e-3:
        return f"{value:.1e}"
    return f"{value:.4g}"


def _keywords(keywords) -> list[str]:
    return [_text(k) for k in keywords]


_LABEL_SOURCES = {
    "dp_keyword_histogram": "from the DP keyword votes",
    "dp_category_votes": "its category from the DP category votes; keywords of that category nearest its DP centre",
    "nearest_keywords_to_dp_centre": "nearest to the topic's DP centre (too few votes to clear the noise)",
    "none": "no keyword cleared the noise",
}


# What a label's evidence (backends/label_evidence.py) adds on the page: a guess is never shown as a finding.
_LABEL_EVIDENCE = {
    "approximate": "approximate label: no vote of its own conversations behind it",
    "unverified": ("unverified: its nearest keywords lie in a sensitive category, with no vote of its own "
                   "conversations behind them; not evidence of that activity"),
}


def _label_source(topic: dict) -> dict | None:
    source = topic.get("label_source")
    if source is None:
        return None
    evidence = topic.get("label_evidence", "")
    shown = _LABEL_SOURCES.get(source, source) + (f"; {_LABEL_EVIDENCE[evidence]}" if evidence in _LABEL_EVIDENCE else "")
    if topic.get("name_evidence") == "dp_centre_decoded":  # --centre_decoder (backends/centre_decoder.py)
        shown += (f"; name and description decoded from the DP centre (the labels gave "
                  f"\u201c{topic.get('name_from_labels', '')}\u201d): a guess, may be wrong")
    return {"source": _text(source), "evidence": _text(evidence), "text": shown}


def _search_text(*parts) -> str:
    words = []
    for part in parts:
        words += part if isinstance(part, list) else [part or ""]
    return " ".join(words).lower()


def _truncate(text: str, limit: int) -> str:
    return text if len(text) <= limit else text[: limit - 1] + "\u2026"


# ---------------------------------------------------------------------------------------------- report


def _privacy(report: dict) -> dict:
    """What the privacy panel says: the spend per stage, what the noise means, the ledger."""
    privacy, config = report.get("privacy", {}), report.get("config", {})
    noise = size_noise_of(privacy)
    margin = noise_margin(noise)
    size_noise = None
    if margin is not None:
        threshold = config.get("min_cluster_size")
        size_noise = {"kind": _text(noise.get("kind", "")), "std": f"{noise.get('std', noise.get('sigma', 0.0)):.1f}",
                      "margin": f"{margin:.0f}", "mostly_noise_below": f"{2 * margin:.0f}",
                      "threshold": _number(threshold) if isinstance(threshold, (int, float)) else None}
    ledger = config.get("privacy_ledger")
    if ledger:
        cap = ledger.get("max_epsilon_per_window")
        ledger = {"window_days": _text(ledger.get("window_days")), "cap": _number(cap) if cap else None}
    return {
        "limit": _text(privacy.get("max_conversations_per_user", config.get("max_conversations_per_user"))),
        "mechanisms": [{"stage": _text(m.get("stage")), "releases": _text(m.get("releases", m.get("stage"))),
                        "mechanism": _text(m.get("mechanism")), "epsilon": _number(m.get("epsilon", 0.0)),
                        "delta": _number(m.get("delta", 0.0))}
                       for m in privacy.get("mechanisms", [])],
        "composition": _text(privacy.get("composition", "basic composition")),
        "size_noise": size_noise,
        "keyword_noise_stds": [f"{m['noise'].get('std', m['noise'].get('sigma', 0.0)):.1f}"
                               for m in privacy.get("mechanisms", [])
                               if m.get("stage") == KEYWORD_HISTOGRAMS and m.get("noise")],
        "exemplars_note": _text(report.get("exemplars_note") or None),
        "labelling_note": _text(privacy.get("labelling_note") or None),
        "ledger": ledger or None,
        "seeded": bool(config.get("noise_seed_fixed")),
    }


def _bar_chart(topics: list[dict]) -> dict | None:
    """The ranking chart's geometry (SVG user units, integers): one bar per topic, longest the largest."""
    if not topics:
        return None
    label_width, bar_width, row, top = 340, 520, 22, 8
    largest = max(max(shown_count(t["size"]) for t in topics), 1)
    bars = []
    for index, topic in enumerate(topics):
        y = top + index * row
        width = max(1, round(bar_width * shown_count(topic["size"]) / largest))
        bars.append({"name": _text(topic["name"]), "label": _truncate(topic["name"], 48),
                     "size": f"{shown_count(topic['size']):,}",
                     "text_y": y + 15, "y": y + 3, "width": width, "value_x": label_width + width + 6})
    return {"width": label_width + bar_width + 80, "height": top * 2 + row * len(topics), "label_x": label_width - 8,
            "bar_x": label_width, "bar_height": row - 6, "bars": bars}


def _topic_rows(topics: list[dict], ranks: dict[int, int], groups_by_topic: dict[int, str],
                bars: dict[str, list[dict]]) -> list[dict]:
    return [{"search": _search_text(t["name"], t["keywords"], t.get("description", "")), "rank": ranks[t["id"]],
             "id": _text(t["id"]), "name": _text(t["name"]), "size": f"{shown_count(t['size']):,}",
             "keywords": _keywords(t["keywords"]),
             "label": _label_source(t), "shares": _vote_shares(t), "group": _text(groups_by_topic.get(t["id"], "")),
             "description": _text(t.get("description", "")),
             "exemplars": [_text(e["text"]) for e in t.get("exemplars") or []], "facets": bars.get(str(t["id"]), []),
             "token_decoded": _text((t.get("token_decoded") or {}).get("description", ""))}
            for t in topics]


def _vote_shares(topic: dict) -> list[dict]:
    """Each shown keyword's and the voted category's share of the topic's votes, with its 95% interval."""
    rows = list(topic.get("keyword_shares") or []) + ([topic["category_share"]] if topic.get("category_share") else [])
    return [{"label": _text(row.get("keyword", row.get("category"))), "share": f"{row['share']:.0%}",
             "interval": f"{row['share_low']:.0%}\u2013{row['share_high']:.0%}"} for row in rows]


def _groups(report: dict, by_id: dict[int, dict], ranks: dict[int, int], groups_by_topic: dict[int, str],
            bars: dict[str, list[dict]]) -> list[dict]:
    groups = []
    for group in (report.get("hierarchy") or {}).get("groups", []):
        members = [by_id[i] for i in group["topic_ids"] if i in by_id]
        groups.append({"name": _text(group["name"]), "topic_count": len(members), "size": f"{shown_count(group['size']):,}",
                       "keywords": _keywords(group["keywords"]),
                       "rows": _topic_rows(members, ranks, groups_by_topic, bars)})
    return groups


# ---------------------------------------------------------------------------------------------- facets

# A topic's bars draw its answers whose noisy share is at least FACET_BAR_MIN_SHARE, largest first, at
# most FACET_BARS: a topic's cells carry the noise of a few users each, so a small topic's small shares
# are noise, and a language facet has 22 answers. The overall table and the filter use every answer.
FACET_BAR_MIN_SHARE = 0.05
FACET_BARS = 4


def _percent(share: float) -> str:
    return f"{100 * share:.1f}%"


def answer_label(label, answer: str) -> str:
    """"Spanish (es)": a facet answer's public label (report.json's `labels`) and its id (the filter's
    and facets.csv's name for it); one of them when they differ in case only ("High", "unknown")."""
    label = _text(answer if label is None else label)
    return label if label.lower() == _text(answer).lower() else f"{label} ({answer})"


def _answer_label(section: dict, answer: str) -> str:
    return answer_label((section.get("labels") or {}).get(answer), answer)


def _facet_tables(facets: dict) -> list[dict]:
    """The overall table of each facet: every answer in the facet's fixed order, its noisy size in users
    with its 95% interval (clamped at 0: shown_counts) and its noisy share with the share's (all read from
    report.json)."""
    return [{"name": _text(name), "question": _text(section["question"]),
             "rows": [{"answer": _text(row["answer"]), "label": _answer_label(section, row["answer"]),
                       "size": f"{shown['size']:,.0f}", "interval": f"{shown['low']:,.0f} to {shown['high']:,.0f}",
                       "share": _percent(row["share"]),
                       "share_interval": f"{_percent(row['share_low'])} to {_percent(row['share_high'])}"}
                      for row, shown in ((row, shown_counts(row)) for row in section["overall"])]}
            for name, section in facets.items()]


def _facet_bar_chart(section: dict, rows: list[dict]) -> dict:
    """One topic's bars for one facet (SVG user units, integers): a bar per shown answer, its length the
    noisy share (the full width is 100%), a whisker over the share's 95% interval."""
    label_width, bar_width, row_height, top = 110, 120, 16, 2
    shown = sorted((r for r in rows if r["share"] >= FACET_BAR_MIN_SHARE), key=lambda r: -r["share"])[:FACET_BARS]
    bars = []
    for index, row in enumerate(shown):
        y = top + index * row_height
        label = _answer_label(section, row["answer"])
        bars.append({"answer": _text(row["answer"]), "label": _truncate(label, 16), "y": y + 3, "text_y": y + 12,
                     "whisker_y": y + 8, "width": max(1, round(bar_width * row["share"])),
                     "low_x": label_width + round(bar_width * row["share_low"]),
                     "high_x": label_width + round(bar_width * row["share_high"]),
                     "value": f"{100 * row['share']:.0f}%",
                     "title": (f"{label}: {_percent(row['share'])} of the topic (95%: {_percent(row['share_low'])} "
                               f"to {_percent(row['share_high'])}), {shown_count(row['size']):,.0f} users")})
    return {"width": label_width + bar_width + 40, "height": top * 2 + row_height * max(len(shown), 1),
            "label_x": label_width - 6, "bar_x": label_width, "bar_height": row_height - 6,
            "value_x": label_width + bar_width + 4, "bars": bars}


def _facet_bars(facets: dict) -> dict[str, list[dict]]:
    """{topic id: [{"name", "chart"}]}: each released topic's bars, one small chart per facet."""
    bars: dict[str, list[dict]] = {}
    for name, section in facets.items():
        for topic, rows in section["by_topic"].items():
            bars.setdefault(str(topic), []).append({"name": _text(name), "chart": _facet_bar_chart(section, rows)})
    return bars


def _facet_filter_data(facets: dict) -> dict:
    """What the page's facet filter compares: {facet: {topic id: {answer: noisy share}}}, the shares as
    report.json has them."""
    return {name: {str(topic): {row["answer"]: row["share"] for row in rows}
                   for topic, rows in section["by_topic"].items()}
            for name, section in facets.items()}


def _config_rows(config: dict) -> list[dict]:
    def show(value):
        if isinstance(value, dict):
            return ", ".join(f"{k}: {show(v)}" for k, v in value.items())
        if isinstance(value, float):
            return _number(value)
        return str(value)

    return [{"name": _text(key), "value": show(value)} for key, value in config.items()]


TABLE_COLUMNS = ["rank", "id", "name", "size", "keywords", "group", "description", "label_source",
                 "label_evidence", "synthetic_exemplars"]
# Each topic's facet answers in the downloads: the by_topic row's noisy share and its 95% interval.
FACET_SHARE_VALUES = ("share", "share_low", "share_high")


def _column_part(name) -> str:
    """A facet's name or an answer's id inside a column name, its '%' and ':' percent-encoded: facet
    files may use either, and "a:b" then stays one part."""
    return _text(name).replace("%", "%25").replace(":", "%3A")


def _facet_columns(facets: dict) -> list[tuple[str, str, str, str]]:
    """(column, facet, answer, value) per facet, answer (the facet's fixed order) and FACET_SHARE_VALUES."""
    return [(f"facet:{_column_part(facet)}:{_column_part(answer)}:{value}", facet, answer, value)
            for facet, section in facets.items() for answer in section["answers"] for value in FACET_SHARE_VALUES]


def table_columns(report: dict) -> list[str]:
    """The downloads' columns: TABLE_COLUMNS, then with `facets` one per facet, answer and share value,
    "facet:<facet>:<answer>:share" (and share_low, share_high)."""
    return TABLE_COLUMNS + [column for column, *_ in _facet_columns(report.get("facets") or {})]


def table_rows(report: dict) -> list[dict]:
    """The downloadable table: one row per released topic, ranked; its facet cells are report.json's
    by_topic numbers, None for a topic without that facet's row."""
    groups_by_topic = {i: g["name"] for g in (report.get("hierarchy") or {}).get("groups", []) for i in g["topic_ids"]}
    facets = report.get("facets") or {}
    facet_columns = _facet_columns(facets)
    rows = []
    for rank, t in enumerate(report.get("topics", []), start=1):
        row = {"rank": rank, "id": t["id"], "name": t["name"], "size": t["size"], "keywords": list(t["keywords"]),
               "group": groups_by_topic.get(t["id"], ""), "description": t.get("description", ""),
               "label_source": t.get("label_source", ""), "label_evidence": t.get("label_evidence", ""),
               "synthetic_exemplars": [e["text"] for e in t.get("exemplars", [])]}
        answers = {facet: {r["answer"]: r for r in section["by_topic"].get(str(t["id"]), [])}
                   for facet, section in facets.items()}
        for column, facet, answer, value in facet_columns:
            cell = answers[facet].get(answer)
            row[column] = None if cell is None else cell[value]
        rows.append(row)
    return rows


def run_label(report: dict) -> str:
    config = report.get("config", {})
    run_id = config.get("run_id") or ""
    date = config.get("date") or day_of_run_id(run_id) or "unknown date"
    return f"{date}, run {run_id}" if run_id else date


# report.json's keys the page shows in their own place, or leaves to the timeline page (the themes, which say
# what changed night to night). Any other key is a release stage's section (transforms/release_stages/), shown
# as data under its name, so a new stage's release is on the page before it has a view of its own.
PAGE_KEYS = ("topics", "privacy", "config", "noisy_counts", "keyword_agreement", "exemplars_note",
             "decoded_names_note", "token_decoding_note", "hierarchy", "centres", "themes", "facets")


def _other_releases(report: dict) -> list[dict]:
    """Each section the page has no view for: its key and its entries (a value that is not a mapping is one
    entry), each value as compact JSON."""
    sections = []
    for key, section in report.items():
        if key in PAGE_KEYS:
            continue
        items = section.items() if isinstance(section, dict) else [("", section)]
        sections.append({"key": _text(key), "title": _text(key).replace("_", " ").capitalize(),
                         "rows": [{"name": _text(name), "value": json.dumps(value, ensure_ascii=False, default=str)}
                                  for name, value in items]})
    return sections


def render_report(report: dict) -> str:
    """The report page for one report.json dict."""
    topics = report.get("topics", [])
    by_id = {t["id"]: t for t in topics}
    ranks = {t["id"]: rank for rank, t in enumerate(topics, start=1)}
    groups_by_topic = {i: g["name"] for g in (report.get("hierarchy") or {}).get("groups", []) for i in g["topic_ids"]}
    config = report.get("config", {})
    privacy = report.get("privacy", {})
    facets = report.get("facets") or {}
    bars = _facet_bars(facets)
    return _template("report.html.j2").render(
        title="Topic insights " + run_label(report), run_label=run_label(report), topic_count=len(topics),
        model=_text(config.get("embedding_model", "")), epsilon=_number(privacy.get("epsilon", 0.0)),
        delta=_number(privacy.get("delta", 0.0)), chart=_bar_chart(topics),
        groups=_groups(report, by_id, ranks, groups_by_topic, bars),
        topics=_topic_rows(topics, ranks, groups_by_topic, bars),
        facets=_facet_tables(facets), facet_filter=_facet_filter_data(facets), other_releases=_other_releases(report),
        bar_min_share=f"{100 * FACET_BAR_MIN_SHARE:.0f}%", max_bars=FACET_BARS,
        privacy=_privacy(report), config=_config_rows(config),
        table={"columns": table_columns(report), "rows": table_rows(report)})


# ------------------------------------------------------------------------------------------ comparison

STATUS_ORDER = ("grew", "shrank", "appeared", "vanished", "about the same")


def _change_chart(rows: list[dict]) -> dict | None:
    """The change chart's geometry (SVG user units, integers): bars right of the centre line for growth,
    left for shrinking, longest the largest change."""
    changed = [r for r in rows if r["old"] is not None or r["new"] is not None]
    if not changed:
        return None
    label_width, half, row, top = 340, 260, 22, 8
    changes = [(r["new"]["size"] if r["new"] else 0) - (r["old"]["size"] if r["old"] else 0) for r in changed]
    largest = max(max(abs(c) for c in changes), 1)
    centre = label_width + half
    bars = []
    for index, (item, change) in enumerate(zip(changed, changes)):
        y = top + index * row
        name = (item["new"] or item["old"])["name"]
        width = max(1, round(half * abs(change) / largest))
        bars.append({"kind": "grow" if change >= 0 else "shrink", "name": _text(name), "label": _truncate(name, 48),
                     "status": _text(item["status"]), "change": f"{change:+,}", "text_y": y + 15,
                     "x": centre if change >= 0 else centre - width, "y": y + 3, "width": width,
                     "value_x": centre + width + 6 if change >= 0 else centre - width - 6,
                     "anchor": "start" if change >= 0 else "end"})
    return {"width": centre + half + 60, "height": top * 2 + row * len(changed), "label_x": label_width - 8,
            "bar_height": row - 6, "bars": bars}


def _side(topic: dict | None) -> dict | None:
    if topic is None:
        return None
    return {"name": _text(topic["name"]), "keywords": _keywords(topic["keywords"]), "size": f"{topic['size']:,}"}


def render_comparison(comparison: dict) -> str:
    """The comparison page for a dict made by beam_jobs.compare_reports.compare."""
    rows = comparison["rows"]
    counts = comparison["counts"]
    margin = comparison.get("noise_margin")

    def searchable(row):
        topics = [t for t in (row["old"], row["new"]) if t]
        return _search_text(*(t["name"] for t in topics), *(t["keywords"] for t in topics))

    download = [{"status": r["status"], "old_name": r["old"]["name"] if r["old"] else "",
                 "old_size": r["old"]["size"] if r["old"] else "", "new_name": r["new"]["name"] if r["new"] else "",
                 "new_size": r["new"]["size"] if r["new"] else "", "change": "" if r["change"] is None else r["change"],
                 "similarity": "" if r["similarity"] is None else round(r["similarity"], 2)} for r in rows]
    columns = ["status", "old_name", "old_size", "new_name", "new_size", "change", "similarity"]
    return _template("compare.html.j2").render(
        title="Topic comparison",
        old={"label": _text(comparison["old"]["label"]), "topics": comparison["old"]["topics"]},
        new={"label": _text(comparison["new"]["label"]), "topics": comparison["new"]["topics"]},
        counts=[{"count": counts.get(status, 0), "status": status} for status in STATUS_ORDER],
        threshold=f"{comparison['threshold']:.2f}", margin=f"{margin:.0f}" if margin else None,
        chart=_change_chart(rows),
        rows=[{"search": searchable(r), "status": _text(r["status"]), "old": _side(r["old"]), "new": _side(r["new"]),
               "change": "" if r["change"] is None else format(r["change"], "+,"),
               "similarity": "" if r["similarity"] is None else format(r["similarity"], ".2f")} for r in rows],
        table={"columns": columns, "rows": download})
