"""Judges written in Python: inline `check` snippets, `module` + `function` callables, and the
`if:` conditions every judge may have.

A snippet is compiled once into `__check__(outputs, arguments, annotations, inputs, *, <argument
names>)` with its line numbers moved to the file's, so an exception names the line of the loop
file it happened on. A callable is imported from the project root (first on `sys.path` while it
is imported and while it runs) and called as `function(outputs=..., **arguments)`. Both run in a
pooled child process (`engine.judges.check_process`). A condition is a Python expression
evaluated without builtins over `outputs`, `annotations` and `inputs`, in this process: what it
may do is bounded (`compile_condition`, `_method`) rather than killed at its time limit.
"""

from __future__ import annotations

import ast
import marshal
import operator
import re
import traceback
from collections.abc import Callable, Mapping
from functools import lru_cache
from pathlib import Path
from types import CodeType
from typing import Any

from engine.judges.check_process import (
    DEFAULT_CHECK_TIMEOUT,
    DEFAULT_MODULE_TIMEOUT,
    SnippetFailed,
    SnippetRaised,
    prepare,
    run_function,
    run_snippet,
    snippet_key,
)
from engine.judges.deadline import CheckTimeout, within
from engine.judges.result import JudgeError
from engine.load.judges import keyword_names, snippet_tree
from engine.model.judges import Judge
from engine.shell.sizes import check_binop, check_str_method

CONDITION_SECONDS = 5.0  # an `if:` is one expression over the record: milliseconds
_NO_BUILTINS: dict[str, Any] = {}


def snippet_file(judge: Judge) -> str:
    return judge.file or "<check>"


@lru_cache(maxsize=512)
def _compiled(check: str, names: tuple[str, ...], first_line: int, file: str) -> tuple[int, bytes]:
    """The snippet compiled once per text and place (a SyntaxError when it does not), as the
    key and marshalled code its process is sent."""
    tree = snippet_tree(check, dict.fromkeys(names), first_line)
    return snippet_key(), marshal.dumps(compile(tree, file, "exec"))


def check_runner(judge: Judge) -> Callable[[Any], Any]:
    """`run(ctx)` for a check judge: the snippet called with the record and the arguments in a
    process of its own (`engine.judges.check_process`), within its time limit (`timeout:`,
    else `DEFAULT_CHECK_TIMEOUT`)."""
    names = tuple(keyword_names(judge.arguments))
    key, code = _compiled(judge.check or "", names, judge.check_line, snippet_file(judge))
    arguments = dict(judge.arguments)
    keywords = {name: arguments[name] for name in names}
    limit = judge.timeout or DEFAULT_CHECK_TIMEOUT
    place = judge.file or "<loop>"
    prepare()

    def run(ctx: Any) -> Any:
        args = (ctx.outputs, arguments, ctx.env.annotations, ctx.env.inputs, keywords)
        try:
            return run_snippet(key, code, args, limit, str(Path(ctx.env.workspace).absolute()))
        except SnippetRaised as exc:
            where = f"{place}:{exc.line}" if exc.line else judge.where
            said = exc.description if exc.said else f"raised {exc.description}"
            said += _dir_field_note(exc.description, ctx.outputs)
            raise JudgeError(("the check " if exc.said else "") + said, where=where) from None
        except SnippetFailed as exc:
            raise JudgeError(
                _overran("the check", limit) if exc.timed_out else exc.reason
            ) from None

    return run


_DIR_FIELD = re.compile(r"KeyError: '(?P<field>(?P<dir>\w+?)_(?:content|file))'")


def _dir_field_note(description: str, outputs: Any) -> str:
    """Where a missing `<dir>_content` / `<dir>_file` field comes from (agent_eval's judges read
    `outputs["main_content"]`; here it exists only for a directory the work lists), when the
    snippet or function raised a KeyError for one; else nothing."""
    found = _DIR_FIELD.fullmatch(description)
    if found is None or not isinstance(outputs, Mapping) or found.group("field") in outputs:
        return ""
    field, directory = found.group("field"), found.group("dir")
    return (
        f" (the outputs record has no field {field!r}: list the directory `{directory}` in the "
        "assessment's `outputs:` (a suite's `outputs.paths`) to read its first file)"
    )


def _overran(who: str, limit: float) -> str:
    return (
        f"{who} did not finish within its time limit of {limit:g} s (set the judge's timeout: "
        "to change it)"
    )


def where_it_failed(judge: Judge, exc: BaseException) -> str:
    """`file:line` of the innermost snippet line in the traceback, else the judge's own place."""
    file = snippet_file(judge)
    lines = [f.lineno for f in traceback.extract_tb(exc.__traceback__) if f.filename == file]
    if lines and lines[-1]:
        return f"{judge.file or '<loop>'}:{lines[-1]}"
    return judge.where


