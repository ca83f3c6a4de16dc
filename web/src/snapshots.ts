// snapshots.ts - the Snapshots view: for the chosen heap snapshot,
// memcheck's leak kinds and the loss records, the roots and sites by
// retained size (a click on a site shows the path from a root that holds
// it), and the live bytes of the top growing sites across every snapshot
// (uPlot lines).

import uPlot from "uplot";
import { Frame, get, GrowthDoc, SnapInfo, SnapshotDoc } from "./api";
import * as fmt from "./format";
import { barCell, el } from "./dom";



function site(f: Frame[]): string {
  const top = f[0];
  return top ? `${top[0]}${top[1] ? ` (${top[1]}:${top[2]})` : ""}` : "??";
}

function header(t: HTMLTableElement, names: string[]): void {
  const h = t.createTHead().insertRow();
  for (const n of names) h.append(el("th", undefined, n));
}

export async function loadSnapshotList(select: HTMLSelectElement, status: HTMLElement): Promise<boolean> {
  const { snapshots } = await get<{ snapshots: SnapInfo[] }>("/api/snapshots");
  select.replaceChildren();
  const complete = snapshots.filter((s) => s.complete);
  for (const s of complete)
    select.append(new Option(`${s.name} at ${fmt.duration(s.time_ns)} (${fmt.count(s.blocks)} blocks)`, String(s.id)));
  status.textContent = complete.length ? "" : "no heap snapshots in this trace (memviz run takes one at exit unless --no-leak-scan)";
  return complete.length > 0;
}

export function renderSnapshot(doc: SnapshotDoc, kinds: HTMLTableElement, roots: HTMLTableElement,
  records: HTMLTableElement, sites: HTMLTableElement): void {
  kinds.replaceChildren();
  header(kinds, ["kind", "bytes", "blocks"]);
  const most = Math.max(...Object.values(doc.leaks).map((k) => k.bytes), 0);
  for (const [kind, v] of Object.entries(doc.leaks)) {
    const tr = kinds.insertRow();
    tr.dataset.kind = kind;
    tr.append(el("td", undefined, kind), barCell(v.bytes, most, fmt.bytes(v.bytes)), el("td", "num", fmt.count(v.blocks)));
    tr.dataset.blocks = String(v.blocks);
  }
  roots.replaceChildren();
  header(roots, ["root", "retained", "blocks"]);
  const mostR = doc.roots.length ? doc.roots[0].retained_bytes : 0;
  for (const r of doc.roots) {
    const tr = roots.insertRow();
    tr.dataset.kind = r.kind;
    tr.dataset.name = r.name;
    tr.append(el("td", undefined, r.label), barCell(r.retained_bytes, mostR, fmt.bytes(r.retained_bytes)), el("td", "num", fmt.count(r.retained_blocks)));
  }
  records.replaceChildren();
  header(records, ["kind", "bytes", "blocks", "allocated at"]);
  const mostL = doc.records.reduce((m, r) => Math.max(m, r.bytes), 0);
  for (const r of doc.records) {
    const tr = records.insertRow();
    tr.dataset.kind = r.kind;
    tr.dataset.function = r.frames[0]?.[0] ?? "";
    tr.append(el("td", undefined, r.kind), barCell(r.bytes, mostL, fmt.bytes(r.bytes)), el("td", "num", fmt.count(r.blocks)), el("td", undefined, site(r.frames)));
  }
  sites.replaceChildren();
  header(sites, ["retained", "blocks", "site"]);
  const mostS = doc.sites.length ? doc.sites[0].retained_bytes : 0;
  for (const s of doc.sites) {
    const tr = sites.insertRow();
    tr.className = "site";
    tr.dataset.stack = String(s.stack_id);
    tr.append(barCell(s.retained_bytes, mostS, fmt.bytes(s.retained_bytes)), el("td", "num", fmt.count(s.retained_blocks)), el("td", undefined, site(s.frames)));
    let open: HTMLTableRowElement | null = null;
    tr.addEventListener("click", () => {
      if (open) {
        open.remove();
        open = null;
        return;
      }
      open = el("tr", "stack");
      const td = el("td");
      td.colSpan = 3;
      td.append(el("div", undefined, "held by:"));
      s.path.forEach((step, i) => td.append(el("div", "path-step", `${"  ".repeat(i)}${i ? "-> " : ""}${step}`)));
      td.append(el("div", undefined, "allocated at:"));
      for (const f of s.frames) td.append(el("div", undefined, `  ${f[0]}${f[1] ? ` (${f[1]}:${f[2]})` : ""}`));
      open.append(td);
      tr.after(open);
    });
  }
}

export function renderGrowth(box: HTMLElement, doc: GrowthDoc): void {
  box.replaceChildren();
  box.dataset.sites = String(doc.sites.length);
  if (!doc.snapshots.length || !doc.sites.length) {
    box.textContent = doc.snapshots.length < 2 ? "growth needs two snapshots or more (memviz run --snapshot-every)" : "no site grew";
    return;
  }
  const xs = doc.snapshots.map((s) => s.time_ns / 1e9);
  const palette = ["#1565c0", "#2e7d32", "#f9a825", "#6a1b9a", "#00838f", "#c62828", "#4e342e", "#ad1457", "#558b2f", "#283593"];
  new uPlot(
    {
      width: Math.max(400, box.clientWidth || 1000),
      height: 300,
      scales: { x: { time: false } },
      axes: [{ label: "seconds (snapshots)" }, { values: (_u, t) => t.map((v) => fmt.bytes(v)), size: 80 }],
      series: [
        { label: "time (s)" },
        ...doc.sites.slice(0, 10).map((s, k) => ({
          label: site(s.frames),
          stroke: palette[k % palette.length],
          points: { show: true },
          value: (_u: uPlot, v: number | null) => (v == null ? "" : fmt.bytes(v)),
        })),
      ],
    },
    [xs, ...doc.sites.slice(0, 10).map((s) => s.live_bytes)],
    box,
  );
}

export async function loadSnapshot(id: string | null, tables: HTMLTableElement[], growth: HTMLElement): Promise<SnapshotDoc> {
  const doc = await get<SnapshotDoc>("/api/snapshot", id ? { id } : {});
  const [kinds, roots, records, sites] = tables;
  renderSnapshot(doc, kinds, roots, records, sites);
  renderGrowth(growth, await get<GrowthDoc>("/api/growth"));
  return doc;
}
