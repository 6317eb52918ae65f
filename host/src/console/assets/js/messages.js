// The console's messages and credits pages.
"use strict";

// ---- messages --------------------------------------------------------------------------------

const MESSAGE_DONE = ["delivered", "read", "failed"];

// The longest text message (the document's maxLength of a message's text).
const MESSAGE_MAX = 4096;

// How much of `max` characters a text box uses, said in `out` as it is
// typed (the box's maxlength stops it there); answers the recount.
function countChars(box, out, max) {
  const count = () => {
    const n = [...box.value].length;
    out.textContent = `${n.toLocaleString()} of ${max.toLocaleString()} characters`;
    out.classList.toggle("near", n > max * 0.9);
  };
  box.addEventListener("input", count);
  count();
  return count;
}

// A chatapp text from one of the business's connected numbers; its
// delivery state follows below the form until it is delivered, read or failed.
// `takeover` (the contact page's, contact.js contactTakeover): a notice
// shown while the chosen number's conversation is the AI agent's, and the
// steps before and after a send that take it over.
async function sendForm(to, onSent, takeover) {
  const channels = await api("GET", "/api/v1/channels?" + q({ businessId: biz() }));
  const chat = channels.channels.find((c) => c.key === "chatapp");
  const numbers = chat ? chat.connections : [];
  const sent = h("ul", { class: "plain", id: "sent-messages", "aria-live": "polite" });
  const form = h("form", { class: "card", novalidate: true },
    h("h2", { text: "Send a chat app message" }),
    h("p", { class: "form-error", role: "alert" }),
    numbers.length ? null : h("p", { class: "muted" }, "Connect a chat app number first, on ", h("a", { href: "#/channels", text: "Channels" }), "."),
    h("label", { for: "m-from", text: "From number" }),
    h("select", { id: "m-from", name: "phoneNumberId" }, numbers.map((n) => h("option", { value: n.phoneNumberId, text: n.label || n.phoneNumberId }))),
    h("label", { for: "m-to", text: "To (a mobile number)" }),
    to ? h("input", { id: "m-to", name: "to", type: "tel", value: to, readonly: true })
      : [phoneInput({ id: "m-to", name: "to", "aria-describedby": "m-to-hint", "data-hint": "m-to-hint" }), phoneHint("m-to-hint")],
    h("label", { for: "m-text", text: "Message" }),
    h("textarea", { id: "m-text", name: "text", rows: 3, maxlength: MESSAGE_MAX, "aria-describedby": "m-text-count", "data-hint": "m-text-count" }),
    h("p", { class: "hint counter", id: "m-text-count", "aria-live": "polite" }),
    takeover ? takeover.notice : null,
    h("button", { type: "submit", text: "Send", disabled: !numbers.length }),
    sent);
  const count = countChars(form.text, form.querySelector("#m-text-count"), MESSAGE_MAX);
  if (takeover) {
    form.phoneNumberId.addEventListener("change", () => takeover.show(form.phoneNumberId.value));
    takeover.show(form.phoneNumberId.value);
  }
  onSubmit(form, async (sub) => {
    const text = form.text.value;
    if (takeover) await takeover.before(form.phoneNumberId.value, sub);
    const r = await api("POST", "/api/v1/messages", { businessId: biz(), channel: "chatapp", phoneNumberId: form.phoneNumberId.value,
      to: phoneE164(form.to.value), type: "text", text }, sub);
    if (takeover) await takeover.after(form.phoneNumberId.value, sub);
    form.text.value = "";
    count();
    const line = h("li", { class: "message-state", text: `${when(new Date().toISOString())}: queued` });
    sent.prepend(line);
    if (onSent) await onSent();
    let last = "queued";
    keepPolling(async () => {
      const m = await api("GET", `/api/v1/messages/${r.messageId}?` + q({ businessId: biz() }));
      line.textContent = `${when(m.queuedAt)} to ${m.recipient}: ${m.status}` + (m.failure ? ` (${m.failure.message || m.failure.code})` : "");
      if (m.status !== last && onSent) await onSent();
      last = m.status;
      return MESSAGE_DONE.includes(m.status);
    }, 700);
  });
  return form;
}

