"""Re-embedding a corpus as one Step Functions state machine: plan, one batch job per manifest, import, switch.

Every task invokes the one re-embed Lambda (``handler.reembed_handler``) with an action of ``rag.reembed.steps``::

    Plan {"action": "plan"} -> Anything to re-embed? -- run_id null --> Nothing to re-embed (Succeed)
      -> Manifests (Map over $.manifests, at most max_concurrency at once), per manifest:
           Submit -> Wait for the job -> Check -> Job done? -- completed --> Import
                                                            -- failed --> Batch job failed (Fail of the item)
                                                            -- otherwise (running) --> Wait for the job
      -> Finish -> Switched? -- switched --> Switched (Succeed)
                             -- catching_up --> Wait to catch up -> Finish

The Map runs in Distributed mode: each manifest is a child execution with its own history. A batch job is polled
every ``poll_interval`` for up to Bedrock's job timeout (72 hours by default: 864 polls at 5 minutes, about ten
history events each), so a few manifests polled inside one execution would pass Step Functions' 25,000 events of
history; a child execution holds one manifest's polls. moto's engine runs Distributed mode too
(tests/reembed/test_state_machine.py executes this definition; it adds Step Functions' rule, missing in moto, that a
failed item fails the Map Run with States.ExceedToleratedFailureThreshold). ``max_concurrency`` (default 10) keeps
the jobs in flight within Bedrock's quota of concurrent batch jobs per model; raise both together.

Every Task retries the Lambda's TransientError and Lambda's service errors with backoff; any other error (a job
that failed ends its item and so the Map) is caught into ``$.error`` and goes to ``Record failure``
(``{"action": "fail", "run_id", "error"}``), then to the Fail state ``Re-embedding failed`` (error
``ReembedFailed``), which the executions-failed metric counts. ``$.run_id`` is null until the plan names the run (a
failed plan is recorded with no run). An execution ends after ``timeout`` (7 days).
"""

from __future__ import annotations

import json
from typing import Any

import aws_cdk as cdk
from aws_cdk import Duration
from aws_cdk import aws_lambda as lambda_
from aws_cdk import aws_stepfunctions as sfn
from aws_cdk import aws_stepfunctions_tasks as tasks
from constructs import Construct

from infra.constructs.backfill_state_machine import TRANSIENT_ERRORS
from infra.defaults import logged_state_machine

REEMBED_FAILED = "ReembedFailed"
DEFAULT_MAX_CONCURRENCY = 10  # Bedrock's default quota of batch inference jobs in progress per model
THROTTLED = "Lambda.TooManyRequestsException"
THROTTLED_ATTEMPTS = 15
# What the machine keeps of a step's answer: the ids the next step needs (the Lambda's Payload only).
PAYLOAD = "$.Payload"


