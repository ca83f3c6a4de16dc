// heat.ts - the Heat map view (a trace recorded with --addresses): the
// address cells the run used, top to bottom, against slices of the run,
// left to right; each square as dark as the allocations made there in
// that slice, or the live bytes there at its end (on a logarithmic scale:
// a few hot cells would otherwise hide the rest). Reuse shows as rows
// that stay hot, fragmentation as rows that stay half full, a realloc's
// move as heat that jumps rows. The pointer names the cell, the slice
// and the value. Drawn on a canvas.

import { get } from "./api";
import * as fmt from "./format";

interface HeatDoc {
  end_ns: number;
  times: number[];
  cell_bytes: number;
  cells: number;
  regions: [number, number][];
  allocations: number[][];
  live_bytes: number[][];
}

export const HEAT_SLICES = 200;
export const HEAT_CELLS = 256;

export class HeatMapView {
  private doc: HeatDoc | null = null;

  constructor(
    private canvas: HTMLCanvasElement,
    private by: HTMLSelectElement,
    private details: HTMLElement,
    private status: HTMLElement,
    private axis: HTMLElement,
    private regions: HTMLElement,
  ) {
    canvas.addEventListener("mousemove", (e) => this.hover(e));
    by.addEventListener("change", () => this.draw());
  }

  async load(): Promise<void> {
    const { addresses } = await get<{ addresses: boolean }>("/api/snapshots");
    if (!addresses) {
      this.status.textContent = "this trace has no block addresses: record it with memviz run --addresses";
      return;
    }
    try {
      this.doc = await get<HeatDoc>("/api/heatmap", { slices: String(HEAT_SLICES), cells: String(HEAT_CELLS) });
    } catch (err) {
      this.status.textContent = `the heat map cannot be drawn: ${err}`;
      return;
    }
    this.draw();
  }

  private grid(): number[][] {
    return this.by.value === "live" ? this.doc!.live_bytes : this.doc!.allocations;
  }

  private draw(): void {
    const doc = this.doc;
    if (!doc) return;
    const g = this.grid();
    const w = Math.max(1, Math.floor(this.canvas.width / doc.times.length));
    const h = Math.max(2, Math.floor(512 / Math.max(1, doc.cells)));
    this.canvas.height = Math.max(h, doc.cells * h);
    const ctx = this.canvas.getContext("2d")!;
    ctx.fillStyle = "#ffffff";
    ctx.fillRect(0, 0, this.canvas.width, this.canvas.height);
    let max = 0;
    for (const row of g) for (const v of row) max = Math.max(max, v);
    const scale = Math.log1p(max) || 1;
    let hot = 0;
    ctx.fillStyle = "#b71c1c";
    g.forEach((row, k) =>
      row.forEach((v, c) => {
        if (!v) return;
        hot++;
        ctx.globalAlpha = 0.1 + (0.9 * Math.log1p(v)) / scale;
        ctx.fillRect(k * w, c * h, w, h);
      }));
    ctx.globalAlpha = 1;
    ctx.fillStyle = "#000000"; // a region boundary: a line above its first cell
    for (const [, first] of doc.regions.slice(1)) ctx.fillRect(0, first * h, doc.times.length * w, 1);
    const [a, b, c] = this.axis.children;
    a.textContent = "0";
    b.textContent = fmt.duration(doc.end_ns / 2);
    c.textContent = fmt.duration(doc.end_ns);
    // each region's first address and its rows, top to bottom
    this.regions.textContent = "regions: " + doc.regions.map(([addr, first], i) => {
      const last = (i + 1 < doc.regions.length ? doc.regions[i + 1][1] : doc.cells) - 1;
      return `0x${addr.toString(16)} (rows ${first}-${last})`;
    }).join(", ");
    this.canvas.dataset.hot = String(hot);
    this.canvas.dataset.max = String(max);
    this.status.textContent = `${doc.cells} cells of ${fmt.bytes(doc.cell_bytes)} in ${doc.regions.length} regions, ` +
      `${doc.times.length} slices of ${fmt.duration(doc.end_ns / doc.times.length)}; darkest: ` +
      (this.by.value === "live" ? fmt.bytes(max) : `${fmt.count(max)} allocations`);
  }

  // The address where cell c begins.
  private address(c: number): number {
    const r = this.doc!.regions;
    let i = 0;
    while (i + 1 < r.length && r[i + 1][1] <= c) i++;
    return r[i][0] + (c - r[i][1]) * this.doc!.cell_bytes;
  }

  private hover(e: MouseEvent): void {
    const doc = this.doc;
    if (!doc) return;
    const w = Math.max(1, Math.floor(this.canvas.width / doc.times.length));
    const h = Math.max(2, Math.floor(512 / Math.max(1, doc.cells)));
    const r = this.canvas.getBoundingClientRect();
    const k = Math.floor((e.clientX - r.left) / w), c = Math.floor((e.clientY - r.top) / h);
    if (k < 0 || k >= doc.times.length || c < 0 || c >= doc.cells) return;
    const from = k ? doc.times[k - 1] : 0;
    this.details.dataset.slice = String(k);
    this.details.dataset.cell = String(c);
    this.details.textContent = `0x${this.address(c).toString(16)} (+${fmt.bytes(doc.cell_bytes)}), ` +
      `${fmt.duration(from)} to ${fmt.duration(doc.times[k])}: ${fmt.count(doc.allocations[k][c])} allocations, ` +
      `${fmt.bytes(doc.live_bytes[k][c])} live at the end`;
  }
}
