#!/usr/bin/env python3
"""Regenerates the console screenshots docs/console.md shows (the PNG files
beside this script): the overview, a campaign, its recipients, a
contact's page and the team inbox at 1280 px, and the contacts list as
cards at 375 px, of a seeded business on a fresh server.

Uses what the browser suites use (tests/browser/support.py: the binary,
Debian's chromium through Playwright, installed when missing).
Usage: docs/screenshots/regenerate.py [BINARY]   (default target/debug/switchboard,
built by `cargo build -p switchboard`)
"""
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "..", "tests", "browser"))
from support import PASSWORD, WAIT_MS, admin, data_dir, drive, http  # noqa: E402


def seed(base, business, key):
    """A few days' worth of what a business does: contacts, messages both
    ways (the calls and the campaign come from drive())."""
    _, d = http("GET", f"{base}/api/v1/contacts/categories?businessId={business}", key)
    category = d["data"]["categories"][0]["id"]
    for name, mobile in [("Ana Costa", "+14155550101"), ("Bruno Silva", "+14155550102"), ("Carla Mendes", "+14155550103")]:
        http("POST", f"{base}/api/v1/contacts", key, {"businessId": business, "name": name, "mobile": mobile, "categoryIds": [category]})
    for i, to in enumerate(["+14155550101", "+14155550102", "+14155550103", "+14155550101"]):
        http("POST", f"{base}/api/v1/messages", key, {"businessId": business, "phoneNumberId": "pn-browser", "to": to, "type": "text", "text": f"Your order {i + 1} is ready."})
    for mobile, text in [("+14155550101", "Thanks!"), ("+14155550102", "Can I pick it up tomorrow?")]:
        admin(data_dir(), "sandbox", "inbound", "--phone-number-id", "pn-browser", "--from", mobile, "--text", text, "--name", "Customer")


def run(page, base, business, key, voice, receiver):
    page.set_default_timeout(WAIT_MS)
    seed(base, business, key)
    page.goto(f"{base}/console/")
    page.get_by_label("Email").fill("owner@example.com")
    page.get_by_label("Password").fill(PASSWORD)
    page.get_by_role("button", name="Log in").click()
    page.get_by_role("heading", name="Browser Co").wait_for()

    def shot(route, name, width, height, ready):
        page.set_viewport_size({"width": width, "height": height})
        page.goto("about:blank")
        page.goto(f"{base}/console/{route}")
        page.locator(ready).first.wait_for()
        page.wait_for_load_state("networkidle")
        path = os.path.join(HERE, name)
        page.screenshot(path=path)
        print("wrote", os.path.relpath(path), flush=True)

    shot("#/", "overview.png", 1280, 900, "figure.chart canvas")
    shot(f"#/campaigns/{voice['campaign']}", "campaign.png", 1280, 800, "figure.chart canvas")
    # The same campaign's recipients, and a contact's page with its calls.
    page.locator("#recipient-list tbody tr").first.wait_for()
    page.locator("#recipients").screenshot(path=os.path.join(HERE, "campaign-recipients.png"))
    print("wrote", os.path.relpath(os.path.join(HERE, "campaign-recipients.png")), flush=True)
    _, d = http("GET", f"{base}/api/v1/contacts?businessId={business}&name=Cleo", key)
    shot(f"#/contacts/{d['data']['contacts'][0]['id']}", "contact.png", 1280, 900, ".call-entry")
    shot("#/contacts", "contacts-phone.png", 375, 812, "main table.cards tbody tr")
    # The team inbox at 1280 px: the list, a conversation assigned to the
    # owner with an internal note, and the contact's details.
    _, d = http("GET", f"{base}/api/v1/conversations?businessId={business}&q=pick", key)
    conversation = d["data"]["conversations"][0]["id"]
    _, d = http("GET", f"{base}/api/v1/team-members?businessId={business}", key)
    owner = [m for m in d["data"]["members"] if m["role"] == "owner"][0]["userId"]
    http("PATCH", f"{base}/api/v1/conversations/{conversation}", key, {"businessId": business, "assignedUserId": owner})
    http("POST", f"{base}/api/v1/conversations/{conversation}/notes", key, {"businessId": business, "text": "Pickup after 10: the order is at the front desk."})
    shot(f"#/inbox/{conversation}", "inbox.png", 1280, 800, ".contact-pane h3")


if __name__ == "__main__":
    drive(run, "screenshots")
