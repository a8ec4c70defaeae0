"""The visit page's Live Activity preview tells the truth (contract §11, §13): it draws what the customer's phone
acknowledged, and beside it what the server intends while that is held back (here: APNs answers 403, a
configuration problem, and sending pauses for 30 s). Real Chromium, the real server and the APNs simulator;
every wait is bounded."""

import re
import time

from playwright.sync_api import expect

from conftest import wait_for
from test_console import TWO_SECONDS_AND_A_REQUEST, sign_in, unique
from test_desk import book
from test_ledger import register
from test_phone import fits

# The worker's pause after a configuration error is 30 s; then the held push is sent and acknowledged.
PAUSE_AND_A_POLL = 45_000


def deliveries(stack, visit_id):
    status, body = stack.api("GET", f"/v1/visits/{visit_id}/deliveries")
    assert status == 200, body
    return body["deliveries"]


def test_the_preview_shows_the_phones_state_and_what_is_held_back(stack, context, artifacts):
    visit_id, customer = unique("v-phone"), unique("c-phone")
    book(stack, visit_id, unique("t-phone"), int(time.time()) + 600, customer=customer, km=12.0)
    page = context.new_page()
    sign_in(page, stack)
    page.goto(stack.base + f"/console/#/visit/{visit_id}")
    # No device yet: nothing on the phone, and the page says so (the intended state drawn dimmed in its place).
    phone = page.get_by_test_id("preview-phone")
    expect(phone).to_have_attribute("data-shows", "nothing")
    expect(phone).to_contain_text("On the phone: nothing yet")
    expect(page.get_by_test_id("preview-truth")).to_have_attribute("data-state", "unsent")

    # The app registers its activity: the catch-up update reaches the phone, and the preview draws it.
    stack.register_activity(visit_id, customer=customer, activity=unique("a-phone"))
    wait_for("the catch-up update acknowledged", lambda: any(
        d["state"] == "sent" for d in deliveries(stack, visit_id)), within=20)
    expect(phone).to_have_attribute("data-shows", "acknowledged", timeout=TWO_SECONDS_AND_A_REQUEST)
    expect(page.get_by_test_id("island-expanded")).to_contain_text("12.0 km")
    expect(page.get_by_test_id("preview-intended")).to_have_count(0)

    # APNs refuses the next push with a configuration error: sending pauses, the progress waits.
    stack.sim("POST", "/_sim/faults", {"failNext": {"count": 1, "status": 403, "reason": "InvalidProviderToken"}})
    status, body = stack.api("POST", f"/v1/visits/{visit_id}/events", {"type": "progress", "kilometresAway": 4.5})
    assert status == 201, body
    wait_for("the progress refused with 403 and waiting", lambda: any(
        d["state"] == "pending" and d["lastStatus"] == 403 for d in deliveries(stack, visit_id)), within=30)
    intended = page.get_by_test_id("preview-intended")
    expect(intended).to_have_attribute("data-state", "paused", timeout=TWO_SECONDS_AND_A_REQUEST)
    expect(intended.get_by_test_id("preview-truth")).to_contain_text("403 InvalidProviderToken")
    expect(intended.get_by_test_id("preview-changes")).to_contain_text("distance 12.0 km → 4.5 km")
    expect(intended.get_by_test_id("intended-lock-screen")).to_be_visible()
    # The phone still shows the old distance: the Island and the Lock Screen's bar are the acknowledged state's.
    expect(phone).to_have_attribute("data-shows", "acknowledged")
    expect(page.get_by_test_id("island-expanded")).to_contain_text("12.0 km")
    expect(page.get_by_test_id("lock-screen").get_by_role("progressbar")).to_have_attribute("aria-valuenow", "3.0")
    page.screenshot(path=artifacts / "preview-paused.png", full_page=True)
    page.locator("section.card").filter(has=phone).screenshot(path=artifacts / "preview-paused-card.png")
    # At phone width, the phone's card and the held one fit without sideways scrolling.
    page.set_viewport_size({"width": 390, "height": 844})
    expect(intended).to_be_visible()
    fits(page, "the preview with a held push")
    page.screenshot(path=artifacts / "preview-paused-390.png", full_page=True)
    page.set_viewport_size({"width": 1280, "height": 900})

    # The pause ends, the push goes through: the phone shows the new distance and nothing is held back.
    expect(intended).to_have_count(0, timeout=PAUSE_AND_A_POLL)
    expect(page.get_by_test_id("island-expanded")).to_contain_text("4.5 km")
    expect(page.get_by_test_id("lock-screen").get_by_role("progressbar")).to_have_attribute("aria-valuenow", "10.5")
    assert deliveries(stack, visit_id)[0]["state"] == "sent"
    page.screenshot(path=artifacts / "preview-delivered.png", full_page=True)


