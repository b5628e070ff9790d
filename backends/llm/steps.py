"""LLM implementations of the pluggable steps.

Steps on records (facets, keyword selection, keyword proposals) give every record the model's answer
or nothing: a record whose call failed for good (retries exhausted, a 4xx, an unreadable answer) is
dead-lettered (LLMCallFailed), never answered by the offline step, so that which backend answered a
record cannot depend on other records' load (docs/privacy.md).
Whether a step uses the model is decided for the whole run, before any record is read
(--llm_steps). Steps on public or DP-released text only (names, exemplars, keyword-set refinement)
still fall back to the offline implementation per call, and count it.

Conversation-derived text (conversations, facet summaries) is pseudonymized before it is put into a
prompt when the params say so (the default for remote backends), by the pseudonymizer backends/factory.py
hands the step (this package imports nothing of backends/pii/), after it is cut to what the prompt
uses (a margin past the cut included, dropped again once pseudonymized). The naming, refinement and
exemplar prompts carry public or DP-released words only.
"""

from __future__ import annotations

import collections
import functools
import itertools
from collections.abc import Callable
from typing import Protocol

import numpy as np

from backends.centre_decoder import TemplateLabelWriter, base_name, label_text
from backends.interfaces import (
    ClusterNamer,
    ExemplarWriter,
    FacetExtractor,
    KeywordProposer,
    KeywordSelector,
    KeywordSetRefiner,
)
from backends.llm import parsing, prompts
from backends.llm.config import make_caller
from backends.llm.fanout import CallResult, CallSpec
from backends.llm.keyword_mapping import EmbeddingKeywordMapper, ExactKeywordMapper
from backends.llm.metrics import StepCounters, live_calls
from backends.offline import KeywordClusterNamer
from backends.offline_exemplars import TemplateExemplarWriter
from config.embedding import Encoder
from config.llm import LLMParams
from core.records import Conversation

# Characters of a conversation put into the facet prompt (both roles, each turn labelled).
MAX_CONVERSATION_CHARS = 6000
# Characters past the prompt's cut that are pseudonymized with it, so that a name or an address across
# the cut is seen whole by the detector (its pseudonym, not its first letters, ends the prompt).
PSEUDONYMIZE_MARGIN_CHARS = 200


class LLMCallFailed(RuntimeError):
    """A record's model call failed for good. Raised so that the record is dead-lettered
    (transforms/record_isolation.py), with the failure's class as the reason, rather than answered by
    another backend."""


class TextPseudonymizer(Protocol):
    def pseudonymize_texts(self, texts: list[str]) -> list[str]:
        """The texts of one conversation with their PII replaced, the same pseudonym for the same value in each."""


# Builds the run's pseudonymizer on a worker from its params: backends.factory.pseudonymizer_for, the PII
# guard of backends/pii/, which this package does not import (the guard may call the model, never the reverse).
PseudonymizerFactory = Callable[[LLMParams], TextPseudonymizer]


