"""The web console (contract §11) in a real browser: Debian's Chromium driven by Playwright.
Every wait is bounded (Playwright's timeouts, conftest.wait_for); every test saves a screenshot."""

import json
import re
import time
import uuid

from playwright.sync_api import expect

from conftest import wait_for

TWO_SECONDS_AND_A_REQUEST = 3_500  # the board polls every 2 s; the change must show within that and one request
# A visit's ledger and pushes are read in the background when the board first lists it, at most ten reads a
# second for the whole board (api.js backgroundSlot): with the 100 visits a board shows, two reads each, the last
# visit's marks come 20 s after the page opens.
FIRST_BACKGROUND_READS = 25_000


def unique(prefix):
    return f"{prefix}-{uuid.uuid4().hex[:8]}"


def sign_in(page, stack, key=None):
    page.goto(stack.base + "/console/")
    page.get_by_test_id("signin-key").fill(key or stack.dispatcher)
    page.get_by_test_id("signin").click()
    expect(page.get_by_test_id("board")).to_be_visible()
    # The board's first answer has been drawn (its count is written after the first load).
    expect(page.get_by_test_id("shown-count")).to_have_text(re.compile(r"\d"))


def row(page, visit_id):
    return page.locator(f'[data-testid="visit-row"][data-visit-id="{visit_id}"]')


def post(page, scope, event):
    """Clicks an event's button and answers what it asks: the distance (kept) for En route, the confirmation of
    the customer's alert for Nearby and On site."""
    scope.get_by_test_id(f"event-{event}").click()
    if event == "enRoute":
        page.get_by_test_id("dialog").get_by_test_id("dialog-ok").click()
    elif event in ("nearby", "onSite"):
        page.get_by_test_id("confirm").get_by_test_id("confirm-ok").click()


def test_sign_in_with_the_right_and_a_wrong_key(stack, context, artifacts):
    page = context.new_page()
    page.goto(stack.base + "/console/")
    page.get_by_test_id("signin-key").fill("lv_wrong_key")
    page.get_by_test_id("signin").click()
    expect(page.locator("#signin-error")).to_contain_text("not valid")
    expect(page.get_by_test_id("board")).to_have_count(0)
    page.screenshot(path=artifacts / "signin-wrong-key.png")

    page.get_by_test_id("signin-key").fill(stack.dispatcher)
    page.get_by_test_id("signin").click()
    expect(page.get_by_test_id("board")).to_be_visible()
    # The board's first answer has been drawn (its count is written after the first load).
    expect(page.get_by_test_id("shown-count")).to_have_text(re.compile(r"\d"))
    # The key lives in this tab's session storage only, never in local storage or the URL.
    assert page.evaluate("sessionStorage.getItem('livevisits.key')") == stack.dispatcher
    assert page.evaluate("localStorage.length") == 0
    assert stack.dispatcher not in page.url
    page.screenshot(path=artifacts / "board-signed-in.png")


def test_a_revoked_key_signs_the_tab_out(stack, context, artifacts):
    status, minted = stack.api("POST", "/v1/keys", {"role": "technician", "subject": "t-revoked"})
    assert status == 201, minted
    page = context.new_page()
    sign_in(page, stack, minted["key"])
    status, _ = stack.api("DELETE", f"/v1/keys/{minted['keyId']}")
    assert status == 204
    expect(page.get_by_test_id("signin-key")).to_be_visible(timeout=TWO_SECONDS_AND_A_REQUEST + 2_000)
    expect(page.locator("#signin-error")).to_contain_text("no longer accepted")
    assert page.evaluate("sessionStorage.getItem('livevisits.key')") is None
    page.screenshot(path=artifacts / "signed-out-after-revocation.png")


def test_booking_through_the_form(stack, context, artifacts):
    page = context.new_page()
    sign_in(page, stack)
    visit_id = unique("v-book")
    page.get_by_test_id("book").click()
    form = page.locator("form.booking")
    form.locator('[name="visitId"]').fill(visit_id)
    form.locator('[name="customerId"]').fill("c-book")
    form.locator('[name="attributes.customerFirstName"]').fill("Robin")
    form.locator('[name="attributes.serviceAddress"]').fill("4 Mill Lane")
    form.locator('[name="attributes.jobSummary"]').fill("Radiator leak")
    form.locator('[name="technician.id"]').fill("t-book")
    form.locator('[name="technician.name"]').fill("Kim")
    page.screenshot(path=artifacts / "booking-form.png")
    page.get_by_test_id("book-submit").click()
    expect(row(page, visit_id)).to_be_visible()
    expect(row(page, visit_id).get_by_test_id("visit-status")).to_have_text("Scheduled")
    status, visit = stack.api("GET", f"/v1/visits/{visit_id}")
    assert status == 200 and visit["attributes"]["customerFirstName"] == "Robin"

    # The same id again: the API's own message is shown.
    page.get_by_test_id("book").click()
    form = page.locator("form.booking")
    for name, value in [("visitId", visit_id), ("customerId", "c-book"), ("attributes.customerFirstName", "R"),
                        ("attributes.serviceAddress", "A"), ("attributes.jobSummary", "J"), ("technician.id", "t"),
                        ("technician.name", "K")]:
        form.locator(f'[name="{name}"]').fill(value)
    page.get_by_test_id("book-submit").click()
    expect(page.get_by_test_id("book-error")).not_to_be_empty()
    page.screenshot(path=artifacts / "booking-refused.png")


