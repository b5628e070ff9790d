"""--embedding_backend: the ONNX runtimes of the default model against its torch vectors."""

import os

import apache_beam as beam
import numpy as np
import pytest
import torch
from apache_beam.testing.util import assert_that

from backends import embedding
from backends.offline import EmbeddingKeywordSelector
from beam_jobs.launch_checks import check_embedding_device
from config.embedding import Encoder
from config.insights import InsightsOptions, insights_params, resolve_embedding_threads
from core.records import Facet
from transforms.embed import EmbedConversations

TEXTS = [
    "How do I reset the password on my home router?",
    "My sourdough starter smells like nail polish remover, is it dead?",
    "Explain the difference between a Roth IRA and a traditional IRA.",
    "short",
    "The landlord kept my deposit without listing damages. " * 20,  # longer than 256 tokens: truncated
]


# The sentence-transformers model the backend and device flags run (the default encoder, USE multilingual v3,
# runs its own numpy encoder and refuses them: test_a_native_model_refuses_the_backend_and_device_flags).
MODEL = "all-MiniLM-L6-v2"


def _options(*extra):
    return InsightsOptions(["--input", "x.jsonl", "--output", "out", "--embedding_model", MODEL, *extra])


def test_a_native_model_refuses_the_backend_and_device_flags():
    base = ["--input", "x.jsonl", "--output", "out"]
    assert insights_params(InsightsOptions(base)).embedding.encoder == Encoder("use-multilingual-v3", "torch", "cpu")
    for flags in (["--embedding_backend", "onnx-int8"], ["--embedding_device", "cuda"]):
        with pytest.raises(ValueError, match="runs its own numpy encoder on the CPU"):
            insights_params(InsightsOptions([*base, *flags]))


def test_embedding_backend_defaults_to_torch_and_accepts_the_onnx_runtimes():
    assert _options().embedding_backend == "torch"
    for backend in ("onnx", "onnx-int8"):
        assert insights_params(_options("--embedding_backend", backend)).embedding.embedding_backend == backend


def test_embedding_threads_default_to_auto_and_must_not_be_negative():
    assert _options().embedding_threads == 0
    insights_params(_options("--embedding_threads", "1"))
    with pytest.raises(ValueError, match="embedding_threads"):
        insights_params(_options("--embedding_threads", "-1"))


@pytest.mark.parametrize("flags,expected", [
    ([], 0),  # in-process: one process, the runtime's default (all cores)
    (["--runner", "DataflowRunner"], 1),  # one SDK process per vCPU
    (["--runner", "DataflowRunner", "--experiments", "no_use_multiple_sdk_containers"], 0),
    (["--direct_running_mode", "multi_processing", "--direct_num_workers", "2"], max(1, (os.cpu_count() or 1) // 2)),
    (["--direct_running_mode", "multi_processing", "--direct_num_workers", "0"], 1),  # a worker per core
    (["--direct_running_mode", "multi_threading", "--direct_num_workers", "2"], 0),  # one process
    (["--runner", "DataflowRunner", "--embedding_threads", "3"], 3),  # an explicit value always wins
])
def test_auto_embedding_threads_follow_the_runners_processes(flags, expected):
    options = _options(*flags)
    assert resolve_embedding_threads(insights_params(options).embedding, options) == expected


def _preflight(*flags):
    """The job's device check (run at launch, with the LLM preflight), on these flags' params."""
    options = _options(*flags)
    params = insights_params(options).embedding
    check_embedding_device(params, options)
    return params


def test_embedding_device_defaults_to_cpu_and_cuda_is_checked_before_any_data(monkeypatch):
    assert insights_params(_options()).embedding.embedding_device == "cpu"
    with pytest.raises(SystemExit):
        _options("--embedding_device", "tpu")
    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)
    with pytest.raises(ValueError, match="--embedding_device=cuda: torch sees no CUDA device"):
        _preflight("--embedding_device", "cuda")
    for backend in ("onnx", "onnx-int8"):  # onnxruntime runs on the CPU only, GPU or not
        with pytest.raises(ValueError, match="--embedding_device=cuda runs the torch backend only"):
            insights_params(_options("--embedding_device", "cuda", "--embedding_backend", backend))
        with pytest.raises(ValueError, match="torch backend only"):
            embedding.embed_texts(MODEL, ["x"], backend=backend, device="cuda")
    monkeypatch.setattr(torch.cuda, "is_available", lambda: True)
    assert _preflight("--embedding_device", "cuda").embedding_device == "cuda"


def test_the_job_refuses_a_missing_gpu_at_launch_as_a_bad_option(monkeypatch, tmp_path, capsys):
    from beam_jobs.insights import run
    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)
    assert run(["--input", str(tmp_path / "none.jsonl"), "--output", str(tmp_path / "out"),
                "--embedding_model", MODEL, "--embedding_device", "cuda"]) == 2
    assert "torch sees no CUDA device" in capsys.readouterr().err
    assert not (tmp_path / "out").exists()


