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
from backends.keyword_categories import KeywordCategories
from backends.keyword_set import LEGACY_RUN_PREFIX, KeywordSet, keyword_set_total, load_keyword_set
from beam_jobs import progress
from beam_jobs.job_runtime import (
    EXIT_BAD_OPTIONS,
    EXIT_BUDGET_REFUSED,
    EXIT_FAILED,
    EXIT_RELEASE_GATE_FAILED,
    EXIT_UNREADABLE_INPUT,
    check_input_matches,
    fail,
    use_local_engine,
)
from beam_jobs.logging_setup import configure_logging
from beam_jobs.options import (
    DEFAULT_EPSILON,
    InsightsOptions,
    InsightsParams,
    RunParams,
    insights_params,
    resolve_embedding_threads,
    runs_on_dataflow,
)
from core.json_store import read_json_or_none
from core.lineage import LOOKBACK_NIGHTS, PreviousNights
from core.release_gate import load_canaries
from core.released_runs import released_reports
from core.report import CENTROID_SOURCE, labelling_section
from core.run_context import RunContext, make_run_context
from dp_ops.budget_ledger import BudgetRefused
from dp_ops.dp_events import composed_epsilon
from dp_ops.dp_kmeans import DPKMeansParams
from dp_ops.dp_user_count import UserCountNoise
from dp_ops.joint_calibration import JointCalibration, calibrate_jointly, job_requests
from dp_ops.keyword_votes import vote_columns
from dp_ops.ledger_updates import Charge, reserve_budget, set_ledger_status
from dp_ops.nightly_plan import NightlyPlan, nights_per_window, plan_nights
from dp_ops.run_budget import RunBudget, spend_event
from transforms.assign_clusters import AssignClusters, assignment_rows
from transforms.bound_contributions import BoundUserContributions
from transforms.centroid_keywords import CentroidKeywords
from transforms.dp_cluster_sizes import DPClusterSizes, cluster_size_params, keep_large_clusters
from transforms.dp_kmeans import DPKMeans
from transforms.dp_stage import require_registered_dp_stages
from transforms.dp_user_count import DPUserCount
from transforms.embed import EmbedConversations
from transforms.extract_facets import ExtractFacets
from transforms.finalize_run import FinalizeRun
from transforms.keyword_histograms import (
    DPKeywordHistogram,
    DPKeywordVotes,
    SampleForKeywords,
    SelectKeywords,
    keyword_count_params,
)
from transforms.name_clusters import NameClusters
from transforms.read_conversations import ReadConversations
from transforms.stage_timing import NAMESPACE as STAGE_MICROS
from transforms.topic_hierarchy import BuildTopicHierarchy
from transforms.topic_lineage import AssignLineages
from transforms.voted_labels import LabelTopics, category_votes_section, min_users_to_label, vote_floors
from transforms.write_exemplars import COUNTER_NAMESPACE as EXEMPLAR_COUNTERS
from transforms.write_exemplars import WriteExemplars
from transforms.write_outputs import (
    WriteDeadLetters,
    WriteJsonLines,
    WriteReport,
    WriteRunStats,
    count_globally,
    read_json,
    write_json,
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
    }


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


def stage_requests(params: InsightsParams):
    """The run's DP stages as calibration requests (dp_ops.joint_calibration.job_requests)."""
    privacy, clustering = params.privacy, params.clustering
    histogram_noise = privacy.histogram_noise if params.keywords.keyword_mode in ("histogram", "both") else None
    return job_requests(privacy.stage_weights(), clustering.kmeans_iterations, privacy.max_conversations_per_user,
                        histogram_noise, privacy.keyword_partitions_per_user, privacy.keyword_votes,
                        user_count=clustering.counts_users)


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
    """What tonight takes from the earlier released nights (core/lineage.py). Their files are public
    and editable by whoever can write the release bucket: whatever is wrong with them costs the warm
    start and the lineages (logged), never the run, which has reserved its budget by then."""
    if not context.date:
        return PreviousNights()
    try:
        reports = [report for _, report in released_reports(context.output_root, context.date, LOOKBACK_NIGHTS)]
        return PreviousNights.of(reports, model, warm_start, embedding_dim)
    except Exception as error:
        log.warning("earlier nights unusable: cold start, new lineages",
                    extra={"event": "previous_nights_unusable", "run_id": context.run_id, "error": str(error)})
        return PreviousNights()


