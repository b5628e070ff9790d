"""Label fit (issue 27, item 4): do the released labels describe their own topic's conversations
better than the run's other labels, judged by an embedding model the job does not use?

    python -m eval.utility.label_fit --seeds 0 1 \
        --data real=../shared/data/arena_hard_v2_prompts.jsonl,../shared/data/hh_rlhf_harmless_test.jsonl:20
    python -m eval.utility.label_fit --data gen=/tmp/lf/gen.jsonl:20 --seeds 0 [--judge_model all-mpnet-base-v2] \
        [--set FIELD=VALUE]

`--data NAME=PATH:K` (repeatable; PATH may be several files joined by commas, read in that order as
one data set; K the number of clusters). For each data set and seed it runs the in-process URANIA
(eval.urania_inprocess.run_urania, the job's mechanisms on cached embeddings of the job's model) and
a non-private reference on the same kept conversations (after contribution bounding): spherical
k-means with the same k (scikit-learn KMeans on the normalised job-model embeddings, n_init=4,
random_state=seed) labelled by c-TF-IDF (BERTopic's class-based TF-IDF, top 5 terms). Each label is
one text: a released topic's name and keywords ("name: kw1, kw2"), a reference cluster's terms
("t1, t2, ..."). The judge model (default all-mpnet-base-v2; install it once with
scripts/install_mpnet.py) embeds every member conversation's facet text and every label of the run;
a conversation counts for top-1 (top-3) when its own topic's label is the nearest (among the 3
nearest) of all the run's labels by cosine similarity; ties count against it.

Printed per data set and seed, then averaged over the seeds:
  topics       released topics (DP) / reference clusters with a c-TF-IDF label (ref topics)
  members      conversations in those topics (the DP side excludes clusters too small to release)
  DP top1/top3 the share of the DP members whose own label is top-1 / top-3
  ref top1/top3 the same for the reference
  chance       top-1/top-3 of a random label, 1/n and min(1, 3/n), for the DP side's n labels and
               (ref chance) the reference's
  gap          reference top-3 minus DP top-3
`--set FIELD=VALUE` overrides a UraniaConfig field (the job's flags of the same name).

`--names` (issue 41) instead compares namings of the same DP run's topics (one run per seed, with
--centre_decoder; its `name_from_labels` is the name the run gives without it), each label one text
"name: keywords" judged as above, beside the reference:
  votes        keyword-vote names: the release's name from its DP votes (or category), and its keywords;
               a name whose keyword or category holds too small a share of the topic's votes is
               "Mixed: ..." (backends/label_evidence.py, NAME_SHARE)
  votes today  the same names without that rule (as before it): `renamed` counts the topics it renames
  centroid     centroid-keyword names: the offline namer's name for the t keywords nearest each DP
               centre (as --label_fallback names a topic without votes), and those keywords
  decoded      names decoded from the DP centre (backends/centre_decoder.py), and the release's keywords
  decoded+desc the decoded name and its one-sentence description, without keywords
  c-TF-IDF     the non-private reference (its own clusters)
`--decoder_llm MODEL` writes the decoder's candidates with the local model (e.g. qwen2.5-coder-0.5b,
scripts/install_local_llm.py); default: the offline templates.

    python -m eval.utility.label_fit --names --decoder_llm qwen2.5-coder-0.5b --seeds 0 1 \
        --data real=../shared/data/arena_hard_v2_prompts.jsonl,../shared/data/hh_rlhf_harmless_test.jsonl:20
"""

from __future__ import annotations

import argparse
import dataclasses
import statistics
import time
from collections.abc import Callable, Mapping, Sequence

import numpy as np
from sklearn.cluster import KMeans
from sklearn.feature_extraction.text import CountVectorizer

from dp_ops.dp_kmeans import normalise_rows
from eval.data import Dataset, TextEmbedder, embed_cached, load_dataset
from eval.urania_inprocess import UraniaConfig, run_urania
from eval.utility.topic_quality import config_overrides

