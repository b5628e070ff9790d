"""The small interface every backend's chat client implements, and its error classes."""

from __future__ import annotations

import abc
import dataclasses


@dataclasses.dataclass(frozen=True)
class Completion:
    text: str
    prompt_tokens: int = 0
    completion_tokens: int = 0


class RetryableError(Exception):
    """A 429, a 5xx, a timeout or a dropped connection: worth another attempt after a backoff."""

    def __init__(self, message: str, retry_after_s: float | None = None):
        super().__init__(message)
        self.retry_after_s = retry_after_s


class PermanentError(Exception):
    """Any other failure (4xx, an unreadable response body): retrying will not help."""


class ChatClient(abc.ABC):
    """One chat completion per call. Must be thread-safe; built on the worker (not pickled)."""

    @abc.abstractmethod
    def complete(self, messages: list[dict], *, json_output: bool | dict, max_tokens: int,
                 timeout_s: float, attempt: int = 0) -> Completion:
        """Raises RetryableError or PermanentError. json_output: False, free text; True, a JSON object;
        a dict, a JSON schema the answer must follow (enforced where the backend can: OpenAI-compatible
        servers' `json_schema` response format; Gemini gets JSON mode). attempt: which attempt of one
        call this request is, 0 for the first (fanout.Caller's retries pass it; the OpenAI-compatible
        and local clients send it as a header a test server reads, Vertex ignores it)."""

    def close(self) -> None:
        """Releases connections."""
