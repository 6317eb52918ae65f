// The team inbox: conversations across chatapp and photoapp (operations
// 61-65 and 76-81). At 1280 px three panes scroll on their own: the list,
// the open conversation's thread (which follows new messages and delivery
// states by polling) and its contact's details. An owner or support agent
// (communications:write) replies (sendMessage; while the AI agent answers,
// sending takes the conversation over), writes internal notes, assigns,
// resolves and reopens, takes over and hands back, and puts in saved
// replies; an owner links a photoapp user to a contact (operation 34); a
// viewer reads.
"use strict";

// The list's view and filters, kept while the reader moves between conversations.
const inboxFilters = { view: "", q: "", channel: "", status: "", agentId: "", unread: "" };

// The views above the list: [value, label, query].
const INBOX_VIEWS = [
  ["", "All", {}],
  ["mine", "Mine", { assignee: "me" }],
  ["unassigned", "Unassigned", { assignee: "none" }],
  ["open", "Open", { state: "open" }],
  ["resolved", "Resolved", { state: "resolved" }],
];

const CONVERSATION_STATUS = {
  agent: ["active", "Agent answers"],
  human: ["handoff", "Taken over"],
  automation: ["accepted", "Automation answers"],
  unassigned: ["", "Nobody answers"],
};

function conversationName(c) {
  return (c.contact && c.contact.name) || c.participantName || c.recipient;
}

function conversationBadge(c) {
  const [tone, text] = CONVERSATION_STATUS[c.status] || ["", c.status];
  return badge(tone, text);
}

// A time as people say it ("now", "2 min", "3 h", "4 d", then the date),
// the exact time on hover (and in datetime for assistive technology).
function ago(iso) {
  const d = new Date(iso);
  if (isNaN(d)) return String(iso || "");
  const s = (Date.now() - d.getTime()) / 1000;
  if (s < 45) return "now";
  if (s < 3600) return `${Math.max(1, Math.round(s / 60))} min`;
  if (s < 86400) return `${Math.round(s / 3600)} h`;
  if (s < 7 * 86400) return `${Math.round(s / 86400)} d`;
  return d.toLocaleDateString();
}

function timeAgo(iso) {
  return h("time", { datetime: iso, title: when(iso), text: ago(iso) });
}

// Who sent an outbound message or wrote a note, in words.
function senderName(sentBy) {
  if (!sentBy) return "Business";
  if (sentBy.kind === "agent") return `${sentBy.name || "AI agent"} (AI agent)`;
  if (sentBy.kind === "person") return sentBy.name || "A former colleague";
  if (sentBy.kind === "campaign") return `Campaign ${sentBy.name || ""}`.trim();
  return "API";
}

// One conversation in the list: a link to it, what it is, the newest entry
// and who wrote it.
function conversationItem(c, openId) {
  const last = c.lastEntry;
  const who = !last ? "" : last.direction === "outbound" ? `${senderName(last.sentBy)}: ` : "";
  const preview = last ? `${who}${last.kind === "comment" ? "(comment) " : ""}${last.text === null ? "[image]" : last.text}` : "No messages yet";
  return h("li", {},
    h("a", { class: "conversation" + (c.unreadCount ? " unread" : ""), href: `#/inbox/${c.id}`, "aria-current": c.id === openId ? "true" : null },
      h("span", { class: "conversation-head" },
        h("span", { class: "conversation-name", text: conversationName(c) }),
        c.unreadCount ? badge("open", `${c.unreadCount} unread`) : null,
        h("span", { class: "muted conversation-time" }, timeAgo(c.lastActivityAt))),
      h("span", { class: "conversation-meta" }, badge("", c.channel), " ", conversationBadge(c),
        c.state === "resolved" ? [" ", badge("completed", "Resolved")] : null,
        " ", h("span", { class: "muted assignee", text: c.assignee ? `Assigned: ${c.assignee.email || "a former colleague"}` : "Unassigned" })),
      h("span", { class: "conversation-preview", text: preview })));
}

