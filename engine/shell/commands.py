"""What a simple command does with each of its arguments, from the literal words around it.

The bash grammar says where a word is; it does not say that `eval` runs its arguments as code,
that `printf -v` takes a variable name, or that `env FOO=1 bash -c` runs the word after `-c`.
This module knows those commands: `argument_role(words, index)` tells what happens to the word at
`index` of a simple command (`words[0]` is the command name; `None` is a word not known before
the script runs, such as an interpolated value or `$var`).

Wrappers (`command`, `builtin`, `exec`, `env`, `sudo`, `timeout`, `xargs`, ...) are looked
through to the command they run. A command name that is only known at run time (`$tool arg`)
makes its arguments unknown: they could be `eval`'s. The tables are explicit rather than clever;
a program missing here (a language interpreter with its own way to run text) is the boundary
documented in docs/format.md.
"""

from __future__ import annotations

import posixpath
import re
from collections.abc import Sequence
from dataclasses import dataclass
from enum import Enum


class Role(Enum):
    """What bash (or the program) does with a word, ordered from harmless to most restrictive."""

    VALUE = 0
    """Only expanded: quoting the value for its position makes it exactly that text."""
    CODE = 1
    """Run as code (or chooses what runs): only a `type: command` value may go here."""
    COMMENT = 2
    """In a `#` comment, which a newline in the value would end: only integers."""
    ARITHMETIC = 3
    """Evaluated as arithmetic, where `a[$(cmd)]` runs `cmd`: only integers."""
    NAME = 4
    """Read as a variable name, whose subscript is arithmetic: only integers."""
    UNKNOWN = 5
    """Nothing known about it: refused for anything but an integer (fail closed)."""


@dataclass(frozen=True)
class Verdict:
    role: Role
    why: str = ""
    function: str = ""
    """The script's own function the word is passed to (its body is not followed)."""
    opened_by: str = ""
    """A program that may open the word with a mode read from its text (perl's `<>` and
    two-argument `open`: `cmd|` runs cmd, `>f` truncates f)."""


VALUE = Verdict(Role.VALUE)
Word = str | None

# Commands that run every argument as code (or as a file of code).
_CODE_ALL = {
    "eval": "an argument of `eval`, which runs it as code",
    "trap": "an argument of `trap`, which runs it as code",
    "alias": "an argument of `alias`, whose text runs as code",
    "source": "an argument of `source`, which runs a file as code",
    ".": "an argument of `.`, which runs a file as code",
    "watch": "an argument of `watch`, which runs it with `sh -c`",
    "ssh": "an argument of `ssh`, which runs it as a remote command",
    "parallel": "an argument of `parallel`, which runs it as code",
    "bind": "an argument of `bind`, which can bind keys to code",
    "complete": "an argument of `complete`, which can run code",
    "compgen": "an argument of `compgen`, which can run code",
    "enable": "an argument of `enable`, which can load a builtin",
    "fc": "an argument of `fc`, which re-runs commands",
    "history": "an argument of `history`, which adds commands (`-s`, `-r FILE`) that `fc` runs",
    "su": "an argument of `su`, which runs a shell",
    "runuser": "an argument of `runuser`, which runs a shell",
    "script": "an argument of `script`, which can run a command",
}

SHELLS = frozenset(
    {"bash", "rbash", "sh", "zsh", "dash", "ksh", "mksh", "lksh", "pdksh", "oksh", "loksh",
     "ash", "yash", "posh", "fish", "csh", "tcsh", "sash"}
)  # fmt: skip
_SHELLS = SHELLS

# Interpreters: the options after which the next word is a program text, and options that take
# an argument (which is then a value); the first non-option word is a script file (code).
_INTERPRETERS: dict[str, tuple[frozenset[str], frozenset[str]]] = {
    "python": (frozenset({"-c", "-m"}), frozenset({"-W", "-X", "-Q", "--check-hash-based-pycs"})),
    "perl": (frozenset({"-e", "-E", "-M", "-m"}), frozenset()),
    "ruby": (
        frozenset({"-e"}),
        frozenset({"-C", "-E", "--encoding", "--external-encoding", "--internal-encoding"}),
    ),
    "node": (
        frozenset({"-e", "--eval", "-p", "--print"}),
        frozenset(
            {
                "-C",
                "--conditions",
                "--title",
                "--input-type",
                "--experimental-default-type",
                "--redirect-warnings",
                "--report-dir",
                "--report-directory",
                "--report-filename",
                "--report-signal",
                "--diagnostic-dir",
                "--cpu-prof-dir",
                "--cpu-prof-name",
                "--heap-prof-dir",
                "--heap-prof-name",
                "--icu-data-dir",
                "--openssl-config",
                "--disable-warning",
                "--unhandled-rejections",
                "--watch-path",
                "--inspect-port",
                "--debug-port",
                "--max-http-header-size",
                "--secure-heap",
                "--secure-heap-min",
                "--heapsnapshot-signal",
                "--heapsnapshot-near-heap-limit",
                "--dns-result-order",
                "--tls-cipher-list",
                "--tls-keylog",
                "--trace-event-categories",
                "--trace-event-file-pattern",
                "--snapshot-blob",
                "--localstorage-file",
                "--test-reporter",
                "--test-reporter-destination",
                "--test-name-pattern",
                "--test-skip-pattern",
                "--test-concurrency",
                "--test-timeout",
                "--test-shard",
                "--stack-trace-limit",
                "--run",
                "--disable-proto",
                "--use-largepages",
                "--inspect-publish-uid",
                "--v8-pool-size",
                "--network-family-autoselection-attempt-timeout",
                "--allow-fs-read",
                "--allow-fs-write",
                "--experimental-policy",
                "--policy-integrity",
                "--experimental-sea-config",
                "--build-snapshot-config",
                "--watch-kill-signal",
                "--experimental-config-file",
                "--test-isolation",
                "--test-coverage-include",
                "--test-coverage-exclude",
                "--test-coverage-branches",
                "--test-coverage-functions",
                "--test-coverage-lines",
            }
        ),
    ),
    "php": (frozenset({"-r", "-B", "-E", "-R", "-F"}), frozenset()),
    "lua": (frozenset({"-e"}), frozenset()),
    "Rscript": (frozenset({"-e"}), frozenset()),
    "pwsh": (
        frozenset(
            {
                "-c",
                "-Command",
                "-command",
                "-EncodedCommand",
                "-encodedcommand",
                "-e",
                "-ec",
                "-File",
                "-file",
                "-f",
            }
        ),
        frozenset(
            {
                "-ExecutionPolicy",
                "-executionpolicy",
                "-ep",
                "-WorkingDirectory",
                "-wd",
                "-workingdirectory",
                "-InputFormat",
                "-inputformat",
                "-OutputFormat",
                "-of",
                "-outputformat",
                "-WindowStyle",
                "-windowstyle",
                "-ConfigurationName",
                "-config",
            }
        ),
    ),
    "julia": (
        frozenset({"-e", "--eval", "-E", "--print"}),
        frozenset(
            {
                "-J",
                "--sysimage",
                "-t",
                "--threads",
                "-p",
                "--procs",
                "-C",
                "--cpu-target",
                "--machine-file",
                "-H",
                "--home",
            }
        ),
    ),
    "expect": (frozenset({"-f", "-b"}), frozenset({"-D"})),
    # gdb runs the commands of `-ex`/`-x` (`_LOADS`) and debugs (and may run) its program
    "gdb": (
        frozenset(),
        frozenset(
            {
                "-p",
                "--pid",
                "-c",
                "--core",
                "-s",
                "--symbols",
                "-d",
                "--directory",
                "-cd",
                "--cd",
                "-b",
                "-l",
                "-i",
                "--interpreter",
                "-tty",
                "--tty",
                "-D",
                "--data-directory",
            }
        ),
    ),
    # `deno eval CODE`, `deno run SCRIPT`, `bun -e CODE`, `bun run SCRIPT` (the subcommand is
    # read first: `_runtime_role`), `ts-node -e CODE`
    "deno": (
        frozenset({"--eval", "--eval-file"}),
        frozenset(
            {
                "-c",
                "--config",
                "--import-map",
                "--location",
                "--seed",
                "--cert",
                "--ext",
                "--lock",
                "-L",
                "--log-level",
                "--inspect",
                "--inspect-brk",
                "--inspect-wait",
                "--env-file",
                "--v8-flags",
                "--frozen",
                "--reload",
                "-r",
            }
        ),
    ),
    "bun": (
        frozenset({"-e", "--eval", "-p", "--print"}),
        frozenset(
            {
                "-c",
                "--config",
                "--cwd",
                "--env-file",
                "--conditions",
                "--port",
                "--smol",
                "--tsconfig-override",
                "--define",
                "-d",
                "--loader",
                "-l",
                "--main-fields",
                "--extension-order",
                "--jsx-factory",
                "--jsx-fragment",
                "--jsx-import-source",
                "--jsx-runtime",
                "--elide-lines",
                "--filter",
                "-F",
            }
        ),
    ),
    "ts-node": (
        frozenset({"-e", "--eval", "-p", "--print"}),
        frozenset(
            {
                "-O",
                "--compiler-options",
                "-P",
                "--project",
                "-D",
                "--ignore-diagnostics",
                "--cwd",
                "--scope-dir",
                "--ignore",
            }
        ),
    ),
    "osascript": (frozenset({"-e"}), frozenset()),
    "awk": (
        frozenset({"-f", "--file", "-e", "--source", "-E", "--exec"}),
        frozenset({"-v", "-F", "--assign", "--field-separator"}),
    ),
    "sed": (frozenset({"-e", "--expression", "-f", "--file"}), frozenset({"-l", "--line-length"})),
}
# Options whose argument names code the interpreter loads and runs before its program, which
# still follows: a module or library (`node -r m`, `ruby -r m`, `lua -l m`, `gawk -i f`, a
# gawk extension `-l`), a directory modules are loaded from (`perl -I`, `ruby -I`), a php.ini
# or setting (`php -c`, `php -d auto_prepend_file=...`, a zend extension `-z`).
_LOADS: dict[str, frozenset[str]] = {
    "perl": frozenset({"-I"}),
    "ruby": frozenset({"-r", "-I"}),
    "node": frozenset(
        {
            "-r",
            "--require",
            "--import",
            "--loader",
            "--experimental-loader",
            "--env-file",
            "--env-file-if-exists",
            "--test-global-setup",
        }
    ),
    "php": frozenset({"-c", "-d", "-z"}),
    "lua": frozenset({"-l"}),
    "awk": frozenset({"-i", "--include", "-l", "--load"}),
    "julia": frozenset({"-L", "--load"}),
    "gdb": frozenset(
        {
            "-e",
            "--exec",
            "-se",  # the program gdb runs on `run`
            "-ex",
            "--ex",
            "-eval-command",
            "--eval-command",
            "-iex",
            "--iex",
            "-init-eval-command",
            "--init-eval-command",
            "-x",
            "--x",
            "-command",
            "--command",
            "-ix",
            "--ix",
            "-init-command",
            "--init-command",
        }
    ),
    "expect": frozenset({"-c"}),  # commands run before the script, which still follows
    "deno": frozenset({"--preload", "--require", "--import"}),
    "bun": frozenset({"-r", "--require", "--preload", "--import"}),
    "ts-node": frozenset({"-r", "--require", "-C", "--compiler", "--transpiler"}),
}
_INTERPRETER_ALIASES = {
    "python3": "python", "python2": "python", "pypy": "python", "pypy3": "python",
    "nodejs": "node", "gawk": "awk", "mawk": "awk", "nawk": "awk",
    "gsed": "sed", "perl5": "perl", "tclsh": "lua", "R": "Rscript", "luajit": "lua",
    "jython": "python", "tsx": "node", "gdb-multiarch": "gdb",
}  # fmt: skip
_VERSIONED = re.compile(r"(?P<name>[A-Za-z]+?)-?[0-9]+(?:\.[0-9]+)*[a-z]{0,3}(?:-[A-Za-z0-9_-]+)?")
"""A program name with its version (`python3.11`, `perl5.36.0`, `ruby3.2`, `lua5.4`,
`php8.2`, `pypy3.10`, `perl5.36-x86_64-linux-gnu`), and ABI letters after it (`python3.13t`
free-threaded, `python3.7m`, `python3.12d`): the same program."""