def test_cuda_on_dataflow_needs_gpu_workers_not_a_gpu_in_the_launcher(monkeypatch):
    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)  # the launcher VM has none
    dataflow = ("--embedding_device", "cuda", "--runner", "DataflowRunner")
    with pytest.raises(ValueError, match="--embedding_device=cuda on Dataflow needs GPU workers"):
        _preflight(*dataflow)
    accelerator = "worker_accelerator=type:nvidia-l4;count:1;install-nvidia-driver"
    for how in ("--dataflow_service_options", "--experiments"):  # the flex-template launch passes experiments
        assert _preflight(*dataflow, how, accelerator).embedding_device == "cuda"


class _FakeSentenceTransformer:
    def __init__(self, path, device=None):
        self.path, self.device = path, device

    def eval(self):
        return self


def test_the_device_reaches_the_model_and_keys_its_cache(monkeypatch):
    import sentence_transformers
    monkeypatch.setattr(sentence_transformers, "SentenceTransformer", _FakeSentenceTransformer)
    monkeypatch.setattr(embedding, "_models", {})
    determinism = []
    monkeypatch.setattr(embedding, "_deterministic_cuda", lambda: determinism.append(True))
    name = MODEL
    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)
    with pytest.raises(RuntimeError, match="torch sees no CUDA device"):  # a worker without the GPU it needs
        embedding.load_model(name, "cuda")
    assert not embedding._models
    monkeypatch.setattr(torch.cuda, "is_available", lambda: True)
    on_gpu, on_cpu = embedding.load_model(name, "cuda"), embedding.load_model(name)
    assert (on_gpu.device, on_cpu.device) == ("cuda", "cpu") and determinism == [True]  # CPU loads change nothing
    assert set(embedding._models) == {(name, "cuda"), (name, "cpu")}
    assert embedding.load_model(name, "cuda") is on_gpu and embedding.load_model(name, "cpu") is on_cpu
    with pytest.raises(ValueError, match="unknown embedding device"):
        embedding.check_device("tpu")


def test_deterministic_cuda_keeps_an_operators_cublas_workspace(monkeypatch):
    calls = []
    monkeypatch.setattr(torch, "use_deterministic_algorithms", lambda mode: calls.append(mode))
    monkeypatch.setattr(torch.backends.cudnn, "benchmark", torch.backends.cudnn.benchmark)
    monkeypatch.setattr(torch.backends.cudnn, "deterministic", torch.backends.cudnn.deterministic)
    monkeypatch.delenv("CUBLAS_WORKSPACE_CONFIG", raising=False)
    embedding._deterministic_cuda()
    assert os.environ["CUBLAS_WORKSPACE_CONFIG"] == ":4096:8" and calls == [True]
    assert torch.backends.cudnn.deterministic and not torch.backends.cudnn.benchmark
    monkeypatch.setenv("CUBLAS_WORKSPACE_CONFIG", ":16:8")
    embedding._deterministic_cuda()
    assert os.environ["CUBLAS_WORKSPACE_CONFIG"] == ":16:8"


