"""`ll-loop show`: the loop's graph as a table, Mermaid, dot and networkx node-link JSON, with
retry edges and terminal outcomes marked."""

from __future__ import annotations

import json
import os
from pathlib import Path

import networkx as nx
from networkx.readwrite import json_graph

from engine.graph.loop_graph import compile_graph
from engine.graph.show import render
from engine.load.loader import load_loop_text
from tests.lint_cli_helpers import ll_loop

HARNESS = """\
name: eval-harness
initial: discover
scope: [".loops/"]
states:
  discover:
    action: ./next-item.sh
    on_yes: execute
    on_no: done
    on_error: failed
  execute:
    action: ./run-item.sh
    next: check
    on_error: failed
  check:
    action: ./grade-item.sh
    on_yes: discover
    on_no: execute
    on_error: failed
    max_retries: 2
    on_retry_exhausted: failed
  done:
    terminal: true
  failed:
    terminal: true
    failure: true
"""


def test_text_marks_retry_edges_and_terminal_outcomes() -> None:
    text = render(load_loop_text(HARNESS), "text")
    assert "eval-harness: initial discover, max_steps 50" in text
    assert "→ discover" in text  # the initial state is marked
    assert "    no → execute  ↺ retry" in text  # check → execute closes the cycle
    assert "    on_yes" not in text
    assert "    yes → execute\n" in text  # discover → execute is a first entry, not a retry
    assert "  done      terminal ✓ success" in text
    assert "  failed    terminal ✗ failure" in text
    assert "    error → failed (failure)" in text


def test_an_unknown_target_is_shown_quoted_on_its_own_line() -> None:
    """A target may be any text: a newline in it must not start a line of its own."""
    loop = load_loop_text(HARNESS.replace("next: check", 'next: "chek\\nfake: line"'))
    text = render(loop, "text")
    assert "    next → 'chek\\nfake: line' (unknown state)" in text
    assert "\nfake: line" not in text


def test_mermaid_and_dot() -> None:
    loop = load_loop_text(HARNESS)
    mermaid = render(loop, "mermaid")
    assert mermaid.startswith("stateDiagram-v2\n")
    assert "[*] --> s0" in mermaid
    assert "s2 --> s1: no ↺ retry" in mermaid
    assert "class s4 failure" in mermaid and "class s3 success" in mermaid
    dot = render(loop, "dot")
    assert '"check" -> "execute" [label="no ↺ retry", style=dashed];' in dot
    assert '"failed" [shape=doublecircle, color=red, label="failed\\n(failure)"];' in dot
    assert dot.startswith('digraph "eval-harness" {') and dot.endswith("}")


def test_a_state_named_like_the_start_point_stays_a_state_in_dot() -> None:
    """State names may start with `_`: a state `__start__` was drawn as the start point, its
    own edges merged with the arrow into `initial`."""
    loop = load_loop_text(
        """
        name: s
        initial: go
        scope: ["."]
        states:
          go: {action: "false", on_yes: done, on_no: __start__}
          __start__: {action: "true", next: go}
          done: {terminal: true}
        """
    )
    dot = render(loop, "dot").splitlines()
    assert '  "__start__";' in dot and '  "start point" -> "go";' in dot
    assert not [line for line in dot if line.startswith('  "__start__" [shape=point')]


def test_a_states_description_is_shown_in_text_and_json() -> None:
    """format.md says a state's `description` is `for people and ll-loop show`; show printed
    only the loop's."""
    loop = load_loop_text(
        """
        name: d
        initial: go
        scope: ["."]
        states:
          go: {description: "run the tests", action: "true", next: done}
          done: {terminal: true}
        """
    )
    text = render(loop, "text").splitlines()
    assert text[text.index("→ go    shell") + 1] == "          # run the tests"
    nodes = json.loads(render(loop, "json"))["graph"]["nodes"]
    assert [n["description"] for n in nodes] == ["run the tests", ""]


def test_json_is_networkx_node_link_data_plus_metadata() -> None:
    loop = load_loop_text(HARNESS)
    data = json.loads(render(loop, "json"))
    assert data["initial"] == "discover" and data["scope"] == [".loops/"]
    assert data["retry_edges"] == [["check", "discover"], ["check", "execute"]]
    graph = json_graph.node_link_graph(data["graph"], edges="edges")
    expected = compile_graph(loop).to_networkx()
    assert nx.utils.edges_equal(graph.edges(keys=True), expected.edges(keys=True))
    assert graph.nodes["failed"]["outcome"] == "failure"
    assert {(u, v) for u, v, retry in graph.edges(data="retry") if retry} == {
        ("check", "discover"),
        ("check", "execute"),
    }


