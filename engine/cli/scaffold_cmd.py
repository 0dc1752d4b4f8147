"""`ll-loop scaffold-eval` and `ll-loop scaffold-verify`: write eval loops from issue files.

Each command finds the issues, asks `engine.scaffold` for the YAML, checks it in-process with the
loader and lint (a generated loop that does not load is a bug in ll-loop: exit 2), writes it
under `.loops/` and says what to do next. Placeholders left for the user are warnings.
"""

from __future__ import annotations

import json
import os
import shlex
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from engine.cli.common import examples
from engine.model.errors import Diagnostic, LoopError, UsageError

if TYPE_CHECKING:  # the scaffolder is imported only when a scaffold command runs
    from engine.load.issuefile import Issue
    from engine.scaffold import Scaffold


class GeneratedLoopInvalid(LoopError):
    """The scaffolder produced a loop that does not load or lint with errors: a bug."""

    code = "SCAFFOLD"


@dataclass(frozen=True)
class Written:
    """What a scaffold command did: where the loop went and what is still to do."""

    scaffold: Scaffold
    path: Path | None
    diagnostics: tuple[Diagnostic, ...]

    def to_json(self, root: Path) -> dict[str, object]:
        return {
            "path": _display(self.path, root) if self.path else None,
            "name": self.scaffold.name,
            "issues": list(self.scaffold.issue_ids),
            "variant": self.scaffold.variant,
            "placeholders": [
                {"issue": p.issue_id, "path": p.path, "what": p.what}
                for p in self.scaffold.placeholders
            ],
            "diagnostics": [d.to_json() for d in self.diagnostics],
        }


def load_issues(refs: str, root: Path) -> list[Issue]:
    """`ID[,ID...]` (IDs or paths) → parsed issues, in the order given, duplicates dropped.

    IDs may also be separated by spaces (`FEAT-1 BUG-2`), but a part naming an existing file is
    kept whole: `my issues/FEAT-1.md` is one path, not the IDs `my` and `issues/FEAT-1.md`."""
    from engine.load.issuefile import find_issue, load_issue

    wanted: list[str] = []
    for part in (part.strip() for part in refs.split(",")):
        is_file = bool(part) and (Path(part) if Path(part).is_absolute() else root / part).is_file()
        wanted += [part] if is_file else part.split()
    if not wanted:
        raise UsageError("--issues is empty", hint="pass --issues FEAT-919 or --issues A-1,B-2")
    issues: list[Issue] = []
    seen: set[Path] = set()
    for ref in wanted:
        path = find_issue(ref, root)
        if path.resolve() in seen:
            continue
        seen.add(path.resolve())
        issues.append(load_issue(_relative(path, root)))
    return issues


def check_generated(scaffold: Scaffold, file: str) -> tuple[Diagnostic, ...]:
    """Load and lint the generated text; raise on anything that makes it unusable.

    Returns the warnings worth showing: lint's placeholder warnings (LL060), nothing else expected.
    """
    from engine.load.loader import check_loop_text
    from lint import lint_loop

    loop, positions, problems = check_loop_text(scaffold.text, file)
    if loop is None:
        raise _invalid(problems)
    found = [d for d in lint_loop(loop, positions) if d.severity != "info"]
    errors = [d for d in found if d.severity == "error"]
    if errors:
        raise _invalid(errors)
    return tuple(found)


def write_scaffold(
    scaffold: Scaffold, *, root: Path, out: str | None, stdout: bool, force: bool
) -> Written:
    """Check the scaffold, then write it (unless `stdout`); refuse to overwrite without force.

    `--out` is a file path, or a directory (one that exists, or any path ending in `/`) that
    gets `NAME.yaml`. A symbolic link is never written through (`engine.load.project`).
    """
    from engine.load.project import ensure_dir, loops_dir, project_root, write_new_file

    if stdout and out is not None:  # one of them would be ignored without a word
        raise UsageError(
            "--stdout prints the loop and writes no file, so --out has nothing to do",
            hint="drop one of them",
        )
    default_dir = loops_dir(project_root(root))
    target = None if stdout else _out_path(out, scaffold.name, default_dir)
    file = _display(target, root) if target else f"{scaffold.name}.yaml"
    diagnostics = check_generated(scaffold, file)
    if target is not None:
        try:
            ensure_dir(target.parent)
            write_new_file(target, scaffold.text.encode("utf-8"), replace=force)
        except FileExistsError:
            raise UsageError(
                f"{_display(target, root)} already exists; not overwriting it",
                hint="pass --force to replace it, --out PATH to write elsewhere, or --stdout",
            ) from None
        except OSError as exc:
            raise UsageError(
                f"cannot write {_display(target, root)}: {exc.strerror or exc}",
                hint="choose another place with --out PATH, or print it with --stdout",
            ) from exc
        if target.parent == default_dir:  # what the loop's modeline points editors at
            from engine.cli.schema_cmd import ensure_project_schema

            ensure_project_schema(target.parent)
    return Written(scaffold, target, diagnostics)


