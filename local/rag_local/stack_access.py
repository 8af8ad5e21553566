"""Reaching a deployed stack as its users do: its CloudFormation outputs (bucket, API URLs, tenant uploader roles),
an uploader role's session, a bearer token or SigV4, and a small HTTP client for its API (``rag smoke``)."""

from __future__ import annotations

import json
import re
import urllib.error
import urllib.request
from dataclasses import dataclass
from typing import Any, Protocol
from urllib.parse import urlsplit

HTTP_TIMEOUT_SECONDS = 60  # above API Gateway's 30 s integration limit: the API answers first
# How infra/stack.py describes each tenant uploader's RoleArn output (its key is a CDK-generated logical id).
UPLOADER_DESCRIPTION = re.compile(r"^Uploader role of tenant (?P<tenant>\S+): writes (?P<prefixes>.+)$")
DEFAULT_TENANT_PREFIX = "projects/"


class SmokeSetupError(Exception):
    """The check cannot start (no such stack, an output or a token missing); the message says what to do."""


class StepFailed(Exception):
    """A step's check did not hold; the message is the table's detail."""


# --- the stack's outputs ---------------------------------------------------------------


@dataclass(frozen=True)
class UploaderRole:
    tenant_id: str
    role_arn: str
    prefixes: tuple[str, ...]  # what the role may write: tenants/<tenant_id>/, and projects/ for the default tenant


@dataclass(frozen=True)
class StackOutputs:
    bucket_name: str
    api_url: str
    service_api_url: str | None = None
    ingest_log_group: str | None = None
    uploader_roles: tuple[UploaderRole, ...] = ()

    def uploader_for(self, tenant_id: str | None) -> UploaderRole | None:
        """The role that writes ``tenant_id``'s prefix; for None (the short ``projects/`` form) the default tenant's."""
        for role in self.uploader_roles:
            if (tenant_id is None and DEFAULT_TENANT_PREFIX in role.prefixes) or role.tenant_id == tenant_id:
                return role
        return None


def read_stack_outputs(cloudformation: Any, stack_name: str) -> StackOutputs:
    """The outputs of ``stack_name`` (``describe_stacks``) that the smoke check uses."""
    from botocore.exceptions import ClientError

    try:
        stacks = cloudformation.describe_stacks(StackName=stack_name)["Stacks"]
    except ClientError as exc:
        region = cloudformation.meta.region_name
        raise SmokeSetupError(f"cannot read stack {stack_name} in {region}: {exc.response['Error']['Message']}") from exc
    outputs = stacks[0].get("Outputs", [])
    values = {o["OutputKey"]: o["OutputValue"] for o in outputs}
    missing = [key for key in ("BucketName", "ApiUrl") if key not in values]
    if missing:
        status = stacks[0].get("StackStatus", "unknown")
        raise SmokeSetupError(f"stack {stack_name} ({status}) has no output {' or '.join(missing)}: is it a meeting-rag stack?")
    roles = []
    for output in outputs:
        match = UPLOADER_DESCRIPTION.match(output.get("Description") or "")
        if match:
            prefixes = tuple(p.strip() for p in match["prefixes"].split(","))
            roles.append(UploaderRole(match["tenant"], output["OutputValue"], prefixes))
    return StackOutputs(
        bucket_name=values["BucketName"],
        api_url=values["ApiUrl"],
        service_api_url=values.get("ServiceApiUrl"),
        ingest_log_group=values.get("IngestLogGroupName"),
        uploader_roles=tuple(sorted(roles, key=lambda r: r.tenant_id)),
    )


def assumed_role_session(session: Any, role_arn: str) -> Any:
    """A boto3 session with the credentials of ``role_arn`` (an STS AssumeRole by ``session``'s caller)."""
    import boto3

    credentials = session.client("sts").assume_role(RoleArn=role_arn, RoleSessionName="rag-smoke", DurationSeconds=900)
    c = credentials["Credentials"]
    return boto3.Session(
        aws_access_key_id=c["AccessKeyId"], aws_secret_access_key=c["SecretAccessKey"], aws_session_token=c["SessionToken"],
        region_name=session.region_name,
    )  # fmt: skip


