"""Who may call the query API, and how the web page signs people in: the stage's JWT, CORS and sign-in settings.

``web_auth`` picks the page's sign-in (infra/README.md, "The web page and sign-in"):
- ``cognito``: the stack makes a Cognito user pool with a hosted UI and a public app client (constructs/web_sign_in.py);
  the JWT API then accepts that pool's ID tokens (issuer the pool, audience the client, tenant ``custom:tenant``).
- ``oidc``: any OIDC provider; ``jwt_issuer`` is its issuer and ``web_oidc`` names the page's public client and the
  provider's endpoints (``client_id``, ``authorization_endpoint``, ``token_endpoint``; ``logout_endpoint`` and
  ``scope`` optional). The client id must be one of ``jwt_audience``: the page sends the ID token, whose ``aud`` it is.
- ``off``: no sign-in; the page says so (``/config.json`` mode ``off``).
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from typing import TYPE_CHECKING, Literal, get_args
from urllib.parse import urlsplit

if TYPE_CHECKING:
    from infra.config import StageConfig

WebAuth = Literal["cognito", "oidc", "off"]
# Synthesizes, but no token from a real identity provider matches it: deployments set their own issuer.
PLACEHOLDER_ISSUER = "https://issuer.example.com/"
DEFAULT_AUDIENCE = ("meeting-rag",)
DEFAULT_TENANT_CLAIM = "tenant"
# Cognito prefixes custom attributes with "custom:" in tokens; the attribute is immutable (set by the administrator).
COGNITO_TENANT_CLAIM = "custom:tenant"
WEB_SCOPE = "openid email"
OIDC_ENDPOINTS = ("authorization_endpoint", "token_endpoint", "logout_endpoint")
OIDC_FIELDS = frozenset({"client_id", "scope", *OIDC_ENDPOINTS})
# Cognito domain prefixes: lowercase letters, digits and hyphens, not starting or ending with a hyphen.
DOMAIN_PREFIX_PATTERN = re.compile(r"^[a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?$")
DOMAIN_PREFIX_FORBIDDEN = ("aws", "amazon", "cognito")


def check_api_access(config: StageConfig) -> None:
    """A ValueError saying what to change when the stage's API access or sign-in settings cannot work together."""
    if not config.jwt_issuer.startswith("https://"):
        raise ValueError(f"jwt_issuer must be an https URL, not {config.jwt_issuer!r}")
    if not config.jwt_audience:
        raise ValueError("jwt_audience needs at least one audience")
    if "*" in config.cors_origins:
        raise ValueError("cors_origins must name origins: '*' would let any site call the API with a user's token")
    if config.web_auth not in get_args(WebAuth):
        raise ValueError(f"web_auth must be one of {get_args(WebAuth)}, not {config.web_auth!r}")
    if config.web_auth == "cognito":
        _check_cognito(config)
    elif config.web_domain_prefix:
        raise ValueError("web_domain_prefix names the Cognito hosted UI: it needs web_auth cognito")
    if config.web_auth == "oidc":
        _check_oidc(config)
    elif config.web_oidc:
        raise ValueError(f"web_oidc is read with web_auth oidc only (web_auth is {config.web_auth!r})")


