"""The backfill state machine: its synthesized structure, and the same definition executed in moto.

The definition executed is the one CDK synthesizes from infra/constructs/backfill_state_machine.py
(only the Lambda ARNs are resolved); moto's Step Functions engine runs it and each Lambda
task is dispatched to the in-process handler of functions/backfill/handler.py.
"""

from __future__ import annotations

import json
import threading
import time
from unittest import mock

import pytest

from rag.backfill.progress import StageResult, advance
from rag_local.state_machine import (
    definition_from_template,
    function_arn,
    local_state_machine,
    run_backfill_state_machine,
    stage_function_ids,
    stage_handlers,
    synthesize_backfill_template,
)
from tests.backfill.conftest import BUDGET_REVIEW, RELEASE_PROCESS, SCANNER_SYNC, ingest_file

STAGES = ("segment", "embed", "extract")
FOLLOWING = {"segment": "embed?", "embed": "extract?", "extract": "Any stage failed?"}
MAX_IDLE_BATCHES = 3  # synthesize_backfill_template's default, as the deployed machine's


@pytest.fixture(scope="module")
def template():
    # The CLI's too: retries after 1 s, idle batches retried after 1 s (3 in a row end a stage), 100 iterations.
    return synthesize_backfill_template()


def batch(previous, *, processed=0, failed=0, remaining=0):
    """What a stage handler answers for one batch (the real progress arithmetic of rag.backfill.progress)."""
    return advance(previous, StageResult(processed=processed, failed=failed, remaining=remaining)).as_dict()


def nothing_to_do(event):
    return batch(event["previous"])


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
        assert catch["ResultPath"] == f"$.errors.{stage}"  # the failure is recorded ...
        assert catch["Next"] == FOLLOWING[stage]  # ... and the run moves on to the next stage


def test_each_stage_loops_until_nothing_remains_the_iteration_bound_or_others_hold_the_rest(definition):
    states = definition["States"]
    for stage in STAGES:
        following = FOLLOWING[stage]
        task = states[f"{stage}: run batch"]
        choice = states[task["Next"]]
        assert choice["Type"] == "Choice" and choice["Default"] == f"{stage}: run batch"  # the loop
        exits = [({k: v for k, v in rule.items() if k != "Next"}, rule["Next"]) for rule in choice["Choices"]]
        assert exits == [  # in this order: the first rule that matches wins
            ({"Variable": f"$.results.{stage}.remaining", "NumericLessThanEquals": 0}, following),
            ({"Variable": f"$.results.{stage}.iteration", "NumericGreaterThanEqualsPath": "$.options.max_iterations"}, following),
            ({"Variable": f"$.results.{stage}.idle_batches", "NumericGreaterThanEquals": MAX_IDLE_BATCHES}, following),
            ({"Variable": f"$.results.{stage}.idle_batches", "NumericGreaterThanEquals": 1}, f"{stage}: wait"),
        ]
        # Nothing claimable yet work remains: wait before the next batch (1 s in the tests, 30 s deployed).
        assert states[f"{stage}: wait"] == {"Type": "Wait", "Seconds": 1, "Next": f"{stage}: run batch"}
        # The handler counts iterations and idle batches: the task hands it the previous result and keeps its answer.
        assert task["Parameters"]["Payload"]["previous.$"] == f"$.results.{stage}"
        assert task["ResultSelector"]["iteration.$"] == "$.Payload.iteration"
        assert task["ResultSelector"]["idle_batches.$"] == "$.Payload.idle_batches"


