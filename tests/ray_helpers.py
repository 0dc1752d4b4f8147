"""A real local Ray cluster for the Ray tests and benchmark: `ray start --head --block` in a
subprocess, on free ports and a private temp dir, torn down (with every process it started)
when done. Nothing is assumed to be running before; nothing is left running after."""

from __future__ import annotations

import contextlib
import ctypes
import os
import secrets
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path

READY_TIMEOUT = 180.0  # a loaded 2-core machine can take a minute to start Ray


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def _die_with_parent() -> None:
    """In the child, before exec: SIGTERM when the process that started it dies, so a test run
    killed outright still takes its cluster down (`ray start --block` stops what it started)."""
    ctypes.CDLL(None, use_errno=True).prctl(1, signal.SIGTERM)  # PR_SET_PDEATHSIG


def ray_bin() -> str:
    found = Path(sys.executable).with_name("ray")
    return str(found) if found.exists() else (shutil.which("ray") or "ray")


class LocalCluster:
    """One head node with `cpus` CPUs; `address` is what `--address` takes."""

    def __init__(self, cpus: int = 2) -> None:
        self.cpus = cpus
        # Ray's unix sockets live under the temp dir: keep its path short.
        self.temp = Path(tempfile.mkdtemp(prefix="llray-", dir="/tmp"))
        self.port = free_port()
        self.address = f"127.0.0.1:{self.port}"
        self.process: subprocess.Popen[bytes] | None = None
        token = self.temp / "auth_token"
        token.write_text(secrets.token_hex(32))
        token.chmod(0o600)
        # What every process of this cluster and each of its drivers needs in its environment:
        # token authentication with a token of our own (not ~/.ray's), and a single-node Ray
        # that keeps every address on the loopback.
        self.env = {
            "RAY_AUTH_MODE": "token",
            "RAY_AUTH_TOKEN_PATH": str(token),
            "RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER": "0",
        }

    def start(self) -> LocalCluster:
        ports = {
            "--port": self.port,
            "--dashboard-agent-listen-port": free_port(),
            "--dashboard-agent-grpc-port": free_port(),
            "--runtime-env-agent-port": free_port(),
            "--metrics-export-port": free_port(),
            "--dashboard-port": free_port(),
        }
        argv = [
            ray_bin(),
            "start",
            "--head",
            "--block",
            f"--num-cpus={self.cpus}",
            "--include-dashboard=false",
            "--disable-usage-stats",
            f"--temp-dir={self.temp}",
            *(f"{flag}={port}" for flag, port in ports.items()),
        ]
        log = (self.temp / "start.log").open("wb")
        env = {k: v for k, v in os.environ.items() if k != "RAY_ADDRESS"} | self.env
        self.process = subprocess.Popen(
            argv,
            stdout=log,
            stderr=subprocess.STDOUT,
            start_new_session=True,
            env=env,
            preexec_fn=_die_with_parent,
        )
        self._wait_ready()
        return self

    def _wait_ready(self) -> None:
        deadline = time.monotonic() + READY_TIMEOUT
        while time.monotonic() < deadline:
            assert self.process is not None
            if self.process.poll() is not None:
                raise RuntimeError(f"ray start exited:\n{self.log()}")
            if b"Ray runtime started" in (self.temp / "start.log").read_bytes():
                return
            time.sleep(0.5)
        self.stop()
        raise RuntimeError(f"ray start did not come up in {READY_TIMEOUT:.0f}s:\n{self.log()}")

    def log(self) -> str:
        return (self.temp / "start.log").read_text(errors="replace")[-3000:]

    def pids(self) -> list[int]:
        """Processes of this cluster still alive: those whose command line names our temp dir
        or port, or that sit in the session `ray start` made."""
        if self.process is None:
            return []
        found = []
        marks = (str(self.temp).encode(), f":{self.port}".encode())
        for entry in Path("/proc").iterdir():
            if not entry.name.isdigit() or int(entry.name) == os.getpid():
                continue
            try:
                cmdline = (entry / "cmdline").read_bytes()
                session = os.getsid(int(entry.name))
            except (OSError, ProcessLookupError):
                continue
            ours = session == self.process.pid or any(m in cmdline for m in marks)
            if ours and b"ray" in cmdline:
                found.append(int(entry.name))
        return found

    def stop(self) -> None:
        """SIGTERM to `ray start --block` (it stops what it started), then SIGKILL to any
        straggler of this cluster; the temp dir goes too."""
        if self.process is not None and self.process.poll() is None:
            self.process.send_signal(signal.SIGTERM)
            try:
                self.process.wait(timeout=60)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait(timeout=10)
        for _ in range(20):
            left = self.pids()
            if not left:
                break
            for pid in left:
                with contextlib.suppress(ProcessLookupError):
                    os.kill(pid, signal.SIGKILL)
            time.sleep(0.25)
        shutil.rmtree(self.temp, ignore_errors=True)
