"""The named stages (dev, prod) and ``cdk -c field=value`` overrides of their fields (strings converted to each
field's type)."""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Mapping
from typing import Any, get_args, get_type_hints

from infra.config import StageConfig

STAGES: dict[str, StageConfig] = {
    # A developer account: Bedrock embeddings (no NAT), small and switchable off, schedule off.
    # The page signs in with a Cognito user pool the stack makes (no identity provider of your own needed).
    "dev": StageConfig(name="dev", cors_origins=("http://localhost:3000",), web_auth="cognito"),
    # Production: OpenAI embeddings and LLM extraction, Multi-AZ, deletion protection, backfill every hour.
    "prod": StageConfig(
        name="prod",
        embedding_provider="openai",
        embedding_model="text-embedding-3-small",
        embedding_dimension=1536,
        llm_provider="openai",
        llm_model="gpt-4o-mini",
        openai_api_key_secret_name="meeting-rag/prod/openai-api-key",
        db_instance_class="m7g.large",
        db_allocated_storage_gb=50,
        db_max_allocated_storage_gb=500,
        db_backup_retention_days=30,
        db_multi_az=True,
        db_deletion_protection=True,
        db_monitoring_interval_seconds=60,
        ingest_max_concurrency=10,
        backfill_schedule_enabled=True,
        log_retention_days=90,
        api_throttle_rate=200,
        api_throttle_burst=400,
        max_azs=2,
        # capacity and egress: db.m7g.large (8 GiB) defaults to fewer than 901 connections; 80% of 800 = 640 for the proxy
        db_max_connections=800,
        query_reserved_concurrency=100,
        nat_gateway_per_az=True,
    ),
}


def stage_config(name: str, overrides: Mapping[str, Any] | None = None) -> StageConfig:
    """The named stage with context overrides applied (strings from ``-c`` are converted to the field's type)."""
    if name not in STAGES:
        raise ValueError(f"unknown stage {name!r}; known stages: {', '.join(STAGES)}")
    base = STAGES[name]
    hints = get_type_hints(StageConfig)
    known = {f.name for f in dataclasses.fields(StageConfig)} - {"name"}
    changes = {key: _coerce(key, hints[key], value) for key, value in (overrides or {}).items() if key in known}
    return dataclasses.replace(base, **changes)


def _coerce(key: str, hint: Any, value: Any) -> Any:
    if not isinstance(value, str):
        return tuple(value) if isinstance(value, list) else value
    args = get_args(hint)
    if args and type(None) in args:  # an optional field: empty is None, anything else is its type's
        if value == "":
            return None
        inner = [a for a in args if a is not type(None)]
        return _coerce(key, inner[0], value) if len(inner) == 1 else value
    if hint is bool:
        if value.lower() not in ("true", "false"):
            raise ValueError(f"{key} must be true or false, not {value!r}")
        return value.lower() == "true"
    if hint is int:
        return int(value)
    if hint is float:
        return float(value)
    if hint == tuple[str, ...]:
        return tuple(item.strip() for item in value.split(",") if item.strip())
    if hint == Mapping[str, str]:
        return json.loads(value)
    return value
