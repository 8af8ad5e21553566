"""One typed configuration object per stage; ``cdk -c field=value`` overrides a field.

Secrets are referenced by Secrets Manager NAME only: no key ever sits in context,
in the template or in a Lambda environment value.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Literal, get_args

from infra.api_access import DEFAULT_AUDIENCE, DEFAULT_TENANT_CLAIM, PLACEHOLDER_ISSUER, WebAuth, check_api_access
from infra.db_capacity import DatabaseEngine, check_aurora, max_connections_ceiling

EmbeddingProvider = Literal["bedrock", "openai"]
LlmProvider = Literal["none", "openai", "bedrock"]  # bedrock: /v1/ask only (the backfill stays offline)
# The query function's second judge of search results: the OpenAI chat model, or Bedrock's Rerank API.
Reranker = Literal["none", "llm", "bedrock"]
# Bedrock's rerank models (rag.config.BedrockRerankModel): Cohere Rerank 3.5 is offered in every region that offers
# Rerank (us-west-2, us-east-1, ca-central-1, eu-central-1, ap-northeast-1), Amazon Rerank 1.0 in all but us-east-1.
BedrockRerankModel = Literal["cohere.rerank-v3-5:0", "amazon.rerank-v1:0"]

# Titan Text Embeddings V2 offers these output sizes; OpenAI's text-embedding-3 models can shorten to any size.
TITAN_V2_DIMENSIONS = (256, 512, 1024)
# Lambda's SQS event source accepts a maximum concurrency of 2..1000.
SQS_MAX_CONCURRENCY_RANGE = (2, 1000)
# Tenant ids have the project ids' charset: a key prefix and an IAM resource, with no IAM wildcard (* ?) or "/".
TENANT_ID_PATTERN = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,127}$")
# Who may assume a tenant's uploader role: an IAM role, user or account root (any partition).
PRINCIPAL_ARN_PATTERN = re.compile(r"^arn:aws[a-z-]*:iam::[0-9]{12}:(root|role/\S+|user/\S+)$")
# SQS accepts a redrive policy's maxReceiveCount within 1..1000.
MAX_RECEIVE_COUNT_RANGE = (1, 1000)

# --- capacity (infra/README.md, "Capacity"; database ceilings in infra/db_capacity.py) ---------------------
# Connections of max_connections left outside the proxy's pool: PostgreSQL's superuser_reserved_connections (3),
# RDS's rds.rds_superuser_reserved_connections (2), the migrator (1), the two secret rotations (2), operators (2).
DB_ADMIN_HEADROOM = 10
# Functions that hold a proxy connection each while warm, besides query and ingest: the backfill stages.
BACKFILL_FUNCTIONS = 3  # segment, embed, extract (constructs/backfill_state_machine.py)
# Lambda's default account quota, and what it must keep unreserved (ReservedConcurrentExecutions is refused below).
LAMBDA_ACCOUNT_CONCURRENCY = 1000
LAMBDA_UNRESERVED_MINIMUM = 100


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
    # Moving the corpus to another model (docs/reembedding.md): Titan V2 at this size (or reembed_model), through
    # Bedrock's batch inference. Every function embeds in it once the database has switched.
    reembed_model: str | None = None
    reembed_dimension: int | None = None
    llm_provider: LlmProvider = "none"
    llm_model: str = "gpt-4o-mini"
    # The backfill's and /v1/ask's model with llm_provider bedrock: a model id, or a cross-Region inference profile id
    # (us.anthropic...).
    bedrock_chat_model: str = "anthropic.claude-3-5-haiku-20241022-v1:0"
    openai_api_key_secret_name: str | None = None  # Secrets Manager name, needed when OpenAI is used
    reranker: Reranker = "none"  # llm needs llm_provider openai; bedrock: the query function calls Rerank
    bedrock_rerank_model: BedrockRerankModel = "cohere.rerank-v3-5:0"  # in the stack's region

    # --- database ---------------------------------------------------------------------
    # rds: one RDS for PostgreSQL instance; aurora: Aurora PostgreSQL Serverless v2, a writer and aurora_readers readers
    # (infra/README.md, "Aurora"); db_instance_class and the storage fields apply to rds only.
    database: DatabaseEngine = "rds"
    aurora_readers: int = 1
    aurora_min_acu: float = 0.5  # 0: instances pause when idle (auto-pause)
    aurora_max_acu: float = 4.0  # sizes max_connections too (db_capacity.aurora_default_max_connections)
    db_instance_class: str = "t4g.micro"
    db_allocated_storage_gb: int = 20
    db_max_allocated_storage_gb: int = 100
    db_backup_retention_days: int = 7
    db_multi_az: bool = False
    db_deletion_protection: bool = False
    db_secret_rotation_days: int = 30
    db_monitoring_interval_seconds: int = 0  # RDS Enhanced Monitoring (OS metrics: memory, swap, processes); 0 = off

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
    ask_timeout_seconds: int = 24  # /v1/ask's own limit (504 past it): inside the function's, with room to answer
    jwt_issuer: str = PLACEHOLDER_ISSUER  # set per deployment: -c jwt_issuer=https://...
    jwt_audience: tuple[str, ...] = DEFAULT_AUDIENCE
    tenant_claim: str = DEFAULT_TENANT_CLAIM
    iam_tenants: Mapping[str, str] = field(default_factory=dict)  # IAM principal ARN -> tenant (service callers)
    cors_origins: tuple[str, ...] = ()
    api_throttle_rate: int = 50
    api_throttle_burst: int = 100
    # The web page's sign-in (infra/api_access.py): a Cognito user pool made here, your OIDC provider, or none.
    web_auth: WebAuth = "off"
    web_oidc: Mapping[str, str] = field(default_factory=dict)  # oidc: -c web_oidc='{"client_id": ..., ...}'
    web_domain_prefix: str = ""  # cognito: the hosted UI's <prefix>.auth.<region>.amazoncognito.com (default below)

    # --- backfill ---------------------------------------------------------------------
    backfill_schedule_minutes: int = 60
    backfill_schedule_enabled: bool = False
    backfill_batch_size: int = 10
    backfill_max_iterations: int = 100  # per stage and execution, at most 1000 (the state machine rejects more)
    backfill_memory_mb: int = 1024
    backfill_timeout_seconds: int = 600
    # A batch that found every remaining document held by another execution: wait this long, then try again
    # (3 such batches in a row end the stage for this execution: the other one finishes those documents).
    backfill_idle_wait_seconds: int = 30
    reembed_max_jobs: int = 10  # re-embedding's batch jobs in flight: within Bedrock's concurrent-job quota per model
    reembed_reserved_concurrency: int = 2  # the re-embed Lambda's direct connections, from the admin headroom

    # --- operations -----------------------------------------------------------------------
    log_retention_days: int = 30
    alarm_email: str | None = None
    api_p95_latency_ms: int = 2000
    max_azs: int = 2

    # --- capacity and egress (infra/README.md, "Capacity" and "Network and cost") -------------------
    # Each warm Lambda holds one proxy connection; the proxy may open db_proxy_max_connections_percent of
    # db_max_connections; their sum of reserved concurrency must fit (checked below and in tests/infra/test_capacity.py).
    db_max_connections: int = 80  # set in the parameter group; db.t4g.micro's own default is about 80 (1 GiB)
    db_proxy_max_connections_percent: int = 80  # the rest of max_connections is admin headroom (DB_ADMIN_HEADROOM)
    query_reserved_concurrency: int = 40
    backfill_reserved_concurrency: int = 3  # each stage function: the schedule's execution and two started after ingest
    # (ingest's reserved concurrency is ingest_max_concurrency: the SQS event source never runs more)
    nat_gateway_per_az: bool = False  # with OpenAI: one NAT per AZ (no single point of failure) instead of one

    def __post_init__(self) -> None:
        if self.embedding_provider == "bedrock" and self.embedding_dimension not in TITAN_V2_DIMENSIONS:
            raise ValueError(f"Titan V2 embeddings have {TITAN_V2_DIMENSIONS} dimensions, not {self.embedding_dimension}")
        if self.reembed_model or self.reembed_dimension:
            self._check_reembed_target()
        if self.reranker not in get_args(Reranker):
            raise ValueError(f"reranker must be one of {get_args(Reranker)}, not {self.reranker!r}")
        if self.reranker == "llm" and self.llm_provider != "openai":
            raise ValueError("reranker llm grades with the OpenAI-compatible chat model: it needs llm_provider openai")
        if self.bedrock_rerank_model not in get_args(BedrockRerankModel):
            raise ValueError(
                f"bedrock_rerank_model must be one of {get_args(BedrockRerankModel)}, not {self.bedrock_rerank_model!r}"
            )
        if self.uses_openai and not self.openai_api_key_secret_name:
            raise ValueError(f"stage {self.name}: OpenAI needs openai_api_key_secret_name (a Secrets Manager name)")
        if not 1 <= self.ask_timeout_seconds <= self.query_timeout_seconds - 3 or self.query_timeout_seconds > 29:
            raise ValueError(
                f"ask_timeout_seconds ({self.ask_timeout_seconds}) must leave 3 s of query_timeout_seconds "
                f"({self.query_timeout_seconds}, at most 29: API Gateway ends requests at 30 s)"
            )
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
        check_api_access(self)
        # Backfill bounds (the state machine fails an execution whose input exceeds them) and the alarm address.
        if not 1 <= self.backfill_max_iterations <= 1000:
            raise ValueError(f"backfill_max_iterations must be within 1..1000, not {self.backfill_max_iterations}")
        if not 1 <= self.backfill_batch_size <= 500:
            raise ValueError(f"backfill_batch_size must be within 1..500, not {self.backfill_batch_size}")
        if not 1 <= self.backfill_schedule_minutes <= 1440:
            raise ValueError(
                f"backfill_schedule_minutes must be within 1..1440 (at most daily: the BackfillNotSucceeding alarm's "
                f"warm-up of at most 2 days must see the first run), not {self.backfill_schedule_minutes}"
            )
        if not 0 <= self.backfill_idle_wait_seconds <= 3600:
            raise ValueError(f"backfill_idle_wait_seconds must be within 0..3600, not {self.backfill_idle_wait_seconds}")
        if self.alarm_email is not None and not re.fullmatch(r"[^@\s,]+@[^@\s,]+\.[^@\s,]+", self.alarm_email):
            raise ValueError(f"alarm_email must be one e-mail address (-c alarm_email=ops@example.com), not {self.alarm_email!r}")
        self._check_capacity()

    def _check_capacity(self) -> None:
        check_aurora(self.database, self.aurora_readers, self.aurora_min_acu, self.aurora_max_acu)
        ceiling, source = max_connections_ceiling(self.database, self.db_instance_class, self.aurora_max_acu)
        if not 1 <= self.db_max_connections <= ceiling:
            raise ValueError(
                f"db_max_connections must be within 1..{ceiling} for {source} "
                f"(LEAST(DBInstanceClassMemory/9531392, 5000)), not {self.db_max_connections}"
            )
        if not 1 <= self.db_proxy_max_connections_percent <= 100:
            raise ValueError(
                f"db_proxy_max_connections_percent must be within 1..100, not {self.db_proxy_max_connections_percent}"
            )
        if self.db_max_connections - self.proxy_connection_budget < DB_ADMIN_HEADROOM + self.direct_connections:
            raise ValueError(
                f"the proxy's {self.proxy_connection_budget} of db_max_connections {self.db_max_connections} leave fewer than "
                f"{DB_ADMIN_HEADROOM + self.direct_connections} connections for superusers, the migrator, the rotations, "
                f"an operator and the re-embedding ({self.direct_connections})"
            )
        for name in ("query_reserved_concurrency", "backfill_reserved_concurrency", "reembed_reserved_concurrency"):
            if getattr(self, name) < 1:
                raise ValueError(f"{name} must be at least 1 (0 would stop the function), not {getattr(self, name)}")
        if self.reserved_concurrency > self.proxy_connection_budget:
            raise ValueError(
                f"reserved concurrency {self.reserved_concurrency} (query {self.query_reserved_concurrency} + ingest "
                f"{self.ingest_max_concurrency} + {BACKFILL_FUNCTIONS} x backfill {self.backfill_reserved_concurrency}) exceeds "
                f"the proxy's {self.proxy_connection_budget} connections ({self.db_proxy_max_connections_percent}% of "
                f"db_max_connections {self.db_max_connections}): one connection per warm Lambda"
            )
        if self.reserved_concurrency + self.direct_connections > LAMBDA_ACCOUNT_CONCURRENCY - LAMBDA_UNRESERVED_MINIMUM:
            raise ValueError(
                f"reserved concurrency {self.reserved_concurrency + self.direct_connections} must leave Lambda's {LAMBDA_UNRESERVED_MINIMUM} unreserved "
                f"of the default account quota {LAMBDA_ACCOUNT_CONCURRENCY}"
            )

    @property
    def proxy_connection_budget(self) -> int:
        """Connections the proxy may open to the instance: its percent of max_connections."""
        return self.db_max_connections * self.db_proxy_max_connections_percent // 100

    @property
    def ingest_reserved_concurrency(self) -> int:
        """The SQS event source's maximum concurrency: reserving more would hold connections ingest never uses."""
        return self.ingest_max_concurrency

    @property
    def reserved_concurrency(self) -> int:
        """Reserved concurrency of the functions behind the proxy: at most one connection each."""
        return (
            self.query_reserved_concurrency
            + self.ingest_reserved_concurrency
            + BACKFILL_FUNCTIONS * self.backfill_reserved_concurrency
        )

    @property
    def direct_connections(self) -> int:
        """Connections of the re-embed function, which connects as the schema's owner past the proxy (its DDL)."""
        return self.reembed_reserved_concurrency if self.reembeds_on_bedrock else 0

    def _check_reembed_target(self) -> None:
        if self.embedding_provider != "bedrock":
            raise ValueError("reembed_model/reembed_dimension move the corpus through Bedrock's batch inference:"
                             " they need embedding_provider bedrock (elsewhere: rag reembed)")  # fmt: skip
        if (
            self.reembed_target_model == "amazon.titan-embed-text-v2:0"
            and self.reembed_target_dimension not in TITAN_V2_DIMENSIONS
        ):
            raise ValueError(f"Titan V2 embeddings have {TITAN_V2_DIMENSIONS} dimensions, not {self.reembed_target_dimension}")
        if (self.reembed_target_model, self.reembed_target_dimension) == (self.embedding_model, self.embedding_dimension):
            raise ValueError("the re-embedding target is the embedding model itself: nothing to move")

    @property
    def reembed_target_model(self) -> str:
        return self.reembed_model or self.embedding_model

    @property
    def reembed_target_dimension(self) -> int:
        return self.reembed_dimension or self.embedding_dimension

    @property
    def reembed_environment(self) -> dict[str, str]:
        """What names the target to every function (rag.settings_reembed), or nothing when no move is configured."""
        if not (self.reembed_model or self.reembed_dimension):
            return {}
        return {
            "RAG_REEMBED_PROVIDER": "bedrock",
            "RAG_REEMBED_MODEL": self.reembed_target_model,
            "RAG_REEMBED_DIMENSION": str(self.reembed_target_dimension),
        }

    @property
    def reembeds_on_bedrock(self) -> bool:
        """Whether the stage gets the re-embed machine: Bedrock's batch inference serves Bedrock's models only."""
        return self.embedding_provider == "bedrock"

    @property
    def uses_openai(self) -> bool:
        return self.embedding_provider == "openai" or self.llm_provider == "openai"

    @property
    def uses_bedrock(self) -> bool:
        return self.embedding_provider == "bedrock" or self.llm_provider == "bedrock"

    @property
    def uses_bedrock_rerank(self) -> bool:
        return self.reranker == "bedrock"

    @property
    def needs_internet_egress(self) -> bool:
        """OpenAI is outside AWS: only then do the Lambdas get a NAT gateway."""
        return self.uses_openai

    @property
    def embedding_model_id(self) -> str:
        """What rows record, by the library's own rule (``rag.embedding.model_id``)."""
        from rag.embedding.model_id import embedding_model_id

        return embedding_model_id(self.embedding_provider, self.embedding_model, self.embedding_dimension)
