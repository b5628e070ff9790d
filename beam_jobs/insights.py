"""The main job: chatbot conversation logs -> topic insights under user-level DP (URANIA, Alg. 1).

    python -m beam_jobs.insights --input 'logs/*.jsonl' --output out/ [options] [Beam flags]

Writes RUN/release/report.json and report.html (DP outputs and their post-processing only) and RUN/private/
(run_stats.json, dead_letter/, assignments/, release_gate.json), where RUN is OUTPUT, or
OUTPUT/dt=DATE/run=RUN_ID/ with --date. See docs/privacy.md for the privacy guarantee and README.md for exit codes.
"""

from __future__ import annotations

import contextlib
import dataclasses
import logging
import sys
import time

import apache_beam as beam
from apache_beam.options.pipeline_options import DirectOptions, PipelineOptions, StandardOptions

from backends import factory
from backends.centre_decoder import load_bank
from backends.keyword_categories import KeywordCategories
from backends.keyword_set import KeywordSet, load_keyword_set
from backends.label_evidence import sensitive_guess
from backends.token_decoder import TokenDecoder
from beam_jobs import job_help, progress
from beam_jobs.freed_memory import freed_memory_returned
from beam_jobs.job_runtime import (
    EXIT_BAD_OPTIONS,
    EXIT_BUDGET_REFUSED,
    EXIT_UNREADABLE_INPUT,
    add_counters,
    check_input_matches,
    fail,
    failed_run,
    reserve_run_budget,
    run_as_command,
    use_local_engine,
)
from beam_jobs.launch_checks import check_embedding_device, check_token_decoder_installed
from beam_jobs.llm_estimate import log_llm_estimate
from beam_jobs.topic_plan import TopicBackends, stage_requests
from beam_jobs.topic_plan import topic_plan as plan_of
from config.insights import (
    REQUIRED_FLAGS,
    InsightsOptions,
    InsightsParams,
    insights_params,
    resolve_embedding_threads,
    runs_on_dataflow,
)
from config.privacy import DEFAULT_EPSILON
from core.run_context import RunContext, make_run_context
from dp_ops import dp_stage_specs
from dp_ops.budget_ledger import BudgetRefused
from dp_ops.dp_events import composed_epsilon
from dp_ops.joint_calibration import JointCalibration, calibrate_jointly
from dp_ops.nightly_plan import NightlyPlan, nights_per_window, plan_nights
from dp_ops.run_budget import RunBudget, spend_event
from publishing.lineage import LOOKBACK_NIGHTS
from publishing.previous_nights import PreviousNights
from publishing.release_gate import load_canaries
from publishing.released_runs import committed_dates, released_reports
from publishing.report import ReleasePrivacy
from transforms.assign_clusters import assignment_rows
from transforms.bound_contributions import BoundUserContributions
from transforms.dp_stage import require_registered_dp_stages
from transforms.embed import EmbedConversations
from transforms.engine import BeamEngine
from transforms.extract_facets import ExtractFacets
from transforms.finalize_run import FinalizeRun
from transforms.read_conversations import ReadConversations
from transforms.token_decoding import TokenDecodingPlan
from transforms.topic_stages import TopicPlan, topic_stages
from transforms.write_outputs import (
    ReportInputs,
    WriteDeadLetters,
    WriteJsonLines,
    WriteReport,
    WriteRunStats,
    count_globally,
    read_json,
)

log = logging.getLogger("urania.insights")


def output_paths(context: RunContext) -> dict[str, str]:
    return {
        "report_pending": context.report_pending,
        "report": context.path("release", "report.json"),
        "run_stats": context.private("run_stats.json"),
        "release_gate": context.private("release_gate.json"),
        "dead_letter": context.private("dead_letter", "dead_letter"),
        "assignments": context.private("assignments", "assignments"),
        "sensitive_guesses": context.private("sensitive_guesses", "sensitive_guesses"),
    }


def sensitive_guess_rows(labelled: tuple[int, tuple], categories: KeywordCategories) -> list[dict]:
    """private/sensitive_guesses: the sensitive category a topic's centre guess points at, which its public
    name never shows (backends/label_evidence.py), with the keywords nearest its centre; none for a
    topic whose label has other evidence. `labelled`: TopicKeywords' (cluster id, (keywords, source, ...))."""
    cluster_id, label = labelled
    keywords, source = list(label[0]), label[1]
    guess = sensitive_guess(keywords, source, categories.category_of, categories.sensitive)
    return [{"cluster_id": int(cluster_id), "sensitive_guess": guess, "nearest_keywords": keywords}] if guess else []


