"""Topic quality: how well the released topics recover what is in the data.

Runs the job's mechanisms in-process (eval/urania_inprocess.run_urania) on cached embeddings, a few
seeds per data set, and scores each release against the private cluster assignments it came from
(eval only: a release never contains them). Generated data (records with `planted_topic`, from
beam_jobs.generate_sample) is also scored against the planted topics of
synthetic.topics.PLANTED_TOPICS (their expected keywords and themes).

Every data set:
  users after bounding, kept conversations, the run's epsilon and each stage's noise (std, or sigma
  per coordinate for k-means) as the report gives them; released topics, labelled ones (>= 1
  keyword) and their share; keyword occurrence: per labelled topic, the share of its conversations
  whose facet text contains one of its released keywords (case-insensitive, whole words), averaged
  plainly and weighted by the topic's conversations; agreement (NMI) of the private assignments with
  two non-private k-means on the same conversations (kept, in a released topic): `nonprivate` is
  run_urania at epsilon = inf (the job's k-means in its own projected space, no noise, same kept
  conversations), `kmeans` is scikit-learn's KMeans on the full embeddings of every conversation
  (no projection, no bounding; the ceiling).
Generated data, against the planted topics:
  nmi_released: NMI of the private assignments over the kept conversations in released topics;
  nmi_kept: over all kept conversations, the unreleased ones together as one label; beside them the
  two non-private k-means' NMI over the same conversations as nmi_released (nmi_kmeans: the
  ceiling); planted topics named: a planted topic is named (loose) when a released topic whose
  conversations are mostly from it releases a keyword, and (strict) when one of those keywords is
  one of its expected keywords; mixed topics: released topics whose second planted topic holds
  >= 20% (and >= 30%) of their conversations; names (keywords) joining themes: released topics
  whose name (released keywords) contains expected keywords of planted topics of two different
  themes; group purity of the report's hierarchy: each topic's theme is its majority
  planted topic's, each group's theme the one holding most of its conversations, purity the share
  of conversations (over all groups) in their group's theme.

    python -m eval.utility.topic_quality --preset planted_and_real --seeds 3 --skip_uncached [--evaldata DIR]
    python -m eval.utility.topic_quality --data gen20k=../evaldata/gen20k.jsonl:30 --seeds 3 --set projection_dim=64

--set FIELD=VALUE (repeatable) overrides any UraniaConfig field (eval/config_flags.py), so options the
job gains are measurable without editing this file.
Writes eval/results/topic_quality/topic_quality_LABEL.csv (one row per data set and seed) and .md.
"""

from __future__ import annotations

import argparse
import collections
import dataclasses
import functools
import math
import os
import re
import statistics
import time
from collections.abc import Iterable, Sequence

import numpy as np
from sklearn.metrics import normalized_mutual_info_score

from core.label_sources import VOTE_SOURCES
from eval.config_flags import JOB_DEFAULT, add_config_flags, config_from
from eval.data import RESULTS_DIR, Dataset, cache_path, embed_cached, load_dataset, planted_topics
from eval.tables import short_number, write_csv
from eval.urania_inprocess import UraniaConfig, run_urania
from eval.utility.utility_metrics import group_purity
from synthetic.topics import PLANTED_TOPICS

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
UNRELEASED = "not released"
MIXED_THRESHOLDS = (0.2, 0.3)
UNTABULATED = ("seconds",)  # in the CSV only: the first run of a process also loads the models
EVALDATA = "../evaldata"  # --evaldata: the generated sets, relative to the repository root unless absolute
SHARED_DATA = "../shared/data"  # --shared_data: the public real sets, likewise
# name -> data sets (name, folder, file, k); folder "evaldata" or "shared_data", the option that gives it.
# planted_and_real: three generated sets with planted topics (generate_sample --conversations 5000
# --users 1800 --seed 7; 20000/3200 --topics 20 --seed 20; 100000/16000 --topics 20 --seed 100) and
# two real ones without.
PRESETS = {
    "planted_and_real": (("gen5k", "evaldata", "gen5k.jsonl", 50), ("gen20k", "evaldata", "gen20k.jsonl", 30),
                         ("gen100k", "evaldata", "gen100k.jsonl", 50),
                         ("hh-rlhf", "shared_data", "hh_rlhf_harmless_test.jsonl", 30),
                         ("arena", "shared_data", "arena_hard_v2_prompts.jsonl", 15)),
}


