"""Imports run one way: core <- synthetic <- publishing <- dp_ops <- config <- backends <- transforms <- beam_jobs
<- eval <- bench, tests.

`core` holds plain records and shared types and imports nothing else from the repo; `synthetic` (the
generated data of tests, evaluations and benchmarks) needs nothing of the job, so it sits just above
`core`; `publishing` (what a run publishes and reads back from published nights: report, pages,
timeline, lineage, release gate) stands on `core` alone. A module may import its own package and any
package below it, never one above; and no modules import each other in a cycle, directly or through
others. Function-level imports count too.
"""

from __future__ import annotations

import ast
import os

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
LAYERS = {"core": 0, "synthetic": 0.5, "publishing": 1, "dp_ops": 2, "config": 2.5, "backends": 3, "transforms": 4,
          "beam_jobs": 5, "eval": 6, "bench": 7, "scripts": 7, "tests": 7}


def _modules() -> dict[str, str]:
    """module name -> file path, for every .py file of the layered packages."""
    found = {}
    for package in LAYERS:
        for folder, _, files in os.walk(os.path.join(ROOT, package)):
            for name in files:
                if name.endswith(".py"):
                    path = os.path.join(folder, name)
                    module = os.path.relpath(path, ROOT)[:-3].replace(os.sep, ".")
                    found[module.removesuffix(".__init__")] = path
    return found


def _imports(path: str, module: str, known: dict[str, str]) -> set[str]:
    """The repo modules `module` imports (resolved to the longest known module name)."""
    tree = ast.parse(open(path, encoding="utf-8").read(), path)
    package = module if path.endswith("__init__.py") else module.rsplit(".", 1)[0]
    names = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                parts = package.split(".")
                base = ".".join(parts[:len(parts) - node.level + 1] + ([base] if base else []))
            names.update(f"{base}.{alias.name}" for alias in node.names)
            names.add(base)
    resolved = set()
    for name in names:
        parts = name.split(".")
        for end in range(len(parts), 0, -1):
            candidate = ".".join(parts[:end])
            if candidate in known:
                resolved.add(candidate)
                break
    resolved.discard(module)
    return resolved


def _graph() -> dict[str, set[str]]:
    known = _modules()
    return {module: _imports(path, module, known) for module, path in known.items()}


def test_no_module_imports_a_layer_above_its_own():
    upward = sorted(f"{module} -> {target}" for module, targets in _graph().items() for target in targets
                    if LAYERS[target.split(".")[0]] > LAYERS[module.split(".")[0]])
    assert upward == []


def test_core_imports_nothing_else_from_the_repo():
    graph = _graph()
    assert sorted(f"{m} -> {t}" for m, ts in graph.items() if m.startswith("core") for t in ts
                  if not t.startswith("core")) == []


