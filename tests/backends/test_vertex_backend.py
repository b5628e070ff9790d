"""The vertex backend at the google-genai SDK's transport boundary: the SDK's httpx client gets a
MockTransport, so requests are built and responses parsed by the real SDK, with no network."""

import json

import httpx
import pytest
from google.oauth2.credentials import Credentials

from backends.llm.client import PermanentError, RetryableError
from backends.llm.config import make_caller, preflight
from backends.llm.steps import LLMClusterNamer
from backends.llm.vertex_client import VertexChatClient
from config.insights import InsightsOptions, insights_params
from config.llm import LLMParams

MESSAGES = [{"role": "system", "content": "be brief"}, {"role": "user", "content": "name this"}]


def _gemini_response(text, prompt_tokens=12, output_tokens=5):
    return {"candidates": [{"content": {"role": "model", "parts": [{"text": text}]}, "finishReason": "STOP"}],
            "usageMetadata": {"promptTokenCount": prompt_tokens, "candidatesTokenCount": output_tokens,
                              "totalTokenCount": prompt_tokens + output_tokens}}


def _client(handler, seen):
    def record(request):
        seen.append(request)
        return handler(request)

    return VertexChatClient("my-project", "europe-west4", "gemini-2.5-flash", credentials=Credentials(token="tok"),
                            httpx_client=httpx.Client(transport=httpx.MockTransport(record)))


def test_request_goes_to_the_regional_generate_content_endpoint_with_system_instruction_and_limits():
    seen = []
    client = _client(lambda r: httpx.Response(200, json=_gemini_response('{"Summary": "hi"}')), seen)
    completion = client.complete(MESSAGES, json_output=True, max_tokens=99, timeout_s=7)
    assert (completion.text, completion.prompt_tokens, completion.completion_tokens) == ('{"Summary": "hi"}', 12, 5)
    (request,) = seen
    assert request.method == "POST" and request.url.host == "europe-west4-aiplatform.googleapis.com"
    assert request.url.path.endswith(
        "/projects/my-project/locations/europe-west4/publishers/google/models/gemini-2.5-flash:generateContent")
    assert request.headers["authorization"] == "Bearer tok"
    body = json.loads(request.content)
    assert body["contents"] == [{"parts": [{"text": "name this"}], "role": "user"}]
    assert body["systemInstruction"]["parts"] == [{"text": "be brief"}]
    assert body["generationConfig"] == {"temperature": 0.0, "maxOutputTokens": 99,
                                        "responseMimeType": "application/json"}
    assert request.extensions["timeout"]["read"] == pytest.approx(7)


@pytest.mark.parametrize("status,error", [(429, RetryableError), (503, RetryableError), (500, RetryableError),
                                          (400, PermanentError), (403, PermanentError)])
def test_http_errors_are_classified_and_the_sdk_does_not_retry_on_its_own(status, error):
    seen = []
    client = _client(lambda r: httpx.Response(status, json={"error": {"code": status, "message": "x",
                                                                      "status": "X"}}), seen)
    with pytest.raises(error):
        client.complete(MESSAGES, json_output=False, max_tokens=10, timeout_s=1)
    assert len(seen) == 1


def test_timeouts_are_retryable_and_an_empty_answer_is_permanent():
    def timeout(request):
        raise httpx.ReadTimeout("slow", request=request)

    with pytest.raises(RetryableError):
        _client(timeout, []).complete(MESSAGES, json_output=False, max_tokens=10, timeout_s=1)
    blocked = {"candidates": [{"finishReason": "SAFETY"}], "usageMetadata": {"promptTokenCount": 3}}
    with pytest.raises(PermanentError):
        _client(lambda r: httpx.Response(200, json=blocked), []).complete(MESSAGES, json_output=False,
                                                                          max_tokens=10, timeout_s=1)


def test_the_namer_on_vertex_retries_a_429_then_parses_the_json_answer():
    answers = [httpx.Response(429, json={"error": {"code": 429, "message": "quota", "status": "RESOURCE_EXHAUSTED"}}),
               httpx.Response(200, json=_gemini_response('{"name": "Rust help", "description": "A. B."}'))]
    seen = []
    config = LLMParams(llm_backend="vertex", llm_model="gemini-2.5-flash", llm_project="my-project",
                       llm_location="europe-west4", backoff_base_s=0.01, pseudonymize="off")
    namer = LLMClusterNamer(config)
    namer._caller = make_caller(config, client=_client(lambda r: answers.pop(0), seen))
    assert namer.name(["rust", "borrow checker"]) == ("Rust help", "A. B.")
    assert "borrow checker" in json.loads(seen[1].content)["contents"][0]["parts"][0]["text"]
    totals = namer.counters.totals
    assert (totals["calls"], totals["requests"], totals["retries"], totals["prompt_tokens"]) == (1, 2, 1, 12)


def test_project_and_location_come_from_options_or_the_environment(monkeypatch):
    monkeypatch.setenv("GOOGLE_CLOUD_PROJECT", "env-project")
    monkeypatch.delenv("GOOGLE_CLOUD_LOCATION", raising=False)
    params = insights_params(InsightsOptions(["--input", "x", "--output", "y", "--llm_backend", "vertex"]))
    config = params.llm.resolved()
    assert (config.llm_project, config.llm_location, config.llm_model, config.pseudonymizes) == \
        ("env-project", "us-central1", "gemini-2.5-flash", True)
    options = InsightsOptions(["--input", "x", "--output", "y", "--llm_backend", "vertex", "--llm_project", "p-1",
                               "--llm_location", "asia-east1", "--pseudonymize", "off"])
    config = insights_params(options).llm.resolved()
    assert (config.llm_project, config.llm_location, config.pseudonymizes) == ("p-1", "asia-east1", False)
    monkeypatch.delenv("GOOGLE_CLOUD_PROJECT")
    params = insights_params(InsightsOptions(["--input", "x", "--output", "y", "--llm_backend", "vertex"]))
    with pytest.raises(ValueError, match="--llm_project"):  # at the job's launch, before its remote preflight call
        preflight(params.llm)
