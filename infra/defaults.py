"""Secure defaults in one place: every construct takes its Lambda, bucket, queue and log settings from here."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import aws_cdk as cdk
from aws_cdk import aws_ec2 as ec2
from aws_cdk import aws_iam as iam
from aws_cdk import aws_lambda as lambda_
from aws_cdk import aws_logs as logs
from aws_cdk import aws_rds as rds
from aws_cdk import aws_s3 as s3
from aws_cdk import aws_sqs as sqs
from aws_cdk import aws_stepfunctions as sfn

from infra.config import StageConfig
from infra.nag import acknowledge

REPO_ROOT = Path(__file__).resolve().parents[1]

# The layer is built for this runtime and architecture (pip --python-version 3.12 --platform manylinux2014_x86_64).
PYTHON_RUNTIME = lambda_.Runtime.PYTHON_3_12
ARCHITECTURE = lambda_.Architecture.X86_64
# RDS for PostgreSQL 17.2+ ships pgvector 0.8 (iterative index scans); RDS Proxy supports PostgreSQL 17.
# The MAJOR version only ("17"): RDS creates the instance on 17's current default minor and AutoMinorVersionUpgrade
# moves it on; a pinned minor (17.5) falls behind the instance after an upgrade, and an update could ask for a downgrade.
POSTGRES_VERSION = rds.PostgresEngineVersion.VER_17
# A non-default port on the instance (cdk-nag RDS11); clients reach it through the proxy on 5432.
DATABASE_PORT = 5433
DATABASE_NAME = "rag"
METRICS_NAMESPACE = "MeetingRag"
# Subnet groups of the VPC (infra/constructs/network.py).
FUNCTION_SUBNETS = "functions"
DATABASE_SUBNETS = "database"

# What Lambda needs to attach functions to the VPC (AWSLambdaVPCAccessExecutionRole without the logs part).
VPC_ENI_ACTIONS = [
    "ec2:CreateNetworkInterface",
    "ec2:DescribeNetworkInterfaces",
    "ec2:DescribeSubnets",
    "ec2:DeleteNetworkInterface",
    "ec2:AssignPrivateIpAddresses",
    "ec2:UnassignPrivateIpAddresses",
]
VPC_CIDR = "10.40.0.0/16"

_RETENTION = {
    1: logs.RetentionDays.ONE_DAY,
    7: logs.RetentionDays.ONE_WEEK,
    14: logs.RetentionDays.TWO_WEEKS,
    30: logs.RetentionDays.ONE_MONTH,
    90: logs.RetentionDays.THREE_MONTHS,
    180: logs.RetentionDays.SIX_MONTHS,
    365: logs.RetentionDays.ONE_YEAR,
}


def log_retention(config: StageConfig) -> logs.RetentionDays:
    if config.log_retention_days not in _RETENTION:
        raise ValueError(f"log_retention_days must be one of {sorted(_RETENTION)}, not {config.log_retention_days}")
    return _RETENTION[config.log_retention_days]


def removal_policy(config: StageConfig) -> cdk.RemovalPolicy:
    """Data outlives the stack where deletion protection is on; dev tears down cleanly."""
    return cdk.RemovalPolicy.RETAIN if config.db_deletion_protection else cdk.RemovalPolicy.DESTROY


def log_group(scope: Any, id: str, config: StageConfig) -> logs.LogGroup:
    return logs.LogGroup(scope, id, retention=log_retention(config), removal_policy=cdk.RemovalPolicy.DESTROY)


def function_code(name: str) -> lambda_.Code:
    """``functions/<name>/`` as the function's code; local bytecode caches stay out of the asset (and its hash)."""
    return lambda_.Code.from_asset(str(REPO_ROOT / "functions" / name), exclude=["__pycache__", "*.pyc", "README.md"])


def powertools_environment(service: str, config: StageConfig) -> dict[str, str]:
    return {
        "POWERTOOLS_SERVICE_NAME": service,
        "POWERTOOLS_LOG_LEVEL": "INFO",
        "POWERTOOLS_METRICS_NAMESPACE": METRICS_NAMESPACE,
        "RAG_EMBEDDING_PROVIDER": config.embedding_provider,
        "RAG_EMBEDDING_MODEL": config.embedding_model,
        "RAG_EMBEDDING_DIMENSION": str(config.embedding_dimension),
        **config.reembed_environment,
        "RAG_LLM_PROVIDER": config.llm_provider,
        "RAG_LLM_MODEL": config.llm_model,
        **({"RAG_BEDROCK_CHAT_MODEL": config.bedrock_chat_model} if config.llm_provider == "bedrock" else {}),
        **({"RAG_OPENAI_API_KEY_SECRET": config.openai_api_key_secret_name} if config.openai_api_key_secret_name else {}),
    }