def release_config(params: InsightsParams, keyword_set, embedding_dim: int, context: RunContext) -> dict:
    """Public run parameters for the report: what the params declare public (no data, no seed, no
    path or endpoint), the run's id and date, the keyword set's description and the embedding size."""
    return {
        "run_id": context.run_id,
        "date": context.date,
        **params.public_config(),
        "keyword_set": {"method": keyword_set.method, "size": len(keyword_set.keywords),
                        "version": keyword_set.version, "created_at": keyword_set.created_at},
        "embedding_dim": embedding_dim,
    }


@dataclasses.dataclass(frozen=True)
class NightBudget:
    """The run's calibrated stage noise, and the nightly plan it came from (None: --epsilon, or its default)."""

    calibration: JointCalibration
    plan: NightlyPlan | None = None

    def report_section(self, params: InsightsParams) -> dict | None:
        """report.json's privacy.plan: the plan, or for a ledgered --epsilon what a window of such nights spends."""
        if self.plan is not None:
            return self.plan.to_json()
        run = params.run
        if run.max_epsilon_per_window is None:
            return None
        nights = nights_per_window(run.window_days, run.cadence_days)
        window = composed_epsilon(self.calibration.events() * nights, run.max_delta_per_window)
        return {"rule": "--epsilon given: not planned; the ledger refuses a night that would bring a window over "
                        "the cap",
                "per_night_epsilon": self.calibration.total_epsilon, "per_night_delta": params.privacy.delta,
                "window_days": run.window_days, "cadence_days": run.cadence_days, "nights_per_window": nights,
                "max_epsilon_per_window": run.max_epsilon_per_window, "window_delta": run.max_delta_per_window,
                "window_epsilon_if_every_night": window}


def calibrate_night(params: InsightsParams, keyword_set: KeywordSet) -> NightBudget:
    """The stages' noise: jointly calibrated so that the PLD composition of all their releases meets
    --epsilon at --delta; or, with a window cap and no --epsilon, planned so that a full window of
    runs at --cadence_days (plus a DP keyword set's one-time spend) meets the cap (dp_ops.nightly_plan).
    Public parameters only: nothing here reads data."""
    privacy, run = params.privacy, params.run
    if privacy.epsilon is None and run.max_epsilon_per_window is not None:
        plan = plan_nights(stage_requests(params), max_epsilon_per_window=run.max_epsilon_per_window,
                           window_delta=run.max_delta_per_window, window_days=run.window_days,
                           cadence_days=run.cadence_days, night_delta=privacy.delta,
                           fixed_events=[spend_event(s) for s in keyword_set.spend])
        return NightBudget(plan.calibration, plan)
    epsilon = DEFAULT_EPSILON if privacy.epsilon is None else privacy.epsilon
    return NightBudget(calibrate_jointly(epsilon, privacy.delta, stage_requests(params)))


def previous_nights(context: RunContext, model: str, embedding_dim: int, warm_start: bool) -> PreviousNights:
    """What tonight takes from the earlier released nights (publishing/lineage.py), with every committed
    night of the output folder, which an inherited lineage id's date must be one of. Their files are
    public and editable by whoever can write the release bucket: whatever is wrong with them costs the
    warm start and the lineages (logged), never the run. They are read here, while the pipeline is
    built and before the run reserves its budget; tonight's centres are matched to the lineages only
    after the night's noise is drawn, which is why that matching must never raise either
    (publishing.lineage.assign_lineages)."""
    if not context.date:
        return PreviousNights()
    try:
        reports = [report for _, report in released_reports(context.output_root, context.date, LOOKBACK_NIGHTS)]
        return PreviousNights.of(reports, model, warm_start, embedding_dim, committed_dates(context.output_root))
    except Exception as error:
        log.warning("earlier nights unusable: cold start, new lineages",
                    extra={"event": "previous_nights_unusable", "run_id": context.run_id, "error": str(error)})
        return PreviousNights()


