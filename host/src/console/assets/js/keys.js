// The console's API keys page, and on it who may log in (owners only).
"use strict";

// ---- API keys -------------------------------------------------------------------------

async function keysPage() {
  // The page's own address (not the one shown when called: a redraw after
  // a save the reader has left must draw nothing).
  const here = "#/keys";
  const data = await api("GET", "/console/api/keys");
  const owner = state.me.role === "owner";
  const rows = data.keys.map((k) => h("tr", {},
    h("td", {}, h("code", { class: "key-display", text: k.display })),
    h("td", { text: k.scopes.join(", ") }),
    h("td", { text: when(k.createdAt) }),
    h("td", { text: k.revokedAt ? "revoked " + when(k.revokedAt) : when(k.lastUsedAt) }),
    h("td", {}, owner && !k.revokedAt ? h("button", {
      type: "button", class: "danger", "aria-label": `Revoke key ${k.display}`, text: "Revoke",
      onclick: once(async () => {
        if (!confirm(`Revoke ${k.display}? Integrations using it stop working at once.`)) return;
        await api("DELETE", `/console/api/keys/${k.keyId}`); toast("Key revoked."); keysPage();
      }),
    }) : null)));
  const table = h("table", {},
    h("caption", { text: "Keys of this business" }),
    h("thead", {}, h("tr", {}, ["Key", "Scopes", "Created", "Last used", ""].map((t) => h("th", { scope: "col", text: t })))),
    h("tbody", {}, rows.length ? rows : h("tr", {}, h("td", { colspan: 5, text: "No keys yet." }))));
  const nodes = [h("h1", { text: "API keys" }), table];
  if (owner) nodes.push(createKeyForm(data.scopes), await usersSection());
  else nodes.push(h("p", { class: "muted", text: "Only an owner can create or revoke keys." }));
  showOn(here, ...nodes);
}

function createKeyForm(scopes) {
  const form = h("form", { class: "card", novalidate: true },
    h("h2", { text: "Create a key" }),
    h("p", { class: "form-error", role: "alert" }),
    h("fieldset", {}, h("legend", { text: "Scopes" }),
      scopes.map((s) => h("label", { class: "check" },
        h("input", { type: "checkbox", name: "scopes", value: s, checked: s.endsWith(":read") }), " ", s))),
    h("button", { type: "submit", text: "Create key" }));
  onSubmit(form, async () => {
    const chosen = [...form.querySelectorAll("input[name=scopes]:checked")].map((i) => i.value);
    const k = await api("POST", "/console/api/keys", { scopes: chosen });
    await keysPage();
    shownOnce("new-key-value", "Your new key", "Copy it now: it is not shown again.", k.apiKey);
  });
  return form;
}

// ---- who may log in (owners) -------------------------------------------------------------

// The roles, as the users page offers them.
const ROLE_WORDS = { viewer: "viewer (reads only)", agent: "agent (answers conversations; changes no settings)", owner: "owner (everything)" };

// The business's console users: invite one (a setup link shown once), set
// a role, remove one (the owner routes of host/src/console/team.rs).
async function usersSection() {
  const data = await api("GET", "/console/api/users");
  const roles = data.roles || ["owner", "viewer"];
  // One row each, the same columns in every row: who, standing, role, removal.
  const items = data.users.map((u) => {
    const gone = !!u.disabledAt;
    const standing = gone ? "removed" : u.passwordSet ? "active" : "invited";
    const form = gone ? null : h("form", { class: "inline role-form", novalidate: true, "aria-label": `Role of ${u.email}` },
      h("p", { class: "form-error", role: "alert" }),
      h("select", { id: `role-${u.userId}`, name: "role", "aria-label": `Role of ${u.email}` }, roles.map((r) => h("option", { value: r, text: r, selected: r === u.role }))),
      h("button", { type: "submit", class: "secondary", text: "Save role", "aria-label": `Save the role of ${u.email}` }));
    if (form) {
      onSubmit(form, async () => {
        await api("PATCH", `/console/api/users/${u.userId}`, { role: form.role.value }); await keysPage(); toast("Role saved. Their next login has it.");
      });
    }
    return h("tr", {},
      h("td", { class: "email", text: u.email }),
      h("td", {}, badge(standing)),
      h("td", {}, form || u.role),
      h("td", {}, gone ? null : h("button", { type: "button", class: "danger", text: "Remove", "aria-label": `Remove ${u.email}`, onclick: once(async () => {
        if (!confirm(`Remove ${u.email}? They can no longer log in.`)) return;
        await api("DELETE", `/console/api/users/${u.userId}`); await keysPage(); toast("User removed.");
      }) })));
  });
  const invite = h("form", { class: "card", novalidate: true, id: "invite-user" },
    h("h3", { text: "Invite someone" }),
    h("p", { class: "form-error", role: "alert" }),
    h("label", { for: "inv-email", text: "Email" }),
    h("input", { id: "inv-email", name: "email", type: "email", autocomplete: "off" }),
    h("label", { for: "inv-role", text: "Role" }),
    h("select", { id: "inv-role", name: "role" }, [...roles].reverse().map((r) => h("option", { value: r, text: ROLE_WORDS[r] || r }))),
    h("button", { type: "submit", text: "Invite" }));
  const check = ownerRules(invite, { email: "The email" });
  onSubmit(invite, async () => {
    check();
    const r = await api("POST", "/console/api/users", { email: invite.email.value, role: invite.role.value });
    await keysPage();
    // Shown where the invitation was made, in view (not at the page's top).
    shownOnce("invite-link", `An invitation for ${r.email}`, "Send them this link: it sets their password once, within 24 hours, and is not shown again.",
      location.origin + r.setupLink, document.getElementById("invite-user"));
  });
  return h("section", { class: "card", "aria-labelledby": "users-title" },
    h("h2", { id: "users-title", text: "People who can log in" }),
    h("div", { id: "users" }, table(["Email", "Standing", "Role", ""], items, "Nobody yet.")),
    invite);
}
