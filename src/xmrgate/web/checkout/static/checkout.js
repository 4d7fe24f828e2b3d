(function () {
  "use strict";
  var root = document.getElementById("checkout");
  if (!root) { return; }
  var statusUrl = root.getAttribute("data-status-url");
  var qrUrl = root.getAttribute("data-qr-url");
  var conn = document.getElementById("conn");
  var lastDue = root.getAttribute("data-due-xmr");
  var failures = 0;
  var PERIOD = 2500;
  var countdown = document.getElementById("countdown");
  var countdownValue = document.getElementById("countdown-value");
  // The deadline on this browser's clock, from the server's "seconds left" (the
  // server's clock decides; each poll sets it again).
  var deadline = null;

  function two(n) { return (n < 10 ? "0" : "") + n; }

  // Same format as page.py's countdown_text: M:SS, H:MM:SS or D d HH:MM:SS.
  function format(seconds) {
    var d = Math.floor(seconds / 86400), h = Math.floor(seconds % 86400 / 3600);
    var m = Math.floor(seconds % 3600 / 60), s = seconds % 60;
    if (d) { return d + " d " + two(h) + ":" + two(m) + ":" + two(s); }
    if (h) { return h + ":" + two(m) + ":" + two(s); }
    return m + ":" + two(s);
  }

  function setDeadline(secondsLeft) {
    if (secondsLeft === null || secondsLeft === undefined || secondsLeft === "") {
      deadline = null;
      countdown.hidden = true;
      return;
    }
    deadline = Date.now() + Number(secondsLeft) * 1000;
    countdown.hidden = false;
    tick();
  }

  function tick() {
    if (deadline === null) { return; }
    var left = Math.max(Math.ceil((deadline - Date.now()) / 1000), 0);
    var text = format(left);
    if (countdownValue.textContent !== text) { countdownValue.textContent = text; }
    // At zero the next poll brings the server's verdict (expired, or paid in time).
  }

  function setField(name, value) {
    var els = root.querySelectorAll('[data-field="' + name + '"]');
    for (var i = 0; i < els.length; i++) {
      if (els[i].tagName === "PROGRESS") {
        els[i].value = Number(value);
      } else if (els[i].textContent !== String(value)) {
        els[i].textContent = String(value);
      }
    }
  }

  function refreshQr() {
    fetch(qrUrl, { cache: "no-store", credentials: "same-origin" })
      .then(function (r) { if (!r.ok) { throw new Error("qr " + r.status); } return r.text(); })
      .then(function (text) {
        var svg = new DOMParser().parseFromString(text, "image/svg+xml").documentElement;
        var old = root.querySelector("svg.qr");
        if (svg && svg.nodeName === "svg" && old) { old.replaceWith(document.importNode(svg, true)); }
      })
      .catch(function () { /* the old code still works for the full amount */ });
  }

  function apply(s) {
    setField("received_xmr", s.received_xmr);
    setField("due_xmr", s.due_xmr);
    setField("confirmations", Math.min(s.confirmations, s.required_confirmations));
    root.setAttribute("data-due", s.due_xmr !== "0" ? "yes" : "no");
    setField("overpaid_xmr", s.overpaid_xmr);
    root.setAttribute("data-overpaid", s.overpaid_xmr !== "0" ? "yes" : "no");
    root.setAttribute("data-received", s.received_xmr !== "0" ? "yes" : "no");
    root.setAttribute("data-status", s.status);
    setDeadline(s.seconds_left);
    if (s.uri) {
      var link = document.getElementById("wallet-link");
      if (link && link.getAttribute("href") !== s.uri) { link.setAttribute("href", s.uri); }
    }
    if (s.state === "seen" && s.due_xmr !== "0" && s.due_xmr !== lastDue) { refreshQr(); }
    lastDue = s.due_xmr;
    if (root.getAttribute("data-state") !== s.state) {
      root.setAttribute("data-state", s.state);
      if (s.state === "paid") { document.title = "Paid: " + s.received_xmr + " XMR"; }
      if (s.state === "expired") { document.title = "Expired payment request"; }
      if (s.state === "late") { document.title = "Paid late: " + s.received_xmr + " XMR"; }
    }
  }

  function schedule() {
    var wait = failures ? Math.min(PERIOD * Math.pow(2, failures), 30000) : PERIOD;
    window.setTimeout(poll, wait);
  }

  function poll() {
    fetch(statusUrl, { cache: "no-store", credentials: "same-origin", headers: { Accept: "application/json" } })
      .then(function (r) { if (!r.ok) { throw new Error("status " + r.status); } return r.json(); })
      .then(function (s) {
        failures = 0;
        conn.hidden = true;
        apply(s);
        // Expired pages keep polling: a late payment is shown when it arrives.
        if (s.state !== "paid" && !(s.state === "late" && s.complete)) { schedule(); }
      })
      .catch(function () {
        failures += 1;
        if (failures > 1) { conn.hidden = false; }
        schedule();
      });
  }

  var button = document.getElementById("copy");
  var address = document.getElementById("address");
  var said = document.getElementById("copy-status");
  var label = button.textContent;
  var timer = 0;

  function copied(ok) {
    said.textContent = ok ? "Address copied." : "Could not copy: select the address and copy it.";
    button.textContent = ok ? "Copied" : label;
    window.clearTimeout(timer);
    timer = window.setTimeout(function () { button.textContent = label; said.textContent = ""; }, 2500);
  }

  function copyBySelection() {
    var range = document.createRange();
    range.selectNodeContents(address);
    var sel = window.getSelection();
    sel.removeAllRanges();
    sel.addRange(range);
    var ok = false;
    try { ok = document.execCommand("copy"); } catch (e) { ok = false; }
    copied(ok);
  }

  button.hidden = false;
  button.addEventListener("click", function () {
    var text = address.textContent.trim();
    if (navigator.clipboard && window.isSecureContext) {
      navigator.clipboard.writeText(text).then(function () { copied(true); }, copyBySelection);
    } else {
      copyBySelection();
    }
  });

  // The rate lock's end, written in UTC for a page without script: in this browser's
  // time zone instead, the date only when it is not today.
  var lock = document.getElementById("price-lock");
  var lockAt = lock ? new Date(lock.getAttribute("datetime")) : null;
  if (lockAt && !isNaN(lockAt.getTime())) {
    var today = lockAt.toDateString() === new Date().toDateString();
    lock.title = lock.textContent;
    lock.textContent = today
      ? lockAt.toLocaleTimeString([], { hour: "2-digit", minute: "2-digit" })
      : lockAt.toLocaleString([], { dateStyle: "medium", timeStyle: "short" });
  }

  setDeadline(root.getAttribute("data-seconds-left"));
  window.setInterval(tick, 1000);
  if (root.getAttribute("data-state") !== "paid") { schedule(); }
}());