def build_pipeline(pipeline: beam.Pipeline, params: InsightsParams, embedding_dim: int, context: RunContext,
                   canaries: tuple[str, ...] = (), night: NightBudget | None = None) -> RunBudget:
    """Wires the stages; returns the run's budget, which every DP stage registered with. Reads like
    URANIA's Algorithm 1. `night`: the stages' noise (default: calibrate_night)."""
    reading, privacy, clustering, embedding, keyword_params = (params.reading, params.privacy, params.clustering,
                                                               params.embedding, params.keywords)
    paths = output_paths(context)
    keyword_set = load_keyword_set(keyword_params.keyword_set)
    keywords = keyword_set.keywords
    # One budget for the run; each DP stage registers its spend with `budget`.
    night = night or calibrate_night(params, keyword_set)
    joint = night.calibration
    # A DP keyword set's (epsilon, delta) events need their own delta on top of the night's.
    budget = RunBudget(privacy.delta + sum(s.delta for s in keyword_set.spend))
    for spend in keyword_set.spend:
        budget.register(spend)
    # --projection_dim auto: the dimension comes from a DP count of the users (or --expected_users).
    user_count = (DPUserCount(UserCountNoise(joint.stages["user_count"].noise_multiplier, privacy.delta), budget,
                              noise_seed=privacy.noise_seed) if clustering.counts_users else None)
    # Earlier released nights (public): tonight's warm start and the lineages its topics may continue.
    previous = previous_nights(context, embedding.embedding_model, embedding_dim, clustering.warm_start == "auto")
    warm_started = previous.warm_centres is not None
    kmeans = DPKMeans(DPKMeansParams(num_clusters=clustering.num_clusters, epsilon=None, delta=privacy.delta,
                                     noise_multiplier=joint.stages["clustering"].noise_multiplier,
                                     input_dim=embedding_dim, iterations=clustering.kmeans_iterations,
                                     projection_dim=clustering.projection_dim, seed=params.run.seed,
                                     basis=clustering.projection_basis),
                      budget, noise_seed=privacy.noise_seed, model_name=embedding.embedding_model,
                      user_count=user_count, expected_users=clustering.expected_users,
                      warm_centres=previous.warm_centres)
    size_epsilon, _ = joint.stages["cluster_sizes"].pipeline_dp_budget
    sizes = DPClusterSizes(clustering.num_clusters,
                           cluster_size_params(size_epsilon, privacy.max_conversations_per_user), budget)

    records = pipeline | "read and validate conversations" >> ReadConversations(context.input_pattern,
                                                                                reading.max_record_bytes)
    kept = records.valid | "bound user contributions" >> BoundUserContributions(privacy.max_conversations_per_user,
                                                                                 params.run.seed)
    # The run's one LLMConfig for its steps; run() preflighted the backend before any data was read.
    llm = params.llm.config(preflight=False)
    facets = kept | "extract facets" >> ExtractFacets(factory.make_facet_extractor(reading.facet_max_chars, llm))
    embedded = facets.output | "embed conversations" >> EmbedConversations(
        embedding.embedding_model, embedding.embedding_block_size, backend=embedding.embedding_backend,
        threads=embedding.embedding_threads)
    dead_letters = [records.dead_letter, facets.dead_letter, embedded.dead_letter]
    kmeans_output = embedded.output | "DP k-means" >> kmeans
    centres = kmeans_output.centres
    assigned = kmeans_output.projected_blocks | "assign conversations to centres" >> AssignClusters(centres)
    noisy_sizes = assigned | "DP cluster sizes" >> sizes
    kept_sizes = keep_large_clusters(noisy_sizes, clustering.min_cluster_size)
    kept_ids = kept_sizes | "kept cluster ids" >> beam.Keys()
    lineage = centres | "topic lineages" >> AssignLineages(
        kmeans_output.basis, kept_ids, previous, context.date or context.run_id, embedding.embedding_model)
    centroid_keywords = sampled = keyword_pairs = None
    labelling = None
    weighted = privacy.keyword_votes == "weighted"
    # Public: the keyword set's categories (missing ones from the bundled set's, by keyword embedding).
    categories = KeywordCategories.of_keyword_set(keyword_set, embedding.embedding_model, embedding.embedding_backend)
    # Category votes: weighted votes only, and only for a keyword set with categories (dp_ops/keyword_votes.py).
    category_share = keyword_params.category_vote_share if weighted and categories.names else 0.0
    vote_categories = categories.names if category_share else ()
    if keyword_params.keyword_mode in ("histogram", "both"):
        sampled = assigned | "sample conversations for keywords" >> SampleForKeywords(
            kept_sizes, keyword_params.resolved_samples_per_cluster(params.llm.llm_backend), params.run.seed)
        selection = sampled | "select keywords" >> SelectKeywords(
            factory.make_keyword_selector(keywords, embedding.embedding_model, keyword_params.keyword_min_similarity,
                                          embedding.embedding_backend, llm),
            keywords, keyword_params.keywords_per_vote if weighted else keyword_params.max_keywords_per_conversation,
            weighted=weighted, categories=categories, category_share=category_share)
        keyword_pairs = selection.output
        dead_letters.append(selection.dead_letter)
        histogram_stage = joint.stages["keyword_histograms"]
        if weighted:
            histogram = DPKeywordVotes(clustering.num_clusters, vote_columns(keywords, vote_categories),
                                       histogram_stage.noise_multiplier, privacy.delta, kept_ids, budget,
                                       noise_seed=privacy.noise_seed)
        else:
            histogram = DPKeywordHistogram(
                keyword_count_params(*histogram_stage.pipeline_dp_budget, privacy.histogram_noise,
                                     privacy.keyword_partitions_per_user),
                kept_cluster_ids=kept_ids, keywords=keywords, budget=budget)
        noisy_histogram = keyword_pairs | "DP keyword histograms" >> histogram
        candidates_per_topic = keyword_params.keyword_candidates or len(keywords)
        floors = vote_floors(histogram.spend.noise, candidates_per_topic, keyword_params.false_keywords_per_topic,
                             keyword_params.keyword_min_noisy_count)
        labelling = labelling_section(min_users_to_label(floors, category_share, len(vote_categories)),
                                      floors.keyword, candidates_per_topic, keyword_params.false_keywords_per_topic,
                                      category_votes_section(floors, category_share, vote_categories))
    if (keyword_params.keyword_mode in ("centroid", "both") or keyword_params.label_fallback == "centroid"
            or keyword_params.keyword_candidates):
        # Post-processing of the DP centres: no budget (transforms/centroid_keywords.py). Also the
        # candidates of each topic's histogram keywords and the label of a topic none of them clears.
        # K ranked by closeness to each centre: the first t label a topic, the first --keyword_candidates
        # are its candidates, and a topic named by its voted category takes that category's first t.
        centroid_keywords = centres | "centroid keywords" >> CentroidKeywords(
            keywords, embedding.embedding_model, len(keywords), kept_ids, kmeans_output.basis,
            kmeans_output.active_dim)
    if keyword_params.keyword_mode in ("histogram", "both"):
        candidates = (centroid_keywords | "candidate keywords" >> beam.MapTuple(
            lambda cluster_id, ranking: (cluster_id, ranking[:keyword_params.keyword_candidates]))
            if keyword_params.keyword_candidates else None)
        labels = noisy_histogram | "label topics from their votes" >> LabelTopics(
            keyword_params.keywords_per_cluster, floors, categories if vote_categories else None,
            centroid_keywords if keyword_params.label_fallback == "centroid" else None, candidates)
    else:
        labels = centroid_keywords | "label keywords: nearest the DP centre" >> beam.MapTuple(
            lambda cluster_id, ranking: (cluster_id, (ranking[:keyword_params.keywords_per_cluster], CENTROID_SOURCE,
                                                      None)))
    centroid_keywords = (centroid_keywords | "centroid keywords, top t" >> beam.MapTuple(
        lambda cluster_id, nearest: (cluster_id, nearest[:keyword_params.keywords_per_cluster]))
        if centroid_keywords is not None else None)
    namer = factory.make_cluster_namer(llm, categories)
    named = labels | "name clusters" >> NameClusters(namer, categories)

    hierarchy = named | "topic hierarchy" >> BuildTopicHierarchy(kept_sizes, centres, categories, namer)
    exemplar_params = params.exemplars
    released_topics = named
    if exemplar_params.exemplars_per_topic:
        # Post-processing of the released topics and DP centres: no budget (transforms/write_exemplars.py).
        released_topics = named | "synthetic exemplars" >> WriteExemplars(
            factory.make_exemplar_writer(llm), embedding.embedding_model,
            embedding.embedding_backend, exemplar_params.exemplars_per_topic, exemplar_params.exemplar_candidates,
            exemplar_params.exemplar_rounds, centres, kmeans_output.basis, kmeans_output.active_dim)
    # Every DP stage is applied by now, so the budget holds all of them.
    require_registered_dp_stages(pipeline)
    report = released_topics | "write pending report" >> WriteReport(
        paths["report_pending"], kept_sizes, list(budget.entries), budget.composition(),
        privacy.max_conversations_per_user,
        release_config(params, keyword_set, embedding_dim, context), hierarchy,
        centroid_keywords=centroid_keywords if keyword_params.keyword_mode == "both" else None, labelling=labelling,
        run_time_config=kmeans_output.active_dim | "dimension for the report" >> beam.Map(
            lambda d: {"clustering_dimension": d, "warm_start": warm_started}),
        lineage=lineage, plan=night.report_section(params))
    report | "release gate, publish, ledger" >> FinalizeRun(context, canaries, params.run.privacy_ledger)

    all_dead_letters = dead_letters | "all dead letters" >> beam.Flatten()
    _write_private_outputs(paths, records, all_dead_letters, kept, assigned, kept_sizes, sampled, keyword_pairs,
                           kmeans_output.active_dim)
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


