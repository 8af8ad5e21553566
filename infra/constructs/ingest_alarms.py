"""The ingest pipeline's alarms: messages in the dead-letter queue, and an ingest queue that does not drain."""

from __future__ import annotations

from dataclasses import dataclass

from aws_cdk import aws_cloudwatch as cw
from aws_cdk import aws_logs as logs
from aws_cdk import aws_sqs as sqs

from infra.constructs.alarms import PERIOD, AlarmSet, runbook

INGEST_QUEUE_AGE_SECONDS = 30 * 60  # the retries of one message span 7.5 min (backoff) to 48 min (timeouts)


@dataclass(frozen=True)
class Watched:
    alarm: cw.Alarm
    metric: cw.IMetric  # what the dashboard graphs


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


def dead_letters_alarm(alarms: AlarmSet, dead_letter_queue: sqs.IQueue, ingest_logs: logs.ILogGroup) -> Watched:
    dlq_depth = dead_letter_queue.metric_approximate_number_of_messages_visible(period=PERIOD, statistic="Maximum")
    # Any message in the DLQ (ApproximateNumberOfMessagesVisible >= 1, i.e. > 0); the description is the runbook.
    return Watched(alarms.add("DeadLetters", dlq_depth, 1, dead_letter_runbook(dead_letter_queue, ingest_logs)), dlq_depth)


def ingest_queue_age_alarm(alarms: AlarmSet, ingest_queue: sqs.IQueue, ingest_logs: logs.ILogGroup) -> Watched:
    ingest_age = ingest_queue.metric_approximate_age_of_oldest_message(period=PERIOD, statistic="Maximum")
    created = alarms.add(
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
    return Watched(created, ingest_age)
