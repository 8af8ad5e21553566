"""Security-relevant properties of each resource, asserted on the synthesized templates (both stages)."""

from __future__ import annotations

import json
from typing import Any

from infra.constructs.database import APP_USER
from rag.store.connection import IAM_URL_ENV
from tests.infra.conftest import Synthesized, resolve_strings

# Actions that AWS offers no resource-level scoping for; anything else must name its resources.
UNSCOPABLE_ACTIONS = {
    "ec2:CreateNetworkInterface", "ec2:DescribeNetworkInterfaces", "ec2:DescribeSubnets",
    "ec2:DeleteNetworkInterface", "ec2:AssignPrivateIpAddresses", "ec2:UnassignPrivateIpAddresses",
    "xray:PutTraceSegments", "xray:PutTelemetryRecords", "xray:GetSamplingRules", "xray:GetSamplingTargets",
    "logs:CreateLogDelivery", "logs:GetLogDelivery", "logs:UpdateLogDelivery", "logs:DeleteLogDelivery",
    "logs:ListLogDeliveries", "logs:PutResourcePolicy", "logs:DescribeResourcePolicies", "logs:DescribeLogGroups",
}  # fmt: skip


def reembed(result: Synthesized) -> int:
    """1 where the stage has the re-embed machine (Bedrock embeddings: infra/constructs/reembed.py), else 0."""
    return 1 if result.config.reembeds_on_bedrock else 0


def statements(result: Synthesized) -> list[tuple[str, dict[str, Any]]]:
    found = []
    for name, policy in result.resources("AWS::IAM::Policy").items():
        found += [(name, s) for s in policy["Properties"]["PolicyDocument"]["Statement"]]
    for name, role in result.resources("AWS::IAM::Role").items():
        for inline in role["Properties"].get("Policies", []):
            found += [(name, s) for s in inline["PolicyDocument"]["Statement"]]
    return found


def as_list(value: Any) -> list[Any]:
    return value if isinstance(value, list) else [value]


def function_named(result: Synthesized, handler: str, description_start: str = "") -> dict[str, Any]:
    matches = [
        f["Properties"]
        for f in result.resources("AWS::Lambda::Function").values()
        if f["Properties"].get("Handler") == handler and f["Properties"].get("Description", "").startswith(description_start)
    ]
    assert len(matches) == 1, f"{handler}: {len(matches)} functions"
    return matches[0]


# --- storage and ingest ---------------------------------------------------------------------------


def test_buckets_are_encrypted_private_tls_only_and_the_documents_bucket_is_versioned_and_logged(stage: Synthesized) -> None:
    buckets = stage.resources("AWS::S3::Bucket")
    assert len(buckets) == 2 + reembed(stage)  # documents, access logs (and re-embedding's manifests)
    for bucket in buckets.values():
        props = bucket["Properties"]
        assert props["BucketEncryption"]["ServerSideEncryptionConfiguration"][0]["ServerSideEncryptionByDefault"] == {
            "SSEAlgorithm": "AES256"
        }
        assert props["PublicAccessBlockConfiguration"] == {
            "BlockPublicAcls": True, "BlockPublicPolicy": True, "IgnorePublicAcls": True, "RestrictPublicBuckets": True
        }  # fmt: skip
    documents = next(b["Properties"] for n, b in buckets.items() if n.startswith("IngestDocuments"))
    assert documents["VersioningConfiguration"] == {"Status": "Enabled"}
    assert documents["LoggingConfiguration"]["LogFilePrefix"] == "documents/"
    for policy in stage.resources("AWS::S3::BucketPolicy").values():
        denies = [s for s in policy["Properties"]["PolicyDocument"]["Statement"] if s["Effect"] == "Deny"]
        assert any(s["Condition"] == {"Bool": {"aws:SecureTransport": "false"}} and s["Action"] == "s3:*" for s in denies)
    assert len(stage.resources("AWS::S3::BucketPolicy")) == 2 + reembed(stage)


