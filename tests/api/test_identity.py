"""The caller's tenant from the identity API Gateway verified: IAM callers that are role sessions included."""

from __future__ import annotations

import copy
import json
from pathlib import Path

import pytest

from rag.api.identity import Unauthenticated, iam_tenant, tenant_of
from rag_local.lambdas import LocalContext, load_handler_module

# What API Gateway sends a Lambda function running as role `meeting-bot` (an AWS_IAM route, payload 2.0).
ASSUMED_ROLE_EVENT = json.loads(
    (Path(__file__).parents[1] / "fixtures" / "events" / "http_api_iam_assumed_role.json").read_text()
)
ROLE = "arn:aws:iam::111122223333:role/meeting-bot"


def with_caller(arn: str) -> dict:
    event = copy.deepcopy(ASSUMED_ROLE_EVENT)
    event["requestContext"]["authorizer"]["iam"]["userArn"] = arn
    return event


def test_a_role_session_maps_to_its_role() -> None:
    assert tenant_of(ASSUMED_ROLE_EVENT, iam_tenants={ROLE: "acme"}) == "acme"


@pytest.mark.parametrize(
    "role_arn",
    [
        "arn:aws:iam::111122223333:role/service-role/meeting-bot",  # a role with a path: sessions drop the path
        "arn:aws:iam::111122223333:role/aws-reserved/sso.amazonaws.com/meeting-bot",
    ],
)
def test_a_role_with_a_path_maps_its_sessions_too(role_arn: str) -> None:
    assert tenant_of(ASSUMED_ROLE_EVENT, iam_tenants={role_arn: "acme"}) == "acme"


@pytest.mark.parametrize(
    "configured",
    [
        "arn:aws:iam::444455556666:role/meeting-bot",  # same name, another account
        "arn:aws:iam::111122223333:role/meeting-bot-admin",  # another role whose name starts alike
        "arn:aws:iam::111122223333:user/meeting-bot",  # a user, not a role
        "arn:aws-cn:iam::111122223333:role/meeting-bot",  # another partition
    ],
)
def test_a_role_session_never_maps_to_another_principal(configured: str) -> None:
    with pytest.raises(Unauthenticated):
        tenant_of(ASSUMED_ROLE_EVENT, iam_tenants={configured: "acme"})


def test_users_and_exact_session_arns_match_exactly() -> None:
    user = "arn:aws:iam::111122223333:user/ci"
    assert tenant_of(with_caller(user), iam_tenants={user: "acme"}) == "acme"
    session = "arn:aws:sts::111122223333:assumed-role/meeting-bot/one-session"
    tenants = {session: "globex", ROLE: "acme"}
    assert iam_tenant(session, tenants) == "globex"  # the more specific entry wins
    assert iam_tenant("arn:aws:sts::111122223333:assumed-role/meeting-bot/another", tenants) == "acme"
    with pytest.raises(Unauthenticated):
        tenant_of(with_caller("arn:aws:iam::111122223333:user/ci-2"), iam_tenants={user: "acme"})


def test_the_query_api_serves_a_role_session(database_url: str, monkeypatch: pytest.MonkeyPatch) -> None:
    from rag.config import get_settings

    monkeypatch.setenv("RAG_IAM_TENANTS", json.dumps({ROLE: "acme"}))
    get_settings.cache_clear()
    handler = load_handler_module("query").lambda_handler
    response = handler(copy.deepcopy(ASSUMED_ROLE_EVENT), LocalContext(function_name="query"))
    assert response["statusCode"] == 200, response["body"]
    assert "projects" in json.loads(response["body"])
    # the same caller without a mapping is refused
    monkeypatch.setenv("RAG_IAM_TENANTS", json.dumps({"arn:aws:iam::111122223333:role/other": "acme"}))
    get_settings.cache_clear()
    response = handler(copy.deepcopy(ASSUMED_ROLE_EVENT), LocalContext(function_name="query"))
    assert response["statusCode"] == 401
