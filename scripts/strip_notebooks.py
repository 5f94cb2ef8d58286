"""Strip outputs and execution counts from notebooks (committed notebooks carry no outputs).

Usage: .venv/bin/python scripts/strip_notebooks.py notebooks/*.ipynb
"""

from __future__ import annotations

import sys

import nbformat


def main(paths: list[str]) -> int:
    for path in paths:
        nb = nbformat.read(path, as_version=4)
        for cell in nb.cells:
            if cell.cell_type == "code":
                cell.outputs = []
                cell.execution_count = None
        nbformat.write(nb, path)
        print(f"stripped {path}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
