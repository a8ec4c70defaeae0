"""The tracking page (`/track/<token>`), as a customer without the app opens it on a phone: the Lock Screen card
at 390 px without sideways scrolling, in light and dark, updated without a reload after an event, a name with
markup shown as text, the link's token sent nowhere but to its own state call, and the page saying so once the
link is revoked; a dispatcher making and revoking the link on the console's visit page. Real Chromium against `livevisits serve`; every wait bounded."""

import time
from urllib.parse import urlsplit

import pytest
from playwright.sync_api import expect

from test_console import sign_in, unique
from test_phone import fits

HOSTILE = "<img src=x onerror=alert(1)>"


def book_and_link(stack, technician_name, locale=None):
    visit_id = unique("v-track")
    now = int(time.time())
    visit = {
        "visitId": visit_id, "customerId": unique("c-track"),
        "attributes": {"customerFirstName": "Alex", "serviceAddress": "12 Elm Row",
                       "jobSummary": "Replace the thermostatic radiator valves in the upstairs bedrooms"},
        "technician": {"id": unique("t-track"), "name": technician_name, "avatarSymbol": "wrench.fill",
                       "vanDescription": "Long white van with a ladder rack"},
        "arrivalWindow": {"start": now + 600, "end": now + 1800}, "kilometresAway": 12.0}
    if locale:
        visit["locale"] = locale
    status, body = stack.api("POST", "/v1/visits", visit)
    assert status == 201, body
    status, link = stack.api("POST", f"/v1/visits/{visit_id}/tracking-link")
    assert status == 201, link
    return visit_id, link["url"]


def phone(browser, scheme):
    context = browser.new_context(viewport={"width": 390, "height": 844}, color_scheme=scheme, is_mobile=True,
                                  has_touch=True, device_scale_factor=2)
    context.set_default_timeout(10_000)
    return context


@pytest.mark.parametrize("scheme", ["light", "dark"])
def test_the_card_at_phone_width_updates_without_a_reload(stack, browser, artifacts, scheme):
    visit_id, url = book_and_link(stack, HOSTILE)
    token = url.rsplit("/", 1)[1]
    context = phone(browser, scheme)
    try:
        page = context.new_page()
        dialogs, requests = [], []
        page.on("dialog", lambda d: (dialogs.append(d.message), d.dismiss()))
        page.on("request", lambda r: requests.append(r.url))
        page.goto(stack.base + url)
        card = page.get_by_test_id("lock-screen")
        expect(card).to_be_visible()
        expect(card.locator(".la-name")).to_have_text(HOSTILE)
        expect(card).to_contain_text("Scheduled")
        expect(card).to_contain_text("12.0 km away")
        expect(card).to_contain_text("Replace the thermostatic radiator valves")
        assert page.locator("main img").count() == 0
        assert "12 Elm Row" not in page.content() and "Alex" not in page.content()
        fits(page, "tracking page")
        background = page.evaluate("getComputedStyle(document.body).backgroundColor")
        assert (background == "rgb(0, 0, 0)") == (scheme == "dark"), background
        page.screenshot(path=artifacts / f"tracking-{scheme}.png", full_page=True)

        # A change shows within 2 s of the event, in the same document.
        page.evaluate("window.__sameDocument = true")
        status, body = stack.api("POST", f"/v1/visits/{visit_id}/events", {"type": "enRoute"})
        assert status == 201, body
        expect(card.page.get_by_test_id("lock-screen")).to_contain_text("On the way", timeout=2_500)
        assert page.evaluate("window.__sameDocument") is True, "no reload"
        assert dialogs == []

        # The token goes to this origin's page and its state call only.
        for sent in requests:
            if token in sent:
                assert urlsplit(sent).path in (url, url + "/state"), sent
            assert sent.startswith(stack.base), f"a request leaves the origin: {sent}"
    finally:
        context.close()


def test_a_revoked_link_says_so(stack, browser, artifacts):
    visit_id, url = book_and_link(stack, "Sam")
    context = phone(browser, "light")
    try:
        page = context.new_page()
        page.goto(stack.base + url)
        expect(page.get_by_test_id("lock-screen")).to_be_visible()
        status, _ = stack.api("DELETE", f"/v1/visits/{visit_id}/tracking-link")
        assert status == 204
        expect(page.get_by_test_id("track-gone")).to_contain_text("expired or is not valid", timeout=2_500)
        answer = page.goto(stack.base + url)
        assert answer.status == 404
        expect(page.get_by_test_id("track-gone")).to_contain_text("expired or is not valid")
        fits(page, "expired link page")
        page.screenshot(path=artifacts / "tracking-gone.png")
    finally:
        context.close()


def test_an_ended_visit_shows_its_end(stack, browser, artifacts):
    visit_id, url = book_and_link(stack, "Sam")
    context = phone(browser, "dark")
    try:
        page = context.new_page()
        page.goto(stack.base + url)
        expect(page.get_by_test_id("lock-screen")).to_be_visible()
        for event in ("onSite", "completed"):
            status, body = stack.api("POST", f"/v1/visits/{visit_id}/events", {"type": event})
            assert status == 201, body
        expect(page.get_by_test_id("dismissal")).to_contain_text("This visit has ended", timeout=2_500)
        page.screenshot(path=artifacts / "tracking-ended.png")
    finally:
        context.close()


