"""The background services process of ``rag up`` (moto, the queue worker, the query API): start, find, stop.

Its pid lives in ``<local_dir>/run/services.pid`` so that every later ``rag`` command, in a process of
its own, can tell whether the services run. Its output is appended to ``<local_dir>/logs/services.log``:
the log of a run that died is what explains it.
"""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from rag.config import Settings

STOP_WAIT_SECONDS = 30  # rag down: how long the services get to finish the batch in hand before SIGKILL
READY_LINE = "ready"  # what rag_local.services logs once it serves


@dataclass(frozen=True)
class Started:
    pid: int
    log_path: Path


class ServicesDidNotStart(RuntimeError):
    """The services process ended, or did not log READY_LINE in time; ``log_tail``: what it logged."""

    def __init__(self, log_path: Path, log_tail: str) -> None:
        super().__init__(f"local services did not start; see {log_path}")
        self.log_path = log_path
        self.log_tail = log_tail


def run_dir(settings: Settings) -> Path:
    path = settings.local.dir / "run"
    path.mkdir(parents=True, exist_ok=True)
    return path


def services_pid(settings: Settings) -> int | None:
    """The pid of the running services process, or None."""
    pid_file = run_dir(settings) / "services.pid"
    if not pid_file.exists():
        return None
    pid = int(pid_file.read_text().strip() or 0)
    try:
        os.kill(pid, 0)
    except (ProcessLookupError, ValueError):
        return None
    return None if is_zombie(pid) else pid


def is_running(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    return not is_zombie(pid)


def is_zombie(pid: int) -> bool:
    """A services process killed with -9 stays a zombie when nothing reaps it: it is not running."""
    try:
        import psutil
    except ImportError:
        return False
    try:
        return psutil.Process(pid).status() == psutil.STATUS_ZOMBIE
    except psutil.NoSuchProcess:
        return True


def start_services(settings: Settings, timeout: float) -> Started:
    """Start ``python -m rag_local.services`` in a session of its own and wait until it logs READY_LINE."""
    log_dir = settings.local.dir / "logs"
    log_dir.mkdir(parents=True, exist_ok=True)
    log_path = log_dir / "services.log"
    with open(log_path, "a") as log:
        log.write(f"--- rag up {time.strftime('%Y-%m-%d %H:%M:%S')} ---\n")
        log.flush()
        start = log_path.stat().st_size  # this run's lines begin here
        process = subprocess.Popen(
            [sys.executable, "-m", "rag_local.services"],
            stdout=log,
            stderr=subprocess.STDOUT,
            stdin=subprocess.DEVNULL,
            start_new_session=True,  # keeps running after `rag up` returns
            env={**os.environ, "POWERTOOLS_TRACE_DISABLED": "true", "POWERTOOLS_METRICS_NAMESPACE": "MeetingRag"},
        )
    (run_dir(settings) / "services.pid").write_text(str(process.pid))
    deadline = time.monotonic() + timeout
    while READY_LINE not in _log_since(log_path, start).splitlines():
        if process.poll() is not None or time.monotonic() > deadline:
            raise ServicesDidNotStart(log_path, _log_since(log_path, start)[-3000:])
        time.sleep(0.3)
    return Started(process.pid, log_path)


def stop_services(settings: Settings, wait_seconds: float = STOP_WAIT_SECONDS) -> int | None:
    """SIGTERM the services, SIGKILL after ``wait_seconds``.

    Every S3 write they acknowledged is on disk already, so the kill loses none; on SIGTERM they
    refuse further S3 writes and mirror the bucket once more, then the worker finishes the batch in hand.

    Returns the pid stopped, or None when nothing ran; the pid file is gone either way.
    """
    pid = services_pid(settings)
    if pid is not None:
        os.kill(pid, signal.SIGTERM)
        # The worker finishes the batch in hand first (embedding it can take a while).
        for _ in range(int(wait_seconds * 10)):
            if not is_running(pid):
                break
            time.sleep(0.1)
        else:
            with contextlib.suppress(ProcessLookupError):  # it ended just now
                os.kill(pid, signal.SIGKILL)
    (run_dir(settings) / "services.pid").unlink(missing_ok=True)
    return pid


def _log_since(path: Path, offset: int) -> str:
    with open(path, "rb") as log:
        log.seek(offset)
        return log.read().decode(errors="replace")