def program(base: str) -> str:
    """The program a command's base name runs, as the tables name it: `python3.11` is
    `python`, `perl5.36.0` is `perl`, `bash-static` is `bash` (the version or the static
    build's suffix dropped when the name without it is a listed shell or interpreter); any
    other name is itself."""
    if base in _SHELLS or base in _INTERPRETERS or base in _INTERPRETER_ALIASES:
        return base
    for suffix in ("-static", ".static"):  # Debian's bash-static, zsh-static, mksh-static
        if base.endswith(suffix) and base != suffix:
            found = program(base.removesuffix(suffix))
            if found in _SHELLS or found in _INTERPRETERS or found in _INTERPRETER_ALIASES:
                return found
    versioned = _VERSIONED.fullmatch(base)
    if versioned is None:
        return base
    name = versioned["name"]
    if name in _SHELLS or name in _INTERPRETERS or name in _INTERPRETER_ALIASES:
        return name
    return base


@dataclass(frozen=True)
class _Wrapper:
    """A command that runs another: options (those taking an argument listed), then a fixed
    number of operands (a duration, a directory), then the command."""

    with_argument: frozenset[str] = frozenset()
    operands: int = 0
    code_options: frozenset[str] = frozenset()  # options whose argument is code
    skips_assignments: bool = False  # `env A=1 cmd`
    flags: frozenset[str] = frozenset()
    long_with_equals: bool = False  # its long options take an argument only as `--name=value`
    """Options known to take no argument. Any other option without `=` may take the next word
    (`stdbuf --output 0 CMD`, `strace -X raw CMD`), so the command may start at either word:
    a word is classified both ways and the more restrictive answer wins."""


_WRAPPERS: dict[str, _Wrapper] = {
    # `! ! eval X`: tree-sitter-bash reads the second `!` as a command name; bash reads every
    # leading `!` as the reserved word that negates what follows.
    "!": _Wrapper(),
    "builtin": _Wrapper(),
    "command": _Wrapper(flags=frozenset({"-p"})),
    "exec": _Wrapper(frozenset({"-a"}), flags=frozenset({"-c", "-l"})),
    "nohup": _Wrapper(),
    "time": _Wrapper(flags=frozenset({"-p"})),
    "coproc": _Wrapper(),
    "nice": _Wrapper(frozenset({"-n", "--adjustment"})),
    "ionice": _Wrapper(frozenset({"-c", "-n", "-p", "-P", "-u", "--class", "--classdata"})),
    "stdbuf": _Wrapper(frozenset({"-i", "-o", "-e", "--input", "--output", "--error"})),
    "setsid": _Wrapper(flags=frozenset({"-c", "--ctty", "-f", "--fork", "-w", "--wait"})),
    "unbuffer": _Wrapper(flags=frozenset({"-p"})),
    "env": _Wrapper(
        frozenset({"-u", "--unset", "-C", "--chdir"}),
        code_options=frozenset({"-S", "--split-string"}),
        skips_assignments=True,
        flags=frozenset({"-i", "--ignore-environment", "-0", "--null", "-v", "--debug", "-"}),
    ),
    "timeout": _Wrapper(
        frozenset({"-s", "--signal", "-k", "--kill-after"}),
        operands=1,
        flags=frozenset({"--preserve-status", "--foreground", "-v", "--verbose"}),
    ),
    "chroot": _Wrapper(
        frozenset({"--userspec", "--groups"}), operands=1, flags=frozenset({"--skip-chdir"})
    ),
    "flock": _Wrapper(
        frozenset({"-w", "--timeout", "-E", "--conflict-exit-code"}),
        operands=1,
        code_options=frozenset({"-c", "--command"}),
        flags=frozenset(
            {
                "-s",
                "--shared",
                "-x",
                "-e",
                "--exclusive",
                "-u",
                "--unlock",
                "-n",
                "--nb",
                "--nonblock",
                "-o",
                "--close",
                "-F",
                "--no-fork",
                "--verbose",
            }
        ),
    ),
    "sudo": _Wrapper(
        frozenset(
            {
                "-u",
                "-g",
                "-C",
                "-D",
                "-h",
                "-p",
                "-r",
                "-t",
                "-U",
                "-T",
                "--user",
                "--group",
                "--close-from",
                "--chdir",
                "--host",
                "--prompt",
                "--role",
                "--type",
                "--other-user",
                "--command-timeout",
            }
        ),
        code_options=frozenset({"-s", "-i", "--shell", "--login"}),
        flags=frozenset(
            {
                "-A",
                "-B",
                "-b",
                "-E",
                "-H",
                "-K",
                "-k",
                "-n",
                "-P",
                "-S",
                "--askpass",
                "--bell",
                "--background",
                "--preserve-env",
                "--set-home",
                "--remove-timestamp",
                "--reset-timestamp",
                "--non-interactive",
                "--preserve-groups",
                "--stdin",
            }
        ),
    ),
    "doas": _Wrapper(
        frozenset({"-u", "-C"}), code_options=frozenset({"-s"}), flags=frozenset({"-n", "-L"})
    ),
    "xargs": _Wrapper(
        frozenset(
            {
                "-I",
                "-L",
                "-n",
                "-P",
                "-s",
                "-d",
                "-E",
                "-a",
                "--arg-file",
                "--delimiter",
                "--max-args",
                "--max-procs",
                "--max-chars",
                "--process-slot-var",
            }
        ),
        flags=frozenset(
            {
                "-0",
                "-p",
                "-r",
                "-t",
                "-x",
                "-o",
                "-e",
                "-i",
                "-l",
                "--null",
                "--no-run-if-empty",
                "--interactive",
                "--open-tty",
                "--verbose",
                "--exit",
                "--show-limits",
                "--eof",
                "--replace",
                "--max-lines",
            }
        ),
    ),
    # programs that run the rest of their words as a command (options taking an argument
    # listed as far as they matter; what is missed makes a later word the command: refused)
    "taskset": _Wrapper(operands=1, flags=frozenset({"-a", "-c", "--all-tasks", "--cpu-list"})),
    "strace": _Wrapper(
        frozenset(
            {
                "-o",
                "-e",
                "-p",
                "-s",
                "-u",
                "-E",
                "-a",
                "-b",
                "-I",
                "-P",
                "-X",
                "-S",
                "-O",
                "-U",
                "--output",
                "--string-limit",
                "--user",
                "--env",
                "--columns",
                "--attach",
            }
        ),
        flags=frozenset(
            {
                "-f",
                "-ff",
                "-c",
                "-C",
                "-q",
                "-qq",
                "-r",
                "-t",
                "-tt",
                "-ttt",
                "-T",
                "-v",
                "-w",
                "-x",
                "-xx",
                "-y",
                "-yy",
                "-z",
                "-Z",
                "-k",
                "-i",
                "-n",
                "-F",
                "-d",
                "-D",
                "--follow-forks",
                "--summary-only",
                "--summary",
                "--quiet",
                "--no-abbrev",
            }
        ),
    ),
    "ltrace": _Wrapper(
        frozenset({"-o", "-e", "-p", "-s", "-u", "-n", "-a", "-A", "-D", "-F", "-l", "-w", "-x"}),
        flags=frozenset(
            {
                "-b",
                "-c",
                "-C",
                "-f",
                "-i",
                "-L",
                "-r",
                "-S",
                "-t",
                "-tt",
                "-ttt",
                "-T",
                "--demangle",
                "--no-signals",
            }
        ),
    ),
    "unshare": _Wrapper(
        frozenset({"-S", "-G", "--setuid", "--setgid", "-R", "-w", "--root", "--wd"}),
        flags=frozenset(
            {
                "-m",
                "-u",
                "-i",
                "-n",
                "-p",
                "-U",
                "-C",
                "-T",
                "-f",
                "-r",
                "-c",
                "--fork",
                "--map-root-user",
                "--map-current-user",
                "--kill-child",
                "--mount-proc",
                "--mount",
                "--uts",
                "--ipc",
                "--net",
                "--pid",
                "--user",
                "--cgroup",
                "--time",
            }
        ),
    ),
    "nsenter": _Wrapper(
        frozenset({"-t", "-S", "-G", "--target", "-W", "--wdns", "--setuid", "--setgid"}),
        # the namespace options, `-r`/`--root` and `-w`/`--wd` take a file or directory only
        # attached (`--mount=F`, `-mF`, `--root=D`; util-linux 2.38 `nsenter --help`)
        flags=frozenset(
            {
                "-r",
                "--root",
                "-w",
                "--wd",
                "-a",
                "--all",
                "-m",
                "-u",
                "-i",
                "-n",
                "-p",
                "-C",
                "-U",
                "-T",
                "--mount",
                "--uts",
                "--ipc",
                "--net",
                "--pid",
                "--cgroup",
                "--user",
                "--time",
                "-F",
                "--no-fork",
                "-Z",
                "--follow-context",
                "--preserve-credentials",
            }
        ),
    ),
    "setpriv": _Wrapper(
        frozenset({"--reuid", "--regid", "--ruid", "--rgid", "--groups"}),
        flags=frozenset(
            {
                "--nnp",
                "--no-new-privs",
                "--clear-groups",
                "--keep-groups",
                "--init-groups",
                "--reset-env",
            }
        ),
    ),
    "chrt": _Wrapper(
        frozenset({"-T", "-P", "-D", "--sched-runtime", "--sched-period", "--sched-deadline"}),
        operands=1,
        flags=frozenset(
            {
                "-a",
                "-b",
                "-d",
                "-e",
                "-f",
                "-i",
                "-o",
                "-r",
                "-R",
                "-v",
                "--all-tasks",
                "--batch",
                "--deadline",
                "--ext",
                "--fifo",
                "--idle",
                "--other",
                "--rr",
                "--reset-on-fork",
                "--verbose",
            }
        ),
    ),
    "fakeroot": _Wrapper(frozenset({"-s", "-i", "-l", "-b"})),
    "firejail": _Wrapper(long_with_equals=True),
    "prlimit": _Wrapper(frozenset({"-p", "--pid"})),
    "numactl": _Wrapper(
        frozenset({"-N", "-m", "-C", "-p", "-i", "-P"}),
        flags=frozenset({"-l", "--localalloc", "-a", "--all", "-b", "--balancing"}),
    ),
    "valgrind": _Wrapper(
        long_with_equals=True, flags=frozenset({"-q", "-v", "-s", "--quiet", "--verbose"})
    ),
    "eatmydata": _Wrapper(),
    # `faketime [-m] [-f] [-p PID] [--date-prog PROG] TIMESTAMP CMD` (faketime 0.9.10 --help)
    "faketime": _Wrapper(
        frozenset({"-p"}),
        operands=1,
        code_options=frozenset({"--date-prog"}),
        flags=frozenset({"-f", "-m", "--exclude-monotonic", "--disable-shm"}),
    ),
    "torsocks": _Wrapper(
        frozenset({"-a", "-P", "-u", "-p"}),
        flags=frozenset({"-i", "--isolate", "-q", "--quiet", "-d", "--debug"}),
    ),
    "proxychains": _Wrapper(frozenset({"-f"})),
    "proxychains4": _Wrapper(frozenset({"-f"})),
    "dbus-run-session": _Wrapper(frozenset({"--config-file", "--dbus-daemon"})),
    "tini": _Wrapper(frozenset({"-p", "-e"})),
    "ssh-agent": _Wrapper(frozenset({"-a", "-E", "-P", "-t"})),
}

