"""README.md is a short front door and the pages under docs/ hold the rest; neither may point at
something that is not there.

Checked here: README's length and its two set-up commands (the second is the command CI runs),
that every page under docs/ is linked from README, that README's flag table agrees with the full
one in docs/options.md, that every relative link (and #anchor) resolves, and that every repository
path (`transforms/embed.py`), file name (`validation.py`) and module (`beam_jobs.insights`,
`dp_ops.dp_kmeans.fit_dp_kmeans`) the docs name, in backticks or in a command, exists.
"""

from __future__ import annotations

import glob
import os
import re

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
README = os.path.join(ROOT, "README.md")
MAX_README_LINES = 250
TEST_COMMAND = "./scripts/bootstrap.sh && .venv/bin/python -m pytest"
PACKAGES = ("core", "synthetic", "publishing", "dp_ops", "backends", "transforms", "beam_jobs", "eval", "bench", "tests",
            "scripts")


def _read(path: str) -> str:
    with open(path, encoding="utf-8") as f:
        return f.read()


def _doc_files() -> list[str]:
    return [README] + sorted(glob.glob(os.path.join(ROOT, "docs", "*.md")))


def _rel(path: str) -> str:
    return os.path.relpath(path, ROOT)


FENCE = re.compile(r"^```[^\n]*\n(.*?)^```[ \t]*$", re.S | re.M)


def _split_fences(text: str) -> tuple[str, list[str]]:
    """(the text with fenced blocks blanked out, the blocks' contents)."""
    blocks = FENCE.findall(text)
    return FENCE.sub("", text), blocks


def _section(text: str, heading_prefix: str) -> str:
    """The body of the first `## ` section whose heading starts with heading_prefix."""
    match = re.search(rf"^## {re.escape(heading_prefix)}[^\n]*\n(.*?)(?=^## |\Z)", text, re.S | re.M)
    assert match, f"README has no '## {heading_prefix}...' section"
    return match.group(1)


def _flag_rows(text: str) -> dict[str, list[str]]:
    """flag -> its table row's cells, for rows whose first cell is one backticked --flag."""
    rows = {}
    for line in text.splitlines():
        match = re.match(r"^\| `(--[a-z0-9_]+)` \|(.*)\|\s*$", line)
        if match:
            rows[match.group(1)] = [cell.strip() for cell in match.group(2).split("|")]
    return rows


# --- README as a front door ---------------------------------------------------------------------

def test_readme_is_short():
    lines = _read(README).splitlines()
    assert len(lines) <= MAX_README_LINES, (
        f"README.md has {len(lines)} lines (at most {MAX_README_LINES}); move detail to docs/")


def test_readme_set_up_is_exactly_two_one_line_commands_and_ci_runs_the_test_command():
    quick_start = _section(_read(README), "Quick start")
    _, blocks = _split_fences(quick_start)
    commands = [block.strip() for block in blocks]
    assert len(commands) == 2, f"the set-up section must hold exactly two commands, found {len(commands)}"
    assert all("\n" not in command for command in commands), "each set-up command must be one line"
    run_sample, run_tests = commands
    assert run_sample.startswith("./scripts/bootstrap.sh && ") and "-m beam_jobs.insights " in run_sample
    assert run_tests == TEST_COMMAND
    # CI's last command must run at least the README's steps, in the same order.
    ci_command = [line for line in _read(os.path.join(ROOT, ".ci", "run")).splitlines() if line.strip()][-1]
    ci_steps = iter(step.strip() for step in ci_command.split("&&"))
    missing = [step.strip() for step in TEST_COMMAND.split("&&") if step.strip() not in ci_steps]
    assert not missing, f".ci/run does not run the README's test command (missing, in order: {missing})"


def test_readme_optional_local_llm_command_reruns_the_sample_with_model_names_and_exemplars():
    _, blocks = _split_fences(_section(_read(README), "Optional: topic names and example requests from a local LLM"))
    (command,) = [block.strip() for block in blocks]
    assert "\n" not in command and command.startswith(".venv/bin/python scripts/install_local_llm.py")
    assert "--input sample/conversations.jsonl" in command and "--seed 7" in command
    assert "--llm_backend local --llm_steps names,exemplars --exemplars_per_topic 3" in command


def test_every_page_under_docs_is_linked_from_readme():
    readme = _read(README)
    unlinked = [_rel(page) for page in _doc_files()[1:] if f"]({_rel(page)})" not in readme]
    assert not unlinked, f"pages not linked from README.md: {unlinked}"


def test_readme_flag_table_agrees_with_the_full_options_table():
    readme_rows = _flag_rows(_read(README))
    full_rows = _flag_rows(_read(os.path.join(ROOT, "docs", "options.md")))
    assert len(readme_rows) >= 5, "README's table of the most used flags is missing"
    for flag, cells in readme_rows.items():
        assert flag in full_rows, f"{flag} is in README's table but not in docs/options.md"
        assert cells[0] == full_rows[flag][0], (
            f"{flag}: default {cells[0]!r} in README.md, {full_rows[flag][0]!r} in docs/options.md")


# --- links ----------------------------------------------------------------------------------------

LINK = re.compile(r"!?\[[^\]\n]*\]\(([^)\s]+)(?:\s+\"[^\"]*\")?\)")


def _github_anchor(heading: str) -> str:
    """The id GitHub gives a heading: lower case, punctuation dropped, spaces to hyphens."""
    text = re.sub(r"[^\w\- ]", "", heading.strip().lower())
    return text.replace(" ", "-")


