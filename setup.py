"""Build of the optional compiled engine (the project's metadata is in pyproject.toml).

The explorer's hot modules of :mod:`engine` (:data:`engine._compiled.HOT`) are compiled with mypyc into
``engine._compiled.<name>``: 1.5x the canonical states per CPU second of the pure-Python engine at the quick
bound (``benchmarks/bench_protocol.py --quick --symmetry``, 28 Nov 2026). Each source is copied to
``engine/_compiled/<name>.py`` with every parameter's annotation made ``Any`` (:func:`compilable`: no run-time
type check of what a caller passes that the pure engine would not make) and the SHA-256 of the original appended (``__source_sha256__``), compiled,
and the copy deleted. At import, :mod:`engine` uses the compiled modules
only when every recorded hash equals the hash of the source as it is now, so a later edit of
``engine/system.py`` (an editable install keeps the build) makes :mod:`engine` warn once and run the pure
Python it was edited into, never a stale build.

The build is optional: without mypyc or a C compiler, or with ``HOODIE_LAB_ENGINE=pure`` at install, the
package installs pure Python (``engine.COMPILED`` is False). ``HOODIE_LAB_ENGINE=pure`` at run time also
picks the pure engine over a build.
"""

from __future__ import annotations

import ast
import hashlib
import os
import sys
from pathlib import Path

from setuptools import setup
from setuptools.command.build_ext import build_ext

ROOT = Path(__file__).resolve().parent


def _hot() -> tuple[str, ...]:
    """``engine._compiled.HOT``, the modules to compile, read from its source (importing :mod:`engine` at build
    time would need its dependencies): one list for the build and for the choice at import."""
    tree = ast.parse((ROOT / "engine" / "_compiled" / "__init__.py").read_text())
    for node in tree.body:
        if isinstance(node, ast.Assign) and any(getattr(t, "id", None) == "HOT" for t in node.targets):
            return tuple(ast.literal_eval(node.value))
    raise RuntimeError("engine/_compiled/__init__.py: no HOT")


HOT = _hot()


def _warn(msg: str) -> None:
    print(f"hoodie-lab: {msg}; installing the pure-Python engine", file=sys.stderr)


class _AnyParameters(ast.NodeTransformer):
    """Every parameter's annotation made ``typing.Any`` (but the engine's own classes, :attr:`NATIVE`); return types and the annotations of attributes and
    variables are kept, so mypyc compiles native attribute access, native calls and unboxed values where the
    engine says what it holds (1.1x the canonical states per CPU second of all-``Any`` at the quick bound).

    Parameters stay ``Any`` because mypyc checks the types it compiles against at run time, and what callers
    pass the engine is not a contract: a test passes ``None`` where ``str`` is annotated, to see the engine
    refuse it as the spec does (a parameter's type would make it a ``TypeError``). What the engine itself
    returns and stores is checked by mypy at build time (a type error fails the build: pure Python). An
    annotated function stays annotated, so mypy still types its body (``self`` is the native class)."""

    ANY = "_HoodieLabAny"  # one leading underscore: a name in a class body is not mangled

    #: The engine's own classes (compiled, native): a parameter annotated with one of them, or with a list of
    #: them, keeps its annotation, so its attributes are read natively instead of looked up by name (the
    #: engine passes its own objects between its functions: no caller hands the invariants or the canonical
    #: form anything but the engine's states and parts)
    NATIVE = frozenset({"System", "WriterTask", "Coordinator", "EventBuffer", "Table", "Timeline", "PendingCheckpoint",
                        "Settings"})

    def _any(self):
        return ast.Name(self.ANY, ast.Load())

    def _native(self, annotation) -> bool:
        if isinstance(annotation, ast.Name):
            return annotation.id in self.NATIVE
        return (isinstance(annotation, ast.Subscript) and isinstance(annotation.value, ast.Name)
                and annotation.value.id == "list" and self._native(annotation.slice))

    def visit_FunctionDef(self, node):
        self.generic_visit(node)
        args = node.args
        for a in args.posonlyargs + args.args + args.kwonlyargs + [args.vararg, args.kwarg]:
            if a is not None and a.annotation is not None and not self._native(a.annotation):
                a.annotation = self._any()
        return node

    def visit_Assign(self, node):
        """``__hash__ = None`` (a mutable class) as ``__hash__: Any = None``: mypy refuses the plain form."""
        if len(node.targets) == 1 and isinstance(node.targets[0], ast.Name) and node.targets[0].id == "__hash__":
            return ast.AnnAssign(node.targets[0], self._any(), node.value, simple=1)
        return node


def compilable(source: str) -> str:
    """``source`` with every parameter annotation ``Any`` (:class:`_AnyParameters`)."""
    tree = _AnyParameters().visit(ast.parse(source))
    body = tree.body
    at = 1 if body and isinstance(body[0], ast.Expr) and isinstance(body[0].value, ast.Constant) else 0
    while at < len(body) and isinstance(body[at], ast.ImportFrom) and body[at].module == "__future__":
        at += 1
    body.insert(at, ast.parse(f"from typing import Any as {_AnyParameters.ANY}").body[0])
    return ast.unparse(ast.fix_missing_locations(tree))


def _copies() -> list[Path]:
    """``engine/<name>.py`` copied to ``engine/_compiled/<name>.py`` (:func:`compilable`), each with the hash of
    its source appended."""
    out = []
    for name in HOT:
        src = (ROOT / "engine" / f"{name}.py").read_bytes()
        dst = ROOT / "engine" / "_compiled" / f"{name}.py"
        dst.write_text(compilable(src.decode()) + f"\n\n__source_sha256__ = {hashlib.sha256(src).hexdigest()!r}\n")
        out.append(dst)
    return out


def compiled_engine() -> list:
    if os.environ.get("HOODIE_LAB_ENGINE", "").lower() == "pure":
        return []
    try:
        from mypyc.build import mypycify
    except ImportError:
        _warn("mypyc not found")
        return []
    copies = _copies()
    cwd = os.getcwd()
    try:
        os.chdir(ROOT)
        return mypycify([str(p.relative_to(ROOT)) for p in copies] + ["--ignore-missing-imports",
                                                                      "--follow-imports=silent"],
                        opt_level="3", group_name="engine._compiled.native")
    except BaseException as exc:  # mypy type errors exit through SystemExit
        _warn(f"mypyc failed ({type(exc).__name__}: {exc})")
        return []
    finally:
        os.chdir(cwd)
        for p in copies:
            p.unlink(missing_ok=True)


class OptionalBuildExt(build_ext):
    """``build_ext`` that falls back to the pure-Python engine when the C compiler fails or is missing."""

    def run(self):
        try:
            super().run()
        except Exception as exc:
            _warn(f"compiling the engine failed ({type(exc).__name__}: {exc})")

    def build_extension(self, ext):
        try:
            super().build_extension(ext)
        except Exception as exc:
            _warn(f"compiling {ext.name} failed ({type(exc).__name__}: {exc})")


setup(ext_modules=compiled_engine(), cmdclass={"build_ext": OptionalBuildExt})
