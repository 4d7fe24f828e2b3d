/* xmrgate dashboard, part 2 of 5: the overview (with the chart of XMR received per day),
 * the list of payment requests, and the payout journal. */
(function () {
  "use strict";
  var F = window.XmrFormat;
  var A = window.XmrAdmin;
  var h = A.h, s = A.s, append = A.append, setView = A.setView, amount = A.amount, when = A.when,
    badge = A.badge, short = A.short, notice = A.notice, table = A.table, dl = A.dl, enc = A.enc,
    api = A.api, explain = A.explain, failed = A.failed, live = A.live;
  var STATUSES = A.STATUSES;
  var ADDRESS = A.ADDRESS;

  // ------------------------------------------------------------------ overview

  /* A part of a page that may fail alone: its error is shown in its place (a refused key
   * still brings the sign-in form back). */
  function soft(err) {
    if (err.status === 401) { throw err; }
    return { error: explain(err, "read") };
  }

  /* GET /status is the operator's and covers the whole gateway: a store key, and the
   * operator on a store other than the default one, get 404 there. Then the overview is
   * the store's own: its balance, the health, its latest requests and the chart. */
  function overview(gen) {
    var storeOnly = false;
    function load() {
      var offset = -new Date().getTimezoneOffset();
      var daily = api("GET", "received/daily?days=30&utc_offset=" + offset).catch(soft);
      daily.catch(function () { /* handled by whoever waits for it */ });
      var status = storeOnly ? Promise.resolve(null) : api("GET", "status").then(function (st) {
        if (st.store && st.store !== "default") { storeOnly = true; return null; }
        return st;
      }, function (err) {
        if (err.status !== 404) { throw err; }
        storeOnly = true;
        return null;
      });
      return status.then(function (st) {
        // The store's open unmatched receipts (unmatched.js: a card, and the navigation's
        // count) are a secondary figure: asked once the overview's first answers are in,
        // so that they never hold those up on a busy gateway.
        var open = daily.then(function () { return A.unmatched.loadOpen(); });
        if (st) { return Promise.all([st, daily, open]); }
        return Promise.all([
          api("GET", "balance").catch(soft),
          // 503 is an answer too: the body says which service is down.
          api("GET", "health").catch(function (err) {
            if (err.data && err.data.services) { return err.data; }
            return soft(err);
          }),
          api("GET", "receive?limit=5").catch(soft),
          daily, open]).then(function (parts) {
          return { store: { balance: parts[0], health: parts[1], latest: parts[2] }, daily: parts[3],
            open: parts[4] };
        });
      });
    }
    return live(gen, 10, load, function (data, stale) {
      if (data.store) { storeOverview(data.store, data.daily, data.open, stale); return; }
      var st = data[0];
      var daily = data[1];
      var open = data[2];
      var sync = st.sync || {};
      var cb = st.callbacks;
      var reqs = st.payment_requests || {};
      var health = st.health || {};
      var services = Object.keys(health.services || {}).map(function (name) {
        var up = health.services[name];
        return h("li", { class: up ? "ok" : "bad", text: name + ": " + (up ? "up" : "down") });
      });
      var behind = sync.behind;
      setView(h("section", { id: "overview" }, [
        h("h1", { text: "Overview" }), stale,
        (st.problems || []).length ? h("ul", { class: "notice warn", id: "problems" },
          st.problems.map(function (p) { return h("li", { text: p }); })) : null,
        h("div", { class: "cards" }, [
          h("section", { class: "card", id: "card-balance" }, [h("h2", { text: "Balance" }),
            st.balance ? dl([["Total", amount(st.balance.total, "balance-total")],
              ["Unlocked", amount(st.balance.unlocked, "balance-unlocked")]])
              : h("p", { class: "muted", text: "The wallet did not answer." })]),
          h("section", { class: "card", id: "card-health" }, [h("h2", { text: "Health" }),
            h("p", { class: health.status === 200 ? "ok" : "bad", id: "health-status",
              text: health.status === 200 ? "Healthy" : "Unhealthy" + (health.message ? ": " + health.message : "") }),
            h("ul", { class: "plain" }, services)]),
          h("section", { class: "card", id: "card-wallet" }, [h("h2", { text: "Wallet" }), dl([
            ["Mode", h("span", { id: "wallet-mode", text: st.wallet && st.wallet.mode ? st.wallet.mode : "unknown" })],
            ["Wallet height", String(sync.wallet_height === null || sync.wallet_height === undefined ? "unknown" : sync.wallet_height)],
            ["Synced height", String(sync.height === null || sync.height === undefined ? "not yet" : sync.height)],
            ["Sync behind the wallet", h("span", { id: "sync-behind", class: behind > 5 ? "bad" : null,
              text: lag(behind) })]].concat(daemonRows(st.daemon)))]),
          h("section", { class: "card", id: "card-callbacks" }, [h("h2", { text: "Callbacks" }), cb ? dl([
            ["Pending", h("span", { id: "callbacks-pending", text: String(cb.pending) })],
            ["Failed", h("span", { id: "callbacks-failed", class: cb.failed ? "bad" : null, text: String(cb.failed) })]])
            : h("p", { class: "muted", text: "The database did not answer." })]),
          h("section", { class: "card", id: "card-requests" }, [h("h2", { text: "Payment requests" }),
            h("ul", { class: "plain counts" }, Object.keys(reqs).map(function (name) {
              return h("li", {}, [h("a", { href: "#/requests?status=" + enc(name) }, badge(name)),
                h("span", { "data-count": name, text: String(reqs[name]) })]);
            })),
            st.address_pool === null || st.address_pool === undefined ? null
              : h("p", { class: "muted", text: "Address pool: " + st.address_pool + " ready" })]),
          A.unmatched.card(open)]),
        receivedChart(daily)]));
    });
  }

  function storeOverview(st, daily, open, stale) {
    var health = st.health || {};
    var services = Object.keys(health.services || {}).map(function (name) {
      var up = health.services[name];
      return h("li", { class: up ? "ok" : "bad", text: name + ": " + (up ? "up" : "down") });
    });
    var chosen = A.storeMode === "switch" ? A.currentStore() : null;
    var who = chosen ? "the store " + (chosen.name || chosen.id) + " (" + chosen.id + ")" : "this key's store";
    var latest = st.latest && Array.isArray(st.latest.requests) ? st.latest.requests : null;
    setView(h("section", { id: "overview", "data-scope": "store" }, [
      h("h1", { text: "Overview" }), stale,
      h("p", { class: "notice", id: "store-note", text: "The balance, latest requests and receipts of " + who +
        ". The gateway's own figures (heights, callbacks, requests by status) are the operator's" +
        (chosen ? ": choose the default store to see them." : ".") }),
      h("div", { class: "cards" }, [
        h("section", { class: "card", id: "card-balance" }, [h("h2", { text: "Balance" }),
          st.balance && !st.balance.error ? dl([["Total", amount(st.balance.total, "balance-total")],
            ["Unlocked", amount(st.balance.unlocked, "balance-unlocked")]])
            : h("p", { class: "muted", text: "No balance: " + (st.balance ? st.balance.error : "unknown") })]),
        h("section", { class: "card", id: "card-health" }, [h("h2", { text: "Health" }),
          health.error ? h("p", { class: "muted", id: "health-status", text: "Unknown: " + health.error })
            : h("p", { class: health.status === 200 ? "ok" : "bad", id: "health-status",
              text: health.status === 200 ? "Healthy" : "Unhealthy" + (health.message ? ": " + health.message : "") }),
          h("ul", { class: "plain" }, services),
          health.wallet ? dl([["Wallet mode", h("span", { id: "wallet-mode", text: health.wallet })]]) : null]),
        h("section", { class: "card", id: "card-latest" }, [h("h2", { text: "Latest requests" }),
          latest === null ? h("p", { class: "muted", text: "No list: " + (st.latest ? st.latest.error : "unknown") })
            : latest.length ? h("ul", { class: "plain counts", id: "latest-list" }, latest.map(function (r) {
              return h("li", { "data-address": r.address }, [
                h("a", { href: "#/request/" + enc(r.address), class: "mono", title: r.address, text: short(r.address) }),
                h("span", {}, [amount(r.amount), " ", badge(r.status || "unknown")])]);
            })) : h("p", { class: "muted", text: "No payment requests yet." }),
          h("p", {}, h("a", { href: "#/requests", text: "All requests" }))]),
        A.unmatched.card(open)]),
      receivedChart(daily)]));
  }

  function lag(blocks) {
    return blocks === null || blocks === undefined ? "unknown" : blocks === 0 ? "up to date" : blocks + " blocks";
  }

  /* With --daemon-address only: the wallet against monerod, since "behind the wallet" shows
   * a wallet stuck behind the network (its node stopped) as up to date. */
  function daemonRows(daemon) {
    if (!daemon) { return []; }
    var known = daemon.height !== null && daemon.height !== undefined;
    var behind = daemon.wallet_behind;
    return [["Daemon height", h("span", { id: "daemon-height", class: known ? null : "bad",
      text: known ? String(daemon.height) : "unknown (monerod did not answer)" })],
      ["Wallet behind the daemon", h("span", { id: "wallet-behind-daemon", class: behind > 5 ? "bad" : null,
        text: lag(behind) })]];
  }

  function receivedChart(daily) {
    var box = h("section", { class: "card wide", id: "received" }, h("h2", { text: "Received per day, last 30 days" }));
    if (!daily || daily.error || !Array.isArray(daily.days)) {
      append(box, notice("No daily figures: " + (daily && daily.error ? daily.error : "unknown answer"), "warn"));
      return box;
    }
    var days = daily.days;
    var zero = F.toBig(0);
    var total = days.reduce(function (sum, d) { return sum + F.toBig(d.amount); }, zero);
    var max = days.reduce(function (m, d) { var a = F.toBig(d.amount); return a > m ? a : m; }, zero);
    // The bars stretch to the box (preserveAspectRatio none); the labels are HTML, so
    // their size does not depend on the screen's width.
    var W = 600, BASE = 150, TOP = 4;
    var step = W / Math.max(days.length, 1);
    var svg = s("svg", { viewBox: "0 0 " + W + " " + BASE, preserveAspectRatio: "none", class: "chart",
      role: "img", "aria-label": "XMR received per day; total " + F.xmr(total) + " XMR" });
    svg.append(s("line", { x1: 0, y1: BASE, x2: W, y2: BASE, class: "axis" }));
    days.forEach(function (d, i) {
      var a = F.toBig(d.amount);
      // Drawing needs a ratio, not an amount: 1/10000 of the tallest bar is precise enough.
      var ratio = max > zero ? Number(a * F.toBig(10000) / max) / 10000 : 0;
      var tall = a > zero ? Math.max(ratio * (BASE - TOP), 2) : 0;
      svg.append(s("rect", { x: (i * step + 1).toFixed(2), y: (BASE - tall).toFixed(2),
        width: Math.max(step - 2, 1).toFixed(2), height: tall.toFixed(2), class: "bar",
        "data-date": d.date, "data-amount": a.toString() },
      s("title", {}, d.date + ": " + F.xmr(a) + " XMR in " + d.count + " transfer" + (d.count === 1 ? "" : "s"))));
    });
    append(box, [
      h("p", { class: "chart-head" }, [h("span", {}, ["Total: ", amount(total, "received-total")]),
        h("span", { class: "muted", text: "busiest day: " + F.xmr(max) + " XMR" })]),
      svg,
      days.length ? h("p", { class: "chart-axis muted" }, [h("span", { text: days[0].date }),
        h("span", { text: days[days.length - 1].date })]) : null,
      h("details", {}, [h("summary", { text: "As a table" }), table([["Day"], ["XMR", "num"], ["Transfers", "num"]],
        days.slice().reverse().map(function (d) {
          return h("tr", {}, [h("td", { text: d.date }), h("td", { class: "num", text: F.xmr(d.amount) }),
            h("td", { class: "num", text: String(d.count) })]);
        }), { id: "received-table" })])]);
    return box;
  }

  // ------------------------------------------------------------------ payment requests

  function localDay(value, extraDays) {
    var p = value.split("-").map(Number);
    return new Date(p[0], p[1] - 1, p[2] + (extraDays || 0)).toISOString();
  }

  function requestsPage(gen, params) {
    var chosen = params.getAll("status");
    var q = (params.get("q") || "").trim();
    var after = params.get("after") || "";
    var before = params.get("before") || "";
    var cursor = params.get("cursor") || "";
    var search = h("input", { type: "search", id: "search", name: "q", value: q,
      placeholder: "address or words of the description" });
    var from = h("input", { type: "date", id: "after", value: after });
    var to = h("input", { type: "date", id: "before", value: before });
    var boxes = STATUSES.map(function (st) {
      return h("label", { class: "check" }, [h("input", { type: "checkbox", name: "status", value: st,
        checked: chosen.indexOf(st) >= 0 }), badge(st)]);
    });
    var form = h("form", { class: "filters card", id: "filters" }, [
      h("fieldset", {}, [h("legend", { text: "Status" }), boxes]),
      h("div", { class: "row" }, [
        h("label", {}, ["Search ", search]),
        h("label", {}, ["Created from ", from]),
        h("label", {}, ["to ", to])]),
      h("p", {}, [h("button", { type: "submit", class: "button", id: "apply", text: "Apply" }), " ",
        h("a", { href: "#/requests", class: "button secondary", text: "Clear" })])]);
    form.addEventListener("submit", function (ev) {
      ev.preventDefault();
      var next = new URLSearchParams();
      form.querySelectorAll("input[name=status]:checked").forEach(function (b) { next.append("status", b.value); });
      if (search.value.trim()) { next.set("q", search.value.trim()); }
      if (from.value) { next.set("after", from.value); }
      if (to.value) { next.set("before", to.value); }
      location.hash = "#/requests" + (next.toString() ? "?" + next : "");
    });
    var results = h("div", { id: "results" });
    setView(h("section", { id: "requests" }, [h("h1", { text: "Payment requests" }), form, results]));

    function load() {
      if (ADDRESS.test(q)) { // an address: that one request, whatever the filters
        return api("GET", "receive/" + enc(q)).then(function (one) {
          return { requests: [{ address: q, amount: one.amount.expected, description: one.description,
            created_at: one.created_at, expires_at: one.expires_at, status: A.statusOf(one), price: one.price }],
          next_cursor: null };
        }, function (err) {
          if (err.status === 404) { return { requests: [], next_cursor: null }; }
          throw err;
        });
      }
      var p = new URLSearchParams();
      chosen.forEach(function (st) { p.append("status", st); });
      if (q) { p.set("search", q); }
      if (after) { p.set("created_after", localDay(after)); }
      if (before) { p.set("created_before", localDay(before, 1)); }
      if (cursor) { p.set("cursor", cursor); }
      p.set("limit", "25");
      return api("GET", "receive?" + p);
    }
    // Only the first page follows new requests; an older page stays as it was opened.
    return live(gen, cursor ? 3600 : 10, load, function (page, stale) {
      var rows = page.requests.map(function (r) {
        var link = "#/request/" + enc(r.address);
        return h("tr", { "data-address": r.address }, [
          h("td", {}, when(r.created_at)),
          h("td", {}, [h("a", { href: link, class: "mono", title: r.address, text: short(r.address) }),
            r.description ? h("div", { class: "desc", text: r.description }) : null]),
          h("td", { class: "num" }, [amount(r.amount), r.price ? h("div", {}, A.price(r.price)) : null]),
          h("td", {}, badge(r.status || "unknown")),
          h("td", { class: "wide-only" }, when(r.expires_at))]);
      });
      var base = new URLSearchParams(params);
      base.delete("cursor");
      var more = null;
      if (page.next_cursor) {
        var next = new URLSearchParams(base);
        next.set("cursor", page.next_cursor);
        more = h("a", { href: "#/requests?" + next, class: "button secondary", id: "older", text: "Older requests" });
      }
      results.replaceChildren(stale,
        rows.length ? table([["Created"], ["Request"], ["Amount", "num"], ["Status"], ["Expires", "wide-only"]], rows,
          { id: "request-list" }) : notice("No payment request matches.", ""),
        h("p", { class: "pager" }, [
          cursor ? h("a", { href: "#/requests" + (base.toString() ? "?" + base : ""), class: "button secondary",
            id: "newest", text: "Newest" }) : null, " ", more]));
    });
  }



  // ------------------------------------------------------------------ payouts

  function payoutsPage(gen) {
    return live(gen, 15, function () { return api("GET", "payouts?limit=200"); }, function (data, stale) {
      var list = data.payouts || [];
      var unknown = list.filter(function (p) { return p.state === "unknown"; }).length;
      var rows = list.map(function (p) {
        var check = p.state === "unknown";
        return h("tr", { class: check ? "unknown" : null, "data-payout": p.id, "data-state": p.state }, [
          h("td", {}, when(p.created_at)),
          h("td", {}, [badge(p.state), check ? h("strong", { class: "verify", text: " check the wallet" }) : null]),
          h("td", { class: "num" }, amount(p.amount)),
          h("td", { class: "num wide-only" }, p.fee === null ? "—" : amount(p.fee)),
          h("td", {}, (p.destinations || []).map(function (d) {
            return h("div", {}, [amount(d.amount), " to ", h("span", { class: "mono", title: d.address, text: short(d.address) })]);
          })),
          h("td", {}, (p.tx_hash_list || []).map(function (t) {
            return h("div", { class: "mono", title: t, text: short(t) });
          })),
          h("td", { class: "wide-only", text: p.requested_by || "" }),
          h("td", { text: p.error || "" })]);
      });
      setView(h("section", { id: "payouts" }, [h("h1", { text: "Payouts" }), stale,
        unknown ? notice(unknown + " payout" + (unknown === 1 ? " has" : "s have") + " an unknown outcome: the " +
          "wallet was asked to send and no answer came back, so the money may have left or not. Check each " +
          "one in the wallet's history (or GET /transfer/<hash>) before sending it again.", "warn") : null,
        rows.length ? table([["Created"], ["State"], ["Amount", "num"], ["Fee", "num wide-only"], ["To"],
          ["Transactions"], ["By", "wide-only"], ["Error"]], rows, { id: "payout-list" })
          : notice("No payouts yet.", "")]));
    });
  }

  A.pages = A.pages || {};
  Object.assign(A.pages, { overview: overview, requests: requestsPage, payouts: payoutsPage });
})();
