// tavernlab's widget views (one anywidget ES module for both; `_view` picks the view).
//
// FileTree: Python sends the nodes in display order (`nodes`), flashes (`flash`) and the side
// pane (`preview`); the browser owns expand/collapse and the name filter, and sends
// `selected`, `filter`, `show_hidden` and `preview_lines`.
//
// Timeline: the browser holds one window of rows. It sends `viewport` ({offset, count,
// tail}) as it scrolls and Python answers with `window` ({total, offset, rows, counts,
// now_ms}); filters (`kinds`, `statuses`), folded rounds (`collapsed`) and `selected` go to
// Python, and `detail` comes back for the selected bar. Running bars grow in the browser.

const ACCESS_LABEL = { writable: "writable", read_only: "read-only", hidden: "hidden" };
const FLASH_MS = 1600;
const MORE_LINES = 200;
const ROW = 26;
const MARGIN = 30;
const MAX_ROWS = 12;
const KINDS = ["model", "tool", "shell", "js", "commit", "finish", "mcp"];
const STATUSES = ["ok", "error", "cancelled", "running"];
const ICONS = {
  directory: '<svg viewBox="0 0 16 16" width="15" height="15" aria-hidden="true"><path d="M1.5 3.5h4.3l1.4 1.5h7.3v8.5h-13z" fill="currentColor"/></svg>',
  file: '<svg viewBox="0 0 16 16" width="15" height="15" aria-hidden="true"><path d="M3.5 1.5h6l3 3v10h-9z" fill="none" stroke="currentColor"/><path d="M9.5 1.5v3h3" fill="none" stroke="currentColor"/></svg>',
  refused: '<svg viewBox="0 0 16 16" width="15" height="15" aria-hidden="true"><path d="M8 1.5l7 13H1z" fill="none" stroke="currentColor"/><path d="M8 6v4M8 11.5v1.2" stroke="currentColor"/></svg>',
};

function h(tag, attrs = {}, ...children) {
  const node = document.createElement(tag);
  for (const [key, value] of Object.entries(attrs)) {
    if (key === "class") node.className = value;
    else if (key === "text") node.textContent = value;
    else if (key === "html") node.innerHTML = value;
    else if (key.startsWith("on")) node.addEventListener(key.slice(2), value);
    else if (value !== undefined && value !== null) node.setAttribute(key, value);
  }
  node.append(...children.filter((c) => c !== null && c !== undefined));
  return node;
}

// The figures of tavernlab.views._markup.format_size (a test compares the two): tenths of the
// largest unit reached, rounded half to even on the exact quotient (toFixed would round
// 1.25 up where Python rounds it to 1.2).
function formatSize(size) {
  if (size === null || size === undefined) return "";
  if (size < 1024) return `${size} B`;
  const units = ["KiB", "MiB", "GiB", "TiB"];
  let power = 1;
  while (power < units.length && size >= 1024 ** (power + 1)) power += 1;
  const scale = 1024 ** power;
  let tenths = Math.floor((size * 10) / scale);
  const rest = size * 10 - tenths * scale;
  if (rest * 2 > scale || (rest * 2 === scale && tenths % 2 === 1)) tenths += 1;
  return `${Math.floor(tenths / 10)}.${tenths % 10} ${units[power - 1]}`;
}

function formatDuration(ms) {
  if (ms === null || ms === undefined) return "";
  if (ms < 1000) return `${Math.max(0, Math.round(ms))} ms`;
  if (ms < 60000) return `${(ms / 1000).toFixed(2)} s`;
  return `${Math.floor(ms / 60000)} min ${Math.floor((ms % 60000) / 1000)} s`;
}

function plural(count, word) {
  return `${count} ${word}${count === 1 ? "" : "s"}`;
}

function parentOf(path) {
  const i = path.lastIndexOf("/");
  return i < 0 ? "" : path.slice(0, i);
}

function badges(node) {
  if (node.kind === "refused") {
    return h("span", { class: "tl-badge tl-badge-refused", text: `refused: ${node.reason}` });
  }
  return h("span", { class: "tl-badges" },
    h("span", { class: `tl-badge tl-badge-${node.access}`, text: ACCESS_LABEL[node.access] }),
    node.creates ? h("span", { class: "tl-badge-creates", text: "+",
      title: "the model may create new entries inside" }) : null);
}