def test_queues_are_encrypted_tls_only_with_a_dead_letter_queue(stage: Synthesized) -> None:
    queues = stage.resources("AWS::SQS::Queue")
    assert len(queues) == 2
    assert all(q["Properties"]["SqsManagedSseEnabled"] is True for q in queues.values())
    main = next(q["Properties"] for q in queues.values() if "RedrivePolicy" in q["Properties"])
    assert main["RedrivePolicy"]["maxReceiveCount"] == stage.config.ingest_max_receive_count
    assert main["VisibilityTimeout"] == 6 * stage.config.ingest_timeout_seconds
    for policy in stage.resources("AWS::SQS::QueuePolicy").values():
        document = policy["Properties"]["PolicyDocument"]["Statement"]
        assert any(s["Effect"] == "Deny" and s["Condition"] == {"Bool": {"aws:SecureTransport": "false"}} for s in document)


def test_bucket_notifies_the_queue_of_created_and_removed_documents_under_both_key_forms(stage: Synthesized) -> None:
    # tenants/<tenant>/projects/<project>/... and projects/<project>/... (the default tenant), nothing else of the bucket
    notifications = stage.resource("Custom::S3BucketNotifications")["Properties"]["NotificationConfiguration"]
    queue = next(name for name, q in stage.resources("AWS::SQS::Queue").items() if "RedrivePolicy" in q["Properties"])
    configured = sorted(
        (c["Events"][0], c["Filter"]["Key"]["FilterRules"][0]["Value"], c["QueueArn"]["Fn::GetAtt"][0])
        for c in notifications["QueueConfigurations"]
        if len(c["Events"]) == 1 and len(c["Filter"]["Key"]["FilterRules"]) == 1
    )
    assert len(configured) == len(notifications["QueueConfigurations"]) == 4
    assert configured == sorted(
        (event, prefix, queue) for event in ("s3:ObjectCreated:*", "s3:ObjectRemoved:*") for prefix in ("projects/", "tenants/")
    )
    assert all(c["Filter"]["Key"]["FilterRules"][0]["Name"] == "prefix" for c in notifications["QueueConfigurations"])


def test_ingest_event_source_bounds_concurrency_and_reports_partial_failures(stage: Synthesized) -> None:
    mapping = stage.resource("AWS::Lambda::EventSourceMapping")["Properties"]
    assert mapping["BatchSize"] == stage.config.ingest_batch_size
    assert mapping["MaximumBatchingWindowInSeconds"] == stage.config.ingest_batching_window_seconds
    assert mapping["ScalingConfig"] == {"MaximumConcurrency": stage.config.ingest_max_concurrency}
    assert mapping["FunctionResponseTypes"] == ["ReportBatchItemFailures"]


def test_ingest_reads_only_documents_of_both_key_forms_and_may_list_the_bucket_for_deletions(stage: Synthesized) -> None:
    ingest_policy = next(
        p["Properties"]["PolicyDocument"]["Statement"]
        for name, p in stage.resources("AWS::IAM::Policy").items()
        if name.startswith("IngestFunctionRole")
    )
    s3_statements = [s for s in ingest_policy if any(a.startswith("s3:") for a in as_list(s["Action"]))]
    documents_bucket = next(name for name in stage.resources("AWS::S3::Bucket") if name.startswith("IngestDocuments"))
    by_action = {tuple(as_list(s["Action"])): sorted(resolve_strings(r) for r in as_list(s["Resource"])) for s in s3_statements}
    assert by_action == {
        ("s3:GetObject", "s3:GetObjectVersion"): [f"<{documents_bucket}>/projects/*", f"<{documents_bucket}>/tenants/*"],
        ("s3:ListBucket",): [f"<{documents_bucket}>"],  # else S3 answers 403 for a deleted key, not 404
    }
    ingest = function_named(stage, "handler.lambda_handler", "S3 changes")
    assert ingest["Environment"]["Variables"]["RAG_DEFAULT_TENANT"] == stage.config.default_tenant  # owner of projects/


