import numpy as np
import pytest

from dp_ops.dp_kmeans import assign_nearest, lsh_buckets, project_points
from dp_ops.rowwise import rowwise_matmul


def _rows(seed: int, n: int, d: int) -> np.ndarray:
    return np.random.default_rng(seed).standard_normal((n, d)).astype(np.float32)


@pytest.mark.parametrize("shape", [(512, 384, 32), (512, 32, 1000), (37, 384, 341), (1, 8, 3)])
def test_every_row_is_bitwise_what_it_is_alone_or_in_any_other_batch(shape):
    n, d, k = shape
    a, b = _rows(2, n, d), _rows(3, d, k)
    full = rowwise_matmul(a, b)
    np.testing.assert_allclose(full, a @ b, rtol=1e-4, atol=1e-4)
    other_batch = rowwise_matmul(np.concatenate([_rows(4, 5, d), a[::-1]]), b)[5:][::-1]
    for i in range(0, n, max(1, n // 40)):
        assert np.array_equal(full[i], rowwise_matmul(a[i:i + 1], b)[0])
    assert np.array_equal(full, other_batch)


def test_projection_seeding_buckets_and_assignment_do_not_depend_on_the_neighbours():
    embeddings, projection = _rows(5, 300, 384), np.linalg.qr(_rows(6, 384, 32))[0].astype(np.float32)
    neighbours = np.concatenate([_rows(7, 200, 384), embeddings])
    points, with_neighbours = project_points(embeddings, projection), project_points(neighbours, projection)[200:]
    assert np.array_equal(points, with_neighbours)
    hyperplanes, centres = _rows(8, 32, 10), project_points(_rows(9, 50, 384), projection)
    assert np.array_equal(lsh_buckets(points, hyperplanes), lsh_buckets(with_neighbours, hyperplanes))
    assert np.array_equal(assign_nearest(points, centres),
                          np.concatenate([assign_nearest(points[i:i + 1], centres) for i in range(300)]))
