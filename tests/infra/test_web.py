"""The web page's AWS side: sign-in per web_auth mode (the stack's Cognito pool, any OIDC provider, off), the query
function's page settings, and presigned uploads (PutObject under tenants/ only, the bucket's CORS for the page)."""

from __future__ import annotations

import graphlib
import json
from pathlib import Path
from typing import Any

import pytest

from infra.api_access import PLACEHOLDER_ISSUER
from infra.stages import stage_config
from tests.infra.conftest import Synthesized, resolve_strings, synthesize
from tests.infra.test_cfn_lint import IGNORED_CHECKS, lint, template_of
from tests.infra.test_security import PUBLIC_ROUTES, as_list, function_named, statements

QUERY = ("handler.lambda_handler", "HTTP API")
OIDC_CONTEXT = {
    "web_auth": "oidc",
    "jwt_issuer": "https://login.example.org/",
    "jwt_audience": "meeting-rag,page-client",
    "web_oidc": json.dumps(
        {
            "client_id": "page-client",
            "authorization_endpoint": "https://login.example.org/authorize",
            "token_endpoint": "https://tokens.example.org/token",
        }
    ),
}


@pytest.fixture(scope="module")
def oidc(tmp_path_factory: pytest.TempPathFactory) -> Synthesized:
    """dev signing in with an OIDC provider of its own (cdk-nag runs: synthesis fails on a finding)."""
    return synthesize("dev", tmp_path_factory.mktemp("cdk-oidc"), OIDC_CONTEXT)


def query_environment(result: Synthesized) -> dict[str, Any]:
    variables: dict[str, Any] = function_named(result, *QUERY)["Environment"]["Variables"]
    return variables


def jwt_api(result: Synthesized) -> str:
    (name,) = [n for n, a in result.resources("AWS::ApiGatewayV2::Api").items() if a["Properties"]["Name"].endswith("-Api")]
    return name


def documents_bucket(result: Synthesized) -> str:
    (name,) = [n for n in result.resources("AWS::S3::Bucket") if n.startswith("IngestDocuments")]
    return name


# --- sign-in --------------------------------------------------------------------------------------------


def test_cognito_makes_an_admin_only_user_pool_with_an_immutable_tenant_and_mfa(dev: Synthesized) -> None:
    assert dev.config.web_auth == "cognito"
    pool = dev.resource("AWS::Cognito::UserPool")["Properties"]
    assert pool["AdminCreateUserConfig"]["AllowAdminCreateUserOnly"] is True  # no self sign-up
    (tenant,) = [a for a in pool["Schema"] if a["Name"] == "tenant"]
    assert tenant["Mutable"] is False and tenant["AttributeDataType"] == "String"
    assert pool["MfaConfiguration"] == "ON" and pool["EnabledMfas"] == ["SOFTWARE_TOKEN_MFA"]
    assert pool["UserPoolTier"] == "PLUS" and pool["UserPoolAddOns"] == {"AdvancedSecurityMode": "ENFORCED"}
    assert pool["Policies"]["PasswordPolicy"]["MinimumLength"] >= 12
    domain = dev.resource("AWS::Cognito::UserPoolDomain")["Properties"]
    assert resolve_strings(domain["Domain"]) == "meeting-rag-dev-<AWS::AccountId>"


def test_the_page_client_is_public_code_grant_only_and_returns_to_the_page(dev: Synthesized) -> None:
    client = dev.resource("AWS::Cognito::UserPoolClient")["Properties"]
    assert client["GenerateSecret"] is False
    assert client["AllowedOAuthFlows"] == ["code"] and client["AllowedOAuthFlowsUserPoolClient"] is True
    assert client["AllowedOAuthScopes"] == ["openid", "email"]
    assert client["SupportedIdentityProviders"] == ["COGNITO"]
    page = f"<{jwt_api(dev)}>/"  # the API's endpoint (no trailing "/" of its own) + "/"
    # ... and the page on dev's configured origin (a local development server calling the deployed API)
    assert dev.config.cors_origins == ("http://localhost:3000",)
    assert [resolve_strings(u) for u in client["CallbackURLs"]] == [page, "http://localhost:3000/"]
    assert [resolve_strings(u) for u in client["LogoutURLs"]] == [page, "http://localhost:3000/"]
    assert "custom:tenant" in client["ReadAttributes"] and "custom:tenant" not in client["WriteAttributes"]
    assert resolve_strings(dev.data["Outputs"]["WebUrl"]["Value"]) == page


def test_with_cognito_the_jwt_api_accepts_the_pools_id_tokens_for_the_page_client(dev: Synthesized) -> None:
    (pool,) = dev.resources("AWS::Cognito::UserPool")
    (client,) = dev.resources("AWS::Cognito::UserPoolClient")
    jwt = dev.resource("AWS::ApiGatewayV2::Authorizer")["Properties"]["JwtConfiguration"]
    assert resolve_strings(jwt["Issuer"]) == f"https://cognito-idp.<AWS::Region>.<AWS::URLSuffix>/<{pool}>"
    assert jwt["Audience"] == [{"Ref": client}]
    assert query_environment(dev)["RAG_TENANT_CLAIM"] == "custom:tenant"
    assert dev.data["Outputs"]["UserPoolId"]["Value"] == {"Ref": pool}


