"""Run the backfill state machine that CDK synthesizes, locally, in moto's Step Functions engine.

The definition is never rewritten by hand: ``synthesize_backfill_template`` synthesizes
``infra.constructs.backfill_state_machine.BackfillStateMachine`` in a small stack, and
``definition_from_template`` only resolves the intrinsic functions CloudFormation would
(the Lambda ARNs, the partition). ``run_backfill_state_machine`` executes it with moto
(in-process) and dispatches every Lambda task to the in-process stage handler of
``functions/backfill/handler.py``, so local runs and tests exercise the deployed definition.
"""

from __future__ import annotations

import json
import os
import time
import uuid
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from functools import cache
from typing import Any
from unittest import mock

from rag_local.lambdas import LocalContext, load_handler_module

STAGE_HANDLERS = {"segment": "segment_handler", "embed": "embed_handler", "extract": "extract_handler"}
ACCOUNT = "123456789012"
REGION = "us-east-1"

# An in-process Lambda: event -> response (raises like a function error).
Dispatch = Callable[[dict[str, Any]], Any]


@cache  # synthesis takes seconds (jsii, Node.js); the result never changes within a process
def synthesize_backfill_template(
    *, retry_interval_seconds: int = 1, max_iterations: int = 100, idle_wait_seconds: int = 1, max_idle_batches: int = 3
) -> dict[str, Any]:
    """The CloudFormation template of a stack holding only the backfill state machine.

    Locally the waits are short (moto's engine sleeps for real): a retry after 1 s, an idle
    batch (everything held by another runner) tried again after 1 s.

    Its Lambdas are inline stubs named after the real handlers (``handler.segment_handler``,
    ...): only their ARNs matter, the state machine is the construct the CDK app deploys.
    Callers must not modify the returned template (it is cached).
    """
    import aws_cdk as cdk
    from aws_cdk import aws_lambda as lambda_

    from infra.constructs.backfill_state_machine import BackfillStateMachine

    app = cdk.App()
    stack = cdk.Stack(app, "BackfillStateMachineLocal", env=cdk.Environment(account=ACCOUNT, region=REGION))
    functions = {
        stage: lambda_.Function(
            stack,
            f"{stage.capitalize()}Function",
            runtime=lambda_.Runtime.PYTHON_3_12,
            handler=f"handler.{handler}",
            code=lambda_.Code.from_inline("def handler(event, context):\n    raise NotImplementedError\n"),
        )
        for stage, handler in STAGE_HANDLERS.items()
    }
    BackfillStateMachine(
        stack,
        "Backfill",
        segment=functions["segment"],
        embed=functions["embed"],
        extract=functions["extract"],
        max_iterations=max_iterations,
        retry_interval=cdk.Duration.seconds(retry_interval_seconds),
        idle_wait=cdk.Duration.seconds(idle_wait_seconds),
        max_idle_batches=max_idle_batches,
    )
    template: dict[str, Any] = app.synth().get_stack_by_name(stack.stack_name).template
    return template


def stage_function_ids(template: Mapping[str, Any]) -> dict[str, str]:
    """Logical id of each stage's Lambda, found by its handler (``handler.<stage>_handler``)."""
    by_handler = {f"handler.{handler}": stage for stage, handler in STAGE_HANDLERS.items()}
    found = {}
    for logical_id, resource in template["Resources"].items():
        if resource["Type"] == "AWS::Lambda::Function":
            stage = by_handler.get(resource["Properties"].get("Handler", ""))
            if stage:
                found[stage] = logical_id
    missing = set(STAGE_HANDLERS) - set(found)
    if missing:
        raise ValueError(f"template has no Lambda for stage(s) {sorted(missing)} (expected handlers handler.<stage>_handler)")
    return found


def definition_from_template(template: Mapping[str, Any], function_arns: Mapping[str, str]) -> dict[str, Any]:
    """The state machine's ASL with ``Fn::GetAtt [<logical id>, Arn]`` replaced by ``function_arns[logical id]``."""
    machines = [r for r in template["Resources"].values() if r["Type"] == "AWS::StepFunctions::StateMachine"]
    if len(machines) != 1:
        raise ValueError(f"expected one AWS::StepFunctions::StateMachine in the template, found {len(machines)}")
    definition: dict[str, Any] = json.loads(_resolve(machines[0]["Properties"]["DefinitionString"], function_arns))
    return definition


def _resolve(value: Any, function_arns: Mapping[str, str]) -> str:
    if isinstance(value, str):
        return value
    if isinstance(value, dict) and "Fn::Join" in value:
        separator: str
        parts: list[Any]
        separator, parts = value["Fn::Join"]
        return separator.join(_resolve(part, function_arns) for part in parts)
    if isinstance(value, dict) and "Fn::GetAtt" in value:
        logical_id, attribute = value["Fn::GetAtt"]
        if attribute == "Arn" and logical_id in function_arns:
            return function_arns[logical_id]
    if value == {"Ref": "AWS::Partition"}:
        return "aws"
    if value == {"Ref": "AWS::Region"}:
        return REGION
    if value == {"Ref": "AWS::AccountId"}:
        return ACCOUNT
    raise ValueError(f"cannot resolve {value!r} in the state machine definition")


def function_arn(stage: str) -> str:
    return f"arn:aws:lambda:{REGION}:{ACCOUNT}:function:backfill-{stage}"


def backfill_definition(**synth_options: Any) -> dict[str, Any]:
    """The synthesized definition with each stage's Lambda at ``function_arn(stage)``."""
    template = synthesize_backfill_template(**synth_options)
    ids = stage_function_ids(template)
    return definition_from_template(template, {logical_id: function_arn(stage) for stage, logical_id in ids.items()})