function viewQuery() {
  return (INBOX_VIEWS.find(([v]) => v === inboxFilters.view) || INBOX_VIEWS[0])[2];
}

async function inboxList(box, openId, cursor) {
  const { view, ...filters } = inboxFilters;
  const page = await api("GET", "/api/v1/conversations?" + q({ businessId: biz(), limit: 50, cursor, ...filters, ...viewQuery() }));
  const filtered = view || Object.values(filters).some((v) => v);
  box.replaceChildren(page.conversations.length
    ? h("ul", { class: "plain conversations", "aria-label": "Conversations" }, page.conversations.map((c) => conversationItem(c, openId)))
    : empty(filtered ? "No conversation matches this view." : "No conversations yet. They start when a customer writes to a connected number or account."));
  if (page.nextCursor) box.append(h("button", { type: "button", class: "secondary", text: "Next page", onclick: () => inboxList(box, openId, page.nextCursor) }));
}

// The views as a row of toggle buttons (Mine, Unassigned, Open, Resolved).
function inboxViews(box, openId) {
  const row = h("div", { class: "inbox-views", role: "group", "aria-label": "Views" });
  // A viewer is never assigned anything: no "Mine".
  const views = INBOX_VIEWS.filter(([v]) => v !== "mine" || canWrite("communications:write"));
  const draw = () => row.replaceChildren(...views.map(([v, label]) => h("button", {
    type: "button", class: "view", "aria-pressed": inboxFilters.view === v ? "true" : "false", text: label,
    onclick: async () => { inboxFilters.view = v; draw(); await inboxList(box, openId); },
  })));
  draw();
  return row;
}

async function inboxFilterForm(box, openId) {
  const agents = await api("GET", "/api/v1/agents?" + q({ businessId: biz(), limit: 200 })).catch(() => ({ agents: [] }));
  const option = (value, text, current) => h("option", { value, text, selected: value === current });
  const narrowed = ["channel", "status", "agentId", "unread"].some((k) => inboxFilters[k]);
  const form = h("form", { role: "search", class: "inbox-filters", novalidate: true },
    h("label", { for: "i-q", text: "Search conversations" }),
    h("div", { class: "search-row" },
      h("input", { id: "i-q", name: "q", type: "search", maxlength: 100, value: inboxFilters.q, placeholder: "Name, number or text" }),
      h("button", { type: "submit", class: "secondary", text: "Filter" })),
    // The other filters fold away (a phone's first screen is the list).
    h("details", { open: narrowed },
      h("summary", { text: "More filters" }),
      h("label", { for: "i-channel", text: "Channel" }),
      h("select", { id: "i-channel", name: "channel" }, [["", "All channels"], ["chatapp", "chatapp"], ["photoapp", "photoapp"]].map(([v, t]) => option(v, t, inboxFilters.channel))),
      h("label", { for: "i-status", text: "Who answers" }),
      h("select", { id: "i-status", name: "status" }, [["", "Anyone"], ...Object.entries(CONVERSATION_STATUS).map(([v, [, t]]) => [v, t])].map(([v, t]) => option(v, t, inboxFilters.status))),
      h("label", { for: "i-agent", text: "Agent" }),
      h("select", { id: "i-agent", name: "agentId" }, option("", "Any agent", inboxFilters.agentId),
        agents.agents.filter((a) => ["chatapp", "photoapp"].includes(a.channel)).map((a) => option(a.id, a.name, inboxFilters.agentId))),
      h("label", { for: "i-unread", text: "Show" }),
      h("select", { id: "i-unread", name: "unread" }, [["", "All conversations"], ["true", "Unread only"]].map(([v, t]) => option(v, t, inboxFilters.unread)))));
  onSubmit(form, async () => {
    for (const k of Object.keys(inboxFilters)) if (k !== "view") inboxFilters[k] = (form[k].value || "").trim();
    await inboxList(box, openId);
  });
  return form;
}

