"""The Live Activity ledger in the console (contract §11 and §13): the visit's page shows what each customer
device shows, and the board marks an active visit no device shows (`exception`, `data-kind="unfollowed"`).
Seeded through the public API as the customer's app would; every wait is bounded."""

import time
import uuid

from playwright.sync_api import expect

from conftest import wait_for
from test_console import FIRST_BACKGROUND_READS, TWO_SECONDS_AND_A_REQUEST, row, sign_in, unique

UNFOLLOWED = '[data-testid="exception"][data-kind="unfollowed"]'


def register(stack, visit_id, customer, activity, device):
    """Registers a Live Activity from one device as the customer's app does; returns the customer's key."""
    key = stack.mint("customer", customer)
    status, body = stack.api("PUT", f"/v1/visits/{visit_id}/live-activities/{activity}", {
        "pushToken": uuid.uuid4().hex + uuid.uuid4().hex, "environment": "sandbox", "deviceId": device}, key=key)
    assert status == 204, body
    return key


def ledger_states(stack, visit_id):
    status, body = stack.api("GET", f"/v1/visits/{visit_id}/live-activities")
    assert status == 200, body
    return [e["state"] for e in body["liveActivities"]]


def test_the_visit_page_shows_the_ledger_and_a_dismissal_marks_the_visit(stack, context, artifacts):
    visit_id, customer, device = unique("v-ledger"), unique("c-ledger"), unique("iphone")
    stack.book(visit_id, customer=customer)
    key = register(stack, visit_id, customer, "a-ledger", device)
    page = context.new_page()
    sign_in(page, stack)
    page.goto(stack.base + f"/console/#/visit/{visit_id}")
    ledger = page.get_by_test_id("ledger")
    entry = ledger.locator('[data-testid="ledger-entry"][data-activity-id="a-ledger"]')
    expect(entry).to_have_attribute("data-state", "active")
    expect(entry.get_by_test_id("ledger-device")).to_have_text(device)
    expect(entry.get_by_test_id("ledger-state")).to_have_text("Showing")
    expect(entry).to_contain_text("Started in the app")
    expect(entry).to_contain_text("Priority-10 pushes left this hour")
    expect(ledger.get_by_test_id("ledger-entry")).to_have_count(1)
    page.screenshot(path=artifacts / "ledger-active.png", full_page=True)

    # The customer swipes it away: the app reports it, the page follows without a reload.
    status, body = stack.api("PUT", f"/v1/visits/{visit_id}/live-activities/a-ledger/state", {"state": "dismissed"},
                             key=key)
    assert status == 204, body
    expect(entry).to_have_attribute("data-state", "dismissed", timeout=TWO_SECONDS_AND_A_REQUEST)
    expect(entry.get_by_test_id("ledger-state")).to_have_text("Dismissed by the customer")
    expect(entry).to_contain_text("No longer: retired")
    expect(page.locator("main")).to_contain_text("· 0 Live Activities")
    page.screenshot(path=artifacts / "ledger-dismissed.png", full_page=True)

    page.goto(stack.base + "/console/#/board")
    expect(row(page, visit_id).locator(UNFOLLOWED)).to_be_visible(timeout=FIRST_BACKGROUND_READS)
    page.screenshot(path=artifacts / "board-unfollowed.png")


