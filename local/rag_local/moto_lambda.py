"""In-process Lambda functions for moto: every invocation runs a Python callable of ours.

Why a patch: moto runs a function's code only in Docker; without Docker (``lambda.use_docker``
off) ``LambdaSimpleBackend.invoke`` echoes the payload back, and moto offers no public hook to
run anything else. The local backfill state machine needs its Lambda tasks to run the real stage
handlers, so this module replaces that private method while active. It is the only place that
touches moto's private API: ``check_private_api`` says clearly what changed when moto moves it
(tests/local/test_moto_lambda.py runs it against the installed moto).
"""

from __future__ import annotations

import inspect
import json
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any
from unittest import mock

# The parameters of LambdaSimpleBackend.invoke that ``patched_invoke`` receives, in order (moto 5.x).
INVOKE_PARAMETERS = ("self", "function_name", "qualifier", "body", "headers", "response_headers")

# An in-process Lambda: event -> response (raises like a function error).
Handler = Callable[[dict[str, Any]], Any]
# The handler of a function name or ARN, or None when there is no such function.
Resolve = Callable[[str], Handler | None]


class MotoApiChanged(RuntimeError):
    """moto's private Lambda API is not what this module patches any more."""


def check_private_api() -> None:
    """Raise MotoApiChanged unless ``LambdaSimpleBackend.invoke`` exists with INVOKE_PARAMETERS."""
    try:
        from moto.awslambda_simple.models import LambdaSimpleBackend
    except ImportError as exc:
        raise MotoApiChanged(
            f"moto.awslambda_simple.models.LambdaSimpleBackend is gone ({exc}): rag_local.moto_lambda patches its"
            " invoke to run the backfill's Lambda tasks in-process; adapt it to the installed moto"
        ) from exc
    invoke = getattr(LambdaSimpleBackend, "invoke", None)
    if not callable(invoke):
        raise MotoApiChanged(
            "moto's LambdaSimpleBackend has no invoke method any more: rag_local.moto_lambda patches it to run the"
            " backfill's Lambda tasks in-process; adapt it to the installed moto"
        )
    found = tuple(inspect.signature(invoke).parameters)
    if found != INVOKE_PARAMETERS:
        raise MotoApiChanged(
            f"moto's LambdaSimpleBackend.invoke takes {found}, rag_local.moto_lambda expects {INVOKE_PARAMETERS}:"
            " adapt patched_invoke (and INVOKE_PARAMETERS) to the installed moto"
        )


@contextmanager
def lambdas_run_in_process(resolve: Resolve) -> Iterator[None]:
    """While active, moto's Docker-less Lambda runs ``resolve(function name or ARN)`` on each invocation.

    The payload is decoded as the event and the handler's return value encoded as the response. A handler
    that raises becomes a Lambda function error (``errorType`` = the exception's class name), what a state
    machine's Retry and Catch match on; an unknown function is a ``ResourceNotFound`` function error.
    """
    from moto.awslambda_simple.models import LambdaSimpleBackend

    check_private_api()

    def patched_invoke(
        backend: Any, function_name: str, qualifier: Any, body: Any, headers: Any, response_headers: dict[str, str]
    ) -> bytes:
        handler = resolve(function_name)
        if handler is None:
            return _function_error(response_headers, "ResourceNotFound", f"no function {function_name}")
        event = json.loads(body) if body else {}
        try:
            return json.dumps(handler(event)).encode()
        except Exception as exc:  # what Lambda does with an unhandled exception
            return _function_error(response_headers, type(exc).__name__, str(exc))

    with mock.patch.object(LambdaSimpleBackend, "invoke", patched_invoke):
        yield


def _function_error(response_headers: dict[str, str], error_type: str, message: str) -> bytes:
    response_headers["x-amz-function-error"] = "Unhandled"
    return json.dumps({"errorType": error_type, "errorMessage": message}).encode()