# ---- metrics (pure functions of assignments, labels and released topics) ----

def nmi(labels_a: Sequence, labels_b: Sequence) -> float | None:
    """scikit-learn's normalized_mutual_info_score (arithmetic normalisation) of two labellings of
    the same items; labels of any hashable kind (compared as strings); None for no items."""
    if len(labels_a) != len(labels_b):
        raise ValueError(f"two labellings of different lengths: {len(labels_a)} and {len(labels_b)}")
    if not len(labels_a):
        return None
    return float(normalized_mutual_info_score([str(a) for a in labels_a], [str(b) for b in labels_b]))


def with_unreleased(assignments: dict[str, int], released: Iterable[int]) -> dict[str, object]:
    """Each conversation's cluster, or UNRELEASED (one label for all) if its cluster was not released."""
    released = set(released)
    return {cid: (c if c in released else UNRELEASED) for cid, c in assignments.items()}


def composition(assignments: dict[str, int], truth: dict[str, str]) -> dict[int, collections.Counter]:
    """cluster -> Counter of the true labels of its conversations."""
    counts: dict[int, collections.Counter] = collections.defaultdict(collections.Counter)
    for cid, cluster in assignments.items():
        counts[cluster][truth[cid]] += 1
    return dict(counts)


def ranked_shares(counts: collections.Counter) -> list[tuple[str, float]]:
    """(label, share) largest first; ties by label, so the majority is deterministic."""
    total = sum(counts.values())
    return [(label, n / total) for label, n in sorted(counts.items(), key=lambda kv: (-kv[1], str(kv[0])))]


def planted_named(topics: Sequence[dict], counts: dict[int, collections.Counter],
                  expected: dict[str, Sequence[str]]) -> tuple[set[str], set[str]]:
    """(loose, strict) sets of named planted topics: loose, some released topic mostly from it
    releases a keyword; strict, one of that topic's keywords is one of its expected keywords."""
    loose, strict = set(), set()
    for topic in topics:
        if not topic["keywords"] or not counts.get(topic["id"]):
            continue
        majority = ranked_shares(counts[topic["id"]])[0][0]
        loose.add(majority)
        if {k.lower() for k in topic["keywords"]} & {k.lower() for k in expected[majority]}:
            strict.add(majority)
    return loose, strict


def mixed_topics(topics: Sequence[dict], counts: dict[int, collections.Counter], threshold: float) -> int:
    """Released topics whose second largest true label holds at least `threshold` of them."""
    mixed = 0
    for topic in topics:
        shares = ranked_shares(counts.get(topic["id"], collections.Counter()))
        mixed += len(shares) > 1 and shares[1][1] >= threshold
    return mixed


@functools.lru_cache(maxsize=4096)
def _phrase_pattern(phrase: str) -> re.Pattern:
    words = phrase.lower().split()
    return re.compile(r"(?<!\w)" + r"\s+".join(re.escape(w) for w in words) + r"(?!\w)")


def mentions(text: str, phrase: str) -> bool:
    """Whether `text` contains `phrase` as whole words, case-insensitively ("api" not in "rapid")."""
    return bool(phrase.split()) and _phrase_pattern(phrase).search(text.lower()) is not None


def themes_mentioned(texts: Sequence[str], expected: dict[str, Sequence[str]], themes: dict[str, str]) -> set[str]:
    """Themes of the planted topics whose expected keywords the texts contain (whole words)."""
    return {themes[planted] for planted, keywords in expected.items()
            if any(mentions(text, keyword) for keyword in keywords for text in texts)}


def topics_joining_themes(topics: Sequence[dict], expected: dict[str, Sequence[str]], themes: dict[str, str],
                          field: str) -> int:
    """Topics whose `field` ("name": the name; "keywords": the released keywords) contains expected
    keywords of planted topics of two different themes."""
    def texts(topic):
        return [topic["name"]] if field == "name" else topic["keywords"]
    return sum(len(themes_mentioned(texts(topic), expected, themes)) >= 2 for topic in topics)


