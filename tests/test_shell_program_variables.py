"""Environment variables whose value another program runs or loads as code.

`GIT_SSH_COMMAND=${...} git ls-remote ...` put the value where git runs it with `sh -c`; so
did `PERL5OPT` (`-M` code), `GIT_EXTERNAL_DIFF`, `LESSOPEN` and `EDITOR`. Each case is first
run with the value single-quoted as the renderer used to write it, to show that the position
runs the value; the renderer now refuses text there (a `type: command` value may go), as it
does wherever bash runs code, and the ordinary uses of these variables still render.
"""

from __future__ import annotations

import shlex
import shutil
from pathlib import Path

import pytest

from engine.cli.validate_cmd import check_file
from engine.model.errors import InterpolationError
from engine.shell.interpolate import ValueTypes, render_shell
from tests.cli import ll_loop
from tests.shellquote_helpers import run_bash

SSH = "touch CANARY;"
PERL = "-Mstrict;system(q{touch},q{CANARY})"

# (template, value)
ATTACKS = {
    "prefix assignment": ("GIT_SSH_COMMAND=${context.v} git ls-remote ssh://h/x", SSH),
    "export": ("export GIT_SSH_COMMAND=${context.v}\ngit ls-remote ssh://h/x", SSH),
    "declare -x": ("declare -x GIT_SSH_COMMAND=${context.v}\ngit ls-remote ssh://h/x", SSH),
    "read into it": (
        "read -r GIT_SSH_COMMAND <<< ${context.v}\nexport GIT_SSH_COMMAND\ngit ls-remote ssh://h/x",
        SSH,
    ),
    "perl options": ("PERL5OPT=${context.v} perl -e 1", PERL),
    "tar options": (
        "echo a > a && tar -cf a.tar a\nTAR_OPTIONS=${context.v} tar -xf a.tar",
        "--to-command=touch\\ CANARY",
    ),
    "make options": (
        "export SHELL=/bin/sh\nMAKEFLAGS=${context.v} make -f /dev/null",
        "--eval=$(shell touch CANARY)",
    ),
    "home of a .gitconfig": (
        "mkdir -p h && printf '[alias]\\n\\tx = !touch CANARY\\n' > h/.gitconfig\n"
        "HOME=${context.v} git x",
        "h",
    ),
    "fc's editor": ("history -s 'echo hi'\nFCEDIT=${context.v} fc -1", "touch CANARY"),
    "external diff": (
        "echo a > a; echo b > b\nGIT_EXTERNAL_DIFF=${context.v} git diff --no-index --ext-diff a b",
        SSH,
    ),
    "less input filter": ("echo a > a\nLESSOPEN=${context.v} less a", "|touch CANARY; echo %s"),
    "editor": (
        "git init -q r && cd r\n"
        "EDITOR=${context.v} git -c user.name=a -c user.email=b commit -q --allow-empty",
        "touch ../CANARY;",
    ),
}


@pytest.mark.parametrize("name", sorted(ATTACKS))
def test_text_is_refused_where_a_program_runs_it(name: str) -> None:
    template, value = ATTACKS[name]
    as_before = run_bash(template.replace("${context.v}", shlex.quote(value)))
    assert "CANARY" in as_before.created, as_before.stderr  # the position does run the value
    with pytest.raises(InterpolationError) as caught:
        render_shell(template, {"context": {"v": value}})
    assert "a program runs as a command" in caught.value.reason or (
        "names code a program loads" in caught.value.reason
    )
    # no "$LL_..." to hand it over as data: that variable would be run the same way
    assert "to hand this value to the code" not in caught.value.reason
    assert 'the variable of a value ("$LL_...") would be run the same way' in caught.value.reason


