// Phone-number inputs: a number typed any usual way, taken as E.164, in
// the business's default phone country when it has no country code.
"use strict";

// ---- phone numbers --------------------------------------------------------------------

// The calling code of the business's default phone country, if it has one.
function businessCallingCode() {
  return (state.settings && state.settings.defaultCallingCode) || null;
}

// The country calling code a number without "+" is taken in: the
// business's default phone country's (session.js loads it), else the browser's
// region's, else +1.
const CALLING_CODES = { US: "1", CA: "1", GB: "44", IE: "353", FR: "33", DE: "49", ES: "34", PT: "351", IT: "39", NL: "31", BE: "32",
  CH: "41", AT: "43", SE: "46", NO: "47", DK: "45", FI: "358", PL: "48", BR: "55", MX: "52", AR: "54", IN: "91", AU: "61", NZ: "64", ZA: "27", JP: "81", SG: "65" };
function defaultCallingCode() {
  if (businessCallingCode()) return businessCallingCode();
  const region = (navigator.language || "").split("-")[1];
  return CALLING_CODES[(region || "").toUpperCase()] || "1";
}

// A number as typed ("+1 415 555 0199", "(415) 555-0199", "0044 20…") in
// E.164: spaces, dots, dashes and brackets go; 00 is +; a number without
// a country code takes the default one (a leading trunk 0 dropped).
function phoneE164(text, cc) {
  const t = String(text || "").trim();
  if (!t) return "";
  if (!/^[+0-9 .()\-]+$/.test(t)) return t;
  const digits = t.replace(/[^0-9]/g, "");
  if (t.startsWith("+")) return "+" + digits;
  if (digits.startsWith("00")) return "+" + digits.slice(2);
  const code = cc || defaultCallingCode();
  return "+" + code + (code !== "1" && digits.startsWith("0") ? digits.slice(1) : digits);
}

// A phone input: any usual way of writing a number, stored as E.164 (shown
// as such once the field is left), with the default country said.
function phoneInput(attrs) {
  const input = h("input", { type: "tel", autocomplete: "tel", "data-phone": "", placeholder: "+1 415 555 0199", ...attrs });
  input.addEventListener("blur", () => { if (input.value.trim()) input.value = phoneE164(input.value); });
  return input;
}
function phoneHint(id) {
  return h("p", { class: "hint", id, text: `Any way of writing it; without a +, the country code is +${defaultCallingCode()}.` });
}
