"""The facet classifiers against planted truth, and the DP intervals' coverage of the planted cells.

    python -m eval.utility.facet_accuracy        # 8,000 generated conversations (2,500 user ids), k = 10, 5 noise seeds
    python -m eval.utility.facet_accuracy --conversations 300 --users 120 --noise_seeds 2 --real_data ''

On `generate_sample --facet_mix` data (ten topics, each with one kind of request and known language
shares, synthetic/data/facet_topics.json), prints:

1. each classifier's accuracy on the planted answers: overall, and per planted answer its recall and
   what it was mistaken for most. request_kind three times: without the translation cue rule
   (backends/facet_set.py: an answer with "cues" needs one in the text), with it, and with it and the
   facet's multilingual model for non-English texts (the job's rule); each split English / not and
   per planted language.
2. the job's DP release (eval/urania_inprocess.run_urania with --facets language,request_kind) over
   --noise_seeds noise seeds: how often the 95% interval holds the planted (true) size of a cell, for
   the released topics' topic x answer cells with at least --min_conversations planted conversations,
   overall and per topic (named by the planted topic most of its conversations have). Beside it, the
   coverage of the same classifiers' exact sizes (noise alone), so classifier error and noise can be
   told apart. A size is in users, each conversation weighing 1/n_u as the votes weigh it.
3. on the real mix (--real_data, ../shared/data by default; '' skips it), the request kinds per data
   set under the same three rules, over all its conversations and over those the language facet
   calls not English; then, over the English texts of all its sets together, the share whose nearest
   description is below the facet's min_similarity with the run's model, and the multilingual model's
   similarity below which the same share falls (how the facet file's multilingual min_similarity was
   set: the run's threshold carried to the other model's scale, on unlabelled text).
"""

from __future__ import annotations

import argparse
import collections
import dataclasses
import json
import os
import tempfile
from collections.abc import Sequence

import numpy as np

from backends.facet_set import MULTILINGUAL_MODELS, FacetDeclaration, detect_language, load_facet_set
from backends.keyword_categories import KeywordCategories
from backends.keyword_set import load_keyword_set
from config.embedding import Encoder
from core.records import ConversationBlock
from eval.config_flags import JOB_DEFAULT, add_config_flags, config_from
from eval.data import bound_contributions, embed_cached, load_dataset
from eval.urania_inprocess import UraniaConfig, run_encoder, run_urania
from eval.utility.facet_shares import DEFAULT_DATA
from synthetic.sample import generate_records
from transforms.facet_histograms import AnswerFacetsFn
from transforms.vectors import keyword_vectors

PLANTED_FIELDS = {"language": "planted_language", "request_kind": "planted_request_kind"}


def planted_sample(path: str, conversations: int, users: int, seed: int) -> dict[str, dict[str, str]]:
    """Writes a --facet_mix sample to `path`; returns {conversation id: {facet: planted answer, "topic": ...}}."""
    planted = {}
    with open(path, "w", encoding="utf-8") as out:
        for record in generate_records(conversations, users, seed, facet_mix=True):
            out.write(json.dumps(record) + "\n")
            planted[record["conversation_id"]] = {**{facet: record[field] for facet, field in PLANTED_FIELDS.items()},
                                                  "topic": record["planted_topic"]}
    return planted


def without_cues(facet: FacetDeclaration) -> FacetDeclaration:
    """`facet` with no answer needing a cue: the classification before the cue rule."""
    return dataclasses.replace(facet, answers=tuple(dataclasses.replace(a, cues=()) for a in facet.answers))


def request_kind_rules(facet: FacetDeclaration) -> list[tuple[str, FacetDeclaration]]:
    """The request-kind rules compared: the run's model alone without and with the cue rule, then the
    job's (cues and the multilingual model for non-English texts), each (title, declaration)."""
    run_model = dataclasses.replace(facet, multilingual=None)
    return [("without the cue rule", without_cues(run_model)), ("with the cue rule", run_model),
            ("with the cue rule and the multilingual model", facet)]