def test_a_command_parameter_and_the_ordinary_uses_still_render() -> None:
    command = ValueTypes(commands=frozenset({"ssh"}))
    script = render_shell(
        "GIT_SSH_COMMAND=${context.ssh} git ls-remote ssh://h/x", {"context": {"ssh": SSH}}, command
    )
    assert "CANARY" in run_bash(script).created  # the caller's own command runs, as declared
    for template in (
        "PAGER=cat GIT_PAGER=cat echo ${context.v}",
        'export PATH="$HOME/bin:$PATH"; echo ${context.v}',
        "unset EDITOR; export EDITOR; echo ${context.v}",
        "NAME=${context.v} printenv NAME",
        "echo ${context.v} > LD_PRELOAD",
    ):
        ran = run_bash(render_shell(template, {"context": {"v": SSH}}))
        assert ran.returncode == 0 and "CANARY" not in ran.created, template


def test_lint_reports_the_value_and_a_variable_flowing_there(tmp_path: Path) -> None:
    path = tmp_path / "loop.yaml"
    path.write_text(
        "name: v\ninitial: go\nscope: ['.']\nparameters:\n  v: {type: string, default: x}\n"
        "states:\n  go:\n    action: |\n"
        "      LD_PRELOAD=${context.v} ls\n"
        "      x=${context.v}; NODE_OPTIONS=$x node app.js\n"
        "    next: done\n  done:\n    terminal: true\n"
    )
    found = {(d.code, d.line) for d in check_file(path)}
    assert ("LL034", 9) in found
    assert ("LL035", 10) in found


# Options that name code an interpreter loads before its program, which still follows: the
# value there (or the program after it) is code, as the script word of `node ${...}` is. The
# setup writes the file someone else could have put there (an earlier step writing a capture).
EVIL_JS = 'echo \'require("fs").writeFileSync("CANARY", "")\' > evil.js\n'
EVIL_PM = (
    "mkdir -p evil; echo 'open(F, \">CANARY\"); 1;' > evil/strict.pm; echo 'use strict;' > x.pl\n"
)
GIT_SRC = (
    "git init -q src && git -C src -c user.name=a -c user.email=a@b commit -q --allow-empty -m x\n"
)
LOADERS = {
    "node -r, then the script": (
        EVIL_JS + "echo '' > p.js\nnode -r ./p.js ${context.v}",
        "evil.js",
    ),
    "node --loader, then the script": (
        EVIL_JS + "echo '' > l.mjs\nnode --loader ./l.mjs ${context.v}",
        "evil.js",
    ),
    "node -r": (EVIL_JS + "echo '' > a.js\nnode -r ${context.v} a.js", "./evil.js"),
    "perl -I": (EVIL_PM + "perl -I ${context.v} x.pl", "evil"),
    # `-x` takes its directory only attached (`-xdir`): the next word is the script
    "git clone --template": (
        "mkdir -p t/hooks && printf '#!/bin/sh\\ntouch ../CANARY\\n' > t/hooks/post-checkout\n"
        "chmod +x t/hooks/post-checkout\n" + GIT_SRC + "git clone -q --template=${context.v} src d",
        "t",
    ),
    "perl -x, then the script": (
        "printf '#!perl\\nopen(F, \">CANARY\");\\n' > evil.pl\nperl -x ${context.v}",
        "evil.pl",
    ),
}


@pytest.mark.parametrize("name", sorted(LOADERS))
def test_text_is_refused_where_an_interpreter_loads_code(name: str) -> None:
    template, value = LOADERS[name]
    as_before = run_bash(template.replace("${context.v}", shlex.quote(value)))
    assert "CANARY" in as_before.created, as_before.stderr
    with pytest.raises(InterpolationError):
        render_shell(template, {"context": {"v": value}})


def test_the_arguments_after_the_program_are_still_data() -> None:
    for template in (
        "node -e 'x' ${context.v}",
        "perl -I lib x.pl ${context.v}",
        "node -r ./p.js app.js ${context.v}",
        "awk -v n=${context.v} 1 /dev/null",
    ):
        assert "'a b'" in render_shell(template, {"context": {"v": "a b"}}), template


