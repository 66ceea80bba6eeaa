"""User-facing errors: one clear line that names the file or field and what is wrong."""

from __future__ import annotations


class DrarenaError(Exception):
    """An error the CLI prints as one line (no traceback) and exits with status 2."""
