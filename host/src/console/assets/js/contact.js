// One contact's page: their details, their timeline as a conversation, a
// reply that takes the conversation over from the AI agent, the edit form.
"use strict";

// ---- a contact ---------------------------------------------------------------------------

async function contactPage(id) {
  const here = `#/contacts/${id}`;
  const c = (await api("GET", `/api/v1/contacts/${id}?` + q({ businessId: biz() }))).contact;
  const fields = Object.entries(c.fields || {});
  const timeline = h("div", { id: "timeline" });
  await drawTimeline(id, timeline);
  const write = canWrite("contacts:write");
  const extra = [];
  if (write) extra.push(await editContactForm(c));
  if (canWrite("voice:write") && !c.communicationBlocked) extra.push(await callForm({ contact: c }));
  if (write) {
    extra.push(h("p", {}, h("button", { type: "button", class: "danger", text: "Delete this contact", onclick: once(async (sub) => {
      if (!confirm(`Delete ${c.name || c.mobile} and their timeline?`)) return;
      await api("DELETE", "/api/v1/contacts", { businessId: biz(), contactIds: [id] }, sub);
      toast("Contact deleted."); location.hash = "#/contacts";
    }) })));
  }
  if (location.hash !== here) return;
  show(
    h("p", {}, h("a", { href: "#/contacts", text: "← Contacts" })),
    h("h1", { text: c.name || c.mobile }),
    h("dl", { class: "facts" },
      h("dt", { text: "Mobile" }), h("dd", { text: c.mobile }),
      h("dt", { text: "Categories" }), h("dd", { text: c.categories.map((x) => x.name).join(", ") }),
      h("dt", { text: "Blocked" }), h("dd", { text: c.communicationBlocked ? "yes" : "no" }),
      fields.map(([k, v]) => [h("dt", { text: k }), h("dd", { text: String(v) })])),
    h("h2", { text: "Conversation" }),
    timeline,
    canWrite("communications:write") && !c.communicationBlocked ? await sendForm(c.mobile, () => drawTimeline(id, timeline), await contactTakeover(c)) : null,
    ...extra);
}

// A reply from the contact's page takes the conversation over from the AI
// agent, as the inbox's reply does (inbox.js composer): before the send,
// the conversation of the chosen number with this contact, if it is the
// agent's, is taken over (updateConversation, humanHandoffActive), and a
// first message, which starts the conversation, takes it over once sent.
// The agent then stays silent there until someone hands it back in the
// Inbox. The notice says so before sending.
async function contactTakeover(c) {
  const notice = h("p", { class: "notice takeover", role: "note", id: "takeover-notice", hidden: true });
  const mine = async () => {
    const page = await api("GET", "/api/v1/conversations?" + q({ businessId: biz(), channel: "chatapp", q: c.mobile, limit: 200 })).catch(() => ({ conversations: [] }));
    return page.conversations.filter((x) => x.contact && x.contact.id === c.id);
  };
  let known = await mine();
  const of = (number) => known.find((x) => x.phoneNumberId === number);
  const takeOver = async (x, sub) => {
    if (!x || x.status !== "agent") return false;
    await api("PATCH", `/api/v1/conversations/${x.id}`, { businessId: biz(), humanHandoffActive: true }, sub);
    return true;
  };
  const t = {
    notice,
    show(number) {
      const x = of(number);
      notice.hidden = !(x && x.status === "agent");
      notice.textContent = x && x.status === "agent"
        ? `Sending takes this conversation over from ${x.agent ? x.agent.name : "the agent"} (the AI agent): it stops answering ${c.name || c.mobile} here until you hand it back in the Inbox.` : "";
    },
    async before(number, sub) {
      if (await takeOver(of(number), sub)) toast("Taken over: the agent stays silent in this conversation until you hand it back.");
    },
    async after(number, sub) {
      const started = !of(number);
      known = await mine();
      if (started && await takeOver(of(number), sub)) toast("Taken over: the agent stays silent in this conversation until you hand it back.");
      t.show(number);
    },
  };
  return t;
}

