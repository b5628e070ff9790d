import dataclasses

import apache_beam as beam
import numpy as np
from apache_beam.testing.util import assert_that

from core.records import ConversationBlock
from dp_ops import dp_kmeans as dk
from tests.conftest import checked, local_pipeline
from transforms.assign_clusters import AssignClusters
from transforms.dp_kmeans import DPKMeans, WarmStart


def _blocks(points: np.ndarray, weights: np.ndarray, block_size: int):
    blocks = []
    for start in range(0, len(points), block_size):
        end = min(start + block_size, len(points))
        ids = [f"c{i}" for i in range(start, end)]
        blocks.append(ConversationBlock(ids, [f"u{i}" for i in range(start, end)], weights[start:end],
                                        [""] * len(ids), points[start:end]))
    return blocks


def test_beam_transform_releases_the_same_centres_as_the_reference_implementation():
    rng = np.random.default_rng(0)
    points = dk.normalise_rows(rng.standard_normal((1200, 48))).astype(np.float32)
    weights = rng.choice([1.0, 0.5, 0.25], size=len(points))
    params = dk.DPKMeansParams(num_clusters=7, epsilon=2.0, delta=1e-6, input_dim=48, projection_dim=16,
                               iterations=3, seed=4)
    expected, _ = dk.fit_dp_kmeans(points, weights, params, noise_seed=9)
    expected_labels = dk.assign_nearest(dk.project_points(points, dk.clustering_basis(params)), expected)

    def same_centres(centres):
        (released,) = centres
        assert released.shape == (7, 16)
        np.testing.assert_allclose(released, expected, atol=1e-5)

    def same_labels(assigned):
        labels = np.concatenate([b.cluster_ids for b in sorted(assigned, key=lambda b: int(b.conversation_ids[0][1:]))])
        np.testing.assert_array_equal(labels, expected_labels)

    kmeans = DPKMeans(params, None, noise_seed=9)
    with local_pipeline() as pipeline:
        clustering = pipeline | beam.Create(_blocks(points, weights, 100)) | kmeans
        assigned = clustering.blocks | AssignClusters(clustering)
        assert_that(clustering.centres, checked(same_centres), label="centres")
        assert_that(assigned, checked(same_labels), label="assigned")


def test_spend_is_known_before_the_pipeline_runs():
    params = dk.DPKMeansParams(num_clusters=3, epsilon=1.5, delta=1e-6, input_dim=8)
    stage = DPKMeans(params, None)
    assert stage.spend.stage == "clustering" and 1.45 < stage.spend.epsilon <= 1.5


def test_an_empty_input_still_releases_one_set_of_pure_noise_centres():
    # No points: every release is noise only, exactly as the reference computes it; the stage must
    # still emit its one singleton (the assignment stage reads it as a side input).
    params = dk.DPKMeansParams(num_clusters=5, epsilon=1.0, delta=1e-6, input_dim=24, projection_dim=8,
                               iterations=2, seed=3)
    expected, _ = dk.fit_dp_kmeans(np.zeros((0, 24), dtype=np.float32), np.zeros(0), params, noise_seed=11)

    def pure_noise(centres):
        (released,) = centres
        np.testing.assert_allclose(released, expected, atol=1e-6)
        assert np.allclose(np.linalg.norm(released, axis=1), 1.0)

    with local_pipeline() as pipeline:
        no_blocks = pipeline | beam.Create([]).with_output_types(ConversationBlock)
        assert_that((no_blocks | DPKMeans(params, None, noise_seed=11)).centres, checked(pure_noise), label="centres")


class _AnchorSeeds:
    """transforms.dp_kmeans.ThemeSeeds' interface without a model: one fixed public anchor."""

    def __init__(self, anchor: np.ndarray):
        self.anchor = anchor

    def anchors(self) -> np.ndarray:
        return self.anchor[None]


def test_warm_centres_and_theme_anchors_seed_the_beam_transform_as_in_process():
    rng = np.random.default_rng(2)
    points = dk.normalise_rows(rng.standard_normal((600, 48))).astype(np.float32)
    weights = np.ones(len(points))
    params = dk.DPKMeansParams(num_clusters=5, epsilon=2.0, delta=1e-6, input_dim=48, projection_dim=16,
                               iterations=1, seed=4)
    warm = dk.normalise_rows(rng.standard_normal((2, 48)))
    seeds = _AnchorSeeds(dk.normalise_rows(rng.standard_normal((1, 48)))[0])
    blocks = _blocks(points, weights, 100)
    expected = DPKMeans(params, None, noise_seed=9, warm=WarmStart(warm, seeds)).local(blocks).centres
    cold = DPKMeans(params, None, noise_seed=9, warm=WarmStart(warm)).local(blocks).centres
    assert not np.allclose(expected, cold)  # the anchor's seed moved the release
    unleaned = DPKMeans(dataclasses.replace(params, warm_prior=0.0), None, noise_seed=9,
                        warm=WarmStart(warm, seeds)).local(blocks).centres
    # The warm prior moved the two warm-seeded clusters of the one Lloyd step, and only them.
    assert not np.allclose(expected[:2], unleaned[:2], atol=1e-3)
    np.testing.assert_allclose(expected[2:], unleaned[2:], atol=1e-6)

    def same_centres(centres):
        (released,) = centres
        np.testing.assert_allclose(released, expected, atol=1e-5)

    with local_pipeline() as pipeline:
        clustering = pipeline | beam.Create(blocks) | DPKMeans(params, None, noise_seed=9, warm=WarmStart(warm, seeds))
        assert_that(clustering.centres, checked(same_centres), label="centres")
