"""The walk-through with the generated Python client (openapi-python-client).

Run by tests/sdk/run.py with the generated package `switchboard_client` on
sys.path and SB_URL, SB_KEY, SB_BUSINESS, SB_PNID in the environment (a
business seeded with the admin subcommands: key with every scope, a chatapp
number, voice lines and credits). Every request goes through the generated
functions and every answer is read through the generated models; a step that
does not answer as documented raises.
"""
import io
import os
import sys
import time
import uuid

from switchboard_client import AuthenticatedClient
from switchboard_client.api.agents import create_agent
from switchboard_client.api.contacts import create_category, create_contact, get_contact
from switchboard_client.api.data_sources import create_data_source, inspect_ingestion, upload_data_source_asset
from switchboard_client.api.messaging import get_message, send_message
from switchboard_client.api.voice import get_call, start_call
from switchboard_client.models import (
    AgentCreateVoice,
    CategoryCreate,
    ContactCreate,
    CreateContactResponse201,
    DataSourceCreateStructured,
    DataSourceCreateStructuredKind,
    FailureEnvelope,
    MessageSendChatapp,
    MessageSendChatappType,
    UploadDataSourceAssetFormat,
    VoiceCallStartType1,
    VoiceSettings,
)
from switchboard_client.types import File

BIZ = uuid.UUID(os.environ["SB_BUSINESS"])
PNID = os.environ["SB_PNID"]
DEADLINE = 30  # seconds for each wait on a background job


def step(name, detail):
    print(f"python: ok  {name}: {detail}", flush=True)


def expect(resp, status, model):
    """The parsed answer, checked to be the documented model of STATUS."""
    if resp.status_code != status or not isinstance(resp.parsed, model):
        raise SystemExit(f"python: expected {status} {model.__name__}, got {int(resp.status_code)}: {resp.content[:500]!r}")
    return resp.parsed


def wait(what, read, done):
    started = time.monotonic()
    while True:
        value = read()
        if done(value):
            return value
        if time.monotonic() - started > DEADLINE:
            raise SystemExit(f"python: {what} still {value!r} after {DEADLINE}s")
        time.sleep(0.1)


