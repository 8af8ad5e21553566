"""The staged backfill as one Step Functions state machine: segment, embed, extract.

Execution input (every key optional)::

    {"stages": ["segment", "embed", "extract"], "batch_size": 10, "max_iterations": 50}

Each selected stage loops ``run batch -> more?`` until the stage Lambda reports
``remaining == 0`` or the loop has run ``max_iterations`` times. The stage Lambda
counts the iterations itself (it echoes ``iteration + 1`` and running totals, see
``rag.backfill.progress``), so the loop needs nothing from the interpreter beyond
plain Choice rules. Every Task retries transient errors with backoff and catches
everything else into ``$.errors.<stage>``, then moves on to the next stage.

Output: the input's options, ``results.<stage>`` (iteration, processed, failed,
remaining, their running totals) and ``errors.<stage>`` (Error, Cause) per failed stage.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import aws_cdk as cdk
from aws_cdk import Duration, RemovalPolicy
from aws_cdk import aws_lambda as lambda_
from aws_cdk import aws_logs as logs
from aws_cdk import aws_stepfunctions as sfn
from aws_cdk import aws_stepfunctions_tasks as tasks
from constructs import Construct

if TYPE_CHECKING:
    from collections.abc import Iterable

STAGES = ("segment", "embed", "extract")
DEFAULT_BATCH_SIZE = 10
# What a stage Lambda returns (rag.backfill.progress.StageProgress) and the loop carries along.
PROGRESS_FIELDS = ("iteration", "processed", "failed", "remaining", "processed_total", "failed_total")

# Errors worth another attempt: Lambda's own service errors and the TransientError the
# stage handlers raise (database unreachable, LLM/embedding API throttled after its retries).
TRANSIENT_ERRORS = [
    "Lambda.ServiceException",
    "Lambda.AWSLambdaException",
    "Lambda.SdkClientException",
    "Lambda.TooManyRequestsException",
    "Lambda.ClientExecutionTimeoutException",
    "TransientError",
]


class BackfillStateMachine(Construct):
    """Runs the backfill stages in order; ``self.state_machine`` is the deployed machine.

    ``max_iterations`` is the default loop bound per stage (the input may set its own);
    ``retry_interval`` the first wait of the transient-error retries (doubled each time);
    ``timeout`` bounds a whole execution.
    """

    def __init__(
        self,
        scope: Construct,
        construct_id: str,
        *,
        segment: lambda_.IFunction,
        embed: lambda_.IFunction,
        extract: lambda_.IFunction,
        max_iterations: int = 100,
        retry_interval: Duration = Duration.seconds(5),
        timeout: Duration = Duration.hours(2),
    ) -> None:
        super().__init__(scope, construct_id)
        if max_iterations < 1:
            raise ValueError(f"expected max_iterations >= 1, got {max_iterations}")
        functions = {"segment": segment, "embed": embed, "extract": extract}

        done = sfn.Succeed(self, "Done")
        # Execution input over the defaults (shallow merge: a key given in the input wins).
        defaults = sfn.Pass(
            self,
            "Defaults",
            parameters={
                "defaults": {
                    "stages": list(STAGES),
                    "batch_size": DEFAULT_BATCH_SIZE,
                    "max_iterations": max_iterations,
                },
                "input.$": "$",
            },
        )
        options = sfn.Pass(
            self,
            "Options",
            parameters={"options.$": "States.JsonMerge($.defaults, $.input, false)"},
        )
        plan = sfn.Pass(
            self,
            "Plan",
            parameters={
                "options.$": "$.options",
                "plan": {f"{stage}.$": f"States.ArrayContains($.options.stages, '{stage}')" for stage in STAGES},
                "results": {},
                "errors": {},
            },
        )
        defaults.next(options).next(plan)

        # Built from the last stage backwards: each stage's gate continues to the next gate.
        next_state: sfn.IChainable = done
        for stage in reversed(STAGES):
            next_state = self._stage(stage, functions[stage], next_state, retry_interval)
        plan.next(next_state)

        self.log_group = logs.LogGroup(
            self, "Logs", retention=logs.RetentionDays.ONE_MONTH, removal_policy=RemovalPolicy.DESTROY
        )
        self.state_machine = sfn.StateMachine(
            self,
            "StateMachine",
            definition_body=sfn.DefinitionBody.from_chainable(defaults),
            timeout=timeout,
            tracing_enabled=True,
            logs=sfn.LogOptions(destination=self.log_group, level=sfn.LogLevel.ALL, include_execution_data=True),
        )
        self._acknowledge_role_wildcards(functions.values())

    def _acknowledge_role_wildcards(self, functions: Iterable[lambda_.IFunction]) -> None:
        """cdk-nag IAM5 findings of the machine's role that this construct cannot narrow, with the reason."""
        acknowledgments = [
            cdk.Acknowledgment(
                id="AwsSolutions::AwsSolutions-IAM5[Resource::*]",
                reason="X-Ray (PutTraceSegments, GetSamplingRules) and CloudWatch Logs delivery (CreateLogDelivery, ...)"
                " accept no resource narrower than *",
            )
        ]
        for function in functions:
            resource = function.node.default_child
            if isinstance(resource, cdk.CfnElement):  # functions defined in this app (imported ones have none)
                logical_id = cdk.Stack.of(function).get_logical_id(resource)
                acknowledgments.append(
                    cdk.Acknowledgment(
                        id=f"AwsSolutions::AwsSolutions-IAM5[Resource::<{logical_id}.Arn>:*]",
                        reason="LambdaInvoke also grants the function's versions and aliases; only this function is invoked",
                    )
                )
        cdk.Validations.of(self.state_machine).acknowledge(*acknowledgments)

    def _stage(
        self, stage: str, function: lambda_.IFunction, next_state: sfn.IChainable, retry_interval: Duration
    ) -> sfn.State:
        """``<stage>?`` -> ``<stage>: start`` -> ``<stage>: run batch`` <-> ``<stage>: more?`` -> next_state."""
        start = sfn.Pass(
            self,
            f"{stage}: start",
            result=sfn.Result.from_object({field: 0 for field in PROGRESS_FIELDS}),
            result_path=f"$.results.{stage}",
        )
        run_batch = tasks.LambdaInvoke(
            self,
            f"{stage}: run batch",
            lambda_function=function,
            payload=sfn.TaskInput.from_object(
                {
                    "stage": stage,
                    "batch_size.$": "$.options.batch_size",
                    "previous.$": f"$.results.{stage}",
                }
            ),
            result_selector={f"{field}.$": f"$.Payload.{field}" for field in PROGRESS_FIELDS},
            result_path=f"$.results.{stage}",
            retry_on_service_exceptions=False,  # our own Retry below covers them, with our interval
        )
        run_batch.add_retry(errors=TRANSIENT_ERRORS, interval=retry_interval, max_attempts=3, backoff_rate=2.0)
        run_batch.add_catch(next_state, errors=[sfn.Errors.ALL], result_path=f"$.errors.{stage}")
        more = (
            sfn.Choice(self, f"{stage}: more?")
            .when(sfn.Condition.number_less_than_equals(f"$.results.{stage}.remaining", 0), next_state)
            .when(
                sfn.Condition.number_greater_than_equals_json_path(
                    f"$.results.{stage}.iteration", "$.options.max_iterations"
                ),
                next_state,
            )
            .otherwise(run_batch)
        )
        start.next(run_batch)
        run_batch.next(more)
        return (
            sfn.Choice(self, f"{stage}?")
            .when(sfn.Condition.boolean_equals(f"$.plan.{stage}", True), start)
            .otherwise(next_state)
        )
