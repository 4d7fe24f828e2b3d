/* xmrgate dashboard: exact amounts, fiat prices, times and ages, no DOM
 * (tests/unit/test_admin_format.py and test_admin_price.py run it in node). Amounts are
 * integers of piconero and stay integers: BigInt arithmetic only, as in domain/money.py's
 * piconero_to_xmr. A float cannot hold every amount (2^53 < 2^63). */
(function (root) {
  "use strict";
  var PICO = BigInt("1000000000000");
  var DECIMALS = 12;

  /* A piconero amount as BigInt; a JSON number is exact only when it is a safe integer,
   * which parseJson guarantees by handing larger ones over as BigInt already. */
  function toBig(amount) {
    if (typeof amount === "bigint") { return amount; }
    if (typeof amount === "number" && Number.isSafeInteger(amount)) { return BigInt(amount); }
    if (typeof amount === "string" && /^[0-9]+$/.test(amount)) { return BigInt(amount); }
    throw new TypeError("not an integer amount of piconero: " + String(amount));
  }

  /* "1.2345" for 1234500000000: up to 12 decimals, trailing zeros trimmed. */
  function xmr(amount) {
    var a = toBig(amount);
    if (a < BigInt(0)) { throw new RangeError("amount must not be negative"); }
    var whole = a / PICO;
    var fraction = a % PICO;
    if (fraction === BigInt(0)) { return whole.toString(); }
    return whole.toString() + "." + fraction.toString().padStart(DECIMALS, "0").replace(/0+$/, "");
  }

  /* "1.5" (XMR, as typed) -> 1500000000000n; throws an Error whose message says what is wrong. */
  function parseXmr(text) {
    var m = /^\s*([0-9]*)(?:[.,]([0-9]*))?\s*$/.exec(String(text));
    if (!m || (m[1] === "" && (m[2] === undefined || m[2] === ""))) {
      throw new Error("an amount in XMR, such as 0.5 or 12.25");
    }
    var fraction = m[2] || "";
    if (fraction.length > DECIMALS) { throw new Error("at most 12 decimals (1 piconero)"); }
    return BigInt(m[1] || "0") * PICO + BigInt((fraction + "000000000000").slice(0, DECIMALS));
  }

  /* A JSON string literal (kept whole, so digits inside it are never taken for a number) or a
   * JSON number as its grammar has it (no leading zeros, so text JSON.parse refuses is still
   * refused); whatever else valid JSON holds (punctuation, true, false, null) has no digit. */
  var JSON_TOKEN = /"(?:[^"\\]|\\[\s\S])*"|-?(?:0|[1-9][0-9]*)(?:\.[0-9]+)?(?:[eE][+-]?[0-9]+)?/g;

  /* JSON.parse, but integers beyond 2^53 become exact BigInts. Browsers before 2023 do not
   * pass the reviver the source text, so the raw text is read here instead: every integer
   * literal that a float cannot hold is quoted with a random tag before JSON.parse, and the
   * reviver turns the tagged strings back into BigInts. */
  function parseJson(text) {
    text = String(text);
    var tag;
    do { tag = "bigint" + Math.random().toString(36).slice(2) + "_"; } while (text.indexOf(tag) !== -1);
    var quoted = text.replace(JSON_TOKEN, function (token) {
      if (token.charAt(0) === '"' || !/^-?[0-9]+$/.test(token)) { return token; }
      return Number.isSafeInteger(Number(token)) ? token : '"' + tag + token + '"';
    });
    return JSON.parse(quoted, function (key, value) {
      if (typeof value === "string" && value.indexOf(tag) === 0) { return BigInt(value.slice(tag.length)); }
      return value;
    });
  }

  /* JSON text of an object whose BigInt values are written as plain JSON integers (a
   * placeholder string with a random tag stands for each while JSON.stringify runs). */
  function toJson(object) {
    var marks = [];
    var tag = "bigint" + Math.random().toString(36).slice(2) + "_";
    var text = JSON.stringify(object, function (key, value) {
      if (typeof value === "bigint") { marks.push(value.toString()); return tag + (marks.length - 1); }
      return value;
    });
    return text.replace(new RegExp('"' + tag + '([0-9]+)"', "g"), function (_m, i) {
      return marks[Number(i)];
    });
  }

  /* A price in fiat as typed ("19,99", " 20 ", ".5") -> "19.99", "20", "0.5": plain digits
   * with at most one point, as POST /receive takes it. The currency's decimals (2 for EUR, 0
   * for JPY) are the gateway's to check: its answer names them. */
  function parseFiat(text) {
    var m = /^\s*([0-9]*)(?:[.,]([0-9]*))?\s*$/.exec(String(text));
    if (!m || (m[1] === "" && (m[2] === undefined || m[2] === ""))) {
      throw new Error("a price such as 19.99");
    }
    var whole = m[1].replace(/^0+(?=[0-9])/, "") || "0";
    var value = m[2] ? whole + "." + m[2] : whole;
    if (!/[1-9]/.test(value)) { throw new Error("a price above zero, such as 19.99"); }
    return value;
  }

  /* "1 XMR = 150.25 EUR": the rate of a quote or of GET /rates, exact as the gateway has it. */
  function rate(quote) { return "1 XMR = " + String(quote.rate) + " " + String(quote.currency); }

  function pad(n) { return String(n).padStart(2, "0"); }

  /* "2026-11-23 12:08:14 UTC" for an RFC 3339 time (the title shown on hover). */
  function utc(iso) {
    var d = new Date(iso);
    if (isNaN(d.getTime())) { return String(iso); }
    return d.getUTCFullYear() + "-" + pad(d.getUTCMonth() + 1) + "-" + pad(d.getUTCDate()) + " " +
      pad(d.getUTCHours()) + ":" + pad(d.getUTCMinutes()) + ":" + pad(d.getUTCSeconds()) + " UTC";
  }

  /* The same moment in the browser's time zone and language. */
  function local(iso) {
    var d = new Date(iso);
    if (isNaN(d.getTime())) { return String(iso); }
    return d.toLocaleString(undefined, { dateStyle: "medium", timeStyle: "medium" });
  }

  /* "3 h ago": how long before ``now`` the moment ``seconds`` was (both unix seconds), in its
   * largest whole unit; "just now" under a minute, and for a moment ahead of this clock (a
   * block's timestamp may be). The exact time goes in the element's title. */
  function ago(seconds, now) {
    var gone = Math.floor(Number(now) - Number(seconds));
    if (!(gone >= 60)) { return "just now"; }
    if (gone < 3600) { return Math.floor(gone / 60) + " min ago"; }
    if (gone < 86400) { return Math.floor(gone / 3600) + " h ago"; }
    return Math.floor(gone / 86400) + " d ago";
  }

  var api = { toBig: toBig, xmr: xmr, parseXmr: parseXmr, parseJson: parseJson, toJson: toJson,
    parseFiat: parseFiat, rate: rate, utc: utc, local: local, ago: ago };
  if (typeof module === "object" && module.exports) { module.exports = api; } else { root.XmrFormat = api; }
})(this);