def keyword_occurrence(topics: Sequence[dict], assignments: dict[str, int],
                       facets: dict[str, str]) -> tuple[float | None, float | None]:
    """(weighted, plain) mean over labelled topics of the share of their conversations whose facet
    contains one of the topic's keywords; weighted by conversations. (None, None) if none labelled."""
    members: dict[int, list[str]] = collections.defaultdict(list)
    for cid, cluster in assignments.items():
        members[cluster].append(cid)
    shares, sizes = [], []
    for topic in topics:
        inside = members.get(topic["id"], [])
        if not topic["keywords"] or not inside:
            continue
        hits = sum(any(mentions(facets[cid], k) for k in topic["keywords"]) for cid in inside)
        shares.append(hits / len(inside))
        sizes.append(len(inside))
    if not shares:
        return None, None
    return float(np.average(shares, weights=sizes)), statistics.fmean(shares)


# ---- runs ----

@dataclasses.dataclass(frozen=True)
class DataSpec:
    name: str
    path: str
    num_clusters: int


@dataclasses.dataclass
class Loaded:
    spec: DataSpec
    dataset: Dataset
    embeddings: np.ndarray
    planted: dict[str, str] | None  # conversation_id -> planted topic; None for unlabelled data


def parse_data(value: str, default_clusters: int) -> DataSpec:
    """[NAME=]PATH[:K]; NAME defaults to the file's name, K to --num_clusters."""
    name, _, path = value.rpartition("=")
    head, _, tail = path.rpartition(":")
    path, clusters = (head, int(tail)) if head and tail.isdigit() else (path, default_clusters)
    return DataSpec(name or os.path.splitext(os.path.basename(path))[0], path, clusters)


def preset_specs(preset: str | None, evaldata: str = EVALDATA, shared_data: str = SHARED_DATA) -> list[DataSpec]:
    """The preset's data sets, their files in the folders given (none for no preset)."""
    folders = {"evaldata": evaldata, "shared_data": shared_data}
    return [DataSpec(name, os.path.join(folders[folder], file), k)
            for name, folder, file, k in PRESETS.get(preset, ())]


def _resolve(path: str) -> str:
    return path if os.path.isabs(path) or os.path.exists(path) else os.path.join(REPO, path)


def load(spec: DataSpec, skip_uncached: bool, model: str) -> Loaded | None:
    """The data set with its cached embeddings; None if `skip_uncached` and they are not cached."""
    path = _resolve(spec.path)
    dataset = load_dataset(path)
    if skip_uncached and not os.path.exists(cache_path(dataset.facets, model)):
        return None
    ids = dataset.conversation_ids
    if len(set(ids)) != len(ids):
        raise SystemExit(f"{path}: conversation ids repeat; assignments are keyed by them")
    planted = planted_topics(path)
    if planted and not all(cid in planted for cid in ids):
        raise SystemExit(f"{path}: only some records have planted_topic")
    return Loaded(spec, dataset, embed_cached(dataset.facets, model), planted or None)


def reference_kmeans(embeddings: np.ndarray, num_clusters: int, seed: int = 0) -> np.ndarray:
    """scikit-learn KMeans on the full embeddings of every conversation: the non-private ceiling."""
    from sklearn.cluster import KMeans
    return KMeans(n_clusters=num_clusters, n_init=1, random_state=seed).fit_predict(embeddings)


def _noise_figures(report: dict) -> dict:
    figures = {}
    for mechanism in report["privacy"].get("mechanisms", []):
        noise = mechanism["noise"]
        figures[f"noise_{mechanism['stage']}"] = noise.get("std", noise.get("sigma"))
    return figures


