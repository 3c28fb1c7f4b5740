// graphlab inspector: the front end of graphlab.ui.inspector.Inspector (an anywidget).
//
// Python holds all state (svg, selected, search, filters, expanded blocks) as synced traits and
// computes details, matches and the summary; this file only draws them and turns clicks, typing,
// wheel and drag into trait changes. No imports, no CDN: it must work offline in JupyterLab 4.

const MAX_SCALE = 8; // px per svg unit at the deepest zoom
const MAX_ZOOM_OUT = 4; // how far past "fit" one may zoom out
const CLICK_SLOP_PX = 4;
const READABLE_SCALE = 0.8; // below this a 10 pt label is too small to read
const MIN_SCALE = 0.8; // the farthest one may zoom out, "fit" included: 10 pt labels stay 8 px tall, 8 pt details 6.4 px
const MAX_HOME_SCALE = 1.4;
const HINT = "Click a node for details · drag to pan · Ctrl+scroll (or click the drawing, then scroll) to zoom";

function h(tag, attrs = {}, children = []) {
  const node = document.createElement(tag);
  for (const [key, value] of Object.entries(attrs)) {
    if (key === "text") node.textContent = value;
    else if (key.startsWith("on")) node.addEventListener(key.slice(2), value);
    else if (value !== false && value !== null && value !== undefined) node.setAttribute(key, value);
  }
  for (const child of [].concat(children)) if (child) node.append(child);
  return node;
}

function fmtBytes(n) {
  if (n === null || n === undefined) return "";
  const units = ["B", "KiB", "MiB", "GiB"];
  let v = n, i = 0;
  while (v >= 1024 && i < units.length - 1) { v /= 1024; i += 1; }
  return i === 0 ? `${n} B` : `${v.toFixed(1)} ${units[i]} (${n.toLocaleString()} B)`;
}

function buildToolbar(model, ui) {
  ui.search = h("input", {
    type: "search", class: "gl-search", placeholder: "search kernel names",
    "aria-label": "search kernel names", spellcheck: "false",
  });
  ui.search.value = model.get("search");
  let timer = null;
  ui.search.addEventListener("input", () => {
    clearTimeout(timer);
    timer = setTimeout(() => { model.set("search", ui.search.value); model.save_changes(); }, 150);
  });
  ui.search.addEventListener("keydown", (ev) => {
    if (ev.key !== "Enter") return;
    ev.preventDefault();
    const matches = model.get("matches");
    if (!matches.length) return;
    const at = matches.indexOf(model.get("selected"));
    const next = matches[(at + (ev.shiftKey ? matches.length - 1 : 1)) % matches.length];
    model.set("selected", next); model.save_changes();
  });
  ui.regex = h("input", { type: "checkbox", title: "treat the search text as a regular expression" });
  ui.regex.checked = model.get("search_regex");
  ui.regex.addEventListener("change", () => { model.set("search_regex", ui.regex.checked); model.save_changes(); });
  ui.matchCount = h("span", { class: "gl-count" });

  ui.kindMenu = h("details", { class: "gl-menu" });
  ui.familyMenu = h("details", { class: "gl-menu" });
  ui.collapse = h("input", { type: "checkbox", title: "draw repeated blocks (e.g. transformer layers) as one node" });
  ui.collapse.checked = model.get("collapse");
  ui.collapse.addEventListener("change", () => { model.set("collapse", ui.collapse.checked); model.save_changes(); });
  ui.rankdir = h("select", { title: "layout direction", "aria-label": "layout direction" }, [
    h("option", { value: "TB", text: "top → bottom" }), h("option", { value: "LR", text: "left → right" }),
    h("option", { value: "BT", text: "bottom → top" }), h("option", { value: "RL", text: "right → left" }),
  ]);
  ui.rankdir.value = model.get("rankdir");
  ui.rankdir.addEventListener("change", () => { model.set("rankdir", ui.rankdir.value); model.save_changes(); });

  const zoom = (f) => () => ui.zoomBy(f);
  const what = { svg: "the drawing as SVG", png: "the drawing as PNG", dot: "the drawing's Graphviz source",
    json: "the whole graph model as JSON" };
  const exportBtn = (fmt) => h("button", {
    class: "gl-btn", text: fmt.toUpperCase(), title: `save ${what[fmt]} (in graphlab-exports/ beside the notebook, and as a download)`,
    onclick: () => model.send({ event: "export", format: fmt }),
  });
  const canSearch = model.get("mode") === "graph";
  // JupyterLab must not treat keys typed in the toolbar as notebook shortcuts (Shift+Enter runs a cell).
  return h("div", { class: "gl-toolbar", "data-lm-suppress-shortcuts": "true" }, [
    canSearch ? h("div", { class: "gl-group" }, [ui.search, h("label", { class: "gl-check" }, [ui.regex, "regex"]), ui.matchCount]) : null,
    h("div", { class: "gl-group" }, canSearch ? [ui.kindMenu, ui.familyMenu,
      h("label", { class: "gl-check" }, [ui.collapse, "collapse repeats"]), ui.rankdir]
      : [h("label", { class: "gl-check" }, [ui.collapse, "collapse repeats"]), ui.rankdir]),
    h("div", { class: "gl-group" }, [
      h("button", { class: "gl-btn", text: "−", title: "zoom out", onclick: zoom(1 / 1.25) }),
      h("button", { class: "gl-btn", text: "fit", title: "fit the whole graph", onclick: () => ui.fit() }),
      h("button", { class: "gl-btn", text: "+", title: "zoom in", onclick: zoom(1.25) }),
      h("span", { class: "gl-sep", text: "export" }),
      exportBtn("svg"), exportBtn("png"), exportBtn("dot"), exportBtn("json"),
    ]),
  ]);
}