class _LLMStep:
    """Shared plumbing: a Caller and a Pseudonymizer built on the worker, never pickled."""

    step = "llm"
    # Whether the step puts conversation-derived text into its prompts (then pseudonymized first, when the
    # params say so); the others' prompts carry public or DP-released words only.
    reads_private_text = False

    def __init__(self, config: LLMParams, pseudonymizer: PseudonymizerFactory | None = None):
        if self.reads_private_text and config.pseudonymizes and pseudonymizer is None:
            # fail closed: without it, conversation text would reach the prompt as it is
            raise ValueError(f"the LLM {self.step} step pseudonymizes conversation text before it goes into a prompt: "
                             "it needs the pseudonymizer (backends.factory builds the step with it)")
        self.config = config
        self.make_pseudonymizer = pseudonymizer
        self._caller = None
        self._pseudonymizer = None
        self.counters = StepCounters(self.step)
        # A failed batch's results by request key, in the batch's order, for record_isolation's
        # one-record-at-a-time rerun (which asks for the records in that order).
        self._kept: dict[str, collections.deque[CallResult]] = {}

    def _setup_llm(self) -> None:
        if self._caller is None:
            self._caller = make_caller(self.config)
        if self.reads_private_text and self.config.pseudonymizes and self._pseudonymizer is None:
            self._pseudonymizer = self.make_pseudonymizer(self.config)

    def teardown(self) -> None:
        """Releases the client (for the local backend, this process's model server once no step holds it)."""
        caller, self._caller = self._caller, None
        if caller is not None:
            caller.client.close()

    def _private(self, texts: list[str]) -> list[str]:
        """Texts from one conversation, pseudonymized together (consistent pseudonyms) when configured."""
        if self._pseudonymizer is None:
            return texts
        return self._pseudonymizer.pseudonymize_texts(texts)

    def _run(self, specs: list[CallSpec], fallback: bool = True):
        """fallback: whether the caller answers a failed call with its offline step (counted as such)."""
        live_calls.submitted(self.step, len(specs))
        results = self._caller.call_many(specs, on_done=lambda _: live_calls.done(self.step))
        self.counters.record(results, fallback)
        return results

    def _run_records(self, specs: list[CallSpec]) -> list[CallResult]:
        """One successful result per record's call, or LLMCallFailed if any call failed for good: the
        record is then dead-lettered, and no record is answered by another backend for its call alone.
        transforms/record_isolation.py runs a batch that raised again one record at a time; the batch's
        results are kept for that rerun, so it sends no request again and every record gets what it got
        in the batch. Records with the same prompt (two short "hello" chats) get their results in the
        batch's order, first in first out, so each gets its own call's result, not the other's."""
        keys = [self._caller.key(spec) for spec in specs]
        if len(specs) > 1:  # a new batch (a rerun has one record): nothing kept is for it
            self._kept = {}
        results: list[CallResult | None] = [self._kept[k].popleft() if self._kept.get(k) else None for k in keys]
        todo = [i for i, result in enumerate(results) if result is None]
        for i, result in zip(todo, self._run([specs[i] for i in todo], fallback=False)):
            results[i] = result
        failed = [result.error for result in results if not result.ok]
        if failed:
            if len(specs) > 1:
                for key, result in zip(keys, results):
                    self._kept.setdefault(key, collections.deque()).append(result)
            raise LLMCallFailed(f"{len(failed)} of {len(specs)} {self.step} call(s) failed: "
                                f"{', '.join(sorted(set(failed)))}")
        return results

    def __getstate__(self):
        state = dict(self.__dict__)
        state["_caller"] = None
        state["_pseudonymizer"] = None
        state["_kept"] = {}
        return state


def conversation_prompt_text(turns: list[tuple[str, str]], max_chars: int = MAX_CONVERSATION_CHARS) -> str:
    return "\n".join(f"{role.capitalize()}: {content.strip()}" for role, content in turns)[:max_chars]


def cut_turns(turns: list[tuple[str, str]], max_chars: int) -> list[tuple[str, str, bool]]:
    """The turns, each stripped, as far as conversation_prompt_text(turns, max_chars) reads them: the
    turn the cut falls in is cut there and later turns are dropped, so conversation_prompt_text of
    the result, at max_chars, is the same text. Each turn comes with whether it was cut (its text
    ends at the cut, not where the user's message ended). (Pseudonymizing a whole message first cost
    time and memory faster than linearly in its length: one user's huge message could stall a worker.)"""
    kept, used = [], 0
    for role, content in turns:
        if used >= max_chars:
            break
        room = max_chars - used - len(f"{role.capitalize()}: ")
        whole = content.strip()
        body = whole[:max(room, 0)]
        kept.append((role, body, len(body) < len(whole)))
        used += len(f"{role.capitalize()}: ") + len(body) + 1  # the turn's label, its text and the "\n" after it
    return kept


def drop_cut_margin(content: str, was_cut: bool) -> str:
    """A cut turn's pseudonymized text without its last PSEUDONYMIZE_MARGIN_CHARS characters: what
    ended there is what the detector saw only in part (the start of an address or a name across the
    cut), raw, however much the replacements before it shortened the text (a long URL, an e-mail
    address). A fragment left raw runs to the end of the text, so it is at most as long there as
    before pseudonymizing: dropping the margin from the pseudonymized end drops it."""
    return content[:max(len(content) - PSEUDONYMIZE_MARGIN_CHARS, 0)] if was_cut else content


