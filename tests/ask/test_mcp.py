"""The tools over MCP, driven by the SDK's own client: Streamable HTTP through the local API server, and stdio."""

from __future__ import annotations

import copy
import json
import socket
import threading
import urllib.request
from pathlib import Path

import anyio
import pytest

# What API Gateway sends the query function when an MCP client opens its server-sent-events stream (GET /mcp).
MCP_GET_EVENT = json.loads((Path(__file__).parents[1] / "fixtures" / "events" / "http_api_mcp_get.json").read_text())
PATIENCE = 20.0  # seconds a test waits for an answer before calling the server hung


def mcp_session(url: str, key: str | None, work):
    """Run ``work(client)`` in an MCP client session on ``url``/mcp with ``key`` as the bearer token."""
    import httpx2
    from mcp import Client
    from mcp.client.streamable_http import streamable_http_client

    async def main():
        headers = {"Authorization": f"Bearer {key}"} if key else {}
        async with httpx2.AsyncClient(headers=headers, timeout=60) as http:
            async with Client(streamable_http_client(f"{url}/mcp", http_client=http)) as client:
                return await work(client)

    return anyio.run(main)


def test_mcp_lists_the_tools_with_their_json_schemas(local_api):
    from rag.ask.tools import TOOLS

    async def work(client):
        return await client.list_tools()

    listed = mcp_session(local_api, "k-acme", work)

    assert [t.name for t in listed.tools] == list(TOOLS)
    search = next(t for t in listed.tools if t.name == "search")
    assert search.input_schema == TOOLS["search"].schema()
    assert search.input_schema["required"] == ["query"]


@pytest.mark.parametrize(("key", "query", "tenant_document"),
                         [("k-acme", "battery remote", "projects/remote/2026-11-02-battery-review.txt"),
                          ("k-globex", "zanzibar budget", "projects/remote/globex-secret.txt")])  # fmt: skip
def test_an_mcp_search_returns_the_callers_tenant_only(local_api, corpus, key, query, tenant_document):
    async def work(client):  # its own subject, then the other tenant's
        other = "zanzibar budget" if key == "k-acme" else "battery remote"
        return [await client.call_tool("search", {"query": q, "top_k": 10}) for q in (query, other)]

    result, other_subject = mcp_session(local_api, key, work)

    assert result.is_error is False
    data = json.loads(result.content[0].text)
    assert data == result.structured_content
    documents = {r["document_id"] for r in data["results"]}
    assert corpus[tenant_document] in documents
    others = {v for k, v in corpus.items() if ("globex" in k) != (key == "k-globex")}
    assert documents.isdisjoint(others)
    assert {r["document_id"] for r in json.loads(other_subject.content[0].text)["results"]}.isdisjoint(others)
    assert [r["cite_as"] for r in data["results"]] == [f"[{i}]" for i in range(1, len(data["results"]) + 1)]


def test_an_mcp_call_with_bad_arguments_is_a_tool_error(local_api):
    async def work(client):
        return await client.call_tool("search", {"query": "", "top_k": 500})

    result = mcp_session(local_api, "k-acme", work)

    assert result.is_error is True
    assert "invalid arguments" in result.content[0].text and "top_k" in result.content[0].text


def test_mcp_without_credentials_is_401(local_api):
    import urllib.error
    import urllib.request

    request = urllib.request.Request(f"{local_api}/mcp", data=b'{"jsonrpc": "2.0", "id": 1, "method": "tools/list"}',
                                     headers={"Content-Type": "application/json"}, method="POST")  # fmt: skip
    with pytest.raises(urllib.error.HTTPError) as error:
        urllib.request.urlopen(request, timeout=30)
    assert error.value.code == 401


def test_get_v1_tools_gives_openai_and_anthropic_forms(corpus):
    from rag.ask.tools import TOOLS
    from tests.api.conftest import call

    status, body = call("GET", "/v1/tools")

    assert status == 200
    assert [t["function"]["name"] for t in body["openai"]] == list(TOOLS)
    assert [t["name"] for t in body["anthropic"]] == list(TOOLS)
    search_openai, search_anthropic = body["openai"][0], body["anthropic"][0]
    assert search_openai["type"] == "function"
    assert search_openai["function"]["parameters"] == search_anthropic["input_schema"] == TOOLS["search"].schema()
    assert search_anthropic["input_schema"]["properties"]["top_k"] == {
        "default": 6, "description": "how many results", "maximum": 20, "minimum": 1, "type": "integer"
    }  # fmt: skip


def test_rag_mcp_serves_the_tools_over_stdio_as_the_keys_tenant(corpus, database_url):
    import os
    import sys

    from mcp import Client
    from mcp.client.stdio import StdioServerParameters

    from rag.ask.tools import TOOLS

    env = {**os.environ, "DATABASE_URL": database_url, "RAG_API_KEYS": "k-acme=acme,k-globex=globex", "HF_HUB_OFFLINE": "1"}
    params = StdioServerParameters(command=sys.executable, args=["-m", "rag_local.cli", "mcp", "--api-key", "k-globex"], env=env)

    async def main():
        async with Client(params) as client:
            tools = await client.list_tools()
            projects = await client.call_tool("list_projects", {})
            found = await client.call_tool("search", {"query": "zanzibar budget", "top_k": 5})
            return tools, projects, found

    tools, projects, found = anyio.run(main)

    assert [t.name for t in tools.tools] == list(TOOLS)
    assert projects.structured_content == {
        "projects": [{"id": "remote", "document_count": 1, "chunk_count": 1, "meeting_count": 1,
                      "last_activity": projects.structured_content["projects"][0]["last_activity"]}]
    }  # fmt: skip
    assert {r["document_id"] for r in found.structured_content["results"]} == {corpus["projects/remote/globex-secret.txt"]}