def test_the_pipelines_embedding_callers_pass_the_device_on(monkeypatch):
    from backends.factory import make_keyword_selector
    from backends.keyword_categories import KeywordCategories
    from transforms.embed import _EmbedBatchFn
    loads, embeds = [], []
    monkeypatch.setattr(embedding, "load_model", lambda name, device="cpu": loads.append(device))
    monkeypatch.setattr(embedding, "embed_texts", lambda name, texts, batch_size=64, backend="torch", device="cpu":
                        embeds.append(device) or np.eye(len(texts), 4, dtype=np.float32))
    on_cuda = Encoder(MODEL, "torch", "cuda")
    fn = _EmbedBatchFn(on_cuda, 16)
    fn.setup()
    list(fn.process([Facet("c", "u", 1.0, "hello")]))
    make_keyword_selector(("router",), on_cuda, 0.3, None).setup()
    KeywordCategories({"router": None}, on_cuda).setup()
    assert loads == ["cuda"] and embeds == ["cuda"] * 3
    assert Encoder("m").device == "cpu"  # an encoder that names no device keeps the CPU


def test_unknown_embedding_backend_is_rejected():
    with pytest.raises(SystemExit):
        _options("--embedding_backend", "tensorrt")
    with pytest.raises(ValueError, match="unknown embedding backend"):
        embedding.load_onnx_model(MODEL, "tensorrt")


@pytest.fixture(scope="module")
def model_home(tmp_path_factory):
    """A fresh model home shared by this module's tests, so the export (tens of seconds) runs once."""
    home = tmp_path_factory.mktemp("models")
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("URANIA_MODEL_HOME", str(home))
        patch.setattr(embedding, "_onnx_models", {})
        yield home


@pytest.mark.real_model
def test_onnx_backends_export_offline_and_match_the_torch_vectors(model_home):
    name = MODEL
    reference = embedding.embed_texts(name, TEXTS)
    exact = embedding.embed_texts(name, TEXTS, batch_size=2, backend="onnx")
    quantised = embedding.embed_texts(name, TEXTS, batch_size=2, backend="onnx-int8")
    assert (model_home / "onnx" / name / "model.onnx").is_file()
    assert (model_home / "onnx" / name / "model.int8.onnx").is_file()
    for vectors in (exact, quantised):
        assert vectors.shape == reference.shape and vectors.dtype == np.float32
        np.testing.assert_allclose(np.linalg.norm(vectors, axis=1), 1.0, atol=1e-5)
    # Same network, other runtime: the same vectors up to float rounding, whatever the batching.
    np.testing.assert_allclose(exact, reference, atol=2e-4)
    cosine = (quantised * reference).sum(axis=1)
    assert cosine.min() > 0.9, cosine
    # int8 weights still tell topics apart: each text is nearest its own torch vector.
    assert (np.argmax(quantised @ reference.T, axis=1) == np.arange(len(TEXTS))).all()
    assert embedding.embed_texts(name, [], backend="onnx").shape[0] == 0


def _random_texts(rng: np.random.Generator, count: int) -> list[str]:
    """Texts of every length bucket: mostly short requests, one in eight long (up to past the model's 256 tokens)."""
    words = np.where(rng.random(count) < 0.125, rng.integers(60, 400, count), rng.integers(1, 60, count))
    return [" ".join(rng.choice(_WORDS, size=int(n))) + "?" for n in words]


_WORDS = np.array(("how do I fix my router password bread starter landlord deposit contract python error list "
                   "the a of to in why what is recipe tax refund flight delayed cat vomits grass sql join "
                   "summarise this clause please explain quantum email boss late rent 401k ira").split())


def test_fixed_batch_shapes_depend_on_each_texts_own_length_only():
    rng = np.random.default_rng(3)
    for device in embedding.DEVICES:
        for lengths in (rng.integers(1, 257, 500), [3], [256] * 7, rng.integers(1, 20, 50)):
            seen = []
            for length, rows, members in embedding.fixed_shape_batches(lengths, 256, device):
                assert rows == embedding.batch_rows(length, device) and 1 <= len(members) <= rows
                for i in members:
                    assert length == embedding.bucket_length(int(lengths[i]), 256) >= lengths[i]
                seen += members
            assert sorted(seen) == list(range(len(lengths)))
    assert embedding.bucket_length(1, 256) == embedding.BUCKET_STEP and embedding.bucket_length(250, 256) == 256
    # A GPU runs many rows a launch (the measured budget), a CPU few; each still fixed for its device.
    assert embedding.batch_rows(64, "cuda") == 128 and embedding.batch_rows(64) == 4
    assert embedding.batch_rows(256, "cuda") == 32 and embedding.batch_rows(256) == 1


