"""The browser tests' own helper, conftest.Page, in Chromium on a page whose engine answers after a set delay."""
import time

import pytest
from playwright.sync_api import Error

from browser.conftest import Page

# window.onnxtrain.call answers [type, args.after] after args.after ms, or rejects when args.fail is set
ENGINE = """<script>
window.onnxtrain = {call: (type, args) => new Promise((resolve, reject) => setTimeout(
    () => args.fail ? reject(new Error(args.fail)) : resolve([type, args.after]), args.after))};
</script>"""


@pytest.fixture
def page(browser):
    context = browser.new_context()
    page = context.new_page()
    page.set_content(ENGINE)
    yield Page(context, page, "about:blank")
    context.close()


def test_call_answers_within_its_timeout(page):
    assert page.call("echo", {"after": 50}, timeout=5_000) == ["echo", 50]


def test_call_gives_up_at_its_timeout_naming_the_request(page):
    start = time.monotonic()
    with pytest.raises(Error, match="the engine did not answer slowRequest within 300 ms"):
        page.call("slowRequest", {"after": 60_000}, timeout=300)
    assert time.monotonic() - start < 30  # the engine would answer after 60 s


def test_call_passes_on_the_engines_own_error(page):
    with pytest.raises(Error, match="no such session"):
        page.call("fails", {"after": 10, "fail": "no such session"}, timeout=5_000)
