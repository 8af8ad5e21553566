"""/v1/ask and /mcp in AWS: routes, a time limit inside API Gateway's 30 s, the model's key and permissions."""

from __future__ import annotations

import json
from typing import Any

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


def resolved(value: Any) -> Any:
    """A template value with every string (or Fn::Join of strings and references) as text."""
    if isinstance(value, dict) and not {"Fn::Join", "Ref", "Fn::GetAtt"} & set(value):
        return {key: resolved(item) for key, item in value.items()}
    if isinstance(value, list):
        return [resolved(item) for item in value]
    return resolve_strings(value)


def invoke_grants(result: Synthesized) -> list[tuple[frozenset[str], str]]:
    """Each bedrock:InvokeModel grant as (its resources, its condition as JSON), across every function."""
    return sorted(
        {
            (frozenset(resolve_strings(r) for r in as_list(s["Resource"])), json.dumps(resolved(s.get("Condition", {}))))
            for _, s in statements(result)
            if "bedrock:InvokeModel" in as_list(s["Action"])
        },
        key=lambda grant: sorted(grant[0]),
    )


def test_bedrock_as_the_chat_model_grants_converse_on_that_model_only(tmp_path) -> None:
    result = synthesize("dev", tmp_path, {"llm_provider": "bedrock"})

    environment = query_function(result)["Environment"]["Variables"]
    assert environment["RAG_LLM_PROVIDER"] == "bedrock"
    assert environment["RAG_BEDROCK_CHAT_MODEL"] == "anthropic.claude-3-5-haiku-20241022-v1:0"
    # A model id: the foundation model of this region, nothing else (Converse is authorized as InvokeModel).
    assert invoke_grants(result) == [
        (frozenset({"arn:<AWS::Partition>:bedrock:<AWS::Region>::foundation-model/amazon.titan-embed-text-v2:0"}), "{}"),
        (
            frozenset({"arn:<AWS::Partition>:bedrock:<AWS::Region>::foundation-model/anthropic.claude-3-5-haiku-20241022-v1:0"}),
            "{}",
        ),
    ]
    # Besides InvokeModel, only the re-embed function's batch-job actions (tests/infra/test_reembed.py).
    assert not [
        s
        for name, s in statements(result)
        for a in as_list(s["Action"])
        if a.startswith("bedrock:") and a != "bedrock:InvokeModel" and not name.startswith("ReembedFunctionRole")
    ]
    endpoints = [resolve_strings(e["Properties"]["ServiceName"]) for e in result.resources("AWS::EC2::VPCEndpoint").values()]
    assert any("bedrock-runtime" in e for e in endpoints)
    # The backfill's segment and extract stages call the same model.
    claude = "arn:<AWS::Partition>:bedrock:<AWS::Region>::foundation-model/anthropic.claude-3-5-haiku-20241022-v1:0"
    for stage in ("segment", "extract"):
        environment = function_named(result, f"handler.{stage}_handler")["Environment"]["Variables"]
        assert (environment["RAG_LLM_PROVIDER"], environment["RAG_BEDROCK_CHAT_MODEL"]) == ("bedrock", claude.rpartition("/")[2])
        assert any(
            name.startswith(f"Backfill{stage.capitalize()}FunctionRole")
            and "bedrock:InvokeModel" in as_list(s["Action"])
            and claude in map(resolve_strings, as_list(s["Resource"]))
            for name, s in statements(result)
        ), stage
    # Only the functions that call it: not ingest, the embed stage or re-embedding.
    callers = {name.partition("Function")[0] for name, s in statements(result)
               if claude in map(resolve_strings, as_list(s.get("Resource", [])))}  # fmt: skip
    assert callers == {"Query", "BackfillSegment", "BackfillExtract"}


