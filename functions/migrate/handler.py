"""Deploy-time migrations: a CloudFormation custom resource (CDK Provider framework) running ``rag migrate``'s code.

Create and Update apply pending ``sql/`` migrations (bundled next to this file, ``RAG_MIGRATIONS_DIR``) and the
configured model's vector indexes; Delete leaves the schema alone (the data goes with the database, or stays).
"""

from __future__ import annotations

import time
from typing import Any

from aws_lambda_powertools import Logger

from rag.config import get_settings
from rag.store.migrations import migrate_database

logger = Logger(service="migrate")

PHYSICAL_ID = "meeting-rag-schema"
# A freshly created instance or rotated secret can refuse connections for a short while.
CONNECT_ATTEMPTS = 10
CONNECT_PAUSE_SECONDS = 15.0


def migrate_with_retries(attempts: int = CONNECT_ATTEMPTS, pause: float = CONNECT_PAUSE_SECONDS) -> list[str]:
    import psycopg

    for attempt in range(1, attempts + 1):
        try:
            return migrate_database(get_settings())
        except psycopg.OperationalError as error:
            if attempt == attempts:
                raise
            logger.warning("database not reachable yet; retrying", extra={"attempt": attempt, "error": str(error)})
            time.sleep(pause)
    raise AssertionError("unreachable")


@logger.inject_lambda_context(clear_state=True)
def lambda_handler(event: dict[str, Any], context: Any) -> dict[str, Any]:
    request = event["RequestType"]
    if request == "Delete":
        logger.info("stack deletes the migrations resource; schema left in place")
        return {"PhysicalResourceId": event.get("PhysicalResourceId", PHYSICAL_ID)}
    applied = migrate_with_retries()
    logger.info("migrations applied", extra={"applied": applied, "request": request})
    return {"PhysicalResourceId": PHYSICAL_ID, "Data": {"Applied": ",".join(applied) or "none"}}