def test_the_board_marks_a_visit_with_no_token_and_not_one_followed(stack, context, artifacts):
    bare, followed, ended = unique("v-bare"), unique("v-followed"), unique("v-ended")
    bare_customer = unique("c-bare")
    stack.book(bare, customer=bare_customer)
    customer = unique("c-followed")
    stack.book(followed, customer=customer)
    register(stack, followed, customer, "a-followed", unique("iphone"))
    stack.book(ended, customer=unique("c-ended"))
    status, body = stack.api("POST", f"/v1/visits/{ended}/events", {"type": "cancelled"})
    assert status == 201, body
    assert ledger_states(stack, bare) == [] and ledger_states(stack, followed) == ["active"]

    page = context.new_page()
    sign_in(page, stack)
    expect(row(page, bare).locator(UNFOLLOWED)).to_be_visible(timeout=FIRST_BACKGROUND_READS)
    expect(row(page, bare).locator(UNFOLLOWED)).to_have_text("Customer sees nothing")
    # Decided, and not marked: an activity on a device shows the visit; an ended visit is nobody's concern.
    expect(row(page, followed).locator('.exceptions[data-followed="yes"]')).to_have_count(1)
    expect(row(page, followed).get_by_test_id("exception")).to_have_count(0)
    expect(row(page, ended).get_by_test_id("visit-status")).to_have_text("Cancelled")
    expect(row(page, ended).get_by_test_id("exception")).to_have_count(0)
    page.screenshot(path=artifacts / "board-bare-and-followed.png")

    # The first activity of the bare visit registers: the mark goes with the next refresh.
    register(stack, bare, bare_customer, "a-late", unique("ipad"))
    expect(row(page, bare).locator(UNFOLLOWED)).to_have_count(0, timeout=TWO_SECONDS_AND_A_REQUEST)
    expect(row(page, bare).locator('.exceptions[data-followed="yes"]')).to_have_count(1)


def test_a_start_on_its_way_is_not_marked(stack, context, artifacts):
    visit_id, customer, device = unique("v-starting"), unique("c-starting"), unique("iphone")
    status, body = stack.api("PUT", f"/v1/customers/{customer}/push-to-start-tokens/{device}", {
        "pushToken": uuid.uuid4().hex + uuid.uuid4().hex, "environment": "sandbox"},
        key=stack.mint("customer", customer))
    assert status == 204, body
    stack.book(visit_id, customer=customer)
    wait_for("the start's entry in the ledger", lambda: ledger_states(stack, visit_id) == ["starting"], within=15)

    page = context.new_page()
    sign_in(page, stack)
    # Its ledger read (the visit has no live activity yet), the visit is followed: a device is being started.
    expect(row(page, visit_id).locator('.exceptions[data-followed="yes"]')).to_have_count(1,
                                                                                         timeout=FIRST_BACKGROUND_READS)
    expect(row(page, visit_id).get_by_test_id("exception")).to_have_count(0)
    page.goto(stack.base + f"/console/#/visit/{visit_id}")
    entry = page.get_by_test_id("ledger").get_by_test_id("ledger-entry")
    expect(entry).to_have_attribute("data-state", "starting")
    expect(entry.get_by_test_id("ledger-device")).to_have_text(device)
    expect(entry).to_contain_text("Not yet")
    page.screenshot(path=artifacts / "ledger-starting.png", full_page=True)


def test_a_time_on_another_day_shows_its_day_and_month(stack, context, artifacts):
    visit_id, customer = unique("v-day"), unique("c-day")
    stack.book(visit_id, customer=customer)
    register(stack, visit_id, customer, "a-day", unique("iphone"))
    status, body = stack.api("GET", f"/v1/visits/{visit_id}/live-activities")
    lapses = body["liveActivities"][0]["lapsesAt"]
    assert status == 200 and lapses, body
    page = context.new_page()
    # The browser's today two days before the lapse: the lapse is on another day, so its date is shown.
    page.clock.set_fixed_time(lapses - 2 * 86_400)  # Playwright for Python: epoch seconds
    sign_in(page, stack)
    page.goto(stack.base + f"/console/#/visit/{visit_id}")
    entry = page.get_by_test_id("ledger").get_by_test_id("ledger-entry")
    expect(entry).to_have_attribute("data-state", "active")
    day_and_month = page.evaluate(
        "(t) => new Date(t * 1000).toLocaleDateString([], { day: 'numeric', month: 'short' })", lapses)
    assert any(c.isalpha() for c in day_and_month), day_and_month  # a month's name, not only a number
    expect(entry.locator("dd", has_text=day_and_month)).not_to_have_count(0)

    # On the lapse's own day, the time of day alone.
    page.clock.set_fixed_time(lapses)
    page.reload()
    entry = page.get_by_test_id("ledger").get_by_test_id("ledger-entry")
    expect(entry).to_have_attribute("data-state", "active")
    expect(entry.locator("dd", has_text=day_and_month)).to_have_count(0)
    page.screenshot(path=artifacts / "ledger-times.png", full_page=True)
    assert time.time() < lapses  # the activity did not lapse while the test ran: its state above is the live one