def measure(loaded: Loaded, config: UraniaConfig, seed: int, kmeans_labels: np.ndarray) -> dict:
    """One seed's figures: the private run, the epsilon = inf run on the same kept conversations."""
    data = loaded.dataset
    ids, users, facets = data.conversation_ids, data.user_ids, data.facets
    started = time.time()
    report = run_urania(ids, users, facets, loaded.embeddings, config, seed=seed, noise_seed=seed)
    seconds = time.time() - started
    nonprivate = run_urania(ids, users, facets, loaded.embeddings, dataclasses.replace(config, epsilon=math.inf),
                            seed=seed, noise_seed=seed)["_private"]["assignments"]
    assignments = report["_private"]["assignments"]
    topics = report["topics"]
    released_ids = {t["id"] for t in topics}
    in_released = [cid for cid, c in assignments.items() if c in released_ids]
    position = {cid: i for i, cid in enumerate(ids)}
    kmeans = {cid: int(kmeans_labels[position[cid]]) for cid in assignments}
    labelled = sum(1 for t in topics if t["keywords"])
    # Labelled from the DP keyword votes, not from the keywords nearest the DP centre (the fallback).
    labelled_by_votes = sum(1 for t in topics if t.get("label_source") in VOTE_SOURCES)
    weighted, plain = keyword_occurrence(topics, assignments, dict(zip(ids, facets)))
    row = {
        "dataset": loaded.spec.name, "seed": seed, "k": config.num_clusters, "conversations": len(ids),
        "kept_conversations": len(assignments), "users_after_bounding": len({users[position[c]] for c in assignments}),
        "epsilon": report["privacy"].get("epsilon"), "delta": report["privacy"].get("delta"),
        **_noise_figures(report),
        "released": len(topics), "labelled": labelled, "labelled_share": labelled / len(topics) if topics else None,
        "labelled_by_votes": labelled_by_votes,
        "labelled_by_votes_share": labelled_by_votes / len(topics) if topics else None,
        "occurrence_weighted": weighted, "occurrence_plain": plain,
        "agree_nonprivate": nmi([assignments[c] for c in in_released], [nonprivate[c] for c in in_released]),
        "agree_kmeans": nmi([assignments[c] for c in in_released], [kmeans[c] for c in in_released]),
    }
    if loaded.planted is not None:
        row.update(planted_figures(loaded.planted, assignments, nonprivate, kmeans, topics, in_released))
        counts = composition({c: assignments[c] for c in in_released}, loaded.planted)
        themes = {p.name: p.theme for p in PLANTED_TOPICS}
        topic_theme = {t: themes[ranked_shares(n)[0][0]] for t, n in counts.items()}
        groups = report["hierarchy"]["groups"]
        row["groups"] = len(groups)
        row["group_purity"] = group_purity(groups, topic_theme, {t: sum(n.values()) for t, n in counts.items()})
    row["seconds"] = seconds
    return row


def planted_figures(planted: dict[str, str], assignments: dict[str, int], nonprivate: dict[str, int],
                    kmeans: dict[str, int], topics: Sequence[dict], in_released: Sequence[str]) -> dict:
    known = {p.name for p in PLANTED_TOPICS}
    unknown = set(planted.values()) - known
    if unknown:
        raise SystemExit(f"planted topics not in synthetic.topics: {sorted(unknown)}")
    expected = {p.name: p.expected_keywords for p in PLANTED_TOPICS}
    themes = {p.name: p.theme for p in PLANTED_TOPICS}
    truth = [planted[c] for c in in_released]
    kept_labels = with_unreleased(assignments, {t["id"] for t in topics})
    counts = composition({c: assignments[c] for c in in_released}, planted)
    loose, strict = planted_named(topics, counts, expected)
    return {
        "planted": len(set(planted.values())),
        "nmi_released": nmi([assignments[c] for c in in_released], truth),
        "nmi_kept": nmi(list(kept_labels.values()), [planted[c] for c in kept_labels]),
        "nmi_nonprivate": nmi([nonprivate[c] for c in in_released], truth),
        "nmi_kmeans": nmi([kmeans[c] for c in in_released], truth),
        "named_loose": len(loose), "named_strict": len(strict),
        **{f"mixed_{t:g}": mixed_topics(topics, counts, t) for t in MIXED_THRESHOLDS},
        "names_joining_themes": topics_joining_themes(topics, expected, themes, "name"),
        "keywords_joining_themes": topics_joining_themes(topics, expected, themes, "keywords"),
    }


# ---- tables ----

def summarise(rows: Sequence[dict]) -> dict[str, tuple[float, float, float] | None]:
    """metric -> (mean, min, max) over the rows (seeds); None where no row has a value."""
    summary = {}
    for key in rows[0]:
        if key in ("dataset", "seed"):
            continue
        values = [r[key] for r in rows if isinstance(r.get(key), (int, float)) and r[key] is not None]
        summary[key] = (statistics.fmean(values), min(values), max(values)) if values else None
    return summary


def markdown_table(rows: Sequence[dict]) -> str:
    """One data set's table: each metric's mean, min and max over the seeds."""
    lines = ["| metric | mean | min | max |", "|---|---|---|---|"]
    for key, stats in summarise(rows).items():
        if key in UNTABULATED:
            continue
        cells = ["-"] * 3 if stats is None else [short_number(v) for v in stats]
        lines.append(f"| {key} | " + " | ".join(cells) + " |")
    return "\n".join(lines)


