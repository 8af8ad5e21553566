"""The alarms an operator needs, on the synthesized templates: metric, threshold, the topic as action, a runbook.

And who receives them: prod does not synthesize without ``-c alarm_email=...``; dev warns.
"""

from __future__ import annotations

import json
import math
import re
from typing import Any

import aws_cdk as cdk
import pytest
from aws_cdk.assertions import Annotations, Match

from infra.constructs import monitoring
from infra.stack import build
from infra.stages import stage_config
from tests.conftest import REPO_ROOT
from tests.infra.conftest import SKIP_BUNDLING, Synthesized, resolve_strings

# The alarms of issue 12 (logical id prefix under Monitoring/): each carries a runbook in its description.
RUNBOOK_ALARMS = (
    "DeadLetters", "IngestQueueAge", "DatabaseCpu", "DatabaseFreeStorage", "DatabaseConnections", "ProxyBorrowLatency",
    "BackfillFailed", "BackfillTimedOut", "BackfillScheduleFailed",
)  # fmt: skip
# Room for what a reference becomes at deploy time (an ARN, a queue URL, a log group name).
REFERENCE_LENGTH = 110


def alarms(stage: Synthesized) -> dict[str, dict[str, Any]]:
    return {name: a["Properties"] for name, a in stage.resources("AWS::CloudWatch::Alarm").items()}


def alarm(stage: Synthesized, name: str) -> dict[str, Any]:
    """The alarm ``Monitoring/<name>`` (its logical id is the path plus a hash)."""
    found = [props for logical_id, props in alarms(stage).items() if re.fullmatch(f"Monitoring{name}[0-9A-F]{{8}}", logical_id)]
    assert len(found) == 1, f"expected one alarm Monitoring/{name}, found {len(found)}"
    return found[0]


def logical_id(stage: Synthesized, type_: str, prefix: str = "") -> str:
    [found] = [name for name in stage.resources(type_) if name.startswith(prefix)]
    return found


def topic(stage: Synthesized) -> str:
    return logical_id(stage, "AWS::SNS::Topic")


def metric(props: dict[str, Any]) -> tuple[Any, ...]:
    return (
        props["Namespace"], props["MetricName"], props.get("Statistic") or props.get("ExtendedStatistic"),
        props["ComparisonOperator"], props["Threshold"], props["EvaluationPeriods"], props["Period"],
    )  # fmt: skip


def deployed_length(description: Any) -> int:
    """The description's length once each reference is a name or ARN of REFERENCE_LENGTH characters."""

    def resolve(value: Any) -> str:
        if isinstance(value, str):
            return value
        if isinstance(value, dict) and "Fn::Join" in value:
            separator, parts = value["Fn::Join"]
            return separator.join(resolve(part) for part in parts)
        return "r" * REFERENCE_LENGTH

    return len(resolve(description))


# --- every alarm --------------------------------------------------------------------------------------------------


def runbook_rows() -> list[re.Pattern[str]]:
    """The alarm names of infra/README.md's "When an alarm fires" table, as patterns (``<Function>Errors``)."""
    text = (REPO_ROOT / "infra" / "README.md").read_text(encoding="utf-8")
    table = text[text.index("| alarm (`Monitoring/…`)") :].split("\n\n", 1)[0]
    names = [n for row in table.splitlines()[2:] for n in re.findall(r"`([^`]+)`", row.split("|")[1])]
    return [re.compile(re.escape(n).replace(re.escape("<Function>"), r"\w+").replace("…", r"\w*")) for n in names]


def test_every_alarm_has_an_action_and_a_runbook_entry(stage: Synthesized) -> None:
    rows = runbook_rows()
    for logical, props in alarms(stage).items():
        name = re.sub(r"^Monitoring|[0-9A-F]{8}$", "", logical)
        assert props["AlarmActions"] == [{"Ref": topic(stage)}], name
        assert any(row.fullmatch(name) for row in rows), f"{name}: no row in infra/README.md's alarm table"
        assert "infra/README.md" in resolve_strings(props["AlarmDescription"]), name
        assert deployed_length(props["AlarmDescription"]) <= 1024, name  # CloudWatch's limit


