// flame.ts - the flame graph view: the call tree by a chosen cost, drawn by
// d3-flame-graph. The server sends the tree flat and pruned to what can be
// seen (FlameDoc); this view nests it again.

import flamegraph from "d3-flame-graph";
import { select } from "d3-selection";
import { FlameDoc, get } from "./api";
import * as fmt from "./format";
import { windowParams } from "./window";

interface Frame {
  name: string;
  module: string | null;
  file: string | null;
  value: number;
  self: number;
  children: Frame[];
}

export function nest(doc: FlameDoc): Frame | null {
  const frames: Frame[] = [];
  let root: Frame | null = null;
  const str = (i: number) => (i < 0 ? null : doc.strings[i]);
  for (const [parent, name, module, file, incl, self] of doc.nodes) {
    const f: Frame = { name: str(name) ?? "all", module: str(module), file: str(file), value: incl, self, children: [] };
    frames.push(f);
    if (parent < 0) root = f;
    else frames[parent].children.push(f);
  }
  return root;
}

export class FlameView {
  private chart: any = null;
  private doc: FlameDoc | null = null;
  private matches = 0;
  private matchedValue = 0;

  constructor(
    private box: HTMLElement,
    private details: HTMLElement,
    private status: HTMLElement,
  ) {}

  async load(cost: string, direction: string): Promise<void> {
    this.doc = await get<FlameDoc>("/api/flame", { cost, direction, ...windowParams() });
    this.draw();
  }

  private label(value: number): string {
    return this.doc && this.doc.bytes ? fmt.bytes(value) : fmt.count(value);
  }

  private describe(f: Frame): string {
    const total = this.doc ? this.doc.total : 0;
    const pct = total ? ((100 * f.value) / total).toFixed(1) : "0";
    const where = [f.file, f.module].filter((x) => x).join(" in ");
    return `${f.name}: ${this.label(f.value)} (${pct}%), self ${this.label(f.self)}${where ? " - " + where : ""}`;
  }

  private draw(): void {
    const doc = this.doc!;
    const root = nest(doc);
    this.box.replaceChildren();
    const n = doc.nodes.length;
    this.status.dataset.total = String(doc.total);
    this.status.dataset.frames = String(n);
    if (!root || doc.total === 0) {
      this.status.textContent = `nothing to show for ${doc.cost}`;
      this.chart = null;
      return;
    }
    this.status.textContent = `${doc.cost}: ${this.label(doc.total)} in all, ${n} frames`;
    this.chart = flamegraph()
      .width(Math.max(400, this.box.clientWidth || 1000))
      .cellHeight(18)
      .transitionDuration(0)
      .minFrameSize(1)
      .inverted(doc.direction === "bottom-up")
      .selfValue(false)
      .label((d: any) => this.describe(d.data))
      .onHover((d: any) => {
        this.details.textContent = this.describe(d.data);
      })
      .setSearchHandler((results: any[], sum: number) => {
        this.matches = results.length;
        this.matchedValue = sum;
      });
    select(this.box).datum(root).call(this.chart);
  }

  // Highlights the frames whose function contains term; how many there
  // are, and the cost under them (each stack counted once), in the status.
  search(term: string): number {
    this.matches = 0;
    this.matchedValue = 0;
    if (this.chart) {
      if (term) this.chart.search(term);
      else this.chart.clear();
    }
    this.status.dataset.matches = String(this.matches);
    this.status.dataset.matchedValue = String(this.matchedValue);
    if (term && this.doc)
      this.status.textContent = `${this.matches} frames match "${term}": ${this.label(this.matchedValue)}`;
    return this.matches;
  }

  resetZoom(): void {
    if (this.chart) this.chart.resetZoom();
  }
}
