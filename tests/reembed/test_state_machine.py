"""The re-embedding state machine (infra/constructs/reembed_state_machine.py) executed in moto's Step Functions engine.

The definition is the one CDK synthesizes (only the Lambda's ARN resolved); its one Lambda is a scripted function
answering each action as ``rag.reembed.steps`` does, so these tests cover the machine's paths: the Distributed Map
over the manifests, the poll loop, the catch-up loop, retries and the recorded failure.
"""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Callable
from functools import cache
from typing import Any

import pytest

from rag_local.state_machine import ACCOUNT, REGION, definition_from_template, function_arn, local_state_machine
from tests.reembed.moto_map import THRESHOLD_ERROR, failed_items_fail_the_map, start_execution_speaks_boto

RUN = "r20261126T0200"
JOB = f"arn:aws:bedrock:{REGION}:{ACCOUNT}:model-invocation-job/"


@cache
def synthesize_reembed_template() -> dict[str, Any]:
    """A stack holding only the re-embed machine, with waits of 1 s (moto's engine sleeps for real)."""
    import aws_cdk as cdk
    from aws_cdk import aws_lambda as lambda_

    from infra.constructs.reembed_state_machine import ReembedStateMachine

    app = cdk.App()
    stack = cdk.Stack(app, "ReembedStateMachineLocal", env=cdk.Environment(account=ACCOUNT, region=REGION))
    function = lambda_.Function(
        stack,
        "ReembedFunction",
        runtime=lambda_.Runtime.PYTHON_3_12,
        handler="handler.reembed_handler",
        code=lambda_.Code.from_inline("def handler(event, context):\n    raise NotImplementedError\n"),
    )
    one_second = cdk.Duration.seconds(1)
    ReembedStateMachine(stack, "Reembed", function=function, poll_interval=one_second, retry_interval=one_second)
    template: dict[str, Any] = app.synth().get_stack_by_name(stack.stack_name).template
    return template


@pytest.fixture(scope="module")
def definition() -> dict[str, Any]:
    template = synthesize_reembed_template()
    [function] = [k for k, r in template["Resources"].items() if r["Type"] == "AWS::Lambda::Function"]
    return definition_from_template(template, {function: function_arn("reembed")})


class Script:
    """The re-embed Lambda as a script: each action answered as rag.reembed.steps answers it, every call recorded."""

    def __init__(self, manifests: int = 2, *, plan_run: str | None = RUN) -> None:
        self.calls: list[dict[str, Any]] = []
        self.lock = threading.Lock()  # the Map's items run side by side
        self.manifests = manifests
        self.plan_run = plan_run
        self.checks: dict[int, int] = {}
        self.finishes = 0
        self.job_status: Callable[[int, int], str] = lambda manifest, check: "running" if check == 1 else "completed"
        self.overrides: dict[str, Callable[[dict[str, Any]], Any]] = {}

    def __call__(self, event: dict[str, Any]) -> Any:
        with self.lock:
            self.calls.append(event)
            action = event["action"]
            if action in self.overrides:
                return self.overrides[action](event)
            return getattr(self, f"_{action}")(event)

    def actions(self, manifest: int | None = None) -> list[str]:
        return [c["action"] for c in self.calls if manifest is None or c.get("manifest") == manifest]

    def _plan(self, event: dict[str, Any]) -> dict[str, Any]:
        if self.plan_run is None:
            return {"run_id": None, "manifests": [], "records": 0}
        manifests = [{"run_id": self.plan_run, "manifest": n} for n in range(self.manifests)]
        return {"run_id": self.plan_run, "manifests": manifests, "records": 150 * self.manifests}

    def _submit(self, event: dict[str, Any]) -> dict[str, Any]:
        return {"run_id": event["run_id"], "manifest": event["manifest"], "job_arn": f"{JOB}job{event['manifest']}"}

    def _check(self, event: dict[str, Any]) -> dict[str, Any]:
        manifest = event["manifest"]
        self.checks[manifest] = self.checks.get(manifest, 0) + 1
        status = self.job_status(manifest, self.checks[manifest])
        message = "the model's quota was exceeded" if status == "failed" else None
        return {**{k: event[k] for k in ("run_id", "manifest", "job_arn")}, "status": status, "message": message}

    def _import(self, event: dict[str, Any]) -> dict[str, Any]:
        return {"run_id": event["run_id"], "manifest": event["manifest"], "imported": 150, "failed_records": 0}

    def _finish(self, event: dict[str, Any]) -> dict[str, Any]:
        self.finishes += 1
        status = "catching_up" if self.finishes == 1 else "switched"
        return {"run_id": event["run_id"], "status": status, "caught_up": 4, "remaining": 4 if status == "catching_up" else 0}

    def _fail(self, event: dict[str, Any]) -> dict[str, Any]:
        return {"run_id": event["run_id"], "status": "failed"}