class TreeView {
  constructor(model, el) {
    this.model = model;
    this.expanded = new Set();
    this.initialised = false;
    this.flashing = new Map();
    this.filterBox = h("input", { class: "tl-filter", type: "search",
      placeholder: "Filter by name", value: model.get("filter") });
    this.hidden = h("input", { type: "checkbox" });
    this.hidden.checked = model.get("show_hidden");
    this.summary = h("span", { class: "tl-summary" });
    this.list = h("div", { class: "tl-tree-list", role: "tree" });
    this.pane = h("div", { class: "tl-preview" });
    el.append(h("div", { class: "tl-widget tl-tree" },
      h("div", { class: "tl-toolbar" }, this.filterBox,
        h("label", { class: "tl-check" }, this.hidden, "hidden run files"), this.summary),
      h("div", { class: "tl-tree-body" }, this.list, this.pane)));
    this.listen();
    this.revealSelected();
    this.drawPreview();
  }

  listen() {
    const m = this.model;
    this.filterBox.addEventListener("input", () => {
      m.set("filter", this.filterBox.value);
      m.save_changes();
      this.drawList();
    });
    this.hidden.addEventListener("change", () => {
      m.set("show_hidden", this.hidden.checked);
      m.save_changes();
    });
    this.handlers = {
      "change:nodes": () => this.drawList(),
      "change:selected": () => this.revealSelected(),
      "change:filter": () => {
        if (this.filterBox.value !== m.get("filter")) this.filterBox.value = m.get("filter");
        this.drawList();
      },
      "change:show_hidden": () => { this.hidden.checked = m.get("show_hidden"); },
      "change:preview": () => this.drawPreview(),
      "change:flash": () => this.flash(),
    };
    for (const [event, handler] of Object.entries(this.handlers)) m.on(event, handler);
  }

  dispose() {
    for (const timer of this.flashing.values()) clearTimeout(timer);
    for (const [event, handler] of Object.entries(this.handlers)) this.model.off(event, handler);
  }

  nodes() { return this.model.get("nodes") || []; }

  visibleRows() {
    const all = this.nodes();
    const needle = (this.model.get("filter") || "").toLowerCase();
    if (!this.initialised && all.length) {
      for (const n of all) if (n.kind === "directory" && n.depth === 0) this.expanded.add(n.path);
      this.initialised = true;
    }
    let keep = null;
    if (needle) {
      keep = new Set();
      for (const n of all) {
        if (!n.name.toLowerCase().includes(needle)) continue;
        for (let p = n.path; p; p = parentOf(p)) keep.add(p);
      }
    }
    const rows = [];
    let hideBelow = null;
    for (const n of all) {
      if (hideBelow !== null && n.path.startsWith(`${hideBelow}/`)) continue;
      hideBelow = null;
      if (keep && !keep.has(n.path)) continue;
      rows.push(n);
      if (n.kind === "directory" && !keep && !this.expanded.has(n.path)) hideBelow = n.path;
    }
    return rows;
  }

  row(n, counts) {
    const isDir = n.kind === "directory";
    const open = isDir && (this.expanded.has(n.path) || !!this.model.get("filter"));
    const entries = counts.get(n.path) || 0;
    const classes = [`tl-node tl-kind-${n.kind}`];
    if (n.path === this.model.get("selected")) classes.push("tl-selected");
    if (this.flashing.has(n.path)) classes.push("tl-flash");
    return h("div", {
      class: classes.join(" "), "data-path": n.path, "data-access": n.access, role: "treeitem",
      style: `padding-left:${6 + n.depth * 16}px`, title: n.path,
      onclick: () => this.clicked(n),
    },
    h("span", { class: "tl-caret", text: isDir ? (open ? "▾" : "▸") : "" }),
    h("span", { class: `tl-icon tl-icon-${n.kind}`, html: ICONS[n.kind] }),
    h("span", { class: "tl-name", text: n.name }),
    h("span", { class: "tl-size", text: isDir ? (entries ? `${entries}` : "empty")
                                              : formatSize(n.size) }),
    badges(n));
  }

