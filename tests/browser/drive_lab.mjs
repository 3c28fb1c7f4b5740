// Drive a running JupyterLab in Debian's headless Chromium (playwright-core; no browser download).
//
// Called by test_inspector_browser.py with one JSON argument:
//   {base, token, notebook, screenshot, pick, search, search_cases, export, expand, open_only, warm_cells,
//    clicks, heat_ids, hide_all_kinds, uncollapse, timeout_ms, ...}
// (hide_all_kinds: untick every kind in the first inspector's menu, report what the canvas says, tick them again)
// (uncollapse: after the click (and expand), untick "collapse repeats" and report what the details panel says)
// (heat_ids: node ids whose heat-map fill and outline to report, with the critical path and the legend)
// (warm_cells: run that many first cells before timing the rest; clicks: that many more clicks, timed)
// (open_only: open the notebook, report whether JupyterLab marked it changed, save it, stop)
// It opens the notebook, runs every cell, waits for the first graphlab inspector to draw, clicks a
// node of it (`pick`: a node id, or "" for the first kernel node drawn), waits for the details
// panel, saves a screenshot and prints one JSON line with what it saw and how long each step took.
import { chromium } from "playwright-core";

const args = JSON.parse(process.argv[2]);
const timeout = args.timeout_ms || 120000;
const times = {};
const t0 = Date.now();
const lap = (name, since) => { times[name] = Date.now() - since; };

// A heat-map inspector (gl.inspect(graph, profile=prof)) as the page draws it: for each of `ids` the fill its
// node's outline shape has (the SVG attribute and the computed colour) and its outline; which nodes carry the
// `critical-path` class and how those and the others are outlined; the legend's labels in µs with their swatches.
async function readHeat(inspector, ids) {
  return inspector.evaluate((el, wanted) => {
    const svg = el.querySelector("svg.gl-svg");
    const look = (g) => {
      const shape = g.querySelector("path, polygon, ellipse"); // the node's outline: the first shape drawn
      const cs = getComputedStyle(shape);
      return { fill_attr: shape.getAttribute("fill"), fill: cs.fill, stroke: cs.stroke, stroke_width: cs.strokeWidth };
    };
    const nodes = {};
    for (const id of wanted) {
      const g = svg.querySelector(`g.node[id="${CSS.escape(id)}"]`);
      nodes[id] = g ? look(g) : null;
    }
    const styles = (gs) => gs.map((g) => ({ id: g.id, ...look(g) }));
    const legend = [...svg.querySelectorAll("g.graph > text")]
      .filter((t) => /^[\d.,]+ µs$/.test(t.textContent.trim()))
      .map((t) => ({ label: t.textContent.trim(),
        swatch: t.previousElementSibling?.previousElementSibling?.getAttribute("fill") || null }));
    return {
      nodes,
      drawn: svg.querySelectorAll("g.node").length,
      critical: styles([...svg.querySelectorAll("g.node.critical-path")]),
      off_path: styles([...svg.querySelectorAll("g.node:not(.critical-path)")]),
      legend,
      legend_heading: [...svg.querySelectorAll("g.graph > text")].map((t) => t.textContent.trim())
        .find((t) => t === "GPU time per replay") || null,
      block_labels: [...svg.querySelectorAll("g.cluster.repeated-block text")].map((t) => t.textContent.trim())
        .filter((t) => t.includes("µs")),
      block_titles: [...svg.querySelectorAll("g.cluster.repeated-block")] // each block's whole label: "x32 (44 nodes, ...)"
        .map((g) => [...g.querySelectorAll("text")].map((t) => t.textContent.trim()).join(" ")),
    };
  }, ids);
}