def classify(facets: Sequence[FacetDeclaration], texts: list[str], embeddings: np.ndarray,
             encoder: Encoder) -> list[list[str]]:
    """Per facet (in order; two variants of one facet may be given), its answer per conversation, by
    the job's own per-conversation step (a failing classifier gives that conversation "unknown");
    `encoder`: the one `embeddings` came from."""
    keywords = load_keyword_set()
    answer_fn = AnswerFacetsFn(tuple(facets), keywords.keywords, KeywordCategories.of_keyword_set(keywords), encoder)
    answer_fn.setup()
    block = ConversationBlock([str(i) for i in range(len(texts))], [""] * len(texts), np.ones(len(texts)), texts,
                              embeddings, cluster_ids=np.zeros(len(texts), dtype=np.int64))
    answers: list[list[str]] = [[] for _ in facets]
    for i, (_, _, answer, _) in enumerate(answer_fn.process(block)):
        answers[i % len(facets)].append(answer)
    return answers


def accuracy(planted: Sequence[str], answered: Sequence[str]) -> dict:
    """Overall accuracy, and per planted answer {"n", "recall", "confused": [(answer, count)] most first}."""
    if len(planted) != len(answered):
        raise ValueError("one answer per planted label")
    by_truth: dict[str, collections.Counter] = collections.defaultdict(collections.Counter)
    for truth, answer in zip(planted, answered):
        by_truth[truth][answer] += 1
    per_answer = {truth: {"n": sum(got.values()), "recall": got[truth] / sum(got.values()),
                          "confused": [(a, n) for a, n in got.most_common() if a != truth]}
                  for truth, got in sorted(by_truth.items())}
    correct = sum(t == a for t, a in zip(planted, answered))
    return {"overall": correct / len(planted) if planted else float("nan"), "n": len(planted),
            "per_answer": per_answer}


def accuracy_lines(title: str, result: dict) -> list[str]:
    lines = [f"  {title}: {result['overall']:.3f} of {result['n']}"]
    for truth, row in result["per_answer"].items():
        confused = ", ".join(f"{a} {n}" for a, n in row["confused"][:3]) or "-"
        lines.append(f"    {truth:<14} n {row['n']:>5}  recall {row['recall']:.3f}  mistaken for: {confused}")
    return lines


def cell_truth(kept_ids: Sequence[str], weights: Sequence[float], assignments: dict, labels: dict[str, str]) -> dict:
    """{(topic, answer): [size in users, conversations]} of the kept conversations under `labels`."""
    cells: dict = collections.defaultdict(lambda: [0.0, 0])
    for conversation, weight in zip(kept_ids, weights):
        cell = cells[(int(assignments[conversation]), labels[conversation])]
        cell[0] += float(weight)
        cell[1] += 1
    return cells


def covered_cells(section: dict, truth: dict, min_conversations: int) -> list[tuple[int, str, bool]]:
    """(topic, answer, interval holds the true size) for each released topic's cell with at least
    `min_conversations` true conversations."""
    scored = []
    for topic, rows in section["by_topic"].items():
        for row in rows:
            size, count = truth.get((int(topic), row["answer"]), (0.0, 0))
            if count >= min_conversations:
                scored.append((int(topic), row["answer"], row["low"] <= size <= row["high"]))
    return scored


def overall_covered(section: dict, truth: dict) -> list[bool]:
    """Per answer of the overall release: does its interval hold the true size (all topics summed)?"""
    totals: dict[str, float] = collections.defaultdict(float)
    for (_, answer), (size, _) in truth.items():
        totals[answer] += size
    return [row["low"] <= totals.get(row["answer"], 0.0) <= row["high"] for row in section["overall"]]


def share(flags: Sequence[bool]) -> str:
    return f"{sum(flags)}/{len(flags)} ({sum(flags) / len(flags):.0%})" if flags else "0/0"