function fillMenu(model, menu, label, options, trait) {
  const hidden = new Set(model.get(trait));
  const shown = options.filter((o) => !hidden.has(o.name)).length;
  menu.replaceChildren(h("summary", { text: `${label} (${shown}/${options.length}) ▾` }));
  const list = h("div", { class: "gl-menu-list" });
  for (const opt of options) {
    const box = h("input", { type: "checkbox" });
    box.checked = !hidden.has(opt.name);
    box.addEventListener("change", () => {
      const now = new Set(model.get(trait));
      if (box.checked) now.delete(opt.name); else now.add(opt.name);
      model.set(trait, [...now]); model.save_changes();
    });
    list.append(h("label", { class: "gl-check" }, [box, `${opt.name} `, h("span", { class: "gl-dim", text: `${opt.count}` })]));
  }
  menu.append(list);
}

function detailRows(d) {
  const rows = [];
  const add = (k, v) => { if (v !== null && v !== undefined && v !== "") rows.push([k, v]); };
  add("kind", d.kind);
  add("family", d.family);
  add("grid", d.grid && `(${d.grid.join(", ")})`);
  add("block", d.block && `(${d.block.join(", ")})`);
  add("shared memory", d.shared_bytes !== undefined && d.shared_bytes !== null ? fmtBytes(d.shared_bytes) : null);
  add("copy", d.copy_direction);
  add("bytes copied", d.copy_bytes !== undefined ? fmtBytes(d.copy_bytes) : null);
  add("bytes set", d.memset_bytes !== undefined ? fmtBytes(d.memset_bytes) : null);
  add("value", d.memset_value);
  add("condition", d.conditional_type);
  add("bodies", d.body_graph_ids && d.body_graph_ids.join(", "));
  add("status", d.status);
  add("GPU time", d.gpu_time);
  add("module", d.module);
  add("critical path", d.critical_path);
  add("topological order", d.topo_position && `${d.topo_position} of ${d.topo_total}`);
  add("level", d.level !== undefined ? `${d.level} (nodes on the longest chain before it)` : null);
  add("graph", d.graph_id);
  add("node id", d.id);
  return rows;
}

// The rows Python wrote in words (graphlab.present), else the raw fields.
function rowsOf(d) { return d.rows || detailRows(d); }

// The two versions of a diff node side by side; rows whose values differ are marked.
function compareSides(sides) {
  if (!sides || !sides.length) return null;
  const rows = sides.map((side) => new Map(side.rows || [["name", side.short_name || side.kind], ...detailRows(side)]));
  const keys = [...new Set(rows.flatMap((m) => [...m.keys()]))];
  const table = h("table", { class: "gl-kv gl-compare" }, [
    h("tr", {}, [h("th", { text: "" }), ...sides.map((side) => h("th", { class: "gl-colhead", text: side.title }))]),
  ]);
  for (const key of keys) {
    const values = rows.map((m) => (m.has(key) ? String(m.get(key)) : "—"));
    const differs = !["graph", "node id"].includes(key) && values.some((v) => v !== values[0]);
    table.append(h("tr", { class: differs ? "gl-differs" : null }, [
      h("th", { text: key }), ...values.map((v) => h("td", { text: v })),
    ]));
  }
  return h("div", { class: "gl-side-block" }, [table]);
}

