// Calls to the server: api() with the session's cookie and CSRF token, an
// Idempotency-Key per operation of one submission, query strings.
"use strict";

// ---- the API ----------------------------------------------------------------

// A random Idempotency-Key (crypto.randomUUID needs a secure context;
// getRandomValues does not).
function idemKey() {
  const b = crypto.getRandomValues(new Uint8Array(16));
  b[6] = (b[6] & 0x0f) | 0x40;
  b[8] = (b[8] & 0x3f) | 0x80;
  const x = [...b].map((v) => v.toString(16).padStart(2, "0")).join("");
  return `${x.slice(0, 8)}-${x.slice(8, 12)}-${x.slice(12, 16)}-${x.slice(16, 20)}-${x.slice(20)}`;
}

class ApiError extends Error {
  constructor(status, error) {
    super(error && error.message ? words(error.message) : `request failed (${status})`);
    this.status = status;
    this.error = error || {};
  }
}

// `sub` is the form submission (or click) the call belongs to: every
// call of one submission to one operation carries the same Idempotency-Key,
// so a repeated submission is answered once.
async function api(method, path, body, sub) {
  const headers = { Accept: "application/json" };
  if (method !== "GET") {
    if (state.me) headers["X-CSRF-Token"] = state.me.csrfToken;
    if (path.startsWith("/api/v1/")) headers["Idempotency-Key"] = sub ? sub.key(method, path) : idemKey();
  }
  if (body !== undefined) headers["Content-Type"] = "application/json";
  const r = await fetch(path, {
    method, headers, credentials: "same-origin",
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  let payload = null;
  try { payload = await r.json(); } catch (_) { /* not JSON */ }
  if (!r.ok || !payload || payload.ok !== true) {
    const err = new ApiError(r.status, payload && payload.error);
    if (r.status === 401 && path !== "/console/api/session") {
      state.me = null;
      renderLogin("Your session has ended; log in again.");
    }
    throw err;
  }
  return payload.data;
}

function q(params) {
  const u = new URLSearchParams();
  for (const [k, v] of Object.entries(params)) if (v !== undefined && v !== null && v !== "") u.set(k, v);
  return u.toString();
}

// One submission: its keys, one per operation it calls.
function submission() {
  const keys = new Map();
  return {
    key(method, path) {
      const op = method + " " + path.split("?")[0];
      if (!keys.has(op)) keys.set(op, idemKey());
      return keys.get(op);
    },
  };
}
