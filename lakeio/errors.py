"""User-facing errors: the CLI prints them as one line and exits with ``exit_code``."""

from __future__ import annotations

import os
import stat as _stat


class UserError(Exception):
    """Bad input (a file, an argument). The message names the file or argument and the problem."""

    exit_code = 2

    def __init__(self, message: str, exit_code: int = 2):
        super().__init__(message)
        self.exit_code = exit_code


_KINDS = ((_stat.S_ISFIFO, "a FIFO"), (_stat.S_ISCHR, "a character device"), (_stat.S_ISBLK, "a block device"),
          (_stat.S_ISSOCK, "a socket"), (_stat.S_ISDIR, "a directory"))


def file_kind(mode: int) -> str:
    """What a non-regular file is, for a message: "a FIFO", "a directory", ..."""
    return next((what for test, what in _KINDS if test(mode)), "not a regular file")


def check_regular_file(path: str | os.PathLike, st: os.stat_result | None = None, *,
                       missing: str | None = None, directory: str | None = None) -> os.stat_result:
    """``stat`` ``path`` (following symlinks) and refuse anything but a regular file, without opening
    it: a FIFO or device would block a reader forever. A symlink loop, a dangling symlink or an
    unreadable folder on the way is :class:`UserError` too. ``missing`` / ``directory``: the message
    after ``"{path}: "`` for a missing file / a directory (default: the generic ones)."""
    if st is None:
        try:
            st = os.stat(path)
        except FileNotFoundError as exc:
            raise UserError(f"{path}: {missing or f'unreadable ({exc.strerror or exc})'}") from None
        except OSError as exc:
            raise UserError(f"{path}: unreadable ({exc.strerror or exc})") from None
    if directory is not None and _stat.S_ISDIR(st.st_mode):
        raise UserError(f"{path}: {directory}")
    if not _stat.S_ISREG(st.st_mode):
        raise UserError(f"{path}: {file_kind(st.st_mode)}, not a regular file; refusing to read it")
    return st
