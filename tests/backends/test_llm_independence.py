"""A record's model answer depends on that record only (docs/privacy.md, "Each record is processed
independently"): the facet prompt is cut before it is pseudonymized, so one huge message costs what
the prompt uses; a call that fails is retried with long waits and, if it still fails, its record is
dead-lettered, never answered by the offline step, and the other records get what they get without
it; and whether a step uses the model is decided for the whole run (--llm_steps), not per record."""

import re

import apache_beam as beam
import numpy as np
import pytest
from apache_beam.testing.util import assert_that, equal_to, is_empty

from backends import factory
from backends.llm.fanout import RetryPolicy
from backends.llm.keyword_mapping import ExactKeywordMapper
from backends.llm.steps import (
    MAX_CONVERSATION_CHARS,
    PSEUDONYMIZE_MARGIN_CHARS,
    LLMCallFailed,
    LLMFacetExtractor,
    LLMKeywordProposer,
    LLMKeywordSelector,
    conversation_prompt_text,
)
from backends.offline import UserTurnsFacetExtractor
from config.embedding import Encoder
from config.llm import LLMParams
from core.records import Conversation, ConversationBlock, DeadLetter, Message, WeightedConversation
from tests.conftest import assert_together, checked, local_pipeline
from tests.support.llm_server import FakeChatServer
from transforms.extract_facets import ExtractFacets
from transforms.keyword_histograms import SelectKeywords

K = ("python", "rust", "cooking", "travel", "sourdough")


class _RecordingPseudonymizer:
    """Typed pseudonyms for a fixed list of names, numbered by first occurrence across the texts of one
    call (as the real one does within a conversation); remembers every text it was given."""

    NAMES = re.compile(r"\b(?:Jane Doe|Advika Joly|Sam Ito)\b")

    def __init__(self):
        self.calls: list[list[str]] = []

    def pseudonymize_texts(self, texts):
        self.calls.append(list(texts))
        numbers: dict[str, int] = {}

        def replace(match):
            return f"<PERSON_{numbers.setdefault(match.group(0), len(numbers) + 1)}>"
        return [self.NAMES.sub(replace, text) for text in texts]


def _extractor(pseudonymizer=None, **config):
    """The facet step of a pseudonymizing run, with `pseudonymizer` standing for the run's (None: the text as cut)."""
    extractor = LLMFacetExtractor(LLMParams(llm_backend="openai", llm_model="m", llm_base_url="http://127.0.0.1:9/v1",
                                            **config), pseudonymizer=lambda params: pseudonymizer)
    extractor._pseudonymizer = pseudonymizer
    return extractor


def test_the_steps_on_conversation_text_get_the_pii_guard_from_the_factory_and_refuse_to_run_without_it(monkeypatch):
    """backends/llm/ imports nothing of backends/pii/: backends.factory hands the steps whose prompts carry
    conversation text the pseudonymizer, built on the worker; such a step built without it on a pseudonymizing
    run fails at construction rather than send the text as it is."""
    import pickle

    from backends.pii import pseudonymize
    params = LLMParams(llm_backend="openai", llm_model="m", llm_base_url="http://127.0.0.1:9/v1").resolved()
    assert params.pseudonymizes
    for build in (lambda: LLMFacetExtractor(params), lambda: LLMKeywordProposer(params),
                  lambda: LLMKeywordSelector(params, K, mapper=ExactKeywordMapper(K))):
        with pytest.raises(ValueError, match="needs the pseudonymizer"):
            build()
    guard = _RecordingPseudonymizer()
    monkeypatch.setattr(pseudonymize, "shared_pseudonymizer",
                        lambda pseudonyms, judge: guard if (pseudonyms, judge) == ("typed", None) else None)
    steps = [factory.make_facet_extractor(1000, params), factory.make_keyword_proposer(params),
             factory.make_keyword_selector(K, Encoder(), 0.5, params)]
    assert [type(step) for step in steps] == [LLMFacetExtractor, LLMKeywordProposer, LLMKeywordSelector]
    for step in steps:
        step = pickle.loads(pickle.dumps(step))  # as a worker gets it
        step._setup_llm()
        assert step._pseudonymizer is guard
    selector = steps[2]
    selector._setup_llm()
    assert selector._private(["Jane Doe asks about rust"]) == ["<PERSON_1> asks about rust"]


