"""Setup across Python versions and the lock: which venv an interpreter gets, the one-line
refusals, the committed locks as pip constraints, and the lock's digest in run.json.

These run the real scripts (bash, make, pip) on throwaway venvs under tmp_path; none of them
installs a package or touches the repository's own venvs.
"""

from __future__ import annotations

import hashlib
import re
import shutil
import subprocess
import sys
import venv
from pathlib import Path

import pytest
from make_plans import make_dry_run

from drarena.runs import session

REPO = Path(__file__).resolve().parents[2]
PYENV = Path.home() / ".pyenv" / "versions"
REQUIREMENT = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]*==[A-Za-z0-9.!+_-]+$")


def pyenv_python(minor: str) -> Path | None:
    found = sorted(PYENV.glob(f"{minor}.*/bin/python{minor}"))
    return found[-1] if found else None


def make_dry(*args: str) -> str:
    """The commands `make setup` would run, without running them (-B: as if out of date)."""
    return make_dry_run("-B", "setup", *args)


def test_default_interpreter_keeps_dot_venv() -> None:
    out = make_dry()
    assert "VENV=.venv bash scripts/setup.sh" in out


@pytest.mark.parametrize("minor", ["3.12", "3.13"])
def test_another_interpreter_gets_its_own_venv(minor: str) -> None:
    python = pyenv_python(minor)
    if python is None:
        pytest.skip(f"no Python {minor} under {PYENV}")
    out = make_dry(f"PYTHON={python}")
    assert f"VENV=.venv-py{minor} bash scripts/setup.sh" in out
    # 3.11 named explicitly is still the default venv
    py311 = pyenv_python("3.11")
    if py311 is not None:
        assert "VENV=.venv bash" in make_dry(f"PYTHON={py311}")


def run_setup(tmp_path: Path, **env: str) -> subprocess.CompletedProcess[str]:
    full = {"PATH": "/usr/bin:/bin", "HOME": str(tmp_path), **env}
    return subprocess.run(
        ["bash", str(REPO / "scripts" / "setup.sh")],
        env=full,
        capture_output=True,
        text=True,
        timeout=120,
    )


def test_unsupported_python_is_refused_in_one_line(tmp_path: Path) -> None:
    python = pyenv_python("3.10")
    if python is None:
        pytest.skip(f"no Python 3.10 under {PYENV}")
    target = tmp_path / "venv-310"
    result = run_setup(tmp_path, PYTHON=str(python), VENV=str(target))
    assert result.returncode == 1
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and "3.11 to 3.13" in lines[0] and "is 3.10" in lines[0]
    assert not target.exists()


def test_venv_of_another_python_is_refused_not_replaced(tmp_path: Path) -> None:
    other = pyenv_python("3.12") if sys.version_info[:2] != (3, 12) else pyenv_python("3.11")
    if other is None:
        pytest.skip("no second Python under ~/.pyenv")
    target = tmp_path / "venv"
    venv.create(target, with_pip=False)  # this interpreter's venv, named for another Python
    marker = target / "keep.txt"
    marker.write_text("mine")
    result = run_setup(tmp_path, PYTHON=str(other), VENV=str(target))
    assert result.returncode == 1
    assert len(result.stderr.strip().splitlines()) == 1
    assert f"holds Python {sys.version_info[0]}.{sys.version_info[1]}" in result.stderr
    assert marker.read_text() == "mine"


def committed_locks() -> list[Path]:
    return sorted((REPO / "locks").glob("*.txt"))


def test_committed_locks_are_plain_exact_constraints() -> None:
    locks = committed_locks()
    assert any(p.name == "venv-py3.11.txt" for p in locks)
    for lock in locks:
        lines = [
            x for x in lock.read_text(encoding="utf-8").splitlines() if x and not x.startswith("#")
        ]
        assert lines, lock
        bad = [x for x in lines if not REQUIREMENT.match(x)]
        assert not bad, f"{lock.name}: not name==version: {bad[:3]}"
        names = [x.split("==")[0].lower() for x in lines]
        assert len(names) == len(set(names)), f"{lock.name}: a package twice"
        assert "pip" not in names
        torch = [x for x in lines if x.lower().startswith("torch==")]
        assert all("+" not in x for x in torch), f"{lock.name}: torch with a local label"


def test_lock_covers_what_drarena_pins() -> None:
    """Every exact pin of pyproject.toml is in the 3.11 lock at that version."""
    text = (REPO / "pyproject.toml").read_text(encoding="utf-8")
    pins = dict(re.findall(r'"([A-Za-z0-9_.-]+)==([^"; ]+)"', text))
    lock = {
        x.split("==")[0].lower(): x.split("==")[1]
        for x in (REPO / "locks" / "venv-py3.11.txt").read_text().splitlines()
        if x and not x.startswith("#")
    }
    assert pins
    for name, version in pins.items():
        assert lock.get(name.lower()) == version, name


def test_lock_script_writes_the_venv_and_records_its_digest(tmp_path: Path) -> None:
    if shutil.which("sha256sum") is None:
        pytest.skip("no sha256sum")
    target = tmp_path / "venv"
    # the base interpreter's pip, seen through system site-packages (ensurepip takes a minute)
    venv.create(target, with_pip=False, system_site_packages=True)
    if (
        subprocess.run(
            [target / "bin" / "python", "-m", "pip", "--version"], capture_output=True, timeout=60
        ).returncode
        != 0
    ):
        pytest.skip("the base interpreter has no pip")
    out_dir = tmp_path / "locks"
    result = subprocess.run(
        ["bash", str(REPO / "scripts" / "lock.sh"), str(target), "probe"],
        env={"PATH": "/usr/bin:/bin", "LOCK_DIR": str(out_dir)},
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert result.returncode == 0, result.stderr
    minor = f"{sys.version_info[0]}.{sys.version_info[1]}"
    lock = out_dir / f"probe-py{minor}.txt"
    body = lock.read_bytes()
    entries = [x for x in body.decode().splitlines() if not x.startswith("#")]
    assert all(REQUIREMENT.match(x) for x in entries)
    assert not any(x.startswith("pip==") for x in entries)
    record = (target / ".drarena-lock").read_text().split()
    assert record[0] == "sha256:" + hashlib.sha256(body).hexdigest()
    assert record[1] == str(lock)


def test_run_header_digest_comes_from_each_venv(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    main, server = tmp_path / "main", tmp_path / "server"
    (server / "bin").mkdir(parents=True)
    main.mkdir()
    digest = "sha256:" + "ab" * 32
    (main / ".drarena-lock").write_text(f"{digest} locks/venv-py3.11.txt\n")
    monkeypatch.setattr(sys, "prefix", str(main))
    monkeypatch.setenv("DRARENA_VLLM_PYTHON", str(server / "bin" / "python"))
    assert session.lock_digests() == {"drarena": digest, "vllm": "none"}
    (server / ".drarena-lock").write_bytes(b"\xff\xfe not a record")
    assert session.lock_digests()["vllm"] == "none"
    (server / ".drarena-lock").write_text("sha256:short locks/x.txt\n")
    assert session.lock_digests()["vllm"] == "none"
