"""``POST /v1/uploads``: a presigned PUT into the documents bucket, under the caller's own tenant prefix.

The key is ``tenants/<the caller's verified tenant>/projects/<project_id>/<filename>``: the tenant never comes
from the body (the model forbids unknown fields), and the filename is a plain name (no folders, not hidden). The
bucket's notification ingests the object as any other upload.
"""

from __future__ import annotations

import logging
from functools import lru_cache
from typing import Any
from urllib.parse import urlsplit

from aws_lambda_powertools.event_handler import Response, content_types
from aws_lambda_powertools.event_handler.router import APIGatewayHttpRouter

from rag.api.error_responses import ApiError
from rag.api.models.catalog import ErrorResponse
from rag.api.models.documents import UploadRequest, UploadTicket
from rag.api.request_scope import request_tenant
from rag.config import Settings, get_settings

logger = logging.getLogger(__name__)
router = APIGatewayHttpRouter()  # type: ignore[no-untyped-call]  # Powertools leaves Router.__init__ unannotated
DEFAULT_CONTENT_TYPE = "application/octet-stream"


@lru_cache(maxsize=4)
def _signer(region: str, endpoint_url: str | None) -> Any:
    """An S3 client that presigns with SigV4 (botocore's default for presigned S3 URLs is the retired SigV2)."""
    import boto3
    from botocore.config import Config

    return boto3.client("s3", region_name=region, endpoint_url=endpoint_url, config=Config(signature_version="s3v4"))


def presigned_put(settings: Settings, bucket: str, key: str, content_type: str) -> str:
    params = {"Bucket": bucket, "Key": key, "ContentType": content_type}
    signer = _signer(settings.aws.region, settings.aws.endpoint_url)
    url: str = signer.generate_presigned_url(
        "put_object", Params=params, ExpiresIn=settings.web.upload_url_seconds, HttpMethod="PUT"
    )
    return url


_origins: dict[tuple[str, str | None, str], str | None] = {}  # (bucket, endpoint, region) -> origin


def upload_origin(settings: Settings) -> str | None:
    """The origin the page PUTs uploads to (for its Content-Security-Policy): a presigned URL's, made once per
    process; None when uploads are off."""
    bucket = settings.web.upload_bucket
    if bucket is None:
        return None
    where = (bucket, settings.aws.endpoint_url, settings.aws.region)
    if where not in _origins:
        try:
            parts = urlsplit(presigned_put(settings, bucket, "tenants/t/projects/p/origin.txt", DEFAULT_CONTENT_TYPE))
            _origins[where] = f"{parts.scheme}://{parts.netloc}"
        except Exception:  # noqa: BLE001  # no credentials to sign with: the page cannot upload either way
            logger.warning("cannot presign an upload URL for bucket %s", bucket, exc_info=True)
            _origins[where] = None
    return _origins[where]


def content_type_of(filename: str) -> str:
    import mimetypes

    return mimetypes.guess_type(filename, strict=False)[0] or DEFAULT_CONTENT_TYPE


@router.post(
    "/v1/uploads",
    summary="A presigned PUT for one file into the caller's project (ingested once it is written)",
    tags=["catalog"],
    responses={
        201: {"description": "PUT the file to url with these headers", "content": {"application/json": {"model": UploadTicket}}},
        413: {"description": "larger than ingest takes", "content": {"application/json": {"model": ErrorResponse}}},
        503: {"description": "uploads are not configured", "content": {"application/json": {"model": ErrorResponse}}},
    },
)
def upload(request: UploadRequest) -> Response[str]:
    from rag.events import ID_PATTERN

    settings = get_settings()
    if settings.web.upload_bucket is None:
        raise ApiError(503, "uploads_unavailable", "uploads are not configured here (RAG_UPLOAD_BUCKET is unset)")
    if request.size is not None and request.size > settings.ingest.max_object_bytes:
        raise ApiError(
            413, "too_large", f"the file has {request.size} bytes; ingest takes at most {settings.ingest.max_object_bytes}"
        )
    tenant = request_tenant(router.current_event.raw_event)
    if not ID_PATTERN.match(tenant):  # the key could not carry it: ingest would refuse the object
        raise ApiError(403, "forbidden", f"tenant {tenant!r} cannot be written into an object key")
    key = f"tenants/{tenant}/projects/{request.project_id}/{request.filename}"
    content_type = request.content_type or content_type_of(request.filename)
    url = presigned_put(settings, settings.web.upload_bucket, key, content_type)
    ticket = UploadTicket(url=url, headers={"Content-Type": content_type}, key=key, expires_in=settings.web.upload_url_seconds)
    return Response(status_code=201, content_type=content_types.APPLICATION_JSON, body=ticket.model_dump_json())