def _counters(result) -> list:
    """The run's Beam counters; none when the runner cannot report metrics (the counts are written regardless)."""
    try:
        return result.metrics().query()["counters"]
    except Exception:
        return []


def _stage_seconds(counters: list) -> dict[str, float]:
    seconds: dict[str, float] = {}
    for counter in counters:
        if counter.key.metric.namespace == STAGE_MICROS:
            stage = counter.key.metric.name
            seconds[stage] = round(seconds.get(stage, 0.0) + counter.committed / 1e6, 3)
    return seconds


def _exemplar_counts(counters: list) -> dict[str, int]:
    """Exemplar candidates scored and dropped, by reason (transforms/write_exemplars.py)."""
    counts: dict[str, int] = {}
    for counter in counters:
        if counter.key.metric.namespace == EXEMPLAR_COUNTERS:
            name = counter.key.metric.name
            counts[name] = counts.get(name, 0) + counter.committed
    return counts


def _llm_counts(counters: list) -> dict:
    """Model calls, tokens, retries, failures, fallbacks and cache hits per LLM step (backends/llm/metrics.py)."""
    from backends.llm.metrics import llm_counts
    return llm_counts(counters)


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


def _reserve_budget(run_params: RunParams, context: RunContext, budget: RunBudget, nightly_delta: float,
                    keyword_set: KeywordSet) -> None:
    """Checks the window cap and records this run as `reserved`, with its (epsilon, delta) (the PLD
    composition of its stages at --delta) and its events, in one atomic ledger update. Raises BudgetRefused.

    A DP keyword set is spent once, on the data it was built from, not each night it is used, so
    this run's own entry leaves its spend out (the report's total still includes it: the release
    depends on it). It is charged in the same update, under the run id its file carries, if this
    ledger does not hold that id yet (the set was built without a ledger, or with another one), and
    checked against the same cap before this run's spend is. Its days are the ones the build charges
    (the days of its data: `KeywordSet.ledger_date` and `ledger_days`, its --date and --data_days), so
    every ledger counts the set in the windows of the data it was built from, whichever of the build
    or a night records it."""
    nightly = RunBudget.of([s for s in budget.entries if s.stage != "keyword_set"], nightly_delta)
    epsilon, delta = nightly.total()
    events = [entry.event for entry in nightly.entries]
    # The same figure the build charges (keyword_set_total: the set's events composed), whichever job charges it.
    set_epsilon, set_delta, _ = keyword_set_total(keyword_set.spend)
    set_events = [spend_event(s) for s in keyword_set.spend]
    set_date = keyword_set.ledger_date or context.ledger_date
    # Committed: the set exists and its spend happened, whatever becomes of this run.
    charged_set = reserve_budget(
        run_params.privacy_ledger, run_params.max_epsilon_per_window, run_params.window_days,
        run=Charge(context.run_id, context.ledger_date, epsilon, delta, context.run_dir, events=tuple(events)),
        keyword_set=(Charge(keyword_set.ledger_run_id, set_date, set_epsilon, set_delta, keyword_set.source,
                            events=tuple(set_events), days=keyword_set.ledger_days)
                     if keyword_set.spend else None),
        keyword_set_status="committed", allow_rerun=run_params.allow_rerun,
        max_delta_per_window=run_params.max_delta_per_window)
    if charged_set:
        log.info("keyword set charged", extra={"event": "keyword_set_charged", "run_id": context.run_id,
                                               "keyword_set_run_id": keyword_set.ledger_run_id, "date": set_date,
                                               "epsilon": set_epsilon, "delta": set_delta})
        if keyword_set.ledger_run_id.startswith(LEGACY_RUN_PREFIX):
            log.warning("the keyword set's file predates ledger run ids: charged under one derived from its content; "
                        "if its build already charged this ledger, it now counts twice (rebuild it to avoid that)",
                        extra={"event": "keyword_set_legacy_charge", "run_id": context.run_id,
                               "keyword_set_run_id": keyword_set.ledger_run_id})
    log.info("budget reserved", extra={"event": "budget_reserved", "run_id": context.run_id,
                                       "date": context.ledger_date, "epsilon": epsilon, "delta": delta})


