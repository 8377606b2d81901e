// Read VTIMEZONEs with Mozilla's ical.js and print the UTC instant ical.js gives each wall
// time in the zone, as it reads DTSTART;TZID=<tzid>:<wall> in a feed, for comparison with
// zoneinfo (tests/feeds/test_vtimezone.py).
// Input (stdin, JSON): {"<tzid>": {"ics": "<VCALENDAR with the VTIMEZONE>", "walls": ["2024-11-03T02:30:00", ...]}}
// Output (stdout, JSON): {"<tzid>": ["2024-11-03T10:30:00Z", ...]}, in the order given.
import { readFileSync } from "node:fs";
import ICAL from "ical.js";

const input = JSON.parse(readFileSync(0, "utf8"));
const out = {};
for (const [tzid, { ics, walls }] of Object.entries(input)) {
  const root = new ICAL.Component(ICAL.parse(ics));
  const vtimezone = root.getAllSubcomponents("vtimezone").find((c) => c.getFirstPropertyValue("tzid") === tzid);
  if (!vtimezone) throw new Error(`no VTIMEZONE ${tzid}`);
  const zone = new ICAL.Timezone(vtimezone);
  out[tzid] = walls.map((text) => {
    const [date, time] = text.split("T");
    const [year, month, day] = date.split("-").map(Number);
    const [hour, minute, second] = time.split(":").map(Number);
    const wall = ICAL.Time.fromData({ year, month, day, hour, minute, second, isDate: false }, zone);
    return wall.convertToZone(ICAL.Timezone.utcTimezone).toString();
  });
}
process.stdout.write(JSON.stringify(out));
