"""LLM backends without a model: parsing and repair, retries/backoff, the cache, the OpenAI-compatible
client against a loopback server, the steps' failures (records dead-lettered, names falling back), and
the keyword filter with a misbehaving server."""

import json
import pickle
import random

import apache_beam as beam
import numpy as np
import pytest
from apache_beam.testing.util import assert_that, equal_to

from backends.llm import parsing
from backends.llm.cache import ResponseCache
from backends.llm.client import ChatClient, Completion, PermanentError, RetryableError
from backends.llm.config import make_caller, preflight_remote
from backends.llm.fanout import Caller, CallSpec, RetryPolicy
from backends.llm.keyword_mapping import EmbeddingKeywordMapper, ExactKeywordMapper
from backends.llm.openai_client import OpenAIChatClient, chat_completions_url
from backends.llm.parsing import MalformedOutput
from backends.llm.steps import (
    LLMCallFailed,
    LLMClusterNamer,
    LLMFacetExtractor,
    LLMKeywordProposer,
    LLMKeywordSelector,
    LLMKeywordSetRefiner,
)
from config.embedding import Encoder
from config.llm import LLMParams
from core.records import Conversation, ConversationBlock, Message
from tests.conftest import local_pipeline
from tests.support.llm_server import FakeChatServer
from transforms.keyword_histograms import SelectKeywords
from transforms.record_isolation import run_isolated

K = ("python", "rust", "machine learning", "cooking", "travel")


# --- parsing --------------------------------------------------------------------------------------

def test_facet_summary_is_read_from_json_even_inside_a_fence_or_prose():
    assert parsing.parse_facets('{"Summary": "Asks  about Rust.", "Task": "x"}') == ("Asks about Rust.", False)
    assert parsing.parse_facets('```json\n{"summary": "Asks about Rust."}\n```') == ("Asks about Rust.", True)
    assert parsing.parse_facets("Here you go: {'Summary': 'Asks about Rust.'} Hope it helps")[0] == "Asks about Rust."
    for bad in ("", "no json here", '{"Task": "x"}', '["Summary"]', '{"Summary": 3}'):
        with pytest.raises(MalformedOutput):
            parsing.parse_facets(bad)


def test_topic_keywords_are_distinct_lower_case_and_capped():
    assert parsing.parse_topic_keywords('{"keywords": ["Python", "rust"]}', 5) == (["python", "rust"], False)
    assert parsing.parse_topic_keywords('{"keywords": []}', 5) == ([], False)
    assert parsing.parse_topic_keywords("['NA']", 5) == ([], False)  # a bare list is read too
    words, repaired = parsing.parse_topic_keywords(
        'Sure: {"keywords": ["Python", "python", "Machine  Learning", "cooking", "travel", "rust"]}', 3)
    assert words == ["python", "machine learning", "cooking"] and repaired
    for bad in ("python, rust", '{"keywords": [1, 2]}', '{"words": ["a"]}', ""):
        with pytest.raises(MalformedOutput):
            parsing.parse_topic_keywords(bad, 5)


def test_name_is_read_from_json_cut_to_ten_words_and_two_sentences():
    (name, description), repaired = parsing.parse_name('{"name": " Rust help ", "description": "Users ask. They learn."}')
    assert (name, description, repaired) == ("Rust help", "Users ask. They learn.", False)
    (name, description), repaired = parsing.parse_name(json.dumps(
        {"name": " ".join(["w"] * 14), "description": "One. Two! Three? Four."}))
    assert len(name.split()) == 10 and description == "One. Two!" and repaired
    for bad in ('{"name": "only a name"}', '{"name": "", "description": "d"}', "<topic>x</topic>"):
        with pytest.raises(MalformedOutput):
            parsing.parse_name(bad)


def test_exact_mapper_keeps_words_of_k_up_to_case_and_spacing():
    mapper = ExactKeywordMapper(K)
    assert mapper.map([["Python", "golang", "machine  learning", "python"], []], 5) == \
        [["python", "machine learning"], []]
    assert mapper.map([["rust", "python", "travel"]], 2) == [["rust", "python"]]


