"""The IAM authentication token is botocore's own, signed without creating an RDS client (a cold start's cost)."""

from __future__ import annotations

import datetime
from collections.abc import Iterator
from urllib.parse import unquote, urlsplit

import boto3
import pytest

from rag.store.connection import _signing_session, iam_auth_token, url_with_iam_token

PROXY = "meeting-rag.proxy-abc123.eu-west-1.rds.amazonaws.com"
NOW = datetime.datetime(2026, 11, 25, 14, 15, 2, tzinfo=datetime.UTC)


@pytest.fixture
def frozen_credentials(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """Lambda's credentials (environment variables of the execution role's session) and one instant."""
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", "ASIAEXAMPLEEXAMPLE12")
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY")
    monkeypatch.setenv("AWS_SESSION_TOKEN", "IQoJb3JpZ2luX2VjEXAMPLETOKEN")
    monkeypatch.setattr("botocore.auth.get_current_datetime", lambda: NOW.replace(tzinfo=None))
    _signing_session.cache_clear()  # the process's session keeps the credentials it resolved first (as boto3's does)
    yield
    _signing_session.cache_clear()


def test_the_token_is_the_one_the_rds_client_generates(frozen_credentials: None) -> None:
    rds = boto3.session.Session().client("rds", region_name="us-east-1")  # a session of its own: these credentials
    expected = rds.generate_db_auth_token(DBHostname=PROXY, Port=5432, DBUsername="rag_app", Region="eu-west-1")

    assert iam_auth_token(PROXY, 5432, "rag_app", "eu-west-1") == expected
    assert "X-Amz-Security-Token=IQoJb3JpZ2luX2VjEXAMPLETOKEN" in expected
    assert "X-Amz-Date=20261125T141502Z" in expected


def test_a_url_gets_its_token_without_an_rds_client(frozen_credentials: None, monkeypatch: pytest.MonkeyPatch) -> None:
    def no_client(*args: object, **kwargs: object) -> None:
        raise AssertionError("an RDS client was created (its service model costs a cold start ~80 ms)")

    monkeypatch.setattr(boto3, "client", no_client)

    url = url_with_iam_token(f"postgresql://rag_app@{PROXY}:5432/rag", "eu-west-1")

    assert unquote(urlsplit(url).password or "") == iam_auth_token(PROXY, 5432, "rag_app", "eu-west-1")
