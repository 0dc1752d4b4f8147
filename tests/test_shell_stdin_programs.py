"""Text fed to a program's standard input, where that program runs what it reads: `bash <<< X`,
`echo X | sh`, `python3 <<EOF`. The text would be its program, so only a `type: command` value
may go there; programs that read their input as data (`cat`, `wc`, `python3 script.py`, a
`while read` loop) take any value."""

from __future__ import annotations

import pytest

from engine.model.errors import InterpolationError
from engine.shell.interpolate import render_shell
from tests.shellquote_helpers import run_bash

PAYLOAD = "touch CANARY"


@pytest.mark.parametrize(
    ("template", "reader"),
    [
        ("bash <<< ${context.t}", "bash"),
        ("echo ${context.t} | bash", "bash"),
        ("echo ${context.t} | sh", "sh"),
        ("echo ${context.t} | cat | bash", "bash"),
        ("bash <<EOF\n${context.t}\nEOF", "bash"),
        ("bash < <(echo ${context.t})", "bash"),
        ("python3 <<< ${context.t}", "python3"),
        ("python3 - <<< ${context.t}", "python3"),
        ("echo ${context.t} | ssh host", "ssh"),
        ("echo ${context.t} | parallel", "parallel"),
        ("echo ${context.t} | xargs -I{} sh -c 'echo {}'", "xargs"),
        ('echo ${context.t} | "$RUNNER"', "?"),
        # a shell's -c script reads the same input: followed when literal, refused when not
        ("bash -c bash -c <<< ${context.t}", "bash"),
        ("env sh -c 'cat | sh' <<< ${context.t}", "env"),
        ("echo ${context.t} | sudo bash -c 'python3'", "sudo"),
        ('bash -c "$SCRIPT" <<< ${context.t}', "bash"),
        # a program file that names the input (hunt6: each of these ran the value)
        ("bash /dev/stdin <<< ${context.t}", "bash"),
        ("echo ${context.t} | sh /proc/self/fd/0", "sh"),
        ("python3 /dev/fd/0 <<< ${context.t}", "python3"),
        ("awk -f /dev/stdin <<< ${context.t}", "awk"),
        ("sed -n -f /dev//stdin notes.txt <<< ${context.t}", "sed"),
        ("perl /dev/stdin <<< ${context.t}", "perl"),
        ('D=/dev; bash "$D/stdin" <<< ${context.t}', "bash"),
        # mapfile runs `CALLBACK INDEX 'LINE'`: eval or a function runs the line (hunt6)
        ("mapfile -t -C eval -c 1 lines <<< ${context.t}", "mapfile"),
        ("echo ${context.t} | strace -o /dev/null bash", "strace"),
        ("taskset -c 0 sh <<< ${context.t}", "taskset"),
        ("echo ${context.t} | at now", "at"),
        ("crontab - <<< ${context.t}", "crontab"),
        ("echo ${context.t} | { readarray -tC eval -c1 lines; }", "readarray"),
        ('run() { eval "$2"; }; mapfile -C run -c 1 lines <<< ${context.t}', "mapfile"),
        # a shell in a container reads the input docker/kubectl pass on (`ssh host` does too)
        ("echo ${context.t} | docker exec -i app sh", "docker"),
        ("echo ${context.t} | docker run --rm -i alpine:3 sh -s", "docker"),
        ("echo ${context.t} | docker compose exec -T app bash", "docker"),
        ("echo ${context.t} | podman exec -i app python3 -", "podman"),
        ("echo ${context.t} | kubectl exec -i pod-1 -- sh", "kubectl"),
        # a command language that can run the shell's: sqlite3's `.shell`, ed's and ex's `!`,
        # a makefile's recipes (each of these ran `touch CANARY` in bash before)
        ("echo ${context.t} | sqlite3 notes.db", "sqlite3"),
        ("echo ${context.t} | psql -d app", "psql"),
        ("ed -s notes.txt <<< ${context.t}", "ed"),
        ("echo ${context.t} | ex -s notes.txt", "ex"),
        ("echo ${context.t} | vim -es notes.txt", "vim"),
        ("echo ${context.t} | make -f -", "make"),
        ("make --file=- all <<< ${context.t}", "make"),
        # GNU sed's `e` command and `s///e` flag run the pattern space as a shell command
        ("echo ${context.t} | sed e", "sed"),
        ("sed 's/x/y/e' <<< ${context.t}", "sed"),
        ("echo ${context.t} | sed -n -e p -e '1e'", "sed"),
        ("echo ${context.t} | sed --expression='s/^//ge'", "sed"),
        ('echo ${context.t} | sed "$SCRIPT"', "sed"),
        # a Dockerfile read from stdin: its RUN lines run (in a container, on the build host)
        ("echo ${context.t} | docker build -", "docker"),
        ("echo ${context.t} | podman build -t app -f - .", "podman"),
        ("docker buildx build --file=- . <<< ${context.t}", "docker"),
        ("buildah bud -f- . <<< ${context.t}", "buildah"),
    ],
)
def test_text_a_program_would_run_from_its_stdin_is_refused(template: str, reader: str) -> None:
    with pytest.raises(InterpolationError) as refused:
        render_shell(template, {"context": {"t": PAYLOAD}})
    assert f"fed to the standard input of `{reader}`" in refused.value.reason