def test_ingest_may_push_back_a_failing_message_on_its_own_queue(stage: Synthesized) -> None:
    # The handler backs off transient errors with ChangeMessageVisibility on the message, then reports it failed.
    queues = stage.resources("AWS::SQS::Queue")
    changes = next(name for name, q in queues.items() if "RedrivePolicy" in q["Properties"])
    granted = [
        resolve_strings(statement["Resource"])
        for name, statement in statements(stage)
        if name.startswith("IngestFunctionRole") and "sqs:ChangeMessageVisibility" in as_list(statement["Action"])
    ]
    assert granted == [f"<{changes}>"]  # the ingest queue, not the DLQ
    assert not [
        name
        for name, statement in statements(stage)
        if "sqs:ChangeMessageVisibility" in as_list(statement["Action"]) and not name.startswith("IngestFunctionRole")
    ]


def test_ingest_may_continue_a_large_file_on_its_own_queue_only(stage: Synthesized) -> None:
    queues = stage.resources("AWS::SQS::Queue")
    changes = next(name for name, q in queues.items() if "RedrivePolicy" in q["Properties"])
    granted = [
        (name, resolve_strings(statement["Resource"]))
        for name, statement in statements(stage)
        if "sqs:SendMessage" in as_list(statement["Action"])
    ]
    assert [resource for name, resource in granted if name.startswith("IngestFunctionRole")] == [f"<{changes}>"]
    assert all(name.startswith("IngestFunctionRole") or resource != f"<{changes}>" for name, resource in granted)


def test_ingest_retries_outlast_a_five_minute_database_outage(stage: Synthesized) -> None:
    # A message is delivered maxReceiveCount times; SQS moves it to the DLQ on the next receive. The attempts after
    # the first wait at least one backoff each (the handler's ChangeMessageVisibility, or the visibility timeout
    # if the function itself failed), so a 5-minute outage needs 4 waits adding up to more than 300 s:
    # the handler's 30, 60, 120, 240 s = 450 s, or 4 x 720 s = 48 min without the handler's backoff.
    main = next(q["Properties"] for q in stage.resources("AWS::SQS::Queue").values() if "RedrivePolicy" in q["Properties"])
    receives = main["RedrivePolicy"]["maxReceiveCount"]
    assert receives >= 5
    assert sum(min(30 * 2**attempt, main["VisibilityTimeout"]) for attempt in range(receives - 1)) > 300
    assert (receives - 1) * main["VisibilityTimeout"] > 300


# --- database -------------------------------------------------------------------------------------


def test_database_is_encrypted_private_backed_up_and_switchable_by_stage(stage: Synthesized) -> None:
    props = stage.resource("AWS::RDS::DBInstance")["Properties"]
    assert props["Engine"] == "postgres" and props["EngineVersion"] == "17"  # pgvector 0.8 on RDS; major only
    assert props["StorageEncrypted"] is True
    assert props["PubliclyAccessible"] is False
    assert props["EnableIAMDatabaseAuthentication"] is True
    assert props["BackupRetentionPeriod"] == stage.config.db_backup_retention_days
    assert props["MultiAZ"] is stage.config.db_multi_az
    # Deletion protection: set by a custom resource as the deploy's last step (test_database.py says why).
    assert "DeletionProtection" not in props
    [protection] = [r["Properties"] for r in stage.data["Resources"].values() if r["Type"] == "Custom::RdsDeletionProtection"]
    assert f'"DeletionProtection":{json.dumps(stage.config.db_deletion_protection)}' in resolve_strings(protection["Create"])
    assert props["EnableCloudwatchLogsExports"] == ["postgresql", "upgrade"]
    parameters = stage.resource("AWS::RDS::DBParameterGroup")["Properties"]["Parameters"]
    assert parameters["rds.force_ssl"] == "1"
    for rotation in stage.resources("AWS::SecretsManager::RotationSchedule").values():
        expression = rotation["Properties"]["RotationRules"]["ScheduleExpression"]
        assert expression == f"rate({stage.config.db_secret_rotation_days} days)"


def test_database_data_survives_stack_deletion_in_production(dev: Synthesized, prod: Synthesized) -> None:
    assert dev.resource("AWS::RDS::DBInstance")["DeletionPolicy"] == "Delete"
    # Kept (and protected) when the stack is deleted; only the rollback of its own failed create deletes it.
    assert prod.resource("AWS::RDS::DBInstance")["DeletionPolicy"] == "RetainExceptOnCreate"


