"""One typed configuration object per stage; ``cdk -c field=value`` overrides a field.

Secrets are referenced by Secrets Manager NAME only: no key ever sits in context,
in the template or in a Lambda environment value.
"""

from __future__ import annotations

import dataclasses
import json
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Literal, get_args, get_type_hints

EmbeddingProvider = Literal["bedrock", "openai"]
LlmProvider = Literal["none", "openai"]

# Titan Text Embeddings V2 offers these output sizes; OpenAI's text-embedding-3 models can shorten to any size.
TITAN_V2_DIMENSIONS = (256, 512, 1024)
# Lambda's SQS event source accepts a maximum concurrency of 2..1000.
SQS_MAX_CONCURRENCY_RANGE = (2, 1000)
# Synthesizes, but no token from a real identity provider matches it: deployments set their own issuer.
PLACEHOLDER_ISSUER = "https://issuer.example.com/"
# Tenant ids have the project ids' charset: a key prefix and an IAM resource, with no IAM wildcard (* ?) or "/".
TENANT_ID_PATTERN = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,127}$")
# Who may assume a tenant's uploader role: an IAM role, user or account root (any partition).
PRINCIPAL_ARN_PATTERN = re.compile(r"^arn:aws[a-z-]*:iam::[0-9]{12}:(root|role/\S+|user/\S+)$")
# SQS accepts a redrive policy's maxReceiveCount within 1..1000.
MAX_RECEIVE_COUNT_RANGE = (1, 1000)


def check_tenant_id(tenant_id: str) -> str:
    """``tenant_id`` if it may name a tenant (``tenants/<tenant_id>/`` in the bucket), else a ValueError saying why."""
    if not isinstance(tenant_id, str) or not TENANT_ID_PATTERN.fullmatch(tenant_id):
        raise ValueError(
            f"tenant id {tenant_id!r} is not valid: 1-128 characters from A-Z a-z 0-9 . _ -, "
            "starting with a letter or digit (the charset of project ids)"
        )
    return tenant_id