@pytest.mark.parametrize(
    ("template", "output"),
    [
        ("cat <<< ${context.t}", f"{PAYLOAD}\n"),
        ("echo ${context.t} | grep -c touch", "1\n"),
        ('printf "%s\\n" ${context.t} | while read -r l; do echo "[$l]"; done', f"[{PAYLOAD}]\n"),
        ("echo ${context.t} | bash -c 'cat'", f"{PAYLOAD}\n"),
        ("sh -c 'read -r l; echo \"[$l]\"' <<< ${context.t}", f"[{PAYLOAD}]\n"),
        ("wc -w <<< ${context.t}", "2\n"),
        ("echo ${context.t} | tr a-z A-Z", f"{PAYLOAD.upper()}\n"),
        ("sort <<EOF\n${context.t}\nEOF", f"{PAYLOAD}\n"),
        ('echo ${context.t} | python3 "$HOME/../$HOME/x.py" 2>/dev/null || echo ran', "ran\n"),
        ("cat /dev/stdin <<< ${context.t}", f"{PAYLOAD}\n"),
        ("wc -l /dev/stdin <<< ${context.t}", "1 /dev/stdin\n"),
        ("grep -c touch <<< ${context.t}; echo ${context.t} | grep -e bash -e sh || true", "1\n"),
        ("mapfile -t -C 'printf \"[%s]\"' -c 1 l <<< ${context.t}", f"[0][{PAYLOAD}]"),
        ("echo ${context.t} | sed 's/touch/echo/'", "echo CANARY\n"),
        ("echo ${context.t} | sed -n '/t/p; y/abc/xyz/'", f"{PAYLOAD}\n"),
        ("echo ${context.t} | sed --sandbox 's/^/# /'", f"# {PAYLOAD}\n"),
    ],
)
def test_programs_that_read_their_input_as_data_take_any_value(template: str, output: str) -> None:
    ran = run_bash(render_shell(template, {"context": {"t": PAYLOAD}}))
    assert (ran.stdout, ran.created) == (output, [])


@pytest.mark.parametrize(
    "template",
    [
        "echo ${context.t} | docker exec -i app grep -c sh",
        "echo ${context.t} | docker exec -i -u root app sh script.sh",
        "echo ${context.t} | docker run --rm -i -e K=sh alpine cat",
        "echo ${context.t} | kubectl exec -i pod -- python3 script.py",
        "echo ${context.t} | docker login --password-stdin -u me",
    ],
)
def test_a_container_program_that_reads_its_input_as_data_takes_any_value(template: str) -> None:
    assert PAYLOAD in render_shell(template, {"context": {"t": PAYLOAD}})


