/* xmrgate dashboard, part 1 of 5: DOM helpers, the API with the operator's key, sign-in,
 * the store switcher, and live pages. Everything from the API is put on the page as text (textContent), never
 * as HTML. The other parts (pages.js, request.js, refunds.js, admin.js) use what this puts in
 * window.XmrAdmin; no framework, no build step. */
(function () {
  "use strict";
  var F = window.XmrFormat;
  var KEY = "xmrgate.apiKey";
  var STORE = "xmrgate.store"; // the store an operator chose (X-Xmrgate-Store), kept like the key
  var STORE_HEADER = "X-Xmrgate-Store";
  var SVG = "http://www.w3.org/2000/svg"; // the SVG namespace name, not a URL that is fetched
  var main = document.getElementById("main");
  var A = window.XmrAdmin = {
    STATUSES: ["waiting", "partial", "paid", "complete", "expired", "paid_late"],
    ADDRESS: /^[1-9A-HJ-NP-Za-km-z]{95,106}$/,
    generation: 0, // bumped on every navigation: pollers of older pages stop
    route: null // set by admin.js
  };

  // ------------------------------------------------------------------ small helpers

  function h(tag, attrs, kids) {
    var el = document.createElement(tag);
    Object.keys(attrs || {}).forEach(function (name) {
      var value = attrs[name];
      if (value === null || value === undefined || value === false) { return; }
      if (name === "text") { el.textContent = String(value); } else if (name.slice(0, 2) === "on") {
        el.addEventListener(name.slice(2), value);
      } else { el.setAttribute(name, value === true ? "" : String(value)); }
    });
    append(el, kids);
    return el;
  }

  function append(el, kids) {
    [].concat(kids === undefined ? [] : kids).forEach(function (kid) {
      if (kid === null || kid === undefined || kid === false) { return; }
      if (Array.isArray(kid)) { append(el, kid); return; }
      el.append(typeof kid === "object" ? kid : document.createTextNode(String(kid)));
    });
  }

  function s(tag, attrs, kids) {
    var el = document.createElementNS(SVG, tag);
    Object.keys(attrs || {}).forEach(function (name) { el.setAttribute(name, String(attrs[name])); });
    append(el, kids);
    return el;
  }

  function setView(node) { main.replaceChildren(node); }

  function amount(value, id) {
    if (value === null || value === undefined) { return h("span", { class: "muted", text: "unknown" }); }
    return h("span", { class: "amt", id: id, title: F.toBig(value).toString() + " piconero" },
      [F.xmr(value), h("span", { class: "unit", text: " XMR" })]);
  }

  /* A request's price in fiat ("19.99 EUR"), its quote's rate and sources on hover; null
   * for a request priced in XMR (its answers have no "price"). */
  function price(quote, id) {
    if (!quote) { return null; }
    return h("span", { class: "fiat", id: id, title: F.rate(quote) + " (" + (quote.sources || []).join(", ") + ")" },
      [String(quote.amount), h("span", { class: "unit", text: " " + quote.currency })]);
  }

  function when(iso) {
    if (!iso) { return h("span", { class: "muted", text: "—" }); }
    return h("time", { datetime: iso, title: F.utc(iso), text: F.local(iso) });
  }

  function badge(status, id) {
    return h("span", { class: "badge st-" + status, id: id, "data-status": status,
      text: status.replace("_", " ") });
  }

  function short(text) { return text.length > 16 ? text.slice(0, 8) + "…" + text.slice(-6) : text; }

  function notice(text, kind) {
    return h("p", { class: "notice " + (kind || ""), role: kind === "error" ? "alert" : "status", text: text });
  }

  function table(head, rows, attrs) {
    return h("div", { class: "table-wrap" }, h("table", attrs || {}, [
      h("thead", {}, h("tr", {}, head.map(function (c) {
        return h("th", { scope: "col", class: c[1] || null, text: c[0] });
      }))),
      h("tbody", {}, rows)]));
  }

  function dl(pairs) {
    return h("dl", { class: "facts" }, pairs.filter(Boolean).map(function (p) {
      return h("div", { id: p[2] || null }, [h("dt", { text: p[0] }), h("dd", {}, p[1])]);
    }));
  }

  function enc(text) { return encodeURIComponent(text); }

  // ------------------------------------------------------------------ a page's panel

  /* One page's place for forms and answers (the Links and Refunds pages, a request's
   * refunds), which the list's redraws never touch, so nothing typed or shown is lost.
   * ``prefix`` names its element ids and classes (``<prefix>-panel``, ``<prefix>-close``,
   * ``<prefix>-error``); ``refresh`` reloads the page's list (set by the page once ``live``
   * gave it). ``options.scope`` is the scope a refused call names by default (``act``'s
   * own ``scope`` wins); ``options.refusal(err, scope)`` may say a refusal its own way
   * (null: the plain error). */
  function desk(gen, prefix, options) {
    var opts = options || {};
    var d = { gen: gen, refresh: function () { return Promise.resolve(); },
      panel: h("div", { id: prefix + "-panel", class: prefix + "-panel", hidden: true }) };
    d.show = function (title, kids, kind) {
      var close = h("button", { type: "button", class: "link close", id: prefix + "-close", text: "Close",
        onclick: function () { d.close(); } });
      d.panel.className = "card " + prefix + "-panel " + (kind || "");
      d.panel.replaceChildren(h("div", { class: "panel-head" }, [h("h2", { text: title }), close]),
        h("div", {}, kids));
      d.panel.hidden = false;
      if (d.panel.scrollIntoView) { d.panel.scrollIntoView({ block: "nearest" }); }
      var first = d.panel.querySelector("input, textarea, .panel-go");
      (first || close).focus();
    };
    d.close = function () { d.panel.replaceChildren(); d.panel.hidden = true; };
    /* An action's call: the button waits, the answer shows in the panel, the list reloads. */
    d.act = function (button, said, call, done, scope) {
      button.disabled = true;
      said.replaceChildren(notice("Asking the gateway…", ""));
      return call().then(function (answer) {
        if (d.gen !== A.generation) { return; }
        done(answer);
      }, function (err) {
        if (d.gen !== A.generation) { return; }
        if (err.status === 401) { failed(err, d.gen); return; }
        button.disabled = false;
        var named = scope || opts.scope;
        said.replaceChildren((opts.refusal && opts.refusal(err, named)) ||
          h("p", { class: "notice error", role: "alert", id: prefix + "-error", text: explain(err, named) }));
      }).then(function () { return d.gen === A.generation ? d.refresh() : undefined; });
    };
    return d;
  }

  /* A labelled form field, with an optional hint below it. */
  function field(label, input, hint) {
    return h("p", { class: "field" }, [h("label", { for: input.id, text: label }), input,
      hint ? h("small", { class: "muted", text: hint }) : null]);
  }

  function buttons(go, rest) {
    return h("p", { class: "actions" }, [go].concat(rest || []));
  }

  /* A button that closes the panel ``d`` ("Close" unless told). */
  function closeButton(d, text) {
    return h("button", { type: "button", class: "button secondary", text: text || "Close",
      onclick: function () { d.close(); } });
  }

  // ------------------------------------------------------------------ the API and the key

  function storedKey() {
    try { return sessionStorage.getItem(KEY) || ""; } catch (e) { return ""; }
  }

  function storeKey(key) {
    try {
      if (key) { sessionStorage.setItem(KEY, key); } else { sessionStorage.removeItem(KEY); }
    } catch (e) { /* storage disabled: the key lives until the page is left */ }
    document.getElementById("key-state").hidden = !key;
  }

  function storedStore() {
    try { return sessionStorage.getItem(STORE) || ""; } catch (e) { return ""; }
  }

  function keepStore(id) {
    try {
      if (id) { sessionStorage.setItem(STORE, id); } else { sessionStorage.removeItem(STORE); }
    } catch (e) { /* storage disabled: the choice lives until the page is left */ }
  }

  function ApiError(status, message, data) { this.status = status; this.message = message; this.data = data; }

  /* One call of the gateway's API (a path relative to the page, so a reverse proxy may
   * publish the gateway under any prefix); resolves to the parsed JSON body. Every call
   * names the store the operator chose, except a ``bare`` one (the list of stores). */
  function api(method, path, body, headers, bare) {
    var sent = Object.assign({ Accept: "application/json" }, headers || {});
    var key = storedKey();
    var store = bare ? "" : storedStore();
    if (key) { sent.Authorization = "Bearer " + key; }
    if (store) { sent[STORE_HEADER] = store; }
    if (body !== undefined) { sent["Content-Type"] = "application/json"; }
    return fetch(path, { method: method, headers: sent, cache: "no-store", credentials: "omit",
      body: body === undefined ? undefined : F.toJson(body) })
      .catch(function (e) { throw new ApiError(0, "the gateway did not answer (" + e.message + ")"); })
      .then(function (r) {
        return r.text().then(function (text) {
          var data = null;
          try { data = text ? F.parseJson(text) : null; } catch (e) { data = null; }
          if (!r.ok) { throw new ApiError(r.status, (data && data.message) || "HTTP " + r.status, data); }
          return data;
        });
      });
  }

  /* What the operator reads when a call fails; ``scope`` is what the action needs. */
  function explain(err, scope) {
    if (err.status === 403) {
      var m = /'([a-z]+)' scope/.exec(err.message || "");
      return "This key lacks the '" + (m ? m[1] : scope) + "' scope: use a key that has it for this.";
    }
    if (!err.status) { return err.message || String(err); }
    return err.message + " (HTTP " + err.status + ")";
  }

  function login(reason) {
    var input = h("input", { type: "password", id: "api-key", name: "api-key", required: true,
      autocomplete: "off", spellcheck: "false" });
    var form = h("form", { class: "card narrow", id: "login" }, [
      h("h1", { text: "Sign in" }),
      h("p", { text: "This gateway asks for an API key. It stays in this browser tab only " +
        "(session storage) and goes to the gateway as a bearer token." }),
      reason ? notice(reason, "error") : null,
      h("label", { for: "api-key", text: "API key" }), input,
      h("p", {}, h("button", { type: "submit", class: "button", text: "Sign in" }))]);
    form.addEventListener("submit", function (ev) {
      ev.preventDefault();
      storeKey(input.value.trim());
      forgetStores(); // another key may act on another store, or on its own only
      A.route();
    });
    setView(form);
    input.focus();
  }

  function failed(err, gen) {
    if (gen !== A.generation) { return; }
    if (err && err.status === 401) {
      var had = storedKey();
      storeKey("");
      login(had ? "The gateway refused this key (" + err.message + ")." : null);
      return;
    }
    if (!(err instanceof ApiError)) { console.error(err); }
    setView(notice(err instanceof ApiError ? explain(err, "read") : String(err), "error"));
  }

  /* The live parts of the page shown: [{gen, now}] (``now()`` loads one again at once). */
  var shownLive = [];

  /* Back to the dashboard's tab (it becomes visible again): the page shown loads its data
   * at once, rather than at its next refresh (up to 15 s later). The browser tests use the
   * same event (testsupport/admin_page.py: look_again) instead of waiting for the timer. */
  document.addEventListener("visibilitychange", function () {
    if (document.visibilityState !== "visible") { return; }
    shownLive.forEach(function (part) { if (part.gen === A.generation) { part.now(); } });
  });

  /* Load, draw, and load again every ``seconds`` while the page is shown (and at once when
   * its tab becomes visible again); a redraw happens only when the answer changed, so what
   * the operator is doing is not disturbed. With ``ctl``, ``ctl.refresh()`` loads (and
   * draws if changed) at once: after an action. */
  function live(gen, seconds, load, draw, ctl) {
    var last = null;
    var stale = h("p", { class: "notice warn", role: "status", hidden: true });
    function show(data) {
      var text = F.toJson(data);
      if (text !== last) { last = text; draw(data, stale); }
    }
    function now() {
      return load().then(function (data) {
        if (gen !== A.generation) { return; }
        stale.hidden = true;
        show(data);
      }, function (err) { if (err.status === 401) { failed(err, gen); } });
    }
    function tick() {
      if (gen !== A.generation) { return; }
      load().then(function (data) {
        if (gen !== A.generation) { return; }
        stale.hidden = true;
        show(data);
      }, function (err) {
        if (gen !== A.generation) { return; }
        if (err.status === 401) { failed(err, gen); return; }
        stale.textContent = "Could not refresh: " + explain(err, "read") + " Retrying.";
        stale.hidden = false;
      }).then(function () { if (gen === A.generation) { window.setTimeout(tick, seconds * 1000); } });
    }
    if (ctl) { ctl.refresh = now; }
    return load().then(function (data) {
      if (gen !== A.generation) { return; } // left (or switched store) while it loaded
      show(data);
      shownLive = shownLive.filter(function (part) { return part.gen === A.generation; });
      shownLive.push({ gen: gen, now: now });
      window.setTimeout(tick, seconds * 1000);
    });
  }


  // ------------------------------------------------------------------ the store switcher

  /* ``GET /stores`` once per key: 200 (an operator key, or a gateway without keys) shows a
   * select of the stores, and the chosen one goes with every later call as X-Xmrgate-Store;
   * 401/403/404 (a store key, a key without 'admin', a gateway without stores) shows the
   * store the key acts on, and no header is sent. Resolves to what it found:
   * {mode: "switch" | "own" | "default" | "none" | "unknown", stores: [...]}. */
  var stores = null;
  var storesRound = 0; // bumped when the key changes: an older answer is not drawn

  function loadStores() {
    if (!stores) {
      var round = storesRound;
      stores = api("GET", "stores", undefined, undefined, true).then(function (data) {
        var list = data && Array.isArray(data.stores) ? data.stores : [];
        var chosen = storedStore();
        if (chosen && !list.some(function (st) { return st.id === chosen; })) { keepStore(""); }
        return { mode: "switch", stores: list };
      }, function (err) {
        if (err.status === 401 || err.status === 403 || err.status === 404) {
          keepStore("");
          // A 401 is a refused key: the page's own call brings the sign-in form back.
          var mode = err.status === 401 ? "none" : /^xgs_/.test(storedKey()) ? "own" : "default";
          return { mode: mode, stores: [] };
        }
        if (round === storesRound) { stores = null; } // no answer: ask again on the next page
        return { mode: "unknown", stores: [] };
      }).then(function (found) {
        if (round !== storesRound) { return found; }
        drawStores(found);
        A.storeMode = found.mode;
        A.stores = found.stores;
        return found;
      });
    }
    return stores;
  }

  function forgetStores() {
    keepStore("");
    stores = null;
    storesRound += 1;
    A.storeMode = null;
    A.stores = [];
    drawStores({ mode: "none", stores: [] });
  }

  function storeLabel(st) {
    var name = st.name && st.name !== st.id ? st.name + " · " + st.id : st.id;
    return st.enabled === false ? name + " (disabled)" : name;
  }

  /* The store that the calls act on now, when the switcher knows it (else null). */
  function currentStore() {
    var id = storedStore() || "default";
    return (A.stores || []).filter(function (st) { return st.id === id; })[0] || null;
  }

  function drawStores(found) {
    var box = document.getElementById("store-box");
    if (found.mode === "switch" && found.stores.length) {
      var chosen = storedStore() || "default";
      var select = h("select", { id: "store-select", name: "store",
        "aria-describedby": "store-state" }, found.stores.map(function (st) {
        return h("option", { value: st.id, selected: st.id === chosen, "data-enabled": String(st.enabled !== false),
          text: storeLabel(st) });
      }));
      var state = h("span", { id: "store-state", class: "muted" });
      var show = function () {
        var st = found.stores.filter(function (x) { return x.id === select.value; })[0];
        state.replaceChildren(st && st.enabled === false
          ? h("span", { class: "badge st-disabled", title: "Its keys are refused and new requests or " +
            "payouts are refused (409); its history stays readable.", text: "disabled" }) : "");
      };
      select.addEventListener("change", function () {
        keepStore(select.value);
        show();
        A.switchStore();
      });
      show();
      box.replaceChildren(h("label", { for: "store-select", text: "Store" }), select, state);
      box.hidden = false;
      return;
    }
    var text = found.mode === "own" ? "this key's own store" : found.mode === "default" ? "default"
      : found.mode === "unknown" && storedStore() ? storedStore() : "";
    box.replaceChildren(text ? h("span", { id: "store-only" }, ["Store: ",
      h("strong", { id: "store-name", text: text })]) : "");
    box.hidden = !text;
  }

  /* A request's status: the gateway's own, or (older gateways) derived from its totals. */
  function statusOf(body) {
    if (body.status) { return body.status; }
    var exp = F.toBig(body.amount.expected);
    var total = F.toBig(body.amount.covered.total);
    if (body.complete) { return "complete"; }
    return total >= exp ? "paid" : total > F.toBig(0) ? "partial" : "waiting";
  }

  Object.assign(A, { h: h, s: s, append: append, setView: setView, amount: amount, price: price, when: when,
    badge: badge, short: short, notice: notice, table: table, dl: dl, enc: enc, storedKey: storedKey,
    storeKey: storeKey, ApiError: ApiError, api: api, explain: explain, login: login, failed: failed,
    live: live, statusOf: statusOf, storedStore: storedStore, loadStores: loadStores,
    forgetStores: forgetStores, currentStore: currentStore, storeMode: null, stores: [],
    switchStore: null /* set by admin.js */, desk: desk, field: field, buttons: buttons,
    closeButton: closeButton });
})();
