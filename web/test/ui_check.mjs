// ui_check.mjs - drives `memviz ui` in Debian's headless chromium (through
// puppeteer-core) and prints, as one JSON document, what each view showed:
// tests/integration/cases_ui.py compares it with `memviz report --json`.
//
// usage: node web/test/ui_check.mjs URL FUNCTION [SHOTS_DIR]
//   FUNCTION: a function the flame graph must have (searched and hovered)
//   SHOTS_DIR: where to write a screenshot of each view (docs/images)
import puppeteer from "puppeteer-core";

const [url, func, shots] = process.argv.slice(2);
// MEMVIZ_UI_BRUSH=A,B: the brush drags from A to B of the chart's width
const [brushFrom, brushTo] = (process.env.MEMVIZ_UI_BRUSH || "0,0.5").split(",").map(Number);
const out = { console_errors: [], page_errors: [], failed_requests: [], network_requests: [] };
// A file (memviz html) must open with no network: every other request is
// refused, and listed.
const offline = url.startsWith("file://");

async function ready(page, view) {
  await page.waitForSelector(`body[data-ready="${view}"]`, { timeout: 15000 });
}

async function shot(page, name) {
  if (!shots) return;
  await new Promise((r) => setTimeout(r, 500)); // d3's transitions end on a later frame
  await page.screenshot({ path: `${shots}/ui-${name}.png` });
}

async function flameState(page) {
  return page.$eval("#flame-status", (e) => ({
    total: Number(e.dataset.total),
    frames: Number(e.dataset.frames),
    text: e.textContent,
    drawn: document.querySelectorAll("#flame svg g.frame, #flame svg g").length,
  }));
}

async function setSelect(page, id, value, view) {
  await page.evaluate(() => delete document.body.dataset.ready);
  await page.select(id, value);
  await ready(page, view);
}

