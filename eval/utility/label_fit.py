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
  LLM sample*  (with --sample_llm MODEL) NOT PRIVATE: the local model's name and description of each
               DP topic, written from SAMPLE_SIZE of its members' raw texts drawn at random (as Clio and
               kura name clusters); the ceiling a name written from the texts reaches on these clusters
  DP c-TF-IDF* NOT PRIVATE: the c-TF-IDF terms of the DP topics' own members, so the gap to c-TF-IDF
               splits into naming (decoded vs DP c-TF-IDF) and clustering (DP c-TF-IDF vs c-TF-IDF);
               after the row, the top-3 of decoded and DP c-TF-IDF over the members of decoded topics
               that are not unverified, and of unverified topics alone (a sensitive guess: a decoded
               name of a non-sensitive candidate, or its fixed name where none passed the gate)
  c-TF-IDF*    the non-private reference (its own clusters)
  decoded+bank (with --crossfit_bank) the same run's centres decoded again with a bank of c-TF-IDF labels
               of public clusters (ctfidf_bank): the data set is split in 2 folds by a hash of the
               conversation id, each fold is a DP run of its own, and its bank is written from the OTHER
               fold only, so no bank label is scored on the texts it was written from
`--decoder_llm MODEL` writes the decoder's candidates with the local model (e.g. qwen2.5-coder-0.5b,
scripts/install_local_llm.py); default: the offline templates.

    python -m eval.utility.label_fit --names --decoder_llm qwen2.5-coder-0.5b --sample_llm qwen2.5-coder-0.5b \
        --seeds 0 1 --data real=../shared/data/arena_hard_v2_prompts.jsonl,../shared/data/hh_rlhf_harmless_test.jsonl:20
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