def test_embedding_mapper_maps_each_word_to_its_nearest_keyword_above_the_floor(monkeypatch):
    from backends import embedding
    axes = {"python": 0, "rust": 1, "machine learning": 2, "cooking": 3, "travel": 4,
            "deep learning": 2, "baking bread": 3, "unrelated": 5}

    def embed(name, texts, backend="torch", device="cpu"):  # one axis per topic; "baking bread" sits between two
        vectors = np.zeros((len(texts), 6), dtype=np.float32)
        for i, text in enumerate(texts):
            vectors[i, axes[text]] = 1.0
            if text == "baking bread":
                vectors[i, 4] = 0.5
        return vectors / np.linalg.norm(vectors, axis=1, keepdims=True)

    monkeypatch.setattr(embedding, "embed_texts", embed)
    mapper = EmbeddingKeywordMapper(K, Encoder("fake"), min_similarity=0.8)
    assert mapper.map([["deep learning", "Rust", "unrelated", "baking bread"]], 5) == \
        [["machine learning", "rust", "cooking"]]
    assert EmbeddingKeywordMapper(K, Encoder("fake"), min_similarity=0.95).map([["baking bread"]], 5) == [[]]


def test_refinement_and_proposals_are_normalised_lists():
    assert parsing.parse_refinement('{"remove": ["Rust"], "add": ["Go", "go"]}') == ((["rust"], ["go"]), False)
    assert parsing.parse_proposed_keywords("['Web  Dev', 'NA', 'web dev', 'css']", 5) == (["web dev", "css"], False)
    with pytest.raises(MalformedOutput):
        parsing.parse_refinement('{"remove": "rust"}')


def test_answers_failing_their_model_raise_malformed_output_and_repairs_are_marked():
    # pydantic's ValidationError never reaches the fan-out, which counts MalformedOutput only.
    for parse, bad in ((parsing.parse_facets, "{'summary': b'bytes'}"), (parsing.parse_name, '{"name": ["x"], '
                       '"description": "d"}'), (parsing.parse_judgement, "{'rating_a': '²', 'rating_b': 2, "
                       "'preferred': 'A'}"), (parsing.parse_refinement, "{'add': ('tuple',)}")):
        with pytest.raises(MalformedOutput):
            parse(bad)
    assert parsing.parse_facets(json.dumps({"summary": "x " * 400})) == ("x " * 250, True)  # cut at 500 chars
    assert parsing.parse_requests("{'requests': ('One?', 'one?')}", 3) == (["One?", "one?"], False)


def test_sent_schemas_come_from_the_answer_models_and_suit_openai_strict_mode():
    from backends.llm import prompts
    # The exact content: a schema is part of every request's cache key (fanout.Caller.key).
    assert prompts.FACET_SCHEMA == {"type": "object", "required": ["summary"], "additionalProperties": False,
                                    "properties": {"summary": {"type": "string", "minLength": 1, "maxLength": 300}}}
    assert prompts.keywords_schema(5) == {
        "type": "object", "required": ["keywords"], "additionalProperties": False,
        "properties": {"keywords": {"type": "array", "maxItems": 5,
                                    "items": {"type": "string", "minLength": 1, "maxLength": 40}}}}
    assert prompts.exemplars_schema(3)["properties"]["requests"] == {
        "type": "array", "minItems": 3, "maxItems": 3, "items": {"type": "string", "pattern": parsing.REQUEST_PATTERN}}
    for schema in (prompts.FACET_SCHEMA, prompts.NAME_SCHEMA, prompts.keywords_schema(5), prompts.exemplars_schema(3)):
        assert schema["additionalProperties"] is False and list(schema["required"]) == list(schema["properties"])
        assert "title" not in json.dumps(schema) and "description" not in schema  # no names or docstrings sent
    assert list(prompts.NAME_SCHEMA["properties"]) == ["name", "description"]  # llama.cpp's grammar keeps this order
    assert prompts.keywords_schema(5) is not prompts.keywords_schema(5)  # a fresh copy per call


