"""The backfill's alarms: executions failed or timed out, none succeeding on schedule, the schedule failing to start one."""

from __future__ import annotations

from dataclasses import dataclass

from aws_cdk import Duration
from aws_cdk import aws_cloudwatch as cw
from aws_cdk import aws_events as events
from aws_cdk import aws_stepfunctions as sfn

from infra.config import StageConfig
from infra.constructs.alarms import PERIOD, AlarmSet, runbook

BACKFILL_SUCCESS_WINDOW_PERIODS = 3  # schedule periods without a succeeded execution
ALARM_WARM_UP_MAX_MINUTES = 2880  # CloudWatch's longest warm-up (WarmUpPeriodDurationInMinutes)


def backfill_warm_up_minutes(schedule_minutes: int) -> int:
    """How long a new BackfillNotSucceeding alarm waits before judging: the window it judges (3 schedule periods),
    at most CloudWatch's 2 days, which still holds the first run of a daily schedule and its 2 h."""
    return min(BACKFILL_SUCCESS_WINDOW_PERIODS * schedule_minutes, ALARM_WARM_UP_MAX_MINUTES)


@dataclass(frozen=True)
class BackfillAlarms:
    failed: cw.Alarm
    timed_out: cw.Alarm
    not_succeeding: cw.Alarm | None  # the schedule on only
    schedule_failed: cw.Alarm | None  # a schedule rule only
    metrics: tuple[cw.IMetric, cw.IMetric]  # executions failed, timed out


def backfill_alarms(
    alarms: AlarmSet, config: StageConfig, state_machine: sfn.IStateMachine, backfill_schedule: events.IRule | None
) -> BackfillAlarms:
    """Failed and timed-out executions; with the schedule on, none succeeding; with a schedule rule, its failures."""
    machine = state_machine.state_machine_arn
    failed = state_machine.metric_failed(period=PERIOD)
    timed_out = state_machine.metric_timed_out(period=PERIOD)
    failed_alarm = alarms.add(
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
    timed_out_alarm = alarms.add(
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
    not_succeeding: cw.Alarm | None = None
    schedule_failed: cw.Alarm | None = None
    if config.backfill_schedule_enabled:
        not_succeeding = backfill_not_succeeding_alarm(alarms, config, state_machine)
    if backfill_schedule is not None:
        schedule_failures = cw.Metric(
            namespace="AWS/Events",
            metric_name="FailedInvocations",
            dimensions_map={"RuleName": backfill_schedule.rule_name},
            period=PERIOD,
            statistic="Sum",
        )
        schedule_failed = alarms.add(
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
    return BackfillAlarms(failed_alarm, timed_out_alarm, not_succeeding, schedule_failed, (failed, timed_out))


def backfill_not_succeeding_alarm(alarms: AlarmSet, config: StageConfig, state_machine: sfn.IStateMachine) -> cw.Alarm:
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
        period=Duration.minutes(minutes),
        label="Backfill executions succeeded (0 when none)",
    )
    created = cw.Alarm(
        alarms.scope,
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
    return alarms.register(created)
