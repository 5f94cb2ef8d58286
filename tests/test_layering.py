"""The layering of ``docs/architecture.md``, checked on the source: who may import whom, no import circles.

Every ``import`` and ``from ... import`` of a product module counts, at module level or inside a function
(a function-level import is still a dependency). The rules:

=============  ==============================================================
package        may import (of ours)
=============  ==============================================================
model          model
engine         model, engine
checker        model, engine, checker
lakeio         model, lakeio
sim            model, engine, checker, lakeio, sim
pipeline       model, engine, checker, lakeio, pipeline
properties     model, engine, checker, lakeio, properties (its non-test modules)
hoodie_lab     everything above (the top)
=============  ==============================================================

No product module imports a test module (``tests``, ``conftest``, ``properties/test_*.py``), and no two
product modules import each other through a circle. An import under ``if TYPE_CHECKING:`` names a type for the
type checker (and mypyc) only: it counts for the layering, not for circles (it never runs).
"""

from __future__ import annotations

import ast
from pathlib import Path

import networkx as nx
import pytest

ROOT = Path(__file__).resolve().parent.parent
OURS = ("model", "engine", "checker", "lakeio", "sim", "pipeline", "properties", "hoodie_lab", "tests", "conftest")
ALLOWED = {
    "model": {"model"},
    "engine": {"model", "engine"},
    "checker": {"model", "engine", "checker"},
    "lakeio": {"model", "lakeio"},
    "sim": {"model", "engine", "checker", "lakeio", "sim"},
    "pipeline": {"model", "engine", "checker", "lakeio", "pipeline"},
    "properties": {"model", "engine", "checker", "lakeio", "properties"},
    "hoodie_lab": {"model", "engine", "checker", "lakeio", "sim", "pipeline", "properties", "hoodie_lab"},
}


def _module_name(path: Path, root: Path) -> str:
    rel = path.relative_to(root).with_suffix("")
    parts = list(rel.parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def _is_test_module(name: str) -> bool:
    parts = name.split(".")
    return parts[0] in ("tests", "conftest") or parts[-1].startswith("test_")


def product_modules(root: Path = ROOT) -> dict[str, Path]:
    mods = {}
    for pkg in ALLOWED:
        for path in sorted((root / pkg).rglob("*.py")):
            name = _module_name(path, root)
            if not _is_test_module(name):
                mods[name] = path
    return mods


def _type_only(tree: ast.Module) -> set[int]:
    """The ids of the import nodes inside ``if TYPE_CHECKING:`` blocks."""
    out = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.If) and isinstance(node.test, ast.Name) and node.test.id == "TYPE_CHECKING":
            out |= {id(n) for stmt in node.body for n in ast.walk(stmt)}
    return out


