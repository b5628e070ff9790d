r"""Builds a keyword set K for the insights job (URANIA's KwSet-TFIDF, -LLM, -Public, -Hybrid).

    python -m beam_jobs.build_keywords --method tfidf --input 'logs/dt=2026-10-*/*.jsonl' --date 2026-10-31 \
        --data_days 31 --private_output private/kw-tfidf --output kw/tfidf.json
    python -m beam_jobs.build_keywords --method public --public_corpus public.txt --output kw/public.json

Writes a versioned keyword-set file (backends/keyword_set.py: keywords, method, params, source,
creation time and the privacy actually spent, read back from the mechanisms' accountants, with the
ledger run id and the days that spend is charged on) that the main job takes with --keyword_set. DP
methods need --private_output, a folder outside the keyword-set file's, for dead letters (of
reading, facets and keyword proposals) and exact counts, never written into or beside the public
file; and --date (with --data_days), the days of the data they read: every ledger charges the
set's spend on those days, so it counts in the windows of the users it was spent on.

- tfidf:  user term counts (conversations' L1-clipped counts summed) -> DP user-level document
          frequencies (Gaussian, PLD-calibrated with the selection) -> each user's top L0 TF-IDF terms
          -> DP partition selection, ranked by the noisy document frequencies.
- llm:    a KeywordProposer's k keywords per conversation -> each user's L0 keywords proposed for most
          of their conversations -> DP partition selection.
- public: candidates from --public_corpus only (never opens --input) -> refinement until stable.
- hybrid: the public set + proposed keywords not in it that pass DP partition selection.
DP-selected sets (tfidf, llm) are then optionally capped to --max_keywords (tfidf by its noisy document
frequencies, llm by noisy user counts) and refined (post-processing of public words).
"""

from __future__ import annotations

import dataclasses
import logging

import apache_beam as beam
from apache_beam.options.pipeline_options import PipelineOptions

from backends import factory
from backends.keyword_set import keyword_set_document, keyword_set_total, load_keyword_set, write_keyword_set
from backends.offline_keywords import refine_until_stable
from beam_jobs import job_help
from beam_jobs.job_runtime import (
    EXIT_BAD_OPTIONS,
    EXIT_BUDGET_REFUSED,
    EXIT_FAILED,
    EXIT_UNREADABLE_INPUT,
    check_input_matches,
    fail,
    run_as_command,
    use_local_engine,
)
from config.keyword_set import (
    DP_METHODS,
    DP_REQUIRED_FLAGS,
    DP_REQUIREMENT,
    REQUIRED_FLAGS,
    BuildKeywordsOptions,
    BuildKeywordsParams,
    build_keywords_params,
)
from config.llm import LLMParams
from config.run import RunParams
from core.dates import resolve_date
from core.spend import MechanismSpend
from dp_ops.budget_ledger import BudgetRefused, new_keyword_set_run_id
from dp_ops.ledger_updates import Charge, reserve_budget, set_ledger_status
from dp_ops.partition_selection import TermSelectionParams
from dp_ops.run_budget import RunBudget, spend_event
from dp_ops.tfidf import SELECTION_DELTA_SHARE, STAGE, DocumentFrequencyParams, calibrated_document_frequencies
from transforms.bound_contributions import BoundUserContributions
from transforms.dp_stage import require_registered_dp_stages
from transforms.extract_facets import ExtractFacets
from transforms.keyword_set.dp_document_frequencies import DPDocumentFrequencies
from transforms.keyword_set.dp_select_terms import DPSelectTerms
from transforms.keyword_set.nominate_terms import NominateTerms
from transforms.keyword_set.propose_keywords import ProposeKeywords
from transforms.keyword_set.public_candidates import PublicKeywordCandidates
from transforms.keyword_set.tfidf_terms import ClippedTermCounts, TopTfidfTerms, UserTermCounts
from transforms.read_conversations import ReadConversations
from transforms.write_outputs import WriteDeadLetters, WriteRunStats, count_globally

log = logging.getLogger("urania.build_keywords")


def private_folder(params: BuildKeywordsParams) -> str:
    """The DP methods' private folder: --private_output (required for them, outside the public file's folder)."""
    if not params.run.private_output:
        raise ValueError(f"--method {params.builder.method} needs --private_output")
    return params.run.private_output.rstrip("/")


