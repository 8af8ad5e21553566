"""Alarms to an SNS topic, each description a short runbook (infra/README.md, "When an alarm fires"); a dashboard.

Alarms: ingest DLQ depth and the ingest queue's oldest message; Lambda errors and throttles; the database's CPU,
free storage and connections (against its max_connections) and the RDS Proxy's borrow latency; backfill executions
failed, timed out, and (with the schedule on) none succeeding for three schedule periods or the schedule failing to
start one; API 5xx and p95 latency.

Alarms reach people through an e-mail subscription (``-c alarm_email=...``): required in prod (synthesis stops with
the ``-c`` to pass), a warning elsewhere.
"""

from __future__ import annotations

import math

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

PERIOD = cdk.Duration.minutes(5)
RUNBOOK = "Runbook: infra/README.md, 'When an alarm fires'."
# Stages whose alarms must reach someone: synthesis stops without -c alarm_email=...
ALARM_EMAIL_REQUIRED = frozenset({"prod"})

# Thresholds (infra/README.md, "When an alarm fires", says why each).
DB_CPU_PERCENT = 80  # average over 3 x 5 min
DB_FREE_STORAGE_FRACTION = 0.10  # of the initial allocation: storage autoscaling acts at 10% of the current one
DB_CONNECTIONS_FRACTION = 0.80  # of max_connections (the parameter group's db_max_connections)
PROXY_BORROW_LATENCY_US = 50_000  # 50 ms average over 3 x 5 min; a free pooled connection is borrowed in well under 1 ms
INGEST_QUEUE_AGE_SECONDS = 30 * 60  # the retries of one message span 7.5 min (backoff) to 48 min (timeouts)
BACKFILL_SUCCESS_WINDOW_PERIODS = 3  # schedule periods without a succeeded execution
ALARM_WARM_UP_MAX_MINUTES = 2880  # CloudWatch's longest warm-up (WarmUpPeriodDurationInMinutes)


def backfill_warm_up_minutes(schedule_minutes: int) -> int:
    """How long a new BackfillNotSucceeding alarm waits before judging: the window it judges (3 schedule periods),
    at most CloudWatch's 2 days, which still holds the first run of a daily schedule and its 2 h."""
    return min(BACKFILL_SUCCESS_WINDOW_PERIODS * schedule_minutes, ALARM_WARM_UP_MAX_MINUTES)


