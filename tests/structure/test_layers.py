"""The packages stand in layers: core ← pricing ← policy ← executor ← dashboard ← the CLI. A
module imports only from its own layer or those below it (lazy and type-only imports count
too: each ties the lower layer to the upper one just the same)."""

from __future__ import annotations

from pathlib import Path

from tests.structure.test_imports import import_graph, imported_names

LAYERS = ("core", "pricing", "policy", "executor", "dashboard")
"""From the bottom; every other ``spotwise.*`` module is the CLI, the top layer."""
ROOT_PACKAGE = "spotwise"
"""The namespace's own ``__init__``: empty, so importing it ties nothing to anything."""


def layer_of(module: str) -> int:
    """The layer of ``module`` (0: core; ``len(LAYERS)``: the CLI)."""
    parts = module.split(".")
    if len(parts) > 1 and parts[1] in LAYERS:
        return LAYERS.index(parts[1])
    return len(LAYERS)


def against_layers(graph: dict[str, set[str]]) -> list[tuple[str, str]]:
    """Every import of ``graph`` from a lower layer into a higher one."""
    return sorted(
        (module, target)
        for module, targets in graph.items()
        for target in targets
        if target != ROOT_PACKAGE and layer_of(target) > layer_of(module)
    )


def test_no_module_imports_a_layer_above_its_own() -> None:
    graph = import_graph()
    assert {layer_of(m) for m in graph} == set(range(len(LAYERS) + 1))  # it sees every layer
    assert against_layers(graph) == []


def test_the_root_package_imports_nothing() -> None:
    assert import_graph()[ROOT_PACKAGE] == set()


def test_a_planted_import_against_the_layers_is_caught(tmp_path: Path) -> None:
    """A pricing module that reaches into the policy, lazily inside a function, and a core
    module that reads the CLI's console: both are named."""
    planted = tmp_path / "store.py"
    planted.write_text(
        "def f():\n    from spotwise.policy.cost import CostBreakdown\n    return CostBreakdown\n"
    )
    graph = import_graph()
    before = set(against_layers(graph))
    modules = set(graph)

    def owner(name: str) -> str | None:
        while name and name not in modules:
            name = name.rpartition(".")[0]
        return name or None

    store = "spotwise.pricing.store"
    graph[store] |= {t for t in map(owner, imported_names(planted, store)) if t and t != store}
    graph["spotwise.core.clock"] |= {"spotwise.console"}
    assert sorted(set(against_layers(graph)) - before) == [
        ("spotwise.core.clock", "spotwise.console"),
        (store, "spotwise.policy.cost"),
    ]