async function messagesPage() {
  show(h("h1", { text: "Messages" }),
    h("p", { class: "muted" }, "Conversations are in the ", h("a", { href: "#/inbox", text: "Inbox" }), " and on each contact's timeline; start one here or from a contact's page."),
    canWrite("communications:write") ? await sendForm(null) : h("p", { class: "muted", text: "Sending takes an owner." }));
}

// ---- credits -----------------------------------------------------------------------------------

// The ledger grouped by what moved the credits: one row per call or summary
// run (its reservation, charge and release together) with what it cost and
// what it still holds, linked to it; a grant is a row of its own; nothing
// that moved zero credits is shown.
async function creditsPage() {
  const list = h("div", { id: "ledger" });
  const first = await api("GET", "/api/v1/credits?" + q({ businessId: biz(), limit: 200 }));
  // What a reference names: a call (linked to its report) or a summary run
  // (linked to its campaign); read once for the page.
  const names = new Map();
  const [calls, campaigns] = await Promise.all([
    canWrite("voice:read") ? api("GET", "/api/v1/voice/calls?" + q({ businessId: biz(), limit: 200 })).catch(() => null) : null,
    api("GET", "/api/v1/campaigns?" + q({ businessId: biz(), limit: 50 })).catch(() => null),
  ]);
  for (const c of (calls && calls.calls) || []) names.set(c.id, { text: `Call to ${c.contactName || c.calleeNumber}`, href: `#/calls/${c.id}` });
  await Promise.all(((campaigns && campaigns.campaigns) || []).map(async ({ campaign }) => {
    const runs = await api("GET", `/api/v1/campaigns/${campaign.id}/summary-runs?` + q({ businessId: biz(), limit: 50 })).catch(() => null);
    for (const r of (runs && runs.summaryRuns) || []) names.set(r.id, { text: `AI summary run of ${campaign.name}`, href: `#/campaigns/${campaign.id}` });
  }));
  const entries = [...first.entries];
  let cursor = first.nextCursor;
  const draw = () => {
    const groups = new Map();
    for (const e of entries) {
      const k = e.reference ? `ref:${e.reference}` : `entry:${e.id}`;
      if (!groups.has(k)) groups.set(k, { reference: e.reference, note: e.note, last: e.createdAt, moves: { grant: 0, reserve: 0, charge: 0, release: 0 } });
      const g = groups.get(k);
      g.moves[e.kind] = (g.moves[e.kind] || 0) + e.amountMicrocredits;
      if (String(e.createdAt) > String(g.last)) g.last = e.createdAt;
    }
    const rows = [];
    for (const g of groups.values()) {
      const m = g.moves;
      const held = Math.max(m.reserve - m.charge - m.release, 0);
      if (!m.grant && !m.charge && !held) continue;
      const what = m.grant ? (g.note || "Credits added") : null;
      const name = g.reference ? names.get(g.reference) : null;
      const label = name ? h("a", { href: name.href, text: name.text }) : (what || (g.note ? g.note : "A call or summary run no longer listed"));
      const amount = m.grant ? `+${credits(m.grant)}` : (m.charge ? `−${credits(m.charge)}` : "");
      rows.push(h("tr", {},
        h("td", { text: when(g.last) }),
        h("td", {}, label),
        h("td", { class: "amount", text: amount }),
        h("td", { text: held ? `${credits(held)} reserved` : (m.grant ? "" : "settled") })));
    }
    list.replaceChildren(table(["When", "What", "Amount", "State"], rows, "No movements yet."));
    if (cursor) {
      list.append(h("button", { type: "button", class: "secondary", text: "Older movements", onclick: once(async () => {
        const page = await api("GET", "/api/v1/credits?" + q({ businessId: biz(), cursor, limit: 200 }));
        entries.push(...page.entries);
        cursor = page.nextCursor;
        draw();
      }) }));
    }
  };
  show(h("h1", { text: "Credits" }),
    h("dl", { class: "facts" },
      h("dt", { text: "Available" }), h("dd", { id: "credits-available", text: credits(first.availableMicrocredits) }),
      h("dt", { text: "Reserved" }), h("dd", { text: credits(first.reservedMicrocredits) })),
    h("p", { class: "muted", text: "Calls reserve their maximum before they are placed and are charged what they cost; summary runs reserve their confirmed maximum. Credits are added by an operator (switchboard admin credits add)." }),
    h("h2", { text: "Over time" }), creditsOverTime(30),
    h("h2", { text: "Ledger" }), list);
  draw();
}

