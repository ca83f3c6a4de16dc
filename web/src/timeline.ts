// timeline.ts - heap over time: the live heap, the highest it reached
// between points, and the RSS, drawn by uPlot, with the peak marked; or
// the heap split by the top groups (sites, functions, modules) as stacked
// areas, the rest on top as "other". A legend entry hides or shows its
// series (uPlot's own).

import uPlot from "uplot";
import { SeriesDoc, TimelineDoc } from "./api";
import * as fmt from "./format";
import { getWindow, setWindow } from "./window";

const PALETTE = [
  "#1565c0", "#2e7d32", "#f9a825", "#6a1b9a", "#00838f", "#c62828", "#4e342e", "#ad1457",
  "#558b2f", "#283593", "#ef6c00", "#00695c", "#8e24aa", "#9e9d24", "#37474f", "#d84315",
  "#0277bd", "#5d4037", "#7cb342", "#3949ab",
];

function bytesValue(_u: uPlot, v: number | null): string {
  return v == null ? "" : fmt.bytes(v);
}

function peakMarker(peakX: number): uPlot.Plugin {
  return {
    hooks: {
      draw: [
        (u: uPlot) => {
          const x = u.valToPos(peakX, "x", true);
          const ctx = u.ctx;
          ctx.save();
          ctx.strokeStyle = "#c62828";
          ctx.setLineDash([4, 4]);
          ctx.beginPath();
          ctx.moveTo(x, u.bbox.top);
          ctx.lineTo(x, u.bbox.top + u.bbox.height);
          ctx.stroke();
          ctx.restore();
        },
      ],
    },
  };
}

// The brush: a drag across the chart chooses the window (the chart keeps
// its scale); the chosen window stays shaded.
function brush(): uPlot.Plugin {
  return {
    hooks: {
      setSelect: [
        (u: uPlot) => {
          if (u.select.width < 2) return;
          const a = u.posToVal(u.select.left, "x");
          const b = u.posToVal(u.select.left + u.select.width, "x");
          setWindow({ from_ns: Math.max(0, Math.round(a * 1e9)), to_ns: Math.max(0, Math.round(b * 1e9)) });
        },
      ],
      draw: [
        (u: uPlot) => {
          const w = getWindow();
          if (!w) return;
          const x0 = u.valToPos(w.from_ns / 1e9, "x", true);
          const x1 = u.valToPos(w.to_ns / 1e9, "x", true);
          u.ctx.save();
          u.ctx.fillStyle = "rgba(255,179,0,0.15)";
          u.ctx.fillRect(x0, u.bbox.top, x1 - x0, u.bbox.height);
          u.ctx.restore();
        },
      ],
    },
  };
}

const MARK_COLOURS: Record<string, string> = { P: "#2e7d32", L: "#757575", S: "#6a1b9a" };
const MARK_NAMES: Record<string, string> = { P: "phase", L: "log", S: "snapshot" };

// The phases, log lines and snapshots: a thin line each at its time.
function markers(doc: TimelineDoc): uPlot.Plugin {
  return {
    hooks: {
      draw: [
        (u: uPlot) => {
          const ctx = u.ctx;
          ctx.save();
          for (const [t, kind] of doc.marks ?? []) {
            const x = u.valToPos(t / 1e9, "x", true);
            ctx.strokeStyle = MARK_COLOURS[kind] ?? "#000";
            ctx.globalAlpha = 0.6;
            ctx.beginPath();
            ctx.moveTo(x, u.bbox.top);
            ctx.lineTo(x, u.bbox.top + 12);
            ctx.stroke();
          }
          ctx.restore();
        },
      ],
    },
  };
}

// The marks listed under the chart, in time order.
export function renderMarks(box: HTMLElement, doc: TimelineDoc): void {
  box.replaceChildren();
  const marks = [...(doc.marks ?? [])].sort((a, b) => a[0] - b[0]);
  box.dataset.marks = String(marks.length);
  for (const [t, kind, text] of marks) {
    const span = document.createElement("span");
    span.className = "mark";
    span.dataset.kind = kind;
    const k = document.createElement("span");
    k.className = "kind";
    k.style.background = MARK_COLOURS[kind] ?? "#000";
    k.textContent = MARK_NAMES[kind] ?? kind;
    span.append(k, ` ${fmt.duration(t)} ${text}`);
    box.append(span);
  }
}

function baseOptions(box: HTMLElement, doc: TimelineDoc): uPlot.Options {
  return {
    width: Math.max(400, box.clientWidth || 1000),
    height: 380,
    scales: { x: { time: false } },
    cursor: { drag: { x: true, y: false, setScale: false } },
    axes: [{ label: "seconds" }, { values: (_u, ticks) => ticks.map((v) => fmt.bytes(v)), size: 80 }],
    series: [{ label: "time (s)" }],
    plugins: [peakMarker(doc.peak_time_ns / 1e9), markers(doc), brush()],
  };
}

export function renderTimeline(box: HTMLElement, doc: TimelineDoc): uPlot {
  box.replaceChildren();
  const secs = doc.t_ns.map((t) => t / 1e9);
  const opts = baseOptions(box, doc);
  opts.series.push(
    { label: "heap", stroke: "#1565c0", fill: "rgba(21,101,192,0.15)", value: bytesValue },
    { label: "heap max", stroke: "#90caf9", value: bytesValue },
    { label: "RSS", stroke: "#e65100", value: bytesValue },
  );
  box.dataset.points = String(secs.length);
  box.dataset.peak = String(doc.peak_bytes);
  box.dataset.series = "0";
  return new uPlot(opts, [secs, doc.heap, doc.heap_max, doc.rss], box);
}

// Stacked: series k is drawn at the sum of groups 0..k, and filled down
// to the sum below it (a uPlot band); the legend shows each group's own.
export function renderSeries(box: HTMLElement, doc: TimelineDoc, s: SeriesDoc): uPlot {
  box.replaceChildren();
  const secs = s.t_ns.map((t) => t / 1e9);
  const own = [...s.series, s.other];
  const names = [...s.names, "other"];
  const stacked: number[][] = [];
  own.forEach((v, k) => stacked.push(v.map((x, i) => x + (k ? stacked[k - 1][i] : 0))));
  const opts = baseOptions(box, doc);
  opts.bands = [];
  own.forEach((_, k) => {
    const color = k < s.names.length ? PALETTE[k % PALETTE.length] : "#9e9e9e";
    opts.series.push({
      label: names[k],
      stroke: color,
      fill: color + "55",
      value: (_u, _v, _si, i) => (i == null ? "" : fmt.bytes(own[k][i])),
    });
    if (k) opts.bands!.push({ series: [k + 1, k] as [number, number], fill: color + "55" });
  });
  opts.series[1].fill = (opts.series[1].stroke as string) + "55";
  opts.series.push({ label: "RSS", stroke: "#e65100", value: bytesValue });
  // bands fill between series; the series' own fill would go to zero
  for (let k = 2; k <= own.length; k++) opts.series[k].fill = undefined;
  box.dataset.points = String(secs.length);
  box.dataset.peak = String(doc.peak_bytes);
  box.dataset.series = String(s.names.length);
  box.dataset.names = JSON.stringify(s.names);
  return new uPlot(opts, [secs, ...stacked, doc.rss.slice(0, secs.length)], box);
}
