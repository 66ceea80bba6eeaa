"""`drarena snapshot import-trees` on tree files in the reference's format (written by
hand: tests/corpus/reference_trees.py): every node a page of the snapshot, the reference's
structure and relations kept, repeats of a page kept as their own nodes, bad input refused in
one line, and a folder drarena did not make left alone."""

from __future__ import annotations

import json
import random
from pathlib import Path

import pytest
from reference_trees import SITE, reference_tree, write_reference_trees

from drarena.cli import main
from drarena.corpus.extract import load_docs
from drarena.corpus.papertrees import import_trees
from drarena.corpus.trees import TreeParams, build_snapshot_trees, load_tree
from drarena.corpus.treewalk import open_walker
from drarena.digests import file_sha256
from drarena.errors import DrarenaError
from drarena.web.warc.manifest import load_manifest
from drarena.web.warc.snapshot import Snapshot


@pytest.fixture(scope="module")
def imported(tmp_path_factory: pytest.TempPathFactory) -> Path:
    tmp = tmp_path_factory.mktemp("imp")
    repo = write_reference_trees(tmp / "DR-Arena")
    out = tmp / "snap"
    assert main(["snapshot", "import-trees", str(repo), "paper", "--out", str(out)]) == 0
    return out


def test_every_node_is_a_text_only_page_marked_in_the_manifest(imported: Path) -> None:
    manifest = load_manifest(imported)
    assert manifest.spec["kind"] == "paper-trees"
    assert manifest.spec["media_type"] == "application/vnd.drarena.text-page+json"
    assert "no HTML" in manifest.spec["pages"]
    # 3 trees x (root + 3 children + 9 grandchildren + 1 failed leaf); the repeat is one page
    assert manifest.spec["text_only_pages"] == 3 * 14
    assert manifest.spec["failed_in_reference"] == 3
    source = imported.parent / "DR-Arena" / "web_tree" / "data" / "dataset" / "trees"
    assert [t["sha256"] for t in manifest.spec["trees"]] == [
        file_sha256(source / f"tree_{i:04d}.json") for i in (1, 2, 3)
    ]
    with Snapshot.open(imported) as snap:
        assert snap.verify().ok
        page = snap.lookup(f"{SITE}/rivers/c1")
        assert page is not None and page.content_type.startswith("application/vnd.drarena")
    docs = {d.url: d for d in load_docs(imported)}
    # the text is the reference's `content`, verbatim
    ref = reference_tree("rivers")
    assert docs[f"{SITE}/rivers"].contents == ref["content"]
    assert docs[f"{SITE}/rivers"].extractor == "text"
    assert docs[f"{SITE}/rivers/c2/missing"].near_empty


def test_the_trees_keep_the_references_structure_and_relations(imported: Path) -> None:
    tree = load_tree(imported / "trees" / "tree_0001.json")
    assert tree.id == "tree_0001" and len(tree.nodes) == 15  # the repeat is a node too
    by_url: dict[str, list[str]] = {}
    for n in tree.nodes:
        by_url.setdefault(n.url, []).append(n.id)
    repeated = by_url[f"{SITE}/rivers/c1/g1"]
    assert len(repeated) == 2
    first, again = (tree.node(i) for i in repeated)
    assert first.doc is None and again.doc == first.id and again.doc_id == first.id
    assert again.digest == first.digest
    assert tree.node(again.parent or "").url == f"{SITE}/rivers/c3"
    assert [n.depth for n in tree.nodes][:4] == [0, 1, 1, 1]
    edge = tree.edge_to(by_url[f"{SITE}/rivers/c1"][0])
    assert edge is not None
    assert (edge.anchor, edge.context, edge.relation) == (
        "See Page rivers/c1",
        "Around the link to Page rivers/c1",
        "rel Page rivers/c1",
    )
    assert tree.meta["source"]["file"] == "tree_0001.json"
    assert tree.meta["reference_summary"]["topic"] == "Topic rivers"
    # a tournament's tree build leaves imported trees as they are
    before = (imported / "trees" / "tree_0001.json").read_bytes()
    result = build_snapshot_trees(imported, TreeParams(count=10), progress=False, at_least=1)
    assert result.up_to_date and len(result.files) == 3
    assert (imported / "trees" / "tree_0001.json").read_bytes() == before


