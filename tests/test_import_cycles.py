"""The import graph has no cycles, between files and between folders
(grimp builds the graph import-linter uses). The cycles still in the code
are listed here by name, each with why it is left; a new one fails."""

from __future__ import annotations

import grimp

# (module set, why it is still here). Remove an entry when its cycle is cut:
# the test then holds that it stays cut.
KNOWN_FILE_CYCLES: dict[frozenset[str], str] = {
    frozenset({"perftriage.core.probes", "perftriage.core.probe_kinds",
               "perftriage.core.probe_kinds.grep_kind", "perftriage.core.probe_kinds.http_kind",
               "perftriage.core.probe_kinds.python_kinds",
               "perftriage.core.probe_kinds.system_kinds"}):
        "probes.py imports the kinds to register them; the kinds import probes.register",
    frozenset({"perftriage.core.store.config", "perftriage.core.store.config_rules"}):
        "config validation rules and the config structs import each other (#12 guard)",
    frozenset({"perftriage.services.log_follower", "perftriage.services.log_source"}):
        "the follower creates log sources that call back into it (#12 wire)",
}


KNOWN_FOLDER_CYCLES: dict[frozenset[str], str] = {
    frozenset({"perftriage.core.analysis", "perftriage.core.model", "perftriage.core.parse"}):
        "parsers return event types (GpuSample, HostSample) while state holds parse results "
        "(LogMetrics, engine snapshots), and engine_state uses analysis.engine_window",
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


def test_no_new_cycle_between_files():
    g = _graph()
    cycles = _strongly_connected(g.modules, g.find_modules_directly_imported_by)
    assert set(cycles) <= set(KNOWN_FILE_CYCLES), [sorted(c) for c in cycles
                                                     if c not in KNOWN_FILE_CYCLES]


def test_no_cycle_between_folders():
    g = _graph()
    edges: dict[str, set[str]] = {}
    for m in g.modules:
        for w in g.find_modules_directly_imported_by(m):
            a, b = _folder(m, g), _folder(w, g)
            if a != b and not b.startswith(a + ".") and not a.startswith(b + "."):
                edges.setdefault(a, set()).add(b)
    folders = set(edges) | {b for bs in edges.values() for b in bs}
    cycles = _strongly_connected(folders, lambda f: edges.get(f, ()))
    assert set(cycles) <= set(KNOWN_FOLDER_CYCLES), [sorted(c) for c in cycles
                                                     if c not in KNOWN_FOLDER_CYCLES]


def test_cli_and_launch_import_one_way():
    g = _graph()
    assert not g.direct_import_exists(importer="perftriage.launch", imported="perftriage.cli")
