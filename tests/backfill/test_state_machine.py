"""The backfill state machine: its synthesized structure, and the same definition executed in moto.

The definition executed is the one CDK synthesizes from infra/constructs/backfill_state_machine.py
(only the Lambda ARNs are resolved); moto's Step Functions engine runs it and each Lambda
task is dispatched to the in-process handler of functions/backfill/handler.py.
"""

from __future__ import annotations

import json

import pytest

from rag_local.state_machine import (
    definition_from_template,
    function_arn,
    run_backfill_state_machine,
    stage_function_ids,
    stage_handlers,
    synthesize_backfill_template,
)

from .conftest import BUDGET_REVIEW, RELEASE_PROCESS, SCANNER_SYNC, ingest_file

STAGES = ("segment", "embed", "extract")


@pytest.fixture(scope="module")
def template():
    return synthesize_backfill_template()  # the CLI's too: retries after 1 s, at most 100 iterations by default


@pytest.fixture(scope="module")
def definition(template):
    ids = stage_function_ids(template)
    return definition_from_template(template, {logical_id: function_arn(stage) for stage, logical_id in ids.items()})


def resources(template, kind):
    return [r for r in template["Resources"].values() if r["Type"] == kind]


# --- structure ------------------------------------------------------------------------


def test_every_task_retries_transient_errors_with_backoff_and_catches_everything(definition):
    tasks = {name: state for name, state in definition["States"].items() if state["Type"] == "Task"}
    assert sorted(tasks) == sorted(f"{stage}: run batch" for stage in STAGES)
    for name, task in tasks.items():
        [retry] = task["Retry"]
        assert {"TransientError", "Lambda.ServiceException", "Lambda.TooManyRequestsException"} <= set(retry["ErrorEquals"])
        assert retry["BackoffRate"] > 1 and retry["MaxAttempts"] >= 2 and retry["IntervalSeconds"] == 1
        [catch] = task["Catch"]
        assert catch["ErrorEquals"] == ["States.ALL"]
        stage = name.split(":")[0]
        assert catch["ResultPath"] == f"$.errors.{stage}"  # the failure is recorded in the output
        following = {"segment": "embed?", "embed": "extract?", "extract": "Done"}[stage]
        assert catch["Next"] == following  # ... and the run moves on to the next stage


def test_each_stage_loops_until_nothing_remains_or_the_iteration_bound(definition):
    states = definition["States"]
    for stage, following in zip(STAGES, ("embed?", "extract?", "Done")):
        task = states[f"{stage}: run batch"]
        choice = states[task["Next"]]
        assert choice["Type"] == "Choice" and choice["Default"] == f"{stage}: run batch"  # the loop
        exits = {json.dumps({k: v for k, v in rule.items() if k != "Next"}, sort_keys=True): rule["Next"] for rule in choice["Choices"]}
        assert exits == {
            json.dumps({"Variable": f"$.results.{stage}.remaining", "NumericLessThanEquals": 0}, sort_keys=True): following,
            json.dumps(
                {"Variable": f"$.results.{stage}.iteration", "NumericGreaterThanEqualsPath": "$.options.max_iterations"},
                sort_keys=True,
            ): following,
        }
        # The handler counts iterations: the task hands it the previous result and keeps its answer.
        assert task["Parameters"]["Payload"]["previous.$"] == f"$.results.{stage}"
        assert task["ResultSelector"]["iteration.$"] == "$.Payload.iteration"


def test_every_state_reaches_done_and_every_cycle_has_an_exit(definition):
    states = definition["States"]

    def successors(state):
        found = [state.get("Next"), state.get("Default")]
        found += [rule["Next"] for rule in state.get("Choices", [])]
        found += [catch["Next"] for catch in state.get("Catch", [])]
        return {name for name in found if name}

    reachable, frontier = set(), [definition["StartAt"]]
    while frontier:
        name = frontier.pop()
        if name not in reachable:
            reachable.add(name)
            frontier.extend(successors(states[name]))
    assert reachable == set(states)
    assert states["Done"]["Type"] == "Succeed"
    # Backwards from Done: every state has a path to the end (no trap loop).
    reaches_done = {"Done"}
    changed = True
    while changed:
        changed = False
        for name, state in states.items():
            if name not in reaches_done and successors(state) & reaches_done:
                reaches_done.add(name)
                changed = True
    assert reaches_done == set(states)


