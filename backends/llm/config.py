"""LLMConfig: the picklable settings of a backend, turned into a Caller on each worker."""

from __future__ import annotations

import dataclasses

from backends.llm.fanout import Caller, RetryPolicy

REMOTE_BACKENDS = ("openai", "vertex")
BACKENDS = ("offline", *REMOTE_BACKENDS, "local")


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
    backoff_base_s: float = 0.5
    temperature: float = 0.0

    def make_client(self):
        if self.backend == "openai":
            from backends.llm.openai_client import OpenAIChatClient
            return OpenAIChatClient(self.base_url, self.model, self.temperature)
        if self.backend == "vertex":
            from backends.llm.vertex_client import VertexChatClient
            return VertexChatClient(self.project, self.location, self.model, self.temperature)
        if self.backend == "local":
            from backends.llm.local_client import LocalChatClient
            return LocalChatClient(self.model or None, self.temperature)
        raise ValueError(f"no LLM client for backend {self.backend!r}")

    def make_caller(self, client=None) -> Caller:
        from backends.llm.cache import ResponseCache
        return Caller(client or self.make_client(), backend=self.backend, model=self.model,
                      timeout_s=self.timeout_s, policy=RetryPolicy(self.max_retries, self.backoff_base_s),
                      max_concurrency=self.max_concurrency,
                      cache=ResponseCache(self.cache_path) if self.cache_path else None)


def config_from_options(options) -> LLMConfig:
    """The LLM settings of InsightsOptions (validated by beam_jobs.options.validate)."""
    from backends.llm.vertex_client import DEFAULT_VERTEX_MODEL, vertex_location, vertex_project
    backend = options.llm_backend
    pseudonymize = options.pseudonymize != "off" if options.pseudonymize else backend in REMOTE_BACKENDS
    return LLMConfig(
        backend=backend,
        model=options.llm_model or (DEFAULT_VERTEX_MODEL if backend == "vertex" else ""),
        base_url=options.llm_base_url,
        project=vertex_project(options.llm_project) if backend == "vertex" else options.llm_project,
        location=vertex_location(options.llm_location) if backend == "vertex" else options.llm_location,
        max_concurrency=options.llm_max_concurrency,
        timeout_s=options.llm_timeout_s,
        max_retries=options.llm_max_retries,
        cache_path=options.llm_cache,
        pseudonymize=pseudonymize,
    )
