"""Do semantic pseudonyms help the LLM steps? Facet and keyword agreement with an un-pseudonymized run.

Requests with people in them (the labelled set of eval/pii/pii_corpus.py, each text one single-turn
conversation) go through the job's LLM facet and keyword steps three times: without
pseudonymization (the reference), with typed pseudonyms ("<PERSON_1>", the default) and with
surrogates (a made-up name of the same gender, backends/pii/surrogates.py). Per condition it prints:
- facet agreement: mean cosine (the job's embedding model) of each facet summary with the
  reference's, and the share of facets within 0.9 of it;
- keyword agreement: mean Jaccard of each conversation's selected keywords (from K) with the
  reference's, and the share with the same first keyword;
- failed calls, and the conversations dead-lettered for them: as in the job
  (transforms/record_isolation.run_isolated), a conversation whose facet or keyword call fails for
  good is dead-lettered alone, never answered by the offline step; it is left out of the scores of
  every condition it failed in, and of the reference's comparisons.
The model is deterministic at temperature 0, so the reference is one run.

    PYTHONPATH=. python -m eval.pii.pseudonym_agreement --examples 150 --llm_backend local --llm_model qwen2.5-coder-0.5b

It also prints the paired difference surrogate - typed per metric, with a bootstrap interval over
the conversations.
"""

from __future__ import annotations

import argparse
import time

import numpy as np

from backends.llm.config import start_local_server
from config.embedding import Encoder
from config.llm import LLMParams
from core.records import Conversation, Message
from dp_ops.dp_kmeans import normalise_rows
from eval.pii.pii_corpus import SPLITS, generate
from transforms.record_isolation import run_isolated

CONDITIONS = {"reference (no pseudonyms)": (False, "typed"), "typed": (True, "typed"), "surrogate": (True, "surrogate")}


def conversations_with_people(split: str, count: int, seed: int) -> list[Conversation]:
    examples = [e for e in generate(split, 4 * count, seed) if any(x["kind"] == "PERSON" for x in e["entities"])]
    return [Conversation(f"c{i}", f"u{i}", None, (Message("user", e["text"]),)) for i, e in enumerate(examples[:count])]


def _isolated(run_batch, items: list) -> list:
    """Each item's result, or None where it failed alone (the job dead-letters that record)."""
    return [result if error is None else None for result, error in run_isolated(run_batch, items)]


def run_condition(conversations, config: LLMParams, keywords: tuple[str, ...], encoder: Encoder,
                  max_keywords: int):
    """(facets, keyword picks, facet embeddings, failed calls) of the job's facet and keyword steps under
    `config`, one facet, pick list and embedding row per conversation (`encoder`: the run's, for both). A
    dead-lettered conversation has None as its facet (facet step) or picks (either step), and a row of NaN as
    its embedding."""
    from backends import factory
    from backends.embedding import encode
    extractor = factory.make_facet_extractor(4000, config)
    facets = _isolated(extractor.extract_batch, conversations)
    kept = [i for i, facet in enumerate(facets) if facet is not None]
    embeddings = np.full((len(facets), 1), np.nan)
    picks: list[list[str] | None] = [None] * len(facets)
    selector = factory.make_keyword_selector(keywords, encoder, 0.3, config)
    if kept:
        kept_embeddings = encode(encoder, [facets[i] for i in kept])
        embeddings = np.full((len(facets), kept_embeddings.shape[1]), np.nan)
        embeddings[kept] = kept_embeddings
        kept_picks = _isolated(lambda rows: selector.select([facets[kept[r]] for r in rows], kept_embeddings[rows],
                                                            max_keywords), list(range(len(kept))))
        for i, chosen in zip(kept, kept_picks):
            picks[i] = chosen
    failed = sum(step.counters.totals["failures"] for step in (extractor, selector))
    extractor.teardown()
    selector.teardown()
    return facets, picks, embeddings, failed


def dead_lettered(run) -> int:
    """Conversations of a run_condition result dead-lettered by its facet or keyword step."""
    return sum(picks is None for picks in run[1])


def per_conversation(reference, candidate) -> dict[str, np.ndarray]:
    """Each conversation's facet cosine and keyword Jaccard with the reference, and whether its
    first keyword is the reference's; NaN where either run dead-lettered the conversation."""
    _, ref_picks, ref_emb, _ = reference
    _, picks, emb, _ = candidate
    scored = np.array([a is not None and b is not None for a, b in zip(ref_picks, picks)], dtype=bool)

    def per_pair(score) -> np.ndarray:
        return np.array([score(a, b) if a is not None and b is not None else np.nan for a, b in zip(ref_picks, picks)],
                        dtype=float)

    return {"facet_cosine": np.where(scored, np.sum(normalise_rows(ref_emb) * normalise_rows(emb), axis=1), np.nan),
            "keyword_jaccard": per_pair(lambda a, b: len(set(a) & set(b)) / max(1, len(set(a) | set(b)))),
            "same_first_keyword": per_pair(lambda a, b: bool(a) and bool(b) and a[0] == b[0])}