const browser = await chromium.launch({
  executablePath: "/usr/bin/chromium",
  args: ["--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run", "--disable-background-networking",
    "--disable-component-update", "--disable-sync"],
});
const result = { ok: false, console_errors: [], external_requests: [], browser: browser.version() };
try { run: {
  const page = await browser.newPage({ viewport: { width: 1400, height: 1000 } });
  page.setDefaultTimeout(timeout);
  page.on("request", (req) => { // offline: nothing may leave 127.0.0.1
    const url = req.url();
    if (!url.startsWith(args.base) && !/^(data|blob|about):/.test(url)) result.external_requests.push(url.slice(0, 200));
  });
  page.on("console", (msg) => { if (msg.type() === "error") result.console_errors.push(msg.text().slice(0, 300)); });
  const url = `${args.base}/lab/workspaces/graphlab-test/tree/${args.notebook}?reset&token=${args.token}`;
  let t = Date.now();
  await page.goto(url);
  await page.waitForFunction(() => window.jupyterapp);
  await page.evaluate(() => window.jupyterapp.started);
  await page.waitForFunction((nb) => {
    const w = window.jupyterapp.shell.currentWidget;
    return w?.context?.path === nb && w?.sessionContext?.session?.kernel?.status === "idle";
  }, args.notebook);
  lap("lab_ready_ms", t);
  if (args.open_only) { // just open the notebook: does JupyterLab find something to change in it?
    await page.waitForTimeout(3000); // kernel info and the notebook's metadata have arrived by now
    result.dirty_after_open = await page.evaluate(() => window.jupyterapp.shell.currentWidget.context.model.dirty);
    await page.evaluate(() => window.jupyterapp.commands.execute("docmanager:save")); // what autosave would write
    await page.waitForFunction(() => !window.jupyterapp.shell.currentWidget.context.model.dirty);
    result.news_prompts = await page.getByText("official Jupyter news").count();
    result.ok = true;
    break run;
  }

  const execute = (command) => page.evaluate((c) => window.jupyterapp.commands.execute(c), command);
  if (args.warm_cells) { // run the first cells (imports, reading the graph) before the clock starts
    for (let i = 0; i < args.warm_cells; i += 1) await execute("notebook:run-cell-and-select-next");
    await page.waitForFunction((n) => {
      const prompts = [...document.querySelectorAll(".jp-CodeCell .jp-InputPrompt")].slice(0, n);
      const kernel = window.jupyterapp.shell.currentWidget.sessionContext.session.kernel;
      return prompts.length === n && prompts.every((p) => /\[\d+\]/.test(p.textContent)) && kernel.status === "idle";
    }, args.warm_cells);
  }
  t = Date.now();
  await execute(args.warm_cells ? "notebook:run-all-below" : "notebook:run-all-cells");
  const inspector = page.locator(".gl-inspector").first();
  await inspector.locator("svg.gl-svg g.node").first().waitFor({ state: "attached" });
  lap(args.warm_cells ? "inspector_cell_to_drawn_ms" : "first_inspector_drawn_ms", t);
  // Wait for the whole notebook: every code cell shows its execution count, e.g. "[7]:".
  await page.waitForFunction(() => {
    const prompts = [...document.querySelectorAll(".jp-CodeCell .jp-InputPrompt")];
    return prompts.length > 0 && prompts.every((p) => /\[\d+\]/.test(p.textContent));
  });
  lap("run_all_ms", t);
  result.news_prompts = await page.getByText("official Jupyter news").count(); // off, as scripts/lab.sh has it
  result.errors_in_outputs = await page.locator(".jp-OutputArea-output[data-mime-type='application/vnd.jupyter.stderr']").count();
  result.tracebacks = await page.locator(".jp-RenderedText[data-mime-type='application/vnd.jupyter.error']").allTextContents();
  result.inspectors = await page.locator(".gl-inspector").count();
  if (args.heat_ids) result.heat = await readHeat(inspector, args.heat_ids); // before a click restyles a node

  await inspector.scrollIntoViewIfNeeded();
  const node = args.pick
    ? inspector.locator(`g.node[id="${args.pick}"]`)
    : inspector.locator("svg.gl-svg g.node.kind-kernel").first();
  await node.waitFor({ state: "visible" });
  result.clicked = await node.getAttribute("id");
  // a node outside the drawing's view (a tall graph opens at its top): drag the drawing, as a user pans, until it
  // is in view, half a view at a time
  for (let step = 0; step < 40; step += 1) {
    const [view, box] = [await inspector.locator(".gl-canvas").boundingBox(), await node.boundingBox()];
    const [cx, cy] = [view.x + view.width / 2, view.y + view.height / 2];
    const [dx, dy] = [cx - (box.x + box.width / 2), cy - (box.y + box.height / 2)];
    if (Math.abs(dx) < view.width / 2 - 20 && Math.abs(dy) < view.height / 2 - 20) break;
    const clamp = (v, half) => Math.max(-half, Math.min(half, v));
    await page.mouse.move(cx, cy);
    await page.mouse.down();
    await page.mouse.move(cx + clamp(dx, view.width / 2 - 10), cy + clamp(dy, view.height / 2 - 10), { steps: 4 });
    await page.mouse.up();
    result.panned_to_pick = step + 1;
  }
  t = Date.now();
  await node.click();
  const kname = inspector.locator(".gl-details .gl-kname");
  await kname.waitFor({ state: "visible" });
  await page.waitForFunction(
    ([el, id]) => el.querySelector(`g.node.gl-selected[id="${id}"]`) !== null,
    [await inspector.elementHandle(), result.clicked],
  );
  lap("click_to_details_ms", t);
  const answered = async () => Number(await inspector.getAttribute("data-click-answer-ms"));
  result.click_answers_ms = [await answered()]; // pointer up to details drawn, timed in the page
  for (let i = 1; i <= (args.clicks || 0); i += 1) { // more clicks, on other kernels in view, like a user's
    const target = await page.evaluate(([el, skip]) => { // the centre of a kernel node inside the drawing's view
      const view = el.querySelector(".gl-canvas").getBoundingClientRect();
      const inside = [...el.querySelectorAll("svg.gl-svg g.node.kind-kernel")].map((g) => {
        const r = g.getBoundingClientRect();
        return { id: g.id, x: r.left + r.width / 2, y: r.top + r.height / 2 };
      }).filter((c) => c.x > view.left + 5 && c.x < view.right - 5 && c.y > view.top + 5 && c.y < view.bottom - 5
        && !el.querySelector(`g.node.gl-selected[id="${CSS.escape(c.id)}"]`));
      return inside[Math.min(skip, inside.length - 1)] || null;
    }, [await inspector.elementHandle(), i * 2]);
    if (!target) break;
    await page.evaluate((el) => { delete el.dataset.clickAnswerMs; }, await inspector.elementHandle());
    await page.mouse.click(target.x, target.y);
    await page.waitForFunction(([el, want]) => el.dataset.clickAnswerMs !== undefined &&
      el.querySelector(`g.node.gl-selected[id="${CSS.escape(want)}"]`) !== null, [await inspector.elementHandle(), target.id]);
    result.click_answers_ms.push(await answered());
  }
  result.details_title = await inspector.locator(".gl-details .gl-title").textContent();
  result.details_kernel = await kname.textContent();
  result.details_text = await inspector.locator(".gl-details").innerText();
  result.mount_ms = Number(await inspector.getAttribute("data-mount-ms"));
  // Zoom: ten Ctrl+wheel steps over the drawing, then one animation frame.
  const area = await inspector.locator(".gl-canvas").boundingBox();
  await page.mouse.move(area.x + area.width / 2, area.y + area.height / 2);
  t = Date.now();
  await page.keyboard.down("Control");
  for (let i = 0; i < 10; i += 1) await page.mouse.wheel(0, i < 5 ? -120 : 120);
  await page.keyboard.up("Control");
  await page.evaluate(() => new Promise((r) => requestAnimationFrame(() => r())));
  lap("zoom_10_wheel_steps_ms", t);
  await page.waitForTimeout(300); // let the highlight paint before the picture
  await inspector.screenshot({ path: args.screenshot });
  result.screenshot = args.screenshot;

  if (args.expand) { // the clicked node sits in a collapsed block: expand it from the details panel
    const before = await inspector.locator("svg.gl-svg g.node").count();
    await inspector.locator(".gl-details button", { hasText: "expand this block" }).click();
    await inspector.locator("svg.gl-svg g.cluster.repeated-block.expanded").first().waitFor({ state: "attached" });
    result.nodes_before_expand = before;
    result.nodes_after_expand = await inspector.locator("svg.gl-svg g.node").count();
  }
  if (args.search) { // type into the search box like a user (JupyterLab must not eat the keys)
    const box = inspector.locator("input.gl-search");
    await box.click();
    await box.pressSequentially(args.search, { delay: 30 });
    await page.waitForFunction((el) => el.querySelectorAll("g.gl-match").length > 0, await inspector.elementHandle());
    result.search_count_text = await inspector.locator(".gl-count").textContent();
    result.search_highlighted = await inspector.locator("g.gl-match").count();
    result.search_matched = await inspector.locator("g.gl-match").evaluateAll((gs) => gs.map((g) => g.id));
    await box.press("Shift+Enter"); // selects the previous match: from none, the last one (far down)
    await page.waitForFunction((el) => el.querySelector("g.gl-match.gl-selected") !== null, await inspector.elementHandle());
    const picked = inspector.locator("g.gl-match.gl-selected");
    result.enter_selected = await picked.getAttribute("id");
    const [view, node] = [await inspector.locator(".gl-canvas").boundingBox(), await picked.boundingBox()];
    const [nx, ny] = [node.x + node.width / 2, node.y + node.height / 2];
    result.selected_in_view = nx >= view.x && nx <= view.x + view.width && ny >= view.y && ny <= view.y + view.height;
  }
  if (args.search_cases) { // each case: replace the box's text like a user ("" = clear it), wait for Python's answer
    const box = inspector.locator("input.gl-search");
    const el = await inspector.elementHandle();
    result.search_cases = [];
    for (const text of args.search_cases) {
      await box.click();
      await box.press("Control+a");
      if (text) await box.pressSequentially(text, { delay: 30 }); else await box.press("Backspace");
      await page.waitForFunction(([node, want]) => node.dataset.searched === want, [el, text]);
      await page.evaluate(() => new Promise((r) => requestAnimationFrame(() => r())));
      result.search_cases.push({
        text,
        count: await inspector.locator(".gl-count").textContent(),
        dimmed: await inspector.locator(".gl-canvas").evaluate((c) => c.classList.contains("gl-searching")),
        highlighted: await inspector.locator("g.gl-match").count(),
      });
    }
  }
  if (args.hide_all_kinds) { // every kind unticked: the canvas says so, instead of going blank
    const menu = inspector.locator("details.gl-menu").first();
    await menu.locator("summary").click();
    const boxes = menu.locator(".gl-menu-list input[type=checkbox]");
    const n = await boxes.count();
    for (let i = 0; i < n; i += 1) {
      await boxes.nth(i).uncheck();
      await page.waitForTimeout(200); // each untick redraws in Python
    }
    await inspector.locator(".gl-notice").waitFor({ state: "visible" });
    result.notice_text = await inspector.locator(".gl-notice").innerText();
    result.nodes_with_every_kind_hidden = await inspector.locator("svg.gl-svg g.node").count();
    result.status_with_every_kind_hidden = await inspector.locator(".gl-status").innerText();
    await inspector.screenshot({ path: args.screenshot.replace(/\.png$/, "-nothing-drawn.png") });
    for (let i = 0; i < n; i += 1) { await boxes.nth(i).check(); await page.waitForTimeout(200); }
    await inspector.locator(".gl-notice").waitFor({ state: "hidden" });
    await menu.locator("summary").click();
    result.nodes_after_ticking_again = await inspector.locator("svg.gl-svg g.node").count();
  }
  if (args.export) { // an export button: Python writes the file and sends it back as a download link
    await inspector.locator(`button.gl-btn:text-is("${args.export.toUpperCase()}")`).click();
    const link = inspector.locator("a.gl-download");
    await link.waitFor({ state: "visible" });
    result.export_link = await link.getAttribute("download");
    result.export_status = await inspector.locator(".gl-status").innerText();
  }
  if (args.uncollapse) { // untick "collapse repeats" of the uncollapse-th inspector (one whose selected node sits in
    // a collapsed block): the details panel must follow the new drawing
    const view = page.locator(".gl-inspector").nth(args.uncollapse - 1);
    await view.scrollIntoViewIfNeeded();
    const el = await view.elementHandle();
    const folded = view.locator("svg.gl-svg g.node.in-repeated-block").first(); // a node of the collapsed block
    await folded.click();
    await view.locator(".gl-details .gl-note").waitFor({ state: "visible" });
    const before = await view.locator(".gl-details .gl-note").textContent();
    result.toggle_buttons_before_uncollapse = await view.locator(".gl-details button", { hasText: "this block" }).count();
    await view.locator("label.gl-check", { hasText: "collapse repeats" }).locator("input").uncheck();
    await page.waitForFunction(([node, was]) => {
      const note = node.querySelector(".gl-details .gl-note");
      return note && note.textContent !== was;
    }, [el, before]);
    result.note_before_uncollapse = before;
    result.note_after_uncollapse = await view.locator(".gl-details .gl-note").textContent();
    result.toggle_buttons_after_uncollapse = await view.locator(".gl-details button", { hasText: "this block" }).count();
  }
  if (args.diff_screenshot) { // the diff view: click a changed node of side A
    // the first inspector that draws two sides (notebook 04 opens three one-graph inspectors before it)
    const diffView = page.locator(".gl-inspector").filter({ has: page.locator("svg.gl-svg g.node.side-a") }).first();
    await diffView.scrollIntoViewIfNeeded();
    result.diff_hint = await diffView.locator(".gl-details .gl-hint").textContent();
    // "fit": the smallest node label on screen, in px (the font size the SVG gives it times the drawing's scale)
    await diffView.locator("button.gl-btn", { hasText: /^fit$/ }).click();
    await page.evaluate(() => new Promise((r) => requestAnimationFrame(() => r())));
    result.diff_fit = await diffView.evaluate((el) => {
      const svg = el.querySelector("svg.gl-svg");
      const view = el.querySelector(".gl-canvas").getBoundingClientRect();
      let smallest = Infinity, seen = 0;
      for (const t of svg.querySelectorAll("g.node text")) {
        const r = t.getBoundingClientRect();
        if (r.right < view.left || r.left > view.right || r.bottom < view.top || r.top > view.bottom) continue;
        const size = Number(t.getAttribute("font-size") || getComputedStyle(t).fontSize.replace("px", ""));
        const px = size * t.getScreenCTM().a;
        if (px > 0) { smallest = Math.min(smallest, px); seen += 1; }
      }
      return { smallest_text_px: Math.round(smallest * 10) / 10, texts_in_view: seen,
        status: el.querySelector(".gl-status").innerText };
    });
    await diffView.screenshot({ path: args.diff_screenshot.replace(/\.png$/, "-fit.png") });
    const changed = diffView.locator("svg.gl-svg g.node.side-a[class*=\"changed\"]").first();
    await changed.waitFor({ state: "visible" });
    result.diff_clicked = await changed.getAttribute("id");
    await changed.click();
    await diffView.locator(".gl-details .gl-note").waitFor({ state: "visible" });
    result.diff_note = await diffView.locator(".gl-details .gl-note").textContent();
    result.diff_counterparts = await diffView.locator("g.gl-match").count();
    await page.waitForTimeout(300);
    await diffView.screenshot({ path: args.diff_screenshot });
    result.diff_screenshot = args.diff_screenshot;
  }
  result.last_output = (await page.locator(".jp-CodeCell .jp-OutputArea-output").last().innerText()).slice(0, 500);
  if (args.page_screenshot) {
    await page.screenshot({ path: args.page_screenshot });
    result.page_screenshot = args.page_screenshot;
  }
  result.ok = true;
} } catch (err) {
  result.error = String(err && err.stack ? err.stack : err).slice(0, 2000);
} finally {
  lap("total_ms", t0);
  result.times = times;
  await browser.close();
  console.log(JSON.stringify(result));
}