def run(argv: list[str] | None = None) -> int:
    """Builds and runs the job; returns the process exit code (see README: exit codes)."""
    pipeline_options = PipelineOptions(argv)
    try:
        params = insights_params(pipeline_options.view_as(InsightsOptions))
        params = dataclasses.replace(params, run=params.run.with_seed())
        llm = params.llm.config()  # --llm_backend local starts its server here: a model that cannot load is a bad option
        if llm is not None:
            llm.preflight_remote()  # a remote backend that cannot answer a fixed prompt is a bad option
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
    if params.privacy.noise_seed is not None:
        log.warning("--noise_seed is set: DP k-means noise is reproducible; never do this in production",
                    extra={"event": "noise_seed_fixed", "run_id": context.run_id})

    use_local_engine(pipeline_options)
    # Resolved before the pipeline is built: the embedding DoFn carries it to the workers, and
    # run_stats.json records it.
    params = dataclasses.replace(params, embedding=dataclasses.replace(
        params.embedding, embedding_threads=resolve_embedding_threads(params.embedding, pipeline_options)))
    from backends.embedding import embedding_dimension
    embedding_dim = embedding_dimension(params.embedding.embedding_model)
    started = time.time()
    pipeline = beam.Pipeline(options=pipeline_options)
    try:
        night = calibrate_night(params, keyword_set)
    except ValueError as error:
        return fail(EXIT_BUDGET_REFUSED, "budget_refused", f"no nightly plan fits: {error}", run_id=context.run_id)
    budget = build_pipeline(pipeline, params, embedding_dim, context, canaries, night)
    if params.run.privacy_ledger:
        try:
            _reserve_budget(params.run, context, budget, params.privacy.delta, keyword_set)
        except BudgetRefused as error:
            return fail(EXIT_BUDGET_REFUSED, "budget_refused", str(error), run_id=context.run_id)
    paths = output_paths(context)
    try:
        with _progress(params, pipeline_options):
            result = pipeline.run()
            if runs_on_dataflow(pipeline_options):
                # A Flex Template launcher must return once the job is submitted; the pipeline's own last
                # step gates the release and commits the ledger, and Dataflow monitors the stages.
                log.info("job submitted", extra={"event": "job_submitted", "run_id": context.run_id})
                return 0
            result.wait_until_finish()
    except Exception as error:  # classify: the release gate, or anything else
        gate = read_json_or_none(paths["release_gate"])
        if gate is not None and gate["status"] == "rejected":
            return fail(EXIT_RELEASE_GATE_FAILED, "release_gate_failed",
                         f"release gate rejected the release ({len(gate['findings'])} finding(s)); "
                         f"see {paths['release_gate']}", run_id=context.run_id)
        # A run whose release was already published stays committed: the ledger must agree with the index.
        published = gate is not None and gate.get("run_id") == context.run_id and gate["status"] == "committed"
        if params.run.privacy_ledger and not published:
            set_ledger_status(params.run.privacy_ledger, context.run_id, "failed")
        return fail(EXIT_FAILED, "pipeline_failed", f"pipeline failed: {type(error).__name__}: {error}",
                     run_id=context.run_id)
    stats = read_json(paths["run_stats"])
    counters = _counters(result)  # one query of the runner's metrics for the three readers below
    stats.update(seed=params.run.seed, run_id=context.run_id, wall_seconds=round(time.time() - started, 2),
                 stage_seconds=_stage_seconds(counters), embedding_threads=params.embedding.embedding_threads)
    llm = _llm_counts(counters)
    if llm:
        stats["llm"] = llm
    if params.exemplars.exemplars_per_topic:
        stats["exemplars"] = _exemplar_counts(counters)
    write_json(paths["run_stats"], stats)
    report = read_json(paths["report"])
    log.info("run done", extra={"event": "run_done", "run_id": context.run_id, "topics": len(report["topics"]),
                                "epsilon": report["privacy"]["epsilon"], "delta": report["privacy"]["delta"]})
    print(f"released {len(report['topics'])} topics (epsilon {report['privacy']['epsilon']:.3f}, "
          f"delta {report['privacy']['delta']:.1e}) -> {paths['report']}")
    return 0


def main() -> None:
    configure_logging()
    sys.exit(run(sys.argv[1:]))


if __name__ == "__main__":
    main()
