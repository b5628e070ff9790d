"""What the job entry points share around the pipeline: the command line's entry (run_as_command, for
beam_jobs.ledger_policy too), exit codes, error reporting, the input check and the local engine
(beam_jobs.insights and beam_jobs.build_keywords both use these); and
around the insights job's pipeline: its ledger updates (reserve before it runs, failed after), the
exit code of a failed run, and the counters added to its run stats."""

from __future__ import annotations

import logging
import sys
from collections.abc import Callable
from typing import NoReturn

from apache_beam.io.filesystems import FileSystems
from apache_beam.options.pipeline_options import PipelineOptions, StandardOptions

from backends.keyword_set import LEGACY_RUN_PREFIX, KeywordSet, keyword_set_total
from beam_jobs.logging_setup import configure_logging
from core.json_store import read_json_or_none
from core.run_context import RunContext
from dp_ops.ledger_updates import Charge, reserve_budget, set_ledger_status
from dp_ops.run_budget import RunBudget, spend_event
from transforms.stage_timing import NAMESPACE as STAGE_MICROS
from transforms.write_exemplars import COUNTER_NAMESPACE as EXEMPLAR_COUNTERS
from transforms.write_outputs import read_json, write_json

log = logging.getLogger("urania")
insights_log = logging.getLogger("urania.insights")  # the insights job's ledger events

EXIT_FAILED = 1
EXIT_BAD_OPTIONS = 2
EXIT_UNREADABLE_INPUT = 3
EXIT_BUDGET_REFUSED = 4
EXIT_RELEASE_GATE_FAILED = 5


def check_input_matches(pattern: str) -> None:
    try:
        matches = FileSystems.match([pattern])[0].metadata_list
    except Exception as error:
        raise FileNotFoundError(f"cannot list --input {pattern}: {error}") from error
    if not matches:
        raise FileNotFoundError(f"--input {pattern} matches no file")


def use_local_engine(pipeline_options: PipelineOptions) -> None:
    """Runs "DirectRunner" pipelines on its in-process engine (FnApiRunner) directly.

    Beam 2.77's DirectRunner first tries the Prism runner, which downloads a binary from GitHub at
    run time; without network it falls back after a failed download. The FnApiRunner is the engine
    it falls back to, and it honours --direct_running_mode and --direct_num_workers.
    """
    standard = pipeline_options.view_as(StandardOptions)
    if standard.runner in (None, "DirectRunner"):
        standard.runner = "FnApiRunner"


def fail(code: int, event: str, message: str, **fields) -> int:
    log.error(message, extra={"event": event, "exit_code": code, **fields})
    print(f"error: {message}", file=sys.stderr)
    return code


def run_as_command(run: Callable[[list[str]], int]) -> NoReturn:
    """A job run from the command line (`python -m beam_jobs.<job>`, or the Flex Template's launcher): JSON
    logs, then `run` on the process's arguments, whose return value is the exit code."""
    configure_logging()
    sys.exit(run(sys.argv[1:]))


def beam_counters(result) -> list:
    """The run's Beam counters; none when the runner cannot report metrics (the counts are written regardless)."""
    try:
        return result.metrics().query()["counters"]
    except Exception:
        return []


def stage_seconds(counters: list) -> dict[str, float]:
    seconds: dict[str, float] = {}
    for counter in counters:
        if counter.key.metric.namespace == STAGE_MICROS:
            stage = counter.key.metric.name
            seconds[stage] = round(seconds.get(stage, 0.0) + counter.committed / 1e6, 3)
    return seconds


def exemplar_counts(counters: list) -> dict[str, int]:
    """Exemplar candidates scored and dropped, by reason (transforms/write_exemplars.py)."""
    counts: dict[str, int] = {}
    for counter in counters:
        if counter.key.metric.namespace == EXEMPLAR_COUNTERS:
            name = counter.key.metric.name
            counts[name] = counts.get(name, 0) + counter.committed
    return counts


def reserve_run_budget(run_params, context: RunContext, budget: RunBudget, nightly_delta: float,
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
        run_params.privacy_ledger, run_params.ledger_policy(),
        run=Charge(context.run_id, context.ledger_date, epsilon, delta, context.run_dir, events=tuple(events)),
        keyword_set=(Charge(keyword_set.ledger_run_id, set_date, set_epsilon, set_delta, keyword_set.source,
                            events=tuple(set_events), days=keyword_set.ledger_days)
                     if keyword_set.spend else None),
        keyword_set_status="committed", allow_rerun=run_params.allow_rerun)
    if charged_set:
        insights_log.info("keyword set charged", extra={
            "event": "keyword_set_charged", "run_id": context.run_id, "keyword_set_run_id": keyword_set.ledger_run_id,
            "date": set_date, "epsilon": set_epsilon, "delta": set_delta})
        if keyword_set.ledger_run_id.startswith(LEGACY_RUN_PREFIX):
            insights_log.warning(
                "the keyword set's file predates ledger run ids: charged under one derived from its content; "
                "if its build already charged this ledger, it now counts twice (rebuild it to avoid that)",
                extra={"event": "keyword_set_legacy_charge", "run_id": context.run_id,
                       "keyword_set_run_id": keyword_set.ledger_run_id})
    insights_log.info("budget reserved", extra={"event": "budget_reserved", "run_id": context.run_id,
                                                "date": context.ledger_date, "epsilon": epsilon, "delta": delta})


def failed_run(error: Exception, context: RunContext, release_gate_path: str, privacy_ledger: str | None) -> int:
    """The exit code of a run whose pipeline raised: the release gate's rejection, or a failure (its
    ledger entry marked failed, unless its release was already published)."""
    gate = read_json_or_none(release_gate_path)
    if gate is not None and gate["status"] == "rejected":
        return fail(EXIT_RELEASE_GATE_FAILED, "release_gate_failed",
                    f"release gate rejected the release ({len(gate['findings'])} finding(s)); "
                    f"see {release_gate_path}", run_id=context.run_id)
    # A run whose release was already published stays committed: the ledger must agree with the index.
    published = gate is not None and gate.get("run_id") == context.run_id and gate["status"] == "committed"
    if privacy_ledger and not published:
        set_ledger_status(privacy_ledger, context.run_id, "failed")
    return fail(EXIT_FAILED, "pipeline_failed", f"pipeline failed: {type(error).__name__}: {error}",
                run_id=context.run_id)


def add_counters(run_stats_path: str, result, exemplars: bool, *, seed: int, run_id: str, wall_seconds: float,
                 embedding_threads) -> None:
    """Adds the run's seed, id, wall time and embedding threads, and from the runner's counters the
    stage seconds, the LLM steps' counts and (`exemplars`) the exemplar counts, to the run stats the
    pipeline wrote."""
    from backends.llm.metrics import llm_counts
    stats = read_json(run_stats_path)
    counters = beam_counters(result)  # one query of the runner's metrics for the three readers below
    stats.update(seed=seed, run_id=run_id, wall_seconds=wall_seconds, stage_seconds=stage_seconds(counters),
                 embedding_threads=embedding_threads)
    llm = llm_counts(counters)
    if llm:
        stats["llm"] = llm
    if exemplars:
        stats["exemplars"] = exemplar_counts(counters)
    write_json(run_stats_path, stats)