def test_proxy_requires_tls_and_iam_and_functions_connect_with_iam_tokens(stage: Synthesized) -> None:
    proxy = stage.resource("AWS::RDS::DBProxy")["Properties"]
    assert proxy["RequireTLS"] is True
    assert proxy["Auth"][0]["IAMAuth"] == "REQUIRED"
    proxy_name = next(iter(stage.resources("AWS::RDS::DBProxy")))
    app_functions = [
        function_named(stage, "handler.lambda_handler", "S3 changes"),
        function_named(stage, "handler.lambda_handler", "HTTP API"),
        *(function_named(stage, f"handler.{s}_handler") for s in ("segment", "embed", "extract")),
    ]
    for function in app_functions:
        variables = function["Environment"]["Variables"]
        assert resolve_strings(variables[IAM_URL_ENV]) == f"postgresql://{APP_USER}@<{proxy_name}>:5432/rag?sslmode=require"
        assert "RAG_DATABASE_SECRET_ARN" not in variables  # no application function can read the password
    if reembed(stage):  # a maintenance function, as the migrator: the owner's DDL (index builds, the column swap)
        variables = function_named(stage, "handler.reembed_handler")["Environment"]["Variables"]
        assert IAM_URL_ENV not in variables and "RAG_DATABASE_SECRET_ARN" in variables
    connects = [s for _, s in statements(stage) if s["Action"] == "rds-db:connect"]
    assert len(connects) == 5
    for statement in connects:
        resource = resolve_strings(statement["Resource"])
        assert resource.startswith("arn:") and ":dbuser:" in resource and resource.endswith(f"/{APP_USER}")


def test_only_the_proxy_and_the_maintenance_functions_read_the_database_secrets(stage: Synthesized) -> None:
    attachments = stage.resources("AWS::SecretsManager::SecretTargetAttachment")
    assert len(attachments) == 2  # the owner's and the functions' role, both with the instance's host and port
    for attachment in attachments:
        readers = [
            name
            for name, statement in statements(stage)
            if "secretsmanager:GetSecretValue" in as_list(statement["Action"])
            and resolve_strings(statement["Resource"]) == f"<{attachment}>"
        ]
        # The proxy (to log in on the functions' behalf), the migrator and the re-embedding (the owner's, for their
        # DDL); the rotation apps bring their own.
        owners = ["MigrationsFunction", *(["ReembedFunction"] if reembed(stage) and "App" not in attachment else [])]
        assert sorted(name.split("Role")[0] for name in readers) == sorted(["DatabaseProxyIAM", *owners]), attachment
    assert len(stage.resources("AWS::SecretsManager::RotationSchedule")) == 2


# --- IAM ----------------------------------------------------------------------------------------


def test_no_statement_allows_every_action_or_every_resource_beyond_unscopable_actions(stage: Synthesized) -> None:
    for name, statement in statements(stage):
        if statement["Effect"] != "Allow":
            continue
        actions = as_list(statement["Action"])
        assert not any(a == "*" or a.endswith(":*") for a in actions), (name, actions)
        if "*" in as_list(statement.get("Resource")):
            assert set(actions) <= UNSCOPABLE_ACTIONS, (name, actions)


def test_models_and_secrets_are_granted_by_name(dev: Synthesized, prod: Synthesized) -> None:
    dev_bedrock = {resolve_strings(s["Resource"]) for _, s in statements(dev) if s["Action"] == "bedrock:InvokeModel"}
    assert dev_bedrock == {"arn:<AWS::Partition>:bedrock:<AWS::Region>::foundation-model/amazon.titan-embed-text-v2:0"}
    assert not [s for _, s in statements(prod) if s["Action"] == "bedrock:InvokeModel"]
    openai = {
        resolve_strings(s["Resource"])
        for _, s in statements(prod)
        if s["Action"] == "secretsmanager:GetSecretValue" and "openai" in resolve_strings(s["Resource"])
    }
    assert openai == {
        "arn:<AWS::Partition>:secretsmanager:<AWS::Region>:<AWS::AccountId>:secret:meeting-rag/prod/openai-api-key-??????"
    }
    for result in (dev, prod):
        for function in result.resources("AWS::Lambda::Function").values():
            variables = function["Properties"].get("Environment", {}).get("Variables", {})
            assert not any("sk-" in str(v) or "password" in k.lower() for k, v in variables.items())
    assert function_named(prod, "handler.lambda_handler", "HTTP API")["Environment"]["Variables"][
        "RAG_OPENAI_API_KEY_SECRET"
    ] == ("meeting-rag/prod/openai-api-key")