# --- fan-out: retries, backoff, cache ---------------------------------------------------------------

class _ScriptedClient(ChatClient):
    """Answers from a script of exceptions / texts, one per request."""

    def __init__(self, script):
        self.script = list(script)
        self.attempts = []

    def complete(self, messages, *, json_output, max_tokens, timeout_s, attempt=0):
        self.attempts.append(attempt)
        step = self.script.pop(0)
        if isinstance(step, Exception):
            raise step
        return Completion(step, 10, 2)


def _spec(text="hello"):
    return CallSpec([{"role": "user", "content": text}], parsing.parse_facets, json_output=True)


def _caller(client, max_retries=3, cache=None, sleeps=None):
    return Caller(client, backend="openai", model="m", timeout_s=1, max_concurrency=2, cache=cache,
                  policy=RetryPolicy(max_retries=max_retries, backoff_base_s=0.5, backoff_max_s=4),
                  sleep=(sleeps.append if sleeps is not None else lambda s: None))


def test_retryable_errors_are_retried_with_growing_jittered_backoff_then_succeed():
    sleeps = []
    client = _ScriptedClient([RetryableError("429"), RetryableError("500"), RetryableError("timeout"),
                              '{"Summary": "ok"}'])
    result = _caller(client, sleeps=sleeps).call(_spec())
    assert result.ok and result.value == "ok" and result.requests == 4 and result.retries == 3
    assert client.attempts == [0, 1, 2, 3]
    assert (result.prompt_tokens, result.completion_tokens) == (10, 2)
    # each wait is at least half its ceiling: retries wait, they never fire back to back
    assert len(sleeps) == 3 and all(cap / 2 <= s <= cap for s, cap in zip(sleeps, (0.5, 1.0, 2.0)))


def test_backoff_is_equal_jitter_capped_and_honours_retry_after():
    policy, rng = RetryPolicy(backoff_base_s=0.5, backoff_max_s=4), random.Random(1)
    delays = [policy.delay(6, None, rng) for _ in range(2000)]
    assert 2 <= min(delays) and max(delays) <= 4 and np.mean(delays) == pytest.approx(3.0, rel=0.05)  # uniform on [2, 4]
    assert policy.delay(1, 3.0, rng) >= 3.0 and policy.delay(1, 100.0, rng) <= 4


def test_the_default_retries_wait_long_and_bounded():
    policy, rng = RetryPolicy(), random.Random(2)
    totals = [sum(policy.delay(n, None, rng) for n in range(1, policy.max_retries + 1)) for _ in range(500)]
    assert 30 <= min(totals) and max(totals) <= 60  # a record is given up only after 30-60 s of waiting
    default = LLMParams(llm_backend="openai", llm_model="m", llm_base_url="http://127.0.0.1:9/v1")
    assert make_caller(default, _ScriptedClient([])).policy == policy


def test_exhausted_retries_permanent_errors_and_malformed_answers_fail_without_raising():
    exhausted = _caller(_ScriptedClient([RetryableError("429")] * 3), max_retries=2).call(_spec())
    assert not exhausted.ok and exhausted.error == "retries_exhausted" and exhausted.requests == 3
    client = _ScriptedClient([PermanentError("400")])
    permanent = _caller(client).call(_spec())
    assert not permanent.ok and permanent.error == "permanent_error" and client.attempts == [0]
    malformed = _caller(_ScriptedClient(["not json"])).call(_spec())
    assert not malformed.ok and malformed.error == "malformed_output" and malformed.prompt_tokens == 10
    broken = _caller(_ScriptedClient([KeyError("bug")])).call(_spec())
    assert not broken.ok and broken.error == "client_error"