def test_a_stale_card_is_dimmed_and_says_it_may_be_out_of_date(stack, browser, artifacts):
    visit_id, url = book_and_link(stack, "Sam")
    status, visit = stack.api("GET", f"/v1/visits/{visit_id}")
    assert status == 200, visit
    context = phone(browser, "light")
    try:
        page = context.new_page()
        page.clock.install()
        page.goto(stack.base + url)
        card = page.get_by_test_id("lock-screen")
        expect(card).to_be_visible()
        expect(page.get_by_test_id("stale")).to_have_count(0)
        # The browser's clock past the visit's staleDate: the card dims and says so.
        page.clock.fast_forward(int((visit["staleDate"] - time.time() + 5) * 1000))
        page.clock.run_for(2_500)
        expect(page.get_by_test_id("stale")).to_contain_text("May be out of date")
        expect(card).to_have_class("lock-screen stale")
        page.screenshot(path=artifacts / "tracking-stale.png")
    finally:
        context.close()


def test_a_dispatcher_makes_and_revokes_the_link_on_the_visit_page(stack, context, browser, artifacts):
    visit_id = unique("v-track-console")
    stack.book(visit_id)
    page = context.new_page()
    sign_in(page, stack)
    page.goto(stack.base + f"/console/#/visit/{visit_id}")
    card = page.get_by_test_id("tracking-link")
    card.get_by_test_id("tracking-link-create").click()
    # It asks first, saying what the page shows and that an older link stops working.
    expect(page.get_by_test_id("confirm")).to_contain_text("never the address")
    page.get_by_test_id("confirm-ok").click()
    field = card.get_by_test_id("tracking-link-url")
    expect(field).to_be_visible()
    url = field.input_value()
    assert url.startswith(stack.base + "/track/"), url
    customer = phone(browser, "light")
    try:
        tracked = customer.new_page()
        tracked.goto(url)
        expect(tracked.get_by_test_id("lock-screen")).to_be_visible()
        # Revoked from the console, the customer's open page says so within its polling interval.
        card.get_by_test_id("tracking-link-revoke").click()
        page.get_by_test_id("confirm-ok").click()
        expect(card.get_by_test_id("tracking-link-result")).to_have_text("Revoked.")
        expect(field).to_be_hidden()
        expect(tracked.get_by_test_id("track-gone")).to_contain_text("expired or is not valid", timeout=2_500)
    finally:
        customer.close()


def test_a_chinese_visits_page_speaks_chinese(stack, browser, artifacts):
    """A visit booked in `zh-Hans-CN`: the page's language is the visit's, its labels are the rules' Simplified
    Chinese, and times are written as Chinese writes them (Intl with the visit's locale)."""
    visit_id, url = book_and_link(stack, "王师傅", locale="zh-Hans-CN")
    context = phone(browser, "light")
    try:
        page = context.new_page()
        page.goto(stack.base + url)
        card = page.get_by_test_id("lock-screen")
        expect(card).to_contain_text("已预约")
        expect(card).to_contain_text("距您 12.0 公里")
        expect(card).to_contain_text("预计到达")
        assert page.evaluate("document.documentElement.lang") == "zh-Hans-CN"
        assert page.evaluate("document.documentElement.dir") == "ltr"
        assert page.title() == "您的上门服务"
        # The arrival window is written as Chinese writes times.
        start = page.evaluate(
            "fetch(location.pathname + '/state').then((r) => r.json()).then((s) => new Intl.DateTimeFormat("
            "'zh-Hans-CN', { hour: '2-digit', minute: '2-digit' }).format(new Date(s.arrivalStartEpoch * 1000)))")
        expect(card).to_contain_text(f"预计到达: {start}")
        text = card.inner_text()
        assert "Scheduled" not in text and "km away" not in text and "Arrival window" not in text, text
        fits(page, "tracking page in Chinese")
        page.screenshot(path=artifacts / "tracking-zh.png", full_page=True)

        status, body = stack.api("POST", f"/v1/visits/{visit_id}/events", {"type": "nearby", "kilometresAway": 0.8})
        assert status == 201, body
        expect(page.get_by_test_id("lock-screen")).to_contain_text("即将到达", timeout=2_500)
        status, body = stack.api("POST", f"/v1/visits/{visit_id}/events", {"type": "onSite"})
        assert status == 201, body
        status, body = stack.api("POST", f"/v1/visits/{visit_id}/events", {"type": "completed"})
        assert status == 201, body
        expect(page.get_by_test_id("dismissal")).to_contain_text("本次上门服务已结束", timeout=2_500)
    finally:
        context.close()


def test_a_visit_in_a_language_without_texts_gets_english(stack, browser):
    _, url = book_and_link(stack, "Sam", locale="es")
    context = phone(browser, "light")
    try:
        page = context.new_page()
        page.goto(stack.base + url)
        expect(page.get_by_test_id("lock-screen")).to_contain_text("Scheduled")
        expect(page.get_by_test_id("lock-screen")).to_contain_text("km away")
        assert page.evaluate("document.documentElement.lang") == "es"
    finally:
        context.close()
