"""An in-process small model through llama-cpp-python (optional extra; nothing leaves the machine).

The default model is Qwen2.5-Coder-0.5B-Instruct Q4_K_M, assembled by scripts/install_local_llm.py.
It names clusters well from keywords but picks keywords from a long K badly (the first few of the
list, or one repeated): the parser keeps only distinct words of K and rejects those degenerate
answers, and the offline selector answers for them. One model per worker process; llama.cpp contexts
are not thread-safe, so calls are serialised (--llm_max_concurrency does not add parallelism here)
and --llm_timeout_s cannot interrupt a generation (max_tokens bounds it instead).
"""

from __future__ import annotations

import os
import threading

from backends.llm.client import ChatClient, Completion, PermanentError

DEFAULT_LOCAL_MODEL_FILE = "qwen2.5-coder-0.5b-instruct-q4_k_m.gguf"
CONTEXT_TOKENS = 8192

_models: dict[str, object] = {}
_models_lock = threading.Lock()


def default_local_model() -> str:
    from backends.embedding import model_home
    return os.path.join(model_home(), DEFAULT_LOCAL_MODEL_FILE)


def llama_cpp_available() -> bool:
    try:
        import llama_cpp  # noqa: F401
    except ImportError:
        return False
    return True


def _load(path: str):
    with _models_lock:
        if path not in _models:
            from llama_cpp import Llama
            _models[path] = (Llama(model_path=path, n_ctx=CONTEXT_TOKENS, n_threads=os.cpu_count() or 1,
                                   seed=0, verbose=False), threading.Lock())
        return _models[path]


class LocalChatClient(ChatClient):
    def __init__(self, model_path: str | None = None, temperature: float = 0.0):
        self.model_path = model_path or default_local_model()
        self.temperature = temperature
        if not os.path.exists(self.model_path):
            raise FileNotFoundError(f"local model {self.model_path} not found; run scripts/install_local_llm.py")

    def complete(self, messages, *, json_output, max_tokens, timeout_s, attempt: int = 0) -> Completion:
        llm, lock = _load(self.model_path)
        kwargs = {"response_format": {"type": "json_object"}} if json_output else {}
        try:
            with lock:
                out = llm.create_chat_completion(messages=messages, max_tokens=max_tokens,
                                                 temperature=self.temperature, **kwargs)
        except ValueError as error:  # e.g. the prompt exceeds the context window
            raise PermanentError(f"local model refused the request: {type(error).__name__}") from None
        text = out["choices"][0]["message"].get("content") or ""
        usage = out.get("usage") or {}
        return Completion(text, int(usage.get("prompt_tokens") or 0), int(usage.get("completion_tokens") or 0))
