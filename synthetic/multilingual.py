"""A multilingual planted-subject set of chatbot requests: does an embedding model group requests by
subject rather than by language?

    python -m beam_jobs.sample_multilingual --output sample/multilingual.jsonl --per_cell 30 --seed 7

Eight subjects (each the name of a category of beam_jobs/resources/default_keywords.txt, none about
language) times twelve languages (ISO 639-1 codes). Every (subject, language) cell has six request
templates and eight slot fillers, written natively in the language's own script, so a cell can produce
48 distinct requests. Both are aligned by index across languages: template i says the same thing in
every language, and filler j is the same concept (the same dish, city, symptom...), so `parallel_pairs`
gives the English request beside the same request in another language, for measuring cross-language
similarity. Templates are written so that every filler fits them grammatically (case, gender, particles
and articles are fixed by the template's construction, not by the filler). No request mentions a language,
translation or the speaker's country; Travel's destinations are cities. The templates and fillers are
data, synthetic/data/multilingual_requests.json.

Each record is a one-turn conversation (the user's request only: an assistant reply in English would add
a language signal of its own) in the pipeline's input schema, plus the truth fields `subject` and
`language` (ignored by the pipeline's reader, like synthetic.sample's planted fields). Users are people:
each writes 1 to 3 conversations, all in one (subject, language) cell. Everything here was written for
this project (no user data).
"""

from __future__ import annotations

import dataclasses
import datetime as dt
import gzip
import json
import random

from synthetic import load_data

SLOT = "{x}"
DAY = dt.date(2026, 11, 1)


@dataclasses.dataclass(frozen=True)
class _Subject:
    """One subject's requests: per language, templates with one SLOT, and the slot's fillers; both lists
    aligned by index across languages."""

    fillers: dict[str, tuple[str, ...]]
    templates: dict[str, tuple[str, ...]]


_TABLES = load_data("multilingual_requests.json")
LANGUAGES: tuple[str, ...] = tuple(_TABLES["languages"])
_BY_SUBJECT: dict[str, _Subject] = {
    subject: _Subject(**{part: {language: tuple(texts) for language, texts in table[part].items()}
                            for part in ("fillers", "templates")})
    for subject, table in _TABLES["subjects"].items()}
SUBJECTS: tuple[str, ...] = tuple(_BY_SUBJECT)
def _check_tables() -> None:
    """Every subject has every language, with as many templates and fillers as English, one slot a template."""
    for subject, table in _BY_SUBJECT.items():
        for language in LANGUAGES:
            templates, fillers = table.templates[language], table.fillers[language]
            if len(templates) != len(table.templates["en"]) or len(fillers) != len(table.fillers["en"]):
                raise AssertionError(f"{subject}/{language}: not aligned with English")
            if any(t.count(SLOT) != 1 for t in templates):
                raise AssertionError(f"{subject}/{language}: a template without exactly one {SLOT}")


_check_tables()


def _text(subject: str, language: str, template: int, filler: int) -> str:
    table = _BY_SUBJECT[subject]
    return table.templates[language][template].replace(SLOT, table.fillers[language][filler])


def _combinations(subject: str) -> list[tuple[int, int]]:
    table = _BY_SUBJECT[subject]
    return [(t, f) for t in range(len(table.templates["en"])) for f in range(len(table.fillers["en"]))]


def cell_texts(subject: str, language: str) -> list[str]:
    """Every distinct request of a (subject, language) cell, in template-major order."""
    _check_cell(subject, language)
    return list(dict.fromkeys(_text(subject, language, t, f) for t, f in _combinations(subject)))


def parallel_pairs(subject: str, language: str) -> list[tuple[str, str]]:
    """(English request, the same request in `language`) for every template index and filler index."""
    _check_cell(subject, language)
    return [(_text(subject, "en", t, f), _text(subject, language, t, f)) for t, f in _combinations(subject)]


def _check_cell(subject: str, language: str) -> None:
    if subject not in _BY_SUBJECT:
        raise ValueError(f"unknown subject {subject!r}; one of {SUBJECTS}")
    if language not in LANGUAGES:
        raise ValueError(f"unknown language {language!r}; one of {LANGUAGES}")


def _user_sizes(count: int, users: int | None, rng: random.Random) -> list[int]:
    """How many conversations each of a cell's users writes (1 to 3 each, `count` in all): `users` of them,
    or as many as random sizes need."""
    if users is None:
        sizes = []
        while sum(sizes) < count:
            sizes.append(min(rng.randint(1, 3), count - sum(sizes)))
        return sizes
    if not users <= count <= 3 * users:
        raise ValueError(f"{users} users cannot write {count} conversations of a cell at 1 to 3 each")
    sizes = [1] * users
    for _ in range(count - users):
        sizes[rng.choice([i for i, size in enumerate(sizes) if size < 3])] += 1
    return sizes


def multilingual_conversations(per_cell: int, seed: int, languages: tuple[str, ...] = LANGUAGES,
                               subjects: tuple[str, ...] = SUBJECTS, users_per_cell: int | None = None) -> list[dict]:
    """`per_cell` one-turn conversations for every (subject, language) cell, shuffled; deterministic for a
    seed. Each cell's requests are drawn without replacement from its distinct template x filler texts
    (ValueError if `per_cell` exceeds them). Each user writes 1 to 3 of a cell's conversations:
    `users_per_cell` users a cell (ValueError unless users_per_cell <= per_cell <= 3 x users_per_cell),
    or, by default, as many as random sizes of 1 to 3 make. Timestamps fall on DAY (UTC)."""
    if per_cell < 1:
        raise ValueError(f"per_cell must be at least 1, got {per_cell}")
    for subject in subjects:
        for language in languages:
            _check_cell(subject, language)
    rng = random.Random(f"multilingual-{seed}")
    drawn = []  # (subject, language, text, user index)
    users = 0
    for subject in subjects:
        for language in languages:
            texts = cell_texts(subject, language)
            if per_cell > len(texts):
                raise ValueError(f"per_cell={per_cell} exceeds the {len(texts)} distinct requests of "
                                 f"{subject}/{language}")
            chosen = rng.sample(texts, per_cell)
            owners = [users + i for i, size in enumerate(_user_sizes(per_cell, users_per_cell, rng)) for _ in range(size)]
            users = owners[-1] + 1
            drawn += [(subject, language, text, owner) for text, owner in zip(chosen, owners)]
    rng.shuffle(drawn)
    start = dt.datetime.combine(DAY, dt.time(), tzinfo=dt.timezone.utc)
    records = []
    for index, (subject, language, text, owner) in enumerate(drawn):
        timestamp = start + dt.timedelta(seconds=rng.randrange(86400))
        records.append({
            "conversation_id": f"ml-{seed}-{index:06d}",
            "user_id": f"ml-user-{seed}-{owner:06d}",
            "timestamp": timestamp.isoformat().replace("+00:00", "Z"),
            "messages": [{"role": "user", "content": text}],
            "source": "urania-beam synthetic multilingual sample",
            "subject": subject,
            "language": language,
        })
    return records


def write_multilingual(path: str, per_cell: int, seed: int) -> int:
    """Writes the set as JSON Lines (gzip if path ends in .gz); returns the number of lines."""
    records = multilingual_conversations(per_cell, seed)
    opener = gzip.open if path.endswith(".gz") else open
    with opener(path, "wb") as out:
        for record in records:
            out.write(json.dumps(record, ensure_ascii=False).encode("utf-8") + b"\n")
    return len(records)

