"""What LLMParams (config/llm.py, the --llm_* flags) need of the backends: the launch checks
(`preflight`), and the client and Caller each worker builds from the params as `LLMParams.resolved`
left them on the launcher (`make_client`, `make_caller`).

Importing this module imports no client and no fan-out machinery: those come with the first call.
"""

from __future__ import annotations

import os
import time
from typing import TYPE_CHECKING

from config.llm import REMOTE_BACKENDS, LLMParams
from core.params import check

if TYPE_CHECKING:
    from backends.llm.fanout import Caller

# The remote preflight's one prompt: fixed and public, no record's text goes into it.
PREFLIGHT_PROMPT = "This is a connection check. Reply with the single word: OK"


class LLMPreflightError(ValueError):
    """The backend failed its preflight call for good: a bad URL, key, model name, project or quota.
    A ValueError, so a job's launch reports it as a bad option (exit 2) before any data is read."""


# --- at launch ---------------------------------------------------------------------------------------

def preflight(params: LLMParams) -> None:
    """The LLM backend's part of the job's one preflight step (backends.factory.preflight, after the
    pseudonymizer's name model), run once at launch before any data is read, in this order: what the
    flags need of this machine (`_check_environment`), then the local backend's model server
    (`start_local_server`: a model that does not load fails here, and the server is kept for the
    process), then the remote backends' one fixed call (`preflight_remote`). It raises ValueError
    (LLMPreflightError is one), which a job reports as a bad option (exit 2). Parsing the flags (their
    bounds, check_values) checks only their values, so params can be built on a machine without the
    backend's software or model."""
    _check_environment(params)
    workers = params.resolved()
    if workers is not None:
        start_local_server(workers)
        preflight_remote(workers)


def _check_environment(params: LLMParams) -> None:
    """What the flags need of this machine: xllamacpp and the GGUF model for the local backend, a
    project for vertex, the person judge's local model when it runs. Part of `preflight`."""
    if params.llm_backend == "local":
        from backends.llm import local_client
        check(local_client.xllamacpp_available(), "--llm_backend=local needs xllamacpp (in requirements.txt)")
        try:
            local_client.check_local_model(local_client.resolve_local_model(params.llm_model))
        except local_client.LocalModelError as error:
            raise ValueError(str(error)) from None
    if params.llm_backend == "vertex":
        check(bool(params.llm_project or os.environ.get("GOOGLE_CLOUD_PROJECT")),
              "--llm_backend=vertex needs --llm_project or $GOOGLE_CLOUD_PROJECT")
    if params.judges_names:
        from backends.llm import local_client
        check(local_client.xllamacpp_available(), "--pseudonymize_judge=local needs xllamacpp (in requirements.txt)")
        try:
            local_client.check_local_model(local_client.resolve_local_model(params.judge_model))
        except local_client.LocalModelError as error:
            raise ValueError(f"--pseudonymize_judge=local: {error}") from None


def person_judge_spec(params: LLMParams) -> tuple | None:
    """(model, llama.cpp threads, answer cache) of the pseudonymizer's person judge, or None: the
    local backend's threads (one server per process for both), else one thread (OpenMP threads spin
    on cores the job's other stages share)."""
    if not params.judges_names:
        return None
    from backends.llm.local_client import default_threads
    threads = (params.llm_threads or default_threads()) if params.llm_backend == "local" else 1
    return params.judge_model, threads, params.llm_cache


# --- on resolved params (LLMParams.resolved), at launch and on the workers -------------------------

def make_client(params: LLMParams):
    if params.llm_backend == "openai":
        from backends.llm.openai_client import OpenAIChatClient
        return OpenAIChatClient(params.llm_base_url, params.llm_model, params.temperature)
    if params.llm_backend == "vertex":
        from backends.llm.vertex_client import VertexChatClient
        return VertexChatClient(params.llm_project, params.llm_location, params.llm_model, params.temperature)
    if params.llm_backend == "local":
        from backends.llm.local_client import LocalChatClient, default_threads, local_slots
        threads = params.llm_threads or default_threads()
        return LocalChatClient(params.llm_model or None, params.temperature, threads=threads,
                               slots=local_slots(params.llm_max_concurrency, threads),
                               prefix_cache=params.prefix_cache)
    raise ValueError(f"no LLM client for backend {params.llm_backend!r}")