def main():
    client = AuthenticatedClient(base_url=os.environ["SB_URL"], token=os.environ["SB_KEY"], raise_on_unexpected_status=True)

    # A category and a contact in it.
    r = create_category.sync_detailed(client=client, body=CategoryCreate(business_id=BIZ, name="Leads"), idempotency_key="py-cat-leads")
    category = r.parsed.data.category
    if r.status_code != 201 or category.name != "Leads":
        raise SystemExit(f"python: category: {r.status_code} {r.content[:300]!r}")
    step("category", f"201 {category.id}")

    body = ContactCreate(business_id=BIZ, name="Ada", mobile="+447700900123", category_ids=[category.id])
    first = create_contact.sync_detailed(client=client, body=body, idempotency_key="py-contact-ada")
    contact = expect(first, 201, CreateContactResponse201).data.contact
    assert [c.id for c in contact.categories] == [category.id], contact.categories
    step("contact", f"201 {contact.id} {contact.name} {contact.mobile}")

    # The same Idempotency-Key again: the same answer, marked as a replay.
    again = create_contact.sync_detailed(client=client, body=body, idempotency_key="py-contact-ada")
    replayed = expect(again, 201, CreateContactResponse201)
    assert replayed.data.contact.id == contact.id, (replayed.data.contact.id, contact.id)
    assert again.headers.get("Idempotent-Replayed") == "true", dict(again.headers)
    assert "Idempotent-Replayed" not in first.headers, dict(first.headers)
    step("idempotent replay", f"201 same contact, Idempotent-Replayed: {again.headers['Idempotent-Replayed']}")

    # A contact that does not exist: the failure envelope, typed.
    missing = get_contact.sync_detailed(uuid.uuid4(), client=client, business_id=BIZ)
    failure = expect(missing, 404, FailureEnvelope)
    assert failure.ok is False and failure.error.code == "contact_not_found", failure
    step("typed 404", f"{failure.error.code} ({failure.error.category.value}, retryable={failure.error.retryable})")

    # An upload: a structured data source, then the raw form of the upload
    # (the file as the body, application/octet-stream, metadata in the query).
    r = create_data_source.sync_detailed(
        client=client,
        body=DataSourceCreateStructured(business_id=BIZ, name="Prices", class_="structured", kind=DataSourceCreateStructuredKind.TABLE),
        idempotency_key="py-source-prices",
    )
    source = r.parsed.data.data_source
    csv = b"sku,price\nA1,10\nB2,20\n"
    r = upload_data_source_asset.sync_detailed(
        client=client,
        body=File(payload=io.BytesIO(csv), file_name="prices.csv", mime_type="text/csv"),
        business_id=BIZ,
        data_source_id=source.id,
        file_name="prices.csv",
        format_=UploadDataSourceAssetFormat.CSV,
        idempotency_key="py-prices-1",
    )
    accepted = r.parsed.data
    if r.status_code != 202:
        raise SystemExit(f"python: upload: {r.status_code} {r.content[:300]!r}")
    inspection = wait(
        "ingestion",
        lambda: inspect_ingestion.sync_detailed(client=client, business_id=BIZ, ingestion_id=accepted.ingestion_id).parsed.data.ingestion,
        lambda i: i.stage.value in ("active", "needs_review", "failed"),
    )
    assert inspection.stage.value == "active", inspection
    step("upload", f"202 ingestion {accepted.ingestion_id} version {accepted.version_number} -> {inspection.stage.value}")

    # A message send through the sandbox messenger, followed to `read`.
    r = send_message.sync_detailed(
        client=client,
        body=MessageSendChatapp(business_id=BIZ, phone_number_id=PNID, to=contact.mobile, type_=MessageSendChatappType.TEXT, text="Hello from the Python client"),
        idempotency_key="py-message-1",
    )
    queued = r.parsed.data
    if r.status_code != 202:
        raise SystemExit(f"python: send: {r.status_code} {r.content[:300]!r}")
    state = wait(
        "message",
        lambda: get_message.sync_detailed(queued.message_id, client=client, business_id=BIZ).parsed.data.status.value,
        lambda s: s in ("read", "failed"),
    )
    assert state == "read", state
    step("message send", f"202 {queued.message_id} -> {state}")

    # A call start: a voice agent, a call to a number of the sandbox carrier
    # (a conversation that ends with the agent's goodbye), followed to its end.
    r = create_agent.sync_detailed(
        client=client,
        body=AgentCreateVoice(
            business_id=BIZ,
            channel="voice",
            name="Caller",
            instructions="Confirm the appointment.",
            voice_settings=VoiceSettings(first_greeting="Hello, this is Acme calling."),
        ),
        idempotency_key="py-agent-caller",
    )
    if r.status_code != 201:
        raise SystemExit(f"python: agent: {r.status_code} {r.content[:300]!r}")
    agent = r.parsed.data.agent
    r = start_call.sync_detailed(
        client=client, body=VoiceCallStartType1(business_id=BIZ, agent_id=agent.id, to_number="+15550001234"), idempotency_key="py-call-1"
    )
    if r.status_code != 202:
        raise SystemExit(f"python: call: {r.status_code} {r.content[:300]!r}")
    started = r.parsed.data
    detail = wait(
        "call",
        lambda: get_call.sync_detailed(started.call_id, client=client, business_id=BIZ).parsed.data,
        lambda d: d.call.status.value in ("completed", "no_answer", "busy", "failed", "cancelled"),
    )
    assert detail.call.status.value == "completed", detail.call
    step("call start", f"202 {started.call_id} {started.status.value} -> {detail.call.status.value}, {len(detail.transcript)} turns")
    return 0


if __name__ == "__main__":
    sys.exit(main())
