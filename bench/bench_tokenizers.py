"""Speed of the candidate word tokenisers on generated conversations (user turns only).

    .venv/bin/python bench/bench_tokenizers.py --conversations 5000

Prints conversations/s for HF `tokenizers` (BertNormalizer + BertPreTokenizer, what
backends/tokenize.py uses), spaCy's rule-based English tokenizer (no model), and a regex split for
reference, plus each one's import time. tensorflow-text is not installed (it needs full TensorFlow,
~2.2 GB); its figure is not measured here.
"""

from __future__ import annotations

import argparse
import re
import time

from synthetic.sample import generate_records


def _timed(label: str, make, texts: list[str]) -> None:
    started = time.perf_counter()
    tokenize = make()
    imported = time.perf_counter() - started
    started = time.perf_counter()
    tokens = sum(len(tokenize(text)) for text in texts)
    seconds = time.perf_counter() - started
    print(f"{label:<34} import+setup {imported:6.2f} s   {len(texts) / seconds:10.0f} conv/s   {tokens} tokens")


def _hf():
    from backends.tokenize import words
    words("warm up")
    return words


def _spacy():
    from spacy.lang.en import English
    tokenizer = English().tokenizer
    return lambda text: [t.text for t in tokenizer(text.lower())]


def _regex():
    pattern = re.compile(r"\w+|[^\w\s]")
    return lambda text: pattern.findall(text.lower())


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--conversations", type=int, default=5000)
    args = parser.parse_args(argv)
    texts = ["\n".join(m["content"] for m in r["messages"] if m["role"] == "user")
             for r in generate_records(args.conversations, max(1, args.conversations // 3), seed=3)]
    print(f"{len(texts)} conversations, {sum(map(len, texts)) / len(texts):.0f} characters of user turns each")
    _timed("HF tokenizers BertPreTokenizer", _hf, texts)
    _timed("spaCy English tokenizer (no model)", _spacy, texts)
    _timed("regex split (reference)", _regex, texts)


if __name__ == "__main__":
    main()
