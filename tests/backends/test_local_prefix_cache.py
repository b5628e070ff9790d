"""The local backend's public-prefix prompt cache (backends/llm/local_client.PublicPrefixCache): which
part of a prompt is public (prompts.public_head), the slot protocol against a fake llama.cpp server
that models its prompt cache, and record independence on the real 0.5B model (bit-identical
log-probabilities whatever ran before; slow, skipped without the model)."""

import http.server
import json
import threading
import time
import urllib.request

import pytest

from backends.llm import local_client, prompts
from backends.llm.client import RetryableError
from backends.llm.config import make_client
from backends.llm.local_client import LocalChatClient, LocalServer, PublicPrefixCache
from tests.backends.test_local_backend import TEST_MODEL, needs_local_model
from tests.support.llm_server import LoopbackServer

RECORDS = ["How do I write unit tests for my Python code?", "How do I write a cover letter for a job?",
           "How do I bake sourdough bread at home?"]


def _every_prompt(record: str) -> list[list[dict]]:
    return [prompts.facet_messages(record), prompts.select_messages(record, 5), prompts.select_messages(record, 12),
            prompts.name_messages([record, "python"]), prompts.propose_messages(record, 8),
            prompts.refine_messages([record, "python"], 40), prompts.judge_messages(record, "other")]


def test_every_prompts_public_head_is_its_instructions_up_to_the_record_and_nothing_of_the_record():
    for messages in _every_prompt("SECRET words of one user"):
        head = prompts.public_head(messages)
        assert head and messages[1]["content"].startswith(head), messages
        assert "SECRET" not in head
        # the record's part starts where the head ends (the refine prompt's is a JSON list)
        assert messages[1]["content"][len(head):].lstrip('["').startswith("SECRET")
    heads = {prompts.public_head(m) for r in RECORDS for m in _every_prompt(r)}
    assert len(heads) == len(_every_prompt("x"))  # one head per prompt kind (and max_keywords), whatever the record
    assert prompts.public_head([{"role": "user", "content": "Hello"}]) is None
    assert prompts.public_head([{"role": "system", "content": "Another system prompt."},
                                *prompts.select_messages("x", 5)[1:]]) is None
    assert prompts.public_head(prompts.select_messages("x", 5)[:1] + [
        {"role": "user", "content": "Below is what a user wrote, but in other words"}]) is None


class _FakeSlotServer(LoopbackServer):
    """llama.cpp's server as the cache sees it: one slot holding the tokens of what it last computed
    (one character = one token here), save/restore/erase, and chat requests that, with cache_prompt,
    reuse the longest common prefix of the slot and their prompt. Logs what each chat request reused.
    GET /slots says the slot is processing for the next `busy_polls` asks (a request a client gave up
    on, still running)."""

    def __init__(self, busy_polls: int = 0):
        self.slot, self.files, self.chats, self.lock = "", {}, [], threading.Lock()
        self.busy_polls, self.events = busy_polls, []

    @staticmethod
    def render(messages):
        return "".join(f"<|{m['role']}|>{m['content']}<|end|>" for m in messages) + "<|assistant|>"

    def handle(self, path, body):
        with self.lock:
            if path == "/apply-template":
                return {"prompt": self.render(body["messages"])}
            self.events.append(path)
            if path == "/completion":
                self.slot = body["prompt"]
                return {"content": "x"}
            if path.startswith("/slots/0?action="):
                action = path.split("=")[1]
                if action == "save":
                    self.files[body["filename"]] = self.slot
                elif action == "restore":
                    if body["filename"] not in self.files:
                        return None  # llama.cpp answers 400: no such file
                    self.slot = self.files[body["filename"]]
                else:
                    self.slot = ""
                return {"id_slot": 0}
            prompt = self.render(body["messages"])
            reused = 0
            if body.get("cache_prompt"):
                while reused < min(len(prompt), len(self.slot)) and prompt[reused] == self.slot[reused]:
                    reused += 1
            self.slot = prompt
        time.sleep(0.002)  # generation: lets other threads' requests interleave if nothing holds them back
        with self.lock:
            self.chats.append({"prompt": prompt, "reused": prompt[:reused]})
        return {"choices": [{"message": {"content": "{}"}}], "usage": {"prompt_tokens": len(prompt)}}

    def _handler(self):
        fake = self

        class Handler(http.server.BaseHTTPRequestHandler):
            def log_message(self, *args):
                pass

            def _reply(self, status, answer):
                payload = json.dumps(answer).encode()
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(payload)))
                self.end_headers()
                self.wfile.write(payload)

            def do_GET(self):
                with fake.lock:
                    busy = fake.busy_polls > 0
                    fake.busy_polls -= busy
                    fake.events.append("busy" if busy else "idle")
                self._reply(200, [{"id": 0, "id_task": 7 if busy else -1, "is_processing": busy}])

            def do_POST(self):
                body = json.loads(self.rfile.read(int(self.headers.get("Content-Length", 0))))
                answer = fake.handle(self.path, body)
                payload = json.dumps(answer if answer is not None else {"error": "failed to open file"}).encode()
                self.send_response(200 if answer is not None else 400)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(payload)))
                self.end_headers()
                self.wfile.write(payload)

        return Handler