def run(definition: dict[str, Any], script: Script, *, settled: Callable[[], bool] | None = None) -> dict[str, Any]:
    """The execution, ended; with ``settled``, moto stays up until it holds (child executions that outlive a failed
    Map in moto finish against this test's script, not the next test's)."""
    with (
        failed_items_fail_the_map(),  # as Step Functions does; moto's engine would let the Map succeed
        local_state_machine(definition=definition, dispatch={"reembed": script}) as machine,
    ):
        execution = machine.wait(machine.start({}), timeout_seconds=120)
        deadline = time.monotonic() + 30
        while settled is not None and not settled() and time.monotonic() < deadline:
            time.sleep(0.05)
        return execution


def test_a_run_submits_polls_and_imports_every_manifest_then_finishes_until_switched(definition):
    script = Script(manifests=2)

    execution = run(definition, script)

    assert execution["status"] == "SUCCEEDED", execution
    actions = script.actions()
    assert actions[0] == "plan" and actions[-2:] == ["finish", "finish"]  # catching_up once, then switched
    for manifest in (0, 1):  # each job: submitted once, running at the first check, completed at the second
        assert script.actions(manifest) == ["submit", "check", "check", "import"]
        [submit] = [c for c in script.calls if c["action"] == "submit" and c["manifest"] == manifest]
        assert submit == {"action": "submit", "run_id": RUN, "manifest": manifest}
        imports = [c for c in script.calls if c["action"] == "import" and c["manifest"] == manifest]
        assert imports == [{"action": "import", "run_id": RUN, "manifest": manifest, "job_arn": f"{JOB}job{manifest}"}]
    assert sorted(actions) == sorted(["plan", *["submit", "check", "check", "import"] * 2, "finish", "finish"])
    assert [c for c in script.calls if c["action"] == "finish"] == [{"action": "finish", "run_id": RUN}] * 2
    assert "fail" not in actions
    assert execution["output_json"]["status"] == "switched"


def test_nothing_to_re_embed_ends_after_the_plan(definition):
    script = Script(plan_run=None)

    execution = run(definition, script)

    assert execution["status"] == "SUCCEEDED"
    assert script.actions() == ["plan"]
    entered = [e["stateEnteredEventDetails"]["name"] for e in execution["history"] if "stateEnteredEventDetails" in e]
    assert entered[-1] == "Nothing to re-embed"


