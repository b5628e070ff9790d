"""What the insights job's flags need of the machine, checked at launch before any data is read: the
bundled token-decoder model, a GPU where --embedding_device asks for one. The flags' values themselves are
checked when their params are built (config/); the LLM backend's needs by backends.factory.preflight.
"""

from __future__ import annotations

from apache_beam.options.pipeline_options import PipelineOptions

from backends.token_decoder import model_path as token_decoder_model_path
from config.decoding import DecodingParams
from config.embedding import EmbeddingParams
from config.insights import requests_worker_gpus, runs_on_dataflow
from core.params import check


def check_token_decoder_installed(decoding: DecodingParams) -> None:
    """Before any data is read: --token_decoding_steps needs the bundled model (a missing one is a bad option)."""
    if decoding.token_decoding_steps:
        try:
            token_decoder_model_path()
        except RuntimeError as error:
            raise ValueError(f"--token_decoding_steps: {error}") from None


def check_embedding_device(embedding: EmbeddingParams, pipeline_options: PipelineOptions) -> None:
    """--embedding_device=cuda where the model will run: on Dataflow the workers, not this launcher, hold
    the GPU, so the job must request one (worker_accelerator); elsewhere the model runs in this machine's
    processes, so torch must see a CUDA device here. A bad value is a ValueError before any data is read."""
    if embedding.embedding_device == "cpu":
        return
    if runs_on_dataflow(pipeline_options):
        check(requests_worker_gpus(pipeline_options),
              f"--embedding_device={embedding.embedding_device} on Dataflow needs GPU workers: "
              "--dataflow_service_options=\"worker_accelerator=type:nvidia-tesla-t4;count:1;install-nvidia-driver\" "
              "and a CUDA image (docs/production.md, GPU workers)")
        return
    from backends.embedding import check_device
    check_device(embedding.embedding_device, embedding.embedding_backend)
