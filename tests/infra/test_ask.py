"""/v1/ask and /mcp in AWS: routes, a time limit inside API Gateway's 30 s, the model's key and permissions."""

from __future__ import annotations

import pytest

from infra.config import StageConfig
from tests.infra.conftest import Synthesized, resolve_strings, synthesize
from tests.infra.test_security import as_list, function_named, statements


def query_function(result: Synthesized) -> dict:
    return function_named(result, "handler.lambda_handler", "HTTP API")


def test_the_query_function_answers_within_api_gateways_limit(stage: Synthesized) -> None:
    function = query_function(stage)
    environment = function["Environment"]["Variables"]
    assert function["Timeout"] == 29
    assert environment["RAG_ASK_TIMEOUT_SECONDS"] == "24"
    assert environment["RAG_LLM_PROVIDER"] == stage.config.llm_provider


def test_in_prod_the_models_key_comes_from_secrets_manager_by_name(prod: Synthesized) -> None:
    environment = query_function(prod)["Environment"]["Variables"]
    assert (environment["RAG_LLM_PROVIDER"], environment["RAG_OPENAI_API_KEY_SECRET"]) == (
        "openai",
        "meeting-rag/prod/openai-api-key",
    )
    assert "OPENAI_API_KEY" not in environment
    secret_reads = [
        resolve_strings(resource)
        for _, s in statements(prod) if "secretsmanager:GetSecretValue" in as_list(s["Action"])
        for resource in as_list(s["Resource"])
    ]  # fmt: skip
    assert any(r.endswith(":secret:meeting-rag/prod/openai-api-key-??????") for r in secret_reads)


@pytest.mark.parametrize("seconds", [0, 27, 40])
def test_an_ask_timeout_that_does_not_fit_is_refused(seconds: int) -> None:
    with pytest.raises(ValueError, match="ask_timeout_seconds"):
        StageConfig(name="x", ask_timeout_seconds=seconds)


def test_bedrock_as_the_chat_model_grants_converse_on_that_model_only(tmp_path) -> None:
    result = synthesize("dev", tmp_path, {"llm_provider": "bedrock"})

    environment = query_function(result)["Environment"]["Variables"]
    assert environment["RAG_LLM_PROVIDER"] == "bedrock"
    assert environment["RAG_BEDROCK_CHAT_MODEL"] == "anthropic.claude-3-5-haiku-20241022-v1:0"
    invoke = {
        resolve_strings(resource)
        for _, s in statements(result) if "bedrock:InvokeModel" in as_list(s["Action"])
        for resource in as_list(s["Resource"])
    }  # fmt: skip
    assert {r.rsplit("/", 1)[1] for r in invoke} == {"anthropic.claude-3-5-haiku-20241022-v1:0", result.config.embedding_model}
    endpoints = [resolve_strings(e["Properties"]["ServiceName"]) for e in result.resources("AWS::EC2::VPCEndpoint").values()]
    assert any("bedrock-runtime" in e for e in endpoints)
