"""Waiting by polling (``launch.Spin``): it returns only once the event is complete,
blocks after its polling budget or when recent waits were long, and raises a failed
command's error."""

from __future__ import annotations

import threading
import time

import pyopencl as cl
import pytest

from backend_opencl.runtime import get_device
from backend_opencl.runtime.opencl import launch


def _later(event: cl.UserEvent, seconds: float, status: int) -> threading.Thread:
    def finish() -> None:
        time.sleep(seconds)
        event.set_status(status)
    t = threading.Thread(target=finish)
    t.start()
    return t


@pytest.mark.parametrize("delay", [0.0, 1e-4, 5 * launch.SPIN_S])
def test_spin_returns_after_completion(delay: float) -> None:
    """Short waits complete while polling, long ones after blocking; never early."""
    event = cl.UserEvent(get_device(None).context)
    spin = launch.Spin(True)
    t = _later(event, delay, cl.command_execution_status.COMPLETE)
    spin.wait(event)
    assert event.command_execution_status == cl.command_execution_status.COMPLETE
    t.join()
    assert spin.recent >= 0.0


def test_spin_blocks_after_a_long_wait(monkeypatch: pytest.MonkeyPatch) -> None:
    """After a wait longer than ``SPIN_S`` the next wait blocks without polling."""
    event = cl.UserEvent(get_device(None).context)
    event.set_status(cl.command_execution_status.COMPLETE)
    spin = launch.Spin(True)
    spin.recent = 2 * launch.SPIN_S
    monkeypatch.setattr(launch, "_yield", lambda: pytest.fail("polled"))
    spin.wait(event)
    assert spin.recent < launch.SPIN_S


def test_spin_off_by_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(launch.SPIN_ENV, "0")
    assert not launch.Spin(True).enabled
    monkeypatch.delenv(launch.SPIN_ENV)
    assert launch.Spin(True).enabled and not launch.Spin(False).enabled


def test_spin_raises_a_failed_commands_error() -> None:
    """A command that fails (negative status) raises instead of counting as done."""
    ctx = get_device(None).context
    event = cl.UserEvent(ctx)
    t = _later(event, 1e-4, -1)
    with pytest.raises(cl.Error):
        launch.Spin(True).wait(event)
    t.join()
