// link.ts - the page's address keeps what is shown (the view, its choices,
// the window), so that an address can be bookmarked or sent and opens on
// the same thing: #view=flame&flame-cost=bytes&from_ns=...&to_ns=...

import { standalone } from "./api";
import { getWindow, setWindow } from "./window";

// The choices kept: select elements, by id.
const SELECTS = ["flame-cost", "flame-direction", "timeline-by", "timeline-top", "timeline-rank", "sites-cost", "diff-cost", "calls-metric"];

export function writeLink(view: string): void {
  const q = new URLSearchParams();
  q.set("view", view);
  for (const id of SELECTS) {
    const e = document.getElementById(id) as HTMLSelectElement | null;
    if (e && e.selectedIndex > 0) q.set(id, e.value);
  }
  const w = getWindow();
  if (w) {
    q.set("from_ns", String(w.from_ns));
    q.set("to_ns", String(w.to_ns));
  }
  history.replaceState(null, "", `${location.pathname}${location.search}#${q.toString()}`);
}

// Applies the address's choices to the page; the view to show, or null.
export function readLink(): string | null {
  const q = new URLSearchParams(location.hash.slice(1));
  for (const id of SELECTS) {
    const e = document.getElementById(id) as HTMLSelectElement | null;
    const v = q.get(id);
    if (e && v !== null && [...e.options].some((o) => o.value === v)) e.value = v;
  }
  const from = Number(q.get("from_ns")), to = Number(q.get("to_ns"));
  // a memviz html file has the whole run only
  if (!standalone && q.has("from_ns") && q.has("to_ns") && Number.isFinite(from) && Number.isFinite(to) && to > from && from >= 0)
    setWindow({ from_ns: from, to_ns: to });
  const view = q.get("view");
  return view && document.querySelector(`nav button[data-view="${CSS.escape(view)}"]`) ? view : null;
}
