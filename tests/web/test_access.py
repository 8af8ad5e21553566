"""Who may use the page and how: the API key asked once (and again after a 401, with the server's message),
the keyboard reaching everything, and a phone's narrow screen without sideways scrolling."""

from __future__ import annotations

import json
import urllib.error
import urllib.request

import pytest

from tests.web.conftest import API_KEY, PROJECT, open_page, screenshot, sign_in

pytestmark = [pytest.mark.browser, pytest.mark.slow]


def server_message(stack, key: str) -> str:
    """What the API itself answers a request with this key (the page must show this, not a message of its own)."""
    request = urllib.request.Request(f"{stack.url}/v1/projects", headers={"Authorization": f"Bearer {key}"})
    with pytest.raises(urllib.error.HTTPError) as refused:
        urllib.request.urlopen(request, timeout=30)
    assert refused.value.code == 401
    return json.loads(refused.value.read())["error"]["message"]


def stored_key(page) -> str | None:
    return page.evaluate("sessionStorage.getItem('rag.apiKey')")


def test_a_wrong_key_is_asked_for_again_with_the_server_s_message(browser, stack, problems):
    page = open_page(browser, problems)
    page.goto(f"{stack.url}/")
    page.wait_for_selector("#api-key:focus")  # asked first, and the field has the focus
    page.fill("#api-key", "not-a-key")
    page.keyboard.press("Enter")
    alert = page.wait_for_selector("#main [role=alert]")
    assert alert.inner_text() == server_message(stack, "not-a-key")
    assert stored_key(page) is None  # a refused key is forgotten
    assert page.evaluate("document.activeElement.id") == "api-key"

    page.fill("#api-key", API_KEY)
    page.keyboard.press("Enter")
    page.wait_for_selector(".card")
    assert stored_key(page) == API_KEY
    page.reload()  # asked once: the key stays for the tab
    page.wait_for_selector(".card")
    assert page.locator("#api-key").count() == 0
    assert "dev-local-key" not in page.url

    page.evaluate("sessionStorage.setItem('rag.apiKey', 'revoked-key')")  # a key that stops working mid-session
    page.goto(f"{stack.url}/#/p/{PROJECT}/brief")
    page.wait_for_selector("#api-key")
    assert page.inner_text("#main [role=alert]") == server_message(stack, "revoked-key")
    page.context.close()
    assert list(problems) == []


def test_sign_out_forgets_the_key(page, stack):
    page.wait_for_selector(".card")
    page.click("#sign-out")
    page.wait_for_selector("#api-key:focus")
    assert stored_key(page) is None
    assert page.inner_text("#main [role=alert]") == "Signed out."
    assert page.is_hidden("#sign-out") and page.is_hidden("#tabs")


def focus_path(page, stop: str, limit: int = 40) -> list[str]:
    """Press Tab until the element matching ``stop`` has the focus; returns what had the focus on the way."""
    seen = []
    for _ in range(limit):
        page.keyboard.press("Tab")
        seen.append(page.evaluate("(e => e.id || e.getAttribute('href') || e.textContent.trim())(document.activeElement)"))
        if page.evaluate(f"document.activeElement.matches({json.dumps(stop)})"):
            return seen
    raise AssertionError(f"Tab never reached {stop}: {seen}")


def test_the_keyboard_reaches_search_slash_focuses_it_and_enter_submits(page, stack):
    page.goto(f"{stack.url}/#/p/{PROJECT}/search")
    page.wait_for_selector("#q")
    page.focus("a.skip")  # the top of the page: the skip link, shown when it has the focus
    assert page.eval_on_selector("a.skip", "e => e.getBoundingClientRect().left >= 0")
    path = focus_path(page, "#q")
    assert path == ["#/", "tab-search", "tab-ask", "tab-brief", "tab-ingest", "sign-out", "q"]  # bar, then the search box
    assert page.evaluate("getComputedStyle(document.activeElement).outlineStyle") != "none"  # the focus is visible

    page.keyboard.press("Tab")  # on to the Search button: '/' from there comes back to the box
    page.keyboard.press("/")
    assert page.evaluate("document.activeElement.id") == "q"
    page.keyboard.type("enclosure drawings")
    page.keyboard.press("Enter")
    page.wait_for_selector(".result")

    focus_path(page, ".result a.source")  # the results are reachable
    page.keyboard.press("Enter")
    page.wait_for_selector(".turn.target")
    assert page.evaluate("document.activeElement.classList.contains('turn')")  # the cited turn has the focus

    page.keyboard.press("/")  # from the meeting view, '/' goes back to the search box
    page.wait_for_selector("#q:focus")


def test_a_phone_gets_one_column_and_no_sideways_scrolling(browser, stack, problems):
    page = open_page(browser, problems, viewport={"width": 390, "height": 844}, is_mobile=True, has_touch=True)
    sign_in(page, stack)
    document_id = stack.api(f"/v1/meetings?project_id={PROJECT}")["meetings"][0]["document_id"]
    screens = {
        "#/": ".card",
        f"#/p/{PROJECT}/search?q=battery+supplier&mode=hybrid": ".result",
        f"#/p/{PROJECT}/ask?q=what+did+we+decide+about+the+battery%3F": ".answer-text",
        f"#/p/{PROJECT}/brief": ".summary",
        f"#/p/{PROJECT}/ingest": ".docs",
        f"#/doc/{document_id}?turn=2": ".turn.target",
    }
    for hash_route, shown in screens.items():
        page.goto(f"{stack.url}/{hash_route}")
        page.wait_for_selector(shown)
        assert page.evaluate("document.scrollingElement.scrollWidth") <= 390, hash_route
        if "search" in hash_route:
            page.evaluate("window.scrollTo(0, 0)")
            screenshot(page, "phone")
    page.context.close()
    assert list(problems) == []