function renderDetails(model, ui) {
  const d = model.get("details");
  const panel = ui.details;
  if (!d || !d.id) {
    panel.replaceChildren(h("p", { class: "gl-hint", text: model.get("hint")
      || "Click a node to see its details. Drag to pan, scroll to zoom." }));
    return;
  }
  const clicked = ui.clickedAt;
  if (clicked && (d.id === clicked.id || d.drawn_as === clicked.id || d.block_id === clicked.id)) {
    ui.el.dataset.clickAnswerMs = (performance.now() - clicked.t).toFixed(1); // click to details, in the page
    ui.clickedAt = null;
  }
  const head = [h("div", { class: "gl-title", text: d.label || d.id })];
  if (d.demangled_name) head.push(h("div", { class: "gl-kname", text: d.demangled_name, title: "full demangled kernel name" }));
  if (d.note) head.push(h("p", { class: "gl-note", text: d.note }));
  if (d.block_id && d.can_toggle) {
    head.push(h("button", { class: "gl-btn gl-wide", text: d.expanded ? "collapse this block" : "expand this block",
      onclick: () => {
        const now = new Set(model.get("expanded"));
        if (now.has(d.block_id)) now.delete(d.block_id); else now.add(d.block_id);
        model.set("expanded", [...now]); model.save_changes();
      } }));
  }
  const table = h("table", { class: "gl-kv" });
  const mainRows = d.sides ? rowsOf(d).filter(([k]) => k === "status" || k === "kind") : rowsOf(d);
  for (const [k, v] of mainRows) table.append(h("tr", {}, [h("th", { text: k }), h("td", { text: String(v) })]));
  const links = (title, items) => {
    if (!items) return null;
    const box = h("div", { class: "gl-links" }, [h("div", { class: "gl-sub", text: `${title} (${items.length})` })]);
    if (!items.length) box.append(h("span", { class: "gl-dim", text: "none" }));
    for (const it of items.slice(0, 50)) {
      const drawn = ui.nodes.has(it.id);
      box.append(h("button", { class: drawn ? "gl-link" : "gl-link gl-undrawn",
        text: it.label, title: drawn ? "show this node" : "not drawn (hidden by a filter or folded into a repeat)",
        onclick: () => { model.set("selected", it.id); model.save_changes(); } }));
    }
    if (items.length > 50) box.append(h("span", { class: "gl-dim", text: `and ${items.length - 50} more` }));
    return box;
  };
  const raw = Object.entries(d.extra || {});
  let more = null;
  if (raw.length || (d.name && d.name !== d.demangled_name) || d.code) {
    more = h("details", { class: "gl-more" }, [h("summary", { text: "more fields from the dump, and the id for code" })]);
    if (d.name && d.name !== d.demangled_name) more.append(h("div", { class: "gl-mangled", text: d.name, title: "mangled name, as the driver reports it" }));
    const t = h("table", { class: "gl-kv" });
    for (const [k, v] of raw) t.append(h("tr", {}, [h("th", { text: k }), h("td", { text: String(v) })]));
    if (d.code) t.append(h("tr", {}, [h("th", { text: "id, for code" }), h("td", {}, [h("code", { text: `selected = "${d.code}"` })])]));
    more.append(t);
  }
  const parts = [...head, table, links("predecessors", d.predecessors), links("successors", d.successors),
    links("nodes in one repeat", d.members), more,
    compareSides(d.sides)];
  panel.replaceChildren(...parts.filter(Boolean));
}

function renderSummary(model, ui) {
  const s = model.get("summary");
  const box = ui.summary;
  box.replaceChildren();
  if (!s || !s.rows) return;
  box.append(h("div", { class: "gl-sub", text: s.title || "summary" }));
  const table = h("table", { class: "gl-kv" });
  for (const [k, v] of s.rows) table.append(h("tr", {}, [h("th", { text: k }), h("td", { text: String(v) })]));
  box.append(table);
  for (const [title, counts] of s.tables || []) {
    const t = h("table", { class: "gl-kv gl-counts" }, [h("caption", { text: title })]);
    for (const [k, v] of counts) t.append(h("tr", {}, [h("th", { text: k }), h("td", { text: String(v) })]));
    box.append(t);
  }
}