def test_a_cross_region_inference_profile_grants_the_profile_and_its_model_through_it_only(tmp_path) -> None:
    # Anthropic models are invoked through a us./eu./apac./global. profile in many regions: the call names the
    # profile, and Bedrock runs the model in one of the profile's regions, authorized against that region's model.
    profile_id = "us.anthropic.claude-3-5-haiku-20241022-v1:0"
    result = synthesize("dev", tmp_path, {"llm_provider": "bedrock", "bedrock_chat_model": profile_id})

    assert query_function(result)["Environment"]["Variables"]["RAG_BEDROCK_CHAT_MODEL"] == profile_id
    profile = f"arn:<AWS::Partition>:bedrock:<AWS::Region>:<AWS::AccountId>:inference-profile/{profile_id}"
    through_profile = json.dumps({"StringEquals": {"bedrock:InferenceProfileArn": profile}})
    assert invoke_grants(result) == [
        (
            frozenset({"arn:<AWS::Partition>:bedrock:*::foundation-model/anthropic.claude-3-5-haiku-20241022-v1:0"}),
            through_profile,
        ),
        (frozenset({"arn:<AWS::Partition>:bedrock:<AWS::Region>::foundation-model/amazon.titan-embed-text-v2:0"}), "{}"),
        (frozenset({profile}), "{}"),
    ]
    # cdk-nag's wildcard finding (any destination region) is acknowledged on each function's role, with the reason.
    [plugin] = result.validation_report["pluginReports"]
    assert plugin["violations"] == []
    regions = [f for f in plugin["suppressedViolations"] if "bedrock:*::foundation-model" in f["acknowledgedId"]]
    assert regions and all(f["acknowledgedAt"].endswith("FunctionRole") for f in regions), regions
    assert all("bedrock:InferenceProfileArn" in f["reason"] for f in regions)


@pytest.mark.parametrize(
    ("model_id", "expected"),
    [
        ("anthropic.claude-3-5-haiku-20241022-v1:0", {"arn:aws:bedrock:eu-west-1::foundation-model/anthropic.claude-3-5-haiku-20241022-v1:0"}),
        ("amazon.titan-embed-text-v2:0", {"arn:aws:bedrock:eu-west-1::foundation-model/amazon.titan-embed-text-v2:0"}),
        ("eu.anthropic.claude-3-7-sonnet-20250219-v1:0", {
            "arn:aws:bedrock:eu-west-1:111122223333:inference-profile/eu.anthropic.claude-3-7-sonnet-20250219-v1:0",
            "arn:aws:bedrock:*::foundation-model/anthropic.claude-3-7-sonnet-20250219-v1:0",
        }),
        ("apac.anthropic.claude-3-5-sonnet-20241022-v2:0", {
            "arn:aws:bedrock:eu-west-1:111122223333:inference-profile/apac.anthropic.claude-3-5-sonnet-20241022-v2:0",
            "arn:aws:bedrock:*::foundation-model/anthropic.claude-3-5-sonnet-20241022-v2:0",
        }),
        # A global profile routes to any commercial region and is authorized against the model's region-less ARN too.
        ("global.anthropic.claude-sonnet-4-5-20250929-v1:0", {
            "arn:aws:bedrock:eu-west-1:111122223333:inference-profile/global.anthropic.claude-sonnet-4-5-20250929-v1:0",
            "arn:aws:bedrock:*::foundation-model/anthropic.claude-sonnet-4-5-20250929-v1:0",
            "arn:aws:bedrock:::foundation-model/anthropic.claude-sonnet-4-5-20250929-v1:0",
        }),
    ],
)  # fmt: skip
def test_which_arns_a_model_id_is_granted_on(model_id: str, expected: set[str]) -> None:
    import aws_cdk as cdk

    from infra.permissions import bedrock_invoke_statements

    stack = cdk.Stack(cdk.App(), "Probe", env=cdk.Environment(account="111122223333", region="eu-west-1"))
    # In the partition aws (a reference in the template, resolved by CloudFormation).
    in_aws = [
        json.loads(json.dumps(resolved(stack.resolve(s.to_statement_json()))).replace("<AWS::Partition>", "aws"))
        for s in bedrock_invoke_statements(stack, model_id)
    ]
    assert {r for s in in_aws for r in as_list(s["Resource"])} == expected
    assert all(s["Action"] == "bedrock:InvokeModel" for s in in_aws)
    # A profile's models may be invoked only through that profile; a model id needs no condition.
    profiles = [r for r in expected if ":inference-profile/" in r]
    for s in in_aws:
        on_models = all(":foundation-model/" in r for r in as_list(s["Resource"]))
        through = {"StringEquals": {"bedrock:InferenceProfileArn": profiles[0]}} if profiles and on_models else None
        assert s.get("Condition") == through, s