def test_a_command_value_may_be_fed_to_a_shell() -> None:
    """A `type: command` parameter is code by declaration: piping it into bash is its use."""
    from engine.model.loop import Parameter
    from engine.shell.interpolate import ValueTypes

    types = ValueTypes.of({"t": Parameter(name="t", type="command")})
    ran = run_bash(render_shell("echo ${context.t} | bash", {"context": {"t": "echo hi"}}, types))
    assert ran.stdout == "hi\n"


WRITTEN_INTO_A_SHELL = [
    # the pipe written after a here-document's start, which the grammar puts inside it
    "cat <<EOF | sh\n${context.t}\nEOF",
    "cat <<EOF | tee copy.txt | bash\n${context.t}\nEOF",
    # output written to a process substitution is a pipe into it
    "echo ${context.t} > >(sh)",
    "{ echo ${context.t}; } >> >(bash)",
    "cat <<EOF > >(sh)\n${context.t}\nEOF",
    # `>& WORD` (a word, not a number) sends stdout and stderr there, as `&>` does
    "echo ${context.t} >& >(sh)",
    "cat <<EOF >& >(bash)\n${context.t}\nEOF",
]


@pytest.mark.parametrize("template", WRITTEN_INTO_A_SHELL)
def test_text_written_into_a_shell_after_a_heredoc_or_through_a_process_substitution_is_refused(
    template: str,
) -> None:
    """Each of these ran the value as the shell's program: the pipe of `cat <<EOF | sh` is a
    child of the here-document's redirection in the grammar, and `> >(sh)` is no pipe."""
    as_quoted = run_bash(template.replace("${context.t}", PAYLOAD) + "\nsleep 0.2")
    assert "CANARY" in as_quoted.created, as_quoted.stderr
    with pytest.raises(InterpolationError) as refused:
        render_shell(template, {"context": {"t": PAYLOAD}})
    assert "fed to the standard input of `" in refused.value.reason


def test_text_written_after_a_heredoc_or_to_a_process_substitution_reading_data_is_data() -> None:
    for template, output in (
        ("cat <<EOF | wc -w\n${context.t}\nEOF", "2\n"),
        ("cat <<EOF | tr a-z A-Z\n${context.t}\nEOF", f"{PAYLOAD.upper()}\n"),
        ("echo ${context.t} > >(cat); sleep 0.2", f"{PAYLOAD}\n"),
        ("echo ${context.t} >& >(cat); sleep 0.2", f"{PAYLOAD}\n"),
        ("echo ${context.t} >&2", ""),
        ("cat <<EOF > >(cat)\n${context.t}\nEOF\nsleep 0.2", f"{PAYLOAD}\n"),
    ):
        ran = run_bash(render_shell(template, {"context": {"t": PAYLOAD}}))
        assert (ran.stdout, ran.created) == (output, []), template


def test_text_after_a_heredoc_s_start_reaches_xargs_as_it_would_through_a_pipe() -> None:
    """`cat <<EOF | xargs rm` hands the body's lines to rm as arguments: a value `-rf x` there
    was let through (the `xargs` rule looked only at pipes the grammar writes as pipes)."""
    for template in (
        "cat <<EOF | xargs rm\n${context.t}\nEOF",
        "cat <<EOF > >(xargs rm)\n${context.t}\nEOF",
        "cat <<EOF >& >(xargs rm)\n${context.t}\nEOF",
    ):
        with pytest.raises(InterpolationError) as refused:
            render_shell(template, {"context": {"t": "-rf x"}})
        assert "reaches `xargs rm` on its input" in refused.value.reason
        assert "\na b\n" in render_shell(template, {"context": {"t": "a b"}})


