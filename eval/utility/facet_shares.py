"""The facets' DP shares beside the non-private counts of the same classifiers, on the real mix.

    python -m eval.utility.facet_shares                      # ../shared/data's two sets, k = 20, epsilon 7
    python -m eval.utility.facet_shares --data FILE[,FILE] --facets language,request_kind --epsilon 3

Runs the job's mechanisms in-process (eval/urania_inprocess.run_urania) with `--facets`, then the same
facet stage without noise (transforms.facet_histograms.FacetHistograms with no noise multipliers: the
exact baseline, the same classifiers, weights and contribution bounding) over the same kept
conversations and clusters. Prints, per facet and answer: the DP size (users) with its 95% interval and
DP share, the exact weighted size and share, and the share of conversations (unweighted). Then how
often the exact size lies in the DP interval: overall answers, and the released topics' cells whose
exact size is at least --min_cell users (the answers that are there). Nothing is written.
"""

from __future__ import annotations

import argparse
import os

import numpy as np

from backends.facet_set import selected_facets
from backends.keyword_categories import KeywordCategories
from backends.keyword_set import load_keyword_set
from core.records import ConversationBlock
from eval.config_flags import JOB_DEFAULT, add_config_flags, config_from
from eval.data import bound_contributions, embed_cached, load_dataset
from eval.urania_inprocess import UraniaConfig, run_encoder, run_urania
from eval.utility.topic_quality import SHARED_DATA
from transforms.facet_histograms import AnswerFacetsFn, FacetHistograms

DEFAULT_DATA = ",".join(os.path.join(SHARED_DATA, name)
                        for name in ("arena_hard_v2_prompts.jsonl", "hh_rlhf_harmless_test.jsonl"))


def exact_section(config: UraniaConfig, conversation_ids, user_ids, facets, embeddings, assignments: dict,
                  seed: int) -> dict:
    """The facets section without noise over the conversations run_urania kept (same bounding, seed and
    clusters)."""
    kept, weights = bound_contributions(user_ids, conversation_ids, config.max_conversations_per_user, seed)
    kept_ids = [conversation_ids[i] for i in kept]
    block = ConversationBlock(kept_ids, [user_ids[i] for i in kept], weights, [facets[i] for i in kept],
                              embeddings[kept], cluster_ids=np.array([assignments[c] for c in kept_ids]))
    keywords = load_keyword_set(config.keyword_set)
    encoder = run_encoder(config)
    categories = KeywordCategories.of_keyword_set(keywords, encoder)
    declared = selected_facets(config.facets, config.facet_set)
    answers = AnswerFacetsFn(tuple(facet for _, facet in declared), keywords.keywords, categories, encoder)
    stage = FacetHistograms(declared, answers, config.num_clusters, sorted(set(assignments.values())), None,
                            config.delta, None)
    output = stage.local([block])
    return {"section": output.section, "unknown": output.unknown,
            "conversations": {name: _conversation_shares(stage, block, name) for name in output.section}}


def _conversation_shares(stage: FacetHistograms, block: ConversationBlock, name: str) -> dict[str, float]:
    """Each answer's share of the kept conversations, unweighted (the classifiers are set up already)."""
    counts: dict[str, int] = {}
    for facet_name, _, answer, _ in stage.answers(block):
        if facet_name == name:
            counts[answer] = counts.get(answer, 0) + 1
    total = sum(counts.values())
    return {answer: n / total for answer, n in counts.items()} if total else {}


def compare(dp: dict, exact: dict, min_cell: float) -> list[str]:
    lines = []
    for name, section in dp.items():
        truth = {row["answer"]: row for row in exact["section"][name]["overall"]}
        shares = exact["conversations"][name]
        lines.append(f"== {name}: {section['question']} (sigma {section['sigma']['overall']:.2f} users overall, "
                     f"{section['sigma']['by_topic']:.2f} per topic cell; unknown: {exact['unknown'].get(name, 0)})")
        lines.append(f"  {'answer':<14} {'DP size [95%]':>26} {'DP share':>9} {'exact':>8} {'exact share':>12} "
                     f"{'convs':>7}")
        inside = 0
        for row in sorted(section["overall"], key=lambda r: -truth[r["answer"]]["size"]):
            true = truth[row["answer"]]
            inside += row["low"] <= true["size"] <= row["high"]  # low is clamped at 0, as a true size is
            if true["size"] <= 0 and row["low"] == 0:
                continue  # an answer nobody gave, its noisy size within the noise: not listed
            lines.append(f"  {row['answer']:<14} {row['size']:>9.1f} [{row['low']:>6.1f}, {row['high']:>6.1f}] "
                         f"{row['share']:>9.3f} {true['size']:>8.1f} {true['share']:>12.3f} "
                         f"{shares.get(row['answer'], 0.0):>7.3f}")
        lines.append(f"  exact size inside the DP 95% interval: {inside} of {len(section['overall'])} answers")
        cells = covered = 0
        for topic, rows in section["by_topic"].items():
            truth_rows = {r["answer"]: r for r in exact["section"][name]["by_topic"].get(topic, [])}
            for row in rows:
                true = truth_rows.get(row["answer"])
                if true is None or true["size"] < min_cell:
                    continue
                cells += 1
                covered += row["low"] <= true["size"] <= row["high"]
        lines.append(f"  released topics' cells with >= {min_cell:g} users: {cells}, exact size inside the DP "
                     f"95% interval in {covered}" + (f" ({covered / cells:.0%})" if cells else ""))
    return lines


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--data", default=DEFAULT_DATA, help="JSON Lines file(s), joined by commas")
    add_config_flags(parser, facets="language,request_kind,concern", num_clusters=20, epsilon=JOB_DEFAULT)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--min_cell", type=float, default=20.0,
                        help="the least exact size (users) of a topic x answer cell to score its interval")
    args = parser.parse_args(argv)
    dataset = load_dataset(args.data)
    embeddings = embed_cached(dataset.facets)
    config = config_from(args)
    report = run_urania(dataset.conversation_ids, dataset.user_ids, dataset.facets, embeddings, config,
                        seed=args.seed, noise_seed=args.seed)
    exact = exact_section(config, dataset.conversation_ids, dataset.user_ids, dataset.facets, embeddings,
                          report["_private"]["assignments"], args.seed)
    facet_events = [m["stage"] for m in report["privacy"]["mechanisms"] if m["stage"] in ("facets", "facet_topics")]
    print(f"{args.data}: {len(dataset)} conversations, {len(set(dataset.user_ids))} users, "
          f"{len(report['topics'])} topics released; report epsilon {report['privacy']['epsilon']:.4f} "
          f"(budget {config.epsilon:g}), facet mechanisms: {len(facet_events)}")
    for line in compare(report["facets"], exact, args.min_cell):
        print(line)


if __name__ == "__main__":
    main()
