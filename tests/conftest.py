"""Shared pytest configuration. Fixture modules from each area are registered here."""

from __future__ import annotations

import pytest

pytest_plugins = ["tests.loopback_server"]


def pytest_sessionfinish(session: pytest.Session, exitstatus: int) -> None:
    """A run that collected no test has tested nothing: it fails (exit 1), never passes."""
    if exitstatus == pytest.ExitCode.NO_TESTS_COLLECTED:
        session.exitstatus = pytest.ExitCode.TESTS_FAILED