def build_params(params: BuildKeywordsParams, llm: LLMParams | None) -> dict:
    """The public parameters recorded in the file (no data, no seed); `llm`: the run's resolved LLMParams
    (None offline)."""
    builder = params.builder
    recorded = {"refine_to": builder.refine_to, "max_refine_rounds": builder.max_refine_rounds,
                "refiner": type(factory.make_keyword_set_refiner(params.embedding.encoder, llm)).__name__}
    if builder.method in DP_METHODS:
        recorded.update(epsilon=builder.epsilon_keyword_set, delta=builder.delta_keyword_set,
                        max_conversations_per_user=params.privacy.max_conversations_per_user,
                        terms_per_conversation=builder.terms_per_conversation,
                        max_terms_per_user=builder.max_terms_per_user,
                        partition_selection=builder.partition_selection, max_keywords=builder.max_keywords,
                        facet_extractor=type(factory.make_facet_extractor(params.reading.facet_max_chars,
                                                                          llm)).__name__)
    if builder.method == "tfidf":
        recorded.update(tfidf_df_epsilon_share=builder.tfidf_df_epsilon_share,
                        max_terms_per_conversation=builder.max_terms_per_conversation,
                        df_terms_per_user=builder.df_terms_per_user, df_buckets=builder.df_buckets,
                        tfidf_min_noisy_df=builder.tfidf_min_noisy_df,
                        tokenizer="HF tokenizers BertNormalizer + BertPreTokenizer, spaCy English stopwords")
    if builder.method in ("llm", "hybrid"):
        recorded["proposer"] = type(factory.make_keyword_proposer(llm)).__name__
    if builder.method in ("public", "hybrid"):
        recorded.update(min_public_document_frequency=builder.min_public_document_frequency,
                        max_public_candidates=builder.max_public_candidates,
                        candidate_extractors=["spaCy en_core_web_sm entities + noun chunks", "YAKE"])
    return recorded


def source_description(params: BuildKeywordsParams) -> dict:
    method = params.builder.method
    return {"private_input": params.reading.input if method in DP_METHODS else None,
            "reads_private_input": method in DP_METHODS,
            "public_corpus": params.builder.public_corpus if method in ("public", "hybrid") else None}


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


def _bounded_facets(pipeline, params: BuildKeywordsParams, llm: LLMParams | None) -> tuple:
    """The private side shared by the DP methods: read + validate, bound to C per user, facets.
    Returns (facets, dead letters so far, exact counts) for `_write_private`."""
    records = pipeline | "read and validate conversations" >> ReadConversations(params.reading.input,
                                                                                params.reading.max_record_bytes)
    kept = records.valid | "bound user contributions" >> BoundUserContributions(
        params.privacy.max_conversations_per_user, params.run.seed)
    facets = kept | "extract facets" >> ExtractFacets(factory.make_facet_extractor(params.reading.facet_max_chars,
                                                                                   llm))
    counts = {"valid": count_globally(records.valid, "count valid"),
              "conversations_after_bounding": count_globally(kept, "count kept")}
    return facets.output, [records.dead_letter, facets.dead_letter], counts


def _write_private(pipeline, params: BuildKeywordsParams, dead_letters: list, counts: dict) -> None:
    """Every stage's dead letters and the exact counts, to --private_output (never beside the file)."""
    folder = private_folder(params)
    dead_letters = tuple(dead_letters) | "all dead letters" >> beam.Flatten()
    dead_letters | "write dead letters" >> WriteDeadLetters(folder + "/dead_letter/dead_letter")
    pipeline | "write run stats" >> WriteRunStats(folder + "/run_stats.json", counts, dead_letters)


def _public_set(pipeline, params: BuildKeywordsParams, llm: LLMParams | None):
    builder = params.builder
    refiner = factory.make_keyword_set_refiner(params.embedding.encoder, llm)
    return (pipeline
            | "public candidates" >> PublicKeywordCandidates(builder.public_corpus,
                                                             builder.min_public_document_frequency,
                                                             builder.max_public_candidates)
            | "refine public set" >> beam.Map(_refined, refiner, builder.refine_to, builder.max_refine_rounds))


def selection_params(params: BuildKeywordsParams) -> TermSelectionParams:
    """The partition selection of the llm and hybrid methods: the set's whole (epsilon, delta), plus a
    noisy user count per term when --max_keywords ranks them."""
    builder = params.builder
    return TermSelectionParams(stage=STAGE, epsilon=builder.epsilon_keyword_set, delta=builder.delta_keyword_set,
                               max_partitions_per_user=builder.max_terms_per_user,
                               with_counts=builder.max_keywords is not None, strategy=builder.partition_selection)


