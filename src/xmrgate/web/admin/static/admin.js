/* xmrgate dashboard, part 5 of 5: the pages are hash routes (#/, #/requests,
 * #/request/<address>, #/refunds, #/links, #/unmatched, #/payouts, #/new, #/keys,
 * #/webhooks), so the gateway serves one static shell; every figure comes from an API call
 * made with the key the operator typed in, on the store chosen in the header's switcher
 * (operators only). */
(function () {
  "use strict";
  var A = window.XmrAdmin;
  var P = A.pages;

  // ------------------------------------------------------------------ routing

  function route() {
    A.generation += 1;
    var gen = A.generation;
    var hash = location.hash.replace(/^#/, "") || "/";
    var cut = hash.indexOf("?");
    var path = cut >= 0 ? hash.slice(0, cut) : hash;
    var params = new URLSearchParams(cut >= 0 ? hash.slice(cut + 1) : "");
    var page = "overview";
    var run;
    if (path === "/" || path === "") {
      run = function () { return P.overview(gen); };
    } else if (path === "/requests") {
      page = "requests";
      run = function () { return P.requests(gen, params); };
    } else if (path.indexOf("/request/") === 0) {
      page = "requests";
      run = function () { return P.request(gen, decodeURIComponent(path.slice(9))); };
    } else if (path === "/refunds") {
      page = "refunds";
      run = function () { return P.refunds(gen); };
    } else if (path === "/links") {
      page = "links";
      run = function () { return P.links(gen); };
    } else if (path === "/unmatched") {
      page = "unmatched";
      run = function () { return P.unmatched(gen, params); };
    } else if (path === "/payouts") {
      page = "payouts";
      run = function () { return P.payouts(gen); };
    } else if (path === "/new") {
      page = "new";
      run = function () { return P.create(gen); };
    } else if (path === "/keys") {
      page = "keys";
      run = function () { return P.keys(gen); };
    } else if (path === "/webhooks") {
      page = "webhooks";
      run = function () { return P.webhooks(gen); };
    } else {
      run = function () { A.setView(A.notice("No such page.", "error")); return Promise.resolve(); };
    }
    document.querySelectorAll("#nav a").forEach(function (a) {
      if (a.getAttribute("data-page") === page) { a.setAttribute("aria-current", "page"); } else { a.removeAttribute("aria-current"); }
    });
    // The first page waits for the list of stores (once per key): it says which store
    // the calls name.
    A.loadStores().then(function (found) {
      A.keys.nav(found.mode); // "Keys" is the operator's (the switcher's) only
      A.webhooks.nav(found.mode); // as "Webhooks"
      if (gen !== A.generation) { return undefined; }
      return run();
    }).catch(function (err) { A.failed(err, gen); });
  }

  /* Another store was chosen: the current page again, on that store. A request belongs to
   * the store it was opened in (another store answers 404), so that page goes back to the
   * list; a list's filters stay, its page (cursor) does not. The count of open unmatched
   * receipts in the navigation was the other store's: hidden until counted again. */
  function switchStore() {
    var hash = location.hash.replace(/^#/, "") || "/";
    var next = null;
    var list = /^[/](requests|unmatched)[?]/.exec(hash);
    A.unmatched.navCount(null);
    if (hash.indexOf("/request/") === 0) {
      next = "#/requests";
    } else if (list) {
      var params = new URLSearchParams(hash.slice(list[0].length));
      if (params.has("cursor")) {
        params.delete("cursor");
        next = "#/" + list[1] + (params.toString() ? "?" + params : "");
      }
    }
    if (next !== null && next !== location.hash) {
      location.hash = next; // hashchange: route()
      return;
    }
    route();
  }

  document.getElementById("logout").addEventListener("click", function () {
    A.storeKey("");
    A.forgetStores();
    A.unmatched.navCount(null);
    route();
  });
  A.route = route;
  A.switchStore = switchStore;
  A.storeKey(A.storedKey());
  window.addEventListener("hashchange", route);
  route();
})();
