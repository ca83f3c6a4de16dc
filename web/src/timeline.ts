// timeline.ts - heap over time: the live heap, the highest it reached
// between points, and the RSS, drawn by uPlot, with the peak marked.

import uPlot from "uplot";
import { TimelineDoc } from "./api";
import * as fmt from "./format";

export function renderTimeline(box: HTMLElement, doc: TimelineDoc): uPlot {
  box.replaceChildren();
  const secs = doc.t_ns.map((t) => t / 1e9);
  const data: uPlot.AlignedData = [secs, doc.heap, doc.heap_max, doc.rss];
  const peakX = doc.peak_time_ns / 1e9;
  const opts: uPlot.Options = {
    width: Math.max(400, box.clientWidth || 1000),
    height: 360,
    scales: { x: { time: false } },
    axes: [
      { label: "seconds" },
      { values: (_u, ticks) => ticks.map((v) => fmt.bytes(v)), size: 80 },
    ],
    series: [
      { label: "time (s)" },
      { label: "heap", stroke: "#1565c0", fill: "rgba(21,101,192,0.15)", value: (_u, v) => (v == null ? "" : fmt.bytes(v)) },
      { label: "heap max", stroke: "#90caf9", value: (_u, v) => (v == null ? "" : fmt.bytes(v)) },
      { label: "RSS", stroke: "#e65100", value: (_u, v) => (v == null ? "" : fmt.bytes(v)) },
    ],
    hooks: {
      draw: [
        (u) => {
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
  box.dataset.points = String(secs.length);
  box.dataset.peak = String(doc.peak_bytes);
  return new uPlot(opts, data, box);
}
