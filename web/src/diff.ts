// diff.ts - the Diff view (memviz ui BASE NEW): the totals side by side,
// the new run's flame graph coloured by how much each calling context
// grew (red) or shrank (blue) against the base run, and the functions
// that grew and shrank most.

import flamegraph from "d3-flame-graph";
import { select } from "d3-selection";
import { DiffDoc, DiffEntry, DiffFlameDoc, get } from "./api";
import * as fmt from "./format";
import { el } from "./dom";

// "change", not "delta": d3-flame-graph reads a field named delta itself.
interface DFrame {
  name: string;
  value: number;
  base: number;
  change: number;
  children: DFrame[];
}

const TOTALS: [string, string, boolean][] = [
  ["peak_bytes", "peak heap", true],
  ["leaked_bytes", "not freed at the end", true],
  ["allocations", "allocation calls", false],
  ["allocated_bytes", "bytes allocated", true],
  ["temporary", "temporary allocations", false],
  ["peak_rss_bytes", "peak RSS", true],
];


function signed(v: number, bytes: boolean): string {
  const s = bytes ? fmt.bytes(Math.abs(v)) : fmt.count(Math.abs(v));
  return v > 0 ? `+${s}` : v < 0 ? `-${s}` : s;
}

function renderTotals(t: HTMLTableElement, doc: DiffDoc): void {
  t.replaceChildren();
  const h = t.createTHead().insertRow();
  for (const c of ["", "base", "new", "change"]) h.append(el("th", undefined, c));
  for (const [key, label, bytes] of TOTALS) {
    const [b, n] = doc.totals[key];
    const show = bytes ? fmt.bytes : fmt.count;
    const tr = t.insertRow();
    tr.dataset.field = key;
    tr.dataset.base = String(b);
    tr.dataset.new = String(n);
    const pct = b ? ` (${n >= b ? "+" : ""}${((100 * (n - b)) / b).toFixed(1)}%)` : "";
    tr.append(el("td", undefined, label), el("td", "num", show(b)), el("td", "num", show(n)), el("td", "num", signed(n - b, bytes) + pct));
  }
}

function renderList(t: HTMLTableElement, list: DiffEntry[], bytes: boolean): void {
  t.replaceChildren();
  const most = list.reduce((m, e) => Math.max(m, Math.abs(e.delta)), 0);
  for (const e of list) {
    const tr = t.insertRow();
    tr.dataset.key = e.key;
    tr.dataset.delta = String(e.delta);
    const td = el("td", "num");
    const bar = el("span", "bar");
    bar.style.width = `${most ? Math.max(1, Math.round((120 * Math.abs(e.delta)) / most)) : 0}px`;
    bar.style.background = e.delta > 0 ? "#c62828" : "#1565c0";
    td.append(bar, " ", signed(e.delta, bytes));
    tr.append(td, el("td", "fn", e.key.split("\n")[0]));
  }
}

function nest(doc: DiffFlameDoc): DFrame | null {
  const all: DFrame[] = [];
  let root: DFrame | null = null;
  for (const [parent, name, , incl, base] of doc.nodes) {
    const f: DFrame = { name, value: incl, base, change: incl - base, children: [] };
    all.push(f);
    if (parent < 0) root = f;
    else all[parent].children.push(f);
  }
  return root;
}

export async function loadDiff(cost: string, totals: HTMLTableElement, flameBox: HTMLElement, details: HTMLElement,
  grew: HTMLTableElement, shrank: HTMLTableElement, status: HTMLElement): Promise<void> {
  const doc = await get<DiffDoc>("/api/diff", { cost });
  const fl = await get<DiffFlameDoc>("/api/diff_flame", { cost });
  renderTotals(totals, doc);
  renderList(grew, doc.functions.grew, fl.bytes);
  renderList(shrank, doc.functions.shrank, fl.bytes);
  status.textContent = `${doc.base} -> ${doc.new}`;
  flameBox.replaceChildren();
  flameBox.dataset.total = String(fl.total);
  flameBox.dataset.baseTotal = String(fl.base_total);
  const root = nest(fl);
  if (!root || !fl.total) return;
  const most = Math.max(1, ...fl.nodes.slice(1).map((n) => Math.abs(n[3] - n[4])));
  const show = (v: number) => (fl.bytes ? fmt.bytes(v) : fmt.count(v));
  const describe = (f: DFrame) => `${f.name}: ${show(f.value)} (base ${show(f.base)}, ${signed(f.change, fl.bytes)})`;
  const chart = flamegraph()
    .width(Math.max(400, flameBox.clientWidth || 1000))
    .cellHeight(18)
    .transitionDuration(0)
    .minFrameSize(1)
    .selfValue(false)
    .label((d: any) => describe(d.data))
    .onHover((d: any) => {
      details.textContent = describe(d.data);
      details.dataset.delta = String(d.data.change);
    })
    .setColorMapper((d: any) => {
      const x = Math.min(1, Math.abs(d.data.change) / most);
      const c = Math.round(235 - 150 * x);
      return d.data.change > 0 ? `rgb(235,${c},${c})` : d.data.change < 0 ? `rgb(${c},${c},235)` : "rgb(225,225,225)";
    });
  select(flameBox).datum(root).call(chart);
}
