"""A nightly stream of real conversations with one real theme held back, then about 6% of each night.

    python -m eval.utility.nightly_stream --real_stream --stream eval/results/real_stream --num_clusters 20 \
        --set kmeans_iterations=1 --set themes=true --repeats 5

builds (once; reused while its spec is the same) a stream in beam_jobs.generate_stream's layout
(dt=YYYY-MM-DD/conversations.jsonl and planted.json) from the real public sets in ../shared/data (read
from there, never copied into the repository) and evaluates it as eval/utility/nightly_stream.py does a
generated one.

- **Ground truth**, for scoring only (the job never reads it): each real conversation's topic is the
  keyword-set category most of its THEME_NEIGHBOURS nearest keywords belong to, under an embedding model
  the job does not use (all-mpnet-base-v2, LABEL_MODEL; the job embeds with all-MiniLM-L6-v2), so the
  themes are not scored against their own rule. The held-back theme (`HELD_BACK`, chosen before any run
  from the label counts) is "emerging"; every other label is "steady".
- **Nights**: `nights` nights of `per_night` conversations. Before `start_night` (0-based) they are drawn
  from the conversations outside the held-back theme; from it on, `share` of each night comes from the
  held-back theme. Draws are uniform with replacement (a real conversation recurs on several nights, as a
  user asking again), each keeps its user id (heavy-tailed and recurring, see ../shared/data/README.md)
  and gets a new conversation id and a time on its night.
"""

from __future__ import annotations

import dataclasses
import datetime as dt
import json
import os

import numpy as np

from config.embedding import Encoder
from eval.data import embed_cached, load_dataset
from eval.utility.topic_quality import SHARED_DATA
from synthetic.stream import WEEKDAYS, planted_or_written, write_night, write_planted

LABEL_MODEL = "all-mpnet-base-v2"
# The ground truth's own encoder (not the run's): its conversations' and its keywords' vectors both come from it.
LABEL_ENCODER = Encoder(LABEL_MODEL)
SOURCES = ("arena_hard_v2_prompts.jsonl", "hh_rlhf_harmless_test.jsonl")
# Chosen before any run, from the label counts (python -m eval.utility.real_stream): a request kind with
# at least 100 distinct conversations (120 of 3,062) that is not red-team material; the larger ones are
# (crime, hate, violence, personal data) or are broad (history and society, translation and languages).
HELD_BACK = "Creative writing"


@dataclasses.dataclass(frozen=True)
class RealStreamSpec:
    """A real-text stream: its nights and their size, the held-back theme and the share of each night it
    takes from `start_night` on (planted.json records it, with the sources and the labelling model)."""

    start: dt.date = dt.date(2026, 11, 1)
    nights: int = 21
    per_night: int = 600
    start_night: int = 10
    share: float = 0.06
    held_back: str = HELD_BACK
    seed: int = 5
    shared_data: str = SHARED_DATA

    def to_json(self) -> dict:
        return {**dataclasses.asdict(self), "start": self.start.isoformat(), "sources": list(SOURCES),
                "label_model": LABEL_MODEL}


def real_labels(shared_data: str = SHARED_DATA) -> tuple[list[dict], list[str]]:
    """(the real records as the job reads them, their ground-truth label each): the category of
    their LABEL_MODEL embedding by the themes' own public rule shape, a model the job does not use."""
    from backends.keyword_categories import KeywordCategories
    from backends.keyword_set import load_keyword_set
    from core.blas_threads import one_blas_thread
    from dp_ops.theme_histogram import OTHER_THEME, ThemeRule, nearest_theme
    from transforms.vectors import keyword_vectors

    records = []
    for name in SOURCES:
        with open(os.path.join(shared_data, name)) as handle:
            records += [json.loads(line) for line in handle if line.strip()]
    dataset = load_dataset(",".join(os.path.join(shared_data, name) for name in SOURCES))
    by_id = {record["conversation_id"]: record for record in records}
    kept = [by_id[cid] for cid in dataset.conversation_ids]  # the records the job's validation keeps
    vectors = embed_cached(dataset.facets, LABEL_ENCODER.model)
    keywords = load_keyword_set(None)
    categories = KeywordCategories.of_keyword_set(keywords, LABEL_ENCODER)
    rule = ThemeRule.of(keyword_vectors(LABEL_ENCODER, keywords.keywords), keywords.keywords,
                        categories.category_of, categories.names, min_similarity=LABEL_ENCODER.floors.theme)
    columns = tuple(categories.names) + (OTHER_THEME,)
    with one_blas_thread():
        return kept, [columns[nearest_theme(v, rule)] for v in vectors]