# git's own settings are the same commands by another door: `git -c KEY=VALUE`, `git config`.
GIT_SETTINGS = {
    "an alias": ("git -c alias.x=${context.v} x", "!touch CANARY"),
    "the ssh command": ("git -c core.sshCommand=${context.v} ls-remote ssh://h/x", SSH),
    "a setting written to the repository": (
        "git init -q r && cd r\ngit config core.sshCommand ${context.v}\ngit ls-remote ssh://h/x",
        "touch ../CANARY;",
    ),
    "a setting named by the value": ("git -c ${context.v} x", "alias.x=!touch CANARY"),
    # `git clone -c` sets the new repository's settings before it fetches
    "a clone's ssh command": ("git clone -q -c core.sshCommand=${context.v} ssh://h/x d", SSH),
    "a clone's setting named by the value": (
        "git clone -q --config ${context.v} ssh://h/x d",
        "core.sshCommand=touch CANARY;",
    ),
    # a value-pattern after the value (`list`, `get`) is no read: the alias is written
    "an alias written with a value-pattern": (
        "git init -q r && cd r\ngit config alias.x ${context.v} list\ngit x",
        "!touch ../CANARY",
    ),
    "an ssh command written with a value-pattern": (
        "git init -q r && cd r\ngit config core.sshCommand ${context.v} get\n"
        "git ls-remote ssh://h/x",
        "touch ../CANARY;",
    ),
}


@pytest.mark.parametrize("name", sorted(GIT_SETTINGS))
def test_text_is_refused_as_a_git_setting_git_may_run(name: str) -> None:
    template, value = GIT_SETTINGS[name]
    as_before = run_bash(template.replace("${context.v}", shlex.quote(value)))
    assert "CANARY" in as_before.created, as_before.stderr
    with pytest.raises(InterpolationError) as caught:
        render_shell(template, {"context": {"v": value}})
    assert "that git may run as a command" in caught.value.reason
    assert "would be run the same way" in caught.value.reason


def test_git_data_settings_take_text() -> None:
    value = "Ann $(touch CANARY) O'Neil"
    script = render_shell(
        'git -c user.name="${context.v}" -c user.email=${context.v} var GIT_AUTHOR_IDENT\n'
        "git init -q r && cd r && git config user.name ${context.v} && git config user.name",
        {"context": {"v": value}},
    )
    ran = run_bash(script)
    assert (ran.returncode, ran.created) == (0, ["r"]), ran.stderr
    assert ran.stdout.startswith(f"{value} <{value}>") and ran.stdout.endswith(f"{value}\n")


# Options whose argument a program runs as a command (the program's own `-c`).
TAR = "echo a > a && tar -cf a.tar a\n"
COMMAND_OPTIONS = {
    "tar --to-command": (TAR + "tar -xf a.tar --to-command ${context.v}", "touch CANARY"),
    "tar --to-command=": (TAR + "tar -xf a.tar --to-command=${context.v}", "touch CANARY"),
    "tar -I": ("echo a > a\ntar -I ${context.v} -cf b.tar a", "touch CANARY;"),
    "tar --checkpoint-action=": (
        "echo a > a\ntar -cf c.tar --checkpoint=1 --checkpoint-action=${context.v} a",
        "exec=touch CANARY",
    ),
    "scp -o": ("echo a > a\nscp -o ${context.v} a h:y", "ProxyCommand=touch CANARY"),
    # as getopt reads them: a bundle ending in the option, a shortened long option, old style
    "tar -cvI": ("echo a > a\ntar -cvI ${context.v} -f b.tar a", "touch CANARY;"),
    "tar --to-com": (TAR + "tar -xf a.tar --to-com ${context.v}", "touch CANARY"),
    "tar cIf": ("echo a > a\ntar cIf ${context.v} b.tar a", "touch CANARY;"),
    "scp -qo": ("echo a > a\nscp -qo ${context.v} a h:y", "ProxyCommand=touch CANARY"),
    "zip -TT": ("echo a > a\nzip -q -T -TT ${context.v} z.zip a", "touch CANARY; true"),
    "zip --unzip-command=": (
        "echo a > a\nzip -q -T --unzip-command=${context.v} z.zip a",
        "touch CANARY; true",
    ),
    "sort --compress-program": (
        "printf '#!/bin/sh\\ntouch CANARY\\nexec cat\\n' > p.sh && chmod +x p.sh\n"
        "seq 1 200000 | sort -S 64K --compress-program ${context.v} > /dev/null",
        "./p.sh",
    ),
    # git runs these through a shell for a local or ssh remote
    "git ls-remote --upload-pack=": (
        GIT_SRC + "git ls-remote --upload-pack=${context.v} src",
        "touch CANARY; git-upload-pack",
    ),
    "git clone -u": (
        GIT_SRC + "git clone -q -u ${context.v} src d",
        "touch CANARY; git-upload-pack",
    ),
    "git fetch --upload-pack": (
        GIT_SRC + "cd src && git fetch -q --upload-pack ${context.v} ../src",
        "touch ../CANARY; git-upload-pack",
    ),
    "scp -qoX=": ("echo a > a\nscp -qoProxyCommand=${context.v} a h:y", "touch CANARY"),
}


