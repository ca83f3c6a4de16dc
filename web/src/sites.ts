// sites.ts - the Sites view: the top allocation sites by a cost (a bar
// each, a click shows the stack), one function's callers and callees,
// and the allocations by size (a uPlot bar chart), by allocator function
// and by thread.

import uPlot from "uplot";
import { BreakdownDoc, FlameDoc, FunctionDoc, get, SitesDoc, standalone } from "./api";
import * as fmt from "./format";
import { windowParams } from "./window";
import { barCell, el } from "./dom";



function where(file: string | null, line: number, module: string | null): string {
  const mod = module ? module.split("/").pop() : "";
  return `${file ? `${file}:${line}` : ""}${mod ? ` [${mod}]` : ""}`;
}

export class SitesView {
  constructor(
    private table: HTMLTableElement,
    private panel: HTMLElement,
    private status: HTMLElement,
  ) {}

  private fnLink(name: string, cost: string): HTMLElement {
    const a = el("span", "fn", name);
    a.addEventListener("click", (e) => {
      e.stopPropagation();
      delete document.body.dataset.ready;
      this.showFunction(name, cost).then(
        () => (document.body.dataset.ready = "sites"),
        (err) => console.error(String(err)),
      );
    });
    return a;
  }

  async load(cost: string): Promise<void> {
    const doc = await get<SitesDoc>("/api/sites", { cost, top: "50", ...windowParams() });
    const show = doc.bytes ? fmt.bytes : fmt.count;
    this.table.replaceChildren();
    const head = this.table.createTHead().insertRow();
    for (const h of ["#", doc.cost, "calls", "allocated by", "called from", "where"]) head.append(el("th", undefined, h));
    const body = this.table.createTBody();
    const most = doc.sites.length ? doc.sites[0].cost : 0;
    doc.sites.forEach((s, i) => {
      const tr = body.insertRow();
      tr.className = "site";
      tr.dataset.stack = String(s.stack_id);
      tr.append(el("td", "num", String(i + 1)), barCell(s.cost, most, show(s.cost)), el("td", "num", fmt.count(s.allocations)));
      const top = s.frames[0] ?? ["??", null, 0, null];
      const fn = el("td");
      fn.append(this.fnLink(top[0], doc.cost));
      fn.dataset.function = top[0];
      const caller = el("td");
      if (s.frames[1]) caller.append(this.fnLink(s.frames[1][0], doc.cost));
      tr.append(fn, caller, el("td", undefined, where(top[1], top[2], top[3])));
      let open: HTMLTableRowElement | null = null;
      tr.addEventListener("click", () => {
        if (open) {
          open.remove();
          open = null;
          return;
        }
        open = el("tr", "stack");
        const td = el("td");
        td.colSpan = 6;
        for (const f of s.frames) {
          const line = el("div");
          line.append(this.fnLink(f[0], doc.cost), " ", where(f[1], f[2], f[3]));
          td.append(line);
        }
        open.append(el("td"), td);
        tr.after(open);
      });
    });
    this.status.textContent = `${doc.sites.length} of ${fmt.count(doc.sites_with_cost)} sites, ${show(doc.total)} in all`;
    this.status.dataset.total = String(doc.total);
  }

  async showFunction(name: string, cost: string): Promise<void> {
    const f = standalone
      ? functionOfFlame(await get<FlameDoc>("/api/flame", { cost, direction: "top-down" }), name)
      : await get<FunctionDoc>("/api/function", { name, cost, ...windowParams() });
    const bytes = ["peak", "leaked", "bytes"].includes(f.cost);
    const show = bytes ? fmt.bytes : fmt.count;
    this.panel.hidden = false;
    this.panel.replaceChildren();
    const title = el("div");
    title.append(el("b", undefined, f.function), ` - ${f.cost}: ${show(f.inclusive)} inclusive, ${show(f.self)} self, in ${f.contexts} calling contexts`);
    this.panel.dataset.function = f.function;
    this.panel.dataset.inclusive = String(f.inclusive);
    this.panel.dataset.self = String(f.self);
    const row = el("div", "row");
    for (const [label, list] of [["callers", f.callers], ["callees", f.callees]] as [string, [string, number][]][]) {
      const box = el("div");
      box.append(el("h3", undefined, label));
      const t = el("table", "bars");
      t.dataset.list = label;
      const most = list.length ? list[0][1] : 0;
      for (const [fn, v] of list) {
        const tr = t.insertRow();
        tr.append(barCell(v, most, show(v)));
        const td = el("td");
        td.append(fn.startsWith("(") ? el("span", undefined, fn) : this.fnLink(fn, cost));
        tr.append(td);
      }
      box.append(t);
      row.append(box);
    }
    this.panel.append(title, row);
  }
}