@dataclass(frozen=True)
class StageConfig:
    name: str

    # --- embeddings and LLM ---------------------------------------------------------
    embedding_provider: EmbeddingProvider = "bedrock"
    embedding_model: str = "amazon.titan-embed-text-v2:0"
    embedding_dimension: int = 1024
    llm_provider: LlmProvider = "none"
    llm_model: str = "gpt-4o-mini"
    openai_api_key_secret_name: str | None = None  # Secrets Manager name, needed when OpenAI is used

    # --- database ---------------------------------------------------------------------
    db_instance_class: str = "t4g.micro"
    db_allocated_storage_gb: int = 20
    db_max_allocated_storage_gb: int = 100
    db_backup_retention_days: int = 7
    db_multi_az: bool = False
    db_deletion_protection: bool = False
    db_secret_rotation_days: int = 30

    # --- ingest -----------------------------------------------------------------------
    ingest_batch_size: int = 10
    ingest_batching_window_seconds: int = 5
    ingest_max_concurrency: int = 5  # bounds database connections from ingest
    ingest_max_receive_count: int = 5  # receives before the DLQ: see infra/README.md for the retry arithmetic
    ingest_memory_mb: int = 1024
    ingest_timeout_seconds: int = 120
    default_tenant: str = "default"  # the tenant of keys under projects/ (RAG_DEFAULT_TENANT)
    # tenant id -> IAM principal ARN that may assume the tenant's uploader role (writes tenants/<tenant id>/ only).
    # -c tenant_uploaders='{"acme": "arn:aws:iam::123456789012:role/acme-sync"}'
    tenant_uploaders: Mapping[str, str] = field(default_factory=dict)

    # --- query API ----------------------------------------------------------------------
    query_memory_mb: int = 1024
    query_timeout_seconds: int = 29  # HTTP API integrations time out at 30 s
    jwt_issuer: str = PLACEHOLDER_ISSUER  # set per deployment: -c jwt_issuer=https://...
    jwt_audience: tuple[str, ...] = ("meeting-rag",)
    tenant_claim: str = "tenant"
    iam_tenants: Mapping[str, str] = field(default_factory=dict)  # IAM principal ARN -> tenant (service callers)
    cors_origins: tuple[str, ...] = ()
    api_throttle_rate: int = 50
    api_throttle_burst: int = 100

    # --- backfill ---------------------------------------------------------------------
    backfill_schedule_minutes: int = 60
    backfill_schedule_enabled: bool = False
    backfill_batch_size: int = 10
    backfill_max_iterations: int = 100
    backfill_memory_mb: int = 1024
    backfill_timeout_seconds: int = 600

    # --- operations -----------------------------------------------------------------------
    log_retention_days: int = 30
    alarm_email: str | None = None
    api_p95_latency_ms: int = 2000
    max_azs: int = 2

    def __post_init__(self) -> None:
        if self.embedding_provider == "bedrock" and self.embedding_dimension not in TITAN_V2_DIMENSIONS:
            raise ValueError(f"Titan V2 embeddings have {TITAN_V2_DIMENSIONS} dimensions, not {self.embedding_dimension}")
        if self.uses_openai and not self.openai_api_key_secret_name:
            raise ValueError(f"stage {self.name}: OpenAI needs openai_api_key_secret_name (a Secrets Manager name)")
        low, high = SQS_MAX_CONCURRENCY_RANGE
        if not low <= self.ingest_max_concurrency <= high:
            raise ValueError(f"ingest_max_concurrency must be within {low}..{high}, not {self.ingest_max_concurrency}")
        if not 1 <= self.ingest_batch_size <= 10_000:
            raise ValueError(f"ingest_batch_size must be within 1..10000, not {self.ingest_batch_size}")
        if self.ingest_batch_size > 10 and self.ingest_batching_window_seconds < 1:
            raise ValueError("SQS batches above 10 messages need a batching window of at least 1 second")
        low, high = MAX_RECEIVE_COUNT_RANGE
        if not low <= self.ingest_max_receive_count <= high:
            raise ValueError(f"ingest_max_receive_count must be within {low}..{high}, not {self.ingest_max_receive_count}")
        check_tenant_id(self.default_tenant)
        if not isinstance(self.tenant_uploaders, Mapping):
            raise ValueError(f"tenant_uploaders must map tenant ids to principal ARNs, not {self.tenant_uploaders!r}")
        for tenant_id, principal in self.tenant_uploaders.items():
            check_tenant_id(tenant_id)
            if not isinstance(principal, str) or not PRINCIPAL_ARN_PATTERN.fullmatch(principal):
                raise ValueError(
                    f"tenant_uploaders[{tenant_id!r}] must be an IAM role, user or root ARN "
                    f"(arn:aws:iam::<account>:role/<name>), not {principal!r}"
                )
        if not self.jwt_issuer.startswith("https://"):
            raise ValueError(f"jwt_issuer must be an https URL, not {self.jwt_issuer!r}")
        if not self.jwt_audience:
            raise ValueError("jwt_audience needs at least one audience")
        if "*" in self.cors_origins:
            raise ValueError("cors_origins must name origins: '*' would let any site call the API with a user's token")

    @property
    def uses_openai(self) -> bool:
        return self.embedding_provider == "openai" or self.llm_provider == "openai"

    @property
    def needs_internet_egress(self) -> bool:
        """OpenAI is outside AWS: only then do the Lambdas get a NAT gateway."""
        return self.uses_openai

    @property
    def embedding_model_id(self) -> str:
        """What rows record (``provider/model``), as the library's Settings computes it."""
        return f"{self.embedding_provider}/{self.embedding_model}"


STAGES: dict[str, StageConfig] = {
    # A developer account: Bedrock embeddings (no NAT), small and switchable off, schedule off.
    "dev": StageConfig(name="dev", cors_origins=("http://localhost:3000",)),
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
        ingest_max_concurrency=10,
        backfill_schedule_enabled=True,
        log_retention_days=90,
        api_throttle_rate=200,
        api_throttle_burst=400,
        max_azs=2,
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
    if hint is bool:
        if value.lower() not in ("true", "false"):
            raise ValueError(f"{key} must be true or false, not {value!r}")
        return value.lower() == "true"
    if hint is int:
        return int(value)
    if hint == tuple[str, ...]:
        return tuple(item.strip() for item in value.split(",") if item.strip())
    if hint == Mapping[str, str]:
        return json.loads(value)
    if args and type(None) in args and value == "":
        return None
    return value