def coverage_lines(dataset, planted, answers: dict[str, list[str]], embeddings, config: UraniaConfig, seed: int,
                   noise_seeds: int, min_conversations: int) -> list[str]:
    kept, weights = bound_contributions(dataset.user_ids, dataset.conversation_ids, config.max_conversations_per_user,
                                        seed)
    kept_ids = [dataset.conversation_ids[i] for i in kept]
    scored: dict = {(facet, kind): [] for facet in PLANTED_FIELDS for kind in ("planted", "exact")}
    overall: dict = {(facet, kind): [] for facet in PLANTED_FIELDS for kind in ("planted", "exact")}
    per_topic: dict = collections.defaultdict(list)
    lines = []
    for noise_seed in range(noise_seeds):
        report = run_urania(dataset.conversation_ids, dataset.user_ids, dataset.facets, embeddings, config,
                            seed=seed, noise_seed=noise_seed)
        assignments = report["_private"]["assignments"]
        majority = {}
        for topic, members in _members(kept_ids, assignments).items():
            majority[topic] = collections.Counter(planted[c]["topic"] for c in members).most_common(1)[0][0]
        lines.append(f"  noise seed {noise_seed}: {len(report['topics'])} topics released, report epsilon "
                     f"{report['privacy']['epsilon']:.4f} (budget {config.epsilon:g}), sigma per topic cell "
                     + ", ".join(f"{name} {report['facets'][name]['sigma']['by_topic']:.2f}" for name in PLANTED_FIELDS))
        for facet in PLANTED_FIELDS:
            section = report["facets"][facet]
            for kind, labels in (("planted", {c: planted[c][facet] for c in kept_ids}),
                                 ("exact", dict(zip(dataset.conversation_ids, answers[facet])))):
                truth = cell_truth(kept_ids, weights, assignments, labels)
                cells = covered_cells(section, truth, min_conversations)
                scored[(facet, kind)] += [flag for _, _, flag in cells]
                overall[(facet, kind)] += overall_covered(section, truth)
                if kind == "planted":
                    for topic, _, flag in cells:
                        per_topic[(facet, majority[topic])].append(flag)
    lines.append(f"  released topic x answer cells with >= {min_conversations} planted conversations, over "
                 f"{noise_seeds} noise seeds: the 95% interval holds")
    for facet in PLANTED_FIELDS:
        lines.append(f"    {facet:<13} the planted size {share(scored[(facet, 'planted')])}; the classifier's "
                     f"exact size {share(scored[(facet, 'exact')])}; overall answers: planted "
                     f"{share(overall[(facet, 'planted')])}, exact {share(overall[(facet, 'exact')])}")
    lines.append("  per topic (named by its planted majority), planted sizes held:")
    for (facet, topic), flags in sorted(per_topic.items()):
        lines.append(f"    {facet:<13} {topic:<30} {share(flags)}")
    return lines


def _members(kept_ids: Sequence[str], assignments: dict) -> dict[int, list[str]]:
    members: dict[int, list[str]] = collections.defaultdict(list)
    for conversation in kept_ids:
        members[int(assignments[conversation])].append(conversation)
    return members


def real_mix_lines(paths: str, language: FacetDeclaration, request_kind: FacetDeclaration,
                   encoder: Encoder) -> list[str]:
    rules = request_kind_rules(request_kind)
    lines = []
    for path in paths.split(","):
        dataset = load_dataset(path)
        embeddings = embed_cached(dataset.facets, encoder.model)
        languages, *answered = classify([language] + [facet for _, facet in rules], dataset.facets, embeddings,
                                        encoder)
        foreign = [lang != "en" for lang in languages]
        lines.append(f"  {os.path.basename(path)}: {len(dataset)} conversations, {sum(foreign)} not English; "
                     "request kinds " + " -> ".join(title for title, _ in rules) + ":")
        for subset, keep in (("all", None), ("not English", True)):
            counts = [collections.Counter(a for f, a in zip(foreign, answers) if keep is None or f == keep)
                      for answers in answered]
            lines.append(f"    {subset}: " + ", ".join(f"{a} " + " -> ".join(str(c[a]) for c in counts)
                                                       for a in request_kind.answer_ids + ("unknown",)
                                                       if any(c[a] for c in counts)))
    return lines


def _nearest(vectors: np.ndarray, descriptions: np.ndarray) -> np.ndarray:
    unit = lambda rows: rows / np.linalg.norm(rows, axis=1, keepdims=True)  # noqa: E731
    return (unit(np.asarray(vectors, dtype=np.float64)) @ unit(np.asarray(descriptions, dtype=np.float64)).T).max(1)


