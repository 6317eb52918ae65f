#!/usr/bin/env python3
"""Drives the console's inbox in a real browser against the real binary
(support.drive: a seeded business, an owner and a viewer, chatapp number
pn-browser): conversations made by the sandbox's inbound routes (a chatapp
contact answered by its agent, a photoapp user) are listed with their
unread state; the owner opens one, takes it over from the agent, replies
once with a double click (counted over the API), watches the reply's
delivery state change without a reload, hands it back, filters and
searches the list, and links the photoapp user to a contact. Every inbox
page passes sweep() as owner and viewer at 1280 and 375 px, and the viewer
is offered no reply, handoff or link.
Usage: tests/browser/inbox.py [BINARY]
"""
import os

from support import *  # noqa: F401,F403 (the helpers and checks this script drives the pages with)

ACCOUNT = "acct-browser"
ADA = "+15550009001"


def sandbox(base, key, path, body):
    """An inbound message as the provider would send it (--sandbox-routes)."""
    status, d = http("POST", f"{base}/sandbox/v1{path}", key, body)
    assert status == 202, (path, status, d)



def more_filters(page):
    """Opens the folded filters (open already while one is set)."""
    if page.locator(".inbox-filters details").get_attribute("open") is None:
        page.get_by_text("More filters").click()


