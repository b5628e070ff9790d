"""LLM implementations of the pluggable steps. Each one falls back to the offline implementation for
an element whose call failed (retries exhausted, a 4xx, an unreadable answer) and counts it.

Conversation-derived text (conversations, facet summaries) is pseudonymized before it is put into a
prompt when the config says so (the default for remote backends). The naming, refinement and
exemplar prompts carry public or DP-released words only.
"""

from __future__ import annotations

import functools
import itertools

import numpy as np

from backends.embedding import DEFAULT_EMBEDDING_MODEL
from backends.interfaces import (
    ClusterNamer,
    ExemplarWriter,
    FacetExtractor,
    KeywordProposer,
    KeywordSelector,
    KeywordSetRefiner,
)
from backends.llm import parsing, prompts
from backends.llm.config import LLMConfig
from backends.llm.fanout import CallSpec
from backends.llm.keyword_mapping import EmbeddingKeywordMapper, ExactKeywordMapper
from backends.llm.metrics import StepCounters, live_calls
from backends.offline import KeywordClusterNamer, UserTurnsFacetExtractor
from backends.offline_exemplars import TemplateExemplarWriter
from core.records import Conversation

# Characters of a conversation put into the facet prompt (both roles, each turn labelled).
MAX_CONVERSATION_CHARS = 6000


class _LLMStep:
    """Shared plumbing: a Caller and a Pseudonymizer built on the worker, never pickled."""

    step = "llm"

    def __init__(self, config: LLMConfig):
        self.config = config
        self._caller = None
        self._pseudonymizer = None
        self.counters = StepCounters(self.step)

    def _setup_llm(self, uses_private_text: bool) -> None:
        if self._caller is None:
            self._caller = self.config.make_caller()
        if uses_private_text and self.config.pseudonymize and self._pseudonymizer is None:
            from backends.llm.pseudonymize import shared_pseudonymizer
            self._pseudonymizer = shared_pseudonymizer(self.config.pseudonyms)

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

    def _run(self, specs: list[CallSpec]):
        live_calls.submitted(self.step, len(specs))
        results = self._caller.call_many(specs, on_done=lambda _: live_calls.done(self.step))
        self.counters.record(results)
        return results

    def __getstate__(self):
        state = dict(self.__dict__)
        state["_caller"] = None
        state["_pseudonymizer"] = None
        return state


def conversation_prompt_text(turns: list[tuple[str, str]], max_chars: int = MAX_CONVERSATION_CHARS) -> str:
    return "\n".join(f"{role.capitalize()}: {content.strip()}" for role, content in turns)[:max_chars]


class LLMFacetExtractor(_LLMStep, FacetExtractor):
    """The `Summary` of URANIA's facet JSON; the user turns (offline extractor) when a call fails."""

    step = "facets"
    batch_size = 32

    def __init__(self, config: LLMConfig, fallback: FacetExtractor | None = None):
        super().__init__(config)
        self.fallback = fallback or UserTurnsFacetExtractor()

    def setup(self) -> None:
        self._setup_llm(uses_private_text=True)
        self.fallback.setup()

    def _spec(self, conversation: Conversation) -> CallSpec:
        messages = [m for m in conversation.messages if m.role in ("user", "assistant") and m.content.strip()]
        contents = self._private([m.content for m in messages])
        text = conversation_prompt_text([(m.role, c) for m, c in zip(messages, contents)])
        return CallSpec(prompts.facet_messages(text), parsing.parse_facets, json_output=prompts.FACET_SCHEMA,
                        max_tokens=128)

    def extract_batch(self, conversations: list[Conversation]) -> list[str]:
        self.setup()
        results = self._run([self._spec(c) for c in conversations])
        return [r.value if r.ok else self.fallback.extract(c) for r, c in zip(results, conversations)]

    def extract(self, conversation: Conversation) -> str:
        return self.extract_batch([conversation])[0]