def _cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected components of more than one module (Tarjan)."""
    index, low, on_stack, stack, components, counter = {}, {}, set(), [], [], [0]

    def visit(node):
        index[node] = low[node] = counter[0]
        counter[0] += 1
        stack.append(node)
        on_stack.add(node)
        for target in graph.get(node, ()):
            if target not in index:
                visit(target)
                low[node] = min(low[node], low[target])
            elif target in on_stack:
                low[node] = min(low[node], index[target])
        if low[node] == index[node]:
            component = []
            while True:
                member = stack.pop()
                on_stack.discard(member)
                component.append(member)
                if member == node:
                    break
            if len(component) > 1:
                components.append(sorted(component))

    for node in sorted(graph):
        if node not in index:
            visit(node)
    return components


def test_no_import_cycles_between_modules():
    # Package __init__ modules are left out: importing a.b runs a/__init__, which is not a dependency on b.
    graph = {m: {t for t in ts if not os.path.exists(os.path.join(ROOT, *t.split("."), "__init__.py"))}
             for m, ts in _graph().items()}
    assert _cycles(graph) == []


@pytest.mark.parametrize("graph, expected", [
    ({"a": {"b"}, "b": {"a"}}, [["a", "b"]]),
    ({"a": {"b"}, "b": {"c"}, "c": set()}, []),
])
def test_the_cycle_finder_finds_cycles(graph, expected):
    assert _cycles(graph) == expected


def _importers_of(graph: dict[str, set[str]], importer: str, imported: str) -> list[str]:
    """'module -> target' for every module in package `importer` importing one in package `imported`."""
    def within(module, package):
        return module == package or module.startswith(package + ".")
    return sorted(f"{m} -> {t}" for m, ts in graph.items() if within(m, importer) for t in ts if within(t, imported))


def test_no_backend_imports_publishing():
    # What backends and publishing both name (a label's sources, the PII patterns) is plain data in core/;
    # a backend words and filters model output, it never assembles or reads back a release.
    assert _importers_of(_graph(), "backends", "publishing") == []


def test_the_llm_backends_import_nothing_of_the_pii_guard():
    # The guard may call the model (backends/pii/person_judge.py uses the LLM client), never the reverse: the
    # LLM steps get the pseudonymizer from backends/factory.py, which builds them.
    assert _importers_of(_graph(), "backends.llm", "backends.pii") == []


# The modules of transforms/ that wire stages together: they build and apply the stages, so they may import
# any module of transforms/; no other module imports them. Each release stage's module (transforms/release_stages/)
# wires its one stage into the run.
WIRING = {"transforms.topic_stages", "transforms.topic_release", "transforms.topic_keywords"}
RELEASE_STAGES = "transforms.release_stages"
# Modules of transforms/ that define PTransforms and still are no stage of their own: the engines' adapter
# (engine.py), the DP stages' base (dp_stage.py) and the DP releases several stages apply inside themselves
# (dp_count.py's count per public partition; dp_votes.py's Gaussian sum of weighted votes).
SHARED_TRANSFORMS = {"transforms.engine", "transforms.dp_stage", "transforms.dp_count", "transforms.dp_votes"}


def _classes(path: str) -> list[tuple[str, set[str]]]:
    """(name, names of its bases) of every class the module defines."""
    return [(node.name, {base.attr if isinstance(base, ast.Attribute) else getattr(base, "id", None) for base in node.bases})
            for node in ast.walk(ast.parse(open(path, encoding="utf-8").read(), path)) if isinstance(node, ast.ClassDef)]


def _transform_classes(classes: list[tuple[str, set[str]]]) -> set[str]:
    """The names of the PTransforms among `classes`: subclasses of PTransform, directly or through others of them."""
    found: set[str] = set()
    while more := {name for name, bases in classes if bases & ({"PTransform"} | found)} - found:
        found |= more
    return found


def test_no_stage_module_imports_another_stage_module():
    """A stage module is a module of transforms/ (transforms/keyword_set/ included) that defines a
    PTransform (a beam.PTransform subclass, directly or through another, such as DPStage), other than
    WIRING and SHARED_TRANSFORMS. Every other module of transforms/ is support: helpers, DoFns and records
    that several stages share (vectors.py, distinct_names.py, record_isolation.py, validation.py, ...). Only
    a wiring module may import a stage module or a wiring module; every other module of transforms/ imports,
    from transforms/, support modules and SHARED_TRANSFORMS only. So what two stages share lives below both,
    and a stage can be read, changed or replaced without another stage's module."""
    known = {m: p for m, p in _modules().items() if m.split(".")[0] == "transforms"}
    assert WIRING | SHARED_TRANSFORMS <= set(known)
    wiring = WIRING | {m for m in known if m.startswith(RELEASE_STAGES + ".")}
    classes = {m: _classes(path) for m, path in known.items()}
    transforms = _transform_classes([c for module_classes in classes.values() for c in module_classes])
    stages = {m for m in known if m not in wiring | SHARED_TRANSFORMS and {name for name, _ in classes[m]} & transforms}
    graph = _graph()
    assert sorted(f"{m} -> {t}" for m in known if m not in wiring for t in graph[m] if t in stages | wiring) == []
