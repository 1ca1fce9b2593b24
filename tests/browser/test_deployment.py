"""The site as static files: works under any sub-path without special headers, and offline once cached."""
import os
import threading

import pytest

import build
from browser.conftest import Page


@pytest.fixture
def sub_path_url(tmp_path):
    os.symlink(build.SITE, tmp_path / "some-app")
    server = build.make_server(tmp_path, 0, isolate=False)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    yield f"http://127.0.0.1:{server.server_address[1]}/some-app/"
    server.shutdown()


def test_sub_path_then_offline(browser, sub_path_url):
    context = browser.new_context()
    page = context.new_page()
    wrapped = Page(context, page, sub_path_url)
    page.goto(sub_path_url)
    assert page.evaluate("() => window.onnxtrain.ready")["numpy"] == "2.0.2"
    page.evaluate("() => navigator.serviceWorker.ready.then(() => true)")
    page.wait_for_function("() => navigator.serviceWorker.controller !== null", timeout=60_000)
    assert wrapped.off_origin() == []
    context.set_offline(True)
    page.reload()
    assert page.evaluate("() => window.onnxtrain.ready")["numpy"] == "2.0.2"
    page.click("#csv-sample")
    page.wait_for_selector("#csv-setup:not([hidden])")
    context.close()
