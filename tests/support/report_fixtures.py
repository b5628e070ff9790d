"""Report dicts shaped like the job's release/report.json, for the report page and comparison tests."""

from __future__ import annotations

import copy

import numpy as np

from backends.offline import KeywordClusterNamer

THEMES = {
    "code": [["python", "unit testing", "error message"], ["javascript", "react"], ["sql", "postgresql", "database"]],
    "food": [["recipes", "cooking", "baking"], ["meal planning", "spices"], ["vegetables", "gardening"]],
    "health": [["fever", "symptoms"], ["insomnia", "sleep"], ["headache", "stress"]],
}
THEME_OF_KEYWORD = {k: theme for theme, topics in THEMES.items() for keywords in topics for k in keywords}

PRIVACY = {
    "unit": "user", "max_conversations_per_user": 5,
    "composition": "basic (sum over stages; each stage's own composition is in its entry)",
    "epsilon": 6.9999987443256, "delta": 1e-06,
    "mechanisms": [
        {"stage": "clustering", "mechanism": "DP spherical k-means: 4 Gaussian releases of per-cluster sums",
         "epsilon": 3.9999987443256004, "delta": 5e-07, "sensitivity": 1.0,
         "noise": {"kind": "gaussian", "sigma": 2.451386836352887, "per": "coordinate of each cluster sum",
                   "releases": 4, "dimension": 32}},
        {"stage": "cluster_sizes", "mechanism": "PipelineDP COUNT per cluster, public partitions",
         "epsilon": 1.0, "delta": 0.0, "sensitivity": 5.0,
         "noise": {"kind": "laplace", "scale": 5.0, "std": 7.0710678118654755}},
        {"stage": "keyword_histograms", "mechanism": "PipelineDP COUNT per (cluster, keyword), public partitions",
         "epsilon": 2.0, "delta": 5e-07, "sensitivity": 3.1622776601683795,
         "noise": {"kind": "gaussian", "sigma": 7.269532824254264, "std": 7.269532824254264}},
    ],
}

CONFIG = {"run_id": "20261121T031500Z-a1b2c3", "date": "2026-11-21", "num_clusters": 50,
          "max_conversations_per_user": 5, "epsilon": 7.0,
          "epsilon_weights": "clustering:4,cluster_sizes:1,keyword_histograms:2",
          "delta": 1e-06, "min_cluster_size": 25, "samples_per_cluster": 200, "keywords_per_cluster": 5,
          "keyword_noise": "gaussian", "keyword_set": {"method": "bundled public list", "size": 341},
          "embedding_model": "all-MiniLM-L6-v2", "embedding_dim": 384, "kmeans_iterations": 3,
          "projection_dim": 32, "noise_seed_fixed": False, "privacy_ledger": None}


def themed_topics(sizes: list[int] | None = None) -> list[dict]:
    namer = KeywordClusterNamer()
    keyword_lists = [k for topics in THEMES.values() for k in topics]
    sizes = sizes or [310 - 29 * i for i in range(len(keyword_lists))]
    topics = []
    for topic_id, (keywords, size) in enumerate(zip(keyword_lists, sizes)):
        name, description = namer.name(keywords)
        topics.append({"id": topic_id, "name": name, "description": description, "keywords": keywords, "size": size})
    return sorted(topics, key=lambda t: (-t["size"], t["id"]))


def theme_embed(texts: list[str]) -> np.ndarray:
    """A stand-in embedding: one axis per theme (by keyword, or by a keyword inside a name), unit norm."""
    axes = {theme: i for i, theme in enumerate(THEMES)}
    vectors = np.zeros((len(texts), len(axes) + 1))
    for row, text in enumerate(texts):
        lowered = text.lower()
        hits = [axes[THEME_OF_KEYWORD[k]] for k in THEME_OF_KEYWORD if k in lowered]
        for axis in hits:
            vectors[row, axis] += 1.0
        if not hits:
            vectors[row, -1] = 1.0
    return vectors / np.linalg.norm(vectors, axis=1, keepdims=True)


