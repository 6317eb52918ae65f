#!/usr/bin/env python3
"""Everyday tasks in the console, without the command line (issue 39,
build point 2), driven in Debian's chromium against the real binary (see
support.drive): each task done once in the browser and verified over the
API, a double click submitting once, validation messages in words as you
type, a viewer offered none of these actions, and every page touched here
swept at 1280 and 375 px (support.sweep).

Contacts: create, search by name (the list's server-side `name`), bulk
category and block, edit with fields, delete, categories. Calls: from a
contact and from an agent. Agents: the full form (category scope, a
declared variable, voice settings, channel assignment) and archive.
Campaigns: create with an audience of contacts or of categories and read
the admission. Channels: connect a sandbox number; voice lines, prices and
a credit top-up.
Usage: tests/browser/tasks.py [BINARY]
"""
import re

from support import *  # noqa: F401,F403 (the helpers and checks this script drives the pages with)


def api_get(base, key, path):
    status, d = http("GET", f"{base}{path}", key)
    assert status == 200, (path, status, d)
    return d["data"]


def contacts_named(base, key, business, name):
    return [c for c in api_get(base, key, f"/api/v1/contacts?businessId={business}&limit=200")["contacts"] if c["name"] == name]


def calls_to(base, key, business, number):
    return [c for c in api_get(base, key, f"/api/v1/voice/calls?businessId={business}&limit=200")["calls"] if c["calleeNumber"] == number]


def no_regex(text):
    """A validation message says its rule in words, never a pattern."""
    return not re.search(r"\^|\$|\[0-9\]|\\[dsS+]|\{[0-9]+,[0-9]+\}|pattern", text)