def describe(exc: BaseException) -> str:
    text = str(exc)
    return f"{type(exc).__name__}: {text}" if text else type(exc).__name__


# ---------------------------------------------------------------------------------------------
# module + function


def callable_runner(judge: Judge) -> Callable[[Any], Any]:
    """`run(ctx)` for a module judge: called in a process of its own as a check is (code stuck
    in C would hold this one), imported there at its first call from the project root, which
    stays first on its `sys.path` while the function runs (it may import its project's modules
    then), within its time limit (`timeout:`, else `DEFAULT_MODULE_TIMEOUT`)."""
    module, function = str(judge.module), str(judge.function)
    arguments = dict(judge.arguments)
    limit = judge.timeout or DEFAULT_MODULE_TIMEOUT
    prepare()

    def run(ctx: Any) -> Any:
        root = str(Path(ctx.env.import_root).resolve())
        try:
            return run_function(
                root,
                module,
                function,
                ctx.outputs,
                arguments,
                limit,
                str(Path(ctx.env.workspace).absolute()),
            )
        except SnippetRaised as exc:
            said = f"the function {exc.description}" if exc.said else f"raised {exc.description}"
            raise JudgeError(said + _dir_field_note(exc.description, ctx.outputs)) from None
        except SnippetFailed as exc:
            if exc.timed_out:
                raise JudgeError(_overran(f"{module}.{function}", limit)) from None
            raise JudgeError(exc.reason) from None

    return run


def static_import_problem(module: str, function: str, root: Path) -> str | None:
    """Why `module.function` would not import from `root`, found without running any code
    (lint): the module file under `root` must define `function`; a module not under `root`
    must at least be an installed top-level package."""
    import ast
    from importlib.machinery import PathFinder

    base = Path(root).joinpath(*module.split("."))
    file = next((f for f in (base.with_suffix(".py"), base / "__init__.py") if f.is_file()), None)
    if file is None:
        top = module.split(".")[0]
        try:  # the path, not sys.modules: a module some earlier run imported is not installed
            installed = PathFinder.find_spec(top) is not None
        except (ImportError, ValueError):
            installed = False
        if installed and top != module:
            return None  # an installed package: its submodules are not checked without importing
        if installed:
            return None
        return f"module {module!r} is neither under {root} nor installed"
    try:
        tree = ast.parse(file.read_text(encoding="utf-8"))
    except (OSError, SyntaxError, ValueError) as exc:
        return f"{file} cannot be read as Python ({exc})"
    for node in tree.body:
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
            names = [node.name]
        elif isinstance(node, ast.Assign):
            names = [t.id for t in node.targets if isinstance(t, ast.Name)]
        elif isinstance(node, ast.ImportFrom | ast.Import):
            names = [(a.asname or a.name).split(".")[0] for a in node.names]
        else:
            continue
        if function in names:
            return None
    return f"{file} defines no function {function!r}"


# ---------------------------------------------------------------------------------------------
# if: conditions


@lru_cache(maxsize=512)
def compile_condition(expression: str, file: str = "<if>") -> CodeType:
    """The `if:` expression compiled (SyntaxError when it does not parse), each operator and
    method call that could build a huge value checked first: evaluated in this process, over a
    case's values, `inputs["n"] ** inputs["m"]` would otherwise run inside C holding the GIL,
    out of its time limit's reach (what `engine.shell.sizes` refuses for templates too)."""
    tree = ast.parse(expression.strip(), file, "eval")
    _refuse_unguardable(tree, file)
    return compile(ast.fix_missing_locations(_Guarded().visit(tree)), file, "eval")


def _refuse_unguardable(tree: ast.AST, file: str) -> None:
    """`ConditionRefused` for what the guard could not see through, so it fails closed: a name or
    attribute starting with `_` (`x.__pow__(n)` bypassed the operator check, and `().__class__`
    walks to every class in the process), a call of anything but a value's method
    (`[text.center][0](n)` bypassed the method check), and a computed format spec in an
    f-string (`f"{x:>{n}}"`, a width of n characters)."""
    for node in ast.walk(tree):
        if isinstance(node, ast.Attribute) and node.attr.startswith("_"):
            problem = f"attribute {node.attr!r}: names starting with _ are not allowed"
        elif isinstance(node, ast.Name) and node.id.startswith("_"):
            problem = f"name {node.id!r}: names starting with _ are not allowed"
        elif isinstance(node, ast.Call) and not isinstance(node.func, ast.Attribute):
            problem = "only a value's methods may be called (text.lower(), inputs.get('k'))"
        elif isinstance(node, ast.FormattedValue) and node.format_spec is not None:
            if any(isinstance(part, ast.FormattedValue) for part in ast.walk(node.format_spec)):
                problem = "an f-string format spec may not be computed"
            else:
                continue
        else:
            continue
        raise ConditionRefused(problem, (file, 1, getattr(node, "col_offset", 0) + 1, None))


