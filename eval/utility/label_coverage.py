"""How many released topics get a label, and how good the labels are: the figures behind the
keyword-histogram choices (docs/privacy.md, "Keyword histograms").

    python -m eval.utility.label_coverage --data gen5k=/work/evaldata/gen5k.jsonl:50 --seeds 0 1 2 \
        [--users 900] [--set keyword_votes=count --set samples_per_cluster=200 ...]

For each data set (NAME=PATH:K, K the number of clusters) and seed it runs the in-process URANIA
(eval.urania_inprocess.run_urania: the job's mechanisms on cached embeddings) and prints, averaged
over the seeds:
  labelled / released   topics named by their own DP votes (keywords, or with category votes their
                        category alone), and all released topics; with the centroid fallback,
                        those with keywords from either source are shown too
  planted named         generated data only: planted topics P for which some released topic whose
                        conversations are mostly P lists one of P's expected keywords
  keyword share         per topic with vote keywords, the share of its conversations whose text
                        contains one of its keywords (as a word), averaged over those topics
  min users             privacy.min_users_to_label_a_topic, when the report has it
  thin / sens<1/2 / withheld>=1/2
                        the released names against the exact (noise-free) category votes of each
                        topic's members (privileged: the private assignments; figures only): topics
                        named by votes whose voted category holds under NAME_SHARE of them (a false or
                        weak label), topics named by a sensitive category holding under
                        SENSITIVE_NAME_SHARE, and topics whose sensitive category the share rule withheld
                        (backends/label_evidence.py may_name) though it held at least that; "-" without
                        category votes
  ceiling               the votes' upper bound, exact and with one topic holding every kept
                        conversation: the heaviest keyword's summed vote (in users), and how many
                        keywords of K reach "min users". A data set whose whole vote falls short
                        cannot have a topic labelled by the DP votes however it is clustered.
PATH may join several files with commas. `--users N` spreads each data set's conversations over N
simulated heavy-tailed users (eval.data.with_users, seeded by the run's seed): real texts at another
user count. `--set FIELD=VALUE` overrides a UraniaConfig field (the job's flags of the same name).
"""

from __future__ import annotations

import argparse
import collections
import dataclasses
import statistics
import time
from collections.abc import Iterator

from backends.label_evidence import NAME_SHARE, SENSITIVE_NAME_SHARE, may_name
from core.label_sources import HISTOGRAM_SOURCE, VOTE_SOURCES
from dp_ops.keyword_votes import CategoryVote, conversation_votes
from eval.config_flags import add_config_flags, config_overrides
from eval.data import bound_contributions, embed_cached, load_dataset, planted_topics, with_users
from eval.urania_inprocess import UraniaConfig, _categories, _keywords, _selector, run_encoder, run_urania
from eval.utility.topic_quality import mentions
from synthetic.topics import PLANTED_TOPICS


def label_figures(report: dict, conversation_ids: list[str], facets: list[str], planted: dict[str, str]) -> dict:
    assignments = report["_private"]["assignments"]
    text = dict(zip(conversation_ids, facets))
    members: dict[int, list[str]] = {}
    for conversation_id, cluster in assignments.items():
        members.setdefault(cluster, []).append(conversation_id)
    topics = report["topics"]
    from_histogram = [t for t in topics if t["keywords"] and t.get("label_source", HISTOGRAM_SOURCE) == HISTOGRAM_SOURCE]
    by_votes = [t for t in topics if t.get("label_source", HISTOGRAM_SOURCE) in VOTE_SOURCES]
    shares = [statistics.fmean(any(mentions(text[c], k) for k in t["keywords"]) for c in members.get(t["id"], []))
              for t in from_histogram if members.get(t["id"])]
    named = set()
    expected = {p.name: {k.lower() for k in p.expected_keywords} for p in PLANTED_TOPICS}
    for topic in topics:
        planted_here = [planted[c] for c in members.get(topic["id"], []) if c in planted]
        if not planted_here:
            continue
        majority = max(set(planted_here), key=planted_here.count)
        if {k.lower() for k in topic["keywords"]} & expected.get(majority, set()):
            named.add(majority)
    return {
        "released": len(topics),
        "labelled_histogram": len(from_histogram),
        "labelled_by_votes": len(by_votes),
        "labelled_any": sum(1 for t in topics if t["keywords"]),
        "planted_named": len(named) if planted else None,
        "planted_present": len(set(planted.values())) if planted else None,
        "keyword_share": statistics.fmean(shares) if shares else 0.0,
        "min_users": report["privacy"].get("min_users_to_label_a_topic"),
    }


def exact_votes(dataset, embeddings, config: UraniaConfig, seed: int = 0) -> Iterator[tuple[int, object, float]]:
    """(conversation index, column, value) of every kept conversation's weighted votes without noise:
    the same bounding, selector and vote rule as run_urania (columns: keywords, and with category votes
    CategoryVote)."""
    keywords = _keywords(config.keyword_set).keywords
    encoder = run_encoder(config)
    categories = _categories(config.keyword_set, encoder)
    share = config.category_vote_share if config.keyword_votes == "weighted" and categories.names else 0.0
    kept, weights = bound_contributions(dataset.user_ids, dataset.conversation_ids,
                                        config.max_conversations_per_user, seed)
    selector = _selector(keywords, encoder, config.keyword_min_similarity)
    picks = selector.select([dataset.facets[i] for i in kept], embeddings[kept], config.keywords_per_vote)
    in_k = frozenset(keywords)
    for index, chosen, weight in zip(kept, picks, weights):
        in_set = list(dict.fromkeys(k for k in chosen if k in in_k))
        for column, value in conversation_votes(in_set, float(weight), config.keywords_per_vote,
                                                categories.category_of, share):
            yield int(index), column, value


