/* xmrgate dashboard: unmatched receipts (loaded after links.js, before admin.js).
 * Money that reached one of the store's subaddresses that no payment request owns: the
 * Unmatched page lists it (GET /unmatched, newest first, paged with next_cursor), filters
 * it by status, and dismisses a receipt with a note (POST /unmatched/:id/dismiss). The
 * open receipts are also counted in the navigation and on the overview (A.unmatched).
 *
 * As on the Links and Refunds pages, the list redraws when the API's answer changes; the
 * form and the answers live in one panel that the redraws never touch. */
(function () {
  "use strict";
  var F = window.XmrFormat;
  var A = window.XmrAdmin;
  var h = A.h, amount = A.amount, when = A.when, badge = A.badge, short = A.short,
    notice = A.notice, table = A.table, dl = A.dl, enc = A.enc, api = A.api, explain = A.explain,
    field = A.field, buttons = A.buttons, closeButton = A.closeButton;
  var PAGE = 25;
  // The API's most per page: the navigation and the overview count this many open receipts
  // at most ("500+" beyond), so a store flooded with dust costs one call, not a crawl.
  var COUNTED = 500;
  var MAX_NOTE = 500; // as domain/unmatched.py's MAX_NOTE
  var FILTERS = [["all", "All"], ["open", "Open"], ["dismissed", "Dismissed"]];
  // How often the ages ("3 h ago") are brought up to date: the list itself redraws only
  // when the API's answer changes.
  var AGE_TICK = 30;

  function now() { return Date.now() / 1000; }

  function isoOf(seconds) { return new Date(Number(seconds) * 1000).toISOString(); }

  /* How long ago the money was first seen, the exact time on hover (local, then UTC). */
  function age(seconds) {
    if (seconds === null || seconds === undefined) { return h("span", { class: "muted", text: "—" }); }
    var iso = isoOf(seconds);
    return h("time", { class: "ago", datetime: iso, "data-seen": String(seconds),
      title: F.local(iso) + " · " + F.utc(iso), text: F.ago(seconds, now()) });
  }

  function tickAges(gen) {
    window.setTimeout(function () {
      if (gen !== A.generation) { return; }
      document.querySelectorAll("time.ago[data-seen]").forEach(function (t) {
        t.textContent = F.ago(t.getAttribute("data-seen"), now());
      });
      tickAges(gen);
    }, AGE_TICK * 1000);
  }

  // ------------------------------------------------------------------ open receipts

  /* The open receipts that still hold money (not gone), as the overview and the
   * navigation show them: {count, amount (BigInt), more}; {error} when the API refused
   * (a 401 brings the sign-in form back instead). */
  function loadOpen() {
    return api("GET", "unmatched?status=open&limit=" + COUNTED).then(function (data) {
      var list = data && Array.isArray(data.unmatched) ? data.unmatched : [];
      var held = list.filter(function (r) { return r.state !== "gone"; });
      return { count: held.length, more: Boolean(data && data.next_cursor),
        amount: held.reduce(function (sum, r) { return sum + F.toBig(r.amount); }, F.toBig(0)) };
    }, function (err) {
      if (err.status === 401) { throw err; }
      return { error: explain(err, "read"), status: err.status };
    });
  }

  function counted(open) { return open.count + (open.more ? "+" : ""); }

  /* The count beside "Unmatched" in the navigation; hidden when none is open (or unknown). */
  function navCount(open) {
    var el = document.getElementById("nav-unmatched");
    if (!el) { return; }
    var show = Boolean(open && !open.error && open.count);
    el.textContent = show ? counted(open) : "";
    el.title = show ? counted(open) + " open unmatched receipt" + (open.count === 1 && !open.more ? "" : "s") : "";
    el.hidden = !show;
  }

  /* The overview's card, linked to the open receipts; none when the gateway has no
   * receipts to show (404: built without them) or the key may not read them. */
  function card(open) {
    navCount(open);
    if (!open || open.error) { return null; }
    return h("section", { class: "card", id: "card-unmatched" }, [
      h("h2", {}, h("a", { href: "#/unmatched?status=open", text: "Unmatched" })),
      open.count ? h("p", {}, [h("strong", { id: "unmatched-open", text: counted(open) + " open" }), ", ",
        amount(open.amount, "unmatched-amount")])
        : h("p", { class: "muted", id: "unmatched-open", text: "None open." }),
      h("p", { class: "hint", text: "Money to addresses no payment request owns; it is in the wallet." })]);
  }

  // ------------------------------------------------------------------ one receipt

  function stateOf(r) {
    var kids = [badge(r.state)];
    if (r.state === "confirmed") {
      kids.push(h("span", { class: "conf", title: "confirmations", text: " " + String(r.confirmations) }));
    }
    if (r.state === "pool") { kids.push(h("div", { class: "hint", text: "not mined yet" })); }
    if (r.state === "gone") { kids.push(h("div", { class: "hint bad", text: "left the chain: not in the wallet" })); }
    if (r.double_spend_seen) { kids.push(h("div", { class: "hint bad", text: "double spend seen" })); }
    return kids;
  }

  function addressOf(r) {
    return r.address ? h("span", { class: "mono receipt-address", title: r.address, text: short(r.address) })
      : h("span", { class: "muted", text: "address not known" });
  }

  function facts(r) {
    return dl([["Amount", amount(r.amount)],
      ["Address", r.address ? h("span", { class: "mono", text: r.address }) : addressOf(r)],
      ["Subaddress index", String(r.subaddr_index)],
      ["Transaction", h("span", { class: "mono", text: r.tx_hash })],
      ["State", stateOf(r)],
      ["First seen", age(r.first_seen)],
      r.note ? ["Note", h("span", { class: "receipt-note", text: r.note })] : null]);
  }

  function dismissPanel(d, r) {
    var note = h("textarea", { id: "unmatched-note", rows: 3, maxlength: MAX_NOTE, "aria-required": "true" });
    var said = h("div", { id: "unmatched-said", role: "status" });
    var go = h("button", { type: "submit", class: "button panel-go", id: "unmatched-submit", text: "Dismiss" });
    var form = h("form", { id: "unmatched-form" }, [facts(r),
      h("p", { text: "Dismissing only records that you dealt with it (returned it to the sender, matched it " +
        "to an order by hand, ...): the money stays in the wallet, and the receipt is kept with your note." }),
      field("Note (required)", note, "Why you dismiss it; 1 to " + MAX_NOTE + " characters."),
      buttons(go, [" ", closeButton(d, "Cancel")]), said]);
    form.addEventListener("submit", function (ev) {
      ev.preventDefault();
      var text = note.value.trim();
      if (!text) {
        said.replaceChildren(notice("Note: say why you dismiss this receipt.", "error"));
        note.focus();
        return;
      }
      d.act(go, said, function () {
        return api("POST", "unmatched/" + enc(r.id) + "/dismiss", { note: text });
      }, function (done) {
        d.show("Receipt dismissed", [facts(done), notice("Dismissed with your note. The money stays in the " +
          "wallet.", "ok"), buttons(closeButton(d))]);
      });
    });
    d.show("Dismiss this receipt?", form);
  }

  // ------------------------------------------------------------------ the list

  function receiptTable(d, receipts) {
    var rows = receipts.map(function (r) {
      var said = h("span", { class: "hint", role: "status" });
      var copy = r.address ? h("button", { type: "button", class: "button secondary small", "data-action": "copy",
        "data-receipt": r.id, text: "Copy", onclick: function () { A.copyText(r.address, said); } }) : null;
      var dismiss = r.status === "open" ? h("button", { type: "button", class: "button secondary small",
        "data-action": "dismiss", "data-receipt": r.id, text: "Dismiss",
        onclick: function () { dismissPanel(d, r); } }) : null;
      return h("tr", { "data-receipt": r.id, "data-status": r.status, "data-state": r.state,
        class: r.status === "open" ? "waiting" : null }, [
        h("td", { class: "seen" }, age(r.first_seen)),
        h("td", { class: "num" }, amount(r.amount)),
        // Dismiss sits with Copy under the address: on a phone the table scrolls sideways,
        // and these first columns are the ones in view.
        h("td", {}, [addressOf(r), h("div", { class: "acts" }, [copy, dismiss, said])]),
        h("td", { class: "num wide-only", "data-field": "index", text: String(r.subaddr_index) }),
        h("td", { class: "state" }, stateOf(r)),
        h("td", { class: "status" }, [badge(r.status),
          r.dismissed_at ? h("div", { class: "hint" }, when(r.dismissed_at)) : null]),
        h("td", { class: "note" }, r.note ? h("div", { class: "desc", text: r.note }) : null)]);
    });
    return table([["Seen"], ["Amount", "num"], ["Address"], ["Index", "num wide-only"], ["State"], ["Status"],
      ["Note"]], rows, { id: "unmatched-list", class: "unmatched" });
  }

  function summaryOf(open) {
    if (!open || open.error || !open.count) { return null; }
    return h("p", { class: "notice warn", id: "unmatched-summary", role: "status" }, [
      counted(open) + (open.count === 1 && !open.more ? " open receipt holds " : " open receipts hold "),
      amount(open.amount), " that no payment request accounts for."]);
  }

  // ------------------------------------------------------------------ the Unmatched page

  function unmatchedPage(gen, params) {
    var status = params.get("status") || "all";
    if (!FILTERS.some(function (f) { return f[0] === status; })) { status = "all"; }
    var cursor = params.get("cursor") || "";
    var d = A.desk(gen, "unmatched", { scope: "receive" });
    var summary = h("div", { id: "unmatched-open-note" });
    var results = h("div", { id: "unmatched-results" });
    function hashFor(filter, next) {
      var p = new URLSearchParams();
      if (filter !== "all") { p.set("status", filter); }
      if (next) { p.set("cursor", next); }
      return "#/unmatched" + (p.toString() ? "?" + p : "");
    }
    var filters = h("nav", { class: "filter-tabs", id: "unmatched-filter", "aria-label": "Which receipts" },
      FILTERS.map(function (f) {
        return h("a", { href: hashFor(f[0]), class: "button secondary small", "data-filter": f[0],
          "aria-current": f[0] === status ? "true" : null, text: f[1] });
      }));
    A.setView(h("section", { id: "unmatched" }, [
      h("h1", { text: "Unmatched receipts" }),
      h("p", { class: "muted", id: "unmatched-about", text: "Money that reached one of this store's addresses " +
        "that no payment request owns: a request deleted or pruned before the customer paid it (a payment " +
        "link's unpaid request after its grace), a pooled address not handed out yet, or an address given " +
        "out by another tool (a wallet app on the same account). The money is in the wallet either way: " +
        "nothing here moves it. Dismiss a receipt once you have dealt with it; it is kept with your note." }),
      filters, d.panel, summary, results]));
    function load() {
      var p = new URLSearchParams();
      if (status !== "all") { p.set("status", status); }
      if (cursor) { p.set("cursor", cursor); }
      p.set("limit", String(PAGE));
      return Promise.all([api("GET", "unmatched?" + p), loadOpen()]).then(function (parts) {
        return { page: parts[0], open: parts[1] };
      });
    }
    var ctl = {};
    // Only the first page follows new receipts; an older page stays as it was opened
    // (an action still reloads it at once).
    var shown = A.live(gen, cursor ? 3600 : 10, load, function (data, stale) {
      var list = data.page && Array.isArray(data.page.unmatched) ? data.page.unmatched : [];
      var next = data.page ? data.page.next_cursor : null;
      navCount(data.open);
      summary.replaceChildren();
      A.append(summary, summaryOf(data.open));
      results.replaceChildren();
      A.append(results, [stale,
        list.length ? receiptTable(d, list) : notice(status === "open" ? "No open receipts: every payment " +
          "went to a request." : status === "dismissed" ? "No dismissed receipts." : "No unmatched receipts: " +
          "every payment went to a request.", ""),
        h("p", { class: "pager" }, [
          cursor ? h("a", { href: hashFor(status), class: "button secondary", id: "unmatched-newest",
            text: "Newest" }) : null, " ",
          next ? h("a", { href: hashFor(status, next), class: "button secondary", id: "unmatched-more",
            text: "More" }) : null])]);
    }, ctl);
    d.refresh = function () { return ctl.refresh ? ctl.refresh() : Promise.resolve(); };
    tickAges(gen);
    return shown;
  }

  A.unmatched = { loadOpen: loadOpen, card: card, navCount: navCount };
  A.pages = A.pages || {};
  Object.assign(A.pages, { unmatched: unmatchedPage });
})();
