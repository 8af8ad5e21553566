"""Alarms to an SNS topic, each description a short runbook (infra/README.md, "When an alarm fires"); a dashboard.

Alarms: ingest DLQ depth and the ingest queue's oldest message; Lambda errors and throttles; the database's CPU,
free storage and connections (against its max_connections), or Aurora's per role with its capacity, memory and replica
lag, and the RDS Proxy's borrow latency; backfill executions
failed, timed out, and (with the schedule on) none succeeding for three schedule periods or the schedule failing to
start one; API 5xx and p95 latency.

Alarms reach people through an e-mail subscription (``-c alarm_email=...``): required in prod (synthesis stops with
the ``-c`` to pass), a warning elsewhere.
"""

from __future__ import annotations

import aws_cdk as cdk
from aws_cdk import aws_apigatewayv2 as apigwv2
from aws_cdk import aws_cloudwatch as cw
from aws_cdk import aws_cloudwatch_actions as cw_actions
from aws_cdk import aws_events as events
from aws_cdk import aws_iam as iam
from aws_cdk import aws_kms as kms
from aws_cdk import aws_lambda as lambda_
from aws_cdk import aws_logs as logs
from aws_cdk import aws_rds as rds
from aws_cdk import aws_sns as sns
from aws_cdk import aws_sns_subscriptions as subscriptions
from aws_cdk import aws_sqs as sqs
from aws_cdk import aws_stepfunctions as sfn
from constructs import Construct

from infra.config import StageConfig
from infra.constructs.alarms import PERIOD, AlarmSet
from infra.constructs.aurora_alarms import aurora_alarms
from infra.constructs.backfill_alarms import BackfillAlarms, backfill_alarms, backfill_warm_up_minutes
from infra.constructs.database import Database
from infra.constructs.database_alarms import DatabaseAlarms, database_alarms
from infra.constructs.ingest_alarms import dead_letters_alarm, ingest_queue_age_alarm
from infra.constructs.reembed_alarms import reembed_alarms
from infra.constructs.service_alarms import api_alarms, lambda_alarms

__all__ = ["ALARM_EMAIL_REQUIRED", "Monitoring", "backfill_warm_up_minutes"]

