// places_check.mjs - drives the Heap map's moments and the Heat map view
// of `memviz ui` on a trace recorded with --addresses, in Debian's
// headless chromium, and prints what they showed as one JSON document
// (tests/integration/cases_places.py checks it against the server's
// documents and the program's own output).
//
// usage: node web/test/places_check.mjs URL [SHOTS_DIR]
import puppeteer from "puppeteer-core";

const [url, shots] = process.argv.slice(2);
const out = { console_errors: [], page_errors: [], failed_requests: [] };

async function ready(page, view) {
  await page.waitForSelector(`body[data-ready="${view}"]`, { timeout: 20000 });
}

async function shot(page, name) {
  if (shots) await page.screenshot({ path: `${shots}/ui-${name}.png` });
}

// The first painted cell of a heap map canvas, hovered: the details line.
async function hoverPainted(page, canvasId, detailsId, columns, cellPx) {
  const box = await (await page.$(`#${canvasId}`)).boundingBox();
  const cell = await page.evaluate(() => window.__firstPainted ?? -1);
  if (cell < 0) return null;
  await page.evaluate((id) => (document.getElementById(id).textContent = ""), detailsId);
  await page.mouse.move(box.x + (cell % columns) * cellPx + 1, box.y + Math.floor(cell / columns) * cellPx + 1);
  await page.waitForFunction((id) => document.getElementById(id).textContent, { timeout: 10000 }, detailsId);
  return page.$eval(`#${detailsId}`, (e) => ({ text: e.textContent, cell: Number(e.dataset.cell), size: Number(e.dataset.size || 0) }));
}

const browser = await puppeteer.launch({
  executablePath: process.env.CHROMIUM || "/usr/bin/chromium",
  headless: true,
  args: ["--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage"],
});
try {
  const page = await browser.newPage();
  await page.setViewport({ width: 1200, height: 900 });
  page.on("console", (m) => m.type() === "error" && out.console_errors.push(m.text()));
  page.on("pageerror", (e) => out.page_errors.push(String(e)));
  page.on("requestfailed", (r) => out.failed_requests.push(r.url()));
  await page.goto(url, { waitUntil: "load" });
  await ready(page, "summary");

  await page.click('nav button[data-view="heapmap"]');
  await ready(page, "heapmap");
  out.options = await page.$$eval("#heapmap-id option", (os) => os.map((o) => o.value));
  await page.evaluate(() => delete document.body.dataset.ready);
  await page.select("#heapmap-id", "moments");
  await ready(page, "heapmap");
  // the middle frame, by the slider
  const frames = await page.$eval("#heapmap-time", (s) => Number(s.max) + 1);
  const mid = Math.floor(frames / 2);
  await page.$eval("#heapmap-time", (s, v) => {
    s.value = String(v);
    s.dispatchEvent(new Event("input"));
  }, mid);
  const state = () => page.evaluate(() => {
    const c = document.getElementById("heapmap-canvas");
    return {
      slider: Number(document.getElementById("heapmap-time").value),
      hidden: document.getElementById("heapmap-time").hidden,
      painted: Number(c.dataset.painted),
      cells: Number(c.dataset.cells),
      status: document.getElementById("heapmap-status").textContent,
      legend: document.querySelectorAll("#heapmap-legend tr").length,
    };
  });
  out.frames = frames;
  out.middle = await state();
  // the first painted cell, found from the canvas's pixels
  await page.evaluate(() => {
    const c = document.getElementById("heapmap-canvas");
    const size = Math.max(2, Math.floor(c.width / 128));
    const px = c.getContext("2d").getImageData(0, 0, c.width, c.height).data;
    window.__firstPainted = -1;
    for (let i = 0; i < Number(c.dataset.cells); i++) {
      const x = (i % 128) * size, y = Math.floor(i / 128) * size, o = (y * c.width + x) * 4;
      if (px[o] !== 255 || px[o + 1] !== 255 || px[o + 2] !== 255) {
        window.__firstPainted = i;
        break;
      }
    }
  });
  out.middle.hover = await hoverPainted(page, "heapmap-canvas", "heapmap-details", 128,
    await page.$eval("#heapmap-canvas", (c) => Math.max(2, Math.floor(c.width / 128))));
  await shot(page, "heapmap-moments");
  // Play from the first frame: it ends at the last
  await page.$eval("#heapmap-time", (s) => {
    s.value = "0";
    s.dispatchEvent(new Event("input"));
  });
  await page.click("#heapmap-play");
  await page.waitForFunction(() => document.getElementById("heapmap-play").textContent === "Play", { timeout: 30000 });
  out.played = await state();

  await page.click('nav button[data-view="heat"]');
  await ready(page, "heat");
  const heat = () => page.$eval("#heat-canvas", (c) => ({
    hot: Number(c.dataset.hot), max: Number(c.dataset.max), status: document.getElementById("heat-status").textContent,
    axis: [...document.querySelectorAll("#heat-axis span")].map((e) => e.textContent),
    regions: document.getElementById("heat-regions").textContent,
  }));
  out.heat_allocations = await heat();
  const box = await (await page.$("#heat-canvas")).boundingBox();
  await page.mouse.move(box.x + 2, box.y + 1);
  await page.waitForFunction(() => document.getElementById("heat-details").textContent, { timeout: 5000 });
  out.heat_hover = await page.$eval("#heat-details", (e) => ({ text: e.textContent, slice: Number(e.dataset.slice), cell: Number(e.dataset.cell) }));
  await shot(page, "heatmap");
  await page.select("#heat-by", "live");
  out.heat_live = await heat();
} catch (e) {
  out.error = String(e.stack || e);
} finally {
  await browser.close();
}
console.log(JSON.stringify(out));
