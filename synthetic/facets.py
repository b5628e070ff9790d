"""Planted facets for the synthetic sample (beam_jobs.generate_sample --facet_mix).

Ten of the planted topics, each with one kind of request (an answer id of the request_kind facet in
beam_jobs/resources/default_facets.json) and known language shares: a conversation of the topic is
in language L with the declared probability, else English. Every user turn of such a conversation is
written in its language from the topic's templates and asks for the topic's kind, so the planted
language and kind are the truth the facet classifiers are measured against
(eval/utility/facet_accuracy.py). The topics, shares and templates are data,
synthetic/data/facet_topics.json, written for this project (no user data); slot values are per
language, so a Spanish turn has Spanish words in its slots.
"""

from __future__ import annotations

import dataclasses
import random

from synthetic import load_data


@dataclasses.dataclass(frozen=True)
class Phrasing:
    """One language's user turns for a facet topic: templates with {slots}, and each slot's values."""

    templates: tuple[str, ...]
    slots: dict[str, tuple[str, ...]] = dataclasses.field(default_factory=dict)


@dataclasses.dataclass(frozen=True)
class FacetTopic:
    topic: str  # a PlantedTopic's name (synthetic.topics)
    request_kind: str
    languages: dict[str, float]  # language (ISO 639-1) -> share of the topic's conversations; the rest English
    phrasings: dict[str, Phrasing]  # "en" and every language of `languages`

    @classmethod
    def of_json(cls, data: dict) -> "FacetTopic":
        return cls(data["topic"], data["request_kind"], dict(data["languages"]), {
            language: Phrasing(tuple(phrasing["templates"]),
                               {slot: tuple(values) for slot, values in phrasing["slots"].items()})
            for language, phrasing in data["phrasings"].items()})

    def language(self, rng: random.Random) -> str:
        draw, cumulative = rng.random(), 0.0
        for code, share in self.languages.items():
            cumulative += share
            if draw < cumulative:
                return code
        return "en"

    def turns(self, language: str, rng: random.Random) -> list[str]:
        """One or two distinct user turns in `language`, slots filled."""
        phrasing = self.phrasings[language]
        chosen = rng.sample(phrasing.templates, k=rng.randint(1, min(2, len(phrasing.templates))))
        return [t.format(**{slot: rng.choice(values) for slot, values in phrasing.slots.items()}) for t in chosen]


FACET_TOPICS: tuple[FacetTopic, ...] = tuple(FacetTopic.of_json(topic) for topic in load_data("facet_topics.json"))


def facet_topic(name: str) -> FacetTopic:
    return next(topic for topic in FACET_TOPICS if topic.topic == name)
