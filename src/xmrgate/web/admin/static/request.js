/* xmrgate dashboard, part 3 of 5: one payment request (amounts, its price in fiat if it has
 * one, transactions, callbacks with every try and "Deliver again") and the form that creates
 * one, in XMR or in a currency of the gateway's GET /rates. */
(function () {
  "use strict";
  var F = window.XmrFormat;
  var A = window.XmrAdmin;
  var h = A.h, s = A.s, append = A.append, setView = A.setView, amount = A.amount, when = A.when,
    badge = A.badge, short = A.short, notice = A.notice, table = A.table, dl = A.dl, enc = A.enc,
    api = A.api, explain = A.explain, failed = A.failed, live = A.live;
  var notes = new Map(); // per-callback feedback that survives redraws: {text, tries}

  // ------------------------------------------------------------------ one request

  /* The page is drawn in two parts around the refund panel (refunds.js), which its
   * redraws leave alone: a refund form being filled in survives a new confirmation. */
  function requestPage(gen, address) {
    var refunds = A.refunds.forRequest(gen, address);
    var head = h("div", { id: "request-head" });
    var rest = h("div", { id: "request-body" });
    var ctl = {};
    function load() {
      return Promise.all([api("GET", "receive/" + enc(address)),
        api("GET", "receive/" + enc(address) + "/callbacks"), refunds.load()]);
    }
    var shown = live(gen, 3, load, function (data, stale) {
      if (!head.parentNode) { setView(h("section", { id: "request" }, [head, refunds.panel, rest])); }
      var body = data[0];
      var amt = body.amount;
      var due = amt.due !== undefined ? amt.due : (function () {
        var rest = F.toBig(amt.expected) - F.toBig(amt.covered.total);
        return rest > F.toBig(0) ? rest : F.toBig(0);
      })();
      var txs = (body.transactions || []).map(function (t) {
        return h("tr", { "data-tx": t.tx_hash }, [
          h("td", {}, h("span", { class: "mono", title: t.tx_hash, text: short(t.tx_hash) })),
          h("td", { class: "num" }, amount(t.amount)),
          h("td", { class: "num", text: String(t.confirmations) }),
          h("td", { class: "num wide-only", text: t.height ? String(t.height) : "pool" }),
          h("td", { text: (t.locked ? "locked" : "unlocked") + (t.double_spend_seen ? ", double spend seen!" : "") }),
          h("td", { class: "wide-only" }, when(t.timestamp))]);
      });
      var refundButton = refunds.button(data[2], body);
      var refundList = refunds.list(data[2]); // null on a gateway without refunds
      head.replaceChildren();
      append(head, [
        h("h1", {}, ["Payment request ", badge(A.statusOf(body), "req-status")]), stale,
        h("p", {}, h("code", { class: "address", id: "req-address", text: address })),
        h("p", { class: "actions" }, [h("a", { href: "pay/" + enc(address), target: "_blank", rel: "noopener noreferrer",
          class: "button secondary", id: "checkout-link", text: "Open its checkout page" }), " ",
          refundButton, refundButton ? " " : null, h("a", { href: "#/requests", text: "All requests" })])]);
      rest.replaceChildren();
      append(rest, [
        h("div", { class: "cards" }, [
          h("section", { class: "card" }, [h("h2", { text: "Amounts" }), dl([
            ["Expected", amount(amt.expected, "req-expected")],
            ["Received", amount(amt.covered.total, "req-received")],
            ["Unlocked", amount(amt.covered.unlocked, "req-unlocked")],
            ["Still due", amount(due, "req-due")],
            body.refunded ? ["Refunded", amount(body.refunded, "req-refunded")] : null])]),
          body.price ? priceCard(body.price, body.expires_at) : null,
          h("section", { class: "card" }, [h("h2", { text: "Details" }), dl([
            ["Description", body.description || "—"],
            ["Created", when(body.created_at)],
            ["Expires", body.expires_at ? when(body.expires_at) : "never"],
            ["Complete", body.complete ? "yes" : "no", "req-complete"]])])]),
        h("h2", { text: "Transactions" }),
        txs.length ? table([["Transaction"], ["Amount", "num"], ["Confirmations", "num"], ["Height", "num wide-only"],
          ["State"], ["Time", "wide-only"]], txs, { id: "tx-list" }) : notice("Nothing received yet.", ""),
        refundList ? h("h2", { text: "Refunds" }) : null, refundList,
        h("h2", { text: "Callbacks" }),
        callbacksView(address, data[1].callbacks || [], gen)]);
    }, ctl);
    refunds.setRefresh(function () { return ctl.refresh ? ctl.refresh() : Promise.resolve(); });
    return shown;
  }

  /* A request priced in fiat: its price, the rate that made the XMR amount, where that
   * rate came from and until when it holds (the request expires with its rate lock). */
  function priceCard(quote, expiresAt) {
    return h("section", { class: "card", id: "card-price" }, [h("h2", { text: "Price" }), dl([
      ["Price", A.price(quote, "req-price")],
      ["Rate", h("span", { id: "req-rate", text: F.rate(quote) })],
      ["Rate sources", (quote.sources || []).join(", ") || "—", "req-rate-sources"],
      ["Rate from", when(quote.rate_at)],
      ["Locked until", when(expiresAt)]])]);
  }

  function callbacksView(address, callbacks, gen) {
    if (!callbacks.length) {
      return notice("No callbacks: the request has no callback URL, or nothing has happened yet.", "");
    }
    return h("div", { id: "callbacks" }, callbacks.map(function (c) {
      // Feedback stays until a new try shows (then the try itself says how it went).
      var note = notes.get(c.id);
      if (note && note.tries !== c.attempts) { notes.delete(c.id); note = null; }
      var said = h("p", { class: "said", role: "status", text: note ? note.text : "" });
      var again = h("button", { type: "button", class: "button secondary", "data-retry": c.id,
        text: "Deliver again" });
      again.addEventListener("click", function () {
        again.disabled = true;
        said.textContent = "Asking the gateway…";
        api("POST", "receive/" + enc(address) + "/callbacks/" + enc(c.id) + "/retry").then(function () {
          notes.set(c.id, { text: "Queued: the gateway delivers it now.", tries: c.attempts });
        }, function (err) {
          if (err.status === 401) { failed(err, gen); return; }
          notes.set(c.id, { text: explain(err, "receive"), tries: c.attempts });
        }).then(function () {
          var now = notes.get(c.id);
          said.textContent = now ? now.text : "";
          again.disabled = false;
        });
      });
      var tries = Array.isArray(c.tries) ? c.tries : null;
      return h("article", { class: "card callback", "data-callback": c.id, "data-status": c.status }, [
        h("h3", {}, [c.event + " ", badge(c.status)]),
        dl([["Transaction", c.tx_hash ? h("span", { class: "mono", title: c.tx_hash, text: short(c.tx_hash) }) : "—"],
          ["Created", when(c.created_at)],
          ["Tries", h("span", { class: "tries-count", text: String(c.attempts) })],
          c.delivered_at ? ["Delivered", when(c.delivered_at)] : null,
          c.next_attempt_at ? ["Next try", when(c.next_attempt_at)] : null]),
        tries === null ? dl([["Last answer", c.last_status ? "HTTP " + c.last_status : "—"],
          ["Last error", c.last_error || "—"]])
          : tries.length ? table([["#", "num"], ["When"], ["Answer"], ["Error"]], tries.map(function (t, i) {
            return h("tr", { class: t.delivered ? "ok" : "bad" }, [h("td", { class: "num", text: String(i + 1) }),
              h("td", {}, when(t.at)), h("td", { text: t.status_code ? "HTTP " + t.status_code : "no answer" }),
              h("td", { text: t.error || (t.delivered ? "delivered" : "—") })]);
          }), { class: "tries" }) : h("p", { class: "muted", text: "Not tried yet." }),
        h("p", {}, again), said]);
    }));
  }

  // ------------------------------------------------------------------ new request

  /* The currencies the gateway prices in (GET /rates): {rates: [...]} with each one's
   * rate, or {rates: [], why} when a gateway with fiat prices off answers 400 or a key
   * without 'read' 403 (the forms then offer XMR only and say why). Also used by the
   * refund and link forms (refunds.js, links.js). */
  function fiatRates() {
    return api("GET", "rates").then(function (data) {
      return { rates: data && Array.isArray(data.currencies) ? data.currencies : [] };
    }, function (err) {
      if (err.status === 401) { throw err; }
      return { rates: [], why: err.status === 400 ? "Prices in fiat are off on this gateway (--rate-currencies)."
        : "No prices in fiat: the rates could not be read. " + explain(err, "read") };
    });
  }

  /* The form, once the gateway said which currencies it prices in. */
  function newPage(gen) {
    return fiatRates().then(function (found) {
      if (gen === A.generation) { newForm(found.rates, found.why); }
    });
  }

  function newForm(rates, why) {
    var field = function (label, input, hint) {
      return h("p", { class: "field" }, [h("label", { for: input.id, text: label }), input,
        hint ? h("small", { class: "muted", text: hint }) : null]);
    };
    var amountIn = h("input", { id: "new-amount", inputmode: "decimal", autocomplete: "off", required: true,
      placeholder: "0.5" });
    var currency = h("select", { id: "new-currency", "aria-label": "Currency" },
      ["XMR"].concat(rates.map(function (r) { return r.currency; })).map(function (code) {
        return h("option", { value: code, text: code });
      }));
    var amountHint = h("small", { class: "muted", id: "new-amount-hint" });
    var desc = h("textarea", { id: "new-description", rows: 2, maxlength: 1024 });
    var never = h("option", { value: "", text: "never" });
    var expiry = h("select", { id: "new-expires" }, [never].concat([["900", "15 minutes"], ["3600", "1 hour"],
      ["86400", "1 day"], ["604800", "7 days"]].map(function (o) { return h("option", { value: o[0], text: o[1] }); })));
    var tolerance = h("input", { id: "new-tolerance", inputmode: "decimal", autocomplete: "off", placeholder: "0" });
    var callback = h("input", { id: "new-callback", type: "url", placeholder: "your shop's https:// address for events" });
    var back = h("input", { id: "new-return", type: "url", placeholder: "the https:// page to send the customer back to" });
    var said = h("div", { id: "new-result", role: "status" });
    var submit = h("button", { type: "submit", class: "button", id: "new-submit", text: "Create" });
    var idem = null; // one Idempotency-Key per filled-in form: a double click creates one request
    var form = h("form", { class: "card narrow", id: "new-form" }, [
      h("p", { class: "field" }, [h("label", { for: "new-amount", text: "Amount" }),
        h("span", { class: "amount-row" }, [amountIn, currency]), amountHint]),
      field("Description", desc, "Shown to the customer on the checkout page."),
      field("Expires after", expiry),
      field("Accept up to this much less (XMR)", tolerance, "Optional underpayment tolerance."),
      field("Callback URL", callback, "Optional: where the gateway POSTs each event."),
      field("Return URL", back, "Optional: the checkout page's link back to the shop."),
      h("p", {}, submit), said]);

    /* What the amount means in the chosen currency; a price in fiat holds while its rate
     * is locked, so "never" expires becomes "when the lock ends". */
    function chosen() {
      var code = currency.value;
      var r = rates.filter(function (x) { return x.currency === code; })[0];
      amountIn.placeholder = r ? "19.99" : "0.5";
      never.textContent = r ? "when the rate lock ends" : "never";
      amountHint.className = "muted";
      if (!r) {
        amountHint.textContent = "0 asks for any amount (a donation)." + (why ? " " + why : "");
      } else if (r.rate === null || r.rate === undefined) {
        amountHint.className = "bad";
        amountHint.textContent = "No fresh " + code + " rate now, so the gateway refuses prices in " + code +
          (r.reason ? ": " + r.reason : ".");
      } else {
        amountHint.textContent = "Converted to XMR at the gateway's rate when you create it (now " + F.rate(r) +
          ", from " + (r.sources || []).filter(function (x) { return x.used; }).map(function (x) {
            return x.name;
          }).join(", ") + "). The request expires when that rate's lock ends (--rate-lock).";
      }
    }
    currency.addEventListener("change", chosen);
    chosen();
    form.addEventListener("input", function () { idem = null; });
    form.addEventListener("submit", function (ev) {
      ev.preventDefault();
      var body;
      try {
        body = currency.value === "XMR" ? { amount: F.parseXmr(amountIn.value) }
          : { price: { amount: F.parseFiat(amountIn.value), currency: currency.value } };
        if (tolerance.value.trim()) { body.underpay_tolerance = F.parseXmr(tolerance.value); }
      } catch (e) {
        said.replaceChildren(notice("Amount: " + e.message, "error"));
        return;
      }
      if (desc.value) { body.description = desc.value; }
      if (expiry.value) { body.expires_in = Number(expiry.value); }
      if (callback.value.trim()) { body.callback_url = callback.value.trim(); }
      if (back.value.trim()) { body.return_url = back.value.trim(); }
      idem = idem || (window.crypto && crypto.randomUUID ? crypto.randomUUID() : String(Date.now()) + Math.random());
      submit.disabled = true;
      said.replaceChildren(notice("Creating…", ""));
      api("POST", "receive", body, { "Idempotency-Key": idem }).then(function (made) {
        location.hash = "#/request/" + enc(made.address);
      }, function (err) {
        if (err.status === 401) { failed(err, A.generation); return; }
        said.replaceChildren(notice(explain(err, "receive"), "error"));
      }).then(function () { submit.disabled = false; });
    });
    setView(h("section", { id: "new" }, [h("h1", { text: "New payment request" }), form]));
    amountIn.focus();
  }

  A.fiatRates = fiatRates;
  A.pages = A.pages || {};
  Object.assign(A.pages, { request: requestPage, create: newPage });
})();
