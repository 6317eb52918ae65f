#!/usr/bin/env python3
"""Drives the console in a real browser against the real binary.

Starts target/debug/switchboard (built by `cargo test`) on a free loopback
port with a temp data dir, creates a business, an owner and a viewer, and drives
Debian's chromium (headless, through Playwright for Python) the way a
person would: log in, create an API key and use it with plain HTTP
requests, revoke it and see it refused, import a CSV of contacts and watch
it finish, upload a data source version with progress, review and
activate it, create an agent (a server validation error shown next to its
field), test it through three turns and reset it, assign it to a number,
subscribe a webhook and redeliver from its log, open a call's
report and play its recording, estimate and confirm a campaign's summary
run, download its export and create a follow-up, read the credits ledger
grouped by call and run, check every page as the owner and as a viewer at
1280 and 375 px (sweep(): no sideways scroll, no "null", "undefined" or
"request failed", no console error, the header's height budget, no action
a viewer may not take), open the phone's Menu, use the keyboard, log out.
The overview's, a campaign's and the credits page's charts are checked
against the figures the API answers. Issue 39's bugs each have a check here: a double click sends once (counted
over the API), a search by name, errors in words, a stale import form, a
stale data-source page, the contact's conversation order.

Installs what it needs (chromium from Debian, playwright from PyPI) when
missing. Exits non-zero on the first failed expectation.
Usage: tests/browser/console.py [BINARY]
"""
import csv
import json
import re
import os
import shutil
import socket
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request

from support import *  # noqa: F401,F403 (the helpers and checks this script drives the pages with)


