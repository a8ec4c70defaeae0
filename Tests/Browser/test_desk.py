"""The dispatch desk in the console (contract §11 "The dispatch desk", §14 "Running late"): a technician's day,
safer actions (a confirmation naming the customer's alert, distances asked, buttons disabled while a request
runs, errors in sentences). Real Chromium against the real server; every wait is bounded."""

import json
import time

from playwright.sync_api import expect

from conftest import REPO
from test_console import row, sign_in, unique

RULES = json.loads((REPO / "Projections/rules.json").read_text())


def book(stack, visit_id, technician, start, name="Sam", customer="c-desk", first_name="Alex", job="Boiler check",
         km=12.0, van="White van"):
    status, body = stack.api("POST", "/v1/visits", {
        "visitId": visit_id, "customerId": customer,
        "attributes": {"customerFirstName": first_name, "serviceAddress": "12 Elm Row", "jobSummary": job},
        "technician": {"id": technician, "name": name, "avatarSymbol": "person.crop.circle", "vanDescription": van},
        "arrivalWindow": {"start": start, "end": start + 3600}, "kilometresAway": km})
    assert status == 201, body
    return body


def visit(stack, visit_id):
    status, body = stack.api("GET", f"/v1/visits/{visit_id}")
    assert status == 200, body
    return body


def test_the_technicians_day_in_order_with_distances_and_running_late(stack, context, artifacts):
    technician = unique("t-day")
    # Today's windows (noon onwards, local to the browser and the test alike), booked out of order.
    noon = int(time.mktime(time.localtime()[:3] + (12, 0, 0, 0, 0, -1)))
    first, second, third = unique("v-day1"), unique("v-day2"), unique("v-day3")
    book(stack, third, technician, noon + 3 * 3600, name="Marcus", job="Third job")
    book(stack, first, technician, noon, name="Marcus", job="First job")
    book(stack, second, technician, noon + 3600, name="Marcus", job="Second job", km=7.5)
    status, _ = stack.api("POST", f"/v1/visits/{second}/events", {"type": "enRoute", "kilometresAway": 4.2})
    assert status == 201

    page = context.new_page()
    sign_in(page, stack)
    row(page, first).get_by_test_id("technician-link").click()
    expect(page.get_by_test_id("technician-name")).to_have_text("Marcus")
    visits = page.get_by_test_id("technician-visit")
    expect(visits).to_have_count(3)
    assert [v.get_attribute("data-visit-id") for v in visits.all()] == [first, second, third]
    expect(visits.nth(1).get_by_test_id("distance")).to_have_text("4.2 km away")
    expect(visits.nth(0).get_by_test_id("distance")).to_have_text("12.0 km away")
    expect(page.get_by_test_id("day")).to_contain_text("(today)")
    page.screenshot(path=artifacts / "technician-day.png", full_page=True)

    # Minutes are checked in the page, in a sentence, before anything is sent.
    page.get_by_test_id("running-late").click()
    dialog = page.get_by_test_id("delay")
    for typed in ["0", "721", "half an hour", "2.5"]:
        dialog.get_by_test_id("delay-minutes").fill(typed)
        dialog.get_by_test_id("delay-ok").click()
        expect(dialog.get_by_test_id("delay-error")).to_contain_text("whole minutes from 1 to 720")
    assert visit(stack, first)["contentState"]["arrivalStartEpoch"] == noon
    dialog.get_by_test_id("delay-minutes").fill("30")
    dialog.get_by_test_id("delay-reason").fill("Traffic on the ring road")
    page.screenshot(path=artifacts / "technician-running-late.png")
    dialog.get_by_test_id("delay-ok").click()
    expect(page.get_by_test_id("delay-result")).to_have_text("Moved 3 visits 30 minutes later.")
    for visit_id, start in [(first, noon), (second, noon + 3600), (third, noon + 3 * 3600)]:
        assert visit(stack, visit_id)["contentState"]["arrivalStartEpoch"] == start + 1800
    expect(visits.nth(0)).to_contain_text(time.strftime("%H:%M", time.localtime(noon + 1800)))

    # Another day has its own list.
    page.get_by_test_id("day-next").click()
    expect(page.get_by_test_id("technician-day")).to_contain_text("No visit for this technician on this day.")
    expect(page.get_by_test_id("day")).not_to_contain_text("(today)")


