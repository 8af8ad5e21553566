"""The staged backfill as one Step Functions state machine: segment, embed, extract.

Execution input (every key optional)::

    {"stages": ["segment", "embed", "extract"], "batch_size": 10, "max_iterations": 50}

``max_iterations`` must be a number from 1 to ``MAX_ITERATIONS`` (1000) and ``batch_size``
from 1 to ``MAX_BATCH_SIZE`` (500): anything else ends the execution at once as Failed
(error ``InvalidInput``), before any Lambda runs. Rejected, not clamped: a schedule or a
caller asking for more than the cap is a mistake to see (the ExecutionsFailed alarm).

Each selected stage loops ``run batch -> more?`` until the stage Lambda reports
``remaining == 0``, the loop has run ``max_iterations`` times, or ``max_idle_batches``
batches in a row found nothing to claim although work remained: those documents are
held by another runner (another execution, ``rag backfill``), which finishes them, so for
this run the stage is done. Before each retry of an idle batch the loop waits
``idle_wait``. Two overlapping executions therefore share the work batch by batch
(``FOR UPDATE SKIP LOCKED``: never the same document) and neither spins on the other's.

The stage Lambda counts the iterations and the idle batches itself (it echoes
``iteration + 1``, ``idle_batches`` and running totals, see ``rag.backfill.progress``), so
the loop needs no arithmetic in the definition; the intrinsic functions are
``States.JsonMerge`` (input over defaults), ``States.ArrayContains`` (stage selection),
``States.Format`` and ``States.JsonToString`` (the causes of the Fail states), all executed
by moto 5.2.5 in the tests. Every Task retries transient errors with backoff and catches
everything else (a Lambda timeout included: its batch was never committed) into
``$.errors.<stage>``, then moves on to the next stage.

A stage that failed fails the execution: after the last stage, any ``errors.<stage>``
leads to the Fail state ``Stage failed`` (error ``BackfillStageFailed``, cause the JSON
of ``{"errors": ..., "results": ...}``), so Step Functions counts it in ExecutionsFailed
and the alarm fires. Otherwise the output is the options and ``results.<stage>``
(iteration, processed, failed, remaining, idle_batches, running totals), ``errors`` empty.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import aws_cdk as cdk
from aws_cdk import Duration
from aws_cdk import aws_lambda as lambda_
from aws_cdk import aws_stepfunctions as sfn
from aws_cdk import aws_stepfunctions_tasks as tasks
from constructs import Construct

from infra.defaults import logged_state_machine

if TYPE_CHECKING:
    from collections.abc import Iterable

STAGES = ("segment", "embed", "extract")
DEFAULT_BATCH_SIZE = 10
# Bounds of the execution input: a larger max_iterations is rejected (InvalidInput), not clamped.
MAX_ITERATIONS = 1000
MAX_BATCH_SIZE = 500  # the stage handlers' own bound (rag.backfill.progress.MAX_BATCH_SIZE)
# What a stage Lambda returns (rag.backfill.progress.StageProgress) and the loop carries along.
PROGRESS_FIELDS = ("iteration", "processed", "failed", "remaining", "idle_batches", "processed_total", "failed_total")

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

    ``max_iterations`` is the default loop bound per stage (the input may set its own, up
    to ``MAX_ITERATIONS``); ``retry_interval`` the first wait of the transient-error retries
    (doubled each time); ``idle_wait`` the wait before trying again when a batch found
    nothing to claim (another runner holds what remains) and ``max_idle_batches`` how many
    such batches in a row end the stage; ``timeout`` bounds a whole execution.
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
        idle_wait: Duration = Duration.seconds(30),
        max_idle_batches: int = 3,
        timeout: Duration = Duration.hours(2),
        reembed: sfn.IStateMachine | None = None,
    ) -> None:
        super().__init__(scope, construct_id)
        if not 1 <= max_iterations <= MAX_ITERATIONS:
            raise ValueError(f"expected max_iterations >= 1 and <= {MAX_ITERATIONS}, got {max_iterations}")
        if max_idle_batches < 1:
            raise ValueError(f"expected max_idle_batches >= 1, got {max_idle_batches}")
        functions = {"segment": segment, "embed": embed, "extract": extract}
        self.idle_wait = idle_wait
        self.max_idle_batches = max_idle_batches

        finish = self._finish(reembed)
        defaults, plan = self._input(max_iterations)

        # Built from the last stage backwards: each stage's gate continues to the next gate.
        next_state: sfn.IChainable = finish
        for stage in reversed(STAGES):
            next_state = self._stage(stage, functions[stage], next_state, retry_interval)
        plan.next(next_state)

        self.log_group, self.state_machine = logged_state_machine(self, defaults, timeout)
        self._acknowledge_role_wildcards(functions.values())

    def _finish(self, reembed: sfn.IStateMachine | None) -> sfn.IChainable:
        """The end: success, or (a stage's error caught into $.errors.<stage>) a failed execution, errors in the cause.

        With ``reembed``, a successful run starts that machine and does not wait for it (its plan finds nothing to
        do unless the configured embedding model differs from the database's); a start that fails is kept in
        ``$.reembed`` and the run still succeeds.
        """
        done: sfn.IChainable = sfn.Succeed(self, "Done")
        if reembed is not None:
            start = tasks.StepFunctionsStartExecution(
                self,
                "Start re-embedding",
                state_machine=reembed,
                integration_pattern=sfn.IntegrationPattern.REQUEST_RESPONSE,
                input=sfn.TaskInput.from_object({"started_by.$": "$$.Execution.Id"}),
                result_selector={"execution_arn.$": "$.ExecutionArn"},
                result_path="$.reembed",
            )
            start.add_catch(done, errors=[sfn.Errors.ALL], result_path="$.reembed")
            done = start.next(done)
        report = sfn.Pass(self, "Report", parameters={"errors.$": "$.errors", "results.$": "$.results"})
        report.next(
            sfn.Fail(
                self,
                "Stage failed",
                error="BackfillStageFailed",
                cause_path=sfn.JsonPath.json_to_string(sfn.JsonPath.object_at("$")),
            )
        )
        return (
            sfn.Choice(self, "Any stage failed?")
            .when(sfn.Condition.or_(*(sfn.Condition.is_present(f"$.errors.{stage}") for stage in STAGES)), report)
            .otherwise(done)
        )

    def _input(self, max_iterations: int) -> tuple[sfn.Pass, sfn.Pass]:
        """The first state (execution input over the defaults, validated) and the plan the stages read."""
        invalid = sfn.Fail(
            self,
            "Invalid input",
            error="InvalidInput",
            cause_path=sfn.JsonPath.format(
                f"max_iterations must be a number from 1 to {MAX_ITERATIONS} and batch_size from 1 to {MAX_BATCH_SIZE};"
                " the options were {}",
                sfn.JsonPath.json_to_string(sfn.JsonPath.object_at("$.options")),
            ),
        )
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
        defaults.next(options).next(
            sfn.Choice(self, "Valid input?")
            .when(
                sfn.Condition.or_(
                    *_out_of_range("$.options.max_iterations", MAX_ITERATIONS),
                    *_out_of_range("$.options.batch_size", MAX_BATCH_SIZE),
                ),
                invalid,
            )
            .otherwise(plan)
        )
        return defaults, plan

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

    def _stage(self, stage: str, function: lambda_.IFunction, next_state: sfn.IChainable, retry_interval: Duration) -> sfn.State:
        """``<stage>?`` -> ``<stage>: start`` -> ``<stage>: run batch`` <-> ``<stage>: more?`` -> next_state.

        ``more?`` goes back to ``run batch`` directly after a batch that claimed something, through
        ``<stage>: wait`` after one that found everything held by another runner.
        """
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
                sfn.Condition.number_greater_than_equals_json_path(f"$.results.{stage}.iteration", "$.options.max_iterations"),
                next_state,
            )
            # Work remains but another runner holds it: done for this run after max_idle_batches tries.
            .when(
                sfn.Condition.number_greater_than_equals(f"$.results.{stage}.idle_batches", self.max_idle_batches),
                next_state,
            )
            .when(
                sfn.Condition.number_greater_than_equals(f"$.results.{stage}.idle_batches", 1),
                sfn.Wait(self, f"{stage}: wait", time=sfn.WaitTime.duration(self.idle_wait)).next(run_batch),
            )
            .otherwise(run_batch)
        )
        start.next(run_batch)
        run_batch.next(more)
        return (
            sfn.Choice(self, f"{stage}?").when(sfn.Condition.boolean_equals(f"$.plan.{stage}", True), start).otherwise(next_state)
        )


def _out_of_range(path: str, high: int) -> list[sfn.Condition]:
    """The value at ``path`` is not a number from 1 to ``high`` (the type test first: Or stops at the first true)."""
    return [
        sfn.Condition.is_not_numeric(path),
        sfn.Condition.number_less_than(path, 1),
        sfn.Condition.number_greater_than(path, high),
    ]