def test_a_visit_through_its_buttons_with_the_live_activity_and_deliveries(stack, context, artifacts):
    visit_id = unique("v-walk")
    stack.book(visit_id, customer="c-walk")
    stack.register_activity(visit_id, customer="c-walk")
    page = context.new_page()
    sign_in(page, stack)
    page.goto(stack.base + f"/console/#/visit/{visit_id}")
    lock = page.get_by_test_id("lock-screen")
    expect(lock).to_contain_text("Sam")
    expect(lock).to_contain_text("Boiler check")
    expect(page.get_by_test_id("island-compact")).to_be_visible()
    expect(page.get_by_test_id("island-expanded")).to_contain_text("12 Elm Row")
    deliveries = page.get_by_test_id("deliveries")
    expect(deliveries.locator('[data-testid="delivery"]')).not_to_have_count(0)

    for event, status in [("enRoute", "enRoute"), ("nearby", "nearby"), ("onSite", "onSite"), ("completed", "completed")]:
        post(page, page, event)
        expect(lock).to_have_attribute("data-status", status)
        if status == "nearby":
            page.screenshot(path=artifacts / "visit-nearby.png", full_page=True)
    expect(page.get_by_test_id("history").locator("li")).to_have_count(5)
    expect(page.get_by_test_id("dismissal")).to_contain_text("until")
    # The end reached the simulator, and the deliveries panel says so.
    expect(deliveries.locator('[data-testid="delivery"][data-kind="end"][data-state="sent"]')).to_have_count(
        1, timeout=15_000)
    # An ended visit offers no event at all.
    expect(page.locator('[data-testid^="event-"]')).to_have_count(0)
    page.screenshot(path=artifacts / "visit-completed.png", full_page=True)


def test_a_second_tab_sees_a_change_within_two_seconds(stack, context, artifacts):
    visit_id = unique("v-tabs")
    first, second = context.new_page(), context.new_page()
    sign_in(first, stack)
    sign_in(second, stack)
    stack.book(visit_id)
    expect(row(second, visit_id)).to_be_visible(timeout=TWO_SECONDS_AND_A_REQUEST)
    expect(row(first, visit_id)).to_be_visible(timeout=TWO_SECONDS_AND_A_REQUEST)
    post(first, row(first, visit_id), "enRoute")
    started = time.monotonic()
    expect(row(second, visit_id).get_by_test_id("visit-status")).to_have_text("En route", timeout=TWO_SECONDS_AND_A_REQUEST)
    print(f"second tab saw the change after {time.monotonic() - started:.2f} s")
    second.screenshot(path=artifacts / "second-tab.png")


def test_an_illegal_event_is_not_offered(stack, context, artifacts):
    visit_id = unique("v-legal")
    stack.book(visit_id)
    status, _ = stack.api("POST", f"/v1/visits/{visit_id}/events", {"type": "onSite"})
    assert status == 201
    page = context.new_page()
    sign_in(page, stack)
    r = row(page, visit_id)
    expect(r.get_by_test_id("visit-status")).to_have_text("On site")
    # From onSite: finishing, completed, progress, cancelled, failed; never enRoute, nearby, onSite, reassigned.
    offered = sorted(b.get_attribute("data-testid") for b in r.locator('[data-testid^="event-"]').all())
    assert offered == sorted(f"event-{t}" for t in ["finishing", "completed", "progress", "cancelled", "failed"]), offered
    for illegal in ["enRoute", "nearby", "onSite", "reassigned"]:
        expect(r.get_by_test_id(f"event-{illegal}")).to_have_count(0)

    # Cancel asks for a reason, which reaches the history.
    r.get_by_test_id("event-cancelled").click()
    dialog = page.locator("dialog")
    dialog.locator('[name="reason"]').fill("Customer not home")
    page.screenshot(path=artifacts / "cancel-reason.png")
    dialog.get_by_test_id("dialog-ok").click()
    expect(r.get_by_test_id("visit-status")).to_have_text("Cancelled")
    expect(r.locator('[data-testid^="event-"]')).to_have_count(0)
    status, history = stack.api("GET", f"/v1/visits/{visit_id}/events")
    assert history["events"][-1]["data"].get("reason") == "Customer not home", history


