"""Re-embedding on Bedrock's batch inference as the stack deploys it (infra/constructs/reembed.py): the manifests
bucket, the service role Bedrock's jobs assume, the re-embed function's exact permissions, the machine's states, and
the backfill machine's start of it. How the machine behaves is tested by running it in moto
(tests/reembed/test_state_machine.py)."""

from __future__ import annotations

import json
from typing import Any

import pytest

from infra.constructs.reembed import OBJECT_DAYS, PREFIX
from tests.infra.conftest import Synthesized, resolve_strings

JOBS = "arn:<AWS::Partition>:bedrock:<AWS::Region>:<AWS::AccountId>:model-invocation-job/*"
TITAN = "arn:<AWS::Partition>:bedrock:<AWS::Region>::foundation-model/amazon.titan-embed-text-v2:0"


def named(result: Synthesized, type_: str, prefix: str) -> tuple[str, dict[str, Any]]:
    [(name, resource)] = [(n, r) for n, r in result.resources(type_).items() if n.startswith(prefix)]
    return name, resource["Properties"]


def policy_of(result: Synthesized, role: str) -> list[dict[str, Any]]:
    statements = []
    for policy in result.resources("AWS::IAM::Policy").values():
        if {"Ref": role} in policy["Properties"]["Roles"]:
            statements += policy["Properties"]["PolicyDocument"]["Statement"]
    return statements


def as_text(statement: dict[str, Any]) -> tuple[tuple[str, ...], tuple[str, ...]]:
    actions = statement["Action"] if isinstance(statement["Action"], list) else [statement["Action"]]
    resources = statement["Resource"] if isinstance(statement["Resource"], list) else [statement["Resource"]]
    return tuple(actions), tuple(resolve_strings(r) for r in resources)


def machine_definition(result: Synthesized, prefix: str) -> dict[str, Any]:
    _, machine = named(result, "AWS::StepFunctions::StateMachine", prefix)
    return json.loads(resolve_strings(machine["DefinitionString"]))


def test_only_stages_with_bedrock_embeddings_get_the_re_embed_machine(dev: Synthesized, prod: Synthesized) -> None:
    assert dev.config.embedding_provider == "bedrock" and prod.config.embedding_provider == "openai"
    assert [n for n in dev.data["Resources"] if n.startswith("Reembed")]
    assert not [n for n in prod.data["Resources"] if n.startswith("Reembed")]  # batch inference serves Bedrock only
    assert "ReembedStateMachineArn" in dev.data["Outputs"] and "ReembedStateMachineArn" not in prod.data["Outputs"]


def test_the_manifests_bucket_is_private_encrypted_logged_and_expires_its_objects(dev: Synthesized) -> None:
    name, bucket = named(dev, "AWS::S3::Bucket", "ReembedManifests")
    assert bucket["BucketEncryption"]["ServerSideEncryptionConfiguration"][0]["ServerSideEncryptionByDefault"] == {
        "SSEAlgorithm": "AES256"
    }
    assert bucket["PublicAccessBlockConfiguration"] == {
        "BlockPublicAcls": True, "BlockPublicPolicy": True, "IgnorePublicAcls": True, "RestrictPublicBuckets": True
    }  # fmt: skip
    assert "VersioningConfiguration" not in bucket  # working copies under new keys each run (see the construct)
    assert bucket["LifecycleConfiguration"]["Rules"] == [
        {"AbortIncompleteMultipartUpload": {"DaysAfterInitiation": 1}, "ExpirationInDays": OBJECT_DAYS, "Status": "Enabled"}
    ]
    assert OBJECT_DAYS == 30
    access_logs, _ = named(dev, "AWS::S3::Bucket", "IngestAccessLogs")
    assert bucket["LoggingConfiguration"] == {"DestinationBucketName": {"Ref": access_logs}, "LogFilePrefix": "reembed/"}
    [policy] = [
        p["Properties"] for p in dev.resources("AWS::S3::BucketPolicy").values() if p["Properties"]["Bucket"] == {"Ref": name}
    ]
    denies = [s for s in policy["PolicyDocument"]["Statement"] if s["Effect"] == "Deny"]
    assert any(s["Condition"] == {"Bool": {"aws:SecureTransport": "false"}} and s["Action"] == "s3:*" for s in denies)
    # Removed with the stack where the stage's data is (dev), kept where deletion protection is on.
    assert dev.data["Resources"][name]["DeletionPolicy"] == "Delete"