def _prompt_before_the_cut_came_first(conversation, pseudonymizer):
    """What the facet prompt's conversation text was when whole messages were pseudonymized, then cut."""
    messages = [m for m in conversation.messages if m.role in ("user", "assistant") and m.content.strip()]
    contents = pseudonymizer.pseudonymize_texts([m.content for m in messages])
    return conversation_prompt_text([(m.role, c) for m, c in zip(messages, contents)])


def _conversation_text(spec):
    return spec.messages[-1]["content"].split("<conversation>\n", 1)[1].rsplit("\n</conversation>", 1)[0]


def test_the_pseudonymizer_sees_only_what_the_prompt_uses_of_a_huge_message():
    pseudonymizer = _RecordingPseudonymizer()
    huge = "Dear Jane Doe, my colleague Advika Joly asks about sourdough. " * 20_000  # 1.26 million characters
    conversation = Conversation("c", "u", None, (Message("user", huge), Message("assistant", "A reply to Jane Doe."),
                                                 Message("user", "Thanks, Sam Ito here.")))
    spec = _extractor(pseudonymizer)._spec(conversation)
    (texts,) = pseudonymizer.calls  # one call: the turns together, so pseudonyms agree across them
    budget = MAX_CONVERSATION_CHARS + PSEUDONYMIZE_MARGIN_CHARS
    assert sum(len(t) for t in texts) <= budget and len(texts) == 1  # the later turns are past the cut
    text = _conversation_text(spec)
    assert len(text) == MAX_CONVERSATION_CHARS and "Jane Doe" not in text and "Advika" not in text
    assert text.startswith("User: Dear <PERSON_1>, my colleague <PERSON_2> asks")
    assert text == _prompt_before_the_cut_came_first(conversation, _RecordingPseudonymizer())


@pytest.mark.parametrize("turns", [
    [("user", "Hi, I'm Jane Doe. How do I bake sourdough?"), ("assistant", "Hello Jane Doe! Start with..."),
     ("user", "My friend Sam Ito says to use rye. Jane Doe again.")],
    [("user", "  padded question from Advika Joly \n"), ("system", "ignored"), ("assistant", "   "),
     ("user", "x" * 5980 + " Jane Doe")],  # a name across the prompt's cut
    [("user", "a" * 6000), ("assistant", "Sam Ito")],
    [("user", "q" * 5990), ("assistant", "Sam Ito answers")],  # the cut falls in the second turn's label
])
def test_the_prompt_is_the_same_as_when_whole_messages_were_pseudonymized(turns):
    conversation = Conversation("c", "u", None, tuple(Message(role, content) for role, content in turns))
    pseudonymizer = _RecordingPseudonymizer()
    text = _conversation_text(_extractor(pseudonymizer)._spec(conversation))
    assert text == _prompt_before_the_cut_came_first(conversation, _RecordingPseudonymizer())
    assert all(len(t) <= MAX_CONVERSATION_CHARS + PSEUDONYMIZE_MARGIN_CHARS for t in pseudonymizer.calls[0])
    # without pseudonymization, too
    assert _conversation_text(_extractor(None)._spec(conversation)) == \
        conversation_prompt_text([(r, c) for r, c in turns if r in ("user", "assistant") and c.strip()])


@pytest.mark.real_model
def test_the_real_pseudonymizer_gives_the_same_prompts_and_a_huge_message_costs_what_the_prompt_uses():
    import time

    from backends.pii.pseudonymize import shared_pseudonymizer
    pseudonymizer = shared_pseudonymizer()
    short = Conversation("c", "u", None, (
        Message("user", "Dear Dr. Rossi, I'm Daniel Okafor (d.okafor@brightmail.com, 415-555-0198). "
                        "My landlord Mike Tran keeps my deposit. What can I do?"),
        Message("assistant", "Hi Daniel, you can write to Mike Tran first."),
        Message("user", "Thanks. Sofia Rossi, my wife, asks too.")))
    assert _conversation_text(_extractor(pseudonymizer)._spec(short)) == \
        _prompt_before_the_cut_came_first(short, pseudonymizer)
    huge = Conversation("c", "u", None, (Message("user", "I'm Daniel Okafor, about my SQL join. " * 5_000),))
    started = time.monotonic()
    text = _conversation_text(_extractor(pseudonymizer)._spec(huge))  # 190,000 characters
    seconds = time.monotonic() - started
    print(f"a 190,000-character message: {seconds:.2f} s")
    assert "Okafor" not in text and len(text) <= MAX_CONVERSATION_CHARS and seconds < 20