def test_functions_use_their_own_roles_without_aws_managed_policies(stage: Synthesized) -> None:
    app_roles = [name for name in stage.resources("AWS::IAM::Role") if "FunctionRole" in name]
    assert len(app_roles) == 6 + reembed(stage)
    for name in app_roles:
        assert "ManagedPolicyArns" not in stage.data["Resources"][name]["Properties"]


# --- functions and network ----------------------------------------------------------------------


def test_functions_run_in_private_subnets_with_tracing_and_log_retention(stage: Synthesized) -> None:
    functions = [
        f["Properties"]
        for f in stage.resources("AWS::Lambda::Function").values()
        if f["Properties"].get("Runtime") == "python3.12"
    ]
    subnet_prefix = "NetworkVpcfunctionsSubnet"
    for function in functions:
        assert function["TracingConfig"] == {"Mode": "Active"}
        assert all(ref["Ref"].startswith(subnet_prefix) for ref in function["VpcConfig"]["SubnetIds"])
        assert len(function["Layers"]) == 1
    expected_type = "Private" if stage.config.needs_internet_egress else "Isolated"
    function_subnets = [s for n, s in stage.resources("AWS::EC2::Subnet").items() if n.startswith(subnet_prefix)]
    assert all({"Key": "aws-cdk:subnet-type", "Value": expected_type} in s["Properties"]["Tags"] for s in function_subnets)
    for group in stage.resources("AWS::Logs::LogGroup").values():
        assert group["Properties"]["RetentionInDays"] == stage.config.log_retention_days


def test_nothing_is_reachable_from_the_internet(stage: Synthesized) -> None:
    for group in stage.resources("AWS::EC2::SecurityGroup").values():
        for rule in group["Properties"].get("SecurityGroupIngress", []):
            assert rule.get("CidrIp") not in ("0.0.0.0/0",) and rule.get("CidrIpv6") != "::/0"
    for rule in stage.resources("AWS::EC2::SecurityGroupIngress").values():
        assert "CidrIp" not in rule["Properties"]  # from security groups only


# --- query API ------------------------------------------------------------------------------------


# The only routes without an authorizer, and why each may be public: the web page's static files (HTML, CSS, JS) and
# its /config.json (public sign-in settings: an OIDC client id and endpoints) on the JWT API, where the page signs in
# before any /v1 call; /health on both APIs (the database's reachability, no tenant data). A browser cannot SigV4-sign,
# so the IAM API has no page.
PUBLIC_ROUTES = {
    "Api": {"GET /", "GET /index.html", "GET /assets/{proxy+}", "GET /config.json", "GET /health"},
    "ServiceApi": {"GET /health"},
}


def routes_by_api(stage: Synthesized) -> dict[str, list[dict[str, Any]]]:
    apis = {name: api["Properties"]["Name"].rsplit("-", 1)[1] for name, api in stage.resources("AWS::ApiGatewayV2::Api").items()}
    found: dict[str, list[dict[str, Any]]] = {api: [] for api in apis.values()}
    for route in stage.resources("AWS::ApiGatewayV2::Route").values():
        found[apis[route["Properties"]["ApiId"]["Ref"]]].append(route["Properties"])
    return found


