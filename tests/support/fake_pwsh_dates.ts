// Date formatting for the stand-in's Get-Date: .NET format strings (`-Format`, invariant culture)
// and the Unix-style `-UFormat` subset. Only what the tests need; see tests/support/README.md.

import { offsetString, PSDateTime } from "./fake_pwsh_model.ts";

const dayNames = ["Sunday", "Monday", "Tuesday", "Wednesday", "Thursday", "Friday", "Saturday"];
const monthNames = [
  "January",
  "February",
  "March",
  "April",
  "May",
  "June",
  "July",
  "August",
  "September",
  "October",
  "November",
  "December",
];

/** The calendar fields of a DateTime in its own Kind (Local or Utc). */
interface Fields {
  year: number;
  month: number;
  day: number;
  weekday: number;
  hour: number;
  minute: number;
  second: number;
  millisecond: number;
  /** Minutes east of UTC. */
  offset: number;
}

function fieldsOf(value: PSDateTime): Fields {
  const d = value.date;
  if (value.utc) {
    return {
      year: d.getUTCFullYear(),
      month: d.getUTCMonth() + 1,
      day: d.getUTCDate(),
      weekday: d.getUTCDay(),
      hour: d.getUTCHours(),
      minute: d.getUTCMinutes(),
      second: d.getUTCSeconds(),
      millisecond: d.getUTCMilliseconds(),
      offset: 0,
    };
  }
  return {
    year: d.getFullYear(),
    month: d.getMonth() + 1,
    day: d.getDate(),
    weekday: d.getDay(),
    hour: d.getHours(),
    minute: d.getMinutes(),
    second: d.getSeconds(),
    millisecond: d.getMilliseconds(),
    offset: -d.getTimezoneOffset(),
  };
}

function pad(value: number, width: number): string {
  return String(Math.abs(value)).padStart(width, "0");
}

/** .NET standard format strings (invariant culture) expanded to custom ones. */
const standardFormats: Record<string, string> = {
  d: "MM/dd/yyyy",
  D: "dddd, dd MMMM yyyy",
  f: "dddd, dd MMMM yyyy HH:mm",
  F: "dddd, dd MMMM yyyy HH:mm:ss",
  g: "MM/dd/yyyy HH:mm",
  G: "MM/dd/yyyy HH:mm:ss",
  m: "MMMM dd",
  M: "MMMM dd",
  s: "yyyy'-'MM'-'dd'T'HH':'mm':'ss",
  t: "HH:mm",
  T: "HH:mm:ss",
  u: "yyyy'-'MM'-'dd HH':'mm':'ss'Z'",
  y: "yyyy MMMM",
  Y: "yyyy MMMM",
};

/** DateTime.ToString(format, InvariantCulture). */
export function formatDotNet(value: PSDateTime, format: string): string {
  if (format === "o" || format === "O") {
    // Round-trip: 7 fraction digits, then Z (Utc) or the offset (Local).
    return formatCustom(value, "yyyy'-'MM'-'dd'T'HH':'mm':'ss'.'fffffffK");
  }
  if (format === "r" || format === "R") {
    const utc = new PSDateTime(value.date, true);
    return formatCustom(utc, "ddd, dd MMM yyyy HH':'mm':'ss 'GMT'");
  }
  const standard = format.length === 1 ? standardFormats[format] : undefined;
  return formatCustom(value, standard ?? format);
}

function formatCustom(value: PSDateTime, format: string): string {
  const f = fieldsOf(value);
  let out = "";
  let i = 0;
  while (i < format.length) {
    const ch = format[i] as string;
    if (ch === "'" || ch === '"') {
      const end = format.indexOf(ch, i + 1);
      out += format.slice(i + 1, end === -1 ? format.length : end);
      i = end === -1 ? format.length : end + 1;
      continue;
    }
    if (ch === "\\" && i + 1 < format.length) {
      out += format[i + 1];
      i += 2;
      continue;
    }
    if (ch === "%" && i + 1 < format.length) {
      i += 1;
      continue;
    }
    let run = 1;
    while (format[i + run] === ch) run++;
    out += formatToken(ch, run, f, value.utc);
    i += run;
  }
  return out;
}