def test_each_operational_alarm_says_what_it_means_and_what_to_do(stage: Synthesized) -> None:
    names = RUNBOOK_ALARMS + (("BackfillNotSucceeding",) if stage.config.backfill_schedule_enabled else ())
    for name in names:
        description = alarm(stage, name)["AlarmDescription"]
        text = resolve_strings(description)
        lines = text.splitlines()
        assert len(lines) >= 3 and lines[0].endswith((".", ":")), (name, text)  # what it means, first
        assert re.search(r"^1\) ", text, re.M), (name, text)  # numbered steps
        assert "infra/README.md" in lines[-1], (name, text)  # the long version
        assert deployed_length(description) <= 1024, name  # CloudWatch's limit


# --- the database and its proxy --------------------------------------------------------------------------------


def test_database_cpu_storage_and_connections(stage: Synthesized) -> None:
    instance = logical_id(stage, "AWS::RDS::DBInstance")
    dimensions = [{"Name": "DBInstanceIdentifier", "Value": {"Ref": instance}}]
    config = stage.config

    cpu = alarm(stage, "DatabaseCpu")
    assert metric(cpu) == ("AWS/RDS", "CPUUtilization", "Average", "GreaterThanOrEqualToThreshold", 80, 3, 300)
    assert cpu["Dimensions"] == dimensions

    storage = alarm(stage, "DatabaseFreeStorage")
    free_bytes = math.floor(0.10 * config.db_allocated_storage_gb * 2**30)  # 10% of the initial allocation
    assert metric(storage) == ("AWS/RDS", "FreeStorageSpace", "Minimum", "LessThanThreshold", free_bytes, 1, 300)
    assert storage["Dimensions"] == dimensions

    connections = alarm(stage, "DatabaseConnections")
    limit = math.ceil(0.80 * config.db_max_connections)  # against the parameter group's max_connections
    assert metric(connections) == ("AWS/RDS", "DatabaseConnections", "Maximum", "GreaterThanOrEqualToThreshold", limit, 2, 300)
    assert connections["Dimensions"] == dimensions
    parameters = stage.resource("AWS::RDS::DBParameterGroup")["Properties"]["Parameters"]
    assert parameters["max_connections"] == str(config.db_max_connections)
    assert f"max_connections ({config.db_max_connections})" in resolve_strings(connections["AlarmDescription"])


def test_proxy_borrow_latency(stage: Synthesized) -> None:
    latency = alarm(stage, "ProxyBorrowLatency")
    # AWS/RDS, per proxy, in microseconds: 50 ms on average for 15 minutes.
    assert metric(latency) == (
        "AWS/RDS", "DatabaseConnectionsBorrowLatency", "Average", "GreaterThanOrEqualToThreshold", 50_000, 3, 300,
    )  # fmt: skip
    [dimension] = latency["Dimensions"]
    assert dimension == {"Name": "ProxyName", "Value": {"Ref": logical_id(stage, "AWS::RDS::DBProxy")}}


# --- ingest ------------------------------------------------------------------------------------------------------


def test_ingest_queue_oldest_message(stage: Synthesized) -> None:
    queue = next(name for name, q in stage.resources("AWS::SQS::Queue").items() if "RedrivePolicy" in q["Properties"])
    age = alarm(stage, "IngestQueueAge")
    assert metric(age) == ("AWS/SQS", "ApproximateAgeOfOldestMessage", "Maximum", "GreaterThanOrEqualToThreshold", 1800, 1, 300)
    assert age["Dimensions"] == [{"Name": "QueueName", "Value": {"Fn::GetAtt": [queue, "QueueName"]}}]
    # Longer than the retries of one message that keeps failing with the handler's backoff (7.5 min).
    assert age["Threshold"] > 30 + 60 + 120 + 240


# --- backfill ----------------------------------------------------------------------------------------------------


