#!/usr/bin/env python3
"""Drives the team inbox of issue 50 in a real browser against the real
binary (support.drive's seeded business, plus a support agent,
agent@example.com): at 1280 px the inbox has three panes that scroll on
their own (list, thread, contact details with fields, categories, recent
calls and campaigns), a thread opens at its newest message with the reply
box in view, times are relative with the exact time on hover, the list
preview and each bubble say who sent an outbound message (the AI agent by
name, the person, the campaign whose opening it is); the support agent replies while the AI agent answers
(the reply box says it takes over, and it does), writes an internal note
(never sent), assigns to themselves, uses the views Mine, Unassigned, Open
and Resolved, resolves (a new message reopens), puts in a saved reply and
keeps saved replies; the role is offered nothing it cannot do, and a
viewer who opens an agent's edit page by its link finds no editable form.
An owner inviting an address another business uses is told nothing of it.
Every page passes sweep() at 1280 and 375 px (the inbox in dark too), with
long-word data (a name and a URL without spaces).
Usage: tests/browser/team.py [BINARY]
"""

from support import *  # noqa: F401,F403 (the helpers and checks this script drives the pages with)

ADA = "+15550009101"
BO = "+15550009102"
CLEO = "+15550009103"
LONG_NAME = "Bartholomew" + "x" * 60
LONG_URL = "https://example.com/" + "a" * 180


def inbound(base, key, frm, name, text):
    status, d = http("POST", f"{base}/sandbox/v1/chatapp/inbound", key, {"phoneNumberId": "pn-browser", "from": frm, "text": text, "name": name})
    assert status == 202, (status, d)



def in_view(page, selector):
    """The element is wholly inside the window."""
    return page.evaluate("""(sel) => { const r = document.querySelector(sel).getBoundingClientRect();
      return r.top >= 0 && r.bottom <= window.innerHeight + 1; }""", selector)


