"""Lambda's Python runtime in miniature: runs INSIDE the artifact process (CPython 3.12, only the layer, the
function's asset and the runtime's boto3 on the path), started by ``tests/artifact/harness.py``.

Like the runtime it imports ``_HANDLER``'s module once (the cold start), then invokes the handler once per
event, each with a context object and a fresh ``_X_AMZN_TRACE_ID``. Events come as JSON lines on stdin and
results go back as JSON lines on the original stdout; whatever the function prints or logs goes to stderr.
Standard library only: nothing here may come from the development environment.
"""

import importlib
import importlib.util
import json
import os
import secrets
import sys
import time
import traceback
import uuid

# Modules the layer must not need (not shipped) and the harness must not leak in (moto is the test's, not Lambda's).
ABSENT = ("numpy", "torch", "onnxruntime", "sentence_transformers", "moto", "pytest", "aws_cdk", "rag_local", "tests")


class LambdaContext:
    """The attributes and method of the runtime's context object (awslambdaric's LambdaContext)."""

    def __init__(self, request_id, timeout_ms):
        self.aws_request_id = request_id
        self.function_name = os.environ["AWS_LAMBDA_FUNCTION_NAME"]
        self.function_version = os.environ.get("AWS_LAMBDA_FUNCTION_VERSION", "$LATEST")
        self.memory_limit_in_mb = os.environ.get("AWS_LAMBDA_FUNCTION_MEMORY_SIZE")
        self.invoked_function_arn = f"arn:aws:lambda:{os.environ['AWS_REGION']}:123456789012:function:{self.function_name}"
        self.log_group_name = os.environ.get("AWS_LAMBDA_LOG_GROUP_NAME")
        self.log_stream_name = os.environ.get("AWS_LAMBDA_LOG_STREAM_NAME")
        self.identity = None
        self.client_context = None
        self._deadline = time.monotonic() + timeout_ms / 1000

    def get_remaining_time_in_millis(self):
        return max(int((self._deadline - time.monotonic()) * 1000), 0)


def trace_header():
    root = f"1-{int(time.time()):08x}-{secrets.token_hex(12)}"
    return f"Root={root};Parent={secrets.token_hex(8)};Sampled=1", root


def main():
    protocol = sys.stdout
    sys.stdout = sys.stderr  # the function's prints and logs (Powertools writes to stdout) stay out of the protocol
    module_name, _, _ = os.environ["_HANDLER"].rpartition(".")
    started = time.perf_counter()
    try:
        module = importlib.import_module(module_name)
        error = None
    except BaseException as exc:  # an import error is an init failure, reported like any other result
        module, error = None, {"type": type(exc).__name__, "message": str(exc), "traceback": traceback.format_exc()}
    init = {
        "ready": error is None,
        "import_ms": round((time.perf_counter() - started) * 1000, 1),
        "error": error,
        "python": list(sys.version_info[:3]),
        "implementation": sys.implementation.name,
        "present": [name for name in ABSENT if importlib.util.find_spec(name) is not None],
        "handler_file": getattr(module, "__file__", None),
        "modules": sorted(sys.modules),
    }
    protocol.write(json.dumps(init) + "\n")
    protocol.flush()
    for line in sys.stdin:
        request = json.loads(line)
        header, root = trace_header()
        os.environ["_X_AMZN_TRACE_ID"] = header
        context = LambdaContext(str(uuid.uuid4()), request.get("timeout_ms", 60_000))
        started = time.perf_counter()
        try:
            result = getattr(module, request["handler"])(request["event"], context)
            reply = {"ok": True, "result": result}
        except BaseException as exc:  # the runtime reports an unhandled error as the invocation's result
            reply = {"ok": False, "error": {"type": type(exc).__name__, "message": str(exc), "traceback": traceback.format_exc()}}
        reply.update(ms=round((time.perf_counter() - started) * 1000, 1), trace_root=root, request_id=context.aws_request_id)
        if request.get("modules"):
            reply["modules"] = sorted(sys.modules)
        protocol.write(json.dumps(reply, default=str) + "\n")
        protocol.flush()


if __name__ == "__main__":
    main()