JUDGE_MODEL = "all-mpnet-base-v2"
REFERENCE_TERMS = 5
Embed = Callable[[list[str]], np.ndarray]


# ---- pure functions ----

def ctfidf_labels(documents: Sequence[str], classes: Sequence[int], top_n: int = REFERENCE_TERMS
                  ) -> dict[int, list[str]]:
    """BERTopic's class-based TF-IDF: each class's documents joined into one, term frequency per
    class (CountVectorizer, English stop words) times log(1 + average words per class / the term's
    frequency over all classes); the `top_n` highest-scoring terms of each class (ties by term).
    (BERTopic also L1-normalises each class's frequencies, which does not change a class's order.)"""
    if len(documents) != len(classes):
        raise ValueError(f"{len(documents)} documents but {len(classes)} classes")
    order = sorted(set(classes))
    joined = {c: [] for c in order}
    for document, c in zip(documents, classes):
        joined[c].append(document)
    vectorizer = CountVectorizer(stop_words="english")
    try:
        counts = vectorizer.fit_transform([" ".join(joined[c]) for c in order]).toarray().astype(float)
    except ValueError:  # nothing but stop words
        return {c: [] for c in order}
    terms = vectorizer.get_feature_names_out()
    average_words = counts.sum(axis=1).mean()
    scores = counts * np.log1p(average_words / counts.sum(axis=0))
    labels = {}
    for row, c in enumerate(order):
        present = np.flatnonzero(counts[row])
        ranked = sorted(present, key=lambda j: (-scores[row, j], terms[j]))
        labels[c] = [str(terms[j]) for j in ranked[:top_n]]
    return labels


def topic_label_text(topic: Mapping) -> str:
    """A released topic's label as one text: its name and keywords."""
    keywords = list(topic.get("keywords") or [])
    return f"{topic['name']}: {', '.join(keywords)}" if keywords else str(topic["name"])


def chance(n: int) -> tuple[float, float]:
    """Top-1 and top-3 fit of a label drawn at random from n: 1/n and min(1, 3/n)."""
    return (1.0 / n, min(1.0, 3.0 / n)) if n else (0.0, 0.0)


def _unit_rows(vectors: np.ndarray) -> np.ndarray:
    return normalise_rows(np.asarray(vectors, dtype=np.float64))


def label_fit(labels: Mapping[int, str], assignments: Mapping[str, int], texts: Mapping[str, str],
              embed: Embed, ks: Sequence[int] = (1, 3)) -> dict:
    """For each conversation assigned to a labelled topic: is its topic's label among the k most
    similar (cosine, `embed`'s vectors) of all `labels`? Ties count against it. Returns
    {"labels": n, "members": conversations scored, "top1": share, "top3": share, ...} (one "topK"
    per k). `labels`: topic -> label text; `assignments`: conversation id -> topic (those whose
    topic has no label are skipped); `texts`: conversation id -> its text."""
    topics = list(labels)
    members = [(cid, t) for cid, t in assignments.items() if t in labels]
    result = {"labels": len(topics), "members": len(members)}
    if not members:
        return {**result, **{f"top{k}": 0.0 for k in ks}}
    label_vectors = _unit_rows(embed([labels[t] for t in topics]))
    text_vectors = _unit_rows(embed([texts[cid] for cid, _ in members]))
    similarity = text_vectors @ label_vectors.T
    position = {t: i for i, t in enumerate(topics)}
    own = similarity[np.arange(len(members)), [position[t] for _, t in members]]
    # Labels at least as similar as the own one, the own one not counted: 0 means top-1.
    rank = (similarity >= own[:, None]).sum(axis=1) - 1
    for k in ks:
        result[f"top{k}"] = float(np.mean(rank < k))
    return result


def reference_clusters(vectors: np.ndarray, k: int, seed: int) -> np.ndarray:
    """Non-private spherical k-means: scikit-learn KMeans on the normalised vectors."""
    return KMeans(n_clusters=min(k, len(vectors)), n_init=4, random_state=seed).fit_predict(_unit_rows(vectors))


