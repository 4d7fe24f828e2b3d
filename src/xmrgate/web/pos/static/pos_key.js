/* xmrgate point of sale: a link that carries the till's key, /pos#key=KEY (`xmrgate dev`
 * prints one). Runs before pos.js (both deferred, in order): the key is kept in this tab's
 * sessionStorage exactly as a typed one (pos.js's "xmrgate.pos.key"), then cut from the
 * address bar and from this history entry, so it is neither shown nor kept in the history.
 * Any other fragment (#sale=<address>) is left to pos.js. */
(function () {
  "use strict";
  var found = /^#key=([^&#]+)$/.exec(location.hash);
  if (!found) { return; }
  try {
    sessionStorage.setItem("xmrgate.pos.key", decodeURIComponent(found[1]).trim());
  } catch (e) { /* a malformed key or storage disabled: pos.js asks for the key */ }
  history.replaceState(null, "", location.pathname + location.search);
})();
