/* xmrgate dashboard: the Webhooks page (after keys.js): a store's webhooks through
 * /api/v1/stores/<id>/webhooks, as on the Keys page (forms in a panel the redraws keep). */
(function () {
  "use strict";
  var A = window.XmrAdmin;
  var h = A.h, when = A.when, notice = A.notice, table = A.table, dl = A.dl, enc = A.enc,
    field = A.field, buttons = A.buttons, closeButton = A.closeButton;
  var PERMISSION = "btcpay.store.webhooks.canmodifywebhooks";
  var DELIVERIES = 10; // shown per webhook
  // domain/greenfield/events.py EventType
  var EVENTS = ["InvoiceCreated", "InvoiceReceivedPayment", "InvoicePaymentSettled", "InvoiceProcessing",
    "InvoiceSettled", "InvoiceExpired", "InvoiceExpiredPaidPartial", "InvoicePaidAfterExpiration",
    "InvoiceInvalid", "InvoiceRefund"];
  var store = "default"; // the page's store

  /* A call on the page's store; a 422's [{path, message}] becomes the message. */
  function gf(method, rest, body) {
    return A.api(method, "api/v1/stores/" + enc(store) + "/webhooks" + (rest || ""), body).catch(function (err) {
      if (err && Array.isArray(err.data) && err.data.length) {
        err.message = err.data.map(function (e) {
          return (e.path ? e.path + ": " : "") + e.message;
        }).join("; ");
      }
      throw err;
    });
  }

  /* A 403 names a permission, not a scope. */
  function refusal(err) {
    if (err.status !== 403) { return null; }
    return h("p", { class: "notice error", role: "alert", id: "hook-error", text: "This key lacks " + PERMISSION +
      " on store " + store + "." });
  }

  function eventsOf(hook) {
    var ev = hook.authorizedEvents || {};
    return h("span", { class: "hook-events", text: ev.everything ? "everything"
      : (ev.specificEvents || []).join(", ") || "none" });
  }

  function small(text, attrs, onclick) {
    return h("button", Object.assign({ type: "button", class: "button secondary small", text: text,
      onclick: onclick }, attrs));
  }

  // ------------------------------------------------------------------ the form

  /* The form of a new webhook (``hook`` null) or an edit (PUT: every field). */
  function hookForm(d, hook) {
    var editing = !!hook;
    var ev = (hook && hook.authorizedEvents) || { everything: true, specificEvents: [] };
    var url = h("input", { id: "hook-url", type: "url", required: true, autocomplete: "off", spellcheck: "false",
      placeholder: "your shop's https:// address for its events", value: hook ? hook.url : null });
    var enabled = h("input", { type: "checkbox", id: "hook-enabled", checked: hook ? hook.enabled : true });
    var redeliver = h("input", { type: "checkbox", id: "hook-redelivery",
      checked: hook ? hook.automaticRedelivery : true });
    var all = h("input", { type: "radio", name: "hook-events", id: "hook-everything", value: "everything",
      checked: !!ev.everything });
    var some = h("input", { type: "radio", name: "hook-events", id: "hook-specific", value: "specific",
      checked: !ev.everything });
    var picked = ev.specificEvents || [];
    var eventBox = h("fieldset", { class: "kinds key-list", id: "hook-event-list" },
      [h("legend", { text: "Event types" })].concat(EVENTS.map(function (e) {
        return h("label", { class: "check" }, [h("input", { type: "checkbox", name: "hook-event", value: e,
          checked: picked.indexOf(e) >= 0 }), e]);
      })));
    var secret = h("input", { id: "hook-secret", autocomplete: "off", spellcheck: "false", maxlength: 256,
      placeholder: editing ? "empty: kept as it is" : "empty: the gateway makes one" });
    var said = h("div", { id: "hook-said", role: "status" });
    var go = h("button", { type: "submit", class: "button panel-go", id: "hook-submit",
      text: editing ? "Save" : "Add the webhook" });
    function kindChanged() { eventBox.hidden = all.checked; }
    all.addEventListener("change", kindChanged);
    some.addEventListener("change", kindChanged);
    kindChanged();
    var form = h("form", { id: "hook-form" }, [
      field("URL", url, "Where the gateway POSTs each event; an internal address is refused."),
      h("p", { class: "kinds" }, [h("label", { class: "check" }, [enabled, "Enabled"]),
        h("label", { class: "check" }, [redeliver, "Automatic redelivery"])]),
      h("fieldset", { class: "kinds" }, [h("legend", { text: "Events" }),
        h("label", { class: "check" }, [all, "Everything"]),
        h("label", { class: "check" }, [some, "Only the types chosen"])]),
      eventBox,
      field("Secret", secret, "Signs each delivery (BTCPay-Sig)."),
      buttons(go, [" ", closeButton(d, "Cancel")]), said]);
    form.addEventListener("submit", function (ev) {
      ev.preventDefault();
      var chosen = Array.prototype.map.call(eventBox.querySelectorAll("input:checked"), function (c) {
        return c.value;
      });
      if (some.checked && !chosen.length) {
        said.replaceChildren(notice("Events: tick at least one.", "error"));
        return;
      }
      var body = { url: url.value.trim(), enabled: enabled.checked, automaticRedelivery: redeliver.checked,
        authorizedEvents: { everything: all.checked, specificEvents: all.checked ? [] : chosen } };
      if (secret.value) { body.secret = secret.value; }
      d.act(go, said, function () {
        return editing ? gf("PUT", "/" + enc(hook.id), body) : gf("POST", "", body);
      }, function (answer) {
        if (editing) {
          d.show("Webhook saved", [notice("Webhook " + answer.id + " is saved.", "ok"), buttons(closeButton(d))]);
        } else { showMade(d, answer); }
      });
    });
    d.show(editing ? "Edit webhook " + hook.id : "New webhook of " + store, form);
  }

  /* The new webhook, its secret shown once. */
  function showMade(d, made) {
    d.show("Webhook added", [
      dl([["Webhook id", h("span", { class: "mono", id: "hook-made-id", text: made.id })],
        ["URL", h("span", { class: "mono link-url", text: made.url })], ["Events", eventsOf(made)]]),
      h("div", { class: "field" }, [h("label", { for: "hook-made-secret", text: "Secret" }),
        A.keys.copyRow("hook-made-secret", made.secret || "", "The webhook's secret")]),
      h("p", { class: "notice warn", id: "hook-once", text: "This secret is shown only now: copy it to the " +
        "receiver (it checks the BTCPay-Sig header with it)." }),
      buttons(closeButton(d, "I have copied it"))], "made");
  }

  function deletePanel(d, hook) {
    var said = h("div", { role: "status" });
    var go = h("button", { type: "button", class: "button panel-go", id: "hook-delete-confirm",
      text: "Delete the webhook", onclick: function () {
        d.act(go, said, function () { return gf("DELETE", "/" + enc(hook.id)); }, function () {
          d.show("Webhook deleted", [notice("Webhook " + hook.id + " is deleted.", "ok"), buttons(closeButton(d))]);
        });
      } });
    d.show("Delete webhook " + hook.id + "?", [h("p", { class: "mono link-url", text: hook.url }),
      h("p", { class: "notice warn", text: "Its deliveries not sent yet are dropped." }),
      buttons(go, [" ", closeButton(d, "Keep it")]), said]);
  }

  function redeliver(d, hook, delivery, button) {
    var said = h("div", { role: "status" });
    d.show("Redeliver " + delivery.id, [said]);
    d.act(button, said, function () {
      return gf("POST", "/" + enc(hook.id) + "/deliveries/" + enc(delivery.id) + "/redeliver");
    }, function (fresh) {
      button.disabled = false;
      d.show("Delivery sent again", [notice("Queued as delivery " + fresh + ".", "ok"), buttons(closeButton(d))]);
    });
  }

  // ------------------------------------------------------------------ the list

  function deliveryTable(d, hook, deliveries) {
    if (!deliveries.length) { return h("p", { class: "muted hook-none", text: "No deliveries yet." }); }
    return table([["Status"], ["Time"], ["HTTP", "num"], ["Error", "wide-only"], [""]],
      deliveries.map(function (x) {
        var again = small("Redeliver", { "data-action": "redeliver" }, function () {
          redeliver(d, hook, x, again);
        });
        return h("tr", { "data-delivery": x.id, "data-status": x.status }, [
          h("td", {}, h("span", { class: "badge st-" + x.status, title: x.id, text: x.status })),
          h("td", {}, when(new Date(x.timestamp * 1000).toISOString())),
          h("td", { class: "num", text: x.httpCode == null ? "—" : String(x.httpCode) }),
          h("td", { class: "wide-only hook-error", text: x.errorMessage || "—" }),
          h("td", {}, again)]);
      }), { class: "hook-deliveries" });
  }

  function hookCard(d, hook, deliveries) {
    return h("article", { class: "card hook", "data-hook": hook.id, "data-enabled": String(hook.enabled) }, [
      h("h2", { class: "hook-url mono", text: hook.url }),
      dl([["Webhook id", h("span", { class: "mono", text: hook.id })],
        ["Enabled", h("span", { class: "badge st-" + (hook.enabled ? "active" : "inactive"),
          "data-field": "enabled", text: hook.enabled ? "enabled" : "disabled" })],
        ["Automatic redelivery", hook.automaticRedelivery ? "yes" : "no"],
        ["Events", eventsOf(hook)]]),
      h("p", { class: "actions" }, [small("Edit", { "data-action": "edit" }, function () { hookForm(d, hook); }),
        small("Delete", { "data-action": "delete" }, function () { deletePanel(d, hook); })]),
      h("h3", { text: "Recent deliveries" }), deliveryTable(d, hook, deliveries)]);
  }

  /* A key without the switcher: the store of its webhooks permission, or null. */
  function ownStore() {
    return A.api("GET", "api/v1/api-keys/current").then(function (data) {
      var found = ((data && data.permissions) || []).map(function (p) {
        var m = /^btcpay\.store\.(webhooks\.canmodifywebhooks|canmodifystoresettings):(.+)$/.exec(p);
        return m ? m[2] : null;
      }).filter(Boolean);
      return found.length ? found[0] : null;
    }, function (err) {
      if (err.status === 401) { throw err; }
      return null;
    });
  }

  /* The page without a form: why. */
  function only(id, text) {
    A.setView(h("section", { id: "webhooks" }, [h("h1", { text: "Webhooks" }),
      h("p", { class: "notice", id: id, role: "status", text: text })]));
  }

  function webhooksPage(gen) {
    if (!A.storedKey()) { // an open gateway too: its Greenfield API always asks for a key
      A.login(A.storeMode === "none" ? null : "Webhooks need a key, even here: make a store key with the " +
        "webhooks permission on the Keys page, then sign in with it.");
      return Promise.resolve();
    }
    var chosen = A.storeMode === "switch" ? Promise.resolve(A.storedStore() || "default") : ownStore();
    return chosen.then(function (id) {
      if (gen !== A.generation) { return undefined; }
      store = id;
      return id ? draw(gen) : Promise.reject(new A.ApiError(403, ""));
    }).catch(function (err) { // no store, or the list refused: why, and no form
      if (err.status !== 403 || gen !== A.generation) { throw err; }
      only("hooks-no-permission", "Managing webhooks needs the operator's key, or a store key with " +
        PERMISSION + ".");
    });
  }

  function draw(gen) {
    var st = A.storeMode === "switch" ? A.currentStore() : null;
    var d = A.desk(gen, "hook", { refusal: refusal });
    var results = h("div", { id: "hook-results" });
    A.setView(h("section", { id: "webhooks" }, [
      h("h1", { text: "Webhooks of " + (st && st.name ? st.name + " · " : "") + store }),
      h("p", { class: "muted", text: "Where the gateway POSTs this store's invoice events (BTCPay " +
        "Greenfield webhooks). A shop plugin adds its own." }),
      h("p", { class: "actions" }, h("button", { type: "button", class: "button", id: "hook-new",
        text: "New webhook", onclick: function () { hookForm(d, null); } })),
      d.panel, results]));
    function load() {
      return gf("GET").then(function (hooks) {
        return Promise.all((hooks || []).map(function (hook) {
          return gf("GET", "/" + enc(hook.id) + "/deliveries?count=" + DELIVERIES).then(function (list) {
            return { hook: hook, deliveries: list || [] };
          });
        }));
      });
    }
    var ctl = {};
    var shown = A.live(gen, 10, load, function (data, stale) {
      results.replaceChildren();
      A.append(results, [stale, data.length ? data.map(function (one) {
        return hookCard(d, one.hook, one.deliveries);
      }) : notice("This store has no webhooks yet. Add one with New webhook.", "")]);
    }, ctl);
    d.refresh = function () { return ctl.refresh ? ctl.refresh() : Promise.resolve(); };
    return shown;
  }

  /* "Webhooks" in the navigation: as "Keys". */
  function navShow(mode) {
    var a = document.getElementById("nav-webhooks");
    if (a) { a.hidden = mode !== "switch"; }
  }

  A.webhooks = { EVENTS: EVENTS, nav: navShow };
  A.pages = A.pages || {};
  Object.assign(A.pages, { webhooks: webhooksPage });
})();
