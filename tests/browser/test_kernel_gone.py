"""A panel whose kernel is gone says so (issue 23, part 5).

What JupyterLab 4.6 with ipywidgets 8.1 shows without help: after Kernel → Restart Kernel, or after the kernel
dies and JupyterLab starts a new one ("Kernel Restarting … appears to have died"), the old panel stays drawn as
it was, with a small broken-link icon before each widget (ipywidgets marks every view of the lost kernel
`jupyter-widgets-disconnected`); the button and the controls still move but nothing runs and nothing says why.
show.panel carries a notice that its own CSS shows under that mark, and greys the controls.
"""

from __future__ import annotations

import asyncio
import re
import time

NOTEBOOK = "notebooks/15_decision_table.ipynb"  # the quickest notebook with a panel (about 4 s of Run All)


def test_a_panel_whose_kernel_is_gone_says_so(lab_server):
    from mercadofresco.lessons import show

    seen = asyncio.run(restart_under_a_panel(lab_server))
    print(f"{NOTEBOOK}: {seen['seconds']:.1f} s; the notice showed {seen['notice_after']:.1f} s after the restart")
    assert not seen["notice_before"], "the notice shows while the kernel is alive"
    assert seen["notice"] == show.GONE
    assert seen["button"] == "none", "the panel's button still takes clicks after the restart"


async def restart_under_a_panel(server) -> dict:
    from playwright.async_api import async_playwright

    from tests.browser import driver
    from tests.browser.lab import CHROMIUM

    started = time.monotonic()
    async with async_playwright() as playwright:
        browser = await playwright.chromium.launch(executable_path=CHROMIUM)
        page = await browser.new_page(viewport={"width": 1400, "height": 1000})
        try:
            await page.goto(f"{server.url}/lab/workspaces/kernel-gone/tree/{NOTEBOOK}?token={server.token}")
            await page.locator(".jp-NotebookPanel-toolbar").get_by_text("Python 3 (ipykernel)").wait_for(timeout=60_000)
            await page.wait_for_function(driver.KERNEL_IDLE, timeout=60_000, polling=250)
            await driver._menu(page, "Edit", "Clear Outputs of All Cells")  # as the suite does: "[*]" is then news
            await driver._menu(page, "Run", "Run All Cells")
            await page.wait_for_function(driver.RUN_FINISHED, timeout=driver.RUN_SECONDS * 1000, polling=250)
            panel = page.locator(".mf-panel").first
            await panel.scroll_into_view_if_needed()
            notice = panel.locator(".mf-panel-gone")
            seen = {"notice_before": await notice.is_visible()}
            await driver._menu(page, "Kernel", "Restart Kernel…")
            await page.locator(".jp-Dialog-button", has_text=re.compile("^Restart$")).click()
            restarted = time.monotonic()
            await notice.wait_for(state="visible", timeout=30_000)
            seen["notice_after"] = time.monotonic() - restarted
            seen["notice"] = (await notice.inner_text()).strip()
            seen["button"] = await panel.locator(".widget-button").first.evaluate(
                "b => getComputedStyle(b.closest('.mf-panel > *')).pointerEvents"
            )
        finally:
            await driver._shut_down(page, NOTEBOOK)
            await browser.close()
    seen["seconds"] = time.monotonic() - started
    return seen