def test_cache_answers_a_repeat_call_without_a_request_and_never_stores_a_bad_answer(tmp_path):
    cache = ResponseCache(str(tmp_path / "cache"))
    client = _ScriptedClient(["garbage", '{"Summary": "first"}'])
    assert not _caller(client, cache=cache).call(_spec()).ok
    assert _caller(client, cache=cache).call(_spec()).value == "first"
    again = _caller(_ScriptedClient([]), cache=cache).call(_spec())  # an empty script: any request would fail
    assert again.ok and again.cache_hit and again.value == "first" and again.requests == 0
    other = _caller(_ScriptedClient(['{"Summary": "second"}']), cache=cache).call(_spec("other text"))
    assert other.value == "second" and not other.cache_hit
    assert len(list((tmp_path / "cache").rglob("*.json"))) == 2


def test_call_many_keeps_order_under_concurrency():
    class Echo(ChatClient):
        def complete(self, messages, *, json_output, max_tokens, timeout_s, attempt=0):
            return Completion(json.dumps({"Summary": messages[0]["content"]}))

    results = _caller(Echo()).call_many([_spec(str(i)) for i in range(50)])
    assert [r.value for r in results] == [str(i) for i in range(50)]


def test_every_chat_client_takes_the_arguments_the_retries_pass():
    # fanout.Caller passes attempt=; the interface declares it and every backend's client accepts the
    # interface's arguments, with the same defaults
    import inspect

    from backends.llm.local_client import LocalChatClient
    from backends.llm.vertex_client import VertexChatClient

    def arguments(method):
        return [(p.name, p.kind, p.default) for p in list(inspect.signature(method).parameters.values())[1:]]

    interface = arguments(ChatClient.complete)
    assert ("attempt", inspect.Parameter.KEYWORD_ONLY, 0) in interface
    for client in (OpenAIChatClient, VertexChatClient, LocalChatClient):
        assert arguments(client.complete) == interface, client.__name__
    client = _ScriptedClient([RetryableError("429"), '{"Summary": "ok"}'])
    assert _caller(client).call(_spec()).ok and client.attempts == [0, 1]


# --- the OpenAI-compatible client against a loopback server -----------------------------------------

def test_base_url_forms():
    assert chat_completions_url("http://h:1") == "http://h:1/v1/chat/completions"
    assert chat_completions_url("http://h:1/v1/") == "http://h:1/v1/chat/completions"
    assert chat_completions_url("http://h:1/v1/chat/completions") == "http://h:1/v1/chat/completions"


def test_openai_client_sends_a_chat_completions_request_and_reads_text_and_usage():
    with FakeChatServer() as server:
        client = OpenAIChatClient(server.base_url, "qwen", api_key="sk-test")
        messages = [{"role": "system", "content": "s"},
                    {"role": "user", "content": "<conversation>\nUser: rust lifetimes\n</conversation>"}]
        completion = client.complete(messages, json_output=True, max_tokens=77, timeout_s=5, attempt=2)
        client.complete(messages, json_output={"type": "object"}, max_tokens=7, timeout_s=5)
    request = server.requests[0]
    assert request["path"] == "/v1/chat/completions"
    assert request["body"]["model"] == "qwen" and request["body"]["messages"] == messages
    assert request["body"]["max_tokens"] == 77 and request["body"]["response_format"] == {"type": "json_object"}
    assert request["headers"]["Authorization"] == "Bearer sk-test" and request["headers"]["X-Urania-Attempt"] == "2"
    assert server.requests[1]["body"]["response_format"] == {
        "type": "json_schema", "json_schema": {"name": "answer", "strict": True, "schema": {"type": "object"}}}
    assert json.loads(completion.text)["summary"].startswith("The user asks: rust lifetimes")
    assert completion.prompt_tokens > 0 and completion.completion_tokens > 0


@pytest.mark.parametrize("fault,error", [("429", RetryableError), ("500", RetryableError),
                                         ("hang", RetryableError), ("garbage", None)])
def test_openai_client_classifies_faults(fault, error, monkeypatch):
    with FakeChatServer(hang_s=1.0) as server:
        monkeypatch.setattr(server, "fault_for", lambda body, attempt: fault)
        client = OpenAIChatClient(server.base_url, "m", api_key="")
        if error is None:  # a readable envelope with a useless answer: the parser's job, not the client's
            assert "format" in client.complete([{"role": "user", "content": "x"}], json_output=False,
                                               max_tokens=5, timeout_s=0.3).text
        else:
            with pytest.raises(error):
                client.complete([{"role": "user", "content": "x"}], json_output=False, max_tokens=5, timeout_s=0.3)


