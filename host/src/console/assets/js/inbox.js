// The inbox: conversations across chatapp and photoapp (operations 61-65)
// beside the open one's thread, which follows new messages and delivery
// states by polling. An owner replies (sendMessage), takes a conversation
// over from the agent and hands it back, and links a photoapp participant
// to a contact (operation 34); a viewer reads.
"use strict";

// The list's filters, kept while the reader moves between conversations.
const inboxFilters = { q: "", channel: "", status: "", agentId: "", unread: "" };

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

// One conversation in the list: a link to it, what it is, the newest entry.
function conversationItem(c, openId) {
  const last = c.lastEntry;
  const preview = last ? `${last.direction === "outbound" ? "You: " : ""}${last.kind === "comment" ? "(comment) " : ""}${last.text === null ? "[image]" : last.text}` : "No messages yet";
  return h("li", {},
    h("a", { class: "conversation" + (c.unreadCount ? " unread" : ""), href: `#/inbox/${c.id}`, "aria-current": c.id === openId ? "true" : null },
      h("span", { class: "conversation-head" },
        h("span", { class: "conversation-name", text: conversationName(c) }),
        c.unreadCount ? badge("open", `${c.unreadCount} unread`) : null),
      h("span", { class: "conversation-meta" }, badge("", c.channel), " ", conversationBadge(c), " ", h("span", { class: "muted", text: when(c.lastActivityAt) })),
      h("span", { class: "conversation-preview", text: preview })));
}

async function inboxList(box, openId, cursor) {
  const page = await api("GET", "/api/v1/conversations?" + q({ businessId: biz(), limit: 50, cursor, ...inboxFilters }));
  const filtered = Object.values(inboxFilters).some((v) => v);
  box.replaceChildren(page.conversations.length
    ? h("ul", { class: "plain conversations", "aria-label": "Conversations" }, page.conversations.map((c) => conversationItem(c, openId)))
    : empty(filtered ? "No conversation matches these filters." : "No conversations yet. They start when a customer writes to a connected number or account."));
  if (page.nextCursor) box.append(h("button", { type: "button", class: "secondary", text: "Next page", onclick: () => inboxList(box, openId, page.nextCursor) }));
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
    for (const k of Object.keys(inboxFilters)) inboxFilters[k] = (form[k].value || "").trim();
    await inboxList(box, openId);
  });
  return form;
}

