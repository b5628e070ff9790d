"""LLMConfig: the picklable settings of a backend, turned into a Caller on each worker. (The jobs
build it from their --llm_* flags: beam_jobs.options.LLMParams.config.)"""

from __future__ import annotations

import dataclasses
import time

from backends.llm.client import PermanentError, RetryableError
from backends.llm.fanout import Caller, CallSpec, RetryPolicy

REMOTE_BACKENDS = ("openai", "vertex")
BACKENDS = ("offline", *REMOTE_BACKENDS, "local")
# The job's steps that can run on the model (--llm_steps); the others keep their offline implementation.
STEPS = ("facets", "keywords", "names", "exemplars")
# The remote preflight's one prompt: fixed and public, no record's text goes into it.
PREFLIGHT_PROMPT = "This is a connection check. Reply with the single word: OK"


class LLMPreflightError(ValueError):
    """The backend failed its preflight call for good: a bad URL, key, model name, project or quota.
    A ValueError, so a job's launch reports it as a bad option (exit 2) before any data is read."""


@dataclasses.dataclass(frozen=True)
class LLMConfig:
    backend: str
    model: str
    base_url: str | None = None
    project: str | None = None
    location: str | None = None
    max_concurrency: int = 8
    timeout_s: float = 60.0
    max_retries: int = 4
    cache_path: str | None = None
    pseudonymize: bool = True
    pseudonyms: str = "typed"  # with pseudonymize: "typed" ("<PERSON_1>") or "surrogate" (a made-up name)
    backoff_base_s: float = 4.0  # fanout.RetryPolicy: long waits, so other records' load rarely fails a record
    temperature: float = 0.0
    steps: tuple[str, ...] = STEPS
    threads: int | None = None  # local: llama.cpp threads per server (None: half the cores)
    prefix_cache: bool = True  # local: reuse the prompts' public heads (local_client.PublicPrefixCache)

    def uses(self, step: str) -> bool:
        """Whether `step` (one of STEPS) runs on the model; steps outside STEPS (the keyword-set
        builders') always do."""
        return step not in STEPS or step in self.steps

    def make_client(self):
        if self.backend == "openai":
            from backends.llm.openai_client import OpenAIChatClient
            return OpenAIChatClient(self.base_url, self.model, self.temperature)
        if self.backend == "vertex":
            from backends.llm.vertex_client import VertexChatClient
            return VertexChatClient(self.project, self.location, self.model, self.temperature)
        if self.backend == "local":
            from backends.llm.local_client import LocalChatClient, default_threads, local_slots
            threads = self.threads or default_threads()
            return LocalChatClient(self.model or None, self.temperature, threads=threads,
                                   slots=local_slots(self.max_concurrency, threads), prefix_cache=self.prefix_cache)
        raise ValueError(f"no LLM client for backend {self.backend!r}")

    def preflight(self) -> None:
        """For the local backend: starts (or reuses) this process's model server now, so that a missing or
        corrupt model or a server failing its health check stops the job before any data is read. The
        server is then kept for the process (in-process runners' workers reuse it)."""
        if self.backend == "local":
            from backends.llm.local_client import acquire_server, default_threads, local_slots, resolve_local_model
            threads = self.threads or default_threads()
            acquire_server(resolve_local_model(self.model or None), threads, local_slots(self.max_concurrency, threads),
                           self.prefix_cache)

    def preflight_remote(self, client=None, sleep=time.sleep) -> None:
        """For the remote backends (openai, vertex): one call with PREFLIGHT_PROMPT (no data, no
        cache), retried like any call (RetryPolicy); raises LLMPreflightError if it still fails. Without
        it a misconfigured backend would fail every record's call, each only after its 30-60 s of
        retries, and dead-letter them all. A job calls it once at launch, before reading data (not
        LLMConfig's construction or preflight(): tests build remote configs without a server)."""
        if self.backend not in REMOTE_BACKENDS:
            return
        where = self.base_url if self.backend == "openai" else f"project {self.project}, {self.location}"
        what = f"--llm_backend {self.backend} ({where}, model {self.model!r})"
        own = client is None
        try:
            client = client or self.make_client()
        except Exception as error:  # e.g. no Google credentials for vertex
            raise LLMPreflightError(f"{what}: cannot make its client: {type(error).__name__}: {error}") from None
        try:
            self._preflight_call(client, what, sleep)
        finally:
            if own:
                client.close()

    def _preflight_call(self, client, what: str, sleep) -> None:
        """One Caller.call (fanout.py: its retries and RetryPolicy's waits, no cache) of PREFLIGHT_PROMPT;
        the client's last error names why it failed."""
        recorder = _ErrorRecorder(client)
        result = self._caller(recorder, cache=None, sleep=sleep).call(
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

    def _caller(self, client, cache, sleep=time.sleep) -> Caller:
        return Caller(client, backend=self.backend, model=self.model,
                      timeout_s=self.timeout_s, policy=RetryPolicy(self.max_retries, self.backoff_base_s),
                      # local: one request at a time, so a request's timeout never counts time spent
                      # queued behind other users' requests (one slot, local_slots).
                      max_concurrency=1 if self.backend == "local" else self.max_concurrency,
                      cache=cache, sleep=sleep)

    def make_caller(self, client=None) -> Caller:
        from backends.llm.cache import ResponseCache
        return self._caller(client or self.make_client(),
                            cache=ResponseCache(self.cache_path) if self.cache_path else None)


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