def test_logging_all_with_execution_data_tracing_and_timeout(template):
    [machine] = resources(template, "AWS::StepFunctions::StateMachine")
    props = machine["Properties"]
    assert props["LoggingConfiguration"]["Level"] == "ALL"
    assert props["LoggingConfiguration"]["IncludeExecutionData"] is True
    assert props["TracingConfiguration"] == {"Enabled": True}
    assert len(resources(template, "AWS::Logs::LogGroup")) == 1


def test_max_iterations_must_be_positive():
    import aws_cdk as cdk
    from aws_cdk import aws_lambda as lambda_

    from infra.constructs.backfill_state_machine import BackfillStateMachine

    stack = cdk.Stack(cdk.App(), "Invalid")
    fn = lambda_.Function(
        stack, "Fn", runtime=lambda_.Runtime.PYTHON_3_12, handler="index.handler", code=lambda_.Code.from_inline("x = 1")
    )
    with pytest.raises(ValueError, match="max_iterations >= 1"):
        BackfillStateMachine(stack, "Backfill", segment=fn, embed=fn, extract=fn, max_iterations=0)


# --- execution in moto -------------------------------------------------------------------


@pytest.mark.slow
def test_execution_runs_every_stage_through_the_real_handlers(db, local_embedder, definition):
    ids = [ingest_file(db, path, local_embedder) for path in (SCANNER_SYNC, BUDGET_REVIEW, RELEASE_PROCESS)]

    execution = run_backfill_state_machine({"batch_size": 2, "max_iterations": 20}, definition=definition)

    assert execution["status"] == "SUCCEEDED", execution
    output = execution["output_json"]
    assert output["errors"] == {}
    assert output["options"] == {"stages": list(STAGES), "batch_size": 2, "max_iterations": 20}
    for stage in STAGES:
        result = output["results"][stage]
        # 3 documents in batches of 2: two iterations, nothing left, every document processed once.
        assert (result["iteration"], result["remaining"], result["processed_total"], result["failed_total"]) == (2, 0, 3, 0)
    statuses = dict(db.execute("SELECT id, status FROM documents").fetchall())
    assert statuses == {doc_id: "extracted" for doc_id in ids}
    segments = dict(db.execute("SELECT document_id, count(*) FROM segments WHERE embedding IS NOT NULL GROUP BY 1").fetchall())
    assert set(segments) == set(ids) and all(count >= 2 for count in segments.values())
    counts = {
        table: db.execute(f"SELECT count(*) FROM {table} WHERE embedding IS NOT NULL").fetchone()[0]
        for table in ("decisions", "risks", "opportunities", "tasks")
    }
    assert all(count > 0 for count in counts.values()), counts
    task_events = [e for e in execution["history"] if e["type"] == "TaskSucceeded"]
    assert len(task_events) == 6  # two batches per stage, each a real Lambda task of the definition


@pytest.mark.slow
def test_a_failing_stage_is_caught_recorded_and_the_run_moves_on(db, local_embedder, definition):
    ingest_file(db, SCANNER_SYNC, local_embedder)
    handlers = stage_handlers()
    calls = []

    def broken_embed(event):
        calls.append(event)
        raise ValueError("embedding table is read-only")

    execution = run_backfill_state_machine(
        {"batch_size": 5}, definition=definition, dispatch={**handlers, "embed": broken_embed}
    )

    assert execution["status"] == "SUCCEEDED"
    output = execution["output_json"]
    assert list(output["errors"]) == ["embed"]
    assert output["errors"]["embed"]["Error"] == "ValueError"
    assert "embedding table is read-only" in output["errors"]["embed"]["Cause"]
    assert len(calls) == 1  # not a transient error: caught at once, no retries
    assert output["results"]["segment"]["processed_total"] == 1
    # The run went on to extract, which found nothing embedded to work on.
    assert output["results"]["extract"]["iteration"] == 1 and output["results"]["extract"]["processed_total"] == 0
    assert db.execute("SELECT status FROM documents").fetchone()[0] == "segmented"


