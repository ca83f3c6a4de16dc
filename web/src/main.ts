// main.ts - the web UI's entry: loads the summary, and each view the first
// time it is shown. docs/UI.md describes the views.

import "./app.css";
import { get, SeriesDoc, Summary, TimelineDoc } from "./api";
import { FlameView } from "./flame";
import { renderSummary } from "./summary";
import { loadBreakdown, loadLifetimes, SitesView } from "./sites";
import { loadSnapshot, loadSnapshotList } from "./snapshots";
import { LiveView } from "./live";
import { loadDiff } from "./diff";
import { HeapMapView } from "./heapmap";
import { HeatMapView } from "./heat";
import { CallGraphView } from "./calls";
import { renderMarks, renderSeries, renderTimeline } from "./timeline";
import { getWindow, onWindowChange, setWindow, windowParams } from "./window";
import * as fmt from "./format";
import { standalone } from "./api";
import { readLink, writeLink } from "./link";

function $(id: string): HTMLElement {
  return document.getElementById(id)!;
}

const loaded = new Set<string>();
let flame: FlameView;
let sites: SitesView;
let heapmap: HeapMapView;
let heat: HeatMapView;
let calls: CallGraphView;
let current = "summary";

function reportError(e: unknown): void {
  const msg = e instanceof Error ? e.message : String(e);
  $("program").textContent = `error: ${msg}`;
  console.error(msg);
}

async function loadView(view: string): Promise<void> {
  if (loaded.has(view)) return;
  loaded.add(view);
  if (view === "summary") await loadSummary();
  if (view === "flame") await reloadFlame();
  if (view === "sites") await reloadSites();
  if (view === "snapshots") await reloadSnapshots(true);
  if (view === "diff") await reloadDiff();
  if (view === "heapmap" && (await heapmap.list())) await heapmap.load(null);
  if (view === "heat") await heat.load();
  if (view === "calls") await calls.load(($("calls-metric") as HTMLSelectElement).value);
  if (view === "timeline") await reloadTimeline();
}

// The drill-down: a module's functions, then a function's sites.
const drill: { module?: string; function?: string } = {};

function drillLinks(s: SeriesDoc): void {
  const box = $("timeline-drill");
  box.replaceChildren();
  if (standalone) {
    box.textContent = "drilling down and the other rankings need memviz ui (this file has the top 10 by peak)";
    return;
  }
  const link = (text: string, go: () => void) => {
    const a = document.createElement("span");
    a.className = "fn";
    a.textContent = text;
    a.addEventListener("click", () => {
      go();
      redrawTimeline();
    });
    box.append(a);
  };
  const by = $("timeline-by") as HTMLSelectElement;
  if (drill.module || drill.function) {
    box.append(`in ${drill.function ? `function ${drill.function}` : `module ${drill.module}`}: `);
    link("(back up)", () => {
      if (drill.function) {
        delete drill.function;
        by.value = "function";
      } else {
        delete drill.module;
        by.value = "module";
      }
    });
  }
  if (s.by === "site") return;
  box.append(s.by === "module" ? "a module's functions: " : "a function's sites: ");
  for (const name of s.names) {
    const key = s.by === "function" ? name.replace(/ \[[^\]]*\]$/, "") : name;
    link(key.split("/").pop()!, () => {
      if (s.by === "module") {
        drill.module = key;
        by.value = "function";
      } else {
        drill.function = key;
        by.value = "site";
      }
    });
  }
}

function redrawTimeline(): void {
  delete document.body.dataset.ready;
  reloadTimeline().then(() => (document.body.dataset.ready = "timeline"), reportError);
}

async function reloadTimeline(): Promise<void> {
  const doc = await get<TimelineDoc>("/api/timeline");
  renderMarks($("timeline-marks"), doc);
  const by = ($("timeline-by") as HTMLSelectElement).value;
  const top = ($("timeline-top") as HTMLSelectElement).value;
  const rank = standalone ? "peak" : ($("timeline-rank") as HTMLSelectElement).value;
  if (!by) {
    renderTimeline($("timeline"), doc);
    $("timeline-status").textContent = "";
    $("timeline-drill").replaceChildren();
    return;
  }
  const w = getWindow();
  const params: Record<string, string> = { by, top };
  if (rank !== "peak" && !(rank === "at" && !w)) params.rank = rank;
  if (rank === "at" && w) params.t_ns = String(w.to_ns);
  if (drill.module) params.module = drill.module;
  if (drill.function) params.function = drill.function;
  const add = ($("timeline-add") as HTMLInputElement).value.trim();
  if (add && !standalone) params.add = add;
  const s = await get<SeriesDoc>("/api/series", params);
  renderSeries($("timeline"), doc, s);
  drillLinks(s);
  const how = s.rank === "average" ? "average bytes" : s.rank === "at" ? `bytes at ${fmt.duration(w!.to_ns)}` : "bytes live at the peak";
  $("timeline-status").textContent = `the top ${s.names.length} by ${how}, and the rest` +
    (rank === "at" && !w ? " (choose a window with the brush to rank at its end)" : "");
}