def run(page, base, business, admin_key, voice, receiver):
    page.set_default_timeout(WAIT_MS)
    page.goto(f"{base}/console/")
    data = data_dir()
    admin(data, "channel", "connect", "--business", business, "--channel", "photoapp", "--account-id", ACCOUNT, "--username", "shop")
    # Delivery steps 1.5 s apart (the sandbox adapter as the business's
    # plugin), so the page shows a state before the last.
    admin(data, "provider", "use", "--business", business, "--interface", "messenger", "--plugin", "acme-messenger",
          "--plugin-dir", os.path.join(data, "plugins"), "--setting", "api-token=t0ken", "--setting", "step-delay-ms=1500")
    agent = api(base, admin_key, "POST", "/agents", {"businessId": business, "channel": "chatapp", "name": "Desk agent", "instructions": "Answer questions."})["agent"]["id"]
    api(base, admin_key, "PATCH", "/channels/assignments", {"businessId": business, "channel": "chatapp", "phoneNumberId": "pn-browser", "aiAgentId": agent, "autoReplyEnabled": True})
    convs = lambda query="": api(base, admin_key, "GET", f"/conversations?businessId={business}{query}")["conversations"]

    # A customer writes through the sandbox's inbound route; the agent answers.
    sandbox(base, admin_key, "/chatapp/inbound", {"phoneNumberId": "pn-browser", "from": ADA, "text": "Are you open on Sunday?", "name": "Ada"})
    ada = wait_api("Ada's conversation and the agent's reply", lambda: [c for c in convs("&q=Ada") if c["lastEntry"] and c["lastEntry"]["direction"] == "outbound"])[0]
    sandbox(base, admin_key, "/photoapp/inbound", {"photoappAccountId": ACCOUNT, "from": "u-77", "text": "Is the blue one in stock?", "name": "zoe.photo"})
    zoe = wait_api("Zoe's conversation", lambda: convs("&channel=photoapp"))[0]

    login(page, base, "owner@example.com")
    nav(page, "Inbox")
    page.get_by_role("heading", name="Inbox").wait_for()
    items = page.locator(".conversations a")
    items.filter(has_text="zoe.photo").wait_for()
    names = [t.split("\n")[0] for t in items.all_inner_texts()]
    check(names[:2] == ["zoe.photo", "Ada"], f"the conversations are listed newest first ({names})")
    check(items.filter(has_text="zoe.photo").filter(has_text="1 unread").count() == 1, "an unread conversation says so")

    # Open Ada's: the question and the agent's answer; opening it reads it.
    items.filter(has_text="Ada").click()
    thread = page.locator("#thread")
    thread.locator(".turn.inbound", has_text="Are you open on Sunday?").wait_for()
    check(thread.locator(".turn.outbound").count() == 1, "the thread shows the agent's reply on the business's side")
    wait_api("Ada's conversation read", lambda: [c for c in convs() if c["id"] == ada["id"] and c["unreadCount"] == 0])
    check(True, "opening a conversation marks it read (over the API)")

    # Take over: the agent stays silent in this conversation.
    page.get_by_role("button", name="Take over").click()
    page.get_by_role("button", name="Hand back to the agent").wait_for()
    check(api(base, admin_key, "GET", f"/conversations/{ada['id']}?businessId={business}")["conversation"]["humanHandoffActive"], "Take over hands the conversation to a person (over the API)")
    page.evaluate("() => { window.__sameDocument = true; }")
    # States the page shows for the reply, as they are drawn.
    page.evaluate("""() => { window.__states = []; new MutationObserver(() => {
        const t = [...document.querySelectorAll('#thread .turn.outbound')].find((e) => e.textContent.includes('Sam here'));
        const s = t && t.querySelector('.entry-state .badge');
        if (s && window.__states[window.__states.length - 1] !== s.textContent) window.__states.push(s.textContent);
      }).observe(document.getElementById('main'), { childList: true, subtree: true, characterData: true }); }""")
    page.get_by_label("Reply", exact=True).fill("Hi Ada, Sam here. Yes, 10 to 4.")
    page.get_by_role("button", name="Send").dblclick()
    thread.locator(".turn.outbound", has_text="Hi Ada, Sam here.").wait_for()
    thread.locator(".turn.outbound", has_text="Sam here").locator(".badge", has_text="read").wait_for()
    states = page.evaluate("window.__states")
    check(len(states) >= 2 and states[-1] == "read" and page.evaluate("window.__sameDocument === true"),
          f"the reply's delivery state changes on the page without a reload ({states})")
    sent = [e for e in api(base, admin_key, "GET", f"/conversations/{ada['id']}/thread?businessId={business}")["entries"] if "Sam here" in (e["text"] or "")]
    check(len(sent) == 1, f"a double click on Send sends one message ({len(sent)})")

    # While taken over, a new message gets no auto-reply; handed back, the next does.
    sandbox(base, admin_key, "/chatapp/inbound", {"phoneNumberId": "pn-browser", "from": ADA, "text": "Thanks Sam!", "name": "Ada"})
    thread.locator(".turn.inbound", has_text="Thanks Sam!").wait_for()
    page.get_by_role("button", name="Hand back to the agent").click()
    page.get_by_role("button", name="Take over").wait_for()
    check(not api(base, admin_key, "GET", f"/conversations/{ada['id']}?businessId={business}")["conversation"]["humanHandoffActive"], "Hand back returns it to the agent (over the API)")
    outbound = lambda: [e for e in api(base, admin_key, "GET", f"/conversations/{ada['id']}/thread?businessId={business}")["entries"] if e["direction"] == "outbound"]
    check(len(outbound()) == 2, "no auto-reply came while the conversation was taken over")
    sandbox(base, admin_key, "/chatapp/inbound", {"phoneNumberId": "pn-browser", "from": ADA, "text": "One more question", "name": "Ada"})
    wait_api("the agent's reply after hand back", lambda: len(outbound()) == 3)
    check(True, "handed back, the agent answers the next message")

    # Filters and search.
    more_filters(page)
    page.get_by_label("Channel").select_option("photoapp")
    page.get_by_role("button", name="Filter").click()
    page.locator(".conversations a", has_text="Ada").wait_for(state="detached")
    check(page.locator(".conversations a").all_inner_texts()[0].startswith("zoe.photo"), "the channel filter keeps photoapp conversations")
    more_filters(page)
    page.get_by_label("Channel").select_option("")
    page.get_by_label("Search conversations").fill("sunday")
    page.get_by_role("button", name="Filter").click()
    page.locator(".conversations a", has_text="zoe.photo").wait_for(state="detached")
    check(page.locator(".conversations a", has_text="Ada").count() == 1, "a search finds a conversation by a message's text")
    page.get_by_label("Search conversations").fill("")
    more_filters(page)
    page.get_by_label("Who answers").select_option("agent")
    page.get_by_role("button", name="Filter").click()
    page.locator(".conversations a", has_text="zoe.photo").wait_for(state="detached")
    more_filters(page)
    page.get_by_label("Who answers").select_option("")
    page.get_by_role("button", name="Filter").click()
    page.locator(".conversations a", has_text="zoe.photo").wait_for()

    # Link the photoapp user to a contact.
    page.locator(".conversations a", has_text="zoe.photo").click()
    page.locator("#thread .turn.inbound", has_text="Is the blue one in stock?").wait_for()
    page.get_by_label("Mobile", exact=True).fill("+15550009077")
    page.get_by_role("button", name="Link contact").click()
    page.locator(".thread-head").get_by_role("link", name="Contact").wait_for()
    linked = api(base, admin_key, "GET", f"/conversations/{zoe['id']}?businessId={business}")["conversation"]["contact"]
    check(linked is not None and linked["name"] == "zoe.photo", f"the participant is linked to a contact (over the API: {linked})")

    routes = ["#/inbox", f"#/inbox/{ada['id']}", f"#/inbox/{zoe['id']}"]
    sweep(page, base, routes, 1280)
    sweep(page, base, routes, 375)
    # At 375 px a conversation is the whole page, with a way back.
    page.locator(".thread-pane .back a").click()
    page.locator(".conversations a", has_text="Ada").wait_for()
    check(True, "at 375 px the thread leads back to the list")

    viewer = page.context.browser.new_context()
    vpage = viewer.new_page()
    vpage.on("pageerror", lambda e: ERRORS.append(str(e)))
    vpage.on("console", lambda m: m.type == "error" and ERRORS.append(m.text))
    vpage.set_default_timeout(WAIT_MS)
    login(vpage, base, "viewer@example.com")
    vpage.goto(f"{base}/console/#/inbox/{ada['id']}")
    vpage.locator("#thread .turn.inbound", has_text="Are you open on Sunday?").wait_for()
    check(vpage.get_by_label("Reply", exact=True).count() == 0 and vpage.get_by_role("button", name="Take over").count() == 0,
          "a viewer reads the thread and is offered no reply or handoff")
    sweep(vpage, base, routes, 1280, viewer=True)
    sweep(vpage, base, routes, 375, viewer=True)
    viewer.close()


def main():
    # The plugin's secret setting (api-token, see drive()) is stored sealed
    # under this key; the server drive() starts inherits it.
    os.environ.setdefault("SWITCHBOARD_SETTINGS_KEY", os.urandom(32).hex())
    drive(run, "browser tests (inbox.py)")


if __name__ == "__main__":
    main()