// One message, comment or note as a turn of the conversation: what the
// customer sent on the left, what the business sent on the right (saying
// who sent it), notes across, with its state and time.
function entryTurn(e) {
  const failed = e.status === "failed";
  const inbound = e.direction === "inbound";
  if (e.kind === "note") {
    return h("li", { class: "turn note", "data-entry": e.id },
      h("span", { class: "speaker" }, `Internal note · ${senderName(e.sentBy)} · `, timeAgo(e.createdAt)),
      h("p", { text: e.text }));
  }
  const who = e.kind === "comment" ? `Comment${e.postId ? ` on post ${e.postId}` : ""}` : (inbound ? "Customer" : senderName(e.sentBy));
  return h("li", { class: `turn ${e.direction}${failed ? " failed" : ""}`, "data-entry": e.id },
    h("span", { class: "speaker" }, `${who} · `, timeAgo(e.createdAt)),
    h("p", { text: e.text === null ? "[image]" : e.text }),
    !inbound || e.kind === "comment" ? h("p", { class: "entry-state" }, badge(e.status), e.failure ? ` ${e.failure.message || e.failure.code}` : null) : null,
    e.reaction ? h("p", { class: "muted", text: `Reaction: ${e.reaction}` }) : null,
    e.reply ? h("p", { class: "muted", text: `Public reply: ${e.reply.text}` }) : null);
}

// The entries shown (newest first, as read), oldest at the top.
function drawThread(list, entries) {
  list.replaceChildren(...[...entries].reverse().map(entryTurn));
}

function handoffButton(c, redraw) {
  const taken = c.humanHandoffActive;
  return h("button", { type: "button", id: "handoff", class: taken ? "secondary" : null, text: taken ? "Hand back to the agent" : "Take over",
    onclick: once(async (sub) => {
      await api("PATCH", `/api/v1/conversations/${c.id}`, { businessId: biz(), humanHandoffActive: !taken }, sub);
      toast(taken ? "Handed back: the agent answers the next message." : "Taken over: the agent stays silent here until you hand back.");
      await redraw();
    }) });
}

function resolveButton(c, redraw) {
  const resolved = c.state === "resolved";
  return h("button", { type: "button", id: "resolve", class: "secondary", text: resolved ? "Reopen" : "Resolve",
    onclick: once(async (sub) => {
      await api("PATCH", `/api/v1/conversations/${c.id}`, { businessId: biz(), state: resolved ? "open" : "resolved" }, sub);
      toast(resolved ? "Reopened." : "Resolved: a new message from the customer opens it again.");
      await redraw();
    }) });
}

// Who the conversation is assigned to: nobody, or an owner or support agent.
function assignForm(c, team, redraw) {
  const people = team.filter((m) => m.role !== "viewer");
  const select = h("select", { id: "assign", name: "assignedUserId" },
    h("option", { value: "", text: "Nobody", selected: !c.assignee }),
    people.map((m) => h("option", { value: m.userId, text: m.you ? `${m.email} (you)` : m.email, selected: !!c.assignee && c.assignee.userId === m.userId })));
  const form = h("form", { class: "inline assign", novalidate: true, "aria-label": "Assignment" },
    h("label", { for: "assign", text: "Assigned to" }), select);
  select.addEventListener("change", async () => {
    select.disabled = true;
    try {
      await api("PATCH", `/api/v1/conversations/${c.id}`, { businessId: biz(), assignedUserId: select.value || null });
      toast(select.value ? `Assigned to ${select.selectedOptions[0].textContent}.` : "Unassigned.");
      await redraw();
    } catch (err) { toast(err.message); } finally { select.disabled = false; }
  });
  return form;
}