def test_backfill_failed_timed_out_and_the_schedule(stage: Synthesized) -> None:
    machine = [{"Name": "StateMachineArn", "Value": {"Ref": logical_id(stage, "AWS::StepFunctions::StateMachine", "Backfill")}}]
    failed = alarm(stage, "BackfillFailed")
    assert metric(failed) == ("AWS/States", "ExecutionsFailed", "Sum", "GreaterThanOrEqualToThreshold", 1, 1, 300)
    assert failed["Dimensions"] == machine
    assert "BackfillStageFailed" in resolve_strings(failed["AlarmDescription"])  # a failed stage fails the execution
    timed_out = alarm(stage, "BackfillTimedOut")
    assert metric(timed_out) == ("AWS/States", "ExecutionsTimedOut", "Sum", "GreaterThanOrEqualToThreshold", 1, 1, 300)
    assert timed_out["Dimensions"] == machine

    schedule = alarm(stage, "BackfillScheduleFailed")
    assert metric(schedule) == ("AWS/Events", "FailedInvocations", "Sum", "GreaterThanOrEqualToThreshold", 1, 1, 300)
    assert schedule["Dimensions"] == [
        {"Name": "RuleName", "Value": {"Ref": logical_id(stage, "AWS::Events::Rule", "BackfillSchedule")}}
    ]


def test_a_failed_or_timed_out_re_embedding_alarms_where_the_stage_re_embeds(stage: Synthesized) -> None:
    names = {"ReembedFailed", "ReembedTimedOut"}
    found = {name for name in names if any(re.fullmatch(f"Monitoring{name}[0-9A-F]{{8}}", n) for n in alarms(stage))}
    assert found == (names if stage.config.reembeds_on_bedrock else set())
    if not found:
        return
    machine = [{"Name": "StateMachineArn", "Value": {"Ref": logical_id(stage, "AWS::StepFunctions::StateMachine", "Reembed")}}]
    failed, timed_out = alarm(stage, "ReembedFailed"), alarm(stage, "ReembedTimedOut")
    assert metric(failed) == ("AWS/States", "ExecutionsFailed", "Sum", "GreaterThanOrEqualToThreshold", 1, 1, 300)
    assert metric(timed_out) == ("AWS/States", "ExecutionsTimedOut", "Sum", "GreaterThanOrEqualToThreshold", 1, 1, 300)
    assert failed["Dimensions"] == timed_out["Dimensions"] == machine
    for props in (failed, timed_out):
        lines = resolve_strings(props["AlarmDescription"]).splitlines()
        assert len(lines) >= 3 and "infra/README.md" in lines[-1]
        assert deployed_length(props["AlarmDescription"]) <= 1024


def test_backfill_that_stops_succeeding_alarms_where_the_schedule_runs(dev: Synthesized, prod: Synthesized) -> None:
    assert prod.config.backfill_schedule_enabled and not dev.config.backfill_schedule_enabled
    stuck = alarm(prod, "BackfillNotSucceeding")
    period = prod.config.backfill_schedule_minutes * 60
    # Three schedule periods in a row without a succeeded execution.
    assert (stuck["ComparisonOperator"], stuck["Threshold"], stuck["EvaluationPeriods"], stuck["DatapointsToAlarm"]) == (
        "LessThanThreshold", 1, 3, 3,
    )  # fmt: skip
    # A period without any execution is 0, not missing: Step Functions publishes nothing then, and CloudWatch would
    # look back past missing points to older successes (or, breaching, alarm on a stack that never ran yet).
    expressions = [m for m in stuck["Metrics"] if "Expression" in m]
    metrics = {m["Id"]: m for m in stuck["Metrics"] if "MetricStat" in m}
    [expression] = expressions
    assert re.fullmatch(r"FILL\((\w+), 0\)", expression["Expression"])
    [succeeded] = re.findall(r"FILL\((\w+), 0\)", expression["Expression"])
    assert metrics[succeeded]["MetricStat"] == {
        "Metric": {
            "Namespace": "AWS/States", "MetricName": "ExecutionsSucceeded",
            "Dimensions": [{"Name": "StateMachineArn", "Value": {"Ref": logical_id(prod, "AWS::StepFunctions::StateMachine")}}],
        },
        "Period": period, "Stat": "Sum",
    }  # fmt: skip
    assert metrics[succeeded]["ReturnData"] is False and expression.get("ReturnData", True) is True
    assert stuck["TreatMissingData"] == "breaching"  # no answer at all is no success either
    assert not any(name.startswith("MonitoringBackfillNotSucceeding") for name in alarms(dev))  # schedule off: silent