def test_openai_client_treats_an_unreadable_body_and_a_4xx_as_permanent(monkeypatch):
    from backends.llm import openai_client
    with pytest.raises(PermanentError):
        openai_client.parse_response(b"<html>oops</html>")
    with pytest.raises(PermanentError):
        openai_client.parse_response(b'{"choices": [{"message": {"content": null}}]}')
    with FakeChatServer() as server:
        monkeypatch.setattr(server, "fault_for", lambda body, attempt: "400")
        with pytest.raises(PermanentError):
            OpenAIChatClient(server.base_url, "m", api_key="").complete(
                [{"role": "user", "content": "x"}], json_output=False, max_tokens=5, timeout_s=2)


# --- the steps --------------------------------------------------------------------------------------

def _config(server, **kw):
    return LLMParams(llm_backend="openai", llm_model="m", llm_base_url=server.base_url, llm_max_concurrency=4,
                     llm_timeout_s=0.5, llm_max_retries=1, pseudonymize="off", backoff_base_s=0.01, **kw)


def _conversation(i, text):
    return Conversation(f"c{i}", f"u{i}", None, (Message("user", text), Message("assistant", "a reply")))


def test_facet_extractor_returns_summaries_and_dead_letters_a_failed_conversation(monkeypatch):
    with FakeChatServer() as server:
        monkeypatch.setattr(server, "fault_for", lambda body, attempt: "500" if b"broken" in body else None)
        extractor = LLMFacetExtractor(_config(server))
        conversations = [_conversation(0, "how do rust lifetimes work"), _conversation(1, "broken request about cooking")]
        # the batch raises; record_isolation then runs each conversation alone, answered from the batch's results
        outcomes = run_isolated(extractor.extract_batch, conversations)
        assert len(server.log) == 3  # the rerun sent nothing
        with pytest.raises(LLMCallFailed, match="1 of 2 facets call.* failed: retries_exhausted"):
            extractor.extract_batch(conversations)
    assert outcomes[0] == ("The user asks: how do rust lifetimes work", None)
    assert outcomes[1][0] is None and isinstance(outcomes[1][1], LLMCallFailed)
    assert "retries_exhausted" in str(outcomes[1][1])
    totals = extractor.counters.totals
    assert (totals["calls"], totals["requests"], totals["retries"], totals["failures"], totals["fallbacks"]) == \
        (4, 6, 2, 2, 0)  # two batches of two calls: no fallback ever


def test_keyword_selector_fails_the_failed_rows_only_and_never_answers_them_offline(monkeypatch):
    with FakeChatServer() as server:
        monkeypatch.setattr(server, "fault_for", lambda body, attempt: "garbage" if b"broken" in body else None)
        selector = LLMKeywordSelector(_config(server), K, mapper=ExactKeywordMapper(K))
        facets = ["I love python and rust", "broken", "nothing relevant"]
        outcomes = run_isolated(lambda rows: selector.select([facets[i] for i in rows], np.zeros((len(rows), 2)), 5),
                                [0, 1, 2])
        assert len(server.log) == 3
    assert outcomes[0] == (["python", "rust"], None) and outcomes[2] == ([], None)
    assert outcomes[1][0] is None and "malformed_output" in str(outcomes[1][1])
    assert selector.counters.totals["fallbacks"] == 0


