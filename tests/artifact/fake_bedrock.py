"""A Bedrock Runtime endpoint on 127.0.0.1 speaking the service's wire format, for a process that cannot be stubbed.

botocore in the artifact process signs and sends real requests (``AWS_ENDPOINT_URL_BEDROCK_RUNTIME`` points it
here): ``POST /model/<id>/converse`` answers with the queued Converse responses (``converse_responses``, as
``botocore.stub.Stubber`` takes them, or ``(status, raw body, error type)``; ``tool_reply`` writes one that calls a
tool), or, with none queued, with what
``converse_responder(request body)`` returns (a scripted model), ``POST /model/<id>/invoke`` with a Titan Text Embeddings V2 body
(the vector derived from the text, as tests/embedding/fake_openai.py does). The same server is Bedrock Agent
Runtime (``AWS_ENDPOINT_URL_BEDROCK_AGENT_RUNTIME``): ``POST /rerank`` answers with the queued ``rerank_responses``,
each a Rerank response body, or ``(status, raw body, error type)`` for what a broken or throttling service sends.
And it is Bedrock's control plane for batch inference (``AWS_ENDPOINT_URL_BEDROCK``): ``POST /model-invocation-job``
(CreateModelInvocationJob) reads the manifest from S3 (``s3``, moto's client), writes the result lines and
``manifest.json.out`` where Bedrock writes them (``<output s3Uri><job id>/<file>.out``) and answers the job's ARN,
the same ARN again for a request token it has seen; ``GET /model-invocation-job/<id or ARN>``
(GetModelInvocationJob) answers InProgress once, then Completed; ``POST .../stop`` (StopModelInvocationJob) stops it.
"""

from __future__ import annotations

import json
import secrets
import threading
from collections.abc import Callable
from datetime import UTC, datetime
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import unquote, urlparse

from tests.embedding.fake_openai import vector_for