async function reloadSnapshots(first: boolean): Promise<void> {
  const select = $("snap-id") as HTMLSelectElement;
  if (first && !(await loadSnapshotList(select, $("snap-status")))) return;
  const tables = ["leak-kinds", "roots", "loss-records", "retained-sites"].map((id) => $(id) as HTMLTableElement);
  const doc = await loadSnapshot(first ? null : select.value, tables, $("growth-chart"));
  select.value = String(doc.snapshot.id);
  $("snap-status").textContent = `${doc.snapshot.name}: ${fmt.count(doc.snapshot.blocks)} blocks at ${fmt.duration(doc.snapshot.time_ns)}`;
}

async function reloadDiff(): Promise<void> {
  await loadDiff(($("diff-cost") as HTMLSelectElement).value, $("diff-totals") as HTMLTableElement, $("diff-flame"),
    $("diff-details"), $("diff-grew") as HTMLTableElement, $("diff-shrank") as HTMLTableElement, $("diff-status"));
}

async function reloadSites(): Promise<void> {
  const cost = ($("sites-cost") as HTMLSelectElement).value;
  await sites.load(cost);
  await loadBreakdown($("sizes-chart"), $("allocators") as HTMLTableElement, $("threads") as HTMLTableElement);
  await loadLifetimes($("lifetimes") as HTMLTableElement);
  const fn = $("function-panel").dataset.function;
  if (fn && !$("function-panel").hidden) await sites.showFunction(fn, cost);
}

async function reloadFlame(): Promise<void> {
  const cost = ($("flame-cost") as HTMLSelectElement).value;
  const dir = ($("flame-direction") as HTMLSelectElement).value;
  await flame.load(cost, dir);
  const term = ($("flame-search") as HTMLInputElement).value;
  if (term) flame.search(term);
}

async function loadSummary(): Promise<void> {
  const s = await get<Summary>("/api/summary", windowParams());
  $("program").textContent = [s.process.exe ?? "?", ...s.process.argv.slice(1)].join(" ");
  renderSummary($("summary") as HTMLTableElement, s);
}

// The window in the header (hidden for the whole run).
function showWindow(): void {
  const w = getWindow();
  $("window").hidden = !w;
  if (w) $("window-text").textContent = `${fmt.duration(w.from_ns)} .. ${fmt.duration(w.to_ns)}`;
  document.body.dataset.fromNs = w ? String(w.from_ns) : "";
  document.body.dataset.toNs = w ? String(w.to_ns) : "";
}

// A new window: the views that depend on it load again when next shown;
// the one on screen now.
function windowChanged(): void {
  const w = getWindow();
  if (w && standalone) {
    setWindow(null);
    $("timeline-status").textContent = "a window of the run needs memviz ui (this file has the whole run)";
    return;
  }
  showWindow();
  loaded.delete("flame");
  loaded.delete("summary");
  loaded.delete("sites");
  delete document.body.dataset.ready;
  const again = current === "timeline" ? loadSummary() : loadView(current);
  again.then(() => (document.body.dataset.ready = current), reportError);
}

function show(view: string): void {
  current = view;
  writeLink(view);
  for (const b of document.querySelectorAll<HTMLButtonElement>("nav button"))
    b.classList.toggle("active", b.dataset.view === view);
  for (const s of document.querySelectorAll<HTMLElement>(".view"))
    s.classList.toggle("active", s.id === `view-${view}`);
  document.body.dataset.view = view;
  loadView(view).then(() => (document.body.dataset.ready = view), reportError);
}

// memviz ui --live: the Live view alone.
function startLive(): void {
  for (const b of document.querySelectorAll<HTMLButtonElement>("nav button")) b.hidden = b.dataset.view !== "live";
  const live = new LiveView($("live-status"), $("live-chart"), $("live-sites") as HTMLTableElement,
    $("live-instruments") as HTMLTableElement, $("live-log"), $("live-cursor") as HTMLInputElement);
  $("live-pause").addEventListener("click", () => live.pause());
  $("live-now").addEventListener("click", () => live.now());
  $("live-cursor").addEventListener("input", (e) => live.moveTo(Number((e.target as HTMLInputElement).value)));
  $("live-snapshot").addEventListener("click", () => {
    live.snapshot().then((msg) => ($("live-status").dataset.snapshot = msg), reportError);
  });
  const select = $("live-pid") as HTMLSelectElement;
  select.addEventListener("change", () => live.follow_pid(Number(select.value)));
  const list = () => live.listProcesses(select, $("live-procs")).catch(() => {});
  list();
  setInterval(list, 2000);
  current = "live";
  for (const s of document.querySelectorAll<HTMLElement>(".view")) s.classList.toggle("active", s.id === "view-live");
  document.body.dataset.ready = "live";
  live.run().catch(reportError);
}

