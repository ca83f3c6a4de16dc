// summary.ts - the Summary view: the numbers of `memviz report`'s summary.
// Each cell carries its field and exact value (data-field, data-value).

import { Summary } from "./api";
import * as fmt from "./format";

const ROWS: [string, string, (v: number) => string][] = [
  ["peak_bytes", "Peak heap", fmt.bytes],
  ["peak_time_ns", "Peak at", fmt.duration],
  ["peak_rss_bytes", "Peak RSS", fmt.bytes],
  ["allocations", "Allocations", fmt.count],
  ["frees", "Frees", fmt.count],
  ["allocated_bytes", "Bytes allocated", fmt.bytes],
  ["temporary", "Temporary allocations", fmt.count],
  ["leaked_bytes", "Leaked", fmt.bytes],
  ["leaked_blocks", "Leaked blocks", fmt.count],
  ["threads", "Threads", fmt.count],
  ["duration_ns", "Duration", fmt.duration],
];

export function renderSummary(table: HTMLTableElement, s: Summary): void {
  table.replaceChildren();
  if (s.sample_bytes) {
    const cap = table.createCaption();
    cap.id = "sampled";
    cap.textContent = `A sampled run (memviz run --sample): one allocation in every ${fmt.bytes(s.sample_bytes)} ` +
      "on average was recorded; the numbers are estimates (memviz report gives their errors).";
  }
  for (const [key, label, f] of ROWS) {
    const v = s.summary[key];
    if (v === undefined) continue;
    const tr = table.insertRow();
    tr.insertCell().textContent = label;
    const td = tr.insertCell();
    td.className = "num";
    td.dataset.field = key;
    td.dataset.value = String(v);
    td.textContent = f(v);
  }
}