// One message or comment as a turn of the conversation: what the customer
// sent on the left, what the business sent on the right, with its state.
function entryTurn(e) {
  const failed = e.status === "failed";
  const inbound = e.direction === "inbound";
  const who = e.kind === "comment" ? `Comment${e.postId ? ` on post ${e.postId}` : ""}` : (inbound ? "Customer" : "Business");
  return h("li", { class: `turn ${e.direction}${failed ? " failed" : ""}`, "data-entry": e.id },
    h("span", { class: "speaker", text: `${who} · ${when(e.createdAt)}` }),
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

function replyForm(c, after) {
  const form = h("form", { class: "reply", novalidate: true },
    h("p", { class: "form-error", role: "alert" }),
    h("label", { for: "i-reply", text: "Reply" }),
    h("textarea", { id: "i-reply", name: "text", rows: 3, maxlength: 4096 }),
    h("button", { type: "submit", text: "Send" }));
  onSubmit(form, async (sub) => {
    const text = form.text.value;
    if (!text.trim()) throw new ApiError(400, { message: "Write a reply first." });
    const body = c.channel === "photoapp"
      ? { businessId: biz(), channel: "photoapp", photoappAccountId: c.providerAccountId, to: c.recipient, type: "text", text }
      : { businessId: biz(), channel: "chatapp", phoneNumberId: c.phoneNumberId, to: c.recipient, type: "text", text };
    await api("POST", "/api/v1/messages", body, sub);
    form.text.value = "";
    await after();
  });
  return form;
}

function linkForm(c, after) {
  const form = h("form", { class: "link-contact", novalidate: true },
    h("h3", { text: "Link to a contact" }),
    h("p", { class: "muted", text: "This photoapp user is not a contact yet. Give their mobile number to join this conversation to the contact's timeline." }),
    h("p", { class: "form-error", role: "alert" }),
    h("label", { for: "i-link-mobile", text: "Mobile (E.164)" }),
    h("input", { id: "i-link-mobile", name: "mobile", type: "tel", placeholder: "+14155550123" }),
    h("label", { for: "i-link-name", text: "Name (for a new contact)" }),
    h("input", { id: "i-link-name", name: "name", value: c.participantName || "", maxlength: 200 }),
    h("button", { type: "submit", text: "Link contact" }));
  onSubmit(form, async (sub) => {
    const body = { businessId: biz(), channel: "photoapp", mobile: form.mobile.value.trim() };
    if (form.name.value.trim()) body.name = form.name.value.trim();
    await api("POST", `/api/v1/channel-participants/${c.id}/link-contact`, body, sub);
    toast("Linked to the contact.");
    await after();
  });
  return form;
}

async function inboxThread(pane, id, refreshList) {
  const owner = canWrite("communications:write");
  const path = `/api/v1/conversations/${id}`;
  let { conversation: c } = await api("GET", path + "?" + q({ businessId: biz() }));
  let page = await api("GET", `${path}/thread?` + q({ businessId: biz(), limit: 50 }));
  const list = h("ol", { class: "chat", id: "thread", "aria-label": `Conversation with ${conversationName(c)}`, "aria-live": "polite" });
  const head = h("div", { class: "thread-head" });
  let olderCursor = page.nextCursor;
  const older = h("p", {});
  // The newest page (read again by the poll) and the older pages asked for.
  let newest = page.entries;
  let olderEntries = [];
  let shown = newest;

  // An owner who sees the newest entry has read up to it.
  const markRead = async () => {
    if (!owner || !c.unreadCount || !shown.length) return;
    ({ conversation: c } = await api("POST", `${path}/read`, { businessId: biz(), lastSeenEntryId: shown[0].id }));
    await refreshList();
  };
  const drawHead = () => {
    head.replaceChildren(...kids([
      h("h2", { text: conversationName(c) }),
      h("p", { class: "conversation-meta" }, badge("", c.channel), " ", conversationBadge(c), " ",
        h("span", { class: "muted", text: c.channel === "chatapp" ? `${c.recipient} on ${c.phoneNumberId}` : `photoapp user of ${c.providerAccountId}` }),
        c.contact ? [" ", h("a", { href: `#/contacts/${c.contact.id}`, text: "Contact" })] : null,
        c.agent ? h("span", { class: "muted", text: ` · Agent: ${c.agent.name}` }) : null),
      owner ? h("div", { class: "actions" }, handoffButton(c, reload)) : null,
      owner && c.status === "agent" ? h("p", { class: "muted", text: "The agent answers this conversation. Take it over to answer without it." }) : null]));
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
  // Reads the conversation and its newest page again; draws what changed.
  const reload = async () => {
    const [{ conversation }, fresh] = await Promise.all([
      api("GET", path + "?" + q({ businessId: biz() })),
      api("GET", `${path}/thread?` + q({ businessId: biz(), limit: 50 })),
    ]);
    const changed = JSON.stringify(conversation) !== JSON.stringify(c);
    c = conversation;
    if (changed) drawHead();
    if (JSON.stringify(fresh.entries) !== JSON.stringify(newest)) {
      newest = fresh.entries;
      const seen = new Set(newest.map((e) => e.id));
      shown = [...newest, ...olderEntries.filter((e) => !seen.has(e.id))];
      drawThread(list, shown);
    }
    await markRead();
    if (changed) await refreshList();
  };

  drawHead();
  drawThread(list, shown);
  drawOlder();
  pane.replaceChildren(...kids([
    h("p", { class: "back" }, h("a", { href: "#/inbox", text: "← All conversations" })),
    head, older,
    shown.length ? list : [empty("No messages in this conversation yet."), list],
    owner ? replyForm(c, reload) : null,
    c.channel === "photoapp" && !c.contact && canWrite("contacts:write") ? linkForm(c, async () => { await reload(); pane.querySelector(".link-contact")?.remove(); }) : null]));
  await markRead();
  keepPolling(async () => { await reload(); return false; }, 1500);
}

async function inboxPage(openId) {
  const listBox = h("div", { id: "conversation-list" });
  const pane = h("section", { class: "thread-pane", "aria-label": "Conversation" });
  const refreshList = () => inboxList(listBox, openId).catch(() => null);
  await inboxList(listBox, openId);
  const filters = await inboxFilterForm(listBox, openId);
  show(h("h1", { text: "Inbox" }),
    canWrite("communications:write") ? h("p", {}, h("a", { href: "#/messages", text: "New message" }), " to a mobile that has not written yet.") : null,
    h("div", { class: "inbox" + (openId ? " open" : "") },
      h("section", { class: "inbox-list", "aria-label": "Conversations" }, filters, listBox),
      openId ? pane : h("section", { class: "thread-pane empty-pane" }, empty("Choose a conversation to read it."))));
  if (openId) await inboxThread(pane, openId, refreshList);
  // The list follows new conversations and unread counts.
  keepPolling(async () => { await refreshList(); return false; }, 4000);
}
