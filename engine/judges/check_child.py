"""The process inline `check:` snippets and `module:` functions run in (started by
`engine.judges.check_process`).

Run as a script (`python -P check_child.py`), it imports nothing of ll-loop: it reads requests
from stdin and answers on stdout, each a pickled tuple after its 4-byte big-endian length. The
first request is `("path", sys_path)`, the parent's `sys.path`; then, one at a time:

- `("call", key, code, args, seconds, cwd)`: run snippet `key` (its compiled module `code`,
  marshalled, the first time the key is sent) as `__check__(*args[:4], **args[4])` within
  `seconds`, in directory `cwd` (None: this process's).
- `("module", root, module, function, outputs, arguments, seconds, cwd)`: call
  `module.function(outputs=outputs, **arguments)` within `seconds` in `cwd`, with `root` first on
  `sys.path` while it is imported (once per root, module and function) and while it runs;
  the modules a call from one root imported are dropped from `sys.modules` before a call from
  another, so two projects' same-named packages never answer for each other.

The answer is `("ok", value)`, `("raised", "Type: message", line)` with the snippet's last line
in the traceback (0 for a function), `("quit", "Type", repr_of_exit_code, line)` for
`sys.exit()` or `KeyboardInterrupt` in it, `("unsendable", "Type: message")` for a value that
pickle cannot send back, or `("unloadable", sentence)` for a module that does not import or has
no such function.

What a snippet or a function prints goes to stderr (stdout carries the answers). The process
lives in a session of its own (a Ctrl-C at the terminal is the parent's to handle), ends when
its stdin closes (the parent is gone), or on its own shortly after a call's time limit, and
cannot take more than `LL_CHECK_MEMORY_BYTES` of address space. A copy a snippet or function
forks ends when the call returns in it: only this process answers. (`PR_SET_PDEATHSIG` would
follow the thread that started it, not the process: a pooled child outlives that thread.)
"""

from __future__ import annotations

import importlib
import marshal
import os
import pickle
import resource
import signal
import struct
import sys
import traceback
from collections.abc import Callable
from typing import Any

HEADER = struct.Struct(">I")
ORPHAN_GRACE = 5.0  # seconds past a call's time limit its process ends on its own
SNIPPET_FILES: set[str] = set()
FUNCTIONS: dict[tuple[str, str, str], Any] = {}  # (root, module, function) -> the function
IMPORTED_FROM: dict[str, str] = {}  # a module a function's call imported -> that call's root


class _Unloadable(Exception):
    """The module does not import, or has no such function (the sentence says which)."""


def serve() -> None:
    requests, answers = _Requests(os.dup(0)), os.dup(1)
    os.dup2(os.open(os.devnull, os.O_RDONLY), 0)  # a snippet reading stdin must not eat requests
    os.dup2(2, 1)  # nor its print() corrupt the answers
    sys.stdout = sys.stderr
    _limit_memory()
    first = requests.next()
    if first is None:
        return
    sys.path[:] = list(first[1])
    snippets: dict[int, Any] = {}
    me = os.getpid()
    while (request := requests.next()) is not None:
        if request[0] == "module":
            _, root, module, function, outputs, arguments, seconds, cwd = request
            call = _function_call(root, module, function, outputs, arguments)
        else:
            _, key, code, args, seconds, cwd = request
            if code is not None:
                namespace: dict[str, Any] = {"__name__": "ll_loop_check"}
                compiled = marshal.loads(code)
                SNIPPET_FILES.add(compiled.co_filename)
                exec(compiled, namespace)
                snippets[key] = namespace["__check__"]
            call = _snippet_call(snippets[key], args)
        call = _in_directory(cwd, call)
        # The parent kills this process at the time limit; should the parent be gone, the
        # kernel's SIGALRM (no handler: its default ends the process) does soon after, even
        # with the call stuck in C. A handler, SIG_IGN or a mask an earlier call left here is
        # undone first: it would keep every later orphaned call running.
        signal.signal(signal.SIGALRM, signal.SIG_DFL)
        signal.pthread_sigmask(signal.SIG_UNBLOCK, (signal.SIGALRM,))
        signal.setitimer(signal.ITIMER_REAL, seconds + ORPHAN_GRACE)
        answer = _call(call)
        if os.getpid() != me:  # a copy the call forked: it must not answer or take requests
            os._exit(0)
        signal.setitimer(signal.ITIMER_REAL, 0)
        _write(answers, answer)


def _in_directory(cwd: str | None, call: Callable[[], Any]) -> Callable[[], Any]:
    """`call` made in `cwd`, the judge's workspace (None: where this process is). This process
    serves every run of its parent: it kept the directory it was started in, so a second run's
    `open("out.txt")` read the first run's file."""
    if cwd is None:
        return call

    def moved() -> Any:
        try:
            os.chdir(cwd)
        except OSError as exc:
            raise _Unloadable(f"cannot enter the workspace {cwd}: {_describe(exc)}") from None
        return call()

    return moved


def _snippet_call(snippet: Any, args: tuple[Any, ...]) -> Callable[[], Any]:
    return lambda: snippet(*args[:4], **args[4])


