"""Trace files: the one writer every driver uses and the reader (bad input -> :class:`UserError` naming the
file, the line and the problem). The format is :mod:`model.trace`'s: :func:`write_trace` writes a whole
trace, ending with the end marker ``{"end": N}``; :func:`load_trace` refuses a trace without it (cut at a
line boundary) unless the header marks a write-ahead log (the pipeline's)."""

from __future__ import annotations

import os
from pathlib import Path

from model.protocol import ProtocolConfig
from model.trace import Trace, TraceError, parse_trace, to_text

from .errors import UserError, check_regular_file


def write_trace(path, config: ProtocolConfig, events, seed: int | None = None, driver: str = "manual",
                **extra) -> Path:
    """Write a trace file (atomically: temp file + rename). Returns the path."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_text(to_text(config, events, seed, driver, **extra), encoding="utf-8")
    os.replace(tmp, path)
    return path


def load_trace(path) -> Trace:
    """Read and parse a trace file. Anything but a regular file (a FIFO, a device) is refused
    without opening it, so a replay never blocks; a trace without its end marker is refused as
    possibly truncated unless it is a write-ahead log (:mod:`model.trace`)."""
    p = Path(path)
    check_regular_file(p, missing="no such file", directory="is a directory, not a trace file")
    try:
        text = p.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise UserError(f"{path}: no such file") from None
    except IsADirectoryError:
        raise UserError(f"{path}: is a directory, not a trace file") from None
    except UnicodeDecodeError:
        raise UserError(f"{path}: not a UTF-8 text file") from None
    except OSError as exc:
        raise UserError(f"{path}: cannot read ({exc.strerror})") from None
    try:
        return parse_trace(text)
    except TraceError as exc:
        where = f"{path}:{exc.line}" if exc.line else str(path)
        raise UserError(f"{where}: {exc.problem}") from None
