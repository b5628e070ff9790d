"""Gemini on Vertex AI through the google-genai SDK (`genai.Client(vertexai=True, ...)`).

Credentials are Application Default Credentials (on Dataflow: the worker service account; locally:
`gcloud auth application-default login`). The SDK's own retries are switched off (attempts=1) so the
fan-out's retries are the only ones and are counted.
"""

from __future__ import annotations

from backends.llm.client import ChatClient, Completion, PermanentError, RetryableError
from config.llm import DEFAULT_VERTEX_MODEL


class VertexChatClient(ChatClient):
    def __init__(self, project: str, location: str, model: str = DEFAULT_VERTEX_MODEL, temperature: float = 0.0,
                 credentials=None, httpx_client=None):
        from google import genai
        from google.genai import types
        self._types = types
        self.model = model
        self.temperature = temperature
        http_options = types.HttpOptions(retry_options=types.HttpRetryOptions(attempts=1),
                                         httpx_client=httpx_client)
        self._client = genai.Client(vertexai=True, project=project, location=location, credentials=credentials,
                                    http_options=http_options)

    def build_request(self, messages: list[dict], *, json_output: bool, max_tokens: int, timeout_s: float):
        """(contents, config): system messages become the system instruction, the rest turns."""
        types = self._types
        system = "\n\n".join(m["content"] for m in messages if m["role"] == "system")
        contents = [types.Content(role="model" if m["role"] == "assistant" else "user",
                                  parts=[types.Part(text=m["content"])])
                    for m in messages if m["role"] != "system"]
        config = types.GenerateContentConfig(
            system_instruction=system or None, temperature=self.temperature, max_output_tokens=max_tokens,
            response_mime_type="application/json" if json_output else None,
            http_options=types.HttpOptions(timeout=int(timeout_s * 1000),
                                           retry_options=types.HttpRetryOptions(attempts=1)))
        return contents, config

    def complete(self, messages, *, json_output, max_tokens, timeout_s, attempt: int = 0) -> Completion:
        import httpx
        from google.genai import errors
        contents, config = self.build_request(messages, json_output=json_output, max_tokens=max_tokens,
                                              timeout_s=timeout_s)
        try:
            response = self._client.models.generate_content(model=self.model, contents=contents, config=config)
        except errors.APIError as error:
            if error.code == 429 or (error.code or 0) >= 500:
                raise RetryableError(f"HTTP {error.code}") from None
            raise PermanentError(f"HTTP {error.code}") from None
        except httpx.TimeoutException:
            raise RetryableError(f"timeout after {timeout_s}s") from None
        except httpx.TransportError as error:
            raise RetryableError(f"connection failed: {type(error).__name__}") from None
        except ValueError:  # the SDK could not read the response body
            raise PermanentError("unreadable Vertex AI response") from None
        text = response.text
        if not text:
            raise PermanentError("Vertex AI response without text (blocked or empty)")
        usage = response.usage_metadata
        return Completion(text, int(getattr(usage, "prompt_token_count", 0) or 0),
                          int(getattr(usage, "candidates_token_count", 0) or 0))

    def close(self) -> None:
        self._client.close()
