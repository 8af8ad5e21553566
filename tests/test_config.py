"""rag.config: settings in sections, each field read from the environment variable it always had."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from pydantic import ValidationError

from rag.config import Settings, environment_names

CONFIGURATION_DOC = Path(__file__).resolve().parents[1] / "docs" / "configuration.md"


def test_each_section_field_reads_its_environment_variable(monkeypatch):
    monkeypatch.setenv("DATABASE_URL", "postgresql://u@db.example:5432/rag")
    monkeypatch.setenv("RAG_DATABASE_POOL_SIZE", "7")
    monkeypatch.setenv("RAG_API_STATEMENT_TIMEOUT_MS", "2500")
    monkeypatch.setenv("RAG_EMBEDDING_PROVIDER", "openai")
    monkeypatch.setenv("RAG_EMBEDDING_DIMENSION", "256")
    monkeypatch.setenv("RAG_LLM_MODEL", "gpt-test")
    monkeypatch.setenv("RAG_ASK_TIMEOUT_SECONDS", "9")
    monkeypatch.setenv("RAG_RRF_K", "42")
    monkeypatch.setenv("RAG_MAX_OBJECT_BYTES", "1000")
    monkeypatch.setenv("AWS_REGION", "eu-west-1")
    monkeypatch.setenv("RAG_LOCAL_PG_PORT", "6543")

    settings = Settings()

    assert settings.database.url == "postgresql://u@db.example:5432/rag"
    assert (settings.database.pool_size, settings.database.api_statement_timeout_ms) == (7, 2500)
    assert settings.embedding.model_id == "openai/text-embedding-3-small@256"
    assert (settings.llm.model, settings.ask.timeout_seconds, settings.search.rrf_k) == ("gpt-test", 9.0, 42)
    assert (settings.ingest.max_object_bytes, settings.aws.region, settings.local.pg_port) == (1000, "eu-west-1", 6543)


def test_values_set_in_code_are_named_as_their_environment_variables_and_validated():
    settings = Settings(database_url="postgresql://x", llm_provider="openai", chunk_tokens=64)

    assert (settings.database.url, settings.llm.provider, settings.ingest.chunk_tokens) == ("postgresql://x", "openai", 64)
    changed = settings.with_values(chunk_tokens=32, api_keys="k=acme")
    assert (changed.ingest.chunk_tokens, changed.api.key_tenants, changed.llm.provider) == (32, {"k": "acme"}, "openai")
    assert settings.ingest.chunk_tokens == 64  # a copy: the original is unchanged
    with pytest.raises(ValidationError, match="unknown settings \\['pool_size'\\]"):
        Settings(pool_size=3)  # the field's name inside its section is not its environment name
    with pytest.raises(ValueError, match="unknown setting 'chunk_size'"):
        settings.with_values(chunk_size=3)
    with pytest.raises(ValidationError, match="greater than or equal to 16"):
        settings.with_values(chunk_tokens=2)


def test_every_setting_is_documented_and_every_documented_variable_is_a_setting():
    documented = set()
    for row in CONFIGURATION_DOC.read_text().splitlines():
        if row.startswith("| `"):
            documented |= set(re.findall(r"`((?:RAG_|DATABASE_|OPENAI_|AWS_)[A-Z0-9_]+)`", row.split("|")[1]))
    read = set(environment_names())

    assert documented - read == set(), "documented but not read"
    assert read - documented == set(), "read but not documented in docs/configuration.md"
