"""The embedding group: the embedding model and how it runs (backends/embedding.py runs it)."""

from __future__ import annotations

from core.params import Params, flag, params_group

DEFAULT_EMBEDDING_MODEL = "all-MiniLM-L6-v2"
BACKENDS = ("torch", "onnx", "onnx-int8")
DEVICES = ("cpu", "cuda")  # fixed for a run (--embedding_device), never chosen by the data


def check_device_value(device: str, backend: str = "torch") -> None:
    """Raises ValueError unless `device` is one of DEVICES and can run `backend` (the values alone; the
    flags' own check, EmbeddingParams)."""
    if device not in DEVICES:
        raise ValueError(f"unknown embedding device {device!r}; expected one of {', '.join(DEVICES)}")
    if device != "cpu" and backend != "torch":
        raise ValueError(f"--embedding_device={device} runs the torch backend only; --embedding_backend={backend} "
                         "(onnxruntime) runs on the CPU: use --embedding_backend=torch or --embedding_device=cpu")


@params_group
class EmbeddingParams(Params):
    """The embedding model and how it runs."""

    embedding_model: str = flag(
        DEFAULT_EMBEDDING_MODEL,
        "sentence-transformers model: all-MiniLM-L6-v2 (packaged), all-mpnet-base-v2 (after "
        "scripts/install_mpnet.py) or a local model folder.", public=True)
    embedding_backend: str = flag(
        "torch",
        "How the embedding model runs: torch (default), onnx (the same network exported to ONNX, "
        "run by onnxruntime: same vectors, ~0.7x torch's speed) or onnx-int8 (dynamically quantised "
        "to int8 and run one text at a time, so no vector depends on its batch: ~1.7-2.2x torch's "
        "speed, mean cosine ~0.96 to torch's vectors). "
        "The ONNX file is exported offline on first use. See docs/performance.md.",
        choices=BACKENDS, public=True)
    embedding_device: str = flag(
        "cpu", "Where the torch embedding model runs: cpu (default) or cuda (a GPU; torch backend only, the "
               "ONNX backends run on the CPU). Fixed for the run before any data is read; refused at launch "
               "when no CUDA device is visible (on Dataflow: when no worker_accelerator is requested). Each "
               "vector is still independent of its batch; it may differ from the CPU one in its last bits. "
               "See docs/production.md (GPU workers).", choices=DEVICES, public=True)
    embedding_threads: int = flag(
        0, "Threads each worker process gives the embedding model. 0 (default) = auto: 1 on Dataflow "
           "(one SDK process per vCPU; all cores with the no_use_multiple_sdk_containers experiment), cores / "
           "--direct_num_workers with --direct_running_mode=multi_processing, else the runtime's default (all "
           "cores), so worker processes never oversubscribe the cores. The value used is recorded in "
           "private/run_stats.json.", type=int, ge=0)
    embedding_block_size: int = flag(
        512, "Conversations per embedding block, the unit that travels as one numpy array. Larger blocks fill "
             "the fixed-shape batches better; on GPU workers use thousands (docs/performance.md, GPU).", type=int, ge=1)

    def check_values(self):
        check_device_value(self.embedding_device, self.embedding_backend)