def test_a_walker_reads_a_repeated_node_through_its_page(imported: Path) -> None:
    walker = open_walker(imported / "trees" / "tree_0001.json", imported, random.Random(1), 21)
    tree = walker.tree
    again = next(n for n in tree.nodes if n.doc)
    page = walker.page(again.id)
    assert page.url == again.url and page.text.startswith("The rivers/c1/g1 record")
    path = walker.path_to(again.id)
    assert len(walker.targets(path, 2)) == 2


def test_the_import_is_reproducible(imported: Path, tmp_path: Path) -> None:
    repo = write_reference_trees(tmp_path / "again")
    result = import_trees(repo, "paper", tmp_path / "snap")
    assert result.fingerprint == load_manifest(imported).fingerprint
    assert (tmp_path / "snap" / "trees" / "tree_0002.json").read_bytes() == (
        imported / "trees" / "tree_0002.json"
    ).read_bytes()
    # again into the same folder: an earlier import is replaced
    again = import_trees(repo, "paper", tmp_path / "snap")
    assert again.fingerprint == result.fingerprint


@pytest.mark.parametrize(
    ("edit", "message"),
    [
        (
            lambda t: t["children"][1].update(url=7),
            r"tree_0001\.json: field root\.children\[1\]\.url: must be a string$",
        ),
        (
            lambda t: t["children"][0]["children"][2].update(depth=5),
            r"tree_0001\.json: field root\.children\[0\]\.children\[2\]\.depth: "
            r"is 5, where its place in the tree is 2$",
        ),
        (
            lambda t: t.update(children={}),
            r"tree_0001\.json: field root\.children: must be a list$",
        ),
        (
            lambda t: t["link_contexts"][0].update(url="mailto:x@y"),
            r"tree_0001\.json: field root\.link_contexts\[0\]\.url: not an http\(s\) URL",
        ),
        (
            lambda t: t.update(content=["x"]),
            r"tree_0001\.json: field root\.content: must be a string or null$",
        ),
    ],
)
def test_a_bad_tree_file_is_one_line_naming_file_and_field(
    tmp_path: Path, edit: object, message: str
) -> None:
    repo = write_reference_trees(tmp_path / "repo", ("rivers",))
    path = repo / "web_tree" / "data" / "dataset" / "trees" / "tree_0001.json"
    data = json.loads(path.read_text())
    edit(data)  # type: ignore[operator]
    path.write_text(json.dumps(data))
    with pytest.raises(DrarenaError, match=message) as caught:
        import_trees(repo, "paper", tmp_path / "out")
    assert "\n" not in str(caught.value)
    assert not (tmp_path / "out").exists()  # nothing written on a bad input


def test_bounded_reading(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import drarena.corpus.papertrees as papertrees

    repo = write_reference_trees(tmp_path / "repo", ("rivers",))
    monkeypatch.setattr(papertrees, "MAX_TREE_FILE_BYTES", 1000)
    with pytest.raises(DrarenaError, match=r"tree_0001\.json.*1000"):
        import_trees(repo, "paper", tmp_path / "out")
    monkeypatch.setattr(papertrees, "MAX_TREE_FILE_BYTES", 1 << 20)
    monkeypatch.setattr(papertrees, "MAX_PAGE_BYTES", 2000)
    with pytest.raises(
        DrarenaError, match=r"tree_0001\.json: field root[^:]*\.content: \d+ characters"
    ):
        import_trees(repo, "paper", tmp_path / "out")
    monkeypatch.setattr(papertrees, "MAX_PAGE_BYTES", 1 << 22)
    monkeypatch.setattr(papertrees, "MAX_NODES", 5)
    with pytest.raises(DrarenaError, match=r"more than 5 nodes"):
        import_trees(repo, "paper", tmp_path / "out")
    deep = tmp_path / "deep" / "tree_0001.json"
    deep.parent.mkdir()
    deep.write_text('{"children": [' * 50_000 + "]}" * 50_000)
    with pytest.raises(DrarenaError, match=r"tree_0001\.json: JSON nested too deep"):
        import_trees(deep.parent, "paper", tmp_path / "out")


def test_a_folder_drarena_did_not_make_is_left_alone(tmp_path: Path) -> None:
    repo = write_reference_trees(tmp_path / "repo", ("rivers",))
    out = tmp_path / "mine"
    out.mkdir()
    (out / "manifest.json").write_text("my own file")
    with pytest.raises(DrarenaError, match=r"mine: folder is not empty and not made by"):
        import_trees(repo, "paper", out)
    assert (out / "manifest.json").read_text() == "my own file"
    with pytest.raises(DrarenaError, match=r"no tree_NNNN\.json here"):
        import_trees(tmp_path, "paper", tmp_path / "out2")
