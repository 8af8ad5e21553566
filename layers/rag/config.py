"""One settings object for every entry point (Lambda handlers, the CLI, tests), in sections.

``settings.database``, ``.api``, ``.search``, ``.embedding``, ``.llm``, ``.ask``, ``.ingest``, ``.web``, ``.aws``
and ``.local`` (``rag.settings_sections``) each read their own environment variables: prefix ``RAG_`` (``DATABASE_URL``
as is), the names the product has always read (docs/configuration.md). The defaults need no AWS account and no API
key: the embedded PostgreSQL, moto, and the local embedding model.

Code and tests that set values directly name them as their environment variables do, lower-cased and without
``RAG_``: ``Settings(database_url=url, llm_provider="none")``, ``settings.with_values(chunk_tokens=32)``.
"""

from __future__ import annotations

from functools import lru_cache
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, model_validator
from pydantic_settings import BaseSettings

from rag.settings_ask import AskSettings
from rag.settings_reembed import ReembedSettings
from rag.settings_sections import (
    DEFAULT_MODELS,
    LOCAL_MODEL_DIMENSIONS,
    REPO_ROOT,
    ApiSettings,
    AwsSettings,
    DatabaseSettings,
    EmbeddingSettings,
    IngestSettings,
    LlmSettings,
    LocalSettings,
    SearchSettings,
    WebSettings,
)

__all__ = ["DEFAULT_MODELS", "LOCAL_MODEL_DIMENSIONS", "REPO_ROOT", "Settings", "environment_names", "get_settings"]


class Settings(BaseModel):
    model_config = ConfigDict(frozen=True)

    database: DatabaseSettings = Field(default_factory=DatabaseSettings)
    api: ApiSettings = Field(default_factory=ApiSettings)
    search: SearchSettings = Field(default_factory=SearchSettings)
    embedding: EmbeddingSettings = Field(default_factory=EmbeddingSettings)
    llm: LlmSettings = Field(default_factory=LlmSettings)
    ask: AskSettings = Field(default_factory=AskSettings)
    ingest: IngestSettings = Field(default_factory=IngestSettings)
    web: WebSettings = Field(default_factory=WebSettings)
    aws: AwsSettings = Field(default_factory=AwsSettings)
    local: LocalSettings = Field(default_factory=LocalSettings)
    reembed: ReembedSettings = Field(default_factory=ReembedSettings)

    @model_validator(mode="before")
    @classmethod
    def _sections_from_environment_names(cls, data: Any) -> Any:
        """Values named as their environment variables (``database_url``) go to their section, read with the rest."""
        if not isinstance(data, dict):
            return data
        flat = {key: value for key, value in data.items() if key not in cls.model_fields}
        unknown = sorted(set(flat) - set(_ENVIRONMENT_NAMES))
        if unknown:
            raise ValueError(f"unknown settings {unknown}: name them as their environment variables do (database_url)")
        sections = {key: value for key, value in data.items() if key in cls.model_fields}
        for section, section_type in _SECTION_TYPES.items():
            given = {
                field: flat[name] for name, (owner, field) in _ENVIRONMENT_NAMES.items() if owner == section and name in flat
            }
            if given:
                sections[section] = section_type(**given)
        return sections

    def with_values(self, **values: Any) -> Settings:
        """A copy with ``values`` (named as their environment variables) changed."""
        sections: dict[str, Any] = {name: getattr(self, name) for name in _SECTION_TYPES}
        for name, value in values.items():
            if name not in _ENVIRONMENT_NAMES:
                raise ValueError(f"unknown setting {name!r}: name it as its environment variable does (database_url)")
            section, field = _ENVIRONMENT_NAMES[name]
            current = sections[section]
            sections[section] = type(current)(**{**current.model_dump(), field: value})  # validated, as from the environment
        return Settings(**sections)


_SECTION_TYPES: dict[str, type[BaseSettings]] = {
    name: field.annotation  # type: ignore[misc]  # every field of Settings is a section class
    for name, field in Settings.model_fields.items()
}


def _environment_name(section_type: type[BaseSettings], field: str) -> str:
    """``database_url`` for DatabaseSettings.url: the field's (first) environment variable, lower-cased, no ``rag_``."""
    info = section_type.model_fields[field]
    alias = info.validation_alias
    if alias is not None:
        name = str(getattr(alias, "choices", [alias])[-1])  # RAG_DATABASE_URL of ("DATABASE_URL", "RAG_DATABASE_URL")
    else:
        name = f"{section_type.model_config.get('env_prefix', '')}{field}"
    return name.lower().removeprefix("rag_")


_ENVIRONMENT_NAMES: dict[str, tuple[str, str]] = {
    _environment_name(section_type, field): (section, field)
    for section, section_type in _SECTION_TYPES.items()
    for field in section_type.model_fields
}


def environment_names() -> list[str]:
    """Every environment variable a setting reads (its first name where it has several)."""
    names = []
    for section_type in _SECTION_TYPES.values():
        for field, info in section_type.model_fields.items():
            alias = info.validation_alias
            choices = getattr(alias, "choices", None)
            names.append(str(choices[0]) if choices else f"{section_type.model_config.get('env_prefix', '')}{field}".upper())
    return names


@lru_cache(maxsize=1)
def get_settings() -> Settings:
    """The process-wide settings (read once per warm Lambda)."""
    return Settings()
