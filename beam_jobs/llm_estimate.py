"""What a run's LLM steps will cost, said before any data is read: the model calls of each step and, on
the local model, their time, from the run's flags and the input's size (file sizes only: nothing here
opens a file). The insights job logs it as one line (event llm_estimate) after its preflight, with the
flag that changes it (--llm_steps), so that a run that would take hours says so before it starts
(docs/llm_backends.md#what-a-run-costs-before-it-starts).

Calls, for k = --num_clusters topics and N conversations:
  facets        one a conversation: N
  keywords      with keyword votes (--keyword_mode histogram or both), one a conversation sampled for
                keyword selection: N for the local model (whose calls are free, so every conversation is
                sampled), else about m a topic (--samples_per_cluster)
  names         one a topic: k
  centre_names  with --centre_decoder (on by default; it writes on the names step): the label writer's
                drafts and variations, 8 a topic
  exemplars     with --exemplars_per_topic: the exemplar writer's drafts and rounds of variations
N is not counted (that would read the data): it is the input's bytes over BYTES_PER_CONVERSATION, a
compressed file's bytes counted COMPRESSED_RATIO times. The figures are estimates, not bounds: the
per-topic ones are the writers' most (fewer topics may be released, a round may vary fewer winners), the
hierarchy may name a few groups of topics more, and bounding leaves fewer conversations than the input.
"""

from __future__ import annotations

import dataclasses
import logging
import math
from typing import TYPE_CHECKING

from apache_beam.io.filesystem import CompressionTypes
from apache_beam.io.filesystems import FileSystems

from backends.centre_decoder import DRAFTS, ROUNDS
from backends.exemplars import parents_per_round, variations_per_round
from config.llm import PER_CONVERSATION_STEPS, STEPS, LLMParams

if TYPE_CHECKING:
    from config.insights import InsightsParams

log = logging.getLogger("urania.insights")

# Seconds a call of each step takes on the local qwen2.5-coder-0.5b as the job runs it (one server and
# slot per worker process, the public-prefix cache, 1 thread: --llm_threads' default on 2 cores), on
# the shared real mix: the mean of two runs of bench/bench_llm_call_cost.py, the steps in one order and
# then the reverse, on the 2-core development machine while other jobs kept its load average at 6-15.
# So they are slow figures: a quiet or larger worker is faster (docs/llm_backends.md#what-a-run-costs-before-it-starts).
LOCAL_SECONDS_PER_CALL = {"facets": 13.0, "keywords": 8.5, "names": 19.5, "centre_names": 21.7, "exemplars": 22.4}
# Each packaged model's call time against the 0.5B's: the 1.5B took 2.35x as long a keyword call (6.89
# against 2.93 s) and 2.38x a name (95.8 against 40.3 s) in bench/bench_local_llm.py (docs/llm_backends.md).
LOCAL_MODEL_TIME = {"qwen2.5-coder-0.5b": 1.0, "qwen2.5-coder-1.5b": 2.35}
# The input's size in conversations: the shared real mix (hh-rlhf harmless, arena-hard prompts) holds
# 1,085 bytes of JSON Lines a conversation (934 and 1,552), and gzip shrinks it 3.55 times (3.71, 3.30):
# bench/bench_llm_call_cost.py prints both.
BYTES_PER_CONVERSATION = 1085
COMPRESSED_RATIO = 3.55
_PARQUET_SUFFIXES = (".parquet", ".parq")
# The step of --llm_steps that turns each estimated step on.
FLAG_STEP = {"facets": "facets", "keywords": "keywords", "names": "names", "centre_names": "names",
             "exemplars": "exemplars"}


@dataclasses.dataclass(frozen=True)
class InputSize:
    """The input's files, their bytes as stored, and the conversations they are estimated to hold."""

    files: int
    bytes: int
    conversations: int


@dataclasses.dataclass(frozen=True)
class StepCalls:
    """One step's estimated calls, whether it runs on the model this run, and their seconds (None: no
    measured per-call time for the backend or model)."""

    step: str
    calls: int
    on: bool
    seconds: float | None


def input_size(pattern: str) -> InputSize:
    """The files matching --input, from their listing only: their bytes (a compressed file's times
    COMPRESSED_RATIO) over BYTES_PER_CONVERSATION."""
    files = FileSystems.match([pattern])[0].metadata_list
    stored = sum(f.size_in_bytes for f in files)
    plain = sum(f.size_in_bytes * (COMPRESSED_RATIO if _compressed(f.path) else 1) for f in files)
    return InputSize(len(files), stored, math.ceil(plain / BYTES_PER_CONVERSATION))


def _compressed(path: str) -> bool:
    return (path.lower().endswith(_PARQUET_SUFFIXES)
            or CompressionTypes.detect_compression_type(path) != CompressionTypes.UNCOMPRESSED)


def centre_name_calls(keywords_per_topic: int) -> int:
    """The centre decoder's label-writer calls for one topic (backends/llm/steps.py LLMLabelWriter): a call
    per focus (a keyword, or the name of a topic without one) for its DRAFTS candidates, then each round a
    call per varied winner."""
    return min(max(keywords_per_topic, 1), DRAFTS) + ROUNDS * _varying_calls(1, DRAFTS)


def exemplar_calls(keywords_per_topic: int, count: int, candidates: int, rounds: int) -> int:
    """The exemplar writer's calls for one topic (LLMExemplarWriter): a call per keyword for its first draft
    of `candidates`, then each round a call per varied winner."""
    return min(keywords_per_topic, candidates) + rounds * _varying_calls(count, candidates)


