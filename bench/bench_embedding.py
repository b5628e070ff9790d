"""Embedding: the pipeline's embedding stage vs. a plain SentenceTransformer.encode, and the cheaper backends.

    .venv/bin/python bench/bench_embedding.py --conversations 2000 --rounds 3
    .venv/bin/python bench/bench_embedding.py --conversations 2000 --rounds 3 --backends onnx onnx-int8

Texts: the facets (user turns, first 1,000 characters) of N generated conversations, plus, with
--shared_data, the conversations of real public data sets (bench only, never copied into the repo),
whose lengths vary far more than the generated ones.

1. Stage vs. plain encode: the real EmbedConversations transform on the DirectRunner (in-process
   FnApiRunner, so it shares this process's model and torch threads) and `model.encode(texts)` over
   the same texts with the same model object, run interleaved (stage, plain, stage, plain, ...) so
   that load from other processes on a shared machine hits both; median conversations/s and ratio.
2. Backends (--backends): each alternative and the torch default encode the same texts, interleaved;
   quality = mean cosine between each text's vector and the torch vector, and the purity / NMI of a
   k-means (k = planted topics) over the generated conversations' vectors against the planted topics.
3. Old vs new (--old_vs_new torch onnx): the batch-invariant encoders of backends/embedding.py (fixed
   batch shapes per length bucket) against the old path they replaced (per block of 512, sorted by
   length, batches of 16 padded to their longest text), interleaved, in the stage's blocks; and how
   many other rows of a block change, and by how much, when one record is added to it.

    .venv/bin/python bench/bench_embedding.py --conversations 1000 --real 1000 --rounds 5 --skip_stage --old_vs_new torch onnx

4. Devices (--device cuda, on a GPU machine): the batch-invariant torch encoder on the CPU and on CUDA
   over the same texts, interleaved, in the stage's blocks: conversations/s of each, the speed-up, the
   largest difference between the two devices' vectors, and whether CUDA gives each text its vector
   alone; then sections 1-2 run on CUDA. --device_only stops after it.

    .venv/bin/python bench/bench_embedding.py --conversations 2000 --rounds 3 --device cuda --device_only
"""

from __future__ import annotations

import argparse
import os
import platform
import statistics
import sys
import tempfile
import time
from contextlib import contextmanager

import numpy as np

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)
from bench.bench_pipeline import cpu_model  # noqa: E402

os.environ.setdefault("HF_HUB_OFFLINE", "1")

import torch  # noqa: E402

from backends import embedding  # noqa: E402
from backends.offline import UserTurnsFacetExtractor  # noqa: E402
from core.records import Conversation, Facet  # noqa: E402
from synthetic.sample import LENGTHS, generate_records  # noqa: E402
from transforms.validation import parse_record  # noqa: E402