def run(page, base, business, admin_key, voice, receiver):
    page.set_default_timeout(WAIT_MS)
    data = data_dir()
    admin(data, "user", "create", "--business", business, "--email", "agent@example.com", "--role", "agent", "--password-stdin", stdin=PASSWORD + "\n")
    agent = api(base, admin_key, "POST", "/agents", {"businessId": business, "channel": "chatapp", "name": "Desk agent", "instructions": "Answer questions."})["agent"]["id"]
    api(base, admin_key, "PATCH", "/channels/assignments", {"businessId": business, "channel": "chatapp", "phoneNumberId": "pn-browser", "aiAgentId": agent, "autoReplyEnabled": True})
    convs = lambda query="": api(base, admin_key, "GET", f"/conversations?businessId={business}{query}")["conversations"]
    thread = lambda cid: api(base, admin_key, "GET", f"/conversations/{cid}/thread?businessId={business}&limit=200")["entries"]
    conv = lambda cid: api(base, admin_key, "GET", f"/conversations/{cid}?businessId={business}")["conversation"]

    # Ada writes (the AI agent answers her) and gets a category and fields;
    # Bo, with a name and a link without spaces, stays unanswered.
    inbound(base, admin_key, ADA, "Ada", "Are you open on Sunday?")
    ada = wait_api("the agent's reply to Ada", lambda: [c for c in convs("&q=Ada") if c["lastEntry"] and c["lastEntry"]["direction"] == "outbound"])[0]
    cat = api(base, admin_key, "POST", "/contacts/categories", {"businessId": business, "name": "Patients"})["category"]["id"]
    api(base, admin_key, "PATCH", f"/contacts/{ada['contact']['id']}", {"businessId": business, "categoryIds": [cat], "fields": {"plan": "gold", "city": "Lisbon"}})
    for n in range(24):
        inbound(base, admin_key, ADA, "Ada", f"Line {n} of a long story")
    wait_api("Ada's 24 lines", lambda: len([e for e in thread(ada["id"]) if e["direction"] == "inbound"]) >= 25)
    inbound(base, admin_key, BO, LONG_NAME, f"See {LONG_URL}")
    bo = wait_api("Bo's conversation", lambda: convs("&q=Bartholomew"))[0]
    api(base, admin_key, "POST", "/saved-replies", {"businessId": business, "title": "Opening hours", "text": "We open 9 to 5, Monday to Saturday."})
    # The AI agent answers each of Ada's lines: wait until it is quiet.
    wait_api("the agent's replies", lambda: all(c["lastEntry"]["direction"] == "outbound" for c in convs("&q=Ada")))

    login(page, base, "agent@example.com")
    check(page.locator("#who").inner_text().startswith("agent"), "the header names the support agent's role")
    # The role is offered nothing it cannot do.
    for route, absent in [("#/agents", "New agent"), ("#/keys", "Create key"), ("#/campaigns", "Create campaign")]:
        page.goto(f"{base}/console/{route}")
        page.locator("main h1").wait_for()
        page.wait_for_load_state("networkidle")
        check(page.get_by_role("link", name=absent).count() == 0 and page.get_by_role("button", name=absent).count() == 0, f"a support agent is not offered {absent} on {route}")
    # Every page that configures something offers a support agent what it
    # offers a viewer: no button that writes, no editable field.
    sweep(page, base, ["#/", "#/contacts", "#/agents", "#/data-sources", "#/channels", "#/webhooks", "#/calls", "#/campaigns", "#/credits", "#/keys"], 1280, viewer=True)
    page.goto(f"{base}/console/#/agents/{agent}")
    page.locator("#read-only").wait_for()
    editable = page.evaluate("() => [...document.querySelectorAll('main input, main select, main textarea')].filter((e) => !e.disabled && e.getClientRects().length).length")
    check(editable == 0 and page.locator("main button[type=submit]:visible").count() == 0, "an agent's settings opened by link are read-only for a support agent")

    # Three panes at 1280 px, each scrolling on its own; the thread at its newest message.
    page.set_viewport_size({"width": 1280, "height": 800})
    page.goto(f"{base}/console/#/inbox/{ada['id']}")
    page.locator("#thread .turn.inbound", has_text="Line 23").wait_for()
    page.locator(".contact-pane h3", has_text="Fields").wait_for()
    boxes = page.evaluate("""() => ['.inbox-list', '.thread-pane', '.contact-pane'].map((s) => { const r = document.querySelector(s).getBoundingClientRect(); return [r.left, r.right, r.top]; })""")
    check(boxes[0][1] <= boxes[1][0] and boxes[1][1] <= boxes[2][0] and abs(boxes[0][2] - boxes[2][2]) < 2, f"at 1280 px the list, the thread and the contact are side by side ({boxes})")
    scrolls = page.evaluate("""() => ['.inbox-list', '.thread-scroll', '.contact-pane'].map((s) => getComputedStyle(document.querySelector(s)).overflowY)""")
    tall = page.evaluate("[document.documentElement.scrollHeight, window.innerHeight, document.querySelector('header').getBoundingClientRect().height, document.querySelector('main').getBoundingClientRect().height, ...[...document.querySelectorAll('body *')].filter((e) => e.getBoundingClientRect().bottom > 790).map((e) => e.tagName + '.' + e.className + ':' + Math.round(e.getBoundingClientRect().top) + '-' + Math.round(e.getBoundingClientRect().bottom))]")
    check(scrolls == ["auto", "auto", "auto"] and tall[0] <= tall[1] + 1, f"each pane scrolls on its own, the page does not ({scrolls}, {tall})")
    at_end = page.evaluate("() => { const s = document.querySelector('.thread-scroll'); return s.scrollHeight > s.clientHeight && s.scrollHeight - s.scrollTop - s.clientHeight < 40; }")
    check(at_end and in_view(page, "#i-reply"), "a long thread opens at its newest message with the reply box in view")
    details = page.locator(".contact-pane").inner_text()
    check("Patients" in details and "gold" in details and "Lisbon" in details and "Recent calls" in details and "Campaigns" in details,
          "the contact pane shows the fields, categories, recent calls and campaigns")
    stamp = page.locator("#thread .turn time").last
    check(stamp.inner_text() in ("now",) or stamp.inner_text().endswith("min"), f"times are relative ({stamp.inner_text()})")
    check(any(ch.isdigit() for ch in (stamp.get_attribute("title") or "")), f"the exact time is on hover ({stamp.get_attribute('title')})")
    preview = page.locator(".conversations a", has_text="Ada").locator(".conversation-preview").inner_text()
    check(preview.startswith("Desk agent (AI agent):") and "You:" not in preview, f"the list preview says the AI agent sent the last message ({preview})")
    check(page.locator("#thread .turn.outbound .speaker", has_text="Desk agent (AI agent)").count() >= 1, "the bubbles say the AI agent sent them")

    # Replying while the AI agent answers takes over (the box says so first).
    notice = page.locator(".reply .takeover")
    check(notice.is_visible() and "takes this conversation over from Desk agent" in notice.inner_text(), "the reply box says sending takes over from the AI agent")
    page.get_by_label("Reply", exact=True).fill("Hi Ada, Sam from the desk here.")
    page.get_by_role("button", name="Send", exact=True).click()
    page.locator("#thread .turn.outbound", has_text="Sam from the desk").wait_for()
    mine = [e for e in thread(ada["id"]) if "Sam from the desk" in (e["text"] or "")]
    check(len(mine) == 1 and mine[0]["sentBy"]["kind"] == "person" and mine[0]["sentBy"]["name"] == "agent@example.com" and conv(ada["id"])["humanHandoffActive"],
          "the reply is sent by the person and the conversation is taken over (over the API)")
    page.locator("#thread .turn.outbound .speaker", has_text="agent@example.com").wait_for()
    page.locator(".conversations a", has_text="Ada").locator(".conversation-preview", has_text="agent@example.com:").wait_for()
    check(True, "the bubble and the list preview name the person who replied")

    # An internal note: in the thread, never sent.
    sent_before = len([e for e in thread(ada["id"]) if e["direction"] == "outbound"])
    page.get_by_label("Internal note (never sent)").check()
    page.get_by_label("Note", exact=True).fill("Asked about Sunday twice; check with the manager.")
    page.get_by_role("button", name="Add note").click()
    page.locator("#thread .turn.note", has_text="check with the manager").wait_for()
    notes = [e for e in thread(ada["id"]) if e["kind"] == "note"]
    check(len(notes) == 1 and len([e for e in thread(ada["id"]) if e["direction"] == "outbound"]) == sent_before, "the note is in the thread and nothing was sent (over the API)")

    # Saved reply into the box.
    page.get_by_label("Reply to the customer").check()
    page.get_by_label("Saved reply").select_option(label="Opening hours")
    check(page.get_by_label("Reply", exact=True).input_value() == "We open 9 to 5, Monday to Saturday.", "a saved reply is put in the reply box")
    page.get_by_label("Reply", exact=True).fill("")

    # Assign to me; the views.
    page.get_by_label("Assigned to").select_option(label="agent@example.com (you)")
    wait_api("the assignment", lambda: (conv(ada["id"])["assignee"] or {}).get("email") == "agent@example.com")
    check(True, "the support agent assigns the conversation to themselves (over the API)")
    page.get_by_role("button", name="Mine", exact=True).click()
    page.locator(".conversations a", has_text="Bartholomew").wait_for(state="detached")
    check(page.locator(".conversations a", has_text="Ada").count() == 1, "Mine lists the conversations assigned to me")
    page.get_by_role("button", name="Unassigned", exact=True).click()
    page.locator(".conversations a", has_text="Ada").wait_for(state="detached")
    check(page.locator(".conversations a", has_text="Bartholomew").count() == 1, "Unassigned lists the others")

    # Resolve; a new message from Ada reopens it.
    page.get_by_role("button", name="Resolve", exact=True).click()
    page.get_by_role("button", name="Reopen", exact=True).wait_for()
    check(conv(ada["id"])["state"] == "resolved", "Resolve resolves it (over the API)")
    page.get_by_role("button", name="Resolved", exact=True).click()
    page.locator(".conversations a", has_text="Ada").wait_for()
    page.get_by_role("button", name="Open", exact=True).click()
    page.locator(".conversations a", has_text="Ada").wait_for(state="detached")
    inbound(base, admin_key, ADA, "Ada", "Sorry, one more thing")
    page.locator(".conversations a", has_text="Ada").wait_for()
    page.get_by_role("button", name="Resolve", exact=True).wait_for()
    check(conv(ada["id"])["state"] == "open", "a new message from the customer opens a resolved conversation again")
    page.get_by_role("button", name="All", exact=True).click()

    # A campaign's opening says the campaign sent it (migration 0038's
    # trigger marks the opening's message when its membership names it):
    # over the API, in the list preview and on the bubble.
    cleo = api(base, admin_key, "POST", "/contacts", {"businessId": business, "name": "Cleo Opening", "mobile": CLEO, "categoryIds": [cat]})["contact"]["id"]
    campaign = api(base, admin_key, "POST", "/campaigns", {"businessId": business, "name": "Checkup reminders", "objective": "Remind people of their check-up.",
                   "iteration": {"channel": "chatapp", "agentId": agent, "contactIds": [cleo], "openingMessage": "Your yearly check-up is due."}})["campaign"]["id"]
    api(base, admin_key, "PATCH", f"/campaigns/{campaign}", {"businessId": business, "action": "start"})
    opened = wait_api("the campaign's opening", lambda: [c for c in convs("&q=Cleo") if c["lastEntry"] and c["lastEntry"]["direction"] == "outbound"])[0]
    sent = [e for e in thread(opened["id"]) if e["direction"] == "outbound"]
    check(len(sent) == 1 and sent[0]["sentBy"] == {"kind": "campaign", "id": campaign, "name": "Checkup reminders"},
          f"the opening's sender is the campaign, over the API ({[e['sentBy'] for e in sent]})")
    page.goto(f"{base}/console/#/inbox/{opened['id']}")
    page.locator("#thread .turn.outbound", has_text="yearly check-up").wait_for()
    speaker = page.locator("#thread .turn.outbound .speaker").last.inner_text()
    check(speaker.startswith("Campaign Checkup reminders"), f"the bubble says the campaign sent the opening ({speaker!r})")
    preview = page.locator(".conversations a", has_text="Cleo Opening").locator(".conversation-preview").inner_text()
    check(preview.startswith("Campaign Checkup reminders:"), f"the list preview says the campaign sent it ({preview!r})")

    # Saved replies are kept on their own page.
    page.get_by_role("link", name="Saved replies").first.click()
    page.get_by_role("heading", name="Saved replies").wait_for()
    page.get_by_label("Title").fill("Directions")
    page.get_by_label("Text", exact=True).fill("We are at 12 High Street, next to the pharmacy.")
    page.get_by_role("button", name="Save reply").click()
    page.locator("main td", has_text="Directions").wait_for()
    titles = [s["title"] for s in api(base, admin_key, "GET", f"/saved-replies?businessId={business}")["savedReplies"]]
    check(titles == ["Directions", "Opening hours"], f"a saved reply is created on its page ({titles})")

    routes = ["#/inbox", f"#/inbox/{ada['id']}", f"#/inbox/{bo['id']}", "#/inbox/saved-replies"]
    sweep(page, base, routes, 1280)
    sweep(page, base, routes[:3], 1280, dark=True)
    sweep(page, base, routes, 375)
    sweep(page, base, routes[1:3], 375, dark=True)
    # At 375 px a thread opens with the reply box in view.
    page.goto("about:blank")
    page.goto(f"{base}/console/#/inbox/{ada['id']}")
    page.locator("#thread .turn", has_text="one more thing").wait_for()
    page.wait_for_timeout(300)
    check(in_view(page, "#i-reply"), "at 375 px a thread opens with the reply box in view")
    page.set_viewport_size({"width": 1280, "height": 800})

    # A viewer opening an edit page by its link finds no editable form.
    vpage = other_session(page, base, "viewer@example.com")
    for route in [f"#/agents/{agent}", "#/agents/new"]:
        vpage.goto(f"{base}/console/{route}")
        vpage.locator("#read-only").wait_for()
        editable = vpage.evaluate("() => [...document.querySelectorAll('main input, main select, main textarea')].filter((e) => !e.disabled && e.getClientRects().length).length")
        check(editable == 0 and vpage.locator("main button[type=submit]:visible").count() == 0, f"a viewer opening {route} by its link finds no editable form")
    sweep(vpage, base, [f"#/agents/{agent}", "#/agents/new", f"#/inbox/{ada['id']}"], 1280, viewer=True)
    sweep(vpage, base, [f"#/agents/{agent}", f"#/inbox/{ada['id']}"], 375, viewer=True)
    vpage.context.close()

    # An owner inviting an address another business uses is told nothing of it.
    other = admin(data, "business", "create", "--name", "Other Co")["businessId"]
    admin(data, "user", "create", "--business", other, "--email", "someone@other.example", "--password-stdin", stdin=PASSWORD + "\n")
    owner = page.context.browser.new_context()
    opage = owner.new_page()
    opage.set_default_timeout(WAIT_MS)
    login(opage, base, "owner@example.com")
    opage.goto(f"{base}/console/#/keys")
    opage.get_by_role("heading", name="People who can log in").wait_for()
    check(opage.locator("#inv-role option[value=agent]").count() == 1, "the invitation offers the agent role")
    opage.locator("#inv-email").fill("someone@other.example")
    opage.locator("#inv-role").select_option("agent")
    opage.get_by_role("button", name="Invite").click()
    opage.get_by_text("An invitation for someone@other.example").first.wait_for()
    text = opage.locator("main").inner_text().lower()
    check("exist" not in text and "another business" not in text and "already" not in text, "inviting an address of another business says nothing of it")
    # A thread whose newest entry is a note, opened by someone who has not read it.
    api(base, admin_key, "POST", f"/conversations/{ada['id']}/notes", {"businessId": business, "text": "Handing this one to the owner."})
    opage.goto(f"{base}/console/#/inbox/{ada['id']}")
    opage.locator("#thread .turn.note", has_text="Handing this one").wait_for()
    opage.wait_for_load_state("networkidle")
    check(opage.get_by_role("heading", name="Something went wrong").count() == 0 and opage.locator(".conversations a.unread", has_text="Ada").count() == 0,
          "a thread ending in a note opens and is read up to it")
    owner.close()


def main():
    drive(run, "browser tests (team.py)")


if __name__ == "__main__":
    main()