@pytest.fixture
def api_without_database(closed_database_url, monkeypatch):
    """The local API server (keys k-acme, k-globex) with its database out of reach; the pool gives up after 1 s."""
    import threading

    from rag.config import get_settings
    from rag.store.connection import close_pool
    from rag_local.api_server import make_server

    monkeypatch.setenv("DATABASE_URL", closed_database_url)
    monkeypatch.setenv("RAG_DATABASE_POOL_TIMEOUT_SECONDS", "1")
    monkeypatch.setenv("RAG_API_KEYS", "k-acme=acme,k-globex=globex")
    get_settings.cache_clear()
    server = make_server(get_settings(), 0)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    yield f"http://127.0.0.1:{server.server_address[1]}"
    server.shutdown()
    server.server_close()
    close_pool()
    get_settings.cache_clear()


def assert_says_the_database_is_down(result) -> None:
    """A tool error as every tool error (``{"error": ...}``), saying what is wrong and what to do."""
    assert result.is_error is True
    [content] = result.content
    message = "the database is unreachable or busy: no connection came free in time; retry in a few seconds"
    assert json.loads(content.text) == result.structured_content == {"error": message}


def test_with_the_database_down_mcp_lists_the_tools_and_a_tool_call_is_an_error_saying_what_to_do(api_without_database):
    from rag.ask.tools import TOOLS

    async def work(client):
        return await client.list_tools(), await client.call_tool("search", {"query": "battery"})

    listed, result = mcp_session(api_without_database, "k-acme", work)

    assert [t.name for t in listed.tools] == list(TOOLS)  # listing needs no database
    assert_says_the_database_is_down(result)


def test_rag_mcp_over_stdio_with_the_database_down_answers_a_tool_error_saying_what_to_do(closed_database_url):
    import os
    import sys

    from mcp import Client
    from mcp.client.stdio import StdioServerParameters

    env = {**os.environ, "DATABASE_URL": closed_database_url, "RAG_DATABASE_POOL_TIMEOUT_SECONDS": "1",
           "RAG_API_KEYS": "k-acme=acme", "HF_HUB_OFFLINE": "1"}  # fmt: skip
    params = StdioServerParameters(command=sys.executable, args=["-m", "rag_local.cli", "mcp"], env=env)

    async def main():
        async with Client(params) as client:
            return await client.call_tool("list_projects", {})

    assert_says_the_database_is_down(anyio.run(main))


@pytest.mark.parametrize("method", ["GET", "DELETE"])
def test_get_and_delete_on_the_stateless_mcp_endpoint_answer_405_allowing_post(method):
    from rag_local.lambdas import LocalContext, load_handler_module

    event = copy.deepcopy(MCP_GET_EVENT)
    event["routeKey"] = event["requestContext"]["routeKey"] = f"{method} /mcp"
    event["requestContext"]["http"]["method"] = method
    handler = load_handler_module("query").lambda_handler
    responses: list[dict] = []
    # A thread, so that a handler that never returns fails the test instead of hanging the suite.
    thread = threading.Thread(target=lambda: responses.append(handler(event, LocalContext(function_name="query"))), daemon=True)
    thread.start()
    thread.join(PATIENCE)

    assert not thread.is_alive(), f"{method} /mcp did not return within {PATIENCE:g} s"
    [response] = responses
    assert response["statusCode"] == 405
    assert response["headers"]["Allow"] == "POST"
    assert json.loads(response["body"]) == {
        "error": {"code": "method_not_allowed",
                  "message": "this MCP server is stateless: send JSON-RPC messages with POST (it opens no event stream and has no session to end)"}
    }  # fmt: skip


def test_an_open_get_mcp_stream_does_not_hold_the_local_api(local_api):
    host, port = local_api.removeprefix("http://").split(":")
    with socket.create_connection((host, int(port)), timeout=PATIENCE) as stream:
        # What an MCP client sends to open the server's event stream, left open (keep-alive) for the whole test.
        stream.sendall(b"GET /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Bearer k-acme\r\n"
                       b"Accept: text/event-stream\r\nMCP-Protocol-Version: 2025-06-18\r\n\r\n")  # fmt: skip
        projects = urllib.request.Request(f"{local_api}/v1/projects", headers={"Authorization": "Bearer k-acme"})
        with urllib.request.urlopen(projects, timeout=PATIENCE) as response:
            status, listed = response.status, json.load(response)
        stream.settimeout(PATIENCE)
        head = stream.recv(65536).split(b"\r\n\r\n")[0].decode("latin-1").split("\r\n")

    assert status == 200 and [p["id"] for p in listed["projects"]] == ["remote"]
    assert head[0].endswith(" 405 Method Not Allowed")
    assert "Allow: POST" in head