def test_nearby_asks_for_the_distance_and_confirms_the_alert(stack, context, artifacts):
    visit_id = unique("v-nearby")
    book(stack, visit_id, "t-nearby", int(time.time()) + 600)
    page = context.new_page()
    sign_in(page, stack)
    r = row(page, visit_id)

    # Cancelled: nothing is posted.
    r.get_by_test_id("event-nearby").click()
    confirm = page.get_by_test_id("confirm")
    expect(confirm).to_contain_text(RULES["statuses"]["nearby"]["alert"]["body"])
    expect(confirm).to_contain_text("Nearby")
    confirm.get_by_test_id("confirm-cancel").click()
    expect(confirm).to_have_count(0)
    assert visit(stack, visit_id)["status"] == "scheduled"

    r.get_by_test_id("event-nearby").click()
    confirm.get_by_test_id("distance").fill("near")
    confirm.get_by_test_id("confirm-ok").click()
    expect(confirm.get_by_test_id("confirm-error")).to_contain_text("type the kilometres as a number")
    confirm.get_by_test_id("distance").fill("3,4")
    page.screenshot(path=artifacts / "confirm-nearby.png")

    # While the request runs, the row's buttons are disabled (the request is held at the browser's edge).
    held = []
    page.route("**/v1/visits/*/events", lambda route: held.append(route))
    confirm.get_by_test_id("confirm-ok").click()
    expect(r.get_by_test_id("event-onSite")).to_be_disabled()
    expect(r.get_by_test_id("event-cancelled")).to_be_disabled()
    assert len(held) == 1 and json.loads(held[0].request.post_data) == {"type": "nearby", "kilometresAway": 3.4}
    held[0].continue_()
    page.unroute("**/v1/visits/*/events")
    expect(r.get_by_test_id("visit-status")).to_have_text("Nearby")
    assert visit(stack, visit_id)["contentState"]["kilometresAway"] == 3.4

    # On site alerts too: asked, with its own text; no distance.
    r.get_by_test_id("event-onSite").click()
    expect(confirm).to_contain_text(RULES["statuses"]["onSite"]["alert"]["body"])
    expect(confirm.get_by_test_id("distance")).to_have_count(0)
    confirm.get_by_test_id("confirm-ok").click()
    expect(r.get_by_test_id("visit-status")).to_have_text("On site")
    # Finishing carries no alert: it posts without asking.
    r.get_by_test_id("event-finishing").click()
    expect(r.get_by_test_id("visit-status")).to_have_text("Finishing")
    expect(page.get_by_test_id("confirm")).to_have_count(0)


def test_en_route_asks_for_the_distance_without_a_confirmation(stack, context):
    visit_id = unique("v-enroute")
    book(stack, visit_id, "t-enroute", int(time.time()) + 600)
    page = context.new_page()
    sign_in(page, stack)
    row(page, visit_id).get_by_test_id("event-enRoute").click()
    expect(page.get_by_test_id("confirm")).to_have_count(0)
    ask = page.get_by_test_id("dialog")
    expect(ask.get_by_test_id("distance")).to_have_value("12")
    ask.get_by_test_id("distance").fill("8.5")
    ask.get_by_test_id("dialog-ok").click()
    expect(row(page, visit_id).get_by_test_id("visit-status")).to_have_text("En route")
    assert visit(stack, visit_id)["contentState"]["kilometresAway"] == 8.5


def test_errors_are_sentences(stack, context, artifacts):
    page = context.new_page()
    sign_in(page, stack)
    page.get_by_test_id("book").click()
    form = page.locator("form.booking")
    for name, value in [("customerId", "c-err"), ("attributes.customerFirstName", "R"), ("attributes.serviceAddress", "A"),
                        ("attributes.jobSummary", "J"), ("technician.id", "t 1 with spaces"), ("technician.name", "K")]:
        form.locator(f'[name="{name}"]').fill(value)
    page.get_by_test_id("book-submit").click()
    expect(page.get_by_test_id("book-error")).to_have_text(
        "The technician id may only use letters, digits and . _ ~ - (1 to 128 of them).")
    page.screenshot(path=artifacts / "booking-error-sentence.png")