class _AddressPseudonymizer(_RecordingPseudonymizer):
    """Also replaces URLs and whole e-mail addresses (as the real one does), so that the text shrinks."""

    ADDRESSES = re.compile(r"https?://\S+|[\w.]+@[\w-]+\.[a-z]{2,}")

    def pseudonymize_texts(self, texts):
        numbers: dict[str, int] = {}

        def replace(match):
            kind = "URL" if match.group(0).startswith("http") else "EMAIL_ADDRESS"
            return f"<{kind}_{numbers.setdefault(match.group(0), len(numbers) + 1)}>"
        return [self.ADDRESSES.sub(replace, text) for text in super().pseudonymize_texts(texts)]


def _an_address_across_the_cut(turns_before=()):
    """A conversation whose last user message has a 330-character URL early and an e-mail address
    across the first cut (MAX_CONVERSATION_CHARS + PSEUDONYMIZE_MARGIN_CHARS), with numbered words
    between (each occurs once), and the numbered words' raw text in the margin before that cut."""
    url = "https://docs.example.com/" + "a" * 305
    head = f"I read {url} and then I asked about sourdough."
    used = sum(len(f"{role.capitalize()}: ") + len(content) + 1 for role, content in turns_before)
    body_cut = MAX_CONVERSATION_CHARS + PSEUDONYMIZE_MARGIN_CHARS - used - len("User: ")
    e_mail = "john.smith@gmail.com"
    tail = " please mail " + e_mail + " about it, thanks."
    words, i = [], 0
    while len(head) + len(" ".join(words)) + len(" please mail john.smith@gma") < body_cut:
        words.append(f"w{i}")
        i += 1
    body = head + " " + " ".join(words)
    body = body[:body_cut - len(" please mail john.smith@gma")] + tail
    assert body[:body_cut].endswith("john.smith@gma")
    margin = body[body_cut - PSEUDONYMIZE_MARGIN_CHARS:body_cut]
    turns = [*turns_before, ("user", body)]
    return Conversation("c", "u", None, tuple(Message(r, c) for r, c in turns)), margin


@pytest.mark.parametrize("turns_before", [(), (("user", "Hi"), ("assistant", "Hello, what can I do?"))])
def test_no_raw_text_from_the_margin_before_the_cut_reaches_the_prompt(turns_before):
    conversation, margin = _an_address_across_the_cut(turns_before)
    text = _conversation_text(_extractor(_AddressPseudonymizer())._spec(conversation))
    assert "<URL_1>" in text and "sourdough" in text
    # the URL's replacement shortened the text by more than the margin: the prompt's own cut does not
    # fall in the raw tail, yet nothing of it, nor of the e-mail address it cut in two, is sent
    assert len(text) < MAX_CONVERSATION_CHARS - PSEUDONYMIZE_MARGIN_CHARS
    for fragment in ("john", "smith", "@gma", "mail"):
        assert fragment not in text
    margin_words = set(re.findall(r"\bw\d+\b", margin))
    assert margin_words and not margin_words & set(re.findall(r"\bw\d+\b", text))
    # without pseudonymization, the prompt is the first MAX_CONVERSATION_CHARS characters, as before
    # (less the white space they end with: a turn's text is stripped)
    raw = _conversation_text(_extractor(None)._spec(conversation))
    assert raw == conversation_prompt_text([(m.role, m.content) for m in conversation.messages]).rstrip()


@pytest.mark.real_model
def test_the_real_pseudonymizer_sends_no_fragment_of_an_address_across_the_cut():
    from backends.pii.pseudonymize import shared_pseudonymizer
    conversation, margin = _an_address_across_the_cut()
    text = _conversation_text(_extractor(shared_pseudonymizer())._spec(conversation))
    assert "docs.example.com" not in text and "sourdough" in text
    for fragment in ("john", "smith", "@gma"):
        assert fragment not in text
    margin_words = set(re.findall(r"\bw\d+\b", margin))
    assert margin_words and not margin_words & set(re.findall(r"\bw\d+\b", text))


# --- failed calls: retried with long waits, then the record is dead-lettered -------------------------

def _server_config(server, **kw):
    settings = dict(llm_max_concurrency=4, llm_timeout_s=2, llm_max_retries=2, pseudonymize="off", backoff_base_s=0.01)
    settings.update(kw)
    return LLMParams(llm_backend="openai", llm_model="m", llm_base_url=server.base_url, **settings)


def _conversation(i, text):
    return Conversation(f"c{i}", f"u{i}", None, (Message("user", text), Message("assistant", "a reply")))