def run(page, base, business, admin_key, voice, receiver):
    page.set_default_timeout(WAIT_MS)
    page.goto(f"{base}/console/")

    # Log in.
    page.get_by_label("Email").fill("owner@example.com")
    page.get_by_label("Password").fill("not the password")
    page.get_by_role("button", name="Log in").click()
    page.get_by_role("alert").filter(has_text="not right").wait_for()
    check(True, "a wrong password is refused with a message")
    page.get_by_label("Password").fill(PASSWORD)
    page.get_by_role("button", name="Log in").click()
    page.get_by_role("heading", name="Browser Co").wait_for()
    check(page.get_by_role("navigation").is_visible(), "logged in: the overview shows the business")
    check(not one_line(page, "header .who, header button"), "at 1280 px the user and Log out stay on the header's line")
    cookies = page.context.cookies()
    session = [c for c in cookies if c["name"] == "sb_session"]
    check(len(session) == 1 and session[0]["httpOnly"] and session[0]["sameSite"] == "Strict", "the session cookie is HttpOnly and SameSite=Strict")
    check(page.evaluate("document.cookie") == "", "the page's script cannot read the session cookie")

    # Create a key, use it, revoke it.
    nav(page, "API keys")
    page.get_by_role("heading", name="API keys").wait_for()
    for box in page.get_by_role("checkbox").all():
        box.set_checked(box.get_attribute("value") == "contacts:read")
    page.get_by_role("button", name="Create key").click()
    key = page.locator("#new-key-value").inner_text().strip()
    check(key.startswith("sbk_"), "a new key is shown once")
    status, _ = http("GET", f"{base}/api/v1/contacts?businessId={business}", key)
    check(status == 200, "the new key reads contacts over plain HTTP")
    status, body = http("POST", f"{base}/api/v1/contacts/categories", key, {"businessId": business, "name": "Nope"})
    check(status == 403 and body["error"]["code"] == "missing_scope", "the key has only the scopes chosen")
    nav(page, "Overview")
    nav(page, "API keys")
    page.get_by_role("heading", name="API keys").wait_for()
    page.locator("table tbody tr").first.wait_for()
    check(key not in page.content(), "after leaving the page the key is gone from it")
    check(f"sbk_…{key[-4:]}" in page.locator("table").first.inner_text(), "the list shows only the key's last characters")
    page.once("dialog", lambda d: d.accept())
    page.get_by_role("button", name=f"Revoke key sbk_…{key[-4:]}").click()
    page.get_by_text("Key revoked.").wait_for()
    status, body = http("GET", f"{base}/api/v1/contacts?businessId={business}", key)
    check(status == 401, "the revoked key is refused at once")

    # Import a CSV and watch it finish.
    nav(page, "Contacts")
    page.get_by_role("heading", name="Import a CSV").wait_for()
    page.get_by_label("…or a new category named").fill("Imported")
    page.get_by_role("button", name="Import").click()
    page.locator("#err-csv", has_text="Choose a CSV file.").wait_for()
    check(True, "an import without a file asks for one")
    people = "mobile,name,city\n+14155550101,Ana,Lisbon\n+14155550102,Bo,Porto\n+14155550103,Cy,Faro\nnot-a-mobile,Dee,Braga\n"
    page.get_by_label("CSV file (a header row; a mobile column)").set_input_files(
        {"name": "people.csv", "mimeType": "text/csv", "buffer": people.encode()})
    page.get_by_role("button", name="Import").click()
    result = page.locator("#import-result")
    result.filter(has_text="Import finished").wait_for()
    text = result.inner_text()
    check("4 rows, 3 created, 0 merged, 1 failed" in text and "row 5" in text, f"the import finished and says what failed: {text!r}")
    import_form = page.locator("form", has=page.get_by_role("heading", name="Import a CSV"))
    stale = import_form.locator(".form-error, .field-error").all_inner_texts()
    check(not "".join(stale).strip(), f"after a successful import no error is left ({stale})")
    check(page.get_by_label("Into category").evaluate("(s) => s.selectedOptions[0] && s.selectedOptions[0].text") == "Imported",
          "the new category is a choice of Into category at once")
    bar = page.locator("#import-progress").bounding_box()
    out = result.bounding_box()
    check(bar["y"] + bar["height"] <= out["y"], "the progress bar has a line of its own, above the result")

    # Search by name, and by a number.
    page.get_by_label("Search by name or mobile").fill("ana")
    page.get_by_role("button", name="Search").click()
    page.locator("#contact-list").get_by_text("Bo", exact=True).wait_for(state="detached")
    listed = page.locator("#contact-list tbody a").all_inner_texts()
    check(listed == ["Ana"], f"a name search finds the contact ({listed})")
    page.get_by_label("Search by name or mobile").fill("+1415555010")
    page.get_by_role("button", name="Search").click()
    page.locator("#contact-list").get_by_role("link", name="Bo").wait_for()
    check(page.locator("#contact-list tbody a").count() == 3, "a number search finds the contacts whose mobile starts with it")
    check("pattern" not in page.locator("main").inner_text(), "no search answers with a regular expression")
    # A question from Ana before the page opens: the reply goes below it.
    status, _ = http("POST", f"{base}/sandbox/v1/chatapp/inbound", admin_key, {"phoneNumberId": "pn-browser", "from": "+14155550101", "text": "Is my order ready?"})
    check(status == 202, "Ana writes in")
    page.get_by_role("link", name="Ana").wait_for()
    page.get_by_role("link", name="Ana").click()
    page.get_by_role("heading", name="Ana").wait_for()
    main_text = page.locator("main").inner_text()
    check("Lisbon" in main_text, f"a contact's page shows its fields: {main_text!r}")
    # Message the contact from its page and watch the delivery state move;
    # a double click sends once.
    contact_id = page.url.rsplit("/", 1)[1]
    page.locator("#timeline li", has_text="Is my order ready?").wait_for()
    page.get_by_label("Message").fill("Hello Ana, your order is ready.")
    page.get_by_role("button", name="Send").dblclick()
    page.locator(".message-state", has_text=": read").first.wait_for()
    check(True, "a message sent from a contact's page is followed to read")
    check(not "".join(page.locator("main .form-error").all_inner_texts()).strip(), "a successful send leaves no error")
    _, t = http("GET", f"{base}/api/v1/contacts/{contact_id}/timeline?businessId={business}", admin_key)
    sent = [x for x in t["data"]["entries"] if (x.get("summary") or {}).get("text") == "Hello Ana, your order is ready."]
    check(len(sent) == 1, f"a double click on Send sends one message ({len(sent)})")
    page.locator("#timeline li", has_text="your order is ready").wait_for()
    turns = page.locator("#timeline li").all()
    check(len(turns) == 2 and "Is my order ready?" in turns[0].inner_text() and "your order is ready" in turns[1].inner_text(),
          "the timeline updates after a send and reads as a conversation: the question above its reply")
    check(turns[0].get_attribute("data-direction") == "inbound" and turns[1].get_attribute("data-direction") == "outbound"
          and turns[0].bounding_box()["x"] < turns[1].bounding_box()["x"], "inbound and outbound turns are told apart")
    nav(page, "Inbox")
    page.get_by_role("link", name="New message").click()
    page.get_by_label("To (a mobile number)").fill("+14155550000")
    page.get_by_label("Message").fill("Hello?")
    page.get_by_role("button", name="Send").click()
    state = page.locator(".message-state", has_text="failed")
    state.wait_for()
    check("+14155550000" in state.inner_text(), f"an undeliverable message shows its failure: {state.inner_text()!r}")
    check("request failed" not in page.locator("main").inner_text(), "a successful send does not say the request failed")
    page.get_by_label("To (a mobile number)").fill("not a number")
    page.get_by_role("button", name="Send").click()
    page.locator("#err-to").wait_for()
    check(True, "a bad recipient is named next to its field")

    # Test an agent through three turns.
    # A data source: create, upload a file with progress, review its columns, activate.
    nav(page, "Data sources")
    page.get_by_label("Name").fill("Customers")
    page.get_by_role("button", name="Create data source").dblclick()
    page.get_by_role("heading", name="Upload a new version").wait_for()
    _, d = http("GET", f"{base}/api/v1/data-sources?businessId={business}&limit=200", admin_key)
    made = [x for x in d["data"]["dataSources"] if x["name"] == "Customers"]
    check(len(made) == 1, f"a double click on Create data source creates one ({len(made)})")
    rows = "".join(f"C{i},0{i:04d},03/04/2024\n" for i in range(1, 400))
    page.get_by_label("File (CSV, TSV, JSON, XLSX or XLSM)").set_input_files(
        {"name": "customers.csv", "mimeType": "text/csv", "buffer": ("name,zip,joined\n" + rows).encode()})
    page.get_by_role("button", name="Upload").click()
    page.get_by_role("button", name="Activate this version").wait_for()
    check(page.evaluate("document.getElementById('upload-progress').value") == 1, "the upload's progress reached the end")
    stage = page.locator("#ingestion-stage").inner_text()
    check("needs review" in stage and "399 rows" in stage, f"the version waits for review: {stage!r}")
    check(page.get_by_label("zip", exact=False).input_value() == "text", "ambiguous columns come with the suggested type")
    page.get_by_role("button", name="Activate this version").click()
    page.locator("#ingestion-stage", has_text="Stage: active").wait_for()
    check(True, "the reviewed version becomes active")
    page.locator("#source-items", has_text="399").wait_for()
    check("needs review" not in page.locator("main").inner_text(), "after activation the page shows the new item count and no stale review")
    http("POST", f"{base}/api/v1/data-sources", admin_key, {"businessId": business, "name": "Hours", "class": "unstructured", "kind": "text", "content": "Open 9 to 5."})
    nav(page, "Data sources")
    page.locator("main tbody tr", has_text="Hours").wait_for()
    cells = {r.locator("td").first.inner_text(): r.locator("td").last.inner_text() for r in page.locator("main tbody tr").all()}
    check(cells.get("Customers") == "an activated upload" and cells.get("Hours") != "no" and cells.get("Contacts") != "no",
          f"what answers for each source is said truly ({cells})")

    # Create an agent in the browser: the server's validation error appears next to its field.
    nav(page, "Agents")
    page.get_by_role("link", name="New agent").click()
    page.get_by_label("Name").fill("Desk")
    page.get_by_label("Instructions").fill("Answer questions about opening hours.")
    page.get_by_label("Language (a tag such as en or pt-BR)").fill("not a tag!")
    page.get_by_label("Name").fill("")
    page.get_by_role("button", name="Create agent").click()
    page.locator("#err-languageCode").wait_for()
    shown = page.locator("main .field-error, main .form-error li").all_inner_texts()
    text = page.locator("main form").inner_text()
    check(len(shown) >= 2 and "more problem" not in text, f"every problem is shown, none only counted ({shown})")
    check("^" not in text and "pattern" not in text, f"validation messages say the rule in words ({shown})")
    page.get_by_label("Name").fill("Desk")
    error = page.locator("#err-languageCode")
    check(page.get_by_label("Language (a tag such as en or pt-BR)").get_attribute("aria-invalid") == "true",
          f"a server validation error is shown next to its field: {error.inner_text()!r}")
    page.get_by_label("Language (a tag such as en or pt-BR)").fill("en")
    page.get_by_role("button", name="Create agent").dblclick()
    page.get_by_role("heading", name="Test Desk").wait_for()
    _, d = http("GET", f"{base}/api/v1/agents?businessId={business}&limit=200", admin_key)
    made = [x for x in d["data"]["agents"] if x["name"] == "Desk"]
    check(len(made) == 1, f"a double click on Create agent creates one ({len(made)})")
    check(True, "the agent is created and opens in its test chat")
    for i, said in enumerate(["Are you open on Sunday?", "And on Monday?", "Thanks!"], start=1):
        page.get_by_label("Say something as the customer would").fill(said)
        page.get_by_role("button", name="Send").click()
        page.wait_for_function("n => document.querySelectorAll('.turn.assistant.done').length === n", arg=i, timeout=WAIT_MS)
    turns = page.locator(".turn").all_inner_texts()
    check(len(turns) == 6 and "Thanks!" in turns[4], "three turns and three replies are shown")
    check("request failed" not in page.locator("main").inner_text(), "no error is shown after successful sends")
    agent_test = page.url.split("/console/", 1)[1]
    check(all(t.strip() for t in turns), "every reply has text")
    page.once("dialog", lambda d: d.accept())
    page.get_by_role("button", name="Reset conversation").click()
    page.get_by_text("Conversation reset.").wait_for()
    check(page.locator(".turn").count() == 0, "a reset empties the conversation")

    # Channels: assign the agent to the connected number.
    nav(page, "Channels")
    form = page.get_by_role("form", name="Assignment of Front desk")
    form.get_by_label("Agent").select_option(label="Desk")
    form.get_by_label("auto-reply").check()
    squashed = one_line(page, "main label.check")
    check(not squashed, f"checkbox labels stay on one line ({squashed})")
    form.get_by_role("button", name="Save").click()
    page.get_by_text("Assignment saved.").wait_for()
    _, a = http("GET", f"{base}/api/v1/channels/assignments?businessId={business}&channel=chatapp&phoneNumberId=pn-browser", admin_key)
    check(a["data"]["autoReplyEnabled"] and a["data"]["aiAgentId"], "the assignment is saved through the API")

    # Provider adapters: messages of this business go through a loaded
    # plugin, with a secret setting that never comes back.
    form = page.get_by_role("form", name="Adapter for messenger")
    form.get_by_label("Messages go through").select_option(label="acme-messenger 0.1.0")
    form.get_by_label("api-token (required) (secret)").fill("browser-secret-7788")
    form.get_by_role("button", name="Save").click()
    page.get_by_text("Adapter saved.").wait_for()
    page.get_by_text("Now: plugin acme-messenger").wait_for()
    shown = admin(data_dir(), "provider", "show", "--business", business)
    check(shown["providers"][0].get("plugin") == "acme-messenger" and shown["providers"][0]["settings"]["api-token"] == "(set)",
          "the business's messenger plugin is chosen, its secret stored")
    check("browser-secret-7788" not in page.content(), "the secret is not shown again")
    form = page.get_by_role("form", name="Adapter for messenger")
    form.get_by_label("Messages go through").select_option(label="embedded sandbox")
    form.get_by_role("button", name="Save").click()
    page.get_by_text("Now: embedded sandbox").first.wait_for()

    # Webhooks: subscribe (secret shown once), a delivery, its log, redeliver.
    # A subscription with a long callback URL must not widen the page.
    status, d = http("POST", f"{base}/api/v1/webhook-subscriptions", admin_key, {"businessId": business, "channel": "chatapp", "phoneNumberId": "pn-browser",
                     "callbackUrl": receiver.url + "/" + "a-very-long-path-segment" * 6 + "?tenant=0123456789abcdef0123456789abcdef", "externalAutomation": True,
                     "events": ["chatapp.message.received", "chatapp.message.delivered", "chatapp.message.read"]})
    check(status == 201, f"a second subscription ({status} {d})")
    nav(page, "Webhooks")
    page.get_by_role("heading", name="Webhooks").wait_for()
    page.locator("main tbody tr").first.wait_for()
    wide = page.evaluate("document.documentElement.scrollWidth")
    check(wide <= 1280, f"the webhooks page fits 1280 px ({wide} px)")
    page.get_by_label("Callback URL").fill(receiver.url)
    page.get_by_role("checkbox", name="chatapp.message.received").check()
    page.get_by_role("button", name="Create subscription").click()
    page.locator("#err-externalAutomation").wait_for()
    check(True, "the contract's external-automation rule is explained next to its box")
    page.get_by_role("checkbox", name="external automation", exact=False).check()
    page.get_by_role("button", name="Create subscription").click()
    page.locator("#secret-value").wait_for()
    secret = page.locator("#secret-value").inner_text().strip()
    check(secret.startswith("whsec_"), "the signing secret is shown once")
    status, d = http("POST", f"{base}/sandbox/v1/chatapp/inbound", admin_key,
                     {"phoneNumberId": "pn-browser", "from": "+14155550199", "text": "Hello there"})
    check(status == 202, f"an inbound message ({status} {d})")
    receiver.wait_for(2)  # one per subscription
    page.get_by_role("link", name="Deliveries").first.click()
    page.get_by_role("heading", name="Delivery log").wait_for()
    page.get_by_role("cell", name="delivered (200)").wait_for()
    page.get_by_role("button", name="Redeliver", exact=False).first.click()
    page.get_by_text("Sent again", exact=False).wait_for()
    receiver.wait_for(3)
    check(True, "a logged event is delivered again from the console")
    nav(page, "Webhooks")
    page.get_by_role("heading", name="Webhooks").wait_for()
    check(secret not in page.content(), "the secret is gone from the page afterwards")

    # A call's report: its transcript and its recording, played from a signed link.
    call = voice["call"]
    nav(page, "Calls")
    page.get_by_label("Status").select_option("completed")
    page.get_by_label("Ended by").select_option("operator")
    page.get_by_role("button", name="Filter").click()
    page.get_by_text("No calls.").wait_for()
    check(True, "filters narrow the call list (no call ended by an operator)")
    page.get_by_label("Ended by").select_option("customer")
    page.get_by_label("Agent", exact=True).select_option(label="Caller")
    page.get_by_role("button", name="Filter").click()
    page.get_by_role("link", name=voice["callee"]).click()
    page.get_by_role("heading", name=f"Call to {voice['callee']}").wait_for()
    page.wait_for_function("() => { const a = document.getElementById('recording'); return a && a.readyState >= 1; }", timeout=WAIT_MS)
    duration = page.evaluate("document.getElementById('recording').duration")
    check(duration > 0, f"the call's recording loads in the player ({duration:.1f} s)")
    check(page.locator("main ol li").count() > 0, "the call's transcript is shown")
    with page.expect_download() as dl:
        page.get_by_role("link", name="Download the transcript").click()
    with open(dl.value.path(), encoding="utf-8") as f:
        check(len(f.read()) > 0, "the transcript downloads")
    status, _ = http("GET", f"{base}/api/v1/voice/calls/{call}?businessId={business}")
    check(status == 401, "the report itself needs a session or a key")

    # A campaign: progress, a summary estimate, its confirmation, the export.
    nav(page, "Campaigns")
    page.get_by_role("link", name="Renewals").click()
    page.get_by_role("heading", name="Renewals").wait_for()
    check("2 of 2 members done" in page.locator("main").inner_text(), "the iteration's progress is shown")
    page.get_by_role("button", name="Estimate a summary run").click()
    confirm = page.get_by_role("button", name="Confirm", exact=False)
    confirm.wait_for()
    page.get_by_role("button", name="Confirm", exact=False).click()
    page.get_by_text("Summary run confirmed.").wait_for()
    page.locator("td.run-status", has_text="completed").wait_for()
    with page.expect_download() as dl:
        page.get_by_role("link", name="Export CSV").click()
    with open(dl.value.path(), encoding="utf-8") as f:
        rows = list(csv.reader(f))
    check(rows[0][:3] == ["Contact", "AI Summary", "Next Action"] and len(rows) == 3, f"the export has one row per contact: {rows}")
    squashed = one_line(page, "main label.check")
    check(not squashed, f"the follow-up's radios and boxes keep their labels on one line ({squashed})")
    page.get_by_label("Agent (its channel is the iteration's)").select_option(label="Caller (Voice calls)")
    page.get_by_role("checkbox", name="completed").check()
    page.get_by_role("button", name="Create follow-up").click()
    page.get_by_text("Follow-up created with 2 members", exact=False).wait_for()
    page.get_by_role("button", name="Start").wait_for()
    check(page.locator("main table").first.locator("tbody tr").count() == 2, "a follow-up iteration of the completed members is created as a draft")

    # Credits: the balance and the ledger the calls and the run moved.
    nav(page, "Credits")
    page.get_by_role("heading", name="Ledger").wait_for()
    _, c = http("GET", f"{base}/api/v1/credits?businessId={business}&limit=200", admin_key)
    shown = page.locator("#credits-available").inner_text()
    value = float(shown.replace(",", "").replace(" credits", ""))
    check(abs(value - c["data"]["availableMicrocredits"] / 1e6) < 1e-6, f"the balance is shown ({shown})")
    ledger = page.locator("#ledger").inner_text()
    check("+0 " not in ledger and "−0 " not in ledger, f"the ledger hides movements of zero credits ({ledger!r})")
    check(not re.search(r"[0-9a-f]{8}-[0-9a-f]{4}-", ledger), "the ledger shows no bare ids")
    what = page.locator("#ledger tbody td:nth-child(2)").all_inner_texts()
    calls = page.locator("#ledger tbody a[href^='#/calls/']").count()
    check(calls == 3 and len(what) == 5 and "Credits added" in what and any("AI summary run of Renewals" in w for w in what),
          f"one row per call or run, linked to it, and the grant ({what})")
    page.locator("#ledger a[href^='#/calls/']").first.click()
    page.get_by_role("heading", name="Call to", exact=False).wait_for()
    check(True, "a ledger row opens its call")
    charts_show_the_api_figures(page, base, business, admin_key, voice)

    # A phone-sized screen: nothing is wider than it.
    # The two checks below can fail: a faint text and a bare input are caught.
    page.evaluate("""() => { const p = document.createElement('p'); p.id = 'probe'; p.style.color = '#bbb';
        p.textContent = 'faint'; const i = document.createElement('input'); i.id = 'probe-input';
        document.getElementById('main').append(p, i); }""")
    check(any("faint" in x for x in page.evaluate(LOW_CONTRAST)) and page.evaluate(UNLABELED_CONTROLS),
          "the contrast and label checks catch a faint text and a bare input")
    page.evaluate("() => { document.getElementById('probe').remove(); document.getElementById('probe-input').remove(); }")
    # axe-core (every page of sweep()) catches a button without a name.
    page.evaluate("() => { const b = document.createElement('button'); b.id = 'probe-button'; document.getElementById('main').append(b); }")
    found = axe_violations(page)
    check(any("button-name" in v for v in found), f"axe-core catches a button without a name ({found})")
    page.evaluate("() => document.getElementById('probe-button').remove()")
    # Every page at both widths (the campaign's current iteration is now a
    # draft follow-up): see sweep().
    routes = ["#/", "#/keys", "#/contacts", f"#/contacts/{contact_id}", "#/messages", "#/data-sources", "#/agents", agent_test, "#/channels",
              "#/webhooks", "#/calls", f"#/calls/{voice['call']}", "#/campaigns", f"#/campaigns/{voice['campaign']}", "#/credits"]
    sweep(page, base, routes, 1280)
    sweep(page, base, routes, 375)
    # Dark mode (the system's setting): the same checks, axe's contrast rule included.
    sweep(page, base, routes, 375, dark=True)
    for route in routes:
        page.goto("about:blank")
        page.goto(f"{base}/console/{route}")
        page.locator("main h1").wait_for()
        unlabeled = page.evaluate(UNLABELED_CONTROLS)
        check(not unlabeled, f"{route}: every control has a label ({unlabeled})")
        low = page.evaluate(LOW_CONTRAST)
        check(not low, f"{route}: text contrast is at least 4.5:1 ({low[:5]})")

    # On a phone the sections are behind a Menu button.
    check(not page.get_by_role("navigation").is_visible() and page.locator("#menu").is_visible(), "at 375 px the sections fold behind Menu")
    page.locator("#menu").click()
    page.get_by_role("navigation").get_by_role("link", name="Agents", exact=True).click()
    page.get_by_role("heading", name="Agents").wait_for()
    check(not page.get_by_role("navigation").is_visible(), "the menu opens, leads to a section and closes")

    # A viewer: every page at both widths, offered nothing it may not do.
    vpage = other_session(page, base, "viewer@example.com")
    vpage.goto(f"{base}/console/{agent_test}")
    vpage.get_by_role("heading", name="Test Desk").wait_for()
    check(vpage.get_by_label("Say something as the customer would").count() == 0, "a viewer is offered no Send form on Agent test")
    sweep(vpage, base, routes, 1280, viewer=True)
    sweep(vpage, base, routes, 375, viewer=True)
    vpage.context.close()

    # Keyboard: the skip link is the first stop.
    page.set_viewport_size({"width": 1280, "height": 800})
    page.reload()
    page.locator("main h1").wait_for()
    page.keyboard.press("Tab")
    check(page.evaluate("document.activeElement.textContent") == "Skip to content", "the first Tab reaches the skip link")
    page.keyboard.press("Tab")
    page.keyboard.press("Tab")
    page.keyboard.press("Enter")
    page.get_by_role("heading", name="Contacts", exact=True).wait_for()
    check(True, "the sections are reached with the keyboard")

    page.get_by_role("button", name="Log out").click()
    page.get_by_role("heading", name="Log in").wait_for()
    status, _ = http("GET", f"{base}/console/api/session")
    check(status == 401, "logged out")