@pytest.mark.parametrize("name", sorted(COMMAND_OPTIONS))
def test_text_is_refused_as_a_command_an_option_runs(name: str) -> None:
    template, value = COMMAND_OPTIONS[name]
    as_before = run_bash(template.replace("${context.v}", shlex.quote(value)))
    assert "CANARY" in as_before.created, as_before.stderr
    with pytest.raises(InterpolationError) as caught:
        render_shell(template, {"context": {"v": value}})
    assert "a command or program it runs" in caught.value.reason
    # not the hint for code that takes data: "$LL_CONTEXT_v" there would run the same way
    assert "would be run the same way" in caught.value.reason
    assert "to hand this value to the code" not in caught.value.reason


# git's own commands that run a command they are given, and programs under the names they are
# installed by (a version, a restricted shell, busybox's applets): each ran its value as code.
GIT_HISTORY = (
    "export GIT_AUTHOR_NAME=a GIT_AUTHOR_EMAIL=a@b GIT_COMMITTER_NAME=a GIT_COMMITTER_EMAIL=a@b\n"
    "git init -q src && cd src && echo x > f && git add f && git commit -qm one\n"
    "echo y > f && git commit -qam two && git commit -q --allow-empty -m three\n"
)
RUNS_IT_UNDER_ANOTHER_NAME = {
    "git rebase --exec": (GIT_HISTORY + "git rebase -q --root --exec ${context.v}", "touch ../C"),
    "git rebase -x": (GIT_HISTORY + "git rebase -q --root -x ${context.v}", "touch ../C"),
    "git difftool -x": (
        GIT_HISTORY + "git difftool -y -x ${context.v} HEAD~2 > /dev/null",
        "touch ../C; true",
    ),
    "git difftool --extcmd=": (
        GIT_HISTORY + "git difftool -y --extcmd=${context.v} HEAD~2 > /dev/null",
        "touch ../C; true",
    ),
    "git filter-branch --msg-filter": (
        GIT_HISTORY + "FILTER_BRANCH_SQUELCH_WARNING=1 git filter-branch -f --msg-filter"
        " ${context.v} HEAD > /dev/null 2>&1",
        'touch "$HOME/C"; cat',
    ),
    "git grep -O": (GIT_HISTORY + "git grep -O${context.v} y", "touch ../C; true"),
    "git bisect run": (
        GIT_HISTORY + "git bisect start HEAD HEAD~2 > /dev/null\n"
        'git bisect run ${context.v} "$HOME/C" > /dev/null',
        "touch",
    ),
    "git submodule foreach": (
        GIT_HISTORY + "git -c protocol.file.allow=always submodule -q add ../src sub\n"
        "git submodule foreach -q ${context.v}",
        'touch "$HOME/C"',
    ),
    "python3.11 -c": ("python3.11 -c ${context.v}", "open('C', 'w')"),
    "perl5.36.0 -e": ("perl5.36.0 -e ${context.v}", "open(F, '>C')"),
    # a version with its ABI letters: free-threaded, pymalloc (Debian's 3.7 and before), debug
    "python3.13t -c": ("python3.13t -c ${context.v}", "open('C', 'w')"),
    "python3.12d -c": ("python3.12d -c ${context.v}", "open('C', 'w')"),
    "rbash -c": ("rbash -c ${context.v}", "touch C"),
    # Debian's statically linked shells and mksh's legacy build; sash
    "bash-static -c": ("bash-static -c ${context.v}", "touch C"),
    "zsh-static -c": ("zsh-static -c ${context.v}", "touch C"),
    "mksh-static -c": ("mksh-static -c ${context.v}", "touch C"),
    "lksh -c": ("lksh -c ${context.v}", "touch C"),
    "sash -c": ("sash -c ${context.v}", "touch C"),
    "busybox sh -c": ("busybox sh -c ${context.v}", "touch C"),
}


