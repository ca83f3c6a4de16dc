// main.ts - the web UI's entry: loads the summary, and each view the first
// time it is shown. docs/UI.md describes the views.

import "./app.css";
import { get, SeriesDoc, Summary, TimelineDoc } from "./api";
import { FlameView } from "./flame";
import { renderSummary } from "./summary";
import { renderSeries, renderTimeline } from "./timeline";

function $(id: string): HTMLElement {
  return document.getElementById(id)!;
}

const loaded = new Set<string>();
let flame: FlameView;

function reportError(e: unknown): void {
  const msg = e instanceof Error ? e.message : String(e);
  $("program").textContent = `error: ${msg}`;
  console.error(msg);
}

async function loadView(view: string): Promise<void> {
  if (loaded.has(view)) return;
  loaded.add(view);
  if (view === "flame") await reloadFlame();
  if (view === "timeline") await reloadTimeline();
}

async function reloadTimeline(): Promise<void> {
  const doc = await get<TimelineDoc>("/api/timeline");
  const by = ($("timeline-by") as HTMLSelectElement).value;
  const top = ($("timeline-top") as HTMLSelectElement).value;
  if (!by) {
    renderTimeline($("timeline"), doc);
    $("timeline-status").textContent = "";
    return;
  }
  const s = await get<SeriesDoc>("/api/series", { by, top });
  renderSeries($("timeline"), doc, s);
  $("timeline-status").textContent = `the top ${s.names.length} by bytes live at the peak, and the rest`;
}

async function reloadFlame(): Promise<void> {
  const cost = ($("flame-cost") as HTMLSelectElement).value;
  const dir = ($("flame-direction") as HTMLSelectElement).value;
  await flame.load(cost, dir);
  const term = ($("flame-search") as HTMLInputElement).value;
  if (term) flame.search(term);
}

function show(view: string): void {
  for (const b of document.querySelectorAll<HTMLButtonElement>("nav button"))
    b.classList.toggle("active", b.dataset.view === view);
  for (const s of document.querySelectorAll<HTMLElement>(".view"))
    s.classList.toggle("active", s.id === `view-${view}`);
  document.body.dataset.view = view;
  loadView(view).then(() => (document.body.dataset.ready = view), reportError);
}

async function start(): Promise<void> {
  flame = new FlameView($("flame"), $("flame-details"), $("flame-status"));
  for (const b of document.querySelectorAll<HTMLButtonElement>("nav button"))
    b.addEventListener("click", () => show(b.dataset.view!));
  const reload = () => reloadFlame().then(() => (document.body.dataset.ready = "flame"), reportError);
  $("flame-cost").addEventListener("change", reload);
  $("flame-direction").addEventListener("change", reload);
  $("flame-search").addEventListener("input", (e) => flame.search((e.target as HTMLInputElement).value));
  $("flame-reset").addEventListener("click", () => flame.resetZoom());
  const redraw = () => {
    delete document.body.dataset.ready;
    reloadTimeline().then(() => (document.body.dataset.ready = "timeline"), reportError);
  };
  $("timeline-by").addEventListener("change", redraw);
  $("timeline-top").addEventListener("change", redraw);
  const s = await get<Summary>("/api/summary");
  $("program").textContent = [s.process.exe ?? "?", ...s.process.argv.slice(1)].join(" ");
  renderSummary($("summary") as HTMLTableElement, s);
  document.body.dataset.ready = "summary";
}

start().catch(reportError);