def test_reassign_asks_for_the_technician(stack, context, artifacts):
    visit_id = unique("v-reassign")
    stack.book(visit_id)
    page = context.new_page()
    sign_in(page, stack)
    row(page, visit_id).get_by_test_id("event-reassigned").click()
    dialog = page.locator("dialog")
    dialog.locator('[name="id"]').fill("t-new")
    dialog.locator('[name="name"]').fill("Jo")
    # The van is the new technician's to give, never the previous one's left in the field.
    expect(dialog.locator('[name="vanDescription"]')).to_have_value("")
    dialog.get_by_test_id("dialog-ok").click()
    expect(dialog.get_by_test_id("dialog-error")).to_have_text("Van is needed.")
    dialog.locator('[name="vanDescription"]').fill("Red van")
    dialog.get_by_test_id("dialog-ok").click()
    expect(row(page, visit_id)).to_contain_text("Jo")
    status, visit = stack.api("GET", f"/v1/visits/{visit_id}")
    assert visit["contentState"]["technicianName"] == "Jo"
    assert visit["contentState"]["vanDescription"] == "Red van"
    page.screenshot(path=artifacts / "reassigned.png")


def test_a_hostile_customer_name_is_shown_as_text_and_runs_nothing(stack, context, artifacts):
    hostile = "<img src=x onerror=alert(1)>"
    visit_id = unique("v-xss")
    stack.book(visit_id, first_name=hostile)
    page = context.new_page()
    dialogs = []
    page.on("dialog", lambda d: (dialogs.append(d.message), d.dismiss()))
    sign_in(page, stack)
    expect(row(page, visit_id)).to_contain_text(hostile)
    assert row(page, visit_id).locator("img").count() == 0
    page.goto(stack.base + f"/console/#/visit/{visit_id}")
    expect(page.get_by_test_id("lock-screen")).to_be_visible()
    assert page.locator("main img").count() == 0
    page.wait_for_timeout(500)  # give a smuggled handler the chance to fire; the assertion is that none did
    assert dialogs == []
    page.screenshot(path=artifacts / "hostile-name.png")


def test_the_ops_page_retries_a_dead_letter(stack, context, artifacts):
    visit_id = unique("v-dead")
    stack.book(visit_id, customer="c-dead")
    # The next push is refused for good (a permanent 400): its delivery is dead-lettered.
    stack.sim("POST", "/_sim/faults", {"failNext": {"count": 1, "status": 400, "reason": "BadExpirationDate"}})
    stack.register_activity(visit_id, customer="c-dead")

    def dead():
        _, body = stack.api("GET", "/v1/ops/outbox?state=dead&limit=1000", key=stack.ops)
        return [d for d in body["deliveries"] if d["visitId"] == visit_id]

    delivery = wait_for("a dead delivery for the visit", dead, within=20)[0]
    page = context.new_page()
    sign_in(page, stack, stack.ops)
    page.goto(stack.base + "/console/#/ops")
    expect(page.get_by_test_id("outbox-depth")).to_contain_text("dead")
    letter = page.locator(f'[data-testid="dead-letter"][data-delivery-id="{delivery["id"]}"]')
    expect(letter).to_be_visible()
    page.screenshot(path=artifacts / "ops-dead-letter.png", full_page=True)
    # Retry asks first: cancelled, the letter stays; confirmed, it goes.
    letter.get_by_test_id("retry").click()
    expect(page.get_by_test_id("confirm")).to_contain_text(f"Retry delivery {delivery['id']}")
    page.get_by_test_id("confirm-cancel").click()
    expect(letter).to_be_visible()
    letter.get_by_test_id("retry").click()
    page.get_by_test_id("confirm-ok").click()
    expect(letter).to_have_count(0, timeout=TWO_SECONDS_AND_A_REQUEST)
    wait_for("the retried delivery to be sent", lambda: stack.api(
        "GET", f"/v1/visits/{visit_id}/deliveries", key=stack.ops)[1]["deliveries"][0]["state"] == "sent", within=20)
    page.get_by_test_id("replay").click()
    page.get_by_test_id("confirm-ok").click()
    expect(page.get_by_test_id("replay-result")).to_contain_text("into the visits projection", timeout=20_000)
    # The day by technician is a read model of its own, replayed the same way.
    page.get_by_test_id("replay-projection").select_option("technicians")
    page.get_by_test_id("replay").click()
    expect(page.get_by_test_id("confirm")).to_contain_text("Replay the technicians projection?")
    page.get_by_test_id("confirm-ok").click()
    expect(page.get_by_test_id("replay-result")).to_contain_text("into the technicians projection", timeout=20_000)
    expect(page.get_by_test_id("sending-pause")).to_have_text("Sending is not paused.")
    page.screenshot(path=artifacts / "ops-after-retry.png", full_page=True)