def test_only_bedrock_jobs_of_this_account_assume_the_service_role_and_it_reads_inputs_writes_outputs(dev: Synthesized) -> None:
    role, props = named(dev, "AWS::IAM::Role", "ReembedBatchJobRole")
    [trust] = props["AssumeRolePolicyDocument"]["Statement"]
    assert trust["Principal"] == {"Service": "bedrock.amazonaws.com"} and trust["Action"] == "sts:AssumeRole"
    assert trust["Condition"]["StringEquals"] == {"aws:SourceAccount": {"Ref": "AWS::AccountId"}}
    assert {k: resolve_strings(v) for k, v in trust["Condition"]["ArnLike"].items()} == {"aws:SourceArn": JOBS}
    bucket, _ = named(dev, "AWS::S3::Bucket", "ReembedManifests")
    assert sorted(as_text(s) for s in policy_of(dev, role)) == sorted([
        (("s3:ListBucket",), (f"<{bucket}>",)),
        (("s3:GetObject",), (f"<{bucket}>/{PREFIX}*/input/*",)),
        (("s3:PutObject",), (f"<{bucket}>/{PREFIX}*/output/*",)),
    ])  # fmt: skip
    assert all(s["Effect"] == "Allow" and "Condition" not in s for s in policy_of(dev, role))
    assert PREFIX == "reembed/"


def test_the_re_embed_function_may_run_jobs_of_the_model_as_the_service_role_and_use_its_prefix(dev: Synthesized) -> None:
    name, function = named(dev, "AWS::Lambda::Function", "ReembedFunction")
    assert (function["Handler"], function["Timeout"]) == ("handler.reembed_handler", 900)
    assert function["ReservedConcurrentExecutions"] == dev.config.reembed_reserved_concurrency == 2
    variables = function["Environment"]["Variables"]
    service_role, _ = named(dev, "AWS::IAM::Role", "ReembedBatchJobRole")
    bucket, _ = named(dev, "AWS::S3::Bucket", "ReembedManifests")
    assert variables["RAG_REEMBED_BUCKET"] == {"Ref": bucket}
    assert variables["RAG_REEMBED_ROLE_ARN"] == {"Fn::GetAtt": [service_role, "Arn"]}
    assert variables["RAG_REEMBED_PREFIX"] == PREFIX
    assert variables["RAG_EMBEDDING_MODEL"] == dev.config.embedding_model
    # The schema's owner, directly (its DDL): the admin secret and the database name, no IAM URL through the proxy.
    assert "RAG_DATABASE_IAM_URL" not in variables and variables["RAG_DATABASE_NAME"] == "rag"
    admin = next(name for name in dev.resources("AWS::SecretsManager::SecretTargetAttachment") if "App" not in name)
    assert variables["RAG_DATABASE_SECRET_ARN"] == {"Ref": admin}
    # The backfill stage functions' code, layer and runtime; a security group of its own, allowed to the instance.
    _, stage = named(dev, "AWS::Lambda::Function", "BackfillEmbedFunction")
    for key in ("Code", "Layers", "Runtime", "MemorySize"):
        assert function[key] == stage[key], key
    assert function["VpcConfig"]["SubnetIds"] == stage["VpcConfig"]["SubnetIds"]
    assert function["VpcConfig"]["SecurityGroupIds"] != stage["VpcConfig"]["SecurityGroupIds"]

    role = function["Role"]["Fn::GetAtt"][0]
    statements = {as_text(s): s.get("Condition") for s in policy_of(dev, role)}
    reembed = {k: v for k, v in statements.items() if not k[0][0].startswith(("logs:", "ec2:", "xray:"))}
    assert reembed == {
        (("secretsmanager:GetSecretValue", "secretsmanager:DescribeSecret"), (f"<{admin}>",)): None,
        (("bedrock:InvokeModel",), (TITAN,)): None,  # every app function's: the configured embedding model
        (("bedrock:CreateModelInvocationJob",), (TITAN, JOBS)): None,
        (("bedrock:GetModelInvocationJob", "bedrock:StopModelInvocationJob"), (JOBS,)): None,
        (("iam:PassRole",), (f"<{service_role}>",)): {"StringEquals": {"iam:PassedToService": "bedrock.amazonaws.com"}},
        (("s3:GetObject", "s3:PutObject"), (f"<{bucket}>/{PREFIX}*",)): None,
        (("s3:ListBucket",), (f"<{bucket}>",)): {"StringLike": {"s3:prefix": [f"{PREFIX}*"]}},
    }