WRAPPER_OPERANDS = {name: wrapper.operands for name, wrapper in _WRAPPERS.items()}
"""Commands that run the command after their options (and this many operands)."""
WRAPPER_ARGUMENTS = {name: wrapper.with_argument for name, wrapper in _WRAPPERS.items()}
"""The options of each wrapper that take the next word as their argument (`sudo -u USER`)."""

# Builtins whose arguments are variable names, or after which one is: (option → role of its
# argument); `None` for the role of the other operands.
_NAME_OPTION = frozenset({"-v", "-R"})


_INPUT_FILE = re.compile(r"(?:^|/)(?:stdin|fd/[0-9]+)$")
"""A file that is what a program reads (`/dev/stdin`, `/dev/fd/3`, `/proc/self/fd/0`)."""


def runs_its_input(words: Sequence[Word], functions: frozenset[str] = frozenset()) -> bool:
    """Whether the simple command `words` may run what it reads on stdin as a program: its
    next word would be code (`bash`, `python3`, `ssh host`, `parallel`), or not classified (a
    name known only at run time, a function of the script), an interpreter given `-`, or a
    program file naming an input (`bash /dev/stdin`, `awk -f /dev/fd/3`: any input redirection
    of the command counts)."""
    extended = [*words, "script.txt"]
    if argument_role(extended, len(words), functions).role in (Role.CODE, Role.UNKNOWN):
        return True
    if _callback_runs_lines(words, functions):
        return True
    if _base(words) in _SCHEDULERS:
        return True  # `echo X | at now`: the commands it reads run later
    if _container_runs_its_input(words, functions):
        return True
    if _reads_commands(words) or _sed_runs_its_input(words):
        return True
    if any(
        word is not None
        and _INPUT_FILE.search(posixpath.normpath(word))
        and argument_role(words, index, functions).role is Role.CODE
        for index, word in enumerate(words[1:], start=1)
    ):
        return True  # `bash /dev/stdin`, `awk -f /dev/fd/0`: the program is what it reads
    name = words[0] if words else None
    base = program("" if name is None else name.rsplit("/", 1)[-1])
    interpreter = _INTERPRETER_ALIASES.get(base, base)
    return interpreter in _INTERPRETERS and interpreter not in ("awk", "sed") and "-" in words[1:]


_COMMAND_LANGUAGES = frozenset(
    {"sqlite3", "sqlite", "psql", "mysql", "mariadb", "ed", "ex", "gex", "ftp", "sftp", "lftp",
     "dc", "gnuplot", "R", "octave", "gdb", "cgdb", "lldb", "redis-cli", "mongo", "mongosh"}
)  # fmt: skip
"""Programs whose standard input is a command language that can run a shell command (sqlite3's
`.shell`, psql's and mysql's `\\!`, ed's and ex's `!`, sftp's `!`, dc's `!`, gnuplot's and R's
`system`, gdb's `shell`): what they read is code, whatever else it is."""


def _reads_commands(words: Sequence[Word]) -> bool:
    """`echo X | sqlite3 db`, `ed -s f <<< X`, `vim -es <<< X`, `make -f -`, `docker build -`:
    the program runs what it reads as its own commands, which can run the shell's."""
    base = _base(words)
    if base in _COMMAND_LANGUAGES:
        return True
    rest = [w or "" for w in words[1:]]
    if base in ("vi", "vim", "nvim", "gvim"):  # Ex mode reads commands from stdin
        return any(w.startswith("-") and not w.startswith("--") and "e" in w.lower() for w in rest)
    if base in ("make", "gmake", "bmake"):  # a makefile read from stdin: its recipes run
        return _names_stdin(rest, ("-f", "--file", "--makefile"))
    if base in ("docker", "podman", "nerdctl", "buildah"):  # a Dockerfile: its RUN lines run
        build = next((k for k, w in enumerate(rest) if w in ("build", "bud")), None)
        return build is not None and (
            "-" in rest[build:] or _names_stdin(rest[build:], ("-f", "--file"))
        )
    return False


def _names_stdin(words: list[str], options: tuple[str, ...]) -> bool:
    """Whether one of `options` (`-f`, `--file`) is given `-`: `-f -`, `-f-`, `--file=-`."""
    pairs = zip(words, [*words[1:], ""], strict=True)
    return any(
        (w in options and n == "-") or any(w in (f"{o}-", f"{o}=-") for o in options)
        for w, n in pairs
    )


def _sed_runs_its_input(words: Sequence[Word]) -> bool:
    """`echo X | sed e`, `sed 's/x/y/e'`: GNU sed's `e` command and the `e` flag of `s` run
    the pattern space (the line read) as a shell command. A script not written out counts
    (fail closed); a script file (`-f`) is not read; `--sandbox` refuses `e`."""
    if program(_base(words)) != "sed" and _INTERPRETER_ALIASES.get(_base(words)) != "sed":
        return False
    scripts: list[Word] = []
    given = False  # a script given with -e / -f: the operands are files
    k = 1
    while k < len(words):
        word = words[k]
        if word is None:
            return True  # an option or the script, known only at run time
        if word == "--":
            k += 1
            break
        if word == "--sandbox":
            return False
        if word.startswith("--"):
            option, _, attached = word.partition("=")
            if option in ("--expression", "--file", "--line-length") and not attached:
                if option == "--expression":
                    scripts.append(words[k + 1] if k + 1 < len(words) else "")
                given = given or option != "--line-length"
                k += 2
                continue
            if option == "--expression":
                scripts.append(attached)
            given = given or option in ("--expression", "--file")
            k += 1
            continue
        if not word.startswith("-") or word == "-":
            break
        k += 1
        for at, letter in enumerate(word[1:], start=2):
            if letter in "efl":
                argument = word[at:] or (words[k] if k < len(words) else "")
                k += 0 if word[at:] else 1
                if letter == "e":
                    scripts.append(argument)
                given = given or letter != "l"
                break
            if letter == "i":
                break  # `-i.bak`: the rest is a suffix
    if not given:
        scripts.append(words[k] if k < len(words) else "")
    return any(script is None or _sed_script_runs(script) for script in scripts)


