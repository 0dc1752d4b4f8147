"""Options, programs and writers the engine's tables did not know, each once reproduced with a
value that created a file: an option an interpreter's table does not list may take the next
word, which is then the script. Every one is now refused, the value creates nothing, and the
common spellings next to them still render and run as data."""

from __future__ import annotations

import shutil
from typing import Any

import pytest

from engine.model.errors import InterpolationError
from engine.shell.interpolate import NO_TYPES, render_shell
from tests.shellquote_helpers import run_bash

# A program file that creates the canary, written where the action runs (a file the value's
# author could write: an agent's output, a checked-out branch); the value names it.
EVIL = "cat > evil <<'EOF'\nrequire('fs').writeFileSync('CANARY', '')\nEOF\n"
PY_EVIL = "cat > evil <<'EOF'\nopen('CANARY', 'w')\nEOF\n"


def attempt(template: str, values: dict[str, Any], setup: str = "") -> str:
    """The refusal's reason; a template that renders is run (after `setup`), and must not
    create the canary (the test then fails on the missing refusal, showing what it did)."""
    try:
        script = render_shell(template, {"context": values}, NO_TYPES)
    except InterpolationError as refused:
        return refused.reason
    created = [f for f in run_bash(setup + script).created if f != "evil"]
    return f"rendered and ran (created {created}): {script!r}"


def needs(program: str) -> Any:
    return pytest.mark.skipif(shutil.which(program) is None, reason=f"no {program} here")


# (program needed, template, setup, what the refusal says)
UNKNOWN_OPTIONS = {
    "node-unlisted-option-with-argument": (
        "node",
        "node --cpu-prof --cpu-prof-interval 1000 ${context.x}",
        EVIL,
        "`node` reads options or its program",
    ),
    "node-newer-option-with-argument": (
        "node",
        "node --trace-require-module all ${context.x}",
        EVIL,
        "`node` reads options or its program",
    ),
    "python-bundled-option-with-argument": (
        "python3",
        "python3 -uX importtime ${context.x}",
        PY_EVIL,
        "`python3` reads options or its program",
    ),
}


@pytest.mark.parametrize("name", sorted(UNKNOWN_OPTIONS))
def test_an_unknown_interpreter_option_is_read_both_ways(name: str) -> None:
    program, template, setup, why = UNKNOWN_OPTIONS[name]
    if shutil.which(program) is None:
        pytest.skip(f"no {program} here")
    assert why in attempt(template, {"x": "evil"}, setup)


SAFE_INTERPRETER_SPELLINGS = {
    "python3": ("print(__import__('sys').argv[1])", "python3 -u s.py ${context.x}"),
    "node": ("console.log(process.argv[2])", "node --no-warnings s.js ${context.x}"),
    "perl": ("print $ARGV[0], qq(\\n)", "perl -w s.pl ${context.x}"),
}


@pytest.mark.parametrize("program", sorted(SAFE_INTERPRETER_SPELLINGS))
def test_the_common_interpreter_spellings_stay_data(program: str) -> None:
    if shutil.which(program) is None:
        pytest.skip(f"no {program} here")
    code, template = SAFE_INTERPRETER_SPELLINGS[program]
    name = template.split()[2]
    value = '$(touch CANARY) -e "x"'
    script = render_shell(template, {"context": {"x": value}}, NO_TYPES)
    ran = run_bash(f"cat > {name} <<'EOF'\n{code}\nEOF\n{script}")
    assert (ran.returncode, ran.created, ran.stdout) == (0, [name], value + "\n"), ran.stderr


@pytest.mark.parametrize(
    "template",
    [
        "python3 -X importtime -W ignore s.py ${context.x}",
        "python3 -Xdev -B s.py ${context.x}",
        "python3 -c 'pass' ${context.x}",
        "node --max-old-space-size=100 s.js ${context.x}",
        "node --enable-source-maps --inspect s.js ${context.x}",
        "perl -lne 'print' ${context.x}",
        "sed -n 's/a/b/p' ${context.x}",
        "sed -i.bak -E 's/a/b/' ${context.x}",
        "awk -F , '{print $1}' ${context.x}",
        "gawk --posix '{print}' ${context.x}",
        "perl -g s.pl ${context.x}",
        "perl -f -w s.pl ${context.x}",
        "gawk -n '{print}' ${context.x}",
        # flags the tables missed, refused as read both ways: ruby's `--enable-FEATURE` /
        # `--disable-FEATURE` (`--enable FEATURE` alone takes the next word), `-U`; gawk's `-k`
        "ruby --enable-frozen-string-literal s.rb ${context.x}",
        "ruby --disable-did_you_mean s.rb ${context.x}",
        "ruby -U s.rb ${context.x}",
        "gawk -k '{print $1}' ${context.x}",
    ],
)
def test_known_options_leave_the_operands_data(template: str) -> None:
    render_shell(template, {"context": {"x": "$(touch CANARY)"}}, NO_TYPES)