# Stages whose alarms must reach someone: synthesis stops without -c alarm_email=...
ALARM_EMAIL_REQUIRED = frozenset({"prod"})


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
        ingest_queue: sqs.IQueue,
        database: Database,
        backfill_schedule: events.IRule | None = None,
        reembed_machine: sfn.IStateMachine | None = None,
    ) -> None:
        super().__init__(scope, id)
        self.topic = self._topic(config)
        self._subscribe(config)
        # Every alarm in this construct's scope (logical ids Monitoring<Name>), in this order on the dashboard.
        alarms = AlarmSet(self, cw_actions.SnsAction(self.topic))
        self.alarms = alarms.alarms
        dead_letters = dead_letters_alarm(alarms, dead_letter_queue, ingest_logs)
        self.dead_letters = dead_letters.alarm
        lambda_alarms(alarms, functions)
        queue_age = ingest_queue_age_alarm(alarms, ingest_queue, ingest_logs)
        self.ingest_queue_age = queue_age.alarm
        database_set = (
            aurora_alarms(alarms, config, database.cluster, database.proxy, state_machine)
            if database.cluster is not None
            else database_alarms(alarms, config, _instance(database), database.proxy, state_machine)
        )
        self.database_alarms = database_set.alarms
        backfill = backfill_alarms(alarms, config, state_machine, backfill_schedule)
        self.backfill_failed, self.backfill_timed_out = backfill.failed, backfill.timed_out
        if backfill.not_succeeding is not None:
            self.backfill_not_succeeding = backfill.not_succeeding
        if backfill.schedule_failed is not None:
            self.backfill_schedule_failed = backfill.schedule_failed
        if reembed_machine is not None:
            self.reembed_failed, self.reembed_timed_out = reembed_alarms(alarms, reembed_machine)
        latency_metrics, error_metrics = api_alarms(alarms, config, apis, functions)
        self.dashboard = self._dashboard(
            config, functions, state_machine, (latency_metrics, error_metrics), (dead_letters.metric, queue_age.metric),
            database_set, backfill,
        )  # fmt: skip

    def _topic(self, config: StageConfig) -> sns.Topic:
        # A customer managed key: CloudWatch cannot publish to a topic under the AWS managed SNS key.
        key = kms.Key(self, "TopicKey", description="meeting-rag alarm topic", enable_key_rotation=True)
        key.add_to_resource_policy(
            iam.PolicyStatement(
                principals=[iam.ServicePrincipal("cloudwatch.amazonaws.com")],
                actions=["kms:Decrypt", "kms:GenerateDataKey*"],
                resources=["*"],  # in a key policy, "*" is this key
            )
        )
        return sns.Topic(self, "Alarms", display_name=f"meeting-rag {config.name} alarms", master_key=key, enforce_ssl=True)

    def _dashboard(
        self,
        config: StageConfig,
        functions: dict[str, lambda_.IFunction],
        state_machine: sfn.IStateMachine,
        api: tuple[list[cw.IMetric], list[cw.IMetric]],
        queues: tuple[cw.IMetric, cw.IMetric],
        database: DatabaseAlarms,
        backfill: BackfillAlarms,
    ) -> cw.Dashboard:
        """Every alarm's metric graphed, and the alarms' states; ``api`` is (latency, 5xx), ``queues`` (DLQ, age)."""
        (latency_metrics, error_metrics), (dlq_depth, ingest_age) = api, queues
        failed, timed_out = backfill.metrics
        dashboard = cw.Dashboard(self, "Dashboard", dashboard_name=f"meeting-rag-{config.name}")
        dashboard.add_widgets(
            cw.GraphWidget(title="API p95 latency (ms)", left=latency_metrics),
            cw.GraphWidget(title="API 5xx", left=error_metrics),
            cw.GraphWidget(title="Ingest DLQ depth", left=[dlq_depth]),
        )
        dashboard.add_widgets(
            cw.GraphWidget(title="Lambda errors", left=[f.metric_errors(period=PERIOD) for f in functions.values()]),
            cw.GraphWidget(title="Lambda throttles", left=[f.metric_throttles(period=PERIOD) for f in functions.values()]),
            cw.GraphWidget(
                title="Lambda duration p95", left=[f.metric_duration(period=PERIOD, statistic="p95") for f in functions.values()]
            ),
        )
        dashboard.add_widgets(*[cw.GraphWidget(title=title, left=metrics) for title, metrics in database.graphs])
        dashboard.add_widgets(
            cw.GraphWidget(title="Proxy borrow latency (us)", left=[database.borrow_latency]),
            cw.GraphWidget(title="Ingest queue: oldest message (s)", left=[ingest_age]),
            cw.GraphWidget(
                title="Backfill executions",
                left=[state_machine.metric_succeeded(period=PERIOD), failed, timed_out],
            ),
        )
        dashboard.add_widgets(cw.AlarmStatusWidget(title="Alarms", alarms=self.alarms, width=24))
        return dashboard

    def _subscribe(self, config: StageConfig) -> None:
        """The alarm e-mail, required where ALARM_EMAIL_REQUIRED says: a topic nobody reads is no alarm."""
        if config.alarm_email:
            self.topic.add_subscription(subscriptions.EmailSubscription(config.alarm_email))
            return
        message = (
            f"stage {config.name} has no alarm_email: its alarms reach nobody. Deploy with "
            f"-c alarm_email=<address> (an SNS e-mail subscription to the alarm topic; AWS sends a confirmation e-mail)"
        )
        if config.name in ALARM_EMAIL_REQUIRED:
            raise ValueError(message)
        cdk.Annotations.of(self).add_warning_v2("meeting-rag:no-alarm-email", message)


def _instance(database: Database) -> rds.DatabaseInstance:
    assert database.instance is not None, "an RDS stage has its instance"
    return database.instance