class LLMKeywordSelector(_LLMStep, KeywordSelector):
    """The model writes up to max_keywords topic keywords of its own per facet; a KeywordMapper maps
    them onto K (exact, else the nearest keyword by embedding above a floor). Failed calls: the
    offline selector. Nothing outside K comes out (and SelectKeywords filters again)."""

    step = "keywords"

    def __init__(self, config: LLMConfig, keywords: tuple[str, ...], fallback: KeywordSelector,
                 mapper: ExactKeywordMapper | None = None, embedding_model: str = DEFAULT_EMBEDDING_MODEL,
                 embedding_backend: str = "torch"):
        super().__init__(config)
        self.keywords = tuple(keywords)
        self.fallback = fallback
        self.mapper = mapper or EmbeddingKeywordMapper(self.keywords, embedding_model, embedding_backend)

    def setup(self) -> None:
        self._setup_llm(uses_private_text=True)
        self.fallback.setup()
        self.mapper.setup()

    def select(self, facets: list[str], embeddings: np.ndarray, max_keywords: int) -> list[list[str]]:
        self.setup()
        parse = functools.partial(_parse_keywords, max_keywords=max_keywords)
        schema = prompts.keywords_schema(max_keywords)
        specs = [CallSpec(prompts.select_messages(self._private([facet])[0], max_keywords), parse,
                          json_output=schema, max_tokens=96)
                 for facet in facets]
        results = self._run(specs)
        answered = [i for i, r in enumerate(results) if r.ok]
        picks: list[list[str] | None] = [None] * len(facets)
        for i, chosen in zip(answered, self.mapper.map([results[i].value for i in answered], max_keywords)):
            picks[i] = chosen
        failed = [i for i, p in enumerate(picks) if p is None]
        if failed:
            fallback = self.fallback.select([facets[i] for i in failed], embeddings[failed], max_keywords)
            for i, chosen in zip(failed, fallback):
                picks[i] = chosen
        return picks


def _parse_keywords(text: str, max_keywords: int):
    return parsing.parse_topic_keywords(text, max_keywords)


class LLMClusterNamer(_LLMStep, ClusterNamer):
    """{"name", "description"} from the DP-released keywords only; the offline namer when a call fails."""

    step = "names"

    def __init__(self, config: LLMConfig, fallback: ClusterNamer | None = None):
        super().__init__(config)
        self.fallback = fallback or KeywordClusterNamer()

    def setup(self) -> None:
        self._setup_llm(uses_private_text=False)
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
    A failed call proposes the fallback's words, or nothing."""

    step = "keyword_proposals"

    def __init__(self, config: LLMConfig, fallback: KeywordProposer | None = None):
        super().__init__(config)
        self.fallback = fallback

    def setup(self) -> None:
        self._setup_llm(uses_private_text=True)
        if self.fallback is not None:
            self.fallback.setup()

    def propose(self, facets: list[str], max_keywords: int) -> list[list[str]]:
        self.setup()
        parse = functools.partial(_parse_proposal, max_keywords=max_keywords)
        results = self._run([CallSpec(prompts.propose_messages(self._private([f])[0], max_keywords), parse,
                                      max_tokens=128) for f in facets])
        proposals = [r.value if r.ok else None for r in results]
        failed = [i for i, p in enumerate(proposals) if p is None]
        fallback = (self.fallback.propose([facets[i] for i in failed], max_keywords)
                    if failed and self.fallback is not None else [[] for _ in failed])
        for i, words in zip(failed, fallback):
            proposals[i] = words
        return proposals


def _parse_proposal(text: str, max_keywords: int):
    return parsing.parse_proposed_keywords(text, max_keywords)


class LLMKeywordSetRefiner(_LLMStep, KeywordSetRefiner):
    """One refinement round over a public list. Removals are limited to words in the list and
    additions to words not in it; a failed call changes nothing (or asks the fallback)."""

    step = "keyword_refinement"

    def __init__(self, config: LLMConfig, fallback: KeywordSetRefiner | None = None):
        super().__init__(config)
        self.fallback = fallback

    def setup(self) -> None:
        self._setup_llm(uses_private_text=False)
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


def _shares(total: int, parts: int) -> list[int]:
    """`total` split over `parts` as evenly as possible, larger shares first, each at most
    MAX_EXEMPLARS_PER_CALL (so a topic with few keywords gets fewer candidates)."""
    return [min(n, MAX_EXEMPLARS_PER_CALL) for n in (total // parts + (1 if i < total % parts else 0)
                                                    for i in range(parts))]


class LLMExemplarWriter(_LLMStep, ExemplarWriter):
    """Synthetic requests for a released topic, written from its name, description and keywords only
    (prompts.topic_text), one call per keyword when drafting and one per winner when varying (a small
    model asked for twenty at once repeats a few). A failed call gets the template writer's
    candidates for its keyword or winner. A topic with no released keyword gets none: its name alone
    says nothing to write from."""

    step = "exemplars"

    def __init__(self, config: LLMConfig, fallback: ExemplarWriter | None = None):
        super().__init__(config)
        self.fallback = fallback or TemplateExemplarWriter()

    def setup(self) -> None:
        self._setup_llm(uses_private_text=False)
        self.fallback.setup()

    def _ask(self, requests: list[tuple[list[dict], int]], fallbacks: list) -> list[str]:
        """Every call's requests, in order; a failed call's from its fallback (a thunk)."""
        self.setup()
        specs = [CallSpec(messages, functools.partial(parsing.parse_requests, max_count=count),
                          json_output=prompts.exemplars_schema(count), max_tokens=TOKENS_PER_EXEMPLAR * count + 24)
                 for messages, count in requests]
        written: list[str] = []
        for result, fallback in zip(self._run(specs), fallbacks):
            written += result.value if result.ok else fallback()
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
