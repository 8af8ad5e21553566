"""Run the Lambda handlers of ``functions/`` in-process, as Lambda would call them."""

from __future__ import annotations

import functools
import importlib.util
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
    if hasattr(module, "metrics"):
        module.lambda_handler = _dropping_unpublished_metrics(module.lambda_handler, module.metrics)
    return module


def _dropping_unpublished_metrics(handler: Callable[..., Any], metrics: Any) -> Callable[..., Any]:
    """The handler, clearing metrics that were not published after each call.

    With ``POWERTOOLS_METRICS_DISABLED`` Powertools skips the flush but keeps the data
    points, and prints them anyway once one metric holds 100: in a long in-process run
    (``rag eval``, a benchmark) that is JSON noise on the terminal every 100 calls.
    """

    @functools.wraps(handler)
    def call(event: Any, context: Any) -> Any:
        try:
            return handler(event, context)
        finally:
            metrics.clear_metrics()

    return call


@dataclass
class LocalContext:
    """The attributes of Lambda's context object that Powertools reads."""

    function_name: str = "local"
    memory_limit_in_mb: int = 1024
    aws_request_id: str = field(default_factory=lambda: str(uuid.uuid4()))
    invoked_function_arn: str = "arn:aws:lambda:us-east-1:123456789012:function:local"
    log_group_name: str = "/aws/lambda/local"
    log_stream_name: str = "local"
    function_version: str = "$LATEST"

    def get_remaining_time_in_millis(self) -> int:
        return 300_000
