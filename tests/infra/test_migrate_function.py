"""The deploy-time migrator: the bundled function, configured as the CDK app configures it, against a real PostgreSQL."""

from __future__ import annotations

import importlib.util
import json
import uuid
from collections.abc import Iterator
from pathlib import Path
from types import ModuleType, SimpleNamespace
from typing import Any

import psycopg
import pytest
from psycopg.conninfo import conninfo_to_dict, make_conninfo

from infra.bundling import CopyBundler
from infra.constructs.migrations import BUNDLED_SQL_DIR, MIGRATE_DIR, SQL_DIR
from infra.defaults import DATABASE_NAME
from rag.store.migrations import discover, embedding_index_name

APP_ROLE = f"rag_app_{uuid.uuid4().hex[:8]}"  # roles are server-wide: one per test session
# What RDS writes into a secret attached through CDK's from_generated_secret (and DatabaseSecret): no dbname
# (aws-cdk issue 24728), no sslmode.
RDS_SECRET_KEYS = {"username", "password", "engine", "host", "port", "dbInstanceIdentifier"}
MODEL_ID, DIMENSION = "bedrock/amazon.titan-embed-text-v2:0", 1024


def rds_secret(*, username: str, password: str, host: str, port: int) -> dict[str, Any]:
    """A secret shaped exactly as RDS fills it."""
    return {
        "username": username, "password": password, "engine": "postgres", "host": host, "port": port,
        "dbInstanceIdentifier": "meeting-rag-dev",
    }  # fmt: skip


LAMBDA_CONTEXT = SimpleNamespace(
    function_name="MeetingRag-dev-MigrationsFunction",
    memory_limit_in_mb=512,
    invoked_function_arn="arn:aws:lambda:us-east-1:123456789012:function:MeetingRag-dev-MigrationsFunction",
    aws_request_id="c0ffee00-0000-4000-8000-000000000000",
)


def cloudformation_event(request_type: str, **extra: Any) -> dict[str, Any]:
    """What the CDK Provider framework hands the on-event function."""
    return {
        "RequestType": request_type,
        "ServiceToken": "arn:aws:lambda:us-east-1:123456789012:function:framework-onEvent",
        "ResponseURL": "https://cloudformation-custom-resource-response-useast1.s3.amazonaws.com/x",
        "StackId": "arn:aws:cloudformation:us-east-1:123456789012:stack/MeetingRag-dev/1",
        "RequestId": str(uuid.uuid4()),
        "LogicalResourceId": "MigrationsSchemaA1B2C3",
        "ResourceType": "Custom::MeetingRagMigrations",
        "ResourceProperties": {"MigrationsHash": "h", "EmbeddingModel": "bedrock/amazon.titan-embed-text-v2:0"},
        **extra,
    }


@pytest.fixture
def bundled(tmp_path: Path) -> Path:
    """The function's asset as CDK's local bundling builds it: handler.py and sql/."""
    out = tmp_path / "asset"
    out.mkdir()
    sources = {"handler.py": MIGRATE_DIR / "handler.py", "app_role.py": MIGRATE_DIR / "app_role.py", "sql": SQL_DIR}
    CopyBundler(sources).try_bundle(str(out), image=None)
    return out


def load_handler(bundled: Path, monkeypatch: pytest.MonkeyPatch) -> ModuleType:
    monkeypatch.syspath_prepend(str(bundled))  # Lambda puts the function's code (/var/task) on the path
    spec = importlib.util.spec_from_file_location("migrate_handler_under_test", bundled / "handler.py")
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.fixture
def empty_database(database_url: str) -> Iterator[dict[str, Any]]:
    """A new, empty database on the test server (the migrator must build everything)."""
    name = f"rag_migrate_{uuid.uuid4().hex[:8]}"
    with psycopg.connect(database_url, autocommit=True) as admin:
        admin.execute(f'CREATE DATABASE "{name}"')
    yield conninfo_to_dict(make_conninfo(database_url, dbname=name))
    with psycopg.connect(database_url, autocommit=True) as admin:
        admin.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')


@pytest.fixture
def app_role_cleanup(empty_database: dict[str, Any]) -> Iterator[None]:
    yield
    with psycopg.connect(make_conninfo("", **empty_database), autocommit=True) as conn:
        if conn.execute("SELECT 1 FROM pg_roles WHERE rolname = %s", (APP_ROLE,)).fetchone():
            conn.execute(f'DROP OWNED BY "{APP_ROLE}"')
            conn.execute(f'DROP ROLE "{APP_ROLE}"')


