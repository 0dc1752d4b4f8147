"""`ll-harness mcp SERVER:TOOL`: real MCP tool calls over stdio, through the official SDK, to a
small MCP server written with the same SDK and started by the harness itself."""

from __future__ import annotations

import json
import resource
import subprocess
import sys
import time
from pathlib import Path

import pytest

from engine.harness.mcp import call_tool, load_server
from engine.runtime.history import open_history
from tests.cli import BIN, ll_harness
from tests.harness_helpers import harness, harness_json
from tests.loopback_server import LoopbackServer, verdict_reply

SERVER = '''\
import time

from mcp.server.mcpserver import MCPServer

app = MCPServer("calc")


@app.tool()
def add(a: int, b: int) -> int:
    """Add two integers."""
    return a + b


@app.tool()
def fail(message: str) -> str:
    """Always fails with the message."""
    raise ValueError(message)


@app.tool()
def slow(seconds: float) -> str:
    """Sleep, then answer."""
    time.sleep(seconds)
    return "woke up"


app.run()
'''


@pytest.fixture
def project(tmp_path: Path) -> Path:
    (tmp_path / "calc_server.py").write_text(SERVER)
    config = {"mcpServers": {"calc": {"command": sys.executable, "args": ["calc_server.py"]}}}
    (tmp_path / ".mcp.json").write_text(json.dumps(config))
    return tmp_path


def test_a_tool_call_is_measured_judged_and_recorded(
    project: Path, loopback: LoopbackServer
) -> None:
    loopback.push(verdict_reply("yes", evidence="5"))
    gates = ["--exit-code", "0", "--semantic", "Is the sum 5? Quote it."]
    code, data = harness_json(project, "mcp", "calc:add", "--args", '{"a": 2, "b": 3}', *gates)
    assert code == 0, data
    assert (data["runner"], data["target"], data["result"]) == ("mcp", "calc:add", "PASS")
    assert data["samples_requested"] == 1  # no LLM in the loop: deterministic
    assert data["stdout"] == "5"  # the tool's real answer, and what the judge saw
    assert "5" in json.dumps(loopback.requests[0].body["messages"])
    with open_history(project) as history:
        [row] = history.attempts("calc:add")
    assert (row.runner, row.outcome, row.semantic_verdict) == ("mcp", "pass", "yes")


def test_a_tool_error_exits_1_and_fails_the_exit_gate(project: Path) -> None:
    code, data = harness_json(project, "mcp", "calc:fail", "--args", '{"message": "boom"}',
                              "--exit-code", "0")  # fmt: skip
    assert code == 1
    assert data["samples"][0]["exit_code"] == 1
    assert data["samples"][0]["reason"] == "exit code 1, expected 0"


def test_unknown_server_tool_or_bad_arguments_are_refused_before_any_call(
    project: Path,
) -> None:
    tool = harness(project, "mcp", "calc:ad", "--exit-code", "0")
    assert tool.returncode == 2
    assert "has no tool 'ad'" in tool.stderr and "did you mean 'add'" in tool.stderr
    server = harness(project, "mcp", "nope:add", "--exit-code", "0")
    assert server.returncode == 2 and "no MCP server 'nope'" in server.stderr
    args = harness(project, "mcp", "calc:add", "--args", "[1, 2]", "--exit-code", "0")
    assert args.returncode == 2 and "--args must be a JSON object" in args.stderr


@pytest.mark.parametrize("value", ["NaN", "-Infinity", "1e400"])
def test_arguments_that_are_no_json_numbers_are_refused(project: Path, value: str) -> None:
    """Python's json reads NaN, Infinity and 1e400 (as inf); none is JSON, so the server would
    get a request it cannot read, and the sample would be graded on that."""
    done = harness(project, "mcp", "calc:add", "--args", f'{{"a": {value}, "b": 1}}',
                   "--exit-code", "0")  # fmt: skip
    assert done.returncode == 2, done
    assert f"--args is not valid JSON: {value}" in done.stderr
    assert not (project / ".loops" / "history.db").exists()  # nothing ran, nothing recorded


def test_a_call_past_its_timeout_is_an_infra_error(project: Path) -> None:
    spec = load_server(project / ".mcp.json", "calc")
    run = call_tool(spec, "slow", {"seconds": 60}, 3)
    assert run.timed_out and run.infra_error == "timed out after 3s"
    assert run.exit_code is None


