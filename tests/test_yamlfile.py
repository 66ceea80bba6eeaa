"""drarena.yamlfile: the one reader of user-written YAML bounds what a file can cost."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from drarena.errors import DrarenaError
from drarena.yamlfile import MAX_YAML_BYTES, MAX_YAML_NODES, load_yaml_mapping


def test_many_small_values_are_refused_while_composing(tmp_path: Path) -> None:
    path = tmp_path / "c.yaml"
    path.write_text("x: [" + "1," * (MAX_YAML_NODES + 10) + "1]\n", encoding="utf-8")
    assert path.stat().st_size < MAX_YAML_BYTES
    with pytest.raises(DrarenaError) as info:
        load_yaml_mapping(path, "tournament config")
    message = str(info.value)
    assert message.startswith(f"{path}: too large a YAML document") and "\n" not in message


def test_a_long_list_under_the_bound_loads(tmp_path: Path) -> None:
    path = tmp_path / "s.yaml"
    n = MAX_YAML_NODES // 2
    path.write_text("seeds:\n" + "".join(f"- h{i}\n" for i in range(n)))
    assert len(load_yaml_mapping(path, "crawl spec")["seeds"]) == n


def test_a_file_over_the_byte_cap_is_refused_unread(tmp_path: Path) -> None:
    path = tmp_path / "big.yaml"
    path.write_bytes(b"x: 1\n" + b"#" * MAX_YAML_BYTES)
    with pytest.raises(DrarenaError, match=r"big.yaml: crawl spec is larger than 1 MiB"):
        load_yaml_mapping(path, "crawl spec")


def test_peak_memory_of_the_worst_file_under_the_cap_is_bounded(tmp_path: Path) -> None:
    """A 1 MiB flow list of one-digit values held about 357 MB of RSS in PyYAML's
    pure-Python loader before the composer was counted; it now stops at MAX_YAML_NODES
    (about 75 MB for the whole process here). Run in a child so the peak is this load's:
    VmHWM, the child's own high-water mark (ru_maxrss keeps a forking parent's, e.g. a
    pytest-xdist worker's, across exec)."""
    path = tmp_path / "flow.yaml"
    path.write_text("x: [" + "1," * (MAX_YAML_BYTES // 2 - 8) + "1]\n", encoding="utf-8")
    assert path.stat().st_size <= MAX_YAML_BYTES
    code = (
        "import sys\n"
        "from drarena.errors import DrarenaError\n"
        "from drarena.yamlfile import load_yaml_mapping\n"
        "try:\n"
        "    load_yaml_mapping(sys.argv[1], 'config')\n"
        "except DrarenaError as exc:\n"
        "    print(exc)\n"
        "status = open('/proc/self/status').read().split('VmHWM:')[1].split()\n"
        "print(int(status[0]) // 1024)\n"
    )
    out = subprocess.run(
        [sys.executable, "-c", code, str(path)], capture_output=True, text=True, check=True
    ).stdout.splitlines()
    assert "too large a YAML document" in out[0]
    assert int(out[1]) < 200, f"peak RSS {out[1]} MB"
