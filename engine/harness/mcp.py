"""`ll-harness mcp SERVER:TOOL`: a real MCP tool call over stdio per sample, via the official SDK.

The server is looked up in the project's `.mcp.json` (the agent CLIs' format:
`{"mcpServers": {"NAME": {"command": ..., "args": [...], "env": {...}}}}`) or `--config`.
Before any sample, one session lists the server's tools: an unknown tool is refused (exit 2),
and the tool's definition (description and input schema) with the server's command line is the
subject's content, so a changed tool is a different subject. Each sample then starts the
server, initializes a session and calls the tool once; the text of the result is the output,
and a result flagged `is_error` exits 1 (else 0). No LLM is involved: one sample by default.

The `mcp` package is imported only in this module, and only when a call is made.
"""

from __future__ import annotations

import contextlib
import functools
import json
import logging
import math
import os
import re
import threading
import time
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, replace
from pathlib import Path
from typing import IO, TYPE_CHECKING, Any

from engine.harness.keys import input_hash, sha256_text
from engine.harness.refusal import Refusal
from engine.harness.subjects import Subject, SubjectRun
from engine.load.jsonfile import read_json_file
from engine.model import jsontext
from engine.processes.group import MAX_OUTPUT_ENV, output_cap

if TYPE_CHECKING:
    from mcp import ClientSession

CONFIG_NAME = ".mcp.json"
PROBE_TIMEOUT = 60.0
STDERR_KEPT = 20000  # bytes of a server's stderr kept with a sample


@dataclass(frozen=True)
class ServerSpec:
    """How to start one stdio MCP server."""

    name: str
    command: str
    args: tuple[str, ...] = ()
    env: Mapping[str, str] | None = None
    cwd: str | None = None
    # command, args and env as written, before `${VAR}` expansion: what is measured, so a
    # rotated token is not a different subject (and its value is never hashed into history)
    written: Mapping[str, Any] | None = None

    def command_line(self) -> list[str]:
        return [self.command, *self.args]


def split_target(target: str) -> tuple[str, str]:
    """`server:tool` → (server, tool)."""
    server, sep, tool = target.partition(":")
    if not sep or not server or not tool:
        raise Refusal(
            f"{target!r} is not SERVER:TOOL",
            hint="name the server (a key of mcpServers in .mcp.json) and the tool: calc:add",
        )
    return server, tool


def load_server(config: Path, name: str) -> ServerSpec:
    """Server `name` from an `.mcp.json`-style file; every problem is one refusal sentence."""
    try:
        data = read_json_file(config)
    except OSError as exc:
        raise Refusal(
            f"cannot read the MCP configuration {config}: {exc.strerror or exc}",
            hint=f"write a {CONFIG_NAME} with an mcpServers map, or pass --config PATH",
        ) from None
    except ValueError as exc:  # `file:line:column: reason`
        raise Refusal(str(exc), hint="fix the file (it is plain JSON)") from None
    servers = data.get("mcpServers") if isinstance(data, dict) else None
    if not isinstance(servers, dict):
        raise Refusal(
            f"{config} has no `mcpServers` object",
            hint='write {"mcpServers": {"NAME": {"command": "...", "args": [...]}}}',
        )
    entry = servers.get(name)
    if not isinstance(entry, dict):
        known = ", ".join(sorted(map(str, servers))) or "none"
        raise Refusal(
            f"no MCP server {name!r} in {config} (servers: {known})",
            hint="use one of the names under mcpServers",
        )
    kind = entry.get("type", "stdio")
    if kind != "stdio" or "url" in entry:
        raise Refusal(
            f"MCP server {name!r} is a {kind!r} server; ll-harness calls stdio servers only",
            hint="give the server a `command` that speaks MCP on stdin/stdout",
        )
    command, args, env = entry.get("command"), entry.get("args", []), entry.get("env")
    if not isinstance(command, str) or not command:
        raise Refusal(f"MCP server {name!r} has no `command`", hint="add the command to start it")
    if not isinstance(args, list) or not all(isinstance(a, str) for a in args):
        raise Refusal(f"`args` of MCP server {name!r} must be a list of strings", hint="fix it")
    if env is not None and not (
        isinstance(env, dict) and all(isinstance(v, str) for v in env.values())
    ):
        raise Refusal(f"`env` of MCP server {name!r} must map names to strings", hint="fix it")
    cwd = entry.get("cwd")
    written = {"command": command, "args": list(args), "env": dict(env) if env else None}
    expand = functools.partial(_expand, server=name)
    return ServerSpec(
        name,
        expand(command, "command"),
        tuple(expand(a, f"args[{i}]") for i, a in enumerate(args)),
        {k: expand(v, f"env.{k}") for k, v in env.items()} if env else env,
        cwd if isinstance(cwd, str) else str(config.parent),
        written,
    )


