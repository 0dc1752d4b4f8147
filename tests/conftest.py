"""Shared pytest configuration. Fixture modules from each area are registered here."""

from __future__ import annotations

pytest_plugins = ["tests.loopback_server"]
