"""Planted topics for the synthetic sample data (see synthetic.sample).

Each topic has user-turn templates with slots, follow-up turns, and the keywords of the bundled
keyword set that an analyst would expect to see for it (used by tests and evals to measure how many
planted topics the pipeline recovers). The topics are data, synthetic/data/planted_topics.json;
everything there is invented for this project.
"""

from __future__ import annotations

import dataclasses

from synthetic import load_data


@dataclasses.dataclass(frozen=True)
class PlantedTopic:
    name: str
    theme: str  # a broader theme several planted topics share: what a group of the hierarchy should hold
    expected_keywords: tuple[str, ...]
    openers: tuple[str, ...]
    followups: tuple[str, ...]
    slots: dict[str, tuple[str, ...]]

    @classmethod
    def of_json(cls, data: dict) -> "PlantedTopic":
        # Tuples, as the fields declare: the generators concatenate followups and openers.
        return cls(name=data["name"], theme=data["theme"], expected_keywords=tuple(data["expected_keywords"]),
                   openers=tuple(data["openers"]), followups=tuple(data["followups"]),
                   slots={slot: tuple(values) for slot, values in data["slots"].items()})


PLANTED_TOPICS: tuple[PlantedTopic, ...] = tuple(PlantedTopic.of_json(topic) for topic in load_data("planted_topics.json"))
