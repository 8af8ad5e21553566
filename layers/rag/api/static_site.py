"""The page's files as the query API serves them: index.html with its ``/assets/<name>`` references rewritten to
content-hashed names, and the assets by either name.

A hashed name (``app.<first 12 hex of sha256>.js``) never changes meaning, so browsers may keep it a year; the
unhashed name (what ES modules import each other by) is served ``no-cache``, as is the page. The directory is read
once per process (per directory); only the files directly in it are served, so no request path reaches elsewhere.
"""

from __future__ import annotations

import hashlib
import re
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

STATIC_DIR = Path(__file__).resolve().parents[1] / "web" / "static"
PAGE = "index.html"
IMMUTABLE = "public, max-age=31536000, immutable"
NO_CACHE = "no-cache"
CONTENT_TYPES = {
    ".html": "text/html; charset=utf-8",
    ".js": "text/javascript; charset=utf-8",
    ".mjs": "text/javascript; charset=utf-8",
    ".css": "text/css; charset=utf-8",
    ".json": "application/json",
    ".svg": "image/svg+xml",
    ".png": "image/png",
    ".ico": "image/x-icon",
    ".woff2": "font/woff2",
    ".txt": "text/plain; charset=utf-8",
}
HASHED_NAME = re.compile(r"^(?P<stem>.+)\.(?P<digest>[0-9a-f]{12})(?P<suffix>\.[A-Za-z0-9]+)$")
ASSET_REFERENCE = re.compile(r"/assets/([A-Za-z0-9][A-Za-z0-9._-]*)")


@dataclass(frozen=True)
class Served:
    body: bytes
    content_type: str
    cache_control: str


@dataclass(frozen=True)
class Asset:
    name: str
    body: bytes
    content_type: str
    digest: str  # the first 12 hex digits of the body's sha256

    @property
    def hashed_name(self) -> str:
        stem, dot, suffix = self.name.rpartition(".")
        return f"{stem}.{self.digest}.{suffix}" if dot else f"{self.name}.{self.digest}"


def _asset(path: Path) -> Asset:
    body = path.read_bytes()
    return Asset(path.name, body, CONTENT_TYPES[path.suffix], hashlib.sha256(body).hexdigest()[:12])


class StaticSite:
    """The files of one directory: the page (``index.html``) and the assets beside it."""

    def __init__(self, directory: Path) -> None:
        files = sorted(directory.iterdir()) if directory.is_dir() else []
        self.assets = {
            path.name: _asset(path)
            for path in files
            if path.is_file() and not path.name.startswith(".") and path.suffix in CONTENT_TYPES and path.name != PAGE
        }
        page = directory / PAGE
        self.page: bytes | None = self._rewritten(page.read_text(encoding="utf-8")) if page.is_file() else None

    def _rewritten(self, html: str) -> bytes:
        """The page with each reference to one of the assets pointing at its hashed name."""

        def hashed(match: re.Match[str]) -> str:
            asset = self.assets.get(match.group(1))
            return f"/assets/{asset.hashed_name}" if asset else match.group(0)

        return ASSET_REFERENCE.sub(hashed, html).encode("utf-8")

    def asset(self, name: str) -> Served | None:
        """An asset by its own name (``no-cache``) or by its current hashed name (immutable); None otherwise."""
        if (asset := self.assets.get(name)) is not None:
            return Served(asset.body, asset.content_type, NO_CACHE)
        match = HASHED_NAME.match(name)
        if match is None:
            return None
        asset = self.assets.get(match.group("stem") + match.group("suffix"))
        if asset is None or asset.digest != match.group("digest"):
            return None  # another version of the file: this process cannot serve it
        return Served(asset.body, asset.content_type, IMMUTABLE)


@lru_cache(maxsize=4)
def static_site(directory: Path) -> StaticSite:
    """The site of ``directory``, read on first use and kept for the process."""
    return StaticSite(directory)
