"""Progress on the command line for local runs: which stage runs, how far it got, and an ETA.

A background thread reads the in-process registry (transforms/progress.py) every few seconds and
prints one line to stderr, e.g.

    [progress 1m05s] embedding: 1,536/3,084 conversations (50%), 24/s, ETA 1m04s

While model calls of an LLM step are in flight, the line shows them instead (a facet batch or a keyword
block can take minutes of calls, during which no stage counter moves):

    [progress 6m10s] LLM keywords: 12/~40 calls (30%), 0.31 calls/s, ETA 1m30s

It only works where the stages run in the launcher's process: the DirectRunner's engine in its
default in-memory (or multi-threading) mode. Dataflow has its own monitoring and is left alone;
multi-process and Dask runs count in other processes, so progress is off there.
"""

from __future__ import annotations

import dataclasses
import math
import sys
import threading
import time

from core.progress_stage import ProgressStage
from dp_ops import dp_stage_specs
from transforms import progress as registry

MODES = ("auto", "on", "off")
DEFAULT_INTERVAL_SECONDS = 10.0


# The stages that release nothing, in pipeline order; the DP stages' lines come from their
# declarations (dp_ops/dp_stage_specs.py), each after the stage it follows. Fused stages run
# together: the one that took the most time since the last line is shown.
_PLAIN_STAGES = (
    ProgressStage("read", "reading and validating", "records", None),
    ProgressStage("bound_contributions", "bounding contributions", "users", "users"),
    ProgressStage("extract_facets", "extracting facets", "conversations", "kept"),
    ProgressStage("embed", "embedding", "conversations", "kept"),
    ProgressStage("assign_clusters", "assigning clusters", "blocks", "blocks"),
    ProgressStage("sample_for_keywords", "sampling for keywords", "blocks", "blocks"),
    ProgressStage("select_keywords", "selecting keywords", "sampled blocks", None),
    ProgressStage("name_clusters", "naming topics", "topics", None),
)


def stages() -> tuple[ProgressStage, ...]:
    """Every stage's progress line, in pipeline order."""
    ordered = list(_PLAIN_STAGES)
    for spec in dp_stage_specs.DP_STAGE_SPECS:
        if spec.progress is not None:
            keys = [stage.key for stage in ordered]
            ordered.insert(keys.index(spec.progress.after) + 1, spec.progress)
    return tuple(ordered)


def runs_in_this_process(runner: str | None, running_mode: str | None) -> bool:
    """Whether the runner runs the stages in this process (the DirectRunner's in-process engine)."""
    return runner in (None, "DirectRunner", "FnApiRunner") and running_mode in (None, "in_memory", "multi_threading")


def progress_enabled(mode: str, runner: str | None, running_mode: str | None, remote: bool) -> tuple[bool, str]:
    """(on?, why): auto is on for the DirectRunner's in-process engine, never on Dataflow."""
    if mode == "off":
        return False, "--progress off"
    if remote:
        return False, "Dataflow monitors its own stages"
    if not runs_in_this_process(runner, running_mode):
        why = (f"--direct_running_mode={running_mode} runs stages in other processes" if running_mode
               else f"runner {runner} runs stages in other processes")
        return False, why
    return True, "local in-process run"


def format_duration(seconds: float) -> str:
    seconds = max(0, int(round(seconds)))
    hours, rest = divmod(seconds, 3600)
    minutes, secs = divmod(rest, 60)
    if hours:
        return f"{hours}h{minutes:02d}m"
    if minutes:
        return f"{minutes}m{secs:02d}s"
    return f"{secs}s"


@dataclasses.dataclass
class _StageClock:
    first_seen: float
    last_moved: float


