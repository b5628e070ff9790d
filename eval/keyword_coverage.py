"""How well a public keyword set K covers real chatbot logs: old set vs new set, side by side.

    HF_HUB_OFFLINE=1 PYTHONPATH=. .venv/bin/python eval/keyword_coverage.py \
        --keyword_sets old=/tmp/old_keywords.txt,new=beam_jobs/resources/default_keywords.txt

For each data set (facets and cached embeddings as the job sees them: eval.data) and each keyword
set (keywords embedded with the job's model), it prints:
  - the share of conversations whose nearest keyword (cosine) reaches 0.3 (the offline selector's
    default floor, --keyword_min_similarity), 0.4 and 0.5, and the mean best similarity;
  - the share whose user turns contain some keyword as a whole word or phrase (case-insensitive);
  - per category, how many conversations pick one of its keywords as their nearest;
  - on a generated sample with planted topics (`planted_topic`), whether topics the old set named stay
    named: per planted topic, the share of its conversations whose nearest keyword is one of the
    topic's expected keywords (a finer keyword, "oil change" for car maintenance, takes that place
    more often in a larger set), whose selector top 5 holds one, whose nearest keyword is in an
    expected keyword's category, and whether the topic's noise-free top-5 histogram holds one.
Nothing here is DP: it reads the data directly to judge a public list, and prints aggregates only.
"""

from __future__ import annotations

import argparse
import collections
import os
import re
import sys
import time

import numpy as np

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)

from backends.embedding import DEFAULT_EMBEDDING_MODEL  # noqa: E402
from backends.keyword_set import DEFAULT_KEYWORD_SET, KeywordSet, load_keyword_set  # noqa: E402
from beam_jobs.sample_topics import PLANTED_TOPICS  # noqa: E402
from eval.data import embed_cached, load_dataset, planted_topics  # noqa: E402

SHARED = os.path.join(ROOT, "..", "shared", "data")
DEFAULT_DATASETS = (f"hh={SHARED}/hh_rlhf_harmless_test.jsonl,arena={SHARED}/arena_hard_v2_prompts.jsonl,"
                    "gen5k=/work/evaldata/gen5k.jsonl")
THRESHOLDS = (0.3, 0.4, 0.5)
SELECTOR_TOP = 5  # --max_keywords_per_conversation's default


def _named_paths(spec: str) -> list[tuple[str, str]]:
    pairs = []
    for item in spec.split(","):
        name, _, path = item.partition("=")
        if not path:
            raise SystemExit(f"expected NAME=PATH, got {item!r}")
        pairs.append((name, path))
    return pairs


def whole_word_pattern(keywords: tuple[str, ...]) -> re.Pattern:
    """One regex matching any keyword as a whole word or phrase (longest first; not inside a word)."""
    alternatives = "|".join(re.escape(k) for k in sorted(keywords, key=len, reverse=True))
    return re.compile(rf"(?<![\w])(?:{alternatives})(?![\w])")


def coverage(similarities: np.ndarray, facets: list[str], pattern: re.Pattern) -> dict:
    best = similarities.max(axis=1)
    return {
        **{f">={t}": float(np.mean(best >= t)) for t in THRESHOLDS},
        "mean best": float(best.mean()),
        "whole word": float(np.mean([pattern.search(f.lower()) is not None for f in facets])),
    }


def planted_recovery(similarities: np.ndarray, keyword_set: KeywordSet, planted: list[str]) -> dict:
    """Per planted topic: shares of its conversations whose nearest keyword is an expected one, that
    have an expected one among the selector's top 5, and whose nearest keyword is in an expected
    keyword's category (the first part of an offline name); and the topic's keyword histogram (each
    conversation's top 5 above the 0.3 floor, no noise): its leader and whether its top 5 (what the
    job releases per topic, --keywords_per_cluster) holds an expected keyword."""
    keywords, category_of = keyword_set.keywords, keyword_set.category_of()
    best = similarities.argmax(axis=1)
    top = np.argsort(-similarities, axis=1, kind="stable")[:, :SELECTOR_TOP]
    per_topic = {}
    for topic in PLANTED_TOPICS:
        rows = [i for i, p in enumerate(planted) if p == topic.name]
        if not rows:
            continue
        expected = set(topic.expected_keywords)
        expected_categories = {category_of.get(k) for k in expected}
        histogram = collections.Counter(keywords[j] for i in rows for j in top[i] if similarities[i, j] >= 0.3)
        released = [k for k, _ in histogram.most_common(SELECTOR_TOP)]
        per_topic[topic.name] = {
            "nearest": float(np.mean([keywords[best[i]] in expected for i in rows])),
            "top5": float(np.mean([any(keywords[j] in expected for j in top[i]) for i in rows])),
            "category": float(np.mean([category_of[keywords[best[i]]] in expected_categories for i in rows])),
            "leader": released[0] if released else None,
            "released_expected": bool(expected & set(released)),
        }
    return per_topic


