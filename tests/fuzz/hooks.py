"""Schemathesis hooks: positive-mode bodies name the test tenant's business,
so generated requests get past tenancy and reach the component."""
import os

import schemathesis

BUSINESS = os.environ["SB_BUSINESS_ID"]


@schemathesis.hook
def map_body(ctx, body):
    if isinstance(body, dict) and "businessId" in body:
        body["businessId"] = BUSINESS
    return body



# Rules the document states in its descriptions but JSON Schema cannot
# express: which query parameter or body field applies to which channel, and
# the raw upload's metadata, required by the request's content type. Every
# other 400 to a schema-valid request is a finding: the document accepted
# something the service refuses.
CONDITIONAL_RULES = {
    "phone_number_id_not_allowed",       # query phoneNumberId, or an agent's assignment: chatapp only
    "provider_account_id_not_allowed",   # an agent's assignment.providerAccountId: photoapp agents only
    "photoapp_setting_not_allowed",      # photoappCollectMobileEnabled: photoapp agents only
    "voice_settings_not_allowed",        # voiceSettings: voice agents only
    "call_target_required",              # exactly one of contactId and toNumber
    "test_variable_not_declared",        # testVariables: only the agent's declared aliases
    "invalid_calling_window",            # a campaign iteration's callingWindow: start and end differ
    "opening_message_required",          # a chatapp campaign iteration needs openingMessage
    "opening_message_not_allowed",       # a voice campaign iteration takes none
    "empty_file",                        # a raw upload's body has at least one byte (a binary body has no length rule in OpenAPI)
}


@schemathesis.check
def refusals_name_a_conditional_rule(ctx, response, case):
    """A schema-valid request refused with 400 names one of CONDITIONAL_RULES."""
    if response.status_code != 400:
        return None
    meta = case.meta
    # Only generated-valid requests count. The stateful phase fills values in
    # from earlier responses through inferred links, which can break the
    # schema (an id put where an array of ids belongs); its other checks
    # (no 5xx, responses as documented) still run.
    if meta is None or not meta.generation.mode.is_positive or meta.phase.name == "stateful":
        return None
    try:
        code = response.json()["error"]["code"]
    except Exception:
        raise AssertionError("a 400 without the failure envelope")
    if code not in CONDITIONAL_RULES:
        raise AssertionError(f"schema-valid request refused with 400 {code}: the document accepts what the service refuses")
    return None