class ProgressReporter:
    """Prints a progress line every `interval` seconds while a local pipeline runs."""

    def __init__(self, max_conversations_per_user: int, block_size: int, kmeans_iterations: int,
                 interval: float = DEFAULT_INTERVAL_SECONDS, stream=None, clock=time.monotonic, llm_calls=None):
        self._limit = max_conversations_per_user
        self._block_size = block_size
        self._kmeans_passes_per_block = 2 + kmeans_iterations  # projection, LSH seeding, each Lloyd step
        self._interval = interval
        self._stream = stream or sys.stderr
        self._clock = clock
        if llm_calls is None:
            from backends.llm.metrics import live_calls as llm_calls
        self._llm_calls = llm_calls
        self._last_llm_done: dict[str, int] = {}
        self._started = None
        self._clocks: dict[str, _StageClock] = {}
        self._last_counts: dict[str, int] = {}
        self._last_seconds: dict[str, float] = {}
        self._current: ProgressStage | None = None
        self._last_tick: float | None = None
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    def __enter__(self):
        self.start()
        return self

    def __exit__(self, exc_type, *unused):
        self.stop(finished=exc_type is None)

    def start(self) -> None:
        registry.enable()
        self._llm_calls.reset()
        self._started = self._clock()
        self._thread = threading.Thread(target=self._loop, name="urania-progress", daemon=True)
        self._thread.start()

    def stop(self, finished: bool = True) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join()
        counts, _, _, kept = registry.snapshot(self._limit)
        registry.disable()
        elapsed = format_duration(self._clock() - self._started)
        if finished:
            self._print(f"done: 100% in {elapsed} ({counts.get('read', 0):,} records read, "
                        f"{counts.get('embed', 0):,} of {kept:,} conversations embedded)")
        else:
            self._print(f"stopped after {elapsed}")

    def _loop(self) -> None:
        while not self._stop.wait(self._interval):
            self._print(self.line())

    def _print(self, text: str) -> None:
        print(f"[progress {format_duration(self._clock() - self._started)}] {text}", file=self._stream, flush=True)

    def _expected(self, stage: ProgressStage, users: int, kept: int) -> int | None:
        blocks = math.ceil(kept / self._block_size) if kept else 0
        return {"users": users, "kept": kept, "blocks": blocks,
                "kmeans_passes": blocks * self._kmeans_passes_per_block, None: None}[stage.expected]

    def _llm_line(self, counts: dict[str, int], kept: int, now: float) -> str | None:
        """The LLM step with calls in flight (the latest started), or None."""
        steps = self._llm_calls.snapshot()
        active = [step for step, entry in steps.items() if entry["done"] < entry["submitted"]]
        if not active:
            self._last_llm_done = {step: entry["done"] for step, entry in steps.items()}
            return None
        step = max(active, key=lambda s: steps[s]["first"])
        entry = steps[step]
        done, expected, approximate = entry["done"], entry["submitted"], False
        if step == "facets":
            expected = max(expected, kept)  # one call (or cache hit) per kept conversation
        elif step == "keywords":
            # Calls are submitted block by block: extrapolate from the blocks sampled so far.
            blocks, sampled = math.ceil(kept / self._block_size) if kept else 0, counts.get("sample_for_keywords", 0)
            if 0 < sampled < blocks:
                expected, approximate = max(expected, round(expected * blocks / sampled)), True
        text = (f"LLM {step}: {done:,}/{'~' if approximate else ''}{expected:,} calls "
                f"({min(100, math.floor(100 * done / expected))}%)")
        elapsed = now - entry["first"]
        rate = done / elapsed if elapsed > 0 else 0.0
        if rate > 0:
            text += f", {rate:,.0f} calls/s" if rate >= 10 else f", {rate:.2f} calls/s"
            text += f", ETA {format_duration((expected - done) / rate)}"
        if done == self._last_llm_done.get(step):
            text += " (no change since the last line)"
        self._last_llm_done = {s: e["done"] for s, e in steps.items()}
        return text

    def line(self) -> str:
        """The current stage's progress line (also advances the stage clocks)."""
        counts, seconds, users, kept = registry.snapshot(self._limit)
        now = self._clock()
        # A stage first seen now began after the previous line: time its rate from there.
        previous, self._last_tick = (self._last_tick or self._started), now
        ordered = stages()
        moved = [s for s in ordered if counts.get(s.key, 0) > self._last_counts.get(s.key, 0)]
        for stage in ordered:
            if counts.get(stage.key, 0) and stage.key not in self._clocks:
                self._clocks[stage.key] = _StageClock(previous, now)
        for stage in moved:
            self._clocks[stage.key].last_moved = now
        if moved:
            # Where the time went since the last line; reading is not timed, so it counts as busy.
            self._current = max(moved, key=lambda s: (seconds.get(s.key, 0.0) - self._last_seconds.get(s.key, 0.0)
                                                      if s.key != "read" else math.inf))
        self._last_counts, self._last_seconds = counts, seconds
        llm = self._llm_line(counts, kept, now)
        if llm is not None:
            return llm
        if self._current is None:
            return "starting (loading the model, matching input files)"
        stage = self._current
        done = counts.get(stage.key, 0)
        expected = self._expected(stage, users, kept)
        text = f"{stage.label}: {done:,}"
        if expected:
            text += f"/{expected:,} {stage.unit} ({min(100, math.floor(100 * done / expected))}%)"
        else:
            text += f" {stage.unit}"
        stage_clock = self._clocks[stage.key]
        # Timed stages: elements per second of their own processing time (fused stages interleave, and a
        # stage fed in batches moves in jumps, so wall-clock windows mislead). Reading is not timed: its
        # rate is over the wall-clock time it was moving.
        busy = seconds.get(stage.key, 0.0) or (stage_clock.last_moved - stage_clock.first_seen)
        rate = done / busy if busy > 0 else 0.0
        if rate > 0:
            text += f", {rate:,.0f}/s" if rate >= 10 else f", {rate:.1f}/s"
            if expected and expected > done:
                text += f", ETA {format_duration((expected - done) / rate)}"
        if not moved:
            text += " (no change since the last line)"
        return text
