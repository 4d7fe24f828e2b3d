"""Screenshots of a page in headless Chromium: phone and desktop, light and dark.

Each shot first checks that nothing is wider than the emulated screen (no sideways
scrolling), then writes a PNG under ``test-artifacts/``; with XMRGATE_UPDATE_DOC_IMAGES=1
the shots the documentation shows are copied into ``docs/img/`` too.
"""

from __future__ import annotations

import base64
import os
import shutil
from collections.abc import Sequence
from pathlib import Path

from selenium.webdriver import Chrome as WebDriver

REPO = Path(__file__).resolve().parents[1]
ARTIFACTS = REPO / "test-artifacts"
DOCS_IMG = REPO / "docs" / "img"
PHONE = (390, 844)
DESKTOP = (1280, 900)
#: Resolves once the page has drawn two frames: the first runs what a change of the
#: emulated screen or colour scheme set off (resize events, media queries), the second
#: draws what those changed.
TWO_FRAMES = (
    "var done = arguments[arguments.length - 1];"
    "requestAnimationFrame(function () { requestAnimationFrame(function () { done(); }); });"
)


def emulate(driver: WebDriver, size: tuple[int, int], dark: bool = False) -> None:
    """Emulate a screen of ``size`` (a mobile one when narrower than 600 px) and the
    ``prefers-color-scheme`` of ``dark``."""
    width, height = size
    driver.execute_cdp_cmd(
        "Emulation.setDeviceMetricsOverride",
        {"width": width, "height": height, "deviceScaleFactor": 1, "mobile": width < 600},
    )
    driver.execute_cdp_cmd(
        "Emulation.setEmulatedMedia",
        {"features": [{"name": "prefers-color-scheme", "value": "dark" if dark else "light"}]},
    )


def settle(driver: WebDriver) -> None:
    """Wait until the page has redrawn after :func:`emulate`: two animation frames, about
    35 ms, where a fixed sleep of 0.15 s took 0.6 s of each page's four shots (no page
    has a CSS transition or animation that would need longer)."""
    driver.execute_async_script(TWO_FRAMES)


def clear_emulation(driver: WebDriver) -> None:
    """Back to the window's own size and the light colour scheme."""
    driver.execute_cdp_cmd("Emulation.clearDeviceMetricsOverride", {})
    light = {"features": [{"name": "prefers-color-scheme", "value": "light"}]}
    driver.execute_cdp_cmd("Emulation.setEmulatedMedia", light)


def assert_fits(driver: WebDriver, what: str, screen: str) -> None:
    """Fail unless the page is at most as wide as the window (the message says
    "``what`` is N px wider than the ``screen``")."""
    overflow = driver.execute_script(
        "return document.documentElement.scrollWidth - window.innerWidth;"
    )
    assert overflow <= 0, f"{what} is {overflow}px wider than the {screen}"


def full_page_png(driver: WebDriver, path: Path, max_height: int = 2400) -> Path:
    """The whole page (at most ``max_height`` CSS pixels of it) as a PNG at ``path``."""
    path.parent.mkdir(parents=True, exist_ok=True)
    metrics = driver.execute_cdp_cmd("Page.getLayoutMetrics", {})
    viewport = metrics["cssLayoutViewport"]
    height = max(metrics["cssContentSize"]["height"], viewport["clientHeight"])
    clip = {"x": 0, "y": 0, "width": viewport["clientWidth"], "height": min(height, max_height)}
    # The same pixels either way; Chromium's fast PNG compression takes 20 % less of its
    # CPU for a 40 % larger file, so only the images docs/img keeps are packed tightly.
    shot = driver.execute_cdp_cmd(
        "Page.captureScreenshot",
        {
            "format": "png",
            "captureBeyondViewport": True,
            "clip": {**clip, "scale": 1},
            "optimizeForSpeed": not updating_doc_images(),
        },
    )
    path.write_bytes(base64.b64decode(shot["data"]))
    return path


def viewport_png(driver: WebDriver, path: Path) -> Path:
    """What the window shows as a PNG at ``path``."""
    path.parent.mkdir(parents=True, exist_ok=True)
    shot = driver.execute_cdp_cmd("Page.captureScreenshot", {"format": "png"})
    path.write_bytes(base64.b64decode(shot["data"]))
    return path


def updating_doc_images() -> bool:
    """Whether this run refreshes ``docs/img/`` (XMRGATE_UPDATE_DOC_IMAGES=1)."""
    return os.environ.get("XMRGATE_UPDATE_DOC_IMAGES") == "1"


def copy_to_docs(shot: Path, name: str) -> None:
    """Copy ``shot`` to ``docs/img/<name>`` when this run refreshes the doc images."""
    if updating_doc_images():
        DOCS_IMG.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(shot, DOCS_IMG / name)


def screenshots(
    driver: WebDriver,
    page: str,
    folder: Path,
    *,
    sizes: Sequence[tuple[tuple[int, int], str]] = ((PHONE, "phone"), (DESKTOP, "desktop")),
    doc_image: str | None = None,
    doc_size: str = "desktop",
) -> None:
    """Full-page shots of ``page`` in each of ``sizes`` (a size and its label), light and
    dark, as ``folder/<page>-<label>[-dark].png``; each first asserts that nothing is
    wider than that screen. ``doc_image`` names the copy in ``docs/img/`` of the light
    shot labelled ``doc_size`` (with XMRGATE_UPDATE_DOC_IMAGES=1). The emulation is
    cleared afterwards, whatever happened."""
    try:
        for size, label in sizes:
            for dark in (False, True):
                emulate(driver, size, dark)
                settle(driver)
                assert_fits(driver, page, f"{label} screen")
                shot = full_page_png(
                    driver, folder / f"{page}-{label}{'-dark' if dark else ''}.png"
                )
                if doc_image and label == doc_size and not dark:
                    copy_to_docs(shot, doc_image)
    finally:
        clear_emulation(driver)
