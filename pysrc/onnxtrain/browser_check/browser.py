"""The browser side: headless Chromium, driven by Playwright (imported here only, when a check runs), opens the
runner page of the local site and trains there."""
from __future__ import annotations

import asyncio
import base64
import os
import threading
from pathlib import Path

import numpy as np

from .errors import SetupError
from .trajectory import Trajectory

CHROMIUM_ENV = "ONNXTRAIN_CHROMIUM"
INSTALL = "pip install 'onnxtrain[browser]' && python -m playwright install chromium"
# For a Chromium of the system's (Playwright adds its own flags to the Chromium it installs itself).
SYSTEM_CHROMIUM_ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--no-first-run",
                        "--disable-background-networking", "--disable-component-update", "--disable-sync"]


STAGES = {"create": "creating the training session", "train": "training"}


def find_chromium(chromium) -> str | None:
    """The Chromium to run: ``chromium``, else $ONNXTRAIN_CHROMIUM, else None (Playwright's own)."""
    chosen = chromium if chromium is not None else os.environ.get(CHROMIUM_ENV) or None
    if chosen is None:
        return None
    path = Path(chosen)
    if not path.is_file():
        origin = "--chromium" if chromium is not None else f"${CHROMIUM_ENV}"
        raise SetupError(f"the Chromium {path} ({origin}) does not exist")
    return str(path)


def _playwright():
    try:
        from playwright.sync_api import Error, sync_playwright
    except ImportError:
        raise SetupError(f"playwright is not installed: {INSTALL}") from None
    return sync_playwright, Error


def _launch(playwright, chromium, error_type):
    try:
        if chromium is None:
            return playwright.chromium.launch(headless=True)
        return playwright.chromium.launch(executable_path=chromium, args=SYSTEM_CHROMIUM_ARGS)
    except error_type as e:
        first = str(e).strip().splitlines()[0] if str(e).strip() else type(e).__name__
        if chromium is None:
            raise SetupError(f"Playwright cannot start its Chromium ({first}): run `python -m playwright install "
                             f"chromium`, or pass --chromium with the path of a Chromium") from None
        raise SetupError(f"cannot start the Chromium {chromium}: {first}") from None


def _train(url: str, manifest: dict, chromium) -> tuple:
    """(the page's result, its console errors)."""
    sync_playwright, error_type = _playwright()
    console, off_origin = [], []
    with sync_playwright() as p:
        browser = _launch(p, chromium, error_type)
        try:
            page = browser.new_page()
            page.context.on("request", lambda r: None if r.url.startswith((url, "blob:", "data:"))
                            else off_origin.append(r.url))
            page.on("console", lambda m: console.append(m.text) if m.type == "error" else None)
            page.on("pageerror", lambda e: console.append(str(e)))
            page.set_default_timeout(manifest["timeoutMs"] + 30_000)
            page.goto(url + "runner.html")
            page.wait_for_function("() => window.browserCheck !== undefined", timeout=60_000)
            result = page.evaluate("(manifest) => window.browserCheck.run(manifest)", manifest)
            version = browser.version
        except error_type as e:
            raise SetupError(f"the runner page failed in Chromium: {str(e).strip()}"
                             + (f"\nconsole: {console[-5:]}" if console else "")) from None
        finally:
            browser.close()
    result["browserVersion"] = version
    result["offOrigin"] = off_origin
    return result, console


def _off_the_event_loop(function, *args):
    """``function(*args)``, in a thread of its own when this thread runs an asyncio loop (Playwright's sync API
    refuses to run inside one, as in a notebook)."""
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return function(*args)
    box = {}

    def target():
        try:
            box["value"] = function(*args)
        except BaseException as e:  # noqa: BLE001 - handed to the caller's thread
            box["error"] = e
    thread = threading.Thread(target=target)
    thread.start()
    thread.join()
    if "error" in box:
        raise box["error"]
    return box["value"]


def run_in_browser(url: str, manifest: dict, chromium) -> tuple:
    """Train in headless Chromium: (Trajectory, facts about the run: browser version, the page's learning rate,
    the URLs it requested off its own origin)."""
    result, console = _off_the_event_loop(_train, url, manifest, chromium)
    if result["stage"] == "library":
        raise SetupError(f"the onnxtrain library did not load in the page: {result['error']}"
                         + (f"\nconsole: {console[-5:]}" if console else ""))
    trajectory = Trajectory(losses=[float(v) for v in result["losses"]],
                            parameters={int(step): np.frombuffer(base64.b64decode(text), np.float32)
                                        for step, text in result["parameters"].items()},
                            error=None if result["error"] is None else
                            f"{result['error']} (while {STAGES.get(result['stage'], result['stage'])})")
    facts = {"browser": result["browserVersion"], "learningRate": result["info"].get("learningRate"),
             "offOrigin": result["offOrigin"]}
    return trajectory, facts
