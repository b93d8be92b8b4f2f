// tavernlab Timeline view (anywidget ES module). The browser holds one window of rows: it
// sends `viewport` ({offset, count, tail}) as it scrolls and Python answers with `window`
// ({total, offset, rows, counts, now_ms}). Filters (`kinds`, `statuses`), folded rounds
// (`collapsed`) and `selected` go to Python; `detail` comes back for the selected bar.

const ROW = 26;
const MARGIN = 30;
const KINDS = ["tool", "shell", "js", "commit", "finish"];
const STATUSES = ["ok", "error", "cancelled", "running"];

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

function formatDuration(ms) {
  if (ms === null || ms === undefined) return "";
  if (ms < 1000) return `${Math.max(0, Math.round(ms))} ms`;
  if (ms < 60000) return `${(ms / 1000).toFixed(2)} s`;
  return `${Math.floor(ms / 60000)} min ${Math.floor((ms % 60000) / 1000)} s`;
}

function render({ model, el }) {
  let clockOffset = 0;       // browser clock minus the kernel's clock
  let follow = true;
  let requested = null;
  let ticking = null;

  const chips = h("div", { class: "tl-chips" });
  const followBox = h("input", { type: "checkbox" });
  followBox.checked = true;
  const summary = h("span", { class: "tl-summary" });
  const spacer = h("div", { class: "tl-tl-spacer" });
  const scroller = h("div", { class: "tl-tl-scroll" }, spacer);
  const detail = h("div", { class: "tl-detail" });
  el.append(h("div", { class: "tl-widget tl-timeline" },
    h("div", { class: "tl-toolbar" }, chips,
      h("label", { class: "tl-check" }, followBox, " follow"), summary),
    scroller, detail));

  const win = () => model.get("window") || { total: 0, offset: 0, rows: [] };
  const now = () => Date.now() - clockOffset;

  function chip(group, value, count) {
    const active = model.get(group).includes(value);
    return h("button", {
      type: "button", class: `tl-chip tl-chip-${value}${active ? " tl-on" : ""}`,
      "data-filter": `${group}:${value}`, title: `show or hide ${value}`,
      onclick: () => {
        const current = model.get(group);
        model.set(group, active ? current.filter((v) => v !== value) : [...current, value]);
        model.save_changes();
        drawChips();
      },
    }, h("span", { class: "tl-dot" }), `${value} ${count}`);
  }

  function drawChips() {
    const counts = win().counts || { kinds: {}, statuses: {} };
    chips.replaceChildren(
      ...KINDS.map((k) => chip("kinds", k, counts.kinds[k] || 0)),
      h("span", { class: "tl-sep" }),
      ...STATUSES.map((s) => chip("statuses", s, counts.statuses[s] || 0)));
    const bars = Object.values(counts.kinds || {}).reduce((a, b) => a + b, 0);
    summary.textContent = `${bars} bar${bars === 1 ? "" : "s"}`;
  }

  function geometry(row) {
    const [start, end] = row.span;
    const last = end ?? Math.max(now(), start + 1);
    const width = Math.max(last - start, 1);
    const stop = row.end_ms ?? now();
    const left = Math.min(Math.max((row.start_ms - start) / width, 0), 1);
    const size = Math.min(Math.max((stop - row.start_ms) / width, 0), 1 - left);
    return [left * 100, size * 100];
  }

  function roundRow(row, index) {
    const [start, end] = row.span;
    const length = formatDuration((end ?? now()) - start);
    const dots = STATUSES.filter((s) => row.statuses[s]).map((s) =>
      h("span", { class: `tl-count tl-status-${s}`, text: `${row.statuses[s]} ${s}` }));
    return h("div", {
      class: "tl-row tl-round", style: `top:${index * ROW}px`, "data-round": row.round,
      onclick: () => {
        const folded = model.get("collapsed");
        model.set("collapsed", row.collapsed ? folded.filter((r) => r !== row.round)
                                             : [...folded, row.round]);
        model.save_changes();
      },
    }, h("span", { class: "tl-caret", text: row.collapsed ? "▸" : "▾" }),
    h("span", { class: "tl-round-title", text: `Round ${row.round}` }),
    h("span", { class: "tl-round-meta", text: `${row.bars} bar${row.bars === 1 ? "" : "s"} · ${end === null ? "running · " : ""}${length}` }),
    h("span", { class: "tl-round-counts" }, ...dots));
  }

  function barRow(row, index) {
    const [left, width] = geometry(row);
    const elapsed = row.end_ms === null ? now() - row.start_ms : row.elapsed_ms;
    return h("div", {
      class: `tl-row tl-bar-row tl-status-${row.status}${row.id === model.get("selected") ? " tl-selected" : ""}`,
      style: `top:${index * ROW}px`, "data-id": row.id, "data-status": row.status, "data-kind": row.kind,
      title: row.error_code ? `${row.label}: ${row.error_code}` : row.label,
      onclick: () => { model.set("selected", row.id); model.save_changes(); drawRows(); },
    }, h("span", { class: `tl-kind tl-kind-${row.kind}`, text: row.kind }),
    h("span", { class: "tl-label", text: row.label }),
    h("span", { class: "tl-track" }, h("span", { class: "tl-bar", style: `left:${left}%;width:${width}%` })),
    h("span", { class: "tl-duration", text: formatDuration(elapsed) }));
  }

  function drawRows() {
    const w = win();
    spacer.style.height = `${Math.max(w.total, 1) * ROW}px`;
    const first = Math.floor(scroller.scrollTop / ROW) - 5;
    const last = first + Math.ceil(scroller.clientHeight / ROW) + 10;
    const out = [];
    w.rows.forEach((row, i) => {
      const index = w.offset + i;
      if (index < first || index > last) return;
      out.push(row.type === "round" ? roundRow(row, index) : barRow(row, index));
    });
    if (!w.total) {
      out.push(h("div", { class: "tl-empty", text: "No calls yet: they appear here as the run works." }));
    }
    spacer.replaceChildren(...out);
    const running = w.rows.some((r) => r.type === "bar" ? r.end_ms === null : r.span[1] === null);
    if (running && ticking === null) ticking = setInterval(drawRows, 250);
    if (!running && ticking !== null) { clearInterval(ticking); ticking = null; }
  }

  function requestView() {
    const w = win();
    const visible = Math.ceil(scroller.clientHeight / ROW) || 12;
    const first = Math.floor(scroller.scrollTop / ROW);
    const atBottom = scroller.scrollTop + scroller.clientHeight >= spacer.offsetHeight - 2;
    const tail = follow && atBottom;
    const covered = w.offset <= first && first + visible <= w.offset + w.rows.length;
    if (covered && !!w.tail === tail) return;
    const wanted = { offset: Math.max(0, first - MARGIN), count: visible + 2 * MARGIN, tail };
    const key = JSON.stringify(wanted);
    if (key === requested) return;
    requested = key;
    model.set("viewport", wanted);
    model.save_changes();
  }

  function onWindow() {
    const w = win();
    if (w.now_ms) clockOffset = Date.now() - w.now_ms;
    drawChips();
    drawRows();
    if (w.tail && follow) scroller.scrollTop = scroller.scrollHeight;
    requested = null;
  }

  function section(title, ...content) {
    return h("div", { class: "tl-section" }, h("div", { class: "tl-section-title", text: title }), ...content);
  }

  function drawDetail() {
    const d = model.get("detail") || {};
    if (!d.id) {
      detail.replaceChildren(h("div", { class: "tl-empty", text: "Select a bar to see its arguments and result." }));
      return;
    }
    const elapsed = d.end_ms === null ? "running" : formatDuration(d.elapsed_ms);
    const refs = (d.resource_refs || []).map((r) => h("span", { class: "tl-ref", text: r }));
    const files = (d.files || []).map((f) => h("li", {},
      h("span", { class: `tl-change tl-change-${f.change}`, text: f.change }),
      h("span", { class: "tl-file", text: f.fromPath ? `${f.fromPath} → ${f.path}` : f.path }),
      f.size !== undefined ? h("span", { class: "tl-meta", text: ` ${f.size} B` }) : null));
    detail.replaceChildren(
      h("div", { class: "tl-detail-head" },
        h("span", { class: `tl-kind tl-kind-${d.kind}`, text: d.kind }),
        h("span", { class: "tl-detail-title", text: d.label }),
        h("span", { class: `tl-pill tl-status-${d.status}`, text: d.status }),
        h("span", { class: "tl-meta", text: `round ${d.round} · ${elapsed}${d.error_code ? " · " + d.error_code : ""}` })),
      section("Arguments", h("pre", { class: "tl-code", text: d.arguments })),
      section("Result", h("pre", { class: "tl-code tl-result", text: d.result }),
        d.structured ? h("details", {}, h("summary", { text: "structured" }),
          h("pre", { class: "tl-code", text: d.structured })) : null),
      section(`Resource refs (${refs.length})`, refs.length ? h("div", { class: "tl-refs" }, ...refs)
        : h("div", { class: "tl-meta", text: "none" })),
      section(`Files changed (${files.length})`, files.length ? h("ul", { class: "tl-files" }, ...files)
        : h("div", { class: "tl-meta", text: "none" })));
  }

  let scrollQueued = false;
  const onScroll = () => {
    const atBottom = scroller.scrollTop + scroller.clientHeight >= spacer.offsetHeight - 2;
    if (!atBottom && follow && win().tail) { follow = false; followBox.checked = false; }
    if (scrollQueued) return;
    scrollQueued = true;
    requestAnimationFrame(() => { scrollQueued = false; drawRows(); requestView(); });
  };
  scroller.addEventListener("scroll", onScroll);
  followBox.addEventListener("change", () => {
    follow = followBox.checked;
    if (follow) scroller.scrollTop = scroller.scrollHeight;
    requestView();
  });
  const onSelected = () => { drawRows(); };
  model.on("change:window", onWindow);
  model.on("change:detail", drawDetail);
  model.on("change:selected", onSelected);
  model.on("change:kinds", drawChips);
  model.on("change:statuses", drawChips);
  onWindow();
  drawDetail();
  requestAnimationFrame(() => { onWindow(); requestView(); });
  return () => {
    if (ticking !== null) clearInterval(ticking);
    scroller.removeEventListener("scroll", onScroll);
    model.off("change:window", onWindow);
    model.off("change:detail", drawDetail);
    model.off("change:selected", onSelected);
    model.off("change:kinds", drawChips);
    model.off("change:statuses", drawChips);
  };
}

export default { render };