function setupCanvas(model, ui) {
  const canvas = ui.canvas;
  let svg = null, base = null, vb = null;
  const apply = () => { if (svg && vb) svg.setAttribute("viewBox", `${vb.x} ${vb.y} ${vb.w} ${vb.h}`); };
  const box = () => canvas.getBoundingClientRect();
  // Every view box keeps the canvas's aspect ratio, so screen pixels map onto it without offsets.
  // "fit" never makes text smaller than MIN_SCALE allows: a drawing too big for that is shown from its top
  // (and its left, when it is also too wide) at the smallest readable size, and the status line says so.
  ui.fit = () => {
    if (!base) return;
    const r = box();
    if (!r.width || !r.height) { vb = { ...base }; apply(); return; }
    const fitScale = Math.min(r.width / base.w, r.height / base.h);
    const s = Math.max(fitScale, MIN_SCALE);
    vb = { w: r.width / s, h: r.height / s };
    vb.x = vb.w >= base.w ? base.x - (vb.w - base.w) / 2 : base.x;
    vb.y = vb.h >= base.h ? base.y - (vb.h - base.h) / 2 : base.y;
    apply();
    ui.setViewNote(fitScale < MIN_SCALE
      ? "the whole drawing would be too small to read: shown from its top-left at the smallest readable size; drag to pan"
      : "");
  };
  // Initial view: the whole graph when it stays readable (text near its natural size), else its
  // top at natural size. Never blow a small graph up past MAX_HOME_SCALE.
  ui.home = () => {
    if (!base) return;
    const r = box();
    if (!r.width || !r.height) { ui.fit(); return; }
    const fitScale = Math.min(r.width / base.w, r.height / base.h); // px per svg unit
    const s = fitScale >= READABLE_SCALE ? Math.min(fitScale, MAX_HOME_SCALE) : Math.min(1, Math.max(READABLE_SCALE, r.width / base.w));
    vb = { x: base.x, y: base.y, w: r.width / s, h: r.height / s };
    vb.x = base.x - (vb.w - base.w) / 2; // centred horizontally
    if (fitScale >= READABLE_SCALE) vb.y = base.y - (vb.h - base.h) / 2; // whole graph: centred
    apply();
  };
  ui.zoomBy = (factor, cx, cy) => {
    if (!vb) return;
    const r = box();
    const fx = cx === undefined ? 0.5 : (cx - r.left) / r.width;
    const fy = cy === undefined ? 0.5 : (cy - r.top) / r.height;
    const fitW = Math.max(base.w, base.h * (r.width / r.height)); // viewBox width when fitted
    const widest = Math.min(fitW * MAX_ZOOM_OUT, r.width / MIN_SCALE); // never past readable text
    const w = Math.min(Math.max(vb.w / factor, r.width / MAX_SCALE), Math.max(widest, vb.w));
    const hgt = vb.h * (w / vb.w);
    vb = { x: vb.x + (vb.w - w) * fx, y: vb.y + (vb.h - hgt) * fy, w, h: hgt };
    apply();
    if (ui.setViewNote) ui.setViewNote("");
  };
  ui.centerOn = (g) => { // scroll the view to `g` unless it is already in sight
    if (!vb || !g) return;
    const r = box(), gr = g.getBoundingClientRect();
    if (!r.width || !r.height) return;
    const cx = gr.left + gr.width / 2 - r.left, cy = gr.top + gr.height / 2 - r.top;
    if (cx >= 0 && cx <= r.width && cy >= 0 && cy <= r.height) return;
    const k = vb.w / r.width; // svg units per screen pixel
    vb = { ...vb, x: vb.x + (cx - r.width / 2) * k, y: vb.y + (cy - r.height / 2) * k };
    apply();
  };
  ui.mount = () => {
    const t0 = performance.now();
    canvas.innerHTML = model.get("svg");
    if (ui.notice) canvas.append(ui.notice); // "nothing drawn" stays over the canvas
    if (ui.setViewNote) ui.setViewNote("");
    svg = canvas.querySelector("svg");
    ui.nodes = new Map(); ui.clusters = new Map(); ui.marked = []; // id -> <g>, once per drawing
    if (!svg) { base = vb = null; return; }
    for (const g of svg.querySelectorAll("g.node")) ui.nodes.set(g.id, g);
    for (const g of svg.querySelectorAll("g.cluster")) ui.clusters.set(g.id, g);
    const parts = (svg.getAttribute("viewBox") || "0 0 100 100").trim().split(/[\s,]+/).map(Number);
    base = { x: parts[0], y: parts[1], w: parts[2] || 1, h: parts[3] || 1 };
    svg.removeAttribute("width"); svg.removeAttribute("height");
    svg.setAttribute("preserveAspectRatio", "xMidYMin meet");
    svg.classList.add("gl-svg");
    ui.home();
    ui.mark();
    if (ui.onMount) ui.onMount(); // links in the details panel depend on what is drawn
    ui.el.dataset.mountMs = (performance.now() - t0).toFixed(1);
  };
  // Pan by dragging; a press that barely moves is a click on whatever is under it.
  let drag = null;
  canvas.addEventListener("pointerdown", (ev) => {
    if (ev.button !== 0 || !vb) return;
    canvas.focus({ preventScroll: true });
    drag = { x: ev.clientX, y: ev.clientY, vb: { ...vb }, moved: false };
  });
  canvas.addEventListener("pointermove", (ev) => {
    if (!drag) return;
    const dx = ev.clientX - drag.x, dy = ev.clientY - drag.y;
    if (!drag.moved && Math.hypot(dx, dy) < CLICK_SLOP_PX) return;
    if (!drag.moved) { drag.moved = true; canvas.setPointerCapture(ev.pointerId); canvas.classList.add("gl-panning"); }
    const r = box();
    const k = Math.max(drag.vb.w / r.width, drag.vb.h / r.height);
    vb = { ...drag.vb, x: drag.vb.x - dx * k, y: drag.vb.y - dy * k };
    apply();
  });
  const end = (ev) => {
    if (!drag) return;
    const wasDrag = drag.moved;
    drag = null;
    canvas.classList.remove("gl-panning");
    if (wasDrag) { ev.preventDefault(); return; }
    const g = ev.target.closest && ev.target.closest("g.node, g.cluster.repeated-block");
    if (!g || !canvas.contains(g) || g.classList.contains("legend") || g.classList.contains("diff-table")) return;
    ui.clickedAt = { id: g.id, t: performance.now() }; // renderDetails reports how long the answer took
    model.set("selected", g.id); model.save_changes();
  };
  canvas.addEventListener("pointerup", end);
  canvas.addEventListener("pointercancel", () => { drag = null; canvas.classList.remove("gl-panning"); });
  canvas.addEventListener("wheel", (ev) => {
    // Plain scrolling keeps scrolling the notebook until the drawing has been clicked into.
    if (!vb || !(ev.ctrlKey || ev.metaKey || document.activeElement === canvas)) return;
    ev.preventDefault();
    ui.zoomBy(Math.exp(-ev.deltaY * 0.0015), ev.clientX, ev.clientY);
  }, { passive: false });
}