def test_an_ended_activity_loses_its_island_and_stale_dims_every_form(stack, context, artifacts):
    visit_id, customer = unique("v-phone-end"), unique("c-phone-end")
    book(stack, visit_id, unique("t-phone-end"), int(time.time()) + 600, customer=customer)
    stack.register_activity(visit_id, customer=customer, activity=unique("a-phone-end"))
    wait_for("the catch-up update acknowledged", lambda: any(
        d["state"] == "sent" for d in deliveries(stack, visit_id)), within=20)
    update = next(d for d in deliveries(stack, visit_id) if d["state"] == "sent")
    page = context.new_page()
    page.clock.install()
    sign_in(page, stack)
    page.goto(stack.base + f"/console/#/visit/{visit_id}")
    expect(page.get_by_test_id("preview-phone")).to_have_attribute("data-shows", "acknowledged")
    for form in ("lock-screen", "island-compact", "island-expanded"):
        expect(page.get_by_test_id(form)).not_to_have_class(re.compile(r"\bstale\b"))

    # Past the acknowledged push's stale date: every form the phone shows is dimmed.
    page.clock.fast_forward(int((update["staleDate"] - time.time() + 5) * 1000))
    page.clock.run_for(2_500)
    for form in ("lock-screen", "island-compact", "island-expanded"):
        expect(page.get_by_test_id(form)).to_have_class(re.compile(r"\bstale\b"))

    # The end is acknowledged: the Island is gone at once, the Lock Screen stays with its dismissal.
    assert stack.api("POST", f"/v1/visits/{visit_id}/events", {"type": "cancelled"})[0] == 201
    wait_for("the end acknowledged", lambda: any(
        d["kind"] == "end" and d["state"] == "sent" for d in deliveries(stack, visit_id)), within=20)
    page.clock.run_for(2_500)
    expect(page.get_by_test_id("island-gone")).to_be_visible(timeout=TWO_SECONDS_AND_A_REQUEST)
    expect(page.get_by_test_id("island-compact")).to_have_count(0)
    expect(page.get_by_test_id("lock-screen")).to_have_attribute("data-status", "cancelled")
    # Cancelled is dismissed at once (the rules): gone from the Lock Screen too, drawn faded with its last state.
    expect(page.get_by_test_id("dismissal")).to_have_text("Ended: dismissed from the Lock Screen at once.")
    expect(page.get_by_test_id("lock-screen")).to_have_class(re.compile(r"\bdismissed\b"))
    expect(page.get_by_test_id("preview-intended")).to_have_count(0)
    page.screenshot(path=artifacts / "preview-ended.png", full_page=True)


def test_a_device_left_behind_is_named(stack, context, artifacts):
    visit_id, customer = unique("v-behind"), unique("c-behind")
    phone, tablet = unique("iphone"), unique("ipad")
    book(stack, visit_id, unique("t-behind"), int(time.time()) + 600, customer=customer, km=12.0)
    register(stack, visit_id, customer, unique("a-phone"), phone)
    register(stack, visit_id, customer, unique("a-tablet"), tablet)
    wait_for("both catch-up updates acknowledged", lambda: sum(
        d["state"] == "sent" for d in deliveries(stack, visit_id)) == 2, within=20)
    page = context.new_page()
    sign_in(page, stack)
    page.goto(stack.base + f"/console/#/visit/{visit_id}")
    expect(page.get_by_test_id("preview-phone")).to_have_attribute("data-shows", "acknowledged")
    expect(page.get_by_test_id("preview-behind")).to_have_count(0)

    # One of the two pushes of the progress is refused for good: that device keeps the earlier state.
    stack.sim("POST", "/_sim/faults", {"failNext": {"count": 1, "status": 400, "reason": "BadExpirationDate"}})
    status, body = stack.api("POST", f"/v1/visits/{visit_id}/events", {"type": "progress", "kilometresAway": 4.5})
    assert status == 201, body
    finished = wait_for("one push of the progress dead, the other sent", lambda: (lambda latest: sorted(
        d["state"] for d in latest) == ["dead", "sent"] and latest)(deliveries(stack, visit_id)[:2]), within=30)
    dead = next(d for d in finished if d["state"] == "dead")
    status, ledger = stack.api("GET", f"/v1/visits/{visit_id}/live-activities")
    left_behind = next(e["deviceId"] for e in ledger["liveActivities"] if e["activityId"] == dead["activityId"])
    expect(page.get_by_test_id("island-expanded")).to_contain_text("4.5 km", timeout=TWO_SECONDS_AND_A_REQUEST)
    behind = page.get_by_test_id("preview-behind")
    expect(behind).to_contain_text(f"One device shows an earlier state: {left_behind} (its push dead, 400 BadExpirationDate)")
    expect(behind).not_to_contain_text(phone if left_behind == tablet else tablet)
    page.screenshot(path=artifacts / "preview-behind.png", full_page=True)


def test_on_site_the_timer_gives_way_to_the_status(stack, context, artifacts):
    """From on site the window is collapsed to the arrival: the preview shows the status where the countdown
    was, never a 0:00 timer (as the app should, see Docs/live-activity-contract.md)."""
    visit_id, customer = unique("v-phone-site"), unique("c-phone-site")
    book(stack, visit_id, unique("t-phone-site"), int(time.time()) + 600, customer=customer)
    page = context.new_page()
    sign_in(page, stack)
    page.goto(stack.base + f"/console/#/visit/{visit_id}")
    timer = page.get_by_test_id("lock-screen").locator(".la-timer")
    expect(timer).to_have_text(re.compile(r"^\d+:\d\d"))
    for event, label in (("onSite", "On site"), ("finishing", "Finishing")):
        assert stack.api("POST", f"/v1/visits/{visit_id}/events", {"type": event})[0] == 201
        expect(page.get_by_test_id("lock-screen")).to_have_attribute("data-status", event, timeout=TWO_SECONDS_AND_A_REQUEST)
        expect(timer).to_have_text(label)
        expect(page.get_by_test_id("island-compact").locator(".la-timer")).to_have_text(label)
        expect(page.get_by_test_id("island-expanded").locator(".la-timer")).to_have_text(label)
