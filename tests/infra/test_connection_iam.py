"""IAM authentication through RDS Proxy: a fresh token as the password, TLS by default, the other paths unchanged."""

from __future__ import annotations

import json
import uuid
from collections.abc import Iterator
from urllib.parse import parse_qs, unquote, urlsplit

import psycopg
import pytest
from psycopg.conninfo import conninfo_to_dict

from rag.config import Settings, get_settings
from rag.store import connection
from rag.store.connection import IAM_URL_ENV, resolve_database_url, url_with_iam_token

PROXY = "meeting-rag.proxy-abc123.eu-west-1.rds.amazonaws.com"


def test_token_is_a_presigned_connect_request_for_the_user_and_host() -> None:
    url = url_with_iam_token(f"postgresql://rag_admin@{PROXY}:5432/rag", "eu-west-1")

    parts = urlsplit(url)
    assert (parts.username, parts.hostname, parts.port, parts.path) == ("rag_admin", PROXY, 5432, "/rag")
    assert parts.query == "sslmode=require"  # IAM tokens are accepted over TLS only
    token = unquote(parts.password or "")
    assert token.startswith(f"{PROXY}:5432/?")
    signed = parse_qs(token.split("?", 1)[1])
    assert signed["Action"] == ["connect"] and signed["DBUser"] == ["rag_admin"]
    assert "/eu-west-1/rds-db/aws4_request" in signed["X-Amz-Credential"][0]
    assert int(signed["X-Amz-Expires"][0]) == 900 and signed["X-Amz-Signature"][0]


def test_an_explicit_sslmode_is_kept() -> None:
    url = url_with_iam_token(f"postgresql://app@{PROXY}/rag?sslmode=verify-full&application_name=x", "eu-west-1")
    assert urlsplit(url).query == "sslmode=verify-full&application_name=x"
    assert urlsplit(url).port == 5432


@pytest.mark.parametrize(
    ("iam_url", "message"),
    [
        (f"postgresql://app:secret@{PROXY}/rag", "must not carry a password"),
        (f"postgresql://{PROXY}/rag", "postgresql://user@host"),
        ("mysql://app@host/rag", "postgresql://user@host"),
    ],
)
def test_a_malformed_iam_url_is_refused(iam_url: str, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        url_with_iam_token(iam_url, "eu-west-1")


def test_database_url_wins_then_iam_then_the_secret(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("DATABASE_URL", raising=False)  # the session's test database sets it
    monkeypatch.setenv(IAM_URL_ENV, f"postgresql://app@{PROXY}:5432/rag")
    # A secret that does not exist: reading it would raise, so IAM must be chosen before it.
    settings = Settings(database_secret_arn="arn:aws:secretsmanager:eu-west-1:123456789012:secret:missing-AbCdEf")
    assert urlsplit(resolve_database_url(settings)).hostname == PROXY
    assert "X-Amz-Signature" in unquote(urlsplit(resolve_database_url(settings)).password or "")
    direct = Settings(database_url="postgresql://postgres@127.0.0.1:5999/rag")
    assert resolve_database_url(direct) == "postgresql://postgres@127.0.0.1:5999/rag"


def test_the_secret_path_still_works(monkeypatch: pytest.MonkeyPatch) -> None:
    from moto import mock_aws

    monkeypatch.delenv(IAM_URL_ENV, raising=False)
    monkeypatch.delenv("DATABASE_URL", raising=False)
    with mock_aws():
        import boto3

        secret = {"username": "rag_admin", "password": "p@ss/word", "host": "db.internal", "port": 5433, "dbname": "rag"}
        arn = boto3.client("secretsmanager", region_name="us-east-1").create_secret(
            Name="rag-db", SecretString=json.dumps(secret)
        )["ARN"]
        url = resolve_database_url(Settings(database_secret_arn=arn))
    assert conninfo_to_dict(url) == {
        "user": "rag_admin", "password": "p@ss/word", "host": "db.internal", "port": "5433", "dbname": "rag",
        "sslmode": "require",
    }  # fmt: skip


@pytest.fixture
def iam_role(database_url: str) -> Iterator[str]:
    name = f"iam_user_{uuid.uuid4().hex[:8]}"
    with psycopg.connect(database_url, autocommit=True) as admin:
        admin.execute(f'CREATE ROLE "{name}" LOGIN')
    yield name
    connection.close_pool()
    with psycopg.connect(database_url, autocommit=True) as admin:
        admin.execute(f'DROP ROLE IF EXISTS "{name}"')


def test_a_function_configured_for_iam_connects_as_the_named_user_with_the_token(
    database_url: str, iam_role: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    # GIVEN the environment the CDK app gives a function (here pointing at the local server, without TLS)
    server = conninfo_to_dict(database_url)
    monkeypatch.delenv("DATABASE_URL", raising=False)
    monkeypatch.setenv(
        IAM_URL_ENV, f"postgresql://{iam_role}@{server.get('host', '127.0.0.1')}:{server.get('port', 5432)}/{server['dbname']}?sslmode=disable"
    )
    get_settings.cache_clear()
    connection.close_pool()

    # WHEN the library opens its connection
    with connection.connection(get_settings()) as conn:
        # THEN it is that user's session, and the password it presented was a fresh IAM token
        assert conn.execute("SELECT current_user").fetchone() == (iam_role,)
        password = conn.info.password
    assert password.startswith(f"{server.get('host', '127.0.0.1')}:{server.get('port', 5432)}/?Action=connect")
    assert f"DBUser={iam_role}" in password