@pytest.mark.parametrize("name", sorted(RUNS_IT_UNDER_ANOTHER_NAME))
def test_text_is_refused_where_git_or_a_renamed_program_runs_it(name: str) -> None:
    template, value = RUNS_IT_UNDER_ANOTHER_NAME[name]
    if shutil.which(name.split()[0]):  # busybox is not installed everywhere
        as_before = run_bash(template.replace("${context.v}", shlex.quote(value)))
        assert "C" in as_before.created, as_before.stderr
    with pytest.raises(InterpolationError) as caught:
        render_shell(template, {"context": {"v": value}})
    assert "text cannot go here" in caught.value.reason


@pytest.mark.parametrize("name", ["python3.7m", "python3.6m", "python3.8dm"])
def test_a_python_named_with_its_abi_letters_is_python(name: str) -> None:
    """Debian's `python3.7m` (pymalloc) and the like, not run here (pyenv may hold shims of
    them that run nothing): `-c`'s argument is code as it is for `python3.7`."""
    with pytest.raises(InterpolationError) as caught:
        render_shell(f"{name} -c ${{context.v}}", {"context": {"v": "open('C', 'w')"}})
    assert "text cannot go here" in caught.value.reason


@pytest.mark.parametrize(
    "template",
    [
        "git filter-repo --force --commit-callback ${context.v}",
        "git filter-repo --blob-callback=${context.v}",
        "git filter-repo --filename-callback ${context.v}",
    ],
)
def test_text_is_refused_as_a_callback_git_filter_repo_runs(template: str) -> None:
    """git filter-repo (filter-branch's successor) runs each `--*-callback` as the body of a
    Python function: 71f8a53 listed filter-branch's filters but not these, so the value ran as
    Python (not run here: filter-repo is a separate install)."""
    with pytest.raises(InterpolationError) as caught:
        render_shell(template, {"context": {"v": "import os; os.system('touch C')"}})
    assert "text cannot go here" in caught.value.reason
    data = "git filter-repo --path ${context.v} --replace-text x.txt"
    assert "'a b'" in render_shell(data, {"context": {"v": "a b"}})


def test_the_data_words_of_git_s_running_commands_and_renamed_programs_stay_data() -> None:
    for template in (
        "git grep -O ${context.v}",
        "git rebase --onto ${context.v} main",
        "git bisect start ${context.v}",
        "git bisect run ./test.sh ${context.v}",
        "git submodule foreach --recursive ./x.sh ${context.v}",
        "git send-email --to ${context.v} --cc ${context.v} x.patch",
        "python3.11 script.py ${context.v}",
        "python3.13t script.py ${context.v}",
        "bash-static -c 'printf %s \"$1\"' _ ${context.v}",
        "sha256sum ${context.v}",
        "busybox wc -c ${context.v}",
        "rbash -c 'printf %s \"$1\"' _ ${context.v}",
    ):
        assert "'a b'" in render_shell(template, {"context": {"v": "a b"}}), template