// Edit a contact: what changed is sent (an update must change something);
// a field left out of the list is removed.
async function editContactForm(c) {
  const [cats, keys] = await Promise.all([allCategories(), contactFieldKeys()]);
  const fieldsBox = fieldsEditor("ec", keys, c.fields || {});
  const form = h("form", { class: "card", novalidate: true, id: "edit-contact" },
    h("h2", { text: "Edit" }),
    h("p", { class: "form-error", role: "alert" }),
    h("label", { for: "ec-name", text: "Name" }),
    h("input", { id: "ec-name", name: "name", value: c.name || "", required: true }),
    h("label", { for: "ec-mobile", text: "Mobile" }),
    phoneInput({ id: "ec-mobile", name: "mobile", value: c.mobile, required: true, "aria-describedby": "ec-mobile-hint", "data-hint": "ec-mobile-hint" }),
    phoneHint("ec-mobile-hint"),
    h("fieldset", {}, h("legend", { text: "Categories (at least one)" }), categoryChecks("categoryIds", cats, new Set(c.categories.map((x) => x.id)))),
    fieldsBox,
    h("label", { class: "check" }, h("input", { type: "checkbox", name: "communicationBlocked", checked: c.communicationBlocked }), " Blocked (the business never contacts them)"),
    h("button", { type: "submit", text: "Save contact" }));
  const check = liveRules(form, "ContactUpdate", CONTACT_LABELS);
  onSubmit(form, async (sub) => {
    await check();
    const body = { businessId: biz() };
    if (form.name.value.trim() !== (c.name || "")) body.name = form.name.value.trim();
    if (phoneE164(form.mobile.value) !== c.mobile) body.mobile = phoneE164(form.mobile.value);
    const categoryIds = checked(form, "categoryIds");
    if (categoryIds.join() !== c.categories.map((x) => x.id).join()) body.categoryIds = categoryIds;
    const typed = readFields(fieldsBox);
    const fields = {};
    for (const [k, v] of Object.entries(typed)) {
      const was = (c.fields || {})[k];
      if (v === "" && (was === undefined || was === null || was === "")) continue;
      if (String(was === undefined || was === null ? "" : was) !== v) fields[k] = v === "" ? null : v;
    }
    if (Object.keys(fields).length) body.fields = fields;
    if (form.communicationBlocked.checked !== c.communicationBlocked) body.communicationBlocked = form.communicationBlocked.checked;
    if (Object.keys(body).length === 1) { toast("Nothing changed."); return; }
    await api("PATCH", `/api/v1/contacts/${c.id}`, body, sub);
    await contactPage(c.id);
    toast("Contact saved.");
  });
  return form;
}

// The contact's timeline as a conversation: oldest at the top, newest at
// the bottom; what the contact sent on the left, what the business sent on
// the right.
async function drawTimeline(id, box) {
  const t = await api("GET", `/api/v1/contacts/${id}/timeline?` + q({ businessId: biz(), limit: 50 }));
  const entries = [...t.entries].sort((a, b) => String(a.occurredAt).localeCompare(String(b.occurredAt)));
  box.replaceChildren(entries.length ? h("ol", { class: "chat timeline", "aria-label": "Conversation with this contact" },
    entries.map((x) => h("li", { class: `turn ${x.direction === "inbound" ? "inbound" : "outbound"}`, "data-direction": x.direction || "" },
      h("span", { class: "speaker" }, `${x.direction === "inbound" ? "Contact" : "Business"} · ${[x.channel, x.kind].filter(Boolean).join(" ")} · `,
        h("time", { datetime: x.occurredAt, text: when(x.occurredAt) })),
      x.kind === "call" ? callEntry(x.summary || {}) : h("p", { text: summaryText(x.summary) })))) : h("p", { class: "muted", text: "Nothing yet." }));
}

// Who ended a call, in words.
const ENDED_WORDS = { customer: "the contact hung up", agent: "the agent ended it", operator: "ended from the console", system: "ended by the system",
  provider: "ended by the phone network", unknown: "ended" };

// A call on a timeline: its outcome, its length, who ended it, and a link to it.
function callEntry(s) {
  const outcome = String(s.status || "call").replace(/_/g, " ");
  const parts = [s.durationSeconds ? seconds(s.durationSeconds) : null, ENDED_WORDS[s.endedBy] || null, s.agentName ? `with ${s.agentName}` : null].filter(Boolean);
  return h("p", { class: "call-entry" }, badge(s.status || "", outcome), parts.length ? ` ${parts.join(" · ")} ` : " ",
    s.callId ? h("a", { href: `#/calls/${s.callId}`, text: s.transcriptAvailable ? "Open the call and its transcript" : "Open the call" }) : null);
}

function summaryText(s) {
  if (!s) return "";
  if (typeof s.text === "string") return s.text;
  return Object.entries(s).filter(([, v]) => v !== null && typeof v !== "object").map(([k, v]) => `${k}: ${v}`).join(", ");
}
