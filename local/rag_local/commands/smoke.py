"""``rag smoke``: check a deployed (or the local) stack end to end the way its first user would (``rag_local.smoke``)."""

from __future__ import annotations

import argparse
import os
import sys
import time
from typing import TYPE_CHECKING, Any

from rag_local.commands import Subparsers, fail

if TYPE_CHECKING:
    from rag.config import Settings
    from rag_local.smoke import Upload
    from rag_local.stack_access import Auth, StackOutputs

TOKEN_VARIABLE = "RAG_SMOKE_TOKEN"
PROGRESS_EVERY_SECONDS = 10.0


def register(subparsers: Subparsers) -> None:
    parser = subparsers.add_parser(
        "smoke",
        help="check a deployed stack (or the local one) end to end: upload, ingest, search, ask, MCP, delete",
        description="Uploads a small transcript to a project of its own (smoke-<random>) under the tenant's prefix, with "
        "the tenant's uploader role when the stack has one; waits for it to be ingested; searches it in every mode, "
        "builds a context, asks (and checks the answer cites it), lists the MCP tools and calls the MCP search tool; "
        "then deletes it and waits until the API no longer shows it. Prints a table of what passed; exit status 1 if "
        "anything failed. The API is called with a JWT (--token or $RAG_SMOKE_TOKEN, on ApiUrl) or signed with SigV4 "
        "(--iam, on ServiceApiUrl); the token's tenant (or the IAM caller's) must be the --tenant uploaded to.",
    )
    where = parser.add_mutually_exclusive_group()
    where.add_argument("--stack", help="the CloudFormation stack to read the outputs of, e.g. MeetingRag-prod")
    where.add_argument(
        "--local", action="store_true", dest="local_aws",
        help="the local stack of `rag up` (moto S3, the API on 127.0.0.1:RAG_LOCAL_API_PORT, the first of RAG_API_KEYS)",
    )  # fmt: skip
    parser.add_argument("--token", help=f"a JWT (or local API key) sent as a bearer token (default ${TOKEN_VARIABLE})")
    parser.add_argument("--iam", action="store_true", help="sign the requests with SigV4 and call ServiceApiUrl")
    parser.add_argument("--tenant", help="upload to tenants/<tenant>/projects/... (default: projects/..., the default tenant)")
    parser.add_argument("--api-url", help="the API's base URL (default: the stack's ApiUrl, or ServiceApiUrl with --iam)")
    parser.add_argument("--bucket", help="the documents bucket (default: the stack's BucketName)")
    role = parser.add_mutually_exclusive_group()
    role.add_argument("--upload-role", metavar="ARN", help="upload with this role (default: the tenant's uploader role output)")
    role.add_argument("--no-upload-role", action="store_true", help="upload with your own credentials")
    parser.add_argument("--region", help="AWS region (default: your profile's)")
    parser.add_argument("--profile", help="AWS profile")
    parser.add_argument(
        "--timeout", type=float, default=300, help="seconds to wait for the ingest, and for the delete (default 300)"
    )
    parser.set_defaults(func=run)


def run(args: argparse.Namespace, settings: Settings) -> int:
    from rag_local.smoke import SmokeCheck, render_table
    from rag_local.stack_access import ApiClient, SmokeSetupError

    try:
        api_url, auth, upload, hint = _target(args, settings)
    except SmokeSetupError as exc:
        return fail(str(exc))
    check = SmokeCheck(ApiClient(api_url, auth), upload, timeout=args.timeout, progress=_Progress(), ingest_hint=hint)
    print(f"smoke check of {api_url}: {check.uri}", file=sys.stderr, flush=True)
    steps = check.run()
    print(render_table(steps))
    return 1 if any(step.status == "FAIL" for step in steps) else 0


