"""No two modules of the library import each other at import time, directly or through
others: the graph of module-level imports (outside ``if TYPE_CHECKING:``) of frontend,
tensorlang, backend_opencl and tlc has no cycle.

``from package import module`` is an edge to the module, ``from package import name`` an
edge to the package.  Counting the imports inside functions too, which run when the
function does, there is no cycle either
(:func:`test_no_import_cycles_counting_imports_inside_functions`)."""

from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PACKAGES = ("frontend", "tensorlang", "backend_opencl", "tlc")


def modules() -> dict[str, Path]:
    """Every module of the library by dotted name (a package by its own name)."""
    out = {}
    for package in PACKAGES:
        for path in (ROOT / package).rglob("*.py"):
            name = ".".join(path.relative_to(ROOT).with_suffix("").parts)
            out[name.removesuffix(".__init__")] = path
    return out


def imported(name: str, path: Path, known: dict[str, Path]) -> set[str]:
    """The library modules ``name`` imports at module level."""
    found: set[str] = set()
    is_package = path.name == "__init__.py"

    def visit(body: list[ast.stmt]) -> None:
        for node in body:
            if isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test):
                continue
            if isinstance(node, ast.Import):
                found.update(alias.name for alias in node.names)
            elif isinstance(node, ast.ImportFrom):
                base = _absolute(name, is_package, node)
                found.update(f"{base}.{a.name}" if f"{base}.{a.name}" in known else base
                             for a in node.names)
            elif isinstance(node, (ast.If, ast.Try, ast.With)):
                visit(node.body)
                visit(getattr(node, "orelse", []))
                for handler in getattr(node, "handlers", []):
                    visit(handler.body)

    visit(ast.parse(path.read_text()).body)
    return {m for m in found if m in known and m != name}


def imported_anywhere(name: str, path: Path, known: dict[str, Path]) -> set[str]:
    """The library modules ``name`` imports at run time, inside functions included
    (imports under ``if TYPE_CHECKING:`` left out)."""
    found: set[str] = set()
    is_package = path.name == "__init__.py"

    def visit(node: ast.AST) -> None:
        if isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test):
            for child in node.orelse:
                visit(child)
            return
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = _absolute(name, is_package, node)
            found.update(f"{base}.{a.name}" if f"{base}.{a.name}" in known else base
                         for a in node.names)
        for child in ast.iter_child_nodes(node):
            visit(child)

    visit(ast.parse(path.read_text()))
    return {m for m in found if m in known and m != name}


def _absolute(name: str, is_package: bool, node: ast.ImportFrom) -> str:
    """The module a ``from ... import`` names, relative imports resolved."""
    if not node.level:
        return node.module or ""
    parts = name.split(".") if is_package else name.split(".")[:-1]
    parts = parts[:len(parts) - node.level + 1]
    return ".".join(parts + ([node.module] if node.module else []))


def cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components of more than one module (Tarjan)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        on_stack.add(v)
        for w in sorted(graph[v]):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                component.append(w)
                if w == v:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return found


def test_no_module_level_import_cycles() -> None:
    known = modules()
    graph = {name: imported(name, path, known) for name, path in known.items()}
    assert cycles(graph) == []


def test_the_checker_finds_a_cycle() -> None:
    assert cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]
    assert cycles({"a": {"b"}, "b": set()}) == []


def test_no_import_cycles_counting_imports_inside_functions() -> None:
    """Issue #22 item 5: no cycle anywhere in the library even counting the imports that
    run inside functions (those under ``if TYPE_CHECKING:`` aside: they never run).  The
    lowering's families register themselves in its core, which never imports one;
    backend_opencl's tools call its API, the API its executors, the executors the
    runtimes' protocols; the IR of either language does not import its syntax."""
    known = modules()
    graph = {name: imported_anywhere(name, path, known) for name, path in known.items()}
    assert cycles(graph) == []
