"""A fake OpenID Connect provider on 127.0.0.1 that speaks the authorization code flow with PKCE as a real one does.

``GET /authorize`` records the request and redirects back to ``redirect_uri`` with a code and the caller's
state (the user "signs in" at once); ``POST /token`` (form encoded) trades the code for tokens only with the
verifier whose S256 hash is the challenge, the same redirect_uri and client id, once. The ID token carries the
nonce of the authorization request (signed with a key nobody checks here: the API's JWT authorizer does that).
"""

from __future__ import annotations

import base64
import hashlib
import json
import secrets
import threading
import time
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from types import TracebackType
from typing import Any
from urllib.parse import parse_qsl, urlencode, urlsplit


def b64url(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode()


@dataclass
class FakeOidc:
    client_id: str = "web-client"
    authorizations: list[dict[str, str]] = field(default_factory=list)  # each /authorize request's parameters
    token_requests: list[dict[str, str]] = field(default_factory=list)
    issued: list[str] = field(default_factory=list)  # the ID tokens handed out
    refusals: list[str] = field(default_factory=list)  # why /token said no
    _codes: dict[str, dict[str, str]] = field(default_factory=dict)

    def __enter__(self) -> FakeOidc:
        provider = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args: Any) -> None:
                pass

            def do_GET(self) -> None:
                url = urlsplit(self.path)
                if url.path != "/authorize":
                    return self._json(404, {"error": "not_found"})
                params = dict(parse_qsl(url.query))
                provider.authorizations.append(params)
                code = secrets.token_urlsafe(16)
                provider._codes[code] = params
                self.send_response(302)
                self.send_header("Location", f"{params['redirect_uri']}?{urlencode({'code': code, 'state': params['state']})}")
                self.end_headers()

            def do_POST(self) -> None:
                length = int(self.headers.get("Content-Length") or 0)
                form = dict(parse_qsl(self.rfile.read(length).decode()))
                provider.token_requests.append(form)
                granted = provider._codes.pop(form.get("code", ""), None)  # a code works once
                problem = provider._problem(form, granted)
                if problem:
                    provider.refusals.append(problem)
                    return self._json(400, {"error": "invalid_grant", "error_description": problem})
                assert granted is not None
                id_token = provider._id_token(granted["nonce"])
                provider.issued.append(id_token)
                self._json(
                    200,
                    {"id_token": id_token, "access_token": secrets.token_urlsafe(24), "token_type": "Bearer", "expires_in": 3600},
                )

            def _json(self, status: int, body: dict[str, Any]) -> None:
                data = json.dumps(body).encode()
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Access-Control-Allow-Origin", "*")  # the page calls /token from its own origin
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.origin = f"http://127.0.0.1:{self.server.server_address[1]}"
        self._thread = threading.Thread(target=self.server.serve_forever, daemon=True)
        self._thread.start()
        return self

    def __exit__(self, kind: type[BaseException] | None, error: BaseException | None, trace: TracebackType | None) -> None:
        self.server.shutdown()
        self.server.server_close()

    def _problem(self, form: dict[str, str], granted: dict[str, str] | None) -> str | None:
        if granted is None:
            return "unknown or used code"
        if form.get("grant_type") != "authorization_code":
            return "grant_type is not authorization_code"
        if form.get("client_id") != self.client_id or granted["client_id"] != self.client_id:
            return "wrong client"
        if form.get("redirect_uri") != granted["redirect_uri"]:
            return "redirect_uri differs from the authorization request's"
        if granted.get("code_challenge_method") != "S256":
            return "the challenge was not S256"
        verifier = form.get("code_verifier", "")
        if not 43 <= len(verifier) <= 128 or b64url(hashlib.sha256(verifier.encode()).digest()) != granted["code_challenge"]:
            return "the verifier does not match the challenge"
        return None

    def _id_token(self, nonce: str) -> str:
        header = {"alg": "HS256", "typ": "JWT"}
        now = int(time.time())
        claims = {
            "iss": self.origin,
            "aud": self.client_id,
            "sub": "user-1",
            "email": "lead@example.com",
            "nonce": nonce,
            "iat": now,
            "exp": now + 3600,
        }
        signing_input = f"{b64url(json.dumps(header).encode())}.{b64url(json.dumps(claims).encode())}"
        return f"{signing_input}.{b64url(secrets.token_bytes(32))}"

    def config(self) -> dict[str, Any]:
        """What RAG_WEB_OIDC holds for this provider."""
        return {
            "client_id": self.client_id,
            "authorization_endpoint": f"{self.origin}/authorize",
            "token_endpoint": f"{self.origin}/token",
            "scope": "openid email",
            "logout_endpoint": None,
        }
