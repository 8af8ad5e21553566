"""What a parser returns: the extracted text plus its turns or sections, with offsets."""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import date
from typing import Literal

DocumentKind = Literal["transcript", "document"]


@dataclass(frozen=True)
class Turn:
    """One speaker turn; ``text[start_char:end_char]`` of the document is its whole line."""

    index: int  # 0-based; for .txt transcripts, the line number among turn lines
    speaker: str
    text: str  # the utterance alone, without the speaker
    start_char: int
    end_char: int  # exclusive
    start_time: float | None = None  # seconds from the start of the recording
    end_time: float | None = None


@dataclass(frozen=True)
class Section:
    """A run of a document under one heading path (the heading line included)."""

    heading_path: tuple[str, ...]
    start_char: int
    end_char: int  # exclusive


@dataclass
class ParsedDocument:
    kind: DocumentKind
    format: str  # "transcript-txt", "vtt", "srt", "json", "markdown", "text"
    text: str  # the extracted text that every offset points into
    turns: list[Turn] = field(default_factory=list)  # transcripts
    sections: list[Section] = field(default_factory=list)  # documents
    title: str | None = None
    meeting_date: date | None = None
    participants: list[str] = field(default_factory=list)


@dataclass(frozen=True)
class Chunk:
    """A piece of a document to embed; ``document.text[start_char:end_char] == text``."""

    index: int
    text: str
    start_char: int
    end_char: int
    token_count: int
    start_turn: int | None = None
    end_turn: int | None = None  # inclusive
    speakers: tuple[str, ...] = ()
    start_time: float | None = None
    end_time: float | None = None
    heading_path: tuple[str, ...] = ()
