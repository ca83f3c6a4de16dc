// format.ts - numbers as the CLI prints them (docs/METRICS.md's units).

const UNITS = ["B", "KiB", "MiB", "GiB", "TiB"];

export function bytes(v: number): string {
  let i = 0;
  let x = v;
  while (x >= 1024 && i < UNITS.length - 1) {
    x /= 1024;
    i++;
  }
  return i === 0 ? `${v} B` : `${x.toFixed(x < 10 ? 2 : x < 100 ? 1 : 0)} ${UNITS[i]}`;
}

export function count(v: number): string {
  return v.toLocaleString("en-US");
}

export function duration(ns: number): string {
  if (ns < 1e3) return `${ns} ns`;
  if (ns < 1e6) return `${(ns / 1e3).toFixed(1)} us`;
  if (ns < 1e9) return `${(ns / 1e6).toFixed(1)} ms`;
  return `${(ns / 1e9).toFixed(2)} s`;
}
