"""The ``reembed`` section of ``rag.config.Settings``: moving a corpus to another embedding model (``rag.reembed``)."""

from __future__ import annotations

from pathlib import Path

from pydantic import Field
from pydantic_settings import BaseSettings, SettingsConfigDict

from rag.settings_sections import EmbeddingProvider, EmbeddingRuntime


class ReembedSettings(BaseSettings):
    """Re-embedding a corpus into another model (rag.reembed): Bedrock batch inference on AWS, the local model here."""

    model_config = SettingsConfigDict(env_prefix="RAG_REEMBED_", extra="ignore", populate_by_name=True)

    provider: EmbeddingProvider | None = Field(
        default=None,
        description="the model to move the corpus to (with model and dimension, as RAG_EMBEDDING_* name one); unset: no"
        " move. Searches, ingest and the backfill use it from the moment a run switched the database to it",
    )
    model: str | None = Field(default=None, description="the target provider's model; unset: its default")
    dimension: int | None = Field(default=None, description="the target model's vector size; unset: its own")
    runtime: EmbeddingRuntime | None = Field(
        default=None, description="a local target's runtime (onnx-int8 is a model of its own); unset: RAG_EMBEDDING_RUNTIME"
    )
    bucket: str | None = Field(
        default=None, description="where the manifests (JSONL) and Bedrock's results go; unset: a local directory"
    )
    prefix: str = Field(default="reembed/", description="the key prefix of every run's manifests and results")
    role_arn: str | None = Field(
        default=None, description="the service role Bedrock's batch jobs assume to read the manifests and write results"
    )
    manifest_records: int = Field(
        default=20_000,
        ge=100,
        le=50_000,
        description="records (texts) per manifest, one batch job each: Bedrock takes at most 50,000 a file and needs"
        " at least 100 a job; one manifest's import must fit one Lambda invocation",
    )
    job_timeout_hours: int = Field(default=72, ge=24, le=168, description="a batch job not done by then is failed by Bedrock")
    local_dir: Path | None = Field(
        default=None, description="without a bucket: where manifests and results are written (default .local/reembed)"
    )