def _check_cognito(config: StageConfig) -> None:
    ignored = {
        "jwt_issuer": config.jwt_issuer != PLACEHOLDER_ISSUER,
        "jwt_audience": tuple(config.jwt_audience) != DEFAULT_AUDIENCE,
        "tenant_claim": config.tenant_claim != DEFAULT_TENANT_CLAIM,
    }
    if any(ignored.values()):
        raise ValueError(
            f"web_auth cognito: the JWT API accepts the stack's user pool only (its issuer, its web client as audience, "
            f"{COGNITO_TENANT_CLAIM} as tenant); leave {', '.join(k for k, v in ignored.items() if v)} unset, or use "
            "web_auth oidc with your own provider"
        )
    for origin in config.cors_origins:  # the page served there signs in too: Cognito returns to https or localhost only
        parts = urlsplit(origin)
        if not (parts.scheme == "https" or (parts.scheme == "http" and parts.hostname == "localhost")) or parts.path:
            raise ValueError(
                f"web_auth cognito: cors_origins {origin!r} must be an https origin or http://localhost[:port] "
                "(the hosted UI returns there after sign-in), without a path"
            )
    prefix = config.web_domain_prefix
    if prefix and (not DOMAIN_PREFIX_PATTERN.fullmatch(prefix) or any(w in prefix for w in DOMAIN_PREFIX_FORBIDDEN)):
        raise ValueError(
            f"web_domain_prefix {prefix!r} is not a Cognito domain prefix: 1-63 of a-z 0-9 -, no leading or trailing "
            f"hyphen, without {', '.join(DOMAIN_PREFIX_FORBIDDEN)}"
        )


def _check_oidc(config: StageConfig) -> None:
    if config.jwt_issuer == PLACEHOLDER_ISSUER:
        raise ValueError("web_auth oidc signs in with your provider: set -c jwt_issuer=<its issuer URL> too")
    oidc = config.web_oidc
    if not isinstance(oidc, Mapping) or set(oidc) - OIDC_FIELDS:
        raise ValueError(f"web_oidc must be a JSON object with fields among {sorted(OIDC_FIELDS)}, not {oidc!r}")
    missing = [name for name in ("client_id", "authorization_endpoint", "token_endpoint") if not oidc.get(name)]
    if missing:
        raise ValueError(f"web_oidc needs {', '.join(missing)} (-c web_oidc='{{\"client_id\": ..., ...}}')")
    for name in OIDC_ENDPOINTS:
        url = oidc.get(name)
        if url is not None and not _is_https_url(url):
            raise ValueError(f"web_oidc {name} must be an https URL, not {url!r}")
    if "openid" not in str(oidc.get("scope", WEB_SCOPE)).split():
        raise ValueError(f"web_oidc scope must include openid (the page signs in with the ID token), not {oidc['scope']!r}")
    if oidc["client_id"] not in config.jwt_audience:
        raise ValueError(
            f"the page sends ID tokens whose audience is its client id {oidc['client_id']!r}: add it to jwt_audience"
        )


def _is_https_url(url: object) -> bool:
    if not isinstance(url, str):
        return False
    parts = urlsplit(url)
    return parts.scheme == "https" and bool(parts.hostname) and not parts.username and not parts.password


def web_environment(config: StageConfig) -> dict[str, str]:
    """``RAG_WEB_AUTH`` and ``RAG_WEB_OIDC`` of the query function for web_auth oidc or off (cognito's name the stack's
    user pool: constructs/web_sign_in.py)."""
    if config.web_auth == "cognito":
        raise ValueError("web_auth cognito: the page's settings are the user pool's (WebSignIn.environment)")
    if config.web_auth == "off":
        return {"RAG_WEB_AUTH": "off"}
    oidc = config.web_oidc
    page = page_oidc(
        client_id=oidc["client_id"],
        authorization_endpoint=oidc["authorization_endpoint"],
        token_endpoint=oidc["token_endpoint"],
        scope=oidc.get("scope", WEB_SCOPE),
        logout_endpoint=oidc.get("logout_endpoint"),
    )
    return {"RAG_WEB_AUTH": "oidc", "RAG_WEB_OIDC": json.dumps(page)}


def page_oidc(
    *, client_id: str, authorization_endpoint: str, token_endpoint: str, scope: str, logout_endpoint: str | None
) -> dict[str, str | None]:
    """What ``RAG_WEB_OIDC`` holds (JSON): the page's public client and its provider's endpoints, no secret."""
    return {
        "client_id": client_id,
        "authorization_endpoint": authorization_endpoint,
        "token_endpoint": token_endpoint,
        "scope": scope,
        "logout_endpoint": logout_endpoint,
    }
