"""The dispatch desk in the console (contract §11 "The dispatch desk", §14 "Running late"): a technician's day,
safer actions (a confirmation naming the customer's alert, distances asked, buttons disabled while a request
runs, errors in sentences). Real Chromium against the real server; every wait is bounded."""

import json
import re
import time
import uuid

from playwright.sync_api import expect

from conftest import REPO, later_today, wait_for
from test_console import FIRST_BACKGROUND_READS, TWO_SECONDS_AND_A_REQUEST, row, sign_in, unique

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
    deadline = time.monotonic() + 5
    while not held and time.monotonic() < deadline:
        page.wait_for_timeout(50)  # lets Playwright run the route handler; bounded by the deadline
    expect(confirm).to_have_count(0)
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


def test_search_narrows_the_rows_keeps_its_words_in_the_url_and_says_when_nothing_matches(stack, context, artifacts):
    word = uuid.uuid4().hex[:6]
    start = int(time.time()) + 900
    marcus, other = unique("v-marcus"), unique("v-other")
    book(stack, marcus, unique("t-marcus"), start, name=f"Marcus{word}", first_name=f"Ivy{word}", job=f"Leak{word} under sink")
    book(stack, other, unique("t-other"), start, name="Priya", first_name="Noor", job="Boiler service")
    page = context.new_page()
    sign_in(page, stack)
    expect(row(page, other)).to_be_visible()

    search = page.get_by_test_id("search")
    for typed in [f"marcus{word}".upper(), f"ivy{word}", f"leak{word}", marcus[-6:], f"cus{word[:3]}"]:
        search.fill(typed)
        expect(row(page, marcus)).to_be_visible()
        expect(row(page, other)).to_have_count(0)
        expect(page.get_by_test_id("visit-row")).to_have_count(1)
    assert f"q=cus{word[:3]}" in page.url
    page.screenshot(path=artifacts / "board-search.png")

    # The URL carries the search: a reload (or a shared link) shows the same narrowed board.
    page.reload()
    expect(page.get_by_test_id("search")).to_have_value(f"cus{word[:3]}")
    expect(row(page, marcus)).to_be_visible()
    expect(page.get_by_test_id("visit-row")).to_have_count(1)

    page.get_by_test_id("search").fill(f"nobody{word}")
    expect(page.get_by_test_id("visit-row")).to_have_count(0)
    expect(page.get_by_test_id("empty")).to_contain_text(f'No visit matches "nobody{word}"')
    page.get_by_test_id("search").fill("")
    expect(row(page, other)).to_be_visible()
    expect(page.get_by_test_id("empty")).to_be_hidden()


def test_exceptions_are_badged_and_counted(stack, context, artifacts):
    now = int(time.time())
    late, stale, dead = unique("v-late"), unique("v-stale"), unique("v-deadpush")
    book(stack, late, "t-exc", now - 7200)  # its window ended an hour ago; still scheduled
    book(stack, stale, "t-exc", now + 600)
    assert stack.api("POST", f"/v1/visits/{stale}/events", {"type": "enRoute", "kilometresAway": 9.0})[0] == 201
    book(stack, dead, "t-exc", now + 1200, customer="c-deadpush")
    stack.sim("POST", "/_sim/faults", {"failNext": {"count": 1, "status": 400, "reason": "BadExpirationDate"}})
    stack.register_activity(dead, customer="c-deadpush")
    wait_for("the visit's dead push", lambda: any(
        d["state"] == "dead" for d in stack.api("GET", f"/v1/visits/{dead}/deliveries")[1]["deliveries"]), within=20)

    page = context.new_page()
    page.clock.install()
    sign_in(page, stack)
    badge = lambda visit_id, kind: row(page, visit_id).locator(f'[data-testid="exception"][data-kind="{kind}"]')
    expect(badge(late, "late")).to_have_text("Late")
    expect(badge(stale, "late")).to_have_count(0)
    expect(badge(dead, "delivery")).to_have_text("Push failed", timeout=FIRST_BACKGROUND_READS)
    expect(badge(stale, "stale")).to_have_count(0)
    # Ten minutes on the browser's clock: the en-route visit's Live Activity has been stale for over five.
    page.clock.fast_forward(10 * 60 * 1000)
    page.clock.run_for(2_500)
    expect(badge(stale, "stale")).to_have_text("Stale")
    expect(badge(late, "late")).to_have_attribute("href", f"#/visit/{late}")
    page.screenshot(path=artifacts / "board-exceptions.png")

    # The header counts the visits with at least one exception; it links to them alone.
    def counted():
        n = page.get_by_test_id("exceptions-count").get_attribute("data-count")
        marked = page.locator('[data-testid="visit-row"]:has([data-testid="exception"])').count()
        return n is not None and int(n) == marked and marked >= 3
    wait_for("the header's count to match the marked rows", counted, within=5)
    page.get_by_test_id("exceptions-count").click()
    expect(page.get_by_test_id("only-exceptions")).to_be_checked()
    expect(row(page, late)).to_be_visible()
    for r in page.get_by_test_id("visit-row").all():
        expect(r.get_by_test_id("exception")).not_to_have_count(0)


