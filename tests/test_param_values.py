"""A parameter's value as a user or a state passes it: a refusal is one short sentence, whatever
the value holds."""

from __future__ import annotations

from pathlib import Path

from tests.lint_cli_helpers import ll_loop

LOOP = """\
name: par
initial: a
scope: ["x"]
parameters:
  xs: {type: array}
states:
  a: {action: "true", next: done}
  done: {terminal: true}
"""


def test_json_nested_past_the_recursion_limit_is_refused_in_one_short_sentence(
    tmp_path: Path,
) -> None:
    """`--context xs=[[[...]]]` (50,000 deep) ended `ll-loop run` as an internal error
    (json's RecursionError); a refused value was also echoed whole, 100 KB in one sentence."""
    (tmp_path / ".loops").mkdir()
    (tmp_path / "par.yaml").write_text(LOOP)
    deep = "[" * 50_000 + "]" * 50_000
    done = ll_loop("run", "par.yaml", "--context", f"xs={deep}", cwd=tmp_path)
    assert done.code == 2, done
    assert "internal error" not in done.stderr
    assert "parameter 'xs' of loop 'par' must be an array, got '[[[[" in done.stderr.replace(
        '"', "'"
    )
    assert len(done.stderr) < 600


def test_a_list_or_mapping_that_is_no_json_is_told_how_to_write_it(tmp_path: Path) -> None:
    """`--context xs=a,b` for an array said "pass a value of the declared type (--context
    xs=...)": nothing says a list on the command line is written as JSON."""
    (tmp_path / ".loops").mkdir()
    (tmp_path / "par.yaml").write_text(
        LOOP.replace(
            "  xs: {type: array}",
            "  xs: {type: array}\n  opts: {type: object}\n  on: {type: boolean}",
        )
    )
    for given, hint in [
        ("xs=a,b", """hint: write it as JSON: --context xs='["a", "b"]'"""),
        ("opts=k=v", """hint: write it as JSON: --context opts='{"name": "value"}'"""),
        ("on=yes", "hint: write --context on=true or --context on=false"),
    ]:
        done = ll_loop("run", "par.yaml", "--context", given, cwd=tmp_path)
        assert done.code == 2, done
        assert hint in done.stderr, done.stderr
    done = ll_loop("run", "par.yaml", "--context", """xs=["a", "b"]""", cwd=tmp_path)
    assert done.code == 0, done