def combined_table(rows: Sequence[dict]) -> str:
    """All data sets side by side: "mean (min-max)" per metric, "-" where a metric does not apply."""
    names = list(dict.fromkeys(row["dataset"] for row in rows))
    summaries = {name: summarise([r for r in rows if r["dataset"] == name]) for name in names}
    metrics = [key for key in dict.fromkeys(k for s in summaries.values() for k in s) if key not in UNTABULATED]
    lines = ["| metric | " + " | ".join(names) + " |", "|---|" + "---|" * len(names)]
    for key in metrics:
        cells = []
        for name in names:
            stats = summaries[name].get(key)
            if stats is None:
                cells.append("-")
            else:
                mean, low, high = (short_number(v) for v in stats)
                cells.append(mean if low == high else f"{mean} ({low}-{high})")
        lines.append(f"| {key} | " + " | ".join(cells) + " |")
    return "\n".join(lines)


def write_outputs(rows: Sequence[dict], markdown: str, folder: str, label: str) -> tuple[str, str]:
    os.makedirs(folder, exist_ok=True)
    csv_path, md_path = (os.path.join(folder, f"topic_quality_{label}.{ext}") for ext in ("csv", "md"))
    write_csv(rows, csv_path)
    with open(md_path, "w") as handle:
        handle.write(markdown + "\n")
    return csv_path, md_path


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description="Topic quality of the in-process URANIA release.")
    parser.add_argument("--data", action="append", default=[], metavar="[NAME=]PATH[:K]",
                        help="a data set and its number of clusters (repeatable)")
    parser.add_argument("--preset", choices=sorted(PRESETS),
                        help="planted_and_real: three generated sets (in --evaldata) and two real ones (in "
                             "--shared_data), each with its k")
    parser.add_argument("--evaldata", default=EVALDATA,
                        help=f"folder of the preset's generated sets (default {EVALDATA}, relative to the repository)")
    parser.add_argument("--shared_data", default=SHARED_DATA,
                        help=f"folder of the preset's real sets (default {SHARED_DATA}, relative to the repository)")
    add_config_flags(parser, num_clusters=JOB_DEFAULT)  # k for --data without :K
    parser.add_argument("--seeds", type=int, default=3)
    parser.add_argument("--first_seed", type=int, default=0)
    parser.add_argument("--skip_uncached", action="store_true",
                        help="skip data sets whose embeddings are not cached yet instead of embedding them")
    parser.add_argument("--output", default=os.path.join(RESULTS_DIR, "topic_quality"))
    parser.add_argument("--label", default="latest", help="output file name: topic_quality_LABEL.csv/.md")
    args = parser.parse_args(argv)
    specs = preset_specs(args.preset, args.evaldata, args.shared_data)
    specs += [parse_data(value, args.num_clusters) for value in args.data]
    if not specs:
        parser.error("give --data or --preset")
    seeds = range(args.first_seed, args.first_seed + args.seeds)
    all_rows, sections = [], []
    for spec in specs:
        config = config_from(args, num_clusters=spec.num_clusters)
        loaded = load(spec, args.skip_uncached, config.embedding_model)
        if loaded is None:
            print(f"{spec.name}: embeddings not cached yet, skipped (--skip_uncached)", flush=True)
            sections.append(f"### {spec.name}\n\nskipped: embeddings not cached")
            continue
        kmeans_labels = reference_kmeans(loaded.embeddings, spec.num_clusters)
        rows = []
        for seed in seeds:
            rows.append(measure(loaded, config, seed, kmeans_labels))
            print(f"{spec.name} seed {seed}: {rows[-1]['released']} released, {rows[-1]['labelled']} labelled, "
                  f"{rows[-1]['seconds']:.0f} s", flush=True)
        all_rows += rows
        title = (f"### {spec.name}: {len(loaded.dataset):,} conversations, k={spec.num_clusters}, seeds "
                 f"{seeds.start}-{seeds.stop - 1}" + (f", {' '.join(args.set)}" if args.set else ""))
        sections.append(f"{title}\n\n{markdown_table(rows)}")
        print(f"\n{sections[-1]}\n", flush=True)
    if all_rows:
        sections.append(f"### all data sets: mean (min-max) over seeds\n\n{combined_table(all_rows)}")
        print(f"{sections[-1]}\n", flush=True)
    markdown = "\n\n".join(sections)
    if all_rows:
        paths = write_outputs(all_rows, markdown, args.output, args.label)
        print(f"wrote {paths[0]} and {paths[1]}")


if __name__ == "__main__":
    main()
