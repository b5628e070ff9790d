"""Facets: fixed public questions (which language, what kind of request, how concerning) with fixed
answers, each answered per conversation by a public rule, and released as user-level DP histograms.

A facet is a declaration (backends/facet_set.py, beam_jobs/resources/default_facets.json): a
question, its answers and a classifier. Its partition is the answers and `UNKNOWN`, the column of a
conversation whose classifier failed (counted, never dropped). Each selected facet (--facets) makes two
fixed-partition releases (dp_ops/fixed_histogram.py), each one Gaussian sum of L2 sensitivity 1:

- `OVERALL_STAGE` ("facets"): the answers over all the night's bounded conversations;
- `BY_TOPIC_STAGE` ("facet_topics"): the topic x answer cross-tab over the released topics (a
  conversation is in one topic, so a user's vector over every (topic, answer) has L2 norm <= 1).

Each stage composes one Gaussian release per selected facet (dp_ops/dp_stage_specs.py), with its own
share of the run's epsilon (--epsilon_weights); the facets never share noise with each other or with the topics.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from core.dp_stages import FACET_TOPICS, FACETS
from dp_ops.fixed_histogram import FixedPartition, columns_of, histogram_rows

OVERALL_STAGE = FACETS
BY_TOPIC_STAGE = FACET_TOPICS
UNKNOWN = "unknown"
# The seeded test noise's streams (dp_ops.gaussian_noise): facet i of the set draws OVERALL at
# NOISE_STREAM + 2i and BY_TOPIC at NOISE_STREAM + 2i + 1, distinct from every other release's.
NOISE_STREAM = 0xFAC0


def facet_columns(answers: Sequence[str]) -> tuple[str, ...]:
    """The facet's partition, in order: its answers, then UNKNOWN."""
    if UNKNOWN in answers:
        raise ValueError(f"a facet's answer may not be named {UNKNOWN!r}: it is the failed classifications' column")
    return tuple(answers) + (UNKNOWN,)


def overall_partition(facet: str, index: int, answers: Sequence[str]) -> FixedPartition:
    return FixedPartition(
        OVERALL_STAGE, facet_columns(answers),
        f"facet histogram ({facet}): Gaussian sum per fixed answer over all conversations (each conversation "
        "weighs 1/n_u and votes its one answer; user L2 <= 1)",
        f"{facet} answer sum, in users", NOISE_STREAM + 2 * index)


def by_topic_partition(facet: str, index: int, answers: Sequence[str]) -> FixedPartition:
    return FixedPartition(
        BY_TOPIC_STAGE, facet_columns(answers),
        f"facet cross-tab ({facet}): Gaussian sum per (released topic, fixed answer) (each conversation "
        "weighs 1/n_u and votes its one answer in its one topic; user L2 <= 1)",
        f"(topic, {facet} answer) sum, in users", NOISE_STREAM + 2 * index + 1)


def facet_section(question: str, columns: Sequence[str], overall: Mapping, overall_sigma: float,
                  by_topic: Mapping, by_topic_sigma: float, topics: Sequence[int],
                  labels: Mapping[str, str] | None = None) -> dict:
    """One facet of report.json's "facets": its question, the answers overall and per released topic
    (dp_ops.fixed_histogram.histogram_rows: size, 95% interval, share and the share's interval).
    `overall`: the (0, answer) release; `by_topic`: the (topic, answer) release; `labels`: the
    answers' public labels from the declaration (the page shows "Spanish (es)"). Post-processing."""
    return {
        "question": question,
        "answers": list(columns),
        "labels": {column: (labels or {}).get(column, column) for column in columns},
        "unit": "users (each user's conversations weigh 1 in all), as the votes weigh them",
        "interval": "95% from the noise drawn (1.96 sigma; a share's by Fieller's method, the total's noise included)",
        "sigma": {"overall": overall_sigma, "by_topic": by_topic_sigma},
        "overall": histogram_rows(columns_of(overall, 0, columns), overall_sigma),
        "by_topic": {str(int(topic)): histogram_rows(columns_of(by_topic, int(topic), columns), by_topic_sigma)
                     for topic in sorted(topics)},
    }