def start_local_server(params: LLMParams) -> None:
    """For the local backend: starts (or reuses) this process's model server now, so that a missing or
    corrupt model or a server failing its health check stops the job before any data is read. The
    server is then kept for the process (in-process runners' workers reuse it)."""
    if params.llm_backend == "local":
        from backends.llm.local_client import acquire_server, default_threads, local_slots, resolve_local_model
        threads = params.llm_threads or default_threads()
        acquire_server(resolve_local_model(params.llm_model or None), threads,
                       local_slots(params.llm_max_concurrency, threads), params.prefix_cache)


def preflight_remote(params: LLMParams, client=None, sleep=time.sleep) -> None:
    """For the remote backends (openai, vertex): one call with PREFLIGHT_PROMPT (no data, no
    cache), retried like any call (RetryPolicy); raises LLMPreflightError if it still fails. Without
    it a misconfigured backend would fail every record's call, each only after its 30-60 s of
    retries, and dead-letter them all. A job calls it once at launch (`preflight`), before reading
    data (never on construction: tests build remote params without a server)."""
    if params.llm_backend not in REMOTE_BACKENDS:
        return
    where = (params.llm_base_url if params.llm_backend == "openai"
             else f"project {params.llm_project}, {params.llm_location}")
    what = f"--llm_backend {params.llm_backend} ({where}, model {params.llm_model!r})"
    own = client is None
    try:
        client = client or make_client(params)
    except Exception as error:  # e.g. no Google credentials for vertex
        raise LLMPreflightError(f"{what}: cannot make its client: {type(error).__name__}: {error}") from None
    try:
        _preflight_call(params, client, what, sleep)
    finally:
        if own:
            client.close()


def _preflight_call(params: LLMParams, client, what: str, sleep) -> None:
    """One Caller.call (fanout.py: its retries and RetryPolicy's waits, no cache) of PREFLIGHT_PROMPT;
    the client's last error names why it failed."""
    from backends.llm.client import PermanentError, RetryableError
    from backends.llm.fanout import CallSpec
    recorder = _ErrorRecorder(client)
    result = _caller(params, recorder, cache=None, sleep=sleep).call(
        CallSpec([{"role": "user", "content": PREFLIGHT_PROMPT}], parse=lambda text: (text, False)))
    if result.ok:
        return
    error = recorder.error
    if isinstance(error, RetryableError):
        raise LLMPreflightError(f"{what} failed its preflight call after {result.requests} attempts: "
                                f"{error}") from None
    if isinstance(error, PermanentError):
        raise LLMPreflightError(f"{what} refused its preflight call: {error}") from None
    raise LLMPreflightError(f"{what} failed its preflight call: {type(error).__name__}: {error}") from None


def _caller(params: LLMParams, client, cache, sleep=time.sleep) -> Caller:
    from backends.llm.fanout import Caller, RetryPolicy
    return Caller(client, backend=params.llm_backend, model=params.llm_model,
                  timeout_s=params.timeout_s, policy=RetryPolicy(params.llm_max_retries, params.backoff_base_s),
                  # local: one request at a time, so a request's timeout never counts time spent
                  # queued behind other users' requests (one slot, local_slots).
                  max_concurrency=1 if params.llm_backend == "local" else params.llm_max_concurrency,
                  cache=cache, sleep=sleep)


def make_caller(params: LLMParams, client=None) -> Caller:
    from backends.llm.cache import ResponseCache
    return _caller(params, client or make_client(params),
                   cache=ResponseCache(params.llm_cache) if params.llm_cache else None)


class _ErrorRecorder:
    """A ChatClient that passes calls on to `client` and keeps the last error it raised (Caller.call
    counts errors by class only; the preflight's message names the error)."""

    def __init__(self, client):
        self.client, self.error = client, None

    def complete(self, messages, **kwargs):
        try:
            return self.client.complete(messages, **kwargs)
        except Exception as error:
            self.error = error
            raise
