"""An inline `check:` runs in a process of its own: a snippet stuck in C code (where no Python
exception reaches it, and the GIL is never let go) or asking for all the memory costs its judge
an error, not the suite; Ctrl-C and SIGTERM still stop the run."""

from __future__ import annotations

import signal
import subprocess
import time
from pathlib import Path

import pytest

from tests.cli import BIN, ll_harness
from tests.test_suite_findings import errors_of, project, recorded, run_json, write

STUCK_IN_C = """\
name: stuck
cases: [{id: a, input: {}}, {id: b, input: {}}]
subject: {command: "echo aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaab"}
judges:
  - name: backtracks
    check: |
      import re
      return re.match(r"(a|aa)+$", outputs["stdout"].strip()) is not None
    timeout: 1
  - name: sums
    check: return sum(range(10**13)) > 0
    timeout: 1
  - name: greedy
    check: return len("x" * (64 << 30)) > 0
  - name: talks
    check: |
      print("a check's print is not the report")
      return True
"""


def test_a_check_stuck_in_c_or_out_of_memory_is_its_judges_error(tmp_path: Path) -> None:
    write(project(tmp_path) / "s.suite.yaml", STUCK_IN_C)
    started = time.monotonic()
    code, data, err = run_json(tmp_path, "s.suite.yaml")  # stdout parses: no print in it
    assert time.monotonic() - started < 30, "a stuck check held the suite"
    assert code == 0, err
    for name, line in (("backtracks", 5), ("sums", 10)):
        assert (
            errors_of(data, name)
            == [
                f"judge '{name}' at s.suite.yaml:{line}: the check did not finish within its time "
                "limit of 1 s (set the judge's timeout: to change it)"
            ]
            * 2
        )
    assert all("raised MemoryError" in e for e in errors_of(data, "greedy"))
    assert [r["passed"] for r in data["results"] if r["judge"] == "talks"] == [True, True]


SPINNING_IN_C = """\
name: spinning
cases: [{id: a, input: {}}, {id: b, input: {}}]
subject: {command: "echo hi"}
judges:
  - name: sums
    check: return sum(range(10**14)) > 0
    timeout: 600
"""


def test_sigterm_stops_a_suite_whose_check_is_stuck_in_c(tmp_path: Path) -> None:
    """Before, the check ran in ll-harness's own process holding the GIL: SIGTERM, Ctrl-C
    and the check's own time limit all waited for `sum` to end (hours)."""
    write(project(tmp_path) / "s.suite.yaml", SPINNING_IN_C)
    _stop_with_sigterm_while_stuck(tmp_path)


