"""`ll-loop validate`: a loop YAML, the command, the report and the exit code."""

from __future__ import annotations

import json
import os
import textwrap
from pathlib import Path
from typing import Any

import jsonschema
import pytest

from tests.lint_cli_helpers import REPO, ll_loop

CLEAN = """\
name: fix-until-green
initial: check
scope: ["src/"]
states:
  check:
    action: make test
    on_yes: done
    on_no: fix
    on_error: failed
    max_retries: 3
    on_retry_exhausted: failed
  fix:
    action: make fix
    next: check
    on_error: failed
  done:
    terminal: true
  failed:
    terminal: true
    failure: true
"""

BROKEN = CLEAN.replace("next: check", "next: chekc")
WARNS = CLEAN.replace('scope: ["src/"]\n', "")


def write(tmp_path: Path, name: str, text: str) -> Path:
    path = tmp_path / name
    path.write_text(textwrap.dedent(text))
    return path


def test_a_clean_loop_exits_0(tmp_path: Path) -> None:
    write(tmp_path, "fix.yaml", CLEAN)
    result = ll_loop("validate", "fix.yaml", cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    assert result.stdout == ""
    assert "1 loop: no problems" in result.stderr


def test_errors_exit_1_with_file_line_col_code_and_hint(tmp_path: Path) -> None:
    write(tmp_path, "fix.yaml", BROKEN)
    result = ll_loop("validate", "fix.yaml", cwd=tmp_path)
    assert result.returncode == 1
    assert (
        "fix.yaml:14:5: error LL001 state 'fix' routes `next` to 'chekc', which does not exist "
        "(did you mean 'check'?)" in result.stdout
    )
    assert "    hint: name one of the states" in result.stdout
    assert "error" in result.stderr  # the summary line


def test_warnings_pass_unless_strict(tmp_path: Path) -> None:
    write(tmp_path, "fix.yaml", WARNS)
    relaxed = ll_loop("validate", "fix.yaml", cwd=tmp_path)
    assert relaxed.returncode == 0
    assert "warning scope Loop declares no 'scope:'" in relaxed.stdout
    assert ll_loop("validate", "--strict", "fix.yaml", cwd=tmp_path).returncode == 1


def test_no_such_loop_is_a_usage_error(tmp_path: Path) -> None:
    result = ll_loop("validate", "no-such-loop", cwd=tmp_path)
    assert result.returncode == 2
    assert "no loop named 'no-such-loop'" in result.stdout + result.stderr


def test_json_is_always_valid_json(tmp_path: Path) -> None:
    write(tmp_path, "good.yaml", CLEAN)
    write(tmp_path, "bad.yaml", BROKEN)
    write(tmp_path, "syntax.yaml", "name: x\ninitial: a\nstates: [\n")
    (tmp_path / "binary.yaml").write_bytes(b"\x00\x01junk")
    result = ll_loop(
        "validate",
        "--format",
        "json",
        "good.yaml",
        "bad.yaml",
        "syntax.yaml",
        "binary.yaml",
        "missing.yaml",
        cwd=tmp_path,
    )
    assert result.returncode == 2  # missing.yaml is a usage error, still reported in the JSON
    report = json.loads(result.stdout)
    by_path = {entry["path"]: entry for entry in report["loops"]}
    assert list(by_path) == ["good.yaml", "bad.yaml", "syntax.yaml", "binary.yaml", "missing.yaml"]
    assert by_path["good.yaml"] == {"path": "good.yaml", "valid": True, "diagnostics": []}
    assert by_path["bad.yaml"]["valid"] is False
    [diag] = [d for d in by_path["bad.yaml"]["diagnostics"] if d["code"] == "LL001"]
    assert {k: diag[k] for k in ("severity", "path", "line", "column")} == {
        "severity": "error",
        "path": "states.fix.next",
        "line": 14,
        "column": 5,
    }
    for name in ("syntax.yaml", "binary.yaml", "missing.yaml"):
        entry = by_path[name]
        assert entry["valid"] is False and entry["diagnostics"], name
        for d in entry["diagnostics"]:
            assert set(d) >= {"code", "severity", "message", "path", "line", "column"}


def test_github_annotations(tmp_path: Path) -> None:
    write(tmp_path, "fix.yaml", BROKEN)
    result = ll_loop("validate", "--format", "github", "fix.yaml", cwd=tmp_path)
    assert result.returncode == 1
    assert (
        "::error file=fix.yaml,line=14,col=5,title=LL001::state 'fix' routes `next` to 'chekc'"
        in result.stdout
    )
    assert all(line.startswith("::") for line in result.stdout.splitlines())


def test_github_annotations_of_a_loop_named_by_name_are_relative_to_the_checkout(
    tmp_path: Path,
) -> None:
    """A loop found by name is reported with its absolute path; GitHub attaches an annotation
    only to a path relative to the repository."""
    (tmp_path / ".loops").mkdir()
    write(tmp_path, ".loops/fix.yaml", BROKEN)
    result = ll_loop("validate", "--format", "github", "fix", cwd=tmp_path)
    assert result.returncode == 1
    assert "::error file=.loops/fix.yaml,line=14,col=5,title=LL001::" in result.stdout


# The official SARIF 2.1.0 schema is not shipped by any installed package and there is no network,
# so this checks the structure GitHub code scanning relies on, with the spec's required fields.
SARIF_SUBSET: dict[str, Any] = {
    "type": "object",
    "required": ["version", "runs"],
    "properties": {
        "version": {"const": "2.1.0"},
        "$schema": {"type": "string", "format": "uri"},
        "runs": {
            "type": "array",
            "minItems": 1,
            "items": {
                "type": "object",
                "required": ["tool", "results"],
                "properties": {
                    "tool": {
                        "type": "object",
                        "required": ["driver"],
                        "properties": {
                            "driver": {
                                "type": "object",
                                "required": ["name", "rules"],
                                "properties": {
                                    "name": {"type": "string"},
                                    "rules": {
                                        "type": "array",
                                        "items": {
                                            "type": "object",
                                            "required": ["id", "shortDescription", "help"],
                                            "properties": {
                                                "id": {"type": "string"},
                                                "shortDescription": {"$ref": "#/$defs/message"},
                                                "help": {"$ref": "#/$defs/message"},
                                                "defaultConfiguration": {
                                                    "type": "object",
                                                    "properties": {
                                                        "level": {"$ref": "#/$defs/level"}
                                                    },
                                                },
                                            },
                                        },
                                    },
                                },
                            }
                        },
                    },
                    "results": {
                        "type": "array",
                        "items": {
                            "type": "object",
                            "required": ["ruleId", "message", "locations", "level"],
                            "properties": {
                                "ruleId": {"type": "string"},
                                "ruleIndex": {"type": "integer", "minimum": 0},
                                "level": {"$ref": "#/$defs/level"},
                                "message": {"$ref": "#/$defs/message"},
                                "locations": {
                                    "type": "array",
                                    "items": {
                                        "type": "object",
                                        "required": ["physicalLocation"],
                                        "properties": {
                                            "physicalLocation": {
                                                "type": "object",
                                                "required": ["artifactLocation"],
                                                "properties": {
                                                    "artifactLocation": {
                                                        "type": "object",
                                                        "required": ["uri"],
                                                        "properties": {"uri": {"type": "string"}},
                                                    },
                                                    "region": {
                                                        "type": "object",
                                                        "required": ["startLine"],
                                                        "properties": {
                                                            "startLine": {
                                                                "type": "integer",
                                                                "minimum": 1,
                                                            },
                                                            "startColumn": {
                                                                "type": "integer",
                                                                "minimum": 1,
                                                            },
                                                        },
                                                    },
                                                },
                                            }
                                        },
                                    },
                                },
                            },
                        },
                    },
                },
            },
        },
    },
    "$defs": {
        "level": {"enum": ["none", "note", "warning", "error"]},
        "message": {
            "type": "object",
            "required": ["text"],
            "properties": {"text": {"type": "string", "minLength": 1}},
        },
    },
}


def test_sarif_report(tmp_path: Path) -> None:
    write(tmp_path, "fix.yaml", BROKEN)
    write(tmp_path, "syntax.yaml", "name: [\n")
    result = ll_loop("validate", "--format", "sarif", "fix.yaml", "syntax.yaml", cwd=tmp_path)
    assert result.returncode == 1
    log = json.loads(result.stdout)
    jsonschema.validate(log, SARIF_SUBSET)
    run = log["runs"][0]
    rules = run["tool"]["driver"]["rules"]
    for res in run["results"]:
        assert rules[res["ruleIndex"]]["id"] == res["ruleId"]
    [unknown] = [r for r in run["results"] if r["ruleId"] == "LL001"]
    assert unknown["level"] == "error"
    location = unknown["locations"][0]["physicalLocation"]
    assert location == {
        "artifactLocation": {"uri": "fix.yaml"},
        "region": {"startLine": 14, "startColumn": 5},
    }
    assert any(r["ruleId"].startswith("F") for r in run["results"])  # the YAML error is there too


LIBRARY = """\
description: gates shared by our loops
fragments:
  exit_gate:
    evaluate: {type: exit_code}
"""


def test_a_fragment_library_in_a_validated_directory_is_checked_as_a_library(
    tmp_path: Path,
) -> None:
    # `validate .loops/` (the CI recipe) meets the libraries the loops import: they are not
    # loops missing name/initial/states.
    folder = tmp_path / "loops"
    folder.mkdir()
    write(folder, "checks.yaml", LIBRARY)
    loop = CLEAN.replace('scope: ["src/"]', 'scope: ["src/"]\nimport: [checks.yaml]')
    write(
        folder,
        "fix.yaml",
        loop.replace("    action: make test\n", "    action: make test\n    fragment: exit_gate\n"),
    )
    result = ll_loop("validate", "--strict", "loops", cwd=tmp_path)
    assert result.returncode == 0, result.stdout
    assert "1 loop, 1 library: no problems" in result.stderr
    write(folder, "checks.yaml", LIBRARY.replace("description:", "fragmnts: {}\ndescription:"))
    result = ll_loop("validate", "loops/checks.yaml", cwd=tmp_path)
    assert result.returncode == 1
    assert result.stdout.startswith(
        "loops/checks.yaml:1:1: error F030 unknown key 'fragmnts' in fragment library"
    )


def test_the_projects_config_file_in_a_validated_directory_is_checked_as_config(
    tmp_path: Path,
) -> None:
    """docs/ci.md's recipe `validate .loops/` failed in every project that enables learning
    tests: `.loops/config.yaml` (scaffold-eval's settings, which docs/runs.md says to commit)
    was validated as a loop missing name, initial and states; `ll-loop list` listed it as a
    broken loop `config`, and `ll-loop run config` printed those schema errors."""
    folder = tmp_path / ".loops"
    folder.mkdir()
    write(folder, "fix.yaml", CLEAN)
    write(folder, "config.yaml", "learning_tests:\n  enabled: true\n")
    result = ll_loop("validate", "--strict", ".loops/", cwd=tmp_path)
    assert result.returncode == 0, result.stdout
    assert "1 loop, 1 config file: no problems" in result.stderr
    listed = ll_loop("list", "--json", cwd=tmp_path)
    assert "config" not in [entry["name"] for entry in json.loads(listed.stdout)]
    ran = ll_loop("run", "config", cwd=tmp_path)
    assert ran.returncode == 2
    assert "is the project's config file (.loops/config.yaml), not a loop" in ran.stderr
    ran = ll_loop("run", ".loops/config.yaml", cwd=tmp_path)  # a path says where it is
    assert ".loops/config.yaml is the project's config file, not a loop" in ran.stderr
    # it is checked as scaffold-eval reads it
    write(folder, "config.yaml", "learning_tests:\n  enabled: 'yes'\n")
    result = ll_loop("validate", ".loops/config.yaml", cwd=tmp_path)
    assert result.returncode == 1
    assert result.stdout.startswith(
        ".loops/config.yaml: error USAGE `learning_tests.enabled` must be true or false"
    )
    # a loop someone named config stays a loop
    write(folder, "config.yaml", CLEAN)
    result = ll_loop("validate", ".loops/config.yaml", cwd=tmp_path)
    assert result.returncode == 0 and "1 loop: no problems" in result.stderr, result.stdout


def test_a_misspelt_key_in_the_projects_config_file_is_reported(tmp_path: Path) -> None:
    """`validate` checks `.loops/config.yaml` as scaffold-eval reads it (019abfb), and
    scaffold-eval ignores a key it does not know: `learning_test: {enabled: true}` or
    `comand:` left learning tests off (or without their command) while validate said 'no
    problems'. Such a key is a warning (F012) with the key meant, at its line."""
    folder = tmp_path / ".loops"
    folder.mkdir()
    write(folder, "config.yaml", "# settings\nlearning_test:\n  enabled: true\n")
    result = ll_loop("validate", ".loops/", cwd=tmp_path)
    assert result.returncode == 0, result.stdout
    assert result.stdout.startswith(".loops/config.yaml:2:1: warning F012 "), result.stdout
    assert "'learning_test'" in result.stdout and "learning_tests" in result.stdout
    write(folder, "config.yaml", "learning_tests:\n  enabled: true\n  comand: pytest -q\n")
    result = ll_loop("validate", "--strict", ".loops/config.yaml", cwd=tmp_path)
    assert result.returncode == 1, result.stdout
    assert result.stdout.startswith(".loops/config.yaml:3:3: warning F012 "), result.stdout
    assert "'command'" in result.stdout
    write(folder, "config.yaml", "- learning_tests\n")
    result = ll_loop("validate", ".loops/config.yaml", cwd=tmp_path)
    assert "warning F004 " in result.stdout, result.stdout
    write(folder, "config.yaml", "learning_tests:\n  enabled: true\n  command: pytest -q\n")
    result = ll_loop("validate", "--strict", ".loops/config.yaml", cwd=tmp_path)
    assert result.returncode == 0 and "1 config file: no problems" in result.stderr, result


def test_json_diagnostics_name_the_file_their_line_is_in(tmp_path: Path) -> None:
    # The YAML error of an imported library is at the library's line 3, not the loop's.
    (tmp_path / "lib").mkdir()
    write(tmp_path, "lib/checks.yaml", "fragments:\n  gate:\n    evaluate: [\n")
    loop = CLEAN.replace('scope: ["src/"]', 'scope: ["src/"]\nimport: [lib/checks.yaml]')
    write(tmp_path, "fix.yaml", loop)
    result = ll_loop("validate", "--format", "json", "fix.yaml", cwd=tmp_path)
    assert result.returncode == 1
    [report] = json.loads(result.stdout)["loops"]
    assert report["path"] == "fix.yaml"
    places = {(d["code"], d["file"], d["line"]) for d in report["diagnostics"]}
    assert ("F001", "lib/checks.yaml", 4) in places
    assert ("F030", "fix.yaml", 4) in places


def test_sarif_uris_of_awkward_file_names_are_valid_uri_references(tmp_path: Path) -> None:
    # A space, `%`, `#` and a `:` in the first segment are not allowed raw in a relative URI
    # reference (`a#b` would even name file `a`); SARIF viewers resolve what is written.
    from urllib.parse import unquote

    name = "my loops/ü%41:b#1 ?.yaml"
    (tmp_path / "my loops").mkdir()
    write(tmp_path, name, BROKEN)
    result = ll_loop("validate", "--format", "sarif", name, cwd=tmp_path)
    assert result.returncode == 1
    uris = {
        loc["physicalLocation"]["artifactLocation"]["uri"]
        for res in json.loads(result.stdout)["runs"][0]["results"]
        for loc in res["locations"]
    }
    assert uris == {"my%20loops/%C3%BC%2541%3Ab%231%20%3F.yaml"}
    assert {unquote(uri) for uri in uris} == {name}


def test_sarif_uri_of_a_file_name_that_is_not_utf8_names_its_bytes(tmp_path: Path) -> None:
    """A file name with a byte that is not UTF-8 (a Latin-1 name on a Linux disk) made
    `validate --format sarif` an internal error: quoting the name for its URI could not encode
    the lone surrogate Python keeps the byte as. The URI percent-encodes the byte itself."""
    write(tmp_path, os.fsdecode(b"caf\xe9.yaml"), BROKEN)
    result = ll_loop("validate", "--format", "sarif", os.fsdecode(b"caf\xe9.yaml"), cwd=tmp_path)
    assert result.returncode == 1, result.stderr
    uris = {
        loc["physicalLocation"]["artifactLocation"]["uri"]
        for res in json.loads(result.stdout)["runs"][0]["results"]
        for loc in res["locations"]
    }
    assert uris == {"caf%E9.yaml"}


def test_a_newline_in_a_file_name_stays_inside_its_diagnostic_line(tmp_path: Path) -> None:
    """`file:line:col: severity CODE message` is one line an editor or a CI log reads as one
    finding: a file name holding a newline printed raw split it, and its second line could
    start with `::error ...`, a line GitHub Actions obeys as a workflow command. The name's
    newline is shown as `\\n`, as the github format already escapes it."""
    name = "x\n::error file=evil::pwned\n.yaml"
    write(tmp_path, name, BROKEN)
    result = ll_loop("validate", name, cwd=tmp_path)
    assert result.returncode == 1
    assert not any(line.startswith("::") for line in result.stdout.splitlines())
    first = result.stdout.splitlines()[0]
    assert first.startswith("x\\n::error file=evil::pwned\\n.yaml:"), first


@pytest.mark.parametrize("fmt", ["text", "json", "github", "sarif"])
def test_unknown_format_is_a_usage_error(tmp_path: Path, fmt: str) -> None:
    write(tmp_path, "fix.yaml", CLEAN)
    assert ll_loop("validate", "--format", fmt, "fix.yaml", cwd=tmp_path).returncode == 0
    assert ll_loop("validate", "--format", fmt + "x", "fix.yaml", cwd=tmp_path).returncode == 2


def test_sub_loop_references_are_checked_like_the_runtime_resolves_them(tmp_path: Path) -> None:
    write(
        tmp_path,
        "child.yaml",
        """\
        name: child
        initial: work
        scope: ["."]
        parameters:
          target: {type: string, required: true}
        states:
          work:
            action: echo ${context.target}
            next: done
            on_error: done
          done:
            terminal: true
        """,
    )
    parent = """\
        name: parent
        initial: call
        scope: ["."]
        states:
          call:
            loop: CHILD
            with: {WITH}
            on_yes: done
            on_no: done
            on_error: done
          done:
            terminal: true
        """
    write(tmp_path, "ok.yaml", parent.replace("CHILD", "child").replace("WITH", "target: x"))
    write(tmp_path, "typo.yaml", parent.replace("CHILD", "chlid").replace("WITH", "target: x"))
    write(tmp_path, "args.yaml", parent.replace("CHILD", "child.yaml").replace("WITH", "traget: x"))
    assert ll_loop("validate", "ok.yaml", cwd=tmp_path).returncode == 0
    typo = ll_loop("validate", "typo.yaml", cwd=tmp_path)
    assert typo.returncode == 1 and "LL040" in typo.stdout
    args = ll_loop("validate", "--format", "json", "args.yaml", cwd=tmp_path)
    codes = [d["code"] for d in json.loads(args.stdout)["loops"][0]["diagnostics"]]
    assert codes.count("LL041") == 2  # target missing, traget unknown


def test_a_directory_validates_every_loop_in_it(tmp_path: Path) -> None:
    write(tmp_path, "a.yaml", CLEAN)
    write(tmp_path, "b.yml", BROKEN)
    (tmp_path / "notes.txt").write_text("not a loop")
    result = ll_loop("validate", "--format", "json", ".", cwd=tmp_path)
    assert result.returncode == 1
    paths = [entry["path"] for entry in json.loads(result.stdout)["loops"]]
    assert [Path(p).name for p in paths] == ["a.yaml", "b.yml"]


def test_suppressions_in_yaml_and_infos_never_fail_strict(tmp_path: Path) -> None:
    noisy = CLEAN.replace(
        "  done:\n",
        "  debug:\n    action: ./debug.sh\n    next: done\n  done:\n",
    )
    write(tmp_path, "noisy.yaml", noisy)
    result = ll_loop("validate", "--strict", "noisy.yaml", cwd=tmp_path)
    assert result.returncode == 1 and "warning LL002" in result.stdout
    quiet = noisy.replace(
        "    next: done\n  done:",
        "    next: done\n    lint:\n      suppress:\n        - code: unreachable-state\n"
        "          reason: run by hand while debugging\n  done:",
    )
    write(tmp_path, "quiet.yaml", quiet)
    result = ll_loop("validate", "--strict", "quiet.yaml", cwd=tmp_path)
    assert "LL002" not in result.stdout
    assert "info LL008" not in result.stdout  # debug is unreachable, so not reported either
    assert result.returncode == 0, result.stdout
    info_only = CLEAN.replace("    next: check\n    on_error: failed\n", "    next: check\n")
    write(tmp_path, "info.yaml", info_only)
    result = ll_loop("validate", "--strict", "info.yaml", cwd=tmp_path)
    assert "info LL008" not in result.stdout and result.returncode == 0
    assert "1 info (--verbose shows the infos)" in result.stderr
    result = ll_loop("validate", "--strict", "--verbose", "info.yaml", cwd=tmp_path)
    assert "info LL008" in result.stdout and result.returncode == 0


def test_validate_imports_no_heavy_library(tmp_path: Path) -> None:
    """networkx, jsonschema and anthropic cost more than the whole validate budget to import;
    jinja2 is paid only when a loop has ${...} expressions to check, and the judges' package
    only when it has judges (LL076 imported it for every loop)."""
    import os
    import subprocess
    import sys

    from tests.lint_cli_helpers import REPO

    write(tmp_path, "fix.yaml", CLEAN)
    probe = (
        "import sys; from pathlib import Path; from engine.cli import app; "
        "from engine.cli.validate_cmd import check_file; check_file(Path('fix.yaml')); "
        "print(sorted(m for m in ('networkx', 'jsonschema', 'anthropic', 'jinja2', "
        "'engine.judges') "
        "if m in sys.modules))"
    )
    result = subprocess.run(
        [sys.executable, "-c", probe],
        cwd=tmp_path,
        env={**os.environ, "PYTHONPATH": str(REPO)},
        capture_output=True,
        text=True,
        check=True,
    )
    assert result.stdout.strip() == "[]"


def test_verbose_prints_no_cost_bound_for_a_suite(tmp_path: Path) -> None:
    # A suite is not a loop: `--verbose` used to load it as one for its cost bound.
    suite = REPO / "examples" / "suites" / "agent_eval" / "agent_eval.suite.yaml"
    result = ll_loop("validate", "--verbose", str(suite), cwd=tmp_path)
    assert result.returncode == 0, result.stdout
    assert "cost bound" not in result.stdout
    assert "1 suite: no problems" in result.stderr


def test_a_named_pipe_is_a_usage_error_not_a_hang(tmp_path: Path) -> None:
    # `ll-loop validate <(cat loop.yaml)` passes a pipe; nothing may wait for a writer.
    os.mkfifo(tmp_path / "pipe.yaml")
    result = ll_loop("validate", "pipe.yaml", cwd=tmp_path, process=True)  # can time out
    assert result.returncode == 2
    assert "pipe.yaml is a pipe (FIFO), not a regular file" in result.stdout


def test_a_directory_scan_skips_what_is_not_a_file(tmp_path: Path) -> None:
    # Emacs keeps a dangling link `.#NAME.yaml` beside a file being edited; a folder named like
    # a loop file is no loop either.
    folder = tmp_path / "loops"
    folder.mkdir()
    write(folder, "fix.yaml", CLEAN)
    (folder / ".#fix.yaml").symlink_to("someone@host.4242:1700000000")
    (folder / "old.yaml").mkdir()
    result = ll_loop("validate", "--strict", "loops", cwd=tmp_path)
    assert result.returncode == 0, result.stdout
    assert "1 loop: no problems" in result.stderr


@pytest.mark.parametrize(
    ("args", "why"),
    [
        (["--format", "json"], "Missing argument"),
        (["-f", "json", "--bogus", "fix.yaml"], "No such option: --bogus"),
        (["--format=json", "--strict=yes", "fix.yaml"], "--strict"),
    ],
)
def test_json_format_prints_its_report_for_a_command_line_that_does_not_parse(
    tmp_path: Path, args: list[str], why: str
) -> None:
    write(tmp_path, "fix.yaml", CLEAN)
    result = ll_loop("validate", *args, cwd=tmp_path)
    assert result.returncode == 2
    [report] = json.loads(result.stdout)["loops"]
    [usage] = report["diagnostics"]
    assert report["valid"] is False and usage["code"] == "USAGE" and why in usage["message"]


def test_a_directory_without_yaml_files_of_its_own_says_so(tmp_path: Path) -> None:
    """`validate examples/` (whose loops sit in sub-directories) said "no loop file at
    examples/", as for a path that does not exist."""
    (tmp_path / "suites" / "a").mkdir(parents=True)
    result = ll_loop("validate", "suites/", cwd=tmp_path)
    assert result.returncode == 2
    assert "suites/ holds no .yaml file (sub-directories are not searched)" in result.stdout
    assert "ll-loop validate suites/*/*.yaml" in result.stdout


def test_a_name_too_long_for_the_system_is_no_loop_file_not_a_crash(tmp_path: Path) -> None:
    """A path longer than a file name may be (ENAMETOOLONG) crashed `validate` as an internal
    error, and `--format json` printed nothing on stdout; `run`, `history` and `status` of such
    a name crashed too."""
    name = "a" * 300
    result = ll_loop("validate", "--format", "json", f"{name}.yaml", cwd=tmp_path)
    assert result.returncode == 2, result.stderr
    [report] = json.loads(result.stdout)["loops"]
    [usage] = report["diagnostics"]
    assert usage["code"] == "USAGE" and usage["message"].endswith(": File name too long")
    (tmp_path / ".loops" / "runs").mkdir(parents=True)  # a run id is looked up in it
    for args in (["run", name], ["status", name], ["history", f"2{name}"], ["resume", name]):
        ran = ll_loop(*args, cwd=tmp_path)
        assert "internal error" not in ran.stderr, (args, ran.stderr)


def test_json_format_prints_its_report_when_a_bug_ends_the_command(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """`validate --format json` always prints `{"loops": [...]}`: an internal error printed
    nothing on stdout (its report was left to the command, which never got to it). The command
    here is a stand-in that fails as a bug would; the guard is ll-loop's own."""
    import sys

    import typer

    from engine.cli.common import run_guarded

    app = typer.Typer()

    @app.callback()
    def main() -> None:
        """ll-loop (its commands are subcommands)."""

    @app.command()
    def validate(loops: list[str], format: str = "text") -> None:
        raise KeyError("boom")

    monkeypatch.setattr(sys, "argv", ["ll-loop", "validate", "--format", "json", "x.yaml"])
    assert run_guarded(app, "ll-loop") == 2
    out, err = capsys.readouterr()
    [report] = json.loads(out)["loops"]
    [crash] = report["diagnostics"]
    assert report["valid"] is False and crash["code"] == "INTERNAL"
    assert crash["message"] == "internal error: KeyError: 'boom'"
    assert "internal error: KeyError" in err


ERROR_TO_DONE = """\
name: triage
initial: check
scope: ["src/"]
states:
  check:
    action: make test
    evaluate: {type: exit_code}
    route: {no: fix, _: done}
  fix:
    action: make fix
    next: notify
    on_error: done
  notify:
    action: ./post-to-chat.sh
    next: done
    on_error: failed
  done:
    terminal: true
  failed:
    terminal: true
    failure: true
"""


def test_an_error_routed_to_a_success_terminal_is_a_warning(tmp_path: Path) -> None:
    """`on_error: done`, or a route table's `_` catching `error`, ended a crashed or timed-out
    action's run as a success (exit 0), and validate said nothing (DESIGN §9's pitfall)."""

    def ll018(text: str, *strict: str) -> tuple[int, list[dict[str, Any]]]:
        (tmp_path / "triage.yaml").write_text(text)
        done = ll_loop("validate", "--format", "json", *strict, "triage.yaml", cwd=tmp_path)
        found = json.loads(done.stdout)["loops"][0]["diagnostics"]
        return done.returncode, [d for d in found if d["code"] == "LL018"]

    code, found = ll018(ERROR_TO_DONE, "--strict")
    assert code == 1
    assert [(d["path"], d["severity"], d["line"]) for d in found] == [
        ("states.check.route._", "warning", 8),
        ("states.fix.on_error", "warning", 12),
    ]
    assert "success terminal" in found[0]["message"] and "exits 0" in found[0]["message"]
    assert "_error:" in found[0]["hint"] and "failure: true" in found[1]["hint"]
    explicit = ERROR_TO_DONE.replace("{no: fix, _: done}", "{no: fix, error: done, _: done}")
    assert [d["path"] for d in ll018(explicit)[1]] == [
        "states.check.route.error",
        "states.fix.on_error",
    ]
    fixed = ERROR_TO_DONE.replace("_: done}", "_error: failed, _: done}")
    assert ll018(fixed.replace("on_error: done", "on_error: failed"), "--strict") == (0, [])
    # a deliberate best-effort step says so, with a reason
    meant = fixed.replace(
        "    on_error: done\n",
        "    on_error: done\n    lint:\n      suppress:\n"
        "        - {code: LL018, reason: a failed fix is judged by the next check}\n",
    )
    assert ll018(meant, "--strict") == (0, [])
    # a recovery state, or a failure terminal, is no warning
    recovering = ERROR_TO_DONE.replace("_: done}", "_error: notify, _: done}")
    assert [d["path"] for d in ll018(recovering)[1]] == ["states.fix.on_error"]


def test_a_huge_loop_or_fragment_library_is_refused_not_read_whole(tmp_path: Path) -> None:
    """A loop file and a fragment library were read whole, whatever their size (a suite's and
    a dataset's files had a 10 MB limit): an 11 MB one is now refused in one sentence, before
    it is parsed, with the same hint for a library (F030) as for a loop (F000)."""
    padding = "#" * (11 * 1024 * 1024) + "\n"
    (tmp_path / "big.yaml").write_text(
        "name: big\ninitial: a\nstates:\n  a:\n    terminal: true\n" + padding
    )
    (tmp_path / "lib.yaml").write_text("fragments:\n  f:\n    action: echo hi\n" + padding)
    (tmp_path / "uses.yaml").write_text(
        "name: uses\nimport: [lib.yaml]\ninitial: a\n"
        "states:\n  a:\n    fragment: f\n    next: b\n  b:\n    terminal: true\n"
    )
    for name, code in (("big.yaml", "F000"), ("uses.yaml", "F030"), ("lib.yaml", "F030")):
        result = ll_loop("validate", name, cwd=tmp_path)
        said = result.stdout + result.stderr
        assert result.returncode == 1, said
        assert code in said and "too large to read (11.0 MB; the limit is 10.0 MB)" in said, said
        # F030 gave no hint where F000 said what to check
        too_large = [line for line in said.splitlines() if "too large to read" in line]
        after = said.splitlines()[said.splitlines().index(too_large[0]) + 1]
        assert after.strip() == (
            "hint: loop, suite and case files are a few KB: check that this is the file meant"
        ), said


INERT = """\
name: inert
initial: a
scope: ["."]
states:
  a:
    action: echo hi
    timeout: 5
    route: {"yes": done, "no": done, error: failed, _error: done}
  done:
    terminal: true
    timeout: 10
  failed:
    terminal: true
    failure: true
"""

RESERVED = """\
name: reserved
initial: a
scope: ["."]
states:
  a:
    action: echo terminal
    timeout: 5
    evaluate: {type: classify, verdicts: [terminal, retry_exhausted, max_steps, ok]}
    on_terminal: done
    on_retry_exhausted: done
    on_max_steps: done
    on_ok: done
    on_error: done
  done:
    terminal: true
"""


def test_dead_error_routes_and_terminal_timeouts_are_warned(tmp_path: Path) -> None:
    (tmp_path / "inert.yaml").write_text(INERT)
    found = json.loads(ll_loop("validate", "inert.yaml", "-f", "json", cwd=tmp_path).stdout)
    inert = [
        (d["line"], d["severity"], d["message"])
        for d in found["loops"][0]["diagnostics"]
        if d["code"] == "LL019"
    ]
    assert [(line, severity) for line, severity, _ in inert] == [(8, "warning"), (11, "warning")]
    assert "so `_error:` never applies" in inert[0][2]
    assert "terminal state 'done' sets `timeout`, which never applies" in inert[1][2]


def test_a_classify_verdict_named_like_a_setting_says_to_use_a_route_table(
    tmp_path: Path,
) -> None:
    (tmp_path / "reserved.yaml").write_text(RESERVED)
    ran = ll_loop("validate", "reserved.yaml", "-f", "json", cwd=tmp_path)
    found = json.loads(ran.stdout)["loops"][0]["diagnostics"]
    assert [(d["line"], d["code"]) for d in found] == [(9, "F017"), (10, "F017"), (11, "F017")]
    for d, verdict in zip(found, ["terminal", "retry_exhausted", "max_steps"], strict=True):
        assert f"{verdict!r} is a verdict of this state's classify evaluator" in d["message"]
        assert f"route: {{{verdict}: done}}" in d["hint"]
    fixed = RESERVED.replace("    on_terminal: done\n", "").replace("    on_ok: done\n", "")
    fixed = fixed.replace("    on_retry_exhausted: done\n    on_max_steps: done\n", "")
    fixed = fixed.replace(
        "    on_error: done\n",
        "    route: {terminal: done, retry_exhausted: done, max_steps: done, ok: done, "
        "_error: done}\n",
    )
    (tmp_path / "reserved.yaml").write_text(fixed)
    ran = ll_loop("run", "reserved.yaml", cwd=tmp_path)
    assert ran.code == 0, ran.stderr


def test_a_guarded_read_of_a_field_a_sub_loop_capture_never_has_is_a_warning(
    tmp_path: Path,
) -> None:
    """`${captured.c.output | default('')}` of a sub-loop state's capture (which has no
    `output`) is always its default: LL089 skips guarded reads, so it said nothing; LL097
    warns, at the read, and names the fields the capture has."""
    (tmp_path / ".loops").mkdir()
    (tmp_path / "child.yaml").write_text(
        "name: child\ninitial: w\nscope: ['.']\nstates:\n  w:\n    action: echo hi\n"
        "    next: done\n  done:\n    terminal: true\n"
    )
    parent = textwrap.dedent(
        """\
        name: p
        initial: kid
        scope: ["."]
        states:
          kid:
            loop: child
            capture: c
            on_yes: report
            on_no: report
            on_error: report
          report:
            action: echo "${captured.c.output | default('')}"
            next: done
          done:
            terminal: true
        """
    )
    (tmp_path / "p.yaml").write_text(parent)
    done = ll_loop("validate", "p.yaml", cwd=tmp_path)
    assert done.code == 0, done.stdout + done.stderr
    [line] = [x for x in done.stdout.splitlines() if " LL097 " in x]
    assert line.startswith("p.yaml:12:19: warning LL097 "), line
    assert "'c' is a sub-loop state's capture, which has no 'output'" in line
    assert "always its default" in line
    assert " LL089 " not in done.stdout
    # a guarded read of a field the capture has is fine
    (tmp_path / "p.yaml").write_text(parent.replace("c.output", "c.outputs.summary"))
    assert " LL097 " not in ll_loop("validate", "p.yaml", cwd=tmp_path).stdout