def test_a_stale_activity_waits_for_fresh_data(stack, context, artifacts):
    visit_id = unique("v-stale")
    visit = stack.book(visit_id)
    page = context.new_page()
    page.clock.install()
    sign_in(page, stack)
    page.goto(stack.base + f"/console/#/visit/{visit_id}")
    lock = page.get_by_test_id("lock-screen")
    expect(lock).to_contain_text("Sam")
    expect(page.get_by_test_id("stale")).to_have_count(0)
    # The browser's clock past the visit's staleDate: the card says so instead of counting down.
    page.clock.fast_forward(int((visit["staleDate"] - time.time() + 5) * 1000))
    page.clock.run_for(2_500)
    expect(page.get_by_test_id("stale")).to_have_text("↻ Waiting for fresh data")
    page.screenshot(path=artifacts / "visit-stale.png", full_page=True)


def test_the_console_answers_with_its_security_headers(stack, context):
    page = context.new_page()
    response = page.goto(stack.base + "/console/")
    csp = response.headers["content-security-policy"]
    assert "frame-ancestors 'none'" in csp and "unsafe-inline" not in csp
    assert "etag" in response.headers
    api = page.request.get(stack.base + "/v1/visits", headers={"Authorization": f"Bearer {stack.dispatcher}"})
    assert api.headers["cache-control"] == "no-store"


def test_tablet_width_and_dark_mode(stack, browser, artifacts):
    context = browser.new_context(viewport={"width": 820, "height": 1180}, color_scheme="dark")
    context.set_default_timeout(10_000)
    try:
        visit_id = unique("v-tablet")
        stack.book(visit_id)
        page = context.new_page()
        sign_in(page, stack)
        expect(row(page, visit_id)).to_be_visible()
        # Keyboard reachable: Tab reaches the event buttons.
        page.keyboard.press("Tab")
        page.goto(stack.base + f"/console/#/visit/{visit_id}")
        expect(page.get_by_test_id("lock-screen")).to_be_visible()
        page.screenshot(path=artifacts / "visit-tablet-dark.png", full_page=True)
        assert page.evaluate("document.documentElement.scrollWidth <= window.innerWidth + 1")
    finally:
        context.close()


def test_the_preview_imitates_the_phone_in_the_visits_language(stack, context, artifacts):
    """The Lock Screen and Dynamic Island previews carry the visit's `locale` (and its direction), so the
    browser draws them as a phone set to that language would; the console's own words stay English."""
    chinese, arabic = unique("v-zh"), unique("v-ar")
    now = int(time.time())
    for visit_id, locale in ((chinese, "zh-Hans"), (arabic, "ar-EG")):
        status, body = stack.api("POST", "/v1/visits", {
            "visitId": visit_id, "customerId": "c-1", "locale": locale,
            "attributes": {"customerFirstName": "Alex", "serviceAddress": "12 Elm Row", "jobSummary": "Boiler check"},
            "technician": {"id": "t-1", "name": "Sam", "avatarSymbol": "person.crop.circle", "vanDescription": "White van"},
            "arrivalWindow": {"start": now + 600, "end": now + 1800}, "kilometresAway": 14.0})
        assert status == 201, body
        assert body["locale"] == locale
    page = context.new_page()
    sign_in(page, stack)
    page.goto(stack.base + f"/console/#/visit/{chinese}")
    lock = page.get_by_test_id("lock-screen")
    expect(lock).to_have_attribute("lang", "zh-Hans")
    expect(lock).to_have_attribute("dir", "ltr")
    expect(page.get_by_test_id("island-expanded")).to_have_attribute("lang", "zh-Hans")
    page.screenshot(path=artifacts / "visit-zh-preview.png", full_page=True)
    page.goto(stack.base + f"/console/#/visit/{arabic}")
    lock = page.get_by_test_id("lock-screen")
    expect(lock).to_have_attribute("lang", "ar-EG")
    expect(lock).to_have_attribute("dir", "rtl")
