"""Every stage synthesizes offline; the outputs and per-stage switches are what the configuration says."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from infra.stages import STAGES, stage_config
from rag.config import Settings
from tests.infra.conftest import SKIP_BUNDLING, Synthesized

REPO_ROOT = Path(__file__).resolve().parents[2]


def test_every_stage_synthesizes_with_its_outputs(synthesized: dict[str, Synthesized]) -> None:
    assert set(synthesized) == set(STAGES) == {"dev", "prod"}
    for result in synthesized.values():
        assert {
            "BucketName", "ApiUrl", "ServiceApiUrl", "StateMachineArn", "AlarmTopicArn",
            "DeadLetterQueueArn", "DeadLetterQueueUrl", "IngestLogGroupName",
        } <= set(result.data["Outputs"])  # fmt: skip
        assert result.stack.stack_name == f"MeetingRag-{result.stage}"


def test_cdk_json_runs_the_app_from_the_venv() -> None:
    app = json.loads((REPO_ROOT / "cdk.json").read_text())["app"]
    assert app == ".venv/bin/python infra/app.py"


def test_app_script_synthesizes_the_stage_named_in_context(tmp_path: Path) -> None:
    # GIVEN the entry point cdk.json runs, with the context the CDK CLI would pass
    env = {
        **os.environ,
        "CDK_OUTDIR": str(tmp_path),
        "CDK_CONTEXT_JSON": json.dumps(
            {**SKIP_BUNDLING, "stage": "prod", "alarm_email": "alarms@example.com", "ingest_max_receive_count": "3"}
        ),
    }
    env.pop("JSII_NODE", None)  # the app finds the wheel's Node.js itself
    # WHEN it runs as a script
    subprocess.run([sys.executable, "infra/app.py"], cwd=REPO_ROOT, env=env, check=True, capture_output=True)
    # THEN it wrote the prod stack with the override applied
    template = json.loads((tmp_path / "MeetingRag-prod.template.json").read_text())
    queues = [r["Properties"] for r in template["Resources"].values() if r["Type"] == "AWS::SQS::Queue"]
    assert [q["RedrivePolicy"]["maxReceiveCount"] for q in queues if "RedrivePolicy" in q] == [3]


def test_context_overrides_are_typed() -> None:
    config = stage_config(
        "dev",
        {
            "ingest_max_concurrency": "7",
            "backfill_schedule_enabled": "true",
            "cors_origins": "https://a.example, https://b.example",
        },
    )
    assert config.ingest_max_concurrency == 7
    assert config.backfill_schedule_enabled is True
    assert config.cors_origins == ("https://a.example", "https://b.example")
    uploaders = stage_config("dev", {"tenant_uploaders": '{"acme": "arn:aws:iam::123456789012:role/acme-sync"}'}).tenant_uploaders
    assert uploaders == {"acme": "arn:aws:iam::123456789012:role/acme-sync"}
    assert stage_config("dev").tenant_uploaders == {} and stage_config("prod").tenant_uploaders == {}


@pytest.mark.parametrize(
    ("overrides", "message"),
    [
        ({"embedding_dimension": "1536"}, "Titan V2"),
        ({"embedding_provider": "openai", "embedding_model": "text-embedding-3-small"}, "openai_api_key_secret_name"),
        ({"ingest_max_concurrency": "1"}, "ingest_max_concurrency"),
        ({"jwt_issuer": "http://insecure.example"}, "https"),
        ({"cors_origins": "*"}, "cors_origins"),
        ({"backfill_schedule_enabled": "yes"}, "true or false"),
        ({"ingest_max_receive_count": "0"}, "ingest_max_receive_count"),
        ({"default_tenant": "a/b"}, "tenant id 'a/b' is not valid"),
        ({"tenant_uploaders": '{"acme/*": "arn:aws:iam::123456789012:role/sync"}'}, r"tenant id 'acme/\*' is not valid"),
        ({"tenant_uploaders": '{"acme": "123456789012"}'}, r"tenant_uploaders\['acme'\] must be an IAM role"),
        ({"tenant_uploaders": '["acme"]'}, "tenant_uploaders must map"),
    ],
)
def test_bad_configuration_is_refused_with_the_reason(overrides: dict[str, str], message: str) -> None:
    with pytest.raises(ValueError, match=message):
        stage_config("dev", overrides)


def test_unknown_stage_names_the_known_ones() -> None:
    with pytest.raises(ValueError, match="dev, prod"):
        stage_config("staging")


def test_only_openai_stages_get_a_nat_gateway(dev: Synthesized, prod: Synthesized) -> None:
    assert dev.resources("AWS::EC2::NatGateway") == {}
    assert dev.resources("AWS::EC2::InternetGateway") == {}
    assert len(prod.resources("AWS::EC2::NatGateway")) == prod.config.max_azs  # one per AZ (tests/infra/test_network.py)


def test_a_single_nat_gateway_remains_a_choice(tmp_path: Path) -> None:
    from tests.infra.conftest import synthesize

    result = synthesize("prod", tmp_path, {"nat_gateway_per_az": "false"})
    assert len(result.resources("AWS::EC2::NatGateway")) == 1


def test_backfill_schedule_is_off_outside_production(dev: Synthesized, prod: Synthesized) -> None:
    dev_rule, prod_rule = dev.resource("AWS::Events::Rule"), prod.resource("AWS::Events::Rule")
    assert dev_rule["Properties"]["State"] == "DISABLED"
    assert prod_rule["Properties"]["State"] == "ENABLED"
    assert prod_rule["Properties"]["ScheduleExpression"] == "rate(1 hour)"
    target = prod_rule["Properties"]["Targets"][0]
    assert json.loads(target["Input"]) == {"stages": ["segment", "embed", "extract"], "batch_size": 10, "max_iterations": 100}
    assert target["Arn"] == {"Ref": next(iter(prod.resources("AWS::StepFunctions::StateMachine")))}


def test_functions_get_the_configured_embedding_model(stage: Synthesized) -> None:
    functions = [f for f in stage.resources("AWS::Lambda::Function").values() if f["Properties"].get("Runtime") == "python3.12"]
    # ingest, query, three backfill stages, migrator, and with Bedrock embeddings the re-embed function
    assert len(functions) == 6 + stage.config.reembeds_on_bedrock
    for function in functions:
        variables = function["Properties"]["Environment"]["Variables"]
        assert variables["RAG_EMBEDDING_PROVIDER"] == stage.config.embedding_provider
        assert variables["RAG_EMBEDDING_MODEL"] == stage.config.embedding_model
        assert variables["RAG_EMBEDDING_DIMENSION"] == str(stage.config.embedding_dimension)
        # The id the function's rows record is the one whose index the migration builds.
        settings = Settings(embedding_provider=variables["RAG_EMBEDDING_PROVIDER"],
                            embedding_model=variables["RAG_EMBEDDING_MODEL"],
                            embedding_dimension=int(variables["RAG_EMBEDDING_DIMENSION"]))  # fmt: skip
        assert settings.embedding.model_id == stage.config.embedding_model_id
        assert variables["POWERTOOLS_METRICS_NAMESPACE"] == "MeetingRag"
        assert variables["POWERTOOLS_SERVICE_NAME"]


def test_the_deployed_state_machine_is_the_one_the_backfill_tests_execute(stage: Synthesized) -> None:
    # The local runner (rag backfill, tests/backfill) synthesizes the same construct in a stack of its own.
    from rag_local.state_machine import backfill_definition, definition_from_template, function_arn, stage_function_ids

    # With Bedrock embeddings the stage also has the re-embed machine, which a successful run starts (test_reembed.py):
    # that one state aside, the deployed backfill machine is the local one.
    machines = stage.resources("AWS::StepFunctions::StateMachine")
    reembed = [name for name in machines if name.startswith("Reembed")]
    text = json.dumps({k: v for k, v in stage.data["Resources"].items() if k not in reembed})
    for name in reembed:
        text = text.replace(json.dumps({"Ref": name}), json.dumps("<re-embed machine>"))
    template = {"Resources": json.loads(text)}
    ids = stage_function_ids(template)
    deployed = definition_from_template(template, {logical_id: function_arn(s) for s, logical_id in ids.items()})
    if reembed:
        start = deployed["States"].pop("Start re-embedding")
        assert (start["Parameters"]["StateMachineArn"], start["Next"]) == ("<re-embed machine>", "Done")
        assert deployed["States"]["Any stage failed?"]["Default"] == "Start re-embedding"
        deployed["States"]["Any stage failed?"]["Default"] = "Done"
    local = backfill_definition(
        retry_interval_seconds=5,
        max_iterations=stage.config.backfill_max_iterations,
        idle_wait_seconds=stage.config.backfill_idle_wait_seconds,  # 1 s locally, 30 s deployed
    )
    assert deployed == local
    assert len(deployed["States"]) > 10


def test_the_placeholder_issuer_is_flagged_at_synth(dev: Synthesized, prod: Synthesized) -> None:
    from aws_cdk.assertions import Annotations, Match

    flagged = Match.string_like_regexp("jwt_issuer is the placeholder")
    Annotations.from_stack(prod.stack).has_warning("/MeetingRag-prod", flagged)
    assert prod.config.jwt_issuer == "https://issuer.example.com/"
    # dev signs in with its own Cognito user pool (web_auth cognito), whose issuer the JWT API uses instead.
    assert dev.config.web_auth == "cognito"
    Annotations.from_stack(dev.stack).has_no_warning("/MeetingRag-dev", flagged)


def test_the_readme_builds_api_urls_the_outputs_make_valid(stage: Synthesized) -> None:
    # The API URL outputs are the HTTP API's endpoint, https://<id>.execute-api.<region>.amazonaws.com: no trailing "/".
    for output in ("ApiUrl", "ServiceApiUrl"):
        value = stage.data["Outputs"][output]["Value"]
        assert value == {"Fn::GetAtt": [value["Fn::GetAtt"][0], "ApiEndpoint"]}
    # So every path the README appends to one starts with "/" (not ".../amazonaws.comv1/search").
    readme = (REPO_ROOT / "README.md").read_text() + (REPO_ROOT / "infra" / "README.md").read_text()
    uses = re.findall(r"\$\(out (?:Service)?ApiUrl\)(.?)", readme)
    assert uses, "the README's post-deploy check uses the ApiUrl output"
    assert all(following in ("/", '"') for following in uses), uses
