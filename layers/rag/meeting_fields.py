"""A meeting's date, title and participants: what its uploader stated (a sidecar ``<file>.meta.json`` over the object's
S3 metadata, read by rag.meeting_metadata), else what its key and content give.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import date
from pathlib import PurePosixPath
from typing import Any

from rag.errors import ParseError
from rag.meeting_metadata import MAX_SIDECAR_BYTES, MeetingMetadata, from_object_metadata, from_sidecar
from rag.store import documents as repo

DATE_IN_KEY = re.compile(r"(?<!\d)(\d{4}-\d{2}-\d{2})(?!\d)")


@dataclass(frozen=True)
class Sidecar:
    """The ``<file>.meta.json`` beside a file as it was read (None fields: there is none)."""

    key: str
    data: bytes | None = None  # None: absent, or over MAX_SIDECAR_BYTES (then ``size`` says so)
    version_id: str | None = None
    etag: str | None = None
    size: int = 0

    @property
    def exists(self) -> bool:
        return self.etag is not None or self.version_id is not None


def stated_metadata(head: dict[str, Any], sidecar: Sidecar) -> MeetingMetadata:
    """The meeting fields its uploader stated: the sidecar's over the object's S3 metadata; ParseError if either is bad."""
    metadata = {k.lower(): v for k, v in head.get("Metadata", {}).items()}
    stated = from_object_metadata(metadata)
    if not sidecar.exists:
        return stated
    if sidecar.data is None:
        name = PurePosixPath(sidecar.key).name
        raise ParseError(f"sidecar {name} is {sidecar.size} bytes; a sidecar holds at most {MAX_SIDECAR_BYTES} bytes")
    return from_sidecar(sidecar.data, sidecar.key).over(stated)


def meeting_fields(key: str, stated: MeetingMetadata, parsed: Any) -> repo.DocumentFields:
    """Each field from what was stated, else the file: a date in its key, then its content; title and participants
    from its content, else its name and its named speakers ("Unknown" is nobody)."""
    from rag.parsing.turns import speakers_of  # loaded already: the file was just parsed

    return repo.DocumentFields(
        title=stated.title or parsed.title or PurePosixPath(key).stem,
        meeting_date=stated.meeting_date or date_in_key(key) or parsed.meeting_date,
        participants=stated.participants or parsed.participants or speakers_of(parsed.turns),
    )


def date_in_key(key: str) -> date | None:
    """A YYYY-MM-DD date in the object's key (``meetings/2026-03-04-standup.txt``), if it is a real date."""
    if match := DATE_IN_KEY.search(key):
        try:
            return date.fromisoformat(match[1])
        except ValueError:
            return None
    return None


def document_fields(key: str, metadata: dict[str, str]) -> repo.DocumentFields:
    """Title, meeting date and participants from S3 user metadata (or a date in the key)."""
    stated = from_object_metadata(metadata)
    return repo.DocumentFields(
        title=stated.title, meeting_date=stated.meeting_date or date_in_key(key), participants=stated.participants or []
    )
