// live.ts - the Live view (memviz ui --live): a running program, as the
// live server streams it (docs/LIVE.md) through memviz ui. Every sample of
// the window is kept, with the top sites of the lines that carried them,
// so the view can stay on a moment while the program runs on (pause), go
// back through the window (the cursor) and come back to now.

import uPlot from "uplot";
import * as fmt from "./format";
import { el } from "./dom";

interface Sample {
  t_ns: number;
  heap_bytes: number;
  heap_blocks: number;
  rss_bytes: number;
  allocations: number;
  frees: number;
}

interface LiveSite {
  live_bytes: number;
  live_blocks: number;
  frames: { function: string; file: string | null; line: number }[];
}

interface Instrument {
  name: string;
  kind: string;
  value?: number | string;
  count?: number;
  total_ns?: number;
  live_bytes?: number;
}


export class LiveView {
  private first = 0; // seq of samples[0]
  private samples: Sample[] = [];
  private sites = new Map<number, LiveSite[]>(); // by seq, for the lines that had them
  private cursor: number | null = null; // null: follow the program
  private ended = false;
  private command = "";
  private peak = 0;
  private instruments: Instrument[] = [];
  private log: { text: string; t_ns: number }[] = [];
  private chart: uPlot | null = null;
  private token = new URLSearchParams(location.search).get("token");
  private pid = 0; // the process shown; 0: the run's first
  private abort: AbortController | null = null;

  constructor(
    private status: HTMLElement,
    private chartBox: HTMLElement,
    private sitesTable: HTMLTableElement,
    private insTable: HTMLTableElement,
    private logBox: HTMLElement,
    private slider: HTMLInputElement,
  ) {}

  private url(path: string): string {
    return this.token ? `${path}${path.includes("?") ? "&" : "?"}token=${encodeURIComponent(this.token)}` : path;
  }

  // Reads the stream until it ends; reconnects after a second when it
  // drops while the program runs, or at once for another process.
  async run(): Promise<void> {
    for (;;) {
      const pid = this.pid;
      try {
        await this.follow(pid);
      } catch (e) {
        if (pid === this.pid) this.status.dataset.error = String(e);
      }
      if (pid !== this.pid) continue; // switched: follow the new one
      if (this.ended) return;
      await new Promise((r) => setTimeout(r, 1000));
    }
  }

  // The processes of the run (a fork's children, the programs they exec),
  // in select; shown when there are more than one.
  async listProcesses(select: HTMLSelectElement, box: HTMLElement): Promise<void> {
    const r = await fetch(this.url("/api/v1/processes"));
    if (!r.ok) return;
    const doc = await r.json();
    const procs: { pid: number; command: string; how: string; ended?: boolean }[] = doc.processes ?? [];
    box.hidden = procs.length < 2;
    const have = [...select.options].map((o) => o.value).join(",");
    const want = procs.map((p) => String(p.pid)).join(",");
    if (have === want) return;
    const keep = select.value;
    select.replaceChildren(...procs.map((p) => new Option(`${p.pid} ${p.how} ${p.command}`, String(p.pid))));
    if (keep) select.value = keep;
  }

  // Shows process pid from now on: the window anew, from its stream.
  follow_pid(pid: number): void {
    this.pid = pid;
    this.ended = false;
    this.samples = [];
    this.sites.clear();
    this.cursor = null;
    this.abort?.abort();
  }

  private async follow(pid: number): Promise<void> {
    this.abort = new AbortController();
    const r = await fetch(this.url(pid ? `/api/v1/stream?pid=${pid}` : "/api/v1/stream"), { signal: this.abort.signal });
    if (!r.ok || !r.body) throw new Error(`stream: ${r.status} ${await r.text()}`);
    const reader = r.body.getReader();
    const dec = new TextDecoder();
    let buf = "";
    for (;;) {
      const { done, value } = await reader.read();
      if (done) return;
      buf += dec.decode(value, { stream: true });
      let nl: number;
      while ((nl = buf.indexOf("\n")) >= 0) {
        const line = buf.slice(0, nl).trim();
        buf = buf.slice(nl + 1);
        if (line) this.take(JSON.parse(line));
      }
      this.draw();
    }
  }

  // A state document (the whole window) or one sample's line.
  private take(d: any): void {
    if (d.memviz_live) {
      this.first = d.first_seq;
      this.samples = d.samples;
      this.sites.clear();
      this.sites.set(d.next_seq - 1, d.sites ?? []);
      this.command = d.process?.command ?? "";
      this.instruments = d.instruments ?? [];
      this.log = d.log ?? [];
    } else if (typeof d.seq === "number") {
      const i = d.seq - this.first;
      if (i === this.samples.length) this.samples.push(d.sample);
      else if (i >= 0 && i < this.samples.length) this.samples[i] = d.sample;
      if (d.sites) this.sites.set(d.seq, d.sites);
      if (d.instruments) this.instruments = d.instruments;
      if (d.log) this.log = d.log;
    }
    if (typeof d.peak_bytes === "number") this.peak = d.peak_bytes;
    if (d.ended) this.ended = true;
  }

  private last(): number {
    return this.first + this.samples.length - 1;
  }