const browser = await puppeteer.launch({
  executablePath: process.env.CHROMIUM || "/usr/bin/chromium",
  headless: true,
  args: ["--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage"],
});
try {
  const page = await browser.newPage();
  await page.setViewport({ width: 1200, height: 700 });
  page.on("console", (m) => m.type() === "error" && out.console_errors.push(m.text()));
  page.on("pageerror", (e) => out.page_errors.push(String(e)));
  page.on("requestfailed", (r) => out.failed_requests.push(r.url()));
  if (offline) {
    await page.setRequestInterception(true);
    page.on("request", (r) => {
      if (r.url() === url || r.url().startsWith("data:")) return r.continue();
      out.network_requests.push(r.url());
      return r.abort();
    });
  }
  const t0 = Date.now();
  await page.goto(url, { waitUntil: "load" });
  await ready(page, "summary");
  out.summary_ms = Date.now() - t0;
  out.summary = await page.$$eval("#summary td[data-field]", (tds) =>
    Object.fromEntries(tds.map((td) => [td.dataset.field, Number(td.dataset.value)])));
  out.program = await page.$eval("#program", (e) => e.textContent);
  out.sampled = await page.$eval("#summary", (t) => t.querySelector("caption")?.textContent || "");
  await shot(page, "summary");

  // memviz ui BASE NEW: the Diff view first
  if (await page.$eval('nav button[data-view="diff"]', (b) => !b.hidden)) {
    await page.click('nav button[data-view="diff"]');
    await ready(page, "diff");
    out.diff = await page.evaluate(() => ({
      totals: Object.fromEntries([...document.querySelectorAll("#diff-totals tr[data-field]")].map((tr) =>
        [tr.dataset.field, [Number(tr.dataset.base), Number(tr.dataset.new)]])),
      flame_total: Number(document.getElementById("diff-flame").dataset.total),
      flame_base_total: Number(document.getElementById("diff-flame").dataset.baseTotal),
      grew: [...document.querySelectorAll("#diff-grew tr")].map((tr) => [tr.dataset.key, Number(tr.dataset.delta)]),
      shrank: [...document.querySelectorAll("#diff-shrank tr")].map((tr) => [tr.dataset.key, Number(tr.dataset.delta)]),
    }));
    const frame = await page.evaluateHandle((f) =>
      [...document.querySelectorAll("#diff-flame svg g")].find((g) =>
        (g.querySelector("title")?.textContent || "").startsWith(f + ":")), func);
    if (frame.asElement()) {
      await ((await frame.asElement().$("rect")) || frame.asElement()).hover();
      await page.waitForFunction(() => document.getElementById("diff-details").dataset.delta, { timeout: 5000 })
        .catch(() => {});
      out.diff.hovered = await page.$eval("#diff-details", (e) => [e.textContent, Number(e.dataset.delta)]);
    }
    await shot(page, "diff");
  }

  await page.click('nav button[data-view="flame"]');
  await ready(page, "flame");
  out.flame = { peak: await flameState(page) };
  await shot(page, "flame");
  out.flame.function_drawn = await page.$$eval("#flame svg g", (gs, f) =>
    gs.some((g) => (g.textContent || "").includes(f)), func);
  // hover the function's frame: the details line names it
  const hovered = await page.evaluateHandle((f) =>
    [...document.querySelectorAll("#flame svg g")].find((g) =>
      (g.querySelector("title")?.textContent || g.textContent || "").startsWith(f)), func);
  if (hovered.asElement()) {
    const rect = (await hovered.asElement().$("rect")) || hovered.asElement();
    await rect.hover();
    await page.waitForFunction(() => document.getElementById("flame-details").textContent, { timeout: 5000 })
      .catch(() => {});
    out.flame.details = await page.$eval("#flame-details", (e) => e.textContent);
  }
  await page.type("#flame-search", func);
  out.flame.search_matches = await page.$eval("#flame-status", (e) => Number(e.dataset.matches));
  out.flame.search_value = await page.$eval("#flame-status", (e) => Number(e.dataset.matchedValue));
  for (const cost of ["leaked", "allocations", "bytes", "temporary"]) {
    await setSelect(page, "#flame-cost", cost, "flame");
    out.flame[cost] = await flameState(page);
  }
  await setSelect(page, "#flame-cost", "peak", "flame");
  await setSelect(page, "#flame-direction", "bottom-up", "flame");
  out.flame.bottom_up = await flameState(page);
  out.flame.bottom_up.first_frame = await page.$$eval("#flame svg g", (gs) =>
    gs.map((g) => g.querySelector("title")?.textContent || "").filter((t) => t && !t.startsWith("all"))[0] || "");

  // Sites: the table, a stack, a function's callers and callees, breakdowns
  await page.click('nav button[data-view="sites"]');
  await ready(page, "sites");
  out.sites = await page.evaluate(() => ({
    total: Number(document.getElementById("sites-status").dataset.total),
    rows: [...document.querySelectorAll("#sites-table tr.site")].map((tr) => ({
      stack: Number(tr.dataset.stack),
      cost: Number(tr.querySelector("td[data-value]").dataset.value),
      function: tr.querySelector("td[data-function]").dataset.function,
    })),
    sizes: {
      buckets: Number(document.getElementById("sizes-chart").dataset.buckets),
      allocations: Number(document.getElementById("sizes-chart").dataset.allocations),
      canvas: !!document.querySelector("#sizes-chart canvas"),
    },
    lifetimes: { total: Number(document.getElementById("lifetimes").dataset.total),
      never: Number(document.getElementById("lifetimes").dataset.never) },
    allocators: Object.fromEntries([...document.querySelectorAll("#allocators tr")].map((tr) =>
      [tr.dataset.function, Number(tr.querySelector("td[data-value]").dataset.value)])),
  }));
  await shot(page, "sites");
  await page.click("#sites-table tr.site td");
  out.sites.stack_shown = await page.$$eval("#sites-table tr.stack .fn", (fs) => fs.map((f) => f.textContent));
  // the stack's second frame: the allocating function's caller
  const link = await page.evaluateHandle(() => document.querySelectorAll("#sites-table tr.stack .fn")[1]);
  if (link.asElement()) {
    await page.evaluate(() => delete document.body.dataset.ready);
    await link.asElement().click();
    await ready(page, "sites");
    out.sites.function = await page.$eval("#function-panel", (p) => ({
      function: p.dataset.function, inclusive: Number(p.dataset.inclusive), self: Number(p.dataset.self),
      callers: [...p.querySelectorAll('table[data-list="callers"] tr')].length,
    }));
    await shot(page, "function");
  }

  // Snapshots: the default one (at exit), then the first of the list
  const snapshotState = () => page.evaluate(() => ({
    chosen: document.getElementById("snap-id").value,
    options: [...document.querySelectorAll("#snap-id option")].map((o) => [o.value, o.textContent]),
    status: document.getElementById("snap-status").textContent,
    kinds: Object.fromEntries([...document.querySelectorAll("#leak-kinds tr[data-kind]")].map((tr) =>
      [tr.dataset.kind, { bytes: Number(tr.querySelector("td[data-value]").dataset.value), blocks: Number(tr.dataset.blocks) }])),
    roots: [...document.querySelectorAll("#roots tr[data-kind]")].map((tr) =>
      [tr.dataset.kind, tr.dataset.name, Number(tr.querySelector("td[data-value]").dataset.value)]),
    records: [...document.querySelectorAll("#loss-records tr[data-kind]")].map((tr) =>
      [tr.dataset.kind, tr.dataset.function, Number(tr.querySelector("td[data-value]").dataset.value)]),
    sites: [...document.querySelectorAll("#retained-sites tr.site")].map((tr) =>
      [Number(tr.dataset.stack), Number(tr.querySelector("td[data-value]").dataset.value)]),
    growth: document.getElementById("growth-chart").dataset.sites,
    growth_canvas: !!document.querySelector("#growth-chart canvas"),
  }));
  await page.click('nav button[data-view="snapshots"]');
  await ready(page, "snapshots");
  out.snapshots = { first: await snapshotState() };
  if (out.snapshots.first.sites.length) {
    await page.click("#retained-sites tr.site td");
    out.snapshots.path = await page.$$eval("#retained-sites .path-step", (ps) => ps.map((p) => p.textContent.trim()));
  }
  await shot(page, "snapshots");
  if (out.snapshots.first.options.length > 1) {
    await setSelect(page, "#snap-id", out.snapshots.first.options[0][0], "snapshots");
    out.snapshots.other = await snapshotState();
  }

  // Heap map: the snapshot at exit, the legend, the block under a painted cell
  await page.click('nav button[data-view="heapmap"]');
  await ready(page, "heapmap");
  out.heapmap = await page.evaluate(() => {
    const c = document.getElementById("heapmap-canvas");
    return {
      cells: Number(c.dataset.cells), painted: Number(c.dataset.painted),
      status: document.getElementById("heapmap-status").textContent,
      legend: [...document.querySelectorAll("#heapmap-legend tr")].map((tr) => [Number(tr.dataset.stack), Number(tr.dataset.bytes)]),
    };
  });
  if (out.heapmap.painted) {
    const box = await (await page.$("#heapmap-canvas")).boundingBox();
    await page.mouse.move(box.x + 3, box.y + 3);
    await page.waitForFunction(() => document.getElementById("heapmap-details").textContent, { timeout: 5000 })
      .catch(() => {});
    out.heapmap.hover = await page.$eval("#heapmap-details", (e) => [e.textContent, Number(e.dataset.size || 0)]);
  }
  await shot(page, "heapmap");

  await page.click('nav button[data-view="timeline"]');
  await ready(page, "timeline");
  out.timeline_marks = await page.$$eval("#timeline-marks .mark", (ms) => ms.map((m) => [m.dataset.kind, m.textContent]));
  out.timeline = await page.$eval("#timeline", (e) => ({
    points: Number(e.dataset.points),
    peak: Number(e.dataset.peak),
    canvas: !!e.querySelector("canvas"),
    legend: e.querySelector(".u-legend")?.textContent || "",
  }));
  await shot(page, "timeline");
  await setSelect(page, "#timeline-by", "function", "timeline");
  out.timeline.split = await page.$eval("#timeline", (e) => ({
    series: Number(e.dataset.series),
    names: JSON.parse(e.dataset.names || "[]"),
    legend: e.querySelector(".u-legend")?.textContent || "",
  }));
  await shot(page, "timeline-split");
  // drill down: the first function's sites
  const drillLink = await page.$("#timeline-drill .fn");
  if (drillLink) {
    out.timeline.split.drill_into = await page.evaluate((e) => e.textContent, drillLink);
    await page.evaluate(() => delete document.body.dataset.ready);
    await drillLink.click();
    await ready(page, "timeline");
    out.timeline.split.drilled = await page.$eval("#timeline", (e) => JSON.parse(e.dataset.names || "[]"));
  }

  // the brush: drag across the middle of the chart, then the summary and
  // the flame graph show that window alone
  await setSelect(page, "#timeline-by", "", "timeline");
  const over = await page.$("#timeline .u-over");
  const box = await over.boundingBox();
  await page.evaluate(() => delete document.body.dataset.ready);
  await page.mouse.move(box.x + 1 + box.width * brushFrom, box.y + box.height / 2);
  await page.mouse.down();
  await page.mouse.move(box.x + box.width * brushTo, box.y + box.height / 2, { steps: 8 });
  await page.mouse.up();
  if (offline) {
    // a file has the whole run only: the brush says so
    await page.waitForFunction(() => document.getElementById("timeline-status").textContent, { timeout: 5000 })
      .catch(() => {});
    out.window = { standalone: await page.$eval("#timeline-status", (e) => e.textContent) };
    throw "done";
  }
  await ready(page, "timeline");
  out.window = await page.evaluate(() => ({
    from_ns: document.body.dataset.fromNs, to_ns: document.body.dataset.toNs,
    shown: !document.getElementById("window").hidden,
    text: document.getElementById("window-text").textContent,
  }));
  await page.click('nav button[data-view="summary"]');
  await ready(page, "summary");
  out.window.summary = await page.$$eval("#summary td[data-field]", (tds) =>
    Object.fromEntries(tds.map((td) => [td.dataset.field, Number(td.dataset.value)])));
  await page.click('nav button[data-view="flame"]');
  await ready(page, "flame");
  out.window.flame_peak = await flameState(page);
  await page.evaluate(() => delete document.body.dataset.ready);
  await page.click("#window-clear");
  await ready(page, "flame");
  out.window.cleared = await flameState(page);
} catch (e) {
  if (e !== "done") out.error = String(e);
} finally {
  await browser.close();
}
console.log(JSON.stringify(out));
