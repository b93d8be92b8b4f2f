// The stand-in for the kernel in a run's page: one model per view, answering the views
// from the run's data embedded in the page (see tavernlab.view._page).
const data = JSON.parse(document.getElementById("tl-view-data").textContent);
const source = document.getElementById("tl-view-esm").textContent;
const url = URL.createObjectURL(new Blob([source], { type: "text/javascript" }));
const widgets = (await import(url)).default;

class PageModel {
  constructor(state, answer) {
    this.state = state; this.answer = answer; this.handlers = new Map(); this.dirty = new Set();
  }
  get(name) { return this.state[name]; }
  set(name, value) {
    const changed = JSON.stringify(this.state[name]) !== JSON.stringify(value);
    this.state[name] = value;
    this.dirty.add(name);
    if (changed) this.emit(name);
  }
  on(event, handler) {
    if (!this.handlers.has(event)) this.handlers.set(event, new Set());
    this.handlers.get(event).add(handler);
  }
  off(event, handler) { this.handlers.get(event)?.delete(handler); }
  emit(name) { for (const handler of this.handlers.get(`change:${name}`) || []) handler(); }
  save_changes() {
    const names = [...this.dirty];
    this.dirty.clear();
    const values = this.answer(this.state, names);
    for (const [name, value] of Object.entries(values)) { this.state[name] = value; this.emit(name); }
  }
}

function preview(state) {
  const p = data.previews[state.selected];
  if (!p) return state.selected ? { path: state.selected, kind: "missing", message: "not in this page" } : {};
  return p.kind === "text" ? { ...p, lines: p.lines.slice(0, state.preview_lines) } : p;
}

const tree = new PageModel({ _view: "tree", nodes: data.nodes, selected: "", filter: "",
  show_hidden: false, preview: {}, preview_lines: data.preview_lines, flash: {}, _hides: [] },
  (state, names) => {
    const out = {};
    if (names.includes("show_hidden")) out.nodes = state.show_hidden ? data.hidden_nodes : data.nodes;
    if (names.includes("selected") || names.includes("preview_lines")) out.preview = preview(state);
    return out;
  });

function windowOf(state) {
  const rows = [];
  for (const group of data.rounds) {
    const shown = group.bars.filter((b) => state.kinds.includes(b.kind) && state.statuses.includes(b.status));
    if (!shown.length) continue;
    const folded = state.collapsed.includes(group.round.round);
    rows.push({ ...group.round, collapsed: folded });
    if (!folded) rows.push(...shown);
  }
  return { total: rows.length, offset: 0, tail: !!state.viewport.tail, rows, counts: data.counts,
           now_ms: data.now_ms };
}

const timelineState = { _view: "timeline", viewport: { offset: 0, count: 80, tail: true },
  kinds: data.kinds, statuses: data.statuses, collapsed: [], selected: "", detail: {}, _hides: [] };
timelineState.window = windowOf(timelineState);
const timeline = new PageModel(timelineState, (state, names) => {
  const out = {};
  if (names.some((n) => ["viewport", "kinds", "statuses", "collapsed"].includes(n))) out.window = windowOf(state);
  if (names.includes("selected")) out.detail = data.details[state.selected] || {};
  return out;
});

widgets.render({ model: tree, el: document.getElementById("tl-tree") });
widgets.render({ model: timeline, el: document.getElementById("tl-timeline") });
document.body.dataset.tlReady = "true";