  // The sites at seq: those of the nearest line at or before it that had them.
  private sitesAt(seq: number): LiveSite[] {
    let best = -1;
    for (const k of this.sites.keys()) if (k <= seq && k > best) best = k;
    return best >= 0 ? this.sites.get(best)! : [];
  }

  pause(): void {
    this.cursor = this.cursor === null ? this.last() : null;
    this.draw();
  }

  now(): void {
    this.cursor = null;
    this.draw();
  }

  moveTo(seq: number): void {
    this.cursor = Math.max(this.first, Math.min(seq, this.last()));
    this.draw();
  }

  async snapshot(): Promise<string> {
    const path = this.pid ? `/api/v1/snapshot?pid=${this.pid}` : "/api/v1/snapshot";
    const r = await fetch(this.url(path), { method: "POST", headers: { "X-Memviz": "1" } });
    return (await r.text()).trim();
  }

  private draw(): void {
    if (!this.samples.length) return;
    const at = this.cursor ?? this.last();
    const s = this.samples[at - this.first];
    const mode = this.cursor !== null ? "paused" : this.ended ? "ended" : "live";
    this.status.dataset.mode = mode;
    this.status.dataset.pid = String(this.pid);
    this.status.dataset.seq = String(at);
    this.status.dataset.heapBytes = String(s.heap_bytes);
    this.status.dataset.heapBlocks = String(s.heap_blocks);
    this.status.replaceChildren(
      el("span", "mode", mode.toUpperCase()),
      ` at ${fmt.duration(s.t_ns)}: heap ${fmt.bytes(s.heap_bytes)} in ${fmt.count(s.heap_blocks)} blocks, ` +
        `RSS ${fmt.bytes(s.rss_bytes)}, allocations ${fmt.count(s.allocations)}, frees ${fmt.count(s.frees)}, ` +
        `peak so far ${fmt.bytes(this.peak)} - ${this.command}`,
    );
    this.slider.min = String(this.first);
    this.slider.max = String(this.last());
    this.slider.value = String(at);
    this.drawChart(at);
    this.drawSites(this.sitesAt(at));
    this.drawInstruments();
  }

  private drawChart(at: number): void {
    const xs = this.samples.map((s) => s.t_ns / 1e9);
    const data: uPlot.AlignedData = [xs, this.samples.map((s) => s.heap_bytes), this.samples.map((s) => s.rss_bytes)];
    const cursorX = this.samples[at - this.first].t_ns / 1e9;
    if (!this.chart) {
      this.chart = new uPlot(
        {
          width: Math.max(400, this.chartBox.clientWidth || 1000),
          height: 300,
          scales: { x: { time: false } },
          axes: [{ label: "seconds" }, { values: (_u, t) => t.map((v) => fmt.bytes(v)), size: 80 }],
          series: [
            { label: "time (s)" },
            { label: "heap", stroke: "#1565c0", fill: "rgba(21,101,192,0.15)", value: (_u, v) => (v == null ? "" : fmt.bytes(v)) },
            { label: "RSS", stroke: "#e65100", value: (_u, v) => (v == null ? "" : fmt.bytes(v)) },
          ],
          hooks: {
            draw: [
              (u) => {
                const x = u.valToPos(Number(this.chartBox.dataset.cursor), "x", true);
                u.ctx.save();
                u.ctx.strokeStyle = "#ef6c00";
                u.ctx.beginPath();
                u.ctx.moveTo(x, u.bbox.top);
                u.ctx.lineTo(x, u.bbox.top + u.bbox.height);
                u.ctx.stroke();
                u.ctx.restore();
              },
            ],
          },
        },
        data,
        this.chartBox,
      );
    }
    this.chartBox.dataset.cursor = String(cursorX);
    this.chart.setData(data);
  }

  private drawSites(sites: LiveSite[]): void {
    this.sitesTable.replaceChildren();
    const most = sites.length ? sites[0].live_bytes : 0;
    for (const s of sites) {
      const tr = this.sitesTable.insertRow();
      const f = s.frames[0];
      tr.dataset.function = f?.function ?? "??";
      const td = el("td", "num");
      const bar = el("span", "bar");
      bar.style.width = `${most ? Math.round((120 * s.live_bytes) / most) : 0}px`;
      td.append(bar, " ", fmt.bytes(s.live_bytes));
      td.dataset.value = String(s.live_bytes);
      tr.append(td, el("td", "num", fmt.count(s.live_blocks)), el("td", undefined, f ? `${f.function}${f.file ? ` (${f.file}:${f.line})` : ""}` : "??"));
    }
  }

  private drawInstruments(): void {
    this.insTable.replaceChildren();
    for (const i of this.instruments) {
      const v = i.kind === "stopwatch" ? `${i.count} sections, ${fmt.duration(i.total_ns ?? 0)}` : i.kind === "tag" ? fmt.bytes(i.live_bytes ?? 0) : String(i.value ?? "");
      const tr = this.insTable.insertRow();
      tr.append(el("td", undefined, i.name), el("td", undefined, i.kind), el("td", "num", v));
    }
    this.logBox.textContent = this.log.slice(-10).map((l) => `${fmt.duration(l.t_ns)}  ${l.text}`).join("\n");
  }
}
