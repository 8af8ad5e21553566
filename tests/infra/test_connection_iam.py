"""IAM authentication through RDS Proxy: a fresh token as the password, verified TLS, the other paths unchanged."""

from __future__ import annotations

import json
import uuid
from collections.abc import Callable, Iterator
from urllib.parse import parse_qs, parse_qsl, unquote, urlsplit

import psycopg
import pytest
from psycopg.conninfo import conninfo_to_dict

from rag.config import Settings, get_settings
from rag.store import connection
from rag.store.connection import IAM_URL_ENV, RDS_CA_BUNDLE, resolve_database_url, url_with_iam_token

PROXY = "meeting-rag.proxy-abc123.eu-west-1.rds.amazonaws.com"
INSTANCE = "meeting-rag-dev.c9akciq32.eu-west-1.rds.amazonaws.com"


def rds_secret(*, username: str, password: str, host: str, port: int) -> dict[str, object]:
    """What RDS writes into a secret attached through CDK (from_generated_secret): no dbname, no sslmode."""
    return {
        "username": username, "password": password, "engine": "postgres", "host": host, "port": port,
        "dbInstanceIdentifier": "meeting-rag-dev",
    }  # fmt: skip


def assert_verified_with_the_bundle(query: str) -> None:
    params = dict(parse_qsl(query))
    assert params["sslmode"] == "verify-full"
    assert params["sslrootcert"] == str(RDS_CA_BUNDLE) and RDS_CA_BUNDLE.is_file()


def test_token_is_a_presigned_connect_request_for_the_user_and_host() -> None:
    url = url_with_iam_token(f"postgresql://rag_admin@{PROXY}:5432/rag", "eu-west-1")

    parts = urlsplit(url)
    assert (parts.username, parts.hostname, parts.port, parts.path) == ("rag_admin", PROXY, 5432, "/rag")
    assert_verified_with_the_bundle(parts.query)  # IAM tokens go over TLS only, and to the proxy, verified
    token = unquote(parts.password or "")
    assert token.startswith(f"{PROXY}:5432/?")
    signed = parse_qs(token.split("?", 1)[1])
    assert signed["Action"] == ["connect"] and signed["DBUser"] == ["rag_admin"]
    assert "/eu-west-1/rds-db/aws4_request" in signed["X-Amz-Credential"][0]
    assert int(signed["X-Amz-Expires"][0]) == 900 and signed["X-Amz-Signature"][0]


def test_an_explicit_sslmode_is_kept() -> None:
    url = url_with_iam_token(f"postgresql://app@{PROXY}/rag?sslmode=verify-ca&application_name=x", "eu-west-1")
    assert dict(parse_qsl(urlsplit(url).query)) == {
        "sslmode": "verify-ca", "application_name": "x", "sslrootcert": str(RDS_CA_BUNDLE)
    }  # fmt: skip
    assert urlsplit(url).port == 5432
    local = url_with_iam_token("postgresql://app@127.0.0.1:5432/rag?sslmode=disable", "eu-west-1")
    assert urlsplit(local).query == "sslmode=disable"


def test_require_to_an_rds_endpoint_becomes_verify_full_with_the_bundled_cas() -> None:
    # The CDK app's RAG_DATABASE_IAM_URL says sslmode=require: encrypted, but anyone could answer.
    url = url_with_iam_token(f"postgresql://rag_app@{PROXY}:5432/rag?sslmode=require", "eu-west-1")
    assert_verified_with_the_bundle(urlsplit(url).query)
    assert conninfo_to_dict(url)["sslrootcert"] == str(RDS_CA_BUNDLE)  # libpq's own parser reads it back


def test_other_hosts_get_require_and_the_setting_overrides_everything(monkeypatch: pytest.MonkeyPatch) -> None:
    assert urlsplit(url_with_iam_token("postgresql://app@db.internal/rag", "eu-west-1")).query == "sslmode=require"
    forced = url_with_iam_token(f"postgresql://app@{PROXY}/rag", "eu-west-1", sslmode="require")
    assert urlsplit(forced).query == "sslmode=require"
    own_ca = url_with_iam_token("postgresql://app@db.internal/rag", "eu-west-1", sslmode="verify-full",
                                sslrootcert=RDS_CA_BUNDLE)  # fmt: skip
    assert dict(parse_qsl(urlsplit(own_ca).query)) == {"sslmode": "verify-full", "sslrootcert": str(RDS_CA_BUNDLE)}
    monkeypatch.delenv("DATABASE_URL", raising=False)
    monkeypatch.setenv(IAM_URL_ENV, f"postgresql://app@{PROXY}:5432/rag?sslmode=require")
    monkeypatch.setenv("RAG_DATABASE_SSLMODE", "verify-ca")
    assert dict(parse_qsl(urlsplit(resolve_database_url(Settings())).query))["sslmode"] == "verify-ca"


def test_an_instance_in_a_region_the_bundle_lacks_gets_require_and_a_warning(caplog: pytest.LogCaptureFixture) -> None:
    url = url_with_iam_token("postgresql://app@db.abc.il-central-1.rds.amazonaws.com/rag", "il-central-1")
    assert urlsplit(url).query == "sslmode=require"
    assert "RAG_DATABASE_SSLROOTCERT" in caplog.text


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


@pytest.fixture
def secret_of(monkeypatch: pytest.MonkeyPatch) -> Iterator[Callable[..., str]]:
    """Stores an RDS-shaped secret in Secrets Manager (moto) and returns its ARN."""
    from moto import mock_aws

    monkeypatch.delenv(IAM_URL_ENV, raising=False)
    monkeypatch.delenv("DATABASE_URL", raising=False)
    with mock_aws():
        import boto3

        client = boto3.client("secretsmanager", region_name="us-east-1")

        def store(host: str, port: int = 5432) -> str:
            secret = rds_secret(username="rag_admin", password="p@ss/word", host=host, port=port)
            return client.create_secret(Name=f"rag-db-{uuid.uuid4().hex[:6]}", SecretString=json.dumps(secret))["ARN"]

        yield store


def test_the_secret_path_uses_the_configured_database(secret_of: Callable[..., str]) -> None:
    url = resolve_database_url(Settings(database_secret_arn=secret_of("db.internal", 5433), database_name="rag"))
    assert conninfo_to_dict(url) == {
        "user": "rag_admin", "password": "p@ss/word", "host": "db.internal", "port": "5433", "dbname": "rag",
        "sslmode": "require",
    }  # fmt: skip


def test_the_secret_of_an_rds_instance_is_used_with_verify_full(secret_of: Callable[..., str]) -> None:
    url = resolve_database_url(Settings(database_secret_arn=secret_of(INSTANCE), database_name="rag"))
    assert conninfo_to_dict(url)["dbname"] == "rag" and urlsplit(url).hostname == INSTANCE
    assert_verified_with_the_bundle(urlsplit(url).query)


def test_a_secret_without_dbname_and_no_configured_name_is_an_error_not_postgres(secret_of: Callable[..., str]) -> None:
    with pytest.raises(ValueError, match="names no database .* set RAG_DATABASE_NAME"):
        resolve_database_url(Settings(database_secret_arn=secret_of(INSTANCE)))


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
        IAM_URL_ENV,
        f"postgresql://{iam_role}@{server.get('host', '127.0.0.1')}:{server.get('port', 5432)}/{server['dbname']}?sslmode=disable",
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
