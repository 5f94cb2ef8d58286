"""The engine's hot modules compiled with mypyc, when the install built them (``setup.py``), and the choice
between them and the pure-Python modules, made once when :mod:`engine` is imported (:func:`select`).

``engine._compiled.<name>`` is ``engine/<name>.py`` compiled, with the SHA-256 of the source it was compiled
from (``__source_sha256__``). The compiled modules are used -- put in ``sys.modules`` as ``engine.<name>``,
so every import of ``engine.system`` etc. gets them -- only when all of them import and every recorded hash
equals the hash of ``engine/<name>.py`` as it is now. A source edited after the build (an editable install
keeps the build) makes :mod:`engine` warn once and run the pure Python: a stale build is never used.

``HOODIE_LAB_ENGINE``: ``pure`` uses the pure-Python modules even when a build is there; ``compiled`` makes a
missing or stale build an error (CI); unset or ``auto``: the build when it is current, else pure Python.
"""

from __future__ import annotations

import hashlib
import importlib
import os
import sys
import warnings
from pathlib import Path

#: the modules compiled, in an order where each one's engine imports come before it (``setup.py`` reads this
#: assignment from the source: keep it a literal tuple)
HOT = ("settings", "timeline", "canonical", "table", "writer", "checkpoint", "coordinator", "failover", "invariants",
       "system", "independence", "bfs")

ENGINE_DIR = Path(__file__).resolve().parent.parent


class StaleBuildWarning(UserWarning):
    """The compiled engine was built from other sources than ``engine/*.py`` now hold."""


def source_sha256(name: str) -> str:
    return hashlib.sha256((ENGINE_DIR / f"{name}.py").read_bytes()).hexdigest()


def _load() -> tuple[dict | None, str]:
    """The compiled modules by name, or None and why they are not used."""
    mods = {}
    for name in HOT:
        try:
            mod = importlib.import_module(f"{__name__}.{name}")
        except ImportError as exc:
            return None, f"no compiled build ({exc})"
        if not str(getattr(mod, "__file__", "")).endswith((".so", ".pyd")):
            return None, f"no compiled build ({mod.__name__} is not an extension module)"
        if getattr(mod, "__source_sha256__", None) != source_sha256(name):
            return None, (f"stale compiled build: engine/{name}.py changed since it was compiled "
                          f"(rebuild: make compile, or pip install -e .)")
        mods[name] = mod
    return mods, "compiled (mypyc)"


def select(package) -> tuple[bool, str]:
    """Put the compiled modules in place of ``package``'s (``engine``) when they are current; returns
    (compiled?, description)."""
    mode = os.environ.get("HOODIE_LAB_ENGINE", "auto").strip().lower() or "auto"
    if mode not in ("auto", "pure", "compiled"):
        raise ValueError(f"HOODIE_LAB_ENGINE={mode!r}: expected auto, pure or compiled")
    if mode == "pure":
        return False, "pure Python (HOODIE_LAB_ENGINE=pure)"
    mods, why = _load()
    if mods is None:
        if mode == "compiled":
            raise ImportError(f"HOODIE_LAB_ENGINE=compiled but {why}")
        if why.startswith("stale"):
            warnings.warn(f"hoodie-lab: {why}; using the pure-Python engine", StaleBuildWarning, stacklevel=3)
        return False, f"pure Python ({why})"
    for name, mod in mods.items():
        sys.modules[f"{package.__name__}.{name}"] = mod
        setattr(package, name, mod)
    return True, why