def test_every_route_has_an_authorizer_but_the_page_and_the_health_check(stage: Synthesized) -> None:
    by_api = routes_by_api(stage)
    assert set(by_api) == {"Api", "ServiceApi"}
    for api, routes in by_api.items():
        assert {r["RouteKey"] for r in routes} >= {"GET /v1/{proxy+}", "POST /v1/{proxy+}", "POST /mcp"}
        # Exactly these are public, whatever is added later: any other route needs its API's authorizer.
        assert {r["RouteKey"] for r in routes if r["AuthorizationType"] == "NONE"} == PUBLIC_ROUTES[api]
        for route in routes:
            assert route["RouteKey"] != "$default"
            if route["RouteKey"] not in PUBLIC_ROUTES[api]:
                assert route["AuthorizationType"] == {"Api": "JWT", "ServiceApi": "AWS_IAM"}[api], route["RouteKey"]
            else:
                assert "AuthorizerId" not in route and route["RouteKey"].startswith("GET ")
    authorizer = next(iter(stage.resources("AWS::ApiGatewayV2::Authorizer")))
    assert all(r["AuthorizerId"] == {"Ref": authorizer} for r in by_api["Api"] if r["AuthorizationType"] == "JWT")
    # Whose tokens it accepts: tests/infra/test_web.py (the stack's user pool, or the configured issuer).


def test_api_stages_throttle_and_log_access(stage: Synthesized) -> None:
    stages = [s["Properties"] for s in stage.resources("AWS::ApiGatewayV2::Stage").values()]
    assert len(stages) == 2
    for api_stage in stages:
        assert api_stage["DefaultRouteSettings"]["ThrottlingRateLimit"] == stage.config.api_throttle_rate
        assert api_stage["DefaultRouteSettings"]["ThrottlingBurstLimit"] == stage.config.api_throttle_burst
        log_format = json.loads(api_stage["AccessLogSettings"]["Format"])
        assert {"requestId", "status", "routeKey", "latencyMs"} <= set(log_format)


def test_cors_comes_from_configuration(dev: Synthesized, prod: Synthesized) -> None:
    jwt_api = next(
        a["Properties"] for a in dev.resources("AWS::ApiGatewayV2::Api").values() if a["Properties"]["Name"].endswith("-Api")
    )
    assert jwt_api["CorsConfiguration"]["AllowOrigins"] == list(dev.config.cors_origins) == ["http://localhost:3000"]
    assert jwt_api["CorsConfiguration"]["AllowMethods"] == ["GET", "POST"]
    assert all("CorsConfiguration" not in a["Properties"] for a in prod.resources("AWS::ApiGatewayV2::Api").values())


# --- backfill ---------------------------------------------------------------------------------------


def test_state_machine_retries_and_catches_every_task_with_logging_and_tracing(stage: Synthesized) -> None:
    [machine] = [
        m["Properties"] for n, m in stage.resources("AWS::StepFunctions::StateMachine").items() if n.startswith("Backfill")
    ]
    definition = json.loads(resolve_strings(machine["DefinitionString"]))
    tasks = {name: state for name, state in definition["States"].items() if state["Type"] == "Task"}
    # (the start of the re-embed machine, where there is one, catches everything and goes on: test_reembed.py)
    tasks.pop("Start re-embedding", None)
    assert set(tasks) == {"segment: run batch", "embed: run batch", "extract: run batch"}
    for task in tasks.values():
        assert task["Retry"] and task["Retry"][0]["MaxAttempts"] >= 1
        assert task["Catch"][0]["ErrorEquals"] == ["States.ALL"]
    assert machine["LoggingConfiguration"]["Level"] == "ALL"
    assert machine["LoggingConfiguration"]["IncludeExecutionData"] is True
    assert machine["TracingConfiguration"] == {"Enabled": True}


# --- operations -------------------------------------------------------------------------------------