def test_dates_order_and_a_row_that_stays_under_the_pointer(stack, context, artifacts):
    word = uuid.uuid4().hex[:6]
    now = later_today()
    today, tomorrow = unique("v-today"), unique("v-tomorrow")
    book(stack, tomorrow, "t-dates", now + 86_400, job=f"Dates{word}")
    book(stack, today, "t-dates", now, job=f"Dates{word}")
    page = context.new_page()
    sign_in(page, stack)
    page.get_by_test_id("search").fill(f"dates{word}")
    expect(page.get_by_test_id("visit-row")).to_have_count(2)
    # By arrival, not by booking: today's first.
    assert [r.get_attribute("data-visit-id") for r in page.get_by_test_id("visit-row").all()] == [today, tomorrow]
    day_and_month = page.evaluate(
        "(t) => new Date(t * 1000).toLocaleDateString([], { day: 'numeric', month: 'short' })", now + 86_400)
    expect(row(page, tomorrow).get_by_test_id("arrival")).to_contain_text(day_and_month)
    today_text = page.evaluate(
        "(t) => new Date(t * 1000).toLocaleDateString([], { day: 'numeric', month: 'short' })", now)
    expect(row(page, today).get_by_test_id("arrival")).not_to_contain_text(today_text)

    # The pointer rests on tomorrow's row; an earlier visit arrives above it: the row stays under the pointer
    # (the page scrolls by the new row's height), and the new row is there at once.
    for i in range(6):
        book(stack, unique("v-filler"), "t-dates", now + 2 * 86_400 + i, job=f"Dates{word}")
    page.set_viewport_size({"width": 1280, "height": 420})
    expect(page.get_by_test_id("visit-row")).to_have_count(8)
    target = row(page, tomorrow)
    target.scroll_into_view_if_needed()
    target.get_by_test_id("arrival").hover()
    before = target.bounding_box()
    scrolled = page.evaluate("window.scrollY")
    earlier = unique("v-earlier")
    book(stack, earlier, "t-dates", now - 3 * 86_400, job=f"Dates{word}")
    expect(page.get_by_test_id("visit-row").first).to_have_attribute("data-visit-id", earlier,
                                                                      timeout=TWO_SECONDS_AND_A_REQUEST)
    after = target.bounding_box()
    assert abs(after["y"] - before["y"]) < 1 and after["x"] == before["x"], (before, after)  # scrolls by whole pixels
    assert page.evaluate("window.scrollY") > scrolled
    page.screenshot(path=artifacts / "board-dates.png")


def test_the_ops_page_counts_waiting_work_and_colours_only_what_is_there(stack, context, artifacts):
    visit_id = unique("v-opsdepth")
    book(stack, visit_id, "t-ops", int(time.time()) + 600)
    page = context.new_page()
    sign_in(page, stack)
    page.goto(stack.base + f"/console/#/visit/{visit_id}")
    expect(page.get_by_test_id("lock-screen")).to_be_visible()
    # Signing out forgets the page: the next person (ops) starts on the board, not on this visit.
    page.get_by_role("button", name="Sign out").click()
    sign_in(page, stack, stack.ops)
    assert "#/visit/" not in page.url
    page.goto(stack.base + "/console/#/ops")
    depth = page.get_by_test_id("outbox-depth")
    expect(depth).to_have_attribute("data-depth", re.compile(r"^\d+$"))
    # The depth is the pushes still to send (pending and sending), not every push ever sent.
    expect(depth.locator(".depth-item")).to_have_count(7)
    # One reading of the drawn tiles (the page redraws every 2 s).
    drawn = depth.evaluate("""(d) => ({ depth: Number(d.dataset.depth), tiles: [...d.querySelectorAll('.depth-item')].map(
        (t) => ({ state: t.dataset.state, n: Number(t.querySelector('dd').textContent), some: t.classList.contains('some') })) })""")
    n = {t["state"]: t["n"] for t in drawn["tiles"]}
    assert drawn["depth"] == n["pending"] + n["sending"] and n["sent"] > 0, drawn
    assert all(t["some"] == (t["n"] > 0) for t in drawn["tiles"]), drawn
    expect(page.get_by_test_id("channels")).to_be_visible()
    page.screenshot(path=artifacts / "ops-depth.png", full_page=True)