function markNodes(model, ui) {
  const canvas = ui.canvas;
  // only what was marked last time is unmarked, and <g>s are found in the maps made at mount: a
  // query over a 5,000-node SVG per match and per neighbour made a click take a third of a second
  for (const g of ui.marked) g.classList.remove("gl-selected", "gl-match", "gl-neighbor");
  ui.marked = [];
  const find = (id) => ui.nodes.get(id) || ui.clusters.get(id) || null;
  const byId = (id) => { const g = find(id); if (g) ui.marked.push(g); return g; };
  const matches = model.get("matches");
  // `searched` is the text Python answered for (the box may already say more): the count and the
  // dimming follow it, so clearing the box after "0 matches" clears both
  const searched = model.get("searched");
  canvas.classList.toggle("gl-searching", searched !== "" && !model.get("search_error"));
  ui.el.dataset.searched = searched; // what the count and the dimming show (tests wait on it)
  for (const id of matches) { const g = byId(id); if (g) g.classList.add("gl-match"); }
  const d = model.get("details");
  for (const it of [...(d.predecessors || []), ...(d.successors || [])]) {
    const g = byId(it.id); if (g) g.classList.add("gl-neighbor");
  }
  const sel = model.get("selected");
  const g = sel ? byId(sel) || (d.drawn_as ? byId(d.drawn_as) : null) : null;
  if (g) { g.classList.add("gl-selected"); ui.centerOn(g); }
  const err = model.get("search_error");
  if (ui.matchCount) {
    const hidden = model.get("hidden_matches");
    const count = `${matches.length} match${matches.length === 1 ? "" : "es"}${hidden ? ` (+${hidden} not drawn)` : ""}`;
    ui.matchCount.textContent = err ? err : (searched ? count : "");
    ui.matchCount.classList.toggle("gl-error", Boolean(err));
  }
}