# A wrapper's option that takes the next word, missing from its table, made that word the
# command and the real command (the value) a mere argument: each of these ran the value.
NODE_SCRIPT = 'echo \'require("fs").writeFileSync("C", "")\' > e.js\n'
PYTHON_SCRIPT = 'echo \'open("C", "w")\' > e.py\n'
BEHIND_AN_OPTION_WITH_ARGUMENT = {
    "stdbuf --output 0": "stdbuf --output 0 ${context.v} C",
    "xargs --max-args 1": "echo C | xargs --max-args 1 ${context.v}",
    "unshare --map-user 0": "unshare --map-user 0 ${context.v} C",
    "strace --output FILE": "strace --output /dev/null ${context.v} C",
    "strace -X raw": "strace -X raw ${context.v} C",
    # an interpreter's option that takes the next word: the value is the script it runs
    "ruby -E UTF-8": "ruby -E UTF-8 ${context.v}",
    "ruby --encoding UTF-8": "ruby --encoding UTF-8 ${context.v}",
    "node --title x": NODE_SCRIPT + "node --title x ${context.v}",
    "node -C dev": NODE_SCRIPT + "node -C dev ${context.v}",
    "node --input-type commonjs": NODE_SCRIPT + "node --input-type commonjs ${context.v}",
    "node --disable-proto delete": NODE_SCRIPT + "node --disable-proto delete ${context.v}",
    "node --use-largepages off": NODE_SCRIPT + "node --use-largepages off ${context.v}",
    "node --inspect-publish-uid http": NODE_SCRIPT + "node --inspect-publish-uid http ${context.v}",
    "node --v8-pool-size 2": NODE_SCRIPT + "node --v8-pool-size 2 ${context.v}",
    "node --env-file-if-exists F": NODE_SCRIPT + "node --env-file-if-exists F ${context.v}",
    "python3 --check-hash-based-pycs always": PYTHON_SCRIPT
    + "python3 --check-hash-based-pycs always ${context.v}",
}


@pytest.mark.parametrize("name", sorted(BEHIND_AN_OPTION_WITH_ARGUMENT))
def test_the_command_a_wrapper_runs_after_an_option_it_does_not_list_is_code(name: str) -> None:
    template = BEHIND_AN_OPTION_WITH_ARGUMENT[name]
    if shutil.which(name.split()[0]):
        value = {"node": "e.js", "python3": "e.py"}.get(name.split()[0], "touch")
        as_before = run_bash(template.replace("${context.v}", value))
        assert "C" in as_before.created, as_before.stderr
    with pytest.raises(InterpolationError) as caught:
        render_shell(template, {"context": {"v": "touch"}})
    assert "text cannot go here" in caught.value.reason


def test_the_arguments_of_a_wrapped_command_after_known_options_stay_data() -> None:
    for template in (
        "time -p make ${context.v}",
        "nice -10 make ${context.v}",
        "sudo -E make install PREFIX=${context.v}",
        "timeout --preserve-status 5 cat ${context.v}",
        "xargs -0r rm -- ${context.v}",
        "strace -f -o log cat ${context.v}",
        "ionice -c2 -n7 cat ${context.v}",
        "stdbuf -oL cat ${context.v}",
        "taskset -c 0 cat ${context.v}",
        "unshare -r cat ${context.v}",
        "valgrind -q --leak-check=full ./a ${context.v}",
        # wrappers whose flags 892b02a left unlisted: read both ways, these were refused
        "flock -x /tmp/lock make ${context.v}",
        "flock -n -o .lock cat ${context.v}",
        "flock --exclusive --nonblock .lock cat ${context.v}",
        "setsid -w cat ${context.v}",
        "setsid -f -c cat ${context.v}",
        "doas -n cat ${context.v}",
        "nsenter -t 1 -m -u cat ${context.v}",
        "nsenter -a -F -t 1 cat ${context.v}",
        "setpriv --no-new-privs --clear-groups cat ${context.v}",
        "chroot --skip-chdir / cat ${context.v}",
        "numactl -l cat ${context.v}",
        "ltrace -f -c cat ${context.v}",
        "torsocks -i cat ${context.v}",
        "unbuffer -p cat ${context.v}",
    ):
        assert "'a b'" in render_shell(template, {"context": {"v": "a b"}}), template


