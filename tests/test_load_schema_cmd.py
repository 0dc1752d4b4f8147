"""`ll-loop schema` prints the shipped schema; an unknown or missing schema is a usage error."""

from __future__ import annotations

import json
from pathlib import Path

from engine.load.schema_check import load_schema
from tests.cli import Ran, ll_loop


def run(*args: str) -> Ran:
    return ll_loop(Path.cwd(), *args)


def test_schema_prints_the_loop_schema_as_json_on_stdout() -> None:
    result = run("schema")
    assert result.returncode == 0, result.stderr
    assert json.loads(result.stdout) == load_schema()


def test_schema_by_name() -> None:
    result = run("schema", "--name", "loop")
    assert result.returncode == 0
    assert json.loads(result.stdout)["title"] == "ll-loop loop file"


def test_unknown_schema_name_is_a_usage_error() -> None:
    result = run("schema", "--name", "nope")
    assert result.returncode == 2
    assert result.stdout == ""
    assert "no schema named 'nope'" in result.stderr
    assert "harness-task" in result.stderr


def test_schema_out_below_a_plain_file_is_a_usage_error(tmp_path: Path) -> None:
    """`--out afile/x.json` was an internal error: removing the temporary file that could not
    be made raised NotADirectoryError over the sentence."""
    (tmp_path / "afile").write_text("kept\n")
    result = ll_loop(tmp_path, "schema", "--out", "afile/x.json")
    assert result.returncode == 2
    assert "internal error" not in result.stderr
    assert "cannot write afile/x.json: Not a directory" in result.stderr
    assert (tmp_path / "afile").read_text() == "kept\n"


def test_every_shipped_schema_is_printed_by_name() -> None:
    shipped = sorted(p.name for p in (Path(__file__).parent.parent / "schemas").glob("*.json"))
    for file in shipped:
        name = file.removesuffix(".schema.json")
        result = run("schema", "--name", name)
        assert result.returncode == 0, (name, result.stderr)
        assert json.loads(result.stdout) == json.loads(
            (Path(__file__).parent.parent / "schemas" / file).read_text(encoding="utf-8")
        )
    assert "suite.schema.json" in shipped
    help_text = run("schema", "--help").stdout
    assert "suite" in help_text
