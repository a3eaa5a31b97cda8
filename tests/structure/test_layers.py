"""The packages stand in layers: core ← pricing ← policy ← executor ← dashboard ← the CLI. A
module imports only from its own layer or those below it (lazy and type-only imports count
too: each ties the lower layer to the upper one just the same). Within the policy, its lab
(``policy/lab/``) sits above the rest: the executor, the decision service and the model never
import it."""

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


LAB = "spotwise.policy.lab"
"""The policy lab: benches and simulations of policies (the N-node bench too), run from the CLI,
the dashboard and the RL training, never from what serves or runs jobs."""
KEPT_FROM_THE_LAB = (
    "spotwise.executor",
    "spotwise.policy.service",
    "spotwise.policy.core",
    "spotwise.policy.policies",
    "spotwise.policy.pools",
)
"""What runs jobs and serves decisions, and the policy's model: none of it imports the lab (the
model's modules at ``policy/``'s root, ``spotwise.policy.<module>``, are kept from it too)."""


def kept_from_the_lab(module: str) -> bool:
    """Whether ``module`` is one that must not import the lab."""
    if any(module == p or module.startswith(f"{p}.") for p in KEPT_FROM_THE_LAB):
        return True
    return module == "spotwise.policy" or (
        module.startswith("spotwise.policy.") and module.count(".") == 2 and module != LAB
    )


def into_the_lab(graph: dict[str, set[str]]) -> list[tuple[str, str]]:
    """Every import of the lab by a module kept from it."""
    return sorted(
        (module, target)
        for module, targets in graph.items()
        if kept_from_the_lab(module)
        for target in targets
        if target == LAB or target.startswith(f"{LAB}.")
    )


def test_the_executor_the_service_and_the_model_never_import_the_lab() -> None:
    graph = import_graph()
    kept = {m for m in graph if kept_from_the_lab(m)}
    assert {"spotwise.executor.fleets.fleet", "spotwise.policy.simulate"} <= kept  # it sees them
    assert "spotwise.policy.fleet_rule" in kept and "spotwise.policy.lab.fleet" not in kept
    assert "spotwise.policy.pools.shared_pools" in kept
    assert into_the_lab(graph) == []


def test_a_planted_import_of_the_lab_is_caught(tmp_path: Path) -> None:
    """An executor module that reaches into the lab's simulator lazily, and a model module that
    reads the suite: both are named; the CLI's import of the suite is not."""
    planted = tmp_path / "fleet.py"
    planted.write_text(
        "def f():\n    from spotwise.policy.lab.fleet import simulate_fleet\n"
        "    return simulate_fleet\n"
    )
    graph = import_graph()
    before = set(into_the_lab(graph))
    modules = set(graph)

    def owner(name: str) -> str | None:
        while name and name not in modules:
            name = name.rpartition(".")[0]
        return name or None

    fleets = "spotwise.executor.fleets.fleet"
    graph[fleets] |= {t for t in map(owner, imported_names(planted, fleets)) if t and t != fleets}
    graph["spotwise.policy.simulate"] |= {"spotwise.policy.lab.suite"}
    assert "spotwise.policy.lab.suite" in graph["spotwise.bench_commands"]
    assert sorted(set(into_the_lab(graph)) - before) == [
        (fleets, "spotwise.policy.lab.fleet"),
        ("spotwise.policy.simulate", "spotwise.policy.lab.suite"),
    ]
