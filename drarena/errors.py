"""User-facing errors: one clear line that names the file or field and what is wrong."""

from __future__ import annotations


class DrarenaError(Exception):
    """An error the CLI prints as one line (no traceback) and exits with status 2; `detail`,
    when given, is printed after that line (a failed server's last log lines), its lines
    kept and what a terminal would act on escaped."""

    def __init__(self, *args: object, detail: str = "") -> None:
        super().__init__(*args)
        self.detail = detail


def one_line(exc: BaseException, limit: int = 200) -> str:
    """Why something was refused, on one bounded line, to go inside a DrarenaError. Why: the
    CLI prints a DrarenaError as one line, and pydantic's ValidationError text spans several
    (a line per field, then a URL): its errors are given as `field: message`, joined by "; "."""
    errors = getattr(exc, "errors", None)
    if type(exc).__name__ == "ValidationError" and callable(errors):
        text = "; ".join(
            f"{'.'.join(str(p) for p in e['loc']) or 'record'}: {e['msg']}" for e in errors()
        )
    else:
        text = str(exc)
    text = " ".join(text.split())
    return text if len(text) <= limit else text[: limit - 3] + "..."
