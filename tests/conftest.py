"""Shared pytest configuration. Fixture modules from each area are registered here."""

from __future__ import annotations

import os

import pytest

pytest_plugins = ["tests.loopback_server"]


@pytest.fixture(autouse=True, scope="session")
def _projects_end_at_the_temporary_directory(tmp_path_factory: pytest.TempPathFactory) -> None:
    """A test's project is its own directory: without a ceiling, a `.loops/` left in `/tmp` (by
    anything run there) became the project root of every test under it, sharing their locks."""
    os.environ["LL_CEILING_DIRECTORIES"] = str(tmp_path_factory.getbasetemp())


def pytest_sessionfinish(session: pytest.Session, exitstatus: int) -> None:
    """A run that collected no test has tested nothing: it fails (exit 1), never passes."""
    if exitstatus == pytest.ExitCode.NO_TESTS_COLLECTED:
        session.exitstatus = pytest.ExitCode.TESTS_FAILED


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Property tests (hypothesis) run without coverage tracing (pytest-cov's `no_cover`): they
    drive the same code hundreds of times per test, which tracing made about a third slower,
    while the example tests already reach those lines. The coverage figure `make test` prints
    counts only what the other tests reach, so it can only be lower than the truth."""
    for item in items:
        if getattr(getattr(item, "obj", None), "is_hypothesis_test", False):
            item.add_marker(pytest.mark.no_cover)