_SED_ADDRESS = re.compile(r"[0-9$,~+!\s]")


def _sed_script_runs(script: str) -> bool:
    """Whether the sed script has an `e` command or an `s` command with the `e` flag; a
    script this reading does not follow counts as one that runs (fail closed)."""
    text, at, end = script, 0, len(script)

    def delimited(at: int, parts: int) -> int:  # past `/re/rep/` from its delimiter
        delimiter = text[at]
        at += 1
        while parts and at < end:
            if text[at] == "\\":
                at += 2
                continue
            if text[at] == delimiter:
                parts -= 1
            at += 1
        return at if not parts else -1

    def to_end(at: int, stops: str = "\n") -> int:
        while at < end and text[at] not in stops:
            at += 1
        return at

    while at < end:
        char = text[at]
        if char in " \t\n;{}!":
            at += 1
            continue
        if char in "/\\":  # an address `/re/` or `\cREc`
            at = delimited(at + (char == "\\"), 1)
            if at < 0:
                return True
            at += at < end and text[at] in "IM"
            continue
        if _SED_ADDRESS.match(char):
            at += 1
            continue
        at += 1
        if char == "e":
            return True
        if char in "sy":
            if at >= end:
                return True
            at = delimited(at, 2)
            if at < 0:
                return True
            if char == "y":
                continue
            while at < end and text[at] not in ";\n}":
                if text[at] == "e":
                    return True
                if text[at] in "wW":
                    at = to_end(at)
                    break
                at += 1
            continue
        if char in "#aicrRwWv:":
            at = to_end(at)  # text, a file name, a label or a comment: to the line's end
            while char in "aic" and at < end and text[at - 1] == "\\":
                at = to_end(at + 1)
            continue
        if char in "btT":
            at = to_end(at, ";\n}")
            continue
        if char not in "=dDFgGhHlLnNpPqQxz0123456789":
            return True
    return False


_CONTAINER_RUNNERS = frozenset({"docker", "podman", "nerdctl", "kubectl", "oc"})
"""Programs that run a command in a container (`docker exec -i app sh`, `kubectl exec -i pod --
sh`) and pass their standard input on to it, as `ssh host` does."""


_CONTAINER_VALUE_OPTIONS = frozenset(
    {"-e", "--env", "--env-file", "-u", "--user", "-w", "--workdir", "--name", "-v", "--volume",
     "-p", "--publish", "--network", "--net", "--entrypoint", "-l", "--label", "--platform",
     "--mount", "--cpus", "-m", "--memory", "--add-host", "-h", "--hostname", "--detach-keys",
     "--pull", "--gpus", "--device", "--ulimit", "--tmpfs", "--group-add", "--shm-size",
     "--security-opt", "--cap-add", "--cap-drop", "--dns", "--ipc", "--pid", "--restart",
     "--log-driver", "--cidfile", "--index", "-f", "--file", "-c", "--container", "-n",
     "--namespace", "--context", "--project-name", "--profile"}
)  # fmt: skip
_CONTAINER_FLAGS = frozenset(
    {"-i", "--interactive", "-t", "--tty", "-it", "-ti", "-d", "--detach", "--rm",
     "--privileged", "-T", "--no-TTY", "--init", "-P", "--publish-all", "--read-only",
     "--no-deps", "--service-ports", "-q", "--quiet", "--stdin"}
)  # fmt: skip


def _container_runs_its_input(words: Sequence[Word], functions: frozenset[str]) -> bool:
    """`docker exec|run [OPTIONS] NAME PROGRAM ...` (`docker compose exec`, `podman`,
    `kubectl exec ... -- PROGRAM`): whether PROGRAM, a shell or interpreter, would run what it
    reads (`sh`, `python3 -`; not `sh script.sh`, not `cat`). After an option the table does
    not know (it may have taken NAME), the word after PROGRAM is a candidate too."""
    if _base(words) not in _CONTAINER_RUNNERS:
        return False
    sub = next((k for k, w in enumerate(words[1:], start=1) if w in ("exec", "run")), None)
    if sub is None:
        return False
    if "--" in words[sub:]:
        candidates = [words.index("--", sub) + 1]  # `kubectl exec -i pod -- sh`
    else:
        at, unknown = sub + 1, False
        while at < len(words) and (words[at] or "").startswith("-"):
            option = words[at] or ""
            unknown = unknown or not (option in _CONTAINER_FLAGS or "=" in option)
            at += 2 if option in _CONTAINER_VALUE_OPTIONS else 1
        candidates = [at + 1, at + 2] if unknown else [at + 1]
    for k in candidates:
        word = words[k] if k < len(words) else ""
        name = program("" if word is None else word.rsplit("/", 1)[-1])
        known = name in _SHELLS or _INTERPRETER_ALIASES.get(name, name) in _INTERPRETERS
        if word is None or (known and runs_its_input(words[k:], functions)):
            return True
    return False


_SCHEDULERS = frozenset({"at", "batch", "crontab"})
"""Programs that run what they read as shell commands later (`at`, `batch`) or install it to
be run (`crontab`)."""


def _base(words: Sequence[Word]) -> str:
    return (words[0] or "").rsplit("/", 1)[-1] if words else ""


def _callback_runs_lines(words: Sequence[Word], functions: frozenset[str]) -> bool:
    """`mapfile -C CALLBACK`: bash runs `CALLBACK INDEX 'LINE'` for the lines it reads, so a
    callback that evaluates its arguments (`eval`, a function of the script, one not written
    out) runs what it reads."""
    base = (words[0] or "").rsplit("/", 1)[-1] if words else ""
    if base not in ("mapfile", "readarray"):
        return False
    k = 1
    while k < len(words):
        word = words[k]
        if word is None or word == "--" or not word.startswith("-"):
            return False
        for at, flag in enumerate(word[1:], start=2):
            if flag not in "dnOsucC":
                continue
            argument = word[at:] or (words[k + 1] if k + 1 < len(words) else "")
            k += 0 if word[at:] else 1
            if flag == "C":
                if argument is None:
                    return True
                line = [*argument.split(), "0", "line"]
                return argument_role(line, len(line) - 1, functions).role is not Role.VALUE
            break
        k += 1
    return False


def argument_role(
    words: Sequence[Word], index: int, functions: frozenset[str] = frozenset()
) -> Verdict:
    """What happens to `words[index]` when the simple command `words` runs.

    `functions`: the names of the functions the script defines, whose bodies are not followed.
    """
    return _role(list(words), index, 0, functions)


def _role(words: list[Word], index: int, depth: int, functions: frozenset[str]) -> Verdict:
    if index == 0:
        return Verdict(Role.CODE, "the command name: the value would choose the program to run")
    name = words[0]
    if name is None:
        return Verdict(
            Role.UNKNOWN,
            "an argument of a command whose name is known only when the script runs "
            "(it could be `eval`)",
        )
    if name in functions:
        return Verdict(
            Role.UNKNOWN,
            f"an argument of `{name}`, a function this script defines: ll-loop does not follow "
            "values into functions, whose body could run or evaluate them",
            function=name,
        )
    written = name.rsplit("/", 1)[-1]
    base = program(written)
    if depth > 8:
        return Verdict(Role.UNKNOWN, "an argument of a deeply wrapped command")
    if base == "busybox":  # `busybox APPLET ARGS...` runs APPLET (`sh`, `awk`, `env`, ...)
        if index == 1:
            return Verdict(Role.CODE, "the applet `busybox` runs: the value would choose it")
        return _role(words[1:], index - 1, depth + 1, functions)
    if base in _CODE_ALL:
        return Verdict(Role.CODE, _CODE_ALL[base])
    if base == "let":
        return Verdict(Role.ARITHMETIC, "an argument of `let`, which evaluates it as arithmetic")
    if base in _DECLARE:
        return _declare_role(base, words, index)
    if base in ("test", "["):
        return test_role(words[1:-1] if base == "[" and words[-1] == "]" else words[1:], index - 1)
    if base in ("printf", "read", "mapfile", "readarray", "unset", "getopts", "wait"):
        return _builtin_role(base, words, index)
    if base == "command" and any(w in ("-v", "-V") for w in words[1:index]):
        return VALUE  # `command -v x` only looks a name up
    if base in _WRAPPERS:
        return _wrapped_role(base, _WRAPPERS[base], words, index, depth, functions)
    if base == "find":
        return _find_role(words, index, depth, functions)
    if base in _SHELLS:
        return _shell_role(written, words, index)
    if base in _RUNTIME_SUBCOMMANDS:
        return _runtime_role(written, base, words, index)
    interpreter = _INTERPRETER_ALIASES.get(base, base)
    if interpreter in _INTERPRETERS:
        return _interpreter_role(written, interpreter, words, index)
    if base == "git":
        verdict = _git_role(words, index)
        if verdict is not None:
            return verdict
    if base in _COMMAND_OPTIONS:
        verdict = _command_option_role(base, words, index)
        if verdict is not None:
            return verdict
    return _hidden_code(base, words, index, depth, functions)