def imports_of(name: str, path: Path, type_only: bool = True) -> set[str]:
    """The modules of ours ``name`` imports, as dotted names (relative imports resolved); without those under
    ``if TYPE_CHECKING:`` when ``type_only`` is False."""
    tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    skip = set() if type_only else _type_only(tree)
    out = set()
    for node in ast.walk(tree):
        if id(node) in skip:
            continue
        if isinstance(node, ast.Import):
            targets = [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")
                base = base[:len(base) - (node.level - 1)] if node.level > 1 else base
                mod = ".".join(base + ([node.module] if node.module else []))
            else:
                mod = node.module or ""
            # "from pkg import sub" may name a submodule: count it when it is one
            targets = [mod] + [f"{mod}.{a.name}" for a in node.names]
        else:
            continue
        for t in targets:
            if t.split(".")[0] in OURS:
                out.add(t)
    return out


def _resolve(target: str, mods: dict[str, Path]) -> str | None:
    """The product module a dotted import target names (the longest known prefix), if any."""
    parts = target.split(".")
    for i in range(len(parts), 0, -1):
        cand = ".".join(parts[:i])
        if cand in mods:
            return cand
    return None


def import_graph(root: Path = ROOT) -> nx.DiGraph:
    """Who imports whom at run time (type-only imports left out)."""
    mods = product_modules(root)
    g = nx.DiGraph()
    g.add_nodes_from(mods)
    for name, path in mods.items():
        for t in imports_of(name, path, type_only=False):
            r = _resolve(t, mods)
            if r is not None and r != name and not name.startswith(r + ".") and r != name.rpartition(".")[0]:
                g.add_edge(name, r)
    return g


def layering_violations(root: Path = ROOT) -> list[str]:
    mods = product_modules(root)
    bad = []
    for name, path in mods.items():
        layer = name.split(".")[0]
        for t in sorted(imports_of(name, path)):
            top = t.split(".")[0]
            if _is_test_module(t):
                bad.append(f"{name} imports the test module {t}")
            elif top not in ALLOWED[layer]:
                bad.append(f"{name} ({layer}) imports {t} ({top}): {layer} may import {', '.join(sorted(ALLOWED[layer]))}")
    return bad


def import_cycles(root: Path = ROOT) -> list[list[str]]:
    return sorted(sorted(c) for c in nx.simple_cycles(import_graph(root)))


def test_every_import_follows_the_layering():
    bad = layering_violations()
    assert not bad, "\n".join(bad)


def test_no_import_circles():
    cycles = import_cycles()
    assert not cycles, "\n".join(" -> ".join(c) for c in cycles)


def test_the_model_imports_nothing_of_ours_but_the_model():
    mods = product_modules()
    outside = {t for n, p in mods.items() if n.split(".")[0] == "model" for t in imports_of(n, p)
               if t.split(".")[0] != "model"}
    assert not outside


@pytest.mark.parametrize("layer, source, expected", [
    ("model", "from engine import System\n", "model.x (model) imports engine"),
    ("lakeio", "def f():\n    from engine.system import System\n", "lakeio.x (lakeio) imports engine.system"),
    ("sim", "import hoodie_lab.cli\n", "sim.x (sim) imports hoodie_lab.cli"),
    ("engine", "from properties.test_protocol_machine import X\n", "imports the test module"),
    ("checker", "from .explorer import explore\nimport numpy\n", None),  # its own package, a third-party one
])
def test_the_checks_catch_a_forbidden_import(tmp_path, layer, source, expected):
    """The rules can fail: a module that imports against them is reported (a planted module in a copy)."""
    (tmp_path / layer).mkdir()
    (tmp_path / layer / "__init__.py").write_text("")
    (tmp_path / layer / "x.py").write_text(source)
    bad = layering_violations(tmp_path)
    if expected is None:
        assert not bad, bad
    else:
        assert any(expected in b for b in bad), bad


def test_the_cycle_check_catches_a_circle(tmp_path):
    (tmp_path / "sim").mkdir()
    (tmp_path / "sim" / "__init__.py").write_text("")
    (tmp_path / "sim" / "a.py").write_text("from . import b\n")
    (tmp_path / "sim" / "b.py").write_text("def f():\n    from .a import g\n")
    assert import_cycles(tmp_path) == [["sim.a", "sim.b"]]


def test_a_type_only_import_makes_no_circle_but_counts_for_the_layering(tmp_path):
    """``if TYPE_CHECKING:`` imports never run: no circle through them; a forbidden one is still caught."""
    for pkg in ("engine", "model"):
        (tmp_path / pkg).mkdir()
        (tmp_path / pkg / "__init__.py").write_text("")
    (tmp_path / "engine" / "a.py").write_text("from . import b\n")
    (tmp_path / "engine" / "b.py").write_text("from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from .a import A\n")
    assert import_cycles(tmp_path) == []
    (tmp_path / "engine" / "b.py").write_text("from .a import A\n")
    assert import_cycles(tmp_path) == [["engine.a", "engine.b"]]
    (tmp_path / "model" / "m.py").write_text("from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from engine.a import A\n")
    assert any("model.m" in v for v in layering_violations(tmp_path))