def _client_of(fake, monkeypatch) -> LocalChatClient:
    """A LocalChatClient whose LocalServer talks to `fake` (the model process is not started)."""
    server = LocalServer.__new__(LocalServer)
    server.base_url, server.lock = fake.base_url, threading.Lock()
    server.prefix_cache = PublicPrefixCache(server)
    monkeypatch.setattr(local_client, "acquire_server", lambda *args: server)
    return LocalChatClient("unused.gguf")


def test_requests_reuse_their_public_head_only_even_from_many_threads(monkeypatch):
    # Records sharing their first words: a request starting from the previous request's tokens would
    # reuse them (past its head), which the fake server shows.
    records = [f"How do I write unit tests for {thing}?" for thing in ("my Python code", "a Java service",
                                                                       "a shell script", "my Go module")]
    requests = [m for r in records for m in (prompts.select_messages(r, 5), prompts.facet_messages(r))]
    requests += [[{"role": "user", "content": f"{r} Not one of our prompts."}] for r in records]
    errors = []

    def ask_three_times(messages):
        try:
            for _ in range(3):
                client.complete(messages, json_output=False, max_tokens=8, timeout_s=30)
        except Exception as error:  # reported by the assertion below, not lost in the thread
            errors.append(error)

    with _FakeSlotServer() as fake:
        client = _client_of(fake, monkeypatch)
        threads = [threading.Thread(target=ask_three_times, args=(m,)) for m in requests]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
    assert not errors and len(fake.chats) == 3 * len(requests)
    heads = {}
    for messages in requests:
        head = prompts.public_head(messages)
        rendered_head = fake.render([messages[0], {"role": "user", "content": head + "\x00"}]).split("\x00")[0] \
            if head else ""
        heads[fake.render(messages)] = rendered_head
    for chat in fake.chats:
        assert chat["reused"] == heads[chat["prompt"]], "a request reused tokens other than its public head"
    assert client.server.prefix_cache.counts == {"heads_computed": 2, "restored": 24, "erased": 12}


def test_without_the_prefix_cache_requests_reuse_nothing(monkeypatch):
    with _FakeSlotServer() as fake:
        client = _client_of(fake, monkeypatch)
        client.server.prefix_cache = None
        for record in RECORDS:
            client.complete(prompts.select_messages(record, 5), json_output=False, max_tokens=8, timeout_s=30)
    assert [chat["reused"] for chat in fake.chats] == ["", "", ""]


