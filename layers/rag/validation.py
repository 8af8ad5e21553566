"""The types, limits and validators that requests share: the API's models and the tools' arguments."""

from __future__ import annotations

from typing import Annotated, Any, Literal, get_args

from pydantic import AfterValidator, BaseModel, BeforeValidator, ConfigDict

from rag.knowledge import NAMES

SearchType = Literal[NAMES]  # type: ignore[valid-type]  # the registry's kinds, an enum in the OpenAPI document
ALL_TYPES: tuple[SearchType, ...] = get_args(SearchType)
TaskStatus = Literal["open", "done", "blocked", "cancelled"]
Change = Literal["done", "cancelled", "reassigned", "rescheduled", "closed"]
SearchMode = Literal["semantic", "keyword", "hybrid"]
ProjectId = str

MAX_QUERY_CHARS = 2000
PROJECT_PATTERN = r"^[A-Za-z0-9][A-Za-z0-9._-]{0,127}$"
# Free text in a query parameter: anything PostgreSQL's text can hold (no NUL), checked where a body uses _without_nul.
NO_NUL_PATTERN = r"^[^\x00]*$"


def _without_nul(value: str) -> str:
    if "\x00" in value:  # PostgreSQL text cannot hold NUL: refuse it here, not with a 500
        raise ValueError("contains a NUL character")
    return value


def valid_unicode(value: Any) -> Any:
    """A string that UTF-8 (and so PostgreSQL) can hold: JSON's "\\ud800" escape gives a lone surrogate."""
    if isinstance(value, str):
        try:
            value.encode("utf-8")
        except UnicodeEncodeError as exc:
            raise ValueError(
                f"contains a lone surrogate ({value[exc.start]!r} at character {exc.start}); expected valid Unicode text"
            ) from None
    return value


# Any free text of a request that reaches SQL. The surrogate check runs first: pydantic's own
# check of a constrained str would otherwise answer with a message that does not say why.
PlainText = Annotated[str, BeforeValidator(valid_unicode), AfterValidator(_without_nul)]


def non_blank(value: str, name: str) -> str:
    """Free text with something in it besides white space (and no NUL), stripped."""
    if not value.strip():
        raise ValueError(f"{name} is empty")
    return _without_nul(value).strip()


def expand_types(values: list[str]) -> list[str]:
    """Searched types with "all" spelled out as every type, duplicates dropped (order kept)."""
    expanded = [t for value in values for t in (ALL_TYPES if value == "all" else (value,))]
    return list(dict.fromkeys(expanded))


def valid_project_ids(values: list[str]) -> list[str]:
    """Project ids in the key's alphabet, duplicates dropped (order kept)."""
    import re

    for value in values:
        if not re.match(PROJECT_PATTERN, value):
            raise ValueError(f"project id {value!r} must be 1-128 letters, digits, '.', '_' or '-'")
    return list(dict.fromkeys(values))


class Strict(BaseModel):
    model_config = ConfigDict(extra="forbid")
