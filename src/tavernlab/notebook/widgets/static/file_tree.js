// tavernlab FileTree view (anywidget ES module). Python sends the nodes in display order
// (`nodes`), flashes (`flash`) and the side pane (`preview`); the browser owns expand/collapse
// and the name filter, and sends `selected`, `filter`, `show_hidden` and `preview_lines`.

const ACCESS_LABEL = { writable: "writable", read_only: "read-only", hidden: "hidden" };
const FLASH_MS = 1600;
const MORE_LINES = 200;

function h(tag, attrs = {}, ...children) {
  const node = document.createElement(tag);
  for (const [key, value] of Object.entries(attrs)) {
    if (key === "class") node.className = value;
    else if (key === "text") node.textContent = value;
    else if (key.startsWith("on")) node.addEventListener(key.slice(2), value);
    else if (value !== undefined && value !== null) node.setAttribute(key, value);
  }
  node.append(...children.filter((c) => c !== null && c !== undefined));
  return node;
}

function formatSize(size) {
  if (size === null || size === undefined) return "";
  if (size < 1024) return `${size} B`;
  const units = ["KiB", "MiB", "GiB", "TiB"];
  let value = size;
  let unit = "B";
  for (const u of units) {
    value /= 1024;
    unit = u;
    if (value < 1024) break;
  }
  return `${value.toFixed(1)} ${unit}`;
}

function parentOf(path) {
  const i = path.lastIndexOf("/");
  return i < 0 ? "" : path.slice(0, i);
}

function badge(node) {
  if (node.kind === "refused") {
    return h("span", { class: "tl-badge tl-badge-refused", text: `refused: ${node.reason}` });
  }
  const wrap = h("span", { class: "tl-badges" },
    h("span", { class: `tl-badge tl-badge-${node.access}`, text: ACCESS_LABEL[node.access] }));
  if (node.creates) {
    wrap.append(h("span", { class: "tl-badge tl-badge-creates", text: "+ new",
      title: "the model may create entries inside" }));
  }
  return wrap;
}

