"""The grouped command line: new names, old names as deprecated aliases, a one-screen help."""

from __future__ import annotations

import asyncio
import logging
from pathlib import Path

import pytest

from drarena import cli

# old flat command line -> the grouped one (same arguments after the name)
OLD_TO_NEW = [  # (`snapshot SPEC` keeps its own old parser: tested by behaviour below)
    (["verify", "snapshots/x"], ["snapshot", "verify", "snapshots/x"]),
    (
        ["replay-snapshot", "snapshots/x", "--port", "0"],
        ["snapshot", "serve", "snapshots/x", "--port", "0"],
    ),
    (["extract", "snapshots/x", "--force"], ["snapshot", "extract", "snapshots/x", "--force"]),
    (
        ["trees", "snapshots/x", "--count", "3"],
        ["snapshot", "trees", "snapshots/x", "--count", "3"],
    ),
    (["index", "snapshots/x"], ["search", "index", "snapshots/x"]),
    (
        ["search", "snapshots/x", "what is it", "-k", "3"],
        ["search", "query", "snapshots/x", "what is it", "-k", "3"],
    ),
    (["serve-search", "snapshots/x"], ["search", "serve", "snapshots/x"]),
    (["diagnose-retrievers", "snapshots/x"], ["search", "diagnose", "snapshots/x"]),
    (["serve"], ["model", "serve"]),
    (["rank", "runs/x"], ["run", "rank", "runs/x"]),
    (["replay", "runs/x"], ["run", "replay", "runs/x"]),
    (
        ["add-agent", "runs/x", "--name", "n", "--kind", "rag"],
        ["run", "add-agent", "runs/x", "--name", "n", "--kind", "rag"],
    ),
    (
        ["match", "snapshots/x", "--a", "rag", "--b", "closed_book", "--tree", "t01"],
        ["run", "match", "snapshots/x", "--a", "rag", "--b", "closed_book", "--tree", "t01"],
    ),
    (
        ["drift", "snapshots/x", "--against", "snapshots/y"],
        ["drift", "snapshot", "snapshots/x", "--against", "snapshots/y"],
    ),
    (["drift-run", "runs/x"], ["drift", "run", "runs/x"]),
    (
        ["ask", "snapshots/x", "q", "--agent", "rag"],
        ["agent", "ask", "snapshots/x", "q", "--agent", "rag"],
    ),
]


def parse(argv: list[str]) -> dict[str, object]:
    args = vars(cli.build_parser().parse_args(cli._legacy_argv(argv)))
    args.pop("deprecated", None)
    args.pop("command", None)
    args.pop("subcommand", None)
    return args


def test_help_fits_one_screen(capsys) -> None:
    with pytest.raises(SystemExit):
        cli.main(["--help"])
    out = capsys.readouterr().out
    assert len(out.splitlines()) <= 30
    for group in ("tournament", "snapshot", "search", "run", "drift", "agent", "model"):
        assert f"\n    {group}" in out
    for old in (
        "replay-snapshot",
        "drift-run",
        "serve-search",
        "diagnose-retrievers",
        "verify",
        "extract",
    ):  # aliases stay out of the main help
        assert f"\n    {old}" not in out


@pytest.mark.parametrize(("old", "new"), OLD_TO_NEW, ids=[o[0] for o, _ in OLD_TO_NEW])
def test_old_name_parses_as_new_name(old: list[str], new: list[str], capsys) -> None:
    assert parse(old) == parse(new)
    assert parse(new)["func"] is parse(old)["func"]


@pytest.mark.parametrize(
    ("old", "new"),
    [
        (["verify", "/nonexistent/snap"], ["snapshot", "verify", "/nonexistent/snap"]),
        (["rank", "/nonexistent/run"], ["run", "rank", "/nonexistent/run"]),
        (
            ["trees", "show", "/nonexistent/t01.json"],
            ["snapshot", "trees", "show", "/nonexistent/t01.json"],
        ),
        (["snapshot", "/nonexistent/spec.yaml"], ["snapshot", "crawl", "/nonexistent/spec.yaml"]),
        (["search", "/nonexistent/snap", "q"], ["search", "query", "/nonexistent/snap", "q"]),
    ],
)
def test_old_name_warns_once_and_behaves_the_same(old, new, capsys) -> None:
    code_new = cli.main(new)
    new_out = capsys.readouterr()
    code_old = cli.main(old)
    old_out = capsys.readouterr()
    assert code_old == code_new != 0
    assert old_out.out == new_out.out
    notice, *rest = old_out.err.splitlines()
    assert notice.startswith(f"drarena: '{old[0]}") and "is deprecated; use 'drarena " in notice
    assert " ".join(new[:2]) in notice
    assert rest == new_out.err.splitlines() and "deprecated" not in new_out.err