class ConditionRefused(SyntaxError):
    """An `if:` that parses but uses what a condition may not."""


_GUARDED_OPERATORS: dict[type[ast.operator], str] = {
    ast.Pow: "**",
    ast.Mult: "*",
    ast.Add: "+",
    ast.Mod: "%",
    ast.LShift: "<<",
}


class _Guarded(ast.NodeTransformer):
    """`a ** b` → `__ll_binop__("**", a, b)`, `x.m(...)` → `__ll_method__(x, "m", ...)`."""

    def visit_BinOp(self, node: ast.BinOp) -> ast.AST:
        self.generic_visit(node)
        symbol = _GUARDED_OPERATORS.get(type(node.op))
        if symbol is None:
            return node
        call = ast.Call(
            ast.Name("__ll_binop__", ast.Load()), [ast.Constant(symbol), node.left, node.right], []
        )
        return ast.copy_location(call, node)

    def visit_Call(self, node: ast.Call) -> ast.AST:
        self.generic_visit(node)
        if not isinstance(node.func, ast.Attribute):
            return node
        owner, name = node.func.value, ast.Constant(node.func.attr)
        call = ast.Call(
            ast.Name("__ll_method__", ast.Load()), [owner, name, *node.args], node.keywords
        )
        return ast.copy_location(call, node)


def _binop(operator: str, left: Any, right: Any) -> Any:
    check_binop(operator, left, right)
    return _OPERATORS[operator](left, right)


def _method(owner: Any, name: str, *args: Any, **kwargs: Any) -> Any:
    """Only the methods a condition needs, on the types a record holds: a method this does not
    know (`int.to_bytes(n)`, `str.translate(...)`: results far larger than their inputs) is
    refused rather than run inside C, out of the time limit's reach."""
    if isinstance(owner, str) and name in _STR_METHODS:
        check_str_method(owner, name, args, kwargs)
    elif not any(isinstance(owner, kind) and name in names for kind, names in _METHODS):
        raise TypeError(
            f"{type(owner).__name__}.{name}() may not be called in an if: (a condition may call "
            "the reading methods of text, mappings and lists; write a check: for more)"
        )
    return getattr(owner, name)(*args, **kwargs)


_STR_METHODS = frozenset(
    {"count", "endswith", "startswith", "find", "rfind", "index", "rindex"}
    | {"isalnum", "isalpha", "isascii", "isdecimal", "isdigit", "isidentifier", "islower"}
    | {"isnumeric", "isprintable", "isspace", "istitle", "isupper"}
    | {"lower", "upper", "casefold", "capitalize", "title", "swapcase"}
    | {"strip", "lstrip", "rstrip", "removeprefix", "removesuffix"}
    | {"split", "rsplit", "splitlines", "partition", "rpartition", "encode"}
    | {"ljust", "rjust", "center", "zfill", "expandtabs", "replace", "join"}  # size-checked
)
# The reading methods of the other types a record holds (text's are `_STR_METHODS`, above).
_METHODS: tuple[tuple[type | tuple[type, ...], frozenset[str]], ...] = (
    (Mapping, frozenset({"get", "keys", "values", "items"})),
    ((list, tuple), frozenset({"count", "index"})),
    ((int, float), frozenset({"bit_length", "is_integer"})),
)


_OPERATORS: dict[str, Callable[[Any, Any], Any]] = {
    "**": operator.pow,
    "*": operator.mul,
    "+": operator.add,
    "%": operator.mod,
    "<<": operator.lshift,
}


def condition_holds(
    code: CodeType, outputs: Mapping[str, Any], annotations: Mapping[str, Any], inputs: Any
) -> bool:
    """Evaluate a compiled condition without builtins, within `CONDITION_SECONDS`."""
    scope = {
        "__builtins__": _NO_BUILTINS,
        "__ll_binop__": _binop,
        "__ll_method__": _method,
        "outputs": outputs,
        "annotations": dict(annotations),
        "inputs": dict(inputs) if isinstance(inputs, Mapping) else inputs,
    }
    try:
        return within(CONDITION_SECONDS, lambda: bool(eval(code, scope)))
    except CheckTimeout:
        raise TimeoutError(f"it did not finish within {CONDITION_SECONDS:g} s") from None