RUNS_COMMAND = "a command or program it runs"
LOADS_CODE = "which names code it loads"
"""What the argument of an option that runs or loads code is (`tar --to-command`, `node -r`)."""


# Options of common programs whose argument is a command they run, a program, or a file of
# settings that can name one: `tar --to-command=CMD`, `tar -I PROG`, `scp -o ProxyCommand=CMD`,
# `rsync -e CMD`, `man -P PAGER`, `vim -c CMD`, `emacs --eval EXPR`, `zip -TT CMD`,
# `sort --compress-program PROG`.
_VIM = frozenset({"-c", "--cmd", "-S", "-u"})
_COMMAND_OPTIONS: dict[str, frozenset[str]] = {
    "tar": frozenset(
        {"--to-command", "-I", "--use-compress-program", "--checkpoint-action", "--info-script",
         "--new-volume-script", "-F", "--rsh-command", "--rmt-command"}
    ),
    "rsync": frozenset({"-e", "--rsh", "--rsync-path"}),
    "scp": frozenset({"-o", "-S", "-F"}),
    "sftp": frozenset({"-o", "-S", "-F", "-D"}),
    "man": frozenset({"-P", "--pager", "-H", "--html"}),
    "vim": _VIM, "vi": _VIM, "nvim": _VIM, "view": _VIM, "ex": _VIM,
    "emacs": frozenset({"--eval", "-l", "--load", "-f", "--funcall"}),
    "zip": frozenset({"-TT", "--unzip-command"}),
    "sort": frozenset({"--compress-program"}),
    # git-filter-repo runs each callback as the body of a Python function
    "git-filter-repo": frozenset(
        {f"--{kind}-callback" for kind in ("filename", "message", "name", "email", "refname",
         "blob", "commit", "tag", "reset", "file-info")}
    ),
}  # fmt: skip


def _command_option_role(base: str, words: list[Word], index: int) -> Verdict | None:
    """The argument of one of `_COMMAND_OPTIONS` (`--to-command X`, `--to-command=X`, `-IX`,
    given as its option word by the grammar) is code; None for any other word.

    Read as getopt reads them: a short option may end a bundle (`tar -cvI X`, `scp -qo X`,
    `rsync -ave X`), a long one may be shortened (`--to-com X`), and tar's first word may be
    old-style letters whose arguments follow in order (`tar cIf X b.tar`)."""
    options = _COMMAND_OPTIONS[base]
    if "--" in words[1:index]:
        return None
    word, before = words[index], words[index - 1] if index > 1 else None
    option = _runs_option(word, options) if word is not None else None
    if option is None and before is not None and not _has_argument(before, options):
        option = _runs_option(before, options)
    first = words[1] if len(words) > 1 else None
    if option is None and base == "tar" and first is not None and first[:1] not in ("-", ""):
        letters = [c for c in first if f"-{c}" in options]
        if letters and 1 < index <= 1 + len(first):
            option = f"{first} (-{letters[0]})"
    if option is None:
        return None
    return Verdict(Role.CODE, f"the argument of `{base} {option}`, {RUNS_COMMAND}")


_DATA_LONG_OPTIONS = frozenset({"--checkpoint", "--to", "--cc"})
"""Long options that are the start of one that runs a command but data themselves
(`tar --checkpoint`, `git send-email --to`, `--cc`: not `--to-cmd`)."""


def _runs_option(word: str, options: frozenset[str]) -> str | None:
    """The option of `options` that `word` is or may start (`--to-command=`, `--to-com`, `-I`,
    `-cvI`, `-qoProxyCommand=`), whose argument follows it or is its own rest; or None."""
    if word.split("=", 1)[0] in options:  # also a long option with one dash (`zip -TT`)
        return word.split("=", 1)[0]
    if word.startswith("--"):
        name = word.split("=", 1)[0]
        if len(name) < 3 or name in _DATA_LONG_OPTIONS:
            return None
        return next((o for o in sorted(options) if o.startswith("--") and o.startswith(name)), None)
    if word.startswith("-") and len(word) > 1:
        return next((f"-{c}" for c in word[1:] if f"-{c}" in options), None)
    return None


def _has_argument(word: str, options: frozenset[str]) -> bool:
    """Whether `word` (`--to-command=x`, `-Ix`) carries its option's argument itself."""
    if word.startswith("--"):
        return "=" in word
    option = _runs_option(word, options)
    return option is not None and not word.endswith(option[1])


# git settings whose value is data; any other may be a command (`core.pager`, `core.sshCommand`,
# `alias.x=!cmd`, `diff.external`, `filter.x.clean`, `credential.helper`, `core.hooksPath`,
# `include.path`, `protocol.ext.allow`, ...): a value given to it is code.
_GIT_DATA_SETTING = re.compile(
    r"(?:user|author|committer|color|advice|log|i18n)\.[^.=]+|init\.defaultbranch"
    r"|(?:commit|tag)\.gpgsign|pull\.rebase|push\.default"
    r"|core\.(?:autocrlf|filemode|ignorecase|quotepath|abbrev)",
    re.IGNORECASE,
)
_GIT_WITH_ARGUMENT = frozenset({"-C", "--git-dir", "--work-tree", "--namespace"})
_GIT_CONFIG_WITH_ARGUMENT = frozenset(
    {"-f", "--file", "--blob", "-t", "--type", "--comment", "--default"}
)
_GIT_CONFIG_READS = frozenset(
    {"--get", "--get-all", "--get-regexp", "--get-urlmatch", "-l", "--list", "--unset",
     "--unset-all", "--remove-section", "--rename-section", "get", "list", "unset"}
)  # fmt: skip


def _git_setting(setting: Word) -> Verdict:
    """What git does with `-c KEY=VALUE` (`setting`; `KEY=` then None is the hole's word with
    its literal start): the value of a data setting is data, of any other, code."""
    key = None if setting is None else setting.split("=", 1)[0]
    if key is not None and "=" in (setting or "") and _GIT_DATA_SETTING.fullmatch(key):
        return VALUE
    return Verdict(
        Role.CODE,
        f"a git setting ({key or 'named at run time'}) that git may run as a command "
        "(core.pager, core.sshCommand, alias.*, ...); only user.*, color.* and the like take text",
    )


def _git_role(words: list[Word], index: int) -> Verdict | None:
    """`git -c KEY=VALUE ...` and `git config KEY VALUE`: a value given to a setting git may
    run is code. None: the word is no setting (classified as any program's)."""
    i = 1
    while i < len(words):
        word = words[i]
        if word in ("-c", "--config-env"):
            if i + 1 == index:
                return _git_setting(words[i + 1] if word == "-c" else None)
            i += 2
            continue
        if word is None or not word.startswith("-"):
            break
        if i == index and word.startswith(("--exec-path", "--config-env")):
            return Verdict(Role.CODE, f"the git option `{word.split('=')[0]}`, which names code")
        i += 2 if word in _GIT_WITH_ARGUMENT else 1
    if i < len(words) and index > i and words[i] in _GIT_SUBCOMMAND_CODE:
        return _git_subcommand_role(str(words[i]), words, i, index)
    if i >= len(words) or words[i] != "config" or index <= i:
        return None
    at, key = i + 1, None
    while at < len(words):  # a read is said before the key: `get`/`list`/`unset` first of all
        word = words[at]
        if word in _GIT_CONFIG_READS and ((word or "")[:1] == "-" or at == i + 1):
            return None
        if word in _GIT_CONFIG_WITH_ARGUMENT:
            at += 2
            continue
        if (word == "set" and at == i + 1) or (word or "").startswith("--"):
            at += 1
            continue
        key = word
        break
    if index <= at:
        return None  # an option or the key itself
    return _git_setting(None if key is None else key + "=")


# Options of git's commands whose argument is a command git runs (`--upload-pack`, `-u`,
# `--receive-pack`, `--exec`: through a shell, for a local or ssh remote; `rebase --exec`,
# `difftool --extcmd`, `filter-branch`'s filters, `send-email`'s commands, `grep -O`'s pager,
# `daemon --access-hook`) or a template folder whose hooks it runs (`--template`), and
# `clone -c KEY=VALUE`, a setting of the new repository in force for the clone itself
# (`core.sshCommand`). `bisect run` and `submodule foreach` run the words after them.
_GIT_SUBCOMMAND_CODE: dict[str, frozenset[str]] = {
    "clone": frozenset({"--upload-pack", "-u", "--template"}),
    "fetch": frozenset({"--upload-pack"}),
    "pull": frozenset({"--upload-pack"}),
    "ls-remote": frozenset({"--upload-pack", "--exec"}),
    "push": frozenset({"--receive-pack", "--exec"}),
    "archive": frozenset({"--exec"}),
    "init": frozenset({"--template"}),
    "rebase": frozenset({"-x", "--exec"}),
    "difftool": frozenset({"-x", "--extcmd"}),
    "filter-branch": frozenset(
        {"--env-filter", "--tree-filter", "--index-filter", "--parent-filter", "--msg-filter",
         "--commit-filter", "--tag-name-filter"}
    ),
    "send-email": frozenset(
        {"--sendmail-cmd", "--smtp-server", "--to-cmd", "--cc-cmd", "--header-cmd"}
    ),
    "daemon": frozenset({"--access-hook"}),
    # git-filter-repo runs each callback as the body of a Python function
    "filter-repo": frozenset(
        {f"--{kind}-callback" for kind in ("filename", "message", "name", "email", "refname",
         "blob", "commit", "tag", "reset", "file-info")}
    ),
    "grep": frozenset({"-O", "--open-files-in-pager"}),  # an optional argument: attached only
    "bisect": frozenset(),
    "submodule": frozenset(),
}  # fmt: skip
_GIT_RUNS_ITS_WORDS = {"bisect": "run", "submodule": "foreach"}
"""`git bisect run CMD ARGS...`, `git submodule foreach CMD ARGS...`: git runs CMD with a
shell (`sh -c 'CMD "$@"'`), ARGS as its arguments."""
_GIT_SUBCOMMAND_SETTING = frozenset({"-c", "--config"})


