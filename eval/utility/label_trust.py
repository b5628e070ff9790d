"""Can the labels of a released report be trusted? Figures read from report.json files alone.

    python -m eval.utility.label_trust out/sample/release/report.json [more reports ...]

For each report (public data only) it prints:
  named by votes         topics whose keywords or category are their own DP votes (`label_source`
                         dp_keyword_histogram or dp_category_votes), of the released topics
  sensitive, no votes    topics that the report places in a sensitive category of the keyword set
                         (their name starts with it, or their group is named by it) without votes of
                         their own behind their keywords: false-alarm candidates; want 0
  unverified             topics with an unverified label instead (backends/label_evidence.py: a guess in a
                         sensitive category, named by its nearest non-sensitive category or unlabelled)
  group agreement        of the topics whose keywords have a dominant category (unverified ones
                         aside), those sitting in the group named by that category
The keyword set's categories are the bundled set's unless --keyword_set names another; keywords it
leaves without one take the bundled set's nearest, by the report's embedding model, as the job does.
For a report of this code "group agreement" holds by construction (transforms/topic_hierarchy.py):
it measures older reports, and guards against a regression.
"""

from __future__ import annotations

import argparse
import json

from backends.keyword_categories import KeywordCategories, dominant_category
from backends.keyword_set import load_keyword_set
from backends.label_evidence import UNVERIFIED
from config.embedding import Encoder
from core.label_sources import VOTE_SOURCES


def label_trust(report: dict, category_of: dict[str, str | None], sensitive: frozenset[str]) -> dict:
    topics = report.get("topics", [])
    group_of = {i: g["name"] for g in (report.get("hierarchy") or {}).get("groups", []) for i in g["topic_ids"]}
    voted = [t for t in topics if t.get("label_source") in VOTE_SOURCES]
    claims_sensitive = [t for t in topics
                        if any(t["name"].startswith(c) for c in sensitive) or group_of.get(t["id"]) in sensitive]
    unsupported = [t for t in claims_sensitive if t.get("label_source") not in VOTE_SOURCES]
    unverified = [t for t in topics if t.get("label_evidence") == UNVERIFIED]
    categorised = [(t, t.get("voted_category") or dominant_category(t["keywords"], category_of)) for t in topics
                   if t.get("label_evidence") != UNVERIFIED]
    categorised = [(t, c) for t, c in categorised if c is not None]
    agree = [t for t, c in categorised if group_of.get(t["id"]) == c]
    return {"topics": len(topics), "named_by_votes": len(voted),
            "sensitive_without_votes": len(unsupported),
            "sensitive_without_votes_names": [t["name"] for t in unsupported],
            "unverified": len(unverified), "categorised": len(categorised), "in_own_category_group": len(agree),
            "group_agreement": len(agree) / len(categorised) if categorised else None,
            "groups": len({g for g in group_of.values()})}


def format_trust(path: str, figures: dict) -> str:
    share = figures["group_agreement"]
    return (f"{path}: {figures['topics']} topics; named by votes {figures['named_by_votes']} "
            f"({figures['named_by_votes'] / max(figures['topics'], 1):.0%}); sensitive category without votes "
            f"{figures['sensitive_without_votes']} {figures['sensitive_without_votes_names'] or ''}; unverified "
            f"{figures['unverified']}; group agreement {figures['in_own_category_group']} of "
            f"{figures['categorised']} = {'n/a' if share is None else f'{share:.0%}'} in {figures['groups']} groups")


def report_encoder(config: dict) -> Encoder | None:
    """The encoder a report's run embedded with (its public config; an in-process report names the model only,
    run as the job's defaults run it), None when it names no model."""
    if not config.get("embedding_model"):
        return None
    defaults = Encoder()
    return Encoder(config["embedding_model"], config.get("embedding_backend", defaults.backend),
                   config.get("embedding_device", defaults.device))


def main(argv: list[str] | None = None) -> list[dict]:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("reports", nargs="+", help="report.json files")
    parser.add_argument("--keyword_set", default=None, help="the runs' keyword set (default: the bundled one)")
    args = parser.parse_args(argv)
    keyword_set = load_keyword_set(args.keyword_set)
    results = []
    for path in args.reports:
        with open(path, encoding="utf-8") as handle:
            report = json.load(handle)
        categories = KeywordCategories.of_keyword_set(keyword_set, report_encoder(report.get("config", {})))
        figures = label_trust(report, categories.category_of, categories.sensitive)
        print(format_trust(path, figures))
        results.append(figures)
    return results


if __name__ == "__main__":
    main()
