"""What the speech services' JSON parsers share: how a format is recognised and named, and
validation errors that say which format was expected and where the file departs from it."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, TypeVar

from pydantic import BaseModel, ConfigDict, ValidationError

from rag.errors import ParseError
from rag.parsing.model import ParsedDocument

MAX_REPORTED_ERRORS = 3
Model = TypeVar("Model", bound=BaseModel)


class ServiceModel(BaseModel):
    """A part of a service's output: the fields a parser reads; the rest (confidences, ids) ignored."""

    model_config = ConfigDict(extra="ignore")


@dataclass(frozen=True)
class JsonFormat:
    label: str  # "Amazon Transcribe"
    shape: str  # the keys that make it recognisable, as an error names them
    matches: Callable[[dict[str, Any]], bool]  # judged before validation (content detection)
    parse: Callable[[dict[str, Any], str], ParsedDocument]

    def describe(self) -> str:
        return f"{self.label} ({self.shape})"


def validated(model: type[Model], value: dict[str, Any], name: str, label: str) -> Model:
    """``model`` of ``value``; ParseError naming ``label`` and the first problems otherwise."""
    try:
        return model.model_validate(value)
    except ValidationError as exc:
        raise ParseError(f"{name}: expected {label}'s JSON output; {problems(exc)}") from exc


def problems(exc: ValidationError) -> str:
    """``results.items[3].start_time: Input should be a valid number`` for the first few problems."""
    found = [f"{_path(error['loc']) or 'top level'}: {error['msg']}" for error in exc.errors()[:MAX_REPORTED_ERRORS]]
    more = exc.error_count() - len(found)
    return "; ".join(found) + (f" (and {more} more)" if more > 0 else "")


def _path(loc: tuple[int | str, ...]) -> str:
    path = ""
    for part in loc:
        path += f"[{part}]" if isinstance(part, int) else (f".{part}" if path else str(part))
    return path
