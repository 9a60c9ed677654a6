"""docs/design.md's table of import boundaries holds: each library (or tlc package) in
its first column is imported only in the places its second column names (a folder
ending in ``/`` or a module), wherever the import statement sits (module level or
inside a function). The table may name places that no longer import the library; it
must not miss one that does."""

from __future__ import annotations

import ast
import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
PACKAGES = ("frontend", "tensorlang", "backend_opencl", "tlc")
BEGIN = "<!-- BEGIN import boundaries"
END = "<!-- END import boundaries -->"


def boundaries() -> dict[str, tuple[str, ...]]:
    """Library -> the places design.md allows it in."""
    text = (ROOT / "docs" / "design.md").read_text()
    table = text.split(BEGIN, 1)[1].split(END, 1)[0]
    rows = re.findall(r"^\| `([\w.]+)` \| (.*) \|$", table, re.M)
    return {lib: tuple(re.findall(r"`([^`]+)`", places)) for lib, places in rows}


def importers(library: str) -> set[str]:
    """The library's modules (paths relative to the root) that import ``library``."""
    found = set()
    for package in PACKAGES:
        for path in (ROOT / package).rglob("*.py"):
            if _imports(ast.parse(path.read_text()), library):
                found.add(path.relative_to(ROOT).as_posix())
    return found


def _imports(tree: ast.AST, library: str) -> bool:
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            names = [node.module]
        else:
            continue
        if any(n == library or n.startswith(library + ".") for n in names):
            return True
    return False


def _allowed(module: str, places: tuple[str, ...]) -> bool:
    return any(module.startswith(p) if p.endswith("/") else module == p for p in places)


def test_the_table_names_the_foreign_libraries() -> None:
    assert {"islpy", "lark", "pyopencl", "dpctl", "mpi4py"} <= set(boundaries())


def test_every_import_is_where_design_md_says() -> None:
    wrong = {lib: sorted(m for m in importers(lib) if not _allowed(m, places))
             for lib, places in boundaries().items()}
    wrong = {lib: modules for lib, modules in wrong.items() if modules}
    assert not wrong, f"imported outside the places docs/design.md names: {wrong}"


def test_tensorlang_imports_neither_front_nor_back_end() -> None:
    modules = {m for lib in ("frontend", "backend_opencl") for m in importers(lib)}
    assert not {m for m in modules if m.startswith("tensorlang/")}