// The reply box: a reply to the customer or an internal note, with the
// business's saved replies to put in. While the AI agent answers the
// conversation, sending a reply takes it over first (the box says so).
function composer(c, saved, after) {
  let mode = "reply";
  const notice = h("p", { class: "notice takeover", role: "note" });
  const label = h("label", { for: "i-reply", text: "Reply" });
  const text = h("textarea", { id: "i-reply", name: "text", rows: 2, maxlength: 4096 });
  const send = h("button", { type: "submit", text: "Send" });
  const drawMode = () => {
    label.textContent = mode === "note" ? "Note" : "Reply";
    send.textContent = mode === "note" ? "Add note" : "Send";
    text.maxLength = mode === "note" ? 4000 : 4096;
    notice.hidden = !(mode === "reply" && c.status === "agent");
    notice.textContent = `Sending takes this conversation over from ${c.agent ? c.agent.name : "the agent"} (the AI agent): it stops answering here until you hand it back.`;
  };
  const modes = h("fieldset", { class: "modes" }, h("legend", { class: "visually-hidden", text: "Write" }),
    [["reply", "Reply to the customer"], ["note", "Internal note (never sent)"]].map(([v, t]) => h("label", { class: "check" },
      h("input", { type: "radio", name: "mode", value: v, checked: v === mode, onchange: () => { mode = v; drawMode(); } }), " ", t)));
  const pick = saved.length ? h("span", { class: "saved" }, h("label", { for: "i-saved", text: "Saved reply" }),
    h("select", { id: "i-saved", name: "saved", onchange: (e) => {
      const s = saved.find((r) => r.id === e.target.value);
      if (s) { text.value = text.value ? `${text.value}\n${s.text}` : s.text; text.focus(); }
      e.target.value = "";
    } }, h("option", { value: "", text: "Put one in…" }), saved.map((s) => h("option", { value: s.id, text: s.title })))) : null;
  const form = h("form", { class: "reply", novalidate: true },
    h("p", { class: "form-error", role: "alert" }), h("div", { class: "tools" }, modes, pick), notice, label, text,
    h("div", { class: "actions" }, send, h("a", { href: "#/inbox/saved-replies", class: "muted", text: "Saved replies" })));
  drawMode();
  onSubmit(form, async (sub) => {
    const value = text.value;
    if (!value.trim()) throw new ApiError(400, { message: mode === "note" ? "Write the note first." : "Write a reply first." });
    if (mode === "note") {
      await api("POST", `/api/v1/conversations/${c.id}/notes`, { businessId: biz(), text: value }, sub);
    } else {
      if (c.status === "agent") await api("PATCH", `/api/v1/conversations/${c.id}`, { businessId: biz(), humanHandoffActive: true }, sub);
      const body = c.channel === "photoapp"
        ? { businessId: biz(), channel: "photoapp", photoappAccountId: c.providerAccountId, to: c.recipient, type: "text", text: value }
        : { businessId: biz(), channel: "chatapp", phoneNumberId: c.phoneNumberId, to: c.recipient, type: "text", text: value };
      await api("POST", "/api/v1/messages", body, sub);
    }
    text.value = "";
    await after();
  });
  form.redraw = (fresh) => { c = fresh; drawMode(); };
  return form;
}

function linkForm(c, after) {
  const form = h("form", { class: "link-contact", novalidate: true },
    h("h3", { text: "Link to a contact" }),
    h("p", { class: "muted", text: "This photoapp user is not a contact yet. Give their mobile number to join this conversation to the contact's timeline." }),
    h("p", { class: "form-error", role: "alert" }),
    h("label", { for: "i-link-mobile", text: "Mobile" }),
    phoneInput({ id: "i-link-mobile", name: "mobile", "aria-describedby": "i-link-mobile-hint", "data-hint": "i-link-mobile-hint" }), phoneHint("i-link-mobile-hint"),
    h("label", { for: "i-link-name", text: "Name (for a new contact)" }),
    h("input", { id: "i-link-name", name: "name", value: c.participantName || "", maxlength: 200 }),
    h("button", { type: "submit", text: "Link contact" }));
  onSubmit(form, async (sub) => {
    const body = { businessId: biz(), channel: "photoapp", mobile: phoneE164(form.mobile.value) };
    if (form.name.value.trim()) body.name = form.name.value.trim();
    await api("POST", `/api/v1/channel-participants/${c.id}/link-contact`, body, sub);
    toast("Linked to the contact.");
    await after();
  });
  return form;
}