def python_function(
    scope: Any,
    id: str,
    *,
    config: StageConfig,
    code: lambda_.Code,
    handler: str,
    service: str,
    layer: lambda_.ILayerVersion,
    vpc: ec2.IVpc,
    security_group: ec2.ISecurityGroup,
    memory_mb: int,
    timeout: cdk.Duration,
    environment: dict[str, str] | None = None,
    description: str,
    reserved_concurrency: int | None = None,
) -> lambda_.Function:
    """A Lambda in the private subnets with tracing, its own log group, its own role and the Powertools environment.

    The role carries no AWS managed policy: logs go to the function's own log group only.
    """
    logs_group = log_group(scope, f"{id}Logs", config)
    role = iam.Role(scope, f"{id}Role", assumed_by=iam.ServicePrincipal("lambda.amazonaws.com"), description=description)
    role.add_to_policy(
        iam.PolicyStatement(actions=["logs:CreateLogStream", "logs:PutLogEvents"], resources=[logs_group.log_group_arn])
    )
    role.add_to_policy(iam.PolicyStatement(actions=VPC_ENI_ACTIONS, resources=["*"]))
    acknowledge(
        role,
        "AwsSolutions-IAM5[Resource::*]",
        "Lambda's VPC network interface actions and X-Ray's PutTraceSegments/PutTelemetryRecords "
        "support no resource-level scoping; every other statement of this role names its resources",
    )
    function = lambda_.Function(
        scope,
        id,
        description=description,
        runtime=PYTHON_RUNTIME,
        architecture=ARCHITECTURE,
        code=code,
        handler=handler,
        layers=[layer],
        memory_size=memory_mb,
        timeout=timeout,
        tracing=lambda_.Tracing.ACTIVE,
        log_group=logs_group,
        role=role,
        vpc=vpc,
        vpc_subnets=ec2.SubnetSelection(subnet_group_name=FUNCTION_SUBNETS),
        security_groups=[security_group],
        reserved_concurrent_executions=reserved_concurrency,
        environment={**powertools_environment(service, config), **(environment or {})},
    )
    acknowledge(
        function,
        "AwsSolutions-L1",
        "Python 3.12 on purpose: the layer's binary wheels (psycopg-binary, pydantic-core) are built for CPython 3.12 "
        "(infra/bundling.py); moving on is PYTHON_RUNTIME plus the layer's --python-version",
    )
    return function


def secure_bucket(scope: Any, id: str, config: StageConfig, **overrides: Any) -> s3.Bucket:
    """Encrypted, versioned, private, TLS only; the caller adds access logging."""
    props: dict[str, Any] = {
        "encryption": s3.BucketEncryption.S3_MANAGED,
        "block_public_access": s3.BlockPublicAccess.BLOCK_ALL,
        "enforce_ssl": True,
        "versioned": True,
        "object_ownership": s3.ObjectOwnership.BUCKET_OWNER_ENFORCED,
        "removal_policy": removal_policy(config),
        "auto_delete_objects": removal_policy(config) == cdk.RemovalPolicy.DESTROY,
    }
    props.update(overrides)
    return s3.Bucket(scope, id, **props)


def secure_queue(scope: Any, id: str, **props: Any) -> sqs.Queue:
    """SSE with SQS-managed keys and TLS-only access."""
    return sqs.Queue(scope, id, encryption=sqs.QueueEncryption.SQS_MANAGED, enforce_ssl=True, **props)


def logged_state_machine(scope: Any, start: sfn.IChainable, timeout: cdk.Duration) -> tuple[logs.LogGroup, sfn.StateMachine]:
    """A state machine from ``start`` with X-Ray tracing and every event logged, with its input and output, to a log
    group of its own (a month; the stack may override the retention)."""
    log_group = logs.LogGroup(scope, "Logs", retention=logs.RetentionDays.ONE_MONTH, removal_policy=cdk.RemovalPolicy.DESTROY)
    machine = sfn.StateMachine(
        scope,
        "StateMachine",
        definition_body=sfn.DefinitionBody.from_chainable(start),
        timeout=timeout,
        tracing_enabled=True,
        logs=sfn.LogOptions(destination=log_group, level=sfn.LogLevel.ALL, include_execution_data=True),
    )
    return log_group, machine