def tfidf_budget(params: BuildKeywordsParams) -> tuple[DocumentFrequencyParams, TermSelectionParams]:
    """tfidf's two releases: the selection gets (1 - --tfidf_df_epsilon_share) of epsilon and
    SELECTION_DELTA_SHARE of delta, the Gaussian document frequencies the noise that makes the PLD
    composition of both (epsilon, delta). It needs no noisy counts: the frequencies rank its terms."""
    builder = params.builder
    selection = dataclasses.replace(
        selection_params(params), epsilon=builder.epsilon_keyword_set * (1 - builder.tfidf_df_epsilon_share),
        delta=builder.delta_keyword_set * SELECTION_DELTA_SHARE, with_counts=False)
    frequencies = calibrated_document_frequencies(builder.epsilon_keyword_set, builder.delta_keyword_set,
                                                  selection.epsilon, selection.delta, builder.df_terms_per_user,
                                                  builder.df_buckets)
    return frequencies, selection


def ledger_date(run_params: RunParams) -> str | None:
    """The last day of the build's data (--date, required for the DP methods), on which (with the
    --data_days before it) any ledger charges the set's spend. Never the build day: the spend is on
    the users of the data, whose windows are those of its days. None for the public method (no spend)."""
    return resolve_date(run_params.date)


def build_pipeline(pipeline: beam.Pipeline, params: BuildKeywordsParams, ledger_run_id: str | None = None,
                   charge_date: str | None = None) -> list[MechanismSpend]:
    """Wires the method's stages and the final write; returns what its DP stages spend. The file
    carries the ledger run id and days its spend is charged on (a new id unless given)."""
    builder = params.builder
    ledger_run_id = ledger_run_id or new_keyword_set_run_id()
    charge_date = charge_date or ledger_date(params.run)
    charge_days = builder.data_days
    if builder.method in DP_METHODS and not charge_date:
        raise ValueError(f"--method {builder.method} needs --date: the last day of its data, its spend's date")
    # The run's one resolved LLMParams for its steps; run() preflighted the backend before any data was read.
    llm = params.llm.resolved()
    # Every DP stage registers here (transforms/dp_stage.py); the file records their spends, which
    # the nightly run's budget composes with its own.
    budget = RunBudget(builder.delta_keyword_set) if builder.method in DP_METHODS else None
    selection = selection_params(params)
    public = _public_set(pipeline, params, llm) if builder.method in ("public", "hybrid") else None
    selected = None
    if builder.method in DP_METHODS:
        facets, dead_letters, counts = _bounded_facets(pipeline, params, llm)
    if builder.method == "tfidf":
        df_params, selection = tfidf_budget(params)
        user_counts = (facets
                       | "clipped term counts" >> ClippedTermCounts(builder.max_terms_per_conversation)
                       | "user term counts" >> UserTermCounts())
        frequencies = DPDocumentFrequencies(df_params, budget)
        noisy = user_counts | "DP document frequencies" >> frequencies
        min_df = (builder.tfidf_min_noisy_df if builder.tfidf_min_noisy_df is not None
                  else df_params.default_min_noisy_frequency())
        pairs = user_counts | "top TF-IDF terms per user" >> TopTfidfTerms(noisy, builder.max_terms_per_user, min_df)
    elif builder.method in ("llm", "hybrid"):
        # Record-isolated: a conversation whose proposal fails is dead-lettered alone.
        proposed = facets | "propose keywords" >> ProposeKeywords(
            factory.make_keyword_proposer(llm), builder.terms_per_conversation)
        dead_letters.append(proposed.dead_letter)
        proposals = proposed.output
        if public is not None:
            # Public keywords need no budget: only novel ones go through DP selection.
            known = public | "public set for lookup" >> beam.Map(frozenset)
            proposals = proposals | "novel keywords only" >> beam.Filter(
                lambda pair, known: pair[1][0] not in known, beam.pvalue.AsSingleton(known))
        pairs = proposals | "nominate each user's keywords" >> NominateTerms(builder.max_terms_per_user)
    if builder.method in DP_METHODS:
        _write_private(pipeline, params, dead_letters, counts)
        select = DPSelectTerms(selection, budget)
        selected = pairs | "DP partition selection" >> select
    if builder.method == "tfidf":
        # The noisy document frequencies are already released: ranking by them costs nothing.
        selected = selected | "rank by noisy document frequency" >> beam.Map(
            lambda pair, noisy: (pair[0], noisy.frequency(pair[0])), beam.pvalue.AsSingleton(noisy))

    # What the DP stages registered as they were built (none for --method public): the file records them.
    spends = list(budget.entries) if budget is not None else []
    refiner = factory.make_keyword_set_refiner(params.embedding.encoder, llm)
    recorded, source, output = build_params(params, llm), source_description(params), params.run.output
    max_keywords, refine_to, max_rounds = builder.max_keywords, builder.refine_to, builder.max_refine_rounds
    method = builder.method

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
        write_keyword_set(output, keyword_set_document(keywords, method, recorded, source, spends,
                                                       ledger_run_id=ledger_run_id, ledger_date=charge_date,
                                                       ledger_days=charge_days))
        return len(keywords)

    trigger = pipeline | "write trigger" >> beam.Create([None])
    dp_side = (beam.pvalue.AsList(selected) if selected is not None
               else beam.pvalue.AsList(pipeline | "no DP terms" >> beam.Create([])))
    public_side = (beam.pvalue.AsSingleton(public) if public is not None
                   else beam.pvalue.AsSingleton(pipeline | "no public terms" >> beam.Create([[]])))
    trigger | "write keyword set" >> beam.Map(write, dp_side, public_side)
    require_registered_dp_stages(pipeline)
    return spends