function render({ model, el }) {
  const ui = { el, nodes: new Map(), clusters: new Map(), marked: [] };
  el.classList.add("gl-inspector");
  ui.canvas = h("div", { class: "gl-canvas", tabindex: "0", "aria-label": "graph drawing" });
  ui.details = h("div", { class: "gl-details" });
  ui.summary = h("div", { class: "gl-summary" });
  ui.status = h("div", { class: "gl-status" });
  ui.notice = h("div", { class: "gl-notice", role: "status" });
  ui.canvas.append(ui.notice);
  ui.viewNote = "";
  const toolbar = buildToolbar(model, ui);
  const title = h("div", { class: "gl-head", text: model.get("title") });
  el.replaceChildren(title, toolbar,
    h("div", { class: "gl-body" }, [ui.canvas, h("div", { class: "gl-side" }, [ui.details, ui.summary])]),
    ui.status);
  ui.mark = () => markNodes(model, ui);
  ui.onMount = () => renderDetails(model, ui);
  setupCanvas(model, ui);

  const menus = () => {
    if (model.get("mode") !== "graph") return;
    fillMenu(model, ui.kindMenu, "kinds", model.get("kind_options"), "hide_kinds");
    fillMenu(model, ui.familyMenu, "families", model.get("family_options"), "hide_families");
  };
  const status = () => {
    const said = [model.get("status") || HINT, ui.viewNote].filter(Boolean).join(" · ");
    ui.status.replaceChildren(h("span", { text: said }));
  };
  ui.setViewNote = (text) => { if (text !== ui.viewNote) { ui.viewNote = text; status(); } };
  const notice = () => {
    const text = model.get("notice");
    ui.notice.textContent = text || "";
    ui.notice.style.display = text ? "block" : "none";
  };
  const sync = () => {
    ui.search.value === model.get("search") || (ui.search.value = model.get("search"));
    ui.regex.checked = model.get("search_regex");
    ui.collapse.checked = model.get("collapse");
    ui.rankdir.value = model.get("rankdir");
    title.textContent = model.get("title");
  };
  // First paint after layout so the canvas has its size (the initial view depends on it).
  requestAnimationFrame(() => ui.mount());
  menus(); renderDetails(model, ui); renderSummary(model, ui); status(); notice();

  const handlers = [
    ["change:svg", () => ui.mount()],
    ["change:details", () => { renderDetails(model, ui); ui.mark(); }],
    ["change:selected", () => ui.mark()],
    ["change:matches change:hidden_matches change:searched", () => ui.mark()],
    ["change:search_error", () => ui.mark()],
    ["change:summary", () => renderSummary(model, ui)],
    ["change:kind_options change:family_options change:hide_kinds change:hide_families", menus],
    ["change:search change:search_regex change:collapse change:rankdir change:title", sync],
    ["change:status", status],
    ["change:notice", notice],
    ["change:hint", () => renderDetails(model, ui)],
  ];
  for (const [name, fn] of handlers) model.on(name, fn);

  // Export replies: Python wrote the file; offer the same bytes as a browser download too.
  const onMsg = (msg) => {
    if (!msg || msg.event !== "exported") return;
    const bytes = msg.base64 ? Uint8Array.from(atob(msg.data), (c) => c.charCodeAt(0)) : msg.data;
    const url = URL.createObjectURL(new Blob([bytes], { type: msg.mime }));
    const link = h("a", { href: url, download: msg.filename, class: "gl-download", text: `download ${msg.filename}` });
    ui.status.replaceChildren(h("span", { text: `${model.get("status") || ""} · ` }), link);
  };
  model.on("msg:custom", onMsg);
  return () => {
    for (const [name, fn] of handlers) model.off(name, fn);
    model.off("msg:custom", onMsg);
  };
}

export default { render };