  clicked(n) {
    if (n.kind === "directory") {
      if (this.expanded.has(n.path)) this.expanded.delete(n.path);
      else this.expanded.add(n.path);
    }
    this.model.set("selected", n.path);
    this.model.save_changes();
    this.drawList();
  }

  drawList() {
    const counts = new Map();
    for (const n of this.nodes()) {
      const parent = parentOf(n.path);
      counts.set(parent, (counts.get(parent) || 0) + 1);
    }
    const scroll = this.list.scrollTop;
    this.list.replaceChildren(...this.visibleRows().map((n) => this.row(n, counts)));
    this.list.scrollTop = scroll;
    const files = this.nodes().filter((n) => n.kind === "file").length;
    this.summary.textContent = plural(files, "file");
  }

  previewBody(p) {
    if (p.kind === "text") {
      const pre = h("pre", { class: "tl-code tl-lines" });
      pre.textContent = p.lines.map((line, i) => `${String(i + 1).padStart(4)}  ${line}`).join("\n");
      const left = p.total_lines - p.lines.length;
      return [
        h("div", { class: "tl-meta", text: `${formatSize(p.size)} · ${p.total_lines} lines · sha256 ${p.sha256.slice(0, 12)}…` }),
        pre,
        left > 0 ? h("button", { class: "tl-more", type: "button",
          text: `Show ${Math.min(MORE_LINES, left)} more lines (${p.lines.length} of ${p.total_lines} shown)`,
          onclick: () => { this.model.set("preview_lines", p.lines.length + MORE_LINES); this.model.save_changes(); } }) : null,
      ];
    }
    if (p.kind === "binary") {
      return [h("div", { class: "tl-meta", text: `binary file · ${formatSize(p.size)} (${p.size} bytes)` }),
        h("div", { class: "tl-sha", text: `sha256 ${p.sha256}` })];
    }
    if (p.kind === "directory") {
      return [h("div", { class: "tl-meta", text: `directory · ${p.entries} entr${p.entries === 1 ? "y" : "ies"}` })];
    }
    return [h("div", { class: `tl-meta tl-${p.kind}`, text: p.message || p.kind })];
  }

  drawPreview() {
    const p = this.model.get("preview") || {};
    if (!p.path) {
      this.pane.replaceChildren(h("div", { class: "tl-empty", text: "Select a file to see its content." }));
      return;
    }
    const head = h("div", { class: "tl-preview-head" },
      h("span", { class: "tl-preview-path", text: p.path, title: p.path }),
      p.access ? badges({ kind: p.kind === "refused" ? "refused" : "file", access: p.access,
        creates: p.creates, reason: (p.message || "").replace("refused: ", "") }) : null);
    this.pane.replaceChildren(head, ...this.previewBody(p).filter((n) => n));
  }

  flash() {
    const f = this.model.get("flash") || {};
    const shown = new Set(this.visibleRows().map((n) => n.path));
    for (const path of f.paths || []) {
      let target = path;
      while (target && !shown.has(target)) target = parentOf(target);
      if (!target) continue;
      clearTimeout(this.flashing.get(target));
      this.flashing.set(target, setTimeout(() => { this.flashing.delete(target); this.drawList(); }, FLASH_MS));
    }
    this.drawList();
  }

  revealSelected() {
    for (let p = parentOf(this.model.get("selected") || ""); p; p = parentOf(p)) this.expanded.add(p);
    this.drawList();
  }
}

