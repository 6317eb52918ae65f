// Verifies deliveries with the npm registry's `standardwebhooks` package,
// as an integrator's receiver would: reads a JSON list of
// {secret, headers, body} on stdin and prints one answer per delivery, in
// order: "ok", or the library's error message.
import { readFileSync } from "node:fs";
import { Webhook } from "standardwebhooks";

const deliveries = JSON.parse(readFileSync(0, "utf8"));
const answers = deliveries.map(({ secret, headers, body }) => {
  try {
    new Webhook(secret).verify(body, headers);
    return "ok";
  } catch (e) {
    return String(e.message || e);
  }
});
console.log(JSON.stringify(answers));