def test_alarms_cover_dlq_errors_throttles_backfill_and_api_and_notify_the_topic(stage: Synthesized) -> None:
    alarms = [a["Properties"] for a in stage.resources("AWS::CloudWatch::Alarm").values()]
    topic = next(iter(stage.resources("AWS::SNS::Topic")))
    assert all(a["AlarmActions"] == [{"Ref": topic}] for a in alarms)
    metrics = sorted(
        (a["Namespace"], a["MetricName"], a.get("Statistic") or a.get("ExtendedStatistic"))
        if "Metrics" not in a  # else metric math: the metrics it reads
        else next((m["MetricStat"]["Metric"]["Namespace"], m["MetricStat"]["Metric"]["MetricName"], m["MetricStat"]["Stat"])
                  for m in a["Metrics"] if "MetricStat" in m)
        for a in alarms
    )  # fmt: skip
    assert metrics.count(("AWS/Lambda", "Errors", "Sum")) == 5
    assert metrics.count(("AWS/Lambda", "Throttles", "Sum")) == 5
    assert ("AWS/SQS", "ApproximateNumberOfMessagesVisible", "Maximum") in metrics
    assert ("AWS/States", "ExecutionsFailed", "Sum") in metrics
    assert metrics.count(("AWS/ApiGateway", "5xx", "Sum")) == 2
    assert metrics.count(("AWS/ApiGateway", "Latency", "p95")) == 2
    assert stage.resource("AWS::SNS::Topic")["Properties"]["KmsMasterKeyId"]
    assert stage.resource("AWS::KMS::Key")["Properties"]["EnableKeyRotation"] is True
    assert len(stage.resources("AWS::CloudWatch::Dashboard")) == 1


def test_the_dead_letter_alarm_notifies_the_topic_with_the_redrive_runbook(stage: Synthesized) -> None:
    dlq = next(name for name, q in stage.resources("AWS::SQS::Queue").items() if "RedrivePolicy" not in q["Properties"])
    topic = next(iter(stage.resources("AWS::SNS::Topic")))
    (alarm,) = [
        a["Properties"]
        for a in stage.resources("AWS::CloudWatch::Alarm").values()
        if a["Properties"].get("Dimensions") == [{"Name": "QueueName", "Value": {"Fn::GetAtt": [dlq, "QueueName"]}}]
    ]
    assert (alarm["Namespace"], alarm["MetricName"], alarm["Statistic"]) == (
        "AWS/SQS",
        "ApproximateNumberOfMessagesVisible",
        "Maximum",
    )
    assert (alarm["ComparisonOperator"], alarm["Threshold"]) == ("GreaterThanOrEqualToThreshold", 1)  # any message
    assert alarm["AlarmActions"] == [{"Ref": topic}]
    runbook = resolve_strings(alarm["AlarmDescription"])
    logs = next(name for name in stage.resources("AWS::Logs::LogGroup") if name.startswith("IngestFunctionLogs"))
    assert f"aws logs tail <{logs}>" in runbook
    assert f"aws sqs start-message-move-task --source-arn <{dlq}>" in runbook
    assert f"aws sqs list-message-move-tasks --source-arn <{dlq}>" in runbook
    assert len(runbook) < 1024 - 2 * 100  # CloudWatch's limit, with room for the ARN and the log group's name
    assert stage.data["Outputs"]["DeadLetterQueueArn"]["Value"] == {"Fn::GetAtt": [dlq, "Arn"]}
    assert stage.data["Outputs"]["DeadLetterQueueUrl"]["Value"] == {"Ref": dlq}


def test_migrations_run_after_the_database_and_before_the_functions(stage: Synthesized) -> None:
    resources = stage.data["Resources"]
    name, migrations = next((n, r) for n, r in resources.items() if r["Type"] == "Custom::MeetingRagMigrations")
    instance = next(iter(stage.resources("AWS::RDS::DBInstance")))
    assert instance in migrations["DependsOn"]
    assert migrations["Properties"]["EmbeddingModel"] == stage.config.embedding_model_id
    assert len(migrations["Properties"]["MigrationsHash"]) == 64
    ingest = next(n for n, r in resources.items() if r["Type"] == "AWS::Lambda::Function" and n.startswith("IngestFunction"))
    assert name in resources[ingest]["DependsOn"]
    migrator = function_named(stage, "handler.lambda_handler", "Applies sql/")
    assert migrator["Environment"]["Variables"]["RAG_MIGRATIONS_DIR"] == "/var/task/sql"
