"""LLMConfig: the picklable settings of a backend, turned into a Caller on each worker. (The jobs
build it from their --llm_* flags: beam_jobs.options.LLMParams.config.)"""

from __future__ import annotations

import dataclasses

from backends.llm.fanout import Caller, RetryPolicy

REMOTE_BACKENDS = ("openai", "vertex")
BACKENDS = ("offline", *REMOTE_BACKENDS, "local")
# The job's steps that can run on the model (--llm_steps); the others keep their offline implementation.
STEPS = ("facets", "keywords", "names", "exemplars")


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
    backoff_base_s: float = 0.5
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

    def make_caller(self, client=None) -> Caller:
        from backends.llm.cache import ResponseCache
        return Caller(client or self.make_client(), backend=self.backend, model=self.model,
                      timeout_s=self.timeout_s, policy=RetryPolicy(self.max_retries, self.backoff_base_s),
                      # local: one request at a time, so a request's timeout never counts time spent
                      # queued behind other users' requests (one slot, local_slots).
                      max_concurrency=1 if self.backend == "local" else self.max_concurrency,
                      cache=ResponseCache(self.cache_path) if self.cache_path else None)
