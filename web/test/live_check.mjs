// live_check.mjs - drives the Live view of `memviz ui --live` in Debian's
// headless chromium, one command a line on stdin, one JSON line back for
// each, so that tests/integration/cases_ui.py can step the program in
// between. Commands: state, wait-blocks N, pause, back, first, now,
// snapshot, procs (the processes offered), pick PID, quit (which reports
// the console errors).
//
// usage: node web/test/live_check.mjs URL
import puppeteer from "puppeteer-core";
import { createInterface } from "node:readline";

const [url] = process.argv.slice(2);
const errors = [];
const browser = await puppeteer.launch({
  executablePath: process.env.CHROMIUM || "/usr/bin/chromium",
  headless: true,
  args: ["--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage"],
});
const page = await browser.newPage();
await page.setViewport({ width: 1200, height: 800 });
page.on("console", (m) => m.type() === "error" && errors.push(m.text()));
page.on("pageerror", (e) => errors.push(String(e)));

const state = () => page.evaluate(() => {
  const s = document.getElementById("live-status");
  return {
    mode: s.dataset.mode, seq: Number(s.dataset.seq), heap_bytes: Number(s.dataset.heapBytes),
    heap_blocks: Number(s.dataset.heapBlocks), error: s.dataset.error || null,
    sites: [...document.querySelectorAll("#live-sites tr")].map((tr) => tr.dataset.function),
    tabs: [...document.querySelectorAll("nav button")].filter((b) => !b.hidden).map((b) => b.dataset.view),
  };
});

async function run(cmd, arg) {
  switch (cmd) {
    case "open":
      await page.goto(url, { waitUntil: "load" });
      await page.waitForSelector('body[data-ready="live"]', { timeout: 15000 });
      await page.waitForSelector("#live-status[data-mode]", { timeout: 15000 });
      return state();
    case "wait-blocks":
      await page.waitForFunction((n) => document.getElementById("live-status").dataset.heapBlocks === n,
        { timeout: 15000 }, arg).catch(() => {});
      return state();
    case "state":
      return state();
    case "procs":
      await page.waitForFunction(() => document.querySelectorAll("#live-pid option").length > 1, { timeout: 15000 })
        .catch(() => {});
      return {
        shown: await page.$eval("#live-procs", (e) => !e.hidden),
        procs: await page.$$eval("#live-pid option", (os) => os.map((o) => o.textContent)),
      };
    case "pick":
      await page.select("#live-pid", arg);
      await page.waitForFunction((pid) => document.getElementById("live-status").dataset.pid === pid,
        { timeout: 15000 }, arg).catch(() => {});
      return state();
    case "pause":
      await page.click("#live-pause");
      return state();
    case "back":
      await page.evaluate(() => {
        const c = document.getElementById("live-cursor");
        c.value = String(Number(c.value) - 1);
        c.dispatchEvent(new Event("input"));
      });
      return state();
    case "first":
      await page.evaluate(() => {
        const c = document.getElementById("live-cursor");
        c.value = c.min;
        c.dispatchEvent(new Event("input"));
      });
      return state();
    case "now":
      await page.click("#live-now");
      return state();
    case "snapshot":
      await page.click("#live-snapshot");
      await page.waitForFunction(() => document.getElementById("live-status").dataset.snapshot, { timeout: 40000 })
        .catch(() => {});
      return { message: await page.$eval("#live-status", (s) => s.dataset.snapshot || "") };
    case "shot":
      await page.screenshot({ path: arg });
      return {};
    default:
      return { errors };
  }
}

const rl = createInterface({ input: process.stdin });
for await (const line of rl) {
  const [cmd, arg] = line.trim().split(/\s+/, 2);
  let out;
  try {
    out = await run(cmd, arg);
  } catch (e) {
    out = { error: String(e) };
  }
  console.log(JSON.stringify(out));
  if (cmd === "quit") break;
}
await browser.close();