def test_a_call_that_fails_for_a_while_is_retried_with_long_waits_and_gets_the_models_answer(monkeypatch):
    with FakeChatServer() as server:
        monkeypatch.setattr(server, "fault_for", lambda body, attempt: "429" if int(attempt) < 3 else None)
        extractor = LLMFacetExtractor(_server_config(server, backoff_base_s=RetryPolicy().backoff_base_s,
                                                     llm_max_retries=RetryPolicy().max_retries))
        extractor.setup()
        sleeps = []
        extractor._caller._sleep = sleeps.append  # the waits it would make, without making them
        facets = extractor.extract_batch([_conversation(0, "how do rust lifetimes work")])
    assert facets == ["The user asks: how do rust lifetimes work"]
    assert [e["attempt"] for e in server.log] == [0, 1, 2, 3]
    assert len(sleeps) == 3 and all(ceiling / 2 <= s <= ceiling for s, ceiling in zip(sleeps, (4, 8, 16)))


def _facets(pipeline, server, conversations, name):
    extractor = LLMFacetExtractor(_server_config(server))
    return (pipeline | f"create {name}" >> beam.Create([WeightedConversation(c, 1.0) for c in conversations])
            | f"facets {name}" >> ExtractFacets(extractor))


def test_a_conversation_whose_calls_all_fail_is_dead_lettered_and_the_others_get_what_they_get_without_it(
        monkeypatch):
    good = [_conversation(i, f"question {i} about sourdough and python") for i in range(6)]
    broken = _conversation(99, "broken request about cooking")

    def the_others_get_what_they_get_without_it(with_it, without_it):
        with_it, without_it = (sorted(facets, key=lambda f: f.conversation_id) for facets in (with_it, without_it))
        assert with_it == without_it
        assert all(f.text.startswith("The user asks: question") for f in with_it)  # the model's answers only

    def only_the_broken_one(dead):
        (letter,) = dead
        assert isinstance(letter, DeadLetter) and letter.conversation_id == "c99" and letter.reason == "facet_failed"
        assert letter.stage == "facets" and "LLMCallFailed" in letter.detail and "retries_exhausted" in letter.detail

    # Both runs in one pipeline, each with its own server: a server's log is its run's requests.
    with FakeChatServer() as server, FakeChatServer() as server_without:
        for each in (server, server_without):
            monkeypatch.setattr(each, "fault_for", lambda body, attempt: "500" if b"broken" in body else None)
        with local_pipeline() as pipeline:
            with_it = _facets(pipeline, server, good[:3] + [broken] + good[3:], "with")
            without_it = _facets(pipeline, server_without, good, "without")
            assert_together(the_others_get_what_they_get_without_it, "facets",
                            with_it=with_it.output, without_it=without_it.output)
            assert_that(with_it.dead_letter, checked(only_the_broken_one), label="dead with it")
            assert_that(without_it.dead_letter, is_empty(), label="dead without it")
    # every conversation was asked once (the broken one three times: two retries), none again
    assert len(server.log) == 7 + 2


def test_a_facet_whose_selection_fails_is_dead_lettered_and_the_other_votes_are_unchanged(monkeypatch):
    facets = ["I love python and rust", "broken", "sourdough and travel"]
    votes = [("u0", (0, "python")), ("u0", (0, "rust")), ("u2", (0, "sourdough")), ("u2", (0, "travel"))]

    def pairs(pipeline, server, rows, name):
        selector = LLMKeywordSelector(_server_config(server), K, mapper=ExactKeywordMapper(K))
        block = ConversationBlock([f"c{i}" for i in rows], [f"u{i}" for i in rows], np.ones(len(rows)),
                                  [facets[i] for i in rows], np.zeros((len(rows), 4), dtype=np.float32),
                                  cluster_ids=np.zeros(len(rows), dtype=int))
        return (pipeline | f"create {name}" >> beam.Create([block])
                | f"select {name}" >> SelectKeywords(selector, K, max_keywords=5))

    def only_the_broken_one(dead):
        assert [(d.conversation_id, d.reason) for d in dead] == [("c1", "keyword_selection_failed")]
        assert "malformed_output" in dead[0].detail

    with FakeChatServer() as server:
        monkeypatch.setattr(server, "fault_for", lambda body, attempt: "garbage" if b"broken" in body else None)
        with local_pipeline() as pipeline:
            with_it = pairs(pipeline, server, [0, 1, 2], "with")
            without_it = pairs(pipeline, server, [0, 2], "without")
            assert_that(with_it.output, equal_to(votes), label="votes with it")
            assert_that(without_it.output, equal_to(votes), label="votes without it")
            assert_that(with_it.dead_letter, checked(only_the_broken_one), label="dead with it")


