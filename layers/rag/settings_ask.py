"""The ``ask`` section of ``rag.config.Settings``: /v1/ask's deadlines, evidence floor and extractive answers."""

from __future__ import annotations

from pydantic import Field
from pydantic_settings import BaseSettings, SettingsConfigDict


class AskSettings(BaseSettings):
    """Answering questions (rag.ask): with a chat model, and extractive without one."""

    model_config = SettingsConfigDict(env_prefix="RAG_ASK_", extra="ignore", populate_by_name=True)

    timeout_seconds: float = Field(
        default=24.0, gt=0, le=29, description="the whole answer, model and tools (API Gateway ends requests at 30 s)"
    )
    model_timeout_seconds: float = Field(
        default=12.0, gt=0, description="one model call; past it (or past the deadline) the answer is extractive"
    )
    min_evidence: float = Field(
        default=0.68,
        ge=-1,
        le=2,
        description="a passage is evidence for an answer when its cosine similarity to the question plus the IDF-weighted"
        " share of the question's terms it holds reaches this (rag.ask.evidence; calibrated with `rag eval --asking`)",
    )
    redact_pii: bool = Field(
        default=False, description="mask e-mail addresses, phone and card numbers in what the model reads and in answers"
    )
    extractive_sentences: int = Field(default=3, ge=1, le=10, description="sentences of an extractive answer")
    answer_type_bonus: float = Field(
        default=0.1,
        ge=0,
        le=1,
        description="added to the similarity of a sentence holding the kind of answer asked"
        " for (a date for when, an amount for how much, a name for who) when choosing an extractive answer's sentences",
    )
    recency_bonus: float = Field(
        default=0.1,
        ge=0,
        le=1,
        description="added, in proportion to how late its meeting is among the candidates', to the similarity of a"
        " sentence when choosing an extractive answer's sentences: of near-equals, the later meeting's says how things stand",
    )