def theme_centres(topics: list[dict], dim: int = 8) -> np.ndarray:
    """Stand-in DP centres, one row per cluster id: a topic's theme axis (its keywords' stand-in
    embedding), with a small per-topic tilt so that no two centres are equal."""
    centres = np.zeros((max((t["id"] for t in topics), default=-1) + 1, dim))
    for topic in topics:
        vector = theme_embed([" ".join(topic["keywords"])])[0]
        centres[topic["id"], : len(vector)] = vector
        centres[topic["id"], -1] = 0.05 * (topic["id"] % 3)
    return centres / np.linalg.norm(centres, axis=1, keepdims=True).clip(1e-12)


def sample_report(topics: list[dict] | None = None, with_hierarchy: bool = True, **config) -> dict:
    from transforms.topic_hierarchy import build_hierarchy
    topics = themed_topics() if topics is None else topics
    report = {"topics": copy.deepcopy(topics), "privacy": copy.deepcopy(PRIVACY), "config": {**CONFIG, **config}}
    if with_hierarchy:
        report["hierarchy"] = build_hierarchy(report["topics"], theme_centres(report["topics"]), THEME_OF_KEYWORD,
                                              KeywordClusterNamer())
    return report


def keyword_embed(texts: list[str]) -> np.ndarray:
    """A finer stand-in: one axis per known keyword found in the text, unit norm (distinct topics differ)."""
    vocabulary = sorted(THEME_OF_KEYWORD) + ["pets"]
    vectors = np.zeros((len(texts), len(vocabulary) + 1))
    for row, text in enumerate(texts):
        lowered = text.lower()
        for axis, keyword in enumerate(vocabulary):
            if keyword in lowered:
                vectors[row, axis] = 1.0
        if not vectors[row].any():
            vectors[row, -1] = 1.0
    return vectors / np.linalg.norm(vectors, axis=1, keepdims=True)


# Planted per-topic answer shares for the facets fixture, by the topic's rank: uneven across topics,
# as the generator plants them (Spanish 40% in one topic, none in another).
SPANISH = (0.05, 0.40, 0.10, 0.25, 0.0, 0.22, 0.02, 0.15, 0.30)
GERMAN = (0.05, 0.0, 0.10, 0.05, 0.20, 0.0, 0.05, 0.05, 0.0)
ELEVATED_OR_HIGH = ((0.02, 0.01), (0.10, 0.05), (0.0, 0.0), (0.20, 0.15), (0.05, 0.0), (0.0, 0.02), (0.30, 0.10),
                    (0.01, 0.0), (0.05, 0.04))
FACET_SIGMA = 3.0


def sample_facets(topics: list[dict], labels: dict[str, dict[str, str]] | None = None) -> dict:
    """report.json's `facets` for `topics` (ranked), built by the job's own dp_ops.facets.facet_section:
    language (en, es, de, other) and concern (none, low, elevated, high), each topic's users planted at
    the shares above (half its size in users), the overall release their sum. `labels`: per facet,
    labels to use instead of the default ones."""
    from dp_ops.facets import facet_columns, facet_section
    declared = {"language": ("Which language is the conversation in?",
                             {"en": "English", "es": "Spanish", "de": "German", "other": "Another language"}),
                "concern": ("How concerning is the request?",
                            {"none": "None", "low": "Low", "elevated": "Elevated", "high": "High"})}
    facets = {}
    for facet, (question, default_labels) in declared.items():
        columns = facet_columns(list((labels or {}).get(facet, default_labels)))
        by_topic, overall = {}, dict.fromkeys(((0, column) for column in columns), 0.0)
        for rank, topic in enumerate(topics):
            users = topic["size"] / 2
            if facet == "language":
                spanish, german = SPANISH[rank % len(SPANISH)], GERMAN[rank % len(GERMAN)]
                shares = [1 - spanish - german - 0.03, spanish, german, 0.02, 0.01]
            else:
                elevated, high = ELEVATED_OR_HIGH[rank % len(ELEVATED_OR_HIGH)]
                shares = [0.8 - elevated - high, 0.2, elevated, high, 0.0]
            for column, share in zip(columns, shares):
                by_topic[(topic["id"], column)] = round(users * share, 2)
                overall[(0, column)] += round(users * share, 2)
        facets[facet] = facet_section(question, columns, overall, FACET_SIGMA, by_topic, FACET_SIGMA,
                                      [t["id"] for t in topics], (labels or {}).get(facet, default_labels))
    return facets