def topic_plan(params: InsightsParams, joint: JointCalibration, keyword_set: KeywordSet, llm, context: RunContext,
               embedding_dim: int) -> TopicPlan:
    """The topic stages' plan (beam_jobs/topic_plan.py) with the run's backends, made by the factory for
    --llm_backend and the embedding flags."""
    encoder = params.embedding.encoder  # the run's one encoder: every backend below embeds with it
    selects = params.keywords.votes
    # Public: the keyword set's categories (missing ones from the bundled set's, by keyword embedding).
    categories = KeywordCategories.of_keyword_set(keyword_set, encoder)
    return plan_of(params, joint, embedding_dim, TopicBackends(
        keywords=keyword_set.keywords,
        categories=categories,
        selector=(factory.make_keyword_selector(keyword_set.keywords, encoder, params.keywords.keyword_min_similarity,
                                                llm) if selects else None),
        namer=factory.make_cluster_namer(llm, categories),
        previous=previous_nights(context, encoder.model, embedding_dim,
                                 params.clustering.warm_start == "auto"),
        new_lineage_prefix=context.date or context.run_id,
        exemplar_writer=factory.make_exemplar_writer(llm) if params.exemplars.exemplars_per_topic else None,
        label_writer=factory.make_label_writer(llm) if params.exemplars.centre_decoder else None,
        name_bank=load_bank() if params.exemplars.centre_decoder else None,
        token_decoding=token_decoding_plan(params)))


def token_decoding_plan(params: InsightsParams) -> TokenDecodingPlan | None:
    """--token_decoding_steps' parameters, the bundled model (loaded on the workers) and the sampling seed
    (the run's); None when it is off."""
    if params.decoding.token_decoding is None:
        return None
    return TokenDecodingPlan(params.decoding.token_decoding, TokenDecoder(), params.run.seed)


def run_budget(keyword_set: KeywordSet, delta: float) -> RunBudget:
    """One budget for the run; each DP stage registers its spend with it. A DP keyword set's
    (epsilon, delta) events are registered first and need their own delta on top of the night's."""
    budget = RunBudget(delta + sum(s.delta for s in keyword_set.spend))
    for spend in keyword_set.spend:
        budget.register(spend)
    return budget


def build_pipeline(pipeline: beam.Pipeline, params: InsightsParams, embedding_dim: int, context: RunContext,
                   canaries: tuple[str, ...] = (), night: NightBudget | None = None) -> RunBudget:
    """Wires the stages; returns the run's budget, which every DP stage registered with. Reads like
    URANIA's Algorithm 1. `night`: the stages' noise (default: calibrate_night)."""
    reading, privacy, embedding = params.reading, params.privacy, params.embedding
    paths = output_paths(context)
    keyword_set = load_keyword_set(params.keywords.keyword_set)
    night = night or calibrate_night(params, keyword_set)
    joint = night.calibration
    budget = run_budget(keyword_set, privacy.delta)
    # The run's one resolved LLMParams for its steps; run() preflighted the backend before any data was read.
    llm = params.llm.resolved()
    plan = topic_plan(params, joint, keyword_set, llm, context, embedding_dim)

    records = pipeline | "read and validate conversations" >> ReadConversations(context.input_pattern,
                                                                                reading.max_record_bytes)
    kept = records.valid | "bound user contributions" >> BoundUserContributions(privacy.max_conversations_per_user,
                                                                                 params.run.seed)
    facets = kept | "extract facets" >> ExtractFacets(factory.make_facet_extractor(reading.facet_max_chars, llm))
    # The conversations are embedded by the run's one encoder, the one the plan's stages embed every other text with.
    embedded = facets.output | "embed conversations" >> EmbedConversations(
        plan.encoder, embedding.embedding_block_size, threads=embedding.embedding_threads)
    # DP k-means to the released topics: the stages the in-process evaluation runs too (transforms/topic_stages.py).
    topics = topic_stages(BeamEngine(), embedded.output, plan, budget)
    kmeans, assigned, kept_sizes, keywords, released = (topics.kmeans, topics.assigned, topics.kept_sizes,
                                                         topics.keywords, topics.released)
    # Every DP stage is applied by now, so the budget holds all of them.
    require_registered_dp_stages(pipeline)
    warm_started = plan.previous.warm_centres is not None
    report = released.topics | "write pending report" >> WriteReport(
        paths["report_pending"],
        ReportInputs(kept_sizes, released.hierarchy, released.lineage,
                     run_time_config=kmeans.active_dim | "dimension for the report" >> beam.Map(
                         lambda d: {"clustering_dimension": d, "warm_start": warm_started}),
                     centroid_keywords=keywords.centroid_keywords,
                     releases=topics.releases),
        ReleasePrivacy(list(budget.entries), privacy.max_conversations_per_user, budget.composition(),
                       dp_stage_specs.stage_releases(), keywords.labelling, night.report_section(params)),
        release_config(params, keyword_set, embedding_dim, context))
    report | "release gate, publish, ledger" >> FinalizeRun(context, canaries, params.run.privacy_ledger)
    # The guesses the public names withhold, for an operator (private/; post-processing, no budget).
    (keywords.labels | "sensitive guesses" >> beam.FlatMap(sensitive_guess_rows, plan.categories)
     | "write sensitive guesses" >> WriteJsonLines(paths["sensitive_guesses"]))

    dead_letters = [records.dead_letter, facets.dead_letter, embedded.dead_letter, keywords.dead_letter,
                    *topics.dead_letters]
    all_dead_letters = [d for d in dead_letters if d is not None] | "all dead letters" >> beam.Flatten()
    _write_private_outputs(paths, records, all_dead_letters, kept, assigned, kept_sizes, keywords.sampled,
                           keywords.keyword_pairs, kmeans.active_dim)
    return budget