def test_a_failed_batch_job_fails_the_run_after_recording_it(definition):
    script = Script(manifests=2)
    # Manifest 1's job fails at its first check, manifest 0's completes. (Step Functions stops the other child
    # executions of a failed Map Run; in moto they end on their own.)
    script.job_status = lambda manifest, check: "failed" if manifest == 1 else "completed"

    execution = run(definition, script, settled=lambda: "import" in script.actions(0))

    assert (execution["status"], execution["error"]) == ("FAILED", "ReembedFailed")
    [fail] = [c for c in script.calls if c["action"] == "fail"]
    assert fail["run_id"] == RUN
    assert json.loads(fail["error"])["Error"] == THRESHOLD_ERROR  # the Map's error, as JSON text, for the run's record
    failed_check = next(i for i, c in enumerate(script.calls) if c["action"] == "check" and c["manifest"] == 1)
    assert script.calls.index(fail) > failed_check  # recorded after the job failed
    assert script.actions(1) == ["submit", "check"]  # nothing imported from the failed job
    assert "finish" not in script.actions()  # never switched
    assert execution["cause_json"]["Error"] == THRESHOLD_ERROR  # the Fail state's cause: the error that was recorded


def test_a_transient_error_is_retried_and_a_permanent_one_is_recorded(definition):
    from rag.backfill.errors import TransientError

    script = Script(manifests=1)
    submits: list[int] = []

    def flaky_submit(event: dict[str, Any]) -> dict[str, Any]:
        submits.append(event["manifest"])
        if len(submits) == 1:
            raise TransientError("Bedrock throttled the request")
        return script._submit(event)

    def broken_import(event: dict[str, Any]) -> dict[str, Any]:
        raise ValueError("manifest 0 has no output file")

    script.overrides = {"submit": flaky_submit, "import": broken_import}

    execution = run(definition, script)

    assert (execution["status"], execution["error"]) == ("FAILED", "ReembedFailed")
    assert submits == [0, 0]  # retried once, then submitted
    assert script.actions() == ["plan", "submit", "submit", "check", "check", "import", "fail"]
    [fail] = [c for c in script.calls if c["action"] == "fail"]
    assert fail["run_id"] == RUN


def test_a_failed_plan_is_recorded_without_a_run(definition):
    script = Script()
    script.overrides = {"plan": lambda event: (_ for _ in ()).throw(ValueError("no embedding_space row"))}

    execution = run(definition, script)

    assert (execution["status"], execution["error"]) == ("FAILED", "ReembedFailed")
    [fail] = [c for c in script.calls if c["action"] == "fail"]
    assert fail["run_id"] is None and "no embedding_space row" in fail["error"]
    assert execution["cause_json"]["Error"] == "ValueError"


def test_every_task_retries_transient_errors_and_the_map_runs_distributed(definition):
    states = definition["States"]
    manifests = states["Manifests"]
    assert manifests["ItemProcessor"]["ProcessorConfig"] == {"Mode": "DISTRIBUTED", "ExecutionType": "STANDARD"}
    assert (manifests["ItemsPath"], manifests["MaxConcurrency"], manifests["ResultPath"]) == ("$.manifests", 10, None)
    assert manifests["Catch"] == [{"ErrorEquals": ["States.ALL"], "ResultPath": "$.error", "Next": "Record failure"}]
    inner = manifests["ItemProcessor"]["States"]
    tasks = {
        **{n: s for n, s in states.items() if s["Type"] == "Task"},
        **{n: s for n, s in inner.items() if s["Type"] == "Task"},
    }
    assert sorted(tasks) == ["Check", "Finish", "Import", "Plan", "Record failure", "Submit"]
    for name, task in tasks.items():
        throttled, retry = task["Retry"]  # throttling first (the function's concurrency is small): patient, jittered
        assert throttled["ErrorEquals"] == ["Lambda.TooManyRequestsException"]
        assert (throttled["MaxAttempts"], throttled["MaxDelaySeconds"], throttled["JitterStrategy"]) == (15, 300, "FULL")
        assert {"TransientError", "Lambda.ServiceException"} <= set(retry["ErrorEquals"])
        assert retry["BackoffRate"] == 2 and retry["MaxAttempts"] == 5, name
        if name in ("Plan", "Finish"):  # outside the Map: caught here; inside, the item fails and the Map's Catch records it
            assert task["Catch"] == [{"ErrorEquals": ["States.ALL"], "ResultPath": "$.error", "Next": "Record failure"}]
        elif name != "Record failure":
            assert "Catch" not in task
    assert inner["Job done?"]["Default"] == "Wait for the job"
    assert [(r["StringEquals"], r["Next"]) for r in inner["Job done?"]["Choices"]] == [
        ("completed", "Import"), ("failed", "Batch job failed"),
    ]  # fmt: skip
    assert [(r["StringEquals"], r["Next"]) for r in states["Switched?"]["Choices"]] == [
        ("switched", "Switched"), ("catching_up", "Wait to catch up"),
    ]  # fmt: skip
    assert states["Re-embedding failed"] == {
        "Type": "Fail",
        "Error": "ReembedFailed",
        "CausePath": "States.JsonToString($.error)",
    }
    assert definition["TimeoutSeconds"] == 7 * 24 * 3600


