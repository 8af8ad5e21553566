"""IAM statements scoped to named resources, shared by the functions that call the same services."""

from __future__ import annotations

from aws_cdk import Stack
from aws_cdk import aws_iam as iam
from aws_cdk import aws_lambda as lambda_
from aws_cdk import aws_s3 as s3
from constructs import Construct

from infra.config import StageConfig
from infra.nag import acknowledge, logical_id

# Cross-Region inference profiles are named "<geography>.<model id>" (us.anthropic.claude-..., global.anthropic....):
# the caller names the profile in its own region, Bedrock runs the model in one of the profile's destination regions.
INFERENCE_PROFILE_GEOGRAPHIES = frozenset({"us", "us-gov", "eu", "apac", "jp", "au", "ca", "global"})


def inference_profile_model(model_id: str) -> str | None:
    """The foundation model behind a cross-Region inference profile id, None for a plain model id."""
    geography, _, model = model_id.partition(".")
    return model if geography in INFERENCE_PROFILE_GEOGRAPHIES and "." in model else None


def bedrock_invoke_statements(scope: Construct, model_id: str) -> list[iam.PolicyStatement]:
    """``bedrock:InvokeModel`` (what InvokeModel and Converse are authorized as) on ``model_id`` and nothing more.

    A model id: that foundation model in this region. An inference profile id: the profile, and its foundation model
    in the regions the profile routes to (any region; a global profile's model also by its region-less ARN), only
    when called through that profile (``bedrock:InferenceProfileArn``).
    """
    stack = Stack.of(scope)
    model = inference_profile_model(model_id)
    if model is None:
        return [
            iam.PolicyStatement(
                actions=["bedrock:InvokeModel"],
                resources=[f"arn:{stack.partition}:bedrock:{stack.region}::foundation-model/{model_id}"],
            )
        ]
    profile = f"arn:{stack.partition}:bedrock:{stack.region}:{stack.account}:inference-profile/{model_id}"
    models = [f"arn:{stack.partition}:bedrock:*::foundation-model/{model}"]
    if model_id.startswith("global."):
        models.append(f"arn:{stack.partition}:bedrock:::foundation-model/{model}")
    return [
        iam.PolicyStatement(actions=["bedrock:InvokeModel"], resources=[profile]),
        iam.PolicyStatement(
            actions=["bedrock:InvokeModel"],
            resources=models,
            conditions={"StringEquals": {"bedrock:InferenceProfileArn": profile}},
        ),
    ]


def grant_embedding_and_llm(scope: Construct, grantee: iam.IGrantable, config: StageConfig, *, chat_model: bool) -> None:
    """Bedrock InvokeModel on the configured embedding models, and with ``chat_model`` on the chat model (or their
    inference profiles); the OpenAI key's secret by name."""
    models = []
    if config.embedding_provider == "bedrock":
        models.append(config.embedding_model)
        if config.reembed_target_model != config.embedding_model:  # embedded in once the database switched to it
            models.append(config.reembed_target_model)
    if chat_model and config.llm_provider == "bedrock":  # Converse is authorized as InvokeModel on the model
        models.append(config.bedrock_chat_model)
    for model_id in models:
        for statement in bedrock_invoke_statements(scope, model_id):
            grantee.grant_principal.add_to_principal_policy(statement)
        model = inference_profile_model(model_id)
        if model is not None and isinstance(grantee.grant_principal, Construct):  # the role and its policies
            acknowledge(
                grantee.grant_principal,
                f"AwsSolutions-IAM5[Resource::arn:<AWS::Partition>:bedrock:*::foundation-model/{model}]",
                f"the inference profile {model_id} runs {model} in whichever of its destination regions Bedrock picks; "
                "the grant holds only through that profile (condition bedrock:InferenceProfileArn)",
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


def grant_bedrock_rerank(scope: Construct, grantee: iam.IGrantable, config: StageConfig) -> None:
    """Bedrock's Rerank API with the configured rerank model of this region, when the reranker is Bedrock's.

    Rerank is authorized twice: ``bedrock:Rerank``, an action without resource types (it is granted on ``*`` or not
    at all), and ``bedrock:InvokeModel`` on the rerank model, which is what limits the grant to that one model.
    """
    if not config.uses_bedrock_rerank:
        return
    stack = Stack.of(scope)
    model = f"arn:{stack.partition}:bedrock:{stack.region}::foundation-model/{config.bedrock_rerank_model}"
    grantee.grant_principal.add_to_principal_policy(iam.PolicyStatement(actions=["bedrock:Rerank"], resources=["*"]))
    grantee.grant_principal.add_to_principal_policy(iam.PolicyStatement(actions=["bedrock:InvokeModel"], resources=[model]))
    if isinstance(grantee.grant_principal, Construct):
        acknowledge(
            grantee.grant_principal,
            "AwsSolutions-IAM5[Resource::*]",
            "Lambda's VPC network interface actions, X-Ray's PutTraceSegments/PutTelemetryRecords and bedrock:Rerank "
            "support no resource-level scoping (Rerank's model is limited by bedrock:InvokeModel on that model's ARN); "
            "every other statement of this role names its resources",
        )


def grant_presigned_uploads(function: lambda_.Function, bucket: s3.IBucket, prefix: str) -> None:
    """``s3:PutObject`` under ``prefix`` of ``bucket``, nothing else: what the URLs the function presigns may do.

    A presigned URL carries its signer's permissions, so this is the upper bound of every upload URL; the function
    narrows each one to the caller's own ``tenants/<tenant>/projects/<project>/`` key (the bucket encrypts with
    S3-managed keys: no KMS permission is needed).
    """
    function.add_to_role_policy(iam.PolicyStatement(actions=["s3:PutObject"], resources=[bucket.arn_for_objects(f"{prefix}*")]))
    role = function.role
    assert role is not None  # app_function gives every function its execution role
    acknowledge(
        role,
        f"AwsSolutions-IAM5[Resource::<{logical_id(bucket)}.Arn>/{prefix}*]",
        f"upload URLs for any tenant's key under {prefix} (the function picks the caller's own tenant, verified by the "
        "API's authorizer, never from the request); PutObject only, this bucket only",
    )
