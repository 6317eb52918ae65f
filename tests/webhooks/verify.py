"""Verifies deliveries with PyPI's `standardwebhooks` package, as an
integrator's receiver would: reads a JSON list of {secret, headers, body} on
stdin and prints one answer per delivery, in order: "ok", or the library's
error. Run by tests/api/standard_webhooks.rs with the venv ensure.py makes."""
import json
import sys

from standardwebhooks.webhooks import Webhook

answers = []
for d in json.load(sys.stdin):
    try:
        Webhook(d["secret"]).verify(d["body"], d["headers"])
        answers.append("ok")
    except Exception as e:  # the library's WebhookVerificationError, or a bad secret
        answers.append(f"{type(e).__name__}: {e}")
print(json.dumps(answers))
