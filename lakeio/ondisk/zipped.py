"""A Hudi table given as a ``.zip`` (the fixtures' form): extracted to a temporary directory for reading.

:func:`table_path` is a context manager: a path that is not a ``.zip`` file is yielded as it is; a zip is
checked (a readable zip archive, entries within its size bound, exactly one table inside), extracted with
:func:`lakeio.fixtures.extract_fixture` (modification times kept: table version 6 completion times are the
completed files' mtimes; ``__MACOSX`` skipped) into a fresh temporary directory, and the table's base path
inside it is yielded; the directory is removed afterwards. The zip itself is only read. A bad zip is a
one-line :class:`lakeio.errors.UserError` naming the file.
"""

from __future__ import annotations

import tempfile
import zipfile
from contextlib import contextmanager
from pathlib import Path
from typing import Iterator

from lakeio.errors import UserError
from lakeio.fixtures import extract_fixture

#: Largest total uncompressed size extracted (the fixtures are a few MB).
MAX_UNCOMPRESSED_BYTES = 4 * 2**30


def is_zip_path(path: str | Path) -> bool:
    p = Path(path)
    return p.suffix.lower() == ".zip" and p.is_file()


@contextmanager
def table_path(path: str | Path) -> Iterator[str]:
    """``path`` itself, or the base path of the table inside the zip ``path`` (extracted while in use)."""
    if not is_zip_path(path):
        yield str(path)
        return
    try:
        with zipfile.ZipFile(path) as zf:
            infos = zf.infolist()
            bad = zf.testzip()
    except (zipfile.BadZipFile, OSError, EOFError, ValueError, NotImplementedError) as exc:
        raise UserError(f"{path}: not a readable zip archive ({exc})") from None
    if bad is not None:
        raise UserError(f"{path}: corrupt zip archive (entry {bad} fails its CRC check)")
    total = sum(i.file_size for i in infos)
    if total > MAX_UNCOMPRESSED_BYTES:
        raise UserError(f"{path}: {total:,} bytes uncompressed; allowed: at most {MAX_UNCOMPRESSED_BYTES:,} "
                        f"(extract it yourself and audit the folder)")
    with tempfile.TemporaryDirectory(prefix="hoodie-lab-audit-") as tmp:
        try:
            base = extract_fixture(Path(path), Path(tmp))
        except ValueError:  # no table, or several, inside
            raise UserError(f"{path}: expected exactly one table (a folder holding .hoodie) inside the zip") from None
        except (zipfile.BadZipFile, OSError, EOFError) as exc:
            raise UserError(f"{path}: cannot extract ({exc})") from None
        yield str(base)