# Every backend on the CPU, and the torch backend on CUDA where a GPU is visible: the same assertions.
_NO_CUDA = pytest.mark.skipif(not torch.cuda.is_available(),
                              reason="no CUDA device here: run on a GPU machine to assert bit-identity on CUDA")
# (model, backend, device): MiniLM on every backend, the default native encoder (its own numpy runtime).
BACKEND_DEVICES = [*((MODEL, backend, "cpu") for backend in embedding.BACKENDS),
                   (embedding.DEFAULT_EMBEDDING_MODEL, "torch", "cpu"),
                   pytest.param(MODEL, "torch", "cuda", marks=_NO_CUDA)]


@pytest.mark.real_model
@pytest.mark.parametrize("name,backend,device", BACKEND_DEVICES)
def test_each_text_gets_the_vector_it_gets_alone_whatever_its_batch(model_home, name, backend, device):
    # DP k-means assumes one user's records move only that user's points: a vector must not depend,
    # by a single bit, on the texts batched with it (neighbours, padding to a longer neighbour,
    # position, batch size, how many texts share its length bucket).
    tiny = ["hi", "ok?", ""]
    huge = ["Please summarise this contract clause for me in plain words. " * 12]  # truncated: 256 tokens
    rng = np.random.default_rng(7)
    pool = TEXTS + tiny + huge + _random_texts(rng, 40)
    batches = [  # (texts, batch_size)
        (TEXTS, 64),
        (TEXTS[::-1], 2),
        (tiny + TEXTS + huge, 3),
        (huge * 3 + TEXTS + tiny * 3, 8),
        (TEXTS[3:4] + TEXTS[:1] + huge, 16),
    ]
    for _ in range(6):  # random compositions: random neighbours, sizes, duplicates and positions
        size = int(rng.integers(1, 80))
        batches.append(([pool[i] for i in rng.integers(0, len(pool), size)], int(rng.integers(1, 65))))
    alone = {text: embedding.embed_texts(name, [text], backend=backend, device=device)[0]
             for texts, _ in batches for text in texts}
    for texts, batch_size in batches:
        vectors = embedding.embed_texts(name, texts, batch_size, backend=backend, device=device)
        for position, (text, vector) in enumerate(zip(texts, vectors)):
            np.testing.assert_array_equal(
                vector, alone[text], err_msg=f"{backend} on {device}: text {position} of {len(texts)}, "
                                             f"batch_size {batch_size}")


@pytest.mark.real_model
@pytest.mark.parametrize("name,backend,device", BACKEND_DEVICES)
def test_adding_one_record_leaves_every_other_vector_bit_identical(model_home, name, backend, device):
    rng = np.random.default_rng(11)
    # 90 texts already fill many token-budget batches (BATCH_TOKENS), so the one added shifts the batch
    # boundaries of every text after it.
    texts = _random_texts(rng, 90)
    before = embedding.embed_texts(name, texts, backend=backend, device=device)
    for extra, position in ((texts[5] + " and one more", 47), ("x", len(texts))):
        after = embedding.embed_texts(name, texts[:position] + [extra] + texts[position:], backend=backend,
                                      device=device)
        np.testing.assert_array_equal(np.delete(after, position, axis=0), before,
                                      err_msg=f"{backend} on {device}: one record added at {position}")


@_NO_CUDA
@pytest.mark.real_model
def test_cuda_vectors_stay_close_to_the_cpu_vectors():
    # Another device may change the last bits (other kernels), never the meaning.
    name = MODEL
    cpu = embedding.embed_texts(name, TEXTS)
    cuda = embedding.embed_texts(name, TEXTS, device="cuda")
    np.testing.assert_allclose(cuda, cpu, atol=1e-4)


# Where scripts/install_mpnet.py puts the model, read before the model_home fixture points elsewhere.
INSTALLED_MODEL_HOME = embedding.model_home()