_VARIABLE = re.compile(r"\$\{([A-Za-z_][A-Za-z0-9_]*)(?::-([^}]*))?\}")


def _expand(value: str, where: str, *, server: str) -> str:
    """`${VAR}` and `${VAR:-default}` replaced from the environment, as the agent CLIs expand
    them in `.mcp.json` (command, args, env): a server given `"TOKEN": "${GITHUB_TOKEN}"` was
    started with that literal text. A variable that is unset and has no default is refused."""

    def value_of(match: re.Match[str]) -> str:
        name, default = match.group(1), match.group(2)
        found = os.environ.get(name)
        if found is None or (found == "" and default is not None):
            if default is None:
                raise Refusal(
                    f"MCP server {server!r}: {where} uses ${{{name}}}, which is not set",
                    hint=f"export {name}, or write ${{{name}:-default}} in the configuration",
                )
            return default
        return found

    return _VARIABLE.sub(value_of, value)


def parse_arguments(text: str | None) -> dict[str, Any]:
    """`--args` as a JSON object (none: `{}`)."""
    if text is None or not text.strip():
        return {}
    try:
        value = jsontext.loads(text, parse_float=_finite_number, parse_constant=_not_json)
    except ValueError as exc:
        raise Refusal(
            f"--args is not valid JSON: {exc}", hint="""pass a JSON object: --args '{"a": 2}'"""
        ) from None
    if not isinstance(value, dict):
        raise Refusal("--args must be a JSON object", hint="""--args '{"name": "value"}'""")
    return value


def _finite_number(text: str) -> float:
    """A JSON number as a float; one too big for a float (`1e400`) would be sent as Infinity,
    which is not JSON."""
    value = float(text)
    if not math.isfinite(value):
        raise ValueError(f"{text} is too large for a number")
    return value


def _not_json(name: str) -> Any:
    """Python's json reads NaN and Infinity; JSON (and so an MCP server) does not."""
    raise ValueError(f"{name} is not a JSON value")


def mcp_subject(
    target: str,
    arguments: str | None,
    *,
    config: Path | None,
    cwd: Path,
    timeout: float | None = PROBE_TIMEOUT,
) -> Subject:
    """The subject for one tool call; refuses (before any sample) an unknown server or tool.

    `timeout` bounds the listing of the tools as it bounds a sample (`--timeout`): a server
    that starts slowly (`npx` fetching it) gets the time a sample gets, one that never answers
    is given up on as soon; None (no limit on a sample) still gives up after `PROBE_TIMEOUT`."""
    server_name, tool = split_target(target)
    spec = load_server(config or cwd / CONFIG_NAME, server_name)
    args = parse_arguments(arguments)
    cap = output_cap()  # a bad LL_MAX_OUTPUT_BYTES is refused before the server starts
    definition = _tool_definition(spec, tool, timeout or PROBE_TIMEOUT)

    def run(timeout: float | None) -> SubjectRun:
        return within_cap(call_tool(spec, tool, args, timeout), cap)

    # How the server is started is part of what is measured, its environment too
    # (`"env": {"MODE": "strict"}` can change every answer it gives). Not its directory: that
    # is the project, wherever it is checked out, as for `cmd`.
    # Without an environment the content is what it always was, so recorded baselines match.
    written = spec.written or {"command": spec.command, "args": spec.args, "env": spec.env}
    measured: dict[str, Any] = {
        "server": [written["command"], *written["args"]],
        "tool": definition,
    }
    if written["env"]:
        measured["env"] = dict(written["env"])
    content = json.dumps(measured, sort_keys=True)
    return Subject(
        runner="mcp",
        target=f"{server_name}:{tool}",
        content_hash=sha256_text(content),
        input_hash=input_hash(json.dumps(args, sort_keys=True)),
        stochastic=False,
        run=run,
    )