def test_show_command(tmp_path: Path) -> None:
    (tmp_path / "harness.yaml").write_text(HARNESS)
    result = ll_loop("show", "harness.yaml", cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    assert "↺ retry" in result.stdout
    as_json = ll_loop("show", "harness.yaml", "--format", "json", cwd=tmp_path)
    assert json.loads(as_json.stdout)["name"] == "eval-harness"
    missing = ll_loop("show", "nope.yaml", cwd=tmp_path)
    assert missing.returncode == 2 and "no loop file at nope.yaml" in missing.stderr
    (tmp_path / "bad.yaml").write_text("name: x\nstates: {}\n")
    bad = ll_loop("show", "bad.yaml", cwd=tmp_path)
    assert bad.returncode == 2
    assert "bad.yaml:" in bad.stderr and "Traceback" not in bad.stderr


SPIN = """\
name: spin
initial: poll
scope: ["."]
max_steps: 7
on_max_steps: cleanup
states:
  poll:
    action: "false"
    on_yes: done
    on_no: nap
  nap:
    action: "true"
    next: poll
  cleanup:
    action: echo cleaning
    next: done
  done:
    terminal: true
"""


def test_the_on_max_steps_state_is_drawn_entered_from_the_spent_budget(tmp_path: Path) -> None:
    """No route names the on_max_steps state; every format still shows how a run gets there
    (and that it runs once), not only the text header."""
    (tmp_path / "spin.yaml").write_text(SPIN)
    text = ll_loop("show", "spin.yaml", cwd=tmp_path, process=True).stdout
    block = text[text.index("  cleanup  shell") :]
    assert block.splitlines()[2] == (
        "    ← max_steps 7 spent (in any state): runs once, then the run ends"
    )
    mermaid = ll_loop("show", "spin.yaml", "-f", "mermaid", cwd=tmp_path, process=True).stdout
    assert '    state "max_steps 7 spent" as budget' in mermaid
    assert "    budget --> s2: runs once, then the run ends" in mermaid
    assert "    class budget spent" in mermaid
    dot = ll_loop("show", "spin.yaml", "-f", "dot", cwd=tmp_path, process=True).stdout
    assert '"max_steps spent" [shape=plaintext, label="max_steps 7 spent"];' in dot
    assert (
        '"max_steps spent" -> "cleanup" [label="runs once, then the run ends", style=dotted];'
    ) in dot
    (tmp_path / "ends.yaml").write_text(SPIN.replace("on_max_steps: cleanup", "on_max_steps: done"))
    ends = ll_loop("show", "ends.yaml", cwd=tmp_path).stdout
    assert "    ← max_steps 7 spent (in any state): the run ends here, inconclusive" in ends
    (tmp_path / "harness.yaml").write_text(HARNESS)  # no on_max_steps: nothing drawn
    plain = ll_loop("show", "harness.yaml", "-f", "dot", cwd=tmp_path)
    assert "max_steps spent" not in plain.stdout


def test_show_and_simulate_asked_for_json_print_an_error_object_for_a_loop_that_does_not_load(
    tmp_path: Path,
) -> None:
    """`show --format json` and `simulate --json` printed the load diagnostics on stderr and
    nothing on stdout, where every other refusal of a command asked for JSON prints its
    `{"error", "hint", "code", "exit_code"}` object: a script reading stdout got nothing."""
    (tmp_path / "bad.yaml").write_text("name: bad\ninitial: a\nmax_steps: 0\nstates: {}\n")
    for args in (("show", "bad.yaml", "--format", "json"), ("simulate", "bad.yaml", "--json")):
        done = ll_loop(*args, cwd=tmp_path)
        assert done.returncode == 2
        error = json.loads(done.stdout)
        assert (error["code"], error["exit_code"]) == ("LOAD", 2)
        assert error["error"].startswith("bad.yaml:3:12: max_steps must be at least 1")
        assert "bad.yaml:3:12: error F015 max_steps must be at least 1" in done.stderr


def test_a_fifo_where_a_loop_file_belongs_is_said_to_be_one(tmp_path: Path) -> None:
    """`run NAME` where .loops/NAME.yaml is a named pipe said "no loop named 'NAME' ... (did
    you mean 'NAME'?)", and its path "no loop file at" it: both now say what it is."""
    (tmp_path / ".git").mkdir()  # the project root: its .loops/ is the one looked in
    (tmp_path / ".loops").mkdir()
    os.mkfifo(tmp_path / ".loops" / "pipe.yaml")
    said = "error: .loops/pipe.yaml is a pipe (FIFO), not a regular file"
    hints = {  # looked up by name: it stands in .loops/; given as a path: pass a file instead
        "pipe": "  hint: a loop is a regular .yaml file: replace it with one, or remove it",
        ".loops/pipe.yaml": "  hint: save the loop to a file and pass its path",
    }
    for command in ("run", "show", "simulate"):
        for ref, hint in hints.items():
            done = ll_loop(command, ref, cwd=tmp_path)
            assert (done.returncode, done.stderr.splitlines()) == (2, [said, hint]), (command, ref)
    typo = ll_loop("run", "pip", cwd=tmp_path)  # a pipe is no loop name to suggest
    assert "did you mean" not in typo.stderr, typo.stderr


def test_a_directory_or_a_dangling_link_named_as_a_loop_is_said_to_be_one(tmp_path: Path) -> None:
    """`run evals.yaml` where evals.yaml is a directory, or a link that leads nowhere (or in a
    circle), said "no loop file at evals.yaml": the user looked for a missing file."""
    (tmp_path / "evals.yaml").mkdir()
    (tmp_path / "a.yaml").symlink_to("b.yaml")
    (tmp_path / "b.yaml").symlink_to("a.yaml")
    (tmp_path / "gone.yaml").symlink_to("nowhere.yaml")
    for command in ("run", "show", "simulate"):
        folder = ll_loop(command, "evals.yaml", cwd=tmp_path)
        assert folder.returncode == 2
        assert folder.stderr.splitlines() == [
            "error: evals.yaml is a directory, not a loop file",
            "  hint: name a loop file in it, e.g. evals.yaml/NAME.yaml",
        ]
        for link in ("a.yaml", "gone.yaml"):
            dangling = ll_loop(command, link, cwd=tmp_path)
            assert dangling.returncode == 2
            assert dangling.stderr.startswith(
                f"error: {link} is a symbolic link that leads nowhere (its target does not "
                "exist, or links lead in a circle)\n"
            ), dangling.stderr


def test_a_pipe_or_a_device_named_as_a_loop_is_said_to_be_one(tmp_path: Path) -> None:
    """`run <(cat loop.yaml)` (a pipe: /dev/fd/63), a FIFO or /dev/null named as a loop said
    "no loop file at PATH", hint "pass an existing .yaml path", of a path that exists."""
    os.mkfifo(tmp_path / "fifo.yaml")
    for command in ("run", "show", "simulate", "validate"):
        fifo = ll_loop(command, "fifo.yaml", cwd=tmp_path)
        said = fifo.stdout + fifo.stderr  # validate reports on stdout
        assert fifo.returncode == 2
        assert "fifo.yaml is a pipe (FIFO), not a regular file" in said, said
        assert "save the loop to a file and pass its path" in said
        device = ll_loop(command, "/dev/null", cwd=tmp_path)
        said = device.stdout + device.stderr
        assert device.returncode == 2
        assert "/dev/null is a device, not a regular file" in said, said


def test_an_empty_loop_argument_is_refused_not_read_as_the_working_directory(
    tmp_path: Path,
) -> None:
    """`ll-loop run "$LOOP"` with LOOP unset said " is a directory, not a loop file" (the empty
    path is `.`), and `ll-loop validate ""` validated every loop file of the working directory
    and passed, as an empty `ll-harness cmd ""` once measured nothing and passed."""
    (tmp_path / "fine.yaml").write_text(
        "name: fine\ninitial: a\nstates:\n  a:\n    terminal: true\n"
    )
    for command in ("run", "show", "simulate", "validate"):
        done = ll_loop(command, "", cwd=tmp_path)
        said = done.stdout + done.stderr
        assert done.returncode == 2, said
        assert "the loop argument is empty" in said, said