def chart(page, title):
    """A chart as drawn: its labels and series (from the Chart.js instance on
    its canvas), whether the canvas has a size, and its figures table."""
    figure = page.locator(f"figure.chart[data-chart=\"{title}\"]")
    figure.locator("canvas").wait_for()
    return figure.evaluate("""(f) => { const c = f.querySelector('canvas'); const ch = Chart.getChart(c);
      return { drawn: !!ch && c.width > 0 && c.height > 0, labels: ch ? ch.data.labels : [],
               series: ch ? Object.fromEntries(ch.data.datasets.map((d) => [d.label, d.data])) : {},
               figures: [...f.querySelectorAll('tbody tr')].map((r) => [...r.children].map((x) => x.textContent)) }; }""")


def charts_show_the_api_figures(page, base, business, admin_key, voice):
    """The overview, campaign and credits charts draw the figures the API
    answers (operations 67-69 and the campaign's iterations)."""
    stats = {what: http("GET", f"{base}/api/v1/stats/{what}?businessId={business}&days=14", admin_key)[1]["data"] for what in ("messages", "calls", "credits")}
    nav(page, "Overview")
    page.get_by_role("heading", name="Browser Co").wait_for()
    m = chart(page, "Messages per day")
    check(m["drawn"] and len(m["labels"]) == 14 and m["series"] == {"Received": [d["inbound"] for d in stats["messages"]["days"]], "Sent": [d["outbound"] for d in stats["messages"]["days"]]}
          and sum(m["series"]["Sent"]) >= 1, f"the overview charts messages per day as the API counts them ({m['series']})")
    o = chart(page, "Delivery of messages sent")
    check(o["drawn"] and dict(zip(o["labels"], o["series"]["Messages"])) == {x["status"].replace("_", " "): x["count"] for x in stats["messages"]["outcomes"]},
          f"and their delivery outcomes ({o['labels']} {o['series']})")
    c = chart(page, "Calls per day")
    check(c["drawn"] and c["series"]["Calls"] == [d["calls"] for d in stats["calls"]["days"]] and c["series"]["Calls"][-1] == 3,
          f"calls per day: the three of this test today ({c['series']})")
    spend = chart(page, "Spend per day (credits)")
    check(spend["drawn"] and spend["series"]["Spent"] == [d["chargedMicrocredits"] / 1e6 for d in stats["credits"]["days"]] and spend["series"]["Spent"][-1] > 0,
          f"spend per day in credits ({spend['series']})")
    check(spend["figures"][-1][1] == f"{stats['credits']['days'][-1]['chargedMicrocredits'] / 1e6:g}", f"the figures table under a chart says the same ({spend['figures'][-1]})")
    page.get_by_label("Period", exact=True).select_option("7")
    page.get_by_role("button", name="Filter").click()
    page.wait_for_function("""() => { const c = document.querySelector('figure.chart canvas'); const ch = c && Chart.getChart(c);
      return !!ch && ch.data.labels.length === 7; }""")
    check(True, "a shorter period redraws the charts with its days")

    _, its = http("GET", f"{base}/api/v1/campaigns/{voice['campaign']}/iterations?businessId={business}&limit=200", admin_key)
    page.goto(f"{base}/console/#/campaigns/{voice['campaign']}")
    k = chart(page, "Outcomes per iteration")
    first = next(it for it in its["data"]["iterations"] if it["sequence"] == 1)["counts"]
    check(k["drawn"] and len(k["labels"]) == 2 and k["series"].get("completed", [None])[0] == first["completed"] == 2,
          f"the campaign charts its outcomes per iteration ({k['labels']} {k['series']})")

    nav(page, "Credits")
    b = chart(page, "Balance at each day's end (credits)")
    _, month = http("GET", f"{base}/api/v1/stats/credits?businessId={business}&days=30", admin_key)
    check(b["drawn"] and len(b["labels"]) == 30 and b["series"]["Balance"] == [d["balanceMicrocredits"] / 1e6 for d in month["data"]["days"]] and b["series"]["Balance"][-1] > 0,
          f"the credits page charts the balance over 30 days ({b['series']['Balance'][-3:]})")


def main():
    drive(run, "browser tests (console.py)")


if __name__ == "__main__":
    main()
