"""Shared helpers for tests that start real processes on loopback."""

from __future__ import annotations

import psutil
import pytest


@pytest.fixture
def no_leftover_children():
    """Fails the test if it leaves child processes of this process behind."""
    before = {p.pid for p in psutil.Process().children(recursive=True)}
    yield
    left = []
    for p in psutil.Process().children(recursive=True):
        if p.pid not in before:
            try:
                p.wait(timeout=5)
            except psutil.TimeoutExpired:
                left.append(p)
    for p in left:
        p.kill()
    assert not left, f"left child processes behind: {[p.cmdline() for p in left]}"