def test_the_day_by_technician_steps_through_days_and_narrows_with_the_search(stack, context, artifacts):
    word = uuid.uuid4().hex[:6]
    noon = int(time.mktime(time.localtime()[:3] + (12, 0, 0, 0, 0, -1)))
    ada, ben = unique("t-ada"), unique("t-ben")
    a1, a2, b1, later = unique("v-a1"), unique("v-a2"), unique("v-b1"), unique("v-later")
    book(stack, a1, ada, noon - 2 * 3600, name=f"Ada{word}", van="Green van")
    book(stack, a2, ada, noon + 3600, name=f"Ada{word}", van="Green van")
    book(stack, b1, ben, noon, name=f"Ben{word}", van="Blue van")
    book(stack, later, ben, noon + 86_400, name=f"Ben{word}", van="Blue van")
    assert stack.api("POST", f"/v1/visits/{a2}/events", {"type": "enRoute", "kilometresAway": 4.2})[0] == 201

    page = context.new_page()
    sign_in(page, stack)
    page.get_by_test_id("view-timeline").click()
    timeline = page.get_by_test_id("timeline")
    expect(timeline).to_be_visible()
    assert "view=timeline" in page.url
    ada_row = timeline.locator(f'[data-testid="timeline-row"][data-technician-id="{ada}"]')
    ben_row = timeline.locator(f'[data-testid="timeline-row"][data-technician-id="{ben}"]')
    expect(ada_row.get_by_test_id("timeline-visit")).to_have_count(2)
    expect(ada_row.locator(f'[data-visit-id="{a2}"]')).to_contain_text("4.2 km")
    expect(ada_row.locator(f'[data-visit-id="{a2}"]')).to_have_attribute("data-status", "enRoute")
    expect(ben_row.locator(f'[data-visit-id="{b1}"]')).to_be_visible()
    expect(ben_row.locator(f'[data-visit-id="{later}"]')).to_have_count(0)
    # Blocks sit at their windows: the earlier one further left (read at once: the timeline redraws as marks come).
    x = timeline.evaluate("(t, ids) => ids.map((id) => t.querySelector(`[data-visit-id='${id}']`).getBoundingClientRect().x)",
                          [a1, b1, a2])
    assert x[0] < x[1] < x[2], x
    page.screenshot(path=artifacts / "board-timeline.png", full_page=True)

    page.get_by_test_id("search").fill(f"ben{word}")
    expect(ada_row).to_have_count(0)
    expect(ben_row).to_be_visible()
    page.get_by_test_id("search").fill("")

    page.get_by_test_id("day-next").click()
    expect(ben_row.locator(f'[data-visit-id="{later}"]')).to_be_visible()
    expect(ada_row).to_have_count(0)
    assert "date=" in page.url
    page.get_by_test_id("day-today").click()
    expect(ada_row).to_be_visible()


def test_booking_and_reassigning_pick_a_technician_and_their_van(stack, context, artifacts):
    word = uuid.uuid4().hex[:6]
    now = int(time.time())
    dana, visit_id = unique("t-dana"), unique("v-pick")
    book(stack, unique("v-dana"), dana, now + 1800, name=f"Dana{word}", van="Yellow van, roof ladder")
    book(stack, visit_id, unique("t-old"), now + 2400, name="Old", van="Old grey van")

    page = context.new_page()
    sign_in(page, stack)
    page.get_by_test_id("book").click()
    form = page.locator("form.booking")
    form.locator('[name="technician.id"]').fill(dana)
    form.locator('[name="technician.id"]').dispatch_event("change")
    expect(form.locator('[name="technician.name"]')).to_have_value(f"Dana{word}")
    expect(form.locator('[name="technician.vanDescription"]')).to_have_value("Yellow van, roof ladder")
    page.get_by_test_id("book").click()

    row(page, visit_id).get_by_test_id("event-reassigned").click()
    dialog = page.get_by_test_id("dialog")
    dialog.get_by_test_id("pick-technician").select_option(dana)
    expect(dialog.locator('[name="vanDescription"]')).to_have_value("Yellow van, roof ladder")
    page.screenshot(path=artifacts / "reassign-pick.png")
    dialog.get_by_test_id("dialog-ok").click()
    expect(row(page, visit_id)).to_contain_text(f"Dana{word}")
    c = visit(stack, visit_id)["contentState"]
    assert (c["technicianName"], c["vanDescription"]) == (f"Dana{word}", "Yellow van, roof ladder")


