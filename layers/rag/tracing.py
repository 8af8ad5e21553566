"""Powertools' Tracer for the Lambda handlers, patching each traced library when the code first imports it.

Powertools' default (``auto_patch``) patches every library the X-Ray SDK supports when the Tracer is created, and
patching imports them: botocore alone was about 200 ms of the query function's cold start, which a search may
never need (requests and sqlite3, which nothing here uses, came along too). This Tracer patches botocore (calls
to AWS) and httpx (the OpenAI SDK's HTTP client) the moment they are imported, so those calls are still
subsegments of the invocation's trace, and an invocation imports only what it uses. Tracing stays off where
Powertools turns it off (outside Lambda, ``POWERTOOLS_TRACE_DISABLED``).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from aws_lambda_powertools import Tracer

# The X-Ray SDK's patch of a library -> the module whose import applies it. botocore's patch waits for boto3 (the
# only way the library makes clients): a hook on botocore.client itself runs before botocore binds the submodule,
# and the patch, which looks it up there, would fail.
TRACED_LIBRARIES = {"botocore": "boto3", "httpx": "httpx"}


def lambda_tracer(service: str) -> Tracer:
    """A Tracer for ``service`` whose libraries are patched on import (see the module's docstring)."""
    from aws_lambda_powertools import Tracer

    tracer = Tracer(service=service, auto_patch=False)
    if not tracer.disabled:
        import wrapt  # the X-Ray SDK's own dependency: here whenever tracing is

        for library, module in TRACED_LIBRARIES.items():
            wrapt.register_post_import_hook(_patcher(tracer, library), module)
    return tracer


def _patcher(tracer: Tracer, library: str) -> Any:
    def patch(module: object) -> None:
        tracer.patch(modules=(library,))

    return patch
