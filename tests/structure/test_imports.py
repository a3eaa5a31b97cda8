"""The project's modules import one another only under the ``spotwise`` namespace, and without
a cycle (lazy imports inside functions count too: a cycle that closes at call time still ties
the modules together)."""

from __future__ import annotations

import ast
import graphlib
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
FOLDERS = ("core", "pricing", "policy", "executor", "dashboard")
"""Top-level folders that install as ``spotwise.<folder>``."""


def project_modules() -> dict[str, Path]:
    """Every module of the project by its installed name (``spotwise.policy.service.service``)."""
    modules = {}
    for folder in (*FOLDERS, "spotwise"):
        for path in (ROOT / folder).rglob("*.py"):
            parts = path.relative_to(ROOT).with_suffix("").parts
            if parts[0] == "spotwise" and len(parts) > 1 and parts[1] in FOLDERS:
                continue  # the same files, through the links under spotwise/
            name = ".".join(parts[:-1] if parts[-1] == "__init__" else parts)
            modules[name if parts[0] == "spotwise" else f"spotwise.{name}"] = path
    return modules


def imported_names(path: Path, module: str) -> set[str]:
    """Every module name ``path`` imports, anywhere in its code (relative ones resolved)."""
    package = module if path.name == "__init__.py" else module.rpartition(".")[0]
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                parts = package.split(".")[: len(package.split(".")) - node.level + 1]
                base = ".".join([*parts, base] if base else parts)
            found.add(base)
            found.update(f"{base}.{alias.name}" for alias in node.names)
    return found


def import_graph() -> dict[str, set[str]]:
    modules = project_modules()

    def owner(name: str) -> str | None:
        while name and name not in modules:
            name = name.rpartition(".")[0]
        return name or None

    graph: dict[str, set[str]] = {}
    for module, path in modules.items():
        targets = {owner(name) for name in imported_names(path, module)}
        graph[module] = {t for t in targets if t is not None and t != module}
    return graph


def test_the_project_imports_itself_only_under_the_spotwise_namespace() -> None:
    """``import policy`` would load a second copy of the module (and put a package called
    ``policy`` in the user's way): every import names ``spotwise.policy``."""
    stray = [
        (module, name)
        for module, path in project_modules().items()
        for name in imported_names(path, module)
        if name.split(".")[0] in FOLDERS
    ]
    assert stray == []


def test_the_import_graph_has_no_cycle() -> None:
    graph = import_graph()
    assert len(graph) > 100 and graph["spotwise.policy.service.service"]  # it sees the project
    try:
        graphlib.TopologicalSorter(graph).prepare()
    except graphlib.CycleError as exc:
        raise AssertionError(f"import cycle: {' -> '.join(exc.args[1])}") from None


def test_the_cycle_check_finds_a_cycle() -> None:
    graph = import_graph()
    base, registry = "spotwise.policy.policies.base", "spotwise.policy.registry"
    graph[base] = {*graph[base], registry}
    graph[registry] = {*graph[registry], "spotwise.policy.policies.greedy"}
    try:
        graphlib.TopologicalSorter(graph).prepare()
    except graphlib.CycleError:
        return
    raise AssertionError("a cycle went unseen")
