"""Alarms (DLQ depth, Lambda errors and throttles, backfill failures, API 5xx and p95 latency) to an SNS topic; a dashboard."""

from __future__ import annotations

import aws_cdk as cdk
from aws_cdk import aws_apigatewayv2 as apigwv2
from aws_cdk import aws_cloudwatch as cw
from aws_cdk import aws_cloudwatch_actions as cw_actions
from aws_cdk import aws_iam as iam
from aws_cdk import aws_kms as kms
from aws_cdk import aws_lambda as lambda_
from aws_cdk import aws_logs as logs
from aws_cdk import aws_sns as sns
from aws_cdk import aws_sns_subscriptions as subscriptions
from aws_cdk import aws_sqs as sqs
from aws_cdk import aws_stepfunctions as sfn
from constructs import Construct

from infra.config import StageConfig

PERIOD = cdk.Duration.minutes(5)


def dead_letter_runbook(dead_letter_queue: sqs.IQueue, ingest_logs: logs.ILogGroup) -> str:
    """What the operator does when the DLQ alarm fires, with this stack's names filled in (infra/README.md has more)."""
    dlq = dead_letter_queue.queue_arn
    return "\n".join(
        [
            "Ingest messages are in the DLQ: these S3 changes failed every retry and are not in the database.",
            f"1) Find the error: aws logs tail {ingest_logs.log_group_name} --since 6h --filter-pattern ERROR",
            "2) Fix the cause (code, a file, the database, a quota).",
            f"3) Redrive to the ingest queue: aws sqs start-message-move-task --source-arn {dlq}",
            f"   and watch it: aws sqs list-message-move-tasks --source-arn {dlq}",
            "Runbook: infra/README.md, 'When the DLQ alarm fires'.",
        ]
    )


class Monitoring(Construct):
    def __init__(
        self,
        scope: Construct,
        id: str,
        *,
        config: StageConfig,
        functions: dict[str, lambda_.IFunction],
        dead_letter_queue: sqs.IQueue,
        ingest_logs: logs.ILogGroup,
        state_machine: sfn.IStateMachine,
        apis: dict[str, apigwv2.HttpApi],
    ) -> None:
        super().__init__(scope, id)
        # A customer managed key: CloudWatch cannot publish to a topic under the AWS managed SNS key.
        key = kms.Key(self, "TopicKey", description="meeting-rag alarm topic", enable_key_rotation=True)
        key.add_to_resource_policy(
            iam.PolicyStatement(
                principals=[iam.ServicePrincipal("cloudwatch.amazonaws.com")],
                actions=["kms:Decrypt", "kms:GenerateDataKey*"],
                resources=["*"],  # in a key policy, "*" is this key
            )
        )
        self.topic = sns.Topic(self, "Alarms", display_name=f"meeting-rag {config.name} alarms", master_key=key, enforce_ssl=True)
        if config.alarm_email:
            self.topic.add_subscription(subscriptions.EmailSubscription(config.alarm_email))
        action = cw_actions.SnsAction(self.topic)
        self.alarms: list[cw.Alarm] = []

        def alarm(id: str, metric: cw.IMetric, threshold: float, description: str, periods: int = 1) -> cw.Alarm:
            created = cw.Alarm(
                self,
                id,
                metric=metric,
                threshold=threshold,
                evaluation_periods=periods,
                comparison_operator=cw.ComparisonOperator.GREATER_THAN_OR_EQUAL_TO_THRESHOLD,
                treat_missing_data=cw.TreatMissingData.NOT_BREACHING,
                alarm_description=description,
            )
            created.add_alarm_action(action)
            self.alarms.append(created)
            return created

        dlq_depth = dead_letter_queue.metric_approximate_number_of_messages_visible(period=PERIOD, statistic="Maximum")
        # Any message in the DLQ (ApproximateNumberOfMessagesVisible >= 1, i.e. > 0); the description is the runbook.
        self.dead_letters = alarm("DeadLetters", dlq_depth, 1, dead_letter_runbook(dead_letter_queue, ingest_logs))
        for name, function in functions.items():
            alarm(f"{name}Errors", function.metric_errors(period=PERIOD), 1, f"{name} Lambda raised errors")
            alarm(f"{name}Throttles", function.metric_throttles(period=PERIOD), 1, f"{name} Lambda was throttled")
        failed = state_machine.metric_failed(period=PERIOD)
        timed_out = state_machine.metric_timed_out(period=PERIOD)
        alarm("BackfillFailed", failed, 1, "A backfill execution failed")
        alarm("BackfillTimedOut", timed_out, 1, "A backfill execution timed out")
        latency_metrics = []
        error_metrics = []
        for name, api in apis.items():
            errors = api.metric_server_error(period=PERIOD)
            latency = api.metric_latency(period=PERIOD, statistic="p95")
            alarm(f"{name}ServerErrors", errors, 1, f"{name} answered 5xx")
            alarm(f"{name}LatencyP95", latency, config.api_p95_latency_ms, f"{name} p95 latency over budget", periods=3)
            latency_metrics.append(latency)
            error_metrics.append(errors)

        self.dashboard = cw.Dashboard(self, "Dashboard", dashboard_name=f"meeting-rag-{config.name}")
        self.dashboard.add_widgets(
            cw.GraphWidget(title="API p95 latency (ms)", left=latency_metrics),
            cw.GraphWidget(title="API 5xx", left=error_metrics),
            cw.GraphWidget(title="Ingest DLQ depth", left=[dlq_depth]),
        )
        self.dashboard.add_widgets(
            cw.GraphWidget(title="Lambda errors", left=[f.metric_errors(period=PERIOD) for f in functions.values()]),
            cw.GraphWidget(title="Lambda throttles", left=[f.metric_throttles(period=PERIOD) for f in functions.values()]),
            cw.GraphWidget(title="Lambda duration p95", left=[f.metric_duration(period=PERIOD, statistic="p95") for f in functions.values()]),
        )
        self.dashboard.add_widgets(
            cw.GraphWidget(
                title="Backfill executions",
                left=[state_machine.metric_succeeded(period=PERIOD), failed, timed_out],
            ),
            cw.AlarmStatusWidget(title="Alarms", alarms=self.alarms),
        )
