// calls.ts - the Call graph view (traces recorded with memviz run
// --callgraph): the calling-context tree as a flame graph weighed by time,
// bytes or allocations; the functions, by inclusive time; a function's
// callers and callees with their call sites.

import flamegraph from "d3-flame-graph";
import { select } from "d3-selection";
import { get } from "./api";
import { barCell, el } from "./dom";
import * as fmt from "./format";

interface Alloc {
  allocations: number;
  bytes: number;
  peak_bytes: number;
  leaked_bytes: number;
  temporary: number;
}

interface CgFunction extends Alloc {
  name: string;
  file: string | null;
  line: number;
  calls: number;
  inclusive_ns: number;
  self_ns: number;
  total: Alloc;
}

interface CgSite {
  file: string | null;
  line: number;
  calls: number;
  inlined: boolean;
  via: string | null;
}

interface CgEdge {
  caller: string;
  callee: string;
  calls: number;
  sites: CgSite[];
}

interface CgContext extends Alloc {
  function: string;
  calls: number;
  inclusive_ns: number;
  self_ns: number;
  total: Alloc;
  children: CgContext[];
}

export interface CallGraphDoc {
  callgraph?: boolean;
  calls: number;
  threads: { tid: number; contexts: number; ended: boolean }[];
  functions: CgFunction[];
  edges: CgEdge[];
  contexts: CgContext;
}

interface Frame {
  name: string;
  value: number;
  ctx: CgContext;
  children: Frame[];
}

const METRICS: Record<string, { of: (c: CgContext) => number; show: (v: number) => string }> = {
  time: { of: (c) => c.inclusive_ns, show: fmt.duration },
  bytes: { of: (c) => c.total.bytes, show: fmt.bytes },
  allocations: { of: (c) => c.total.allocations, show: fmt.count },
};

// The context tree as d3-flame-graph's frames, without the contexts that
// weigh nothing by the metric.
function frames(c: CgContext, of: (c: CgContext) => number): Frame {
  const kids = c.children.filter((k) => of(k) > 0).map((k) => frames(k, of));
  return { name: c.function, value: of(c), ctx: c, children: kids };
}

function site(s: CgSite): string {
  const at = s.inlined ? "(inlined)" : s.file ? `${s.file.split("/").pop()}:${s.line}` : "?";
  return `${fmt.count(s.calls)} at ${at}${s.via ? ` (via ${s.via}, not instrumented)` : ""}`;
}

export class CallGraphView {
  private doc: CallGraphDoc | null = null;

  constructor(
    private flame: HTMLElement,
    private details: HTMLElement,
    private table: HTMLTableElement,
    private panel: HTMLElement,
    private status: HTMLElement,
  ) {}

  async load(metric: string): Promise<void> {
    if (!this.doc) this.doc = await get<CallGraphDoc>("/api/callgraph");
    const doc = this.doc;
    if (doc.callgraph === false) {
      this.status.textContent =
        "this trace has no call graph: record it with memviz run --callgraph, " +
        "the program built with -finstrument-functions or -pg";
      this.status.dataset.functions = "0";
      return;
    }
    this.status.dataset.functions = String(doc.functions.length);
    this.status.dataset.edges = String(doc.edges.length);
    this.status.dataset.calls = String(doc.calls);
    this.status.textContent =
      `${fmt.count(doc.calls)} calls of ${doc.functions.length} functions ` +
      `on ${doc.threads.length} thread(s), ${doc.edges.length} edges`;
    this.drawFlame(metric);
    this.drawFunctions();
  }

  private describe(f: Frame, metric: string): string {
    const c = f.ctx;
    return (
      `${c.function}: ${METRICS[metric].show(f.value)}; ${fmt.count(c.calls)} call(s), ` +
      `${fmt.duration(c.inclusive_ns)} (self ${fmt.duration(c.self_ns)}), ` +
      `${fmt.count(c.allocations)} allocation(s) here, ${fmt.count(c.total.allocations)} with callees`
    );
  }

  private drawFlame(metric: string): void {
    const m = METRICS[metric];
    const root = frames(this.doc!.contexts, m.of);
    this.flame.replaceChildren();
    this.flame.dataset.total = String(root.value);
    if (!root.value) {
      this.details.textContent = `nothing to show by ${metric}`;
      return;
    }
    const chart = flamegraph()
      .width(Math.max(400, this.flame.clientWidth || 1000))
      .cellHeight(18)
      .transitionDuration(0)
      .minFrameSize(1)
      .selfValue(false)
      .label((d: any) => this.describe(d.data, metric))
      .onHover((d: any) => {
        this.details.textContent = this.describe(d.data, metric);
      })
      .onClick((d: any) => this.showFunction(d.data.name));
    select(this.flame).datum(root).call(chart);
  }

  private drawFunctions(): void {
    const fns = [...this.doc!.functions].sort((a, b) => b.inclusive_ns - a.inclusive_ns);
    this.table.replaceChildren();
    const head = this.table.createTHead().insertRow();
    for (const h of ["function", "calls", "inclusive", "self", "allocations (+)", "bytes (+)", "where"])
      head.append(el("th", undefined, h));
    const body = this.table.createTBody();
    const most = fns.length ? fns[0].inclusive_ns : 0;
    for (const f of fns) {
      const tr = body.insertRow();
      tr.className = "function";
      tr.dataset.function = f.name;
      tr.dataset.calls = String(f.calls);
      const name = el("td", "fn", f.name);
      name.addEventListener("click", () => this.showFunction(f.name));
      tr.append(
        name,
        el("td", "num", fmt.count(f.calls)),
        barCell(f.inclusive_ns, most, fmt.duration(f.inclusive_ns)),
        el("td", "num", fmt.duration(f.self_ns)),
        el("td", "num", fmt.count(f.total.allocations)),
        el("td", "num", fmt.bytes(f.total.bytes)),
        el("td", undefined, f.file ? `${f.file}:${f.line}` : ""),
      );
    }
  }

  // name's callers and callees, each edge with its sites.
  showFunction(name: string): void {
    const doc = this.doc!;
    this.panel.replaceChildren(el("h3", undefined, name));
    this.panel.hidden = false;
    this.panel.dataset.function = name;
    for (const [title, mine, other] of [
      ["Callers", (e: CgEdge) => e.callee === name, (e: CgEdge) => e.caller],
      ["Callees", (e: CgEdge) => e.caller === name, (e: CgEdge) => e.callee],
    ] as const) {
      const edges = doc.edges.filter(mine);
      this.panel.append(el("h4", undefined, `${title} (${edges.length})`));
      const list = el("ul", title.toLowerCase());
      for (const e of edges) {
        const li = el("li");
        li.dataset.calls = String(e.calls);
        li.dataset.other = other(e);
        const link = el("span", "fn", other(e));
        link.addEventListener("click", () => this.showFunction(other(e)));
        li.append(`${fmt.count(e.calls)} `, link, `: ${e.sites.map(site).join("; ")}`);
        list.append(li);
      }
      this.panel.append(list);
    }
  }
}