def _stop_with_sigterm_while_stuck(tmp_path: Path) -> None:
    """Start the suite of `tmp_path`, SIGTERM it once both cases are stuck in their judge, and
    see it stop within seconds, recording nothing and leaving no check process behind."""
    process = subprocess.Popen(
        [str(BIN / "ll-harness"), "suite", "s.suite.yaml", "--jobs", "2"],
        cwd=tmp_path,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    deadline = time.monotonic() + 60
    while not list((tmp_path / ".loops" / "suites").glob("*/lock")):  # the run has begun
        assert time.monotonic() < deadline and process.poll() is None
        time.sleep(0.1)
    time.sleep(1.5)  # both cases are in their judge
    started = time.monotonic()
    process.send_signal(signal.SIGTERM)
    try:
        _, err = process.communicate(timeout=30)
    except subprocess.TimeoutExpired:
        process.kill()
        process.communicate()
        raise AssertionError("SIGTERM did not stop the suite: the judge held it") from None
    assert time.monotonic() - started < 15
    assert process.returncode == 3, err
    assert "stopped by SIGTERM after 0 of 2 cases" in err and "--resume" in err
    assert recorded(tmp_path) == []
    assert _checks_running_in(tmp_path) == []  # none left burning a core


def _checks_running_in(folder: Path) -> list[int]:
    """Pids of check processes working in `folder` (their cwd is the suite's)."""
    found = []
    for entry in Path("/proc").iterdir():
        try:
            command = (entry / "cmdline").read_bytes()
            where = (entry / "cwd").resolve()
        except OSError:
            continue
        if b"check_child.py" in command and where == folder.resolve():
            found.append(int(entry.name))
    return found


def test_a_check_reading_stdin_or_printing_does_not_break_the_next_check() -> None:
    """The requests come on the process's stdin and the answers go on its stdout: a snippet
    reading stdin (it gets nothing) or printing must not take or spoil either."""
    from engine.judges import run_judge
    from engine.model.judges import Judge

    reads = Judge(name="reads", kind="check", check="import sys\nreturn sys.stdin.read() == ''")
    prints = Judge(name="prints", kind="check", check="print('{}' * 1000)\nreturn True")
    for _ in range(3):
        assert run_judge(reads, {"stdout": ""}).passed is True
        assert run_judge(prints, {"stdout": ""}).passed is True


def test_a_check_left_running_by_a_killed_parent_ends_on_its_own(tmp_path: Path) -> None:
    """ll-loop killed with SIGKILL while a check is stuck in C: nothing could tell the check's
    process, which would have burnt a core for hours; it ends shortly after its time limit."""
    script = (
        "from engine.judges import run_judge\n"
        "from engine.model.judges import Judge\n"
        "run_judge(Judge(name='s', kind='check', check='return sum(range(10**14)) > 0',"
        " timeout=1.0), {'stdout': ''})\n"
    )
    _orphan_ends_on_its_own(tmp_path, script)


def _orphan_ends_on_its_own(tmp_path: Path, script: str, settle: float = 0.0) -> None:
    """Run `script` (a Python process that runs checks, the last stuck in C) in `tmp_path`,
    SIGKILL it once its check process is there (and `settle` seconds more), and see the
    orphaned check process end on its own within 20 s (killed here if it does not)."""
    import os
    import sys

    from tests.harness_helpers import REPO

    parent = subprocess.Popen(
        [sys.executable, "-c", script], cwd=tmp_path, env={**os.environ, "PYTHONPATH": str(REPO)}
    )
    deadline = time.monotonic() + 30
    while not _checks_running_in(tmp_path):
        assert time.monotonic() < deadline and parent.poll() is None
        time.sleep(0.05)
    time.sleep(settle)
    parent.kill()
    parent.wait()
    assert _checks_running_in(tmp_path)  # orphaned, stuck in `sum`
    deadline = time.monotonic() + 20
    while left := _checks_running_in(tmp_path):
        if time.monotonic() > deadline:
            for pid in left:
                os.kill(pid, signal.SIGKILL)
            raise AssertionError("the orphaned check kept running")
        time.sleep(0.2)


def test_a_memory_limit_set_between_checks_holds_and_one_that_is_no_size_is_said(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A check's process is pooled: one started before a program set LL_CHECK_MEMORY_BYTES
    answered the next check under its old limit (and a setting that is no size went unsaid):
    this test had to empty the pool first to pass, and a program's new limit did not hold."""
    from engine.judges import run_judge
    from engine.model.judges import Judge

    monkeypatch.delenv("LL_CHECK_MEMORY_BYTES", raising=False)
    greedy = Judge(name="c", kind="check", check="return len('x' * (128 << 20)) > 0")
    assert run_judge(greedy, {"stdout": ""}).passed is True  # its process now idles
    monkeypatch.setenv("LL_CHECK_MEMORY_BYTES", "lots")
    result = run_judge(Judge(name="c", kind="check", check="return True"), {"stdout": ""})
    assert result.status == "error"
    assert "LL_CHECK_MEMORY_BYTES='lots' is not a size in bytes" in str(result.error)
    assert run_judge(greedy, {"stdout": ""}).status == "error"  # not answered by the idle one
    monkeypatch.setenv("LL_CHECK_MEMORY_BYTES", "64M")
    small = run_judge(greedy, {"stdout": ""})
    assert small.status == "error" and "raised MemoryError" in str(small.error)


MODULE_STUCK_IN_C = """\
name: spinning
cases: [{id: a, input: {}}, {id: b, input: {}}]
subject: {command: "echo hi"}
judges:
  - name: sums
    module: evals_stuck.spin
    function: sums
"""


def test_sigterm_stops_a_suite_whose_module_function_is_stuck_in_c(tmp_path: Path) -> None:
    """A module function ran in ll-harness's own process, under a watchdog that raises at the
    next Python line: stuck in `sum` it held the GIL, so SIGTERM, Ctrl-C and its time limit
    (300 s by default) all waited for it. It runs where checks do now, in a process of its own."""
    write(project(tmp_path) / "s.suite.yaml", MODULE_STUCK_IN_C)
    write(tmp_path / "evals_stuck" / "__init__.py", "")
    write(
        tmp_path / "evals_stuck" / "spin.py",
        "def sums(outputs):\n    return sum(range(10**14)) > 0\n",
    )
    _stop_with_sigterm_while_stuck(tmp_path)


MODULE_FUNCTIONS = """\
name: functions
cases: [{id: a, input: {}}]
subject: {command: "echo hi"}
judges:
  - {name: sums, module: evals_fn.fns, function: sums, timeout: 1}
  - {name: quits, module: evals_fn.fns, function: quits}
  - {name: interrupts, module: evals_fn.fns, function: interrupts}
  - {name: raises, module: evals_fn.fns, function: raises}
  - {name: talks, module: evals_fn.fns, function: talks}
  - {name: scores, module: evals_fn.fns, function: scores, arguments: {bonus: 0.5}}
  - {name: missing, module: evals_fn.fns, function: nowhere}
  - {name: broken, module: evals_fn.broken, function: f}
  - {name: objects, module: evals_fn.fns, function: objects}
"""

FUNCTIONS = '''\
import sys


class Score(float):
    """A project's own number: the parent cannot import this module to read it back."""


def sums(outputs):
    return sum(range(10**14)) > 0


def quits(outputs):
    sys.exit(5)


def interrupts(outputs):
    raise KeyboardInterrupt


def raises(outputs):
    raise ValueError("no status line")


def talks(outputs):
    print("a function's print is not the report")
    return True, "talked"


def scores(outputs, bonus):
    return Score(0.25 + bonus), "scored"


def objects(outputs):
    return Score
'''


def test_a_module_function_runs_as_a_check_does_and_fails_as_it_did(tmp_path: Path) -> None:
    """Stuck in C (`sum`), the function held the GIL in ll-harness's process, where its time
    limit could not reach it: the suite waited for it (hours). What it printed went into
    `--output json`. Its other failures read as they did: named for the function, the module
    or the import."""
    write(project(tmp_path) / "s.suite.yaml", MODULE_FUNCTIONS)
    write(tmp_path / "evals_fn" / "__init__.py", "")
    write(tmp_path / "evals_fn" / "fns.py", FUNCTIONS)
    write(tmp_path / "evals_fn" / "broken.py", "raise RuntimeError('no config')\n")
    started = time.monotonic()
    done = ll_harness(
        tmp_path, "suite", "s.suite.yaml", "--output", "json", process=True, timeout=60
    )
    assert time.monotonic() - started < 30, "a stuck function held the suite"
    assert done.code == 0, done.stderr
    data = done.json  # parses: no print in it
    where = "s.suite.yaml"
    assert errors_of(data, "sums") == [
        f"judge 'sums' at {where}:5: evals_fn.fns.sums did not finish within its time limit of "
        "1 s (set the judge's timeout: to change it)"
    ]
    assert errors_of(data, "quits") == [
        f"judge 'quits' at {where}:6: the function called sys.exit(5); a judge cannot end the run"
    ]
    assert errors_of(data, "interrupts") == [
        f"judge 'interrupts' at {where}:7: the function raised KeyboardInterrupt; a judge cannot "
        "stop the run"
    ]
    assert errors_of(data, "raises") == [
        f"judge 'raises' at {where}:8: raised ValueError: no status line"
    ]
    assert errors_of(data, "missing") == [
        f"judge 'missing' at {where}:11: module 'evals_fn.fns' has no function 'nowhere'"
    ]
    assert errors_of(data, "broken") == [
        f"judge 'broken' at {where}:12: cannot import module 'evals_fn.broken' from "
        f"{tmp_path.resolve()}: RuntimeError: no config"
    ]
    assert errors_of(data, "objects") == [
        f"judge 'objects' at {where}:13: the function returned a value that cannot be sent back: "
        "ModuleNotFoundError: No module named 'evals_fn'"
    ]
    passed = {r["judge"]: (r["value"], r["rationale"]) for r in data["results"] if r["passed"]}
    assert passed == {"talks": (True, "talked"), "scores": (0.75, "scored")}
    assert "a function's print is not the report" in done.stderr


CTRL_C_IN_A_FUNCTION = """\
import os, signal, sys, threading, time
from engine.judges import JudgeEnv, run_judge
from engine.model.judges import Judge

signal.signal(signal.SIGINT, signal.default_int_handler)  # as at a terminal
judge = Judge(name="sums", kind="callable", module="evals_int.fns", function="sums")
threading.Timer(1.0, os.kill, (os.getpid(), signal.SIGINT)).start()
started = time.monotonic()
try:
    run_judge(judge, {"stdout": ""}, JudgeEnv(project_root=sys.argv[1]))
except KeyboardInterrupt:
    print(f"interrupted after {time.monotonic() - started:.0f} s")
"""


def test_a_real_ctrl_c_stops_a_module_function_stuck_in_c(tmp_path: Path) -> None:
    """The function ran in the main thread holding the GIL, so Python's SIGINT handler never
    ran: Ctrl-C waited for `sum`. Now the Ctrl-C reaches ll-loop, which ends the function's
    process. In a child, so that without that the test fails instead of hanging."""
    import os
    import sys

    from tests.harness_helpers import REPO

    write(tmp_path / "evals_int" / "__init__.py", "")
    write(tmp_path / "evals_int" / "fns.py", "def sums(outputs):\n    return sum(range(10**14))\n")
    try:
        ran = subprocess.run(
            [sys.executable, "-c", CTRL_C_IN_A_FUNCTION, str(tmp_path)],
            cwd=tmp_path,
            env={**os.environ, "PYTHONPATH": str(REPO)},
            capture_output=True,
            text=True,
            timeout=30,
        )
    except subprocess.TimeoutExpired:
        raise AssertionError("Ctrl-C did not stop the function") from None
    assert ran.returncode == 0, ran.stderr
    assert ran.stdout.strip() in ("interrupted after 1 s", "interrupted after 2 s")
    assert _checks_running_in(tmp_path) == []


def test_a_large_output_crosses_to_the_check_and_back_in_linear_time() -> None:
    """The record and the answer are read from a pipe 64 KiB at a time; each read copied all
    that had come (`bytes +=`), so a 64 MiB stdout took ~20 s to reach the check (outside its
    time limit) and as long again to come back in a rationale (past its limit of 5 s)."""
    from engine.judges import run_judge
    from engine.model.judges import Judge

    big = {"stdout": "y" * (64 << 20)}
    echoes = Judge(
        name="echoes", kind="check", check="return (True, outputs['stdout'])", timeout=5.0
    )
    started = time.monotonic()
    result = run_judge(echoes, big)
    assert result.status == "ok", result.error
    assert time.monotonic() - started < 8


FORKS = """\
import os
from engine.judges import run_judge
from engine.model.judges import Judge
mine = Judge(name="a", kind="check", check="return outputs['who'] == 'parent'")
run_judge(mine, {"who": "parent"})  # a check's process now idles in the pool
pid = os.fork()
who = "child" if pid == 0 else "parent"
wrong = sum(run_judge(mine, {"who": who}).passed != (who == "parent") for _ in range(300))
print(who, wrong, flush=True)
if pid:
    os.waitpid(pid, 0)
    print("after", run_judge(mine, {"who": "parent"}).status, flush=True)
"""


def test_a_forked_process_does_not_share_the_check_processes(tmp_path: Path) -> None:
    """A library caller that forks (multiprocessing's default on Linux) gave the fork the
    parent's idle check process: both sent it requests and read each other's answers (wrong
    verdicts), and the fork's exit handler killed the parent's check processes."""
    import os
    import sys

    from tests.harness_helpers import REPO

    done = subprocess.run(
        [sys.executable, "-c", FORKS],
        cwd=tmp_path,
        env={**os.environ, "PYTHONPATH": str(REPO)},
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    assert sorted(done.stdout.split("\n")) == ["", "after ok", "child 0", "parent 0"]


def test_a_check_that_forks_leaves_one_process_answering() -> None:
    """The copy a snippet forked went on serving: it answered too (an answer left in the pipe
    was the next check's) and took requests meant for its parent (KeyError on stderr, the
    check waited out its limit)."""
    from engine.judges import run_judge
    from engine.model.judges import Judge

    forks = Judge(name="f", kind="check", check="import os\nreturn os.fork() != 0", timeout=3.0)
    one = Judge(name="t", kind="check", check="return outputs['x'] == 1", timeout=3.0)
    verdicts = []
    for _ in range(10):
        verdicts.append(run_judge(forks, {"x": 1}).passed is True)
        verdicts += [run_judge(one, {"x": x}).passed is (x == 1) for x in (1, 2, 1, 2)]
    assert all(verdicts), verdicts.count(False)


def test_a_check_s_own_alarm_handler_does_not_keep_a_later_orphan_alive(tmp_path: Path) -> None:
    """The orphaned check ends by the kernel's SIGALRM; a check before it in the same pooled
    process that set its own SIGALRM handler (or ignored it) took that away from every later
    check there, which then ran on for hours after ll-loop was killed."""
    script = (
        "from engine.judges import run_judge\n"
        "from engine.model.judges import Judge\n"
        "run_judge(Judge(name='i', kind='check', check='import signal\\n"
        "signal.signal(signal.SIGALRM, signal.SIG_IGN)\\nreturn True'), {'stdout': ''})\n"
        "run_judge(Judge(name='s', kind='check', check='return sum(range(10**14)) > 0',"
        " timeout=1.0), {'stdout': ''})\n"
    )
    _orphan_ends_on_its_own(tmp_path, script, settle=0.3)  # the second is stuck in `sum`


def test_an_if_that_would_build_a_huge_value_is_its_judges_error_at_once() -> None:
    """An `if:` is evaluated in ll-loop's own process, over a case's values: `n ** m` with
    m = 10**9 ran inside C holding the GIL (hours, its 5 s limit unheard). Each operator and
    method that could build a huge value is checked first, as templates' are."""
    from engine.judges import run_judge
    from engine.judges.core import compile_judge
    from engine.judges.env import JudgeEnv
    from engine.model.judges import Judge

    env = JudgeEnv(inputs={"n": 7, "m": 10**9, "w": 10**10, "text": "ok"})
    for condition in (
        'inputs["n"] ** inputs["m"] > 0',
        'inputs["text"] * inputs["w"] != ""',
        '(1 << inputs["m"]) > 0',
        'inputs["text"].center(inputs["w"]) != ""',
    ):
        judge = Judge(name="guarded", kind="check", check="return True", condition=condition)
        started = time.monotonic()
        result = run_judge(compile_judge(judge), {"stdout": ""}, env)
        assert time.monotonic() - started < 2, condition
        assert result.status == "error" and "would be too large" in str(result.error), result
    fine = Judge(
        name="fine",
        kind="check",
        check="return True",
        condition='inputs["n"] ** 2 == 49 and inputs["text"].upper() + "!" == "OK!"',
    )
    assert run_judge(compile_judge(fine), {"stdout": ""}, env).passed is True


def test_an_if_that_could_slip_past_the_guard_is_refused_not_run() -> None:
    """What the operator and method checks cannot see is refused: `n.__pow__(m)` and a method
    called through a list ran inside C for hours; `int.to_bytes(10**9)` took a gigabyte."""
    from engine.judges import run_judge
    from engine.judges.core import compile_judge
    from engine.judges.env import JudgeEnv
    from engine.model.judges import Judge

    env = JudgeEnv(inputs={"n": 7, "m": 10**9, "w": 10**10, "text": "ok"})
    refused = {
        'inputs["n"].__pow__(inputs["m"]) > 0': "names starting with _ are not allowed",
        '[inputs["text"].center][0](inputs["w"]) != ""': "only a value's methods may be called",
        "().__class__.__base__.__subclasses__() != []": "names starting with _ are not allowed",
        "f\"{1:>{inputs['w']}}\" != ''": "an f-string format spec may not be computed",
        'inputs["n"].to_bytes(inputs["m"], "big") != b""': "int.to_bytes() may not be called",
        'inputs["text"].translate({111: "x"}) != ""': "str.translate() may not be called",
    }
    for condition, why in refused.items():
        judge = Judge(name="guarded", kind="check", check="return True", condition=condition)
        started = time.monotonic()
        result = run_judge(compile_judge(judge), {"stdout": ""}, env)
        assert time.monotonic() - started < 2, condition
        assert result.status == "error" and why in str(result.error), result
    fine = Judge(
        name="fine",
        kind="check",
        check="return True",
        condition="f\"{inputs['n']:>3}\" == '  7' and inputs.get('text', '').strip() == 'ok'"
        " and inputs['n'].bit_length() == 3 and 'n' in inputs.keys()",
    )
    assert run_judge(compile_judge(fine), {"stdout": ""}, env).passed is True


def test_two_projects_with_a_package_of_the_same_name_each_get_their_own(tmp_path: Path) -> None:
    """The check process outlives one suite (a library caller runs several, the CLI's tests run
    in one process): a package `evals` imported from one project's root stayed in its
    `sys.modules`, so the next project's `evals.j` was looked for in the first project's
    folder (ModuleNotFoundError), and its `evals.same` answered with the first project's
    function."""
    from engine.judges.check_process import run_function

    first, second = tmp_path / "first", tmp_path / "second"
    write(first / "evals" / "__init__.py", "")
    write(first / "evals" / "same.py", "def f(outputs):\n    return 'first'\n")
    write(second / "evals" / "__init__.py", "")
    write(second / "evals" / "same.py", "def f(outputs):\n    return 'second'\n")
    write(second / "evals" / "j.py", "def f(outputs):\n    return 'j'\n")
    # a library both import is imported once: only the projects' own modules are forgotten
    stdlib = "import colorsys\n\ndef f(outputs):\n    return id(colorsys)\n"
    write(first / "uses_stdlib.py", stdlib)
    write(second / "uses_stdlib.py", stdlib)
    assert run_function(str(first), "uses_stdlib", "f", {}, {}, 30) == run_function(
        str(second), "uses_stdlib", "f", {}, {}, 30
    )
    said = [
        run_function(str(root), module, "f", {}, {}, 30)
        for root, module in [
            (first, "evals.same"),
            (second, "evals.j"),
            (second, "evals.same"),
            (first, "evals.same"),
        ]
    ]
    assert said == ["first", "j", "second", "first"]


def test_a_condition_and_a_check_do_not_import_jinja() -> None:
    """The size checks an `if:` runs before an operator or a method lived in the Jinja sandbox's
    module, so every suite with a `check` judge imported Jinja (~15 ms of each start-up) though no
    template was ever rendered; they now live in `engine.shell.sizes`."""
    import sys

    from tests.harness_helpers import REPO

    code = (
        "import sys\n"
        "from engine.judges import run_judge\n"
        "from engine.judges.core import compile_judge\n"
        "from engine.model.judges import Judge\n"
        "judge = Judge(name='j', kind='check', check='return True', condition='1 + 1 == 2')\n"
        "assert run_judge(compile_judge(judge), {'stdout': ''}).passed\n"
        "big = \"'a' * 10**12 == ''\"\n"
        "guarded = Judge(name='g', kind='check', check='return True', condition=big)\n"
        "assert 'would be too large' in str(run_judge(compile_judge(guarded), {}).error)\n"
        "assert 'jinja2' not in sys.modules, 'jinja2 was imported'\n"
    )
    subprocess.run([sys.executable, "-c", code], check=True, cwd=REPO, timeout=60)


WHERE_AM_I = """\
name: here
initial: work
scope: ["."]
states:
  work:
    action: "echo hi"
    evaluate:
      type: assessment
      judges:
        - name: snippet
          check: |
            return open("marker.txt").read().strip() == "{name}", "read marker.txt"
        - {{name: function, module: judge_here, function: reads}}
    on_yes: done
    on_no: failed
    on_error: failed
  done: {{terminal: true}}
  failed: {{terminal: true, failure: true}}
"""


def test_a_check_and_a_function_run_in_their_own_runs_directory(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A pooled check process serves every run of the process that started it (a program
    running several projects, the CLI's tests): it stayed in the directory it was started in,
    so the second project's `open("marker.txt")` read the first project's file. Each call now
    runs in its judge's workspace."""
    import engine

    reads = "def reads(outputs):\n    return open('marker.txt').read().strip() == '{name}'\n"
    for name in ("first", "second"):
        project = tmp_path / name
        write(project / ".loops" / ".keep", "")
        write(project / "marker.txt", name + "\n")
        write(project / "judge_here.py", reads.format(name=name))
        write(project / "loop.yaml", WHERE_AM_I.format(name=name))
    for name in ("first", "second"):
        monkeypatch.chdir(tmp_path / name)
        result = engine.run("loop.yaml")
        assert (name, result.final_state) == (name, "done")
