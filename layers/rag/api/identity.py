"""The caller's tenant, from the verified identity API Gateway passes in the event.

- JWT authorizer: ``requestContext.authorizer.jwt.claims[<claim>]`` (claim configurable).
- Lambda authorizer: ``requestContext.authorizer.lambda.tenant``.
- IAM authorization: ``requestContext.authorizer.iam.userArn`` mapped by configuration
  (``RAG_IAM_TENANTS``: principal ARN -> tenant). Keys are IAM user or role ARNs as IAM prints them
  (``arn:aws:iam::<account>:user/<name>``, ``arn:aws:iam::<account>:role/<path>/<name>``). A role's
  callers (Lambda, ECS, EC2, SSO users) reach API Gateway as a session of it,
  ``arn:aws:sts::<account>:assumed-role/<name>/<session>``, which maps to the role of that name in that
  account: a session ARN carries the role's name, never its path.
Never from the request body or headers.
"""

from __future__ import annotations

import re
from typing import Any

# arn:<partition>:sts::<account>:assumed-role/<role name>/<session name>
ASSUMED_ROLE_ARN = re.compile(r"^arn:(?P<partition>[\w-]+):sts::(?P<account>\d{12}):assumed-role/(?P<name>[^/]+)/[^/]+$")
# arn:<partition>:iam::<account>:role/<optional path/><role name>
ROLE_ARN = re.compile(r"^arn:(?P<partition>[\w-]+):iam::(?P<account>\d{12}):role/(?:.*/)?(?P<name>[^/]+)$")


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
    if (arn := iam.get("userArn")) and iam_tenants and (tenant := iam_tenant(str(arn), iam_tenants)):
        return tenant
    raise Unauthenticated("no verified identity with a tenant in the request")


def iam_tenant(caller_arn: str, iam_tenants: dict[str, str]) -> str | None:
    """The tenant of an IAM caller: its own ARN's entry, else (for a role session) its role's entry."""
    if caller_arn in iam_tenants:
        return iam_tenants[caller_arn]
    session = ASSUMED_ROLE_ARN.match(caller_arn)
    if session is None:
        return None
    for key, tenant in iam_tenants.items():
        role = ROLE_ARN.match(key)
        if role is not None and role.group("partition", "account", "name") == session.group("partition", "account", "name"):
            return tenant
    return None
