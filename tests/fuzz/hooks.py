"""Schemathesis hooks. The positive run: generated requests name the test
tenant's business, and keep the few rules the document states in words
because JSON Schema cannot (each operation's `x-rules-beyond-schema`,
gateway/src/links.rs REFUSALS). Each hook fixes only the field its rule
is about; every other part of the request stays as generated, and any 400
to the result is a finding (no status or error code is allowlisted). The
negative run (SB_FUZZ_MODE=negative) keeps only `before_call`: its
stateful phase also sends schema-valid requests, and a rule across query
parameters is one JSON Schema cannot state."""
import os

import schemathesis

BUSINESS = os.environ["SB_BUSINESS_ID"]
CONTACT_SORTS = ("createdAt", "-createdAt", "name", "-name", "mobile", "-mobile")


def operation_id(ctx):
    return ctx.operation.definition.raw.get("operationId") if ctx.operation is not None else None


def differ(window):
    """callingWindow: `start` and `end` differ (400 invalid_calling_window)."""
    if isinstance(window, dict) and window.get("start") is not None and window.get("start") == window.get("end"):
        hours, minutes = window["start"].split(":")
        window["end"] = f"{hours}:{(int(minutes) + 1) % 60:02d}"


# Countries with a calling code: any two capital letters match the
# document's pattern, but a code no country has is 400 unknown_phone_country
# (the document names the rule in the field's description).
PHONE_COUNTRIES = ("US", "GB", "DE", "FR", "IN", "BR", "JP", "NG", "AU", "MX")


def fix_body(op, body):
    if isinstance(body, dict):
        if "businessId" in body:
            body["businessId"] = BUSINESS
        if op == "updateBusinessSettings" and isinstance(body.get("defaultPhoneCountry"), str) and body["defaultPhoneCountry"] not in PHONE_COUNTRIES:
            body["defaultPhoneCountry"] = PHONE_COUNTRIES[sum(map(ord, body["defaultPhoneCountry"])) % len(PHONE_COUNTRIES)]
        if op == "createCampaign" and isinstance(body.get("iteration"), dict):
            differ(body["iteration"].get("callingWindow"))
        elif op == "createIteration":
            differ(body.get("callingWindow"))
    elif op == "uploadDataSourceAsset" and isinstance(body, (bytes, str)) and len(body) == 0:
        # A raw upload's file has at least one byte (400 empty_file).
        body = b"x" if isinstance(body, bytes) else "x"
    return body


def fix_query(op, query):
    if not isinstance(query, dict):
        return query
    if op == "getChannelAssignment" and query.get("channel") != "chatapp":
        # phoneNumberId applies to channel chatapp only (400 phone_number_id_not_allowed).
        query.pop("phoneNumberId", None)
    elif op == "listContacts" and query.get("cursor"):
        # A cursor continues the order that made it (400 cursor_sort_mismatch):
        # the order named before its first "~", none for createdAt. Only a
        # valid order is put in (a negative case stays as invalid as it was).
        head = str(query["cursor"]).split("~")[0] if "~" in str(query["cursor"]) else "createdAt"
        if head in CONTACT_SORTS and query.get("sort", "createdAt") in CONTACT_SORTS:
            query["sort"] = head
    elif op == "resolveCallContext":
        # Exactly one of contactId and toNumber (400 call_target_required).
        if "contactId" in query and "toNumber" in query:
            del query["toNumber"]
        elif "contactId" not in query and "toNumber" not in query:
            query["toNumber"] = "+14155550100"
    return query


NEGATIVE = os.environ.get("SB_FUZZ_MODE") == "negative"

if not NEGATIVE:
    # The fuzzing and stateful phases build requests through map_body and
    # map_query; the coverage phase applies map_case only. Each fix is
    # idempotent, so a request that passes both is fixed once.
    @schemathesis.hook
    def map_body(ctx, body):
        return fix_body(operation_id(ctx), body)

    @schemathesis.hook
    def map_query(ctx, query):
        return fix_query(operation_id(ctx), query)

    @schemathesis.hook
    def map_case(ctx, case):
        op = operation_id(ctx)
        if case.meta is not None and not case.meta.generation.mode.is_positive:
            return case
        if isinstance(case.query, dict):
            case.query = fix_query(op, case.query)
        if case.body is not None:
            case.body = fix_body(op, case.body)
        return case


@schemathesis.hook
def before_call(ctx, case, **kwargs):
    # The last hook before every call, in both runs and every phase (the
    # stateful phase's steps meet no map_* hook): a listContacts cursor is
    # given with the order that made it. Only a valid order is put in, so a
    # negative case stays as invalid as it was.
    if case.operation.definition.raw.get("operationId") == "listContacts" and isinstance(case.query, dict):
        case.query = fix_query("listContacts", case.query)
