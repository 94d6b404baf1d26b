"""The import graph of the three packages has no circles, and each concern imports only what it may.

A circle is any strongly connected set of two or more modules in grimp's graph (the graph
import-linter checks, built from the source), counting imports inside functions and under
``if TYPE_CHECKING:`` too: a lazy import that closes a circle is still a circle. The layer rules
themselves are import-linter contracts in ``pyproject.toml`` (run by ``bootstrap.py test``); this
file checks the circles, which import-linter has no contract for, and that the contracts name
the subpackages that exist.
"""

from __future__ import annotations

import tomllib
from pathlib import Path

import grimp
import pytest

ROOT = Path(__file__).resolve().parents[1]
PACKAGES = ("mpc", "parties", "anonymize")


def strongly_connected(graph: grimp.ImportGraph) -> list[list[str]]:
    """Tarjan's algorithm, iterative (R. Tarjan, "Depth-first search and linear graph algorithms",
    SIAM J. Computing, 1972): the components of two or more modules."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    on_stack: set[str] = set()
    stack: list[str] = []
    found: list[list[str]] = []
    counter = 0
    for root in sorted(graph.modules):
        if root in index:
            continue
        work = [(root, iter(sorted(graph.find_modules_directly_imported_by(root))))]
        index[root] = low[root] = counter
        counter += 1
        stack.append(root)
        on_stack.add(root)
        while work:
            v, children = work[-1]
            advanced = False
            for w in children:
                if w not in graph.modules:
                    continue
                if w not in index:
                    index[w] = low[w] = counter
                    counter += 1
                    stack.append(w)
                    on_stack.add(w)
                    work.append((w, iter(sorted(graph.find_modules_directly_imported_by(w)))))
                    advanced = True
                    break
                if w in on_stack:
                    low[v] = min(low[v], index[w])
            if advanced:
                continue
            work.pop()
            if work:
                parent = work[-1][0]
                low[parent] = min(low[parent], low[v])
            if low[v] == index[v]:
                comp = []
                while True:
                    w = stack.pop()
                    on_stack.discard(w)
                    comp.append(w)
                    if w == v:
                        break
                if len(comp) > 1:
                    found.append(sorted(comp))
    return found


@pytest.fixture(scope="module")
def graph() -> grimp.ImportGraph:
    return grimp.build_graph(*PACKAGES)


def test_the_finder_sees_a_circle() -> None:
    """The component search itself, on a graph with one known circle and one chain."""
    g = grimp.ImportGraph()
    for m in ("p", "p.a", "p.b", "p.c", "p.d"):
        g.add_module(m)
    g.add_import(importer="p.a", imported="p.b")
    g.add_import(importer="p.b", imported="p.c")
    g.add_import(importer="p.c", imported="p.a")
    g.add_import(importer="p.d", imported="p.a")
    assert strongly_connected(g) == [["p.a", "p.b", "p.c"]]


def test_no_import_circles(graph: grimp.ImportGraph) -> None:
    circles = strongly_connected(graph)
    assert circles == [], "import circles: " + "; ".join(" <-> ".join(c) for c in circles)


def test_jobs_do_not_import_guards(graph: grimp.ImportGraph) -> None:
    """Guards wrap jobs (the budget guard hands its charge to the job's context), never the reverse."""
    chain = graph.find_shortest_chains(importer="parties.jobs", imported="parties.guards")
    assert not chain


def test_contracts_name_existing_subpackages() -> None:
    """Every module an import-linter contract names exists (a renamed package would void its contract)."""
    doc = tomllib.loads((ROOT / "pyproject.toml").read_text())
    contracts = doc["tool"]["importlinter"]["contracts"]
    assert len(contracts) >= 7
    named = {m for c in contracts for key in ("source_modules", "forbidden_modules") for m in c.get(key, [])}
    for mod in sorted(named):
        if mod.split(".")[0] not in PACKAGES:
            continue  # external packages (grpc)
        path = ROOT / mod.replace(".", "/")
        assert path.is_dir() or path.with_suffix(".py").is_file(), f"contract names {mod}, which does not exist"
