"""Run the Lambda handlers of ``functions/`` in-process, as Lambda would call them."""

from __future__ import annotations

import functools
import importlib.util
import threading
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field
from types import ModuleType
from typing import Any

from rag.config import REPO_ROOT

FUNCTIONS_DIR = REPO_ROOT / "functions"


@functools.cache
def load_handler_module(name: str) -> ModuleType:
    """``functions/<name>/handler.py`` as a module (the same file that is deployed)."""
    path = FUNCTIONS_DIR / name / "handler.py"
    spec = importlib.util.spec_from_file_location(f"functions.{name}.handler", path)
    if spec is None or spec.loader is None:
        raise FileNotFoundError(f"no Lambda handler at {path}")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    # One lock per function: like one warm Lambda container, it handles one event at a time.
    # Powertools' resolver keeps the current event in class state, so two requests resolved
    # side by side in one process would read each other's event (and tenant).
    container = threading.RLock()  # re-entrant: a handler may call its module's other handlers
    for attribute in [n for n in vars(module) if n.endswith("_handler") and callable(getattr(module, n))]:
        setattr(module, attribute, _one_at_a_time(container, _dropping_unpublished_metrics(getattr(module, attribute))))
    return module


def _one_at_a_time(lock: threading.RLock, handler: Callable[..., Any]) -> Callable[..., Any]:
    @functools.wraps(handler)
    def call(*args: Any, **kwargs: Any) -> Any:
        with lock:
            return handler(*args, **kwargs)

    return call


def _dropping_unpublished_metrics(handler: Callable[..., Any]) -> Callable[..., Any]:
    """The handler, clearing the metrics it could not publish (metrics disabled) after each call.

    With ``POWERTOOLS_METRICS_DISABLED`` Powertools skips the flush but keeps the data
    points, and prints them anyway once one metric holds 100: in a long in-process run
    (``rag eval``, a benchmark) that is JSON noise on the terminal every 100 calls.
    Every ``Metrics`` instance shares one metric set, so one clears them all.
    """
    from aws_lambda_powertools import Metrics
    from aws_lambda_powertools.metrics.functions import is_metrics_disabled

    @functools.wraps(handler)
    def call(*args: Any, **kwargs: Any) -> Any:
        try:
            return handler(*args, **kwargs)
        finally:
            if is_metrics_disabled():
                Metrics().clear_metrics()

    return call


@dataclass
class LocalContext:
    """The attributes of Lambda's context object that Powertools (and the ingest's time budget) read."""

    function_name: str = "local"
    memory_limit_in_mb: int = 1024
    aws_request_id: str = field(default_factory=lambda: str(uuid.uuid4()))
    invoked_function_arn: str = "arn:aws:lambda:us-east-1:123456789012:function:local"
    log_group_name: str = "/aws/lambda/local"
    log_stream_name: str = "local"
    function_version: str = "$LATEST"
    timeout_ms: int = 300_000
    started: float = field(default_factory=time.monotonic)

    def get_remaining_time_in_millis(self) -> int:
        """Counts down from ``timeout_ms`` as Lambda's does (nothing stops the call when it reaches 0)."""
        return max(0, self.timeout_ms - int((time.monotonic() - self.started) * 1000))