def _write_private_outputs(paths, records, dead_letters, kept, assigned, kept_sizes, sampled, keyword_pairs,
                           clustering_dimension) -> None:
    """Dead letters (of every stage), assignments and exact counts: private/, never released."""
    pipeline = kept.pipeline
    dead_letters | "write dead letters" >> WriteDeadLetters(paths["dead_letter"])
    (assigned | "assignment rows" >> beam.FlatMap(assignment_rows)
     | "write assignments" >> WriteJsonLines(paths["assignments"]))
    counts = {
        "valid": count_globally(records.valid, "count valid"),
        "users": (kept | "user weights" >> beam.Map(lambda k: k.weight)
                  | "sum user weights" >> beam.CombineGlobally(sum) | "round users" >> beam.Map(round)),
        "conversations_after_bounding": count_globally(kept, "count kept"),
        "clusters_kept": count_globally(kept_sizes, "count kept clusters"),
        "clustering_dimension": clustering_dimension,
    }
    if sampled is not None:  # the histogram stages ran (--keyword_mode histogram or both)
        counts["conversations_sampled_for_keywords"] = (sampled | "sample sizes" >> beam.Map(len)
                                                        | "sum samples" >> beam.CombineGlobally(sum))
        counts["keyword_pairs_selected"] = count_globally(keyword_pairs, "count keyword pairs")
    pipeline | "write run stats" >> WriteRunStats(paths["run_stats"], counts, dead_letters)


def _freed_memory_returned(pipeline_options: PipelineOptions):
    """For runs whose stages run in this process, hands their freed memory back to the OS as they go."""
    if progress.runs_in_this_process(pipeline_options.view_as(StandardOptions).runner,
                                     pipeline_options.view_as(DirectOptions).direct_running_mode):
        return freed_memory_returned()
    return contextlib.nullcontext()


def _progress(params: InsightsParams, pipeline_options: PipelineOptions):
    """A progress reporter on stderr for local in-process runs (see beam_jobs/progress.py), else nothing."""
    enabled, why = progress.progress_enabled(params.run.progress, pipeline_options.view_as(StandardOptions).runner,
                                             pipeline_options.view_as(DirectOptions).direct_running_mode,
                                             runs_on_dataflow(pipeline_options))
    if not enabled:
        if params.run.progress == "on":
            print(f"progress: off ({why})", file=sys.stderr)
        return contextlib.nullcontext()
    return progress.ProgressReporter(params.privacy.max_conversations_per_user, params.embedding.embedding_block_size,
                                     params.clustering.kmeans_iterations, interval=progress.DEFAULT_INTERVAL_SECONDS)