def night_records(spec: RealStreamSpec, records: list[dict], labels: list[str], night: int) -> list[dict]:
    """One night's records (sorted by time), each with its ground truth in `planted_topic`."""
    rng = np.random.default_rng([spec.seed, night])
    held = [i for i, label in enumerate(labels) if label == spec.held_back]
    rest = [i for i, label in enumerate(labels) if label != spec.held_back]
    n_held = int(round(spec.share * spec.per_night)) if night >= spec.start_night else 0
    chosen = ([held[i] for i in rng.integers(len(held), size=n_held)]
              + [rest[i] for i in rng.integers(len(rest), size=spec.per_night - n_held)])
    date = spec.start + dt.timedelta(days=night)
    midnight = dt.datetime.combine(date, dt.time(), tzinfo=dt.timezone.utc)
    seconds = sorted(int(s) for s in rng.integers(86400, size=len(chosen)))
    out = []
    for k, (index, second) in enumerate(zip(rng.permutation(chosen), seconds)):
        record = records[int(index)]
        out.append({"conversation_id": f"{record['conversation_id']}-{date:%Y%m%d}-{k:05d}",
                    "user_id": record["user_id"],
                    "timestamp": (midnight + dt.timedelta(seconds=second)).isoformat().replace("+00:00", "Z"),
                    "messages": record["messages"], "source": record.get("source", "real"),
                    "planted_topic": labels[int(index)]})
    return out


def write_real_stream(folder: str, spec: RealStreamSpec) -> dict:
    """Writes the stream under `folder` and returns its planted.json (the generated stream's keys)."""
    records, labels = real_labels(spec.shared_data)
    if labels.count(spec.held_back) < 50:
        raise ValueError(f"too few real conversations labelled {spec.held_back!r} to hold back: "
                         f"{labels.count(spec.held_back)}")
    summaries = []
    for night in range(spec.nights):
        date = (spec.start + dt.timedelta(days=night)).isoformat()
        rows = night_records(spec, records, labels, night)
        write_night(folder, date, rows)
        counts: dict[str, int] = {}
        for row in rows:
            counts[row["planted_topic"]] = counts.get(row["planted_topic"], 0) + 1
        summaries.append({"night": night, "date": date, "weekday": WEEKDAYS[dt.date.fromisoformat(date).weekday()],
                          "conversations": len(rows), "counts": counts})
    topics = sorted(set(labels))
    start_date = (spec.start + dt.timedelta(days=spec.start_night)).isoformat()
    planted = {
        "note": "private ground truth of a real-text stream (eval/utility/real_stream.py); never read by the job",
        "spec": spec.to_json(), "dates": [s["date"] for s in summaries], "topics": topics,
        "trends": [{"topic": topic, "kind": "emerging", "start_night": spec.start_night, "start_date": start_date}
                   if topic == spec.held_back else {"topic": topic, "kind": "steady", "start_night": 0}
                   for topic in topics],
        "nights": summaries,
    }
    write_planted(folder, planted)
    return planted


def prepare_real_stream(folder: str, spec: RealStreamSpec = RealStreamSpec()) -> dict:
    """planted.json of the real stream in `folder`, built first unless it holds this spec's stream."""
    return planted_or_written(folder, spec.to_json(), lambda: write_real_stream(folder, spec))


def main(argv: list[str] | None = None) -> None:
    import argparse
    import collections

    parser = argparse.ArgumentParser(description="Label counts of the real conversations (the held-back theme's choice).")
    parser.add_argument("--shared_data", default=SHARED_DATA)
    args = parser.parse_args(argv)
    _, labels = real_labels(args.shared_data)
    for label, n in collections.Counter(labels).most_common():
        print(f"{n:5d}  {label}")


if __name__ == "__main__":
    main()
