/* xmrgate dashboard, part 4 of 5: refunds (docs/refunds.md). A request's "Refund" form and
 * the claim link it gets (shown once: the gateway keeps only its hash), each refund's
 * state with its actions (send, record paid by hand, cancel), and the Refunds page, the
 * ones waiting for approval (claimed) first.
 *
 * The pages redraw when the API's answer changes; forms and the claim link live in one
 * panel per page that the redraws never touch, so nothing typed or shown is lost. */
(function () {
  "use strict";
  var F = window.XmrFormat;
  var A = window.XmrAdmin;
  var h = A.h, amount = A.amount, when = A.when, badge = A.badge, short = A.short,
    notice = A.notice, table = A.table, dl = A.dl, enc = A.enc, api = A.api, explain = A.explain,
    field = A.field, buttons = A.buttons, closeButton = A.closeButton;
  var HEX64 = /^[0-9a-fA-F]{64}$/;
  var LIVES = [["86400", "1 day"], ["604800", "7 days"], ["2592000", "30 days"]];

  // ------------------------------------------------------------------ the panel

  /* One page's place for refund forms and answers (A.desk), and how it reloads its figures
   * (``refresh``, set by the page once ``live`` gave it). A refused call names the 'refund'
   * scope unless its ``act`` names another. */
  function desk(gen) { return A.desk(gen, "refund", { scope: "refund", refusal: refusal }); }

  /* What a refused send whose outcome is unknown (504) says: what that means for the
   * money (any other refusal: A.desk's plain error, id "refund-error"). */
  function refusal(err) {
    if (err.status === 504) {
      return h("div", { class: "notice error", role: "alert", id: "refund-unknown" }, [
        h("strong", { text: "Outcome unknown: " }), err.message,
        h("p", { text: "The money may have left or not. The refund stays 'sending' and the gateway will " +
          "never send it again by itself. Look for it in the wallet's outgoing transfers (the Payouts " +
          "page): if it left, record it here with \"Record paid by hand\" (its tx hash and tx key)." })]);
    }
    return null;
  }

  // ------------------------------------------------------------------ a new refund

  /* The Refund button's form: the amount (prefilled with all that is refundable) in XMR or
   * in one of the gateway's currencies (``rates``, GET /rates: the gateway converts it), the
   * reason the customer reads, how long the link lives. */
  function createForm(d, address, refundable, rates) {
    var amountIn = h("input", { id: "refund-amount", inputmode: "decimal", autocomplete: "off", required: true,
      value: F.xmr(refundable) });
    var currency = h("select", { id: "refund-currency", "aria-label": "Currency" },
      ["XMR"].concat(rates.map(function (r) { return r.currency; })).map(function (code) {
        return h("option", { value: code, text: code });
      }));
    var most = "At most " + F.xmr(refundable) + " XMR: what it received less what is already refunded. " +
      "Money not yet mined cannot be refunded.";
    var hint = h("small", { class: "muted", id: "refund-amount-hint", text: most });
    /* A fiat amount is typed afresh; the hint gives the gateway's rate (or says none is fresh). */
    currency.addEventListener("change", function () {
      var r = rates.filter(function (x) { return x.currency === currency.value; })[0];
      var fresh = r && r.rate !== null && r.rate !== undefined;
      amountIn.value = r ? "" : F.xmr(refundable);
      amountIn.placeholder = r ? "5.00" : "";
      hint.className = r && !fresh ? "bad" : "muted";
      hint.textContent = !r ? most : !fresh ? "No fresh " + r.currency + " rate now, so the gateway refuses " +
        "refunds in " + r.currency + (r.reason ? ": " + r.reason : ".") : "Converted to XMR at the gateway's " +
        "rate when you make it (now " + F.rate(r) + "), and again when it is sent: the customer gets this much " +
        r.currency + " worth. " + most;
    });
    var reason = h("textarea", { id: "refund-reason", rows: 2, maxlength: 500 });
    var life = h("select", { id: "refund-life" }, LIVES.map(function (o) {
      return h("option", { value: o[0], selected: o[0] === "604800", text: o[1] });
    }));
    var said = h("div", { id: "refund-said", role: "status" });
    var go = h("button", { type: "submit", class: "button panel-go", id: "refund-submit", text: "Make the refund" });
    var form = h("form", { id: "refund-form" }, [
      h("p", { class: "field" }, [h("label", { for: "refund-amount", text: "Amount" }),
        h("span", { class: "amount-row" }, [amountIn, currency]), hint]),
      field("Reason", reason, "Optional; the customer reads it on the claim page."),
      field("The link works for", life),
      buttons(go, [" ", closeButton(d, "Cancel")]), said]);
    form.addEventListener("submit", function (ev) {
      ev.preventDefault();
      var body, fiat = currency.value !== "XMR";
      try {
        body = fiat ? { price: { amount: F.parseFiat(amountIn.value), currency: currency.value } }
          : { amount: F.parseXmr(amountIn.value) };
        body.expires_in = Number(life.value);
      } catch (e) {
        said.replaceChildren(notice("Amount: " + e.message, "error"));
        return;
      }
      // A fiat amount is the gateway's to convert and to refuse past what is refundable (409).
      if (!fiat && body.amount <= F.toBig(0)) {
        said.replaceChildren(notice("Amount: more than 0 XMR.", "error"));
        return;
      }
      if (!fiat && body.amount > F.toBig(refundable)) {
        said.replaceChildren(notice("Amount: at most " + F.xmr(refundable) + " XMR can be refunded.", "error"));
        return;
      }
      if (reason.value.trim()) { body.reason = reason.value.trim(); }
      d.act(go, said, function () {
        return api("POST", "receive/" + enc(address) + "/refunds", body);
      }, function (made) { showLink(d, made); });
    });
    d.show("Refund", form);
  }

  /* The claim link, right after the refund was made: the only time it can be seen. */
  function showLink(d, made) {
    var link = h("input", { id: "claim-url", class: "mono claim-url", readonly: true, value: made.claim_url,
      "aria-label": "Claim link", spellcheck: "false" });
    var said = h("span", { id: "copy-said", class: "muted", role: "status" });
    var copy = h("button", { type: "button", class: "button panel-go", id: "copy-link", text: "Copy link" });
    copy.addEventListener("click", function () {
      function byHand() {
        link.focus();
        link.select();
        var done = false;
        try { done = document.execCommand("copy"); } catch (e) { done = false; }
        said.textContent = done ? "Copied." : "Selected: press Ctrl+C (⌘C) to copy it.";
      }
      if (navigator.clipboard && navigator.clipboard.writeText) {
        navigator.clipboard.writeText(made.claim_url).then(function () { said.textContent = "Copied."; }, byHand);
      } else { byHand(); }
    });
    link.addEventListener("focus", function () { link.select(); });
    d.show("Refund made", [
      dl([["Refund", h("span", { class: "mono", id: "made-id", text: made.id })],
        made.price ? ["Price", h("span", { id: "made-price", text: made.price.amount + " " + made.price.currency })]
          : null,
        ["Amount", amount(made.amount, "made-amount")],
        ["Link works until", when(made.expires_at)]]),
      made.price ? h("p", { class: "muted", id: "made-converted", text: made.price.amount + " " +
        made.price.currency + " is " + F.xmr(made.amount) + " XMR at the gateway's rate now (reserved); it is " +
        "converted again when sent, so the customer gets " + made.price.amount + " " + made.price.currency +
        " worth." }) : null,
      h("p", { text: "Give this link to the customer (mail, chat, the order page): they open it and type " +
        "the Monero address to refund to." }),
      h("p", { class: "link-row" }, [link, copy]), h("p", { class: "said" }, said),
      h("p", { class: "notice warn", id: "link-once", text: "This link is shown only now: the gateway keeps " +
        "only its hash and will not show it again. Copy it before you close this." }),
      buttons(closeButton(d, "I have copied it"))], "made");
  }

  // ------------------------------------------------------------------ actions on a refund

  function facts(r, extra) {
    return dl([["Refund", h("span", { class: "mono", text: r.id })], ["Amount", amount(r.amount)],
      r.reason ? ["Reason", r.reason] : null].concat(extra || []));
  }

  function sendPanel(d, r) {
    var said = h("div", { role: "status" });
    var go = h("button", { type: "button", class: "button panel-go", id: "send-confirm",
      text: "Send " + F.xmr(r.amount) + " XMR" });
    go.addEventListener("click", function () {
      d.act(go, said, function () { return api("POST", "refunds/" + enc(r.id) + "/send"); }, function (sent) {
        d.show("Refund sent", [notice("Sent " + F.xmr(sent.amount) + " XMR to the customer.", "ok"),
          facts(sent, [["Transactions", txList(sent.tx_hash_list, "sent-tx")],
            sent.fee === null || sent.fee === undefined ? null : ["Fee", amount(sent.fee)]]),
          buttons(closeButton(d))]);
      });
    });
    d.show("Send this refund?", [
      facts(r, [["To", h("code", { class: "address", id: "send-to", text: r.claim_address })]]),
      h("p", { text: "The gateway sends it now from this store's wallet, once: a second send is refused." }),
      buttons(go, [" ", closeButton(d, "Don't send")]), said]);
  }

  function paidPanel(d, r) {
    var hash = h("input", { id: "paid-hash", class: "mono", autocomplete: "off", spellcheck: "false",
      required: true, maxlength: 64, placeholder: "64 hexadecimal characters" });
    var key = h("input", { id: "paid-key", class: "mono", autocomplete: "off", spellcheck: "false",
      required: true, maxlength: 64, placeholder: "64 hexadecimal characters" });
    var said = h("div", { role: "status" });
    var go = h("button", { type: "submit", class: "button", id: "paid-submit", text: "Record" });
    var form = h("form", { id: "paid-form" }, [
      h("p", { text: "Pay " + F.xmr(r.amount) + " XMR to the address below from any wallet, then give the " +
        "transaction's hash and its secret key (wallet-rpc's get_tx_key, or \"Transaction key\" in the " +
        "GUI). The gateway checks with check_tx_key that it pays this address at least the refund's amount." }),
      h("p", {}, h("code", { class: "address", id: "paid-to", text: r.claim_address })),
      field("Transaction hash", hash), field("Transaction key", key),
      buttons(go, [" ", closeButton(d)]), said]);
    form.addEventListener("submit", function (ev) {
      ev.preventDefault();
      var body = { tx_hash: hash.value.trim(), tx_key: key.value.trim() };
      if (!HEX64.test(body.tx_hash) || !HEX64.test(body.tx_key)) {
        said.replaceChildren(notice("The hash and the key are 64 hexadecimal characters each.", "error"));
        return;
      }
      d.act(go, said, function () { return api("POST", "refunds/" + enc(r.id) + "/paid", body); }, function (sent) {
        d.show("Refund recorded", [notice("Recorded as paid by hand; it is confirmed once its transaction is mined.", "ok"),
          facts(sent, [["Transaction", txList(sent.tx_hash_list, "sent-tx")]]), buttons(closeButton(d))]);
      });
    });
    d.show("Record a refund paid by hand", form);
  }

  function cancelPanel(d, r) {
    var said = h("div", { role: "status" });
    var go = h("button", { type: "button", class: "button panel-go", id: "cancel-confirm", text: "Cancel the refund" });
    go.addEventListener("click", function () {
      d.act(go, said, function () { return api("DELETE", "refunds/" + enc(r.id)); }, function (gone) {
        d.show("Refund cancelled", [notice("Cancelled: its link no longer works, and its " + F.xmr(gone.amount) +
          " XMR may be refunded again.", "ok"), buttons(closeButton(d))]);
      });
    });
    d.show("Cancel this refund?", [facts(r),
      h("p", { text: r.status === "claimed" ? "The customer gave an address already; cancelling refuses it, " +
        "and the link stops working." : "The customer's link stops working." }),
      buttons(go, [" ", closeButton(d, "Keep it")]), said]);
  }

  // ------------------------------------------------------------------ the list

  function txList(hashes, id) {
    if (!hashes || !hashes.length) { return h("span", { class: "muted", text: "—" }); }
    return h("span", { id: id }, hashes.map(function (t) {
      return h("div", { class: "mono", title: t, text: short(t) });
    }));
  }

  function stateOf(r) {
    var kids = [badge(r.status)];
    if (r.status === "claimed") { kids.push(h("div", { class: "hint", text: "waiting for your approval" })); }
    if (r.status === "open") { kids.push(h("div", { class: "hint" }, ["link until ", when(r.expires_at)])); }
    if (r.status === "sending") {
      kids.push(h("div", { class: "hint bad", text: "outcome unknown: check the wallet" }));
    }
    if (r.manual) { kids.push(h("div", { class: "hint", text: "paid by hand" })); }
    if (r.error) { kids.push(h("div", { class: "hint bad", text: r.error })); }
    return kids;
  }

  function actionsOf(d, r) {
    function button(action, text, open) {
      return h("button", { type: "button", class: "button secondary small", "data-action": action,
        "data-refund": r.id, text: text, onclick: function () { open(d, r); } });
    }
    var kids = [];
    if (r.status === "claimed") { kids.push(button("send", "Send", sendPanel)); }
    if (r.status === "claimed" || r.status === "sending") {
      kids.push(button("paid", "Record paid by hand", paidPanel));
    }
    if (r.status === "open" || r.status === "claimed") { kids.push(button("cancel", "Cancel", cancelPanel)); }
    return kids;
  }

  /* The refunds as a table; ``withRequest`` adds the request's column (the Refunds page). */
  function refundTable(d, refunds, withRequest, id) {
    var rows = refunds.map(function (r) {
      return h("tr", { "data-refund": r.id, "data-status": r.status, class: r.status === "claimed" ? "waiting" : null }, [
        h("td", { class: "wide-only" }, when(r.created_at)),
        h("td", { class: "state" }, stateOf(r)),
        h("td", { class: "num" }, [amount(r.amount), r.price ? h("div", { class: "fiat",
          text: r.price.amount + " " + r.price.currency }) : null]),
        withRequest ? h("td", {}, h("a", { href: "#/request/" + enc(r.address), class: "mono", title: r.address,
          text: short(r.address) })) : null,
        h("td", {}, [r.claim_address ? h("span", { class: "mono claim-address", title: r.claim_address,
          text: short(r.claim_address) }) : h("span", { class: "muted", text: "not claimed yet" }),
        r.reason ? h("div", { class: "desc", text: r.reason }) : null]),
        h("td", {}, txList(r.tx_hash_list)),
        h("td", {}, h("div", { class: "acts" }, actionsOf(d, r)))]);
    });
    var head = [["Created", "wide-only"], ["State"], ["Amount", "num"]].concat(withRequest ? [["Request"]] : [])
      .concat([["Claimed to"], ["Transaction"], ["Actions"]]);
    return table(head, rows, { id: id, class: "refunds" });
  }

  // ------------------------------------------------------------------ on a request's page

  /* What a request's page needs: its refunds (``load``), the panel, the Refund button and
   * the list. A gateway without refunds answers 404 to the list: then no button. */
  function forRequest(gen, address) {
    var d = desk(gen);
    return {
      panel: d.panel,
      setRefresh: function (refresh) { d.refresh = refresh; },
      load: function () {
        return api("GET", "receive/" + enc(address) + "/refunds").then(function (data) {
          return { refunds: data && Array.isArray(data.refunds) ? data.refunds : [] };
        }, function (err) {
          if (err.status === 401) { throw err; }
          return { error: explain(err, "read"), missing: err.status === 404 };
        });
      },
      /* The button, only when something received is not refunded yet. */
      button: function (found, body) {
        if (found.error) { return null; }
        var received = F.toBig(body.amount.covered.total);
        var refunded = F.toBig(body.refunded === undefined || body.refunded === null ? 0 : body.refunded);
        var left = received - refunded;
        if (left <= F.toBig(0)) { return null; }
        return h("button", { type: "button", class: "button", id: "refund-open", text: "Refund",
          onclick: function () {
            A.fiatRates().then(function (found) {
              if (d.gen === A.generation) { createForm(d, address, left, found.rates); }
            }, function (err) { A.failed(err, d.gen); });
          } });
      },
      list: function (found) {
        if (found.error) {
          return found.missing ? null
            : notice("No refunds shown: " + found.error, "warn");
        }
        return found.refunds.length ? refundTable(d, found.refunds, false, "request-refunds")
          : h("p", { class: "muted", id: "no-refunds", text: "No refunds." });
      }
    };
  }

  // ------------------------------------------------------------------ the Refunds page

  function refundsPage(gen) {
    var d = desk(gen);
    var results = h("div", { id: "refund-results" });
    A.setView(h("section", { id: "refunds" }, [h("h1", { text: "Refunds" }),
      h("p", { class: "muted", text: "Refunds of this store's requests. A customer claims one with its link; " +
        "a claimed refund waits for you: send it (full wallet) or pay it by hand and record it." }),
      d.panel, results]));
    var ctl = {};
    var shown = A.live(gen, 10, function () { return api("GET", "refunds?limit=200"); }, function (data, stale) {
      var refunds = data && Array.isArray(data.refunds) ? data.refunds : [];
      var waiting = refunds.filter(function (r) { return r.status === "claimed"; }).length;
      var unknown = refunds.filter(function (r) { return r.status === "sending"; }).length;
      results.replaceChildren();
      A.append(results, [stale,
        waiting ? notice(waiting + (waiting === 1 ? " refund waits" : " refunds wait") + " for your approval.", "warn")
          : null,
        unknown ? notice(unknown + (unknown === 1 ? " refund was" : " refunds were") + " being sent when the " +
          "wallet stopped answering: the money may have left or not. Check the wallet's outgoing transfers " +
          "(Payouts) and record what left by hand.", "error") : null,
        refunds.length ? refundTable(d, refunds, true, "refund-list")
          : notice("No refunds yet. Make one with the Refund button on a payment request's page.", "")]);
    }, ctl);
    d.refresh = function () { return ctl.refresh ? ctl.refresh() : Promise.resolve(); };
    return shown;
  }

  A.refunds = { forRequest: forRequest };
  A.pages = A.pages || {};
  Object.assign(A.pages, { refunds: refundsPage });
})();
