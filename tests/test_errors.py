"""Which failures are worth a retry: the environment's, never the input's."""

from __future__ import annotations

import psycopg
import pytest
from botocore.exceptions import ClientError, EndpointConnectionError
from psycopg_pool import PoolTimeout

from rag.errors import EmbeddingError, ParseError, is_transient


def server_error(sqlstate: str) -> psycopg.Error:
    return psycopg.errors.lookup(sqlstate)("from the server")  # type: ignore[no-any-return]


@pytest.mark.parametrize(
    "error",
    [
        psycopg.OperationalError("connection lost"),  # client side, no SQLSTATE
        PoolTimeout("no connection in 10 s"),
        server_error("57P01"),  # admin_shutdown: the server is restarting
        server_error("57014"),  # query_canceled: a statement timeout
        server_error("40P01"),  # deadlock_detected
        server_error("53300"),  # too_many_connections
        server_error("25P03"),  # idle_in_transaction_session_timeout
        EmbeddingError("429 after retries"),
        ClientError({"Error": {"Code": "SlowDown"}, "ResponseMetadata": {"HTTPStatusCode": 503}}, "GetObject"),
        EndpointConnectionError(endpoint_url="https://s3.amazonaws.com"),
    ],
)
def test_failures_of_the_environment_are_retried(error):
    assert is_transient(error)


@pytest.mark.parametrize(
    "error",
    [
        psycopg.DataError("PostgreSQL text fields cannot contain NUL (0x00) bytes"),  # client side
        server_error("22P02"),  # invalid_text_representation: jsonb refuses Infinity
        server_error("22003"),  # numeric_value_out_of_range
        server_error("23505"),  # unique_violation
        server_error("54000"),  # program_limit_exceeded: a tsvector too long
        ParseError("not UTF-8"),
        ValueError("a parser's surprise"),
    ],
)
def test_failures_of_the_input_are_not(error):
    assert not is_transient(error)
