// window.ts - the time brush: a stretch of the run chosen on the heap over
// time (drag across it) that the summary and the flame graph then show
// alone; the server replays that window (from_ns, to_ns).

export interface Window {
  from_ns: number;
  to_ns: number;
}

let current: Window | null = null;
const listeners: (() => void)[] = [];

export function getWindow(): Window | null {
  return current;
}

// The query parameters for the current window ({} for the whole run).
export function windowParams(): Record<string, string> {
  return current ? { from_ns: String(current.from_ns), to_ns: String(current.to_ns) } : {};
}

export function setWindow(w: Window | null): void {
  current = w;
  for (const f of listeners) f();
}

export function onWindowChange(f: () => void): void {
  listeners.push(f);
}
