/* releasecal: the reader's time zone, live countdowns and copy buttons.
   Plain JavaScript, no framework. The page works without it: the server has already
   written every time in its own zone and in UTC. Zone labels here come from the
   browser's own Intl data (timeZoneName: "short"); nothing is hand-written. */
(function () {
  "use strict";
  var KEY = "releasecal.tz";
  var COOKIE = "releasecal_tz";
  var AOE = { name: "AoE", iana: "Etc/GMT+12" };

  function ianaOf(zone) { return zone === AOE.name ? AOE.iana : zone; }

  function validZone(zone) {
    if (!zone) return false;
    try { new Intl.DateTimeFormat("en-US", { timeZone: ianaOf(zone) }); return true; }
    catch (e) { return false; }
  }

  function readCookie() {
    var m = document.cookie.match(/(?:^|;\s*)releasecal_tz=([^;]*)/);
    return m ? decodeURIComponent(m[1]) : "";
  }

  function stored() {
    var value = "";
    try { value = window.localStorage.getItem(KEY) || ""; } catch (e) { value = ""; }
    return value || readCookie();
  }

  function remember(zone) {
    try { window.localStorage.setItem(KEY, zone); } catch (e) { /* private mode */ }
    document.cookie = COOKIE + "=" + encodeURIComponent(zone) + "; path=/; max-age=31536000; SameSite=Lax";
  }

  function forget() {
    try { window.localStorage.removeItem(KEY); } catch (e) { /* private mode */ }
    document.cookie = COOKIE + "=; path=/; max-age=0; SameSite=Lax";
  }

  function detected() {
    try { return Intl.DateTimeFormat().resolvedOptions().timeZone || "UTC"; } catch (e) { return "UTC"; }
  }

  var formatters = {};
  function formatter(locale, zone, options) {
    var key = locale + "|" + zone + "|" + (options ? "label" : "clock");
    if (!formatters[key]) {
      formatters[key] = new Intl.DateTimeFormat(locale, options || {
        timeZone: ianaOf(zone), hourCycle: "h23", hour: "2-digit", minute: "2-digit",
        weekday: "long", day: "numeric", month: "long", year: "numeric"
      });
    }
    return formatters[key];
  }

  function parts(f, date) {
    var p = {};
    f.formatToParts(date).forEach(function (part) { p[part.type] = part.value; });
    return p;
  }

  /* The browser's own short name of the zone at that instant. English locales differ in
     which names they know (en-US: EST; en-GB: CET, BST; en-IN: IST; en-AU: AEST), so
     take the first that has a name and otherwise Intl's offset form ("GMT+9"). */
  var LABEL_LOCALES = ["en-US", "en-GB", "en-IN", "en-AU"];
  function zoneLabel(date, zone) {
    var fallback = "";
    for (var i = 0; i < LABEL_LOCALES.length; i++) {
      var f = formatter(LABEL_LOCALES[i], zone, { timeZone: ianaOf(zone), timeZoneName: "short" });
      var label = parts(f, date).timeZoneName || "";
      if (/^[A-Za-z]+$/.test(label)) return label;
      if (!fallback) fallback = label;
    }
    return fallback;
  }

  /* "19:00 PDT Friday 26 July 2024": the server's shape, with the browser's labels. */
  function format(date, zone) {
    var p = parts(formatter("en-US", zone), date);
    var hour = p.hour === "24" ? "00" : p.hour;
    return hour + ":" + p.minute + " " + zoneLabel(date, zone) + " " + p.weekday + " " + p.day + " " + p.month + " " + p.year;
  }

  function setUrlZone(zone) {
    if (!window.history || !window.history.replaceState) return;
    var url = new URL(window.location.href);
    if (url.searchParams.get("tz") === zone) return;
    url.searchParams.set("tz", zone);
    url.searchParams.delete("remember");
    /* Keep "Asia/Tokyo" readable in the address bar rather than "Asia%2FTokyo". */
    url.search = url.searchParams.toString().replace(/%2F/gi, "/");
    window.history.replaceState(null, "", url.toString());
  }

  function applyZone(zone) {
    document.querySelectorAll("time[data-viewer]").forEach(function (el) {
      var when = new Date(el.getAttribute("datetime"));
      if (!isNaN(when.getTime())) el.textContent = format(when, zone);
    });
    document.querySelectorAll("[data-viewer-slot]").forEach(function (el) { el.hidden = false; });
    document.querySelectorAll("[data-viewer-zone-name]").forEach(function (el) { el.textContent = zone; });
    document.querySelectorAll("td.t-viewer").forEach(function (el) { el.setAttribute("data-label", "Your zone (" + zone + ")"); });
    document.querySelectorAll("[data-zone-input]").forEach(function (el) { el.value = zone; });
    document.body.setAttribute("data-applied-zone", zone);
  }

  function initZone() {
    var body = document.body;
    if (body.hasAttribute("data-zone-error")) return; /* the server explains a bad ?tz= */
    var fromUrl = new URL(window.location.href).searchParams.get("tz");
    var serverZone = body.getAttribute("data-viewer-zone") || "";
    var zone = (fromUrl && serverZone) || (validZone(stored()) ? stored() : "") || detected();
    if (zone !== serverZone) applyZone(zone);
    else body.setAttribute("data-applied-zone", zone);
    setUrlZone(zone);
  }

  function initPickers() {
    document.querySelectorAll("[data-zone-picker]").forEach(function (form) {
      var input = form.querySelector("[data-zone-input]");
      var help = form.querySelector(".hint");
      var detect = form.querySelector("[data-zone-detect]");
      if (detect) {
        detect.hidden = false;
        detect.addEventListener("click", function () {
          forget();
          var zone = detected();
          applyZone(zone);
          setUrlZone(zone);
          if (help) help.textContent = "Using your browser’s zone, " + zone + ".";
        });
      }
      form.addEventListener("submit", function (event) {
        var zone = (input.value || "").trim();
        if (/^aoe$/i.test(zone)) zone = AOE.name;
        if (!validZone(zone)) return; /* let the server explain what is wrong */
        event.preventDefault();
        remember(zone);
        applyZone(zone);
        setUrlZone(zone);
        document.body.removeAttribute("data-zone-error");
        if (help) help.textContent = "Showing times in " + zone + ". Remembered on this device.";
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