class TimelineView {
  constructor(model, el) {
    this.model = model;
    this.clockOffset = 0; // the browser's clock minus the kernel's
    this.follow = true;
    this.requested = null;
    this.ticking = null;
    this.scrollQueued = false;
    this.chips = h("div", { class: "tl-chips" });
    this.followBox = h("input", { type: "checkbox" });
    this.followBox.checked = true;
    this.spacer = h("div", { class: "tl-tl-spacer" });
    this.scroller = h("div", { class: "tl-tl-scroll" }, this.spacer);
    this.detail = h("div", { class: "tl-detail" });
    el.append(h("div", { class: "tl-widget tl-timeline" },
      h("div", { class: "tl-toolbar" }, this.chips,
        h("label", { class: "tl-check tl-follow", title: "keep the newest rows in view" },
          this.followBox, "follow")),
      this.scroller, this.detail));
    this.listen();
    this.onWindow();
    this.drawDetail();
    requestAnimationFrame(() => { this.onWindow(); this.requestView(); });
    // The view may be drawn while it is not laid out (a hidden tab, an output not attached
    // yet, a notebook being restored): it then measures 0 px. Draw again once it has a size.
    this.resized = new ResizeObserver(() => {
      if (!this.scroller.clientHeight) return;
      if (this.follow && this.win().tail) this.scroller.scrollTop = this.scroller.scrollHeight;
      this.drawRows();
      this.requestView();
    });
    this.resized.observe(this.scroller);
  }

  listen() {
    this.onScroll = () => {
      if (!this.atBottom() && this.follow && this.win().tail) {
        this.follow = false;
        this.followBox.checked = false;
      }
      if (this.scrollQueued) return;
      this.scrollQueued = true;
      requestAnimationFrame(() => { this.scrollQueued = false; this.drawRows(); this.requestView(); });
    };
    this.scroller.addEventListener("scroll", this.onScroll);
    this.followBox.addEventListener("change", () => {
      this.follow = this.followBox.checked;
      if (this.follow) this.scroller.scrollTop = this.scroller.scrollHeight;
      this.requestView();
    });
    this.handlers = {
      "change:window": () => this.onWindow(),
      "change:detail": () => this.drawDetail(),
      "change:selected": () => this.drawRows(),
      "change:kinds": () => this.drawChips(),
      "change:statuses": () => this.drawChips(),
    };
    for (const [event, handler] of Object.entries(this.handlers)) this.model.on(event, handler);
  }

  dispose() {
    if (this.ticking !== null) clearInterval(this.ticking);
    this.resized.disconnect();
    this.scroller.removeEventListener("scroll", this.onScroll);
    for (const [event, handler] of Object.entries(this.handlers)) this.model.off(event, handler);
  }

  win() { return this.model.get("window") || { total: 0, offset: 0, rows: [] }; }

  now() { return Date.now() - this.clockOffset; }

  atBottom() {
    return this.scroller.scrollTop + this.scroller.clientHeight >= this.scroller.scrollHeight - 2;
  }

  chip(group, value, count) {
    const active = this.model.get(group).includes(value);
    return h("button", {
      type: "button", class: `tl-chip tl-chip-${value}${active ? " tl-on" : ""}`,
      "data-filter": `${group}:${value}`, title: `${active ? "hide" : "show"} ${value}`,
      onclick: () => {
        const current = this.model.get(group);
        this.model.set(group, active ? current.filter((v) => v !== value) : [...current, value]);
        this.model.save_changes();
        this.drawChips();
      },
    }, h("span", { class: "tl-dot" }), value, h("span", { class: "tl-chip-count", text: `${count}` }));
  }

  drawChips() {
    const counts = this.win().counts || { kinds: {}, statuses: {} };
    this.chips.replaceChildren(
      ...KINDS.map((k) => this.chip("kinds", k, counts.kinds[k] || 0)),
      h("span", { class: "tl-sep" }),
      ...STATUSES.map((s) => this.chip("statuses", s, counts.statuses[s] || 0)));
  }

  geometry(row) {
    const [start, end] = row.span;
    const last = end ?? Math.max(this.now(), start + 1);
    const width = Math.max(last - start, 1);
    const stop = row.end_ms ?? this.now();
    const left = Math.min(Math.max((row.start_ms - start) / width, 0), 1);
    const size = Math.min(Math.max((stop - row.start_ms) / width, 0), 1 - left);
    return [left * 100, size * 100];
  }

