/* xmrgate point of sale: a keypad, "Charge", the QR code full screen and the sale's state,
 * from /pos/config and /pos/sales called with the till's key (kept in this tab's
 * sessionStorage). The sale is in the URL (#sale=<address>): a reload resumes it. The
 * device's settings (currency, confirmations) and its last 20 sales are in localStorage.
 * Amounts stay exact: format.js (the dashboard's) does BigInt piconero arithmetic. */
(function () {
  "use strict";
  var F = window.XmrFormat;
  var KEY = "xmrgate.pos.key";
  var CURRENCY = "xmrgate.pos.currency";
  var CONFIRMATIONS = "xmrgate.pos.confirmations";
  var SALES = "xmrgate.pos.sales";
  var MAX_SALES = 20;
  var POLL_MS = 2000;
  var MAX_TYPED = 24;

  var $ = function (id) { return document.getElementById(id); };
  var config = { currencies: [], name: null, accent: null };
  var typed = "";
  var round = 0; // bumped when the view changes: an older poll does not draw

  // ------------------------------------------------------------------ storage

  function get(store, name) { try { return store.getItem(name) || ""; } catch (e) { return ""; } }
  function put(store, name, value) {
    try { if (value) { store.setItem(name, value); } else { store.removeItem(name); } } catch (e) { /* disabled */ }
  }
  function key() { return get(sessionStorage, KEY); }
  function currency() { return get(localStorage, CURRENCY) || "XMR"; }
  /* "Paid" waits for this device's setting, raised to the least its store asks (GET /pos/config). */
  function asked() { var n = parseInt(get(localStorage, CONFIRMATIONS), 10); return isNaN(n) ? 1 : Math.min(Math.max(n, 0), 10); }
  function least() { return Math.min(Math.max(Number(config.confirmations) || 0, 0), 10); }
  function confirmations() { return Math.max(asked(), least()); }
  function drawConfirmations() {
    var n = least(), own = asked(), note = $("store-confirmations");
    $("confirmations").min = String(n); $("confirmations").value = String(confirmations());
    note.textContent = "This store asks for at least " + n + " confirmation" + (n === 1 ? "" : "s") + (own < n ?
      ": this device's setting (" + own + ") is raised to " + n + "." : "; this device may ask for more.");
    note.classList.toggle("raised", own < n); note.hidden = !n; // colour only: Done must not move
  }
  function sales() {
    try { var list = JSON.parse(get(localStorage, SALES) || "[]"); return Array.isArray(list) ? list : []; } catch (e) { return []; }
  }
  function keepSales(list) { put(localStorage, SALES, JSON.stringify(list.slice(0, MAX_SALES))); }
  function remember(sale) {
    var list = sales().filter(function (s) { return s.address !== sale.address; });
    list.unshift(sale);
    keepSales(list);
  }
  function update(address, label, state) {
    var list = sales();
    list.forEach(function (s) { if (s.address === address) { s.label = label; s.state = state; } });
    keepSales(list);
  }

  // ------------------------------------------------------------------ the API

  function ApiError(status, message) { this.status = status; this.message = message; }

  function api(method, path, body, headers) {
    var sent = Object.assign({ Accept: "application/json" }, headers || {});
    if (key()) { sent.Authorization = "Bearer " + key(); }
    if (body !== undefined) { sent["Content-Type"] = "application/json"; }
    return fetch(path, { method: method, headers: sent, cache: "no-store", credentials: "omit",
      body: body === undefined ? undefined : F.toJson(body) })
      .catch(function (e) { throw new ApiError(0, "the gateway did not answer (" + e.message + ")"); })
      .then(function (r) {
        return r.text().then(function (text) {
          var data = null;
          try { data = text ? F.parseJson(text) : null; } catch (e) { data = null; }
          if (!r.ok) { throw new ApiError(r.status, (data && data.message) || "HTTP " + r.status); }
          return data;
        });
      });
  }

  function explain(err) {
    if (err.status === 403) { return "This key may not use the point of sale: it needs the 'pos' scope (" + err.message + ")."; }
    return err.status ? err.message + " (HTTP " + err.status + ")" : String(err.message || err);
  }

  // ------------------------------------------------------------------ views

  function show(id) {
    ["loading", "login", "keypad-view", "sale-view", "settings"].forEach(function (v) { $(v).hidden = v !== id; });
    $("settings-open").hidden = !key() || id === "login";
    $("settings-open").setAttribute("aria-expanded", String(id === "settings"));
    round += 1;
    return round;
  }

  function login(reason) {
    show("login");
    $("login-error").textContent = reason || "";
    $("login-error").hidden = !reason;
    $("api-key").value = "";
    $("api-key").focus();
  }

  function failed(err) {
    if (err.status === 401) { put(sessionStorage, KEY, ""); login("The gateway refused this key (" + err.message + ")."); return true; }
    if (err.status === 403) { put(sessionStorage, KEY, ""); login(explain(err)); return true; }
    return false;
  }

  function start() {
    if (!key()) { login(null); return; }
    api("GET", "pos/config").then(function (found) {
      config = found;
      $("store-name").textContent = found.name || "Point of sale";
      document.title = (found.name || "Point of sale") + " · xmrgate";
      if (found.accent) {
        document.documentElement.style.setProperty("--accent", found.accent);
        document.documentElement.style.setProperty("--accent-fg", onColour(found.accent));
      }
      fillCurrencies();
      route();
    }, function (err) {
      if (!failed(err)) { show("loading"); $("loading").textContent = "Could not start: " + explain(err); }
    });
  }

  /* Black or white, whichever reads better on the store's accent (WCAG luminance). */
  function onColour(hex) {
    var lin = [1, 3, 5].map(function (i) {
      var c = parseInt(hex.slice(i, i + 2), 16) / 255;
      return c <= 0.03928 ? c / 12.92 : Math.pow((c + 0.055) / 1.055, 2.4);
    });
    var luminance = 0.2126 * lin[0] + 0.7152 * lin[1] + 0.0722 * lin[2];
    return luminance > 0.179 ? "#0b0b0b" : "#ffffff";
  }

  function fillCurrencies() {
    var list = ["XMR"].concat(config.currencies || []);
    if (list.indexOf(currency()) < 0) { put(localStorage, CURRENCY, ""); }
    var select = $("currency");
    select.replaceChildren();
    list.forEach(function (code) {
      var option = document.createElement("option");
      option.value = code;
      option.textContent = code;
      option.selected = code === currency();
      select.appendChild(option);
    });
    select.disabled = list.length < 2;
  }

  function route() {
    var m = /^#sale=([0-9A-Za-z]+)$/.exec(location.hash);
    if (m) { openSale(m[1]); } else { keypad(); }
  }

  // ------------------------------------------------------------------ the keypad

  function decimals() {
    var code = currency();
    if (code === "XMR") { return 12; }
    try {
      return new Intl.NumberFormat("en", { style: "currency", currency: code }).resolvedOptions().maximumFractionDigits;
    } catch (e) { return 2; }
  }

  function press(k) {
    var next = typed;
    if (k === "clear") { next = ""; } else if (k === "back") { next = typed.slice(0, -1); } else if (k === ".") {
      if (typed.indexOf(".") < 0 && decimals() > 0) { next = (typed || "0") + "."; }
    } else if (/^[0-9]+$/.test(k)) {
      next = typed === "0" ? k.replace(/^0+/, "") || "0" : typed + k;
      var cut = next.indexOf(".");
      if (cut >= 0 && next.length - cut - 1 > decimals()) { next = typed; }
    }
    if (next.length > MAX_TYPED) { next = typed; }
    typed = next;
    drawDisplay();
  }

  function drawDisplay() {
    $("display").textContent = (typed || "0") + " " + currency();
    $("charge-error").hidden = true;
  }

  function keypad() {
    show("keypad-view");
    drawDisplay();
    drawRecent();
    refreshRecent();
  }

  function charge() {
    var body;
    try {
      if (currency() === "XMR") {
        var amount = F.parseXmr(typed || "0");
        if (amount <= BigInt(0)) { throw new Error("type an amount above zero"); }
        body = { amount: amount };
      } else {
        body = { price: { amount: F.parseFiat(typed || "0"), currency: currency() } };
      }
    } catch (e) { chargeError(e.message); return; }
    var note = $("note").value.trim();
    if (note) { body.note = note; }
    var button = $("charge");
    button.disabled = true;
    var idem = "pos-" + Date.now().toString(36) + "-" + Math.random().toString(36).slice(2);
    api("POST", "pos/sales", body, { "Idempotency-Key": idem }).then(function (sale) {
      remember({ address: sale.address, amount: String(sale.amount), price: sale.price || null,
        note: sale.note || "", at: new Date().toISOString(), state: "waiting", label: "Waiting" });
      typed = "";
      $("note").value = "";
      location.hash = "sale=" + sale.address; // hashchange: route()
    }, function (err) {
      if (!failed(err)) { chargeError(explain(err)); }
    }).then(function () { button.disabled = false; });
  }

  function chargeError(text) {
    $("charge-error").textContent = text;
    $("charge-error").hidden = false;
  }

  function priceText(price) { return price ? String(price.amount) + " " + String(price.currency) : ""; }

  function when(iso) {
    var d = new Date(iso);
    return isNaN(d.getTime()) ? "" : d.toLocaleString(undefined, { dateStyle: "short", timeStyle: "short" });
  }

  function drawRecent() {
    var list = sales();
    $("no-sales").hidden = list.length > 0;
    var ol = $("recent");
    ol.replaceChildren();
    list.forEach(function (s) {
      var li = document.createElement("li");
      li.setAttribute("data-address", s.address);
      li.setAttribute("data-state", s.state || "waiting");
      var a = document.createElement("a");
      a.href = "#sale=" + s.address;
      var amount = document.createElement("span");
      amount.className = "r-amount";
      var xmr = "";
      try { xmr = F.xmr(s.amount) + " XMR"; } catch (e) { xmr = ""; }
      amount.textContent = s.price ? priceText(s.price) + " · " + xmr : xmr;
      var state = document.createElement("span");
      state.className = "r-state";
      state.textContent = s.label || "Waiting";
      var meta = document.createElement("span");
      meta.className = "r-meta muted";
      meta.textContent = when(s.at) + (s.note ? " · " + s.note : "");
      a.append(amount, state, meta);
      li.appendChild(a);
      ol.appendChild(li);
    });
  }

  /* The states of the sales not final yet, asked once each time the list is shown. */
  function refreshRecent() {
    var mine = round;
    var open = sales().filter(function (s) { return s.state !== "paid" && s.state !== "expired"; });
    open.reduce(function (chain, s) {
      return chain.then(function () {
        if (mine !== round) { return undefined; }
        return api("GET", "pos/sales/" + encodeURIComponent(s.address)).then(function (sale) {
          var v = verdict(sale);
          update(s.address, v.label, v.state);
        }, function (err) { if (err.status === 404) { update(s.address, "Unknown", "expired"); } });
      });
    }, Promise.resolve()).then(function () { if (mine === round && open.length) { drawRecent(); } });
  }

  // ------------------------------------------------------------------ one sale

  /* What the screen says of a sale: {state, label, detail, qr, final}. ``complete`` is
   * the received total covering the sale; "Paid" waits for the device's confirmations. */
  function verdict(sale) {
    var n = confirmations();
    var got = F.xmr(sale.received) + " XMR received";
    var due = F.xmr(sale.due) + " XMR still due";
    if (sale.complete) {
      if (sale.confirmations >= n) {
        return { state: "paid", label: "Paid", final: true, qr: false,
          detail: sale.state === "late" ? "Paid after the sale expired." : got + (n ? ", " + sale.confirmations + " confirmation" + (sale.confirmations === 1 ? "" : "s") : "") };
      }
      if (sale.confirmations === 0) {
        return { state: "seen", label: "Seen, waiting for the block", qr: false, detail: got + " (in the pool)" };
      }
      return { state: "confirming", label: "Confirming " + sale.confirmations + " of " + n, qr: false, detail: got };
    }
    if (sale.state === "expired") {
      return { state: "expired", label: "Expired", final: true, qr: false,
        detail: sale.seen ? got + ", " + due + "." : "Nothing was paid." };
    }
    if (sale.seen) {
      return { state: "partial", label: "Partly paid: " + due, qr: true,
        detail: got + (sale.confirmations ? "" : " (in the pool)") + ". Scan again for the rest." };
    }
    return { state: "waiting", label: "Waiting for payment", qr: true, detail: countdown(sale.seconds_left) };
  }

  function countdown(seconds) {
    if (seconds === null || seconds === undefined) { return ""; }
    var m = Math.floor(seconds / 60);
    var s = seconds % 60;
    return "Expires in " + m + ":" + (s < 10 ? "0" : "") + s;
  }

  function openSale(address) {
    var mine = show("sale-view");
    $("sale-amount").textContent = "";
    $("sale-price").textContent = "";
    $("sale-note").textContent = "";
    $("sale-stale").hidden = true;
    $("qr").removeAttribute("src");
    $("qr-box").hidden = true;
    drawState({ state: "loading", label: "Loading…", detail: "" });
    var shownQr = null;
    function tick() {
      if (mine !== round) { return; }
      api("GET", "pos/sales/" + encodeURIComponent(address)).then(function (sale) {
        if (mine !== round) { return; }
        $("sale-stale").hidden = true;
        $("sale-amount").textContent = F.xmr(sale.due > 0 && sale.seen ? sale.due : sale.amount) + " XMR";
        $("sale-price").textContent = sale.price ? priceText(sale.price) : "";
        $("sale-note").textContent = sale.note || "";
        var v = verdict(sale);
        // The checkout's QR code asks for what is still due; a new one when that changes.
        var src = "pay/" + encodeURIComponent(address) + "/qr.svg?due=" + String(sale.due);
        if (v.qr && shownQr !== src) { $("qr").src = src; shownQr = src; }
        $("qr-box").hidden = !v.qr;
        drawState(v);
        update(address, v.label, v.state);
        if (!v.final) { window.setTimeout(tick, POLL_MS); }
      }, function (err) {
        if (mine !== round) { return; }
        if (failed(err)) { return; }
        if (err.status === 404) {
          drawState({ state: "expired", label: "No such sale", detail: "This key's store has no sale at this address." });
          return;
        }
        $("sale-stale").textContent = "Could not refresh: " + explain(err) + " Retrying.";
        $("sale-stale").hidden = false;
        window.setTimeout(tick, POLL_MS);
      });
    }
    tick();
  }

  function drawState(v) {
    $("sale-state").setAttribute("data-state", v.state);
    $("state-text").textContent = v.label;
    $("state-detail").textContent = v.detail || "";
    $("new-sale").classList.toggle("secondary", !v.final);
    $("new-sale").textContent = v.final ? "New sale" : "New sale (leave this one)";
  }

  // ------------------------------------------------------------------ wiring

  $("login").addEventListener("submit", function (ev) {
    ev.preventDefault();
    put(sessionStorage, KEY, $("api-key").value.trim());
    show("loading");
    start();
  });
  $("keypad").addEventListener("click", function (ev) {
    var b = ev.target.closest("button[data-key]");
    if (b) { press(b.getAttribute("data-key")); }
  });
  $("currency").addEventListener("change", function () {
    put(localStorage, CURRENCY, $("currency").value === "XMR" ? "" : $("currency").value);
    typed = "";
    drawDisplay();
  });
  $("charge").addEventListener("click", charge);
  $("new-sale").addEventListener("click", function () {
    if (location.hash) { history.pushState(null, "", location.pathname + location.search); }
    keypad();
  });
  $("settings-open").addEventListener("click", function () {
    if (!$("settings").hidden) { route(); return; }
    show("settings"); drawConfirmations(); $("confirmations").focus();
  });
  $("confirmations").addEventListener("change", function () {
    var n = parseInt($("confirmations").value, 10);
    if (isNaN(n)) { return; } // cleared while typing: the setting stays as it was
    put(localStorage, CONFIRMATIONS, String(Math.min(Math.max(n, 0), 10))); drawConfirmations();
  });
  $("settings-close").addEventListener("click", route);
  $("forget-key").addEventListener("click", function () { put(sessionStorage, KEY, ""); login(null); });
  document.addEventListener("keydown", function (ev) {
    if ($("keypad-view").hidden || ev.ctrlKey || ev.metaKey || ev.altKey) { return; }
    var t = ev.target;
    if (t && (t.tagName === "INPUT" || t.tagName === "SELECT" || t.tagName === "TEXTAREA")) { return; }
    var k = ev.key === "Backspace" ? "back" : ev.key === "Escape" ? "clear" : ev.key === "," ? "." : ev.key;
    if (/^[0-9.]$/.test(k) || k === "back" || k === "clear") { ev.preventDefault(); press(k); } else if (k === "Enter") { ev.preventDefault(); charge(); }
  });
  window.addEventListener("hashchange", function () { if (key()) { route(); } });

  start();
})();
