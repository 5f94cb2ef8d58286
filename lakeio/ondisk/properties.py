"""``.hoodie/hoodie.properties``: read and write the Java ``.properties`` format.

A small parser for the subset of ``java.util.Properties.load`` that matters here, kept exact:
comment lines (``#``/``!``), separators ``=``, ``:`` or whitespace, backslash escapes
(``\\:``, ``\\=``, ``\\t``, ``\\n``, ``\\uXXXX``, any other ``\\c`` -> ``c``) and line continuation by a
trailing odd backslash. Hudi writes the file with ``Properties.store`` (``HoodieTableConfig``,
``hudi-semantics.md`` 1.2), which escapes ``:``, ``=``, ``#``, ``!`` -- e.g. the
``hoodie.table.create.schema`` JSON is stored as ``{"type"\\:"record",...``.

``hoodie.table.checksum`` is CRC32 of ``"<database>.<table name>"`` (``HoodieTableConfig.generateChecksum``;
checked against every fixture table); :func:`write_hoodie_properties` sets it.
"""

from __future__ import annotations

import os
import re
import zlib
from pathlib import Path

from lakeio.errors import UserError, check_regular_file
from lakeio.ondisk.metadata import write_timeline_file

_ESCAPES = {"t": "\t", "n": "\n", "r": "\r", "f": "\f"}


def _unescape(s: str, source: str) -> str:
    out = []
    i = 0
    while i < len(s):
        c = s[i]
        if c != "\\":
            out.append(c)
            i += 1
            continue
        i += 1
        if i >= len(s):
            break
        c = s[i]
        if c == "u":
            hex4 = s[i + 1:i + 5]
            if len(hex4) != 4 or not re.fullmatch(r"[0-9a-fA-F]{4}", hex4):
                raise UserError(f"{source}: malformed \\u escape {s[i - 1:i + 5]!r}")
            out.append(chr(int(hex4, 16)))
            i += 5
            continue
        out.append(_ESCAPES.get(c, c))
        i += 1
    return "".join(out)


def _logical_lines(text: str):
    pending = ""
    for raw in text.splitlines():
        line = raw.lstrip(" \t\f")
        if not pending and (not line or line[0] in "#!"):
            continue
        trailing = len(line) - len(line.rstrip("\\"))
        if trailing % 2 == 1:  # continuation
            pending += line[:-1]
            continue
        yield pending + line
        pending = ""
    if pending:
        yield pending


def parse_properties(text: str, source: str = "hoodie.properties") -> dict[str, str]:
    """Parse Java ``.properties`` text into a dict (later keys win, as in Java)."""
    props: dict[str, str] = {}
    for line in _logical_lines(text):
        # the key ends at the first unescaped '=', ':' or whitespace
        i, n = 0, len(line)
        while i < n:
            c = line[i]
            if c == "\\":
                i += 2
                continue
            if c in "=: \t\f":
                break
            i += 1
        key = line[:i]
        rest = line[i:].lstrip(" \t\f")
        if rest[:1] in ("=", ":"):  # at most one '=' or ':' separator, surrounded by optional blanks
            rest = rest[1:].lstrip(" \t\f")
        props[_unescape(key, source)] = _unescape(rest, source)
    return props


def read_properties(path: str | os.PathLike) -> dict[str, str]:
    """Read a ``.properties`` file (ISO-8859-1, as ``Properties.load(InputStream)`` reads it).

    Raises :class:`UserError` naming the file when it is missing or unreadable, and refuses anything
    but a regular file without opening it (a FIFO or a device would block the read forever).
    """
    path = Path(path)
    check_regular_file(path, missing="missing", directory="unreadable (Is a directory)")
    try:
        data = path.read_bytes()
    except FileNotFoundError:
        raise UserError(f"{path}: missing") from None
    except OSError as exc:
        raise UserError(f"{path}: unreadable ({exc.strerror or exc})") from None
    return parse_properties(data.decode("latin-1"), str(path))


def _escape(s: str, is_key: bool) -> str:
    out = []
    for idx, c in enumerate(s):
        if c == "\\":
            out.append("\\\\")
        elif c in "=:#!":
            out.append("\\" + c)
        elif c == " " and (is_key or idx == 0):
            out.append("\\ ")
        elif c in "\t\n\r\f":
            out.append("\\" + {"\t": "t", "\n": "n", "\r": "r", "\f": "f"}[c])
        elif ord(c) < 0x20 or ord(c) > 0x7E:
            out.append(f"\\u{ord(c):04x}")
        else:
            out.append(c)
    return "".join(out)


def format_properties(props: dict[str, str], comment: str | None = None) -> str:
    """Java ``Properties.store`` text for ``props`` (keys sorted for a stable file)."""
    lines = []
    if comment:
        lines.append(f"#{comment}")
    for k in sorted(props):
        lines.append(f"{_escape(k, True)}={_escape(str(props[k]), False)}")
    return "\n".join(lines) + "\n"


def table_checksum(props: dict[str, str]) -> int:
    """``HoodieTableConfig.generateChecksum``: CRC32 of ``"<database>.<table name>"``."""
    name = props.get("hoodie.table.name")
    if not name:
        raise ValueError("hoodie.table.name is required to compute hoodie.table.checksum")
    return zlib.crc32(f"{props.get('hoodie.database.name', '')}.{name}".encode("utf-8"))


def write_hoodie_properties(path: str | os.PathLike, props: dict[str, str]) -> Path:
    """Write a new table's ``hoodie.properties`` (``path`` is the file or the ``.hoodie`` dir).

    Adds ``hoodie.table.checksum``. Refuses to overwrite an existing file (a new table only).
    """
    path = Path(path)
    if path.is_dir() or path.name != "hoodie.properties":
        path = path / "hoodie.properties"
    if path.exists():
        raise FileExistsError(f"{path}: exists; write_hoodie_properties creates new tables only")
    props = {k: str(v) for k, v in props.items()}
    props["hoodie.table.checksum"] = str(table_checksum(props))
    # all bytes to a temporary file in .hoodie/.temp, fsynced, then hard-linked to the final name: a kill
    # leaves no file or the whole file, never an empty one that every later open refuses (Hudi guards its
    # updates the same way: HoodieTableConfig.modify keeps hoodie.properties.backup, recoverIfNeeded restores
    # from it); the link refuses an existing name
    data = format_properties(props, "Properties saved by hoodie-lab").encode("latin-1")
    return write_timeline_file(path, data, refusal="exists; write_hoodie_properties creates new tables only")
