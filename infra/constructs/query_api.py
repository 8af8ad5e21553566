"""The query API: the query Lambda behind an HTTP API with a JWT authorizer, plus an IAM-authorized twin for services.

Both APIs route the same paths to the same function; the handler takes the tenant from the verified identity
(JWT claim or IAM principal mapped by configuration), never from the request.
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
from constructs import Construct

from infra.config import StageConfig
from infra.defaults import function_code, log_group
from infra.permissions import grant_bedrock_rerank
from infra.resources import AppResources

ROUTE_PATH = "/v1/{proxy+}"  # every route of rag.api lives under /v1 (/v1/ask and /v1/tools included) ...
ROUTE_METHODS = (apigwv2.HttpMethod.GET, apigwv2.HttpMethod.POST)
MCP_PATH = "/mcp"  # ... but MCP's Streamable HTTP endpoint (stateless: POST; GET answers 405 from the SDK)


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
    def __init__(self, scope: Construct, id: str, *, resources: AppResources) -> None:
        super().__init__(scope, id)
        config = resources.config
        self.function = resources.app_function(
            self,
            "Function",
            description="HTTP API: search, context, ask, projects, meetings, tasks, documents, tools, MCP",
            code=function_code("query"),
            handler="handler.lambda_handler",
            service="query",
            memory_mb=config.query_memory_mb,
            timeout=cdk.Duration.seconds(config.query_timeout_seconds),
            environment={
                "RAG_TENANT_CLAIM": config.tenant_claim,
                "RAG_IAM_TENANTS": json.dumps(dict(config.iam_tenants)),
                "RAG_ASK_TIMEOUT_SECONDS": str(config.ask_timeout_seconds),
                "RAG_RERANKER": config.reranker,
                **({"RAG_BEDROCK_RERANK_MODEL": config.bedrock_rerank_model} if config.uses_bedrock_rerank else {}),
            },
            # Bounds the API's database connections (one per warm instance) below the stage throttle: see "Capacity".
            reserved_concurrency=config.query_reserved_concurrency,
        )
        grant_bedrock_rerank(self, self.function, config)  # only the query function searches

        cors = None
        if config.cors_origins:
            cors = apigwv2.CorsPreflightOptions(
                allow_origins=list(config.cors_origins),
                allow_methods=[apigwv2.CorsHttpMethod.GET, apigwv2.CorsHttpMethod.POST],
                allow_headers=["authorization", "content-type"],
                max_age=cdk.Duration.hours(1),
            )
        self.api = self._api(
            "Api",
            config,
            authorizers.HttpJwtAuthorizer("Jwt", config.jwt_issuer, jwt_audience=list(config.jwt_audience)),
            cors=cors,
        )
        # Service callers sign requests with SigV4; grant them execute-api:Invoke on this API.
        self.service_api = self._api("ServiceApi", config, authorizers.HttpIamAuthorizer())
        self.url = self.api.api_endpoint
        self.service_url = self.service_api.api_endpoint

    def _api(
        self,
        id: str,
        config: StageConfig,
        authorizer: apigwv2.IHttpRouteAuthorizer,
        *,
        cors: apigwv2.CorsPreflightOptions | None = None,
    ) -> apigwv2.HttpApi:
        api = apigwv2.HttpApi(
            self, id, api_name=f"meeting-rag-{config.name}-{id}", create_default_stage=False, cors_preflight=cors
        )
        integration = integrations.HttpLambdaIntegration(f"{id}Query", self.function)
        api.add_routes(path=ROUTE_PATH, methods=list(ROUTE_METHODS), integration=integration, authorizer=authorizer)
        api.add_routes(path=MCP_PATH, methods=list(ROUTE_METHODS), integration=integration, authorizer=authorizer)
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