def agreement(reference, candidate) -> dict:
    """Mean scores over the conversations neither run dead-lettered (NaN if there are none)."""
    scores = per_conversation(reference, candidate)
    cosine = scores["facet_cosine"]
    scored = ~np.isnan(cosine)
    return {"facet_cosine": _mean(cosine[scored]),
            "facets_within_0.9": _mean(cosine[scored] >= 0.9),
            "keyword_jaccard": _mean(scores["keyword_jaccard"][scored]),
            "same_first_keyword": _mean(scores["same_first_keyword"][scored]), "failed_calls": candidate[3],
            "dead_lettered": dead_lettered(candidate), "scored": int(scored.sum())}


def _mean(values: np.ndarray) -> float:
    return float(np.mean(values)) if len(values) else float("nan")


def paired_difference(a: np.ndarray, b: np.ndarray, resamples: int = 2000, seed: int = 0) -> tuple[float, float, float]:
    """Mean of b - a over the same conversations, with a 95% bootstrap interval (conversations resampled).
    Conversations with a NaN score in either (dead-lettered in some run) are left out."""
    differences = b - a
    differences = differences[~np.isnan(differences)]
    if not len(differences):
        return float("nan"), float("nan"), float("nan")
    rng = np.random.default_rng(seed)
    means = differences[rng.integers(0, len(differences), (resamples, len(differences)))].mean(axis=1)
    return float(differences.mean()), float(np.quantile(means, 0.025)), float(np.quantile(means, 0.975))


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--split", choices=SPLITS, default="heldout")
    parser.add_argument("--examples", type=int, default=60)
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument("--llm_backend", default="local", choices=("local", "openai"))
    parser.add_argument("--llm_model", default="qwen2.5-coder-0.5b")
    parser.add_argument("--llm_base_url")
    parser.add_argument("--llm_threads", type=int, default=1)
    parser.add_argument("--max_keywords", type=int, default=3)
    parser.add_argument("--show", type=int, default=0, help="print N conversations' facets per condition")
    parser.add_argument("--llm_cache", help="folder of a response cache (reruns skip the calls already answered)")
    args = parser.parse_args(argv)
    from backends.keyword_set import load_keyword_set
    keywords = tuple(load_keyword_set().keywords)
    conversations = conversations_with_people(args.split, args.examples, args.seed)
    print(f"{len(conversations)} requests with people ({args.split} split, seed {args.seed}); "
          f"{args.llm_backend} {args.llm_model}")
    results = {}
    for name, (pseudonymize, pseudonyms) in CONDITIONS.items():
        started = time.perf_counter()
        config = LLMParams(llm_backend=args.llm_backend, llm_model=args.llm_model, llm_base_url=args.llm_base_url,
                           llm_threads=args.llm_threads, llm_timeout_s=600, llm_steps="facets,keywords",
                           llm_cache=args.llm_cache, pseudonymize="on" if pseudonymize else "off",
                           pseudonyms=pseudonyms if pseudonymize else None).resolved()
        start_local_server(config)
        results[name] = run_condition(conversations, config, keywords, Encoder(), args.max_keywords)
        print(f"  {name}: {time.perf_counter() - started:.0f} s", flush=True)
        for conversation, facet in list(zip(conversations, results[name][0]))[:args.show]:
            print(f"    {conversation.messages[0].content[:90]!r} -> {facet!r}")
    reference = results[next(iter(CONDITIONS))]
    print("\n| condition | facet cosine with the reference | facets within 0.9 | keyword Jaccard "
          "| same first keyword | failed calls | dead-lettered | scored |\n|---|---|---|---|---|---|---|---|")
    for name in list(CONDITIONS)[1:]:
        a = agreement(reference, results[name])
        print(f"| {name} | {a['facet_cosine']:.3f} | {a['facets_within_0.9']:.0%} | {a['keyword_jaccard']:.3f} "
              f"| {a['same_first_keyword']:.0%} | {a['failed_calls']} | {a['dead_lettered']} | {a['scored']} |")
    print(f"(reference: failed calls {reference[3]}, dead-lettered {dead_lettered(reference)})")
    typed, surrogate = (per_conversation(reference, results[name]) for name in ("typed", "surrogate"))
    print("\nsurrogate - typed, the same conversations (mean [95% bootstrap interval]):")
    for metric in typed:
        mean, low, high = paired_difference(typed[metric], surrogate[metric])
        print(f"  {metric}: {mean:+.3f} [{low:+.3f}, {high:+.3f}]")


if __name__ == "__main__":
    main()
