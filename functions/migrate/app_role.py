"""The functions' database role: it may read and write rows, never change the schema.

Run by the migrator after every migration, so tables added by a new migration are granted too.
The password comes from the role's own Secrets Manager secret (rotated there; RDS Proxy logs in with it).
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import psycopg


@dataclass(frozen=True)
class RoleCredentials:
    username: str
    password: str


def credentials_from_secret(secret_arn: str, *, region: str, endpoint_url: str | None = None) -> RoleCredentials:
    import boto3

    client = boto3.client("secretsmanager", region_name=region, endpoint_url=endpoint_url)
    secret: dict[str, Any] = json.loads(client.get_secret_value(SecretId=secret_arn)["SecretString"])
    return RoleCredentials(username=secret["username"], password=secret["password"])


def ensure_app_role(conn: psycopg.Connection, credentials: RoleCredentials, *, schema: str = "public") -> None:
    """Create the role on first deploy (with the secret's password), then grant row access on every table."""
    from psycopg import sql

    role = sql.Identifier(credentials.username)
    with conn.transaction():
        exists = conn.execute("SELECT 1 FROM pg_roles WHERE rolname = %s", (credentials.username,)).fetchone()
        if not exists:
            # Only at creation: afterwards the secret's rotation owns the password.
            conn.execute(sql.SQL("CREATE ROLE {} LOGIN PASSWORD {}").format(role, sql.Literal(credentials.password)))
        row = conn.execute("SELECT current_database()").fetchone()
        assert row is not None  # current_database() always returns its one row
        database = row[0]
        statements = [
            "GRANT CONNECT, TEMPORARY ON DATABASE {database} TO {role}",
            "GRANT USAGE ON SCHEMA {schema} TO {role}",
            "GRANT SELECT, INSERT, UPDATE, DELETE ON ALL TABLES IN SCHEMA {schema} TO {role}",
            "GRANT USAGE, SELECT ON ALL SEQUENCES IN SCHEMA {schema} TO {role}",
        ]
        for statement in statements:
            conn.execute(sql.SQL(statement).format(database=sql.Identifier(database), schema=sql.Identifier(schema), role=role))
