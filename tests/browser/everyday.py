#!/usr/bin/env python3
"""A business's everyday pages with long-word data (issue 50, points 3 to
6), driven in Debian's chromium against the real binary (support.drive).

Campaign detail: an iteration's recipients (outcome, call, links to the
contact and the call, paged), Start asking first with the audience and
the most it can cost, the admission preview naming who is left out and
why. Contacts and forms: fields edited as fields, select all and sort, a
phone number typed as people write it stored as E.164, a counter on a
message's length, a call on the timeline read as a call and linked, a call
page following its call live. Words: no code-form field names, operation
ids or microcredits in errors; create and edit say the same; "Check the
fields marked below" goes once they are fixed; channels, credits and the
overview in the business's words. The bugs seen, each with its check: a
long agent name, a created campaign missing from the list, the setup link
out of view, fields of other channels, a number whose agent was replaced
silently, the categories' counts after a bulk add, the API key's suffix
wrapping, the 90-day bars, a one-outcome chart's legend, ragged rows of
people, the phone header. Every page here is swept (support.sweep) at 1280
and 375 px, light and dark.
Usage: tests/browser/everyday.py [BINARY]
"""

from support import *  # noqa: F401,F403 (the helpers and checks this script drives the pages with)

# Names and a URL without a space, as people paste them.
LONG_AGENT = "Receptionist" + "x" * 108  # 120 characters, the most an agent name may have
LONG_CONTACT = "Maximiliana" + "y" * 60
LONG_URL = "https://example.com/" + "a" * 150



def visible(page, selector):
    return page.locator(selector).is_visible()


def in_view(page, selector):
    """Whether the element's box is inside the window as scrolled."""
    return page.evaluate("""(sel) => { const r = document.querySelector(sel).getBoundingClientRect();
      return r.top >= 0 && r.top < innerHeight && r.height > 0; }""", selector)