def test_cdk_nag_finds_nothing_in_the_construct():
    import aws_cdk as cdk
    from aws_cdk import aws_lambda as lambda_
    from cdk_nag import AwsSolutionsChecks

    from infra.constructs.reembed_state_machine import ReembedStateMachine

    app = cdk.App()
    stack = cdk.Stack(app, "NagReembed")
    function = lambda_.Function(
        stack,
        "Fn",
        runtime=lambda_.Runtime.PYTHON_3_12,
        handler="handler.reembed_handler",
        code=lambda_.Code.from_inline("x = 1"),
    )
    # The stub function's own findings are not the construct's: accepted here, in the test only.
    cdk.Validations.of(function).acknowledge(
        cdk.Acknowledgment(id="AwsSolutions::AwsSolutions-L1", reason="test stub"),
        cdk.Acknowledgment(
            id="AwsSolutions::AwsSolutions-IAM4[Policy::arn:<AWS::Partition>:iam::aws:policy/service-role/AWSLambdaBasicExecutionRole]",
            reason="test stub",
        ),
    )
    ReembedStateMachine(stack, "Reembed", function=function)
    cdk.Validations.of(app).add_plugins(AwsSolutionsChecks())
    app.synth()  # raises ValidationFailed on any unacknowledged finding (the Distributed Map's policy included)


def test_the_construct_refuses_no_concurrency():
    import aws_cdk as cdk
    from aws_cdk import aws_lambda as lambda_

    from infra.constructs.reembed_state_machine import ReembedStateMachine

    stack = cdk.Stack(cdk.App(), "Invalid")
    fn = lambda_.Function(stack, "Fn", runtime=lambda_.Runtime.PYTHON_3_12, handler="h.h", code=lambda_.Code.from_inline("x = 1"))
    with pytest.raises(ValueError, match="max_concurrency >= 1"):
        ReembedStateMachine(stack, "Reembed", function=fn, max_concurrency=0)


# --- the backfill's start of the re-embed machine ---------------------------------------------------------------

REEMBED_ARN = f"arn:aws:states:{REGION}:{ACCOUNT}:stateMachine:reembed"