def test_whether_a_step_uses_the_model_is_decided_for_the_run_not_per_record(monkeypatch):
    with FakeChatServer() as server:
        monkeypatch.setattr(server, "fault_for", lambda body, attempt: "500" if b"broken" in body else None)
        on = factory.make_facet_extractor(1000, _server_config(server, llm_steps="facets,keywords"))
        off = factory.make_facet_extractor(1000, _server_config(server, llm_steps="keywords"))
        conversations = [_conversation(0, "how do rust lifetimes work"), _conversation(1, "broken request")]
        assert isinstance(off, UserTurnsFacetExtractor)  # every record offline: no call at all
        assert not hasattr(on, "fallback")  # and with the model, no offline step to answer a record
        assert [off.extract(c) for c in conversations] == ["how do rust lifetimes work", "broken request"]
        assert not server.log
        # with the model, a record whose call fails gets no other backend's answer: it fails alone
        assert on.extract(conversations[0]) == "The user asks: how do rust lifetimes work"
        with pytest.raises(Exception, match="facets call"):
            on.extract(conversations[1])
    assert on.counters.totals["fallbacks"] == 0 and on.counters.totals["failures"] == 1


def _fail_the_first_request_holding(marker: bytes):
    """A fault_for that answers the first request whose body holds `marker` with garbage (not retried)."""
    seen = []

    def fault_for(body, attempt):
        if marker not in body:
            return None
        seen.append(body)
        return "garbage" if len(seen) == 1 else None
    return fault_for


def test_records_with_the_same_prompt_each_keep_their_own_calls_result(monkeypatch):
    from transforms.record_isolation import run_isolated
    # Two short chats with the same prompt (common: "hello"); the first one's call fails, the second's
    # is answered. The rerun one record at a time must give each its own result, not the other's.
    conversations = [_conversation(0, "hello"), _conversation(1, "hello"), _conversation(2, "how do rust lifetimes work")]
    with FakeChatServer() as server:
        monkeypatch.setattr(server, "fault_for", _fail_the_first_request_holding(b"hello"))
        extractor = LLMFacetExtractor(_server_config(server, llm_max_concurrency=1))  # calls in the batch's order
        outcomes = run_isolated(extractor.extract_batch, conversations)
    assert [e["fault"] for e in server.log] == ["garbage", None, None]  # no request sent again
    (_, error), *answered = outcomes
    assert isinstance(error, LLMCallFailed) and "malformed_output" in str(error)
    assert answered == [("The user asks: hello", None), ("The user asks: how do rust lifetimes work", None)]


def test_a_keyword_proposal_whose_call_fails_is_dead_lettered_and_counted(monkeypatch):
    from core.records import Facet
    from transforms.keyword_set.propose_keywords import ProposeKeywords
    facets = [Facet("c0", "u0", 1.0, "sourdough starter feeding"), Facet("bad", "u1", 1.0, "broken request"),
              Facet("c2", "u2", 1.0, "rust borrow checker")]
    with FakeChatServer(answer=lambda prompt: "['sourdough']" if "sourdough" in prompt else "['rust']") as server:
        monkeypatch.setattr(server, "fault_for", lambda body, attempt: "500" if b"broken" in body else None)
        proposer = LLMKeywordProposer(_server_config(server))
        proposer.setup()
        with pytest.raises(LLMCallFailed, match="1 of 1 keyword_proposals call.*retries_exhausted"):
            proposer.propose(["broken request"], 3)  # fails alone: no empty proposal in its place
        assert proposer.counters.totals["failures"] == 1 and proposer.counters.totals["fallbacks"] == 0

        def only_the_failed_call(dead):
            (letter,) = dead
            assert (letter.stage, letter.reason, letter.conversation_id) == (
                "propose_keywords", "keyword_proposal_failed", "bad")
            assert "LLMCallFailed" in letter.detail and "retries_exhausted" in letter.detail

        with local_pipeline() as pipeline:
            out = pipeline | beam.Create(facets) | ProposeKeywords(LLMKeywordProposer(_server_config(server)), 3)
            assert_that(out.output, equal_to([("u0", ("sourdough", 1.0)), ("u2", ("rust", 1.0))]), label="proposed")
            assert_that(out.dead_letter, checked(only_the_failed_call), label="proposed dead")
