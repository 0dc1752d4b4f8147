"""Finding a loop file from what a user typed: a path, or a name looked up in `.loops/` and
then in the built-in loops."""

from __future__ import annotations

import os
import shlex
import stat
from pathlib import Path
from typing import Literal

from engine.load.resources import builtin_loops_dir
from engine.model.errors import UsageError

SUFFIXES = (".yaml", ".yml")


def resolve_loop(ref: str, cwd: Path | None = None) -> Path:
    """A loop reference is a path, else `.loops/NAME.yaml`, else a built-in loop NAME.

    A relative path is taken from `cwd` (the working directory when None, and then returned as
    typed, so messages show the path the user wrote). A name the system cannot look up (longer
    than a file name may be) is refused in one sentence, not a crash."""
    try:
        return _resolve(ref, cwd)
    except OSError as exc:
        raise UsageError(
            f"no loop file at {ref}: {exc.strerror}",
            hint="pass an existing .yaml path, or a loop name from `ll-loop list`",
        ) from None


def _resolve(ref: str, cwd: Path | None) -> Path:
    if not ref.strip():  # Path("") is the working directory: `run "$LOOP"` with LOOP unset
        raise UsageError(
            "the loop argument is empty",
            hint="pass a loop file's path, or a loop name from `ll-loop list`",
        )
    candidate = Path(ref)
    if cwd is not None and not candidate.is_absolute():
        candidate = cwd / candidate
    if candidate.suffix in SUFFIXES or os.sep in ref or candidate.exists():
        if candidate.is_file():
            return candidate
        if candidate.is_dir():
            raise UsageError(
                f"{ref} is a directory, not a loop file",
                hint=f"name a loop file in it, e.g. {os.path.join(ref, 'NAME.yaml')}",
            )
        if candidate.is_symlink() and not candidate.exists():  # a link to nothing
            raise UsageError(
                f"{ref} is a symbolic link that leads nowhere (its target does not exist, or "
                "links lead in a circle)",
                hint="point it at the loop file, or pass the file itself",
            )
        kind = _special_kind(candidate)
        if kind is not None:  # never read: a pipe or a device could block forever
            raise UsageError(
                f"{ref} is {kind}, not a regular file",
                hint="save the loop to a file and pass its path",
            )
        raise UsageError(
            f"no loop file at {ref}",
            hint="pass an existing .yaml path, or a loop name from `ll-loop list`",
        )
    for folder in (loops_dir(cwd), builtin_loops_dir()):
        for suffix in SUFFIXES:
            path = folder / f"{ref}{suffix}"
            if path.is_file():
                return path
            _refuse_special(path, _shown(path, cwd))
    here = _file_named(ref, cwd)
    raise UsageError(
        f"no loop named {ref!r} in .loops/ or the built-ins"
        + ("" if here else near_loop_name(ref, (loops_dir(cwd), builtin_loops_dir()))),
        # a name is looked up in .loops/, never here: `run t1` beside t1.yaml needs the path
        hint=f"pass the file's path: {here}"
        if here
        else "run `ll-loop list` to see the loops available here",
    )


def not_a_file(path: Path) -> str | None:
    """What stands at `path` when it is there but is no regular file, in a user's words (`a
    directory`, `a pipe (FIFO)`, ...); None for a file, or when nothing is there."""
    if path.is_file():
        return None
    if path.is_dir():
        return "a directory"
    if path.is_symlink() and not path.exists():
        return "a symbolic link that leads nowhere"
    return _special_kind(path) if path.exists() else None


def _special_kind(path: Path) -> str | None:
    """What a path that exists but is neither a regular file nor a directory is, else None."""
    try:
        mode = path.stat().st_mode
    except OSError:
        return None
    if stat.S_ISFIFO(mode):
        return "a pipe (FIFO)"
    if stat.S_ISSOCK(mode):
        return "a socket"
    if stat.S_ISCHR(mode) or stat.S_ISBLK(mode):
        return "a device"
    return None


def _shown(path: Path, cwd: Path | None) -> str:
    """`path` relative to the working directory when it lies under it (`.loops/x.yaml`)."""
    try:
        return str(path.relative_to((cwd or Path.cwd()).resolve()))
    except ValueError:
        return str(path)


def _refuse_special(path: Path, shown: str) -> None:
    """A pipe, socket or device where a loop file belongs is said as such (reading a pipe
    would wait for a writer for ever), never "no loop named" with itself as the guess."""
    kind = _special_kind(path)
    if kind is not None:
        raise UsageError(
            f"{shown} is {kind}, not a regular file",
            hint="a loop is a regular .yaml file: replace it with one, or remove it",
        )


def _file_named(ref: str, cwd: Path | None) -> str | None:
    """`NAME.yaml` (or `.yml`) when that file is in `cwd`, as the user would type it."""
    for suffix in SUFFIXES:
        if ((cwd or Path.cwd()) / f"{ref}{suffix}").is_file():
            return f"{ref}{suffix}"
    return None


def near_loop_name(ref: str, folders: tuple[Path, ...]) -> str:
    """` (did you mean 'x'?)` for a loop name typed with a typo, among the loop files of
    `folders` (suites left out: they are not loops), or `""`."""
    from engine.load.spelling import did_you_mean_hint

    names = {
        path.name.removesuffix(suffix)
        for folder in folders
        if folder.is_dir()
        for suffix in SUFFIXES
        for path in folder.glob(f"*{suffix}")
        if not is_suite_path(path) and path.is_file()
    }
    return did_you_mean_hint(ref, names)