def test_the_machine_plans_maps_the_manifests_and_finishes_until_switched(dev: Synthesized) -> None:
    definition = machine_definition(dev, "ReembedMachine")
    states = definition["States"]
    assert definition["StartAt"] == "Start" and states["Start"]["Next"] == "Plan"
    nexts = {name: state.get("Next") or state.get("Default") for name, state in states.items()}
    assert nexts == {
        "Start": "Plan",
        "Plan": "Anything to re-embed?",
        "Anything to re-embed?": "Manifests",
        "Nothing to re-embed": None,
        "Manifests": "Finish",
        "Finish": "Switched?",
        "Switched?": "Unexpected status",
        "Wait to catch up": "Finish",
        "Switched": None,
        "Unexpected status": "Record failure",
        "Record failure": "Re-embedding failed",
        "Re-embedding failed": None,
    }
    assert states["Anything to re-embed?"]["Choices"] == [{"Variable": "$.run_id", "IsNull": True, "Next": "Nothing to re-embed"}]
    assert states["Wait to catch up"]["Seconds"] == 300
    manifests = states["Manifests"]
    assert manifests["ItemProcessor"]["ProcessorConfig"] == {"Mode": "DISTRIBUTED", "ExecutionType": "STANDARD"}
    assert manifests["MaxConcurrency"] == dev.config.reembed_max_jobs == 10
    inner = manifests["ItemProcessor"]["States"]
    assert {name: state.get("Next") or state.get("Default") for name, state in inner.items()} == {
        "Submit": "Wait for the job",
        "Wait for the job": "Check",
        "Check": "Job done?",
        "Job done?": "Wait for the job",
        "Import": None,
        "Batch job failed": None,
    }
    assert inner["Wait for the job"]["Seconds"] == 300 and inner["Import"]["End"] is True
    assert states["Re-embedding failed"]["Error"] == "ReembedFailed"
    _, machine = named(dev, "AWS::StepFunctions::StateMachine", "ReembedMachine")
    assert machine["LoggingConfiguration"]["Level"] == "ALL" and machine["TracingConfiguration"] == {"Enabled": True}
    assert definition["TimeoutSeconds"] == 7 * 24 * 3600


def test_a_successful_backfill_starts_the_re_embed_machine_and_a_failed_start_does_not_fail_it(
    dev: Synthesized, prod: Synthesized
) -> None:
    states = machine_definition(dev, "BackfillMachine")["States"]
    assert states["Any stage failed?"]["Default"] == "Start re-embedding"
    start = states["Start re-embedding"]
    reembed, _ = named(dev, "AWS::StepFunctions::StateMachine", "ReembedMachine")
    assert start["Resource"] == "arn:<AWS::Partition>:states:::states:startExecution"  # request-response: no waiting
    assert start["Parameters"]["StateMachineArn"] == f"<{reembed}>"
    assert start["Next"] == "Done" and start["ResultPath"] == "$.reembed"
    assert start["Catch"] == [{"ErrorEquals": ["States.ALL"], "ResultPath": "$.reembed", "Next": "Done"}]
    backfill_role = next(
        r["Properties"]["Roles"][0]["Ref"]
        for n, r in dev.resources("AWS::IAM::Policy").items()
        if n.startswith("BackfillMachine")
    )
    starts = [as_text(s) for s in policy_of(dev, backfill_role) if "states:StartExecution" in str(s["Action"])]
    assert starts == [(("states:StartExecution",), (f"<{reembed}>",))]
    # Without the machine (OpenAI embeddings) a successful run ends at Done as before.
    assert machine_definition(prod, "BackfillMachine")["States"]["Any stage failed?"]["Default"] == "Done"


def test_a_configured_target_names_itself_to_every_function_and_the_jobs_model_is_granted(
    tmp_path_factory: pytest.TempPathFactory,
) -> None:
    from tests.infra.conftest import synthesize

    moving = synthesize("dev", tmp_path_factory.mktemp("reembed-target"), {"reembed_dimension": "512"})
    functions = {
        name: f["Properties"] for name, f in moving.resources("AWS::Lambda::Function").items() if f["Properties"].get("Layers")
    }
    target = {
        "RAG_REEMBED_PROVIDER": "bedrock",
        "RAG_REEMBED_MODEL": "amazon.titan-embed-text-v2:0",
        "RAG_REEMBED_DIMENSION": "512",
    }
    for name, props in functions.items():  # query, ingest, the stages, the migrator and the re-embedding
        variables = props["Environment"]["Variables"]
        assert {key: variables.get(key) for key in target} == target, name
    assert len(functions) == 7
    with pytest.raises(ValueError, match="nothing to move"):
        synthesize("dev", tmp_path_factory.mktemp("reembed-same"), {"reembed_dimension": "1024"})
