"""The batch engine that turns one manifest into vectors: Bedrock batch inference on AWS, the local model here.

Both write results in Bedrock's output shape at the same place (``<output prefix><job id>/<input file>.out``),
so importing them is one code path whichever engine ran.
"""

from __future__ import annotations

import hashlib
import json
import logging
import re
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass
from functools import cached_property
from typing import TYPE_CHECKING, Any, Literal, Protocol

from rag.embedding.bedrock import titan_vector
from rag.errors import EmbeddingError
from rag.reembed.manifest import input_key, output_prefix, record_number

if TYPE_CHECKING:
    from rag.config import Settings
    from rag.embedding.base import Embedder
    from rag.reembed.storage import ManifestStore, S3ManifestStore

JobStatus = Literal["running", "completed", "failed"]

# Bedrock's ModelInvocationJobStatus. PartiallyCompleted is done: its failed records are error lines in the output.
_BEDROCK_STATUS: dict[str, JobStatus] = {
    "Submitted": "running",
    "Validating": "running",
    "Scheduled": "running",
    "InProgress": "running",
    "Stopping": "running",
    "Completed": "completed",
    "PartiallyCompleted": "completed",
    "Failed": "failed",
    "Stopped": "failed",
    "Expired": "failed",
}
# Errors that the same request meets again (a bad request, a missing role or model, a name in use);
# anything else (throttling, a quota of concurrent jobs, 5xx, the network) can succeed later.
_PERMANENT_ERRORS = ("ValidationException", "AccessDeniedException", "ResourceNotFoundException", "ConflictException")
_TRANSIENT_ERRORS = ("ThrottlingException", "ServiceQuotaExceededException", "TooManyRequestsException")
JOB_NAME_LIMIT = 63
_NOT_IN_JOB_NAME = re.compile(r"[^a-zA-Z0-9]+")

logger = logging.getLogger(__name__)


@dataclass(frozen=True)
class JobState:
    status: JobStatus
    message: str | None = None


class BatchJobs(Protocol):
    def submit(self, run_id: str, manifest: int, model: str, dimension: int) -> str:
        """Starts the job for the manifest already at ``input_key``; the job's id. Retried, it starts nothing new."""
        ...

    def state(self, job_arn: str) -> JobState: ...

    def output_lines(self, run_id: str, manifest: int, job_arn: str) -> Iterator[str]:
        """Every result line of the job, in no particular order."""
        ...

    def stop(self, job_arn: str) -> None:
        """Stop a job that is still running (a failed run's); a job that ended already is left alone."""
        ...


def job_id(job_arn: str) -> str:
    """The folder Bedrock writes a job's results to: the last part of its ARN."""
    return job_arn.rsplit("/", 1)[-1]


def job_name(run_id: str, manifest: int) -> str:
    """Readable in the console, unique per run and manifest, within Bedrock's pattern and 63 characters."""
    run = _NOT_IN_JOB_NAME.sub("-", run_id).strip("-")
    name = f"rag-reembed-{run}-{manifest:05d}"
    if len(name) <= JOB_NAME_LIMIT:
        return name
    digest = hashlib.sha256(run_id.encode()).hexdigest()[:8]  # keeps two long run ids apart once cut
    head = f"rag-reembed-{run}"[: JOB_NAME_LIMIT - len(digest) - 8].rstrip("-")
    return f"{head}-{digest}-{manifest:05d}"


def request_token(run_id: str, manifest: int) -> str:
    """The same for every submit of one manifest of one run: Bedrock starts the job once."""
    return hashlib.sha256(f"{run_id}\0{manifest}".encode()).hexdigest()


