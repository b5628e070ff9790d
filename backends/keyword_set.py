"""The public keyword set K: loading and validating it.

A keyword set file is either plain text (one keyword per line, '#' comments; a line `## Name`
starts the category `Name`, which the keywords below it belong to; `## Name (sensitive)` marks it
sensitive: a topic is placed in it only on its own DP votes, backends/label_evidence.py) or JSON as written by
`beam_jobs.build_keywords` (format version 3 when its ledger charge spans several days, else 2; an
optional "categories" list runs parallel to "keywords", null for a keyword without one, and an optional
"sensitive_categories" list names the sensitive ones):

    {"format": "urania-keyword-set", "version": 3, "created_at": "2026-11-22T03:00:00+00:00",
     "method": "tfidf", "params": {...}, "source": {...}, "keywords": [...],
     "privacy": {"epsilon": ..., "delta": ..., "mechanisms": [MechanismSpend, ...],
                 "ledger": {"run_id": "keyword-set-…", "date": "2026-11-21", "days": 30}}}

A DP-built set carries the privacy it spent, which the main job adds to its report, and (version 2)
the run id and date under which a privacy ledger charges that spend, once: by the build with
--privacy_ledger, else by the first nightly run that uses the set. The date is the last day of the
data it was built from, and (version 3) `days` how many days of data end there: the spend counts in
every ledger window holding any of them. Version 2 exists so that an older job, which would not
charge the set, refuses such a file instead; version 3 so that a version-2 job, which would charge
it on its last day only, refuses it too; a set of one day's data (or without spend) is still
written as version 2, without `days`, which older jobs read correctly. Version 2 files (one day)
load, and so do version 1 and older JSON without "version" (just "keywords", "method", "privacy"):
a DP one gets a run id derived from its content and its build day (see `_legacy_ledger`). A newer
version is refused.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import os

from apache_beam.io.filesystems import FileSystems

from core.dates import iso_date, utc_day_of, utc_timestamp
from core.spend import MechanismSpend
from dp_ops.budget_ledger import KEYWORD_SET_RUN_PREFIX
from dp_ops.dp_events import COMPOSITION
from dp_ops.run_budget import RunBudget

DEFAULT_KEYWORD_SET = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))),
                                   "beam_jobs", "resources", "default_keywords.txt")
MAX_KEYWORD_CHARS = 60
FORMAT_NAME = "urania-keyword-set"
FORMAT_VERSION = 3  # the newest this job reads and writes (a set whose charge spans several days)
ONE_DAY_FORMAT_VERSION = 2  # what it writes for any other set, which version-2 jobs read as well
LEGACY_RUN_PREFIX = KEYWORD_SET_RUN_PREFIX + "legacy-"


@dataclasses.dataclass(frozen=True)
class KeywordSet:
    keywords: tuple[str, ...]
    source: str
    method: str = "bundled public list"
    spend: tuple[MechanismSpend, ...] = ()
    version: int | None = None
    created_at: str | None = None
    params: dict = dataclasses.field(default_factory=dict)
    origin: dict = dataclasses.field(default_factory=dict)
    # Where a privacy ledger charges `spend` (None when it spent nothing): the build's ledger run id
    # and the last day of its data (None only for an old file without a creation time: then the night
    # that uses it), with the number of days of data ending there.
    ledger_run_id: str | None = None
    ledger_date: str | None = None
    ledger_days: int = 1
    # Each keyword's category (parallel to `keywords`; None when the set gives none): public, like K.
    categories: tuple[str | None, ...] = ()
    # Categories in which a wrong label sends people chasing abuse that is not there (misuse, crime,
    # self-harm, ...): public, like the categories.
    sensitive_categories: frozenset[str] = frozenset()

    def __post_init__(self):
        if not self.categories:
            object.__setattr__(self, "categories", (None,) * len(self.keywords))
        if len(self.categories) != len(self.keywords):
            raise ValueError(f"{self.source}: {len(self.categories)} categories for {len(self.keywords)} keywords")

    def category_of(self) -> dict[str, str | None]:
        """{keyword: its category or None}."""
        return dict(zip(self.keywords, self.categories))


def _clean_with_categories(keywords: list[str], categories: list[str | None],
                           source: str) -> tuple[tuple[str, ...], tuple[str | None, ...]]:
    """Normalised, distinct keywords (first occurrence wins, with its category)."""
    seen: dict[str, str | None] = {}
    for keyword, category in zip(keywords, categories, strict=True):
        if not isinstance(keyword, str):
            raise ValueError(f"{source}: keywords must be strings, got {keyword!r}")
        if category is not None and (not isinstance(category, str) or not category.strip()):
            raise ValueError(f"{source}: a category must be a non-empty string or null, got {category!r}")
        normalised = " ".join(keyword.lower().split())
        if not normalised:
            continue
        if len(normalised) > MAX_KEYWORD_CHARS:
            raise ValueError(f"{source}: keyword longer than {MAX_KEYWORD_CHARS} characters: {normalised[:80]!r}")
        seen.setdefault(normalised, None if category is None else " ".join(category.split()))
    if not seen:
        raise ValueError(f"{source}: the keyword set is empty")
    return tuple(seen), tuple(seen.values())


def _clean(keywords: list[str], source: str) -> tuple[str, ...]:
    return _clean_with_categories(keywords, [None] * len(keywords), source)[0]


SENSITIVE_MARK = "(sensitive)"


def _parse_text(text: str) -> tuple[list[str], list[str | None], frozenset[str]]:
    keywords, categories, category, sensitive = [], [], None, set()
    for line in text.splitlines():
        stripped = line.strip()
        if stripped.startswith("##"):
            category = stripped.lstrip("#").strip() or None
            if category is not None and category.lower().endswith(SENSITIVE_MARK):  # "(Sensitive)" too
                category = " ".join(category[:-len(SENSITIVE_MARK)].split()) or None
                if category is not None:
                    sensitive.add(category)
            continue
        keyword = stripped.split("#", 1)[0].strip()
        if keyword:
            keywords.append(keyword)
            categories.append(category)
    return keywords, categories, frozenset(sensitive)


def load_keyword_set(path: str | None = None) -> KeywordSet:
    """Reads K from a local path or any Beam filesystem (gs://...)."""
    path = path or DEFAULT_KEYWORD_SET
    try:
        with FileSystems.open(path) as handle:
            text = handle.read().decode("utf-8")
    except Exception as error:
        raise ValueError(f"cannot read keyword set {path}: {error}") from error
    if text.lstrip().startswith("{"):
        return _from_json(json.loads(text), path)
    raw_keywords, raw_categories, sensitive = _parse_text(text)
    keywords, categories = _clean_with_categories(raw_keywords, raw_categories, path)
    return KeywordSet(keywords, path, categories=categories, sensitive_categories=sensitive)


def _from_json(data: dict, path: str) -> KeywordSet:
    version = data.get("version")
    if version is not None and (not isinstance(version, int) or version > FORMAT_VERSION):
        raise ValueError(f"{path}: keyword-set format version {version!r} is newer than this job reads "
                         f"({FORMAT_VERSION}); upgrade urania-beam")
    if "keywords" not in data:
        raise ValueError(f"{path}: a JSON keyword set needs a \"keywords\" list")
    spend = tuple(MechanismSpend.from_json(s) for s in data.get("privacy", {}).get("mechanisms", []))
    ledger_run_id = ledger_date = None
    ledger_days = 1
    if spend:
        ledger = data["privacy"].get("ledger")
        if ledger is not None:
            ledger_run_id, ledger_date, ledger_days = _checked_ledger(ledger, path)
        elif version is not None and version >= 2:
            raise ValueError(f"{path}: a keyword set that spent privacy must carry privacy.ledger "
                             f"(run_id, date) from version 2 on; rebuild it with beam_jobs.build_keywords")
        else:
            ledger_run_id, ledger_date = _legacy_ledger(data, path)
    raw_categories = data.get("categories")
    if raw_categories is not None and (not isinstance(raw_categories, list)
                                       or len(raw_categories) != len(data["keywords"])):
        raise ValueError(f"{path}: \"categories\" must be a list as long as \"keywords\"")
    keywords, categories = _clean_with_categories(data["keywords"], raw_categories or [None] * len(data["keywords"]),
                                                  path)
    sensitive = data.get("sensitive_categories", [])
    if not isinstance(sensitive, list) or not all(isinstance(c, str) and c.strip() for c in sensitive):
        raise ValueError(f"{path}: \"sensitive_categories\" must be a list of category names")
    sensitive = frozenset(" ".join(c.split()) for c in sensitive)
    if raw_categories is not None and not sensitive <= set(categories):
        # A typo would silently mark nothing.
        raise ValueError(f"{path}: \"sensitive_categories\" names categories the set does not have: "
                         f"{sorted(sensitive - set(categories))}")
    return KeywordSet(keywords, path, data.get("method", "unknown"), spend, categories=categories,
                      sensitive_categories=sensitive,
                      version=version, created_at=data.get("created_at"), params=data.get("params", {}),
                      origin=data.get("source", {}), ledger_run_id=ledger_run_id, ledger_date=ledger_date,
                      ledger_days=ledger_days)


def _checked_ledger(ledger: dict, path: str) -> tuple[str, str, int]:
    run_id, date, days = ledger.get("run_id"), ledger.get("date"), ledger.get("days", 1)
    if not isinstance(run_id, str) or not run_id.startswith(KEYWORD_SET_RUN_PREFIX):
        raise ValueError(f"{path}: privacy.ledger.run_id must start with {KEYWORD_SET_RUN_PREFIX!r}, got {run_id!r}")
    if isinstance(days, bool) or not isinstance(days, int) or days < 1:
        raise ValueError(f"{path}: privacy.ledger.days must be an integer >= 1, got {days!r}")
    try:
        return run_id, iso_date(date), days
    except ValueError as error:
        raise ValueError(f"{path}: privacy.ledger.date must be YYYY-MM-DD, got {date!r}") from error


def _legacy_ledger(data: dict, path: str) -> tuple[str, str | None]:
    """A DP set written before files carried their ledger run id. Its build may have charged a
    ledger under a random id nothing records, so it cannot be matched: it is charged (once, under an
    id derived from its content, so every night finds the same one) even if that double-counts it,
    as over-counting a spend is safe and under-counting is not. Its date is the UTC day of its
    creation, what the build charged without --date; with no creation time, the night that uses it."""
    digest = hashlib.sha256(json.dumps(data, sort_keys=True).encode("utf-8")).hexdigest()[:16]
    created_at = data.get("created_at")
    if created_at is None:
        return LEGACY_RUN_PREFIX + digest, None
    try:
        return LEGACY_RUN_PREFIX + digest, utc_day_of(created_at)
    except (TypeError, ValueError) as error:
        raise ValueError(f"{path}: created_at must be an ISO 8601 time, got {created_at!r}") from error


def keyword_set_total(spend) -> tuple[float, float, str]:
    """(epsilon, delta, composition) of a set's spends: their events composed (PLD) at the sum of
    their deltas, an upper bound like the sum of their epsilons and a tighter one when a Gaussian
    release is among them; the sum for spends without events (files from before events) and for
    (epsilon, delta) events alone (llm, hybrid: one partition selection)."""
    epsilon, delta = sum(s.epsilon for s in spend), sum(s.delta for s in spend)
    if not spend or any(s.event is None for s in spend):
        return epsilon, delta, "basic"
    budget = RunBudget.of(spend, delta)
    if delta <= budget.delta_floor():
        # Only (epsilon, delta) events (partition selection), whose deltas use up the set's: their
        # sum is the bound (for one mechanism, its own figure).
        return epsilon, delta, "basic"
    return min(epsilon, budget.epsilon()), delta, COMPOSITION


def keyword_set_document(keywords: list[str], method: str, params: dict, source: dict,
                         spend: list[MechanismSpend], created_at: str | None = None,
                         ledger_run_id: str | None = None, ledger_date: str | None = None,
                         ledger_days: int = 1) -> dict:
    """The JSON document for a built keyword set (keywords cleaned as the loader does). A set that
    spent privacy needs the ledger run id and the days its spend is charged on (the `ledger_days`
    days of data ending on `ledger_date`); one that spent nothing has nothing to charge, so no ledger
    entry. Version 3 only for a charge of several days, which a version-2 job must refuse; any other
    set is written as version 2 (without `days`), so older jobs still read it (like the ledger's own
    version rule, dp_ops.budget_ledger)."""
    epsilon, delta, composition = keyword_set_total(spend)
    privacy = {"unit": "user", "composition": composition, "epsilon": epsilon, "delta": delta,
               "mechanisms": [s.to_json() for s in spend]}
    if spend:
        if not (ledger_run_id and ledger_date):
            raise ValueError(f"a {method} keyword set that spent privacy needs its ledger run id and date")
        if ledger_days < 1:
            raise ValueError(f"ledger_days must be >= 1, got {ledger_days}")
        privacy["ledger"] = {"run_id": ledger_run_id, "date": ledger_date}
        if ledger_days > 1:  # one day: left out, as a version-2 file has it
            privacy["ledger"]["days"] = ledger_days
    multi_day = bool(spend) and ledger_days > 1
    return {
        "format": FORMAT_NAME,
        "version": FORMAT_VERSION if multi_day else ONE_DAY_FORMAT_VERSION,
        "created_at": created_at or utc_timestamp(),
        "method": method,
        "params": params,
        "source": source,
        "keywords": list(_clean(keywords, f"{method} keyword set")),
        "privacy": privacy,
    }


def write_keyword_set(path: str, document: dict) -> None:
    """Writes a keyword-set document to a local path or any Beam filesystem (gs://...)."""
    with FileSystems.create(path) as handle:
        handle.write(json.dumps(document, indent=2, ensure_ascii=False).encode("utf-8"))
