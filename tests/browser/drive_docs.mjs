// Check the built documentation site in Debian's headless Chromium (playwright-core; no browser download).
//
// Called by test_docs_site_browser.py with one JSON argument:
//   {bases: ["file:///.../site/", "http://127.0.0.1:PORT/"], plotly_page, inspector_page, search,
//    allowed_prefixes, screenshot_dir, timeout_ms}
// For each base it opens the plotly page (waits for every plotly figure to draw its SVG), the
// inspector page (waits for the static pictures to decode) and the home page (types a word into the
// search box, waits for results). Every request the pages make is recorded; one that is not file:,
// data:, blob:, about: or one of allowed_prefixes is reported as external. Prints one JSON line.
import { chromium } from "playwright-core";

const args = JSON.parse(process.argv[2]);
const timeout = args.timeout_ms || 60000;
const result = { ok: false, external_requests: [], console_errors: [], page_errors: [], failed_requests: [], runs: [] };
const t0 = Date.now();

const local = (url) => /^(file|data|blob|about):/.test(url) || args.allowed_prefixes.some((p) => url.startsWith(p));

const browser = await chromium.launch({
  executablePath: "/usr/bin/chromium",
  args: ["--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run", "--disable-background-networking",
    "--disable-component-update", "--disable-sync"],
});
try {
  for (const base of args.bases) {
    const run = { base: base.startsWith("file:") ? "file" : "http", times: {} };
    const context = await browser.newContext({ viewport: { width: 1300, height: 1000 } });
    const page = await context.newPage();
    page.setDefaultTimeout(timeout);
    page.on("request", (req) => { if (!local(req.url())) result.external_requests.push(req.url().slice(0, 200)); });
    page.on("requestfailed", (req) => result.failed_requests.push(`${req.url().slice(0, 160)}: ${req.failure()?.errorText}`));
    page.on("console", (msg) => { if (msg.type() === "error") result.console_errors.push(`${run.base}: ${msg.text().slice(0, 300)}`); });
    page.on("pageerror", (err) => result.page_errors.push(`${run.base}: ${String(err).slice(0, 300)}`));
    const shot = (name) => `${args.screenshot_dir}/docs-${run.base}-${name}.png`;

    // 1. plotly: every figure div gets plotly's SVG (.main-svg) once plotly.js has run
    let t = Date.now();
    await page.goto(base + args.plotly_page);
    const figures = page.locator(".plotly-graph-div");
    await figures.first().waitFor({ state: "attached" });
    run.plotly_divs = await figures.count();
    await page.waitForFunction(
      () => [...document.querySelectorAll(".plotly-graph-div")].every((d) => d.querySelector(".main-svg")),
    );
    run.plotly_drawn = await page.locator(".plotly-graph-div:has(.main-svg)").count();
    run.plotly_traces = await page.evaluate(
      () => [...document.querySelectorAll(".plotly-graph-div")].map((d) => (d.data || []).length),
    );
    run.plotly_js_src = await page.evaluate(
      () => [...document.scripts].map((s) => s.getAttribute("src")).filter((s) => s && s.includes("plotly")),
    );
    run.times.plotly_ms = Date.now() - t;
    await figures.first().scrollIntoViewIfNeeded();
    await page.screenshot({ path: shot("plotly") });

    // 2. the inspector's static picture (no kernel on a static site): decoded SVG images with nodes
    t = Date.now();
    await page.goto(base + args.inspector_page);
    const pictures = page.locator(".jp-RenderedSVG img");
    await pictures.first().waitFor({ state: "visible" });
    await page.waitForFunction(() => [...document.querySelectorAll(".jp-RenderedSVG img")].every((i) => i.complete));
    run.pictures = await pictures.evaluateAll((imgs) => imgs.map((img) => {
      const svg = img.src.startsWith("data:image/svg+xml;base64,") ? atob(img.src.split(",")[1]) : "";
      return { width: img.naturalWidth, height: img.naturalHeight, nodes: (svg.match(/class="node/g) || []).length };
    }));
    run.times.inspector_ms = Date.now() - t;
    await pictures.first().scrollIntoViewIfNeeded();
    await pictures.first().screenshot({ path: shot("inspector") });

    // 3. search: type like a user, wait for results
    t = Date.now();
    await page.goto(base + "index.html");
    await page.locator("label.md-search__icon, .md-search__input").first().waitFor({ state: "attached" });
    await page.keyboard.press("/"); // Material's shortcut focuses the search box
    const box = page.locator("input.md-search__input");
    await box.click();
    await box.pressSequentially(args.search, { delay: 40 });
    const items = page.locator(".md-search-result__item");
    await items.first().waitFor({ state: "visible" });
    run.search_results = await items.count();
    run.search_meta = (await page.locator(".md-search-result__meta").textContent()).trim();
    run.search_first = (await items.first().locator("h1, h2").first().textContent()).trim();
    run.search_first_href = await items.first().locator("a").first().getAttribute("href");
    run.search_marks = await page.locator(".md-search-result mark").allTextContents();
    run.times.search_ms = Date.now() - t;
    await page.screenshot({ path: shot("search") });

    await context.close();
    result.runs.push(run);
  }
  result.ok = true;
} catch (err) {
  result.error = String(err && err.stack ? err.stack : err).slice(0, 2000);
} finally {
  result.total_ms = Date.now() - t0;
  await browser.close();
  console.log(JSON.stringify(result));
}