def _anchors(path: str) -> set[str]:
    prose, _ = _split_fences(_read(path))
    anchors, seen = set(), {}
    for heading in re.findall(r"^#{1,6} (.+)$", prose, re.M):
        anchor = _github_anchor(heading)
        count = seen.get(anchor, 0)
        seen[anchor] = count + 1
        anchors.add(anchor if count == 0 else f"{anchor}-{count}")
    return anchors


def _relative_links():
    for page in _doc_files():
        prose, _ = _split_fences(_read(page))
        for target in LINK.findall(prose):
            if re.match(r"^[a-z][a-z0-9+.-]*:", target):  # http:, https:, mailto:
                continue
            yield page, target


def test_the_link_check_sees_the_links():
    targets = {target for page, target in _relative_links() if page == README}
    assert "docs/options.md" in targets and "docs/privacy.md" in targets


@pytest.mark.parametrize("page,target", list(_relative_links()),
                         ids=lambda value: _rel(value) if os.path.isabs(str(value)) else str(value))
def test_relative_link_resolves(page, target):
    path, _, anchor = target.partition("#")
    resolved = os.path.normpath(os.path.join(os.path.dirname(page), path)) if path else page
    assert os.path.exists(resolved), f"{_rel(page)}: link to {target} points at nothing"
    if anchor:
        assert resolved.endswith(".md"), f"{_rel(page)}: anchor on a non-markdown target {target}"
        assert anchor in _anchors(resolved), (
            f"{_rel(page)}: {target}: no heading with anchor #{anchor} in {_rel(resolved)}")


# --- repository paths and modules named in the docs -------------------------------------------------

def _ignored() -> tuple[set[str], tuple[str, ...]]:
    """From .gitignore: top-level folder names and deeper folder prefixes that hold generated files."""
    top, prefixes = set(), []
    for line in _read(os.path.join(ROOT, ".gitignore")).splitlines():
        line = line.strip()
        if line.endswith("/") and not line.startswith("#"):
            if "/" in line[:-1]:
                prefixes.append(line.lstrip("/"))
            else:
                top.add(line[:-1])
    return top, tuple(prefixes)


IGNORED_TOP, IGNORED_PREFIXES = _ignored()
TOP_LEVEL = {name for name in os.listdir(ROOT) if name not in IGNORED_TOP and name != ".git"}
MODULE = re.compile(rf"^(?:{'|'.join(PACKAGES)})(?:\.\w+)+$")


def _tokens(page: str):
    """Every whitespace-separated token of the page's inline code spans and fenced blocks."""
    prose, blocks = _split_fences(_read(page))
    for chunk in re.findall(r"`([^`\n]+)`", prose) + blocks:
        for token in re.split(r"[\s=]+", chunk):
            token = token.strip("'\"()[]{},;:")
            if token.endswith("'s"):
                token = token[:-2]
            if token:
                yield token


def _is_repo_path(token: str) -> bool:
    if "/" not in token or "://" in token or token.startswith(("/", "$", ".venv")):
        return False
    return token.split("/", 1)[0] in TOP_LEVEL and not token.startswith(IGNORED_PREFIXES)


def _repo_file_names() -> set[str]:
    names = set()
    for folder, subfolders, files in os.walk(ROOT):
        subfolders[:] = [d for d in subfolders if d not in IGNORED_TOP and d != ".git"]
        names.update(files)
    return names


def _module_problem(dotted: str) -> str | None:
    """Why `dotted` (package.module[.attribute]) names nothing in the repo, or None."""
    parts = dotted.split(".")
    depth = 0
    for i in range(1, len(parts) + 1):
        base = os.path.join(ROOT, *parts[:i])
        if os.path.isfile(base + ".py") or os.path.isdir(base):
            depth = i
        else:
            break
    if depth < 2:
        return "no such module"
    if depth == len(parts):
        return None
    base = os.path.join(ROOT, *parts[:depth])
    source_path = base + ".py" if os.path.isfile(base + ".py") else os.path.join(base, "__init__.py")
    if not os.path.isfile(source_path):
        return f"no module file for {'.'.join(parts[:depth])}"
    name = re.escape(parts[depth])
    if not re.search(rf"^\s*(?:def|class)\s+{name}\b|^{name}\s*[:=]", _read(source_path), re.M):
        return f"{parts[depth]} is not defined in {_rel(source_path)}"
    return None


def _named_things():
    file_names = _repo_file_names()
    for page in _doc_files():
        for token in _tokens(page):
            if _is_repo_path(token):
                if not glob.glob(os.path.join(ROOT, token)):
                    yield page, token, "no such path"
            elif re.fullmatch(r"\w+\.py", token):
                if token not in file_names:
                    yield page, token, "no file of that name anywhere in the repo"
            elif MODULE.match(token):
                problem = _module_problem(token)
                if problem:
                    yield page, token, problem


def test_the_path_check_sees_paths_and_modules():
    tokens = set(_tokens(os.path.join(ROOT, "docs", "architecture.md")))
    assert "transforms/embed.py" in tokens and _is_repo_path("transforms/embed.py")
    assert not _is_repo_path("OUTPUT/release/report.json") and not _is_repo_path("eval/results/cache/")
    assert _module_problem("dp_ops.dp_kmeans.fit_dp_kmeans") is None
    assert _module_problem("beam_jobs.insights") is None
    assert _module_problem("dp_ops.dp_kmeans.no_such_function") is not None
    assert _module_problem("transforms.records") is not None  # moved to core.records


def test_every_repository_path_and_module_named_in_the_docs_exists():
    problems = [f"{_rel(page)}: `{token}`: {why}" for page, token, why in _named_things()]
    assert not problems, "the docs name things that do not exist:\n" + "\n".join(problems)