def loops_dir(cwd: Path | None = None) -> Path:
    """The `.loops/` directory of the project `cwd` (the working directory when None) is in:
    at its root, found upward as git finds `.git` (`engine.load.project`)."""
    from engine.load.project import loops_dir as project_loops
    from engine.load.project import project_root

    return project_loops(project_root(cwd))


FileKind = Literal["loop", "suite", "library", "config"]
SUITE_SUFFIXES = (".suite.yaml", ".suite.yml")


def is_suite_path(path: str | Path) -> bool:
    """A `*.suite.yaml` (or `.suite.yml`) file."""
    return str(path).endswith(SUITE_SUFFIXES)


def looks_like_suite(text: str) -> bool:
    """A YAML text that is a suite rather than a loop: it has a top-level `subject:` key and no
    `states:` (used where a file's name does not say, e.g. `ll-loop validate x.yaml`)."""
    lines = text.splitlines()
    return any(line.startswith("subject:") for line in lines) and not any(
        line.startswith("states:") for line in lines
    )


HEAD_BYTES = 200_000


def _head(path: str | Path, size: int = HEAD_BYTES) -> str | None:
    """The first `size` bytes (200 KB) of a regular file as text, enough to tell a loop, a suite
    and a library apart (a 1 GB file is not read whole); None for what cannot be read or is not
    a regular file (a pipe or a device: reading it could block forever)."""
    if not Path(path).is_file():
        return None
    try:
        with open(path, "rb") as handle:
            return handle.read(size).decode("utf-8", errors="replace")
    except OSError:
        return None


def _kind_head(path: str | Path) -> str | None:
    """`_head`, read on up to the size a YAML file may have (`MAX_YAML_BYTES`, which loading it
    reads whole anyway) when the first 200 KB hold neither `states:` nor `subject:`: a suite
    with 300 KB of inline cases before its `subject:` is still a suite."""
    from engine.load.yaml_positions import MAX_YAML_BYTES

    head = _head(path)
    if head is None or any(line.startswith(("states:", "subject:")) for line in head.splitlines()):
        return head
    try:
        whole = Path(path).stat().st_size <= HEAD_BYTES
    except OSError:
        return head
    return head if whole else _head(path, MAX_YAML_BYTES)


def file_kind(path: str | Path) -> FileKind:
    """What `ll-loop validate` checks a YAML file as: a suite (`*.suite.yaml`, or `subject:` and
    no `states:`), a fragment library (`fragments:` and no `name:`, `initial:` or `states:`),
    the project's config file (`.loops/config.yaml` without `states:`, which scaffold-eval
    reads), or a loop (anything else, so a broken loop is reported as one)."""
    from engine.load.fragments import looks_like_library

    if is_suite_path(path):
        return "suite"
    head = _kind_head(path)
    if head is None:
        return "loop"
    if looks_like_suite(head):
        return "suite"
    if is_project_config(path) and not any(
        line.startswith("states:") for line in head.splitlines()
    ):
        return "config"
    return "library" if looks_like_library(head) else "loop"


def is_project_config(path: str | Path) -> bool:
    """`.loops/config.yaml`: ll-loop's own settings for the project (learning tests), kept
    beside its loops but not one of them."""
    where = Path(path)
    return where.name == "config.yaml" and where.parent.name == ".loops"


def refuse_other_kind(path: Path, shown: str) -> Path:
    """`path` when it may be a loop; a suite or a fragment library given where a loop is
    expected (`ll-loop run s.suite.yaml`) is refused in one sentence that says what the file is
    and what takes it, not with the schema errors of a loop it never meant to be."""
    kind = file_kind(path)
    typed = shlex.quote(shown)
    if kind == "suite":
        raise UsageError(
            f"{shown} is a suite file, not a loop",
            hint=f"run it with `ll-harness suite {typed}`; `ll-loop validate {typed}` checks it",
        )
    if kind == "config":
        raise UsageError(
            f"{shown} is the project's config file"
            f"{'' if shown.endswith('config.yaml') else ' (.loops/config.yaml)'}, not a loop",
            hint=f"it holds settings such as learning_tests:, which scaffold-eval reads; "
            f"`ll-loop validate {typed}` checks it",
        )
    if kind == "library":
        raise UsageError(
            f"{shown} is a fragment library (fragments: and no states:), not a loop",
            hint=f"a loop uses its fragments with `import: [{path.name}]` and `fragment:` in its "
            f"states; `ll-loop validate {typed}` checks it",
        )
    return path


def refuse_a_loop_as_suite(path: Path, shown: str) -> None:
    """A loop file given to `ll-harness suite`: one sentence instead of the schema errors of a
    suite (a file with top-level `states:` and no `subject:`, not named `*.suite.yaml`)."""
    head = None if is_suite_path(path) else _kind_head(path)
    if head is None:
        return
    lines = head.splitlines()
    if any(line.startswith("states:") for line in lines) and not any(
        line.startswith("subject:") for line in lines
    ):
        typed = shlex.quote(shown)  # a command to copy, as refuse_other_kind's hints are
        raise UsageError(
            f"{shown} is a loop, not a suite",
            hint=f"run it with `ll-loop run {typed}` (or `ll-harness loop {typed}` to measure "
            "it); to run it over a dataset, write a suite whose subject is `loop: "
            f"{shown}`",
        )
