// Draw plotly figures in Debian's headless Chromium (playwright-core; no browser download) and report, for each,
// the labels a reader must be able to tell apart and which of them lie on top of each other.
//
// Called by test_figures_browser.py with one JSON argument: {page, screenshot_dir, timeout_ms}. `page` is a local
// HTML file (plotly.js inlined once) whose figures are <div class="gl-figure" id=NAME>, drawn by the page itself
// (window.__figuresDrawn is set once every Plotly.newPlot has resolved). For each figure, every tick label, annotation,
// legend entry and text label on the data (a scatter's `text`, a bar's value) is measured with getBoundingClientRect;
// two boxes that overlap by more than `slop_px` in both directions are reported as a pair. Prints one JSON line.
import { chromium } from "playwright-core";

const args = JSON.parse(process.argv[2]);
const timeout = args.timeout_ms || 120000;
const result = { ok: false, figures: {}, console_errors: [], external_requests: [] };

const browser = await chromium.launch({
  executablePath: "/usr/bin/chromium",
  args: ["--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run", "--disable-background-networking",
    "--disable-component-update", "--disable-sync"],
});
try {
  const page = await browser.newPage({ viewport: { width: 1300, height: 1000 } });
  page.setDefaultTimeout(timeout);
  page.on("request", (req) => { if (!/^(file|data|blob|about):/.test(req.url())) result.external_requests.push(req.url().slice(0, 200)); });
  page.on("console", (msg) => { if (msg.type() === "error") result.console_errors.push(msg.text().slice(0, 300)); });
  page.on("pageerror", (err) => result.console_errors.push(String(err).slice(0, 300)));
  await page.goto(args.page);
  await page.waitForFunction(() => window.__figuresDrawn === true);
  result.figures = await page.evaluate((slop) => {
    const visible = (el) => {
      for (let e = el; e && e.nodeType === 1; e = e.parentElement) {
        const cs = getComputedStyle(e);
        if (cs.display === "none" || cs.visibility === "hidden" || Number(cs.opacity) === 0) return false;
      }
      return true;
    };
    const box = (el, kind) => {
      const r = el.getBoundingClientRect();
      const text = (el.textContent || "").replace(/\s+/g, " ").trim();
      return { kind, text, x0: r.left, y0: r.top, x1: r.right, y1: r.bottom, shown: visible(el) };
    };
    const out = {};
    for (const div of document.querySelectorAll("div.gl-figure")) {
      const items = [];
      // tick labels of every axis (plotly keeps them in the axis layers above the plot)
      for (const t of div.querySelectorAll(".xaxislayer-above text, .yaxislayer-above text")) items.push(box(t, "tick"));
      for (const a of div.querySelectorAll("g.annotation")) {
        const t = a.querySelector(".annotation-text-g") || a;
        items.push(box(t, "annotation"));
      }
      for (const g of div.querySelectorAll("g.legend g.traces")) items.push(box(g, "legend"));
      for (const t of div.querySelectorAll("g.textpoint text, text.bartext")) items.push(box(t, "data label"));
      const shown = items.filter((b) => b.shown && b.text && b.x1 - b.x0 > 0.5 && b.y1 - b.y0 > 0.5);
      const overlaps = [];
      for (let i = 0; i < shown.length; i += 1) {
        for (let j = i + 1; j < shown.length; j += 1) {
          const a = shown[i], b = shown[j];
          const dx = Math.min(a.x1, b.x1) - Math.max(a.x0, b.x0);
          const dy = Math.min(a.y1, b.y1) - Math.max(a.y0, b.y0);
          if (dx > slop && dy > slop) {
            overlaps.push({ a: `${a.kind} "${a.text.slice(0, 60)}"`, b: `${b.kind} "${b.text.slice(0, 60)}"`,
              overlap_px: [Math.round(dx * 10) / 10, Math.round(dy * 10) / 10] });
          }
        }
      }
      const counts = {};
      for (const b of shown) counts[b.kind] = (counts[b.kind] || 0) + 1;
      out[div.id] = { counts, overlaps, drawn: div.querySelector(".main-svg") !== null };
    }
    return out;
  }, args.slop_px ?? 1);
  for (const div of await page.locator("div.gl-figure").all()) {
    const id = await div.getAttribute("id");
    await div.screenshot({ path: `${args.screenshot_dir}/figure-${id}.png` });
  }
  result.ok = true;
} catch (err) {
  result.error = String(err && err.stack ? err.stack : err).slice(0, 1500);
} finally {
  await browser.close();
  console.log(JSON.stringify(result));
}