# ---- running it ----

def reference_fit(dataset: Dataset, embeddings: np.ndarray, assignments: Mapping[str, int], texts: Mapping[str, str],
                  judge: Embed, k: int, seed: int) -> dict:
    """The non-private reference's label fit on the conversations the DP run kept: spherical k-means
    with the same k, each cluster labelled by its c-TF-IDF terms."""
    index = {cid: i for i, cid in reversed(list(enumerate(dataset.conversation_ids)))}
    kept = list(assignments)
    clusters = reference_clusters(embeddings[[index[cid] for cid in kept]], k, seed)
    terms = ctfidf_labels([texts[cid] for cid in kept], clusters.tolist())
    return label_fit({c: ", ".join(words) for c, words in terms.items() if words},
                     dict(zip(kept, clusters.tolist())), texts, judge)


def run_once(dataset: Dataset, embeddings: np.ndarray, judge: Embed, config: UraniaConfig, seed: int) -> dict:
    """The DP release's and the reference's label fit for one seed."""
    report = run_urania(dataset.conversation_ids, dataset.user_ids, dataset.facets, embeddings, config,
                        seed=seed, noise_seed=seed)
    assignments = report["_private"]["assignments"]
    texts = dict(zip(dataset.conversation_ids, dataset.facets))
    dp = label_fit({t["id"]: topic_label_text(t) for t in report["topics"]}, assignments, texts, judge)
    reference = reference_fit(dataset, embeddings, assignments, texts, judge, config.num_clusters, seed)
    top1_chance, top3_chance = chance(dp["labels"])
    ref_top1_chance, ref_top3_chance = chance(reference["labels"])
    return {"topics": dp["labels"], "members": dp["members"], "dp_top1": dp["top1"], "dp_top3": dp["top3"],
            "ref_topics": reference["labels"], "ref_members": reference["members"],
            "ref_top1": reference["top1"], "ref_top3": reference["top3"],
            "chance_top1": top1_chance, "chance_top3": top3_chance,
            "ref_chance_top1": ref_top1_chance, "ref_chance_top3": ref_top3_chance, "gap": reference["top3"] - dp["top3"]}


# ---- --names: namings of one DP run's topics ----

NAMINGS = ("votes", "votes today", "centroid", "decoded", "decoded+desc")


def naming_labels(report: Mapping, config: UraniaConfig) -> dict[str, dict[int, str]]:
    """{naming: {topic id: label text}} for a run_urania report made with config.centre_decoder."""
    from backends.label_evidence import MIXED_PREFIX
    from backends.offline import KeywordClusterNamer
    from core.report import CENTROID_SOURCE
    from eval.urania_inprocess import _categories, _keywords
    from transforms.centroid_keywords import CentroidKeywords
    from transforms.name_clusters import distinct_names, name_topic

    topics = report["topics"]
    private = report["_private"]
    categories = _categories(config.keyword_set, config.embedding_model)
    nearest = CentroidKeywords(_keywords(config.keyword_set).keywords, config.embedding_model,
                               config.keywords_per_cluster, [t["id"] for t in topics], private["basis"],
                               report["config"]["clustering_dimension"]).local(private["centres"])
    namer = KeywordClusterNamer(categories)
    centroid = {t["id"]: name_topic(namer, nearest[t["id"]], CENTROID_SOURCE, categories) for t in topics}
    by_votes = {t["id"]: {**t, "name": t.get("name_from_labels", t["name"])} for t in topics}
    # Today's name of a topic the share rule calls mixed: its votes' name without the shares.
    today = distinct_names({i: name_topic(namer, t["keywords"], t["label_source"], categories, t.get("voted_category"),
                                          t.get("sensitive_share")) if t["name"].startswith(MIXED_PREFIX) else t
                            for i, t in by_votes.items()}, categories.category_of)
    return {"votes": {i: topic_label_text(t) for i, t in by_votes.items()},
            "votes today": {i: topic_label_text(t) for i, t in today.items()},
            "centroid": {i: topic_label_text(topic) for i, topic in centroid.items()},
            "decoded": {t["id"]: topic_label_text(t) for t in topics},
            "decoded+desc": {t["id"]: f"{t['name']}: {t['description']}" for t in topics}}