def _git_subcommand_role(command: str, words: list[Word], at: int, index: int) -> Verdict | None:
    """The word at `index` after `git COMMAND` (at `at`): code when it is the argument of one of
    `_GIT_SUBCOMMAND_CODE`, a setting when it is `clone -c`'s; else None."""
    if command in _GIT_RUNS_ITS_WORDS:
        return _git_runs_its_words(command, words, at, index)
    if "--" in words[at + 1 : index]:
        return None
    word, before = words[index], words[index - 1]
    if command == "clone":
        if word is not None and word.startswith("--config="):
            return _git_setting(word.split("=", 1)[1])
        if (
            before is not None
            and not _has_argument(before, _GIT_SUBCOMMAND_SETTING)
            and _runs_option(before, _GIT_SUBCOMMAND_SETTING) is not None
        ):
            return _git_setting(word)
    options = _GIT_SUBCOMMAND_CODE[command]
    option = _runs_option(word, options) if word is not None else None
    if (
        option is None
        and command != "grep"
        and before is not None
        and not _has_argument(before, options)
    ):
        option = _runs_option(before, options)
    if option is None:
        return None
    if option == "--template":
        return Verdict(Role.CODE, f"the argument of `git {command} --template`, {LOADS_CODE}")
    return Verdict(Role.CODE, f"the argument of `git {command} {option}`, {RUNS_COMMAND}")


def _git_runs_its_words(command: str, words: list[Word], at: int, index: int) -> Verdict | None:
    """The word at `index` of `git bisect run CMD ARGS...` / `git submodule foreach [--recursive]
    CMD ARGS...`: CMD is shell code; an argument is what it is to CMD (`bash -c ${...}`'s code
    is code). None for the words before CMD and after another subcommand (`bisect start`)."""
    keyword = _GIT_RUNS_ITS_WORDS[command]
    k = at + 1
    while k < index and words[k] in ("-q", "--quiet"):
        k += 1
    if k >= len(words) or words[k] != keyword:
        return None
    k += 1
    while k < index and words[k] in ("--recursive", "-q", "--quiet"):
        k += 1
    if index < k:
        return None
    if index == k:
        return Verdict(Role.CODE, f"the command of `git {command} {keyword}`, which git runs")
    verdict = _role(words[k:], index - k, 1, frozenset())
    if verdict.role is Role.VALUE:
        return None
    return Verdict(verdict.role, f"{verdict.why}, which `git {command} {keyword}` runs")


_WRITES_ITS_WORDS = frozenset({"echo", "printf"})


def _hidden_code(
    base: str, words: list[Word], index: int, depth: int, functions: frozenset[str]
) -> Verdict:
    """The word of a program not listed here: data, unless a shell or interpreter among the
    words before it is given code with `-c`/`-e` and the word is that code: many programs run
    the rest of their words as a command (`taskset -c 0 bash -c CODE`, `strace sh -c CODE`,
    `unshare -r perl -e CODE`), and a code word is code whichever runs it."""
    if base in _WRITES_ITS_WORDS:
        return VALUE
    for k in range(1, index):
        word = words[k]
        name = program("" if word is None else word.rsplit("/", 1)[-1])
        if name not in _SHELLS and _INTERPRETER_ALIASES.get(name, name) not in _INTERPRETERS:
            continue
        verdict = _role(words[k:], index - k, depth + 1, functions)
        if verdict.role is Role.CODE and verdict.why.startswith((COMMAND_STRING, "the argument")):
            return Verdict(Role.CODE, f"{verdict.why}, which `{base}` may run as a command")
    return VALUE


_DECLARE = frozenset({"declare", "typeset", "local", "export", "readonly"})


def declare_flags(words: Sequence[Word]) -> tuple[bool, bool, bool]:
    """(integer, nameref, unknown) flags of a `declare`-family command's option words.

    `unknown`: a word known only at run time (`-$f`, `"$opts"`) where bash still reads options
    (before the first name), which could be any flag. An assignment whose value is not literal
    is given as `name=`: a name, never an option.
    """
    integer = nameref = unknown = False
    options = True
    for word in words[1:]:
        if word is None:
            unknown = unknown or options
            continue
        if word == "--":
            break
        if len(word) > 1 and word[0] in "-+" and "=" not in word:
            integer = integer or "i" in word
            nameref = nameref or "n" in word
        else:
            options = False
    return integer, nameref, unknown


def _declare_role(base: str, words: list[Word], index: int) -> Verdict:
    """`declare` seen as a plain command (`builtin declare ...`): names and values by shape."""
    integer, nameref, _ = declare_flags(words)
    if integer:
        return Verdict(Role.ARITHMETIC, f"an argument of `{base} -i`, evaluated as arithmetic")
    if nameref:
        return Verdict(Role.NAME, f"an argument of `{base} -n`, which names a variable")
    return Verdict(Role.NAME, f"an argument of `{base}`, which names a variable")


def _builtin_role(base: str, words: list[Word], index: int) -> Verdict:
    name_why = f"a variable name for `{base}`"
    option_why = (
        f"where `{base}` reads options, so a value like `-v` would make a later word a name"
    )
    args = words[1:]
    at = index - 1
    # Walk the options; the word at `at` is an option, an option's argument, or an operand.
    value_options = {
        "printf": frozenset(),
        "read": frozenset({"-d", "-i", "-p", "-t", "-n", "-N", "-u"}),
        "mapfile": frozenset({"-d", "-n", "-O", "-s", "-u", "-c"}),
        "readarray": frozenset({"-d", "-n", "-O", "-s", "-u", "-c"}),
        "unset": frozenset(),
        "getopts": frozenset(),
        "wait": frozenset(),
    }[base]
    i = 0
    while i < len(args):
        word = args[i]
        if word is None or word == "--" or not word.startswith("-") or word == "-":
            break
        if i == at:
            return Verdict(Role.NAME, option_why)
        takes = word in value_options or word in ("-v", "-a", "-C", "-p")
        if takes and i + 1 == at:
            if word == "-C":
                return Verdict(Role.CODE, f"the callback of `{base} -C`, which runs as code")
            if word in ("-v", "-a") or (base == "wait" and word == "-p"):
                return Verdict(Role.NAME, name_why)
            return VALUE
        i += 2 if takes else 1
    dashed = i < len(args) and args[i] == "--"
    if dashed:
        i += 1
    if at < i:
        return Verdict(Role.NAME, option_why)  # after an unknown word in the option slots
    operand = at - i
    if base == "printf" and operand == 0 and not dashed:
        return Verdict(Role.NAME, _PRINTF_FORMAT_WHY)
    if base == "printf":
        return VALUE  # the format and its arguments
    if base == "getopts" and operand == 0:
        return VALUE
    if base == "wait":
        return VALUE
    return Verdict(Role.NAME, name_why)


_PRINTF_FORMAT_WHY = (
    "the first operand of `printf`, which still reads options there: a value like `-v` would "
    "make the next word a variable name; write the format yourself (`printf '%s' ${...}`) "
    "or put `--` before it"
)

# `test` / `[` operators: a value beside one written in the script is its operand; anywhere
# else it could itself become an operator (`-v` makes the next word a variable name).
_TEST_UNARY = frozenset({"-b", "-c", "-d", "-e", "-f", "-g", "-h", "-k", "-p", "-r", "-s", "-t",
                         "-u", "-w", "-x", "-G", "-L", "-N", "-O", "-S", "-z", "-n"})  # fmt: skip
_TEST_BINARY = frozenset({"=", "!=", "==", "<", ">", "-eq", "-ne", "-lt", "-le", "-gt", "-ge",
                          "-nt", "-ot", "-ef"})  # fmt: skip


def test_role(args: Sequence[Word], at: int) -> Verdict:
    """What `test` / `[` does with its argument `args[at]` (`]` not included).

    Only the operand of an operator written in the script is plain data: bash's `test` picks
    operators by the words it is given, so a value elsewhere could be `-v` and turn the next
    word into a variable name, whose subscript bash evaluates. A lone argument is only tested
    for being non-empty.
    """
    before = args[at - 1] if at > 0 else ""
    after = args[at + 1] if at + 1 < len(args) else ""
    if before in _NAME_OPTION:
        return Verdict(Role.NAME, f"the operand of `test {before}`, a variable name")
    if len(args) == 1 or before in _TEST_UNARY or _TEST_BINARY & {before, after}:
        return VALUE
    return Verdict(
        Role.NAME,
        "a word of `test` / `[` that is not the operand of an operator written in the script: "
        "a value like `-v` would become an operator and make the next word a variable name; "
        "write the operator yourself (`[ -n ${...} ]`, `[ ${...} = word ]`)",
    )


