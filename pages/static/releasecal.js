/* releasecal: puts the reader's time zone in the URL, runs live countdowns and copy buttons.
   Plain JavaScript, no framework. Every time label is written by the server
   (releasecal.tz); this script never formats a time. The page works without it: native
   zone and UTC always, and the reader's zone when the URL has ?tz=. */
(function () {
  "use strict";
  var KEY = "releasecal.tz";
  var COOKIE = "releasecal_tz";

  function validZone(zone) {
    if (!zone) return false;
    if (/^aoe$/i.test(zone)) return true;
    try { new Intl.DateTimeFormat("en-US", { timeZone: zone }); return true; }
    catch (e) { return false; }
  }

  function readCookie() {
    var m = document.cookie.match(/(?:^|;\s*)releasecal_tz=([^;]*)/);
    if (!m) return "";
    /* Django quotes a value holding "/" ("Europe/Berlin" in double quotes). */
    var value = m[1].replace(/^"(.*)"$/, "$1");
    try { return decodeURIComponent(value); } catch (e) { return value; }
  }

  function stored() {
    try { return window.localStorage.getItem(KEY) || ""; } catch (e) { return ""; }
  }

  function remember(zone) {
    try { window.localStorage.setItem(KEY, zone); } catch (e) { /* private mode */ }
    /* The server reads this cookie as is: keep "/" literal, it is valid in a cookie value. */
    var value = encodeURIComponent(zone).replace(/%2F/gi, "/");
    document.cookie = COOKIE + "=" + value + "; path=/; max-age=31536000; SameSite=Lax";
  }

  function detected() {
    try { return Intl.DateTimeFormat().resolvedOptions().timeZone || ""; } catch (e) { return ""; }
  }

  /* The same page with ?tz=<zone>, other parameters kept, "/" left readable. */
  function zoneUrl(zone) {
    var url = new URL(window.location.href);
    url.searchParams.set("tz", zone);
    url.searchParams.delete("remember");
    url.search = url.searchParams.toString().replace(/%2F/gi, "/");
    return url.toString();
  }

  function initZone() {
    var body = document.body;
    /* Only the schedule pages show a reader's zone (they have the zone box); the server
       explains a bad ?tz= itself, and a ?tz= in the URL is always rendered as given. */
    if (!document.querySelector("[data-zone-picker]") || body.hasAttribute("data-zone-error")) return;
    var serverZone = body.getAttribute("data-viewer-zone") || "";
    var fromUrl = new URL(window.location.href).searchParams.get("tz") || "";
    if (serverZone) {
      /* Mirror the remembered zone once the server has accepted it (the zone form sets
         the cookie; a shared ?tz= link leaves the reader's choice alone). */
      if (readCookie() === serverZone && stored() !== serverZone) {
        try { window.localStorage.setItem(KEY, serverZone); } catch (e) { /* private mode */ }
      }
      body.setAttribute("data-applied-zone", serverZone);
      return;
    }
    if (fromUrl) return;
    /* No zone yet. A cookie here is one the server refused: never send it back. */
    var refused = readCookie();
    var zone = stored();
    if (!validZone(zone) || zone === refused) zone = detected();
    if (!zone || zone === "Etc/Unknown") return; /* native zone and UTC only, as without script */
    remember(zone);
    window.location.replace(zoneUrl(zone));
  }

  function initPickers() {
    document.querySelectorAll("[data-zone-picker]").forEach(function (form) {
      var detect = form.querySelector("[data-zone-detect]");
      var zone = detected();
      if (!detect || !zone || zone === "Etc/Unknown") return;
      detect.hidden = false;
      detect.addEventListener("click", function () {
        remember(zone);
        window.location.assign(zoneUrl(zone));
      });
    });
  }

  function pad(n) { return n < 10 ? "0" + n : String(n); }

  function tick() {
    var now = Date.now();
    document.querySelectorAll("[data-countdown]").forEach(function (el) {
      var target = Date.parse(el.getAttribute("data-countdown"));
      if (isNaN(target)) return;
      var s = Math.max(0, Math.floor((target - now) / 1000));
      if (s === 0) { el.textContent = "now"; return; }
      var d = Math.floor(s / 86400), h = Math.floor((s % 86400) / 3600), m = Math.floor((s % 3600) / 60);
      var text = (d ? d + (d === 1 ? " day " : " days ") : "") + pad(h) + "h " + pad(m) + "m " + pad(s % 60) + "s";
      el.textContent = "in " + text;
    });
  }

  function initCopy() {
    document.querySelectorAll("[data-copy]").forEach(function (button) {
      var input = document.getElementById(button.getAttribute("data-copy"));
      var status = button.closest(".copy-row").querySelector(".copy-status");
      button.hidden = false;
      button.addEventListener("click", function () {
        function done(ok) {
          status.textContent = ok ? "Copied to the clipboard." : "Press Ctrl+C (⌘C) to copy the selected URL.";
        }
        input.focus();
        input.select();
        if (navigator.clipboard && navigator.clipboard.writeText) {
          navigator.clipboard.writeText(input.value).then(function () { done(true); }, function () {
            var ok = false;
            try { ok = document.execCommand("copy"); } catch (e) { ok = false; }
            done(ok);
          });
        } else {
          var ok = false;
          try { ok = document.execCommand("copy"); } catch (e) { ok = false; }
          done(ok);
        }
      });
    });
    document.querySelectorAll(".copy-input").forEach(function (input) {
      input.addEventListener("focus", function () { input.select(); });
    });
  }

  function init() {
    initZone();
    initPickers();
    initCopy();
    if (document.querySelector("[data-countdown]")) { tick(); window.setInterval(tick, 1000); }
  }

  if (document.readyState === "loading") document.addEventListener("DOMContentLoaded", init);
  else init();
})();