def _tool_definition(spec: ServerSpec, tool: str, timeout: float) -> dict[str, Any]:
    """The tool's definition as the server lists it; a refusal when the server lacks it."""
    listed = _session_call(spec, timeout, lambda session: _list_tools(session))
    if isinstance(listed, SubjectRun):
        said = _last_line(listed.stderr)
        if said and said in str(listed.infra_error):
            said = ""  # the failed call quoted it already ("the server's stderr ends: ...")
        raise Refusal(
            f"could not list the tools of MCP server {spec.name!r}: {listed.infra_error}"
            + (f"; its stderr ends with: {said}" if said else ""),
            hint=f"check that `{' '.join(spec.command_line())}` starts an MCP stdio server",
        )
    names = [t.get("name") for t in listed]
    for definition in listed:
        if definition.get("name") == tool:
            return dict(definition)
    import difflib  # only on the error path

    close = difflib.get_close_matches(tool, [str(n) for n in names], n=1)
    hint = f"did you mean {close[0]!r}?" if close else f"tools: {', '.join(map(str, names))}"
    raise Refusal(f"MCP server {spec.name!r} has no tool {tool!r}", hint=hint)


async def _list_tools(session: ClientSession) -> list[dict[str, Any]]:
    result = await session.list_tools()
    return [
        {
            "name": t.name,
            "description": t.description,
            "input_schema": t.input_schema,
        }
        for t in result.tools
    ]


def call_tool(
    spec: ServerSpec, tool: str, arguments: dict[str, Any], timeout: float | None
) -> SubjectRun:
    """One sample: start the server, call the tool, stop the server. Never raises."""

    async def call(session: ClientSession) -> SubjectRun:
        result = await session.call_tool(tool, arguments)
        return SubjectRun(
            stdout=result_text(result.content, result.structured_content),
            exit_code=1 if result.is_error else 0,
        )

    outcome = _session_call(spec, timeout, call)
    return outcome if isinstance(outcome, SubjectRun) else SubjectRun(stdout=str(outcome))


def within_cap(run: SubjectRun, cap: int) -> SubjectRun:
    """A sample whose result and stderr pass `LL_MAX_OUTPUT_BYTES` is an infra error with the
    first `cap` bytes of its result kept, as a command's is. The SDK has read the message whole
    by then: the cap bounds what is reported and recorded, not what the call held."""
    size = len(run.stdout.encode("utf-8", "replace")) + len(run.stderr.encode("utf-8", "replace"))
    if size <= cap:
        return run
    kept = run.stdout.encode("utf-8", "replace")[:cap].decode("utf-8", "ignore")
    reason = f"output passed the cap of {cap} bytes ({MAX_OUTPUT_ENV})"
    return replace(run, stdout=kept, exit_code=None, infra_error=reason)


def result_text(content: list[Any], structured: Any) -> str:
    """The tool result as text: its text blocks in order, other blocks as JSON; the structured
    result as JSON when there is no text at all."""
    parts: list[str] = []
    for block in content:
        text = getattr(block, "text", None)
        if isinstance(text, str):
            parts.append(text)
        else:
            dump = getattr(block, "model_dump", None)
            parts.append(json.dumps(dump(mode="json") if dump else str(block), sort_keys=True))
    if not parts and structured is not None:
        parts.append(json.dumps(structured, sort_keys=True))
    return "\n".join(parts)


