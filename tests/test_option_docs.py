"""The documented options table lists exactly the insights job's flags, each with its default.

The table is the one whose header is `| flag | default | ...`, in docs/options.md if that file
exists, else in README.md's "## Options" section.
"""

import os
import re

import pytest

from beam_jobs.flags import argument_parser
from beam_jobs.options import InsightsOptions

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

# How the table shows a default of None (the flag unset): what the job does then.
UNSET_SHOWN_AS = {
    "input": "required", "output": "required", "private_output": "under `--output`", "seed": "random",
    "keyword_set": "bundled list", "keyword_min_noisy_count": "auto", "pseudonymize": "on for openai/vertex",
    "pseudonyms": "typed",
    "llm_project": "`$GOOGLE_CLOUD_PROJECT`", "llm_location": "`$GOOGLE_CLOUD_LOCATION`",
    "keyword_noise": "gaussian (count votes)", "max_keyword_partitions_per_user": "10 (count votes)",
    "llm_timeout_s": "60; `local`: 600",
}


def _options_document() -> tuple[str, str]:
    docs = os.path.join(ROOT, "docs", "options.md")
    if os.path.exists(docs):
        return docs, open(docs, encoding="utf-8").read()
    readme = os.path.join(ROOT, "README.md")
    text = open(readme, encoding="utf-8").read()
    section = re.search(r"^## Options\n(.*?)(?=^## )", text, re.S | re.M)
    assert section, "README.md has no '## Options' section (and there is no docs/options.md)"
    return readme, section.group(1)


def documented_defaults() -> dict[str, str]:
    """flag name -> the default cell of its row in the options table."""
    path, text = _options_document()
    lines = text.splitlines()
    header = next((i for i, line in enumerate(lines) if re.match(r"\|\s*flag\s*\|\s*default\s*\|", line)), None)
    assert header is not None, f"no '| flag | default |' table in {path}"
    rows = {}
    for line in lines[header + 2:]:
        if not line.startswith("|"):
            break
        cells = [cell.strip() for cell in line.strip("|").split("|")]
        for name in re.findall(r"`--([a-z0-9_]+)`", cells[0]):
            assert name not in rows, f"--{name} has two rows in {path}"
            rows[name] = cells[1]
    return rows


def _defaults() -> dict[str, object]:
    return {a.dest: a.default for a in argument_parser(InsightsOptions)._actions if a.dest != "help"}


def _shows(cell: str, default) -> bool:
    if default is None:
        return False
    if isinstance(default, bool):
        return cell.lower().startswith(str(default).lower())
    if isinstance(default, (int, float)):
        number = re.match(r"[-+]?(\d[\d,]*\.?\d*|\.\d+)([eE][-+]?\d+)?", cell)
        return number is not None and float(number.group(0).replace(",", "")) == float(default)
    return cell.strip("`").lower().startswith(str(default).lower())


def test_the_table_lists_every_flag_and_no_other():
    documented, flags = set(documented_defaults()), set(_defaults())
    assert sorted(flags - documented) == [], "flags missing from the options table"
    assert sorted(documented - flags) == [], "the options table lists flags the job does not have"


@pytest.mark.parametrize("name,default", sorted(_defaults().items()))
def test_the_table_shows_each_flags_default(name, default):
    cell = documented_defaults()[name]
    if default is None:
        assert cell.startswith(UNSET_SHOWN_AS.get(name, "unset")), (name, cell)
    else:
        assert _shows(cell, default), (name, default, cell)


def test_a_wrong_default_is_caught():
    assert _shows("1,000,000", 1_000_000) and _shows("0 (auto)", 0) and _shows("1e-6", 1e-6)
    assert _shows("60", 60.0) and _shows("false", False) and _shows("all-MiniLM-L6-v2", "all-MiniLM-L6-v2")
    assert not _shows("50", 5) and not _shows("5", 50) and not _shows("true", False)
    assert not _shows("laplace", "gaussian") and not _shows("unset", 3)
