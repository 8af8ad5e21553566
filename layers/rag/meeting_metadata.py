"""A meeting's date, title and participants as its uploader states them.

Two sources, both optional, both checked (a value that does not fit is a ``ParseError``: the
meeting's document is ``failed`` with that error, never ingested with the value dropped):

- a sidecar object ``<file>.meta.json`` beside the file, in the same tenant and project prefix::

      {"meeting_date": "2026-03-04", "title": "Battery review", "participants": ["Dana Kim", "Ravi"]}

  every field optional, no other field (a misspelt one is an error, not ignored);
- the object's S3 user metadata ``meeting-date`` (ISO 8601), ``title`` and ``participants``
  (comma separated): ``x-amz-meta-meeting-date``, ... on the wire.

Field by field, the sidecar wins over the object's metadata, which wins over what the file's
name and content give. Neither ever chooses a tenant or a project: those come from the key
(``rag.events.location_from_key``). A sidecar is never a document: its change re-ingests the
file it describes.
"""

from __future__ import annotations

import json
import re
from datetime import date
from typing import Annotated, Any

from pydantic import BaseModel, BeforeValidator, ConfigDict, Field, StringConstraints, ValidationError

from rag.errors import ParseError

SIDECAR_SUFFIX = ".meta.json"
# A sidecar holds three short fields; anything larger is not one.
MAX_SIDECAR_BYTES = 64 * 1024

# YYYY-MM-DD, alone or as a timestamp's date part (2026-03-04T10:00:00Z): never a number or a week date.
ISO_DATE = re.compile(r"(\d{4}-\d{2}-\d{2})(?:[T ].*)?", re.DOTALL)


def _iso_date(value: object) -> object:
    if isinstance(value, str):
        match = ISO_DATE.fullmatch(value.strip())
        if match is None:
            raise ValueError("not an ISO 8601 date")
        return date.fromisoformat(match[1])  # ValueError for 2026-02-30
    if value is None or isinstance(value, date):
        return value
    raise ValueError("not an ISO 8601 date")


MeetingDate = Annotated[date | None, BeforeValidator(_iso_date)]
Name = Annotated[str, StringConstraints(strip_whitespace=True, min_length=1, max_length=200)]
Title = Annotated[str, StringConstraints(strip_whitespace=True, min_length=1, max_length=500)]


class MeetingMetadata(BaseModel):
    """What a sidecar (or the object's metadata) says about a meeting; None: not said."""

    model_config = ConfigDict(extra="forbid", frozen=True, strict=False)

    meeting_date: MeetingDate = None
    title: Title | None = None
    participants: Annotated[list[Name], Field(max_length=500)] | None = None

    def over(self, other: MeetingMetadata) -> MeetingMetadata:
        """These fields where given, ``other``'s elsewhere."""
        return MeetingMetadata(
            meeting_date=self.meeting_date if self.meeting_date is not None else other.meeting_date,
            title=self.title if self.title is not None else other.title,
            participants=self.participants if self.participants is not None else other.participants,
        )


def is_sidecar(key: str) -> bool:
    """Whether ``key`` names a sidecar (``<file>.meta.json``), not a document."""
    name = key.rsplit("/", 1)[-1]
    return name.endswith(SIDECAR_SUFFIX) and len(name) > len(SIDECAR_SUFFIX)


def sidecar_key(key: str) -> str:
    return key + SIDECAR_SUFFIX


def described_key(sidecar: str) -> str:
    """The key of the file a sidecar describes."""
    return sidecar[: -len(SIDECAR_SUFFIX)]


def from_sidecar(data: bytes, key: str) -> MeetingMetadata:
    """The sidecar's fields; ParseError naming the sidecar and what is wrong with it."""
    name = key.rsplit("/", 1)[-1]
    if len(data) > MAX_SIDECAR_BYTES:
        raise ParseError(f"sidecar {name} is {len(data)} bytes; a sidecar holds at most {MAX_SIDECAR_BYTES} bytes")
    try:
        value = json.loads(data.decode("utf-8-sig"))
    except UnicodeDecodeError as exc:
        raise ParseError(f"sidecar {name} is not UTF-8 text: {exc}") from exc
    except json.JSONDecodeError as exc:
        raise ParseError(f"sidecar {name} is not valid JSON: {exc}") from exc
    if not isinstance(value, dict):
        raise ParseError(
            f"sidecar {name} must be a JSON object like "
            '{"meeting_date": "2026-03-04", "title": "...", "participants": ["..."]}, '
            f"got a JSON {type(value).__name__}"
        )
    return _validated(value, f"sidecar {name}")


def from_object_metadata(metadata: dict[str, str]) -> MeetingMetadata:
    """The fields of S3 user metadata (keys lower-cased, without ``x-amz-meta-``); others are ignored."""
    value: dict[str, Any] = {}
    if raw_date := (metadata.get("meeting-date") or "").strip():
        value["meeting_date"] = raw_date
    if title := _decoded(metadata.get("title") or "").strip():
        value["title"] = title
    if "participants" in metadata:
        names = _decoded(metadata["participants"]).split(",")
        value["participants"] = [name.strip() for name in names if name.strip()] or None
    return _validated(value, "S3 metadata")


def _decoded(value: str) -> str:
    """A metadata value as written: S3 keeps non-ASCII values RFC 2047-encoded (``=?UTF-8?B?...?=``)."""
    if "=?" not in value:
        return value
    from email.header import decode_header, make_header

    try:
        return str(make_header(decode_header(value)))
    except (ValueError, LookupError):  # not an encoded word after all (or an unknown charset): as written
        return value


def _validated(value: dict[str, Any], source: str) -> MeetingMetadata:
    try:
        return MeetingMetadata.model_validate(value)
    except ValidationError as exc:
        problems = "; ".join(_problem(error, source) for error in exc.errors())
        raise ParseError(f"{source}: {problems}") from exc


def _problem(error: Any, source: str) -> str:
    field = ".".join(str(part) for part in error["loc"])
    if source == "S3 metadata" and field == "meeting_date":
        field = "meeting-date"
    if error["type"] == "extra_forbidden":
        return f"unknown field {field!r} (expected meeting_date, title, participants)"
    if field == "participants" and error["type"] == "list_type":
        return 'participants must be a list of names, like ["Dana Kim", "Ravi"]'
    if field.startswith(("meeting_date", "meeting-date")):
        return f"{field} {error.get('input')!r} is not an ISO 8601 date (YYYY-MM-DD)"
    return f"{field}: {error['msg']}"