def _wrapped_role(
    base: str,
    spec: _Wrapper,
    words: list[Word],
    index: int,
    depth: int,
    functions: frozenset[str],
    start: tuple[int, int] = (1, 0),
) -> Verdict:
    """Skip the wrapper's options and operands, then classify within the wrapped command.

    An option not known to take no argument and written without `=` (`stdbuf --output 0`,
    `strace -X raw`) may take the next word: the word is classified both ways, as if the
    option took no argument and as if it took the next word, and the more restrictive answer
    wins (fail closed: a value there may be the command the wrapper runs)."""
    i, operands = start
    while i < len(words):
        word = words[i]
        if word is None:
            if i == index:
                return Verdict(Role.CODE, f"where `{base}` reads options or the command it runs")
            return Verdict(Role.UNKNOWN, f"after a word `{base}` may read as an option")
        if word == "--":
            i += 1
            break
        if word.startswith("-") and word != "-" and operands == 0:
            if word in spec.code_options or word.split("=", 1)[0] in spec.code_options:
                return Verdict(Role.CODE, f"after `{base} {word}`, which runs code")
            if word in spec.with_argument:
                if i + 1 == index:
                    return VALUE
                i += 2
                continue
            if i == index:
                return Verdict(Role.CODE, f"an option of `{base}`")
            width = _option_width(word, spec)
            if width == 2:  # a bundle ending in an option that takes the next word (`-rd ,`)
                if i + 1 == index:
                    return VALUE
                i += 2
                continue
            if width is None and depth < 8:
                as_flag = _wrapped_role(base, spec, words, index, depth + 1, functions, (i + 1, 0))
                if i + 1 == index:
                    return as_flag  # as its argument, a value: the flag reading decides
                taken = _wrapped_role(base, spec, words, index, depth + 1, functions, (i + 2, 0))
                return max(as_flag, taken, key=lambda verdict: verdict.role.value)
            i += 1
            continue
        if spec.skips_assignments and "=" in word and not word.startswith("="):
            if i == index:
                return VALUE
            i += 1
            continue
        if operands < spec.operands:
            if i == index:
                return VALUE
            operands += 1
            i += 1
            continue
        break
    if i < len(words) and words[i] == "--" and words[0] in ("command", "builtin", "exec"):
        i += 1
    if index < i:
        return VALUE
    if i >= len(words):
        return VALUE
    return _role(words[i:], index - i, depth + 1, functions)


def _option_width(word: str, spec: _Wrapper) -> int | None:
    """How many words the option word `word` (not one of `spec.with_argument`) takes with its
    argument, read as getopt reads it: 1 for a flag, an option written with its argument
    (`--output=f`, `-c2`, `nice -10`) or a bundle of flags (`-fq`); 2 for a bundle ending in an
    option that takes the next word (`-rd ,`); None when not known (it may take the next
    word or not)."""
    if word in spec.flags or "=" in word or re.fullmatch(r"-[0-9]+", word):
        return 1
    if word.startswith("--"):
        return 1 if spec.long_with_equals else None
    for at, letter in enumerate(word[1:], start=2):
        if f"-{letter}" in spec.with_argument:
            return 1 if word[at:] else 2
        if f"-{letter}" not in spec.flags:
            return None
    return 1


def _find_role(words: list[Word], index: int, depth: int, functions: frozenset[str]) -> Verdict:
    """`find ... -exec CMD ... ;` runs CMD: classify within it."""
    i = 1
    while i < len(words):
        if words[i] in ("-exec", "-execdir", "-ok", "-okdir"):
            end = i + 1
            while end < len(words) and words[end] not in (";", "+", "{}+"):
                end += 1
            if i < index < end:
                return _role(words[i + 1 : end], index - i - 1, depth + 1, functions)
            i = end
        i += 1
    return VALUE


COMMAND_STRING = "the command string of"  # how `_shell_role` names `bash -c CODE`'s CODE


def _shell_role(base: str, words: list[Word], index: int) -> Verdict:
    """`bash [options] -c CODE [$0 args...]` or `bash [options] SCRIPT [args...]`."""
    command_string = False
    i = 1
    while i < len(words):
        word = words[i]
        if word is None:
            if i == index and command_string:
                return Verdict(Role.CODE, f"{COMMAND_STRING} `{base} -c`, which runs as code")
            if i == index:
                return Verdict(Role.CODE, f"where `{base}` reads options, a script or -c code")
            return Verdict(Role.UNKNOWN, f"after a word `{base}` may read as an option")
        if word == "--" or word == "-":
            i += 1
            break
        if len(word) > 1 and word[0] in "-+":
            if i == index:
                return Verdict(Role.CODE, f"an option of `{base}`")
            if word[0] == "-" and not word.startswith("--") and "c" in word[1:]:
                command_string = True
            if word in ("-o", "+o", "-O", "+O", "--rcfile", "--init-file"):
                i += 1
            i += 1
            continue
        break
    if index < i:
        return Verdict(Role.CODE, f"an option of `{base}`")
    if index == i:
        if command_string:
            return Verdict(Role.CODE, f"{COMMAND_STRING} `{base} -c`, which runs as code")
        return Verdict(Role.CODE, f"the script `{base}` runs")
    return VALUE  # $0 and the positional parameters


def _perl_code(word: str) -> str | None:
    """Where a perl switch word puts its `-e` code: "next" word (`-ne`), "attached" (`-pe1`),
    or None (no `-e`/`-E`, or a switch such as `-i` or `-M` that takes the rest of the word)."""
    if word.startswith("--"):
        return None
    for k, switch in enumerate(word[1:], start=1):
        if switch in "eE":
            return "attached" if word[k + 1 :] else "next"
        if switch in "iIMmFxdDCV0":
            return None
    return None


# What each interpreter's other options are: letters of short options that take no argument,
# letters that take only the rest of their own word (`perl -l0`, `sed -i.bak`), and long
# options that take no argument (`--no-X` is one for node). An option none of the tables knows
# may take the next word or not: the word after it is read both ways (fail closed).
_NODE_FLAGS = frozenset(
    {"--abort-on-uncaught-exception", "--allow-addons", "--allow-child-process", "--allow-wasi",
     "--allow-worker", "--build-snapshot", "--check", "--completion-bash", "--cpu-prof",
     "--disable-wasm-trap-handler", "--disallow-code-generation-from-strings",
     "--enable-etw-stack-walking", "--enable-fips", "--enable-source-maps",
     "--experimental-eventsource", "--experimental-import-meta-resolve",
     "--experimental-network-imports", "--experimental-network-inspection",
     "--experimental-permission", "--experimental-print-required-tla",
     "--experimental-require-module", "--experimental-test-coverage",
     "--experimental-test-module-mocks", "--experimental-vm-modules",
     "--experimental-wasm-modules", "--experimental-websocket", "--experimental-strip-types",
     "--experimental-transform-types", "--experimental-detect-module", "--permission",
     "--expose-gc", "--force-context-aware", "--force-fips",
     "--force-node-api-uncaught-exceptions-policy", "--frozen-intrinsics", "--heap-prof",
     "--help", "--huge-max-old-generation-size", "--insecure-http-parser", "--inspect",
     "--inspect-brk", "--inspect-wait", "--interactive", "--interpreted-frames-native-stack",
     "--jitless", "--enable-network-family-autoselection", "--node-memory-debug",
     "--openssl-legacy-provider", "--openssl-shared-config", "--pending-deprecation",
     "--preserve-symlinks", "--preserve-symlinks-main", "--prof", "--prof-process",
     "--report-compact", "--report-exclude-network", "--report-on-fatalerror",
     "--report-on-signal", "--report-uncaught-exception", "--test", "--test-force-exit",
     "--test-only", "--test-update-snapshots", "--throw-deprecation", "--tls-max-v1.2",
     "--tls-max-v1.3", "--tls-min-v1.0", "--tls-min-v1.1", "--tls-min-v1.2", "--tls-min-v1.3",
     "--trace-atomics-wait", "--trace-deprecation", "--trace-exit", "--trace-promises",
     "--trace-sigint", "--trace-sync-io", "--trace-tls", "--trace-uncaught", "--trace-warnings",
     "--track-heap-objects", "--use-bundled-ca", "--use-openssl-ca", "--v8-options",
     "--version", "--watch", "--watch-preserve-output", "--zero-fill-buffers", "--expose-internals",
     "--tsconfig"}
)  # fmt: skip
_GAWK_FLAGS = frozenset(
    {"--characters-as-bytes", "--traditional", "--copyright", "--debug", "--dump-variables",
     "--gen-pot", "--help", "--lint", "--bignum", "--use-lc-numeric", "--non-decimal-data",
     "--optimize", "--no-optimize", "--profile", "--pretty-print", "--posix",
     "--re-interval", "--sandbox", "--lint-old", "--version", "--csv"}
)  # fmt: skip
_SED_FLAGS = frozenset(
    {"--quiet", "--silent", "--debug", "--posix", "--sandbox", "--separate", "--unbuffered",
     "--null-data", "--zero-terminated", "--regexp-extended", "--binary", "--follow-symlinks",
     "--in-place", "--help", "--version"}
)  # fmt: skip
_RUBY_FLAGS = frozenset(
    {"--copyright", "--version", "--verbose", "--help", "--yjit", "--jit", "--rjit",
     "--disable-gems", "--debug"}
)  # fmt: skip
_PWSH_FLAGS = frozenset(
    {"-noprofile", "-nop", "-noninteractive", "-noni", "-nologo", "-nol", "-noexit", "-noe",
     "-interactive", "-i", "-login", "-l", "-mta", "-sta", "-help", "-h", "-version", "-v"}
)  # fmt: skip
_INTERPRETER_OPTIONS: dict[str, tuple[str, str, frozenset[str]]] = {
    # interpreter: (flag letters, letters taking only the rest of their word, long flags)
    "python": ("bBdEhiIOPqsSuvVxR?", "", frozenset({"--help", "--version", "--help-env",
               "--help-xoptions", "--help-all"})),
    "perl": ("acfgnpsStTuUwWXhv", "0CdDFilmMxV", frozenset({"--help", "--version"})),
    "ruby": ("acdlnpsSUvwyh", "0FiKTWx", _RUBY_FLAGS),
    "node": ("chiv", "", _NODE_FLAGS),
    "php": ("aChHilmnqsvwe", "", frozenset({"--help", "--version", "--info", "--modules"})),
    "lua": ("ivEW", "", frozenset()),
    "Rscript": ("", "", frozenset()),  # its long options take an argument only as `--x=v`
    "pwsh": ("", "", _PWSH_FLAGS),
    "osascript": ("i", "", frozenset()),
    "julia": ("hviq", "gO", frozenset({"--help", "--version", "--quiet", "--interactive",
              "--lisp", "--help-hidden"})),
    "expect": ("dinNv", "", frozenset()),
    "gdb": ("nq", "", frozenset({"-batch", "--batch", "-batch-silent", "--batch-silent", "-nx",
            "--nx", "-nh", "--nh", "-q", "-quiet", "--quiet", "-silent", "--silent",
            "-return-child-result", "--return-child-result", "-nw", "--nw", "-tui", "--tui",
            "-write", "--write", "-readnow", "--readnow", "-readnever", "--readnever",
            "-version", "--version", "-help", "--help", "-configuration", "--configuration",
            "-statistics", "--statistics", "--args", "-args"})),
    "deno": ("AqhV", "", frozenset({"--allow-all", "--quiet", "--no-check", "--watch",
             "--unstable", "--no-prompt", "--no-remote", "--no-npm", "--no-config", "--no-lock",
             "--cached-only", "--help", "--version", "--check", "--allow-read", "--allow-write",
             "--allow-net", "--allow-env", "--allow-run", "--allow-sys", "--allow-ffi",
             "--allow-import", "--node-modules-dir", "--no-code-cache", "--ts"})),
    "bun": ("hvib", "", frozenset({"--help", "--version", "--watch", "--hot", "--bun",
            "--silent", "--smol", "--no-install", "--prefer-offline", "--prefer-latest",
            "--if-present", "--no-clear-screen", "--inspect", "--inspect-brk", "--inspect-wait",
            "--revision", "--no-macros", "--no-env-file"})),
    "ts-node": ("hviTH", "", frozenset({"--transpile-only", "--swc", "--esm", "--files",
                "--pretty", "--skip-project", "--skip-ignore", "--prefer-ts-exts",
                "--log-error", "--help", "--version", "--interactive", "--type-check",
                "--script-mode", "--cwd-mode", "--show-config", "--compiler-host"})),
    "awk": ("bcCghkMnNOPrsStV", "dDLop", _GAWK_FLAGS),
    "sed": ("nErsuzb", "i", _SED_FLAGS),
}  # fmt: skip


