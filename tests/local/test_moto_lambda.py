"""The one place that patches moto's private Lambda API: fails loudly when moto changes it."""

from __future__ import annotations

import json

import boto3
import pytest

from rag_local.moto_lambda import INVOKE_PARAMETERS, MotoApiChanged, check_private_api, lambdas_run_in_process


def test_the_installed_moto_has_the_private_api_the_adapter_patches():
    # A failure here means: moto changed LambdaSimpleBackend.invoke; adapt rag_local/moto_lambda.py to it.
    check_private_api()


def test_a_changed_signature_is_reported_with_what_to_adapt(monkeypatch):
    from moto.awslambda_simple.models import LambdaSimpleBackend

    def invoke(self, function_name, qualifier, body, headers, response_headers, invocation_type):  # a moto to come
        return b""

    monkeypatch.setattr(LambdaSimpleBackend, "invoke", invoke)
    with pytest.raises(MotoApiChanged, match=r"LambdaSimpleBackend\.invoke takes .*invocation_type.* expects") as error:
        check_private_api()
    assert str(INVOKE_PARAMETERS) in str(error.value) and "rag_local.moto_lambda" in str(error.value)


def test_invocations_run_the_handler_and_its_exceptions_become_function_errors():
    from moto import mock_aws

    def handler(event):
        if event.get("fail"):
            raise LookupError("no such batch")
        return {"doubled": event["n"] * 2}

    with mock_aws(config={"lambda": {"use_docker": False}}), lambdas_run_in_process({"stage": handler}.get):
        client = boto3.client("lambda", region_name="us-east-1")

        ok = client.invoke(FunctionName="stage", Payload=json.dumps({"n": 21}))
        assert "FunctionError" not in ok and json.load(ok["Payload"]) == {"doubled": 42}

        failed = client.invoke(FunctionName="stage", Payload=json.dumps({"fail": True}))
        assert failed["FunctionError"] == "Unhandled"
        assert json.load(failed["Payload"]) == {"errorType": "LookupError", "errorMessage": "no such batch"}

        unknown = client.invoke(FunctionName="nothing", Payload=b"{}")
        assert json.load(unknown["Payload"])["errorType"] == "ResourceNotFound"