def test_with_cognito_the_page_gets_the_hosted_uis_endpoints_and_the_client_id(dev: Synthesized) -> None:
    (domain,) = dev.resources("AWS::Cognito::UserPoolDomain")
    (client,) = dev.resources("AWS::Cognito::UserPoolClient")
    environment = query_environment(dev)
    assert environment["RAG_WEB_AUTH"] == "oidc"
    base = f"https://<{domain}>.auth.<AWS::Region>.amazoncognito.com"
    assert json.loads(resolve_strings(environment["RAG_WEB_OIDC"])) == {
        "client_id": f"<{client}>",
        "authorization_endpoint": f"{base}/oauth2/authorize",
        "token_endpoint": f"{base}/oauth2/token",
        "scope": "openid email",
        "logout_endpoint": f"{base}/logout",
    }


def test_with_oidc_the_page_uses_the_configured_provider_and_no_pool_is_made(oidc: Synthesized) -> None:
    assert oidc.resources("AWS::Cognito::UserPool") == {} and "UserPoolId" not in oidc.data["Outputs"]
    jwt = oidc.resource("AWS::ApiGatewayV2::Authorizer")["Properties"]["JwtConfiguration"]
    assert jwt == {"Issuer": "https://login.example.org/", "Audience": ["meeting-rag", "page-client"]}
    environment = query_environment(oidc)
    assert environment["RAG_WEB_AUTH"] == "oidc" and environment["RAG_TENANT_CLAIM"] == "tenant"
    assert json.loads(environment["RAG_WEB_OIDC"]) == {
        "client_id": "page-client",
        "authorization_endpoint": "https://login.example.org/authorize",
        "token_endpoint": "https://tokens.example.org/token",  # its origin goes into the page's CSP connect-src
        "scope": "openid email",
        "logout_endpoint": None,
    }
    (plugin,) = oidc.validation_report["pluginReports"]
    assert plugin["conclusion"] == "success" and plugin["violations"] == []


def test_with_sign_in_off_the_page_says_so_and_the_api_keeps_its_issuer(prod: Synthesized) -> None:
    assert prod.config.web_auth == "off"
    assert prod.resources("AWS::Cognito::UserPool") == {}
    environment = query_environment(prod)
    assert environment["RAG_WEB_AUTH"] == "off" and "RAG_WEB_OIDC" not in environment
    jwt = prod.resource("AWS::ApiGatewayV2::Authorizer")["Properties"]["JwtConfiguration"]
    assert jwt == {"Issuer": prod.config.jwt_issuer, "Audience": list(prod.config.jwt_audience)}


def test_cdk_nag_accepts_exactly_the_public_routes_without_authorization(stage: Synthesized) -> None:
    (plugin,) = stage.validation_report["pluginReports"]
    acknowledged = {f["acknowledgedAt"] for f in plugin["suppressedViolations"] if f["ruleName"] == "AwsSolutions-APIG4"}
    expected = {
        f"{stage.stack.stack_name}/Query/{api}/{key.replace(' ', '').replace('/', '--')}"
        for api, keys in PUBLIC_ROUTES.items()
        for key in keys
    }
    assert acknowledged == expected


def references(value: Any) -> set[str]:
    """Logical ids a template value refers to (Ref, Fn::GetAtt; pseudo parameters left out)."""
    if isinstance(value, dict):
        if "Ref" in value and not str(value["Ref"]).startswith("AWS::"):
            return {value["Ref"]}
        if "Fn::GetAtt" in value:
            return {value["Fn::GetAtt"][0]}
        return set().union(*(references(v) for v in value.values())) if value else set()
    if isinstance(value, list):
        return set().union(*(references(v) for v in value)) if value else set()
    return set()


def dependencies(result: Synthesized) -> dict[str, set[str]]:
    return {
        name: references(resource.get("Properties", {})) | set(as_list(resource.get("DependsOn", [])))
        for name, resource in result.data["Resources"].items()
    }


def test_api_then_client_then_authorizer_then_routes_without_a_cycle(dev: Synthesized, oidc: Synthesized) -> None:
    graph = dependencies(dev)
    (client,) = dev.resources("AWS::Cognito::UserPoolClient")
    (authorizer,) = dev.resources("AWS::ApiGatewayV2::Authorizer")
    bucket = documents_bucket(dev)
    assert jwt_api(dev) in graph[client] and client in graph[authorizer]
    assert all(
        authorizer in graph[n] for n, r in dev.resources("AWS::ApiGatewayV2::Route").items() if "AuthorizerId" in r["Properties"]
    )
    assert jwt_api(dev) in graph[bucket]  # the bucket's CORS names the API's origin; the API refers to neither
    assert graph[jwt_api(dev)] == set()
    for result in (dev, oidc):  # CloudFormation refuses a template with a circular dependency (cfn-lint E3004)
        graphlib.TopologicalSorter(dependencies(result)).prepare()  # raises CycleError naming the cycle
    assert {rule for rule, _ in lint(template_of(oidc))} <= set(IGNORED_CHECKS)