def run(page, base, business, key, voice, receiver):
    page.set_default_timeout(WAIT_MS)
    login(page, base, "owner@example.com")
    renewals = [c for c in api_get(base, key, f"/api/v1/contacts/categories?businessId={business}&limit=200")["categories"] if c["name"] == "Renewals"][0]["id"]

    # ---- contacts ------------------------------------------------------------------
    nav(page, "Contacts")
    form = page.locator("#new-contact")
    form.wait_for()
    form.get_by_label("Mobile").fill("+1")
    error = page.locator("#err-mobile")
    error.wait_for()
    check("international form" in error.inner_text() and no_regex(error.inner_text()),
          f"a mobile is checked as it is typed, in words ({error.inner_text()!r})")
    form.get_by_label("Name", exact=True).fill("x" * 201)
    page.locator("#err-name").filter(has_text="at most 200 characters").wait_for()
    check(True, "a name over the document's maxLength is flagged as it is typed")
    form.get_by_label("Name", exact=True).fill("Zed Tasks")
    check(page.locator("#err-name").count() == 0, "a fixed field loses its message")
    form.get_by_label("Mobile").fill("+15550404001")
    form.get_by_role("checkbox", name="Renewals").check()
    # Custom fields as fields: a new one's name, then its value.
    for n, (name, value) in enumerate([("city", "Porto"), ("plan", "gold")], 1):
        form.get_by_role("button", name="Add a field").click()
        form.locator(f"#nc-nf-{n}-key").fill(name)
        form.locator(f"#nc-nf-{n}-value").fill(value)
    form.get_by_role("button", name="Create contact").dblclick()
    page.get_by_text("Contact Zed Tasks created.").wait_for()
    made = contacts_named(base, key, business, "Zed Tasks")
    check(len(made) == 1 and made[0]["fields"] == {"city": "Porto", "plan": "gold"} and made[0]["categories"][0]["id"] == renewals,
          f"a double click on Create contact creates one, with its fields and category ({made})")
    zed = made[0]["id"]

    # A category, created in the page.
    page.get_by_label("New category", exact=True).fill("Tasks VIP")
    page.get_by_role("button", name="Add category").click()
    page.get_by_role("button", name="Delete category Tasks VIP").wait_for()
    cats = api_get(base, key, f"/api/v1/contacts/categories?businessId={business}&limit=200")["categories"]
    check(any(c["name"] == "Tasks VIP" for c in cats), "a category is created from the page")

    # A name search is the server's (the list's `name` parameter).
    with page.expect_response(lambda r: "/api/v1/contacts?" in r.url and "name=zed" in r.url) as searched:
        page.get_by_label("Search by name or mobile").fill("zed")
        page.get_by_role("button", name="Search").click()
    check(searched.value.status == 200, "a name search asks the server (name=zed)")
    page.locator("#contact-list").get_by_role("link", name="Bo").wait_for(state="detached")
    listed = page.locator("#contact-list tbody a").all_inner_texts()
    check(listed == ["Zed Tasks"], f"the name search lists the contact ({listed})")

    # Bulk: add the ticked contacts to a category, then block them.
    page.get_by_role("checkbox", name="Select Zed Tasks").check()
    bulk = page.locator("#bulk")
    bulk.get_by_label("Action").select_option("category")
    bulk.get_by_label("Category (to add to)").select_option(label="Tasks VIP")
    bulk.get_by_role("button", name="Apply").click()
    page.get_by_text("1 updated.").wait_for()
    c = api_get(base, key, f"/api/v1/contacts/{zed}?businessId={business}")["contact"]
    check(sorted(x["name"] for x in c["categories"]) == ["Renewals", "Tasks VIP"], f"a bulk action adds the ticked contact to a category ({c['categories']})")
    page.get_by_role("checkbox", name="Select Zed Tasks").check()
    bulk.get_by_label("Action").select_option("block")
    bulk.get_by_role("button", name="Apply").click()
    page.locator("#contact-list td", has_text="blocked").wait_for()
    c = api_get(base, key, f"/api/v1/contacts/{zed}?businessId={business}")["contact"]
    check(c["communicationBlocked"] is True, "a bulk action blocks the ticked contact")

    # Edit: name, fields (one removed, one changed), unblock.
    page.goto(f"{base}/console/#/contacts/{zed}")
    edit = page.locator("#edit-contact")
    edit.wait_for()
    edit.get_by_label("Name", exact=True).fill("Zed Tasked")
    edit.get_by_label("city", exact=True).fill("Braga")
    edit.get_by_label("plan", exact=True).fill("")
    edit.get_by_label("Blocked", exact=False).uncheck()
    edit.get_by_role("button", name="Save contact").click()
    page.get_by_role("heading", name="Zed Tasked").wait_for()
    c = api_get(base, key, f"/api/v1/contacts/{zed}?businessId={business}")["contact"]
    check(c["name"] == "Zed Tasked" and c["fields"] == {"city": "Braga"} and c["communicationBlocked"] is False,
          f"an edit saves the name, the fields and the unblock ({c})")

    # A call from the contact's page (a double click places one).
    call = page.locator("#start-call")
    call.get_by_label("Voice agent").select_option(label="Caller")
    call.get_by_role("button", name="Call now").dblclick()
    page.get_by_role("heading", name="Call to Zed Tasked").wait_for()
    placed = calls_to(base, key, business, "+15550404001")
    check(len(placed) == 1, f"a double click on Call now starts one call to the contact ({len(placed)})")

    # Delete a contact from its page.
    status, d = http("POST", f"{base}/api/v1/contacts", key, {"businessId": business, "name": "Del Me", "mobile": "+15550404002", "categoryIds": [renewals]})
    gone = d["data"]["contact"]["id"]
    page.goto(f"{base}/console/#/contacts/{gone}")
    page.get_by_role("heading", name="Del Me").wait_for()
    page.once("dialog", lambda dlg: dlg.accept())
    page.get_by_role("button", name="Delete this contact").click()
    page.get_by_role("heading", name="Contacts", exact=True).wait_for()
    status, _ = http("GET", f"{base}/api/v1/contacts/{gone}?businessId={business}", key)
    check(status == 404, "a contact is deleted from its page")

    # Delete a category, typing its name as the API asks.
    page.once("dialog", lambda dlg: dlg.accept("Tasks VIP"))
    page.get_by_role("button", name="Delete category Tasks VIP").click()
    page.get_by_text("Category deleted.").wait_for()
    cats = api_get(base, key, f"/api/v1/contacts/categories?businessId={business}&limit=200")["categories"]
    check(not any(c["name"] == "Tasks VIP" for c in cats), "a category is deleted after its name is typed")

    # ---- agents ---------------------------------------------------------------------
    page.goto(f"{base}/console/#/agents/new")
    form = page.locator("#agent-form")
    form.wait_for()
    form.get_by_label("Channel").select_option("voice")
    form.get_by_label("Name", exact=True).fill("Full Agent")
    form.get_by_label("Instructions").fill("Remind the customer of the renewal.")
    form.get_by_label("Background noise level", exact=False).fill("55")
    page.locator("#err-voiceSettings-backgroundNoiseLevelPercent").filter(has_text="multiple of 50").wait_for()
    check(no_regex(page.locator("#err-voiceSettings-backgroundNoiseLevelPercent").inner_text()), "a voice setting is checked as it is typed, in words")
    form.get_by_label("Background noise level", exact=False).fill("100")
    form.get_by_label("First greeting", exact=False).fill("Hello, this is a renewal reminder.")
    form.get_by_label("Voice gender").select_option("female")
    form.get_by_label("The caller may interrupt the greeting").check()
    form.get_by_role("group", name="Contact categories it serves", exact=False).get_by_role("checkbox", name="Renewals").check()
    variables = form.get_by_role("button", name="Add a variable")
    declared = variables.count()
    check(declared == 1, "the built-in Contacts source offers its fields as variables")
    if declared:
        variables.click()
        form.get_by_label("as {{alias}}").fill("who")
    form.get_by_role("button", name="Create agent").dblclick()
    page.get_by_role("heading", name="Test Full Agent").wait_for()
    made = [a for a in api_get(base, key, f"/api/v1/agents?businessId={business}&limit=200")["agents"] if a["name"] == "Full Agent"]
    check(len(made) == 1, f"a double click on Create agent creates one ({len(made)})")
    a = made[0]
    vs = a["voiceSettings"] or {}
    check(vs.get("backgroundNoiseLevelPercent") == 100 and vs.get("agentGender") == "female" and vs.get("allowGreetingInterrupt") is True
          and vs.get("firstGreeting") == "Hello, this is a renewal reminder." and a["contactCategoryIds"] == [renewals]
          and len(a["dataSourceVariables"]) == declared, f"the agent has its voice settings, category scope and variables ({a})")

    # A call from an agent's page, to a typed number (checked as typed).
    page.goto(f"{base}/console/#/agents/{voice_agent(base, key, business)}")
    call = page.locator("#start-call")
    call.wait_for()
    call.get_by_label("…or a number to call").fill("555")
    page.locator("#err-toNumber").wait_for()
    check(no_regex(page.locator("#err-toNumber").inner_text()), "a number to call is checked as it is typed, in words")
    call.get_by_label("…or a number to call").fill("+15550404999")
    call.get_by_role("button", name="Call now").dblclick()
    page.get_by_role("heading", name="Call to +15550404999").wait_for()
    check(len(calls_to(base, key, business, "+15550404999")) == 1, "a double click on Call now from an agent starts one call")

    # Edit the agent (a full replacement keeps what the form shows), then archive it.
    page.goto(f"{base}/console/#/agents/{a['id']}")
    form = page.locator("#agent-form")
    form.get_by_label("Instructions").fill("Remind the customer of the renewal, politely.")
    form.get_by_role("button", name="Save").click()
    page.get_by_role("heading", name="Test Full Agent").wait_for()
    a2 = [x for x in api_get(base, key, f"/api/v1/agents?businessId={business}&limit=200")["agents"] if x["id"] == a["id"]][0]
    check(a2["instructions"].endswith("politely.") and (a2["voiceSettings"] or {}).get("backgroundNoiseLevelPercent") == 100 and a2["contactCategoryIds"] == [renewals],
          "an edit saves the change and keeps the rest")
    page.goto(f"{base}/console/#/agents/{a['id']}")
    page.once("dialog", lambda dlg: dlg.accept())
    page.get_by_role("button", name="Archive this agent").click()
    page.get_by_role("heading", name="Agents", exact=True).wait_for()
    a3 = [x for x in api_get(base, key, f"/api/v1/agents?businessId={business}&limit=200")["agents"] if x["id"] == a["id"]][0]
    check(a3["status"] == "archived", "an agent is archived from its page")

    # A chatapp agent assigned to the number as it is created.
    page.goto(f"{base}/console/#/agents/new")
    form = page.locator("#agent-form")
    form.get_by_label("Channel").select_option("chatapp")
    form.get_by_label("Answer on").select_option(label="Front desk")
    form.get_by_label("Name", exact=True).fill("Front Agent")
    form.get_by_label("Instructions").fill("Answer questions about the shop.")
    form.get_by_role("button", name="Create agent").click()
    page.get_by_role("heading", name="Test Front Agent").wait_for()
    front = [x for x in api_get(base, key, f"/api/v1/agents?businessId={business}&limit=200")["agents"] if x["name"] == "Front Agent"][0]
    assigned = api_get(base, key, f"/api/v1/channels/assignments?businessId={business}&channel=chatapp&phoneNumberId=pn-browser")
    check(assigned["aiAgentId"] == front["id"], "an agent is assigned to a number as it is created")

    # ---- campaigns --------------------------------------------------------------------
    nav(page, "Campaigns")
    form = page.locator("#new-campaign")
    form.wait_for()
    form.get_by_label("Name", exact=True).fill("Tasks Run")
    form.get_by_label("Objective").fill("Confirm the renewal.")
    form.get_by_label("Agent", exact=True).select_option(label="Caller")
    form.get_by_label("Retries", exact=False).fill("11")
    page.locator("#err-iteration-maxRetries").filter(has_text="at most 10").wait_for()
    check(True, "a campaign's retries are checked as typed against the document's maximum")
    form.get_by_label("Retries", exact=False).fill("1")
    form.get_by_role("radio", name="contacts I choose").check()
    form.get_by_label("Find contacts by name or mobile").fill("cleo")
    form.get_by_role("button", name="Find", exact=True).click()
    form.get_by_role("button", name="Add Cleo").click()
    page.locator("#cmp-preview").filter(has_text="would admit 1").wait_for()
    check(True, "the audience's admission is previewed before anything is created")
    form.get_by_role("button", name="Create as a draft").dblclick()
    out = page.locator("#cmp-admission")
    out.filter(has_text="admitted").wait_for()
    check("1 admitted" in out.inner_text(), f"the admission says who was admitted ({out.inner_text()!r})")
    runs = [x for x in api_get(base, key, f"/api/v1/campaigns?businessId={business}&limit=200")["campaigns"] if x["campaign"]["name"] == "Tasks Run"]
    check(len(runs) == 1 and runs[0]["currentIteration"]["status"] == "draft" and runs[0]["currentIteration"]["counts"]["total"] == 1,
          f"a double click creates one draft campaign of the chosen contact ({runs})")
    # An audience of categories: blocked contacts are skipped, and said so.
    http("PATCH", f"{base}/api/v1/contacts/{zed}", key, {"businessId": business, "communicationBlocked": True})
    # A created campaign empties the form (issue 50): it is filled again.
    form.get_by_label("Name", exact=True).fill("Tasks Cats")
    form.get_by_label("Objective").fill("Confirm the renewal.")
    form.get_by_label("Agent", exact=True).select_option(label="Caller")
    form.get_by_role("radio", name="every contact of categories").check()
    form.get_by_role("checkbox", name="Renewals").check()
    page.locator("#cmp-preview").filter(has_text="1 blocked").wait_for()
    check("would admit 2" in page.locator("#cmp-preview").inner_text(), f"a category audience's preview names the skipped ({page.locator('#cmp-preview').inner_text()!r})")
    form.get_by_role("button", name="Create as a draft").click()
    out.filter(has_text="1 blocked").wait_for()
    check("2 admitted" in out.inner_text(), f"a category audience's admission names the skipped ({out.inner_text()!r})")
    out.get_by_role("link", name="Open Tasks Cats to start it").click()
    page.get_by_role("button", name="Start").wait_for()
    check(True, "the draft opens on its page to be started")

    # ---- channels, voice lines and prices ------------------------------------------------
    nav(page, "Channels")
    form = page.locator("#connect-channel")
    form.wait_for()
    form.get_by_label("Phone number id or account id").fill("bad id!")
    page.locator("#err-providerId").wait_for()
    check(no_regex(page.locator("#err-providerId").inner_text()), f"an id is checked as typed, in words ({page.locator('#err-providerId').inner_text()!r})")
    form.get_by_label("Phone number id or account id").fill("pn-tasks")
    form.get_by_label("Label or username (optional)").fill("Tasks line")
    form.get_by_role("button", name="Connect").dblclick()
    page.get_by_role("form", name="Assignment of Tasks line").wait_for()
    chans = api_get(base, key, f"/api/v1/channels?businessId={business}")["channels"]
    numbers = [c.get("phoneNumberId") for ch in chans for c in ch["connections"]]
    check(numbers.count("pn-tasks") == 1, f"a sandbox number is connected from the page ({numbers})")

    voice_form = page.locator("#voice-settings")
    voice_form.get_by_label("Lines (calls at once)").fill("1001")
    page.locator("#err-lines").filter(has_text="at most 1,000").wait_for()
    check(True, "lines are checked as typed")
    voice_form.get_by_label("Lines (calls at once)").fill("3")
    voice_form.get_by_label("Default calling window (HH:MM-HH:MM)").fill("9-5")
    page.locator("#err-callingWindow").filter(has_text="HH:MM-HH:MM").wait_for()
    voice_form.get_by_label("Default calling window (HH:MM-HH:MM)").fill("08:00-21:00")
    voice_form.get_by_role("button", name="Save voice settings").click()
    page.get_by_text("Voice settings saved.").wait_for()
    settings = page.evaluate("fetch('/console/api/voice').then((r) => r.json())")["data"]
    check(settings["voice"]["lines"] == 3 and settings["voice"]["callingWindow"] == "08:00-21:00", f"voice lines and window are saved ({settings['voice']})")
    prices = page.locator("#summary-prices")
    prices.get_by_label("Summary price per contact, in credits").fill("0.0015")
    prices.get_by_role("button", name="Save prices").click()
    page.get_by_text("Prices saved.", exact=False).wait_for()
    settings = page.evaluate("fetch('/console/api/voice').then((r) => r.json())")["data"]
    check(settings["summaryPrices"]["pricePerContactMicrocredits"] == 1500, "the summary price is saved")
    before = api_get(base, key, f"/api/v1/credits?businessId={business}")["availableMicrocredits"]
    top = page.locator("#top-up")
    top.get_by_label("Credits to add", exact=False).fill("2")
    top.get_by_role("button", name="Add credits").dblclick()
    page.get_by_text("Credits added.").wait_for()
    after = api_get(base, key, f"/api/v1/credits?businessId={business}")["availableMicrocredits"]
    check(after - before == 2_000_000, f"a double click on Add credits adds them once ({after - before})")

    # ---- who may log in ------------------------------------------------------------------------
    nav(page, "API keys")
    invite = page.locator("#invite-user")
    invite.wait_for()
    invite.get_by_label("Email").fill("nope")
    page.locator("#err-email").filter(has_text="name@example.com").wait_for()
    check(True, "an email is checked as it is typed")
    invite.get_by_label("Email").fill("helper@example.com")
    invite.get_by_label("Role").select_option("viewer")
    invite.get_by_role("button", name="Invite").dblclick()
    link = page.locator("#invite-link").inner_text().strip()
    users = page.evaluate("fetch('/console/api/users').then((r) => r.json())")["data"]["users"]
    helper = [u for u in users if u["email"] == "helper@example.com"]
    check(len(helper) == 1 and helper[0]["role"] == "viewer" and link.startswith(f"{base}/console/#setup="),
          f"a double click on Invite invites once, and the setup link is shown ({len(helper)})")
    guest = page.context.browser.new_context()
    gpage = guest.new_page()
    gpage.goto(link)
    gpage.get_by_label("New password").fill(PASSWORD)
    gpage.get_by_role("button", name="Set password").click()
    gpage.get_by_role("heading", name="Log in").wait_for()
    login(gpage, base, "helper@example.com")
    check("viewer" in gpage.locator("header").inner_text(), "the invited user sets a password with the link and logs in as a viewer")
    guest.close()
    page.goto(f"{base}/console/#/keys")
    row = page.get_by_role("form", name="Role of helper@example.com")
    row.get_by_label("Role of helper@example.com", exact=True).select_option("owner")
    row.get_by_role("button", name="Save the role of helper@example.com").click()
    page.get_by_text("Role saved.", exact=False).wait_for()
    users = page.evaluate("fetch('/console/api/users').then((r) => r.json())")["data"]["users"]
    check([u["role"] for u in users if u["email"] == "helper@example.com"] == ["owner"], "a role is set from the page")
    page.once("dialog", lambda dlg: dlg.accept())
    page.get_by_role("button", name="Remove helper@example.com").click()
    page.get_by_text("User removed.").wait_for()
    users = page.evaluate("fetch('/console/api/users').then((r) => r.json())")["data"]["users"]
    check([bool(u["disabledAt"]) for u in users if u["email"] == "helper@example.com"] == [True], "a user is removed from the page")

    # ---- every page touched here, at both widths ------------------------------------------
    routes = ["#/keys", "#/contacts", f"#/contacts/{zed}", "#/agents/new", f"#/agents/{voice_agent(base, key, business)}", "#/campaigns", "#/channels"]
    sweep(page, base, routes, 1280)
    sweep(page, base, routes, 375)

    # ---- a viewer sees none of these actions ------------------------------------------------
    viewer = page.context.browser.new_context(viewport={"width": 1280, "height": 800})
    vpage = viewer.new_page()
    vpage.on("pageerror", lambda e: ERRORS.append(str(e)))
    vpage.on("console", lambda m: m.type == "error" and ERRORS.append(m.text))
    vpage.set_default_timeout(WAIT_MS)
    login(vpage, base, "viewer@example.com")
    actions = ["Create contact", "Apply", "Add category", "Save contact", "Call now", "Delete this contact", "Create agent", "Archive this agent",
               "Create as a draft", "Connect", "Save voice settings", "Save prices", "Add credits", "Invite", "Save role", "Remove"]
    for route in ["#/keys", "#/contacts", f"#/contacts/{zed}", "#/campaigns", "#/channels"]:
        vpage.goto(f"{base}/console/{route}")
        vpage.locator("main h1").wait_for()
        vpage.wait_for_load_state("networkidle")
        offered = [a for a in actions if vpage.get_by_role("button", name=a, exact=True).count()]
        check(not offered, f"a viewer is offered none of the tasks on {route} ({offered})")
    sweep(vpage, base, ["#/contacts", f"#/contacts/{zed}", "#/campaigns", "#/channels", "#/agents"], 1280, viewer=True)
    sweep(vpage, base, ["#/contacts", f"#/contacts/{zed}", "#/campaigns", "#/channels", "#/agents"], 375, viewer=True)
    viewer.close()


def voice_agent(base, key, business):
    """The seeded voice agent (its page has the call form)."""
    return [a for a in api_get(base, key, f"/api/v1/agents?businessId={business}&limit=200")["agents"] if a["name"] == "Caller"][0]["id"]


def main():
    drive(run, "browser tests (tasks.py)")


if __name__ == "__main__":
    main()
