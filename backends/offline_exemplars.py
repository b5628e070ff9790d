"""TemplateExemplarWriter: the offline ExemplarWriter, and the LLM writer's fallback.

It fills fixed request templates with a topic's released keywords, so it uses nothing but public
templates and released words. Its candidates differ in task (explain, plan, compare, fix...) and in
which keywords they combine; the evolution (backends/exemplars.py) keeps those nearest the topic's
DP centre, and `vary` recombines the keywords of the winners with other templates and keywords.
"""

from __future__ import annotations

import itertools

from backends.interfaces import ExemplarWriter

ONE_KEYWORD = (
    "Can you explain {a} in simple terms?",
    "How do I get started with {a}?",
    "What are the most common mistakes with {a}?",
    "Give me a step-by-step plan for {a}.",
    "I need help with {a}. Where should I begin?",
    "What should I know about {a} before I start?",
    "Can you give me a short checklist for {a}?",
    "What is a good example of {a}?",
)
TWO_KEYWORDS = (
    "How does {a} relate to {b}?",
    "Help me with {a}, especially {b}.",
    "What is the difference between {a} and {b}?",
    "I have a question about {a} and {b}.",
    "Can you compare {a} with {b} for me?",
)
# Keywords a two-keyword template combines: the first few are the topic's best ranked.
PAIRED_KEYWORDS = 4


def _fill(template: str, *keywords: str) -> str:
    return template.format(**dict(zip("ab", keywords)))


class TemplateExemplarWriter(ExemplarWriter):
    """Deterministic: the same topic gets the same candidates in the same order."""

    def _all_candidates(self, keywords: list[str]) -> list[str]:
        # Diagonal order (keyword j with template j + d): every run of len(keywords) candidates covers
        # every keyword, each with a different task; one-keyword and two-keyword candidates alternate.
        pairs = list(itertools.permutations(keywords[:PAIRED_KEYWORDS], 2))
        singles = [_fill(ONE_KEYWORD[(j + d) % len(ONE_KEYWORD)], keyword)
                   for d in range(len(ONE_KEYWORD)) for j, keyword in enumerate(keywords)]
        doubles = [_fill(TWO_KEYWORDS[(j + d) % len(TWO_KEYWORDS)], *pair)
                   for d in range(len(TWO_KEYWORDS)) for j, pair in enumerate(pairs)]
        mixed = itertools.chain.from_iterable(itertools.zip_longest(singles, doubles))
        return list(dict.fromkeys(text for text in mixed if text))

    def write(self, topic: dict, count: int) -> list[str]:
        return self._all_candidates(list(topic.get("keywords") or []))[:count]

    def vary(self, topic: dict, winners: list[str], count: int) -> list[str]:
        """Other templates over the winners' keywords, the best winner's first."""
        keywords = list(topic.get("keywords") or [])
        used = list(dict.fromkeys(k for w in winners for k in keywords if k.casefold() in w.casefold()))
        if not used:
            return []
        # The winners' keywords first: a two-keyword template then pairs them with each other first.
        order = used + [k for k in keywords if k not in used]
        taken = set(winners)
        varied = [c for c in self._all_candidates(order)
                  if c not in taken and any(k.casefold() in c.casefold() for k in used)]
        return varied[:count]