// The contact beside the thread: fields, categories, recent calls and campaigns.
async function contactDetails(pane, c, relink) {
  if (!c.contact) {
    pane.replaceChildren(...kids([h("h2", { text: "Contact" }),
      h("p", { class: "muted", text: `${conversationName(c)} is a photoapp user not linked to a contact yet.` }),
      canWrite("contacts:write") ? linkForm(c, relink) : null]));
    return;
  }
  const id = c.contact.id;
  const [detail, calls, timeline, campaigns] = await Promise.all([
    api("GET", `/api/v1/contacts/${id}?` + q({ businessId: biz() })),
    canWrite("voice:read") ? api("GET", "/api/v1/voice/calls?" + q({ businessId: biz(), contactId: id, limit: 5 })).catch(() => ({ calls: [] })) : { calls: [] },
    api("GET", `/api/v1/contacts/${id}/timeline?` + q({ businessId: biz(), limit: 100 })).catch(() => ({ entries: [] })),
    canWrite("campaigns:read") ? api("GET", "/api/v1/campaigns?" + q({ businessId: biz(), limit: 200 })).catch(() => ({ campaigns: [] })) : { campaigns: [] },
  ]);
  const k = detail.contact;
  const fields = Object.entries(k.fields || {});
  const names = new Map((campaigns.campaigns || []).map((x) => [x.id, x.name]));
  const theirs = [...new Set((timeline.entries || []).map((e) => e.campaignId).filter(Boolean))].slice(0, 5);
  pane.replaceChildren(...kids([
    h("h2", {}, h("a", { href: `#/contacts/${id}`, text: k.name || k.mobile })),
    h("p", { class: "muted mobile", text: k.mobile }),
    k.communicationBlocked ? h("p", {}, badge("blocked", "Blocked")) : null,
    h("h3", { text: "Categories" }),
    h("p", { class: "categories" }, (k.categories || []).map((x) => [badge("", x.name), " "])),
    h("h3", { text: "Fields" }),
    fields.length ? h("dl", { class: "fields" }, fields.map(([n, v]) => [h("dt", { text: n }), h("dd", { text: v })])) : h("p", { class: "muted", text: "No fields." }),
    h("h3", { text: "Recent calls" }),
    calls.calls.length ? h("ul", { class: "plain recent" }, calls.calls.map((x) => h("li", {},
      h("a", { href: `#/calls/${x.id}`, text: x.agentName || "Call" }), " ", badge(x.status), " ", timeAgo(x.createdAt)))) : h("p", { class: "muted", text: "No calls." }),
    h("h3", { text: "Campaigns" }),
    theirs.length ? h("ul", { class: "plain recent" }, theirs.map((x) => h("li", {}, h("a", { href: `#/campaigns/${x}`, text: names.get(x) || "A campaign" })))) : h("p", { class: "muted", text: "No campaigns." }),
  ]));
}

