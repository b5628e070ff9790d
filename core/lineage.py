"""Topic lineages: one id for the same topic from night to night, from released centres only.

Each nightly report publishes its topics' DP k-means centres as unit directions of the embedding
space (`centres_section`; post-processing of the DP centres, so no budget). The next night seeds
its k-means from them (dp_ops.dp_kmeans.warm_seed_centres) and matches its own centres to the
lineages of the last LOOKBACK_NIGHTS released nights (the latest centre of each): a one-to-one
assignment of highest total cosine similarity (Hungarian), keeping pairs at or above
MIN_COSINE. A topic that matches keeps the lineage's id; any other starts a lineage, named by the
run's date and its cluster id. Matching a lineage last seen some nights ago lets a topic that
dipped below the size floor for a night, or a weekly topic, come back under its own id.
"""

from __future__ import annotations

import dataclasses

import numpy as np

# How far back a vanished topic can come back under its id, in released nights.
LOOKBACK_NIGHTS = 14
# The least cosine similarity of a topic's centre to a lineage's reference centre. Measured on six
# generated nights of 1,000 conversations (k = 20, the planned noise of a 30-night window of cap 30):
# centres whose clusters share their main planted topic have a median cosine of 0.65 night to night,
# others 0.07 (95th percentile 0.39); planted topics keeping their lineage: 0.5 -> 73%, 0.4 -> 78%,
# 0.3 -> 81% (with 6 nights of smoothing). The one-to-one assignment keeps two topics off one lineage.
MIN_COSINE = 0.4
# A lineage's reference centre sums its last few nights' centres (see known_lineages).
SMOOTHING_NIGHTS = 3
# Rounded to what the comparison needs; shorter numbers also keep long digit runs, which the release
# gate reads as account numbers, out of the file.
CENTRE_DECIMALS = 5


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


def report_centres(report: dict, model: str) -> dict[int, np.ndarray]:
    """A report's topic centres (empty if it has none, or they are in another model's space)."""
    section = report.get("centres") or {}
    if section.get("embedding_model") != model:
        return {}
    return {int(c): _unit(np.asarray(v, dtype=np.float64)) for c, v in section.get("by_topic", {}).items()}


def warm_start_centres(report: dict | None, model: str) -> np.ndarray | None:
    """The centres to seed tonight's k-means from: the latest night's released topics, largest first."""
    if report is None:
        return None
    centres = report_centres(report, model)
    order = [t["id"] for t in report.get("topics", []) if t["id"] in centres]
    return np.stack([centres[c] for c in order]) if order else None


def known_lineages(reports: list[dict], model: str) -> list[KnownLineage]:
    """Every lineage in `reports` (released nights, oldest first) with its reference centre: the
    direction of the sum of its last SMOOTHING_NIGHTS released centres, which averages out part of
    each night's noise (one night's centre alone is as noisy as tonight's)."""
    history: dict[str, list[np.ndarray]] = {}
    last_date: dict[str, str | None] = {}
    for report in reports:
        centres = report_centres(report, model)
        for topic in report.get("topics", []):
            if topic.get("lineage") and topic["id"] in centres:
                history.setdefault(topic["lineage"], []).append(centres[topic["id"]])
                last_date[topic["lineage"]] = report.get("config", {}).get("date")
    return [KnownLineage(lineage, _unit(np.sum(centres[-SMOOTHING_NIGHTS:], axis=0)), last_date[lineage])
            for lineage, centres in history.items()]


def assign_lineages(centres: dict[int, np.ndarray], known: list[KnownLineage], new_id_prefix: str,
                    min_cosine: float | None = None) -> dict[int, str]:
    """cluster id -> lineage id for tonight's released topics (`centres`: embedding-space directions).
    One-to-one: two of tonight's topics never share a lineage (a split keeps it for the closer one)."""
    min_cosine = MIN_COSINE if min_cosine is None else min_cosine
    ids = sorted(centres)
    assigned: dict[int, str] = {}
    if ids and known:
        from scipy.optimize import linear_sum_assignment
        similarity = np.stack([_unit(centres[c]) for c in ids]) @ np.stack([k.centre for k in known]).T
        rows, columns = linear_sum_assignment(-similarity)
        assigned = {ids[i]: known[j].id for i, j in zip(rows, columns) if similarity[i, j] >= min_cosine}
    return {c: assigned.get(c, f"{new_id_prefix}#{c}") for c in ids}


def _unit(vector: np.ndarray) -> np.ndarray:
    norm = np.linalg.norm(vector)
    return vector / norm if norm > 0 else vector