def test_input_is_checked_before_any_stage_and_stage_errors_fail_the_execution(definition):
    states = definition["States"]
    assert states["Options"]["Next"] == "Valid input?"
    [rule] = states["Valid input?"]["Choices"]
    assert rule["Next"] == "Invalid input" and states["Valid input?"]["Default"] == "Plan"
    bounds = {(c["Variable"], k, v) for c in rule["Or"] for k, v in c.items() if k != "Variable"}
    assert bounds == {
        ("$.options.max_iterations", "IsNumeric", False),
        ("$.options.max_iterations", "NumericLessThan", 1),
        ("$.options.max_iterations", "NumericGreaterThan", 1000),
        ("$.options.batch_size", "IsNumeric", False),
        ("$.options.batch_size", "NumericLessThan", 1),
        ("$.options.batch_size", "NumericGreaterThan", 500),
    }
    assert states["Invalid input"]["Type"] == "Fail" and states["Invalid input"]["Error"] == "InvalidInput"
    [failed] = states["Any stage failed?"]["Choices"]
    assert failed["Or"] == [{"Variable": f"$.errors.{stage}", "IsPresent": True} for stage in STAGES]
    assert (failed["Next"], states["Any stage failed?"]["Default"]) == ("Report", "Done")
    assert states["Stage failed"] == {"Type": "Fail", "Error": "BackfillStageFailed", "CausePath": "States.JsonToString($)"}


def test_the_caps_agree_with_the_handlers():
    from infra.constructs.backfill_state_machine import MAX_BATCH_SIZE, PROGRESS_FIELDS
    from rag.backfill import progress

    assert MAX_BATCH_SIZE == progress.MAX_BATCH_SIZE
    assert set(PROGRESS_FIELDS) == set(batch({}))  # the ResultSelector keeps every field a handler answers


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
    ends = {name for name, state in states.items() if state["Type"] in ("Succeed", "Fail")}
    assert ends == {"Done", "Stage failed", "Invalid input"}
    # Backwards from the ends: every state has a path to one (no trap loop).
    reaches_done = set(ends)
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


@pytest.mark.parametrize(
    ("options", "message"),
    [({"max_iterations": 0}, "max_iterations >= 1 and <= 1000"), ({"max_iterations": 1001}, "max_iterations >= 1 and <= 1000"),
     ({"max_idle_batches": 0}, "max_idle_batches >= 1")],
)  # fmt: skip
def test_the_construct_refuses_bounds_out_of_range(options, message):
    import aws_cdk as cdk
    from aws_cdk import aws_lambda as lambda_

    from infra.constructs.backfill_state_machine import BackfillStateMachine

    stack = cdk.Stack(cdk.App(), "Invalid")
    fn = lambda_.Function(
        stack, "Fn", runtime=lambda_.Runtime.PYTHON_3_12, handler="index.handler", code=lambda_.Code.from_inline("x = 1")
    )
    with pytest.raises(ValueError, match=message):
        BackfillStateMachine(stack, "Backfill", segment=fn, embed=fn, extract=fn, **options)


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
def test_a_failing_stage_is_caught_the_run_moves_on_and_the_execution_fails(db, local_embedder, definition):
    ingest_file(db, SCANNER_SYNC, local_embedder)
    handlers = stage_handlers()
    calls = []

    def broken_embed(event):
        calls.append(event)
        raise ValueError("embedding table is read-only")

    execution = run_backfill_state_machine({"batch_size": 5}, definition=definition, dispatch={**handlers, "embed": broken_embed})

    # Failed, so ExecutionsFailed counts it and the BackfillFailed alarm fires; the cause carries what happened.
    assert (execution["status"], execution["error"]) == ("FAILED", "BackfillStageFailed")
    output = execution["cause_json"]
    assert set(output) == {"errors", "results"}
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
            return batch(event["previous"], processed=1, remaining=7)

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