@pytest.fixture
def secret_arn(empty_database: dict[str, Any], app_role_cleanup: None, monkeypatch: pytest.MonkeyPatch) -> Iterator[str]:
    """The database secrets in Secrets Manager (moto), shaped as RDS writes them, and the function's environment."""
    from moto import mock_aws

    with mock_aws():
        import boto3

        server = {"host": empty_database.get("host", "127.0.0.1"), "port": int(empty_database.get("port", 5432))}
        secret = rds_secret(username=empty_database.get("user", "postgres"), password="unused-locally", **server)
        client = boto3.client("secretsmanager")
        arn = client.create_secret(Name="rag-db", SecretString=json.dumps(secret))["ARN"]
        app = rds_secret(username=APP_ROLE, password="app-password-from-the-secret", **server)
        app_arn = client.create_secret(Name="rag-db-app", SecretString=json.dumps(app))["ARN"]
        monkeypatch.delenv("DATABASE_URL", raising=False)
        monkeypatch.setenv("RAG_DATABASE_SECRET_ARN", arn)
        monkeypatch.setenv("RAG_APP_DATABASE_SECRET_ARN", app_arn)
        # As the CDK construct sets it (there: DATABASE_NAME); here the test's own empty database.
        monkeypatch.setenv("RAG_DATABASE_NAME", empty_database["dbname"])
        monkeypatch.setenv("RAG_DATABASE_SSLMODE", "disable")  # the local server has no TLS; RDS gets verify-full
        monkeypatch.setenv("RAG_EMBEDDING_PROVIDER", "bedrock")
        monkeypatch.setenv("RAG_EMBEDDING_DIMENSION", "1024")
        from rag.config import get_settings

        get_settings.cache_clear()
        yield arn


def test_bundle_holds_the_handler_and_every_migration(bundled: Path) -> None:
    assert (bundled / "handler.py").read_text() == (MIGRATE_DIR / "handler.py").read_text()
    assert (bundled / "app_role.py").is_file()
    assert sorted(p.name for p in (bundled / "sql").glob("*.sql")) == sorted(m.path.name for m in discover(SQL_DIR))
    assert BUNDLED_SQL_DIR == "/var/task/sql"  # Lambda unpacks the asset into /var/task


def test_create_applies_every_migration_then_update_is_a_no_op(
    bundled: Path, secret_arn: str, empty_database: dict[str, Any], monkeypatch: pytest.MonkeyPatch
) -> None:
    # GIVEN the function as deployed: sql/ from its bundle, the database from the secret
    monkeypatch.setenv("RAG_MIGRATIONS_DIR", str(bundled / "sql"))
    handler = load_handler(bundled, monkeypatch)

    # WHEN CloudFormation creates the resource
    created = handler.lambda_handler(cloudformation_event("Create"), LAMBDA_CONTEXT)

    # THEN every migration is applied and the configured model has its vector indexes
    versions = [m.version for m in discover(SQL_DIR)]
    assert created == {"PhysicalResourceId": "meeting-rag-schema", "Data": {"Applied": ",".join(versions)}}
    with psycopg.connect(make_conninfo("", **empty_database)) as conn:
        assert [r[0] for r in conn.execute("SELECT version FROM schema_migrations ORDER BY version")] == versions
        indexes = [r[0] for r in conn.execute("SELECT indexdef FROM pg_indexes WHERE tablename = 'chunks'")]
        assert any("vector(1024)" in i and "bedrock/amazon.titan-embed-text-v2:0" in i for i in indexes)

    # AND the functions' role exists, may read and write rows, and may not change the schema
    with psycopg.connect(make_conninfo("", **empty_database)) as conn:
        privileges = conn.execute(
            "SELECT has_table_privilege(%(r)s, 'chunks', 'SELECT'), has_table_privilege(%(r)s, 'chunks', 'INSERT'),"
            " has_table_privilege(%(r)s, 'tasks', 'UPDATE'), has_table_privilege(%(r)s, 'documents', 'DELETE'),"
            " has_table_privilege(%(r)s, 'chunks', 'TRUNCATE'), has_schema_privilege(%(r)s, 'public', 'CREATE')",
            {"r": APP_ROLE},
        ).fetchone()
        assert privileges == (True, True, True, True, False, False)
    as_app = make_conninfo("", **{**empty_database, "user": APP_ROLE})
    with psycopg.connect(as_app, autocommit=True) as conn:
        assert conn.execute("SELECT count(*) FROM documents").fetchone() == (0,)
        with pytest.raises(psycopg.errors.InsufficientPrivilege):
            conn.execute("DROP TABLE chunks")
        with pytest.raises(psycopg.errors.InsufficientPrivilege):
            conn.execute("CREATE TABLE intruder (id int)")

    # WHEN a later deploy updates it, THEN nothing is applied twice
    updated = handler.lambda_handler(
        cloudformation_event("Update", PhysicalResourceId="meeting-rag-schema", OldResourceProperties={}), LAMBDA_CONTEXT
    )
    assert updated == {"PhysicalResourceId": "meeting-rag-schema", "Data": {"Applied": "none"}}