def parse_output_line(line: str) -> tuple[int, list[float] | None, str | None]:
    """(record number, vector, error): exactly one of vector and error is set. A malformed line is a ValueError."""
    try:
        record = json.loads(line)
    except json.JSONDecodeError as exc:
        raise ValueError(f"a result line that is not JSON ({exc}): {line[:120]!r}") from exc
    if not isinstance(record, dict):
        raise ValueError(f"a result line that is not a JSON object: {line[:120]!r}")
    value = record.get("recordId")
    if not isinstance(value, str):
        raise ValueError(f"a result line without a recordId: {line[:120]!r}")
    number = record_number(value)
    error = record.get("error")
    if error is not None:
        if not isinstance(error, dict):
            raise ValueError(f"record {value}: its error is not an object: {error!r}")
        return number, None, f"{error.get('errorCode', 'error')}: {error.get('errorMessage', '(no message)')}"
    output = record.get("modelOutput")
    if not isinstance(output, dict):
        raise ValueError(f"record {value}: neither modelOutput nor error")
    try:
        return number, titan_vector(output), None
    except (ValueError, TypeError) as exc:
        raise ValueError(f"record {value}: {exc}") from exc


def _result_lines(store: ManifestStore, folder: str) -> Iterator[str]:
    # Bedrock also writes manifest.json.out (the job's counts) in the folder: only the JSONL results are read.
    keys = [key for key in store.keys(folder) if key.endswith(".jsonl.out")]
    if not keys:
        raise FileNotFoundError(f"no results (*.jsonl.out) under {folder}")
    for key in keys:
        yield from store.lines(key)


class BedrockBatchJobs:
    """Model invocation jobs (CreateModelInvocationJob) reading manifests from and writing results to one bucket."""

    def __init__(self, settings: Settings, store: S3ManifestStore, client: Any = None):
        self.settings = settings
        self.store = store
        if client is not None:
            self.__dict__["_client"] = client

    @cached_property
    def _client(self) -> Any:
        import boto3
        from botocore.config import Config

        # No endpoint_url: botocore reads AWS_ENDPOINT_URL_BEDROCK before AWS_ENDPOINT_URL, as the runtime client does.
        return boto3.client(
            "bedrock",
            region_name=self.settings.embedding.bedrock_region or self.settings.aws.region,
            config=Config(retries={"mode": "standard", "total_max_attempts": self.settings.embedding.max_retries + 1}),
        )

    def submit(self, run_id: str, manifest: int, model: str, dimension: int) -> str:
        # ``dimension`` is in every record's modelInput already: the job itself has no such setting.
        role_arn = self.settings.reembed.role_arn
        if not role_arn:
            raise ValueError("RAG_REEMBED_ROLE_ARN is not set: Bedrock's batch jobs need a role to read and write the bucket")
        prefix = self.settings.reembed.prefix
        response = self._call(
            "create_model_invocation_job",
            jobName=job_name(run_id, manifest),
            roleArn=role_arn,
            clientRequestToken=request_token(run_id, manifest),
            modelId=model,
            inputDataConfig={"s3InputDataConfig": {"s3Uri": self.store.uri(input_key(prefix, run_id, manifest))}},
            outputDataConfig={"s3OutputDataConfig": {"s3Uri": self.store.uri(output_prefix(prefix, run_id, manifest))}},
            timeoutDurationInHours=self.settings.reembed.job_timeout_hours,
        )
        return str(response["jobArn"])

    def state(self, job_arn: str) -> JobState:
        job = self._call("get_model_invocation_job", jobIdentifier=job_arn)
        status = str(job.get("status"))
        mapped = _BEDROCK_STATUS.get(status)
        if mapped is None:
            raise EmbeddingError(f"Bedrock batch job {job_arn} is in a status this code does not know: {status}", transient=False)
        if mapped == "failed":
            return JobState("failed", f"{status}: {job.get('message') or 'no message from Bedrock'}")
        if status == "PartiallyCompleted":
            return JobState(
                "completed", f"{job.get('errorRecordCount', '?')} of {job.get('totalRecordCount', '?')} records failed"
            )
        return JobState(mapped, None if mapped == "completed" else status)

    def output_lines(self, run_id: str, manifest: int, job_arn: str) -> Iterator[str]:
        folder = f"{output_prefix(self.settings.reembed.prefix, run_id, manifest)}{job_id(job_arn)}/"
        return _result_lines(self.store, folder)

    def stop(self, job_arn: str) -> None:
        """Stop a job of a failed run (it would go on, and bill); one that already ended is left as it is."""
        try:
            self._call("stop_model_invocation_job", jobIdentifier=job_arn)
        except EmbeddingError as exc:
            if exc.transient:
                raise
            logger.info("batch job not stopped: %s", exc)  # ended already (ValidationException), or gone

    def _call(self, operation: str, **params: Any) -> dict[str, Any]:
        from botocore.exceptions import BotoCoreError, ClientError

        try:
            response: dict[str, Any] = getattr(self._client, operation)(**params)
        except ClientError as exc:
            error = exc.response.get("Error", {})
            code = str(error.get("Code", ""))
            status = int(exc.response.get("ResponseMetadata", {}).get("HTTPStatusCode") or 0)
            transient = code in _TRANSIENT_ERRORS or status >= 500 or (code not in _PERMANENT_ERRORS and status == 429)
            raise EmbeddingError(f"Bedrock {operation}: {code}: {error.get('Message', exc)}", transient=transient) from exc
        except BotoCoreError as exc:  # the network, after botocore's retries
            raise EmbeddingError(f"Bedrock {operation}: {exc}", transient=True) from exc
        return response