def test_a_misbehaving_server_cannot_put_a_word_outside_k_into_the_pairs():
    with FakeChatServer(misbehave=True) as server:
        selector = LLMKeywordSelector(_config(server), K, mapper=ExactKeywordMapper(K))
        block = ConversationBlock(["c0", "c1"], ["u0", "u1"], np.ones(2), ["python and rust", "cooking travel"],
                                  np.zeros((2, 4), dtype=np.float32), cluster_ids=np.array([0, 1]))
        with local_pipeline() as pipeline:
            pairs = pipeline | beam.Create([block]) | SelectKeywords(selector, K, max_keywords=5)
            assert_that(pairs.output, equal_to([("u0", (0, "python")), ("u0", (0, "rust")),
                                                ("u1", (1, "cooking")), ("u1", (1, "travel"))]), label="pairs")
        assert len(server.log) == 2


def test_namer_uses_the_model_and_calls_nothing_for_an_empty_topic():
    with FakeChatServer() as server:
        namer = LLMClusterNamer(_config(server))
        assert namer.name(["rust", "python"]) == ("Questions about rust and python",
                                                  "Users ask about rust, python. They want practical help.")
        assert namer.name([])[0] == "Unlabelled topic"
        assert len(server.log) == 1


def test_proposer_and_refiner_validate_what_the_model_returns(monkeypatch):
    with FakeChatServer() as server:
        answers = {"propose": "['Rust Ownership', 'NA', 'rust ownership', 'borrow checker']",
                   "refine": '{"remove": ["cooking", "not in list"], "add": ["golang", "rust"]}'}
        import tests.support.llm_server as fake
        monkeypatch.setattr(fake, "derived_answer",
                            lambda prompt, misbehave=False: answers["propose" if "Propose" in prompt else "refine"])
        proposer = LLMKeywordProposer(_config(server))
        assert proposer.propose(["a summary"], 5) == [["rust ownership", "borrow checker"]]
        refiner = LLMKeywordSetRefiner(_config(server))
        assert refiner.refine(list(K), 5) == (["cooking"], ["golang"])
        monkeypatch.setattr(server, "fault_for", lambda body, attempt: "500")
        with pytest.raises(LLMCallFailed):  # dead-lettered by ProposeKeywords, not an empty proposal
            proposer.propose(["a summary"], 5)
        assert refiner.refine(list(K), 5) == ([], [])


def test_llm_steps_pickle_without_their_clients():
    with FakeChatServer() as server:
        namer = LLMClusterNamer(_config(server))
        namer.name(["rust"])
        copy = pickle.loads(pickle.dumps(namer))
        assert copy._caller is None and copy.config == namer.config
        assert copy.name(["rust"])[0] == "Questions about rust"


@pytest.mark.parametrize("answer", ["{{{}}}", "[" * 100000 + "]" * 100000, '{"summary": ' + "[" * 100000])
def test_answers_that_break_the_literal_readers_are_malformed_not_crashes(answer):
    from backends.llm.parsing import parse_facets, parse_name, parse_topic_keywords
    for parse in (parse_facets, parse_name, lambda text: parse_topic_keywords(text, 3)):
        with pytest.raises(MalformedOutput):
            parse(answer)


def test_the_remote_preflight_is_one_caller_call_with_the_configs_retry_policy_and_no_cache(monkeypatch):
    calls = []
    original_call = Caller.call

    def counting(self, spec):
        calls.append((self, spec))
        return original_call(self, spec)

    monkeypatch.setattr(Caller, "call", counting)
    client, sleeps = _ScriptedClient([RetryableError("429"), RetryableError("500"), "OK"]), []
    config = LLMParams(llm_backend="openai", llm_model="m", llm_base_url="http://127.0.0.1:9/v1", llm_max_retries=3,
                       llm_timeout_s=5.0, llm_cache="/never/written", backoff_base_s=0.5)
    preflight_remote(config, client=client, sleep=sleeps.append)
    assert len(calls) == 1 and client.attempts == [0, 1, 2] and len(sleeps) == 2
    caller, spec = calls[0]
    assert caller.policy == RetryPolicy(max_retries=3, backoff_base_s=0.5) and caller.cache is None
    assert caller.timeout_s == 5.0 and spec.json_output is False and spec.max_tokens == 256
    assert all(cap / 2 <= s <= cap for s, cap in zip(sleeps, (0.5, 1.0)))  # the policy's waits