class FakeBedrock:
    def __init__(self) -> None:
        self.requests: list[dict[str, Any]] = []
        self.converse_responses: list[dict[str, Any] | tuple[int, bytes, str | None]] = []
        self.converse_responder: Callable[[dict[str, Any]], dict[str, Any]] | None = None  # when nothing is queued
        self.rerank_responses: list[dict[str, Any] | tuple[int, bytes, str | None]] = []
        self.s3: Any = None  # where batch jobs read manifests and write results (moto's S3 client)
        self.jobs: dict[str, dict[str, Any]] = {}  # job id -> GetModelInvocationJob's response, and polls left
        fake = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args: Any) -> None:
                pass

            def do_GET(self) -> None:
                if not self.path.startswith("/model-invocation-job/"):
                    self._send(404, {"message": f"FakeBedrock: no GET {self.path}"}, "UnknownOperationException")
                    return
                job_id = unquote(self.path.removeprefix("/model-invocation-job/")).rpartition("/")[2]
                fake.requests.append({"model": None, "operation": "get-job", "body": {"job": job_id}, "auth": None})
                job = fake.jobs.get(job_id)
                if job is None:
                    self._send(404, {"message": f"no job {job_id}"}, "ResourceNotFoundException")
                    return
                job["polls"] -= 1
                status = job.get("stopped") or ("InProgress" if job["polls"] >= 0 else "Completed")
                self._send(200, {**job["response"], "status": status})

            def do_POST(self) -> None:
                body = json.loads(self.rfile.read(int(self.headers["Content-Length"])) or b"{}")
                if self.path.startswith("/model-invocation-job/") and self.path.endswith("/stop"):
                    job_id = unquote(self.path.removesuffix("/stop")).rpartition("/")[2]
                    fake.requests.append({"model": None, "operation": "stop-job", "body": {"job": job_id}, "auth": None})
                    job = fake.jobs.get(job_id)
                    if job is None:
                        self._send(404, {"message": f"no job {job_id}"}, "ResourceNotFoundException")
                        return
                    job["response"]["status"] = job["stopped"] = "Stopped"
                    self._send(200, {})
                    return
                if self.path == "/model-invocation-job":
                    fake.requests.append({"model": body.get("modelId"), "operation": "create-job", "body": body,
                                          "auth": self.headers.get("Authorization")})  # fmt: skip
                    self._send(200, {"jobArn": fake.run_job(body)})
                    return
                if self.path == "/rerank":
                    fake.requests.append(
                        {"model": None, "operation": "rerank", "body": body, "auth": self.headers.get("Authorization")}
                    )
                    self._rerank()
                    return
                _, _, rest = self.path.partition("/model/")
                model, _, operation = rest.rpartition("/")
                fake.requests.append(
                    {"model": unquote(model), "operation": operation, "body": body, "auth": self.headers.get("Authorization")}
                )
                if operation == "converse":
                    if fake.converse_responses:
                        self._reply(fake.converse_responses.pop(0))
                    elif fake.converse_responder is not None:
                        self._send(200, fake.converse_responder(body))
                    else:
                        self._send(400, {"message": "FakeBedrock: no Converse response queued"}, "ValidationException")
                elif operation == "invoke":
                    vector = vector_for(body["inputText"], body.get("dimensions", 1024))
                    self._send(200, {"embedding": vector, "inputTextTokenCount": len(body["inputText"].split())})
                else:
                    self._send(404, {"message": f"FakeBedrock: no operation {operation!r}"}, "UnknownOperationException")

            def _rerank(self) -> None:
                if not fake.rerank_responses:
                    self._send(400, {"message": "FakeBedrock: no Rerank response queued"}, "ValidationException")
                    return
                self._reply(fake.rerank_responses.pop(0))

            def _reply(self, response: dict[str, Any] | tuple[int, bytes, str | None]) -> None:
                if isinstance(response, tuple):
                    self._send(*response)
                else:
                    self._send(200, response)

            def _send(self, status: int, payload: dict[str, Any] | bytes, error_type: str | None = None) -> None:
                raw = payload if isinstance(payload, bytes) else json.dumps(payload).encode()
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(raw)))
                self.send_header("x-amzn-RequestId", "00000000-0000-0000-0000-000000000000")
                if error_type:
                    self.send_header("x-amzn-ErrorType", error_type)
                self.end_headers()
                self.wfile.write(raw)

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)

    @staticmethod
    def tool_reply(name: str, tool_input: dict[str, Any]) -> dict[str, Any]:
        """A Converse response whose one content block calls the tool ``name`` with ``tool_input``."""
        return {
            "output": {"message": {"role": "assistant",
                                   "content": [{"toolUse": {"toolUseId": f"tooluse_{secrets.token_hex(4)}", "name": name,
                                                            "input": tool_input}}]}},
            "stopReason": "tool_use", "usage": {"inputTokens": 100, "outputTokens": 50, "totalTokens": 150},
            "metrics": {"latencyMs": 5},
        }  # fmt: skip

    def run_job(self, request: dict[str, Any]) -> str:
        """Do the job now (one text a line, as InvokeModel would embed it); its status comes out InProgress once."""
        for job in self.jobs.values():
            if job["token"] == request.get("clientRequestToken"):
                return str(job["response"]["jobArn"])
        job_id = secrets.token_hex(6)
        source = urlparse(request["inputDataConfig"]["s3InputDataConfig"]["s3Uri"])
        target = urlparse(request["outputDataConfig"]["s3OutputDataConfig"]["s3Uri"])
        name = source.path.rpartition("/")[2]
        manifest = self.s3.get_object(Bucket=source.netloc, Key=source.path.lstrip("/"))["Body"].read().decode()
        lines = []
        for line in manifest.splitlines():
            record = json.loads(line)
            text = record["modelInput"]["inputText"]
            output = {"embedding": vector_for(text, record["modelInput"].get("dimensions", 1024)),
                      "inputTextTokenCount": len(text.split())}  # fmt: skip
            lines.append(json.dumps({**record, "modelOutput": output}))
        folder = f"{target.path.strip('/')}/{job_id}"
        self.s3.put_object(Bucket=target.netloc, Key=f"{folder}/{name}.out", Body="\n".join(lines).encode())
        summary = {"totalRecordCount": len(lines), "processedRecordCount": len(lines), "successRecordCount": len(lines),
                   "errorRecordCount": 0}  # fmt: skip
        self.s3.put_object(Bucket=target.netloc, Key=f"{folder}/manifest.json.out", Body=json.dumps(summary).encode())
        arn = f"arn:aws:bedrock:us-east-1:123456789012:model-invocation-job/{job_id}"
        response = {
            "jobArn": arn, "jobName": request["jobName"], "modelId": request["modelId"], "roleArn": request["roleArn"],
            "submitTime": datetime.now(UTC).isoformat(), "inputDataConfig": request["inputDataConfig"],
            "outputDataConfig": request["outputDataConfig"],
        }  # fmt: skip
        self.jobs[job_id] = {"token": request.get("clientRequestToken"), "polls": 1, "response": response}
        return arn

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.server.server_address[1]}"

    def __enter__(self) -> FakeBedrock:
        self.thread.start()
        return self

    def __exit__(self, *exc: Any) -> None:
        self.server.shutdown()
        self.server.server_close()