// A follow-up iteration (operation 49): members of the current one chosen
// by their outcome, or those the latest summary run recommends.
async function followUpForm(campaignId) {
  const agents = await api("GET", "/api/v1/agents?" + q({ businessId: biz(), limit: 200 }));
  const usable = agents.agents.filter((a) => a.status === "active" && ["voice", "chatapp"].includes(a.channel));
  const outcomes = ["completed", "no_answer", "busy", "failed", "cancelled", "sent", "delivered", "read", "replied", "skipped"];
  const form = h("form", { class: "card", novalidate: true },
    h("h2", { text: "Follow up" }),
    h("p", { class: "form-error", role: "alert" }),
    h("label", { for: "f-agent", text: "Agent (its channel is the iteration's)" }),
    h("select", { id: "f-agent", name: "agentId" }, usable.map((a) => h("option", { value: a.id, text: `${a.name} (${CHANNEL_WORDS[a.channel] || a.channel})` }))),
    h("fieldset", {}, h("legend", { text: "Who" }),
      h("label", { class: "check" }, h("input", { type: "radio", name: "who", value: "outcomes", checked: true }), " members whose outcome was"),
      outcomes.map((o) => h("label", { class: "check" }, h("input", { type: "checkbox", name: "selection", value: o }), " ", o.replace("_", " "))),
      h("label", { class: "check" }, h("input", { type: "radio", name: "who", value: "ai" }), " the contacts the latest summary run recommends")),
    h("div", { id: "f-opening-box" },
      h("label", { for: "f-opening", text: "Opening message" }),
      h("textarea", { id: "f-opening", name: "openingMessage", rows: 2, maxlength: 1000 })),
    h("button", { type: "submit", text: "Create follow-up" }));
  // The opening message is a chat app agent's field only.
  const channelFields = () => {
    const agent = usable.find((a) => a.id === form.agentId.value);
    form.querySelector("#f-opening-box").hidden = !agent || agent.channel !== "chatapp";
  };
  form.agentId.addEventListener("change", channelFields);
  channelFields();
  onSubmit(form, async (sub) => {
    const agent = usable.find((a) => a.id === form.agentId.value);
    if (!agent) throw new ApiError(400, { message: "Create an active voice or chatapp agent first." });
    const ai = form.querySelector("input[name=who]:checked").value === "ai";
    const body = { businessId: biz(), channel: agent.channel, agentId: agent.id,
      selection: ai ? { aiRecommended: true } : { fromOutcomes: [...form.querySelectorAll("input[name=selection]:checked")].map((i) => i.value) } };
    if (agent.channel === "chatapp") body.openingMessage = form.openingMessage.value;
    const r = await api("POST", `/api/v1/campaigns/${campaignId}/iterations`, body, sub);
    toast(`Follow-up created with ${r.admission.accepted} members; start it when ready.`);
    if (location.hash === `#/campaigns/${campaignId}`) await campaignPage(campaignId);
  });
  return form;
}