@pytest.mark.parametrize(
    "options",
    [{"max_iterations": 1001}, {"max_iterations": 0}, {"max_iterations": "5"}, {"max_iterations": None},
     {"batch_size": 501}, {"batch_size": 0}],
)  # fmt: skip
def test_input_beyond_the_caps_fails_the_execution_before_any_lambda_runs(definition, options):
    calls = []

    def record(event):
        calls.append(event)
        return nothing_to_do(event)

    execution = run_backfill_state_machine(options, definition=definition, dispatch={stage: record for stage in STAGES})

    assert (execution["status"], execution["error"]) == ("FAILED", "InvalidInput")  # rejected, not clamped
    assert "max_iterations must be a number from 1 to 1000 and batch_size from 1 to 500" in execution["cause"]
    assert json.dumps(next(iter(options.values()))) in execution["cause"]  # the value that was refused
    assert calls == []


def test_the_largest_allowed_input_runs(definition):
    execution = run_backfill_state_machine(
        {"max_iterations": 1000, "batch_size": 500}, definition=definition, dispatch={s: nothing_to_do for s in STAGES}
    )
    assert execution["status"] == "SUCCEEDED"
    assert execution["output_json"]["options"]["max_iterations"] == 1000


def test_an_idle_batch_waits_and_the_stage_goes_on_once_something_is_claimable(definition):
    script = iter([{"remaining": 4}, {"remaining": 4}, {"processed": 4, "remaining": 0}])  # held, held, then free
    answers = []

    def segment(event):
        answers.append(batch(event["previous"], **next(script)))
        return answers[-1]

    started = time.monotonic()
    execution = run_backfill_state_machine(
        {"stages": ["segment"]}, definition=definition, dispatch={**{s: nothing_to_do for s in STAGES}, "segment": segment}
    )

    assert execution["status"] == "SUCCEEDED"
    assert [a["idle_batches"] for a in answers] == [1, 2, 0]
    waits = [e for e in execution["history"] if e["type"] == "WaitStateEntered"]
    assert [e["stateEnteredEventDetails"]["name"] for e in waits] == ["segment: wait"] * 2
    assert time.monotonic() - started >= 2  # the waits are real (1 s each here)
    result = execution["output_json"]["results"]["segment"]
    assert (result["iteration"], result["remaining"], result["processed_total"], result["idle_batches"]) == (3, 0, 4, 0)


def test_a_stage_whose_remaining_documents_another_runner_holds_ends_after_the_idle_batches(definition):
    calls = []

    def held_by_others(event):  # every batch claims nothing: the 5 left are locked by another execution
        calls.append(event)
        return batch(event["previous"], remaining=5)

    execution = run_backfill_state_machine(
        {"max_iterations": 50}, definition=definition, dispatch={s: held_by_others for s in STAGES}
    )

    assert execution["status"] == "SUCCEEDED"  # not a failure: the other runner finishes those documents
    assert len(calls) == 3 * MAX_IDLE_BATCHES  # not 3 x 50: no stage spins on the other runner's documents
    for result in execution["output_json"]["results"].values():
        assert (result["iteration"], result["remaining"], result["idle_batches"]) == (MAX_IDLE_BATCHES, 5, MAX_IDLE_BATCHES)
    waits = [e for e in execution["history"] if e["type"] == "WaitStateEntered"]
    assert len(waits) == 3 * (MAX_IDLE_BATCHES - 1)


