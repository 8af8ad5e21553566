"""Deploy-time migrations: a CloudFormation custom resource (CDK Provider framework) running ``rag migrate``'s code.

Create and Update apply pending ``sql/`` migrations (bundled next to this file, ``RAG_MIGRATIONS_DIR``) in the
database ``RAG_DATABASE_NAME`` (RDS's admin secret names none) and the configured model's vector indexes, then make
sure the functions' role (``RAG_APP_DATABASE_SECRET_ARN``) exists with row access to every table; Delete leaves the
schema alone (the data goes with the database, or stays).

A vector index over more rows than ``RAG_INDEX_BUILD_MAX_ROWS`` is not built during a deploy (one transaction, a
time limit): invoking this function directly with ``{"action": "build-indexes"}`` builds it with
``CREATE INDEX CONCURRENTLY`` while ingest and search go on (infra/README.md, "Database: schema, pgvector, TLS").
"""

from __future__ import annotations

import os
import time
from typing import Any

from app_role import credentials_from_secret, ensure_app_role
from aws_lambda_powertools import Logger

from rag.config import get_settings
from rag.store.connection import connect, resolve_database_url
from rag.store.migrations import build_embedding_indexes, migrate_database

logger = Logger(service="migrate")

PHYSICAL_ID = "meeting-rag-schema"
BUILD_INDEXES = "build-indexes"  # {"action": "build-indexes"}: a direct invocation, not CloudFormation's
APP_SECRET_ENV = "RAG_APP_DATABASE_SECRET_ARN"
# A freshly created instance or rotated secret can refuse connections for a short while.
CONNECT_ATTEMPTS = 10
CONNECT_PAUSE_SECONDS = 15.0


def migrate_and_grant() -> list[str]:
    settings = get_settings()
    # Indexes too large for one deploy are left to a build-indexes invocation.
    applied = migrate_database(settings, build_large_indexes=False)
    if secret_arn := os.environ.get(APP_SECRET_ENV):
        credentials = credentials_from_secret(secret_arn, region=settings.aws.region, endpoint_url=settings.aws.endpoint_url)
        with connect(resolve_database_url(settings), register=False) as conn:
            ensure_app_role(conn, credentials)
    return applied


def migrate_with_retries(attempts: int = CONNECT_ATTEMPTS, pause: float = CONNECT_PAUSE_SECONDS) -> list[str]:
    import psycopg

    for attempt in range(1, attempts + 1):
        try:
            return migrate_and_grant()
        except psycopg.OperationalError as error:
            if attempt == attempts:
                raise
            logger.warning("database not reachable yet; retrying", extra={"attempt": attempt, "error": str(error)})
            time.sleep(pause)
    raise AssertionError("unreachable")


@logger.inject_lambda_context(clear_state=True)
def lambda_handler(event: dict[str, Any], context: Any) -> dict[str, Any]:
    if event.get("action") == BUILD_INDEXES:
        # Optional "maintenance_work_mem" (e.g. "1GB"): the HNSW build is fast only while its graph fits in it.
        built = build_embedding_indexes(get_settings(), maintenance_work_mem=event.get("maintenance_work_mem"))
        logger.info("vector indexes built", extra={"built": built})
        return {"built": built}
    request = event["RequestType"]
    if request == "Delete":
        logger.info("stack deletes the migrations resource; schema left in place")
        return {"PhysicalResourceId": event.get("PhysicalResourceId", PHYSICAL_ID)}
    applied = migrate_with_retries()
    logger.info("migrations applied", extra={"applied": applied, "request": request})
    return {"PhysicalResourceId": PHYSICAL_ID, "Data": {"Applied": ",".join(applied) or "none"}}
