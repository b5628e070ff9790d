import apache_beam as beam
import numpy as np
import pytest
from apache_beam.testing.util import assert_that

from backends.interfaces import KeywordSelector
from core.records import ConversationBlock
from dp_ops.sampling import keyed_uniform, keyword_sampling_rate, poisson_keep
from tests.conftest import checked, local_pipeline
from transforms.keyword_histograms import SelectKeywords, sample_block
from transforms.voted_labels import top_keywords


class _MisbehavingSelector(KeywordSelector):
    """Returns words outside K, duplicates and too many keywords, like a bad LLM would."""

    def select(self, facets, embeddings, max_keywords):
        return [["python", "my secret password", "python", "rust", "go programming", "sql", "java", "css"]
                for _ in facets]


def _block(n: int, cluster_ids):
    return ConversationBlock([f"c{i}" for i in range(n)], [f"u{i % 3}" for i in range(n)], np.ones(n),
                             ["text"] * n, np.zeros((n, 4), dtype=np.float32),
                             cluster_ids=np.array(cluster_ids, dtype=np.int64))


def test_keywords_outside_k_never_reach_the_histogram():
    keywords = ("python", "rust", "go programming", "sql", "java", "css")

    def only_keywords_in_k(pairs):
        assert {kw for _, (_, kw) in pairs} == {"python", "rust", "go programming"}
        assert len(pairs) == 4 * 3  # deduplicated, then capped at max_keywords per conversation

    with local_pipeline() as pipeline:
        pairs = (pipeline | beam.Create([_block(4, [0, 0, 1, 1])])
                 | SelectKeywords(_MisbehavingSelector(), keywords, max_keywords=3))
        assert_that(pairs.output, checked(only_keywords_in_k), label="pairs")


def test_sampling_rate_is_m_over_noisy_size_capped_at_one():
    assert keyword_sampling_rate(200, 1000) == 0.2
    assert keyword_sampling_rate(200, 150) == 1.0
    assert keyword_sampling_rate(200, -3) == 1.0


def test_poisson_sample_has_the_requested_rate_and_skips_dropped_clusters():
    block = _block(20000, [0] * 10000 + [1] * 10000)
    (sampled,) = sample_block(block, noisy_sizes={0: 1000.0}, samples_per_cluster=200, seed=3)
    assert set(sampled.cluster_ids.tolist()) == {0}
    assert len(sampled) == pytest.approx(2000, abs=5 * np.sqrt(2000 * 0.8))


def test_keyed_uniform_is_uniform_and_seed_dependent():
    draws = np.array([keyed_uniform(1, "p", f"id{i}") for i in range(20000)])
    assert draws.min() >= 0 and draws.max() < 1
    assert np.histogram(draws, bins=10, range=(0, 1))[0] == pytest.approx([2000] * 10, abs=200)
    assert keyed_uniform(1, "p", "x") != keyed_uniform(2, "p", "x")
    assert poisson_keep(1.0, 1, "p", "x") and not poisson_keep(0.0, 1, "p", "x")


def test_top_keywords_ranks_by_noisy_count_above_the_floor():
    counts = [("a", 5.0), ("b", 50.0), ("c", 30.0), ("d", 29.0), ("e", 80.0)]
    assert top_keywords((7, counts), top_t=3, min_noisy_count=29.5) == (7, ["e", "b", "c"])
    assert top_keywords((7, counts), top_t=3, min_noisy_count=100) == (7, [])
