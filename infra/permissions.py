"""IAM statements scoped to named resources, shared by the functions that call the same services."""

from __future__ import annotations

from aws_cdk import Stack
from aws_cdk import aws_iam as iam
from constructs import Construct

from infra.config import StageConfig


def grant_embedding_and_llm(scope: Construct, grantee: iam.IGrantable, config: StageConfig) -> None:
    """Bedrock InvokeModel on the one configured model; the OpenAI key's secret by name."""
    stack = Stack.of(scope)
    if config.embedding_provider == "bedrock":
        grantee.grant_principal.add_to_principal_policy(
            iam.PolicyStatement(
                actions=["bedrock:InvokeModel"],
                resources=[f"arn:{stack.partition}:bedrock:{stack.region}::foundation-model/{config.embedding_model}"],
            )
        )
    if config.openai_api_key_secret_name:
        grantee.grant_principal.add_to_principal_policy(
            iam.PolicyStatement(
                actions=["secretsmanager:GetSecretValue"],
                resources=[openai_secret_arn(scope, config)],
            )
        )


def openai_secret_arn(scope: Construct, config: StageConfig) -> str:
    """A secret referenced by name: Secrets Manager appends six random characters to its ARN."""
    stack = Stack.of(scope)
    return (
        f"arn:{stack.partition}:secretsmanager:{stack.region}:{stack.account}:secret:{config.openai_api_key_secret_name}-??????"
    )
