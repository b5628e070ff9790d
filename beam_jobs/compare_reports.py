"""Compare two releases (last night vs tonight, DP vs baseline): which topics grew, shrank, appeared or vanished.

    python -m beam_jobs.compare_reports OLD NEW --output compare.html [--json compare.json]

OLD and NEW are report.json files or run folders (RUN/ or RUN/release/). Topics are matched
one-to-one by the cosine similarity of their embedded names and keywords (Hungarian assignment,
pairs below --threshold stay unmatched). A matched topic grew or shrank only when its size changed
by more than twice the standard deviation of the difference of two noisy sizes; smaller changes are
within the privacy noise. Only released data is read, so the comparison costs no privacy budget.
"""

from __future__ import annotations

import argparse
import math
import sys
from collections.abc import Callable

import numpy as np

from backends.embedding import DEFAULT_EMBEDDING_MODEL
from publishing.report_html import STATUS_ORDER, render_comparison, run_label
from publishing.timeline import size_noise_std
from transforms.topic_hierarchy import topic_vectors

DEFAULT_THRESHOLD = 0.75


def load_report(location: str) -> dict:
    """A report.json, or the report.json of a run folder or release folder (local or gs://)."""
    from apache_beam.io.filesystems import FileSystems

    from transforms.write_outputs import read_json
    if location.endswith(".json"):
        return read_json(location)
    for candidate in (FileSystems.join(location, "release", "report.json"), FileSystems.join(location, "report.json")):
        if FileSystems.exists(candidate):
            return read_json(candidate)
    raise FileNotFoundError(f"no report.json at {location}, {location}/report.json or {location}/release/report.json")


def change_margin(old: dict, new: dict) -> float:
    """Twice the standard deviation of (new noisy size - old noisy size) for the same true size."""
    return 2 * math.sqrt(size_noise_std(old) ** 2 + size_noise_std(new) ** 2)


def match_topics(old_topics: list[dict], new_topics: list[dict], embed: Callable[[list[str]], np.ndarray],
                 threshold: float) -> list[tuple[int, int, float]]:
    """(old index, new index, cosine similarity) of the one-to-one matching with the highest total similarity,
    keeping pairs at or above `threshold`. Topics without released keywords ("Unlabelled topic") all look
    alike, so they are never matched: they show as appeared or vanished."""
    if not old_topics or not new_topics:
        return []
    from scipy.optimize import linear_sum_assignment
    similarity = topic_vectors(old_topics, embed) @ topic_vectors(new_topics, embed).T
    similarity[[not t["keywords"] for t in old_topics], :] = -1.0
    similarity[:, [not t["keywords"] for t in new_topics]] = -1.0
    rows, columns = linear_sum_assignment(-similarity)
    return sorted((int(i), int(j), float(similarity[i, j])) for i, j in zip(rows, columns)
                  if similarity[i, j] >= threshold)


def compare(old: dict, new: dict, embed: Callable[[list[str]], np.ndarray], threshold: float = DEFAULT_THRESHOLD) -> dict:
    """The comparison as a dict (rendered by publishing.report_html.render_comparison)."""
    old_topics, new_topics = old.get("topics", []), new.get("topics", [])
    margin = change_margin(old, new)
    rows = []
    matched_old, matched_new = set(), set()
    for i, j, similarity in match_topics(old_topics, new_topics, embed, threshold):
        matched_old.add(i)
        matched_new.add(j)
        change = new_topics[j]["size"] - old_topics[i]["size"]
        status = "grew" if change > margin else "shrank" if change < -margin else "about the same"
        rows.append({"status": status, "old": old_topics[i], "new": new_topics[j], "change": change,
                     "similarity": similarity})
    rows += [{"status": "appeared", "old": None, "new": t, "change": t["size"], "similarity": None}
             for j, t in enumerate(new_topics) if j not in matched_new]
    rows += [{"status": "vanished", "old": t, "new": None, "change": -t["size"], "similarity": None}
             for i, t in enumerate(old_topics) if i not in matched_old]
    rows.sort(key=lambda r: (STATUS_ORDER.index(r["status"]), -abs(r["change"])))
    counts = {status: sum(r["status"] == status for r in rows) for status in STATUS_ORDER}
    return {
        "old": {"label": run_label(old), "topics": len(old_topics), "epsilon": old.get("privacy", {}).get("epsilon")},
        "new": {"label": run_label(new), "topics": len(new_topics), "epsilon": new.get("privacy", {}).get("epsilon")},
        "threshold": threshold, "noise_margin": margin, "counts": counts, "rows": rows,
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("old", help="the earlier report.json or run folder")
    parser.add_argument("new", help="the later report.json or run folder")
    parser.add_argument("--output", required=True, help="where to write the comparison page (.html)")
    parser.add_argument("--json", default=None, help="also write the comparison as JSON here")
    parser.add_argument("--threshold", type=float, default=DEFAULT_THRESHOLD,
                        help="cosine similarity of two topics' names and keywords needed to match them")
    parser.add_argument("--embedding_model", default=None,
                        help="model that embeds the topic names; default: the new report's, else all-MiniLM-L6-v2")
    args = parser.parse_args(argv)
    try:
        old, new = load_report(args.old), load_report(args.new)
    except (OSError, ValueError) as error:
        print(f"error: {error}", file=sys.stderr)
        return 2
    model = args.embedding_model or new.get("config", {}).get("embedding_model") or DEFAULT_EMBEDDING_MODEL
    from backends.embedding import embed_texts
    comparison = compare(old, new, lambda texts: embed_texts(model, texts), args.threshold)
    from transforms.write_outputs import write_json, write_text
    write_text(args.output, render_comparison(comparison))
    if args.json:
        write_json(args.json, comparison)
    counts = ", ".join(f"{comparison['counts'][s]} {s}" for s in STATUS_ORDER)
    print(f"{counts} -> {args.output}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
