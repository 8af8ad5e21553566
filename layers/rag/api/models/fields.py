"""The request field types of the API's models: the library's own (``rag.validation``), shared with the tools."""

from rag.validation import (
    ALL_TYPES,
    MAX_QUERY_CHARS,
    PROJECT_PATTERN,
    Change,
    PlainText,
    SearchMode,
    SearchType,
    Strict,
    TaskStatus,
    non_blank,
    valid_project_ids,
    valid_unicode,
)

__all__ = [
    "ALL_TYPES", "MAX_QUERY_CHARS", "PROJECT_PATTERN", "Change", "PlainText", "SearchMode", "SearchType", "Strict",
    "TaskStatus", "non_blank", "valid_project_ids", "valid_unicode",
]  # fmt: skip