def run(argv: list[str] | None = None) -> int:
    """Builds and runs the job; returns the process exit code (see README: exit codes)."""
    if job_help.help_requested(argv):  # before any other work; Beam's own --help lists none of the job's flags
        return job_help.print_help(InsightsParams, prog="python -m beam_jobs.insights", description=__doc__,
                                   required=REQUIRED_FLAGS)
    pipeline_options = PipelineOptions(argv)
    try:
        params = insights_params(pipeline_options.view_as(InsightsOptions))
        params = dataclasses.replace(params, run=params.run.with_seed())
        # The one preflight, before any data is read; a failure is a bad option: the embedding device where
        # the model will run, then backends.factory.preflight (the pseudonymizer's name model, the backend's
        # software and model, the local server's start, the remote backend's fixed call).
        check_embedding_device(params.embedding, pipeline_options)
        factory.preflight(params.llm)
        check_token_decoder_installed(params.decoding)
        keyword_set = load_keyword_set(params.keywords.keyword_set)
        canaries = load_canaries(params.run.canary_file)
        context = make_run_context(params.reading.input, params.run.output, params.run.date,
                                   private_output=params.run.private_output)
    except (ValueError, OSError) as error:
        return fail(EXIT_BAD_OPTIONS, "bad_options", f"bad options: {error}")
    log.info("run started", extra={"event": "run_started", "run_id": context.run_id, "date": context.date,
                                   "output": context.run_dir})
    try:
        check_input_matches(context.input_pattern)
    except FileNotFoundError as error:
        return fail(EXIT_UNREADABLE_INPUT, "unreadable_input", str(error), run_id=context.run_id)
    # Before any data is read: the model calls and time the LLM steps will take, and the flag that changes them.
    log_llm_estimate(params, context.input_pattern, context.run_id)
    if params.privacy.noise_seed is not None:
        log.warning("--noise_seed is set: DP k-means noise is reproducible; never do this in production",
                    extra={"event": "noise_seed_fixed", "run_id": context.run_id})

    use_local_engine(pipeline_options)
    # Resolved before the pipeline is built: the embedding DoFn carries it to the workers, and
    # run_stats.json records it.
    params = dataclasses.replace(params, embedding=dataclasses.replace(
        params.embedding, embedding_threads=resolve_embedding_threads(params.embedding, pipeline_options)))
    from backends.embedding import dimension
    embedding_dim = dimension(params.embedding.encoder)
    started = time.time()
    pipeline = beam.Pipeline(options=pipeline_options)
    try:
        night = calibrate_night(params, keyword_set)
    except ValueError as error:
        return fail(EXIT_BUDGET_REFUSED, "budget_refused", f"no budget plan fits: {error}", run_id=context.run_id)
    budget = build_pipeline(pipeline, params, embedding_dim, context, canaries, night)
    if params.run.privacy_ledger:
        try:
            reserve_run_budget(params.run, context, budget, params.privacy.delta, keyword_set)
        except BudgetRefused as error:
            return fail(EXIT_BUDGET_REFUSED, "budget_refused", str(error), run_id=context.run_id)
    paths = output_paths(context)
    try:
        with _progress(params, pipeline_options), _freed_memory_returned(pipeline_options):
            result = pipeline.run()
            if runs_on_dataflow(pipeline_options):
                # A Flex Template launcher must return once the job is submitted; the pipeline's own last
                # step gates the release and commits the ledger, and Dataflow monitors the stages.
                log.info("job submitted", extra={"event": "job_submitted", "run_id": context.run_id})
                return 0
            result.wait_until_finish()
    except Exception as error:  # classify: the release gate, or anything else
        return failed_run(error, context, paths["release_gate"], params.run.privacy_ledger)
    add_counters(paths["run_stats"], result, bool(params.exemplars.exemplars_per_topic), seed=params.run.seed,
                 run_id=context.run_id, wall_seconds=round(time.time() - started, 2),
                 embedding_threads=params.embedding.embedding_threads)
    report = read_json(paths["report"])
    log.info("run done", extra={"event": "run_done", "run_id": context.run_id, "topics": len(report["topics"]),
                                "epsilon": report["privacy"]["epsilon"], "delta": report["privacy"]["delta"]})
    print(f"released {len(report['topics'])} topics (epsilon {report['privacy']['epsilon']:.3f}, "
          f"delta {report['privacy']['delta']:.1e}) -> {paths['report']}")
    return 0


if __name__ == "__main__":
    run_as_command(run)