def _target(args: argparse.Namespace, settings: Settings) -> tuple[str, Auth, Upload, str]:
    """The API URL, its authentication, the upload and what to check when the ingest fails; or SmokeSetupError."""
    import boto3
    from botocore.exceptions import BotoCoreError

    from rag_local.stack_access import SmokeSetupError, StackOutputs, read_stack_outputs

    try:
        if args.local_aws:  # the CLI has pointed boto3 at the local moto server
            session = boto3.Session(region_name=settings.aws.region)
            outputs = StackOutputs(bucket_name=settings.local.bucket, api_url=f"http://127.0.0.1:{settings.local.api_port}")
            logs = f"{settings.local.dir / 'logs' / 'services.log'} and `rag status` say what happened to the file"
        else:
            session = boto3.Session(profile_name=args.profile, region_name=args.region)
            if args.stack:
                outputs = read_stack_outputs(session.client("cloudformation"), args.stack)
            elif args.api_url and args.bucket:
                outputs = StackOutputs(bucket_name=args.bucket, api_url=args.api_url)
            else:
                raise SmokeSetupError("say which stack: --stack <name>, --local, or both --api-url and --bucket")
            group = outputs.ingest_log_group or "<IngestLogGroupName>"
            logs = f"`aws logs tail {group} --since 15m` says what happened to the file"
        api_url = args.api_url or _api_url(args, outputs)
        auth, token = _auth(args, settings, session, api_url)
        tenant = _tenant(args, settings, token)
        # The API shows a caller its own tenant's documents only: a token of another tenant waits in vain.
        owner = f"tenant {tenant}" if tenant else "the default tenant"
        hint = f"is the caller of {owner}, whose prefix the file is under? {logs}"
        return api_url, auth, _upload(args, tenant, session, outputs), hint
    except BotoCoreError as exc:  # no region, no credentials, a profile that does not exist
        raise SmokeSetupError(f"{exc} (try --region / --profile)") from exc


def _tenant(args: argparse.Namespace, settings: Settings, token: str | None) -> str | None:
    """The tenant to upload for (None: the default tenant's short form); locally, the API key's tenant."""
    from rag_local.stack_access import SmokeSetupError

    key_tenant = settings.api.key_tenants.get(token or "") if args.local_aws else None
    if key_tenant is None:
        return args.tenant  # type: ignore[no-any-return]
    if args.tenant and args.tenant != key_tenant:
        raise SmokeSetupError(f"the API key belongs to tenant {key_tenant}, not {args.tenant} (RAG_API_KEYS)")
    return None if key_tenant == settings.ingest.default_tenant else key_tenant


def _api_url(args: argparse.Namespace, outputs: StackOutputs) -> str:
    from rag_local.stack_access import SmokeSetupError

    if not args.iam:
        return outputs.api_url
    if args.local_aws:
        raise SmokeSetupError("the local API authenticates API keys only: drop --iam")
    if outputs.service_api_url is None:
        raise SmokeSetupError("--iam needs the stack's ServiceApiUrl output, or --api-url")
    return outputs.service_api_url


def _auth(args: argparse.Namespace, settings: Settings, session: Any, api_url: str) -> tuple[Auth, str | None]:
    from rag_local.stack_access import BearerToken, SigV4, SmokeSetupError, execute_api_region

    if args.iam:
        credentials = session.get_credentials()
        region = execute_api_region(api_url) or session.region_name
        if credentials is None or region is None:
            raise SmokeSetupError("--iam needs AWS credentials and a region (--profile, --region)")
        return SigV4(credentials, region), None
    token = (
        args.token or os.environ.get(TOKEN_VARIABLE) or (next(iter(settings.api.key_tenants), None) if args.local_aws else None)
    )
    if not token:
        raise SmokeSetupError(f"pass --token (or set {TOKEN_VARIABLE}): a JWT of your identity provider; or use --iam")
    return BearerToken(token), token


def _upload(args: argparse.Namespace, tenant: str | None, session: Any, outputs: StackOutputs) -> Upload:
    from botocore.exceptions import ClientError

    from rag_local.smoke import Upload
    from rag_local.stack_access import DEFAULT_TENANT_PREFIX, SmokeSetupError, assumed_role_session

    prefix = f"tenants/{tenant}/{DEFAULT_TENANT_PREFIX}" if tenant else DEFAULT_TENANT_PREFIX
    bucket = args.bucket or outputs.bucket_name
    role = None if args.no_upload_role else args.upload_role or getattr(outputs.uploader_for(tenant), "role_arn", None)
    if role is None:
        return Upload(session.client("s3"), bucket, prefix, "your credentials")
    try:
        return Upload(assumed_role_session(session, role).client("s3"), bucket, prefix, role)
    except ClientError as exc:
        why = f"cannot assume {role}: {exc.response['Error']['Message']}"
        if args.upload_role:
            raise SmokeSetupError(why) from exc
        # The stack's role trusts the tenant's sync principal, which the operator running this may not be.
        return Upload(session.client("s3"), bucket, prefix, f"your credentials ({why})")


class _Progress:
    """Waiting lines on stderr: the first of each wait, then one every PROGRESS_EVERY_SECONDS."""

    def __init__(self) -> None:
        self.what: str | None = None
        self.printed = 0.0

    def __call__(self, message: str) -> None:
        what, now = message.split(" (", 1)[0], time.monotonic()
        if what != self.what or now - self.printed >= PROGRESS_EVERY_SECONDS:
            print(f"  {message}", file=sys.stderr, flush=True)
            self.what, self.printed = what, now