def test_the_tool_listing_of_a_mute_server_ends_with_the_sample_timeout(tmp_path: Path) -> None:
    """The listing before the samples is bounded by --timeout as a sample is: a server that
    never answers is refused after 3 s when the user asked for 3 s (it used to wait 60 s
    whatever --timeout said, and would cut off a server that starts slowly after 60 s too)."""
    mute = {"command": sys.executable, "args": ["-c", "import time; time.sleep(600)"]}
    (tmp_path / ".mcp.json").write_text(json.dumps({"mcpServers": {"mute": mute}}))
    started = time.monotonic()
    done = harness(tmp_path, "mcp", "mute:t", "--exit-code", "0", "--timeout", "3")
    assert time.monotonic() - started < 30
    assert done.returncode == 2, done
    assert "could not list the tools of MCP server 'mute': timed out after 3s" in done.stderr


def test_the_server_environment_is_part_of_the_measured_content(project: Path) -> None:
    """A server started with another `env` is another subject: its baseline is not reused."""
    config = json.loads((project / ".mcp.json").read_text())
    args = ("calc:add", "--args", '{"a": 2, "b": 3}', "--exit-code", "0", "--measure-baseline")
    hashes = []
    for mode in ("fast", "strict"):
        config["mcpServers"]["calc"]["env"] = {"MODE": mode}
        (project / ".mcp.json").write_text(json.dumps(config))
        code, data = harness_json(project, "mcp", *args)
        assert code == 0 and data["samples_run"] == 1, data  # measured, not reused
        hashes.append(data["content_hash"])
    assert hashes[0] != hashes[1]


NOISY = '''\
import sys

from mcp.server.mcpserver import MCPServer

app = MCPServer("noisy")


@app.tool()
def shout() -> str:
    """Logs 72 MB to stderr, then answers."""
    line = "log line " * 1000 + "\\n"
    for _ in range(8000):
        sys.stderr.write(line)
    sys.stderr.write("the last line\\n")
    sys.stderr.flush()
    return "done"


app.run()
'''


def test_a_server_logging_megabytes_costs_the_harness_only_the_tail(tmp_path: Path) -> None:
    """Only the end of a server's stderr is kept with the sample; reading the whole log back
    held 72 MB of it in memory twice over (about 210 MB of RSS, 70 MB with the tail)."""
    (tmp_path / "noisy.py").write_text(NOISY)
    noisy = {"command": sys.executable, "args": ["noisy.py"]}
    (tmp_path / ".mcp.json").write_text(json.dumps({"mcpServers": {"noisy": noisy}}))
    measure = (
        "import json, resource, subprocess, sys\n"
        "done = subprocess.run(sys.argv[1:], capture_output=True, text=True)\n"
        "peak = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss // 1024\n"
        "print(json.dumps({'code': done.returncode, 'out': done.stdout, 'peak_mb': peak}))\n"
    )
    argv = [str(BIN / "ll-harness"), "mcp", "noisy:shout", "--exit-code", "0", "--output", "json"]
    ran = subprocess.run(
        [sys.executable, "-c", measure, *argv], cwd=tmp_path, capture_output=True, text=True
    )
    result = json.loads(ran.stdout)
    assert result["code"] == 0, result
    [sample] = json.loads(result["out"])["samples"]
    assert sample["stderr"].endswith("the last line\n") and len(sample["stderr"]) <= 20000
    assert result["peak_mb"] < 140, result["peak_mb"]


def test_a_server_banner_on_stdout_prints_no_traceback(project: Path) -> None:
    """A server that greets on stdout before speaking MCP still works; the SDK logs the line it
    cannot parse with its traceback, which reached the user's terminal once per session."""
    (project / "banner.py").write_text('print("calc server v1 starting", flush=True)\n' + SERVER)
    config = {"mcpServers": {"calc": {"command": sys.executable, "args": ["banner.py"]}}}
    (project / ".mcp.json").write_text(json.dumps(config))
    done = harness(project, "mcp", "calc:add", "--args", '{"a": 2, "b": 3}', "--exit-code", "0",
                   "--output", "json", process=True)  # fmt: skip
    assert done.returncode == 0, done
    assert "Traceback" not in done.stderr and done.stderr == "", done.stderr
    [sample] = done.json["samples"]
    assert "mcp client: Failed to parse JSONRPC message" in sample["stderr"]
    assert "calc server v1 starting" in sample["stderr"]  # kept with the sample, on one line


def test_a_server_that_dies_at_start_is_refused_with_what_it_said(tmp_path: Path) -> None:
    """`Connection closed` alone did not say why: the end of the server's stderr does."""
    dying = "import sys; print('config error: CALC_TOKEN is not set', file=sys.stderr); sys.exit(3)"
    crash = {"command": sys.executable, "args": ["-c", dying]}
    (tmp_path / ".mcp.json").write_text(json.dumps({"mcpServers": {"calc": crash}}))
    done = harness(tmp_path, "mcp", "calc:add", "--exit-code", "0")
    assert done.returncode == 2, done
    assert "could not list the tools of MCP server 'calc'" in done.stderr
    assert "stderr ends: config error: CALC_TOKEN is not set" in done.stderr
    # said once: the refusal repeated what the failed call had quoted already
    assert done.stderr.splitlines()[0].count("CALC_TOKEN is not set") == 1, done.stderr


