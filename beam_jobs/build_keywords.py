"""Builds a keyword set K for the insights job (URANIA's KwSet-TFIDF, -LLM, -Public, -Hybrid).

    python -m beam_jobs.build_keywords --method tfidf --input 'logs/*.jsonl' --output kw/tfidf.json
    python -m beam_jobs.build_keywords --method public --public_corpus public.txt --output kw/public.json

Writes a versioned keyword-set file (backends/keyword_set.py: keywords, method, params, source,
creation time and the privacy actually spent, read back from the mechanisms' accountants, with the
ledger run id and date that spend is charged under) that the main job takes with --keyword_set. DP
methods also write dead letters and exact counts to a private folder (--private_output, default
OUTPUT.private/), never into the keyword-set file.

- tfidf:  conversation term counts (L1-clipped) -> DP document frequencies (discrete Laplace) ->
          each conversation's top-k TF-IDF terms -> DP partition selection (user: <= C x k terms).
- llm:    a KeywordProposer's k keywords per conversation -> DP partition selection.
- public: candidates from --public_corpus only (never opens --input) -> refinement until stable.
- hybrid: the public set + proposed keywords not in it that pass DP partition selection.
DP-selected sets (tfidf, llm) are then optionally capped to --max_keywords by noisy counts and refined
(post-processing of public words).
"""

from __future__ import annotations

import dataclasses
import datetime as dt
import logging
import random
import sys

import apache_beam as beam
from apache_beam.options.pipeline_options import PipelineOptions

from backends import factory
from backends.keyword_set import keyword_set_document, load_keyword_set, write_keyword_set
from backends.offline_keywords import refine_until_stable
from beam_jobs.job_runtime import (
    EXIT_BAD_OPTIONS,
    EXIT_BUDGET_REFUSED,
    EXIT_FAILED,
    EXIT_UNREADABLE_INPUT,
    check_input_matches,
    fail,
    use_local_engine,
)
from beam_jobs.keyword_options import DP_METHODS, BuildKeywordsOptions, validate_build
from beam_jobs.logging_setup import configure_logging
from core import json_store
from core.run_context import resolve_date
from core.spend import MechanismSpend
from dp_ops.budget_ledger import BudgetRefused, Ledger, new_keyword_set_run_id
from dp_ops.partition_selection import TermSelectionParams
from dp_ops.run_budget import spend_event
from dp_ops.tfidf import STAGE, DocumentFrequencyParams
from transforms.bound_contributions import BoundUserContributions
from transforms.dp_document_frequencies import DPDocumentFrequencies
from transforms.dp_select_terms import DPSelectTerms
from transforms.extract_facets import ExtractFacets
from transforms.propose_keywords import ProposeKeywords
from transforms.public_candidates import PublicKeywordCandidates
from transforms.read_conversations import ReadConversations
from transforms.tfidf_terms import ClippedTermCounts, TopTfidfTerms
from transforms.write_outputs import WriteDeadLetters, WriteRunStats, count_globally

log = logging.getLogger("urania.build_keywords")


def private_folder(o: BuildKeywordsOptions) -> str:
    return (o.private_output or o.output + ".private").rstrip("/")


def max_terms_per_user(o: BuildKeywordsOptions) -> int:
    return o.max_terms_per_user or o.max_conversations_per_user * o.terms_per_conversation


def build_params(o: BuildKeywordsOptions) -> dict:
    """The public parameters recorded in the file (no data, no seed)."""
    params = {"refine_to": o.refine_to, "max_refine_rounds": o.max_refine_rounds,
              "refiner": type(factory.make_keyword_set_refiner(o)).__name__}
    if o.method in DP_METHODS:
        params.update(epsilon=o.epsilon_keyword_set, delta=o.delta_keyword_set,
                      max_conversations_per_user=o.max_conversations_per_user,
                      terms_per_conversation=o.terms_per_conversation, max_terms_per_user=max_terms_per_user(o),
                      partition_selection=o.partition_selection, max_keywords=o.max_keywords,
                      facet_extractor=type(factory.make_facet_extractor(o)).__name__)
    if o.method == "tfidf":
        params.update(tfidf_df_epsilon_share=o.tfidf_df_epsilon_share,
                      max_terms_per_conversation=o.max_terms_per_conversation, df_buckets=o.df_buckets,
                      tfidf_min_noisy_df=o.tfidf_min_noisy_df,
                      tokenizer="HF tokenizers BertNormalizer + BertPreTokenizer, spaCy English stopwords")
    if o.method in ("llm", "hybrid"):
        params["proposer"] = type(factory.make_keyword_proposer(o)).__name__
    if o.method in ("public", "hybrid"):
        params.update(min_public_document_frequency=o.min_public_document_frequency,
                      max_public_candidates=o.max_public_candidates,
                      candidate_extractors=["spaCy en_core_web_sm entities + noun chunks", "YAKE"])
    return params