class LLMFacetExtractor(_LLMStep, FacetExtractor):
    """The `Summary` of URANIA's facet JSON. A conversation whose call fails is dead-lettered (LLMCallFailed)."""

    step = "facets"
    batch_size = 32
    reads_private_text = True

    def setup(self) -> None:
        self._setup_llm()

    def _spec(self, conversation: Conversation) -> CallSpec:
        messages = [m for m in conversation.messages if m.role in ("user", "assistant") and m.content.strip()]
        # Cut first, then pseudonymize the cut text only (the turns together: the same pseudonym for the
        # same value in every turn), a margin past the cut included; then drop that margin from the
        # pseudonymized text (what the detector saw only in part), and cut to what the prompt uses.
        turns = cut_turns([(m.role, m.content) for m in messages], MAX_CONVERSATION_CHARS + PSEUDONYMIZE_MARGIN_CHARS)
        contents = self._private([content for _, content, _ in turns])
        text = conversation_prompt_text([(role, drop_cut_margin(content, was_cut))
                                         for (role, _, was_cut), content in zip(turns, contents)])
        return CallSpec(prompts.facet_messages(text), parsing.parse_facets, json_output=prompts.FACET_SCHEMA,
                        max_tokens=128)

    def extract_batch(self, conversations: list[Conversation]) -> list[str]:
        self.setup()
        return [r.value for r in self._run_records([self._spec(c) for c in conversations])]

    def extract(self, conversation: Conversation) -> str:
        return self.extract_batch([conversation])[0]


class LLMKeywordSelector(_LLMStep, KeywordSelector):
    """The model writes up to max_keywords topic keywords of its own per facet; a KeywordMapper maps
    them onto K (exact, else the nearest keyword by embedding above a floor, by the run's `encoder`). A
    conversation whose call fails is dead-lettered (LLMCallFailed). Nothing outside K comes out (and
    SelectKeywords filters again)."""

    step = "keywords"
    reads_private_text = True

    def __init__(self, config: LLMParams, keywords: tuple[str, ...], mapper: ExactKeywordMapper | None = None,
                 encoder: Encoder | None = None, pseudonymizer: PseudonymizerFactory | None = None):
        super().__init__(config, pseudonymizer)
        self.keywords = tuple(keywords)
        if mapper is None and encoder is None:
            raise ValueError("LLMKeywordSelector maps the model's words to K by embedding: it needs the run's encoder "
                             "(or a mapper)")
        self.mapper = mapper or EmbeddingKeywordMapper(self.keywords, encoder)

    def setup(self) -> None:
        self._setup_llm()
        self.mapper.setup()

    def select(self, facets: list[str], embeddings: np.ndarray, max_keywords: int) -> list[list[str]]:
        self.setup()
        parse = functools.partial(_parse_keywords, max_keywords=max_keywords)
        schema = prompts.keywords_schema(max_keywords)
        specs = [CallSpec(prompts.select_messages(self._private([facet])[0], max_keywords), parse,
                          json_output=schema, max_tokens=96)
                 for facet in facets]
        results = self._run_records(specs)
        return self.mapper.map([r.value for r in results], max_keywords)


def _parse_keywords(text: str, max_keywords: int):
    return parsing.parse_topic_keywords(text, max_keywords)


class LLMClusterNamer(_LLMStep, ClusterNamer):
    """{"name", "description"} from the DP-released keywords only; the offline namer when a call fails."""

    step = "names"

    def __init__(self, config: LLMParams, fallback: ClusterNamer | None = None):
        super().__init__(config)
        self.fallback = fallback or KeywordClusterNamer()

    def setup(self) -> None:
        self._setup_llm()
        self.fallback.setup()

    def name(self, keywords: list[str]) -> tuple[str, str]:
        if not keywords:  # nothing to name it from: no call
            return self.fallback.name(keywords)
        self.setup()
        result = self._run([CallSpec(prompts.name_messages(keywords), parsing.parse_name,
                                     json_output=prompts.NAME_SCHEMA, max_tokens=200)])[0]
        return result.value if result.ok else self.fallback.name(keywords)