class ReembedStateMachine(Construct):
    """Drives one re-embedding run through ``function``; ``self.state_machine`` is the deployed machine.

    ``poll_interval``: the wait between two checks of a batch job, and between two finish attempts while rows
    written during the run are caught up; ``max_concurrency``: manifests (batch jobs) in flight at once;
    ``retry_interval``: the first wait of the transient-error retries (doubled each time); ``timeout``: the
    longest an execution may run.
    """

    def __init__(
        self,
        scope: Construct,
        construct_id: str,
        *,
        function: lambda_.IFunction,
        poll_interval: Duration = Duration.minutes(5),
        max_concurrency: int = DEFAULT_MAX_CONCURRENCY,
        retry_interval: Duration = Duration.seconds(10),
        timeout: Duration = Duration.days(7),
    ) -> None:
        super().__init__(scope, construct_id)
        if max_concurrency < 1:
            raise ValueError(f"expected max_concurrency >= 1, got {max_concurrency}")
        self.function = function
        self.retry_interval = retry_interval

        failed = self._record_failure()
        # $.run_id is null until the plan names the run: Record failure reads it even when the plan itself failed.
        # (CDK drops None from a Pass's result; the intrinsic yields JSON null.)
        start = sfn.Pass(self, "Start", parameters={"run_id.$": "States.StringToJson('null')"})
        plan = self._step("Plan", {"action": "plan"}, failed)
        manifests = sfn.DistributedMap(
            self,
            "Manifests",
            items_path="$.manifests",
            item_selector={"run_id.$": "$$.Map.Item.Value.run_id", "manifest.$": "$$.Map.Item.Value.manifest"},
            max_concurrency=max_concurrency,
            map_execution_type=sfn.StateMachineType.STANDARD,  # a job runs for hours: beyond Express's 5 minutes
            result_path=sfn.JsonPath.DISCARD,  # the next steps need only $.run_id
        )
        manifests.item_processor(self._manifest(poll_interval))
        manifests.add_catch(failed, errors=[sfn.Errors.ALL], result_path="$.error")
        start.next(plan).next(
            sfn.Choice(self, "Anything to re-embed?")
            .when(sfn.Condition.is_null("$.run_id"), sfn.Succeed(self, "Nothing to re-embed"))
            .otherwise(manifests)
        )
        manifests.next(self._finish(poll_interval, failed))

        self.log_group, self.state_machine = logged_state_machine(self, start, timeout)
        self._acknowledge_role_wildcards()

    def _step(self, name: str, payload: dict[str, Any], failed: sfn.IChainable | None) -> tasks.LambdaInvoke:
        """A task invoking the function with ``payload``; its answer becomes the state. Errors caught to ``failed``
        (None inside the Map: the error ends the item, and the Map's own Catch records it)."""
        task = tasks.LambdaInvoke(
            self,
            name,
            lambda_function=self.function,
            payload=sfn.TaskInput.from_object(payload),
            output_path=PAYLOAD,
            retry_on_service_exceptions=False,  # our own Retry below covers them, with our interval
        )
        self._retry(task)
        if failed is not None:
            task.add_catch(failed, errors=[sfn.Errors.ALL], result_path="$.error")
        return task

    def _retry(self, task: tasks.LambdaInvoke) -> None:
        """Throttling first: the function's reserved concurrency is small, and the items' steps queue for it (for
        up to about an hour); then the other transient errors, a few times with backoff."""
        task.add_retry(
            errors=[THROTTLED],
            interval=self.retry_interval,
            max_attempts=THROTTLED_ATTEMPTS,
            backoff_rate=2.0,
            max_delay=Duration.minutes(5),
            jitter_strategy=sfn.JitterType.FULL,
        )
        task.add_retry(errors=TRANSIENT_ERRORS, interval=self.retry_interval, max_attempts=5, backoff_rate=2.0)

    def _manifest(self, poll_interval: Duration) -> sfn.IChainable:
        """One manifest (``{"run_id", "manifest"}``): its batch job submitted, polled until it ends, its vectors imported."""
        job = {"run_id.$": "$.run_id", "manifest.$": "$.manifest", "job_arn.$": "$.job_arn"}
        submit = self._step("Submit", {"action": "submit", "run_id.$": "$.run_id", "manifest.$": "$.manifest"}, None)
        wait = sfn.Wait(self, "Wait for the job", time=sfn.WaitTime.duration(poll_interval))
        check = self._step("Check", {"action": "check", **job}, None)
        imported = self._step("Import", {"action": "import", **job}, None)
        job_failed = sfn.Fail(
            self,
            "Batch job failed",
            error="BatchJobFailed",
            cause_path=sfn.JsonPath.format(
                "manifest {} (job {}): {}",
                sfn.JsonPath.string_at("$.manifest"),
                sfn.JsonPath.string_at("$.job_arn"),
                sfn.JsonPath.string_at("$.message"),
            ),
        )
        submit.next(wait).next(check).next(
            sfn.Choice(self, "Job done?")
            .when(sfn.Condition.string_equals("$.status", "completed"), imported)
            .when(sfn.Condition.string_equals("$.status", "failed"), job_failed)
            .otherwise(wait)
        )
        return submit

    def _finish(self, poll_interval: Duration, failed: sfn.IChainable) -> sfn.IChainable:
        """Finish until the run switched: rows written during the run are caught up between attempts."""
        finish = self._step("Finish", {"action": "finish", "run_id.$": "$.run_id"}, failed)
        unexpected = sfn.Pass(
            self,
            "Unexpected status",
            parameters={
                "run_id.$": "$.run_id",
                "error": {"Error": "UnexpectedStatus", "Cause.$": "States.JsonToString($)"},
            },
        )
        unexpected.next(failed)
        finish.next(
            sfn.Choice(self, "Switched?")
            .when(sfn.Condition.string_equals("$.status", "switched"), sfn.Succeed(self, "Switched"))
            .when(
                sfn.Condition.string_equals("$.status", "catching_up"),
                sfn.Wait(self, "Wait to catch up", time=sfn.WaitTime.duration(poll_interval)).next(finish),
            )
            .otherwise(unexpected)
        )
        return finish

    def _record_failure(self) -> sfn.IChainable:
        """``fail`` marks the run failed (its error kept), then the execution fails; a failed record fails it too."""
        end = sfn.Fail(
            self,
            "Re-embedding failed",
            error=REEMBED_FAILED,
            cause_path=sfn.JsonPath.json_to_string(sfn.JsonPath.object_at("$.error")),
        )
        record = tasks.LambdaInvoke(
            self,
            "Record failure",
            lambda_function=self.function,
            payload=sfn.TaskInput.from_object(
                {"action": "fail", "run_id.$": "$.run_id", "error.$": "States.JsonToString($.error)"}
            ),
            result_path=sfn.JsonPath.DISCARD,  # $.error stays for the Fail state's cause
            retry_on_service_exceptions=False,
        )
        self._retry(record)
        record.add_catch(end, errors=[sfn.Errors.ALL], result_path="$.record_error")
        record.next(end)
        return record

    def _acknowledge_role_wildcards(self) -> None:
        """cdk-nag IAM5 findings of the machine's role that this construct cannot narrow, with the reason."""
        acknowledgments = [
            cdk.Acknowledgment(
                id="AwsSolutions::AwsSolutions-IAM5[Resource::*]",
                reason="X-Ray (PutTraceSegments, GetSamplingRules) and CloudWatch Logs delivery (CreateLogDelivery, ...)"
                " accept no resource narrower than *",
            )
        ]
        # Distributed mode: the machine starts, describes and stops its own child executions (CDK's
        # DistributedMapPolicy), whose names Step Functions makes up: execution:<machine name>:* and .../*:*.
        stack = cdk.Stack.of(self)
        region, account = nag_region_account(stack)
        machine = stack.get_logical_id(self.state_machine.node.default_child)  # type: ignore[arg-type]
        name = json.dumps({"Fn::Select": [6, {"Fn::Split": [":", {"Ref": machine}]}]}, separators=(",", ":"))
        for children in ("", "/*"):
            acknowledgments.append(
                cdk.Acknowledgment(
                    id=f"AwsSolutions::AwsSolutions-IAM5[Resource::arn:<AWS::Partition>:states:{region}:{account}"
                    f":execution:{name}{children}:*]",
                    reason="the Distributed Map's child executions of this machine only, named by Step Functions at run"
                    " time (DescribeExecution, StopExecution; RedriveExecution of a failed child)",
                )
            )
        resource = self.function.node.default_child
        if isinstance(resource, cdk.CfnElement):  # a function defined in this app (an imported one has none)
            logical_id = cdk.Stack.of(self.function).get_logical_id(resource)
            acknowledgments.append(
                cdk.Acknowledgment(
                    id=f"AwsSolutions::AwsSolutions-IAM5[Resource::<{logical_id}.Arn>:*]",
                    reason="LambdaInvoke also grants the function's versions and aliases; only this function is invoked",
                )
            )
        cdk.Validations.of(self.state_machine).acknowledge(*acknowledgments)


def nag_region_account(stack: cdk.Stack) -> tuple[str, str]:
    """The stack's region and account as cdk-nag writes them in a finding's id (placeholders when env-agnostic)."""
    region = "<AWS::Region>" if cdk.Token.is_unresolved(stack.region) else stack.region
    account = "<AWS::AccountId>" if cdk.Token.is_unresolved(stack.account) else stack.account
    return region, account