def test_deprecation_line_names_the_new_command(capsys) -> None:
    cli.main(["replay-snapshot", "/nonexistent/snap"])
    assert capsys.readouterr().err.splitlines()[0] == (
        "drarena: 'replay-snapshot' is deprecated; use 'drarena snapshot serve'"
    )


def test_old_snapshot_spec_form_keeps_its_checks(tmp_path: Path, capsys) -> None:
    code = cli.main(["snapshot", str(tmp_path / "spec.yaml"), "--host", "x"])
    err = capsys.readouterr().err
    assert code == 2 and "only apply to `snapshot import`" in err
    assert err.startswith(
        f"drarena: 'snapshot {tmp_path / 'spec.yaml'}' is deprecated; use "
        f"'drarena snapshot crawl {tmp_path / 'spec.yaml'}'"
    )


def test_snapshot_crawl_and_import_parse_distinctly(capsys) -> None:
    crawl = cli.build_parser().parse_args(["snapshot", "crawl", "spec.yaml"])
    imp = cli.build_parser().parse_args(["snapshot", "import", "mysite", "a.warc", "b.warc"])
    assert crawl.spec == Path("spec.yaml") and crawl.func.__name__ == "cmd_crawl"
    assert imp.args == ["mysite", "a.warc", "b.warc"] and imp.func.__name__ == "cmd_import"
    # options of one are unknown to the other
    with pytest.raises(SystemExit):
        cli.main(["snapshot", "crawl", "spec.yaml", "--host", "example.org"])
    with pytest.raises(SystemExit):
        cli.main(["snapshot", "import", "mysite", "a.warc", "--resume"])
    assert cli.main(["snapshot", "export", "snapshots/x"]) == 2  # --wacz is required
    assert "expected SNAPSHOT --wacz" in capsys.readouterr().err
    assert "deprecated" not in capsys.readouterr().err


def test_import_takes_archives_on_both_sides_of_options(tmp_path: Path, capsys) -> None:
    # parse only: both archives land in the list (the command itself is tested in tests/web)
    parser = cli.build_parser()
    args, extra = parser.parse_known_args(
        ["snapshot", "import", "mysite", "--host", "h", "a.warc", "b.warc"]
    )
    assert [*args.args, *extra] == ["mysite", "a.warc", "b.warc"] and args.host == ["h"]


def test_tournament_config_is_unchanged() -> None:
    args = cli.build_parser().parse_args(["tournament", "configs/demo.yaml", "--no-serve"])
    assert args.config == Path("configs/demo.yaml") and args.no_serve
    assert args.func.__name__ == "cmd_tournament" and getattr(args, "deprecated", None) is None


def test_litellm_logging_is_silent_unless_verbose(capsys) -> None:
    cli.main(["snapshot", "verify", "/nonexistent/snap"])
    assert logging.getLogger("LiteLLM").disabled
    try:
        cli.main(["--verbose", "snapshot", "verify", "/nonexistent/snap"])
        assert not logging.getLogger("LiteLLM").disabled
    finally:
        root = logging.getLogger()
        for handler in root.handlers[:]:
            if type(handler) is logging.StreamHandler:
                root.removeHandler(handler)
        root.setLevel(logging.WARNING)


def test_a_degenerate_structured_reply_logs_one_bounded_line(caplog) -> None:
    """Regression: a failed Examiner reply went to the terminal whole (pages of JSON)."""
    from drarena.models.client import ModelClient
    from drarena.models.config import ModelsConfig
    from drarena.models.scripted import ScriptedBackendForTests, reply
    from drarena.models.structured import StructuredOutputError, complete_json

    schema = {
        "type": "object",
        "properties": {"checklist": {"type": "array"}},
        "required": ["checklist"],
        "additionalProperties": False,
    }
    junk = '{"checklist": [' + '"x", ' * 5000
    cfg = ModelsConfig.model_validate(
        {"roles": {"examiner": {"model": "openai/m", "api_base": "http://127.0.0.1:5/v1"}}}
    )
    client = ModelClient(cfg, backend=ScriptedBackendForTests([reply(junk), reply(junk)]))
    ask = [{"role": "user", "content": "A checklist as JSON"}]
    with (
        caplog.at_level(logging.ERROR, logger="drarena.models"),
        pytest.raises(StructuredOutputError) as info,
    ):
        asyncio.run(complete_json(client, "examiner", ask, schema, max_repairs=1))
    assert info.value.raw_text == junk  # the full text stays with the error
    lines = [r.getMessage() for r in caplog.records if r.levelno >= logging.ERROR]
    assert len(lines) == 1 and len(lines[0]) < 400 and f"({len(junk)} chars)" in lines[0]
