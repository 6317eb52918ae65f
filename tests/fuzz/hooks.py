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
