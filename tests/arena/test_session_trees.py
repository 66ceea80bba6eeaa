"""Which trees a tournament loads from its snapshot (runs.session.load_trees)."""

from __future__ import annotations

from pathlib import Path

import pytest
from arena_fakes import make_tree

from drarena.config.tournament import parse_config
from drarena.corpus.trees import tree_to_json
from drarena.errors import DrarenaError
from drarena.runs.session import load_trees


def config(snapshot: Path) -> object:
    return parse_config(
        {
            "name": "t",
            "snapshot": str(snapshot),
            "models": {"roles": {"examiner": {"model": "openai/x"}}},
            "agents": [{"name": "a", "kind": "closed_book"}, {"name": "b", "kind": "null"}],
        },
        "c",
    )


@pytest.mark.parametrize(
    "text", ["[]", '{"trees": [{"file": "tree-000.json"}]}', "{", '{"trees": 3}']
)
def test_a_damaged_trees_index_is_one_line_naming_it(tmp_path: Path, text: str) -> None:
    (tmp_path / "trees").mkdir()
    (tmp_path / "trees" / "index.json").write_text(text, encoding="utf-8")
    with pytest.raises(DrarenaError, match=r"trees/index\.json: damaged .*snapshot trees") as err:
        load_trees(config(tmp_path))  # type: ignore[arg-type]
    assert "\n" not in str(err.value)


def test_a_trees_index_over_the_limit_is_one_line_naming_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """trees/index.json of a snapshot (maybe someone else's) was decoded whole, however
    large: one over MAX_TREES_INDEX_BYTES is one line naming it and the command that rewrites
    it; a missing one keeps its own message."""
    import drarena.corpus.trees as trees

    with pytest.raises(DrarenaError, match=r"trees: no trees; run `drarena snapshot trees"):
        load_trees(config(tmp_path))  # type: ignore[arg-type]
    (tmp_path / "trees").mkdir()
    (tmp_path / "trees" / "index.json").write_text(
        '{"trees": [], "padding": "' + "x" * 100 + '"}', encoding="utf-8"
    )
    monkeypatch.setattr(trees, "MAX_TREES_INDEX_BYTES", 64)
    with pytest.raises(
        DrarenaError, match=r"trees/index\.json: larger than 64 bytes .*snapshot trees"
    ) as err:
        load_trees(config(tmp_path))  # type: ignore[arg-type]
    assert "\n" not in str(err.value)


def test_trees_ids_load_those_trees_whatever_the_count(tmp_path: Path) -> None:
    """`trees.ids` names the trees played: a snapshot holding fewer trees than the default
    `count` (3) still runs them (the paper's imported trees, played one at a time, were
    refused: "trees.count is 3 but ... has 1 trees")."""
    tree, _ = make_tree()
    (tmp_path / "trees").mkdir()
    (tmp_path / "trees" / "t1.json").write_text(tree_to_json(tree), encoding="utf-8")
    (tmp_path / "trees" / "index.json").write_text(
        '{"trees": [{"id": "t1", "file": "t1.json"}]}', encoding="utf-8"
    )
    base = config(tmp_path)
    with pytest.raises(DrarenaError, match=r"trees\.count is 3 but .* has 1 trees"):
        load_trees(base)  # type: ignore[arg-type]
    chosen = base.model_copy(  # type: ignore[attr-defined]
        update={"trees": base.trees.model_copy(update={"ids": ("t1",)})}  # type: ignore[attr-defined]
    )
    assert list(load_trees(chosen)) == ["t1"]