function formatToken(ch: string, run: number, f: Fields, utc: boolean): string {
  const hour12 = f.hour % 12 === 0 ? 12 : f.hour % 12;
  switch (ch) {
    case "y":
      return run === 2 ? pad(f.year % 100, 2) : run === 1 ? String(f.year % 100) : pad(f.year, run);
    case "M":
      return run >= 4
        ? monthNames[f.month - 1] as string
        : run === 3
        ? (monthNames[f.month - 1] as string).slice(0, 3)
        : pad(f.month, run);
    case "d":
      return run >= 4
        ? dayNames[f.weekday] as string
        : run === 3
        ? (dayNames[f.weekday] as string).slice(0, 3)
        : pad(f.day, run);
    case "H":
      return pad(f.hour, Math.min(run, 2));
    case "h":
      return pad(hour12, Math.min(run, 2));
    case "m":
      return pad(f.minute, Math.min(run, 2));
    case "s":
      return pad(f.second, Math.min(run, 2));
    case "f":
    case "F": {
      const digits = (pad(f.millisecond, 3) + "0000").slice(0, Math.min(run, 7));
      return ch === "F" ? digits.replace(/0+$/, "") : digits;
    }
    case "t":
      return run === 1 ? (f.hour < 12 ? "A" : "P") : f.hour < 12 ? "AM" : "PM";
    case "z": {
      const sign = f.offset < 0 ? "-" : "+";
      const hours = Math.floor(Math.abs(f.offset) / 60);
      if (run === 1) return `${sign}${hours}`;
      if (run === 2) return `${sign}${pad(hours, 2)}`;
      return offsetString(f.offset);
    }
    case "K":
      return utc ? "Z" : offsetString(f.offset);
    case ":":
    case "/":
      return ch.repeat(run);
    default:
      return ch.repeat(run);
  }
}

/** Get-Date -UFormat (the common specifiers of Get-Date's UFormat table). */
export function formatUnix(value: PSDateTime, format: string): string {
  const f = fieldsOf(value);
  const epochSeconds = Math.floor(value.date.getTime() / 1000);
  const startOfYear = Date.UTC(f.year, 0, 1);
  const dayOfYear = Math.floor((Date.UTC(f.year, f.month - 1, f.day) - startOfYear) / 86_400_000) +
    1;
  const hour12 = f.hour % 12 === 0 ? 12 : f.hour % 12;
  const table: Record<string, () => string> = {
    a: () => (dayNames[f.weekday] as string).slice(0, 3),
    A: () => dayNames[f.weekday] as string,
    b: () => (monthNames[f.month - 1] as string).slice(0, 3),
    B: () => monthNames[f.month - 1] as string,
    C: () => pad(Math.floor(f.year / 100), 2),
    d: () => pad(f.day, 2),
    D: () => `${pad(f.month, 2)}/${pad(f.day, 2)}/${pad(f.year % 100, 2)}`,
    e: () => String(f.day).padStart(2, " "),
    F: () => `${pad(f.year, 4)}-${pad(f.month, 2)}-${pad(f.day, 2)}`,
    h: () => (monthNames[f.month - 1] as string).slice(0, 3),
    H: () => pad(f.hour, 2),
    I: () => pad(hour12, 2),
    j: () => pad(dayOfYear, 3),
    k: () => String(f.hour).padStart(2, " "),
    l: () => String(hour12).padStart(2, " "),
    m: () => pad(f.month, 2),
    M: () => pad(f.minute, 2),
    n: () => "\n",
    p: () => (f.hour < 12 ? "AM" : "PM"),
    R: () => `${pad(f.hour, 2)}:${pad(f.minute, 2)}`,
    s: () => String(epochSeconds),
    S: () => pad(f.second, 2),
    t: () => "\t",
    T: () => `${pad(f.hour, 2)}:${pad(f.minute, 2)}:${pad(f.second, 2)}`,
    u: () => String(f.weekday === 0 ? 7 : f.weekday),
    w: () => String(f.weekday),
    y: () => pad(f.year % 100, 2),
    Y: () => pad(f.year, 4),
    Z: () => `${f.offset < 0 ? "-" : "+"}${pad(Math.floor(Math.abs(f.offset) / 60), 2)}`,
    "%": () => "%",
  };
  let out = "";
  for (let i = 0; i < format.length; i++) {
    const ch = format[i] as string;
    const next = format[i + 1];
    const handler = ch === "%" && next !== undefined ? table[next] : undefined;
    if (handler) {
      out += handler();
      i++;
    } else {
      out += ch;
    }
  }
  return out;
}
