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
and the matching runs inside the pipeline after the night's noise is drawn, so what is read from
them is checked and nothing in them may fail the night:

- a centre must be a non-zero vector of the embedding's dimension whose coordinates are at most
  1 + CENTRE_TOLERANCE in size (a unit vector's, written to CENTRE_DECIMALS), finite as read, as
  float32 and once normalised; a lineage's reference centre must be finite and non-zero too;
- a lineage id is inherited (and so republished every night the topic continues) only in a form this
  code writes (`LINEAGE_ID`): `YYYY-MM-DD#N` (the job's: the run's date and the cluster id),
  `YYYYMMDDTHHMMSSZ-xxxxxx#N` (a run id, core/run_context.py, for a run without a date) or `seedN#N`
  (the in-process evaluation's); its date (a run id's day) must be a real date no later than the
  report it appears in and, where the caller knows the output folder's committed nights
  (publishing.released_runs.committed_dates), one of them (a `seedN` id, which has no date, is then
  refused); and the release gate's patterns (publishing.release_gate) must find nothing in it;
- anything else is ignored, and should the matching fail all the same, every topic starts a lineage
  (logged): never fatal.
"""

from __future__ import annotations

import dataclasses
import logging
import math
import re
from collections.abc import Collection

import numpy as np

from core.dates import day_of_run_id, iso_date
from core.pii_patterns import PII_PATTERNS

log = logging.getLogger("urania.lineage")

# How far back a vanished topic can come back under its id, in released nights.
LOOKBACK_NIGHTS = 14
# The least cosine similarity of a topic's centre to a lineage's reference centre. On the generated
# 60-night stream (eval/utility/nightly_stream.py: 1,000 conversations a night, k = 20, the planned noise of a
# 30-night window of cap 30, warm starts, one Lloyd step) one planted topic's centres on consecutive
# nights had cosines p10 0.50, median 0.77, and distinct topics' on one night p90 0.27; 0.3 and 0.4
# kept lineages about equally there (88.9-91.9% against 88.8-90.3% of released nights, 3 runs each).
# With the warm prior (dp_ops.dp_kmeans.DEFAULT_WARM_PRIOR, themes on) the same topic's are p10 0.91,
# median 0.96, and distinct topics' p90 0.25-0.26 (5 runs), so the threshold sits well between them.
MIN_COSINE = 0.4
# Added to the similarity of a topic and the lineage whose centre seeded it (see assign_lineages).
SEEDED_BONUS = 0.2
# A lineage's reference centre sums its last few nights' centres (see known_lineages).
SMOOTHING_NIGHTS = 3
# Rounded to what the comparison needs; shorter numbers also keep long digit runs, which the release
# gate reads as account numbers, out of the file.
CENTRE_DECIMALS = 5
# How far beyond 1 a released unit vector's coordinate may read (rounding to CENTRE_DECIMALS moves it
# by 5e-6 at most); a larger one was not written by this code, and 1e39 overflows float32.
CENTRE_TOLERANCE = 1e-3


# A lineage id this code writes: the run's date, or its run id (core/run_context.py) when it has none,
# or "seedN" in-process (eval/urania_inprocess.py); '#'; its cluster id.
LINEAGE_ID = re.compile(r"^(?:(?P<date>[0-9]{4}-[0-9]{2}-[0-9]{2})|(?P<run_id>[0-9]{8}T[0-9]{6}Z-[0-9a-f]{6})"
                        r"|(?P<seed>seed[0-9]{1,10}))#[0-9]{1,5}$")


def valid_lineage_id(value, report_date: str | None = None, committed: Collection[str] | None = None) -> bool:
    """Whether `value` may be inherited: of a form this code writes (LINEAGE_ID), with nothing in it the
    release gate flags, and its date (if any) a real date, no later than `report_date` (the night of
    the report it was read from, when known) and, given `committed` (the output folder's committed
    nights), one of them (an id without a date then never is)."""
    match = LINEAGE_ID.match(value) if isinstance(value, str) else None
    if match is None or any(pattern.search(value) for pattern in PII_PATTERNS.values()):
        return False
    date = _started(match)
    if date is None:  # a seedN id (in-process only), or a date or run id that names no real day
        return match["seed"] is not None and committed is None
    return (report_date is None or date <= report_date) and (committed is None or date in committed)


def _started(match: re.Match) -> str | None:
    """The day a lineage id's lineage started (YYYY-MM-DD), None if it names none (or no real day)."""
    if match["run_id"] is not None:
        return day_of_run_id(match["run_id"])
    try:
        return iso_date(match["date"]) if match["date"] is not None else None
    except ValueError:
        return None


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
    non-zero vectors of `dim` numbers (any one length if None) that a unit vector could have been
    written as (see the module docstring) are kept, as unit vectors."""
    section = report.get("centres") if isinstance(report, dict) else None
    if not isinstance(section, dict) or section.get("embedding_model") != model:
        return {}
    by_topic = section.get("by_topic")
    centres = {}
    for key, values in (by_topic.items() if isinstance(by_topic, dict) else ()):
        if not (str(key).isdigit() and isinstance(values, list) and values and (dim is None or len(values) == dim)
                and all(_coordinate(x) for x in values)):
            continue
        centre = _direction(np.asarray(values, dtype=np.float32))
        if centre is not None:
            centres[int(key)] = centre
    lengths = {len(v) for v in centres.values()}
    return centres if len(lengths) <= 1 else {}


def _coordinate(value) -> bool:
    """Whether `value` can be a coordinate of a released unit vector."""
    return (isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value)
            and abs(value) <= 1 + CENTRE_TOLERANCE)


def _direction(vector: np.ndarray) -> np.ndarray | None:
    """`vector` normalised, or None if it has no direction: zero, or not finite before or after."""
    if not np.isfinite(vector).all():
        return None
    norm = np.linalg.norm(vector)
    if not (np.isfinite(norm) and norm > 0):
        return None
    unit = vector / norm
    return unit if np.isfinite(unit).all() else None


def released_topics(report: dict) -> list[dict]:
    """The report's topics that have an integer id (a malformed entry is skipped)."""
    topics = report.get("topics") if isinstance(report, dict) else None
    return [t for t in (topics if isinstance(topics, list) else [])
            if isinstance(t, dict) and isinstance(t.get("id"), int) and not isinstance(t.get("id"), bool)]


def known_lineages(reports: list[dict], model: str, dim: int | None = None,
                   committed: Collection[str] | None = None) -> list[KnownLineage]:
    """Every lineage in `reports` (released nights, oldest first) with its reference centre: the
    direction of the sum of its last SMOOTHING_NIGHTS released centres, which averages out part of
    each night's noise (one night's centre alone is as noisy as tonight's). A lineage whose sum has no
    direction is left out; `committed` as for publishing.previous_nights.PreviousNights.of."""
    history: dict[str, list[np.ndarray]] = {}
    last_date: dict[str, str | None] = {}
    for report in reports:
        centres = report_centres(report, model, dim)
        for topic in released_topics(report):
            lineage = inheritable_lineage(topic, report, committed)
            if lineage is not None and topic["id"] in centres:
                history.setdefault(lineage, []).append(centres[topic["id"]])
                last_date[lineage] = _report_date(report)
    reference = {lineage: _direction(np.sum(centres[-SMOOTHING_NIGHTS:], axis=0))
                 for lineage, centres in history.items()}
    return [KnownLineage(lineage, centre, last_date[lineage]) for lineage, centre in reference.items()
            if centre is not None]


def split_parents(reports: list[dict]) -> dict[str, str]:
    """lineage id -> the lineage it split from, for the lineages of `reports` (released nights, oldest first)
    whose first night's centre is within MIN_COSINE of a lineage released in the LOOKBACK_NIGHTS nights
    before it. Tonight's matching is one-to-one, so such a topic would have continued that lineage had
    another of tonight's topics not been closer to it: it is a part of a known topic (a cluster that
    split, or took a share of its neighbour's conversations), not a topic that was not there before.
    Centres are compared in the space each report names; a report without centres splits nothing.
    Post-processing of released centres, like the matching itself."""
    parents: dict[str, str] = {}
    seen: set[str] = set()
    for index, report in enumerate(reports):
        section = report.get("centres") if isinstance(report, dict) else None
        model = section.get("embedding_model") if isinstance(section, dict) else None
        centres = report_centres(report, model) if isinstance(model, str) else {}
        starting = [t for t in released_topics(report) if isinstance(t.get("lineage"), str) and t["lineage"] not in seen]
        seen.update(t["lineage"] for t in released_topics(report) if isinstance(t.get("lineage"), str))
        if not (starting and centres and index):
            continue
        known = known_lineages(reports[max(0, index - LOOKBACK_NIGHTS):index], model)
        if not known:
            continue
        references = np.stack([k.centre for k in known])
        for topic in starting:
            if topic["id"] in centres and len(centres[topic["id"]]) == references.shape[1]:
                similarity = references @ centres[topic["id"]]
                best = int(np.argmax(similarity))
                if similarity[best] >= MIN_COSINE:
                    parents[topic["lineage"]] = known[best].id
    return parents


def _report_date(report: dict) -> str | None:
    """The night a report was released (its config's date as YYYY-MM-DD), None if it names none."""
    config = report.get("config") if isinstance(report, dict) else None
    try:
        return iso_date(config.get("date")) if isinstance(config, dict) else None
    except ValueError:
        return None


def inheritable_lineage(topic: dict, report: dict, committed: Collection[str] | None) -> str | None:
    """The topic's lineage id if it may be inherited (valid_lineage_id), else None."""
    lineage = topic.get("lineage")
    return lineage if valid_lineage_id(lineage, _report_date(report), committed) else None


def assign_lineages(centres: dict[int, np.ndarray], known: list[KnownLineage], new_id_prefix: str,
                    min_cosine: float | None = None, seeded: dict[int, str] | None = None) -> dict[int, str]:
    """cluster id -> lineage id for tonight's released topics (`centres`: embedding-space directions).
    One-to-one: two of tonight's topics never share a lineage (a split keeps it for the closer one).
    `seeded`: cluster id -> the lineage whose centre seeded it (the warm start); k-means carried it
    from there, so that pair's similarity gets SEEDED_BONUS. Should the matching fail, every topic
    starts a lineage (logged): it runs after the night's noise is drawn, so it must never fail the run."""
    ids = sorted(centres)
    try:
        assigned = _matched(centres, known, MIN_COSINE if min_cosine is None else min_cosine, seeded or {})
    except Exception as error:  # whatever an altered earlier report leads to: numpy's, scipy's
        log.warning("lineage matching failed: every topic starts a lineage",
                    extra={"event": "lineage_matching_failed", "error": str(error)})
        assigned = {}
    return {c: assigned.get(c, f"{new_id_prefix}#{c}") for c in ids}


def _matched(centres: dict[int, np.ndarray], known: list[KnownLineage], min_cosine: float,
             seeded: dict[int, str]) -> dict[int, str]:
    """cluster id -> the known lineage it continues (Hungarian assignment, pairs at or above min_cosine)."""
    ids = sorted(centres)
    if not (ids and known):
        return {}
    from scipy.optimize import linear_sum_assignment
    similarity = np.stack([_unit(centres[c]) for c in ids]) @ np.stack([k.centre for k in known]).T
    similarity += SEEDED_BONUS * np.array([[seeded.get(c) == k.id for k in known] for c in ids])
    rows, columns = linear_sum_assignment(-similarity)
    return {ids[i]: known[j].id for i, j in zip(rows, columns) if similarity[i, j] >= min_cosine}


def _unit(vector: np.ndarray) -> np.ndarray:
    norm = np.linalg.norm(vector)
    return vector / norm if norm > 0 else vector
