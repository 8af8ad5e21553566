"""The re-embedding's alarms: a run that failed or ran past its machine's timeout (the database stays in its model).

No alarm on the re-embed function's throttles: the Map runs more steps than its reserved concurrency on purpose and
the machine retries them; a step that keeps failing fails the execution, which is what these alarms see.
"""

from __future__ import annotations

from aws_cdk import aws_cloudwatch as cw
from aws_cdk import aws_stepfunctions as sfn

from infra.constructs.alarms import PERIOD, AlarmSet, runbook


def reembed_alarms(alarms: AlarmSet, state_machine: sfn.IStateMachine) -> tuple[cw.Alarm, cw.Alarm]:
    machine = state_machine.state_machine_arn
    failed = alarms.add(
        "ReembedFailed",
        state_machine.metric_failed(period=PERIOD),
        1,
        runbook(
            "A re-embedding run failed (error ReembedFailed): a batch job failed or a step raised an error that is not"
            " transient. The run is recorded failed, its jobs still running were stopped, and searches stay in the"
            " database's model.",
            f"1) aws stepfunctions list-executions --state-machine-arn {machine} --status-filter FAILED --max-items 3;"
            " a failed job's message is in its child execution and in reembed_manifests.error.",
            "2) Fix the cause (the job's role, a quota, a record Bedrock refuses), then start-execution again: the next"
            " plan starts a new run, keeping what the failed one imported.",
        ),
    )
    timed_out = alarms.add(
        "ReembedTimedOut",
        state_machine.metric_timed_out(period=PERIOD),
        1,
        runbook(
            "A re-embedding run ran past its machine's timeout (7 days): Bedrock's jobs waited in its queue, or the"
            " switch never found the tables' locks free.",
            f"1) aws stepfunctions list-executions --state-machine-arn {machine} --status-filter TIMED_OUT --max-items 3",
            "2) The run is left running: the next execution's plan resumes it an hour after its last step.",
        ),
    )
    return failed, timed_out