def _session_call(spec: ServerSpec, timeout: float | None, work: Any) -> Any:
    """Run `work(session)` on a fresh initialized session; failures become an infra-error run
    (with what the server wrote to stderr), never an exception."""
    import anyio
    from mcp import ClientSession, StdioServerParameters, stdio_client

    params = StdioServerParameters(
        command=spec.command,
        args=list(spec.args),
        env=dict(spec.env) if spec.env else None,
        cwd=spec.cwd,
    )
    started = time.monotonic()

    async def session_work() -> Any:
        with anyio.fail_after(timeout):
            async with (
                stdio_client(params, errlog=errlog) as streams,
                ClientSession(*streams) as session,
            ):
                await session.initialize()
                return await work(session)

    tail = StderrTail(STDERR_KEPT)
    errlog = tail.writer
    timed_out = False
    failure: str | None = None
    value: Any = None
    try:
        with _sdk_log_to(errlog):
            value = anyio.run(session_work)
    except TimeoutError:
        timed_out = True
        failure = f"timed out after {timeout:g}s" if timeout else "timed out"
    except Exception as exc:  # the SDK raises many kinds; each is one infra error
        failure = _describe(exc)
    finally:
        stderr = tail.close()
    duration = int((time.monotonic() - started) * 1000)
    last = _last_line(stderr)
    if failure is not None and not timed_out and last and last not in failure:
        # A server that died mid-call read as "Connection closed" alone: say what it said last.
        failure += f"; the server's stderr ends: {last}"
    if failure is not None:
        return SubjectRun(
            stdout="",
            stderr=stderr,
            exit_code=None,
            duration_ms=duration,
            timed_out=timed_out,
            infra_error=failure,
        )
    if isinstance(value, SubjectRun):
        return SubjectRun(
            stdout=value.stdout,
            stderr=stderr,
            exit_code=value.exit_code,
            duration_ms=duration,
        )
    return value


@contextlib.contextmanager
def _sdk_log_to(errlog: IO[str]) -> Iterator[None]:
    """The SDK's log records go to the sample's stderr, one line each, for the session's length.

    The SDK logs a line a server writes to stdout that is not JSON-RPC (a start-up banner) with
    its traceback; ll-loop configures no logging, so Python printed that traceback to the
    user's terminal, once per session, while the call itself went on and passed."""
    handler = logging.StreamHandler(errlog)
    handler.setFormatter(_OneLineFormatter())
    logger = logging.getLogger("mcp")
    propagate = logger.propagate
    logger.addHandler(handler)
    logger.propagate = False
    try:
        yield
    finally:
        logger.removeHandler(handler)
        logger.propagate = propagate


class _OneLineFormatter(logging.Formatter):
    """A record and its exception's message, on one line, without the traceback."""

    def format(self, record: logging.LogRecord) -> str:
        text = record.getMessage()
        if record.exc_info and record.exc_info[1] is not None:
            text += f": {record.exc_info[1]}"
        return "mcp client: " + " ".join(text.split())[:500]


def _last_line(text: str, limit: int = 300) -> str:
    """The last non-blank line of `text`, cut to `limit` characters."""
    lines = [line.strip() for line in text.splitlines() if line.strip()]
    return lines[-1][:limit] if lines else ""


class StderrTail:
    """A server's stderr through a pipe, of which only the last `limit` bytes are kept.

    A server may log without end: written to a temporary file, its stderr filled the disk at
    hundreds of MB a second until `--timeout` (5 minutes by default). A thread drains the pipe
    and keeps the tail; `writer` is what the server (and the SDK's log records) write to."""

    def __init__(self, limit: int) -> None:
        read_fd, write_fd = os.pipe()
        self.writer = os.fdopen(write_fd, "w", encoding="utf-8", errors="replace")
        self._limit = limit
        self._kept = bytearray()
        self._reader = threading.Thread(target=self._drain, args=(read_fd,), daemon=True)
        self._reader.start()

    def _drain(self, fd: int) -> None:
        with os.fdopen(fd, "rb", buffering=0) as pipe:
            while chunk := pipe.read(65536):
                self._kept += chunk
                if len(self._kept) > 2 * self._limit:
                    del self._kept[: -self._limit]

    def close(self) -> str:
        """The end of what was written, as text. A process the server left behind may hold the
        pipe open: the tail is then what arrived within a moment."""
        self.writer.close()
        self._reader.join(timeout=1.0)
        return bytes(self._kept[-self._limit :]).decode("utf-8", "replace")


def _describe(exc: BaseException) -> str:
    """The innermost useful message of an SDK failure (task groups wrap them in groups), on one
    line: a result of the wrong shape fails pydantic's validation with a message of five lines,
    which the report printed inside its one-line `Exit [...]` field."""
    while isinstance(exc, BaseExceptionGroup) and exc.exceptions:
        exc = exc.exceptions[0]
    if isinstance(exc, OSError):
        return f"the MCP server could not start: {exc.strerror or exc}"
    message = " ".join(str(exc).split()) or type(exc).__name__
    return f"MCP call failed: {message}"