def _varying_calls(count: int, candidates: int) -> int:
    """Calls of one round of variations (backends/exemplars.py evolve_exemplars): one per winner varied,
    while each gets at least one variation."""
    return min(parents_per_round(count), variations_per_round(candidates, count))


def step_calls(params: InsightsParams, conversations: int) -> dict[str, int]:
    """Estimated calls of every step that would call a model on this run's flags if --llm_steps named it."""
    k, t = params.clustering.num_clusters, params.keywords.keywords_per_cluster
    calls = {"facets": conversations}
    if params.keywords.votes:
        sampled = params.keywords.resolved_samples_per_cluster(params.llm.llm_backend)
        calls["keywords"] = conversations if sampled is None else min(conversations, sampled * k)
    calls["names"] = k
    if params.exemplars.centre_decoder:
        calls["centre_names"] = k * centre_name_calls(t)
    if params.exemplars.exemplars_per_topic:
        exemplars = params.exemplars
        calls["exemplars"] = k * exemplar_calls(t, exemplars.exemplars_per_topic, exemplars.exemplar_candidates,
                                                exemplars.exemplar_rounds)
    return calls


def local_model(llm: LLMParams) -> str | None:
    """The packaged model (a LOCAL_MODELS name) the local backend runs: --llm_model, else the first
    installed; None for another backend or a GGUF file of no packaged model."""
    if llm.llm_backend != "local":
        return None
    from backends.llm.local_client import LOCAL_MODELS, resolve_local_model  # the local backend's only
    path = resolve_local_model(llm.llm_model or None)
    return next((name for name, m in LOCAL_MODELS.items() if path.endswith(m.file)), None)


def seconds_per_call(llm: LLMParams) -> dict[str, float] | None:
    """Measured seconds a call of each step for the run's local model; None for a remote backend (its
    time is its server's) or a GGUF file of no packaged model."""
    model = local_model(llm)
    if model is None:
        return None
    return {step: seconds * LOCAL_MODEL_TIME[model] for step, seconds in LOCAL_SECONDS_PER_CALL.items()}


def estimate(params: InsightsParams, size: InputSize) -> list[StepCalls]:
    """Every step with calls on this run's flags, on or off the model."""
    per_call = seconds_per_call(params.llm)
    return [StepCalls(step, calls, params.llm.uses(FLAG_STEP[step]),
                      None if per_call is None else calls * per_call[step])
            for step, calls in step_calls(params, size.conversations).items() if calls]


def duration(seconds: float) -> str:
    """Seconds in words: ~40 s, ~12 min, ~3.5 h, ~18 h."""
    if seconds < 90:
        return f"~{max(1, round(seconds))} s"
    if seconds < 90 * 60:
        return f"~{round(seconds / 60)} min"
    hours = seconds / 3600
    return f"~{hours:.1f} h" if hours < 10 else f"~{round(hours)} h"


def _steps_text(steps: list[StepCalls]) -> str:
    return ", ".join(f"{s.step} {s.calls:,}" for s in steps)


def _total_text(steps: list[StepCalls]) -> str:
    """'~N calls, ~T' with the time when every step has one."""
    calls = sum(s.calls for s in steps)
    if any(s.seconds is None for s in steps):
        return f"~{calls:,} calls"
    return f"~{calls:,} calls, {duration(sum(s.seconds for s in steps))}"


def estimate_line(params: InsightsParams, size: InputSize) -> str:
    """The one line the job logs before reading data."""
    steps = estimate(params, size)
    on, off = [s for s in steps if s.on], [s for s in steps if not s.on]
    llm = params.llm
    model = local_model(llm) or llm.llm_model
    model = f", {model}" if model else ""
    line = (f"LLM estimate (--llm_backend {llm.llm_backend}{model}, --llm_steps {','.join(llm.steps)}): "
            f"{_total_text(on) if on else 'no calls'}")
    if on:
        line += f" ({_steps_text(on)})"
    if on and any(s.seconds is None for s in on):
        line += "; time not estimated (" + ("the server's" if llm.llm_backend != "local" else
                                            "no measured call time for this model") + ")"
    elif on:
        line += " on one worker process"
    line += (f"; ~{size.conversations:,} conversations estimated from {size.bytes / 1e6:,.1f} MB in "
             f"{size.files} file(s)")
    if off:
        line += f"; off: {_steps_text(off)} would add {_total_text(off)}"
    if llm.judges_names and any(s.on and s.step in PER_CONVERSATION_STEPS for s in steps):
        line += "; plus the person judge's calls (--pseudonymize_judge local), not estimated"
    return line + f". Change with --llm_steps (any of {','.join(STEPS)})."


def log_llm_estimate(params: InsightsParams, pattern: str, run_id: str) -> list[StepCalls] | None:
    """Logs the estimate of a run whose backend calls a model (not offline); returns it (None: offline)."""
    if params.llm.llm_backend == "offline":
        return None
    size = input_size(pattern)
    steps = estimate(params, size)
    log.info(estimate_line(params, size), extra={
        "event": "llm_estimate", "run_id": run_id, "conversations_estimated": size.conversations,
        "input_bytes": size.bytes, "calls": {s.step: s.calls for s in steps if s.on},
        "calls_off": {s.step: s.calls for s in steps if not s.on},
        "seconds": (None if any(s.seconds is None for s in steps if s.on)
                    else round(sum(s.seconds for s in steps if s.on)))})
    return steps
