// calls_check.mjs - drives the Call graph view of `memviz ui` (or of a
// `memviz html` file) in Debian's headless chromium and prints what it
// showed as one JSON document (tests/integration/cases_callgraph.py checks
// it against /api/callgraph and the program's known calls).
//
// usage: node web/test/calls_check.mjs URL [SHOTS_DIR]
import puppeteer from "puppeteer-core";

const [url, shots] = process.argv.slice(2);
const out = { console_errors: [], page_errors: [], failed_requests: [] };

async function ready(page, view) {
  await page.waitForSelector(`body[data-ready="${view}"]`, { timeout: 30000 });
}

const browser = await puppeteer.launch({
  executablePath: process.env.CHROMIUM || "/usr/bin/chromium",
  headless: true,
  args: ["--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage", "--allow-file-access-from-files"],
});
try {
  const page = await browser.newPage();
  await page.setViewport({ width: 1200, height: 900 });
  page.on("console", (m) => m.type() === "error" && out.console_errors.push(m.text()));
  page.on("pageerror", (e) => out.page_errors.push(String(e)));
  page.on("requestfailed", (r) => out.failed_requests.push(r.url()));
  await page.goto(url, { waitUntil: "load" });
  await ready(page, "summary");
  await page.click('nav button[data-view="calls"]');
  await ready(page, "calls");
  const state = () => page.evaluate(() => {
    const s = document.getElementById("calls-status");
    return {
      status: s.textContent,
      functions: Number(s.dataset.functions || -1),
      edges: Number(s.dataset.edges || -1),
      calls: Number(s.dataset.calls || -1),
      flame_total: Number(document.getElementById("calls-flame").dataset.total || -1),
      frames: document.querySelectorAll("#calls-flame g.frame, #calls-flame g rect").length,
      rows: [...document.querySelectorAll("#calls-functions tbody tr")].map((r) => [r.dataset.function, Number(r.dataset.calls)]),
    };
  });
  out.time = await state();
  if (shots) await page.screenshot({ path: `${shots}/ui-calls.png` });
  if (out.time.functions > 0) {
    // a function's callers and callees, from its row
    const name = process.env.CALLS_FUNCTION || "leaf";
    await page.evaluate((n) => {
      const row = [...document.querySelectorAll("#calls-functions tbody tr")].find((r) => r.dataset.function === n);
      row.querySelector("td.fn").click();
    }, name);
    out.panel = await page.evaluate(() => {
      const p = document.getElementById("calls-function");
      const list = (cls) => [...p.querySelectorAll(`ul.${cls} li`)].map((li) => [li.dataset.other, Number(li.dataset.calls), li.textContent]);
      return { function: p.dataset.function, hidden: p.hidden, callers: list("callers"), callees: list("callees") };
    });
    await page.evaluate(() => delete document.body.dataset.ready);
    await page.select("#calls-metric", "bytes");
    await ready(page, "calls");
    out.bytes = await state();
    // hovering a frame says what it is
    const rect = await page.$("#calls-flame g rect");
    if (rect) {
      await rect.hover();
      out.hover = await page.$eval("#calls-details", (e) => e.textContent);
    }
  }
} finally {
  await browser.close();
}
console.log(JSON.stringify(out));