def test_cdk_nag_finds_nothing_in_the_construct():
    import aws_cdk as cdk
    from aws_cdk import aws_lambda as lambda_
    from cdk_nag import AwsSolutionsChecks

    from infra.constructs.backfill_state_machine import BackfillStateMachine

    app = cdk.App()
    stack = cdk.Stack(app, "NagBackfill")
    functions = {
        stage: lambda_.Function(
            stack,
            stage,
            runtime=lambda_.Runtime.PYTHON_3_12,
            handler=f"handler.{stage}_handler",
            code=lambda_.Code.from_inline("x = 1"),
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


@pytest.mark.slow
def test_two_overlapping_executions_share_the_work_and_neither_spins(db, database_url, local_embedder, definition):
    """A scheduled and a manual execution against the real database: the second finds every document held by the
    first (FOR UPDATE SKIP LOCKED), waits, ends its stages after the idle batches, and the first finishes them."""
    from rag.backfill.segment import SegmentStage

    ids = [ingest_file(db, path, local_embedder) for path in (SCANNER_SYNC, BUDGET_REVIEW, RELEASE_PROCESS)]
    first_holds, release = threading.Event(), threading.Event()
    segment_process = SegmentStage.process

    def process(self, conn, document):
        if not first_holds.is_set():  # the first execution's first batch: it has claimed all three documents
            first_holds.set()
            assert release.wait(120), "the second execution never finished"
        return segment_process(self, conn, document)

    handlers = stage_handlers(scale_out=True)  # each execution's invocation in a container of its own
    calls = {stage: 0 for stage in STAGES}

    def counted(stage):
        def handler(event):
            calls[stage] += 1
            return handlers[stage](event)

        return handler

    with (
        mock.patch.object(SegmentStage, "process", process),
        local_state_machine(definition=definition, dispatch={stage: counted(stage) for stage in STAGES}) as machine,
    ):
        first = machine.start({"batch_size": 10, "max_iterations": 20})
        assert first_holds.wait(120)
        second = machine.start({"batch_size": 10, "max_iterations": 20})
        second_execution = machine.wait(second, timeout_seconds=120)
        release.set()
        first_execution = machine.wait(first, timeout_seconds=300)

    # The second: 3 idle segment batches (the first holds all 3), then nothing segmented yet to embed or extract.
    assert second_execution["status"] == "SUCCEEDED", second_execution
    results = second_execution["output_json"]["results"]
    assert results["segment"] == {
        "iteration": MAX_IDLE_BATCHES, "processed": 0, "failed": 0, "remaining": 3, "idle_batches": MAX_IDLE_BATCHES,
        "processed_total": 0, "failed_total": 0,
    }  # fmt: skip
    assert results["embed"]["remaining"] == 0 and results["extract"]["remaining"] == 0
    # The first did everything, each document once.
    assert first_execution["status"] == "SUCCEEDED", first_execution
    for stage in STAGES:
        result = first_execution["output_json"]["results"][stage]
        assert (result["processed_total"], result["remaining"], result["failed_total"]) == (3, 0, 0)
    assert calls["segment"] == MAX_IDLE_BATCHES + 1  # the second's idle batches + the first's one batch
    assert dict(db.execute("SELECT id, status FROM documents").fetchall()) == {doc_id: "extracted" for doc_id in ids}
    duplicates = db.execute("SELECT document_id, segment_index FROM segments GROUP BY 1, 2 HAVING count(*) > 1").fetchall()
    assert duplicates == []


def test_the_cli_reports_a_failed_execution_from_its_cause(capsys):
    from rag_local.backfill import run_backfill_in_state_machine

    results = {
        "segment": batch({}, processed=2),
        "embed": {**batch({}), "iteration": 0},
        "extract": batch(batch({}, remaining=4), remaining=4),  # two idle batches: another runner holds the 4
    }
    errors = {"embed": {"Error": "ValueError", "Cause": '{"errorType": "ValueError", "errorMessage": "read-only"}'}}
    failed = {"status": "FAILED", "error": "BackfillStageFailed", "cause": "...", "output_json": None,
              "cause_json": {"errors": errors, "results": results}}  # fmt: skip

    with mock.patch("rag_local.state_machine.run_backfill_state_machine", return_value=failed):
        assert run_backfill_in_state_machine(["segment", "embed", "extract"], 10, 100) == 1

    out, err = capsys.readouterr()
    assert "execution FAILED" in out
    assert "segment  2 processed, 0 failed, 0 remaining after 1 iterations" in out
    assert "extract  0 processed, 0 failed, 4 remaining after 2 iterations (the rest held by another runner)" in out
    assert "embed    FAILED ValueError" in err and "read-only" in err
    assert '{"error": "BackfillStageFailed"}' in err