class LLMKeywordProposer(_LLMStep, KeywordProposer):
    """Free-form keywords per facet (private: they enter K only through DP partition selection).
    A conversation whose call fails is dead-lettered (LLMCallFailed; ProposeKeywords gives it
    `keyword_proposal_failed`): its words never come from another backend."""

    step = "keyword_proposals"
    reads_private_text = True

    def setup(self) -> None:
        self._setup_llm()

    def propose(self, facets: list[str], max_keywords: int) -> list[list[str]]:
        self.setup()
        parse = functools.partial(_parse_proposal, max_keywords=max_keywords)
        results = self._run_records([CallSpec(prompts.propose_messages(self._private([f])[0], max_keywords), parse,
                                              max_tokens=128) for f in facets])
        return [r.value for r in results]


def _parse_proposal(text: str, max_keywords: int):
    return parsing.parse_proposed_keywords(text, max_keywords)


class LLMKeywordSetRefiner(_LLMStep, KeywordSetRefiner):
    """One refinement round over a public list. Removals are limited to words in the list and
    additions to words not in it; a failed call changes nothing (or asks the fallback)."""

    step = "keyword_refinement"

    def __init__(self, config: LLMParams, fallback: KeywordSetRefiner | None = None):
        super().__init__(config)
        self.fallback = fallback

    def setup(self) -> None:
        self._setup_llm()
        if self.fallback is not None:
            self.fallback.setup()

    def refine(self, keywords: list[str], target_size: int) -> tuple[list[str], list[str]]:
        self.setup()
        result = self._run([CallSpec(prompts.refine_messages(keywords, target_size), parsing.parse_refinement,
                                     json_output=True, max_tokens=1024)])[0]
        if not result.ok:
            return self.fallback.refine(keywords, target_size) if self.fallback is not None else ([], [])
        remove, add = result.value
        present = set(keywords)
        return ([w for w in remove if w in present],
                [w for w in add if w not in present and len(w) <= 60])


# Output tokens per requested exemplar: a request of prompts.MAX_REQUEST_CHARS and its JSON quoting.
TOKENS_PER_EXEMPLAR = 56
# Requests asked of one call: more and a small model starts repeating itself.
MAX_EXEMPLARS_PER_CALL = 6


