"""Every convention works from the built wheel, not only from this checkout: the wheel is built,
installed into a fresh virtual environment, and its console scripts are run from a directory
that has nothing of the source tree.

The fast test installs the wheel without its dependencies and lends the fresh environment this
one's (a `.pth` line; `.pth` files of a directory added that way are not run, so the editable
install of this checkout stays invisible). `-m slow` also installs it the way a user does, with
pip resolving every dependency from the package index.
"""

from __future__ import annotations

import json
import os
import shlex
import subprocess
import sys
import sysconfig
from collections.abc import Iterator
from pathlib import Path

import pytest

import engine
from engine.load.modeline import schema_of

REPO = Path(__file__).resolve().parent.parent


def _run(argv: list[str], cwd: Path, **env: str) -> subprocess.CompletedProcess[str]:
    clean = {k: v for k, v in os.environ.items() if not k.startswith(("PYTHON", "COVERAGE"))}
    return subprocess.run(
        argv, cwd=cwd, env={**clean, **env}, capture_output=True, text=True, timeout=300
    )


@pytest.fixture(scope="module")
def wheel(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("wheel")
    done = _run(
        [sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation", "-q",
         "-w", str(out), str(REPO)],
        cwd=out,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    [built] = out.glob("ll_loop-*.whl")
    return built


def fresh_venv(root: Path, wheel: Path, *, with_deps: bool) -> Path:
    """A new virtual environment with the wheel installed; its bin/ directory."""
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(root)], check=True)
    python = root / "bin" / "python"
    install = [sys.executable, "-m", "pip", "--python", str(python), "install", "-q", str(wheel)]
    if not with_deps:
        install.insert(-1, "--no-deps")
        site = Path(_run([str(python), "-c", "import site; print(site.getsitepackages()[0])"],
                         cwd=root).stdout.strip())  # fmt: skip
        (site / "_borrowed_dependencies.pth").write_text(sysconfig.get_paths()["purelib"] + "\n")
    done = _run(install, cwd=root)
    assert done.returncode == 0, done.stderr
    return root / "bin"


@pytest.fixture(scope="module")
def installed(wheel: Path, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    yield fresh_venv(tmp_path_factory.mktemp("venv"), wheel, with_deps=False)


def check_conventions(bin_dir: Path, work: Path) -> None:
    python = str(bin_dir / "python")
    where = _run([python, "-c", "import engine; print(engine.__file__)"], cwd=work).stdout
    assert not where.startswith(str(REPO)), f"the checkout leaked in: {where}"

    for program in ("ll-loop", "ll-harness"):
        done = _run([str(bin_dir / program), "--version"], cwd=work)
        assert (done.returncode, done.stdout) == (0, f"{program} {engine.__version__}\n")

    # a built-in validates, and its modeline names the schema shipped next to it
    ll_loop = str(bin_dir / "ll-loop")
    assert _run([ll_loop, "validate", "fix-until-green-demo"], cwd=work).returncode == 0
    package = Path(where.strip()).parent
    builtin = package / "_data" / "loops" / "fix-until-green-demo.yaml"
    target = (builtin.parent / str(schema_of(builtin.read_text()))).resolve()
    assert target == (package / "_data" / "schemas" / "loop.schema.json").resolve()
    assert target.is_file()

    done = _run([ll_loop, "schema", "--out", "loop.schema.json"], cwd=work)
    assert done.returncode == 0, done.stderr
    assert (work / "loop.schema.json").read_text() == target.read_text()

    # installed into .loops/: the modeline and the schema it points at
    assert _run([ll_loop, "install", "fix-until-clean"], cwd=work).returncode == 0
    copied = work / ".loops" / "fix-until-clean.yaml"
    assert (copied.parent / str(schema_of(copied.read_text()))).read_text() == target.read_text()

    sarif = _run([ll_loop, "validate", "--format", "sarif", str(copied)], cwd=work)
    driver = json.loads(sarif.stdout)["runs"][0]["tool"]["driver"]
    assert driver["version"] == engine.__version__

    # the script of the shell it runs under (a word after the flag is ignored): from bash,
    # whatever shell started pytest (under `sh`: "Shell sh not supported")
    completion = _run(
        ["bash", "-c", f"{shlex.quote(ll_loop)} --show-completion; exit $?"], cwd=work
    )
    assert "_LL_LOOP_COMPLETE=complete_bash" in completion.stdout, completion.stderr
    assert "Example" in _run([ll_loop, "run", "--help"], cwd=work, NO_COLOR="1").stdout

    code = "import engine; r = engine.run('fix-until-green-demo'); print(r.outcome, r.steps)"
    ran = _run([python, "-c", code], cwd=work)
    assert ran.stdout.split() == ["success", "6"], ran.stderr


def test_the_wheel_carries_every_convention(installed: Path, tmp_path: Path) -> None:
    check_conventions(installed, tmp_path)


@pytest.mark.slow
def test_a_pip_install_with_dependencies_works_too(wheel: Path, tmp_path: Path) -> None:
    bin_dir = fresh_venv(tmp_path / "venv", wheel, with_deps=True)
    work = tmp_path / "work"
    work.mkdir()
    check_conventions(bin_dir, work)