async function inboxThread(pane, details, id, refreshList) {
  const write = canWrite("communications:write");
  const path = `/api/v1/conversations/${id}`;
  let [{ conversation: c }, page, team, saved] = await Promise.all([
    api("GET", path + "?" + q({ businessId: biz() })),
    api("GET", `${path}/thread?` + q({ businessId: biz(), limit: 50 })),
    write ? api("GET", "/api/v1/team-members?" + q({ businessId: biz() })).then((t) => t.members).catch(() => []) : [],
    write ? api("GET", "/api/v1/saved-replies?" + q({ businessId: biz() })).then((s) => s.savedReplies).catch(() => []) : [],
  ]);
  const list = h("ol", { class: "chat", id: "thread", "aria-label": `Conversation with ${conversationName(c)}`, "aria-live": "polite" });
  const scroller = h("div", { class: "thread-scroll", tabindex: "0", "aria-label": "Messages" });
  const head = h("div", { class: "thread-head" });
  let olderCursor = page.nextCursor;
  const older = h("p", {});
  // The newest page (read again by the poll) and the older pages asked for.
  let newest = page.entries;
  let olderEntries = [];
  let shown = newest;
  const atEnd = () => scroller.scrollHeight - scroller.scrollTop - scroller.clientHeight < 40;
  const toEnd = () => { scroller.scrollTop = scroller.scrollHeight; };

  // A reader who can answer and sees the newest entry has read up to it.
  const markRead = async () => {
    if (!write || !c.unreadCount || !shown.length) return;
    ({ conversation: c } = await api("POST", `${path}/read`, { businessId: biz(), lastSeenEntryId: shown[0].id }));
    await refreshList();
  };
  const drawHead = () => {
    head.replaceChildren(...kids([
      h("h2", { text: conversationName(c) }),
      h("p", { class: "conversation-meta" }, badge("", c.channel), " ", conversationBadge(c), " ",
        c.state === "resolved" ? [badge("completed", "Resolved"), " "] : null,
        h("span", { class: "muted", text: c.channel === "chatapp" ? `${c.recipient} on ${c.phoneNumberId}` : `photoapp user of ${c.providerAccountId}` }),
        c.contact ? [" ", h("a", { href: `#/contacts/${c.contact.id}`, text: "Contact" })] : null,
        c.agent ? h("span", { class: "muted", text: ` · Agent: ${c.agent.name}` }) : null),
      write ? h("div", { class: "actions" }, assignForm(c, team, reload), resolveButton(c, reload), handoffButton(c, reload))
        : h("p", { class: "muted", text: c.assignee ? `Assigned to ${c.assignee.email || "a former colleague"}` : "Unassigned" }),
      // (A writer's reply box says what sending does while the agent answers.)
      !write && c.status === "agent" ? h("p", { class: "muted", text: "The agent answers this conversation." }) : null]));
  };
  const drawOlder = () => {
    older.replaceChildren(...kids([olderCursor ? h("a", { href: "#", id: "older", text: "Show older messages", onclick: async (e) => {
      e.preventDefault();
      const more = await api("GET", `${path}/thread?` + q({ businessId: biz(), limit: 50, cursor: olderCursor }));
      olderCursor = more.nextCursor;
      olderEntries = [...olderEntries, ...more.entries];
      shown = [...newest, ...olderEntries];
      drawThread(list, shown);
      drawOlder();
    } }) : null]));
  };
  let box = null;
  // Reads the conversation and its newest page again; draws what changed.
  const reload = async () => {
    const [{ conversation }, fresh] = await Promise.all([
      api("GET", path + "?" + q({ businessId: biz() })),
      api("GET", `${path}/thread?` + q({ businessId: biz(), limit: 50 })),
    ]);
    const changed = JSON.stringify(conversation) !== JSON.stringify(c);
    c = conversation;
    if (changed) { drawHead(); if (box) box.redraw(c); }
    if (JSON.stringify(fresh.entries) !== JSON.stringify(newest)) {
      const follow = atEnd();
      newest = fresh.entries;
      const seen = new Set(newest.map((e) => e.id));
      shown = [...newest, ...olderEntries.filter((e) => !seen.has(e.id))];
      drawThread(list, shown);
      if (follow) toEnd();
    }
    await markRead();
    if (changed) await refreshList();
  };

  drawHead();
  drawThread(list, shown);
  drawOlder();
  scroller.append(older, ...kids([shown.length ? null : empty("No messages in this conversation yet."), list]));
  box = write ? composer(c, saved, async () => { await reload(); toEnd(); }) : null;
  pane.replaceChildren(...kids([
    h("p", { class: "back" }, h("a", { href: "#/inbox", text: "← All conversations" })),
    head, scroller, box]));
  // The thread opens at its newest message, the reply box in view (after
  // the router has focused the page).
  toEnd();
  pane.settle = () => {
    toEnd();
    if (window.matchMedia("(max-width: 900px)").matches && (box || list).isConnected) (box || list).scrollIntoView({ block: "end" });
  };
  await markRead();
  contactDetails(details, c, async () => { await reload(); await contactDetails(details, c, reload); }).catch(() => details.replaceChildren(h("p", { class: "muted", text: "The contact's details are not available." })));
  keepPolling(async () => { await reload(); return false; }, 1500);
}