def run_names(dataset: Dataset, embeddings: np.ndarray, judge: Embed, config: UraniaConfig, seed: int,
              label_writer=None) -> dict:
    """Each naming's label fit on one DP run (with the decoder), and the reference's."""
    config = dataclasses.replace(config, centre_decoder=True)
    report = run_urania(dataset.conversation_ids, dataset.user_ids, dataset.facets, embeddings, config,
                        seed=seed, noise_seed=seed, label_writer=label_writer)
    assignments = report["_private"]["assignments"]
    texts = dict(zip(dataset.conversation_ids, dataset.facets))
    row = {"topics": len(report["topics"]),
           "decoded_topics": sum(t.get("name_evidence") == "dp_centre_decoded" for t in report["topics"])}
    namings = naming_labels(report, config)
    row["renamed"] = sum(namings["votes"][i] != namings["votes today"][i] for i in namings["votes"])
    for naming, labels in namings.items():
        fit = label_fit(labels, assignments, texts, judge)
        row[f"{naming}_top1"], row[f"{naming}_top3"], row["members"] = fit["top1"], fit["top3"], fit["members"]
    reference = reference_fit(dataset, embeddings, assignments, texts, judge, config.num_clusters, seed)
    row["ref_top1"], row["ref_top3"] = reference["top1"], reference["top3"]
    row["names"] = [(namings["votes today"][t["id"]], t.get("name_from_labels", t["name"]), t["name"],
                     _shares_text(t)) for t in report["topics"]]
    return row


def _shares_text(topic: Mapping) -> str:
    """A topic's lead keyword's and category's shares of its votes, "kw 12% [3%, 21%]"."""
    rows = (topic.get("keyword_shares") or [])[:1] + ([topic["category_share"]] if "category_share" in topic else [])
    return ", ".join(f"{row.get('keyword', row.get('category'))} {row['share']:.0%} [{row['share_low']:.0%}, "
                     f"{row['share_high']:.0%}]" for row in rows) or "no shares"


NAMES_HEADER = (f"{'data':8} {'k':>3} {'seed':>5} {'topics':>6} {'decoded':>7} {'renamed':>7} {'members':>7} "
                + " ".join(f"{n + ' t1/t3':>17}" for n in NAMINGS) + f" {'c-TF-IDF t1/t3':>17}")


def format_names_row(name: str, k: int, seed: str, row: Mapping) -> str:
    cells = " ".join(f"{row[f'{n}_top1']:>8.2f}/{row[f'{n}_top3']:<8.2f}" for n in NAMINGS)
    return (f"{name:8} {k:>3} {seed:>5} {row['topics']:>6.1f} {row['decoded_topics']:>7.1f} {row['renamed']:>7.1f} "
            f"{row['members']:>7.0f} "
            f"{cells} {row['ref_top1']:>8.2f}/{row['ref_top3']:<8.2f}")


def local_label_writer(model: str):
    """The decoder's LLM writer on the local model (a server for this process, 2 threads)."""
    from backends.llm import local_client
    from backends.llm.config import LLMParams
    from backends.llm.steps import LLMLabelWriter
    local_client.acquire_server(local_client.local_model_path(model), threads=2, slots=1)
    return LLMLabelWriter(LLMParams(llm_backend="local", llm_model=model, pseudonymize="off", llm_max_retries=1,
                                    llm_timeout_s=300, llm_max_concurrency=1, llm_threads=2))


HEADER = (f"{'data':8} {'k':>3} {'seed':>5} {'topics':>6} {'members':>7} {'DP top1':>7} {'DP top3':>7} "
          f"{'ref topics':>10} {'ref members':>11} {'ref top1':>8} {'ref top3':>8} {'chance':>11} {'ref chance':>11} {'gap':>6}")