def _function_call(
    root: str, module: str, function: str, outputs: Any, arguments: dict[str, Any]
) -> Callable[[], Any]:
    """The call of `module.function`, imported from `root` at its first call: the root stays
    first on `sys.path` while the function runs, so it may import its project's modules then."""

    def call() -> Any:
        _forget_other_projects(root)
        inserted = root not in sys.path
        if inserted:
            sys.path.insert(0, root)
        before = set(sys.modules)
        try:
            found = FUNCTIONS.get((root, module, function))
            if found is None:
                found = FUNCTIONS[root, module, function] = _load(root, module, function)
            return found(outputs=outputs, **arguments)
        finally:
            if inserted and root in sys.path:
                sys.path.remove(root)
            for name in sys.modules.keys() - before:
                if _lives_in(sys.modules[name], root):
                    IMPORTED_FROM[name] = root

    return call


def _forget_other_projects(root: str) -> None:
    """This process serves every suite its parent runs: a package another project's call
    imported (two projects each with an `evals`) must be imported again from `root`, not
    answered from `sys.modules` with the other project's code."""
    for name in [name for name, came_from in IMPORTED_FROM.items() if came_from != root]:
        sys.modules.pop(name, None)
        del IMPORTED_FROM[name]


def _lives_in(module: Any, root: str) -> bool:
    """Whether a module is the project's own (a file or package folder under `root`), not the
    standard library's or an installed package's, which are the same for every project (and a
    C extension such as numpy's cannot be imported twice)."""
    places = [getattr(module, "__file__", None), *(getattr(module, "__path__", None) or ())]
    return any(
        isinstance(place, str)
        and place.startswith(root.rstrip(os.sep) + os.sep)
        and "site-packages" not in place
        and "dist-packages" not in place
        for place in places
    )


def _load(root: str, module: str, function: str) -> Any:
    importlib.invalidate_caches()  # a module written since this process last looked
    try:
        loaded = importlib.import_module(module)
    except Exception as exc:
        raise _Unloadable(
            f"cannot import module {module!r} from {root}: {_describe(exc)}"
        ) from None
    found = getattr(loaded, function, None)
    if not callable(found):
        raise _Unloadable(f"module {module!r} has no function {function!r}")
    return found


def _call(call: Callable[[], Any]) -> tuple[Any, ...]:
    try:
        value = _plain(call())
    except _Unloadable as exc:
        return ("unloadable", str(exc))
    except (SystemExit, KeyboardInterrupt) as exc:
        code = getattr(exc, "code", None)
        return ("quit", type(exc).__name__, None if code is None else repr(code), _line(exc))
    except BaseException as exc:  # the snippet's or function's own failure is its answer
        return ("raised", _describe(exc), _line(exc))
    try:
        pickle.dumps(value, protocol=pickle.HIGHEST_PROTOCOL)
    except Exception as exc:
        return ("unsendable", f"{type(value).__name__} ({_describe(exc)})")
    return ("ok", value)


def _plain(value: Any) -> Any:
    """`value` with a number, a string or a tuple of a subclass (numpy's `float64`, a project's
    own `float`, a named tuple) as the plain type, in a tuple too: unpickling one would import
    its module in the parent, which may not have it."""
    if isinstance(value, tuple):
        return tuple(_plain(item) for item in value)
    for kind in (bool, int, float, str):
        if isinstance(value, kind):
            return value if type(value) is kind else kind(value)
    return value


def _describe(exc: BaseException) -> str:
    text = str(exc)
    return f"{type(exc).__name__}: {text}" if text else type(exc).__name__


def _line(exc: BaseException) -> int:
    frames = traceback.extract_tb(exc.__traceback__)
    lines = [f.lineno for f in frames if f.filename in SNIPPET_FILES]
    return lines[-1] if lines and lines[-1] else 0


class _Requests:
    """Requests from stdin, one after the other (a read may bring the start of the next)."""

    def __init__(self, fd: int) -> None:
        # grown in place: `bytes +=` copied the whole request (a record holding a 100 MB
        # output) once per 64 KiB pipe read, minutes before the snippet ran
        self.fd, self.data = fd, bytearray()

    def next(self) -> Any:
        """The next request, or None at the end of stdin (the parent is gone)."""
        while len(self.data) < HEADER.size or len(self.data) < HEADER.size + self._size():
            chunk = os.read(self.fd, 1 << 20)
            if not chunk:
                return None
            self.data += chunk
        end = HEADER.size + self._size()
        with memoryview(self.data) as view:
            request = pickle.loads(view[HEADER.size : end])
        del self.data[:end]
        return request

    def _size(self) -> int:
        return int(HEADER.unpack_from(self.data)[0])


def _write(fd: int, answer: tuple[Any, ...]) -> None:
    data = pickle.dumps(answer, protocol=pickle.HIGHEST_PROTOCOL)
    view = memoryview(HEADER.pack(len(data)) + data)
    while view:
        view = view[os.write(fd, view) :]


def _limit_memory() -> None:
    try:  # checked by the parent, which always sets it
        limit = int(os.environ.get("LL_CHECK_MEMORY_BYTES", ""))
    except ValueError:
        limit = 4 << 30
    _, hard = resource.getrlimit(resource.RLIMIT_AS)
    if hard == resource.RLIM_INFINITY or hard > limit:
        resource.setrlimit(resource.RLIMIT_AS, (limit, limit))


if __name__ == "__main__":
    serve()