def run(page, base, business, key, voice, receiver):
    page.set_default_timeout(WAIT_MS)
    b = f"businessId={business}"
    cats = {c["name"]: c["id"] for c in api(base, key, "GET", f"/contacts/categories?{b}&limit=200")["categories"]}
    renewals = cats["Renewals"]
    caller = [a for a in api(base, key, "GET", f"/agents?{b}&limit=200")["agents"] if a["name"] == "Caller"][0]["id"]
    # Long words: an agent name and a contact name without a space, a URL in a field.
    status, d = http("POST", f"{base}/api/v1/agents", key, {"businessId": business, "channel": "voice", "name": "R" * 130, "instructions": "Hello."})
    check(status == 400 and "120" in d["error"]["message"], f"the API refuses a 130-character agent name ({status})")
    api(base, key, "POST", "/agents", {"businessId": business, "channel": "voice", "name": LONG_AGENT, "instructions": "Answer the phone."})
    long_contact = api(base, key, "POST", "/contacts", {"businessId": business, "name": LONG_CONTACT, "mobile": "+15550500001",
                       "categoryIds": [renewals], "fields": {"website": LONG_URL}})["contact"]["id"]
    bea = api(base, key, "POST", "/contacts", {"businessId": business, "name": "Bea Blocked", "mobile": "+15550500002",
              "categoryIds": [renewals], "communicationBlocked": True})["contact"]["id"]
    # The chatapp number gets an agent (a new agent may not take it silently).
    desk = api(base, key, "POST", "/agents", {"businessId": business, "channel": "chatapp", "name": "Desk", "instructions": "Answer."})["agent"]["id"]
    api(base, key, "PATCH", "/channels/assignments", {"businessId": business, "channel": "chatapp", "phoneNumberId": "pn-browser", "aiAgentId": desk, "autoReplyEnabled": False})
    # A draft voice campaign of two people, to start from its page.
    draft = api(base, key, "POST", "/campaigns", {"businessId": business, "name": "Spring check", "objective": "Confirm visits",
                "iteration": {"channel": "voice", "agentId": caller, "contactIds": [long_contact, bea, *[c["id"] for c in api(base, key, "GET", f"/contacts?{b}&categoryId={renewals}")["contacts"][:1]]]}})["campaign"]["id"]

    login(page, base, "owner@example.com")

    # ---- the header on a phone: the address, not a bare role ------------------------------------
    page.set_viewport_size({"width": 375, "height": 812})
    check(not page.locator("#who").is_visible(), "the phone's header bar shows no cut-short 'owner …'")
    page.locator("#menu").click()
    who = page.locator("#who").inner_text()
    cut = page.evaluate("(() => { const w = document.getElementById('who'); return w.scrollWidth > w.clientWidth + 1; })()")
    check("owner@example.com" in who and not cut, f"the open menu says who is logged in, in full ({who!r}, cut: {cut})")
    page.locator("#menu").click()
    page.set_viewport_size({"width": 1280, "height": 800})

    # ---- campaign detail: recipients ----------------------------------------------------------
    page.goto(f"{base}/console/#/campaigns/{voice['campaign']}")
    rows = page.locator("#recipient-list tbody tr")
    rows.first.wait_for()
    names = page.locator("#recipient-list tbody td.name").all_inner_texts()
    check(sorted(names) == ["Cleo", "Dan"], f"a campaign's page lists its iteration's recipients ({names})")
    row = rows.filter(has_text="Cleo")
    check("completed" in row.inner_text(), f"each recipient shows its outcome ({row.inner_text()!r})")
    call_link = row.locator("a[href^='#/calls/']")
    contact_link = row.get_by_role("link", name="Cleo", exact=True)
    check(contact_link.count() == 1 and call_link.count() == 1, "a recipient links to its contact and its call")
    # The one-outcome chart still names its outcome.
    legend = page.evaluate("""() => { const c = Chart.getChart(document.querySelector('[data-chart="Outcomes per iteration"] canvas'));
      return c.options.plugins.legend.display && c.data.datasets.map((d) => d.label); }""")
    check(legend == ["completed"], f"an outcomes chart of one outcome has its legend ({legend})")
    call_link.click()
    page.get_by_role("heading", name="Call to Cleo").wait_for()
    check(True, "the recipient's call opens from the list")

    # ---- Start asks first: who and the most it can cost -----------------------------------
    page.goto(f"{base}/console/#/campaigns/{draft}")
    page.get_by_role("button", name="Start", exact=True).click()
    ask = page.get_by_role("alertdialog")
    ask.wait_for()
    text = ask.inner_text()
    # Two callable people (Bea is blocked), 600 s calls: 30 blocks of 25,000 microcredits each.
    check("2 people" in text and "1.5 credits" in text and "microcredit" not in text,
          f"Start asks first, with the audience and the most it can cost ({text!r})")
    ask.get_by_role("button", name="Not now").click()
    check(api(base, key, "GET", f"/campaigns/{draft}?{b}")["currentIteration"]["status"] == "draft", "Not now starts nothing")
    page.get_by_role("button", name="Start", exact=True).click()
    page.get_by_role("button", name="Yes, start").click()
    wait_api("the campaign to run", lambda: api(base, key, "GET", f"/campaigns/{draft}?{b}")["currentIteration"]["status"] != "draft")
    check(True, "confirming starts the iteration")

    # ---- the new campaign form: preview names who is left out; fields of its channel -----------
    page.goto(f"{base}/console/#/campaigns")
    form = page.locator("#new-campaign")
    form.wait_for()
    check(not visible(page, "label[for=cmp-opening]") and visible(page, "#cmp-budget"), "a voice campaign shows no opening message field, and a budget")
    form.get_by_role("radio", name="Chat app").check()
    check(visible(page, "#cmp-opening") and not visible(page, "#cmp-budget") and "opening" in page.locator("#cmp-retries-label").inner_text(),
          "a chat app campaign shows its opening message, no budget, and retries of openings, not of calls")
    form.get_by_label("Opening message", exact=True).fill("Hello")
    check(page.locator("#cmp-opening-count").inner_text() == "5 of 1,000 characters", "an opening message's length is counted")
    form.get_by_label("Opening message", exact=True).fill("")
    form.get_by_role("radio", name="Voice calls").check()
    form.get_by_label("Agent", exact=True).select_option(label="Caller")
    form.get_by_role("checkbox", name="Renewals").check()
    left = page.locator("#cmp-preview .left-out")
    left.wait_for()
    check("Bea Blocked" in left.inner_text() and "blocked" in left.inner_text(), f"the preview names who is left out and why ({left.inner_text()!r})")
    form.get_by_label("Name", exact=True).fill("Autumn check")
    form.get_by_label("Objective").fill("Confirm the autumn visits.")
    form.get_by_label("Budget cap in credits", exact=False).fill("2.5")
    form.get_by_role("button", name="Create as a draft").click()
    page.locator("#campaign-list, main").get_by_role("link", name="Autumn check", exact=True).first.wait_for()
    check(form.get_by_label("Name", exact=True).input_value() == "", "a created campaign is listed at once and the form is emptied")
    made = [c for c in api(base, key, "GET", f"/campaigns?{b}&limit=200")["campaigns"] if c["campaign"]["name"] == "Autumn check"]
    check(made and made[0]["currentIteration"]["maxSpendMicrocredits"] == 2_500_000, "a budget typed in credits is stored as microcredits")

    # ---- agents: long name, channel fields, a number that has an agent ------------------------
    page.goto(f"{base}/console/#/agents")
    page.get_by_role("cell", name=LONG_AGENT, exact=True).wait_for()
    wide = page.evaluate("document.documentElement.scrollWidth")
    check(wide <= 1280, f"a 120-character agent name does not widen the agents page ({wide} px)")
    page.goto(f"{base}/console/#/agents/new")
    agent_form = page.locator("#agent-form")
    agent_form.get_by_label("Channel").select_option("chatapp")
    check(not visible(page, "#a-collect") and not visible(page, "#a-voice"), "a chat app agent shows neither photoapp nor voice fields")
    desk_option = page.locator("#a-assign option", has_text="Front desk")
    check(desk_option.get_attribute("disabled") is not None and "Desk" in desk_option.inner_text(),
          f"a number that has an agent is not offered to a new one ({desk_option.inner_text()!r})")
    agent_form.get_by_label("Name", exact=True).fill("Second")
    agent_form.get_by_label("Instructions").fill("Answer.")
    agent_form.get_by_role("button", name="Create agent").click()
    page.get_by_role("heading", name="Test Second").wait_for()
    kept = api(base, key, "GET", f"/channels/assignments?{b}&channel=chatapp&phoneNumberId=pn-browser")["aiAgentId"]
    check(kept == desk, "creating an agent leaves the number's agent in place")

    # ---- the business's default phone country, set by an owner, taken by every phone input -----
    def phone_country(typed, code):
        page.goto(f"{base}/console/#/channels")
        form = page.locator("#phone-country")
        form.get_by_label("Default country", exact=False).fill(typed)
        form.get_by_role("button", name="Save country").click()
        page.get_by_text(f"taken as +{code}.").wait_for()
    phone_country("de", "49")
    check(api(base, key, "GET", f"/business-settings?{b}")["settings"] == {"defaultPhoneCountry": "DE", "defaultCallingCode": "49",
          "updatedAt": api(base, key, "GET", f"/business-settings?{b}")["settings"]["updatedAt"]}, "an owner sets the default phone country (over the API)")
    page.goto(f"{base}/console/#/contacts")
    typed = page.locator("#new-contact").get_by_label("Mobile")
    typed.fill("(415) 555-0199")
    typed.blur()
    check(typed.input_value() == "+494155550199" and "+49" in page.locator("#nc-mobile-hint").inner_text(),
          f"with DE, (415) 555-0199 becomes +494155550199 ({typed.input_value()!r})")
    phone_country("US", "1")
    page.goto(f"{base}/console/#/messages")
    to = page.locator("#m-to")
    to.fill("(415) 555-0199")
    to.blur()
    check(to.input_value() == "+14155550199", f"with US, (415) 555-0199 becomes +14155550199 in every phone input ({to.input_value()!r})")

    # ---- contacts: fields as fields, phone input, select all, sort, words --------------------
    page.goto(f"{base}/console/#/contacts")
    new = page.locator("#new-contact")
    new.wait_for()
    new.get_by_role("button", name="Create contact").click()
    box = new.locator(".form-error")
    check(page.locator("#err-name").inner_text() == "Name is required", f"create says Name is required ({page.locator('#err-name').inner_text()!r})")
    check(box.inner_text().startswith("Check the field"), "the form says to check the fields marked")
    new.get_by_label("Name", exact=True).fill("Nia Phone")
    new.get_by_label("Mobile").fill("(415) 555-0199")
    check(box.inner_text() == "", f"'Check the fields marked below' goes once they are fixed ({box.inner_text()!r})")
    new.get_by_role("checkbox", name="Renewals").check()
    new.get_by_label("website", exact=True).fill("https://nia.example")
    new.get_by_role("button", name="Create contact").click()
    page.get_by_text("Contact Nia Phone created.").wait_for()
    nia = [c for c in api(base, key, "GET", f"/contacts?{b}&limit=200")["contacts"] if c["name"] == "Nia Phone"]
    check(nia and nia[0]["mobile"] == "+14155550199" and nia[0]["fields"] == {"website": "https://nia.example"},
          f"a number typed as (415) 555-0199 is stored as +14155550199, the field as a field ({nia})")
    # Words: a server error names no field in code form.
    new.get_by_label("Name", exact=True).fill("Nia Again")
    new.get_by_label("Mobile").fill("+1 415 555 0199")
    new.get_by_role("checkbox", name="Renewals").check()
    new.get_by_role("button", name="Create contact").click()
    box.filter(has_text="mobile").wait_for()
    said = box.inner_text()
    check("`" not in said and "microcredit" not in said and "createContact" not in said, f"a server's error is said in words ({said!r})")
    samples = page.evaluate("""() => [words('`iteration.openingMessage` must be at most 1000 characters'),
      words('the balance is 1500000 microcredits; listRecipients refused'), words('`maxSpendMicrocredits` must be at least 1')]""")
    check(samples == ["opening message must be at most 1000 characters", "the balance is 1.5 credits; this action refused", "budget cap must be at least 1"],
          f"messages lose code-form names, operation ids and microcredits ({samples})")
    # Sort and select all.
    page.get_by_label("Sort").select_option("name")
    page.locator("#contact-list tbody td.name").first.filter(has_text="Bea Blocked").wait_for()
    listed = page.locator("#contact-list tbody td.name").all_inner_texts()
    check(listed == sorted(listed, key=str.lower), f"the list sorts by name ({listed})")
    page.get_by_role("checkbox", name="Select every contact shown").check()
    ticked = page.locator("#contact-list input[name=selected]:checked").count()
    check(ticked == len(listed) and ticked > 2, f"select all ticks every row shown ({ticked} of {len(listed)})")
    page.get_by_role("checkbox", name="Select every contact shown").uncheck()
    # A bulk add updates the categories' counts at once.
    page.get_by_label("New category", exact=True).fill("Gold")
    page.get_by_role("button", name="Add category").click()
    page.get_by_role("button", name="Delete category Gold").wait_for()
    page.get_by_role("checkbox", name="Select Nia Phone").check()
    page.get_by_role("checkbox", name="Select Bea Blocked").check()
    bulk = page.locator("#bulk")
    bulk.get_by_label("Category (to add to)").select_option(label="Gold")
    bulk.get_by_role("button", name="Apply").click()
    page.get_by_text("2 updated.").wait_for()
    gold = page.locator("section[aria-labelledby=categories-title] tr", has_text="Gold")
    gold.filter(has_text="2").wait_for()
    check(True, "after a bulk add the categories' counts are current")

    # The contact page: edit says what create says; a call reads as a call; the counter.
    cleo = [c for c in api(base, key, "GET", f"/contacts?{b}&limit=200")["contacts"] if c["name"] == "Cleo"][0]["id"]
    api(base, key, "POST", "/voice/calls", {"businessId": business, "agentId": caller, "contactId": cleo})
    wait_api("Cleo's call on her timeline", lambda: any(e["kind"] == "call" for e in api(base, key, "GET", f"/contacts/{cleo}/timeline?{b}")["entries"]))
    page.goto(f"{base}/console/#/contacts/{cleo}")
    entry = page.locator(".call-entry").first
    entry.wait_for()
    check("callId" not in entry.inner_text() and entry.locator("a[href^='#/calls/']").count() == 1,
          f"a call on the timeline reads as a call and links to it ({entry.inner_text()!r})")
    edit = page.locator("#edit-contact")
    edit.get_by_label("Name", exact=True).fill("")
    edit.get_by_role("button", name="Save contact").click()
    check(page.locator("#err-name").inner_text() == "Name is required", f"edit says Name is required, as create does ({page.locator('#err-name').inner_text()!r})")
    page.locator("#m-text").fill("Hello")
    check(page.locator("#m-text-count").inner_text() == "5 of 4,096 characters", f"a message's length is counted ({page.locator('#m-text-count').inner_text()!r})")
    check(page.locator("#m-text").get_attribute("maxlength") == "4096", "a message's length is limited")

    # A call page follows the call live (…3333: queued while the carrier is down, then failed).
    slow = api(base, key, "POST", "/voice/calls", {"businessId": business, "agentId": caller, "toNumber": "+15550503333"})["callId"]
    page.goto(f"{base}/console/#/calls/{slow}")
    status = page.locator("#call-status")
    status.wait_for()
    check("following live" in status.inner_text(), f"a call page says it follows the call ({status.inner_text()!r})")
    status.filter(has_text="failed").wait_for(timeout=30_000)
    check("following live" not in status.inner_text(), "the call page shows the call's end without a reload")

    # ---- keys and people: suffix on one line, aligned rows, setup link in view ------------------
    page.goto(f"{base}/console/#/keys")
    invite = page.locator("#invite-user")
    invite.wait_for()
    invite.get_by_label("Email").fill("frontdesk@example.com")
    invite.get_by_role("button", name="Invite").click()
    page.locator("#invite-link").wait_for()
    check(in_view(page, "#invite-link"), "the one-time setup link is shown in view")
    check(page.locator("#toast").inner_text() != "", "and a notice says it is shown")
    page.goto(f"{base}/console/#/keys")
    # Each active user's role control starts at the same x, whatever the
    # length of their address (a list of lines put it after the address).
    page.locator("#users select[name=role]").first.wait_for()
    lefts = page.evaluate("() => [...document.querySelectorAll('#users select[name=role]')].map((s) => Math.round(s.getBoundingClientRect().left))")
    check(len(set(lefts)) == 1 and len(lefts) >= 3, f"the people who can log in line up in columns ({lefts})")
    for width in (1280, 375):
        page.set_viewport_size({"width": width, "height": 800})
        check(not one_line(page, "td code.key-display"), f"an API key's suffix stays on one line at {width} px")
    page.set_viewport_size({"width": 1280, "height": 800})

    # ---- channels, credits and the overview in the business's words -----------------------------
    page.goto(f"{base}/console/#/channels")
    page.locator("#voice-settings").wait_for()
    text = page.locator("main").inner_text()
    check("agents assigned" not in text and "admin credits add" not in text and "microcredit" not in text.lower(),
          "the channels page speaks the business's language")
    page.goto(f"{base}/console/#/")
    page.locator("#period").wait_for()
    check("Business id" not in page.locator("main").inner_text(), "the overview names no business id")
    figures = lambda title: page.locator(f'[data-chart="{title}"] .figures tbody th').all_text_contents()
    check(figures("Calls per day")[-1] == "Today", f"the daily bars' last label is today ({figures('Calls per day')[-3:]})")
    # The axis names the last bar (today) however many labels it leaves
    # out for room: 30 daily bars at 1280 px, then 13 weekly ones at 375.
    ticks = lambda: page.evaluate("""() => { const c = Chart.getChart(document.querySelector('[data-chart^="Calls per"] canvas'));
      return c.scales.x.ticks.map((t) => t.label).filter(Boolean); }""")
    daily = ticks()
    check(daily and daily[-1] == "Today", f"the axis labels the last of the daily bars ({daily})")
    shown = len(figures("Calls per day"))
    page.get_by_label("Period").select_option("90")
    page.get_by_role("button", name="Filter").click()
    # Whichever unit the bars have, once the 90 days are drawn.
    page.wait_for_function("""(n) => { const c = document.querySelectorAll('[data-chart^="Calls per"] .figures tbody th').length;
      return c > 0 && c !== n; }""", arg=shown)
    bars = page.locator('[data-chart^="Calls per"] .figures tbody th').all_text_contents()
    check(len(bars) == 13 and bars[-1] == "This week", f"90 days are 13 weekly bars, the last this week's ({len(bars)}, {bars[-1:]})")
    page.set_viewport_size({"width": 375, "height": 812})
    page.wait_for_function("""() => Chart.getChart(document.querySelector('[data-chart^="Calls per"] canvas')).width < 375""")
    weekly = ticks()
    page.set_viewport_size({"width": 1280, "height": 800})
    check(weekly and weekly[-1] == "This week", f"the axis labels the last bar at 375 px ({weekly})")

    # ---- the inbox on a phone: an email-like sender and a long URL stay inside -----------------------
    sender = "maximiliana.rodriguez-gonzalez@correo-largo.example.com"
    status, d = http("POST", f"{base}/sandbox/v1/chatapp/inbound", key, {"phoneNumberId": "pn-browser", "from": "+15550509999", "name": sender,
                     "text": f"Is this still on? {LONG_URL}"})
    check(status == 202, f"an inbound message with a long sender and URL ({status})")
    conv = wait_api("the long conversation", lambda: [c for c in api(base, key, "GET", f"/conversations?{b}&q=maximiliana")["conversations"]])[0]
    page.set_viewport_size({"width": 375, "height": 812})
    for route in ("#/inbox", f"#/inbox/{conv['id']}"):
        page.goto("about:blank")
        page.goto(f"{base}/console/{route}")
        page.get_by_text("Is this still on?", exact=False).filter(visible=True).first.wait_for()
        spill = page.evaluate("""() => [...document.querySelectorAll('main *')].filter((e) => e.getClientRects().length && e.getBoundingClientRect().right > innerWidth + 1)
          .filter((e) => { for (let p = e.parentElement; p; p = p.parentElement) if (['auto', 'scroll', 'hidden'].includes(getComputedStyle(p).overflowX)) return false; return true; })
          .map((e) => e.tagName + '.' + e.className).slice(0, 5)""")
        wide = page.evaluate("document.documentElement.scrollWidth")
        check(not spill and wide <= 375, f"{route} at 375 px: the long sender and URL stay inside their cards and bubbles ({spill}, {wide} px)")
    page.set_viewport_size({"width": 1280, "height": 800})

    # ---- every page here, at both widths, light and dark --------------------------------------------
    routes = ["#/", "#/agents", "#/agents/new", "#/contacts", f"#/contacts/{long_contact}", f"#/contacts/{cleo}", "#/campaigns",
              f"#/campaigns/{voice['campaign']}", f"#/campaigns/{draft}", "#/channels", "#/keys", "#/credits", f"#/calls/{voice['call']}", "#/messages"]
    for dark in (False, True):
        for width in (1280, 375):
            sweep(page, base, routes, width, dark=dark)


if __name__ == "__main__":
    drive(run, "everyday")
