"""The embedding group: the embedding model and how it runs (backends/embedding.py runs it)."""

from __future__ import annotations

import dataclasses

from core.params import Params, advanced_flag, flag, params_group

# USE multilingual v3: chosen by the rule in docs/performance.md (the fastest of the candidates that group
# multilingual requests by subject, not language, and lose nothing on English topics).
DEFAULT_EMBEDDING_MODEL = "use-multilingual-v3"
BACKENDS = ("torch", "onnx", "onnx-int8")
# Models run by their own numpy encoder, not by sentence-transformers (backends/embedding.py loads them): the
# backend and device flags do not apply to them.
NATIVE_MODELS = ("use-multilingual-v3",)
DEVICES = ("cpu", "cuda")  # fixed for a run (--embedding_device), never chosen by the data


def check_device_value(device: str, backend: str = "torch") -> None:
    """Raises ValueError unless `device` is one of DEVICES and can run `backend` (the values alone; the
    flags' own check, EmbeddingParams)."""
    if device not in DEVICES:
        raise ValueError(f"unknown embedding device {device!r}; expected one of {', '.join(DEVICES)}")
    if device != "cpu" and backend != "torch":
        raise ValueError(f"--embedding_device={device} runs the torch backend only; --embedding_backend={backend} "
                         "(onnxruntime) runs on the CPU: use --embedding_backend=torch or --embedding_device=cpu")


@dataclasses.dataclass(frozen=True)
class SimilarityFloors:
    """A model's cosine floors. Cosines sit on each model's own scale (all-MiniLM-L6-v2 puts a generated
    conversation's nearest keyword at a median 0.48, USE multilingual v3 at 0.40), so a floor tuned on one
    model keeps far fewer (or more) pairs under another. The floors were tuned on all-MiniLM-L6-v2; another
    model's are carried over by quantile matching on public texts (eval/utility/similarity_floors.py prints
    them and tests/eval/test_similarity_floors.py checks this table against it). The facets' thresholds are
    the facet file's own, per model in the same way (backends/facet_set.py)."""

    keyword_vote: float  # a conversation and a keyword it votes for (the offline selector)
    theme: float  # a conversation and its nearest keywords, for it to have a theme (dp_ops/theme_histogram.py)
    # A custom keyword set's keyword and its nearest bundled keyword, to take that keyword's category
    # (backends/keyword_categories.py). On MiniLM at 0.45: "sourdough" takes "bread"'s (0.48), "postgres"
    # "postgresql"'s (0.90); "blue" none (its nearest, "chicken", at 0.41), nor "quantum entanglement" (0.27).
    nearest_category: float
    # An LLM's proposed word and the keyword of K it maps to (backends/llm/keyword_mapping.py). On MiniLM, the
    # 0.5B's words of 25 planted-topic conversations mapped at 0.4 / 0.5 / 0.6 / 0.7 hit an expected keyword in
    # 84% / 72% / 48% / 32% of conversations at 44% / 54% / 53% / 56% precision (bench/bench_local_llm.py
    # keywords; docs/llm_backends.md): 0.5 keeps the precision and most hits.
    word_to_keyword: float


# The model every cosine floor and the bundled facets' thresholds were tuned on: a model without its own
# floors gets these.
TUNED_ON = "all-MiniLM-L6-v2"
SIMILARITY_FLOORS = {
    "all-MiniLM-L6-v2": SimilarityFloors(keyword_vote=0.3, theme=0.3, nearest_category=0.45,
                                         word_to_keyword=0.5),
    "use-multilingual-v3": SimilarityFloors(keyword_vote=0.23, theme=0.23, nearest_category=0.5,
                                            word_to_keyword=0.54),
}


def similarity_floors(model: str) -> SimilarityFloors:
    """`model`'s floors; a model without its own row (all-mpnet-base-v2, a local folder) gets the floors as
    tuned (all-MiniLM-L6-v2's): run eval/utility/similarity_floors.py and add its row to carry them over."""
    return SIMILARITY_FLOORS.get(model, SIMILARITY_FLOORS[TUNED_ON])