def _out_path(out: str | None, name: str, default_dir: Path) -> Path:
    """Where the loop goes: `--out` as given (a directory gets NAME.yaml), else `.loops/`."""
    if out is None:
        return default_dir / f"{name}.yaml"
    path = Path(out)
    if out.endswith(("/", os.sep)) or (path.is_dir() and not path.is_symlink()):
        return path / f"{name}.yaml"
    return path


def report(written: Written, *, root: Path, as_json: bool, stdout: bool) -> None:
    """Print the result: the YAML, JSON, or the path and the next steps (diagnostics: stderr)."""
    if as_json:
        payload = written.to_json(root)
        if stdout:
            payload["text"] = written.scaffold.text
        print(json.dumps(payload, indent=2, ensure_ascii=False))
        return
    for diagnostic in written.diagnostics:
        print(diagnostic.render(), file=sys.stderr)
    if stdout:
        sys.stdout.write(written.scaffold.text)
        return
    assert written.path is not None
    shown = _display(written.path, root)
    count = len(written.scaffold.issue_ids)
    print(f"wrote {shown} ({_variant_label(written.scaffold.variant, count)})")
    holes = len(written.scaffold.placeholders)
    if holes:
        print(f"{holes} placeholder{'s' if holes > 1 else ''} to fill first (listed above)")
    from engine.load.project import loops_dir, project_root

    in_project = written.path.parent == loops_dir(project_root(root))
    run_ref = written.scaffold.name if in_project else shown
    # commands to copy and paste: a path with spaces or quotes is quoted for the shell
    print("next:")
    print(f"  ll-loop validate {shlex.quote(shown)}")
    print(f"  ll-loop run {shlex.quote(run_ref)}")


_Out = Annotated[
    str | None,
    typer.Option("--out", help="Write here instead of .loops/ (a file, or a directory/)."),
]
_Stdout = Annotated[bool, typer.Option("--stdout", help="Print the YAML; write no file.")]
_Json = Annotated[bool, typer.Option("--json", help="Print a JSON summary.")]
_Force = Annotated[bool, typer.Option("--force", help="Overwrite an existing file.")]


def register(app: typer.Typer) -> None:
    """Add `scaffold-eval` and `scaffold-verify` to `app`."""

    @app.command(
        "scaffold-eval",
        epilog=examples(
            "ll-loop scaffold-eval --issues FEAT-919", "ll-loop scaffold-eval --issues FEAT-1,BUG-2"
        ),
    )
    def scaffold_eval_cmd(
        issues: Annotated[
            str,
            typer.Option("--issues", help="Issue IDs or paths, comma-separated (FEAT-919,BUG-12)."),
        ],
        out: _Out = None,
        stdout: _Stdout = False,
        as_json: _Json = False,
        force: _Force = False,
        dsl: Annotated[
            bool,
            typer.Option(
                "--dsl",
                help="Write `ll-harness dsl` task files from the issues' examples instead "
                "(to .loops/dsl/<id>/, or --out DIR).",
            ),
        ] = False,
    ) -> None:
        """Write an eval harness for one issue (Variant A) or several (Variant B, a work list)."""
        from engine.scaffold import load_learning_tests, scaffold_eval

        root = Path.cwd()
        if dsl:
            if stdout:
                raise UsageError(
                    "--dsl writes files; --stdout is not available with it",
                    hint="drop --stdout, or pick a directory with --out DIR",
                )
            write_dsl_tasks(
                load_issues(issues, root),
                root=root,
                out=Path(out) if out else None,
                force=force,
                as_json=as_json,
            )
            return
        scaffold = scaffold_eval(load_issues(issues, root), load_learning_tests(root))
        written = write_scaffold(scaffold, root=root, out=out, stdout=stdout, force=force)
        report(written, root=root, as_json=as_json, stdout=stdout)

    @app.command(
        "scaffold-verify",
        epilog=examples(
            "ll-loop scaffold-verify FEAT-919", "ll-loop scaffold-verify BUG-12 --adversarial"
        ),
    )
    def scaffold_verify_cmd(
        issue: Annotated[str, typer.Argument(help="Issue ID or path.")],
        adversarial: Annotated[
            bool,
            typer.Option("--adversarial", help="Probe to break it instead of checking criteria."),
        ] = False,
        out: _Out = None,
        stdout: _Stdout = False,
        as_json: _Json = False,
        force: _Force = False,
    ) -> None:
        """Write a loop that verifies each acceptance criterion, or tries to break the feature."""
        from engine.scaffold import scaffold_verify

        root = Path.cwd()
        found = load_issues(issue, root)
        if len(found) != 1:
            raise UsageError(
                "scaffold-verify takes exactly one issue",
                hint="run it once per issue, or use scaffold-eval --issues A,B for several",
            )
        scaffold = scaffold_verify(found[0], adversarial=adversarial)
        written = write_scaffold(scaffold, root=root, out=out, stdout=stdout, force=force)
        report(written, root=root, as_json=as_json, stdout=stdout)


