"""One BLAS thread for small per-record products.

A matrix-vector product (a conversation against a few thousand keywords or centres) is too small to
split across threads, and on a busy machine OpenBLAS' threads wait for each other: measured here on 2
loaded cores, 1764 x 384 took ~5.9 ms with the default threads and ~0.6 ms with one. Wrap a loop of
such products (not each product: entering the limit has a cost of its own) in `with one_blas_thread():`.
"""

from __future__ import annotations

import threadpoolctl

_controller = None


def one_blas_thread():
    """A context manager limiting BLAS to one thread inside it."""
    # The controller is made once per process: threadpool_limits() alone scans every loaded library
    # on each call (~5 ms, as slow as the problem it solves).
    global _controller
    if _controller is None:
        _controller = threadpoolctl.ThreadpoolController()
    return _controller.limit(limits=1, user_api="blas")
