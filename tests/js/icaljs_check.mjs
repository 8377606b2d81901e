// Parse an iCal feed with Mozilla's ical.js (the parser inside Thunderbird) and print
// what a client sees as JSON: every event's start/end as the UTC instant ical.js
// computes from the feed's own VTIMEZONEs, or the date of an all-day event.
// Usage: node tests/js/icaljs_check.mjs <file.ics>
import { readFileSync } from "node:fs";
import ICAL from "ical.js";

const text = readFileSync(process.argv[2], "utf8");
const root = new ICAL.Component(ICAL.parse(text));
if (root.name !== "vcalendar") throw new Error(`not a VCALENDAR: ${root.name}`);

const timezones = [];
for (const vtimezone of root.getAllSubcomponents("vtimezone")) {
  const tzid = vtimezone.getFirstPropertyValue("tzid");
  timezones.push(tzid);
  ICAL.TimezoneService.register(vtimezone);
}

function instant(time) {
  if (!time) return null;
  if (time.isDate) return { date: time.toString(), tzid: null };
  const tzid = time.timezone || (time.zone && time.zone.tzid) || null;
  if (time.zone === ICAL.Timezone.localTimezone || tzid === "floating") {
    throw new Error(`floating time ${time.toString()}: its TZID has no VTIMEZONE`);
  }
  const utc = time.convertToZone(ICAL.Timezone.utcTimezone);
  return { utc: utc.toString().replace(/\.\d+/, ""), tzid, local: time.toString() };
}

const events = root.getAllSubcomponents("vevent").map((vevent) => {
  const event = new ICAL.Event(vevent);
  const hasEnd = vevent.hasProperty("dtend");
  return {
    uid: event.uid,
    summary: event.summary,
    status: vevent.getFirstPropertyValue("status"),
    sequence: event.sequence,
    start: instant(event.startDate),
    end: hasEnd ? instant(event.endDate) : null,
    dtstamp: vevent.getFirstPropertyValue("dtstamp").toString(),
    last_modified: vevent.getFirstPropertyValue("last-modified").toString(),
  };
});

const props = {};
for (const prop of root.getAllProperties()) props[prop.name] = String(prop.getFirstValue());
process.stdout.write(JSON.stringify({ props, timezones, events }));
