"""Topic names and the topic hierarchy on planted data: the job's (keyword categories and DP centres)
against the previous ones (top keywords joined; groups by k-means on embedded names and keywords).

Each released topic's planted topic is the majority planted topic of its conversations (the private
assignments: evaluation only), and its theme that planted topic's `theme` (synthetic.topics).
Figures per run, for old, old with as many groups as new (purity rises with the number of groups)
and new:
  group purity  the share of the topics' noisy sizes that lies in its group's majority theme (1 = every
                group holds one theme), with the number of groups;
  joining names names whose keywords belong to two planted themes (by the planted topics'
                expected keywords), e.g. "Sql, postgresql and vegetables";
  duplicates    topics whose name another topic also has.

    python -m eval.utility.topic_names --data /work/evaldata/gen5k.jsonl --num_clusters 50 --seeds 0 1 2 [--show 10]
"""

from __future__ import annotations

import argparse
import collections
import functools
import re
import statistics

from backends.embedding import DEFAULT_EMBEDDING_MODEL, embed_texts
from eval.config_flags import JOB_DEFAULT, add_config_flags
from eval.data import embed_cached, load_dataset, planted_topics
from eval.urania_inprocess import UraniaConfig, run_urania
from eval.utility.utility_metrics import group_purity
from synthetic.topics import PLANTED_TOPICS
from transforms.topic_hierarchy import group_labels, number_of_groups, topic_vectors

THEME_OF_PLANTED = {topic.name: topic.theme for topic in PLANTED_TOPICS}
MAX_NAME_WORDS = 10


def planted_topic_of_cluster(assignments: dict[str, int], planted: dict[str, str]) -> dict[int, str]:
    """{cluster id: the planted topic most of its conversations come from} (ties: the name first in order)."""
    votes: dict[int, collections.Counter] = collections.defaultdict(collections.Counter)
    for conversation_id, cluster in assignments.items():
        votes[cluster][planted[conversation_id]] += 1
    return {cluster: min(counter, key=lambda p: (-counter[p], p)) for cluster, counter in votes.items()}


def hierarchy_purity(report: dict, planted_topic_of_cluster: dict[int, str]) -> dict:
    """{"purity", "groups"} of report["hierarchy"]: eval.utility.utility_metrics.group_purity with each topic
    weighed by its noisy size (the old and new reports share sizes, so they compare like for like)."""
    groups = report["hierarchy"]["groups"]
    themes = {cluster: THEME_OF_PLANTED[planted] for cluster, planted in planted_topic_of_cluster.items()}
    sizes = {topic["id"]: max(topic["size"], 1) for topic in report["topics"]}
    purity = group_purity(groups, themes, sizes)
    return {"purity": float("nan") if purity is None else purity, "groups": len(groups)}


def _themes_of_keyword() -> dict[str, set[str]]:
    themes: dict[str, set[str]] = collections.defaultdict(set)
    for topic in PLANTED_TOPICS:
        for keyword in topic.expected_keywords:
            themes[keyword].add(topic.theme)
    return themes


def _in_name(keyword: str, name: str) -> bool:
    return re.search(rf"(?<![\w]){re.escape(keyword.casefold())}(?![\w])", name.casefold()) is not None


def joins_two_themes(topic: dict, themes_of_keyword: dict[str, set[str]] | None = None) -> bool:
    """Whether the topic's name holds two of its keywords that belong to disjoint sets of planted themes."""
    themes_of_keyword = themes_of_keyword if themes_of_keyword is not None else _themes_of_keyword()
    named = [themes_of_keyword[k] for k in topic["keywords"] if k in themes_of_keyword and _in_name(k, topic["name"])]
    return any(not (a & b) for i, a in enumerate(named) for b in named[i + 1:])


def name_figures(report: dict) -> dict:
    themes_of_keyword = _themes_of_keyword()
    names = collections.Counter(t["name"].casefold() for t in report["topics"])
    return {"topics": len(report["topics"]),
            "joining_names": sum(joins_two_themes(t, themes_of_keyword) for t in report["topics"]),
            "duplicate_names": sum(names[t["name"].casefold()] > 1 for t in report["topics"]),
            "longest_name_words": max((len(t["name"].split()) for t in report["topics"]), default=0)}


def previous_name(keywords: list[str]) -> str:
    """The baseline: the offline namer before keyword categories (top keywords joined, <= 10 words)."""
    if not keywords:
        return "Unlabelled topic"
    used, words = [], 0
    for keyword in keywords:
        if words + len(keyword.split()) + (1 if used else 0) > MAX_NAME_WORDS:
            break
        words += len(keyword.split()) + (1 if used else 0)
        used.append(keyword)
    used = used or [" ".join(keywords[0].split()[:MAX_NAME_WORDS])]
    name = used[0] if len(used) == 1 else ", ".join(used[:-1]) + " and " + used[-1]
    return name[:1].upper() + name[1:]