@pytest.mark.parametrize(
    "template",
    [
        "flock -x /tmp/lock ${context.v} C",
        "setsid -w ${context.v} C",
        "nsenter -t 1 -m ${context.v} C",
        "doas -n ${context.v} C",
        "ltrace -f ${context.v} C",
    ],
)
def test_the_command_after_those_flags_is_still_code(template: str) -> None:
    with pytest.raises(InterpolationError) as caught:
        render_shell(template, {"context": {"v": "touch"}})
    assert "text cannot go here" in caught.value.reason


def test_the_other_words_of_those_programs_are_data() -> None:
    for template in (
        "tar -cf ${context.v} a",
        "tar -xf a.tar -- ${context.v}",
        "scp -o BatchMode=yes a ${context.v}",
        "vim ${context.v}",
        "tar -xvzf ${context.v} -C out",
        "tar --checkpoint=1 -cf ${context.v} a",
        "tar xf ${context.v}",
        "rsync -avz ${context.v} h:y",
        "scp -qP 22 ${context.v} h:y",
        "git clone -c user.name=${context.v} src d",
        "git clone --depth 1 src ${context.v}",
        "git fetch origin ${context.v}",
        "zip -qT -r ${context.v} d",
        "sort -o ${context.v} -k 2 a",
    ):
        assert "'a b'" in render_shell(template, {"context": {"v": "a b"}}), template


def test_a_value_refused_where_it_is_written_is_not_reported_again_through_its_variable(
    tmp_path: Path,
) -> None:
    """`PATH="${v}/bin:$PATH"` is LL034 where the value is written; the `$PATH` on the same
    line's right-hand side also made LL035 say the value "is assigned to `PATH`, which the action
    then uses in a value assigned to `PATH`", with a hint about arithmetic: the same finding
    twice, the second in words that fit neither."""
    path = tmp_path / "loop.yaml"
    path.write_text(
        "name: v\ninitial: go\nscope: ['.']\nparameters:\n  v: {type: string, default: x}\n"
        "states:\n  go:\n    action: |\n"
        '      PATH="${context.v}/bin:$PATH" python -V\n'
        "    next: done\n  done:\n    terminal: true\n"
    )
    found = [(d.code, d.line) for d in check_file(path)]
    assert ("LL034", 9) in found
    assert [code for code, _ in found if code == "LL035"] == []


def test_a_declaration_of_a_value_s_variable_is_checked_not_a_crash(tmp_path: Path) -> None:
    """`export PATH="$LL_CONTEXT_dir/bin:$PATH"` (any `export`/`declare`/`local` of a value's
    variable, as the docs advise) made validate and run an internal error (ValueError: the
    declaration check looked for the `}` of a `${...}` after a `$NAME`)."""
    path = tmp_path / "loop.yaml"
    path.write_text(
        "name: v\ninitial: go\nscope: ['.']\nparameters:\n  dir: {type: string, default: /o}\n"
        "states:\n  go:\n    action: |\n"
        '      export X="$LL_CONTEXT_dir/bin"\n'
        "      declare Y=$LL_CONTEXT_dir\n"
        '      export PATH="$LL_CONTEXT_dir/bin:$PATH"\n'
        '      echo "$X $Y"\n'
        "    next: done\n  done:\n    terminal: true\n"
    )
    found = {(d.code, d.line) for d in check_file(path) if d.code in ("LL034", "LL035")}
    assert found == {("LL035", 11)}
    ran = ll_loop(tmp_path, "run", "loop.yaml")
    assert ran.code == 0, ran.stderr
    assert "internal error" not in ran.stderr