def write_dsl_tasks(
    issues: list[Issue], *, root: Path, out: Path | None, force: bool, as_json: bool
) -> None:
    """`--dsl`: every issue's examples as task files, checked with the harness's own loader."""
    from engine.harness.tasks import load_task
    from engine.load.project import ensure_dir, project_root, write_new_file
    from engine.scaffold.dsl_tasks import dsl_tasks, task_directory

    planned: list[tuple[Path, str]] = []
    owners: dict[Path, Issue] = {}
    for issue in issues:
        tasks = dsl_tasks(issue)
        directory = project_root(root) / task_directory(issue) if out is None else out
        shared = out is not None and len(issues) > 1  # one directory: name files per issue
        prefix = f"{Path(task_directory(issue)).name}-" if shared else ""
        planned += [(directory / f"{prefix}{task.name}", task.text) for task in tasks]
        for path, _ in planned[len(planned) - len(tasks) :]:
            first = owners.setdefault(path, issue)
            if first is not issue:  # the second would overwrite the first's tasks
                raise UsageError(
                    f"{first.id} ({first.path}) and {issue.id} ({issue.path}) would both "
                    f"write {_display(path, root)}",
                    hint="pass them one at a time with --out DIR, or give one another `id:`",
                )
    existing = [path for path, _ in planned if path.exists()]
    if existing and not force:
        raise UsageError(
            f"{_display(existing[0], root)} already exists; not overwriting it",
            hint="pass --force to replace the task files, or --out DIR to write elsewhere",
        )
    written: list[Path] = []
    try:
        for path, text in planned:  # never through a link (see engine.load.project)
            ensure_dir(path.parent)
            write_new_file(path, text.encode("utf-8"), replace=True)
            written.append(path)
            load_task(path, root)  # the harness reads it exactly as `ll-harness dsl` will
    except OSError as exc:
        raise UsageError(
            f"cannot write {exc.filename}: {exc.strerror or exc}",
            hint="choose another directory with --out DIR",
        ) from exc
    except LoopError as exc:
        raise GeneratedLoopInvalid(
            f"a generated task file is invalid; this is a bug in ll-loop scaffold: {exc.message}",
            hint="please report it with the issue file that produced it",
        ) from exc
    directories = sorted({_display(path.parent, root) for path in written})
    if as_json:
        payload = {
            "dsl": True,
            "issues": [issue.id for issue in issues],
            "files": [_display(path, root) for path in written],
            "directories": directories,
        }
        print(json.dumps(payload, indent=2, ensure_ascii=False))
        return
    for shown in directories:
        count = sum(1 for path in written if _display(path.parent, root) == shown)
        print(f"wrote {count} task file{'s' if count != 1 else ''} to {shown}/")
    print("next:")
    for shown in directories:
        print(f"  ll-harness dsl {shlex.quote(shown + '/')}")


def _invalid(problems: list[Diagnostic]) -> GeneratedLoopInvalid:
    shown = "\n".join(d.render() for d in problems[:10]) or "(no diagnostics)"
    error = GeneratedLoopInvalid(
        f"the generated loop is invalid; this is a bug in ll-loop scaffold:\n{shown}",
        hint="please report it with the issue file that produced it",
    )
    return error


def _variant_label(variant: str, count: int) -> str:
    return {
        "A": "Variant A: one issue, execute → check_skill",
        "B": f"Variant B: a work list of {count} issues",
        "verify": "criteria mode: one judged state per acceptance criterion",
        "adversarial": "adversarial mode: three probe classes",
    }[variant]


def _relative(path: Path, root: Path) -> Path:
    try:
        return path.resolve().relative_to(root.resolve())
    except ValueError:
        return path


def _display(path: Path | None, root: Path) -> str:
    if path is None:
        return ""
    return str(_relative(path, root))