def _interpreter_option(interpreter: str, word: str) -> tuple[int, str] | None:
    """How the interpreter reads the option word `word` (not one its tables name whole): its
    width in words (1, or 2 when it takes the next word) and what its argument is ("value",
    "code", "load", or "" for none); None when not known (it may take the next word or not).
    A short option word may bundle letters, as getopt reads them (`python3 -uX opt`)."""
    code_options, value_options = _INTERPRETERS[interpreter]
    letters, attached, long_flags = _INTERPRETER_OPTIONS.get(interpreter, ("", "", frozenset()))
    one_dash_long = interpreter in ("pwsh", "gdb")  # `-NoProfile`, `-batch`
    if "=" in word and (word.startswith("--") or one_dash_long):
        return 1, "value"
    if word.startswith("--") or one_dash_long:
        known = word.lower() if interpreter == "pwsh" else word
        if known in long_flags or (interpreter == "node" and word.startswith("--no-")):
            return 1, ""
        if interpreter == "ruby" and word.startswith(("--enable-", "--disable-")):
            return 1, ""  # `--enable-FEATURE`; only `--enable FEATURE` takes the next word
        if interpreter == "Rscript":
            return 1, ""
        return None
    for at, letter in enumerate(word[1:], start=2):
        option, rest = f"-{letter}", word[at:]
        if letter in attached:
            return 1, "value"
        kind = (
            "code" if option in code_options
            else "load" if option in _LOADS.get(interpreter, ())
            else "value" if option in value_options
            else ""
        )  # fmt: skip
        if kind:
            return (1 if rest else 2), kind
        if letter not in letters:
            return None
    return 1, ""


# `deno`/`bun SUBCOMMAND ...`: the subcommands that run no code of their operands; any other
# (`eval`, `run`, `x`, `task`, `test`, `exec`, a script file, one not listed) is read as the
# interpreter: its first operand is code (`deno eval CODE`, `bun run SCRIPT`).
_RUNTIME_SUBCOMMANDS: dict[str, frozenset[str]] = {
    "deno": frozenset(
        {"fmt", "lint", "check", "info", "doc", "cache", "types", "upgrade", "coverage",
         "completions", "clean", "help", "outdated", "remove", "uninstall", "init"}
    ),
    "bun": frozenset(
        {"install", "i", "add", "a", "remove", "rm", "update", "outdated", "pm", "link",
         "unlink", "build", "upgrade", "completions", "help", "audit", "info", "publish", "patch",
         "why"}
    ),
}  # fmt: skip
_RUNTIME_CODE_SUBCOMMANDS = frozenset(
    {"eval", "run", "serve", "test", "bench", "repl", "x", "task", "exec", "compile", "jupyter"}
)


def _runtime_role(base: str, program_name: str, words: list[Word], index: int) -> Verdict:
    """`deno eval CODE`, `deno run [options] SCRIPT ARGS...`, `bun -e CODE`, `bun run SCRIPT`,
    `bun SCRIPT`: the subcommand, then options and a first operand that is code."""
    sub = words[1] if len(words) > 1 else None
    if index == 1:
        return Verdict(Role.CODE, f"the subcommand or script `{base}` runs")
    if sub in _RUNTIME_SUBCOMMANDS[program_name]:
        return VALUE
    if sub in _RUNTIME_CODE_SUBCOMMANDS:
        return _interpreter_role(f"{base} {sub}", program_name, [words[0], *words[2:]], index - 1)
    return _interpreter_role(base, program_name, words, index)


def _interpreter_role(
    base: str,
    interpreter: str,
    words: list[Word],
    index: int,
    start: tuple[int, bool] = (1, False),
    depth: int = 0,
) -> Verdict:
    """`python -c CODE`, `perl -e CODE`, `awk PROGRAM`, `sed SCRIPT`, or a script file.

    An option the tables do not know (`node --cpu-prof-interval 100`, a newer version's) may
    take the next word: the word is classified both ways, as if the option took no argument
    and as if it took the next word, and the more restrictive answer wins (a value there may
    be the script)."""
    code_options, value_options = _INTERPRETERS[interpreter]
    i, program_given = start
    while i < len(words):
        word = words[i]
        if word is None and program_given:
            break  # the operands of a program given with -c / -e / -m / -f
        if word is None:
            if i == index:
                return Verdict(Role.CODE, f"where `{base}` reads options or its program")
            return Verdict(Role.UNKNOWN, f"after a word `{base}` may read as an option")
        if word == "--":
            i += 1
            break
        if len(word) > 1 and word[0] == "-":
            if i == index:
                return Verdict(Role.CODE, f"an option of `{base}`")
            if word in _LOADS.get(interpreter, ()):
                if i + 1 == index:
                    return Verdict(Role.CODE, f"the argument of `{base} {word}`, {LOADS_CODE}")
                i += 2
                continue
            if word in code_options:
                if i + 1 == index:
                    return Verdict(Role.CODE, f"the argument of `{base} {word}`, which is code")
                program_given = True
                i += 2
                if interpreter == "python":
                    break  # python reads no options after `-c CODE` / `-m MODULE`: its argv
                continue
            bundled = _perl_code(word) if interpreter == "perl" else None
            if bundled == "next":  # `-ne CODE`, `-lane CODE`
                if i + 1 == index:
                    return Verdict(Role.CODE, f"the argument of `{base} {word}`, which is code")
                program_given = True
                i += 2
                continue
            if bundled == "attached" or (
                interpreter != "perl"
                and any(word.startswith(o) and len(o) == 2 for o in code_options)
            ):
                program_given = True  # `-e'code'` written in one word
                if interpreter == "python":
                    i += 1
                    break
            if word in value_options:
                if i + 1 == index:
                    return VALUE
                i += 2
                continue
            if bundled == "attached" or word.split("=", 1)[0] in value_options:
                i += 1
                continue
            read = _interpreter_option(interpreter, word)
            if read is not None and read[1] == "code":  # `python3 -uc CODE`, `-ucCODE`
                if read[0] == 2 and i + 1 == index:
                    return Verdict(Role.CODE, f"the argument of `{base} {word}`, which is code")
                program_given = True
                i += read[0]
                if interpreter == "python":
                    break
                continue
            if read is not None and read[0] == 2 and i + 1 == index:
                if read[1] == "load":
                    return Verdict(Role.CODE, f"the argument of `{base} {word}`, {LOADS_CODE}")
                return VALUE
            if read is not None:
                i += read[0]
                continue
            if depth < 8:
                as_flag = _interpreter_role(
                    base, interpreter, words, index, (i + 1, program_given), depth + 1
                )
                if i + 1 == index:
                    return as_flag  # as its argument, a value: the flag reading decides
                taken = _interpreter_role(
                    base, interpreter, words, index, (i + 2, program_given), depth + 1
                )
                verdicts = (as_flag, taken)
                return max(verdicts, key=lambda verdict: verdict.role.value)
            return Verdict(Role.UNKNOWN, f"after options of `{base}` nested too deeply")
        break
    if index < i:
        return VALUE
    if index == i and not program_given:
        what = "program" if interpreter in ("awk", "sed") else "script"
        return Verdict(Role.CODE, f"the {what} `{base}` runs")
    return Verdict(Role.VALUE, opened_by=base) if interpreter == "perl" else VALUE