@pytest.fixture(scope="module")
def backfill_with_reembed() -> dict[str, Any]:
    """The backfill machine as a stage with Bedrock embeddings deploys it: a successful run starts the re-embed machine
    (named ``reembed`` in moto here)."""
    import aws_cdk as cdk
    from aws_cdk import aws_lambda as lambda_

    from infra.constructs.backfill_state_machine import STAGES, BackfillStateMachine
    from infra.constructs.reembed_state_machine import ReembedStateMachine

    app = cdk.App()
    stack = cdk.Stack(app, "BackfillWithReembed", env=cdk.Environment(account=ACCOUNT, region=REGION))
    code = lambda_.Code.from_inline("def handler(event, context):\n    raise NotImplementedError\n")
    functions = {
        name: lambda_.Function(stack, name, runtime=lambda_.Runtime.PYTHON_3_12, handler=f"handler.{name}_handler", code=code)
        for name in (*STAGES, "reembed")
    }
    reembed = ReembedStateMachine(stack, "Reembed", function=functions["reembed"])
    one_second = cdk.Duration.seconds(1)
    BackfillStateMachine(
        stack,
        "Backfill",
        **{stage: functions[stage] for stage in STAGES},
        retry_interval=one_second,
        idle_wait=one_second,
        reembed=reembed.state_machine,
    )
    template = app.synth().get_stack_by_name(stack.stack_name).template
    resources = template["Resources"]
    [machine_id] = [
        k for k, r in resources.items() if k.startswith("Backfill") and r["Type"] == "AWS::StepFunctions::StateMachine"
    ]
    [reembed_id] = [
        k for k, r in resources.items() if k.startswith("Reembed") and r["Type"] == "AWS::StepFunctions::StateMachine"
    ]
    text = json.dumps({machine_id: resources[machine_id]}).replace(json.dumps({"Ref": reembed_id}), json.dumps(REEMBED_ARN))
    stage_ids = {
        k: function_arn(name)
        for name in STAGES
        for k, r in resources.items()
        if r["Properties"].get("Handler") == f"handler.{name}_handler"
    }
    return definition_from_template({"Resources": json.loads(text)}, stage_ids)


def run_backfill(
    backfill: dict[str, Any], reembed_definition: dict[str, Any] | None, script: Script
) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    """A backfill with nothing to do, the re-embed machine created in the same moto (unless None); the backfill's
    execution and the re-embed executions it started, each described once ended."""
    from rag.backfill.progress import StageResult, advance

    def nothing_to_do(event: dict[str, Any]) -> dict[str, Any]:
        return advance(event["previous"], StageResult(processed=0, failed=0, remaining=0)).as_dict()

    dispatch = {"segment": nothing_to_do, "embed": nothing_to_do, "extract": nothing_to_do, "reembed": script}
    with (
        failed_items_fail_the_map(),
        start_execution_speaks_boto(),
        local_state_machine(definition=backfill, dispatch=dispatch) as machine,
    ):
        if reembed_definition is not None:
            machine.client.create_state_machine(
                name="reembed", definition=json.dumps(reembed_definition), roleArn=f"arn:aws:iam::{ACCOUNT}:role/reembed"
            )
        execution = machine.wait(machine.start({}), timeout_seconds=120)
        started = []
        if reembed_definition is not None:
            for item in machine.client.list_executions(stateMachineArn=REEMBED_ARN)["executions"]:
                started.append(machine.wait(item["executionArn"], timeout_seconds=60))
    return execution, started


def test_a_successful_backfill_starts_the_re_embed_machine_without_waiting_for_it(backfill_with_reembed, definition):
    script = Script(plan_run=None)  # the configured model is the database's: nothing to re-embed

    execution, started = run_backfill(backfill_with_reembed, definition, script)

    assert execution["status"] == "SUCCEEDED", execution
    assert len(started) == 1, execution["output_json"]["reembed"]
    [reembed] = started
    assert execution["output_json"]["reembed"] == {"execution_arn": reembed["executionArn"]}
    assert json.loads(reembed["input"]) == {"started_by": execution["executionArn"]}
    assert reembed["status"] == "SUCCEEDED" and script.actions() == ["plan"]


def test_a_start_that_fails_leaves_the_backfill_succeeded(backfill_with_reembed):
    script = Script()

    execution, started = run_backfill(backfill_with_reembed, None, script)  # no re-embed machine to start

    assert execution["status"] == "SUCCEEDED", execution
    # Why the start failed, kept in the output.
    assert execution["output_json"]["reembed"]["Error"] == "StepFunctions.StateMachineDoesNotExistException"
    assert execution["output_json"]["errors"] == {} and script.calls == []
    entered = [e["stateEnteredEventDetails"]["name"] for e in execution["history"] if "stateEnteredEventDetails" in e]
    assert entered[-2:] == ["Start re-embedding", "Done"]