  roundRow(row, index) {
    const [start, end] = row.span;
    const counts = STATUSES.filter((s) => row.statuses[s]).map((s) =>
      h("span", { class: `tl-count tl-status-${s}`, text: `${row.statuses[s]} ${s}` }));
    return h("div", {
      class: "tl-row tl-round", style: `top:${index * ROW}px`, "data-round": row.round,
      onclick: () => {
        const folded = this.model.get("collapsed");
        this.model.set("collapsed", row.collapsed ? folded.filter((r) => r !== row.round)
                                                  : [...folded, row.round]);
        this.model.save_changes();
      },
    }, h("span", { class: "tl-caret", text: row.collapsed ? "▸" : "▾" }),
    h("span", { class: "tl-round-title", text: `Round ${row.round}` }),
    h("span", { class: "tl-round-meta",
      text: `${plural(row.bars, "bar")} · ${end === null ? "running " : ""}${formatDuration((end ?? this.now()) - start)}` }),
    h("span", { class: "tl-round-counts" }, ...counts));
  }

  barRow(row, index) {
    const [left, width] = this.geometry(row);
    const elapsed = row.end_ms === null ? this.now() - row.start_ms : row.elapsed_ms;
    const selected = row.id === this.model.get("selected") ? " tl-selected" : "";
    return h("div", {
      class: `tl-row tl-bar-row tl-status-${row.status}${selected}`,
      style: `top:${index * ROW}px`, "data-id": row.id, "data-status": row.status,
      "data-kind": row.kind, title: row.error_code ? `${row.label} (${row.error_code})` : row.label,
      onclick: () => { this.model.set("selected", row.id); this.model.save_changes(); this.drawRows(); },
    }, h("span", { class: `tl-kind tl-kind-${row.kind}`, text: row.kind }),
    h("span", { class: "tl-label", text: row.label }),
    h("span", { class: "tl-track" }, h("span", { class: "tl-bar", style: `left:${left}%;width:${width}%` })),
    h("span", { class: "tl-duration", text: formatDuration(elapsed) }));
  }

  drawRows() {
    const w = this.win();
    const shown = Math.min(MAX_ROWS, Math.max(w.total, 3));
    this.spacer.style.height = `${Math.max(w.total, 1) * ROW}px`;
    this.scroller.style.height = `${shown * ROW + 2}px`;
    // The rows in view come from the height set just above, not from a measure: a view not
    // laid out yet measures 0 px and would draw only the first few rows.
    const first = Math.floor(this.scroller.scrollTop / ROW) - 5;
    const last = first + shown + 10;
    const out = [];
    w.rows.forEach((row, i) => {
      const index = w.offset + i;
      if (index >= first && index <= last) {
        out.push(row.type === "round" ? this.roundRow(row, index) : this.barRow(row, index));
      }
    });
    if (!w.total) out.push(h("div", { class: "tl-empty", text: "No calls yet: they appear here as the run works." }));
    this.spacer.replaceChildren(...out);
    const running = w.rows.some((r) => (r.type === "bar" ? r.end_ms === null : r.span[1] === null));
    if (running && this.ticking === null) this.ticking = setInterval(() => this.drawRows(), 250);
    if (!running && this.ticking !== null) { clearInterval(this.ticking); this.ticking = null; }
  }

  requestView() {
    const w = this.win();
    const visible = Math.ceil(this.scroller.clientHeight / ROW) || 12;
    const first = Math.floor(this.scroller.scrollTop / ROW);
    const tail = this.follow && this.atBottom();
    const covered = w.offset <= first && first + visible <= w.offset + w.rows.length;
    if (covered && !!w.tail === tail) return;
    const wanted = { offset: Math.max(0, first - MARGIN), count: visible + 2 * MARGIN, tail };
    const key = JSON.stringify(wanted);
    if (key === this.requested) return;
    this.requested = key;
    this.model.set("viewport", wanted);
    this.model.save_changes();
  }

  onWindow() {
    const w = this.win();
    if (w.now_ms) this.clockOffset = Date.now() - w.now_ms;
    this.drawChips();
    this.drawRows();
    if (w.tail && this.follow) this.scroller.scrollTop = this.scroller.scrollHeight;
    this.requested = null;
  }