# --- configuration ---------------------------------------------------------------------------------------


def test_oidc_settings_come_from_context_as_json() -> None:
    config = stage_config("prod", {**OIDC_CONTEXT, "alarm_email": "ops@example.com"})
    assert config.web_auth == "oidc" and config.web_oidc["client_id"] == "page-client"
    assert stage_config("prod").web_auth == "off" and stage_config("dev").web_auth == "cognito"


@pytest.mark.parametrize(
    ("overrides", "message"),
    [
        ({"web_auth": "saml"}, "web_auth must be one of"),
        ({**OIDC_CONTEXT, "jwt_issuer": PLACEHOLDER_ISSUER}, "set -c jwt_issuer"),
        ({**OIDC_CONTEXT, "web_oidc": '{"client_id": "page-client"}'}, "web_oidc needs authorization_endpoint, token_endpoint"),
        ({**OIDC_CONTEXT, "web_oidc": OIDC_CONTEXT["web_oidc"].replace("https://tokens", "http://tokens")}, "token_endpoint must be an https URL"),
        ({**OIDC_CONTEXT, "web_oidc": OIDC_CONTEXT["web_oidc"][:-1] + ', "secret": "x"}'}, "fields among"),
        ({**OIDC_CONTEXT, "web_oidc": OIDC_CONTEXT["web_oidc"][:-1] + ', "scope": "email"}'}, "scope must include openid"),
        ({**OIDC_CONTEXT, "jwt_audience": "meeting-rag"}, "add it to jwt_audience"),
        ({"web_auth": "cognito", "jwt_issuer": "https://login.example.org/"}, "leave jwt_issuer unset"),
        ({"web_auth": "cognito", "tenant_claim": "org"}, "leave tenant_claim unset"),
        ({"web_auth": "cognito", "web_domain_prefix": "My_Team"}, "not a Cognito domain prefix"),
        ({"web_auth": "cognito", "web_domain_prefix": "team-cognito"}, "not a Cognito domain prefix"),
        ({"web_auth": "off", "web_domain_prefix": "team"}, "needs web_auth cognito"),
        ({"web_auth": "cognito", "cors_origins": "http://team.example.org"}, "must be an https origin or http://localhost"),
        ({"web_auth": "cognito", "cors_origins": "https://team.example.org/app"}, "without a path"),
        ({"web_auth": "off", "web_oidc": OIDC_CONTEXT["web_oidc"]}, "web_oidc is read with web_auth oidc only"),
    ],
)  # fmt: skip
def test_sign_in_settings_that_cannot_work_are_refused_with_the_reason(overrides: dict[str, str], message: str) -> None:
    with pytest.raises(ValueError, match=message):
        stage_config("dev", overrides)


# --- uploads ---------------------------------------------------------------------------------------------


def test_the_query_function_may_presign_puts_under_tenants_only(stage: Synthesized) -> None:
    bucket = documents_bucket(stage)
    assert query_environment(stage)["RAG_UPLOAD_BUCKET"] == {"Ref": bucket}
    puts = [(name, s) for name, s in statements(stage) if "s3:PutObject" in as_list(s["Action"])]
    # The re-embed function and Bedrock's batch jobs write the manifests bucket only (tests/infra/test_reembed.py).
    puts = [(name, s) for name, s in puts if bucket in json.dumps(s["Resource"])]
    # The query function's is the only grant to write documents (no tenant uploader is configured in these stages).
    assert [(name.startswith("QueryFunctionRole"), s["Effect"], s["Action"]) for name, s in puts] == [
        (True, "Allow", "s3:PutObject")
    ]
    assert [resolve_strings(r) for r in as_list(puts[0][1]["Resource"])] == [f"<{bucket}>/tenants/*"]
    # S3-managed encryption: a presigned PUT needs no KMS key (a KMS bucket would need kms:GenerateDataKey).
    assert "KMSMasterKeyID" not in json.dumps(stage.resources("AWS::S3::Bucket")[bucket]["Properties"]["BucketEncryption"])


def test_the_documents_bucket_lets_the_page_put_files_from_its_origins(stage: Synthesized) -> None:
    cors = stage.resources("AWS::S3::Bucket")[documents_bucket(stage)]["Properties"]["CorsConfiguration"]
    assert cors["CorsRules"] == [
        {
            "AllowedMethods": ["PUT"],
            "AllowedHeaders": ["content-type"],
            "AllowedOrigins": [{"Fn::GetAtt": [jwt_api(stage), "ApiEndpoint"]}, *stage.config.cors_origins],
            "MaxAge": 3600,
        }
    ]
    # The access-log bucket is never a browser's business.
    others = [b for n, b in stage.resources("AWS::S3::Bucket").items() if n != documents_bucket(stage)]
    assert all("CorsConfiguration" not in b["Properties"] for b in others)


def test_the_readme_shows_how_to_create_a_user_with_a_tenant() -> None:
    readme = (Path(__file__).resolve().parents[2] / "infra" / "README.md").read_text()
    assert "aws cognito-idp admin-create-user" in readme
    assert "Name=custom:tenant,Value=" in readme