def test_a_server_logging_without_end_does_not_fill_the_disk(tmp_path: Path) -> None:
    """A server's stderr went to a temporary file: one that logs without end filled the disk
    at hundreds of MB a second until --timeout. Under a 16 MB limit on the size of any file
    written, the server above (72 MB of log) still answers and its tail is kept."""
    (tmp_path / "noisy.py").write_text(NOISY)
    noisy = {"command": sys.executable, "args": ["noisy.py"]}
    (tmp_path / ".mcp.json").write_text(json.dumps({"mcpServers": {"noisy": noisy}}))
    limit = 16 * 1024 * 1024
    ran = subprocess.run(
        [str(BIN / "ll-harness"), "mcp", "noisy:shout", "--exit-code", "0", "--output", "json"],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=120,
        preexec_fn=lambda: resource.setrlimit(resource.RLIMIT_FSIZE, (limit, limit)),
    )
    assert ran.returncode == 0, ran.stderr
    [sample] = json.loads(ran.stdout)["samples"]
    assert sample["stderr"].endswith("the last line\n"), sample["stderr"][-200:]


def test_a_result_past_the_output_cap_is_an_infra_error(tmp_path: Path) -> None:
    """LL_MAX_OUTPUT_BYTES bounds a sample's output for every runner (docs/harness.md); an MCP
    result of 300 KB under a 100 KB cap passed, kept and reported whole."""
    server = SERVER.replace(
        "app.run()", '@app.tool()\ndef big() -> str:\n    return "x" * 300_000\n\n\napp.run()'
    )
    (tmp_path / "big_server.py").write_text(server)
    config = {"mcpServers": {"calc": {"command": sys.executable, "args": ["big_server.py"]}}}
    (tmp_path / ".mcp.json").write_text(json.dumps(config))
    args = ("mcp", "calc:big", "--exit-code", "0", "--output", "json")
    done = ll_harness(tmp_path, *args, env={"LL_MAX_OUTPUT_BYTES": "100K"})
    assert done.returncode == 2, done
    [sample] = done.json["samples"]
    assert sample["infra_error"] == "output passed the cap of 102400 bytes (LL_MAX_OUTPUT_BYTES)"
    # the first bytes are kept (102,400 of them); the JSON report shows 64 Ki and says the rest
    kept = 64 * 1024
    assert (
        done.json["stdout"]
        == "x" * kept + f"\n[... {102400 - kept:,} more characters not shown ...]"
    )


ENV_SERVER = SERVER.replace(
    "app.run()",
    '@app.tool()\ndef token() -> str:\n    """The token it was given."""\n'
    '    import os\n\n    return os.environ.get("TOKEN", "<unset>")\n\n\napp.run()',
)


def test_variables_in_the_configuration_are_expanded_as_the_agent_clis_do(
    tmp_path: Path,
) -> None:
    """`"TOKEN": "${CALC_TOKEN}"` reached the server as that literal text (Claude Code expands
    `${VAR}` and `${VAR:-default}` in command, args and env). The configuration as written is
    what is measured: a rotated token is the same subject."""
    (tmp_path / "env_server.py").write_text(ENV_SERVER)
    calc = {
        "command": "${CALC_PYTHON:-" + sys.executable + "}",
        "args": ["${CALC_SCRIPT:-env_server.py}"],
        "env": {"TOKEN": "${CALC_TOKEN}"},
    }
    (tmp_path / ".mcp.json").write_text(json.dumps({"mcpServers": {"calc": calc}}))
    args = ("mcp", "calc:token", "--exit-code", "0", "--output", "json")
    hashes = []
    for token in ("s3cret", "rotated"):
        done = ll_harness(tmp_path, *args, env={"CALC_TOKEN": token})
        assert done.returncode == 0, done
        assert done.json["stdout"] == token
        hashes.append(done.json["content_hash"])
    assert hashes[0] == hashes[1]
    unset = ll_harness(tmp_path, "mcp", "calc:token", "--exit-code", "0")
    assert unset.returncode == 2
    assert "env.TOKEN uses ${CALC_TOKEN}, which is not set" in unset.stderr


# A server written by hand, answering a call with a result of the wrong shape.
MISSHAPEN = """\
import json, sys
for line in sys.stdin:
    msg = json.loads(line)
    method, mid = msg.get("method"), msg.get("id")
    if method == "initialize":
        version = msg["params"]["protocolVersion"]
        result = {"protocolVersion": version, "capabilities": {"tools": {}},
                  "serverInfo": {"name": "raw", "version": "1"}}
    elif method == "tools/list":
        result = {"tools": [{"name": "t", "inputSchema": {"type": "object"}}]}
    elif method == "tools/call":
        result = {"content": "not a list"}
    else:
        continue
    print(json.dumps({"jsonrpc": "2.0", "id": mid, "result": result}), flush=True)
"""