def test_a_value_flowing_into_code_is_told_to_be_a_command_not_an_integer(tmp_path: Path) -> None:
    """LL035 of a value's variable flowing into a program variable (PATH, NODE_OPTIONS) said
    "bash evaluates the value there" with the hint "unless it is `type: integer`": an integer is
    no PATH; the way out there is a `type: command` parameter. Arithmetic keeps its hint."""
    path = tmp_path / "loop.yaml"
    path.write_text(
        "name: v\ninitial: go\nscope: ['.']\nparameters:\n  v: {type: string, default: x}\n"
        "states:\n  go:\n    action: |\n"
        '      export PATH="$LL_CONTEXT_v/bin:$PATH"\n'
        "      x=${context.v}; NODE_OPTIONS=$x node app.js\n"
        "      n=${context.v}; echo $((n + 1))\n"
        "    next: done\n  done:\n    terminal: true\n"
    )
    found = {d.line: d for d in check_file(path) if d.code == "LL035"}
    assert sorted(found) == [9, 10, 11]
    for line in (9, 10):
        assert "runs as code there" in found[line].message, found[line].message
        assert "type: command" in (found[line].hint or "")
        assert "integer" not in (found[line].hint or "")
    assert "bash evaluates the value there" in found[11].message
    assert "type: integer" in (found[11].hint or "")


@pytest.mark.parametrize(
    "template",
    [
        "set -k\ngit ls-remote ssh://h/x GIT_SSH_COMMAND=${context.v}",
        "set -o keyword\ngit ls-remote ssh://h/x GIT_SSH_COMMAND=${context.v}",
        "set -ek\ngit ls-remote ssh://h/x GIT_SSH_COMMAND=${context.v}",
        # turned on through eval's literal code, or `command -p` / `builtin --`
        "eval 'set -k'\ngit ls-remote ssh://h/x GIT_SSH_COMMAND=${context.v}",
        "command -p set -k\ngit ls-remote ssh://h/x GIT_SSH_COMMAND=${context.v}",
        "builtin -- set -k\ngit ls-remote ssh://h/x GIT_SSH_COMMAND=${context.v}",
    ],
)
def test_text_is_refused_anywhere_in_a_script_that_turns_on_set_k(template: str) -> None:
    """With `set -k` bash takes every `NAME=value` argument for an assignment in the command's
    environment, as `env NAME=value` would: `git ls-remote URL GIT_SSH_COMMAND=${...}` ran the
    value, which the engine took for a plain argument of git. Such a script now takes only
    integers, as one that turns on history or alias expansion."""
    as_before = run_bash(template.replace("${context.v}", shlex.quote("touch CANARY; true")))
    assert "CANARY" in as_before.created, as_before.stderr
    with pytest.raises(InterpolationError) as caught:
        render_shell(template, {"context": {"v": "touch CANARY; true"}})
    assert "turns on `set -k`" in caught.value.reason
    assert render_shell(template, {"context": {"v": 3}}).endswith("=3")


@pytest.mark.parametrize("template", ["f=H\nset -$f\necho ${context.v}", "set -${context.v}"])
def test_an_option_known_only_at_run_time_is_not_called_set_k(template: str) -> None:
    """`set -$f` with f=H turns on history expansion, not `set -k`: the refusal said the script
    turns on `set -k`; it now says the option is known only when the script runs and may be
    any (`-k`, `-H`, ...)."""
    with pytest.raises(InterpolationError) as caught:
        render_shell(template, {"context": {"v": "H"}})
    reason = caught.value.reason
    assert "turns on `set -k`" not in reason
    assert "sets a shell option known only when it runs" in reason
    assert "`set -H`" in reason


def test_other_set_options_leave_values_as_they_were() -> None:
    for template in (
        "set -e\necho ${context.v}",
        "set -- -k\necho ${context.v}",
        "set -xo pipefail\necho ${context.v}",
    ):
        assert render_shell(template, {"context": {"v": "a b"}}).endswith("'a b'"), template