def stage_handlers(*, scale_out: bool = False) -> dict[str, Dispatch]:
    """The in-process handlers of ``functions/backfill/handler.py`` by stage.

    By default the handlers run one event at a time, like one warm container (``load_handler_module``'s lock);
    ``scale_out=True`` lets invocations run side by side, as Lambda gives concurrent invocations containers of
    their own: what two overlapping executions need.
    """
    module = load_handler_module("backfill")
    handlers = {stage: getattr(module, name) for stage, name in STAGE_HANDLERS.items()}
    if scale_out:
        handlers = {stage: handler.__wrapped__ for stage, handler in handlers.items()}  # without the container's lock
    return {stage: _in_container(handler, f"backfill-{stage}") for stage, handler in handlers.items()}


def _in_container(handler: Callable[[dict[str, Any], LocalContext], Any], function_name: str) -> Dispatch:
    """The stage's handler called as Lambda calls it: with a context naming its function."""
    return lambda event: handler(event, LocalContext(function_name=function_name))


@contextmanager
def lambdas_dispatched_to(dispatch: Mapping[str, Dispatch]) -> Iterator[None]:
    """While active, moto's Docker-less Lambda runs ``dispatch[stage]`` for ``function_arn(stage)``.

    A handler that raises becomes a Lambda function error (``errorType`` = the exception's
    class name), which is what the definition's Retry and Catch match on.
    """
    from rag_local.moto_lambda import lambdas_run_in_process

    by_arn = {function_arn(stage): handler for stage, handler in dispatch.items()}
    by_name = {arn.rsplit(":", 1)[1]: handler for arn, handler in by_arn.items()}
    with lambdas_run_in_process(lambda function_name: by_arn.get(function_name) or by_name.get(function_name)):
        yield


class LocalStateMachine:
    """The synthesized definition created in moto: start executions (several may overlap), wait for each."""

    def __init__(self, client: Any, state_machine_arn: str, *, poll_seconds: float = 0.05):
        self.client = client
        self.arn = state_machine_arn
        self.poll_seconds = poll_seconds

    def start(self, execution_input: Mapping[str, Any], *, name: str | None = None) -> str:
        """Starts an execution (moto runs it in a thread of its own) and returns its ARN at once.

        Each gets a name of its own: without one, moto names every execution ``None``, and a second start
        would only return the first execution.
        """
        response = self.client.start_execution(
            stateMachineArn=self.arn, name=name or f"local-{uuid.uuid4().hex}", input=json.dumps(execution_input)
        )
        arn: str = response["executionArn"]
        return arn

    def wait(self, execution_arn: str, *, timeout_seconds: float = 3600) -> dict[str, Any]:
        """``describe_execution`` once the execution ended (or the timeout passed), with ``output_json``,
        ``cause_json`` (a Fail state's cause, when it is JSON) and ``history``."""
        deadline = time.monotonic() + timeout_seconds
        while True:
            execution: dict[str, Any] = self.client.describe_execution(executionArn=execution_arn)
            if execution["status"] != "RUNNING" or time.monotonic() > deadline:
                break
            time.sleep(self.poll_seconds)
        execution["history"] = self.client.get_execution_history(executionArn=execution_arn, maxResults=1000)["events"]
        execution["output_json"] = json.loads(execution["output"]) if execution.get("output") else None
        execution["cause_json"] = _json_or_none(execution.get("cause"))
        return execution


def _json_or_none(text: str | None) -> Any:
    try:
        return json.loads(text) if text else None
    except ValueError:
        return None


@contextmanager
def local_state_machine(
    *,
    definition: Mapping[str, Any] | None = None,
    dispatch: Mapping[str, Dispatch] | None = None,
    poll_seconds: float = 0.05,
) -> Iterator[LocalStateMachine]:
    """While active: the synthesized definition in moto's Step Functions, its tasks dispatched in-process."""
    import boto3
    from moto import mock_aws
    from moto.core.config import DefaultConfig

    definition = definition or backfill_definition()
    dispatch = dispatch or stage_handlers()
    config: DefaultConfig = {"stepfunctions": {"execute_state_machine": True}, "lambda": {"use_docker": False}}
    # In-process moto: an AWS_ENDPOINT_URL (set for `rag up`'s moto server) would send boto3 elsewhere.
    environment = {k: v for k, v in os.environ.items() if k != "AWS_ENDPOINT_URL"}
    with mock.patch.dict(os.environ, environment, clear=True), mock_aws(config=config), lambdas_dispatched_to(dispatch):
        sfn = boto3.client("stepfunctions", region_name=REGION)
        machine = sfn.create_state_machine(
            name="backfill",
            definition=json.dumps(definition),
            roleArn=f"arn:aws:iam::{ACCOUNT}:role/backfill-state-machine",
        )
        yield LocalStateMachine(sfn, machine["stateMachineArn"], poll_seconds=poll_seconds)


def run_backfill_state_machine(
    execution_input: Mapping[str, Any],
    *,
    definition: Mapping[str, Any] | None = None,
    dispatch: Mapping[str, Dispatch] | None = None,
    poll_seconds: float = 0.05,
    timeout_seconds: float = 3600,
) -> dict[str, Any]:
    """Execute the synthesized definition in moto; returns ``describe_execution`` plus its parsed output
    (``output_json``; for a Failed execution ``error``, ``cause`` and ``cause_json``)."""
    with local_state_machine(definition=definition, dispatch=dispatch, poll_seconds=poll_seconds) as machine:
        return machine.wait(machine.start(execution_input), timeout_seconds=timeout_seconds)