def _shares(total: int, parts: int, most: int = MAX_EXEMPLARS_PER_CALL) -> list[int]:
    """`total` split over `parts` as evenly as possible, larger shares first, each at most `most`
    (so a topic with few keywords gets fewer candidates)."""
    return [min(n, most) for n in (total // parts + (1 if i < total % parts else 0) for i in range(parts))]


class LLMExemplarWriter(_LLMStep, ExemplarWriter):
    """Synthetic requests for a released topic, written from its name, description and keywords only
    (prompts.topic_text), one call per keyword when drafting and one per winner when varying (a small
    model asked for twenty at once repeats a few). A failed call gets the template writer's
    candidates for its keyword or winner. A topic with no released keyword gets none: its name alone
    says nothing to write from."""

    step = "exemplars"

    def __init__(self, config: LLMParams, fallback: ExemplarWriter | None = None):
        super().__init__(config)
        self.fallback = fallback or TemplateExemplarWriter()

    def setup(self) -> None:
        self._setup_llm()
        self.fallback.setup()

    # The answer's reader and schema, and its output tokens per item (the label writer's differ).
    parse = staticmethod(parsing.parse_requests)
    schema = staticmethod(prompts.exemplars_schema)
    tokens_per_item = TOKENS_PER_EXEMPLAR

    @staticmethod
    def texts(value) -> list[str]:
        """An answer's candidates as texts."""
        return value

    def _ask(self, requests: list[tuple[list[dict], int]], fallbacks: list) -> list[str]:
        """Every call's candidates, in order; a failed call's from its fallback (a thunk)."""
        self.setup()
        specs = [CallSpec(messages, functools.partial(self.parse, max_count=count),
                          json_output=self.schema(count), max_tokens=self.tokens_per_item * count + 24)
                 for messages, count in requests]
        written: list[str] = []
        for result, fallback in zip(self._run(specs), fallbacks):
            written += self.texts(result.value) if result.ok else fallback()
        return written

    def write(self, topic: dict, count: int) -> list[str]:
        keywords = list(topic.get("keywords") or [])
        if not keywords:
            return []
        focus = [(keyword, n) for keyword, n in zip(keywords, _shares(count, len(keywords))) if n]
        # Each call starts its task kinds where the previous one's ended: the draft covers them all.
        starts = itertools.accumulate([0] + [n for _, n in focus])
        return self._ask([(prompts.write_exemplars_messages(topic, keyword, n, start), n)
                          for (keyword, n), start in zip(focus, starts)],
                         [functools.partial(self.fallback.vary, topic, [keyword], n) for keyword, n in focus])

    def vary(self, topic: dict, winners: list[str], count: int) -> list[str]:
        if not topic.get("keywords") or not winners:
            return []
        parents = [(winner, n) for winner, n in zip(winners, _shares(count, len(winners))) if n]
        starts = itertools.accumulate([0] + [n for _, n in parents])
        return self._ask([(prompts.vary_exemplars_messages(topic, winner, n, start), n)
                          for (winner, n), start in zip(parents, starts)],
                         [functools.partial(self.fallback.vary, topic, [winner], n) for winner, n in parents])


# Output tokens per candidate label: a name, a one-sentence description and their JSON.
TOKENS_PER_LABEL = 72
# Labels asked of one call, as for exemplars: more and a small model repeats itself.
MAX_LABELS_PER_CALL = 4


class LLMLabelWriter(LLMExemplarWriter):
    """The centre decoder's candidate names (backends/centre_decoder.py), "name — description", written
    from a released topic's labels only (prompts.label_topic_text: its name, voted category and
    keywords): one call per focus keyword when drafting and one per winner when varying, as the
    exemplar writer's calls. A failed call gets the template writer's candidates for its keyword or
    winner. A topic with no released keyword and no name is left to the bank."""

    step = "centre_names"
    parse = staticmethod(parsing.parse_labels)
    schema = staticmethod(prompts.labels_schema)
    tokens_per_item = TOKENS_PER_LABEL

    @staticmethod
    def texts(value) -> list[str]:
        return [label_text(name, description) for name, description in value]

    def __init__(self, config: LLMParams, fallback: ExemplarWriter | None = None):
        super().__init__(config, fallback or TemplateLabelWriter())

    @staticmethod
    def _shown(topic: dict) -> dict:
        return {"name": base_name(topic) or topic.get("voted_category") or "", "keywords": topic.get("keywords") or [],
                "voted_category": topic.get("voted_category")}

    def write(self, topic: dict, count: int) -> list[str]:
        shown = self._shown(topic)
        focuses = list(shown["keywords"]) or ([shown["name"]] if shown["name"] else [])
        if not focuses:
            return []
        focus = [(f, n) for f, n in zip(focuses, _shares(count, len(focuses), MAX_LABELS_PER_CALL)) if n]
        return self._ask([(prompts.write_labels_messages(shown, f, n), n) for f, n in focus],
                         [functools.partial(self.fallback.write, topic, n) for _, n in focus])

    def write_about(self, topic: dict, focus: str, count: int) -> list[str]:
        """At most MAX_LABELS_PER_CALL labels in one call about `focus` (several keywords joined, say):
        how scripts/build_name_bank.py writes the public bank from the keyword set. A failed call: none."""
        count = min(count, MAX_LABELS_PER_CALL)
        return self._ask([(prompts.write_labels_messages(self._shown(topic), focus, count), count)], [list])

    def vary(self, topic: dict, winners: list[str], count: int) -> list[str]:
        if not winners:
            return []
        shown = self._shown(topic)
        parents = [(w, n) for w, n in zip(winners, _shares(count, len(winners), MAX_LABELS_PER_CALL)) if n]
        return self._ask([(prompts.vary_labels_messages(shown, w, n), n) for w, n in parents],
                         [functools.partial(self.fallback.vary, topic, [w], n) for w, n in parents])
