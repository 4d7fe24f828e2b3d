/* xmrgate dashboard: payment links (loaded after refunds.js, before admin.js).
 * The Links page lists the store's links with what each made and received, makes new
 * ones (showing the public URL to hand out), turns them off and on, deletes them (a link
 * that made requests is only turned off: the gateway says so), and shows the requests a
 * link made (GET /receive?link=<id>).
 *
 * As on the Refunds page, the list redraws when the API's answer changes; the form and the
 * answers live in one panel that the redraws never touch, so nothing typed is lost. */
(function () {
  "use strict";
  var F = window.XmrFormat;
  var A = window.XmrAdmin;
  var h = A.h, amount = A.amount, when = A.when, badge = A.badge, short = A.short,
    notice = A.notice, table = A.table, dl = A.dl, enc = A.enc, api = A.api, explain = A.explain,
    failed = A.failed, field = A.field, buttons = A.buttons, closeButton = A.closeButton;
  // How long each request a link makes waits for its money (the API's default: 1 hour).
  var LIVES = [["900", "15 minutes"], ["3600", "1 hour"], ["21600", "6 hours"], ["86400", "1 day"],
    ["604800", "7 days"]];
  var SLUG = /^[a-z0-9][a-z0-9-]{2,63}$/;
  var REQUESTS_SHOWN = 50;
  var WEB = /^https?:[/][/]/i; // a page to link to: http or https only

  // ------------------------------------------------------------------ the panel

  /* The page's place for the form and the answers (A.desk); ``refresh`` reloads the list. */
  function desk(gen) { return A.desk(gen, "link", { scope: "receive" }); }

  /* Copy ``text``: the clipboard API, else a selected field and execCommand("copy"). */
  function copyText(text, said) {
    function byHand() {
      var box = h("textarea", { class: "copy-box", readonly: true, "aria-hidden": "true" });
      box.value = text;
      document.body.append(box);
      box.select();
      var done = false;
      try { done = document.execCommand("copy"); } catch (e) { done = false; }
      box.remove();
      said.textContent = done ? "Copied." : "Could not copy: select the link and press Ctrl+C (⌘C).";
    }
    if (navigator.clipboard && navigator.clipboard.writeText) {
      navigator.clipboard.writeText(text).then(function () { said.textContent = "Copied."; }, byHand);
    } else { byHand(); }
  }

  /* The link's public page, shown as /l/<slug> (the whole URL on hover, and copied by
   * Copy); a link only when it is one (http or https). */
  function urlOf(link) {
    var shownAs = "/l/" + link.slug;
    if (WEB.test(link.url)) {
      return h("a", { href: link.url, target: "_blank", rel: "noopener noreferrer", class: "mono link-url",
        title: link.url, text: shownAs });
    }
    return h("span", { class: "mono link-url", title: link.url, text: shownAs });
  }

  // ------------------------------------------------------------------ a new link

  /* ``rates``: the gateway's currencies (GET /rates), which an open amount may be typed in. */
  function createForm(d, rates) {
    var title = h("input", { id: "link-title", required: true, maxlength: 200, autocomplete: "off" });
    var desc = h("textarea", { id: "link-description", rows: 2, maxlength: 2000 });
    var fixed = h("input", { type: "radio", name: "link-kind", id: "link-kind-fixed", value: "fixed", checked: true });
    var open = h("input", { type: "radio", name: "link-kind", id: "link-kind-open", value: "open" });
    var amountIn = h("input", { id: "link-amount", inputmode: "decimal", autocomplete: "off",
      placeholder: "0.05" });
    var minIn = h("input", { id: "link-min", inputmode: "decimal", autocomplete: "off", placeholder: "optional" });
    var unit = h("select", { id: "link-currency", "aria-label": "Currency of the open amount" },
      ["XMR"].concat(rates.map(function (r) { return r.currency; })).map(function (code) {
        return h("option", { value: code, text: code });
      }));
    // A fiat link's requests live at most as long as the rate lock: the gateway's default then.
    var lock = h("option", { value: "", text: "as long as the rate lock", hidden: true });
    var life = h("select", { id: "link-life" }, [lock].concat(LIVES.map(function (o) {
      return h("option", { value: o[0], selected: o[0] === "3600", text: o[1] });
    })));
    var uses = h("input", { id: "link-max-uses", inputmode: "numeric", autocomplete: "off", placeholder: "no limit" });
    var slug = h("input", { id: "link-slug", autocomplete: "off", spellcheck: "false", maxlength: 64,
      placeholder: "drawn at random" });
    var said = h("div", { id: "link-said", role: "status" });
    var go = h("button", { type: "submit", class: "button panel-go", id: "link-submit", text: "Make the link" });
    var fixedBox = field("Amount (XMR)", amountIn, "Every payer pays this.");
    var minLabel = h("label", { for: "link-min" });
    var minHint = h("small", { class: "muted", id: "link-min-hint" });
    var openBox = h("p", { class: "field" }, [minLabel, h("span", { class: "amount-row" }, [minIn, unit]), minHint]);
    /* The payer types an open amount in ``unit``; its minimum is typed in that unit too. */
    function kindChanged() {
      var fiat = !fixed.checked && unit.value !== "XMR";
      fixedBox.hidden = !fixed.checked;
      openBox.hidden = fixed.checked;
      minLabel.textContent = "Minimum (" + unit.value + ")";
      minHint.textContent = "The payer types the amount in " + unit.value + (fiat ? " (paid in XMR at the " +
        "gateway's rate)" : "") + "; optional: at least this much " + unit.value + ".";
      minIn.placeholder = fiat ? "optional, such as 5.00" : "optional";
      lock.hidden = !fiat;
      if (fiat && life.value === "3600") { life.value = ""; }
      if (!fiat && !life.value) { life.value = "3600"; }
    }
    fixed.addEventListener("change", kindChanged);
    open.addEventListener("change", kindChanged);
    unit.addEventListener("change", kindChanged);
    kindChanged();
    var form = h("form", { id: "link-form" }, [
      field("Title", title, "Shown on the link's page and as each request's description."),
      field("Description", desc, "Optional; shown on the link's page."),
      h("fieldset", { class: "kinds" }, [h("legend", { text: "Amount" }),
        h("label", { class: "check" }, [fixed, "A fixed amount in XMR"]),
        h("label", { class: "check" }, [open, "An open amount (the payer types it)"])]),
      fixedBox, openBox,
      field("Each request waits for its money", life, "How long a request made by the link stays open."),
      field("Most uses", uses, "Optional: the link makes at most this many requests."),
      field("Address of the page", slug, "Optional: /l/<this>, 3 to 64 lowercase letters, digits and dashes."),
      buttons(go, [" ", closeButton(d, "Cancel")]), said]);
    form.addEventListener("submit", function (ev) {
      ev.preventDefault();
      function wrong(text) { said.replaceChildren(notice(text, "error")); }
      var body = { title: title.value.trim() };
      if (life.value) { body.expires_in = Number(life.value); }
      if (!body.title) { wrong("Title: give the link a title."); return; }
      if (desc.value.trim()) { body.description = desc.value.trim(); }
      try {
        if (fixed.checked) {
          body.amount = F.parseXmr(amountIn.value);
          if (body.amount <= F.toBig(0)) { wrong("Amount: more than 0 XMR."); return; }
        } else if (unit.value !== "XMR") {
          body.currency = unit.value;
          if (minIn.value.trim()) { body.min_price = F.parseFiat(minIn.value); }
        } else if (minIn.value.trim()) {
          body.min_amount = F.parseXmr(minIn.value);
          if (body.min_amount <= F.toBig(0)) { wrong("Minimum: more than 0 XMR, or leave it empty."); return; }
        }
      } catch (e) {
        wrong((fixed.checked ? "Amount: " : "Minimum: ") + e.message);
        return;
      }
      if (uses.value.trim()) {
        if (!/^[0-9]+$/.test(uses.value.trim()) || Number(uses.value.trim()) < 1) {
          wrong("Most uses: a whole number, at least 1, or leave it empty.");
          return;
        }
        body.max_uses = Number(uses.value.trim());
      }
      if (slug.value.trim()) {
        if (!SLUG.test(slug.value.trim())) {
          wrong("Address of the page: 3 to 64 lowercase letters, digits and dashes, not starting with a dash.");
          return;
        }
        body.slug = slug.value.trim();
      }
      d.act(go, said, function () { return api("POST", "links", body); }, function (made) { showMade(d, made); });
    });
    d.show("New link", form);
  }

  /* The new link's public URL, to hand out (it stays in the list too). */
  function showMade(d, made) {
    var url = h("input", { id: "made-url", class: "mono claim-url", readonly: true, value: made.url,
      "aria-label": "The link's address", spellcheck: "false" });
    var said = h("span", { id: "copy-said", class: "muted", role: "status" });
    var copy = h("button", { type: "button", class: "button panel-go", id: "copy-made", text: "Copy link",
      onclick: function () { copyText(made.url, said); } });
    url.addEventListener("focus", function () { url.select(); });
    d.show("Link made", [
      dl([["Title", h("span", { id: "made-title", text: made.title })], ["Amount", kindOf(made)]]),
      h("p", { text: "Share this address (a message, a QR code, a button on a page): whoever opens it can " +
        "pay. It is in the list below too." }),
      h("p", { class: "link-row" }, [url, copy]), h("p", { class: "said" }, said),
      buttons(closeButton(d))], "made");
  }

  // ------------------------------------------------------------------ actions on a link

  function toggle(d, link, button) {
    var said = h("div", { role: "status" });
    d.show(link.active ? "Deactivating…" : "Activating…", [facts(link), said]);
    d.act(button, said, function () {
      return api("PATCH", "links/" + enc(link.id), { active: !link.active });
    }, function (now) {
      d.show(now.active ? "Link activated" : "Link deactivated", [facts(now),
        notice(now.active ? "Its page takes payments again." : "Its page no longer takes payments (it answers " +
          "that the link is not taking payments); its requests are kept. Activate it to take payments again.",
        "ok"), buttons(closeButton(d))]);
    });
  }

  function deletePanel(d, link) {
    var said = h("div", { role: "status" });
    var go = h("button", { type: "button", class: "button panel-go", id: "delete-confirm", text: "Delete the link",
      onclick: function () {
        d.act(go, said, function () { return api("DELETE", "links/" + enc(link.id)); }, function (gone) {
          d.show(gone.deleted ? "Link deleted" : "Link deactivated, not deleted", [
            gone.deleted ? notice("Deleted: its address no longer leads anywhere.", "ok")
              : h("p", { class: "notice warn", id: "only-deactivated", role: "status",
                text: "It made payment requests, so the gateway kept it and only deactivated it: its requests " +
                  "keep their link, and its page no longer takes payments." }),
            buttons(closeButton(d))]);
        });
      } });
    d.show("Delete this link?", [facts(link),
      h("p", { text: link.uses ? "It made " + link.uses + " payment request" + (link.uses === 1 ? "" : "s") +
        ": the gateway keeps it for them and only deactivates it." : "It made no payment request: it is " +
        "deleted, and its address stops working." }),
      buttons(go, [" ", closeButton(d, "Keep it")]), said]);
  }

  /* The requests the link made, newest first (GET /receive?link=<id>). */
  function requestsPanel(d, link) {
    var box = h("div", { id: "link-requests" }, notice("Asking the gateway…", ""));
    d.show("Requests made by “" + link.title + "”", [box, buttons(closeButton(d))]);
    api("GET", "receive?link=" + enc(link.id) + "&limit=" + REQUESTS_SHOWN).then(function (page) {
      if (d.gen !== A.generation || !box.isConnected) { return; }
      var list = page && Array.isArray(page.requests) ? page.requests : [];
      if (!list.length) { box.replaceChildren(notice("It has made no payment request yet.", "")); return; }
      var rows = list.map(function (r) {
        return h("tr", { "data-address": r.address }, [
          h("td", { class: "wide-only" }, when(r.created_at)),
          h("td", {}, h("a", { href: "#/request/" + enc(r.address), class: "mono", title: r.address,
            text: short(r.address) })),
          h("td", { class: "num" }, [amount(r.amount), r.price ? h("div", {}, A.price(r.price)) : null]),
          h("td", {}, badge(r.status || "unknown"))]);
      });
      box.replaceChildren();
      A.append(box, [table([["Created", "wide-only"], ["Request"], ["Amount", "num"], ["Status"]], rows,
        { id: "link-request-list" }),
      page.next_cursor ? h("p", { class: "muted", text: "The " + REQUESTS_SHOWN + " newest are shown." }) : null]);
    }, function (err) {
      if (d.gen !== A.generation) { return; }
      if (err.status === 401) { failed(err, d.gen); return; }
      box.replaceChildren(h("p", { class: "notice error", role: "alert", text: explain(err, "read") }));
    });
  }

  // ------------------------------------------------------------------ the list

  /* What the payer pays: a fixed XMR amount, a fiat price, or an open amount. */
  function kindOf(link) {
    if (link.amount !== null && link.amount !== undefined) {
      return h("span", { "data-kind": "fixed" }, [h("span", { class: "hint", text: "fixed " }), amount(link.amount)]);
    }
    if (link.price) {
      return h("span", { "data-kind": "price" }, [h("span", { class: "hint", text: "price " }),
        h("span", { class: "fiat" }, [String(link.price.amount), h("span", { class: "unit", text: " " +
          link.price.currency })])]);
    }
    // The minimum in the link's currency (min_price), else in XMR (min_amount).
    var least = link.min_price ? h("span", { class: "fiat", text: link.min_price + " " + link.currency })
      : link.min_amount === null || link.min_amount === undefined ? null : amount(link.min_amount);
    return h("span", { "data-kind": "open" }, [
      h("span", { class: "hint", text: "open amount" + (link.currency ? " in " + link.currency : "") }),
      least === null ? null : h("div", { class: "least" }, ["at least ", least])]);
  }

  function facts(link) {
    return dl([["Title", link.title], ["Address", h("span", { class: "mono", text: link.url })],
      ["Amount", kindOf(link)], ["Uses", String(link.uses)]]);
  }

  function usedUp(link) {
    return link.max_uses !== null && link.max_uses !== undefined && link.uses >= link.max_uses;
  }

  function stateOf(link) {
    var kids = [badge(link.active ? "active" : "inactive")];
    if (link.active && usedUp(link)) { kids.push(h("div", { class: "hint bad", text: "used up" })); }
    return kids;
  }

  function actionsOf(d, link) {
    function button(action, text, open) {
      var b = h("button", { type: "button", class: "button secondary small", "data-action": action,
        "data-link": link.id, text: text });
      b.addEventListener("click", function () { open(b); });
      return b;
    }
    return [
      button("toggle", link.active ? "Deactivate" : "Activate", function (b) { toggle(d, link, b); }),
      button("delete", "Delete", function () { deletePanel(d, link); }),
      button("requests", "Requests", function () { requestsPanel(d, link); })];
  }

  function linkTable(d, links) {
    var rows = links.map(function (link) {
      var said = h("span", { class: "hint", role: "status" });
      var copy = h("button", { type: "button", class: "button secondary small", "data-action": "copy",
        "data-link": link.id, text: "Copy", onclick: function () { copyText(link.url, said); } });
      return h("tr", { "data-link": link.id, "data-active": String(link.active), class: link.active ? null : "off" }, [
        h("td", {}, [h("strong", { class: "link-title", text: link.title }),
          link.description ? h("div", { class: "desc", text: link.description }) : null,
          h("div", { class: "hint wide-only" }, ["made ", when(link.created_at)])]),
        h("td", { class: "link-cell" }, [urlOf(link), h("div", { class: "acts" }, [copy, said])]),
        h("td", {}, kindOf(link)),
        h("td", { class: "state" }, stateOf(link)),
        h("td", { class: "num", "data-count": "uses",
          text: String(link.uses) + (link.max_uses === null || link.max_uses === undefined ? "" : " / " +
            link.max_uses) }),
        h("td", { class: "num", "data-count": "paid", text: String(link.paid) }),
        h("td", { class: "num", "data-count": "received" }, amount(link.received)),
        h("td", {}, h("div", { class: "acts" }, actionsOf(d, link)))]);
    });
    return table([["Link"], ["Address"], ["Amount"], ["State"], ["Uses", "num"], ["Paid", "num"],
      ["Received", "num"], ["Actions"]], rows, { id: "link-list", class: "links" });
  }

  // ------------------------------------------------------------------ the Links page

  function linksPage(gen) {
    var d = desk(gen);
    var results = h("div", { id: "link-results" });
    A.setView(h("section", { id: "links" }, [
      h("h1", { text: "Payment links" }),
      h("p", { class: "muted", text: "A link is a public page (/l/…) where anyone can pay this store: each " +
        "Pay makes a payment request. Uses counts the requests a link made, Paid those paid, Received what " +
        "they received." }),
      h("p", { class: "actions" }, h("button", { type: "button", class: "button", id: "link-new", text: "New link",
        onclick: function () {
          A.fiatRates().then(function (found) {
            if (d.gen === A.generation) { createForm(d, found.rates); }
          }, function (err) { failed(err, d.gen); });
        } })),
      d.panel, results]));
    var ctl = {};
    var shown = A.live(gen, 10, function () { return api("GET", "links?limit=200"); }, function (data, stale) {
      var links = data && Array.isArray(data.links) ? data.links : [];
      results.replaceChildren();
      A.append(results, [stale, links.length ? linkTable(d, links)
        : notice("No payment links yet. Make one with New link.", "")]);
    }, ctl);
    d.refresh = function () { return ctl.refresh ? ctl.refresh() : Promise.resolve(); };
    return shown;
  }

  A.copyText = copyText; // the Unmatched page (unmatched.js) copies addresses with it too
  A.pages = A.pages || {};
  Object.assign(A.pages, { links: linksPage });
})();
