// The walk-through with the generated TypeScript client: the types
// openapi-typescript generates from the served document
// (../generated/ts/switchboard.d.ts) driving openapi-fetch.
//
// Run by tests/sdk/run.py (type-checked by tsc first, then run by tsx) with
// SB_URL, SB_KEY, SB_BUSINESS, SB_PNID in the environment: a business seeded
// with the admin subcommands (a key with every scope, a chatapp number, voice
// lines and credits). A step that does not answer as documented throws.
import createClient from "openapi-fetch";
import type { components, paths } from "../generated/ts/switchboard";

type FailureEnvelope = components["schemas"]["FailureEnvelope"];

const env = (name: string): string => {
  const value = process.env[name];
  if (!value) throw new Error(`${name} is not set`);
  return value;
};
const businessId = env("SB_BUSINESS");
const phoneNumberId = env("SB_PNID");
const DEADLINE_MS = 30_000; // for each wait on a background job

const client = createClient<paths>({ baseUrl: env("SB_URL"), headers: { Authorization: `Bearer ${env("SB_KEY")}` } });

function step(name: string, detail: string): void {
  console.log(`typescript: ok  ${name}: ${detail}`);
}

function check(condition: unknown, what: string): asserts condition {
  if (!condition) throw new Error(`typescript: ${what}`);
}

/** The success answer's data, or a throw naming the failure. */
function ok<T>(r: { data?: { ok: true; data: T }; error?: FailureEnvelope; response: Response }, status: number): T {
  if (r.response.status !== status || !r.data) {
    throw new Error(`typescript: expected ${status}, got ${r.response.status}: ${JSON.stringify(r.error ?? r.data)}`);
  }
  return r.data.data;
}

async function wait<T>(what: string, read: () => Promise<T>, done: (value: T) => boolean): Promise<T> {
  const started = Date.now();
  for (;;) {
    const value = await read();
    if (done(value)) return value;
    if (Date.now() - started > DEADLINE_MS) throw new Error(`typescript: ${what} still ${JSON.stringify(value)} after ${DEADLINE_MS} ms`);
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
}

const idem = (key: string) => ({ header: { "Idempotency-Key": key } });

async function main(): Promise<void> {
  // A category and a contact in it.
  const category = ok(
    await client.POST("/api/v1/contacts/categories", { params: idem("ts-cat-leads"), body: { businessId, name: "Leads" } }),
    201,
  ).category;
  step("category", `201 ${category.id}`);

  const contactBody = { businessId, name: "Ada", mobile: "+447700900123", categoryIds: [category.id] };
  const first = await client.POST("/api/v1/contacts", { params: idem("ts-contact-ada"), body: contactBody });
  const contact = ok(first, 201).contact;
  check(contact.categories.length === 1 && contact.categories[0].id === category.id, "the contact is in the category");
  step("contact", `201 ${contact.id} ${contact.name} ${contact.mobile}`);

  // The same Idempotency-Key again: the same answer, marked as a replay.
  const again = await client.POST("/api/v1/contacts", { params: idem("ts-contact-ada"), body: contactBody });
  check(ok(again, 201).contact.id === contact.id, "the replay answers the same contact");
  check(again.response.headers.get("Idempotent-Replayed") === "true", "the replay says Idempotent-Replayed: true");
  check(first.response.headers.get("Idempotent-Replayed") === null, "the first answer is no replay");
  step("idempotent replay", `201 same contact, Idempotent-Replayed: ${again.response.headers.get("Idempotent-Replayed")}`);

  // A contact that does not exist: the failure envelope, typed.
  const missing = await client.GET("/api/v1/contacts/{contactId}", {
    params: { path: { contactId: crypto.randomUUID() }, query: { businessId } },
  });
  check(missing.response.status === 404 && missing.error, `404 expected, got ${missing.response.status}`);
  const failure: FailureEnvelope = missing.error;
  check(failure.ok === false && failure.error.code === "contact_not_found", JSON.stringify(failure));
  step("typed 404", `${failure.error.code} (${failure.error.category}, retryable=${failure.error.retryable})`);

  // An upload: a structured data source, then the raw form of the upload
  // (the CSV text as the body, text/csv, metadata in the query).
  const source = ok(
    await client.POST("/api/v1/data-sources", {
      params: idem("ts-source-prices"),
      body: { businessId, name: "Prices", class: "structured", kind: "table" },
    }),
    201,
  ).dataSource;
  const accepted = ok(
    await client.POST("/api/v1/data-sources/upload", {
      params: { ...idem("ts-prices-1"), query: { businessId, dataSourceId: source.id, fileName: "prices.csv", format: "csv" } },
      body: "sku,price\nA1,10\nB2,20\n",
      headers: { "Content-Type": "text/csv" },
      bodySerializer: (body) => body as string,
    }),
    202,
  );
  const ingestion = await wait(
    "ingestion",
    async () =>
      ok(await client.GET("/api/v1/data-sources/ingestions", { params: { query: { businessId, ingestionId: accepted.ingestionId } } }), 200)
        .ingestion,
    (i) => ["active", "needs_review", "failed"].includes(i.stage),
  );
  check(ingestion.stage === "active", JSON.stringify(ingestion));
  step("upload", `202 ingestion ${accepted.ingestionId} version ${accepted.versionNumber} -> ${ingestion.stage}`);

  // A message send through the sandbox messenger, followed to `read`.
  // `channel` is optional for a chatapp send, but the document makes it
  // the discriminator of the two shapes, and openapi-typescript requires a
  // discriminator (OpenAPI 3.1 has no default mapping): the walk sends it.
  const queued = ok(
    await client.POST("/api/v1/messages", {
      params: idem("ts-message-1"),
      body: { businessId, channel: "chatapp", phoneNumberId, to: contact.mobile, type: "text", text: "Hello from the TypeScript client" },
    }),
    202,
  );
  const status = await wait(
    "message",
    async () =>
      ok(await client.GET("/api/v1/messages/{messageId}", { params: { path: { messageId: queued.messageId }, query: { businessId } } }), 200)
        .status,
    (s) => s === "read" || s === "failed",
  );
  check(status === "read", status);
  step("message send", `202 ${queued.messageId} -> ${status}`);

  // A call start: a voice agent, a call to a number of the sandbox carrier
  // (a conversation that ends with the agent's goodbye), followed to its end.
  const agent = ok(
    await client.POST("/api/v1/agents", {
      params: idem("ts-agent-caller"),
      body: {
        businessId,
        channel: "voice",
        name: "Caller",
        instructions: "Confirm the appointment.",
        voiceSettings: { firstGreeting: "Hello, this is Acme calling." },
      },
    }),
    201,
  ).agent;
  const call = ok(
    await client.POST("/api/v1/voice/calls", {
      params: idem("ts-call-1"),
      body: { businessId, agentId: agent.id, toNumber: "+15550001234" },
    }),
    202,
  );
  const detail = await wait(
    "call",
    async () => ok(await client.GET("/api/v1/voice/calls/{callId}", { params: { path: { callId: call.callId }, query: { businessId } } }), 200),
    (d) => ["completed", "no_answer", "busy", "failed", "cancelled"].includes(d.call.status),
  );
  check(detail.call.status === "completed", JSON.stringify(detail.call));
  step("call start", `202 ${call.callId} ${call.status} -> ${detail.call.status}, ${detail.transcript.length} turns`);
}

main().catch((e: unknown) => {
  console.error(e instanceof Error ? e.message : e);
  process.exit(1);
});
