"""Which version of an S3 object a GetObject / HeadObject response is."""

from __future__ import annotations

from typing import Any


def etag_of(head: dict[str, Any]) -> str | None:
    return (head.get("ETag") or "").strip('"') or None


def is_version(current: dict[str, Any], version_id: str | None, etag: str | None) -> bool:
    """Whether HEAD's ``current`` is that version: versioned buckets compare version ids; unversioned
    ones the ETag (same bytes, same ETag)."""
    version = current.get("VersionId")
    if version and version != "null" and version_id:
        return bool(version == version_id)
    return etag_of(current) == etag