@dataclasses.dataclass(frozen=True)
class Encoder:
    """The run's one encoder: the model and how it runs (--embedding_model, --embedding_backend,
    --embedding_device), declared once (EmbeddingParams.encoder) and handed to every stage that embeds
    text. Every text a run embeds goes through it: the conversations, the keyword set and its categories,
    the theme anchors, the facet descriptions, the name bank and decoded names, the exemplar candidates
    and an LLM's own words. So a public text's vector is always in the conversations' space; a second
    encoder in one run would rank, classify and project with vectors from another space.
    backends/embedding.py runs it (encode, encode_public, load, dimension)."""

    model: str = DEFAULT_EMBEDDING_MODEL
    backend: str = "torch"
    device: str = "cpu"

    @property
    def floors(self) -> SimilarityFloors:
        """The cosine floors of this encoder's model."""
        return similarity_floors(self.model)


@params_group
class EmbeddingParams(Params):
    """The embedding model and how it runs."""

    embedding_model: str = flag(
        DEFAULT_EMBEDDING_MODEL,
        "The run's one encoder, for every text it embeds: use-multilingual-v3, all-MiniLM-L6-v2, all-mpnet-base-v2 "
        "or a local sentence-transformers model folder. The default, use-multilingual-v3, is Google's USE "
        "multilingual v3 (numpy, 16 languages; docs/performance.md); all-MiniLM-L6-v2 is packaged (English); "
        "all-mpnet-base-v2 needs scripts/install_mpnet.py.", public=True)
    embedding_backend: str = flag(
        "torch",
        "How the embedding model runs: torch (the default), onnx or onnx-int8. With onnx, the same network "
        "exported to ONNX is run by onnxruntime (same vectors, ~0.7x torch's speed); with onnx-int8, it is "
        "dynamically quantised to int8 and run one text at a time, so no vector depends on its batch (~1.7-2.2x "
        "torch's speed, mean cosine ~0.96 to torch's vectors). "
        "The ONNX file is exported offline on first use. See docs/performance.md.",
        choices=BACKENDS, public=True)
    embedding_device: str = flag(
        "cpu", "Where the torch embedding model runs: cpu (default) or cuda (a GPU; torch backend only, the "
               "ONNX backends run on the CPU). Fixed for the run before any data is read; refused at launch "
               "when no CUDA device is visible (on Dataflow: when no worker_accelerator is requested). Each "
               "vector is still independent of its batch; it may differ from the CPU one in its last bits. "
               "See docs/production.md (GPU workers).", choices=DEVICES, public=True)
    embedding_threads: int = advanced_flag(
        0, "Threads each worker process gives the embedding model; 0 (the default) is auto. Auto: 1 on Dataflow "
           "(one SDK process per vCPU; all cores with the no_use_multiple_sdk_containers experiment), cores / "
           "--direct_num_workers with --direct_running_mode=multi_processing, else the runtime's default (all "
           "cores), so worker processes never oversubscribe the cores. The value used is recorded in "
           "private/run_stats.json.", type=int, ge=0)
    embedding_block_size: int = advanced_flag(
        512, "Conversations per embedding block, the unit that travels as one numpy array. Larger blocks fill "
             "the fixed-shape batches better; on GPU workers use thousands (docs/performance.md, GPU).", type=int, ge=1)

    def check_values(self):
        check_device_value(self.embedding_device, self.embedding_backend)
        if self.embedding_model in NATIVE_MODELS and (self.embedding_backend, self.embedding_device) != ("torch", "cpu"):
            raise ValueError(f"--embedding_model={self.embedding_model} runs its own numpy encoder on the CPU: "
                             "--embedding_backend and --embedding_device apply to sentence-transformers models only "
                             "(leave them at torch and cpu)")

    @property
    def encoder(self) -> Encoder:
        """The run's one encoder, from the three flags."""
        return Encoder(self.embedding_model, self.embedding_backend, self.embedding_device)