def test_a_misshapen_result_is_an_infra_error_on_one_line(tmp_path: Path) -> None:
    (tmp_path / "raw.py").write_text(MISSHAPEN)
    raw = {"command": sys.executable, "args": ["raw.py"]}
    (tmp_path / ".mcp.json").write_text(json.dumps({"mcpServers": {"raw": raw}}))
    code, data = harness_json(tmp_path, "mcp", "raw:t", "--exit-code", "0")
    assert code == 2, data
    error = data["samples"][0]["infra_error"]
    assert error.startswith("MCP call failed: 1 validation error for CallToolResult content")
    assert "\n" not in error


def test_a_configuration_saved_with_a_byte_order_mark_is_read(project: Path) -> None:
    """Some Windows editors save JSON with a UTF-8 BOM: it was refused as "not valid JSON:
    Unexpected UTF-8 BOM (decode using utf-8-sig)"."""
    config = project / ".mcp.json"
    config.write_bytes(b"\xef\xbb\xbf" + config.read_bytes())
    code, data = harness_json(
        project, "mcp", "calc:add", "--args", '{"a": 2, "b": 3}', "--exit-code", "0"
    )
    assert code == 0, data
    assert (data["result"], data["stdout"]) == ("PASS", "5")


@pytest.mark.parametrize(
    ("text", "said"),
    [
        ('{"mcpServers": {\n  "calc": {"command": "x",}\n}}', "mcp.json:2:27: not valid JSON: "),
        ("[" * 100_000 + "]" * 100_000, "mcp.json:1:1: not usable JSON: the JSON nests too"),
        ('{"mcpServers": {}}'.encode("utf-16"), "mcp.json:1:1: the file is UTF-16 text; save"),
    ],
)
def test_a_configuration_that_is_not_json_is_refused_at_its_line(
    tmp_path: Path, text: str | bytes, said: str
) -> None:
    """A syntax error said where only as Python's "line 2 column 27 (char 43)" after the file
    name; JSON nested past Python's recursion limit was an internal error (RecursionError)."""
    config = tmp_path / ".mcp.json"
    config.write_bytes(text if isinstance(text, bytes) else text.encode())
    ran = harness(tmp_path, "mcp", "calc:add", "--exit-code", "0")
    assert ran.code == 2, ran.stderr
    assert f"error: {config}:" in ran.stderr and said in ran.stderr, ran.stderr
    assert "internal error" not in ran.stderr


DYING = '''\
import os
import sys

from mcp.server.mcpserver import MCPServer

app = MCPServer("dying")


@app.tool()
def die() -> str:
    """Exit in the middle of the call, saying why on stderr."""
    sys.stderr.write("starting\\nfatal: out of widgets\\n")
    sys.stderr.flush()
    os._exit(3)


app.run()
'''


def test_a_server_that_dies_mid_call_says_what_it_wrote_last(tmp_path: Path) -> None:
    """A server exiting during the call was reported as `MCP call failed: Connection closed`
    alone: why it died was only in the JSON report's stderr. The error now ends with the last
    line the server wrote to stderr."""
    (tmp_path / "dying.py").write_text(DYING)
    config = {"mcpServers": {"dying": {"command": sys.executable, "args": ["dying.py"]}}}
    (tmp_path / ".mcp.json").write_text(json.dumps(config))
    code, data = harness_json(tmp_path, "mcp", "dying:die", "--exit-code", "0")
    assert code == 2, data
    error = data["samples"][0]["infra_error"]
    assert error == (
        "MCP call failed: Connection closed; the server's stderr ends: fatal: out of widgets"
    )


def test_an_mcp_configuration_that_is_a_pipe_or_a_device_is_refused_not_waited_on(
    tmp_path: Path,
) -> None:
    """An `.mcp.json` that is a FIFO (or `--config /dev/zero`) made `ll-harness mcp` wait for a
    writer forever (or read /dev/zero until memory ran out): the JSON reader read any file to
    its end. It is refused in one sentence, as the YAML reader refuses such a file."""
    import os

    os.mkfifo(tmp_path / ".mcp.json")
    for extra in ([], ["--config", "/dev/zero"]):
        done = subprocess.run(
            [str(BIN / "ll-harness"), "mcp", "s:t", "--exit-code", "0", *extra],
            cwd=tmp_path, capture_output=True, text=True, timeout=60,
        )  # fmt: skip
        assert done.returncode == 2, done.stderr
        assert "cannot read the file: it is not a regular file" in done.stderr, done.stderr
