"""The caller's tenant, from the verified identity API Gateway passes in the event.

- JWT authorizer: ``requestContext.authorizer.jwt.claims[<claim>]`` (claim configurable).
- Lambda authorizer: ``requestContext.authorizer.lambda.tenant``.
- IAM authorization: ``requestContext.authorizer.iam.userArn`` mapped by configuration.
Never from the request body or headers.
"""

from __future__ import annotations

from typing import Any


class Unauthenticated(Exception):
    """No verified identity in the request."""


def tenant_of(event: dict[str, Any], *, claim: str = "tenant", iam_tenants: dict[str, str] | None = None) -> str:
    authorizer = (event.get("requestContext") or {}).get("authorizer") or {}
    claims = (authorizer.get("jwt") or {}).get("claims") or {}
    if tenant := claims.get(claim):
        return str(tenant)
    if tenant := (authorizer.get("lambda") or {}).get("tenant"):
        return str(tenant)
    iam = authorizer.get("iam") or {}
    if (arn := iam.get("userArn")) and iam_tenants and arn in iam_tenants:
        return iam_tenants[arn]
    raise Unauthenticated("no verified identity with a tenant in the request")
