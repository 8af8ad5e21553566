"""The query API: the query Lambda behind an HTTP API with a JWT authorizer, plus an IAM-authorized twin for services.

Both APIs route the same /v1 and /mcp paths to the same function; the handler takes the tenant from the verified
identity (JWT claim or IAM principal mapped by configuration), never from the request. The JWT API also serves the web
page from the same function and origin: the page's files, its /config.json and /health are its only routes without an
authorizer (they hold no tenant data and no secret). The IAM API serves /health only: a browser cannot sign requests
with SigV4, so the page would have nothing to call there.
"""

from __future__ import annotations

import json

import aws_cdk as cdk
import jsii
from aws_cdk import aws_apigateway as apigw
from aws_cdk import aws_apigatewayv2 as apigwv2
from aws_cdk import aws_apigatewayv2_authorizers as authorizers
from aws_cdk import aws_apigatewayv2_integrations as integrations
from aws_cdk import aws_logs as logs
from aws_cdk import aws_s3 as s3
from constructs import Construct

from infra.api_access import COGNITO_TENANT_CLAIM, web_environment
from infra.config import StageConfig
from infra.constructs.ingest import TENANTS_PREFIX
from infra.constructs.web_sign_in import WebSignIn
from infra.defaults import function_code, log_group
from infra.nag import acknowledge
from infra.permissions import grant_bedrock_rerank, grant_presigned_uploads
from infra.resources import AppResources

ROUTE_PATH = "/v1/{proxy+}"  # every route of rag.api lives under /v1 (/v1/ask and /v1/tools included) ...
ROUTE_METHODS = (apigwv2.HttpMethod.GET, apigwv2.HttpMethod.POST)
MCP_PATH = "/mcp"  # ... but MCP's Streamable HTTP endpoint (stateless: POST; GET answers 405 from the SDK)
# Without an authorizer (rag.api's public paths): the page's HTML, assets and sign-in settings, and the health check.
PAGE_PATHS = ("/", "/index.html", "/assets/{proxy+}", "/config.json")
HEALTH_PATH = "/health"
PUBLIC_ROUTE_REASON = (
    "a public GET route of the web page or the health check: static HTML/CSS/JS, the page's sign-in settings (a public "
    "OIDC client id and endpoints) or the database's reachability, never tenant data or a secret; the page signs in "
    "before it calls any /v1 route, and every /v1 and /mcp route keeps its authorizer"
)
# The page PUTs files to presigned URLs of the documents bucket (only the headers the URL signs are sent).
UPLOAD_CORS_HEADERS = ["content-type"]


@jsii.implements(apigwv2.IAccessLogSettings)
class _AccessLogs:
    def __init__(self, group: logs.ILogGroup):
        self._group = group

    @property
    def destination(self) -> apigwv2.IAccessLogDestination:
        return apigwv2.LogGroupLogDestination(self._group)

    @property
    def format(self) -> apigw.AccessLogFormat:
        return apigw.AccessLogFormat.custom(
            json.dumps(
                {
                    "requestId": "$context.requestId",
                    "ip": "$context.identity.sourceIp",
                    "requestTime": "$context.requestTime",
                    "routeKey": "$context.routeKey",
                    "status": "$context.status",
                    "latencyMs": "$context.responseLatency",
                    "integrationError": "$context.integrationErrorMessage",
                    "authorizerError": "$context.authorizer.error",
                    "principal": "$context.identity.userArn",
                }
            )
        )