def threshold_match_line(paths: str, request_kind: FacetDeclaration, encoder: Encoder) -> str:
    """The run's min_similarity carried to the multilingual model's scale on the English texts of `paths`."""
    dataset = load_dataset(paths)
    english = [text for text in dataset.facets if detect_language(text) == "en"]
    descriptions = tuple(d for answer in request_kind.answers for d in answer.descriptions)
    encode = MULTILINGUAL_MODELS[request_kind.multilingual.model]()
    run_nearest = _nearest(embed_cached(english, encoder.model), keyword_vectors(encoder, descriptions))
    multilingual_nearest = _nearest(np.stack([encode(text) for text in english]),
                                    np.stack([encode(d) for d in descriptions]))
    below = float(np.mean(run_nearest < request_kind.min_similarity))
    return (f"  {len(english)} English texts: {below:.1%} below min_similarity {request_kind.min_similarity:g} with "
            f"{encoder.model}; {request_kind.multilingual.model}'s similarity at that share "
            f"{np.quantile(multilingual_nearest, below):.3f} (the file has {request_kind.multilingual.min_similarity:g})")


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--conversations", type=int, default=8000)
    parser.add_argument("--users", type=int, default=2500)
    parser.add_argument("--seed", type=int, default=7, help="the sample's and the run's (bounding, clustering) seed")
    add_config_flags(parser, num_clusters=10, epsilon=JOB_DEFAULT)
    parser.add_argument("--noise_seeds", type=int, default=5)
    parser.add_argument("--min_conversations", type=int, default=100,
                        help="the least planted conversations of a topic x answer cell to score its interval")
    parser.add_argument("--real_data", default=DEFAULT_DATA,
                        help="JSON Lines file(s), joined by commas, for the request kinds before/after; '' skips")
    args = parser.parse_args(argv)
    config = config_from(args, facets=",".join(PLANTED_FIELDS))
    facet_set = load_facet_set(config.facet_set)
    language, request_kind = (facet for _, facet in facet_set.select(tuple(PLANTED_FIELDS)))
    with tempfile.TemporaryDirectory() as folder:
        path = os.path.join(folder, "facet_mix.jsonl")
        planted = planted_sample(path, args.conversations, args.users, args.seed)
        dataset = load_dataset(path)
    encoder = run_encoder(config)
    embeddings = embed_cached(dataset.facets, encoder.model)
    ids = dataset.conversation_ids
    rules = request_kind_rules(request_kind)
    languages, *answered = classify([language] + [facet for _, facet in rules], dataset.facets, embeddings,
                                    encoder)
    print(f"generate_sample --facet_mix: {len(dataset)} conversations, {len(set(dataset.user_ids))} users, "
          f"seed {args.seed}")
    print("== classifier accuracy on the planted answers")
    for line in accuracy_lines("language", accuracy([planted[c]["language"] for c in ids], languages)):
        print(line)
    truth_kind = [planted[c]["request_kind"] for c in ids]
    planted_language = [planted[c]["language"] for c in ids]
    for (title, _), answers in zip(rules, answered):
        for line in accuracy_lines(f"request_kind {title}", accuracy(truth_kind, answers)):
            print(line)
        subsets = [("English", {"en"}), ("not English", set(planted_language) - {"en"})]
        subsets += [(code, {code}) for code in sorted(set(planted_language) - {"en"})]
        print("    " + ", ".join(f"{subset} {result['overall']:.3f} of {result['n']}" for subset, result in (
            (subset, accuracy([truth_kind[i] for i, code in enumerate(planted_language) if code in codes],
                              [answers[i] for i, code in enumerate(planted_language) if code in codes]))
            for subset, codes in subsets)))
    print(f"== DP 95% intervals against the planted cells (epsilon {config.epsilon:g}, k = {config.num_clusters})")
    for line in coverage_lines(dataset, planted, {"language": languages, "request_kind": answered[-1]}, embeddings, config,
                               args.seed, args.noise_seeds, args.min_conversations):
        print(line)
    if args.real_data:
        print("== the real mix: request kinds under the three rules")
        for line in real_mix_lines(args.real_data, language, request_kind, encoder):
            print(line)
        print(threshold_match_line(args.real_data, request_kind, encoder))


if __name__ == "__main__":
    main()
