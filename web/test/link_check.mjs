// link_check.mjs - opens `memviz ui` at an address that names a view and
// its choices (web/src/link.ts) in headless chromium, and prints what the
// page then shows: the view, the flame graph's whole, the summary, the
// window, and the address the page keeps.
//
// usage: node web/test/link_check.mjs URL_WITH_HASH VIEW
import puppeteer from "puppeteer-core";

const [url, view] = process.argv.slice(2);
const out = { errors: [] };
const browser = await puppeteer.launch({
  executablePath: process.env.CHROMIUM || "/usr/bin/chromium",
  headless: true,
  args: ["--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage"],
});
try {
  const page = await browser.newPage();
  page.on("console", (m) => m.type() === "error" && out.errors.push(m.text()));
  page.on("pageerror", (e) => out.errors.push(String(e)));
  await page.goto(url, { waitUntil: "load" });
  await page.waitForSelector(`body[data-ready="${view}"]`, { timeout: 15000 });
  out.state = await page.evaluate(() => ({
    view: document.body.dataset.view,
    flame_cost: document.getElementById("flame-cost").value,
    flame_total: Number(document.getElementById("flame-status").dataset.total || 0),
    from_ns: document.body.dataset.fromNs,
    to_ns: document.body.dataset.toNs,
    summary: Object.fromEntries([...document.querySelectorAll("#summary td[data-field]")].map((td) =>
      [td.dataset.field, Number(td.dataset.value)])),
    hash: location.hash,
  }));
} catch (e) {
  out.error = String(e);
} finally {
  await browser.close();
}
console.log(JSON.stringify(out));