function render({ model, el }) {
  const expanded = new Set();
  let initialised = false;
  const flashTimers = new Map();

  const filterBox = h("input", { class: "tl-filter", type: "search",
    placeholder: "Filter by name", value: model.get("filter") });
  const hidden = h("input", { type: "checkbox" });
  hidden.checked = model.get("show_hidden");
  const summary = h("span", { class: "tl-summary" });
  const list = h("div", { class: "tl-tree-list", role: "tree" });
  const pane = h("div", { class: "tl-preview" });
  const root = h("div", { class: "tl-widget tl-tree" },
    h("div", { class: "tl-toolbar" }, filterBox,
      h("label", { class: "tl-check" }, hidden, " hidden run files"), summary),
    h("div", { class: "tl-tree-body" }, list, pane));
  el.append(root);

  function nodes() { return model.get("nodes") || []; }

  function visibleRows() {
    const all = nodes();
    const needle = (model.get("filter") || "").toLowerCase();
    if (!initialised && all.length) {
      for (const n of all) if (n.kind === "directory" && n.depth === 0) expanded.add(n.path);
      initialised = true;
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
      if (hideBelow !== null && n.path.startsWith(hideBelow + "/")) continue;
      hideBelow = null;
      if (keep && !keep.has(n.path)) continue;
      rows.push(n);
      if (n.kind === "directory" && !keep && !expanded.has(n.path)) hideBelow = n.path;
    }
    return rows;
  }

  function childCounts() {
    const counts = new Map();
    for (const n of nodes()) {
      const parent = parentOf(n.path);
      counts.set(parent, (counts.get(parent) || 0) + 1);
    }
    return counts;
  }

  function drawList() {
    const rows = visibleRows();
    const counts = childCounts();
    const selected = model.get("selected");
    const scroll = list.scrollTop;
    list.replaceChildren(...rows.map((n) => {
      const isDir = n.kind === "directory";
      const open = isDir && (expanded.has(n.path) || !!model.get("filter"));
      const row = h("div", {
        class: `tl-node tl-kind-${n.kind}${n.path === selected ? " tl-selected" : ""}`,
        "data-path": n.path, "data-access": n.access, role: "treeitem",
        style: `padding-left:${8 + n.depth * 16}px`,
        onclick: () => {
          if (isDir) {
            if (expanded.has(n.path)) expanded.delete(n.path); else expanded.add(n.path);
          }
          model.set("selected", n.path);
          model.save_changes();
          drawList();
        },
      },
      h("span", { class: "tl-caret", text: isDir ? (open ? "▾" : "▸") : "" }),
      h("span", { class: "tl-icon", text: isDir ? "📁" : n.kind === "refused" ? "⚠" : "📄" }),
      h("span", { class: "tl-name", text: n.name, title: n.path }),
      h("span", { class: "tl-size", text: isDir ? `${counts.get(n.path) || 0} items` : formatSize(n.size) }),
      badge(n));
      if (flashTimers.has(n.path)) row.classList.add("tl-flash");
      return row;
    }));
    list.scrollTop = scroll;
    const files = nodes().filter((n) => n.kind === "file").length;
    summary.textContent = `${files} files`;
  }

  function drawPreview() {
    const p = model.get("preview") || {};
    if (!p.path) {
      pane.replaceChildren(h("div", { class: "tl-empty", text: "Select a file to see its content." }));
      return;
    }
    const head = h("div", { class: "tl-preview-head" },
      h("span", { class: "tl-preview-path", text: p.path }),
      p.access ? badge({ kind: p.kind === "refused" ? "refused" : "file", access: p.access,
        creates: p.creates, reason: (p.message || "").replace("refused: ", "") }) : null);
    const body = [];
    if (p.kind === "text") {
      const meta = `${formatSize(p.size)} · ${p.total_lines} lines · sha256 ${p.sha256.slice(0, 12)}…`;
      body.push(h("div", { class: "tl-meta", text: meta }));
      const pre = h("pre", { class: "tl-code" });
      pre.textContent = p.lines.map((line, i) => `${String(i + 1).padStart(4)}  ${line}`).join("\n");
      body.push(pre);
      if (p.lines.length < p.total_lines) {
        body.push(h("button", { class: "tl-more", type: "button",
          text: `Show ${Math.min(MORE_LINES, p.total_lines - p.lines.length)} more lines ` +
                `(${p.lines.length} of ${p.total_lines} shown)`,
          onclick: () => { model.set("preview_lines", p.lines.length + MORE_LINES); model.save_changes(); } }));
      }
    } else if (p.kind === "binary") {
      body.push(h("div", { class: "tl-meta", text: `binary file · ${formatSize(p.size)} (${p.size} bytes)` }),
        h("div", { class: "tl-sha", text: `sha256 ${p.sha256}` }));
    } else if (p.kind === "directory") {
      body.push(h("div", { class: "tl-meta", text: `directory · ${p.entries} entries` }));
    } else {
      body.push(h("div", { class: `tl-meta tl-${p.kind}`, text: p.message || p.kind }));
    }
    pane.replaceChildren(head, ...body);
  }

  function flash() {
    const f = model.get("flash") || {};
    const shown = new Set(visibleRows().map((n) => n.path));
    for (const path of f.paths || []) {
      let target = path;
      while (target && !shown.has(target)) target = parentOf(target);
      if (!target) continue;
      clearTimeout(flashTimers.get(target));
      flashTimers.set(target, setTimeout(() => { flashTimers.delete(target); drawList(); }, FLASH_MS));
    }
    drawList();
  }

  function revealSelected() {
    const selected = model.get("selected");
    for (let p = parentOf(selected || ""); p; p = parentOf(p)) expanded.add(p);
    drawList();
  }

  filterBox.addEventListener("input", () => {
    model.set("filter", filterBox.value);
    model.save_changes();
    drawList();
  });
  hidden.addEventListener("change", () => {
    model.set("show_hidden", hidden.checked);
    model.save_changes();
  });
  const onFilter = () => { if (filterBox.value !== model.get("filter")) filterBox.value = model.get("filter"); drawList(); };
  const onHidden = () => { hidden.checked = model.get("show_hidden"); };
  model.on("change:nodes", drawList);
  model.on("change:selected", revealSelected);
  model.on("change:filter", onFilter);
  model.on("change:show_hidden", onHidden);
  model.on("change:preview", drawPreview);
  model.on("change:flash", flash);
  revealSelected();
  drawPreview();
  return () => {
    for (const timer of flashTimers.values()) clearTimeout(timer);
    model.off("change:nodes", drawList);
    model.off("change:selected", revealSelected);
    model.off("change:filter", onFilter);
    model.off("change:show_hidden", onHidden);
    model.off("change:preview", drawPreview);
    model.off("change:flash", flash);
  };
}

export default { render };