def run(argv: list[str] | None = None) -> int:
    """Builds the keyword set; returns the process exit code."""
    if job_help.help_requested(argv):  # before any other work; Beam's own --help lists none of the job's flags
        return job_help.print_help(BuildKeywordsParams, prog="python -m beam_jobs.build_keywords", description=__doc__,
                                   required=REQUIRED_FLAGS, required_when={DP_REQUIREMENT: DP_REQUIRED_FLAGS})
    pipeline_options = PipelineOptions(argv)
    try:
        params = build_keywords_params(pipeline_options.view_as(BuildKeywordsOptions))
        params = dataclasses.replace(params, run=params.run.with_seed())
        date = ledger_date(params.run)
        # The one preflight (backends.factory.preflight): the pseudonymizer's name model, the backend's software
        # and model, the local server's start, the remote backend's fixed call; a failure is a bad option.
        factory.preflight(params.llm)
    except ValueError as error:
        return fail(EXIT_BAD_OPTIONS, "bad_options", f"bad options: {error}")
    if params.builder.method in DP_METHODS:
        try:
            check_input_matches(params.reading.input)
        except FileNotFoundError as error:
            return fail(EXIT_UNREADABLE_INPUT, "unreadable_input", str(error))
    use_local_engine(pipeline_options)
    pipeline = beam.Pipeline(options=pipeline_options)
    # Made whether or not --privacy_ledger is given and written into the file: a nightly run whose
    # ledger does not hold this id charges the set's spend under it (beam_jobs.job_runtime.reserve_run_budget).
    run_id = new_keyword_set_run_id()
    spends = build_pipeline(pipeline, params, run_id, date)
    ledgered = bool(params.run.privacy_ledger and spends)
    if ledgered:
        try:
            # The set's spend is charged once, on the days of its data (not its build day, nor each
            # night it is used): every window holding one of them counts it.
            set_charge = Charge(run_id, date, *keyword_set_total(spends)[:2], params.run.output,
                                events=tuple(spend_event(s) for s in spends), days=params.builder.data_days)
            reserve_budget(params.run.privacy_ledger, params.run.ledger_policy(), keyword_set=set_charge)
        except BudgetRefused as error:
            return fail(EXIT_BUDGET_REFUSED, "budget_refused", str(error))
    try:
        pipeline.run().wait_until_finish()
    except Exception as error:
        if ledgered:
            set_ledger_status(params.run.privacy_ledger, run_id, "failed")
        return fail(EXIT_FAILED, "pipeline_failed", f"pipeline failed: {type(error).__name__}: {error}")
    if ledgered:
        set_ledger_status(params.run.privacy_ledger, run_id, "committed")
    output = params.run.output
    built = load_keyword_set(output)
    epsilon, delta, _ = keyword_set_total(built.spend)
    print(f"wrote {len(built.keywords)} keywords ({params.builder.method}, epsilon {epsilon:.3f}, "
          f"delta {delta:.1e}) -> {output}")
    return 0


if __name__ == "__main__":
    run_as_command(run)