def test_a_new_stack_is_not_in_alarm_before_the_schedule_had_its_three_periods(prod: Synthesized) -> None:
    """A fresh stack has no executions yet: the alarm waits (INSUFFICIENT_DATA, no action) for three periods."""
    stuck = alarm(prod, "BackfillNotSucceeding")
    minutes = prod.config.backfill_schedule_minutes
    assert stuck["WarmUpConfiguration"] == {
        "WarmUpPeriodDurationInMinutes": 3 * minutes,
        # The whole warm-up: FILL makes zeros at once, which would end an early-ending warm-up right away.
        "OnlyStartEvaluatingAfterWarmUpPeriodEnds": True,
    }
    text = resolve_strings(stuck["AlarmDescription"])
    assert f"{3 * minutes} min" in text and "INSUFFICIENT_DATA" in text  # the description says why it is grey


@pytest.mark.parametrize(("minutes", "warm_up"), [(15, 45), (60, 180), (960, 2880), (1440, 2880)])
def test_the_warm_up_covers_the_first_run_up_to_a_daily_schedule(minutes: int, warm_up: int) -> None:
    # CloudWatch's warm-up is at most 2 days (2880 min): long enough for the first run of a daily schedule
    # (it starts one period after the deploy and may take the machine's 2 h) to succeed before evaluation.
    assert monitoring.backfill_warm_up_minutes(minutes) == warm_up
    assert warm_up >= min(3 * minutes, minutes + 120)


@pytest.mark.parametrize("minutes", ["0", "1441"])
def test_a_backfill_schedule_beyond_a_day_is_refused(minutes: str) -> None:
    with pytest.raises(ValueError, match="backfill_schedule_minutes must be within 1..1440"):
        stage_config("prod", {"backfill_schedule_minutes": minutes, "alarm_email": "ops@example.com"})


def test_the_dashboard_shows_the_new_metrics(stage: Synthesized) -> None:
    body = json.dumps(stage.resource("AWS::CloudWatch::Dashboard")["Properties"]["DashboardBody"])
    for metric_name in ("CPUUtilization", "DatabaseConnections", "FreeStorageSpace", "DatabaseConnectionsBorrowLatency",
                        "ApproximateAgeOfOldestMessage"):  # fmt: skip
        assert metric_name in body


# --- who receives them --------------------------------------------------------------------------------------------


def test_prod_without_an_alarm_email_does_not_synthesize_and_says_which_flag_to_pass() -> None:
    with pytest.raises(ValueError, match=r"stage prod has no alarm_email: its alarms reach nobody\. Deploy with -c alarm_email="):
        build(cdk.App(context=SKIP_BUNDLING), "prod")


def test_prod_sends_its_alarms_to_the_e_mail_given(prod: Synthesized) -> None:
    assert prod.config.alarm_email == "alarms@example.com"  # -c alarm_email=... (tests/infra/conftest.py)
    [subscription] = prod.resources("AWS::SNS::Subscription").values()
    assert subscription["Properties"] == {
        "Protocol": "email", "Endpoint": "alarms@example.com", "TopicArn": {"Ref": topic(prod)},
    }  # fmt: skip


def test_dev_without_an_alarm_email_synthesizes_with_a_warning(dev: Synthesized) -> None:
    assert dev.config.alarm_email is None
    assert dev.resources("AWS::SNS::Subscription") == {}
    Annotations.from_stack(dev.stack).has_warning(
        "/MeetingRag-dev/Monitoring", Match.string_like_regexp("stage dev has no alarm_email.*-c alarm_email=")
    )


@pytest.mark.parametrize("address", ["ops", "ops@example", "a@b.c,d@e.f", "ops @example.com"])
def test_an_alarm_email_that_is_not_one_address_is_refused(address: str) -> None:
    with pytest.raises(ValueError, match="alarm_email must be one e-mail address"):
        stage_config("dev", {"alarm_email": address})


def test_only_prod_requires_the_e_mail() -> None:
    assert monitoring.ALARM_EMAIL_REQUIRED == {"prod"}
    assert stage_config("dev", {"alarm_email": ""}).alarm_email is None  # -c alarm_email= clears it