def previous_report(report: dict, embed, groups: int | None = None) -> dict:
    """The report with the baseline's names and groups: k-means (seeded) of the topics' embedded
    names and keywords into `groups` (default about sqrt(topics)) groups, each named like a topic
    from its keywords."""
    from transforms.topic_hierarchy import group_keywords
    topics = [{**t, "name": previous_name(t["keywords"])} for t in report["topics"]]
    grouped = []
    if topics:
        labels = group_labels(topic_vectors(topics, embed), groups or number_of_groups(len(topics)))
        for label in sorted(set(labels.tolist())):
            members = [t for t, topic_label in zip(topics, labels) if topic_label == label]
            keywords = group_keywords(members)
            grouped.append({"name": previous_name(keywords), "keywords": keywords,
                           "size": sum(m["size"] for m in members), "topic_ids": [m["id"] for m in members]})
    return {**report, "topics": topics, "hierarchy": {"groups": grouped}}


def evaluate(data: str, num_clusters: int, seeds: list[int], show: int = 0) -> list[dict]:
    dataset = load_dataset(data)
    embeddings = embed_cached(dataset.facets)
    planted = planted_topics(data)
    rows = []
    for seed in seeds:
        report = run_urania(dataset.conversation_ids, dataset.user_ids, dataset.facets, embeddings,
                            UraniaConfig(num_clusters=num_clusters), seed=seed, noise_seed=seed)
        majority = planted_topic_of_cluster(report["_private"]["assignments"], planted)
        embed = functools.partial(embed_texts, DEFAULT_EMBEDDING_MODEL)
        old = previous_report(report, embed)
        # The old grouping with as many groups as the new one found: purity rises with the number of groups.
        old_as_many = previous_report(report, embed, groups=len(report["hierarchy"]["groups"]))
        for variant, released in (("old", old), ("old, as many groups", old_as_many), ("new", report)):
            purity = hierarchy_purity(released, majority)
            rows.append({"seed": seed, "variant": variant, "purity": purity["purity"], "groups": purity["groups"],
                         **name_figures(released)})
            print({k: round(v, 3) if isinstance(v, float) else v for k, v in rows[-1].items()}, flush=True)
        if show and seed == seeds[0]:
            _show(old, report, majority, show)
    return rows


def _show(old: dict, new: dict, majority: dict[int, str], count: int) -> None:
    old_names = {t["id"]: t["name"] for t in old["topics"]}
    old_group = {i: g["name"] for g in old["hierarchy"]["groups"] for i in g["topic_ids"]}
    new_group = {i: g["name"] for g in new["hierarchy"]["groups"] for i in g["topic_ids"]}
    print(f"\nfirst seed, the {count} largest topics (planted topic | old name [old group] | new name [new group]):")
    for topic in new["topics"][:count]:
        print(f"- {majority[topic['id']]} | {old_names[topic['id']]} [{old_group[topic['id']]}] | "
              f"{topic['name']} [{new_group[topic['id']]}]")
        print(f"    {topic['description']}")
    print("\nnew groups:")
    for group in new["hierarchy"]["groups"]:
        print(f"- {group['name']} ({len(group['topic_ids'])} topics, {group['size']}): {group['description']}")
    print("old groups:")
    for group in old["hierarchy"]["groups"]:
        print(f"- {group['name']} ({len(group['topic_ids'])} topics, {group['size']})")


def summary_table(rows: list[dict]) -> str:
    lines = ["| variant | group purity (mean, min-max) | groups | names joining two themes | duplicate names |"
             " topics |", "|---|---|---|---|---|---|"]
    for variant in ("old", "old, as many groups", "new"):
        mine = [r for r in rows if r["variant"] == variant]
        purity = [r["purity"] for r in mine]
        lines.append(f"| {variant} | {statistics.mean(purity):.3f} ({min(purity):.3f}-{max(purity):.3f}) | "
                     f"{statistics.mean(r['groups'] for r in mine):.1f} | "
                     f"{sum(r['joining_names'] for r in mine)} | {sum(r['duplicate_names'] for r in mine)} | "
                     f"{sum(r['topics'] for r in mine)} |")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description="Topic names and hierarchy on planted data, old vs new.")
    parser.add_argument("--data", required=True)
    add_config_flags(parser, overridable=False, num_clusters=JOB_DEFAULT)
    parser.add_argument("--seeds", type=int, nargs="+", default=[0, 1, 2])
    parser.add_argument("--show", type=int, default=0, help="print this many topics' names and groups (first seed)")
    args = parser.parse_args(argv)
    rows = evaluate(args.data, args.num_clusters, args.seeds, args.show)
    print(f"\n{args.data}, k={args.num_clusters}, seeds {' '.join(map(str, args.seeds))} (sums over seeds):")
    print(summary_table(rows))


if __name__ == "__main__":
    main()