export function renderBreakdown(sizes: HTMLElement, allocators: HTMLTableElement, threads: HTMLTableElement, doc: BreakdownDoc): void {
  // sizes: one bar per power of two, allocation calls
  sizes.replaceChildren();
  const xs = doc.sizes.map((_, i) => i);
  const labels = doc.sizes.map((b) => (b.max === b.min ? fmt.bytes(b.min) : `${fmt.bytes(b.min)}-${fmt.bytes(b.max)}`));
  sizes.dataset.buckets = String(doc.sizes.length);
  sizes.dataset.allocations = String(doc.sizes.reduce((a, b) => a + b.allocations, 0));
  new uPlot(
    {
      width: 520,
      height: 260,
      scales: { x: { time: false, range: [-0.5, Math.max(0.5, xs.length - 0.5)] } },
      axes: [
        { values: (_u, ticks) => ticks.map((t) => (Number.isInteger(t) ? labels[t] ?? "" : "")), rotate: -30, size: 70 },
        { values: (_u, ticks) => ticks.map((v) => fmt.count(v)), size: 70 },
      ],
      series: [
        { label: "size", value: (_u, v) => (v == null ? "" : labels[v] ?? "") },
        { label: "allocations", stroke: "#1565c0", fill: "#1565c0aa", paths: uPlot.paths.bars!({ size: [0.8] }), points: { show: false }, value: (_u, v) => (v == null ? "" : fmt.count(v)) },
      ],
    },
    [xs, doc.sizes.map((b) => b.allocations)],
    sizes,
  );
  allocators.replaceChildren();
  const most = doc.allocators.reduce((m, a) => Math.max(m, a.allocations), 0);
  for (const a of doc.allocators) {
    const tr = allocators.insertRow();
    tr.dataset.function = a.function;
    tr.append(el("td", "fn", a.function), barCell(a.allocations, most, fmt.count(a.allocations)));
  }
  threads.replaceChildren();
  const h = threads.createTHead().insertRow();
  for (const t of ["thread", "allocations", "allocated", "at peak", "leaked"]) h.append(el("th", undefined, t));
  const mostT = doc.threads.reduce((m, t) => Math.max(m, t.allocated_bytes), 0);
  for (const t of doc.threads) {
    const tr = threads.insertRow();
    tr.append(el("td", undefined, `${t.tid} ${t.name ?? ""}`), el("td", "num", fmt.count(t.allocations)),
      barCell(t.allocated_bytes, mostT, fmt.bytes(t.allocated_bytes)), el("td", "num", fmt.bytes(t.at_peak_bytes)),
      el("td", "num", fmt.bytes(t.leaked_bytes)));
  }
}

export async function loadBreakdown(sizes: HTMLElement, allocators: HTMLTableElement, threads: HTMLTableElement): Promise<void> {
  renderBreakdown(sizes, allocators, threads, await get<BreakdownDoc>("/api/breakdown", windowParams()));
}

// A memviz html file has no server to ask: the same document, from the
// top-down flame graph the file carries (whose smallest frames may have
// been left out: then the numbers are those of the frames kept).
export function functionOfFlame(doc: FlameDoc, name: string): FunctionDoc {
  const fn = (i: number) => (i < 0 ? null : doc.strings[doc.nodes[i][1]] ?? null);
  const callers = new Map<string, number>();
  const callees = new Map<string, number>();
  let inclusive = 0;
  let self = 0;
  let contexts = 0;
  const add = (m: Map<string, number>, k: string, v: number) => m.set(k, (m.get(k) ?? 0) + v);
  doc.nodes.forEach(([parent, , , , incl, own], i) => {
    if (i === 0 || fn(i) !== name) {
      if (i > 0 && fn(parent) === name && incl) add(callees, fn(i) ?? "??", incl);
      return;
    }
    contexts++;
    self += own;
    let outer = false;
    for (let a = parent; a > 0; a = doc.nodes[a][0]) if (fn(a) === name) outer = true;
    if (!outer) inclusive += incl;
    if (incl) add(callers, parent > 0 ? fn(parent) ?? "??" : "(the program's start)", incl);
  });
  const sorted = (m: Map<string, number>) => [...m.entries()].sort((a, b) => b[1] - a[1] || (a[0] < b[0] ? -1 : 1));
  return { function: name, cost: doc.cost, total: doc.total, contexts, inclusive, self, callers: sorted(callers), callees: sorted(callees) };
}

interface LifetimesDoc {
  lifetimes: string[];
  sizes: [number, number[], number[]][];
}

// The density of blocks over size classes and lifetime classes: a table
// whose cells are darker the more blocks they hold (log scale).
export async function loadLifetimes(t: HTMLTableElement): Promise<void> {
  const doc = await get<LifetimesDoc>("/api/lifetimes");
  t.replaceChildren();
  const h = t.createTHead().insertRow();
  h.append(el("th", undefined, "size \\ lifetime"));
  for (const l of doc.lifetimes) h.append(el("th", undefined, l));
  const most = Math.max(1, ...doc.sizes.flatMap(([, c]) => c));
  let total = 0;
  let never = 0;
  for (const [min, counts, bytes] of doc.sizes) {
    const tr = t.insertRow();
    tr.append(el("th", undefined, `${fmt.bytes(min)}+`));
    counts.forEach((n, i) => {
      const td = el("td", undefined, n ? fmt.count(n) : "");
      const x = n ? Math.log(1 + n) / Math.log(1 + most) : 0;
      td.style.background = `rgba(21,101,192,${(0.08 + 0.8 * x).toFixed(2)})`;
      if (!n) td.style.background = "";
      td.style.color = x > 0.55 ? "white" : "";
      td.title = `${fmt.count(n)} blocks, ${fmt.bytes(bytes[i])}`;
      tr.append(td);
      total += n;
      if (i === counts.length - 1) never += n;
    });
  }
  t.dataset.total = String(total);
  t.dataset.never = String(never);
}