def source_description(o: BuildKeywordsOptions) -> dict:
    return {"private_input": o.input if o.method in DP_METHODS else None,
            "reads_private_input": o.method in DP_METHODS,
            "public_corpus": o.public_corpus if o.method in ("public", "hybrid") else None}


def ranked_selection(selected: list[tuple[str, float | None]], max_keywords: int | None) -> list[str]:
    """DP-selected terms, largest noisy count first (alphabetical without counts), capped to K."""
    ranked = sorted(selected, key=lambda pair: (-(pair[1] or 0.0), pair[0]))
    terms = [term for term, _ in ranked]
    return terms if max_keywords is None else terms[:max_keywords]


def _refined(keywords: list[str], refiner, target: int, max_rounds: int) -> list[str]:
    if target == 0 or not keywords:
        return keywords
    refiner.setup()
    refined, rounds = refine_until_stable(refiner, keywords, target, max_rounds)
    log.info("keyword set refined", extra={"event": "keyword_set_refined", "before": len(keywords),
                                           "after": len(refined), "rounds": rounds})
    return refined


def _bounded_facets(pipeline, o: BuildKeywordsOptions):
    """The private side shared by the DP methods: read + validate, bound to C per user, facets."""
    records = pipeline | "read and validate conversations" >> ReadConversations(o.input, o.max_record_bytes)
    kept = records.valid | "bound user contributions" >> BoundUserContributions(o.max_conversations_per_user, o.seed)
    facets = kept | "extract facets" >> ExtractFacets(factory.make_facet_extractor(o))
    folder = private_folder(o)
    dead_letters = (records.dead_letter, facets.dead_letter) | "all dead letters" >> beam.Flatten()
    dead_letters | "write dead letters" >> WriteDeadLetters(folder + "/dead_letter/dead_letter")
    counts = {"valid": count_globally(records.valid, "count valid"),
              "conversations_after_bounding": count_globally(kept, "count kept")}
    pipeline | "write run stats" >> WriteRunStats(folder + "/run_stats.json", counts, dead_letters)
    return facets.output


def _public_set(pipeline, o: BuildKeywordsOptions):
    refiner = factory.make_keyword_set_refiner(o)
    return (pipeline
            | "public candidates" >> PublicKeywordCandidates(o.public_corpus, o.min_public_document_frequency,
                                                             o.max_public_candidates)
            | "refine public set" >> beam.Map(_refined, refiner, o.refine_to, o.max_refine_rounds))


def ledger_date(o: BuildKeywordsOptions) -> str:
    """The date a keyword set's spend is charged on, in any ledger: --date, else the UTC build day."""
    return resolve_date(o.date) or dt.datetime.now(dt.timezone.utc).date().isoformat()


def build_pipeline(pipeline: beam.Pipeline, o: BuildKeywordsOptions, ledger_run_id: str | None = None,
                   charge_date: str | None = None) -> list[MechanismSpend]:
    """Wires the method's stages and the final write; returns what its DP stages spend. The file
    carries the ledger run id and date its spend is charged under (new ones unless given)."""
    ledger_run_id = ledger_run_id or new_keyword_set_run_id()
    charge_date = charge_date or ledger_date(o)
    spends: list[MechanismSpend] = []
    selection = TermSelectionParams(stage=STAGE, epsilon=o.epsilon_keyword_set, delta=o.delta_keyword_set,
                                    max_partitions_per_user=max_terms_per_user(o),
                                    with_counts=o.max_keywords is not None, strategy=o.partition_selection)
    public = _public_set(pipeline, o) if o.method in ("public", "hybrid") else None
    selected = None
    if o.method == "tfidf":
        df_params = DocumentFrequencyParams(o.epsilon_keyword_set * o.tfidf_df_epsilon_share,
                                            o.max_conversations_per_user, o.max_terms_per_conversation, o.df_buckets)
        selection = dataclasses.replace(selection, epsilon=o.epsilon_keyword_set - df_params.epsilon)
        clipped = _bounded_facets(pipeline, o) | "clipped term counts" >> ClippedTermCounts(o.max_terms_per_conversation)
        frequencies = DPDocumentFrequencies(df_params)
        noisy = clipped | "DP document frequencies" >> frequencies
        min_df = o.tfidf_min_noisy_df if o.tfidf_min_noisy_df is not None else df_params.default_min_noisy_frequency()
        pairs = clipped | "top-k TF-IDF terms" >> TopTfidfTerms(noisy, o.terms_per_conversation, min_df)
        spends.append(frequencies.spend)
    elif o.method in ("llm", "hybrid"):
        pairs = _bounded_facets(pipeline, o) | "propose keywords" >> ProposeKeywords(
            factory.make_keyword_proposer(o), o.terms_per_conversation)
        if public is not None:
            # Public keywords need no budget: only novel ones go through DP selection.
            known = public | "public set for lookup" >> beam.Map(frozenset)
            pairs = pairs | "novel keywords only" >> beam.Filter(
                lambda pair, known: pair[1] not in known, beam.pvalue.AsSingleton(known))
    if o.method in DP_METHODS:
        select = DPSelectTerms(selection)
        selected = pairs | "DP partition selection" >> select
        spends.append(select.spend)

    refiner = factory.make_keyword_set_refiner(o)
    params, source, output = build_params(o), source_description(o), o.output
    max_keywords, refine_to, max_rounds = o.max_keywords, o.refine_to, o.max_refine_rounds
    method = o.method

    def write(_, dp_terms, public_terms):
        if method == "public":
            keywords = public_terms
        elif method == "hybrid":
            keywords = public_terms + [t for t in ranked_selection(dp_terms, max_keywords) if t not in public_terms]
        else:
            keywords = _refined(ranked_selection(dp_terms, max_keywords), refiner, refine_to, max_rounds)
        if not keywords:
            raise ValueError(f"no keyword survived the {method} method (DP selection or the public corpus gave "
                             f"none): use more data, a larger --epsilon_keyword_set or a smaller "
                             f"--max_conversations_per_user x --terms_per_conversation")
        write_keyword_set(output, keyword_set_document(keywords, method, params, source, spends,
                                                       ledger_run_id=ledger_run_id, ledger_date=charge_date))
        return len(keywords)

    trigger = pipeline | "write trigger" >> beam.Create([None])
    dp_side = (beam.pvalue.AsList(selected) if selected is not None
               else beam.pvalue.AsList(pipeline | "no DP terms" >> beam.Create([])))
    public_side = (beam.pvalue.AsSingleton(public) if public is not None
                   else beam.pvalue.AsSingleton(pipeline | "no public terms" >> beam.Create([[]])))
    trigger | "write keyword set" >> beam.Map(write, dp_side, public_side)
    return spends