@pytest.mark.real_model
def test_mpnet_vectors_are_batch_invariant_too(monkeypatch):
    # The module's model_home fixture, when an earlier test opened it, points at a fresh folder without mpnet:
    # this test reads the installed one (it used to skip whenever it ran after those tests).
    monkeypatch.setenv("URANIA_MODEL_HOME", INSTALLED_MODEL_HOME)
    try:
        embedding.resolve_model_path("all-mpnet-base-v2")
    except RuntimeError as error:
        pytest.skip(str(error))  # CI installs it (scripts/install_mpnet.py)
    name = "all-mpnet-base-v2"
    rng = np.random.default_rng(5)
    texts = TEXTS + ["", "hi"] + _random_texts(rng, 24)  # past several batches of each bucket, as the MiniLM tests
    vectors = embedding.embed_texts(name, texts)
    for i in (0, 4, 5, 6, *rng.integers(7, len(texts), 4)):
        np.testing.assert_array_equal(vectors[i], embedding.embed_texts(name, [texts[i]])[0], err_msg=f"text {i}")
    after = embedding.embed_texts(name, texts[:20] + ["one more record"] + texts[20:])
    np.testing.assert_array_equal(np.delete(after, 20, axis=0), vectors)


@pytest.mark.real_model
def test_embedding_stage_and_keyword_selector_use_the_chosen_backend(model_home):
    name = MODEL
    facets = [Facet(f"c{i}", f"u{i}", 1.0, text) for i, text in enumerate(TEXTS)]
    expected = dict(zip((f.conversation_id for f in facets), embedding.embed_texts(name, TEXTS, backend="onnx")))

    def check(blocks):
        rows = {cid: vector for block in blocks for cid, vector in zip(block.conversation_ids, block.embeddings)}
        assert rows.keys() == expected.keys()
        for cid, vector in rows.items():
            np.testing.assert_array_equal(vector, expected[cid])  # the stage's blocks change no bit

    with beam.Pipeline() as pipeline:
        embedded = pipeline | beam.Create(facets) | EmbedConversations(Encoder(name, "onnx"), block_size=2)
        assert_that(embedded.output, check)

    selector = EmbeddingKeywordSelector(("router", "bread", "retirement savings"), Encoder(name, "onnx-int8"), 0.2)
    picks = selector.select(TEXTS[:3], embedding.embed_texts(name, TEXTS[:3], backend="onnx-int8"), 1)
    assert picks == [["router"], ["bread"], ["retirement savings"]]


@pytest.mark.real_model
def test_embedding_threads_set_the_worker_process_threads():
    before = torch.get_num_threads()
    try:
        with beam.Pipeline() as pipeline:  # in-process runner: the worker is this process
            _ = (pipeline | beam.Create([Facet("c", "u", 1.0, TEXTS[0])])
                 | EmbedConversations(Encoder(MODEL), threads=1))
        assert torch.get_num_threads() == 1
    finally:
        torch.set_num_threads(before)


def test_public_texts_are_embedded_once_per_process_with_the_vectors_they_get_alone(monkeypatch):
    real, encoded = embedding.embed_texts, []

    def counting(name, texts, *args, **kwargs):
        encoded.append(list(texts))
        return real(name, texts, *args, **kwargs)

    monkeypatch.setattr(embedding, "embed_texts", counting)
    first = embedding.embed_public_texts(MODEL, TEXTS[:3])
    again = embedding.embed_public_texts(MODEL, [TEXTS[3], TEXTS[1], TEXTS[3]])
    assert encoded == [TEXTS[:3], [TEXTS[3]]]  # each text once, a repeat within a call too
    assert np.array_equal(again[1], first[1]) and np.array_equal(again[0], again[2])
    for text, vector in zip(TEXTS[:3], first):
        assert np.array_equal(vector, real(MODEL, [text])[0])
    assert embedding.embed_public_texts(MODEL, []).shape == (0, first.shape[1])
    monkeypatch.undo()  # the real encoder never sees what the counting one memoised, nor the other way round
    assert embedding.embed_public_texts(MODEL, TEXTS[:1]).shape == (1, first.shape[1])
    assert len(encoded) == 3  # the empty call reached the encoder; the real one's call did not reach `counting`
