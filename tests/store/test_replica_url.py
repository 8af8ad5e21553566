"""The reader's URL: the writer's connection settings with only the host and port swapped."""

from __future__ import annotations

import json
from urllib.parse import parse_qs, unquote, urlsplit

import boto3
import pytest
from moto import mock_aws

from rag.config import Settings
from rag.store.replica import reader_configured, resolve_reader_url, with_endpoint

WRITER = "meeting-rag.cluster-abc123.eu-west-1.rds.amazonaws.com"
READER = "meeting-rag.cluster-ro-abc123.eu-west-1.rds.amazonaws.com"
PROXY_READER = "meeting-rag-read-only.endpoint.proxy-abc123.eu-west-1.rds.amazonaws.com"


def test_a_url_keeps_user_password_database_and_parameters() -> None:
    writer = "postgresql://rag:s%40cret@primary.internal:6432/rag?sslmode=require&application_name=x"

    assert with_endpoint(writer, "replica.internal", None) == (
        "postgresql://rag:s%40cret@replica.internal:6432/rag?sslmode=require&application_name=x"
    )
    assert with_endpoint("postgresql://primary/rag", "replica", 5433) == "postgresql://replica:5433/rag"


def test_an_explicit_reader_url_wins_and_nothing_configured_means_no_reader() -> None:
    assert not reader_configured(Settings(database_url="postgresql://p/rag"))
    settings = Settings(database_url="postgresql://p/rag", database_reader_url="postgresql://r:5/rag", database_reader_host="h")
    assert reader_configured(settings) and resolve_reader_url(settings) == "postgresql://r:5/rag"
    with pytest.raises(ValueError, match="RAG_DATABASE_READER_URL or RAG_DATABASE_READER_HOST"):
        resolve_reader_url(Settings(database_url="postgresql://p/rag"))


def test_iam_authentication_signs_the_token_for_the_readers_host(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", "ASIAEXAMPLEEXAMPLE12")
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY")
    settings = Settings(
        database_url=None,
        database_iam_url=f"postgresql://rag_app@{WRITER}:5432/rag",
        database_reader_host=PROXY_READER,
        aws_region="eu-west-1",
    )

    url = urlsplit(resolve_reader_url(settings))

    assert (url.hostname, url.port, url.username, url.path) == (PROXY_READER, 5432, "rag_app", "/rag")
    token = unquote(url.password or "")
    assert token.startswith(f"{PROXY_READER}:5432/?Action=connect&DBUser=rag_app&")  # what RDS checks the host against
    assert parse_qs(url.query)["sslmode"] == ["verify-full"]  # verified like the writer: the bundled RDS CAs


def test_a_secrets_credentials_and_database_with_the_readers_host_and_port() -> None:
    secret = {"username": "rag", "password": "p@ss", "engine": "postgres", "host": WRITER, "port": 5432}
    with mock_aws():
        arn = boto3.client("secretsmanager", region_name="eu-west-1").create_secret(Name="db", SecretString=json.dumps(secret))[
            "ARN"
        ]
        settings = Settings(
            database_url=None, database_secret_arn=arn, database_name="rag", database_reader_host=READER, database_reader_port=5433,
            aws_region="eu-west-1",
        )  # fmt: skip
        url = urlsplit(resolve_reader_url(settings))

    assert (url.hostname, url.port, url.username, unquote(url.password or ""), url.path) == (READER, 5433, "rag", "p@ss", "/rag")
    assert parse_qs(url.query)["sslmode"] == ["verify-full"]
