"""Inside a package, its sub-folders (its wings) and the modules at its root stand in layers too:
an arrow between two of them runs one way only. Two arrows run back up:

- two wings of one package that import each other (``executor/launchers/`` ↔
  ``executor/clouds/``): neither can be read, moved or tested without the other;
- a root module that imports a wing which imports that same module (``policy/plan.py`` →
  ``policy/service/``, whose ``service.py`` imports ``policy/plan.py``): the model leaning on
  what serves it.

Each is counted once, by package (every package of the project, at every depth). The few left
are named below, each with the move that would end it; a new one fails, and so does one of the
list once it is gone (strike it from the list)."""

from __future__ import annotations

from tests.structure.test_imports import import_graph, project_modules

Arrow = tuple[str, str]
"""(from, to): two wings of a package (``spotwise.executor.launchers``), or a root module and
the wing it imports (``spotwise.policy.plan``, ``spotwise.policy.service``)."""

STILL_BACK_UP: frozenset[Arrow] = frozenset(
    {
        # One launch concept in two folders: the registry of launchers wraps the clouds', and
        # every cloud's launcher is built on launchers/base.py (issue 55, item 2).
        ("spotwise.executor.clouds", "spotwise.executor.launchers"),
        # The store's contracts name the providers and their zones from the clouds' profiles,
        # whose collectors validate their frames against those contracts.
        ("spotwise.pricing.frames", "spotwise.pricing.clouds"),
        # The lab and the RL training: the suite and the bench list the shipped models
        # (rl/catalog.py), and rl/train.py benches a trained model on the suite.
        ("spotwise.policy.lab", "spotwise.policy.rl"),
    }
)
"""The arrows that still run back up, each with its reason."""


def _folders() -> dict[str, str]:
    """Every module by name → the package it sits in (a package's ``__init__`` sits in
    itself)."""
    return {
        module: module if path.name == "__init__.py" else module.rpartition(".")[0]
        for module, path in project_modules().items()
    }


def back_up(graph: dict[str, set[str]], folders: dict[str, str]) -> set[Arrow]:
    """Every arrow of ``graph`` that runs back up (see the module's docstring)."""
    packages = set(folders.values())

    def wing(module: str, package: str) -> str | None:
        """The wing of ``package`` that ``module`` sits in; None at its root or outside it."""
        folder = folders[module]
        if not folder.startswith(f"{package}."):
            return None
        return f"{package}.{folder[len(package) + 1 :].split('.')[0]}"

    found: set[Arrow] = set()
    for package in packages:
        inside = [m for m in graph if m == package or m.startswith(f"{package}.")]
        between: set[Arrow] = set()
        for module in inside:
            here = wing(module, package)
            for target in graph[module]:
                there = wing(target, package)
                if there is None or here == there:
                    continue
                if here is not None:
                    between.add((here, there))
                elif any(module in graph[m] for m in inside if wing(m, package) == there):
                    found.add((module, there))  # a root module and a wing, both ways
        found |= {(a, b) for a, b in between if (b, a) in between and a < b}
    return found


def test_no_new_arrow_runs_back_up() -> None:
    graph = import_graph()
    found = back_up(graph, _folders())
    assert found - STILL_BACK_UP == set(), "arrows back up (fix them; do not list them)"
    assert STILL_BACK_UP - found == set(), "gone: strike them from STILL_BACK_UP"


def test_the_moved_ones_stay_where_they_are() -> None:
    """The model's plan reads its bound from the model; the clouds and the local launcher echo
    an instance's lines without the supervisor wing; the N-node bench is the lab's."""
    graph = import_graph()
    assert "spotwise.policy.service.schemas" not in graph["spotwise.policy.plan"]
    assert "spotwise.policy.job" in graph["spotwise.policy.service.schemas"]
    for module in graph:
        if module.startswith(("spotwise.executor.clouds", "spotwise.executor.launchers")):
            assert not any(t.startswith("spotwise.executor.supervise") for t in graph[module])
        if module.startswith("spotwise.policy.nodes"):
            assert not any(t.startswith("spotwise.policy.lab") for t in graph[module])


def test_a_planted_arrow_back_up_is_caught() -> None:
    """A wing that imports a wing which imports it, and a root module that imports a wing which
    imports it: both are named, once each."""
    graph = {m: set(t) for m, t in import_graph().items()}
    folders = _folders()
    before = back_up(graph, folders)
    graph["spotwise.executor.training.guard"].add("spotwise.executor.supervise.supervisor")
    assert "spotwise.executor.training.interval" in graph["spotwise.executor.supervise.supervisor"]
    graph["spotwise.policy.cost"].add("spotwise.policy.service.service")
    graph["spotwise.policy.service.schemas"].add("spotwise.policy.cost")
    assert back_up(graph, folders) - before == {
        ("spotwise.executor.supervise", "spotwise.executor.training"),
        ("spotwise.policy.cost", "spotwise.policy.service"),
    }


def test_the_rule_holds_on_a_tree_of_its_own() -> None:
    """Deeper packages count too; one-way arrows and a wing's own root do not."""
    graph = {
        "spotwise.a": set(),
        "spotwise.a.low": set(),
        "spotwise.a.top": {"spotwise.a.w.m", "spotwise.a.low"},
        "spotwise.a.w.m": {"spotwise.a.low", "spotwise.a.w.sub.x"},
        "spotwise.a.w.sub.x": {"spotwise.a.w.m"},
        "spotwise.a.v.n": {"spotwise.a.w.m"},
    }
    folders = {
        "spotwise.a": "spotwise.a",
        "spotwise.a.low": "spotwise.a",
        "spotwise.a.top": "spotwise.a",
        "spotwise.a.w.m": "spotwise.a.w",
        "spotwise.a.w.sub.x": "spotwise.a.w.sub",
        "spotwise.a.v.n": "spotwise.a.v",
    }
    assert back_up(graph, folders) == {("spotwise.a.w.m", "spotwise.a.w.sub")}
