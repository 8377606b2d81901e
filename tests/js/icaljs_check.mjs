// Parse iCal feeds with Mozilla's ical.js (the parser inside Thunderbird) and print
// what a client sees as JSON: every event's start/end as the UTC instant ical.js
// computes from the feed's own VTIMEZONEs, or the date of an all-day event.
// Usage: node tests/js/icaljs_check.mjs <file.ics>            -> one result
//        node tests/js/icaljs_check.mjs <a.ics> <b.ics> ...   -> {"<path>": result, ...}
// With several files, one process reads them all and ical.js's TimezoneService is
// shared between them, as in a client subscribed to several feeds: a feed whose
// VTIMEZONE differed from another's under the same TZID would show.
import { readFileSync } from "node:fs";
import ICAL from "ical.js";

function readFeed(path) {
  const text = readFileSync(path, "utf8");
  const root = new ICAL.Component(ICAL.parse(text));
  if (root.name !== "vcalendar") throw new Error(`${path}: not a VCALENDAR: ${root.name}`);

  const timezones = [];
  for (const vtimezone of root.getAllSubcomponents("vtimezone")) {
    const tzid = vtimezone.getFirstPropertyValue("tzid");
    timezones.push(tzid);
    if (!ICAL.TimezoneService.has(tzid)) ICAL.TimezoneService.register(vtimezone);
  }

  function instant(time) {
    if (!time) return null;
    if (time.isDate) return { date: time.toString(), tzid: null };
    const tzid = time.timezone || (time.zone && time.zone.tzid) || null;
    if (time.zone === ICAL.Timezone.localTimezone || tzid === "floating") {
      throw new Error(`${path}: floating time ${time.toString()}: its TZID has no VTIMEZONE`);
    }
    const utc = time.convertToZone(ICAL.Timezone.utcTimezone);
    return { utc: utc.toString().replace(/\.\d+/, ""), tzid, local: time.toString() };
  }

  const events = root.getAllSubcomponents("vevent").map((vevent) => {
    const event = new ICAL.Event(vevent);
    const hasEnd = vevent.hasProperty("dtend") || vevent.hasProperty("duration");
    return {
      uid: event.uid,
      summary: event.summary,
      status: vevent.getFirstPropertyValue("status"),
      sequence: event.sequence,
      start: instant(event.startDate),
      end: hasEnd ? instant(event.endDate) : null,
      dtstamp: vevent.getFirstPropertyValue("dtstamp").toString(),
      last_modified: vevent.getFirstPropertyValue("last-modified").toString(),
      alarms: vevent.getAllSubcomponents("valarm").map((valarm) => ({
        action: valarm.getFirstPropertyValue("action"),
        trigger: valarm.getFirstPropertyValue("trigger").toString(),
        seconds: valarm.getFirstPropertyValue("trigger").toSeconds(),
      })),
    };
  });

  const props = {};
  for (const prop of root.getAllProperties()) props[prop.name] = String(prop.getFirstValue());
  return { props, timezones, events };
}

const paths = process.argv.slice(2);
if (paths.length === 1) {
  process.stdout.write(JSON.stringify(readFeed(paths[0])));
} else {
  const all = {};
  for (const path of paths) all[path] = readFeed(path);
  process.stdout.write(JSON.stringify(all));
}
