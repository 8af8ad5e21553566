"""The Bedrock reranker in AWS: the query function alone may call Rerank with the configured model, over an endpoint."""

from __future__ import annotations

from typing import Any

import pytest

from infra.config import StageConfig
from tests.infra.conftest import Synthesized, resolve_strings, synthesize
from tests.infra.test_security import UNSCOPABLE_ACTIONS, as_list, function_named

RERANK_ACTIONS = {"bedrock:Rerank"}


def query_function(result: Synthesized) -> dict[str, Any]:
    return function_named(result, "handler.lambda_handler", "HTTP API")


def role_statements(result: Synthesized) -> dict[str, list[dict[str, Any]]]:
    """Each role's Allow statements (its policies' and inline), by the role's logical id."""
    by_role: dict[str, list[dict[str, Any]]] = {}
    for policy in result.resources("AWS::IAM::Policy").values():
        for role in policy["Properties"].get("Roles", []):
            by_role.setdefault(role["Ref"], []).extend(policy["Properties"]["PolicyDocument"]["Statement"])
    for name, role in result.resources("AWS::IAM::Role").items():
        for inline in role["Properties"].get("Policies", []):
            by_role.setdefault(name, []).extend(inline["PolicyDocument"]["Statement"])
    return by_role


def rerank_grants(result: Synthesized) -> dict[str, list[tuple[str, set[str]]]]:
    """Per role: its statements that name bedrock:Rerank or a rerank model, as (action, resources)."""
    grants: dict[str, list[tuple[str, set[str]]]] = {}
    for role, statements in role_statements(result).items():
        for s in statements:
            resources = {resolve_strings(r) for r in as_list(s["Resource"])}
            for action in as_list(s["Action"]):
                if action == "bedrock:Rerank" or any("rerank" in r for r in resources):
                    grants.setdefault(role, []).append((action, resources))
    return grants


def endpoint_services(result: Synthesized) -> list[str]:
    return [resolve_strings(e["Properties"]["ServiceName"]) for e in result.resources("AWS::EC2::VPCEndpoint").values()]


@pytest.fixture(scope="module")
def bedrock_reranker(tmp_path_factory: pytest.TempPathFactory) -> Synthesized:
    return synthesize("dev", tmp_path_factory.mktemp("cdk-rerank"), {"reranker": "bedrock"})


def test_the_query_function_alone_may_rerank_with_the_configured_model(bedrock_reranker: Synthesized) -> None:
    role = query_function(bedrock_reranker)["Role"]["Fn::GetAtt"][0]
    model = "arn:<AWS::Partition>:bedrock:<AWS::Region>::foundation-model/cohere.rerank-v3-5:0"

    assert rerank_grants(bedrock_reranker) == {
        role: [("bedrock:Rerank", {"*"}), ("bedrock:InvokeModel", {model})],
    }
    variables = query_function(bedrock_reranker)["Environment"]["Variables"]
    assert (variables["RAG_RERANKER"], variables["RAG_BEDROCK_RERANK_MODEL"]) == ("bedrock", "cohere.rerank-v3-5:0")


def test_rerank_is_the_only_action_added_on_every_resource_and_cdk_nag_knows_why(bedrock_reranker: Synthesized) -> None:
    for role, statements in role_statements(bedrock_reranker).items():
        for s in statements:
            if s["Effect"] == "Allow" and "*" in as_list(s["Resource"]):
                assert set(as_list(s["Action"])) <= UNSCOPABLE_ACTIONS | RERANK_ACTIONS, (role, s)
    [plugin] = bedrock_reranker.validation_report["pluginReports"]
    assert plugin["violations"] == []
    wildcard = [
        f for f in plugin["suppressedViolations"]
        if f["acknowledgedId"].endswith("AwsSolutions-IAM5[Resource::*]") and "Query" in f["acknowledgedAt"]
    ]  # fmt: skip
    assert wildcard and all("bedrock:Rerank" in f["reason"] for f in wildcard), wildcard


def test_rerank_is_reached_through_its_own_vpc_endpoint(bedrock_reranker: Synthesized) -> None:
    # The functions' subnets have no route out (no NAT without OpenAI): Rerank is bedrock-agent-runtime's.
    assert any(s.endswith(".bedrock-agent-runtime") for s in endpoint_services(bedrock_reranker))


def test_without_the_bedrock_reranker_nothing_may_rerank(dev: Synthesized, prod: Synthesized) -> None:
    for result in (dev, prod):
        assert rerank_grants(result) == {}
        assert not any("bedrock-agent-runtime" in s for s in endpoint_services(result))
        assert query_function(result)["Environment"]["Variables"]["RAG_RERANKER"] == "none"
        assert "RAG_BEDROCK_RERANK_MODEL" not in query_function(result)["Environment"]["Variables"]


def test_amazon_rerank_is_granted_by_its_own_arn(tmp_path) -> None:
    result = synthesize("prod", tmp_path, {"reranker": "bedrock", "bedrock_rerank_model": "amazon.rerank-v1:0"})

    [(role, grants)] = rerank_grants(result).items()
    assert role == query_function(result)["Role"]["Fn::GetAtt"][0]
    assert grants == [
        ("bedrock:Rerank", {"*"}),
        ("bedrock:InvokeModel", {"arn:<AWS::Partition>:bedrock:<AWS::Region>::foundation-model/amazon.rerank-v1:0"}),
    ]


@pytest.mark.parametrize(
    ("fields", "message"),
    [
        ({"reranker": "cohere"}, "reranker must be one of"),
        ({"reranker": "bedrock", "bedrock_rerank_model": "cohere.rerank-v3-0:0"}, "bedrock_rerank_model must be one of"),
        ({"reranker": "llm"}, "needs llm_provider openai"),
    ],
)
def test_a_reranker_setting_that_cannot_work_is_refused(fields: dict[str, str], message: str) -> None:
    with pytest.raises(ValueError, match=message):
        StageConfig(name="x", **fields)  # type: ignore[arg-type]
