/* xmrgate dashboard: the Keys page (loaded after unmatched.js, before admin.js).
 * The operator (a key with the 'admin' scope: the store switcher is shown) lists the current
 * store's keys (GET /stores/<id>/keys), makes one (POST, the key answered once) and revokes
 * one (DELETE). A key is made with scopes (our API: a backend, a till) or with BTCPay
 * Greenfield permissions (a shop plugin: docs/greenfield.md "Connecting a shop plugin").
 *
 * As on the Links page, the list redraws when the API's answer changes; the form and the
 * new key live in one panel that the redraws never touch, so the key shown is not lost. */
(function () {
  "use strict";
  var A = window.XmrAdmin;
  var h = A.h, when = A.when, badge = A.badge, notice = A.notice, table = A.table, dl = A.dl,
    enc = A.enc, api = A.api, buttons = A.buttons, closeButton = A.closeButton;

  // A store key's scopes (domain/stores.py STORE_KEY_SCOPES), what each lets it do, and
  // whether the form ticks it at first.
  var SCOPES = [
    ["read", "See the store's requests, balance and history", true],
    ["receive", "Create payment requests and payment links", true],
    ["transfer", "Send money out of the store's wallet (payouts)", false],
    ["refund", "Make and send refunds", false],
    ["pos", "A till (point of sale): takes payments on the POS screen only", false]];
  // The Greenfield permissions a store key may hold (domain/greenfield/key_permissions.py),
  // in words (permissions.py describe()); WooCommerce's four and its two optional ones first,
  // ticked at first. The browser test holds this list to the gateway's.
  var PERMISSIONS = [
    ["btcpay.store.canviewinvoices", "See invoices and their payments", true],
    ["btcpay.store.cancreateinvoice", "Create invoices", true],
    ["btcpay.store.canviewstoresettings", "See the store's settings and its invoices", true],
    ["btcpay.store.canmodifyinvoices", "Create invoices, see them, and mark them settled or invalid", true],
    ["btcpay.store.cancreatenonapprovedpullpayments", "Offer refunds that the buyer claims", true],
    ["btcpay.store.webhooks.canmodifywebhooks", "Add, change and remove webhooks", true],
    ["btcpay.store.canmodifystoresettings", "Manage the store: its settings, invoices, webhooks and refunds", false],
    ["btcpay.store.cancreatepullpayments", "Offer refunds that the buyer claims", false],
    ["btcpay.store.canmanagepullpayments", "Offer and withdraw refunds", false],
    ["btcpay.store.canarchivepullpayments", "Withdraw refund offers", false],
    ["btcpay.store.canviewpullpayments", "See refund offers", false],
    ["btcpay.store.canmodifypaymentrequests", "Create payment requests and see them", false],
    ["btcpay.store.canviewpaymentrequests", "See payment requests", false],
    ["btcpay.store.canmanagepayouts", "See payouts (a plugin key never sends money here)", false],
    ["btcpay.store.canviewpayouts", "See payouts", false],
    ["btcpay.store.canviewreports", "See the store's reports", false]];
  var WORDS = {};
  PERMISSIONS.forEach(function (p) { WORDS[p[0]] = p[1]; });

  /* The store the calls act on (the switcher's), its id. */
  function storeId() { return A.storedStore() || "default"; }

  /* The gateway's URL, as a plugin asks for it: the page's address without "/admin" (a
   * reverse proxy's path prefix kept), no trailing slash. */
  function gatewayUrl() { return new URL(".", location.href).href.replace(/[/]$/, ""); }

  /* What a key may do: its permissions in words (the name on hover), else its scopes. */
  function powers(key, id) {
    if (key.permissions) {
      return h("ul", { class: "powers", id: id, "data-kind": "greenfield" }, key.permissions.map(function (name) {
        return h("li", { title: name, "data-permission": name, text: WORDS[name] || name });
      }));
    }
    return h("span", { id: id, "data-kind": "scopes", text: (key.scopes || []).join(", ") || "none" });
  }

  function kindOf(key) { return key.permissions ? "Shop plugin (Greenfield)" : "API key"; }

  /* A read-only field with a Copy button (its feedback beside it). */
  function copyRow(id, value, label) {
    var box = h("input", { id: id, class: "mono claim-url", readonly: true, value: value, "aria-label": label,
      spellcheck: "false" });
    var said = h("span", { class: "hint", role: "status", id: id + "-said" });
    box.addEventListener("focus", function () { box.select(); });
    return h("div", {}, [h("p", { class: "link-row" }, [box, h("button", { type: "button", class: "button secondary",
      id: id + "-copy", text: "Copy", onclick: function () { A.copyText(value, said); } })]),
    h("p", { class: "said" }, said)]);
  }

  // ------------------------------------------------------------------ a new key

  function checks(name, list) {
    return list.map(function (item) {
      return h("label", { class: "check key-check" }, [
        h("input", { type: "checkbox", name: name, value: item[0], checked: item[2] }),
        h("span", {}, [h("strong", { text: name === "scope" ? item[0] : item[1] }), " ",
          h("small", { class: "muted" + (name === "scope" ? "" : " mono"), text: name === "scope" ? item[1] : item[0] })])]);
    });
  }

  function createForm(d) {
    var api_ = h("input", { type: "radio", name: "key-kind", id: "key-kind-scopes", value: "scopes" });
    var plugin = h("input", { type: "radio", name: "key-kind", id: "key-kind-greenfield", value: "greenfield",
      checked: true });
    var scopeBox = h("fieldset", { class: "kinds key-list", id: "key-scopes" }, [h("legend", { text: "Scopes" })]
      .concat(checks("scope", SCOPES)));
    var permBox = h("fieldset", { class: "kinds key-list", id: "key-permissions" },
      [h("legend", { text: "Greenfield permissions" }), h("small", { class: "muted", text: "The first six are " +
        "what WooCommerce asks for (its four and two optional ones). A plugin's key never sends money out." })]
        .concat(checks("permission", PERMISSIONS)));
    var said = h("div", { id: "key-said", role: "status" });
    var go = h("button", { type: "submit", class: "button panel-go", id: "key-submit", text: "Make the key" });
    function kindChanged() {
      scopeBox.hidden = !api_.checked;
      permBox.hidden = api_.checked;
    }
    api_.addEventListener("change", kindChanged);
    plugin.addEventListener("change", kindChanged);
    kindChanged();
    var form = h("form", { id: "key-form" }, [
      h("fieldset", { class: "kinds" }, [h("legend", { text: "Kind" }),
        h("label", { class: "check" }, [plugin, "Shop plugin (BTCPay Greenfield)"]),
        h("label", { class: "check" }, [api_, "API key"])]),
      permBox, scopeBox, buttons(go, [" ", closeButton(d, "Cancel")]), said]);
    form.addEventListener("submit", function (ev) {
      ev.preventDefault();
      var box = api_.checked ? scopeBox : permBox;
      var picked = Array.prototype.map.call(box.querySelectorAll("input:checked"), function (c) { return c.value; });
      if (!picked.length) {
        said.replaceChildren(notice(api_.checked ? "Scopes: tick at least one." : "Permissions: tick at least one.",
          "error"));
        return;
      }
      var body = api_.checked ? { scopes: picked } : { permissions: picked };
      d.act(go, said, function () { return api("POST", "stores/" + enc(storeId()) + "/keys", body); },
        function (made) { showMade(d, made); });
    });
    d.show("New key of " + storeId(), form);
  }

  /* The new key, shown once (the gateway keeps only its digest), and for a plugin's key the
   * two other values its settings ask for. */
  function showMade(d, made) {
    var plugin = !!made.permissions;
    d.show("Key made", [
      dl([["Key id", h("span", { class: "mono", id: "made-id", text: made.id })],
        ["Store", h("span", { class: "mono", text: made.store })], ["Kind", kindOf(made)],
        ["Can", powers(made, "made-powers")]]),
      h("p", { text: plugin ? "Paste these three into the plugin's settings (in WooCommerce: BTCPay " +
        "settings, \"BTCPay Url\", \"BTCPay API Key\", \"Store ID\")." : "Give this key to the program that " +
        "uses it: it acts on this store only." }),
      plugin ? h("div", { class: "field" }, [h("label", { for: "made-url", text: "Gateway URL" }),
        copyRow("made-url", gatewayUrl(), "The gateway's URL")]) : null,
      h("div", { class: "field" }, [h("label", { for: "made-key", text: "API key" }), copyRow("made-key", made.key,
        "The new key")]),
      plugin ? h("div", { class: "field" }, [h("label", { for: "made-store", text: "Store ID" }),
        copyRow("made-store", made.store, "The store's id")]) : null,
      h("p", { class: "notice warn", id: "key-once", text: "This key is shown only now: the gateway keeps only " +
        "its digest and will not show it again. Copy it before you close this." }),
      buttons(closeButton(d, "I have copied it"))], "made");
  }

  // ------------------------------------------------------------------ revoking

  function revokePanel(d, key) {
    var said = h("div", { role: "status" });
    var go = h("button", { type: "button", class: "button panel-go", id: "revoke-confirm", text: "Revoke the key",
      onclick: function () {
        d.act(go, said, function () {
          return api("DELETE", "stores/" + enc(storeId()) + "/keys/" + enc(key.id));
        }, function () {
          d.show("Key revoked", [notice("Key " + key.id + " is revoked: the gateway refuses it from now on.", "ok"),
            buttons(closeButton(d))]);
        });
      } });
    d.show("Revoke this key?", [
      dl([["Key id", h("span", { class: "mono", text: key.id })], ["Kind", kindOf(key)], ["Can", powers(key)]]),
      h("p", { class: "notice warn", text: "Whatever uses it (a shop plugin, a till, a program) is refused at " +
        "once. A revoked key cannot be used again: make a new one." }),
      buttons(go, [" ", closeButton(d, "Keep it")]), said]);
  }

  // ------------------------------------------------------------------ the list

  function keyTable(d, keys) {
    var rows = keys.map(function (key) {
      return h("tr", { "data-key": key.id, "data-revoked": String(!!key.revoked), class: key.revoked ? "off" : null }, [
        h("td", {}, [h("span", { class: "mono", text: key.id }), h("div", { class: "hint", text: kindOf(key) }),
          h("div", { class: "state" }, badge(key.revoked ? "revoked" : "active"))]),
        h("td", { class: "wide-only" }, when(key.created_at)),
        h("td", { class: "powers-cell" }, powers(key)),
        h("td", {}, key.revoked ? null : h("button", { type: "button", class: "button secondary small",
          "data-action": "revoke", "data-key": key.id, text: "Revoke",
          onclick: function () { revokePanel(d, key); } }))]);
    });
    return table([["Key"], ["Made", "wide-only"], ["Can"], ["Actions"]], rows,
      { id: "key-list", class: "keys" });
  }

  function keysPage(gen) {
    var st = A.currentStore();
    var title = h("h1", { text: "Keys of " + (st && st.name ? st.name + " · " : "") + storeId() });
    // A store key or a key without 'admin' ("own", "default"); with no key yet ("none") the
    // list's call is refused (401) and brings the sign-in form.
    if (A.storeMode === "own" || A.storeMode === "default") {
      A.setView(h("section", { id: "keys" }, [h("h1", { text: "Keys" }),
        h("p", { class: "notice", id: "keys-no-admin", role: "status", text: "Making and revoking a store's " +
          "keys needs the operator's key (one given with --api-key that has the 'admin' scope). This key " +
          "cannot manage keys." })]));
      return Promise.resolve();
    }
    var d = A.desk(gen, "key", { scope: "admin" });
    var results = h("div", { id: "key-results" });
    A.setView(h("section", { id: "keys" }, [title,
      h("p", { class: "muted", text: "Keys that act on this store only (the store switcher above picks it). " +
        "An API key has scopes on the gateway's API; a shop plugin's key (WooCommerce, Magento, PrestaShop, " +
        "GiveWP) has BTCPay Greenfield permissions. A key is shown once, when it is made." }),
      h("p", { class: "actions" }, h("button", { type: "button", class: "button", id: "key-new", text: "New key",
        onclick: function () { createForm(d); } })),
      d.panel, results]));
    var ctl = {};
    var shown = A.live(gen, 10, function () { return api("GET", "stores/" + enc(storeId()) + "/keys"); },
      function (data, stale) {
        var keys = data && Array.isArray(data.keys) ? data.keys.slice().reverse() : [];
        results.replaceChildren();
        A.append(results, [stale, keys.length ? keyTable(d, keys)
          : notice("This store has no keys of its own yet. Make one with New key.", "")]);
      }, ctl);
    d.refresh = function () { return ctl.refresh ? ctl.refresh() : Promise.resolve(); };
    return shown;
  }

  /* The navigation's "Keys": shown to an operator only (the switcher's mode). */
  function navShow(mode) {
    var a = document.getElementById("nav-keys");
    if (a) { a.hidden = mode !== "switch"; }
  }

  A.keys = { SCOPES: SCOPES, PERMISSIONS: PERMISSIONS, nav: navShow, copyRow: copyRow }; // copyRow: webhooks.js
  A.pages = A.pages || {};
  Object.assign(A.pages, { keys: keysPage });
})();