class QueryApi(Construct):
    def __init__(self, scope: Construct, id: str, *, resources: AppResources, documents: s3.Bucket) -> None:
        super().__init__(scope, id)
        config = resources.config
        cognito = config.web_auth == "cognito"
        self.function = resources.app_function(
            self,
            "Function",
            description="HTTP API: search, context, ask, projects, meetings, tasks, documents, tools, MCP, web page",
            code=function_code("query"),
            handler="handler.lambda_handler",
            service="query",
            memory_mb=config.query_memory_mb,
            timeout=cdk.Duration.seconds(config.query_timeout_seconds),
            chat_model=True,  # /v1/ask, /mcp
            environment={
                "RAG_TENANT_CLAIM": COGNITO_TENANT_CLAIM if cognito else config.tenant_claim,
                "RAG_IAM_TENANTS": json.dumps(dict(config.iam_tenants)),
                "RAG_ASK_TIMEOUT_SECONDS": str(config.ask_timeout_seconds),
                "RAG_RERANKER": config.reranker,
                **({"RAG_BEDROCK_RERANK_MODEL": config.bedrock_rerank_model} if config.uses_bedrock_rerank else {}),
                "RAG_UPLOAD_BUCKET": documents.bucket_name,
                # Aurora with readers: searches read through the proxy's read-only endpoint (docs/replicas.md).
                **resources.database.reader_environment,
            },
            # Bounds the API's database connections (one per warm instance) below the stage throttle: see "Capacity".
            reserved_concurrency=config.query_reserved_concurrency,
        )
        grant_bedrock_rerank(self, self.function, config)  # only the query function searches
        grant_presigned_uploads(self.function, documents, TENANTS_PREFIX)  # uploads go under tenants/<tenant>/

        cors = None
        if config.cors_origins:
            cors = apigwv2.CorsPreflightOptions(
                allow_origins=list(config.cors_origins),
                allow_methods=[apigwv2.CorsHttpMethod.GET, apigwv2.CorsHttpMethod.POST],
                allow_headers=["authorization", "content-type"],
                max_age=cdk.Duration.hours(1),
            )
        self.api = self._api("Api", config, cors=cors)
        self.service_api = self._api("ServiceApi", config)
        self.url = self.api.api_endpoint
        self.service_url = self.service_api.api_endpoint
        self.page_url = f"{self.url}/"  # the endpoint has no trailing "/"

        # API -> user pool client (its callback is the page) -> authorizer -> routes: no cycle.
        self.sign_in = WebSignIn(self, "WebSignIn", config=config, page_url=self.page_url) if cognito else None
        issuer, audience = (
            (self.sign_in.issuer, [self.sign_in.audience]) if self.sign_in else (config.jwt_issuer, list(config.jwt_audience))
        )
        self._routes(self.api, authorizers.HttpJwtAuthorizer("Jwt", issuer, jwt_audience=audience), PAGE_PATHS)
        # Service callers sign requests with SigV4; grant them execute-api:Invoke on this API.
        self._routes(self.service_api, authorizers.HttpIamAuthorizer(), ())
        for name, value in (self.sign_in.environment if self.sign_in else web_environment(config)).items():
            self.function.add_environment(name, value)
        # The page (on this API's origin, or a configured one) PUTs uploads straight to the bucket.
        documents.add_cors_rule(
            allowed_methods=[s3.HttpMethods.PUT],
            allowed_origins=[self.url, *config.cors_origins],
            allowed_headers=UPLOAD_CORS_HEADERS,
            max_age=3600,
        )

    def _routes(self, api: apigwv2.HttpApi, authorizer: apigwv2.IHttpRouteAuthorizer, page: tuple[str, ...]) -> None:
        """/v1 and /mcp behind ``authorizer``; /health and the ``page`` paths (GET) without one."""
        integration = integrations.HttpLambdaIntegration(f"{api.node.id}Query", self.function)
        api.add_routes(path=ROUTE_PATH, methods=list(ROUTE_METHODS), integration=integration, authorizer=authorizer)
        api.add_routes(path=MCP_PATH, methods=list(ROUTE_METHODS), integration=integration, authorizer=authorizer)
        for path in (*page, HEALTH_PATH):
            for route in api.add_routes(
                path=path,
                methods=[apigwv2.HttpMethod.GET],
                integration=integration,
                authorizer=apigwv2.HttpNoneAuthorizer(),
            ):
                acknowledge(route, "AwsSolutions-APIG4", PUBLIC_ROUTE_REASON)

    def _api(self, id: str, config: StageConfig, *, cors: apigwv2.CorsPreflightOptions | None = None) -> apigwv2.HttpApi:
        api = apigwv2.HttpApi(
            self, id, api_name=f"meeting-rag-{config.name}-{id}", create_default_stage=False, cors_preflight=cors
        )
        apigwv2.HttpStage(
            self,
            f"{id}DefaultStage",
            http_api=api,
            stage_name="$default",
            auto_deploy=True,
            throttle=apigwv2.ThrottleSettings(rate_limit=config.api_throttle_rate, burst_limit=config.api_throttle_burst),
            access_log_settings=_AccessLogs(log_group(self, f"{id}AccessLogs", config)),
            detailed_metrics_enabled=True,
        )
        return api