from backends.llm.config import make_caller
from config.reading import ReadingParams
from dp_ops.dp_kmeans import normalise_rows
from eval.config_flags import config_overrides
from eval.data import Dataset, TextEmbedder, embed_cached, load_dataset
from eval.urania_inprocess import UraniaConfig, Writers, run_urania

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
    from core.label_sources import CENTROID_SOURCE
    from eval.urania_inprocess import _categories, _keywords, run_encoder
    from transforms.centroid_keywords import CentroidKeywords
    from transforms.distinct_names import distinct_names
    from transforms.name_clusters import name_topic

    topics = report["topics"]
    private = report["_private"]
    encoder = run_encoder(config)
    categories = _categories(config.keyword_set, encoder)
    nearest = CentroidKeywords(_keywords(config.keyword_set).keywords, encoder,
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


# ---- --crossfit_bank: a bank from other conversations' clusters ----

# The public clusterings the bank is written from (several k: broad and narrow labels).
BANK_KS = (10, 20, 40)
BANK_NAMING = "decoded+bank"


def fold_of(conversation_ids: Sequence[str], folds: int = 2) -> np.ndarray:
    """Each conversation's fold: a hash of its id (a fixed split, independent of the order and the seed)."""
    import hashlib
    return np.array([int(hashlib.sha256(cid.encode("utf-8")).hexdigest(), 16) % folds for cid in conversation_ids])


def ctfidf_bank(texts: Sequence[str], vectors: np.ndarray, ks: Sequence[int] = BANK_KS, seed: int = 0):
    """A centre decoder bank (backends.centre_decoder.NameBank) of c-TF-IDF labels: for each k, k-means
    of `vectors` (reference_clusters), each cluster with at least 3 terms one label, "t1, t2, t3" and
    "Requests about t1, ..., t5.", of no category (the decoder's gate still refuses a sensitive one)."""
    from backends.centre_decoder import NameBank, label_text
    labels = []
    for k in ks:
        terms = ctfidf_labels(list(texts), reference_clusters(vectors, k, seed).tolist())
        labels += [(None, label_text(", ".join(words[:3]).capitalize(), f"Requests about {', '.join(words)}."))
                   for words in terms.values() if len(words) >= 3]
    return NameBank(tuple(dict.fromkeys(labels)))


def redecoded_labels(report: Mapping, config: UraniaConfig, bank, label_writer=None) -> dict[int, str]:
    """{topic id: "name: keywords"} with each topic's DP centre decoded again on the same run, with the
    bundled bank and `bank` (the writer: `label_writer`, default the templates), so that two banks are
    compared on the same released topics (the sizes' noise is unseeded: another run releases others)."""
    from backends.centre_decoder import NameBank, TemplateLabelWriter, load_bank
    from eval.urania_inprocess import _categories, _keywords, run_encoder
    from transforms.decode_centres import DecodeCentres, DecoderSettings
    private = report["_private"]
    encoder = run_encoder(config)
    settings = DecoderSettings(label_writer or TemplateLabelWriter(), NameBank(load_bank().labels + bank.labels))
    decoder = DecodeCentres(settings, encoder, _keywords(config.keyword_set).keywords,
                            _categories(config.keyword_set, encoder), private["centres"],
                            private["basis"], report["config"]["clustering_dimension"])
    before = {t["id"]: {**t, "name": t.get("name_from_labels", t["name"])} for t in report["topics"]}
    return {i: topic_label_text(t) for i, t in decoder.local(before).value.items()}


def run_names(dataset: Dataset, embeddings: np.ndarray, judge: Embed, config: UraniaConfig, seed: int,
              label_writer=None, sample_namer: SampleNamer | None = None, bank=None) -> dict:
    """Each naming's label fit on one DP run (with the decoder), and the reference's; with
    `sample_namer`, also the non-private LLM names of the same topics (SAMPLE_NAMING); with `bank`, the
    centres decoded again with it as well (BANK_NAMING)."""
    config = dataclasses.replace(config, centre_decoder=True)
    report = run_urania(dataset.conversation_ids, dataset.user_ids, dataset.facets, embeddings, config,
                        seed=seed, noise_seed=seed, writers=Writers(label_writer=label_writer))
    assignments = report["_private"]["assignments"]
    texts = dict(zip(dataset.conversation_ids, dataset.facets))
    row = {"topics": len(report["topics"]),
           "decoded_topics": sum(t.get("name_evidence") == "dp_centre_decoded" for t in report["topics"])}
    namings = naming_labels(report, config)
    if sample_namer is not None:
        samples = topic_samples(assignments, texts, [t["id"] for t in report["topics"]], SAMPLE_SIZE, seed)
        failed_before = sample_namer.failed
        named = sample_namer.names(samples)
        # A topic whose call failed keeps its vote label, so every naming scores the same members.
        namings[SAMPLE_NAMING] = {i: f"{named[i][0]}: {named[i][1]}" if i in named else label
                                  for i, label in namings["votes"].items()}
        row["sample_failed"] = sample_namer.failed - failed_before
    if bank is not None:
        namings[BANK_NAMING] = redecoded_labels(report, config, bank, label_writer)
    row["renamed"] = sum(namings["votes"][i] != namings["votes today"][i] for i in namings["votes"])
    for naming, labels in namings.items():
        fit = label_fit(labels, assignments, texts, judge)
        row[f"{naming}_top1"], row[f"{naming}_top3"], row["members"] = fit["top1"], fit["top3"], fit["members"]
    # The same non-private terms on the DP topics themselves: what naming alone could reach on these clusters.
    released = {t["id"] for t in report["topics"]}
    members = {cid: t for cid, t in assignments.items() if t in released}
    terms = ctfidf_labels([texts[cid] for cid in members], list(members.values()))
    on_dp_labels = {t: ", ".join(words) if words else namings["votes"][t] for t, words in terms.items()}
    on_dp = label_fit(on_dp_labels, members, texts, judge)
    row["dp_ctfidf_top1"], row["dp_ctfidf_top3"] = on_dp["top1"], on_dp["top3"]
    # Where the gap lies: the members of decoded topics, and of unverified ones (a sensitive guess, named
    # from non-sensitive candidates only, or fixed), each ranked among all the run's labels as above (nan:
    # no such topic). An unverified topic counts as unverified whether or not it was decoded.
    from backends.centre_decoder import NAME_EVIDENCE
    from backends.label_evidence import UNVERIFIED
    evidence = {t["id"]: "unverified" if t.get("label_evidence") == UNVERIFIED
                else "decoded" if t.get("name_evidence") == NAME_EVIDENCE else t.get("label_evidence")
                for t in report["topics"]}
    for part in ("decoded", "unverified"):
        some = {cid: t for cid, t in members.items() if evidence[t] == part}
        for naming, labels in (("decoded", namings["decoded"]), ("dp_ctfidf", on_dp_labels)):
            row[f"{part}_members_{naming}_top3"] = label_fit(labels, some, texts, judge)["top3"] if some else float("nan")
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


# The non-private ceiling's column (--sample_llm): marked, as c-TF-IDF's, as not a release.
SAMPLE_NAMING = "LLM sample*"


def names_header(sample: bool, bank: bool = False) -> str:
    namings = NAMINGS + ((SAMPLE_NAMING,) if sample else ()) + ((BANK_NAMING,) if bank else ())
    return (f"{'data':8} {'k':>3} {'seed':>5} {'topics':>6} {'decoded':>7} {'renamed':>7} {'members':>7} "
            + " ".join(f"{n + ' t1/t3':>17}" for n in namings) + f" {'DP c-TF-IDF* t1/t3':>18} {'c-TF-IDF* t1/t3':>17}")


def format_names_row(name: str, k: int, seed: str, row: Mapping) -> str:
    namings = tuple(n for n in NAMINGS + (SAMPLE_NAMING, BANK_NAMING) if f"{n}_top1" in row)
    cells = " ".join(f"{row[f'{n}_top1']:>8.2f}/{row[f'{n}_top3']:<8.2f}" for n in namings)
    return (f"{name:8} {k:>3} {seed:>5} {row['topics']:>6.1f} {row['decoded_topics']:>7.1f} {row['renamed']:>7.1f} "
            f"{row['members']:>7.0f} "
            f"{cells} {row['dp_ctfidf_top1']:>9.2f}/{row['dp_ctfidf_top3']:<8.2f} {row['ref_top1']:>8.2f}/{row['ref_top3']:<8.2f}"
            + (f" (LLM sample calls failed: {row['sample_failed']:.1f})" if row.get("sample_failed") else "")
            + "".join(f" | {part} topics' members t3: decoded {row[f'{part}_members_decoded_top3']:.2f}, "
                      f"DP c-TF-IDF {row[f'{part}_members_dp_ctfidf_top3']:.2f}" for part in ("decoded", "unverified")))


# ---- the non-private ceiling: an LLM name written from each topic's raw texts ----

# Texts per topic the model reads, and characters of each: fixed, so each call's prompt is bounded
# (about 800 tokens) and a topic's size does not change what the model sees.
SAMPLE_SIZE = 8
SAMPLE_CHARS = 300
SAMPLE_NAME_INSTRUCTIONS = """Below are {count} requests that users sent to a chatbot, drawn from one group of \
similar conversations. Write one label for the group: a short name (2 to 6 words) and a description of one \
sentence (at most 20 words) saying what users ask the assistant for. Be specific. Answer with one JSON object \
and nothing else: {{"labels": [{{"name": "...", "description": "..."}}]}}

{requests}"""


def topic_samples(assignments: Mapping[str, int], texts: Mapping[str, str], topics: Sequence[int], size: int,
                  seed: int, max_chars: int = SAMPLE_CHARS) -> dict[int, list[str]]:
    """{topic: at most `size` of its conversations' texts, drawn uniformly without replacement (seeded),
    each cut to `max_chars`}. Raw private text: for the non-private ceiling only."""
    members: dict[int, list[str]] = {t: [] for t in topics}
    for cid in sorted(assignments):
        if assignments[cid] in members:
            members[assignments[cid]].append(cid)
    rng = np.random.default_rng(seed)
    samples = {}
    for topic in topics:
        chosen = rng.permutation(len(members[topic]))[:size]
        samples[topic] = [" ".join(texts[members[topic][i]].split())[:max_chars] for i in sorted(chosen)]
    return samples


def sample_name_messages(sample: Sequence[str]) -> list[dict]:
    requests = "\n".join(f"{i}. {text}" for i, text in enumerate(sample, start=1))
    return [{"role": "system", "content": "You are a careful assistant that writes short, specific labels."},
            {"role": "user", "content": SAMPLE_NAME_INSTRUCTIONS.format(count=len(sample), requests=requests)}]


class SampleNamer:
    """The local model names each topic from a sample of its raw texts (topic_samples): what a
    non-private pipeline (Clio, kura) does, so a ceiling for names of the same DP clusters. Its answers
    are scored, never printed: they may quote the texts. A failed call leaves its topic unnamed."""

    def __init__(self, model: str, threads: int = 2):
        from config.llm import LLMParams
        self.params = LLMParams(llm_backend="local", llm_model=model, pseudonymize="off", llm_max_retries=1,
                                llm_timeout_s=300, llm_max_concurrency=1, llm_threads=threads)
        self.calls = self.failed = 0
        self._caller = None

    def names(self, samples: Mapping[int, Sequence[str]]) -> dict[int, tuple[str, str]]:
        """{topic: (name, description)} for each topic whose call answered."""
        import functools

        from backends.llm import parsing, prompts
        from backends.llm.fanout import CallSpec
        if self._caller is None:
            self._caller = make_caller(self.params)
        topics = [t for t, sample in samples.items() if sample]
        specs = [CallSpec(sample_name_messages(samples[t]), functools.partial(parsing.parse_labels, max_count=1),
                          json_output=prompts.labels_schema(1), max_tokens=96) for t in topics]
        results = self._caller.call_many(specs)
        self.calls += len(specs)
        self.failed += sum(not r.ok or not r.value for r in results)
        return {t: r.value[0] for t, r in zip(topics, results) if r.ok and r.value}


def local_label_writer(model: str):
    """The decoder's LLM writer on the local model (a server for this process, 2 threads)."""
    from backends.llm import local_client
    from backends.llm.steps import LLMLabelWriter
    from config.llm import LLMParams
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


def crossfit_folds(dataset: Dataset, embeddings: np.ndarray, seed: int = 0):
    """For each of 2 folds (fold_of): (fold, its conversations and embeddings, a c-TF-IDF bank written
    from the OTHER fold's conversations only), so no bank label is scored on the texts it came from."""
    folds = fold_of(dataset.conversation_ids)
    for fold in (0, 1):
        mine, other = np.flatnonzero(folds == fold), np.flatnonzero(folds != fold)
        subset = Dataset([dataset.conversations[i] for i in mine], [dataset.facets[i] for i in mine])
        bank = ctfidf_bank([dataset.facets[i] for i in other], embeddings[other], seed=seed)
        yield fold, subset, embeddings[mine], bank


def for_each_data_set(args, overrides: dict, run, format_row, crossfit: bool = False) -> None:
    """For each --data NAME=PATH:K: run(dataset, embeddings, judge, config, seed) -> a row per seed,
    printed with format_row as it comes, then their mean. `crossfit`: instead, for each fold of
    crossfit_folds, run(fold's dataset, its embeddings, judge, config, seed, bank=the other fold's bank)."""
    for spec in args.data:
        name, _, rest = spec.partition("=")
        paths, _, k = rest.rpartition(":")
        config = dataclasses.replace(UraniaConfig(num_clusters=int(k)), **overrides)
        if config.embedding_model == args.judge_model:
            print(f"warning: the judge {args.judge_model} is the job's own embedding model")
        dataset = load_dataset(paths, args.facet_max_chars)
        # The judge reads each conversation at its own length (--judge_chars), whatever the run's truncation.
        judged = dataset if args.judge_chars == args.facet_max_chars else load_dataset(paths, args.judge_chars)
        started = time.perf_counter()
        embeddings = embed_cached(dataset.facets, config.embedding_model)
        judge = TextEmbedder(args.judge_model, dict(zip(dataset.facets, embed_cached(judged.facets, args.judge_model))))
        rows = []
        if crossfit:
            for fold, subset, subset_embeddings, bank in crossfit_folds(dataset, embeddings):
                print(f"fold {fold}: {len(subset)} conversations; bank from the other fold: {len(bank.labels)} labels")
                for seed in args.seeds:
                    rows.append(run(subset, subset_embeddings, judge, config, seed, bank=bank))
                    print(format_row(f"{name}/f{fold}", int(k), str(seed), rows[-1]), flush=True)
        for seed in args.seeds if not crossfit else ():
            rows.append(run(dataset, embeddings, judge, config, seed))
            print(format_row(name, int(k), str(seed), rows[-1]), flush=True)
        # A figure a row lacks (nan: e.g. no unverified topic in that run) is left out of its mean.
        mean = {key: statistics.fmean([r[key] for r in rows if r[key] == r[key]] or [float("nan")]) for key in rows[0]}
        print(format_row(name, int(k), "mean", mean) + f"   ({time.perf_counter() - started:.0f} s)", flush=True)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--data", action="append", required=True, help="NAME=PATH[,PATH...]:K (repeatable)")
    parser.add_argument("--seeds", type=int, nargs="+", default=[0, 1, 2])
    parser.add_argument("--judge_model", default=JUDGE_MODEL,
                        help="the embedding model that judges the fit (not the job's own)")
    parser.add_argument("--set", action="append", default=[], help="FIELD=VALUE, a UraniaConfig override")
    parser.add_argument("--facet_max_chars", type=int, default=ReadingParams().facet_max_chars,
                        help="characters of user turns the run reads (the job's --facet_max_chars)")
    parser.add_argument("--judge_chars", type=int, default=ReadingParams().facet_max_chars,
                        help="characters of user turns the judge reads (fixed across a --facet_max_chars sweep)")
    parser.add_argument("--names", action="store_true",
                        help="compare namings of the same DP run: votes, centroid keywords, decoded from the centre")
    parser.add_argument("--decoder_llm", default=None, help="--names: the local model that writes the decoder's "
                                                             "candidates (default: the offline templates)")
    parser.add_argument("--sample_llm", default=None,
                        help="--names: also the NON-PRIVATE ceiling, this local model naming each DP topic from "
                             f"{SAMPLE_SIZE} of its raw texts (e.g. qwen2.5-coder-0.5b)")
    parser.add_argument("--crossfit_bank", action="store_true",
                        help="--names: split each data set into 2 folds; on each fold's DP run, also decode the "
                             "centres with a c-TF-IDF bank written from the other fold (BANK_NAMING)")
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
    sample_namer = SampleNamer(args.sample_llm) if args.sample_llm else None
    print(f"overrides: {overrides or 'none'}; seeds {args.seeds}; judge {args.judge_model}; "
          f"decoder writer: {args.decoder_llm or 'offline templates'}")
    print("* not private: c-TF-IDF (its own k-means clusters), DP c-TF-IDF (the same terms on the DP topics)"
          + (f" and {SAMPLE_NAMING} ({args.sample_llm} naming each DP topic from {SAMPLE_SIZE} of its raw texts, "
             f"{SAMPLE_CHARS} characters each)" if sample_namer is not None else ""))
    if args.crossfit_bank:
        print(f"{BANK_NAMING}: the centres decoded again with a bank of c-TF-IDF labels of k-means (k = "
              f"{', '.join(map(str, BANK_KS))}) of the other fold's conversations; each fold is its own DP run")
    print(names_header(sample_namer is not None, args.crossfit_bank), flush=True)

    def run(dataset, embeddings, judge, config, seed, bank=None):
        row = run_names(dataset, embeddings, judge, config, seed, writer, sample_namer, bank)
        for today, by_votes, decoded, shares in row.pop("names"):
            print(f"    {today} -> {by_votes} -> {decoded} | {shares}")
        return row

    for_each_data_set(args, overrides, run, format_names_row, crossfit=args.crossfit_bank)
    if writer is not None:
        print(f"decoder calls: {dict(writer.counters.totals)}")
    if sample_namer is not None:
        print(f"{SAMPLE_NAMING} calls: {sample_namer.calls}, failed: {sample_namer.failed}")


if __name__ == "__main__":
    main()
