// heapmap.ts - the Heap map view: a snapshot's blocks in address order
// (empty stretches of the address space left out), one cell a square,
// coloured by the site holding most of its bytes and as opaque as the
// cell is full; the pointer over a cell asks for the block there; Play
// steps through the snapshots. Drawn on a canvas: no charting library
// draws a heap map.

import { get, SnapInfo, standalone } from "./api";
import * as fmt from "./format";

interface HeapMapDoc {
  snapshot: number;
  name: string;
  time_ns: number;
  blocks: number;
  cell_bytes: number;
  cells: number;
  regions: [number, number][];
  sites: { stack_id: number; name: string; bytes: number; blocks: number }[];
  colour: number[];
  fill: number[];
}

interface BlockDoc {
  cell: number;
  addr?: number;
  size?: number;
  tid?: number;
  frames?: string[];
  born_ns?: number;
  age_ns?: number;
}

const PALETTE = [
  "#1565c0", "#2e7d32", "#f9a825", "#6a1b9a", "#00838f", "#c62828", "#4e342e", "#ad1457",
  "#558b2f", "#283593", "#ef6c00", "#00695c", "#8e24aa", "#9e9d24", "#37474f",
];
const OTHER = "#9e9e9e";
export const CELLS = 4096;
const COLUMNS = 128;

function colourOf(c: number): string {
  return c === 0 ? "#ffffff" : c <= PALETTE.length ? PALETTE[c - 1] : OTHER;
}

export class HeapMapView {
  private doc: HeapMapDoc | null = null;
  private timer: number | null = null;
  private hoverSeq = 0;

  constructor(
    private select: HTMLSelectElement,
    private canvas: HTMLCanvasElement,
    private details: HTMLElement,
    private legend: HTMLTableElement,
    private status: HTMLElement,
  ) {
    canvas.addEventListener("mousemove", (e) => this.hover(e));
  }

  async list(): Promise<boolean> {
    const { snapshots } = await get<{ snapshots: SnapInfo[] }>("/api/snapshots");
    this.select.replaceChildren();
    for (const s of snapshots.filter((x) => x.complete))
      this.select.append(new Option(`${s.name} at ${fmt.duration(s.time_ns)}`, String(s.id)));
    if (!this.select.options.length) this.status.textContent = "no heap snapshots in this trace";
    return this.select.options.length > 0;
  }

  async load(id: string | null): Promise<void> {
    const doc = await get<HeapMapDoc>("/api/heapmap", { cells: String(CELLS), ...(id ? { id } : {}) });
    this.doc = doc;
    this.select.value = String(doc.snapshot);
    this.draw();
  }

  private cellSize(): number {
    return Math.max(2, Math.floor(this.canvas.width / COLUMNS));
  }

  private draw(): void {
    const doc = this.doc!;
    const size = this.cellSize();
    const rows = Math.ceil(doc.cells / COLUMNS);
    this.canvas.height = Math.max(size, rows * size);
    const ctx = this.canvas.getContext("2d")!;
    ctx.fillStyle = "#ffffff";
    ctx.fillRect(0, 0, this.canvas.width, this.canvas.height);
    for (let i = 0; i < doc.cells; i++) {
      if (!doc.colour[i]) continue;
      ctx.globalAlpha = 0.25 + (0.75 * Math.min(100, doc.fill[i])) / 100;
      ctx.fillStyle = colourOf(doc.colour[i]);
      ctx.fillRect((i % COLUMNS) * size, Math.floor(i / COLUMNS) * size, size - 1, size - 1);
    }
    ctx.globalAlpha = 1;
    // a region boundary: a dark tick before its first cell
    ctx.fillStyle = "#000000";
    for (const [, first] of doc.regions.slice(1))
      ctx.fillRect((first % COLUMNS) * size, Math.floor(first / COLUMNS) * size, 1, size);
    this.canvas.dataset.cells = String(doc.cells);
    this.canvas.dataset.painted = String(doc.colour.filter((c) => c).length);
    this.status.textContent = `${doc.name} at ${fmt.duration(doc.time_ns)}: ${fmt.count(doc.blocks)} blocks, ` +
      `${doc.regions.length} regions, ${fmt.bytes(doc.cell_bytes)} a cell`;
    this.legend.replaceChildren();
    doc.sites.forEach((s, k) => {
      const tr = this.legend.insertRow();
      tr.dataset.stack = String(s.stack_id);
      tr.dataset.bytes = String(s.bytes);
      const sw = document.createElement("span");
      sw.className = "swatch";
      sw.style.background = colourOf(k + 1);
      const td = tr.insertCell();
      td.append(sw);
      tr.insertCell().textContent = fmt.bytes(s.bytes);
      tr.insertCell().textContent = `${fmt.count(s.blocks)} blocks`;
      tr.insertCell().textContent = s.name;
    });
  }

  private async hover(e: MouseEvent): Promise<void> {
    if (!this.doc) return;
    const size = this.cellSize();
    const r = this.canvas.getBoundingClientRect();
    const cell = Math.floor((e.clientY - r.top) / size) * COLUMNS + Math.floor((e.clientX - r.left) / size);
    if (cell < 0 || cell >= this.doc.cells) return;
    if (standalone) {
      this.details.textContent = `cell ${cell}: the block under the pointer needs memviz ui`;
      return;
    }
    const seq = ++this.hoverSeq;
    const b = await get<BlockDoc>("/api/heapmap/block", { id: String(this.doc.snapshot), cells: String(CELLS), cell: String(cell) });
    if (seq !== this.hoverSeq) return; // the pointer moved on
    this.details.dataset.cell = String(cell);
    if (b.addr === undefined) {
      this.details.textContent = `cell ${cell}: empty`;
      delete this.details.dataset.size;
      return;
    }
    this.details.dataset.size = String(b.size);
    const age = b.age_ns !== undefined ? `, ${fmt.duration(b.age_ns)} old (allocated at ${fmt.duration(b.born_ns!)})` : "";
    this.details.textContent = `cell ${cell}: a block of ${fmt.bytes(b.size!)} at 0x${b.addr.toString(16)}, thread ${b.tid}${age}\n` +
      `allocated at ${(b.frames ?? []).slice(0, 6).join(" < ")}`;
  }

  // Steps through the snapshots, a second each, from the first; again: stop.
  play(button: HTMLElement): void {
    if (this.timer !== null) {
      clearInterval(this.timer);
      this.timer = null;
      button.textContent = "Play";
      return;
    }
    const ids = [...this.select.options].map((o) => o.value);
    let i = 0;
    button.textContent = "Stop";
    const step = () => {
      if (i >= ids.length) return this.play(button);
      this.load(ids[i++]).catch((err) => console.error(String(err)));
    };
    step();
    this.timer = window.setInterval(step, 1000);
  }
}
