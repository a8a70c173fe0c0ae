"""The import graph has no cycles, between files and between folders
(grimp builds the graph import-linter uses; imports under TYPE_CHECKING and
inside functions count too). Any cycle fails, named by its modules.

A folder's own modules are one node and each subfolder another, so a circle
between a folder and its subfolder counts too (``services/`` ↔
``services/sources/`` was one). Only the folders in
:data:`LAYERED_LOOSE_MODULES` have loose modules on several floors around
their subfolders, each floor held by its own layers contract."""

from __future__ import annotations

import grimp

# folder -> why its loose modules may sit both above and below its subfolders
LAYERED_LOOSE_MODULES = {
    "perftriage": "__main__ above everything, __version__ (the __init__) below it",
    "perftriage.core": "probes above probe_kinds, sanitize/needles/http_limits at the "
                       "bottom (the core layers contract)",
    "perftriage.ui": "app above screens, flows and widgets, app_context/refresh below "
                     "them (the ui layers contract)",
}


def _graph():
    return grimp.build_graph("perftriage")


def _strongly_connected(nodes, edges_of) -> list[frozenset[str]]:
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    out: list[frozenset[str]] = []
    counter = [0]

    def visit(v: str) -> None:
        index[v] = low[v] = counter[0]
        counter[0] += 1
        stack.append(v)
        on_stack.add(v)
        for w in edges_of(v):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = set()
            while True:
                w = stack.pop()
                on_stack.discard(w)
                comp.add(w)
                if w == v:
                    break
            if len(comp) > 1:
                out.append(frozenset(comp))

    for n in sorted(nodes):
        if n not in index:
            visit(n)
    return out


def _folder(module: str, graph) -> str:
    """The package a module is in (a package is its own folder)."""
    return module if graph.find_children(module) else module.rpartition(".")[0]


def _layered_parent_and_child(a: str, b: str) -> bool:
    """``a`` and ``b`` are a folder and its subfolder where the folder's loose
    modules are layered around it by a contract (LAYERED_LOOSE_MODULES)."""
    return any(inner.startswith(outer + ".") and outer in LAYERED_LOOSE_MODULES
               for outer, inner in ((a, b), (b, a)))


def test_no_cycle_between_files():
    g = _graph()
    cycles = _strongly_connected(g.modules, g.find_modules_directly_imported_by)
    assert not cycles, [sorted(c) for c in cycles]


def test_no_cycle_between_folders():
    g = _graph()
    edges: dict[str, set[str]] = {}
    for m in g.modules:
        for w in g.find_modules_directly_imported_by(m):
            a, b = _folder(m, g), _folder(w, g)
            if a != b and not _layered_parent_and_child(a, b):
                edges.setdefault(a, set()).add(b)
    folders = set(edges) | {b for bs in edges.values() for b in bs}
    cycles = _strongly_connected(folders, lambda f: edges.get(f, ()))
    assert not cycles, [sorted(c) for c in cycles]


def test_cli_and_launch_import_one_way():
    g = _graph()
    assert not g.direct_import_exists(importer="perftriage.cli.launch", imported="perftriage.cli")