def test_a_head_whose_saved_state_is_gone_is_computed_again_after_one_retryable_failure(monkeypatch):
    messages = prompts.select_messages(RECORDS[0], 5)
    with _FakeSlotServer() as fake:
        client = _client_of(fake, monkeypatch)
        client.complete(messages, json_output=False, max_tokens=8, timeout_s=30)
        fake.files.clear()
        with pytest.raises(RetryableError, match="local server slot: HTTPError"):
            client.complete(messages, json_output=False, max_tokens=8, timeout_s=30)
        client.complete(messages, json_output=False, max_tokens=8, timeout_s=30)
    assert len(fake.chats) == 2 and fake.chats[0] == fake.chats[1] and fake.chats[1]["reused"]
    assert client.server.prefix_cache.counts == {"heads_computed": 2, "restored": 2, "erased": 0}


def test_a_request_waits_for_the_slot_to_be_idle_outside_its_timeout(monkeypatch):
    # The slot is still busy with a request its client gave up on: the next request is not sent until
    # the slot is free, and the wait does not count against that request's timeout.
    monkeypatch.setattr(local_client, "IDLE_POLL_S", 0.01)
    with _FakeSlotServer(busy_polls=3) as fake:
        client = _client_of(fake, monkeypatch)
        client.complete(prompts.select_messages(RECORDS[0], 5), json_output=False, max_tokens=8, timeout_s=30)
    assert fake.events[:4] == ["busy", "busy", "busy", "idle"]  # nothing sent to the slot before it was idle
    assert "/v1/chat/completions" in fake.events and len(fake.chats) == 1


def test_a_slot_that_stays_busy_fails_the_request_as_retryable(monkeypatch):
    monkeypatch.setattr(local_client, "IDLE_POLL_S", 0.01)
    with _FakeSlotServer(busy_polls=10**9) as fake:
        client = _client_of(fake, monkeypatch)
        with pytest.raises(RetryableError, match="slot still busy"):
            client.complete(prompts.select_messages(RECORDS[0], 5), json_output=False, max_tokens=8, timeout_s=0.2)
    assert not fake.chats and set(fake.events) == {"busy"}


def _answer(server: LocalServer, messages: list[dict]) -> tuple:
    """The greedy answer to `messages` with every token's log-probability and its top 5 alternatives'
    (floats compared exactly), and how many prompt tokens came from the cache."""
    with server.exclusive(messages, 300) as reuse:
        data = server.post("/v1/chat/completions", {"messages": messages, "max_tokens": 6, "temperature": 0,
                                                    "logprobs": True, "top_logprobs": 5, "cache_prompt": reuse}, 300)
    tokens = tuple((t["token"], t["logprob"], tuple((a["token"], a["logprob"]) for a in t["top_logprobs"]))
                   for t in data["choices"][0]["logprobs"]["content"])
    return data["choices"][0]["message"]["content"], tokens, data["usage"]["prompt_tokens_details"]["cached_tokens"]


@pytest.fixture(scope="module")
def cached_server():
    held = local_client.acquire_server(local_client.local_model_path(TEST_MODEL), threads=1, slots=1,
                                       prefix_cache=True)
    yield held
    local_client.release_server(held)


@pytest.mark.real_llm
@needs_local_model
def test_a_records_answer_is_bit_identical_whatever_ran_before_it(cached_server):
    target = prompts.select_messages(RECORDS[0], 5)
    first = _answer(cached_server, target)
    # a different record with the same head and first words (its tokens would be reusable past the head)
    _answer(cached_server, prompts.select_messages("How do I write unit tests for my Java code?", 5))
    after_same_head = _answer(cached_server, target)
    _answer(cached_server, prompts.facet_messages("user: How do I write unit tests for my Python code?"))
    after_other_head = _answer(cached_server, target)
    with cached_server.lock:  # a request outside the cache leaves its (private) tokens in the slot
        cached_server.post("/completion", {"prompt": cached_server.post("/apply-template", {"messages": target}, 300)
                                           ["prompt"], "n_predict": 1, "cache_prompt": True}, 300)
    after_private_leftovers = _answer(cached_server, target)
    print("answer:", first[0], "cached prompt tokens:", first[2], "first tokens:", first[1][:2])
    assert first[2] > 80  # the head (system prompt and instructions, ~110 tokens) came from the cache
    assert first == after_same_head == after_other_head == after_private_leftovers