async function start(): Promise<void> {
  const mode = standalone ? { mode: "trace" } : await get<{ mode: string; diff?: boolean }>("/api/mode");
  if (mode.mode === "live") return startLive();
  if ((mode as { diff?: boolean }).diff) (document.querySelector('nav button[data-view="diff"]') as HTMLElement).hidden = false;
  $("diff-cost").addEventListener("change", () => {
    delete document.body.dataset.ready;
    reloadDiff().then(() => (document.body.dataset.ready = "diff"), reportError);
  });
  flame = new FlameView($("flame"), $("flame-details"), $("flame-status"));
  sites = new SitesView($("sites-table") as HTMLTableElement, $("function-panel"), $("sites-status"));
  heapmap = new HeapMapView($("heapmap-id") as HTMLSelectElement, $("heapmap-canvas") as HTMLCanvasElement,
    $("heapmap-details"), $("heapmap-legend") as HTMLTableElement, $("heapmap-status"),
    $("heapmap-time") as HTMLInputElement);
  $("heapmap-id").addEventListener("change", () => {
    delete document.body.dataset.ready;
    heapmap.load(($("heapmap-id") as HTMLSelectElement).value).then(() => (document.body.dataset.ready = "heapmap"), reportError);
  });
  heat = new HeatMapView($("heat-canvas") as HTMLCanvasElement, $("heat-by") as HTMLSelectElement,
    $("heat-details"), $("heat-status"), $("heat-axis"), $("heat-regions"));
  $("heapmap-play").addEventListener("click", () => heapmap.play($("heapmap-play")));
  calls = new CallGraphView($("calls-flame"), $("calls-details"), $("calls-functions") as HTMLTableElement,
    $("calls-function"), $("calls-status"));
  $("calls-metric").addEventListener("change", () => {
    delete document.body.dataset.ready;
    calls.load(($("calls-metric") as HTMLSelectElement).value).then(() => (document.body.dataset.ready = "calls"), reportError);
  });
  $("sites-cost").addEventListener("change", () => {
    delete document.body.dataset.ready;
    reloadSites().then(() => (document.body.dataset.ready = "sites"), reportError);
  });
  $("snap-id").addEventListener("change", () => {
    delete document.body.dataset.ready;
    reloadSnapshots(false).then(() => (document.body.dataset.ready = "snapshots"), reportError);
  });
  $("function-name").addEventListener("change", (e) => {
    const name = (e.target as HTMLInputElement).value.trim();
    if (!name) return;
    delete document.body.dataset.ready;
    sites.showFunction(name, ($("sites-cost") as HTMLSelectElement).value)
      .then(() => (document.body.dataset.ready = "sites"), reportError);
  });
  for (const b of document.querySelectorAll<HTMLButtonElement>("nav button"))
    b.addEventListener("click", () => show(b.dataset.view!));
  const reload = () => reloadFlame().then(() => (document.body.dataset.ready = "flame"), reportError);
  $("flame-cost").addEventListener("change", reload);
  $("flame-direction").addEventListener("change", reload);
  $("flame-search").addEventListener("input", (e) => flame.search((e.target as HTMLInputElement).value));
  $("flame-reset").addEventListener("click", () => flame.resetZoom());
  $("timeline-by").addEventListener("change", () => {
    delete drill.module;
    delete drill.function;
    redrawTimeline();
  });
  $("timeline-top").addEventListener("change", redrawTimeline);
  $("timeline-rank").addEventListener("change", redrawTimeline);
  $("timeline-add").addEventListener("change", redrawTimeline);
  const linked = readLink(); // before the listeners: nothing reloads yet
  showWindow();
  onWindowChange(windowChanged);
  onWindowChange(() => writeLink(current));
  for (const e of document.querySelectorAll<HTMLSelectElement>("select"))
    e.addEventListener("change", () => writeLink(current));
  $("window-clear").addEventListener("click", () => setWindow(null));
  loaded.add("summary");
  await loadSummary();
  if (linked && linked !== "summary") return show(linked);
  writeLink("summary");
  document.body.dataset.ready = "summary";
}

start().catch(reportError);