def test_faketime_date_prog_names_a_program_it_runs() -> None:
    """`faketime --date-prog PROG` runs PROG (faketime 0.9.10 `--help`)."""
    reason = attempt("faketime --date-prog ${context.x} now date", {"x": "./evil"})
    assert "after `faketime --date-prog`, which runs code" in reason


@needs("faketime")
def test_faketime_runs_the_words_after_its_timestamp_as_given() -> None:
    """Against the real faketime: `-f` takes no argument, the timestamp follows, then the
    command, whose argument the value is."""
    script = render_shell("faketime -f +2d echo ${context.x}", {"context": {"x": "$(touch X)"}})
    ran = run_bash(script)
    assert (ran.created, ran.stdout) == ([], "$(touch X)\n"), ran.stderr


@pytest.mark.parametrize(
    "template",
    [
        "faketime -f '+2d' date ${context.x}",
        "faketime -m -f '@2020-01-01 00:00:00' date ${context.x}",
        "faketime -p 1 '2020-01-01' date ${context.x}",
        "nsenter -t 1 -m -r ls ${context.x}",
        "nsenter -t 1 -w -m ls ${context.x}",
        "nsenter --target 1 --root --wd ls ${context.x}",
    ],
)
def test_faketime_and_nsenter_spellings_stay_data(template: str) -> None:
    """Refused before: `-f`/`-m` took the timestamp, `-r`/`-w` the command, as their argument
    (faketime 0.9.10 `--help`: `-f`, `-m` are switches; util-linux 2.38 `nsenter --help`:
    `-r`/`-w` take a directory only attached, `-rDIR`, `--root=DIR`)."""
    assert render_shell(template, {"context": {"x": "$(touch CANARY)"}}, NO_TYPES).endswith(
        "'$(touch CANARY)'"
    )


@needs("gdb")
def test_gdb_ex_runs_its_argument() -> None:
    """`gdb -batch -ex CMD` runs CMD (`shell touch X` runs a shell command): gdb was missing
    from the tables, so the value was data."""
    reason = attempt("gdb -nx -batch -ex ${context.x}", {"x": "shell touch CANARY"})
    assert "the argument of `gdb -ex`" in reason
    script = render_shell(
        "gdb -nx -batch -ex 'print 1' --args true ${context.x}", {"context": {"x": "$(touch X)"}}
    )
    ran = run_bash(script)
    assert (ran.returncode, ran.created) == (0, []), ran.stderr


@pytest.mark.parametrize(
    "template",
    [
        "deno eval ${context.x}",
        "deno run -A ${context.x}",
        "deno task ${context.x}",
        "deno eval --ext=ts ${context.x}",
        "bun -e ${context.x}",
        "bun --eval ${context.x}",
        "bun run ${context.x}",
        "bun ${context.x}",
        "ts-node -e ${context.x}",
        "ts-node --transpile-only --print ${context.x}",
        "tsx -e ${context.x}",
        "jython -c ${context.x}",
        "pypy3 -c ${context.x}",
        "julia -e ${context.x}",
        "julia --startup-file=no -E ${context.x}",
        "julia -L ${context.x} s.jl",
        "expect -c ${context.x}",
        "expect -f ${context.x}",
        "gdb -batch -x ${context.x}",
        "gdb --batch --eval-command ${context.x} prog",
        "gdb -batch -ex run ${context.x}",
        "git-filter-repo --commit-callback ${context.x}",
        "git-filter-repo --force --message-callback=${context.x}",
        "osascript -e ${context.x}",
        "Rscript -e ${context.x}",
        "pwsh -NoProfile -File ${context.x}",
    ],
)
def test_the_missing_interpreters_run_their_code_argument(template: str) -> None:
    with pytest.raises(InterpolationError):
        render_shell(template, {"context": {"x": "touch CANARY"}}, NO_TYPES)


