"""`ll-loop migrate`: little-loops loops (and what they use) → ll-loop loops, with a report.

`migrate(paths, out=..., force=..., validate=...)` reads every loop given (directories are
searched for *.yaml), follows what each one uses — the fragment libraries it imports, the
sub-loops it runs — and converts all of them together, so references stay right and a
directory little-loops' runner shared with a sub-loop (`${context.run_dir}`) is passed down.
Each file is written next to its input as `NAME.ll.yaml` (or under `out`, keeping the layout),
never over an existing file unless `force`, and then validated with `validate` (the CLI passes
`ll-loop validate`'s own check). The `MigrationReport` says per file what could not be kept,
and why. See docs/migrating.md.
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from engine.load.project import UnsafePath, ensure_dir, write_new_file
from engine.migrate.expressions import CHILD_READ, SUBLOOP_KEYS
from engine.migrate.loops import Library, LoopPlan, convert_library, convert_loop
from engine.migrate.report import FileReport, MigrationReport, Note
from engine.migrate.source import (
    SourceError,
    find,
    header_comments,
    listing,
    ll_loop_marker,
    mapping,
    not_a_loop,
    not_a_mapping,
    not_found,
    read_yaml,
    resolve_flow,
    resolve_inheritance,
)
from engine.migrate.writer import dump
from engine.model.errors import Diagnostic

__all__ = ["FileReport", "MigrationReport", "Note", "migrate"]

Validator = Callable[[Path], list[Diagnostic]]

_CHILD_RUN_DIR = "${context.run_dir | default(run.dir)}"
_CONTEXT_KEY = re.compile(r"(?<!\$)\$\{\s*context\s*\.\s*([A-Za-z_]\w*)")


@dataclass
class _Item:
    """One file of the set: what it is, what it says, where it goes."""

    path: Path
    report: FileReport
    data: dict[str, Any] = field(default_factory=dict)
    dest: Path | None = None
    children: list[tuple[str, Path]] = field(default_factory=list)  # (state, child file)
    imports: list[tuple[str, Path]] = field(default_factory=list)  # (entry, library file)
    parents: list[Path] = field(default_factory=list)  # from: files merged in
    unchanged: bool = False  # the output exists already with exactly this text
    plan: LoopPlan = field(default_factory=LoopPlan)

    @property
    def role(self) -> str:
        return self.report.role


def migrate(
    paths: Sequence[Path],
    *,
    out: Path | None = None,
    force: bool = False,
    validate: Validator | None = None,
    search: Sequence[Path] = (),
) -> MigrationReport:
    """Convert the loops at `paths` and everything they use; write, validate, report.

    `search` adds directories where sub-loops, parents and libraries are looked up last
    (little-loops' own built-in loops directory, for loops that use its libraries)."""
    inputs, alone = _expand(paths, out)
    roots = _roots(paths, inputs) + [p.resolve() for p in search]
    items = _discover(inputs, roots)
    _mark_parents(items)
    _assign_outputs(items, out, _base(paths), [p.resolve() for p in search])
    _plan(items)
    report = MigrationReport()
    written: list[_Item] = []
    report.files += alone
    for item in items.values():
        report.files.append(item.report)
        if item.dest is None:
            continue
        text = _convert(item, items)
        if _write(item, text, force):
            written.append(item)
    for item in written:
        _check(item, validate)
    return report


# --- the set of files ---------------------------------------------------------------------------


_CONVERTED_NAME = "named NAME.ll.yaml, as migrate names what it writes: not converted again"
_UNDER_OUT = "under --out, where migrate writes: not converted again"
_ALREADY_OURS = (
    "already an ll-loop loop (it loads as one and uses ll-loop's own {marker}): nothing to convert"
)


def _expand(paths: Sequence[Path], out: Path | None = None) -> tuple[list[Path], list[FileReport]]:
    """The files to convert, and the files of the given directories left alone on purpose:
    what migrate wrote (`NAME.ll.yaml`, or anything under `out` when it lies inside a directory
    given), and symbolic links (following one would write outside the tree)."""
    found: list[Path] = []
    alone: list[FileReport] = []
    written = out.resolve() if out is not None else None
    for path in paths:
        if not path.is_dir():
            if _is_output_name(path):  # named, not found: `NAME.ll.ll.yaml` all the same
                alone.append(_left_alone(path.absolute(), _CONVERTED_NAME))
            else:
                found.append(path)
            continue
        for file in sorted(p for p in path.rglob("*") if p.suffix in (".yaml", ".yml")):
            link = _link_in(file, path)
            if link is not None:
                alone.append(_left_alone(file.absolute(), _LINKED.format(link=link)))
            elif _is_output_name(file):
                alone.append(_left_alone(file.absolute(), _CONVERTED_NAME))
            elif _inside(file, written, path):
                alone.append(_left_alone(file.absolute(), _UNDER_OUT))
            elif file.is_file():
                found.append(file)
    return [p.resolve() if p.exists() else p for p in found], alone


_LINKED = (
    "{link} is a symbolic link: not followed, so nothing is written outside the directory "
    "given; give its target to migrate to convert it"
)


def _inside(file: Path, out: Path | None, top: Path) -> bool:
    """Whether `file` lies under `out`, a folder below the directory given (`top`): what an
    earlier run wrote there. `--out` naming `top` itself is no such folder."""
    if out is None or out == top.resolve():
        return False
    return file.resolve().is_relative_to(out)


def _link_in(file: Path, top: Path) -> Path | None:
    """The symbolic link on the way from `top` down to `file` (the file itself included)."""
    part = file
    while part != top and part != part.parent:
        if part.is_symlink():
            return part
        part = part.parent
    return None


def _is_output_name(path: Path) -> bool:
    return path.stem.endswith(".ll")


def _left_alone(path: Path, reason: str) -> FileReport:
    """A file not converted on purpose: reported, not counted for the exit code."""
    return FileReport(str(path), status="skipped", reason=reason, counted=False)


def _roots(paths: Sequence[Path], inputs: Sequence[Path]) -> list[Path]:
    """Where names are looked up after the referring file's own directory."""
    roots = [p.resolve() for p in paths if p.is_dir()] + [p.parent for p in inputs]
    ordered = sorted(dict.fromkeys(roots), key=lambda p: len(p.parts))
    return ordered


def _discover(inputs: Sequence[Path], roots: Sequence[Path]) -> dict[Path, _Item]:
    items: dict[Path, _Item] = {}
    queue: list[tuple[Path, str]] = [(p, "") for p in inputs]
    while queue:
        path, wanted = queue.pop(0)
        if path in items:
            continue
        item = _read(path, wanted, roots)
        items[path] = item
        queue += [(child, "loop") for _, child in item.children]
        queue += [(lib, "library") for _, lib in item.imports]
    return items


def _read(path: Path, wanted: str, roots: Sequence[Path]) -> _Item:
    item = _Item(path, FileReport(str(path)))
    try:
        data = read_yaml(path)
        if not isinstance(data, dict):
            raise SourceError(not_a_mapping(path, data))
        if wanted == "library" or _is_library(data):
            item.report.role = "library"
            item.data = data
            return item
        data, parents = resolve_inheritance(data, path, roots)
        item.parents = parents
        for parent in parents:
            item.report.note("changed", "from", f"{parent.name} merged in")
        if "flow" in data:
            item.report.note("changed", "flow", "expanded into states")
        data = resolve_flow(data)
        if not isinstance(data.get("states"), dict) or "name" not in data or "initial" not in data:
            raise SourceError(not_a_loop(path, data))
        marker = ll_loop_marker(data)
        if marker and _loads_as_ll_loop(path):
            item.report = _left_alone(path, _ALREADY_OURS.format(marker=marker))
            return item
    except SourceError as exc:
        item.report.status = "failed"
        item.report.reason = exc.message
        return item
    item.data = data
    for state, body in data["states"].items():
        ref = body.get("loop") if isinstance(body, dict) else None
        if isinstance(ref, str) and "${" in ref:
            item.report.note(
                "changed", f"states.{state}.loop",
                "the sub-loop is named at run time: convert the loops it can name too, and "
                "keep their names (--out DIR, or --force in place)",
            )  # fmt: skip
        elif isinstance(ref, str):
            child = find(ref, path.parent, roots, loop=True)
            if child is None:
                item.report.note(
                    "blocker", f"states.{state}.loop",
                    not_found(path, ["states", str(state), "loop"], f"sub-loop {ref!r}"),
                )  # fmt: skip
            else:
                item.children.append((str(state), child))
    for entry in listing(data.get("import")):
        lib = find(str(entry), path.parent, roots, loop=False)
        if lib is None:
            message = not_found(path, ["import"], f"fragment library {entry!r}")
            item.report.note("blocker", "import", message)
        else:
            item.imports.append((str(entry), lib))
    return item


def _mark_parents(items: dict[Path, _Item]) -> None:
    """A `from:` parent that is no loop on its own is merged into its children, not failed."""
    children: dict[Path, list[str]] = {}
    for item in items.values():
        if item.report.status == "failed":
            continue
        for parent in item.parents:
            children.setdefault(parent, []).append(str(item.data.get("name") or item.path.name))
    for path, names in children.items():
        merged = items.get(path)
        if merged is not None and merged.report.status == "failed":
            merged.report = _left_alone(
                path, f"a from: parent, merged into {', '.join(sorted(set(names)))}"
            )


def _loads_as_ll_loop(path: Path) -> bool:
    from engine.load.loader import load_loop_file
    from engine.model.errors import LoopError

    try:
        load_loop_file(path)
    except LoopError:
        return False
    return True


def _is_library(data: dict[str, Any]) -> bool:
    return "fragments" in data and not any(k in data for k in ("states", "flow", "from"))


def _base(paths: Sequence[Path]) -> Path:
    """The directory the --out layout is relative to: the one given, or the common one of
    the paths given (a file counts by its directory)."""
    folders = [p.resolve() if p.is_dir() else p.absolute().parent for p in paths]
    return Path(os.path.commonpath([str(f) for f in folders]))


def _assign_outputs(
    items: dict[Path, _Item], out: Path | None, base: Path, search: Sequence[Path]
) -> None:
    usable = [i for i in items.values() if i.report.status not in ("failed", "skipped")]
    taken: set[Path] = set()
    for item in usable:
        if out is not None:
            item.dest = (out / _relative(item.path, base, search)).resolve()
            if item.dest in taken:  # two files of one name from outside the directory given
                common = Path(os.path.commonpath([str(base), str(item.path)]))
                item.dest = (out / item.path.relative_to(common)).resolve()
        else:
            item.dest = item.path.with_name(f"{item.path.stem}.ll{item.path.suffix}")
        taken.add(item.dest)
        item.report.output = str(item.dest)


def _relative(path: Path, base: Path, search: Sequence[Path]) -> Path:
    """Where a file goes under --out: below the directory given, or (a file found with
    --search) below the search directory, as `loop:` and `import:` name it there."""
    for root in (base, *search):
        if path.is_relative_to(root):
            return path.relative_to(root)
    return Path(path.name)


# --- what comes from the whole set --------------------------------------------------------------


def _plan(items: dict[Path, _Item]) -> None:
    loops = [i for i in items.values() if i.role == "loop" and i.dest is not None]
    libraries = {p: i for p, i in items.items() if i.role == "library" and i.dest is not None}
    callers: dict[Path, list[_Item]] = {}
    for item in loops:
        for _, called in item.children:
            callers.setdefault(called, []).append(item)
    for item in loops:
        item.plan.run_dir = _run_dir(item, bool(callers.get(item.path)), libraries)
        item.plan.sources = [item.path, *item.parents, *(lib for _, lib in item.imports)]
    for item in loops:
        for state, child_path in item.children:
            child = items.get(child_path)
            if child is None or child.dest is None or item.dest is None:
                continue
            item.plan.loop_refs[state] = _loop_ref(item.dest, child.dest)
            body = item.data["states"][state]
            given = mapping(body.get("with"))
            extra = item.plan.bindings.setdefault(state, {})
            if _reads_run_dir(child, libraries) and "run_dir" not in given:
                extra["run_dir"] = item.plan.run_dir
            declared = _declared(child)
            for key in given:
                if key not in declared:
                    child.plan.add_parameters.setdefault(
                        str(key), {"description": f"given by {item.data.get('name')}"}
                    )
            if body.get("context_passthrough") and given:
                item.report.note(
                    "dropped", f"states.{state}.context_passthrough",
                    "little-loops ignored it beside with: (only with: bound the child)",
                )  # fmt: skip
            elif body.get("context_passthrough"):
                _passthrough(item, state, child, extra, libraries)
            if body.get("context_passthrough") or given:
                _child_values(item, state, child)
        for entry, lib_path in item.imports:
            lib = libraries.get(lib_path)
            if lib is not None and lib.dest is not None and item.dest is not None:
                reference = os.path.relpath(lib.dest, item.dest.parent)
                item.plan.libraries.append(Library(lib_path, _fragments(lib), reference=reference))
            elif lib is None and lib_path in items:
                item.report.note("blocker", "import", f"{entry!r} is not a fragment library")


def _run_dir(item: _Item, called: bool, libraries: dict[Path, _Item]) -> str:
    """What `${context.run_dir}` becomes: the run's own directory, or the caller's one when
    this loop is called as a sub-loop (little-loops handed the caller's directory down)."""
    context = mapping(item.data.get("context"))
    params = mapping(item.data.get("parameters"))
    own = context.get("run_dir")
    if isinstance(own, str) and own.strip():
        return "${context.run_dir}"
    if context.get("run_dir", "x") in ("", None):
        context.pop("run_dir")
    if "run_dir" in params or (called and _reads_run_dir(item, libraries)):
        if "run_dir" not in params:
            item.plan.add_parameters["run_dir"] = {
                "type": "string",
                "description": "the caller's directory for shared files (default: ${run.dir})",
            }
        return _CHILD_RUN_DIR
    return "${run.dir}"


def _reads_run_dir(item: _Item, libraries: dict[Path, _Item]) -> bool:
    if "context.run_dir" in json.dumps(item.data, default=str):
        return True
    used = {b.get("fragment") for b in item.data.get("states", {}).values() if isinstance(b, dict)}
    for _, lib_path in item.imports:
        lib = libraries.get(lib_path)
        frags = _fragments(lib) if lib is not None else {}
        if any("context.run_dir" in json.dumps(frags.get(n), default=str) for n in used if n):
            return True
    return False


def _passthrough(
    item: _Item, state: str, child: _Item, extra: dict[str, str], libs: dict[Path, _Item]
) -> None:
    """little-loops' context_passthrough gave the child the caller's whole context (and its
    captures) under the child's own `context:` values, which won; ll-loop passes what the
    child reads and does not set itself, by name, through `with:`."""
    wanted = set(_CONTEXT_KEY.findall(json.dumps(child.data, default=str))) - {"run_dir"}
    wanted -= {str(k) for k in mapping(child.data.get("context"))}
    context = mapping(item.data.get("context"))
    params = mapping(item.data.get("parameters"))
    provided = set(context) | set(params) | set(listing(item.data.get("required_inputs")))
    if isinstance(item.data.get("input_key"), str):
        provided.add(item.data["input_key"])
    captures = {
        b["capture"] for b in item.data["states"].values()
        if isinstance(b, dict) and isinstance(b.get("capture"), str)
    }  # fmt: skip
    child_params = child.data.get("parameters")
    declared = set(child_params) if isinstance(child_params, dict) else set()
    passed = []
    for key in sorted(wanted):
        if key in captures:
            extra.setdefault(key, f"${{captured.{key}.output}}")
        elif key in provided:
            extra.setdefault(key, f"${{context.{key}}}")
        else:
            continue
        passed.append(key)
        if key not in declared:
            child.plan.add_parameters.setdefault(
                key, {"description": f"passed by {item.data.get('name')} (context_passthrough)"}
            )
    item.report.note(
        "changed", f"states.{state}.context_passthrough",
        "the child gets by name what it reads: with: " + (", ".join(passed) or "nothing")
        + "; values it sets no longer flow back into this loop's context",
    )  # fmt: skip


def _child_values(item: _Item, state: str, child: _Item) -> None:
    """little-loops merged a child's captures into its caller under the sub-loop state's name
    (`${captured.STATE.CAPTURE.output}`); ll-loop gives a caller the child's `outputs`, so the
    child declares each value read that way and the caller reads it there."""
    text = json.dumps(item.data, default=str)
    own = item.data["states"][state].get("capture")
    capture_as = re.sub(r"\W", "_", own if isinstance(own, str) else state)
    prefix = re.compile(r"(?<!\$)\$\{\s*captured\s*")
    for found in prefix.finditer(text):
        read = CHILD_READ.match(text, found.end())
        if read is None or read.group(1) != state or read.group(2) in SUBLOOP_KEYS:
            continue
        capture, name = read.group(2), read.group(3)
        output = capture if name == "output" else f"{capture}_{name}"
        output = re.sub(r"\W", "_", output)
        moved = f"{capture_as}.outputs.{output}"
        if item.plan.child_values.setdefault((state, capture, name), moved) != moved:
            continue
        item.plan.child_captures[state] = capture_as
        item.report.note(
            "changed", f"states.{state}",
            f"${{captured.{state}.{capture}.{name}}} (the child's capture, which little-loops "
            f"merged into this loop) reads the child's output {output}: ${{captured.{moved}}}",
        )  # fmt: skip
        if output in child.plan.add_outputs:
            continue
        child.plan.add_outputs[output] = f"${{captured.{capture}.{name}}}"
        child.report.note(
            "changed", f"outputs.{output}",
            f"{item.data.get('name')} reads this loop's capture {capture} "
            "(little-loops merged a child's captures into its caller): declared as an output",
        )  # fmt: skip


def _declared(loop: _Item) -> set[str]:
    """The parameters a little-loops loop will have once converted."""
    params = loop.data.get("parameters")
    names = set(params) if isinstance(params, dict) else set()
    names |= {str(k) for k in listing(loop.data.get("required_inputs"))}
    if isinstance(loop.data.get("input_key"), str):
        names.add(loop.data["input_key"])
    return names


def _fragments(lib: _Item) -> dict[str, Any]:
    frags = lib.data.get("fragments")
    return frags if isinstance(frags, dict) else {}


def _loop_ref(parent: Path, child: Path) -> str:
    """How the converted parent names the converted child (a bare name when side by side)."""
    relative = os.path.relpath(child, parent.parent)
    if "/" not in relative and os.sep not in relative:
        return Path(relative).stem
    return relative


# --- writing ------------------------------------------------------------------------------------


def _convert(item: _Item, items: dict[Path, _Item]) -> str:
    header = header_comments(item.path)
    if item.role == "library":
        converted = convert_library(item.data, item.report, [item.path])
        return dump(converted, header)
    for lib in item.plan.libraries:
        source = items[lib.path]
        lib.raw = _fragments(source)
        lib.converted = _library_fragments(source)
    return dump(convert_loop(item.data, item.plan, item.report), header)


def _library_fragments(lib: _Item) -> dict[str, Any]:
    """The converted fragments of a library (converted once, quietly, for the loops)."""
    scratch = FileReport(str(lib.path), role="library")
    fragments = convert_library(lib.data, scratch).get("fragments", {})
    return fragments if isinstance(fragments, dict) else {}


def _write(item: _Item, text: str, force: bool) -> bool:
    """Write `text` to the item's output unless that is a directory or (without `force`) a file
    with other content."""
    dest = item.dest
    assert dest is not None
    if dest.is_dir():
        item.report.status = "failed"
        item.report.reason = f"{dest} is a directory, so the converted file cannot be written there"
        return False
    if _same_text(dest, text):
        item.unchanged = True
        return True
    if dest.exists() and not force:
        item.report.status = "skipped"
        item.report.reason = f"{dest} exists with other content; --force replaces it"
        return False
    try:  # never through a link, nor into a FIFO (the open would wait for a reader)
        ensure_dir(dest.parent)
        write_new_file(dest, text.encode("utf-8"), replace=True)
    except UnsafePath as exc:
        item.report.status = "failed"
        item.report.reason = f"cannot write the converted file: {exc.message}"
        return False
    except OSError as exc:
        item.report.status = "failed"
        item.report.reason = f"cannot write {dest}: {exc.strerror or exc}"
        return False
    return True


def _same_text(dest: Path, text: str) -> bool:
    try:
        return dest.is_file() and dest.read_text(encoding="utf-8") == text
    except (OSError, UnicodeDecodeError):
        return False


def _check(item: _Item, validate: Validator | None) -> None:
    if item.role != "library" and validate is not None and item.dest is not None:
        item.report.diagnostics = validate(item.dest)
        _retries_counted_differently(item)
    if _blocked(item.report) or item.report.errors:
        item.report.status = "blocked"
    else:
        item.report.status = "unchanged" if item.unchanged else "converted"


def _retries_counted_differently(item: _Item) -> None:
    """Say where ll-loop's max_retries counts entries that little-loops did not: little-loops
    counted consecutive re-entries of the state itself, ll-loop counts every entry along a
    cycle's back edge (a self-loop is one, so only other back edges differ)."""
    from engine.graph.loop_graph import compile_graph, retry_edges
    from engine.load.loader import load_loop_file
    from engine.model.errors import LoopError

    assert item.dest is not None
    try:
        loop = load_loop_file(item.dest)
    except LoopError:
        return
    retries = retry_edges(compile_graph(loop))
    for name, state in loop.states.items():
        if state.max_retries is None:
            continue
        others = sorted(source for source, target in retries if target == name != source)
        if others:
            item.report.note(
                "changed", f"states.{name}.max_retries",
                "little-loops counted only consecutive re-entries of this state; ll-loop also "
                f"counts entries from {', '.join(others)} (a cycle's back edge), so the "
                "retries can be used up sooner",
            )  # fmt: skip


def _blocked(report: FileReport) -> bool:
    return any(note.kind == "blocker" for note in report.notes)