def test_the_history_names_people_values_and_from_whom_to_whom(stack, context, artifacts):
    technician, visit_id = unique("t-hist"), unique("v-hist")
    start = int(time.time()) + 3600
    book(stack, visit_id, technician, start, name="Sam")
    status, minted = stack.api("POST", "/v1/keys", {"role": "technician", "subject": technician, "name": "Sam Porter"})
    assert status == 201, minted
    assert stack.api("POST", f"/v1/visits/{visit_id}/events", {"type": "enRoute", "kilometresAway": 4.5},
                     key=minted["key"])[0] == 201
    assert stack.api("POST", f"/v1/technicians/{technician}/delay", {"minutes": 30, "reason": "Traffic"})[0] == 200
    assert stack.api("POST", f"/v1/visits/{visit_id}/events", {"type": "reassigned", "technician": {
        "id": "t-jo", "name": "Jo", "avatarSymbol": "person.crop.circle", "vanDescription": "Red van"}})[0] == 201

    page = context.new_page()
    sign_in(page, stack)
    page.goto(stack.base + f"/console/#/visit/{visit_id}")
    history = page.get_by_test_id("history")
    expect(history.get_by_test_id("history-entry")).to_have_count(4)
    en_route = history.locator('[data-type="enRoute"]')
    expect(en_route.get_by_test_id("history-actor")).to_contain_text("Sam Porter (technician)")
    expect(en_route.get_by_test_id("history-change")).to_have_text("4.5 km away")
    progress = history.locator('[data-type="progress"]')
    expect(progress.get_by_test_id("history-change")).to_contain_text("Arrival moved 30 min later")
    expect(progress.get_by_test_id("history-change")).to_contain_text("Reason: Traffic")
    reassigned = history.locator('[data-type="reassigned"]')
    expect(reassigned.get_by_test_id("history-change")).to_contain_text(f"From Sam ({technician}) to Jo (t-jo)")
    expect(reassigned.get_by_test_id("history-change")).to_contain_text("van: Red van")
    page.screenshot(path=artifacts / "visit-history.png", full_page=True)


def test_the_preview_says_when_the_phone_does_not_have_it(stack, context, artifacts):
    visit_id = unique("v-truth")
    book(stack, visit_id, "t-truth", int(time.time()) + 600, customer="c-truth")
    stack.sim("POST", "/_sim/faults", {"failNext": {"count": 1, "status": 400, "reason": "BadExpirationDate"}})
    stack.register_activity(visit_id, customer="c-truth", activity=unique("a-truth"))
    wait_for("the visit's dead push", lambda: any(
        d["state"] == "dead" for d in stack.api("GET", f"/v1/visits/{visit_id}/deliveries")[1]["deliveries"]), within=20)
    page = context.new_page()
    page.clock.install()
    sign_in(page, stack)
    page.goto(stack.base + f"/console/#/visit/{visit_id}")
    truth = page.get_by_test_id("preview-truth")
    expect(truth).to_have_attribute("data-state", "failed")
    expect(truth).to_contain_text("did not reach the phone")
    page.screenshot(path=artifacts / "visit-preview-failed.png", full_page=True)

    # Stale dims every form, the Island's too.
    _, v = stack.api("GET", f"/v1/visits/{visit_id}")
    page.clock.fast_forward(int((v["staleDate"] - time.time() + 5) * 1000))
    page.clock.run_for(2_500)
    for form in ("lock-screen", "island-compact", "island-expanded"):
        expect(page.get_by_test_id(form)).to_have_class(re.compile(r"\bstale\b"))

    # Ended: the Island is gone at once; the Lock Screen stays until its dismissal.
    assert stack.api("POST", f"/v1/visits/{visit_id}/events", {"type": "cancelled"})[0] == 201
    expect(page.get_by_test_id("island-gone")).to_be_visible(timeout=TWO_SECONDS_AND_A_REQUEST)
    expect(page.get_by_test_id("island-compact")).to_have_count(0)
    expect(page.get_by_test_id("lock-screen")).to_be_visible()