@pytest.mark.parametrize(
    "template",
    [
        "deno run -A main.ts ${context.x}",
        "deno run --allow-read --no-check main.ts ${context.x}",
        "deno fmt ${context.x}",
        "bun run main.ts ${context.x}",
        "bun main.ts ${context.x}",
        "bun add ${context.x}",
        "ts-node -T main.ts ${context.x}",
        "tsx main.ts ${context.x}",
        "jython s.py ${context.x}",
        "julia --project=. s.jl ${context.x}",
        "julia -e 'println(ARGS)' ${context.x}",
        "expect s.exp ${context.x}",
        "expect -c 'set timeout 5' s.exp ${context.x}",
        "gdb -q --args prog ${context.x}",
        "git-filter-repo --path ${context.x}",
        "pwsh -NoProfile -File s.ps1 ${context.x}",
    ],
)
def test_the_operands_of_the_new_interpreters_stay_data(template: str) -> None:
    assert render_shell(template, {"context": {"x": "$(touch CANARY)"}}, NO_TYPES).endswith(
        "'$(touch CANARY)'"
    )


FUNCTION_OUTPUT_INTO_CODE = [
    "f() { echo ${context.x}; }; f | sh",
    "function f { echo ${context.x}; }\nf | bash",
    "f() ( echo ${context.x} ); f | sh",
    "f() { echo ${context.x}; }; f | tee log | sh",
    "f() { echo ${context.x}; }; { f; } | sh",
    "f() { echo ${context.x}; }; ( f ) | sh",
    "f() { echo ${context.x}; }\nif true; then f; fi | sh",
    "f() { echo ${context.x} >&2; }; f 2>&1 | sh",
    "f() { echo ${context.x}; }; sh < <(f)",
    "f() { echo ${context.x}; }; bash <(f)",
    "f() { echo ${context.x}; }; f > >(sh); wait",
    'f() { echo ${context.x}; }; eval "$(f)"',
    "f() { echo ${context.x}; }; f | xargs -0 sh -c",
    "f() { echo ${context.x}; }; g() { f; }; g | sh",
    # `time` and `eval` call the function too: the call's words were matched from their first
    "f() { echo ${context.x}; }; time f | sh",
    "f() { echo ${context.x}; }; time -p f 2>/dev/null | sh",
    "f() { echo ${context.x}; }; { time f; } 2>/dev/null | sh",
    'f() { echo ${context.x}; }; sh -c "$(time f)"',
    "f() { echo ${context.x}; }; eval f | sh",
    "f() { echo ${context.x}; }; eval 'f 1' | sh",
]


@pytest.mark.parametrize("template", FUNCTION_OUTPUT_INTO_CODE)
def test_a_function_writing_the_value_into_a_shell_is_refused(template: str) -> None:
    """The engine traced text written into a shell through pipes, here-documents and process
    substitutions, not through a function of the script: `f() { echo ${...}; }; f | sh` ran
    the value. The calls of a function whose body holds a value now count as the hole there."""
    assert "written by the function `" in attempt(template, {"x": "touch CANARY"})


@pytest.mark.parametrize(
    "template",
    [
        "f() { echo ${context.x}; }; f",
        "f() { echo ${context.x}; }; f | cat",
        'f() { echo ${context.x}; }; echo "$(f)"',
        "f() { echo ${context.x}; }; f > out.txt; cat out.txt",
        "f() { echo ${context.x}; }; f && f | tr a-z A-Z",
        "f() { echo ${context.x}; }; time f 2>/dev/null | cat",
        "f() { echo ${context.x}; }; eval f | cat",
    ],
)
def test_a_function_writing_the_value_elsewhere_stays_data(template: str) -> None:
    ran = run_bash(render_shell(template, {"context": {"x": "$(touch CANARY)"}}, NO_TYPES))
    assert (ran.returncode, ran.created) == (0, [] if "out.txt" not in template else ["out.txt"])
    assert "$(touch CANARY)" in ran.stdout.upper().replace("$(TOUCH CANARY)", "$(touch CANARY)")