def dp_recovery(dataset, embeddings: np.ndarray, keyword_set_path: str,
                runs: int) -> tuple[list[int], list[int], list[int]]:
    """Per seed: planted topics recovered, topics with keywords, topics released by run_urania."""
    from eval.urania_inprocess import UraniaConfig, run_urania
    recovered, labelled, topics = [], [], []
    for seed in range(runs):
        report = run_urania(dataset.conversation_ids, dataset.user_ids, dataset.facets, embeddings,
                            UraniaConfig(keyword_set=keyword_set_path), seed=seed)
        released = [set(topic["keywords"]) for topic in report["topics"]]
        recovered.append(sum(any(set(t.expected_keywords) & k for k in released) for t in PLANTED_TOPICS))
        labelled.append(sum(bool(k) for k in released))
        topics.append(len(released))
    return recovered, labelled, topics


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--keyword_sets", default=f"new={DEFAULT_KEYWORD_SET}",
                        help="NAME=PATH,... (e.g. the previous bundled set from `git show REV:PATH`)")
    parser.add_argument("--datasets", default=DEFAULT_DATASETS, help="NAME=PATH,... of JSON Lines files")
    parser.add_argument("--embedding_model", default=DEFAULT_EMBEDDING_MODEL)
    parser.add_argument("--per_topic", action="store_true", help="print each planted topic's figures")
    parser.add_argument("--dp_runs", type=int, default=0,
                        help="also run the job's mechanisms in-process (eval.urania_inprocess, default options) "
                             "this many seeds on each generated data set and count planted topics whose "
                             "released keywords hold an expected one")
    args = parser.parse_args(argv)

    started = time.time()
    sets: dict[str, KeywordSet] = {name: load_keyword_set(path) for name, path in _named_paths(args.keyword_sets)}
    # Cached by content like the conversations: a re-run after editing the set embeds only the new list.
    vectors = {name: embed_cached(list(s.keywords), args.embedding_model) for name, s in sets.items()}
    patterns = {name: whole_word_pattern(s.keywords) for name, s in sets.items()}
    for name, s in sets.items():
        print(f"{name}: {len(s.keywords)} keywords, {len(set(s.categories))} categories ({s.source})")

    header = f"{'data':<7} {'set':<5} {'n':>5} " + " ".join(f"{'>=' + str(t):>6}" for t in THRESHOLDS) + \
        f" {'mean':>6} {'word':>6}"
    print("\nCoverage (share of conversations; nearest keyword by cosine; whole-word match in user turns)")
    print(header)
    picks: dict[str, dict[str, collections.Counter]] = {name: {} for name in sets}
    planted_rows, dp_rows = [], []
    sets_paths = dict(_named_paths(args.keyword_sets))
    for data_name, path in _named_paths(args.datasets):
        if not os.path.exists(path):
            print(f"{data_name}: {path} not found, skipped")
            continue
        dataset = load_dataset(path)
        embeddings = embed_cached(dataset.facets, args.embedding_model)
        # Per conversation, in the dataset's order (its valid records only).
        planted_of = planted_topics(path) if data_name.startswith("gen") else {}
        planted = [planted_of.get(c) for c in dataset.conversation_ids] if planted_of else []
        for name, s in sets.items():
            similarities = embeddings @ vectors[name].T
            figures = coverage(similarities, dataset.facets, patterns[name])
            print(f"{data_name:<7} {name:<5} {len(dataset):>5} "
                  + " ".join(f"{figures['>=' + str(t)]:>6.1%}" for t in THRESHOLDS)
                  + f" {figures['mean best']:>6.3f} {figures['whole word']:>6.1%}")
            best = similarities.argmax(axis=1)
            picks[name][data_name] = collections.Counter(s.categories[j] or "(none)" for j in best)
            if len(planted) == len(dataset) and any(planted):
                planted_rows.append((data_name, name, planted_recovery(similarities, s, planted)))
                if args.dp_runs:
                    dp_rows.append((data_name, name, dp_recovery(dataset, embeddings, sets_paths[name], args.dp_runs)))

    for name, per_data in picks.items():
        data_names = list(per_data)
        categories = sorted({c for counter in per_data.values() for c in counter},
                            key=lambda c: -sum(counter[c] for counter in per_data.values()))
        print(f"\nConversations whose nearest keyword is in each category ({name})")
        print(f"{'category':<32} " + " ".join(f"{d:>6}" for d in data_names))
        for category in categories:
            print(f"{category[:32]:<32} " + " ".join(f"{per_data[d][category]:>6}" for d in data_names))

    if planted_rows:
        print("\nPlanted topics (generated data): mean share of a topic's conversations / topics over half")
        print(f"{'data':<7} {'set':<5} {'nearest expected':>17} {'expected in top 5':>17} {'same category':>15} "
              f"{'released top 5 has expected':>27}")
        for data_name, name, per_topic in planted_rows:
            cells = []
            for field in ("nearest", "top5", "category"):
                shares = [figures[field] for figures in per_topic.values()]
                cells.append(f"{np.mean(shares):.0%} {sum(v > 0.5 for v in shares):>2}/{len(shares)}")
            released = sum(figures["released_expected"] for figures in per_topic.values())
            print(f"{data_name:<7} {name:<5} {cells[0]:>17} {cells[1]:>17} {cells[2]:>15} "
                  f"{released:>24}/{len(per_topic)}")
        if args.per_topic:
            for data_name, name, per_topic in planted_rows:
                print(f"\n{data_name} {name}: topic, nearest expected, expected in top 5, same category, leader")
                for topic, figures in per_topic.items():
                    print(f"  {topic:<32} {figures['nearest']:>6.1%} {figures['top5']:>6.1%} "
                          f"{figures['category']:>6.1%}  {figures['leader']}"
                          f"{'' if figures['released_expected'] else '  (no expected keyword in the top 5)'}")
    if dp_rows:
        print("\nPlanted topics recovered through the DP mechanisms (released keywords hold an expected one; "
              "per seed)")
        for data_name, name, (recovered, labelled, topics) in dp_rows:
            print(f"{data_name:<7} {name:<5} recovered {recovered} of {len(PLANTED_TOPICS)}; "
                  f"topics with keywords {labelled} of {topics}")
    print(f"\n{time.time() - started:.1f} s")


if __name__ == "__main__":
    main()