async function inboxPage(openId) {
  const listBox = h("div", { id: "conversation-list" });
  const pane = h("section", { class: "thread-pane", "aria-label": "Conversation" });
  const details = h("aside", { class: "contact-pane", "aria-label": "Contact details" }, loading());
  const refreshList = () => inboxList(listBox, openId).catch(() => null);
  await inboxList(listBox, openId);
  const filters = await inboxFilterForm(listBox, openId);
  show(h("h1", { text: "Inbox" }),
    canWrite("communications:write") ? h("p", { class: "inbox-links" }, h("a", { href: "#/messages", text: "New message" }), " to a mobile that has not written yet · ",
      h("a", { href: "#/inbox/saved-replies", text: "Saved replies" })) : null,
    h("div", { class: "inbox" + (openId ? " open" : "") },
      h("section", { class: "inbox-list", "aria-label": "Conversations" }, inboxViews(listBox, openId), filters, listBox),
      openId ? [pane, details] : h("section", { class: "thread-pane empty-pane" }, empty("Choose a conversation to read it."))));
  if (openId) {
    await inboxThread(pane, details, openId, refreshList);
    // Once the router has focused the page (it runs when this returns).
    setTimeout(() => pane.settle && pane.settle(), 0);
  }
  // The list follows new conversations and unread counts.
  keepPolling(async () => { await refreshList(); return false; }, 4000);
}

// The business's saved replies: what the reply box puts in.
async function savedRepliesPage() {
  const here = location.hash;
  const { savedReplies } = await api("GET", "/api/v1/saved-replies?" + q({ businessId: biz() }));
  const write = canWrite("communications:write");
  const redraw = () => savedRepliesPage();
  const rows = savedReplies.map((s) => h("tr", {},
    h("td", { class: "title", text: s.title }),
    h("td", { class: "text", text: s.text }),
    h("td", {}, timeAgo(s.updatedAt)),
    h("td", {}, write ? h("button", { type: "button", class: "danger", text: "Delete", "aria-label": `Delete ${s.title}`, onclick: once(async (sub) => {
      if (!confirm(`Delete the saved reply "${s.title}"?`)) return;
      await api("DELETE", `/api/v1/saved-replies/${s.id}?` + q({ businessId: biz() }), undefined, sub);
      toast("Saved reply deleted.");
      await redraw();
    }) }) : null)));
  const form = write ? h("form", { class: "card", novalidate: true, id: "new-saved-reply" },
    h("h2", { text: "New saved reply" }),
    h("p", { class: "form-error", role: "alert" }),
    h("label", { for: "sr-title", text: "Title" }),
    h("input", { id: "sr-title", name: "title", maxlength: 100, autocomplete: "off" }),
    h("label", { for: "sr-text", text: "Text" }),
    h("textarea", { id: "sr-text", name: "text", rows: 4, maxlength: 4096 }),
    h("button", { type: "submit", text: "Save reply" })) : null;
  if (form) {
    onSubmit(form, async (sub) => {
      const details = [];
      if (!form.title.value.trim()) details.push({ field: "title", message: "The title is required" });
      if (!form.text.value.trim()) details.push({ field: "text", message: "The text is required" });
      if (details.length) throw new ApiError(400, { message: "Check the fields marked below.", details });
      await api("POST", "/api/v1/saved-replies", { businessId: biz(), title: form.title.value, text: form.text.value }, sub);
      toast("Saved. It is in every reply box of the inbox.");
      await redraw();
    });
  }
  showOn(here, h("h1", { text: "Saved replies" }),
    h("p", {}, h("a", { href: "#/inbox", text: "← Inbox" })),
    h("p", { class: "muted", text: "Ready answers for the inbox's reply box; the person replying can change them before sending." }),
    table(["Title", "Text", "Changed", ""], rows, "No saved replies yet."), form);
}