def test_delete_leaves_the_schema(bundled: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("DATABASE_URL", "postgresql://nobody@127.0.0.1:1/none")  # never contacted
    handler = load_handler(bundled, monkeypatch)
    result = handler.lambda_handler(cloudformation_event("Delete", PhysicalResourceId="meeting-rag-schema"), LAMBDA_CONTEXT)
    assert result == {"PhysicalResourceId": "meeting-rag-schema"}


def test_an_unreachable_database_fails_the_deploy_after_retries(bundled: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("DATABASE_URL", "postgresql://nobody@127.0.0.1:1/none?connect_timeout=1")
    monkeypatch.setenv("RAG_MIGRATIONS_DIR", str(bundled / "sql"))
    from rag.config import get_settings

    get_settings.cache_clear()
    handler = load_handler(bundled, monkeypatch)
    attempts: list[int] = []
    monkeypatch.setattr(handler.time, "sleep", lambda seconds: attempts.append(seconds))
    with pytest.raises(psycopg.OperationalError):
        handler.migrate_with_retries(attempts=3, pause=7.0)
    assert attempts == [7.0, 7.0]  # two pauses between three attempts, then the error reaches CloudFormation


def test_the_test_secrets_hold_what_rds_writes_and_no_dbname(secret_arn: str) -> None:
    import boto3

    client = boto3.client("secretsmanager")
    for arn in (secret_arn, client.describe_secret(SecretId="rag-db-app")["ARN"]):
        assert set(json.loads(client.get_secret_value(SecretId=arn)["SecretString"])) == RDS_SECRET_KEYS


def _public_tables(conninfo: str) -> set[str]:
    with psycopg.connect(conninfo) as conn:
        return {r[0] for r in conn.execute("SELECT tablename FROM pg_tables WHERE schemaname = 'public'")}


def test_create_builds_the_schema_in_the_configured_database_not_in_postgres(
    bundled: Path, secret_arn: str, empty_database: dict[str, Any], database_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    # GIVEN an RDS-shaped secret (no dbname) and the database name the CDK construct passes
    postgres_db = make_conninfo(database_url, dbname="postgres")
    before = _public_tables(postgres_db)
    monkeypatch.setenv("RAG_MIGRATIONS_DIR", str(bundled / "sql"))
    handler = load_handler(bundled, monkeypatch)

    # WHEN CloudFormation creates the resource
    handler.lambda_handler(cloudformation_event("Create"), LAMBDA_CONTEXT)

    # THEN the tables, the vector indexes and the app role's grants are in that database
    target = make_conninfo("", **empty_database)
    assert {"schema_migrations", "documents", "chunks"} <= _public_tables(target)
    with psycopg.connect(target) as conn:
        assert conn.execute("SELECT has_table_privilege(%s, 'chunks', 'SELECT')", (APP_ROLE,)).fetchone() == (True,)
    # AND the server's `postgres` database is left exactly as it was
    assert _public_tables(postgres_db) == before


def test_without_a_database_name_the_migrator_fails_instead_of_using_postgres(
    bundled: Path, secret_arn: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("RAG_DATABASE_NAME")
    monkeypatch.setenv("RAG_MIGRATIONS_DIR", str(bundled / "sql"))
    from rag.config import get_settings

    get_settings.cache_clear()
    handler = load_handler(bundled, monkeypatch)
    with pytest.raises(ValueError, match="names no database .* set RAG_DATABASE_NAME"):
        handler.lambda_handler(cloudformation_event("Create"), LAMBDA_CONTEXT)


def test_a_build_indexes_invocation_builds_the_missing_vector_index_concurrently(
    bundled: Path, secret_arn: str, empty_database: dict[str, Any], monkeypatch: pytest.MonkeyPatch
) -> None:
    # GIVEN a migrated database whose chunks index of the model is missing (as when migrate deferred it)
    monkeypatch.setenv("RAG_MIGRATIONS_DIR", str(bundled / "sql"))
    handler = load_handler(bundled, monkeypatch)
    handler.lambda_handler(cloudformation_event("Create"), LAMBDA_CONTEXT)
    name = embedding_index_name("chunks", MODEL_ID, DIMENSION)
    target = make_conninfo("", **empty_database)
    with psycopg.connect(target, autocommit=True) as conn:
        conn.execute(f'DROP INDEX "{name}"')

    # WHEN an operator invokes the migrator with {"action": "build-indexes"}
    result = handler.lambda_handler({"action": "build-indexes", "maintenance_work_mem": "256MB"}, LAMBDA_CONTEXT)

    # THEN exactly that index is built, and valid
    assert result == {"built": [name]}
    with psycopg.connect(target) as conn:
        valid = conn.execute("SELECT indisvalid FROM pg_index WHERE indexrelid = %s::regclass", (name,)).fetchone()
    assert valid == (True,)


def test_the_deployed_migrator_is_told_which_database_to_migrate(dev: Any) -> None:
    migrator = next(
        f["Properties"]
        for f in dev.resources("AWS::Lambda::Function").values()
        if f["Properties"].get("Description", "").startswith("Applies sql/")
    )
    variables = migrator["Environment"]["Variables"]
    assert variables["RAG_DATABASE_NAME"] == DATABASE_NAME == "rag"
    assert "RAG_DATABASE_SECRET_ARN" in variables  # the admin secret RDS fills without dbname
    # The name an operator invokes for deferred index builds (infra/README.md), under a stable key
    assert "build-indexes" in dev.data["Outputs"]["MigratorFunctionName"]["Description"]