def whole_set_votes(dataset, embeddings, config: UraniaConfig, seed: int = 0) -> dict[str, float]:
    """Exact weighted votes per keyword over every kept conversation (one topic, no noise): the most
    any topic of any clustering could gather (with category votes, the keywords' part of each vote)."""
    totals: dict[str, float] = {}
    for _, column, value in exact_votes(dataset, embeddings, config, seed):
        if isinstance(column, str):
            totals[column] = totals.get(column, 0.0) + value
    return totals


def topic_category_votes(report: dict, dataset, embeddings, config: UraniaConfig,
                         seed: int) -> dict[int, dict[str, float]]:
    """{topic id: {category: exact vote}} over the kept conversations the run assigned to each topic
    (its private assignments, with the run's seed for the bounding)."""
    cluster_of = report["_private"]["assignments"]
    votes: dict[int, dict[str, float]] = collections.defaultdict(dict)
    for index, column, value in exact_votes(dataset, embeddings, config, seed):
        cluster = cluster_of.get(dataset.conversation_ids[index])
        if cluster is not None and isinstance(column, CategoryVote):
            votes[cluster][column.category] = votes[cluster].get(column.category, 0.0) + value
    return dict(votes)


def name_audit(topics: list[dict], category_votes: dict[int, dict[str, float]],
               sensitive: frozenset[str]) -> dict[str, int]:
    """How the released names stand against each topic's exact category votes (`topic_category_votes`):
    "thin": named by votes (a VOTE_SOURCES label with a voted category) whose category holds under
    NAME_SHARE of them; "sensitive_under_half": named by a sensitive category holding under
    SENSITIVE_NAME_SHARE; "withheld_majority": a sensitive category the share rule kept out of the name
    (`sensitive_share` that `may_name` refuses) though it held at least SENSITIVE_NAME_SHARE."""
    counts = {"thin": 0, "sensitive_under_half": 0, "withheld_majority": 0}
    for topic in topics:
        votes = category_votes.get(topic["id"], {})
        total = sum(votes.values())

        def share(category: str) -> float:
            return votes.get(category, 0.0) / total if total > 0 else 0.0

        category = topic.get("voted_category")
        if category and topic.get("label_source") in VOTE_SOURCES:
            counts["thin"] += share(category) < NAME_SHARE
            counts["sensitive_under_half"] += category in sensitive and share(category) < SENSITIVE_NAME_SHARE
        held = topic.get("sensitive_share")
        if held and not may_name(held):
            counts["withheld_majority"] += share(held["category"]) >= SENSITIVE_NAME_SHARE
    return counts


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--data", action="append", required=True, help="NAME=PATH:K (repeatable)")
    parser.add_argument("--seeds", type=int, nargs="+", default=[0, 1, 2])
    add_config_flags(parser)
    parser.add_argument("--users", type=int, default=None, help="simulated users per data set (default: its own)")
    args = parser.parse_args(argv)
    overrides = config_overrides(args.set)
    print(f"overrides: {overrides or 'none (the job defaults)'}; seeds {args.seeds}")
    print(f"{'data':8} {'k':>3} {'labelled/released':>18} {'(any source)':>12} {'planted named':>14} "
          f"{'kw share':>8} {'min users':>9} {'thin / sens<1/2 / withheld>=1/2':>31} {'s/run':>6}  "
          "ceiling: top keyword (users), keywords >= min users")
    for spec in args.data:
        name, _, rest = spec.partition("=")
        path, _, k = rest.rpartition(":")
        dataset = load_dataset(path)
        config = dataclasses.replace(UraniaConfig(num_clusters=int(k)), **overrides)
        # The run's own encoder (--set embedding_model=...), as the job embeds every text with it.
        embeddings = embed_cached(dataset.facets, config.embedding_model)
        planted = planted_topics(path)
        sensitive = _categories(config.keyword_set, run_encoder(config)).sensitive
        rows, audits = [], []
        started = time.perf_counter()
        for seed in args.seeds:
            data = dataset if args.users is None else with_users(dataset, args.users, seed)
            report = run_urania(data.conversation_ids, data.user_ids, data.facets, embeddings, config,
                                seed=seed, noise_seed=seed)
            rows.append(label_figures(report, dataset.conversation_ids, dataset.facets, planted))
            category_votes = topic_category_votes(report, data, embeddings, config, seed)
            audits.append(name_audit(report["topics"], category_votes, sensitive) if category_votes else None)
        seconds = (time.perf_counter() - started) / len(args.seeds)
        audit = ("-" if None in audits else " / ".join(
            f"{statistics.fmean(a[key] for a in audits):.1f}"
            for key in ("thin", "sensitive_under_half", "withheld_majority")))
        mean = lambda key: statistics.fmean(r[key] for r in rows)  # noqa: E731
        named = (f"{mean('planted_named'):.1f}/{rows[0]['planted_present']}" if planted else "-")
        min_users = rows[0]["min_users"]
        totals = whole_set_votes(dataset if args.users is None else with_users(dataset, args.users, args.seeds[0]),
                                 embeddings, config)
        top = max(totals.values(), default=0.0)
        reaching = sum(value >= min_users for value in totals.values()) if min_users is not None else "-"
        print(f"{name:8} {k:>3} {mean('labelled_by_votes'):>8.1f}/{mean('released'):<9.1f} "
              f"{mean('labelled_any'):>12.1f} {named:>14} {mean('keyword_share'):>8.2f} "
              f"{min_users if min_users is not None else '-':>9} {audit:>31} {seconds:>6.1f}  {top:.1f}, {reaching}",
              flush=True)


if __name__ == "__main__":
    main()
