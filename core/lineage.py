"""Topic lineages: one id for the same topic from night to night, from released centres only.

Each nightly report publishes its topics' DP k-means centres as unit directions of the embedding
space (`centres_section`; post-processing of the DP centres, so no budget). The next night seeds
its k-means from them (dp_ops.dp_kmeans.warm_seed_centres) and matches its own centres to the
lineages of the last LOOKBACK_NIGHTS released nights (each by the average of its last
SMOOTHING_NIGHTS centres, with SEEDED_BONUS for the lineage a topic was seeded from): a one-to-one
assignment of highest total similarity (Hungarian), keeping pairs at or above MIN_COSINE. A topic
that matches keeps the lineage's id; any other starts a lineage, named by the run's date and its
cluster id. Matching a lineage last seen some nights ago lets a topic that dipped below the size
floor for a night, or a weekly topic, come back under its own id.

Earlier reports are public files that anyone with write access to the release bucket could alter,
so what is read from them is checked: a centre must be a finite, non-zero vector of the embedding's
dimension, and a lineage id must look like one this code writes (it is republished every night the
topic continues); anything else is ignored, never fatal.
"""

from __future__ import annotations

import dataclasses
import math
import re

import numpy as np

# How far back a vanished topic can come back under its id, in released nights.
LOOKBACK_NIGHTS = 14
# The least cosine similarity of a topic's centre to a lineage's reference centre. On the generated
# 60-night stream (eval/utility/nightly_stream.py: 1,000 conversations a night, k = 20, the planned noise of a
# 30-night window of cap 30, warm starts, one Lloyd step) one planted topic's centres on consecutive
# nights have cosines p10 0.50, median 0.77; distinct topics' on one night p90 0.27. 0.3 and 0.4
# kept lineages about equally there (88.9-91.9% against 88.8-90.3% of released nights, 3 runs each).
MIN_COSINE = 0.4
# Added to the similarity of a topic and the lineage whose centre seeded it (see assign_lineages).
SEEDED_BONUS = 0.2
# A lineage's reference centre sums its last few nights' centres (see known_lineages).
SMOOTHING_NIGHTS = 3
# Rounded to what the comparison needs; shorter numbers also keep long digit runs, which the release
# gate reads as account numbers, out of the file.
CENTRE_DECIMALS = 5


# What a lineage id this code writes looks like: the run's date (or run id, or "seedN" in-process), '#',
# its cluster id.
LINEAGE_ID = re.compile(r"^[0-9A-Za-z:._-]{1,64}#[0-9]{1,5}$")


def valid_lineage_id(value) -> bool:
    return isinstance(value, str) and LINEAGE_ID.match(value) is not None


@dataclasses.dataclass(frozen=True)
class KnownLineage:
    id: str
    centre: np.ndarray  # unit vector in the embedding space
    date: str | None  # the night it was last released


def centres_section(centres: dict[int, np.ndarray], model: str) -> dict:
    """report.json's "centres": each released topic's DP centre as an embedding-space direction."""
    return {"space": f"{model} embedding space: each topic's DP k-means centre as a unit vector "
                     "(post-processing of the DP centres)",
            "embedding_model": model, "decimals": CENTRE_DECIMALS,
            "by_topic": {str(int(c)): [round(float(x), CENTRE_DECIMALS) for x in centre]
                         for c, centre in sorted(centres.items())}}


def report_centres(report: dict, model: str, dim: int | None = None) -> dict[int, np.ndarray]:
    """A report's topic centres (empty if it has none, or they are in another model's space); only
    finite, non-zero vectors of `dim` numbers (any one length if None) are kept."""
    section = report.get("centres") if isinstance(report, dict) else None
    if not isinstance(section, dict) or section.get("embedding_model") != model:
        return {}
    by_topic = section.get("by_topic")
    centres = {}
    for key, values in (by_topic.items() if isinstance(by_topic, dict) else ()):
        if not (str(key).isdigit() and isinstance(values, list) and values and (dim is None or len(values) == dim)
                and all(isinstance(x, (int, float)) and not isinstance(x, bool) and math.isfinite(x) for x in values)):
            continue
        vector = np.asarray(values, dtype=np.float32)
        if np.linalg.norm(vector) > 0:
            centres[int(key)] = _unit(vector)
    lengths = {len(v) for v in centres.values()}
    return centres if len(lengths) <= 1 else {}