# --- HTTP to the API -------------------------------------------------------------------


class Auth(Protocol):
    def headers(self, method: str, url: str, headers: dict[str, str], body: bytes) -> dict[str, str]:
        """The request's headers with its credentials added."""
        ...


@dataclass(frozen=True)
class BearerToken:
    """A JWT (the API's ``ApiUrl``) or a local API key: ``Authorization: Bearer <token>``."""

    token: str

    def headers(self, method: str, url: str, headers: dict[str, str], body: bytes) -> dict[str, str]:
        return {**headers, "Authorization": f"Bearer {self.token}"}


@dataclass(frozen=True)
class SigV4:
    """IAM: each request signed with SigV4 for ``execute-api`` (the API's ``ServiceApiUrl``)."""

    credentials: Any  # botocore credentials
    region: str

    def headers(self, method: str, url: str, headers: dict[str, str], body: bytes) -> dict[str, str]:
        from botocore.auth import SigV4Auth
        from botocore.awsrequest import AWSRequest

        request = AWSRequest(method=method, url=url, data=body, headers=headers)
        SigV4Auth(self.credentials, "execute-api", self.region).add_auth(request)
        return dict(request.headers.items())


def execute_api_region(url: str) -> str | None:
    """The region of an ``https://<id>.execute-api.<region>.amazonaws.com`` URL (None for another host)."""
    match = re.match(r"^[^.]+\.execute-api\.([a-z0-9-]+)\.amazonaws\.com", urlsplit(url).hostname or "")
    return match[1] if match else None


@dataclass(frozen=True)
class HttpReply:
    status: int
    headers: dict[str, str]  # names lower-cased
    body: bytes

    def text(self, limit: int = 300) -> str:
        text = self.body.decode("utf-8", errors="replace").strip()
        return text if len(text) <= limit else text[:limit] + "…"


class ApiClient:
    """JSON over HTTP to the query API at ``base_url`` (no trailing slash needed), authenticated by ``auth``."""

    def __init__(self, base_url: str, auth: Auth, timeout: float = HTTP_TIMEOUT_SECONDS) -> None:
        self.base_url = base_url.rstrip("/")
        self.auth = auth
        self.timeout = timeout

    def request(self, method: str, path: str, body: Any = None, headers: dict[str, str] | None = None) -> HttpReply:
        url = f"{self.base_url}{path}"
        data = b"" if body is None else json.dumps(body).encode()
        sent = {**({"Content-Type": "application/json"} if body is not None else {}), **(headers or {})}
        request = urllib.request.Request(
            url, data=data or None, headers=self.auth.headers(method, url, sent, data), method=method
        )
        try:
            with urllib.request.urlopen(request, timeout=self.timeout) as response:
                return HttpReply(response.status, {k.lower(): v for k, v in response.headers.items()}, response.read())
        except urllib.error.HTTPError as exc:
            return HttpReply(exc.code, {k.lower(): v for k, v in exc.headers.items()}, exc.read())
        except (urllib.error.URLError, TimeoutError, ConnectionError) as exc:
            raise StepFailed(f"cannot reach {url}: {getattr(exc, 'reason', exc)}") from exc

    def call(self, method: str, path: str, body: Any = None, *, allow: tuple[int, ...] = ()) -> Any:
        """The JSON of a 2xx reply (None for a status in ``allow``); any other status fails the step."""
        reply = self.request(method, path, body)
        if reply.status in allow:
            return None
        if not 200 <= reply.status < 300:
            raise StepFailed(f"{method} {path}: HTTP {reply.status}: {reply.text()}")
        try:
            return json.loads(reply.body)
        except ValueError as exc:
            raise StepFailed(f"{method} {path}: HTTP {reply.status} with a body that is not JSON: {reply.text()}") from exc
