"""OpenAI-compatible /v1/chat/completions over plain HTTP (vLLM, llama.cpp server, Ollama, OpenAI).

Plain urllib rather than the `openai` package: the request is one small JSON POST, the fan-out needs
to see each attempt's status and do its own retries (the SDK retries on its own by default, which would
hide retries from the counters), and it adds no dependency to the workers' image.
"""

from __future__ import annotations

import json
import os
import socket
import urllib.error
import urllib.request

from backends.llm.client import ChatClient, Completion, PermanentError, RetryableError

API_KEY_ENV = "OPENAI_API_KEY"
# Lets a test server see which attempt of a call a request is; servers ignore unknown headers.
ATTEMPT_HEADER = "X-Urania-Attempt"


def chat_completions_url(base_url: str) -> str:
    """Accepts http://host:port, http://host:port/v1 or the full .../chat/completions URL."""
    base = base_url.rstrip("/")
    if base.endswith("/chat/completions"):
        return base
    if not base.endswith("/v1"):
        base += "/v1"
    return base + "/chat/completions"


def _retry_after(headers) -> float | None:
    try:
        return float(headers.get("Retry-After"))
    except (TypeError, ValueError):
        return None


class OpenAIChatClient(ChatClient):
    def __init__(self, base_url: str, model: str, temperature: float = 0.0, api_key: str | None = None):
        self.url = chat_completions_url(base_url)
        self.model = model
        self.temperature = temperature
        self._api_key = api_key if api_key is not None else os.environ.get(API_KEY_ENV)

    def build_request(self, messages: list[dict], *, json_output: bool | dict, max_tokens: int, attempt: int = 0):
        body = {"model": self.model, "messages": messages, "temperature": self.temperature,
                "max_tokens": max_tokens}
        if isinstance(json_output, dict):
            body["response_format"] = {"type": "json_schema",
                                       "json_schema": {"name": "answer", "strict": True, "schema": json_output}}
        elif json_output:
            body["response_format"] = {"type": "json_object"}
        headers = {"Content-Type": "application/json", ATTEMPT_HEADER: str(attempt)}
        if self._api_key:
            headers["Authorization"] = f"Bearer {self._api_key}"
        return urllib.request.Request(self.url, data=json.dumps(body).encode("utf-8"), headers=headers,
                                      method="POST")

    def complete(self, messages, *, json_output, max_tokens, timeout_s, attempt: int = 0) -> Completion:
        request = self.build_request(messages, json_output=json_output, max_tokens=max_tokens, attempt=attempt)
        try:
            with urllib.request.urlopen(request, timeout=timeout_s) as response:
                raw = response.read()
        except urllib.error.HTTPError as error:
            status = error.code
            error.close()
            if status == 429 or status >= 500:
                raise RetryableError(f"HTTP {status}", _retry_after(error.headers)) from None
            raise PermanentError(f"HTTP {status}") from None
        except (TimeoutError, socket.timeout) as error:
            raise RetryableError(f"timeout after {timeout_s}s") from error
        except (urllib.error.URLError, ConnectionError, OSError) as error:
            reason = getattr(error, "reason", error)
            if isinstance(reason, (TimeoutError, socket.timeout)):
                raise RetryableError(f"timeout after {timeout_s}s") from None
            raise RetryableError(f"connection failed: {type(reason).__name__}") from None
        return parse_response(raw)


def parse_response(raw: bytes) -> Completion:
    """The first choice's message content and the token usage of a chat-completions response."""
    try:
        data = json.loads(raw)
        text = data["choices"][0]["message"]["content"]
    except (ValueError, KeyError, IndexError, TypeError):
        raise PermanentError("unreadable chat-completions response") from None
    if not isinstance(text, str):
        raise PermanentError("chat-completions response without text content")
    usage = data.get("usage") or {}
    return Completion(text, int(usage.get("prompt_tokens") or 0), int(usage.get("completion_tokens") or 0))