def format_row(name: str, k: int, seed: str, row: Mapping[str, float]) -> str:
    return (f"{name:8} {k:>3} {seed:>5} {row['topics']:>6.1f} {row['members']:>7.0f} {row['dp_top1']:>7.2f} "
            f"{row['dp_top3']:>7.2f} {row['ref_topics']:>10.1f} {row['ref_members']:>11.0f} "
            f"{row['ref_top1']:>8.2f} {row['ref_top3']:>8.2f} "
            f"{row['chance_top1']:>5.2f}/{row['chance_top3']:<5.2f} "
            f"{row['ref_chance_top1']:>5.2f}/{row['ref_chance_top3']:<5.2f} {row['gap']:>+6.2f}")


def for_each_data_set(args, overrides: dict, run, format_row) -> None:
    """For each --data NAME=PATH:K: run(dataset, embeddings, judge, config, seed) -> a row per seed,
    printed with format_row as it comes, then their mean."""
    for spec in args.data:
        name, _, rest = spec.partition("=")
        paths, _, k = rest.rpartition(":")
        config = dataclasses.replace(UraniaConfig(num_clusters=int(k)), **overrides)
        if config.embedding_model == args.judge_model:
            print(f"warning: the judge {args.judge_model} is the job's own embedding model")
        dataset = load_dataset(paths)
        started = time.perf_counter()
        embeddings = embed_cached(dataset.facets, config.embedding_model)
        judge = TextEmbedder(args.judge_model, dict(zip(dataset.facets, embed_cached(dataset.facets, args.judge_model))))
        rows = []
        for seed in args.seeds:
            rows.append(run(dataset, embeddings, judge, config, seed))
            print(format_row(name, int(k), str(seed), rows[-1]), flush=True)
        mean = {key: statistics.fmean(r[key] for r in rows) for key in rows[0]}
        print(format_row(name, int(k), "mean", mean) + f"   ({time.perf_counter() - started:.0f} s)", flush=True)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--data", action="append", required=True, help="NAME=PATH[,PATH...]:K (repeatable)")
    parser.add_argument("--seeds", type=int, nargs="+", default=[0, 1, 2])
    parser.add_argument("--judge_model", default=JUDGE_MODEL,
                        help="the embedding model that judges the fit (not the job's own)")
    parser.add_argument("--set", action="append", default=[], help="FIELD=VALUE, a UraniaConfig override")
    parser.add_argument("--names", action="store_true",
                        help="compare namings of the same DP run: votes, centroid keywords, decoded from the centre")
    parser.add_argument("--decoder_llm", default=None, help="--names: the local model that writes the decoder's "
                                                             "candidates (default: the offline templates)")
    args = parser.parse_args(argv)
    if args.names:
        return main_names(args)
    overrides = config_overrides(args.set)
    print(f"overrides: {overrides or 'none (the job defaults)'}; seeds {args.seeds}; judge {args.judge_model}")
    print(HEADER, flush=True)
    for_each_data_set(args, overrides, run_once, format_row)


def main_names(args) -> None:
    overrides = config_overrides(args.set)
    writer = local_label_writer(args.decoder_llm) if args.decoder_llm else None
    print(f"overrides: {overrides or 'none'}; seeds {args.seeds}; judge {args.judge_model}; "
          f"decoder writer: {args.decoder_llm or 'offline templates'}")
    print(NAMES_HEADER, flush=True)

    def run(dataset, embeddings, judge, config, seed):
        row = run_names(dataset, embeddings, judge, config, seed, writer)
        for today, by_votes, decoded, shares in row.pop("names"):
            print(f"    {today} -> {by_votes} -> {decoded} | {shares}")
        return row

    for_each_data_set(args, overrides, run, format_names_row)
    if writer is not None:
        print(f"decoder calls: {dict(writer.counters.totals)}")


if __name__ == "__main__":
    main()
