// heapmap.ts - the Heap map view: a snapshot's blocks in address order
// (empty stretches of the address space left out), one cell a square,
// coloured by the site holding most of its bytes and as opaque as the
// cell is full; the pointer over a cell asks for the block there; Play
// steps through the snapshots. A trace recorded with --addresses also has
// the map of every moment: a slider picks one of the frames the server
// drew in one replay, Play steps through them, and the hover asks for
// the block at that moment. Drawn on a canvas: no charting library draws
// a heap map.

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

// The maps of evenly spaced moments (/api/heapmap/frames).
interface FramesDoc {
  end_ns: number;
  times: number[];
  blocks: number[];
  cell_bytes: number;
  cells: number;
  regions: [number, number][];
  sites: { stack_id: number; name: string; bytes: number; blocks: number }[];
  colour: number[][];
  fill: number[][];
}

export const MOMENTS = "moments";
export const FRAME_CELLS = 2048;

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
  private frames: FramesDoc | null = null;
  private timer: number | null = null;
  private hoverSeq = 0;

  constructor(
    private select: HTMLSelectElement,
    private canvas: HTMLCanvasElement,
    private details: HTMLElement,
    private legend: HTMLTableElement,
    private status: HTMLElement,
    private slider: HTMLInputElement,
  ) {
    canvas.addEventListener("mousemove", (e) => this.hover(e));
    slider.addEventListener("input", () => this.showFrame(Number(slider.value)));
  }

  // The snapshots, and the moments when the trace has addresses; false
  // when there is neither.
  async list(): Promise<boolean> {
    const { snapshots, addresses } = await get<{ snapshots: SnapInfo[]; addresses: boolean }>("/api/snapshots");
    this.select.replaceChildren();
    for (const s of snapshots.filter((x) => x.complete))
      this.select.append(new Option(`${s.name} at ${fmt.duration(s.time_ns)}`, String(s.id)));
    this.frames = null;
    if (addresses) {
      try {
        this.frames = await get<FramesDoc>("/api/heapmap/frames", { cells: String(FRAME_CELLS) });
        this.select.append(new Option(`any moment (${this.frames.times.length} frames)`, MOMENTS));
      } catch (err) {
        this.status.textContent = `the moments cannot be drawn: ${err}`;
      }
    }
    if (!this.select.options.length)
      this.status.textContent = "no heap snapshots in this trace, and no addresses (memviz run --addresses)";
    return this.select.options.length > 0;
  }

  async load(id: string | null): Promise<void> {
    const moments = id === MOMENTS || (id === null && !this.select.options[0]?.value.match(/^\d+$/));
    this.slider.hidden = !moments;
    if (moments) {
      this.select.value = MOMENTS;
      this.slider.max = String(this.frames!.times.length - 1);
      this.showFrame(Number(this.slider.value));
      return;
    }
    const doc = await get<HeapMapDoc>("/api/heapmap", { cells: String(CELLS), ...(id ? { id } : {}) });
    this.doc = doc;
    this.select.value = String(doc.snapshot);
    this.draw();
  }

  // Frame k of the moments, drawn as a map of its own.
  showFrame(k: number): void {
    const f = this.frames!;
    k = Math.max(0, Math.min(k, f.times.length - 1));
    this.slider.value = String(k);
    this.doc = {
      snapshot: -1, name: `moment ${k + 1} of ${f.times.length}`, time_ns: f.times[k], blocks: f.blocks[k],
      cell_bytes: f.cell_bytes, cells: f.cells, regions: f.regions, sites: f.sites, colour: f.colour[k], fill: f.fill[k],
    };
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
    const at: Record<string, string> = this.doc.snapshot < 0
      ? { t: String(this.doc.time_ns), cells: String(FRAME_CELLS) }
      : { id: String(this.doc.snapshot), cells: String(CELLS) };
    const b = await get<BlockDoc>("/api/heapmap/block", { ...at, cell: String(cell) });
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

  // Steps through the snapshots, a second each, from the first (or the
  // moments, five a second, from the one shown); again: stop.
  play(button: HTMLElement): void {
    if (this.timer !== null) {
      clearInterval(this.timer);
      this.timer = null;
      button.textContent = "Play";
      return;
    }
    if (this.select.value === MOMENTS) {
      let k = Number(this.slider.value) + 1 >= this.frames!.times.length ? 0 : Number(this.slider.value);
      button.textContent = "Stop";
      const next = () => (k >= this.frames!.times.length ? this.play(button) : this.showFrame(k++));
      next();
      this.timer = window.setInterval(next, 200);
      return;
    }
    const ids = [...this.select.options].map((o) => o.value).filter((v) => v !== MOMENTS);
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