def _topics(report: dict) -> list[dict]:
    """The report's topics that have an integer id (a malformed entry is skipped)."""
    topics = report.get("topics") if isinstance(report, dict) else None
    return [t for t in (topics if isinstance(topics, list) else [])
            if isinstance(t, dict) and isinstance(t.get("id"), int) and not isinstance(t.get("id"), bool)]


@dataclasses.dataclass(frozen=True)
class PreviousNights:
    """What tonight takes from the released nights before it: the lineages it may continue, and the
    warm start (the latest night's topic centres, largest first, seeded as clusters 0, 1, ... in
    that order, and the lineage each of them carries)."""

    known: tuple[KnownLineage, ...] = ()
    warm_centres: np.ndarray | None = None
    warm_lineages: tuple[str | None, ...] = ()

    @classmethod
    def of(cls, reports: list[dict], model: str, warm_start: bool = True, dim: int | None = None) -> "PreviousNights":
        known = tuple(known_lineages(reports, model, dim))
        latest = reports[-1] if reports and warm_start else {}
        centres = report_centres(latest, model, dim)
        seeds = [t for t in _topics(latest) if t["id"] in centres]
        if not seeds:
            return cls(known)
        return cls(known, np.stack([centres[t["id"]] for t in seeds]),
                   tuple(t.get("lineage") if valid_lineage_id(t.get("lineage")) else None for t in seeds))

    def seeded(self) -> dict[int, str]:
        """Tonight's cluster id -> the lineage of the warm centre it was seeded from."""
        return {cluster: lineage for cluster, lineage in enumerate(self.warm_lineages) if lineage}


def known_lineages(reports: list[dict], model: str, dim: int | None = None) -> list[KnownLineage]:
    """Every lineage in `reports` (released nights, oldest first) with its reference centre: the
    direction of the sum of its last SMOOTHING_NIGHTS released centres, which averages out part of
    each night's noise (one night's centre alone is as noisy as tonight's)."""
    history: dict[str, list[np.ndarray]] = {}
    last_date: dict[str, str | None] = {}
    for report in reports:
        centres = report_centres(report, model, dim)
        config = report.get("config") if isinstance(report, dict) else None
        for topic in _topics(report):
            if valid_lineage_id(topic.get("lineage")) and topic["id"] in centres:
                history.setdefault(topic["lineage"], []).append(centres[topic["id"]])
                last_date[topic["lineage"]] = config.get("date") if isinstance(config, dict) else None
    return [KnownLineage(lineage, _unit(np.sum(centres[-SMOOTHING_NIGHTS:], axis=0)), last_date[lineage])
            for lineage, centres in history.items()]


def assign_lineages(centres: dict[int, np.ndarray], known: list[KnownLineage], new_id_prefix: str,
                    min_cosine: float | None = None, seeded: dict[int, str] | None = None) -> dict[int, str]:
    """cluster id -> lineage id for tonight's released topics (`centres`: embedding-space directions).
    One-to-one: two of tonight's topics never share a lineage (a split keeps it for the closer one).
    `seeded`: cluster id -> the lineage whose centre seeded it (the warm start); k-means carried it
    from there, so that pair's similarity gets SEEDED_BONUS."""
    min_cosine = MIN_COSINE if min_cosine is None else min_cosine
    seeded = seeded or {}
    ids = sorted(centres)
    assigned: dict[int, str] = {}
    if ids and known:
        from scipy.optimize import linear_sum_assignment
        similarity = np.stack([_unit(centres[c]) for c in ids]) @ np.stack([k.centre for k in known]).T
        similarity += SEEDED_BONUS * np.array([[seeded.get(c) == k.id for k in known] for c in ids])
        rows, columns = linear_sum_assignment(-similarity)
        assigned = {ids[i]: known[j].id for i, j in zip(rows, columns) if similarity[i, j] >= min_cosine}
    return {c: assigned.get(c, f"{new_id_prefix}#{c}") for c in ids}


def _unit(vector: np.ndarray) -> np.ndarray:
    norm = np.linalg.norm(vector)
    return vector / norm if norm > 0 else vector
