"""The native encoder's worker processes (backends.embedding._NativeEncoder): a long list runs on spawned
processes, each text alone under one BLAS thread, so its vectors are the bits each text gets alone here, with
any number of workers; a worker that dies costs its list a retry, never the process."""

import os
import signal
from concurrent.futures.process import BrokenProcessPool

import numpy as np
import pytest

from backends import embedding

NAME = embedding.DEFAULT_EMBEDDING_MODEL
# Every script the encoder reads, mixed lengths: the planted requests of the multilingual sample's languages.
TEXTS = [
    "¿Cómo preparo una paella valenciana sin que se pegue el arroz?",
    "如何修复 Python 中的 KeyError 错误？",
    "Что взять с собой в поездку в Лиссабон на неделю?",
    "ما هي أعراض الحمى عند الأطفال ومتى أذهب إلى الطبيب؟",
    "産業革命についてのエッセイの書き方を教えてください。",
    "बुखार होने पर क्या खाना चाहिए?",
    "How do I reset the password on my home router?",
    "",
    "ok",
    "The landlord kept my deposit without listing damages. " * 15,
]


def _long_list(count: int) -> list[str]:
    rng = np.random.default_rng(3)
    return [TEXTS[i] + (" " + str(i) if i % 3 else "") for i in rng.integers(0, len(TEXTS), count)]


@pytest.mark.real_model
def test_a_long_list_on_worker_processes_gets_each_texts_vector_alone_with_any_number_of_workers():
    encoder = embedding.load_native_model(NAME)
    texts = _long_list(3 * embedding.NATIVE_PROCESS_MIN_TEXTS)
    alone = np.stack([encoder.encode([text], 1)[0] for text in texts])
    for workers in (2, 3):
        np.testing.assert_array_equal(encoder.encode(texts, workers), alone, err_msg=f"{workers} workers")
    assert {2, 3} <= set(encoder._pools)  # the long lists did run on worker processes


@pytest.mark.real_model
def test_a_dead_worker_breaks_only_its_call_and_the_next_list_gets_a_new_pool():
    encoder = embedding.load_native_model(NAME)
    texts = _long_list(embedding.NATIVE_PROCESS_MIN_TEXTS)
    expected = encoder.encode(texts, 1)
    np.testing.assert_array_equal(encoder.encode(texts, 2), expected)
    pool = encoder._pools[2]
    for process in list(pool._processes.values()):  # what a worker killed by the kernel (OOM) looks like
        os.kill(process.pid, signal.SIGKILL)
    with pytest.raises(BrokenProcessPool):
        encoder.encode(texts, 2)
    assert 2 not in encoder._pools
    np.testing.assert_array_equal(encoder.encode(texts, 2), expected)
    assert encoder._pools[2] is not pool


def _encode_in_a_daemon(texts: list[str], workers: int, queue) -> None:
    encoder = embedding.load_native_model(NAME)
    queue.put((encoder.encode(texts, workers), set(encoder._pools)))


@pytest.mark.real_model
def test_a_daemonic_process_encodes_a_long_list_itself_with_the_same_bits():
    # Dask's worker processes are daemonic, and a daemonic process may not start children.
    import multiprocessing

    texts = _long_list(embedding.NATIVE_PROCESS_MIN_TEXTS)
    context = multiprocessing.get_context("spawn")
    queue = context.Queue()
    process = context.Process(target=_encode_in_a_daemon, args=(texts, 2, queue), daemon=True)
    process.start()
    vectors, pools = queue.get(timeout=300)
    process.join(60)
    assert process.exitcode == 0 and pools == set()  # no worker process was asked for
    np.testing.assert_array_equal(vectors, embedding.load_native_model(NAME).encode(texts, 1))
