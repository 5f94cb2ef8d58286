"""User-facing errors: the CLI prints them as one line and exits with ``exit_code``."""

from __future__ import annotations


class UserError(Exception):
    """Bad input (a file, an argument). The message names the file or argument and the problem."""

    exit_code = 2

    def __init__(self, message: str, exit_code: int = 2):
        super().__init__(message)
        self.exit_code = exit_code