def _charge_ledger(o: BuildKeywordsOptions, run_id: str, date: str, epsilon: float, delta: float,
                   events=None) -> None:
    """Records the keyword set's spend once, on its build date (not each night it is used), with its
    mechanisms' events (None: the (epsilon, delta) event of its total)."""
    json_store.update_json(o.privacy_ledger, lambda document: Ledger.from_json(document).with_keyword_set(
        run_id, date, epsilon, delta, "reserved", o.output, o.max_epsilon_per_window, o.window_days,
        events=events).to_json())


def _set_status(o: BuildKeywordsOptions, run_id: str, status: str) -> None:
    json_store.update_json(o.privacy_ledger, lambda doc: Ledger.from_json(doc).with_status(run_id, status).to_json())


def run(argv: list[str] | None = None) -> int:
    pipeline_options = PipelineOptions(argv)
    o = pipeline_options.view_as(BuildKeywordsOptions)
    try:
        validate_build(o)
        if o.seed is None:
            o.seed = random.SystemRandom().randrange(2**31)
        date = ledger_date(o)
    except ValueError as error:
        return fail(EXIT_BAD_OPTIONS, "bad_options", f"bad options: {error}")
    if o.method in DP_METHODS:
        try:
            check_input_matches(o.input)
        except FileNotFoundError as error:
            return fail(EXIT_UNREADABLE_INPUT, "unreadable_input", str(error))
    use_local_engine(pipeline_options)
    pipeline = beam.Pipeline(options=pipeline_options)
    # Made whether or not --privacy_ledger is given and written into the file: a nightly run whose
    # ledger does not hold this id charges the set's spend under it (beam_jobs.insights._reserve_budget).
    run_id = new_keyword_set_run_id()
    spends = build_pipeline(pipeline, o, run_id, date)
    ledgered = bool(o.privacy_ledger and spends)
    if ledgered:
        try:
            _charge_ledger(o, run_id, date, sum(s.epsilon for s in spends), sum(s.delta for s in spends),
                           [spend_event(s) for s in spends])
        except BudgetRefused as error:
            return fail(EXIT_BUDGET_REFUSED, "budget_refused", str(error))
    try:
        pipeline.run().wait_until_finish()
    except Exception as error:
        if ledgered:
            _set_status(o, run_id, "failed")
        return fail(EXIT_FAILED, "pipeline_failed", f"pipeline failed: {type(error).__name__}: {error}")
    if ledgered:
        _set_status(o, run_id, "committed")
    built = load_keyword_set(o.output)
    epsilon, delta = sum(s.epsilon for s in built.spend), sum(s.delta for s in built.spend)
    print(f"wrote {len(built.keywords)} keywords ({o.method}, epsilon {epsilon:.3f}, delta {delta:.1e}) -> {o.output}")
    return 0


def main() -> None:
    configure_logging()
    sys.exit(run(sys.argv[1:]))


if __name__ == "__main__":
    main()