@pytest.mark.parametrize(
    "template",
    [
        "exec > >(sh)\necho ${context.t}",
        "exec 3> >(bash)\necho ${context.t} >&3",
        "exec >& >(sh)\necho ${context.t}",
        # bash's own descriptor: the grammar reads `{fd}` as an argument of exec
        "exec {fd}> >(sh)\necho ${context.t} >&$fd",
    ],
)
def test_text_written_after_exec_sends_the_script_s_output_to_a_shell_is_refused(
    template: str,
) -> None:
    """`exec > >(sh)` makes a shell the reader of everything the script writes after it, so
    `echo ${...}` on a later line fed the value to sh, which ran it: the process-substitution
    rule saw only the statement the redirection is written on."""
    as_quoted = run_bash(template.replace("${context.t}", PAYLOAD) + "\nexec >&-; sleep 0.3")
    assert "CANARY" in as_quoted.created, as_quoted.stderr
    with pytest.raises(InterpolationError) as refused:
        render_shell(template, {"context": {"t": PAYLOAD}})
    assert "`exec` at line 1" in refused.value.reason
    assert "echo 3" in render_shell(template, {"context": {"t": 3}})


def test_exec_writing_to_a_file_or_a_data_reader_leaves_values_as_they_were() -> None:
    for template in (
        "exec > out.log\necho ${context.t}",
        "exec > >(tee out.log)\necho ${context.t}",
        "exec 2>&1\necho ${context.t}",
    ):
        assert PAYLOAD in render_shell(template, {"context": {"t": PAYLOAD}}), template


@pytest.mark.parametrize(
    ("template", "value"),
    [
        ("echo ${context.t} | sqlite3 notes.db", ".shell touch CANARY"),
        ("ed -s notes.txt <<< ${context.t}", "!touch CANARY"),
        ("echo ${context.t} | make -f -", "all:\n\ttouch CANARY"),
        ("echo ${context.t} | sed e", "touch CANARY"),
        ("sed 's/^//e' <<< ${context.t}", "touch CANARY"),
    ],
)
def test_a_command_language_on_stdin_would_have_run_the_shell(template: str, value: str) -> None:
    """What the refusal above prevents, seen in real bash: the same line with the value quoted
    as data (what ll-loop would have written) runs the payload through the program."""
    import shlex
    import shutil

    program = template.split("|")[-1].split()[0] if "|" in template else template.split()[0]
    if shutil.which(program) is None:
        pytest.skip(f"{program} is not installed")
    ran = run_bash(template.replace("${context.t}", shlex.quote(value)))
    assert ran.created == ["CANARY"], ran


@pytest.mark.parametrize(
    "template",
    [
        "echo ${context.t} | vim - 2>/dev/null",
        "echo ${context.t} | make -C sub",
        "echo ${context.t} | docker build -t app -f Dockerfile .",
        "sqlite3 notes.db 'select 1' > out.txt; echo ${context.t}",
    ],
)
def test_a_command_language_program_not_reading_the_value_takes_any_value(template: str) -> None:
    assert PAYLOAD in render_shell(template, {"context": {"t": PAYLOAD}})


@pytest.mark.parametrize(
    "template",
    [
        'coproc sh\necho ${context.t} >&"${COPROC[1]}"',
        'coproc bash -s\nprintf "%s\\n" ${context.t} >&${COPROC[1]}',
        'coproc W { bash; }\necho ${context.t} >&"${W[1]}"',
    ],
)
def test_text_written_to_a_shell_started_as_a_coprocess_is_refused(template: str) -> None:
    """`coproc sh` reads what the script writes to `${COPROC[1]}`: a value written there ran
    as sh's program (the descriptor is known only at run time, so the script is refused)."""
    as_quoted = run_bash(template.replace("${context.t}", f"'{PAYLOAD}'") + "\nsleep 0.3")
    assert "CANARY" in as_quoted.created, as_quoted.stderr
    with pytest.raises(InterpolationError) as refused:
        render_shell(template, {"context": {"t": PAYLOAD}})
    assert "`coproc` at line 1 runs" in refused.value.reason
    assert " 3 >&" in render_shell(template, {"context": {"t": 3}})


def test_a_coprocess_that_reads_its_input_as_data_leaves_values_as_they_were() -> None:
    template = 'coproc cat\necho ${context.t} >&"${COPROC[1]}"'
    assert PAYLOAD in render_shell(template, {"context": {"t": PAYLOAD}})