def runbook(*lines: str) -> str:
    """An alarm description: what it means, then numbered steps, then where the long version is."""
    return "\n".join([*lines, RUNBOOK])


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
        ingest_queue: sqs.IQueue,
        db_instance: rds.IDatabaseInstance,
        db_proxy: rds.IDatabaseProxy,
        backfill_schedule: events.IRule | None = None,
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
        self._subscribe(config)
        action = cw_actions.SnsAction(self.topic)
        self.alarms: list[cw.Alarm] = []

        def alarm(
            id: str,
            metric: cw.IMetric,
            threshold: float,
            description: str,
            periods: int = 1,
            *,
            comparison: cw.ComparisonOperator = cw.ComparisonOperator.GREATER_THAN_OR_EQUAL_TO_THRESHOLD,
            missing: cw.TreatMissingData = cw.TreatMissingData.NOT_BREACHING,
        ) -> cw.Alarm:
            created = cw.Alarm(
                self,
                id,
                metric=metric,
                threshold=threshold,
                evaluation_periods=periods,
                comparison_operator=comparison,
                treat_missing_data=missing,
                alarm_description=description,
            )
            created.add_alarm_action(action)
            self.alarms.append(created)
            return created

        dlq_depth = dead_letter_queue.metric_approximate_number_of_messages_visible(period=PERIOD, statistic="Maximum")
        # Any message in the DLQ (ApproximateNumberOfMessagesVisible >= 1, i.e. > 0); the description is the runbook.
        self.dead_letters = alarm("DeadLetters", dlq_depth, 1, dead_letter_runbook(dead_letter_queue, ingest_logs))
        for name, function in functions.items():
            logs_of = f"aws logs tail /aws/lambda/{function.function_name} --since 1h --filter-pattern ERROR"
            alarm(
                f"{name}Errors",
                function.metric_errors(period=PERIOD),
                1,
                runbook(f"{name} Lambda raised errors.", f"1) Find the error: {logs_of}", "2) Fix the cause."),
            )
            alarm(
                f"{name}Throttles",
                function.metric_throttles(period=PERIOD),
                1,
                runbook(
                    f"{name} Lambda was throttled: refused for concurrency.",
                    "1) Check its reserved concurrency against its load (infra/README.md, 'Capacity').",
                ),
            )
        ingest_age = ingest_queue.metric_approximate_age_of_oldest_message(period=PERIOD, statistic="Maximum")
        self.ingest_queue_age = alarm(
            "IngestQueueAge",
            ingest_age,
            INGEST_QUEUE_AGE_SECONDS,
            runbook(
                f"An S3 change has waited {INGEST_QUEUE_AGE_SECONDS // 60} min or more in the ingest queue: new documents"
                " are not searchable yet.",
                "A bulk upload being worked through is normal: the age falls again as the queue drains.",
                f"1) Errors: aws logs tail {ingest_logs.log_group_name} --since 1h --filter-pattern ERROR",
                "2) Ingest throttled or at its concurrency (Throttles alarm, ConcurrentExecutions): raise"
                " ingest_max_concurrency within the proxy's pool (infra/README.md, 'Capacity').",
                "3) Database alarms too? Fix the database first. Messages failing 5 times go to the DLQ (its own alarm).",
            ),
        )

        # --- database and proxy --------------------------------------------------------------------------
        instance = db_instance.instance_identifier
        db_cpu = db_instance.metric_cpu_utilization(period=PERIOD, statistic="Average")
        self.database_cpu = alarm(
            "DatabaseCpu",
            db_cpu,
            DB_CPU_PERCENT,
            runbook(
                f"The database's CPU has been at {DB_CPU_PERCENT}% or more for 15 min: queries slow down, API latency follows.",
                "1) What runs (as rag_admin): SELECT pid, usename, now() - query_start AS age, left(query, 80) FROM"
                " pg_stat_activity WHERE state <> 'idle' ORDER BY age DESC;",
                "2) A backfill or bulk ingest ends by itself; to shed load now stop the backfill: aws stepfunctions"
                f" list-executions --state-machine-arn {state_machine.state_machine_arn} --status-filter RUNNING, then"
                " stop-execution --execution-arn <arn> (its batch rolls back).",
                "3) Steady load: a larger class, cdk deploy -c db_instance_class=<class>.",
            ),
            periods=3,
        )
        free_storage_bytes = math.floor(DB_FREE_STORAGE_FRACTION * config.db_allocated_storage_gb * 2**30)
        db_storage = db_instance.metric_free_storage_space(period=PERIOD, statistic="Minimum")
        self.database_storage = alarm(
            "DatabaseFreeStorage",
            db_storage,
            free_storage_bytes,
            runbook(
                f"Less than {free_storage_bytes / 2**30:g} GiB of database storage is free: at 0 writes fail (ingest,"
                " backfill, then the DLQ fills).",
                f"Storage grows by itself up to db_max_allocated_storage_gb ({config.db_max_allocated_storage_gb} GiB),"
                " at most once every 6 hours.",
                "1) What is large: SELECT relname, pg_size_pretty(pg_total_relation_size(oid)) FROM pg_class ORDER BY"
                " pg_total_relation_size(oid) DESC LIMIT 10; many dead rows: VACUUM (ANALYZE) that table.",
                "2) More now: aws rds modify-db-instance --db-instance-identifier"
                f" {instance} --allocated-storage <GiB> --apply-immediately; for good: -c db_max_allocated_storage_gb=<GiB>.",
            ),
            comparison=cw.ComparisonOperator.LESS_THAN_THRESHOLD,
        )
        connections_threshold = math.ceil(DB_CONNECTIONS_FRACTION * config.db_max_connections)
        db_connections = db_instance.metric_database_connections(period=PERIOD, statistic="Maximum")
        self.database_connections = alarm(
            "DatabaseConnections",
            db_connections,
            connections_threshold,
            runbook(
                f"{connections_threshold} or more of the database's max_connections ({config.db_max_connections}) are in"
                " use: near the limit new connections (the proxy's, the migrator, a rotation, an operator) are refused.",
                f"The proxy may open {config.db_proxy_max_connections_percent}% of them; the rest is admin headroom.",
                "1) Who holds them: SELECT usename, application_name, state, count(*) FROM pg_stat_activity GROUP BY 1, 2, 3"
                " ORDER BY 4 DESC;",
                "2) Sessions left open outside the proxy (not rag_app): SELECT pg_terminate_backend(<pid>);",
                "3) Steady demand: a larger class with a higher db_max_connections (infra/README.md, 'Capacity').",
            ),
            periods=2,
        )
        proxy = db_proxy.db_proxy_name
        borrow_latency = cw.Metric(
            namespace="AWS/RDS",
            metric_name="DatabaseConnectionsBorrowLatency",
            dimensions_map={"ProxyName": proxy},
            period=PERIOD,
            statistic="Average",
        )
        self.proxy_borrow_latency = alarm(
            "ProxyBorrowLatency",
            borrow_latency,
            PROXY_BORROW_LATENCY_US,
            runbook(
                f"Borrowing a connection from the RDS Proxy takes {PROXY_BORROW_LATENCY_US // 1000} ms or more on average"
                " (15 min): its pool is full or pinned; callers wait up to the borrow timeout (120 s), then fail.",
                f"1) CloudWatch AWS/RDS, ProxyName={proxy}: DatabaseConnectionsCurrentlyBorrowed against"
                " MaxDatabaseConnectionsAllowed (full?), DatabaseConnectionsCurrentlySessionPinned (pinned?).",
                "2) Full: which function holds them (Lambda ConcurrentExecutions); lower its reserved concurrency or"
                " raise db_max_connections (infra/README.md, 'Capacity').",
                "3) Database CPU alarm too: slow queries hold connections longer; fix that first.",
            ),
            periods=3,
        )

        # --- backfill -----------------------------------------------------------------------------------
        machine = state_machine.state_machine_arn
        failed = state_machine.metric_failed(period=PERIOD)
        timed_out = state_machine.metric_timed_out(period=PERIOD)
        self.backfill_failed = alarm(
            "BackfillFailed",
            failed,
            1,
            runbook(
                "A backfill execution failed: a stage raised an error that is not transient (error BackfillStageFailed,"
                " its cause lists errors.<stage> and the results), transient errors outlasted the retries, or the input"
                " was invalid (InvalidInput).",
                f"1) aws stepfunctions list-executions --state-machine-arn {machine} --status-filter FAILED --max-items 3;"
                " aws stepfunctions describe-execution --execution-arn <arn> --query '[error, cause]'",
                "2) The stage Lambda's log has the error; a document's own errors are in documents.backfill_error.",
                "3) Fix, then start-execution with the same --state-machine-arn (or wait for the schedule): documents"
                " are claimed again where they stopped.",
            ),
        )
        self.backfill_timed_out = alarm(
            "BackfillTimedOut",
            timed_out,
            1,
            runbook(
                "A backfill execution ran past the state machine's timeout and was stopped: a stage hung (a Lambda waiting"
                " on the database or the LLM) or max_iterations batches take longer than the timeout. The batch in"
                " flight rolled back.",
                f"1) aws stepfunctions list-executions --state-machine-arn {machine} --status-filter TIMED_OUT --max-items 3;"
                " aws stepfunctions get-execution-history --execution-arn <arn> --reverse-order --max-items 20",
                "2) Lambda Duration near its timeout: lower batch_size; many iterations: lower max_iterations.",
                "3) The next execution continues where this one stopped.",
            ),
        )
        if config.backfill_schedule_enabled:
            self.backfill_not_succeeding = self._backfill_not_succeeding(config, state_machine, action)
        if backfill_schedule is not None:
            schedule_failures = cw.Metric(
                namespace="AWS/Events",
                metric_name="FailedInvocations",
                dimensions_map={"RuleName": backfill_schedule.rule_name},
                period=PERIOD,
                statistic="Sum",
            )
            self.backfill_schedule_failed = alarm(
                "BackfillScheduleFailed",
                schedule_failures,
                1,
                runbook(
                    "EventBridge could not start the backfill state machine: scheduled backfills do not run.",
                    "Causes: the rule's role lost states:StartExecution, the machine was replaced, Step Functions throttled.",
                    "1) CloudTrail: StartExecution errors of the rule's role in the last hour.",
                    "2) cdk deploy the stack again: it restores the role and the target.",
                ),
            )
        latency_metrics = []
        error_metrics = []
        for name, api in apis.items():
            errors = api.metric_server_error(period=PERIOD)
            latency = api.metric_latency(period=PERIOD, statistic="p95")
            query = functions.get("Query")
            query_logs = f"aws logs tail /aws/lambda/{query.function_name if query else '<query function>'} --since 1h"
            alarm(
                f"{name}ServerErrors",
                errors,
                1,
                runbook(f"{name} answered 5xx.", f"1) Find the error: {query_logs}", "2) Check the database alarms."),
            )
            alarm(
                f"{name}LatencyP95",
                latency,
                config.api_p95_latency_ms,
                runbook(
                    f"{name} p95 latency over {config.api_p95_latency_ms} ms for 15 minutes.",
                    "1) Check DatabaseCpu and ProxyBorrowLatency, then the query function's duration on the dashboard.",
                ),
                periods=3,
            )
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
            cw.GraphWidget(
                title="Lambda duration p95", left=[f.metric_duration(period=PERIOD, statistic="p95") for f in functions.values()]
            ),
        )
        self.dashboard.add_widgets(
            cw.GraphWidget(title="Database CPU (%)", left=[db_cpu]),
            cw.GraphWidget(title="Database connections", left=[db_connections]),
            cw.GraphWidget(title="Database free storage (bytes)", left=[db_storage]),
        )
        self.dashboard.add_widgets(
            cw.GraphWidget(title="Proxy borrow latency (us)", left=[borrow_latency]),
            cw.GraphWidget(title="Ingest queue: oldest message (s)", left=[ingest_age]),
            cw.GraphWidget(
                title="Backfill executions",
                left=[state_machine.metric_succeeded(period=PERIOD), failed, timed_out],
            ),
        )
        self.dashboard.add_widgets(cw.AlarmStatusWidget(title="Alarms", alarms=self.alarms, width=24))

    def _backfill_not_succeeding(
        self, config: StageConfig, state_machine: sfn.IStateMachine, action: cw.IAlarmAction
    ) -> cw.Alarm:
        """No execution succeeded in three schedule periods in a row: runs keep failing, time out, hang or never start.

        Step Functions publishes ExecutionsSucceeded only when one succeeds, so a quiet period is missing data.
        FILL makes it 0: a schedule that stops is seen after three periods (with missing points CloudWatch looks
        back to older successes). A new stack has no executions yet: the warm-up keeps the alarm in
        INSUFFICIENT_DATA, without actions, for those three periods (the same after an update of the alarm).
        """
        minutes = config.backfill_schedule_minutes
        periods = BACKFILL_SUCCESS_WINDOW_PERIODS
        warm_up = backfill_warm_up_minutes(minutes)
        machine = state_machine.state_machine_arn
        succeeded = cw.MathExpression(
            expression="FILL(succeeded, 0)",
            using_metrics={"succeeded": state_machine.metric_succeeded(statistic="Sum")},
            period=cdk.Duration.minutes(minutes),
            label="Backfill executions succeeded (0 when none)",
        )
        created = cw.Alarm(
            self,
            "BackfillNotSucceeding",
            metric=succeeded,
            threshold=1,
            evaluation_periods=periods,
            datapoints_to_alarm=periods,
            comparison_operator=cw.ComparisonOperator.LESS_THAN_THRESHOLD,
            treat_missing_data=cw.TreatMissingData.BREACHING,  # no answer at all is no success either
            alarm_description=runbook(
                f"No backfill execution succeeded in {periods * minutes} min ({periods} periods of the schedule, which"
                f" starts one every {minutes} min): runs keep failing, time out, hang, or never start.",
                f"A new or updated alarm stays INSUFFICIENT_DATA for {warm_up} min (its warm-up) while the first runs"
                " happen; a period without executions counts as 0, so a schedule that stops alarms.",
                f"1) aws stepfunctions list-executions --state-machine-arn {machine} --max-items 10: their status.",
                "2) FAILED or TIMED_OUT: the BackfillFailed / BackfillTimedOut steps. None at all: the schedule is"
                " disabled or cannot start it (BackfillScheduleFailed).",
                "3) RUNNING for hours: aws stepfunctions stop-execution --execution-arn <arn> (its batch rolls back).",
            ),
        )
        cfn = created.node.default_child
        assert isinstance(cfn, cw.CfnAlarm)
        cfn.warm_up_configuration = cw.CfnAlarm.WarmUpConfigurationProperty(
            warm_up_period_duration_in_minutes=warm_up,
            # The whole warm-up: FILL answers zeros at once, which would end an early-ending warm-up right away.
            only_start_evaluating_after_warm_up_period_ends=True,
        )
        created.add_alarm_action(action)
        self.alarms.append(created)
        return created

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