@pytest.mark.real_llm
@needs_local_model
def test_a_records_answer_does_not_depend_on_the_order_heads_were_computed(cached_server):
    target = prompts.name_messages(["python", "unit testing", "debugging"])
    before = cached_server.prefix_cache
    try:
        cached_server.prefix_cache = PublicPrefixCache(cached_server)  # the target's head computed first
        target_first = _answer(cached_server, target)
        cached_server.prefix_cache = PublicPrefixCache(cached_server)  # other heads and records first
        _answer(cached_server, prompts.select_messages(RECORDS[1], 5))
        _answer(cached_server, prompts.facet_messages("user: " + RECORDS[2]))
        target_later = _answer(cached_server, target)
    finally:
        cached_server.prefix_cache = before
    assert target_first[2] > 80 and target_first == target_later


@pytest.mark.real_llm
@needs_local_model
def test_the_keyword_step_on_the_real_model_computes_only_the_records_part_of_each_prompt(cached_server):
    from config.llm import LLMParams
    client = make_client(LLMParams(llm_backend="local", llm_model=TEST_MODEL, llm_threads=1, llm_max_concurrency=1))
    assert client.server is cached_server
    counts = dict(cached_server.prefix_cache.counts)
    processed = cached_server.metrics()["prompt_tokens_total"]
    prompt_tokens = sum(client.complete(prompts.select_messages(r, 5), json_output=prompts.keywords_schema(5),
                                        max_tokens=4, timeout_s=300).prompt_tokens for r in RECORDS)
    processed = cached_server.metrics()["prompt_tokens_total"] - processed
    client.close()
    assert cached_server.prefix_cache.counts["restored"] == counts["restored"] + len(RECORDS)
    heads = cached_server.prefix_cache.counts["heads_computed"] - counts["heads_computed"]
    print(f"{prompt_tokens} prompt tokens, {processed} computed ({heads} heads computed)")
    assert processed <= prompt_tokens - len(RECORDS) * 80 + heads * 120


def _slot_busy(server: LocalServer) -> bool:
    with urllib.request.urlopen(server.base_url + "/slots", timeout=30) as response:
        return any(slot["is_processing"] for slot in json.loads(response.read()))


@pytest.mark.real_llm
@needs_local_model
def test_a_request_that_timed_out_does_not_hold_the_slot_for_the_next_record(cached_server):
    # llama.cpp goes on with a request whose client gave up until it notices the closed connection
    # (measured: a long prompt held the slot ~23 s after a 1 s timeout); the next record's request
    # waits for the idle slot outside its own timeout, and gets the answer it gets alone.
    client = LocalChatClient(local_client.local_model_path(TEST_MODEL), threads=1)
    assert client.server is cached_server
    target = prompts.select_messages(RECORDS[2], 5)
    alone = _answer(cached_server, target)
    client.complete(prompts.facet_messages("user: hi"), json_output=False, max_tokens=1, timeout_s=300)  # its head
    long = prompts.facet_messages("User: " + "How do I mock a database in Python unit tests? " * 80)
    with pytest.raises(RetryableError, match="timeout"):
        client.complete(long, json_output=False, max_tokens=128, timeout_s=0.5)
    busy = _slot_busy(cached_server)
    started = time.monotonic()
    after = _answer(cached_server, target)
    print(f"slot busy after the timeout: {busy}; the next request answered {time.monotonic() - started:.1f} s later")
    client.close()
    assert after == alone and not _slot_busy(cached_server)


def test_the_prefix_cache_refuses_several_slots_whose_requests_it_could_not_place():
    with pytest.raises(ValueError, match="restores one slot; 2 slots need prefix_cache=False"):
        LocalServer("never-loaded.gguf", threads=1, slots=2)
