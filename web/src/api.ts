// api.ts - the queries the views make of `memviz ui`'s server
// (src/server/ui_http.c). A token in the page's address goes with each.

const token = new URLSearchParams(location.search).get("token");

// `memviz html`'s page carries its documents: query -> document.
const embedded: Record<string, unknown> | null = (() => {
  const e = document.getElementById("memviz-data");
  return e ? JSON.parse(e.textContent || "{}") : null;
})();

export const standalone = embedded !== null;

// A query as html.c spells it: the path, then the parameters by name.
function key(path: string, params: Record<string, string>): string {
  const q = new URLSearchParams(params);
  q.sort();
  const qs = q.toString();
  return qs ? `${path}?${qs}` : path;
}

export async function get<T>(path: string, params: Record<string, string> = {}): Promise<T> {
  if (embedded) {
    const k = key(path, params);
    if (!(k in embedded)) throw new Error(`${k} is not in this file (memviz ui answers it)`);
    return embedded[k] as T;
  }
  const q = new URLSearchParams(params);
  if (token) q.set("token", token);
  const qs = q.toString();
  const r = await fetch(qs ? `${path}?${qs}` : path);
  if (!r.ok) throw new Error(`${path}: ${r.status} ${await r.text()}`);
  return (await r.json()) as T;
}

export interface Summary {
  trace: string;
  process: { pid: number; exe: string | null; argv: string[]; exit_status?: number; exit_signal?: number };
  summary: Record<string, number>;
  sample_bytes: number; // 0, or the mean bytes between sampled allocations
}

export interface FlameDoc {
  cost: string;
  bytes: boolean;
  direction: string;
  total: number;
  min: number;
  // [parent index, function, module, file, inclusive, self], depth first;
  // names are indices into strings (-1: none)
  nodes: [number, number, number, number, number, number][];
  strings: string[];
}

export interface TimelineDoc {
  from_ns: number;
  to_ns: number;
  peak_bytes: number;
  peak_time_ns: number;
  t_ns: number[];
  heap: number[];
  heap_max: number[];
  rss: number[];
  // [t_ns, "P" phase | "L" log line | "S" snapshot, text]
  marks: [number, string, string][];
}

export interface SeriesDoc {
  by: string;
  rank: string;
  module: string | null;
  function: string | null;
  names: string[];
  ranked_by: number[];
  t_ns: number[];
  series: number[][];
  other: number[];
}

// [function, file, line, module]
export type Frame = [string, string | null, number, string | null];

export interface SiteRow {
  stack_id: number;
  cost: number;
  allocations: number;
  allocated_bytes: number;
  at_peak_bytes: number;
  leaked_bytes: number;
  leaked_blocks: number;
  temporary: number;
  peak_bytes: number;
  frames: Frame[];
}

export interface SitesDoc {
  cost: string;
  bytes: boolean;
  total: number;
  sites_with_cost: number;
  sites: SiteRow[];
}

export interface BreakdownDoc {
  sizes: { min: number; max: number; allocations: number; bytes: number }[];
  allocators: { function: string; allocations: number }[];
  threads: { tid: number; name: string | null; allocations: number; allocated_bytes: number; at_peak_bytes: number; leaked_bytes: number; temporary: number }[];
}

export interface FunctionDoc {
  function: string;
  cost: string;
  total: number;
  contexts: number;
  inclusive: number;
  self: number;
  callers: [string, number][];
  callees: [string, number][];
}

export interface SnapInfo {
  id: number;
  name: string;
  trigger: string;
  time_ns: number;
  blocks: number;
  complete: boolean;
}

export interface SnapshotDoc {
  snapshot: SnapInfo;
  leaks: Record<string, { bytes: number; blocks: number }>;
  records: { kind: string; bytes: number; blocks: number; frames: Frame[] }[];
  roots: { kind: string; name: string; label: string; retained_bytes: number; retained_blocks: number }[];
  sites: { stack_id: number; retained_bytes: number; retained_blocks: number; frames: Frame[]; path: string[] }[];
}

export interface GrowthDoc {
  snapshots: SnapInfo[];
  sites: { stack_id: number; growth_bytes: number; live_bytes: number[]; frames: Frame[] }[];
}

export interface DiffEntry {
  key: string;
  base: number;
  new: number;
  delta: number;
}

export interface DiffDoc {
  base: string;
  new: string;
  cost: string;
  totals: Record<string, [number, number]>;
  functions: { grew: DiffEntry[]; shrank: DiffEntry[] };
  sites: { grew: DiffEntry[]; shrank: DiffEntry[] };
}

export interface DiffFlameDoc {
  cost: string;
  bytes: boolean;
  total: number;
  base_total: number;
  // [parent index, function, module, inclusive, base inclusive]
  nodes: [number, string, string | null, number, number][];
}