class LocalBatchJobs:
    """The local model processes a manifest at once, at submit, and writes what Bedrock would have written."""

    def __init__(self, embedder: Embedder, store: ManifestStore, settings: Settings | None = None):
        from rag.config import get_settings

        self.embedder = embedder
        self.store = store
        self.settings = settings or get_settings()

    def submit(self, run_id: str, manifest: int, model: str, dimension: int) -> str:
        if dimension != self.embedder.dimension:
            raise ValueError(
                f"the local model {self.embedder.model_id} gives {self.embedder.dimension} dimensions, not {dimension}"
            )
        job = f"local-{run_id}-{manifest}"
        prefix = self.settings.reembed.prefix
        source = input_key(prefix, run_id, manifest)
        target = f"{output_prefix(prefix, run_id, manifest)}{job}/{source.rsplit('/', 1)[-1]}.out"
        self.store.put_lines(target, self._results(self.store.lines(source), source))
        return job

    def state(self, job_arn: str) -> JobState:
        return JobState("completed")

    def stop(self, job_arn: str) -> None:
        """Nothing to stop: the local engine is done by the time submit returns."""

    def output_lines(self, run_id: str, manifest: int, job_arn: str) -> Iterator[str]:
        return _result_lines(self.store, f"{output_prefix(self.settings.reembed.prefix, run_id, manifest)}{job_id(job_arn)}/")

    def _results(self, lines: Iterable[str], source: str) -> Iterator[str]:
        # One batch of records in memory at a time, however long the manifest.
        batch: list[dict[str, Any]] = []
        for number, line in enumerate(lines, 1):
            batch.append(_manifest_record(line, source, number))
            if len(batch) == self.settings.embedding.batch_size:
                yield from self._embedded(batch)
                batch = []
        yield from self._embedded(batch)

    def _embedded(self, batch: Sequence[dict[str, Any]]) -> Iterator[str]:
        texts = [record["modelInput"]["inputText"] for record in batch]
        for record, text, vector in zip(batch, texts, self.embedder.embed(texts) if texts else [], strict=True):
            output = {"embedding": vector, "inputTextTokenCount": self.embedder.count_tokens(text)}
            yield json.dumps({"recordId": record["recordId"], "modelInput": record["modelInput"], "modelOutput": output})


def _manifest_record(line: str, source: str, number: int) -> dict[str, Any]:
    try:
        record = json.loads(line)
        text = record["modelInput"]["inputText"]
    except (json.JSONDecodeError, KeyError, TypeError) as exc:
        raise ValueError(f"{source} line {number} is not a manifest record ({exc!r}): {line[:120]!r}") from exc
    if not isinstance(record.get("recordId"), str) or not isinstance(text, str):
        raise ValueError(f"{source} line {number} is not a manifest record: {line[:120]!r}")
    return dict(record)