def load_texts(conversations: int, shared_data: list[str], seed: int,
               lengths: str = "planted") -> tuple[list[str], list[str], list[str]]:
    """(generated facets, their planted topics, real facets)."""
    extractor = UserTurnsFacetExtractor(1000)
    generated, topics = [], []
    for i, record in enumerate(generate_records(conversations, max(1, conversations // 3), seed, lengths=lengths)):
        parsed = parse_record(record, "generated", i)
        if isinstance(parsed, Conversation):
            generated.append(extractor.extract(parsed))
            topics.append(record["planted_topic"])
    real = []
    for path in shared_data:
        for i, line in enumerate(open(path, "rb")):
            parsed = parse_record(line, path, i)
            if isinstance(parsed, Conversation):
                text = extractor.extract(parsed)
                if text:
                    real.append(text)
    return generated, topics, real


def run_stage(texts: list[str], model_name: str, backend: str, block_size: int,
              encode_batch_size: int, device: str = "cpu") -> tuple[int, np.ndarray]:
    """Runs EmbedConversations on the DirectRunner; returns (rows embedded, sum of all vectors)."""
    # Imported here: the device comparison (--device_only) runs where only torch is installed (a GPU image).
    import apache_beam as beam

    from config.embedding import Encoder
    from transforms.embed import EmbedConversations
    from transforms.sum_arrays import SumArraysFn

    facets = [Facet(f"c{i}", f"u{i}", 1.0, text) for i, text in enumerate(texts)]
    # A scratch file outside the repository (bench/results/ need not exist in a fresh clone).
    out = os.path.join(tempfile.gettempdir(), f"urania_stage_sum_{os.getpid()}.npy")
    with beam.Pipeline() as pipeline:
        embedded = (pipeline
                    | beam.Create(facets, reshuffle=False)
                    | EmbedConversations(Encoder(model_name, backend, device), block_size, encode_batch_size))
        _ = (embedded.output
             | beam.Map(lambda block: np.concatenate([[len(block)], block.embeddings.sum(axis=0)]))
             | beam.CombineGlobally(SumArraysFn(1 + embedding.embedding_dimension(model_name)))
             | beam.Map(lambda total, path: np.save(path, total), out))
    total = np.load(out)
    os.remove(out)
    return int(total[0]), total[1:]


def padded_tokens(lengths: np.ndarray, block_size: int, batch_size: int) -> int:
    """Tokens the model runs over (padding included) when each block is sorted by length and cut into
    batches, as encode() does within one call; block_size >= len(lengths) is one plain encode call."""
    total = 0
    for start in range(0, len(lengths), block_size):
        ordered = np.sort(lengths[start:start + block_size])[::-1]
        total += sum(len(ordered[b:b + batch_size]) * ordered[b] for b in range(0, len(ordered), batch_size))
    return int(total)


def fixed_shape_tokens(lengths: np.ndarray, block_size: int, max_length: int) -> int:
    """Tokens the batch-invariant encoder runs over: each block in fixed-shape batches, dummy rows included."""
    return int(sum(rows * length for start in range(0, len(lengths), block_size)
                   for length, rows, _ in embedding.fixed_shape_batches(lengths[start:start + block_size], max_length)))


def old_encode(model_name: str, backend: str, texts: list[str], batch_size: int) -> np.ndarray:
    """The encoders before batch invariance: sorted by length within the call, batches of `batch_size`
    padded to their longest text (torch: SentenceTransformer.encode; onnx: the same loop over the session)."""
    if backend == "torch":
        return embedding.load_model(model_name).encode(texts, batch_size=batch_size, normalize_embeddings=True,
                                                         convert_to_numpy=True, show_progress_bar=False)
    encoder = embedding.load_onnx_model(model_name, backend)
    order = np.argsort([-len(t) for t in texts], kind="stable")
    pieces = []
    for start in range(0, len(texts), batch_size):
        batch = [texts[i] for i in order[start:start + batch_size]]
        tokens = encoder._tokenizer(batch, padding=True, truncation=True, max_length=encoder._max_seq_length,
                                    return_tensors="np")
        pieces.append(encoder._run({n: tokens[n].astype(np.int64) for n in tokens}))
    vectors = np.empty_like(np.concatenate(pieces))
    vectors[order] = np.concatenate(pieces)
    return vectors


def old_vs_new(texts: list[str], model_name: str, backends: list[str], rounds: int, block_size: int,
               batch_size: int) -> None:
    """Times the old and the batch-invariant encoders interleaved, in the stage's blocks, and checks invariance."""
    def in_blocks(encode):
        return np.concatenate([encode(texts[s:s + block_size]) for s in range(0, len(texts), block_size)])

    print(f"old (sorted, padded batches of {batch_size}) vs new (batch-invariant: fixed shapes, buckets of "
          f"{embedding.BUCKET_STEP} tokens, {embedding.BATCH_TOKENS['cpu']} tokens a batch), blocks of {block_size}, "
          f"{torch.get_num_threads()} threads, {rounds} interleaved rounds (wall s; CPU s of this process):")
    for backend in backends:
        variants = {
            "old": lambda ts, b=backend: old_encode(model_name, b, ts, batch_size),
            "new": lambda ts, b=backend: embedding.embed_texts(model_name, ts, batch_size, backend=b),
        }
        for encode in variants.values():
            encode(texts[:64])  # load / export once
        wall = {v: [] for v in variants}
        cpu = {v: [] for v in variants}
        vectors = {}
        for _ in range(rounds):
            for name, encode in variants.items():
                started, cpu_started = time.perf_counter(), time.process_time()
                vectors[name] = in_blocks(encode)
                wall[name].append(time.perf_counter() - started)
                cpu[name].append(time.process_time() - cpu_started)
        ratios = [n / o for n, o in zip(wall["new"], wall["old"])]
        for name in variants:
            median = statistics.median(wall[name])
            cpu_median = statistics.median(cpu[name])
            print(f"  {backend:<6} {name}  {median:7.2f} s {len(texts) / median:7.1f} conv/s  CPU {cpu_median:7.2f} s"
                  f"  rounds: {', '.join(f'{t:.1f}' for t in wall[name])}", flush=True)
        print(f"  {backend:<6} new / old: wall {statistics.median(wall['new']) / statistics.median(wall['old']):.2f}x "
              f"(median of per-round ratios {statistics.median(ratios):.2f}x; rounds: "
              f"{', '.join(f'{r:.2f}' for r in ratios)}), "
              f"CPU {statistics.median(cpu['new']) / statistics.median(cpu['old']):.2f}x;"
              f" max |new - old| {np.abs(vectors['new'] - vectors['old']).max():.2e}")
        block = texts[:block_size]
        extra, position = texts[-1] + " (one more record)", len(block) // 2
        for name, encode in variants.items():
            before = encode(block)
            after = np.delete(encode(block[:position] + [extra] + block[position:]), position, axis=0)
            changed = int((before != after).any(axis=1).sum())
            print(f"  {backend:<6} {name}: one record added to a block of {len(block)}: {changed} other rows changed, "
                  f"max |diff| {np.abs(before - after).max():.1e}", flush=True)


@contextmanager
def batch_tokens_set(device: str, tokens: int):
    """backends.embedding.BATCH_TOKENS[device] (the fixed batch shapes' token budget) set to `tokens` for a while."""
    saved = embedding.BATCH_TOKENS[device]
    embedding.BATCH_TOKENS[device] = tokens
    try:
        yield
    finally:
        embedding.BATCH_TOKENS[device] = saved


def cpu_vs_cuda(texts: list[str], model_name: str, rounds: int, block_size: int, batch_tokens: list[int]) -> None:
    """The batch-invariant torch encoder on the CPU (at its shipped BATCH_TOKENS) and on CUDA (at each of
    `batch_tokens`) over the same texts, interleaved, in the stage's blocks; plus CUDA's plain encode."""
    def in_blocks(device, tokens):
        with batch_tokens_set(device, tokens):
            vectors = np.concatenate([embedding.embed_texts(model_name, texts[s:s + block_size], device=device)
                                      for s in range(0, len(texts), block_size)])
        if device == "cuda":
            torch.cuda.synchronize()
        return vectors

    configs = [("cpu", embedding.BATCH_TOKENS["cpu"])] + [("cuda", tokens) for tokens in batch_tokens]
    print(f"devices: torch on the CPU ({torch.get_num_threads()} threads) vs CUDA "
          f"({torch.cuda.get_device_name(0)}), blocks of {block_size}, {rounds} interleaved rounds; "
          f"BATCH_TOKENS shipped = {embedding.BATCH_TOKENS}:")
    for device in ("cpu", "cuda"):
        embedding.embed_texts(model_name, texts[:64], device=device)  # load once
    model = embedding.load_model(model_name, "cuda")

    def plain_cuda():  # the physical reference: sentence-transformers' own batching, 256 at a time
        vectors = model.encode(texts, batch_size=256, normalize_embeddings=True, convert_to_numpy=True,
                               show_progress_bar=False)
        torch.cuda.synchronize()
        return vectors

    wall = {config: [] for config in [*configs, "plain cuda"]}
    runs = {config: [] for config in configs}
    for _ in range(rounds):
        for config in wall:
            started = time.perf_counter()
            vectors = plain_cuda() if config == "plain cuda" else in_blocks(*config)
            wall[config].append(time.perf_counter() - started)
            if config != "plain cuda":
                runs[config].append(vectors)
    cpu_median = statistics.median(wall[configs[0]])
    sample = list(range(0, len(texts), max(1, len(texts) // 50)))
    for config, seconds in wall.items():
        median = statistics.median(seconds)
        name = config if isinstance(config, str) else f"{config[0]} BATCH_TOKENS={config[1]}"
        line = (f"  {name:<26} {median:7.2f} s {len(texts) / median:8.1f} conv/s ({cpu_median / median:5.2f}x cpu)  "
                f"rounds: {', '.join(f'{t:.2f}' for t in seconds)}")
        if not isinstance(config, str):
            device, tokens = config
            vectors = runs[config][-1]
            with batch_tokens_set(device, tokens):
                alone = np.concatenate([embedding.embed_texts(model_name, [texts[i]], device=device) for i in sample])
            same_runs = all((v == vectors).all() for v in runs[config])
            line += (f"\n      max |vs cpu| {np.abs(vectors - runs[configs[0]][-1]).max():.2e}; each of {len(sample)} "
                     f"sampled texts alone == in its block: {bool((alone == vectors[sample]).all())}; "
                     f"{rounds} rounds bit-identical: {same_runs}")
        print(line, flush=True)


def purity_and_nmi(vectors: np.ndarray, topics: list[str], seed: int) -> tuple[float, float]:
    from sklearn.cluster import KMeans
    from sklearn.metrics import normalized_mutual_info_score
    names, labels = np.unique(topics, return_inverse=True)
    clusters = KMeans(n_clusters=len(names), n_init=3, random_state=seed).fit_predict(vectors)
    majority = sum(np.bincount(labels[clusters == c]).max() for c in np.unique(clusters))
    return majority / len(labels), normalized_mutual_info_score(labels, clusters)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--conversations", type=int, default=2000)
    parser.add_argument("--shared_data", nargs="*", default=[
        "/work/shared/data/hh_rlhf_harmless_test.jsonl", "/work/shared/data/arena_hard_v2_prompts.jsonl"])
    parser.add_argument("--model", default=embedding.DEFAULT_EMBEDDING_MODEL)
    parser.add_argument("--real", type=int, default=None, help="use this many of the real conversations (default all)")
    parser.add_argument("--stage_configs", nargs="+", default=["512:16"],
                        help="BLOCK:BATCH pairs: the stage's block size (--embedding_block_size) and encode batch")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--skip_stage", action="store_true", help="only compare the backends")
    parser.add_argument("--padding_only", action="store_true", help="only count padded tokens per configuration")
    parser.add_argument("--backends", nargs="*", default=[], help="alternatives to time against torch")
    parser.add_argument("--old_vs_new", nargs="*", default=[],
                        help="backends (torch, onnx) to time old padded batches against the batch-invariant encoder")
    parser.add_argument("--device", choices=embedding.DEVICES, default="cpu",
                        help="where torch runs (--embedding_device); cuda also times the CPU on the same texts")
    parser.add_argument("--device_only", action="store_true", help="with --device cuda: only compare the devices")
    parser.add_argument("--batch_tokens", type=int, nargs="+", default=[embedding.BATCH_TOKENS["cuda"]],
                        help="with --device cuda: the fixed batch shapes' token budgets to time CUDA at")
    parser.add_argument("--lengths", choices=LENGTHS, default="planted",
                        help="the generated conversations' lengths (beam_jobs/generate_sample.py --lengths)")
    parser.add_argument("--seed", type=int, default=1)
    args = parser.parse_args(argv)
    embedding.check_device(args.device)  # a clear error before any text is read

    generated, topics, real = load_texts(args.conversations, [p for p in args.shared_data if os.path.exists(p)],
                                         args.seed, args.lengths)
    rng = np.random.default_rng(args.seed)
    real = [real[i] for i in sorted(rng.permutation(len(real))[:args.real])] if args.real is not None else real
    texts = generated + real
    # A job sees conversations in no particular order: shuffle, so blocks mix short and long texts.
    texts = [texts[i] for i in rng.permutation(len(texts))]
    real_set = set(real)
    model = embedding.load_model(args.model, args.device)
    gpu = f", GPU {torch.cuda.get_device_name(0)}" if args.device == "cuda" else ""
    print(f"machine: {os.cpu_count()} cores, {cpu_model()}{gpu}, python {platform.python_version()}, "
          f"torch {torch.__version__} with {torch.get_num_threads()} threads")
    print(f"command: bench/bench_embedding.py {' '.join(argv if argv is not None else sys.argv[1:])}")
    topic_of = dict(zip(generated, topics))
    generated_topics = [topic_of[t] for t in texts if t not in real_set]
    lengths = [len(t) for t in texts]
    print(f"texts: {len(generated)} generated + {len(real)} real = {len(texts)}; characters median "
          f"{int(np.median(lengths))}, p90 {int(np.percentile(lengths, 90))}, max {max(lengths)}", flush=True)

    def plain_encode():  # sentence-transformers' defaults (batch 32, sorted by length over all texts)
        return model.encode(texts, normalize_embeddings=True, convert_to_numpy=True, show_progress_bar=False)

    tokens = model.tokenizer(texts, truncation=True, max_length=model.max_seq_length)["input_ids"]
    lengths = np.array([len(t) for t in tokens])
    plain_tokens = padded_tokens(lengths, len(texts), 32)
    print(f"tokens the model runs over, padding included (plain encode: {plain_tokens:,} = "
          f"{plain_tokens / lengths.sum():.3f}x the real tokens):")
    for config in args.stage_configs:
        block, batch = (int(v) for v in config.split(":"))
        old_share = padded_tokens(lengths, block, batch) / plain_tokens
        new_share = fixed_shape_tokens(lengths, block, model.max_seq_length) / plain_tokens
        print(f"  stage block {block}, batch {batch}, old padded batches: {old_share:.3f}x "
              f"plain; batch-invariant fixed shapes: {new_share:.3f}x plain")
    if args.padding_only:
        return
    if args.device == "cuda":
        cpu_vs_cuda(texts, args.model, args.rounds, int(args.stage_configs[0].split(":")[0]), args.batch_tokens)
        if args.device_only:
            return
    if args.old_vs_new:
        block, batch = (int(v) for v in args.stage_configs[0].split(":"))
        old_vs_new(texts, args.model, args.old_vs_new, args.rounds, block, batch)
    if args.skip_stage and not args.backends:
        return
    reference = plain_encode()  # warm-up, and the vectors every alternative is compared with
    if not args.skip_stage:
        configs = [tuple(int(v) for v in c.split(":")) for c in args.stage_configs]
        run_stage(texts[:300], args.model, "torch", *configs[0], args.device)  # warm-up: Beam imports
        times = {c: [] for c in ["plain", *configs]}
        agree = {}
        for _ in range(args.rounds):
            for config in times:
                started = time.perf_counter()
                if config == "plain":
                    plain_encode()
                else:
                    rows, total = run_stage(texts, args.model, "torch", *config, args.device)
                    agree[config] = rows == len(texts) and np.allclose(total, reference.sum(axis=0), atol=1e-2)
                times[config].append(time.perf_counter() - started)
        plain = statistics.median(times["plain"])
        print(f"stage vs plain encode on {args.device}, {torch.get_num_threads()} torch threads (median of {args.rounds} "
              f"interleaved rounds; seconds of each round):")
        for config, seconds in times.items():
            median = statistics.median(seconds)
            label = ("SentenceTransformer.encode (defaults)" if config == "plain" else
                     f"EmbedConversations block {config[0]}, batch {config[1]}")
            check = "" if config == "plain" else f"  same vectors: {agree[config]}"
            print(f"  {label:<40}{median:7.2f} s {len(texts) / median:7.1f} conv/s  {median / plain:5.2f}x plain"
                  f"  rounds: {', '.join(f'{t:.1f}' for t in seconds)}{check}", flush=True)

    if args.backends:
        print(f"backends vs torch (median of {args.rounds} interleaved rounds; quality on the "
              f"{len(generated)} generated conversations, {len(set(topics))} planted topics):")
        times = {name: [] for name in ["torch", *args.backends]}
        vectors = {"torch": reference}
        for name in args.backends:
            embedding.embed_texts(args.model, texts[:64], backend=name)  # export / load once
        for _ in range(args.rounds):
            for name in times:
                started = time.perf_counter()
                vectors[name] = embedding.embed_texts(args.model, texts, 32, backend=name,
                                                      device=args.device if name == "torch" else "cpu")
                times[name].append(time.perf_counter() - started)
        torch_seconds = statistics.median(times["torch"])
        for name in times:
            seconds = statistics.median(times[name])
            cosine = (vectors[name] * reference).sum(axis=1)
            is_generated = np.array([t not in real_set for t in texts])
            purity, nmi = purity_and_nmi(vectors[name][is_generated], generated_topics, args.seed)
            print(f"  {name:<10} {seconds:7.2f} s {len(texts) / seconds:7.1f} conv/s  speed-up "
                  f"{torch_seconds / seconds:4.2f}x  cosine to torch mean {cosine.mean():.4f} min {cosine.min():.4f}"
                  f"  k-means purity {purity:.3f} NMI {nmi:.3f}  rounds: {', '.join(f'{t:.1f}' for t in times[name])}",
                  flush=True)


if __name__ == "__main__":
    main()