  drawDetail() {
    const d = this.model.get("detail") || {};
    if (!d.id) {
      this.detail.replaceChildren(h("div", { class: "tl-empty", text: "Select a bar to see its arguments and result." }));
      return;
    }
    const elapsed = d.end_ms === null ? "running" : formatDuration(d.elapsed_ms);
    const refs = (d.resource_refs || []).map((r) => h("span", { class: "tl-ref", text: r }));
    const files = (d.files || []).map((f) => h("li", {},
      h("span", { class: `tl-change tl-change-${f.change}`, text: f.change }),
      h("span", { class: "tl-file", text: f.fromPath ? `${f.fromPath} → ${f.path}` : f.path }),
      f.size !== undefined ? h("span", { class: "tl-meta", text: ` ${formatSize(f.size)}` }) : null));
    const section = (title, ...content) =>
      h("div", { class: "tl-section" }, h("div", { class: "tl-section-title", text: title }), ...content);
    const none = () => h("div", { class: "tl-meta", text: "none" });
    this.detail.replaceChildren(
      h("div", { class: "tl-detail-head" },
        h("span", { class: `tl-kind tl-kind-${d.kind}`, text: d.kind }),
        h("span", { class: "tl-detail-title", text: d.label }),
        h("span", { class: `tl-pill tl-status-${d.status}`, text: d.status }),
        h("span", { class: "tl-meta", text: `round ${d.round} · ${elapsed}${d.error_code ? ` · ${d.error_code}` : ""}` })),
      section("Arguments", h("pre", { class: "tl-code tl-wrap", text: d.arguments })),
      section("Result", h("pre", { class: "tl-code tl-wrap tl-result", text: d.result }),
        d.structured ? h("details", {}, h("summary", { text: "structured result" }),
          h("pre", { class: "tl-code tl-wrap", text: d.structured })) : null),
      section(`Resource refs (${refs.length})`, refs.length ? h("div", { class: "tl-refs" }, ...refs) : none()),
      section(`Files changed (${files.length})`, files.length ? h("ul", { class: "tl-files" }, ...files) : none()));
  }
}

const VIEWS = { tree: TreeView, timeline: TimelineView };

// A displayed widget is followed by its static view (another output, marked
// `.tl-static-<id>`), for renderers without widgets. While a live view of the widget shows,
// one style rule per static view hides that output; the rule goes with the last view.
const STATIC_VIEWS = new Map(); // id -> { style, views }

function hideStatic(id) {
  let entry = STATIC_VIEWS.get(id);
  if (!entry) {
    const style = document.createElement("style");
    style.textContent = `.jp-OutputArea-child:has(.tl-static-${id}), .tl-static-${id} { display: none !important; }`;
    document.head.append(style);
    entry = { style, views: 0 };
    STATIC_VIEWS.set(id, entry);
  }
  entry.views += 1;
}

function showStatic(id) {
  const entry = STATIC_VIEWS.get(id);
  if (!entry) return;
  entry.views -= 1;
  if (entry.views <= 0) {
    entry.style.remove();
    STATIC_VIEWS.delete(id);
  }
}

function render({ model, el }) {
  // A view restored from a saved notebook has no kernel behind it: what it would send (a
  // scroll position, a selection) has nowhere to go, and it shows what it was saved with.
  const viewModel = {
    get: (name) => model.get(name),
    set: (name, value) => model.set(name, value),
    on: (event, handler) => model.on(event, handler),
    off: (event, handler) => model.off(event, handler),
    save_changes: () => {
      try { model.save_changes(); } catch (error) {
        if (!String(error).includes("no comm channel")) throw error;
      }
    },
  };
  const view = new VIEWS[model.get("_view")](viewModel, el);
  let hidden = [];
  const follow = () => {
    const ids = (model.get("_hides") || []).filter((id) => /^[A-Za-z0-9_-]+$/.test(id));
    for (const id of ids) if (!hidden.includes(id)) hideStatic(id);
    for (const id of hidden) if (!ids.includes(id)) showStatic(id);
    hidden = ids;
  };
  follow();
  model.on("change:_hides", follow);
  return () => {
    model.off("change:_hides", follow);
    for (const id of hidden) showStatic(id);
    view.dispose();
  };
}

export default { render };
