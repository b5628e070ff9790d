"""Many model calls from one worker: a bounded thread pool, retries (tenacity) with a bounded
exponential backoff on retryable errors, the content-hash cache, and per-call accounting.

Beam counters live in the thread that runs the DoFn, so calls return their counts (CallResult) and
the caller records them (metrics.py); nothing here touches Beam metrics from a pool thread.
"""

from __future__ import annotations

import concurrent.futures
import dataclasses
import logging
import random
import threading
import time
from typing import Any, Callable

import tenacity

from backends.llm.cache import ResponseCache, request_key
from backends.llm.client import ChatClient, PermanentError, RetryableError
from backends.llm.parsing import MalformedOutput

log = logging.getLogger("urania.llm")

# One pool per worker process and concurrency bound, shared by every DoFn instance in the process,
# so --llm_max_concurrency bounds the process's calls in flight, not each bundle's.
_pools: dict[int, concurrent.futures.ThreadPoolExecutor] = {}
_pools_lock = threading.Lock()


def shared_pool(max_concurrency: int) -> concurrent.futures.ThreadPoolExecutor:
    with _pools_lock:
        if max_concurrency not in _pools:
            _pools[max_concurrency] = concurrent.futures.ThreadPoolExecutor(
                max_workers=max_concurrency, thread_name_prefix="urania-llm")
        return _pools[max_concurrency]


@dataclasses.dataclass(frozen=True)
class CallSpec:
    """One model call: its messages and how to read the answer (parse: text -> (value, repaired)).
    json_output: False (free text), True (a JSON object) or the JSON schema the answer must follow."""

    messages: list[dict]
    parse: Callable[[str], tuple[Any, bool]]
    json_output: bool | dict = False
    max_tokens: int = 256


@dataclasses.dataclass
class CallResult:
    value: Any = None
    ok: bool = False
    cache_hit: bool = False
    requests: int = 0
    retries: int = 0
    prompt_tokens: int = 0
    completion_tokens: int = 0
    repaired: bool = False
    error: str | None = None  # a class of failure, never model or conversation text


@dataclasses.dataclass(frozen=True)
class RetryPolicy:
    """Retries of a call on a RetryableError. The waits are long and bounded on purpose: a record whose
    call still fails is dead-lettered (backends/llm/steps.py), and a short wait would let a burst of
    other records' load (429s, timeouts) decide whether this record gets the model's answer at all.
    Retry n waits between half and all of min(max, base * 2^(n-1)) ("equal jitter": never ~0 as full
    jitter can be), so with the defaults (4 retries, 4 s base) a call gives up only after 30-60 s of
    waiting; a server's Retry-After is a floor, capped at backoff_max_s. At most max_retries *
    backoff_max_s of waiting in all."""

    max_retries: int = 4
    backoff_base_s: float = 4.0
    backoff_max_s: float = 60.0

    def delay(self, retry: int, retry_after_s: float | None, rng: random.Random) -> float:
        ceiling = min(self.backoff_max_s, self.backoff_base_s * 2 ** (retry - 1))
        delay = rng.uniform(ceiling / 2, ceiling)
        if retry_after_s is not None:
            delay = max(delay, min(retry_after_s, self.backoff_max_s))
        return delay


class Caller:
    """Runs CallSpecs against a ChatClient with the cache, retries and a shared bounded pool."""

    def __init__(self, client: ChatClient, *, backend: str, model: str, timeout_s: float, policy: RetryPolicy,
                 max_concurrency: int, cache: ResponseCache | None = None, sleep=time.sleep):
        self.client = client
        self.backend = backend
        self.model = model
        self.timeout_s = timeout_s
        self.policy = policy
        self.max_concurrency = max_concurrency
        self.cache = cache
        self._sleep = sleep
        self._rng = random.Random()

    def key(self, spec: CallSpec) -> str:
        """The request's content hash (the cache's key)."""
        return request_key(self.backend, self.model, spec.messages,
                           {"json": spec.json_output, "max_tokens": spec.max_tokens})

    def _wait(self, state: tenacity.RetryCallState) -> float:
        error = state.outcome.exception()
        return self.policy.delay(state.attempt_number, getattr(error, "retry_after_s", None), self._rng)

    def call(self, spec: CallSpec) -> CallResult:
        result = CallResult()
        key = self.key(spec) if self.cache is not None else None
        if key is not None:
            cached = self.cache.get(key)
            if cached is not None:
                try:
                    result.value, result.repaired = spec.parse(cached.text)
                    result.ok = result.cache_hit = True
                    return result
                except MalformedOutput:
                    pass  # an entry from an older parser: ask again
        retrying = tenacity.Retrying(retry=tenacity.retry_if_exception_type(RetryableError),
                                     stop=tenacity.stop_after_attempt(self.policy.max_retries + 1),
                                     wait=self._wait, sleep=self._sleep, reraise=True)
        try:
            for attempt in retrying:
                with attempt:
                    number = attempt.retry_state.attempt_number - 1  # 0 for the first request
                    result.requests, result.retries = number + 1, number
                    completion = self.client.complete(spec.messages, json_output=spec.json_output,
                                                      max_tokens=spec.max_tokens, timeout_s=self.timeout_s,
                                                      attempt=number)
        except RetryableError:
            result.error = "retries_exhausted"
            return result
        except PermanentError:
            result.error = "permanent_error"
            return result
        except Exception as error:  # a client bug must not take the job down: count it, fail the call
            log.warning("unexpected LLM client error", extra={"event": "llm_client_error",
                                                               "error_type": type(error).__name__})
            result.error = "client_error"
            return result
        result.prompt_tokens += completion.prompt_tokens
        result.completion_tokens += completion.completion_tokens
        try:
            result.value, result.repaired = spec.parse(completion.text)
        except MalformedOutput:
            result.error = "malformed_output"
            return result
        result.ok = True
        if key is not None:
            try:
                self.cache.put(key, completion)
            except Exception as error:  # a cache that cannot be written costs money, not correctness
                log.warning("cannot write the LLM cache", extra={"event": "llm_cache_write_failed",
                                                                  "error_type": type(error).__name__})
        return result

    def call_many(self, specs: list[CallSpec], on_done: Callable[[CallResult], None] | None = None) -> list[CallResult]:
        """One result per spec, in order, at most max_concurrency in flight in this process; on_done
        (thread-safe) is told of each result as it comes."""
        if not specs:
            return []

        def call(spec: CallSpec) -> CallResult:
            result = self.call(spec)
            if on_done is not None:
                on_done(result)
            return result

        if len(specs) == 1:
            return [call(specs[0])]
        pool = shared_pool(self.max_concurrency)
        return list(pool.map(call, specs))
