"""The console at phone width (390 × 844, contract §11 "The dispatch desk"): the board, a visit's page, a
technician's day, the ops page and every dialog fit without sideways scrolling, of the page or of any box in it,
in light and dark. Real Chromium; every wait bounded."""

import time

import pytest
from playwright.sync_api import expect

from conftest import later_today
from test_console import row, sign_in, unique
from test_desk import book

# Every box that scrolls sideways, and every visible element reaching past the viewport's right edge.
OVERFLOWS = """() => {
  const out = [];
  const doc = document.documentElement;
  if (doc.scrollWidth > doc.clientWidth) out.push(`page: ${doc.scrollWidth} > ${doc.clientWidth}`);
  for (const el of document.querySelectorAll('body *')) {
    const style = getComputedStyle(el);
    if (style.display === 'none' || style.visibility === 'hidden') continue;
    const r = el.getBoundingClientRect();
    if (r.width === 0 && r.height === 0) continue;
    const name = el.tagName.toLowerCase() + (el.dataset.testid ? `[${el.dataset.testid}]` : '') + (el.className ? '.' + String(el.className).replace(/ /g, '.') : '');
    if (['auto', 'scroll'].includes(style.overflowX) && el.scrollWidth > el.clientWidth + 1) out.push(`${name} scrolls: ${el.scrollWidth} > ${el.clientWidth}`);
    if (r.right > 391) out.push(`${name} reaches ${Math.round(r.right)} px`);
  }
  return out;
}"""


def fits(page, where):
    problems = page.evaluate(OVERFLOWS)
    assert problems == [], f"{where}: {problems[:8]}"


@pytest.mark.parametrize("scheme", ["light", "dark"])
def test_every_page_and_dialog_fits_390_px(stack, browser, artifacts, scheme):
    context = browser.new_context(viewport={"width": 390, "height": 844}, color_scheme=scheme, is_mobile=True,
                                  has_touch=True, device_scale_factor=2)
    context.set_default_timeout(10_000)
    try:
        visit_id, technician = unique("v-phone"), unique("t-phone")
        book(stack, visit_id, technician, later_today(), name="Alexandria-Marguerite",
             job="Replace the thermostatic radiator valves in the upstairs bedrooms", van="Long white van with a ladder rack")
        stack.register_activity(visit_id, customer="c-desk", activity=unique("a-phone"))
        # A visit at the very end of tomorrow (its window runs past midnight): its timeline block must end at
        # the track's edge, not past it.
        late_id = unique("v-phone-late")
        tomorrow_late = int(time.mktime(time.localtime()[:3] + (23, 58, 0, 0, 0, -1))) + 86_400
        book(stack, late_id, unique("t-phone-late"), tomorrow_late, name="Zoe")
        page = context.new_page()
        sign_in(page, stack)
        expect(row(page, visit_id)).to_be_visible()
        fits(page, "board")
        page.screenshot(path=artifacts / f"phone-board-{scheme}.png")

        page.get_by_test_id("book").click()
        expect(page.locator("form.booking")).to_be_visible()
        fits(page, "booking form")
        page.get_by_test_id("book").click()

        row(page, visit_id).get_by_test_id("event-nearby").click()
        expect(page.get_by_test_id("confirm")).to_be_visible()
        fits(page, "confirmation")
        page.screenshot(path=artifacts / f"phone-confirm-{scheme}.png")
        page.get_by_test_id("confirm-cancel").click()
        row(page, visit_id).get_by_test_id("event-reassigned").click()
        expect(page.get_by_test_id("dialog")).to_be_visible()
        fits(page, "reassign dialog")
        page.get_by_test_id("dialog-cancel").click()

        page.get_by_test_id("view-timeline").click()
        expect(page.get_by_test_id("timeline").get_by_test_id("timeline-visit")).not_to_have_count(0)
        fits(page, "day by technician")
        page.screenshot(path=artifacts / f"phone-timeline-{scheme}.png")
        page.get_by_test_id("day-next").click()
        expect(page.locator(f'[data-testid="timeline-visit"][data-visit-id="{late_id}"]')).to_be_visible()
        fits(page, "the next day, a visit at 23:58")

        page.goto(stack.base + f"/console/#/visit/{visit_id}")
        expect(page.get_by_test_id("lock-screen")).to_be_visible()
        expect(page.get_by_test_id("deliveries").get_by_test_id("delivery")).not_to_have_count(0)
        fits(page, "visit page")
        page.screenshot(path=artifacts / f"phone-visit-{scheme}.png", full_page=True)
        page.get_by_test_id("event-cancelled").click()
        fits(page, "cancel dialog")
        page.get_by_test_id("dialog-cancel").click()

        page.goto(stack.base + f"/console/#/technician/{technician}")
        expect(page.get_by_test_id("technician-visit")).to_have_count(1)
        fits(page, "technician's day")
        page.get_by_test_id("running-late").click()
        fits(page, "running late dialog")
        page.screenshot(path=artifacts / f"phone-technician-{scheme}.png", full_page=True)
        page.get_by_test_id("delay-cancel").click()

        page.get_by_role("button", name="Sign out").click()
        sign_in(page, stack, stack.ops)
        page.goto(stack.base + "/console/#/ops")
        expect(page.get_by_test_id("outbox-depth")).to_contain_text("dead")
        fits(page, "ops page")
        page.screenshot(path=artifacts / f"phone-ops-{scheme}.png", full_page=True)
    finally:
        context.close()
