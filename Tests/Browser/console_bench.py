"""The console's figures (issue 16): with 1,000 visits on the board (BENCH_VISITS, spread over BENCH_TECHNICIANS
technicians, default 300), the time to first render (the list, and the day by technician) and the time
for a change made through the API to appear (p50/p99 over 20 changes), measured in the browser; and the
server's CPU for an idle open board over a minute. Prints figures; asserts nothing about time.
    scripts/browser-test --co -q >/dev/null   # once, to make the venv
    LIVEVISITS_BIN=.build/debug/livevisits .build/browser-venv/bin/python Tests/Browser/console_bench.py"""

import os
import random
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))
from conftest import CHROMIUM, Stack  # noqa: E402
from playwright.sync_api import expect, sync_playwright  # noqa: E402

VISITS = int(os.environ.get("BENCH_VISITS", "1000"))
TECHNICIANS = int(os.environ.get("BENCH_TECHNICIANS", "300"))
CHANGES = 20
IDLE_SECONDS = int(os.environ.get("BENCH_IDLE_SECONDS", "60"))


def cpu_seconds(pid):
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def main():
    stack = Stack(Path(tempfile.mkdtemp(prefix="lv-console-bench-")))
    try:
        prefix = f"v-bench-{int(time.time())}"
        started = time.monotonic()
        ids = [f"{prefix}-{i:04d}" for i in range(VISITS)]
        for i, visit_id in enumerate(ids):
            stack.book(visit_id, customer=f"c-{visit_id[-3:]}", technician=f"t-{i % TECHNICIANS:03d}")
        print(f"booked {VISITS} visits for {TECHNICIANS} technicians in {time.monotonic() - started:.1f} s")
        server = stack.processes[-1].pid
        reads = []
        for _ in range(5):
            t0 = time.monotonic()
            status, body = stack.api("GET", "/v1/technicians?date=" + time.strftime("%Y-%m-%d", time.gmtime()))
            assert status == 200
            reads.append(time.monotonic() - t0)
        print(f"GET /v1/technicians (today, {sum(len(t['visits']) for t in body['technicians'])} visits of "
              f"{len(body['technicians'])} technicians) from Python: median {statistics.median(reads) * 1000:.0f} ms")
        with sync_playwright() as p:
            browser = p.chromium.launch(executable_path=CHROMIUM, args=["--no-sandbox"])
            # bypass_csp lets Playwright's in-page polling (wait_for_function) run; the console's own code is unchanged.
            page = browser.new_context(viewport={"width": 1280, "height": 900}, bypass_csp=True).new_page()
            page.goto(stack.base + "/console/")
            page.get_by_test_id("signin-key").fill(stack.dispatcher)
            page.get_by_test_id("signin").click()
            page.wait_for_selector('[data-testid="visit-row"]')
            renders = []
            for _ in range(5):
                t0 = time.monotonic()
                page.reload()
                expect(page.get_by_test_id("visit-row")).to_have_count(100, timeout=30_000)
                renders.append(time.monotonic() - t0)
            print(f"first render (reload → 100 rows of {VISITS} visits, first page): "
                  f"median {statistics.median(renders) * 1000:.0f} ms, max {max(renders) * 1000:.0f} ms over 5")
            # The day by technician: every visit of the day as a block, one row per technician.
            timeline = []
            for _ in range(5):
                t0 = time.monotonic()
                page.goto(stack.base + "/console/#/board?view=timeline")
                page.reload()
                page.wait_for_function(f"() => document.querySelectorAll('[data-testid=timeline-visit]').length === {VISITS}",
                                       polling="raf", timeout=30_000)
                timeline.append(time.monotonic() - t0)
            print(f"first render of the day by technician (reload → {VISITS} blocks in "
                  f"{page.get_by_test_id('timeline-row').count()} rows): median {statistics.median(timeline) * 1000:.0f} ms, "
                  f"max {max(timeline) * 1000:.0f} ms over 5")
            page.goto(stack.base + "/console/#/board")
            expect(page.get_by_test_id("visit-row")).to_have_count(100, timeout=30_000)
            t0 = time.monotonic()
            more = page.locator("button", has_text="Show more")
            for shown in range(200, VISITS + 1, 100):
                more.click()
                expect(page.get_by_test_id("visit-row")).to_have_count(shown, timeout=30_000)
            print(f"all {VISITS} rows on the board after paging: {time.monotonic() - t0:.2f} s")
            # Back to the default board (the first 100): the idle cost below is that of one request per 2 s.
            page.reload()
            expect(page.get_by_test_id("visit-row")).to_have_count(100, timeout=30_000)

            latencies = []
            phase = random.Random(20261202)
            for visit_id in ids[-CHANGES:]:
                time.sleep(phase.uniform(0, 2))  # changes fall anywhere in the board's 2 s cycle
                selector = f'[data-testid="visit-row"][data-visit-id="{visit_id}"] [data-testid="visit-status"]'
                t0 = time.monotonic()
                status, _ = stack.api("POST", f"/v1/visits/{visit_id}/events", {"type": "enRoute"})
                assert status == 201
                page.wait_for_function(
                    f"() => document.querySelector('{selector}')?.textContent === 'En route'", polling="raf", timeout=10_000)
                latencies.append(time.monotonic() - t0)
            latencies.sort()
            p99 = latencies[min(len(latencies) - 1, int(round(0.99 * (len(latencies) - 1))))]
            print(f"update appears (API 201 → row shows it) over {CHANGES}: p50 {statistics.median(latencies) * 1000:.0f} ms, "
                  f"p99 {p99 * 1000:.0f} ms (the board polls every 2 s)")

            c0, t0 = cpu_seconds(server), time.monotonic()
            page.wait_for_timeout(IDLE_SECONDS * 1000)
            c1, t1 = cpu_seconds(server), time.monotonic()
            print(f"server CPU with one idle open board (first 100 of {VISITS} visits, {int(round((t1 - t0) / 2))} polls): "
                  f"{c1 - c0:.2f} CPU-s over {t1 - t0:.0f} s = {(c1 - c0) / (t1 - t0) * 60:.2f} CPU-s per minute")
            browser.close()
    finally:
        stack.stop()


if __name__ == "__main__":
    main()