@pytest.mark.slow
def test_a_transient_error_is_retried_and_then_succeeds(db, local_embedder, definition):
    from rag.backfill.errors import TransientError

    ingest_file(db, RELEASE_PROCESS, local_embedder)
    handlers = stage_handlers()
    attempts = []

    def flaky_segment(event):
        attempts.append(event)
        if len(attempts) == 1:
            raise TransientError("database restarting")
        return handlers["segment"](event)

    execution = run_backfill_state_machine(
        {"stages": ["segment"]}, definition=definition, dispatch={**handlers, "segment": flaky_segment}
    )

    assert execution["status"] == "SUCCEEDED"
    assert execution["output_json"]["errors"] == {}
    assert len(attempts) == 2 and attempts[0] == attempts[1]  # the same batch input, retried
    assert execution["output_json"]["results"]["segment"]["processed_total"] == 1
    assert set(execution["output_json"]["results"]) == {"segment"}  # embed and extract were not selected
    assert db.execute("SELECT status FROM documents").fetchone()[0] == "segmented"


def test_the_loop_stops_at_max_iterations_when_work_never_runs_out(definition):
    seen = {stage: 0 for stage in STAGES}

    def endless(stage):
        def handler(event):
            seen[stage] += 1
            previous = event["previous"]
            return {
                "iteration": previous["iteration"] + 1, "processed": 1, "failed": 0, "remaining": 7,
                "processed_total": previous["processed_total"] + 1, "failed_total": 0,
            }  # fmt: skip

        return handler

    execution = run_backfill_state_machine(
        {"max_iterations": 3, "stages": ["segment", "extract"]},
        definition=definition,
        dispatch={stage: endless(stage) for stage in STAGES},
    )

    assert execution["status"] == "SUCCEEDED"
    assert seen == {"segment": 3, "embed": 0, "extract": 3}
    results = execution["output_json"]["results"]
    assert results["segment"]["iteration"] == 3 and results["segment"]["remaining"] == 7
    assert results["segment"]["processed_total"] == 3


def test_cdk_nag_finds_nothing_in_the_construct():
    import aws_cdk as cdk
    from aws_cdk import aws_lambda as lambda_
    from cdk_nag import AwsSolutionsChecks

    from infra.constructs.backfill_state_machine import BackfillStateMachine

    app = cdk.App()
    stack = cdk.Stack(app, "NagBackfill")
    functions = {
        stage: lambda_.Function(
            stack, stage, runtime=lambda_.Runtime.PYTHON_3_12, handler=f"handler.{stage}_handler", code=lambda_.Code.from_inline("x = 1")
        )
        for stage in STAGES
    }
    # The stub functions' own findings are not the construct's: accepted here, in the test only.
    for function in functions.values():
        cdk.Validations.of(function).acknowledge(
            cdk.Acknowledgment(id="AwsSolutions::AwsSolutions-L1", reason="test stub"),
            cdk.Acknowledgment(
                id="AwsSolutions::AwsSolutions-IAM4[Policy::arn:<AWS::Partition>:iam::aws:policy/service-role/AWSLambdaBasicExecutionRole]",
                reason="test stub",
            ),
        )
    BackfillStateMachine(stack, "Backfill", **functions)
    cdk.Validations.of(app).add_plugins(AwsSolutionsChecks())
    app.synth()  # raises ValidationFailed on any unacknowledged finding (SF1 logging, SF2 X-Ray, IAM5 ...)
