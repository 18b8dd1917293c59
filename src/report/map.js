/* map.js: the partition map (docs/map.md). Reads the report embedded in
 * #carve-report (and the model's value types in #carve-model), draws a
 * summary, the graph on a canvas (partitions collapsed into one box each on
 * large graphs, expanded on click), a virtualised node table and the
 * partitions. Generic on purpose: unknown placements, reason codes, targets
 * given as a list and report sections it does not know are shown as they are. */
'use strict';
(function () {
  const t0 = performance.now();
  const $ = (id) => document.getElementById(id);
  function el(tag, attrs, ...kids) {
    const e = document.createElement(tag);
    if (attrs)
      for (const k in attrs) {
        const v = attrs[k];
        if (v == null || v === false) continue;
        if (k === 'class') e.className = v;
        else if (k === 'text') e.textContent = v;
        else if (k.startsWith('on')) e.addEventListener(k.slice(2), v);
        else e.setAttribute(k, v === true ? '' : v);
      }
    for (const c of kids) if (c != null) e.append(c instanceof Node ? c : String(c));
    return e;
  }
  const fmt = (v) => (typeof v === 'number' ? (Number.isInteger(v) ? v.toLocaleString('en-US') : String(+v.toFixed(3))) : String(v));

  /* ------------------------------------------------------------ the report */
  const R = JSON.parse($('carve-report').textContent);
  let MODEL = {};
  try { MODEL = JSON.parse($('carve-model').textContent || '{}') || {}; } catch (e) { MODEL = {}; }
  const vtypes = MODEL.values || {};
  const nodes = Array.isArray(R.nodes) ? R.nodes : [];
  const parts = Array.isArray(R.partitions) ? R.partitions : [];
  const N = nodes.length;

  function targetNames(t) {
    if (t == null) return [];
    if (Array.isArray(t)) return t.flatMap(targetNames);
    if (typeof t === 'object') return [t.name != null ? String(t.name) : JSON.stringify(t)];
    return [String(t)];
  }
  /* "targets" (every target, in priority order) when the report has it */
  const targets = targetNames(Array.isArray(R.targets) && R.targets.length ? R.targets : R.target !== undefined ? R.target : R.targets);
  /* a placement: a partition index (number, or {partition: i}), else a word */
  function partOfPlacement(p) {
    if (typeof p === 'number') return p;
    if (p && typeof p === 'object' && typeof p.partition === 'number') return p.partition;
    return -1;
  }
  const placeWord = (p) => (partOfPlacement(p) >= 0 ? 'delegated' : typeof p === 'string' ? p : p == null ? 'unknown' : JSON.stringify(p));
  const reasonCode = (n) => (n.reason && n.reason.code != null ? String(n.reason.code) : '');
  const partByIndex = new Map();
  parts.forEach((p, k) => partByIndex.set(typeof p.index === 'number' ? p.index : k, p));
  /* where a partition is drawn: its nodes' graph in the input model (a
   * partition cut from a graph an If was inlined into has nodes of the
   * inlined branch), else the graph it was cut from */
  function partGraph(pi) {
    const p = partByIndex.get(pi);
    if (!p) return null;
    const i = Array.isArray(p.nodes) && p.nodes.length ? nodeByName.get(p.nodes[0]) : undefined;
    return i !== undefined ? graphOf[i] : p.graph != null ? String(p.graph) : null;
  }
  const partTarget = (pi) => { const p = partByIndex.get(pi); return p && p.target != null ? targetNames(p.target).join(', ') : targets.join(', '); };
  const multiTarget = new Set(parts.map((p) => targetNames(p.target).join(','))).size > 1;
  const nodeByName = new Map();
  nodes.forEach((n, i) => { if (!nodeByName.has(n.name)) nodeByName.set(n.name, i); });
  const nodePart = new Int32Array(N);
  const graphOf = new Array(N);
  const piecesOf = (n) => n.decomposed || n.replaced_by || n.pieces || null;
  for (let i = 0; i < N; i++) {
    nodePart[i] = partOfPlacement(nodes[i].placement);
    graphOf[i] = nodes[i].graph != null ? String(nodes[i].graph) : 'main';
  }

  /* counts: the report's own when it has them, else counted here */
  const counted = { nodes: N, delegated: 0, cpu: 0, decomposed: 0, folded: 0, partitions: parts.length, cpu_reasons: {} };
  for (const n of nodes) {
    const w = placeWord(n.placement);
    const ps = piecesOf(n);
    if (w === 'delegated') counted.delegated++;
    else if (w === 'cpu') { counted.cpu++; const c = reasonCode(n) || '(none)'; counted.cpu_reasons[c] = (counted.cpu_reasons[c] || 0) + 1; }
    else if (w === 'decomposed') counted.decomposed++;
    else if (w === 'folded' || w === 'removed') counted.folded++;
    if (ps) for (const q of ps) { const pw = placeWord(q.placement); if (pw === 'delegated') counted.delegated++; else if (pw === 'cpu') counted.cpu++; }
  }
  const counts = Object.assign({}, counted, R.counts || {});
  const reasonCounts = (R.counts && R.counts.cpu_reasons) || counted.cpu_reasons;

  const REASONS = {
    constant: 'a Constant node: a value read by partitions from the outer scope',
    skipped_by_user: 'named in --cpu-nodes, or its op in --cpu-ops',
    custom_domain: 'an op of a non-ONNX domain that carve runs on CPU',
    unsupported_op: 'the target does not have the op',
    unsupported_opset: 'the target has the op, not at the model\'s opset',
    unsupported_dtype: 'an input or output has a dtype the target lacks',
    unknown_type: 'an input or output has no known type',
    rank: 'a tensor\'s rank is above the target\'s limit',
    dynamic_shape: 'the target needs static shapes (see --dim)',
    attribute: 'an attribute value the target does not take',
    data_dependent_shape: 'the output shape depends on input values',
    control_flow: 'If/Loop/Scan stay on CPU unless the target takes them whole',
    int64_range: 'an int64 constant outside the int32 range',
    dequantized_input: 'a piece of an op that reads a dequantized value',
    node_unit: 'another node of its QDQ node unit goes to CPU',
    no_runtime_input: 'its partition would read no runtime value',
    small_partition: 'its partition is smaller than --min-partition-nodes',
  };

  /* ------------------------------------------------------------ summary */
  const LABELS = { nodes: 'Nodes (input model)', delegated: 'Nodes delegated (with pieces)', cpu: 'Nodes on CPU (with pieces)', decomposed: 'Nodes decomposed', folded: 'Nodes folded or removed', partitions: 'Partitions' };
  function dlRow(dl, key, label, value) {
    dl.append(el('div', { 'data-k': key }, el('dt', { text: label }), el('dd', { text: fmt(value) })));
  }
  function renderSummary() {
    $('title-line').textContent = `${targets.length > 1 ? 'targets' : 'target'} ${targets.join(', ') || '?'} · carve ${R.carve_version || '?'} · report schema ${R.schema_version != null ? R.schema_version : '?'}`;
    const dl = $('summary');
    dlRow(dl, 'target', targets.length > 1 ? 'Targets' : 'Target', targets.join(', ') || '?');
    const tobjs = (Array.isArray(R.targets) ? R.targets : Array.isArray(R.target) ? R.target : [R.target]).filter((t) => t && typeof t === 'object');
    const backends = tobjs.filter((t) => t.backend != null).map((t) => `${t.name}: ${t.backend}${t.backend_version ? ' ' + t.backend_version : ''}`);
    if (backends.length) dlRow(dl, 'backend', backends.length > 1 ? 'Backends' : 'Backend', backends.join(', '));
    for (const k of Object.keys(counts)) if (k !== 'cpu_reasons' && typeof counts[k] !== 'object') dlRow(dl, k, LABELS[k] || k, counts[k]);
    if (R.rounds != null) dlRow(dl, 'rounds', 'Rounds', R.rounds);
    if (R.time_ms && R.time_ms.total != null) dlRow(dl, 'time', 'Time (ms)', R.time_ms.total);
    const box = $('reasons');
    const entries = Object.entries(reasonCounts).sort((a, b) => b[1] - a[1] || (a[0] < b[0] ? -1 : 1));
    const max = Math.max(1, ...entries.map((e) => e[1]));
    if (!entries.length) box.append(el('p', { class: 'hint', text: 'No node is on CPU.' }));
    for (const [code, n] of entries)
      box.append(el('button', { type: 'button', class: 'bar', role: 'listitem', 'data-reason': code, title: REASONS[code] || code,
        'aria-label': `${code}: ${n} node${n === 1 ? '' : 's'}; show them in the table`, onclick: () => setFilter('reason', code) },
        el('span', { class: 'code', text: code }), el('span', { class: 'track' }, el('span', { class: 'fill', style: `width:${(100 * n / max).toFixed(1)}%` })),
        el('span', { class: 'n', text: fmt(n) })));
    const fd = $('folding');
    const f = R.folding;
    if (!f) fd.append(el('div', null, el('dt', { text: 'folding' }), el('dd', { text: 'not in this report' })));
    else flatten(f, '', (k, v) => dlRow(fd, 'fold.' + k, k, v));
    const td = $('times');
    if (R.time_ms) flatten(R.time_ms, '', (k, v) => dlRow(td, 'time.' + k, k, v));
    /* sections this page does not know (newer reports): shown as they are */
    const known = new Set(['schema_version', 'carve_version', 'target', 'targets', 'nodes', 'partitions', 'folding', 'rounds', 'time_ms', 'graphs', 'counts']);
    /* recomposition (docs/recompose.md): each pattern, the op it made, its members */
    if (Array.isArray(R.recomposed) && R.recomposed.every((r) => r && typeof r === 'object' && Array.isArray(r.nodes))) {
      known.add('recomposed');
      const box = el('details', { id: 'recomposed', 'data-section': 'recomposed' }, el('summary', { text: `recomposed: ${R.recomposed.length} pattern${R.recomposed.length === 1 ? '' : 's'} made one op again` }));
      const ul = el('ul');
      for (const r of R.recomposed.slice(0, 2000)) {
        const members = el('span');
        r.nodes.forEach((nm, k) => { const i = nodeByName.get(nm); members.append(k ? ', ' : '', i !== undefined ? nodeButton(i) : nm); });
        ul.append(el('li', null, `${r.pattern != null ? r.pattern : '?'} → ${r.op != null ? r.op : '?'} ${r.node != null ? r.node : ''} from `, members));
      }
      box.append(ul);
      $('extra').append(box);
    }
    for (const k of Object.keys(R)) {
      if (known.has(k)) continue;
      const v = R[k];
      if (v !== null && typeof v === 'object') {
        let s = JSON.stringify(v, null, 1);
        if (s.length > 200000) s = s.slice(0, 200000) + '\n... (cut)';
        $('extra').append(el('details', { 'data-section': k }, el('summary', { text: `${k} (${Array.isArray(v) ? v.length + ' entries' : 'section'})` }), el('pre', { text: s })));
      } else {
        const dl2 = el('dl', { 'data-section': k });
        dlRow(dl2, k, k, v);
        $('extra').append(dl2);
      }
    }
  }
  function flatten(o, pre, fn) {
    for (const [k, v] of Object.entries(o)) {
      if (v !== null && typeof v === 'object' && !Array.isArray(v)) flatten(v, pre + k + '.', fn);
      else fn(pre + k, Array.isArray(v) ? v.join(', ') : v === true ? 'yes' : v === false ? 'no' : v);
    }
  }

  /* ------------------------------------------------------------ graph model */
  const prodOf = new Map(); /* value name -> producing node */
  for (let i = 0; i < N; i++) for (const o of nodes[i].outputs || []) if (o) prodOf.set(o, i);
  const graphNodes = new Map();
  for (let i = 0; i < N; i++) { const g = graphOf[i]; if (!graphNodes.has(g)) graphNodes.set(g, []); graphNodes.get(g).push(i); }
  const graphInfo = new Map();
  for (const g of Array.isArray(R.graphs) ? R.graphs : []) if (g && g.name != null && !graphInfo.has(String(g.name))) graphInfo.set(String(g.name), g);
  const graphNames = [...new Set([...graphInfo.keys(), ...graphNodes.keys()])];
  if (!graphNames.length) graphNames.push('main');
  /* level: the report's, else the position in the list */
  const levelOf = new Int32Array(N);
  for (let i = 0; i < N; i++) levelOf[i] = Number.isFinite(nodes[i].level) ? nodes[i].level : i;

  const COLW = 170, BOXW = 150, ROWH = 40, BOXH = 30, PAD = 6;
  const BIG = 1500; /* graphs with more nodes start with their partitions collapsed */
  const OPEN_MAX = 100; /* ... and in smaller ones, partitions larger than this */
  let showFolded = false; /* folded and removed nodes are in the table; in the graph on demand */
  const isFolded = (i) => { const w = placeWord(nodes[i].placement); return w === 'folded' || w === 'removed'; };
  const expanded = new Set(); /* partition indices drawn node by node */
  const openDec = new Set();  /* decomposed nodes drawn with their pieces */
  let cur = graphNames.includes('main') ? 'main' : graphNames[0];
  const startExpanded = new Set();
  let L = null; /* the current layout */

  /* partition hues by the golden angle, skipping the reds that mark CPU */
  function hue(pi) {
    const h = (210 + pi * 137.508) % 360; return h > 330 || h < 30 ? (h + 60) % 360 : h; }

  /* Items (a partition, or a node not in one) are placed in columns by the
   * longest path over the item graph, each item as wide as its columns (a
   * collapsed partition 1, an expanded one its level span, its nodes
   * stacked level by level inside its region); a long graph is wrapped into
   * bands, like lines of text, so the whole of it fits a screen; inside a
   * band items take the first free lanes. */
  function layout() {
    const all = graphNodes.get(cur) || [];
    const ids = showFolded ? all : all.filter((i) => !isFolded(i));
    let minLevel = Infinity;
    for (const i of ids) minLevel = Math.min(minLevel, levelOf[i]);
    if (!isFinite(minLevel)) minLevel = 0;
    const groups = new Map();
    const items = [];
    const itemOf = new Map();
    for (const i of ids) {
      const p = nodePart[i];
      if (p >= 0) {
        let g = groups.get(p);
        if (!g) { g = { kind: 'part', p, nodes: [], c0: Infinity, c1: -Infinity, k: items.length }; groups.set(p, g); items.push(g); }
        g.nodes.push(i);
        g.c0 = Math.min(g.c0, levelOf[i] - minLevel);
        g.c1 = Math.max(g.c1, levelOf[i] - minLevel);
        itemOf.set(i, g.k);
      } else {
        const ps = piecesOf(nodes[i]);
        const h = ps && openDec.has(i) ? 1 + Math.ceil(ps.length * 0.5) : 1;
        itemOf.set(i, items.length);
        items.push({ kind: 'node', i, c0: levelOf[i] - minLevel, c1: levelOf[i] - minLevel, h, k: items.length });
      }
    }
    for (const it of items) {
      if (it.kind === 'part' && expanded.has(it.p)) {
        const perCol = new Map();
        for (const i of it.nodes) { const c = levelOf[i] - minLevel; perCol.set(c, (perCol.get(c) || 0) + 1); }
        it.h = 1 + Math.max(...perCol.values());
        it.w = it.c1 - it.c0 + 1;
      } else {
        if (it.kind === 'part') it.h = 1;
        it.w = 1;
      }
    }
    /* the item graph, in CSR form, and its longest paths (Kahn) */
    const n = items.length, indeg = new Int32Array(n), succ = [];
    const seenE = new Set();
    for (const i of ids) {
      const b = itemOf.get(i);
      for (const v of nodes[i].inputs || []) {
        const p = v ? prodOf.get(v) : undefined;
        if (p === undefined || graphOf[p] !== cur) continue;
        const a = itemOf.get(p);
        if (a === undefined || a === b || seenE.has(a * 4294967296 + b)) continue;
        seenE.add(a * 4294967296 + b);
        (succ[a] || (succ[a] = [])).push(b);
        indeg[b]++;
      }
    }
    const cx = new Float64Array(n);
    const isSource = indeg.map((d) => (d === 0 ? 1 : 0));
    const order = [];
    const start = items.map((it) => it.k).filter((k) => indeg[k] === 0).sort((x, y) => items[x].c0 - items[y].c0);
    for (let q = 0; q < start.length; q++) order.push(start[q]);
    for (let q = 0; q < order.length; q++) {
      const a = order[q], end = cx[a] + items[a].w;
      for (const b of succ[a] || []) {
        if (cx[b] < end) cx[b] = end;
        if (--indeg[b] === 0) order.push(b);
      }
    }
    if (order.length < n) for (const it of items) if (indeg[it.k] > 0) cx[it.k] = it.c0; /* a cycle: not from carve */
    /* sources and folded nodes as late as their consumers allow, so they
     * sit beside what reads them rather than piling up in column 0 */
    for (let q = order.length - 1; q >= 0; q--) {
      const a = order[q], it = items[a];
      const w = it.kind === 'node' ? placeWord(nodes[it.i].placement) : '';
      if (!(isSource[a] || w === 'folded' || w === 'removed') || !succ[a]) continue;
      let m = Infinity;
      for (const b of succ[a]) m = Math.min(m, cx[b]);
      if (m - it.w > cx[a]) cx[a] = m - it.w;
    }
    let C = 1, widest = 1;
    for (const it of items) { C = Math.max(C, cx[it.k] + it.w); widest = Math.max(widest, it.w); }
    /* wrap into bands when the graph is much wider than the view */
    const r = canvas.getBoundingClientRect();
    const aspect = Math.max(0.2, (r.height || 500) / Math.max(1, r.width || 1000));
    let bandCols = C;
    if (C * COLW > 3 * (r.width || 1000)) {
      let lanes = 1;
      const perCol = new Map();
      for (const it of items) { const c = Math.floor(cx[it.k]); perCol.set(c, (perCol.get(c) || 0) + it.h); }
      for (const v of perCol.values()) lanes = Math.max(lanes, v);
      lanes = Math.min(lanes, 12);
      bandCols = Math.max(widest, 12, Math.ceil(Math.sqrt(C * (lanes + 1) * ROWH / (COLW * aspect))));
    }
    const byBand = [];
    const sorted = items.slice().sort((x, y) => cx[x.k] - cx[y.k] || y.h - x.h);
    /* a band is a run of columns [bs, bs + bandCols); an item that would
     * cross its end starts the next band */
    let band = 0, bs = 0;
    for (const it of sorted) {
      if (cx[it.k] - bs + it.w > bandCols && cx[it.k] > bs) { band++; bs = cx[it.k]; }
      it.band = band;
      it.x = cx[it.k] - bs;
      (byBand[band] || (byBand[band] = [])).push(it);
    }
    let bandY = 0;
    for (const list of byBand) {
      if (!list) continue;
      list.sort((x, y) => x.x - y.x || y.h - x.h);
      const laneEnd = [];
      let rows = 1;
      for (const it of list) {
        let j = 0;
        for (;;) {
          let ok = true;
          for (let k = j; k < j + it.h; k++) if (laneEnd[k] !== undefined && laneEnd[k] > it.x) { ok = false; j = k + 1; break; }
          if (ok) break;
        }
        for (let k = j; k < j + it.h; k++) laneEnd[k] = it.x + it.w;
        it.y = bandY + j * ROWH;
        rows = Math.max(rows, j + it.h);
      }
      bandY += (rows + 0.7) * ROWH;
    }
    /* boxes: what is drawn and hit */
    const boxes = [];
    const boxOfNode = new Map();
    const boxOfPart = new Map();
    let W = 0, H = 0;
    for (const it of items) {
      const x = it.x * COLW, y = it.y;
      const w = (it.w - 1) * COLW + BOXW, h = (it.h - 1) * ROWH + BOXH;
      W = Math.max(W, x + w + PAD); H = Math.max(H, y + h + PAD);
      if (it.kind === 'node') {
        const b = { kind: 'node', i: it.i, x, y, w, h };
        boxOfNode.set(it.i, boxes.length); boxes.push(b);
        continue;
      }
      const open = expanded.has(it.p);
      const b = { kind: open ? 'region' : 'part', p: it.p, n: it.nodes.length, x: x - (open ? PAD : 0), y, w: w + (open ? 2 * PAD : 0), h: open ? h + PAD : h };
      boxOfPart.set(it.p, boxes.length); boxes.push(b);
      if (open) {
        const row = new Map();
        for (const i of it.nodes) {
          const c = levelOf[i] - minLevel - it.c0, rr = (row.get(c) || 0) + 1;
          row.set(c, rr);
          boxOfNode.set(i, boxes.length);
          boxes.push({ kind: 'node', i, x: x + c * COLW, y: y + rr * ROWH, w: BOXW, h: BOXH, inPart: it.p });
        }
      } else for (const i of it.nodes) boxOfNode.set(i, boxes.length - 1);
    }
    /* edges between boxes, once per pair */
    const seen = new Set();
    const edges = [];
    for (const i of ids) {
      const bi = boxOfNode.get(i);
      for (const v of nodes[i].inputs || []) {
        const p = v ? prodOf.get(v) : undefined;
        if (p === undefined || graphOf[p] !== cur) continue;
        const bp = boxOfNode.get(p);
        if (bp === undefined || bp === bi) continue;
        const key = bp * 4294967296 + bi;
        if (seen.has(key)) continue;
        seen.add(key);
        const a = boxes[bp], b = boxes[bi];
        const crossing = nodePart[p] !== nodePart[i] || a.kind === 'part' || b.kind === 'part';
        edges.push({ a: bp, b: bi, crossing });
      }
    }
    L = { boxes, edges, boxOfNode, boxOfPart, W, H, ids, items: items.length, bands: byBand.filter(Boolean).length };
    canvas.dataset.graph = cur;
    canvas.dataset.boxes = boxes.length;
    canvas.dataset.expanded = [...expanded].filter((p) => boxOfPart.has(p)).sort((a, b) => a - b).join(',');
    canvas.dataset.drawnNodes = boxes.filter((b) => b.kind === 'node').length;
    const nParts = boxOfPart.size, nOpen = [...boxOfPart.keys()].filter((p) => expanded.has(p)).length;
    canvas.setAttribute('aria-label', `Graph ${cur}: ${ids.length} nodes, ${nParts} partitions (${nOpen} expanded), ${edges.length} edges drawn`);
  }

  /* ------------------------------------------------------------ drawing */
  const canvas = $('graph');
  const ctx = canvas.getContext('2d');
  let view = { s: 1, tx: 20, ty: 20 };
  let sel = null; /* {kind: 'node', i} | {kind: 'part', p} */
  let hatch = null;
  function makeHatch() {
    const c = document.createElement('canvas');
    c.width = c.height = 8;
    const g = c.getContext('2d');
    g.strokeStyle = 'rgba(0,0,0,0.16)';
    g.lineWidth = 2;
    g.beginPath(); g.moveTo(-2, 10); g.lineTo(10, -2); g.moveTo(6, 10); g.lineTo(10, 6); g.moveTo(-2, 2); g.lineTo(2, -2); g.stroke();
    return ctx.createPattern(c, 'repeat');
  }
  let pending = false;
  function redraw() { if (!pending) { pending = true; requestAnimationFrame(() => { pending = false; draw(); }); } }
  function resize() {
    const r = canvas.getBoundingClientRect(), d = window.devicePixelRatio || 1;
    canvas.width = Math.max(1, Math.round(r.width * d));
    canvas.height = Math.max(1, Math.round(r.height * d));
  }
  function label(s, max) { return s.length > max ? s.slice(0, max - 1) + '…' : s; }
  function draw() {
    if (!L) return;
    const d = window.devicePixelRatio || 1, cw = canvas.width / d, ch = canvas.height / d;
    ctx.setTransform(d, 0, 0, d, 0, 0);
    ctx.clearRect(0, 0, cw, ch);
    const { s, tx, ty } = view;
    ctx.setTransform(d * s, 0, 0, d * s, d * tx, d * ty);
    const x0 = -tx / s, y0 = -ty / s, x1 = x0 + cw / s, y1 = y0 + ch / s;
    const vis = (b) => b.x <= x1 && b.x + b.w >= x0 && b.y <= y1 && b.y + b.h >= y0;
    const B = L.boxes;
    /* regions first, then edges, then boxes */
    for (const b of B) if (b.kind === 'region' && vis(b)) drawRegion(b, s);
    ctx.lineWidth = 1 / Math.max(s, 0.2);
    const fewPixels = s < 0.12 && L.edges.length > 3000; /* edges of a far view: only between partitions and CPU */
    for (const e of L.edges) {
      if (fewPixels && !e.crossing) continue;
      const a = B[e.a], b = B[e.b];
      const ax = a.x + a.w, ay = a.y + Math.min(a.h, BOXH) / 2, bx = b.x, by = b.y + Math.min(b.h, BOXH) / 2;
      if (Math.max(ax, bx) < x0 || Math.min(ax, bx) > x1 || Math.max(ay, by) < y0 || Math.min(ay, by) > y1) continue;
      const back = bx < ax; /* into the next band */
      ctx.strokeStyle = back ? 'rgba(40,40,60,0.18)' : e.crossing ? 'rgba(40,40,60,0.55)' : 'rgba(120,120,140,0.35)';
      ctx.lineWidth = (e.crossing && !back ? 1.6 : 1) / Math.max(s, 0.25);
      ctx.beginPath();
      ctx.moveTo(ax, ay);
      const mx = (ax + bx) / 2;
      ctx.bezierCurveTo(mx, ay, mx, by, bx, by);
      ctx.stroke();
    }
    for (const b of B) if (b.kind !== 'region' && vis(b)) drawBox(b, s);
    const selB = selectedBox();
    if (selB) {
      ctx.strokeStyle = '#0b57d0';
      ctx.lineWidth = 3 / s;
      ctx.strokeRect(selB.x - 3 / s, selB.y - 3 / s, selB.w + 6 / s, selB.h + 6 / s);
    }
  }
  function drawRegion(b, s) {
    const h = hue(b.p);
    ctx.fillStyle = `hsla(${h},55%,88%,0.55)`;
    ctx.fillRect(b.x, b.y, b.w, b.h);
    ctx.strokeStyle = `hsl(${h},45%,40%)`;
    ctx.lineWidth = 1.5 / s;
    ctx.strokeRect(b.x, b.y, b.w, b.h);
    if (s > 0.25) {
      ctx.fillStyle = '#1b1b1f';
      ctx.font = 'bold 12px system-ui, sans-serif';
      ctx.fillText(`P${b.p} · ${partTarget(b.p)} · ${b.n} node${b.n === 1 ? '' : 's'} (click to collapse)`, b.x + 6, b.y + 18);
    }
  }
  function drawBox(b, s) {
    let fill, stroke, dash = null, lw = 1, text1 = '', text2 = '';
    if (b.kind === 'part') {
      const h = hue(b.p);
      fill = `hsl(${h},60%,82%)`; stroke = `hsl(${h},45%,35%)`; lw = 2;
      text1 = `P${b.p} · ${partTarget(b.p)}`;
      text2 = `${b.n} node${b.n === 1 ? '' : 's'} · click to expand`;
    } else {
      const n = nodes[b.i], w = placeWord(n.placement);
      text1 = n.name; text2 = n.op;
      if (w === 'delegated') { const h = hue(nodePart[b.i]); fill = `hsl(${h},60%,86%)`; stroke = `hsl(${h},45%,35%)`; text2 = `${n.op} · P${nodePart[b.i]}`; }
      else if (w === 'cpu') { fill = '#fde7e6'; stroke = '#b3261e'; lw = 2; text2 = `CPU · ${n.op} · ${reasonCode(n)}`; }
      else if (w === 'decomposed') { fill = '#fff4d6'; stroke = '#8a6d00'; dash = [3, 3]; lw = 2; text2 = `${n.op} · decomposed (${(piecesOf(n) || []).length})${openDec.has(b.i) ? '' : ' +'}`; }
      else if (w === 'folded' || w === 'removed') { fill = '#eeeeee'; stroke = '#777'; dash = [5, 3]; text2 = `${n.op} · ${w}`; }
      else { fill = '#e8eaf6'; stroke = '#3949ab'; text2 = `${n.op} · ${w}`; }
    }
    ctx.fillStyle = fill;
    ctx.fillRect(b.x, b.y, b.w, b.h);
    if (s < 0.12) { /* a few pixels: colour and outline only */
      ctx.strokeStyle = stroke;
      ctx.lineWidth = 1 / s;
      ctx.strokeRect(b.x, b.y, b.w, b.h);
      return;
    }
    if (b.kind === 'part' || (b.kind === 'node' && nodePart[b.i] >= 0)) { ctx.fillStyle = hatch || (hatch = makeHatch()); ctx.fillRect(b.x, b.y, b.w, b.h); }
    ctx.setLineDash(dash ? dash.map((v) => v / Math.max(s, 0.3)) : []);
    ctx.strokeStyle = stroke;
    ctx.lineWidth = lw / Math.max(s, 0.3);
    ctx.strokeRect(b.x, b.y, b.w, b.h);
    ctx.setLineDash([]);
    if (s < 0.3) return;
    ctx.fillStyle = '#111';
    ctx.font = '12px system-ui, sans-serif';
    const chars = Math.max(4, Math.floor(b.w / 7));
    ctx.fillText(label(text1, chars), b.x + 4, b.y + 13);
    ctx.fillStyle = '#333';
    ctx.font = '11px system-ui, sans-serif';
    ctx.fillText(label(text2, chars), b.x + 4, b.y + 26);
    if (b.kind === 'node' && openDec.has(b.i)) {
      const ps = piecesOf(nodes[b.i]) || [];
      ps.forEach((q, k) => {
        const px = b.x + 4 + (k % 2) * (b.w / 2), py = b.y + 34 + Math.floor(k / 2) * (ROWH / 2 + 2);
        const pw = placeWord(q.placement);
        ctx.fillStyle = pw === 'cpu' ? '#b3261e' : '#1b1b1f';
        ctx.fillText(label(`${q.op} ${pw === 'delegated' ? 'P' + partOfPlacement(q.placement) : pw.toUpperCase()}`, Math.floor(chars / 2)), px, py + 10);
      });
    }
  }
  function selectedBox() {
    if (!sel || !L) return null;
    const k = sel.kind === 'node' ? L.boxOfNode.get(sel.i) : L.boxOfPart.get(sel.p);
    return k === undefined ? null : L.boxes[k];
  }
  function fit() {
    const r = canvas.getBoundingClientRect();
    const s = Math.min(1.2, (r.width - 20) / Math.max(L.W, 1), (r.height - 20) / Math.max(L.H, 1));
    view = { s: Math.max(s, 1e-4), tx: 10, ty: 10 };
    redraw();
  }
  function centreOn(b, zoomIn) {
    const r = canvas.getBoundingClientRect();
    if (zoomIn && view.s < 0.6) view.s = 0.9;
    view.tx = r.width / 2 - (b.x + b.w / 2) * view.s;
    view.ty = r.height / 2 - (b.y + Math.min(b.h, 200) / 2) * view.s;
    redraw();
  }
  function zoomAt(f, cx, cy) {
    const s = Math.min(4, Math.max(1e-4, view.s * f));
    view.tx = cx - (cx - view.tx) * (s / view.s);
    view.ty = cy - (cy - view.ty) * (s / view.s);
    view.s = s;
    redraw();
  }
  function hit(px, py) {
    const x = (px - view.tx) / view.s, y = (py - view.ty) / view.s;
    let best = -1;
    const B = L.boxes;
    for (let k = 0; k < B.length; k++) {
      const b = B[k];
      if (x >= b.x && x <= b.x + b.w && y >= b.y && y <= b.y + b.h && (best < 0 || B[best].kind === 'region')) best = k;
    }
    return best < 0 ? null : B[best];
  }
  function status(msg) { $('graph-status').textContent = msg; }
  function relayout(keepView) {
    layout();
    if (!keepView) fit();
    redraw();
  }
  function togglePart(p, open) {
    if (open === undefined) open = !expanded.has(p);
    if (open) expanded.add(p); else expanded.delete(p);
    const pt = partByIndex.get(p);
    relayout(true);
    const b = L.boxes[L.boxOfPart.get(p)];
    if (b) centreOn(b, false);
    status(`Partition ${p} ${open ? 'expanded' : 'collapsed'}: ${pt && pt.nodes ? pt.nodes.length : '?'} nodes`);
  }
  function showGraph(g) {
    if (!graphNodes.has(g) && !graphNames.includes(g)) return;
    cur = g;
    $('graph-select').value = g;
    const ids = graphNodes.get(g) || [];
    if (ids.length <= BIG && !startExpanded.has(g)) {
      startExpanded.add(g);
      const size = new Map();
      for (const i of ids) if (nodePart[i] >= 0) size.set(nodePart[i], (size.get(nodePart[i]) || 0) + 1);
      for (const [p, n] of size) if (n <= OPEN_MAX) expanded.add(p);
    }
    relayout(false);
    const gi = graphInfo.get(g);
    const crumb = $('graph-crumb');
    crumb.textContent = '';
    if (gi && gi.node != null) {
      crumb.append(`subgraph of node `, el('button', { type: 'button', class: 'linkish', text: gi.node, onclick: () => selectNode(nodeByName.get(gi.node), 'crumb') }),
        gi.parent != null ? ` in graph ${gi.parent}` : '');
    }
    const hidden = showFolded ? 0 : ids.filter(isFolded).length;
    status(`Graph ${g}: ${ids.length} nodes${hidden ? ` (${hidden} folded or removed, hidden: see "Show folded nodes")` : ''}, ${L.boxOfPart.size} partitions, ${L.edges.length} edges`);
  }

  /* ------------------------------------------------------------ selection and details */
  function valueList(names) {
    const ul = el('ul', { class: 'mono' });
    for (const v of names || []) {
      const t = vtypes[v];
      ul.append(el('li', null, v === '' ? '(absent)' : v, t ? el('span', { class: 'hint', text: ' ' + t }) : null));
    }
    return ul;
  }
  function nodeButton(i) {
    const n = nodes[i];
    return el('button', { type: 'button', class: 'linkish', text: n.name, onclick: () => selectNode(i, 'detail') });
  }
  function renderNodeDetail(i) {
    const n = nodes[i], D = $('detail'), w = placeWord(n.placement);
    D.textContent = '';
    D.append(el('h3', { text: n.name }));
    const dl = el('dl');
    dlRow(dl, 'op', 'op', (n.domain ? n.domain + '.' : '') + n.op);
    dlRow(dl, 'graph', 'graph', graphOf[i]);
    if (n.level != null) dlRow(dl, 'level', 'level', n.level);
    dl.append(el('div', { 'data-k': 'placement' }, el('dt', { text: 'placement' }), el('dd', null,
      nodePart[i] >= 0 ? el('button', { type: 'button', class: 'linkish', text: `partition ${nodePart[i]} (${partTarget(nodePart[i])})`, onclick: () => selectPart(nodePart[i]) })
        : el('span', { class: 'tag' + (w === 'cpu' ? ' cpu' : ''), text: w }))));
    if (n.reason) {
      dlRow(dl, 'reason', 'reason', reasonCode(n));
      dl.append(el('div', null, el('dt', { text: 'message' }), el('dd', { style: 'font-weight:400', text: n.reason.message || '' })));
    }
    for (const k of ['why', 'into', 'target']) if (n[k] != null && typeof n[k] !== 'object') dlRow(dl, k, k, n[k]);
    /* fields this page does not know, as they are */
    const knownK = new Set(['name', 'op', 'domain', 'graph', 'level', 'placement', 'reason', 'why', 'into', 'target', 'inputs', 'outputs', 'decomposed', 'replaced_by', 'pieces', 'subgraphs', 'refused_by']);
    for (const k of Object.keys(n)) if (!knownK.has(k)) dlRow(dl, k, k, typeof n[k] === 'object' ? JSON.stringify(n[k]) : n[k]);
    D.append(dl);
    if (Array.isArray(n.refused_by) && n.refused_by.length) {
      D.append(el('h4', { text: 'refused by' }));
      const ul = el('ul', { class: 'refused-by' });
      for (const r of n.refused_by) ul.append(el('li', null, el('strong', { text: `${r.target != null ? r.target : '?'}: ` }), el('span', { class: 'mono', text: r.code != null ? String(r.code) : '' }), r.message ? ` ${r.message}` : ''));
      D.append(ul);
    }
    if (n.inputs) D.append(el('h4', { text: `inputs (${n.inputs.length})` }), valueList(n.inputs));
    if (n.outputs) D.append(el('h4', { text: `outputs (${n.outputs.length})` }), valueList(n.outputs));
    const ps = piecesOf(n);
    if (ps) {
      D.append(el('h4', { text: `${n.decomposed ? 'decomposed into' : 'replaced by'} ${ps.length} piece${ps.length === 1 ? '' : 's'}` }));
      if (L && L.boxOfNode.has(i) && L.boxes[L.boxOfNode.get(i)].kind === 'node')
        D.append(el('button', { type: 'button', id: 'toggle-pieces', text: openDec.has(i) ? 'Hide pieces in the graph' : 'Show pieces in the graph',
          onclick: () => { if (openDec.has(i)) openDec.delete(i); else openDec.add(i); relayout(true); renderNodeDetail(i); } }));
      const ul = el('ul', { class: 'pieces' });
      for (const q of ps) {
        const pw = placeWord(q.placement), pp = partOfPlacement(q.placement);
        ul.append(el('li', null, el('span', { class: 'mono', text: q.name }), ` ${q.op} · `,
          pp >= 0 ? el('button', { type: 'button', class: 'linkish', text: `partition ${pp}`, onclick: () => selectPart(pp) }) : el('span', { class: 'tag' + (pw === 'cpu' ? ' cpu' : ''), text: pw }),
          q.reason ? ` ${q.reason.code}: ${q.reason.message || ''}` : ''));
      }
      D.append(ul);
    }
    const subs = n.subgraphs || [];
    if (subs.length) {
      D.append(el('h4', { text: 'subgraphs' }));
      const ul = el('ul');
      for (const sg of subs)
        ul.append(el('li', null, `${sg.attribute}: `, el('button', { type: 'button', class: 'linkish subgraph-link', 'data-graph': sg.graph,
          text: `graph ${sg.graph} (${(graphNodes.get(String(sg.graph)) || []).length} nodes)`, onclick: () => showGraph(String(sg.graph)) })));
      D.append(ul);
    }
  }
  function renderPartDetail(p) {
    const pt = partByIndex.get(p) || {}, D = $('detail');
    D.textContent = '';
    D.append(el('h3', { text: `Partition ${p}` }));
    const dl = el('dl');
    for (const k of Object.keys(pt)) {
      const v = pt[k];
      if (k === 'nodes') dlRow(dl, 'node_count', 'nodes', Array.isArray(v) ? v.length : v);
      else if (k === 'inputs' || k === 'outputs' || k === 'encodings') continue;
      else if (v === null) dlRow(dl, k, k, k === 'boundary_bytes' ? 'not static' : 'null');
      else if (typeof v !== 'object') dlRow(dl, k, k, v);
      else dlRow(dl, k, k, Array.isArray(v) ? targetNames(v).join(', ') : JSON.stringify(v));
    }
    D.append(dl);
    const open = expanded.has(p);
    const pg = partGraph(p);
    if (pg == null || pg === cur)
      D.append(el('button', { type: 'button', id: 'toggle-part', text: open ? 'Collapse in the graph' : 'Expand in the graph', onclick: () => { togglePart(p); renderPartDetail(p); } }));
    else
      D.append(el('button', { type: 'button', text: `Show graph ${pg}`, onclick: () => { showGraph(pg); selectPart(p); } }));
    if (pt.inputs) D.append(el('h4', { text: `inputs (${pt.inputs.length})` }), valueList(pt.inputs));
    if (pt.outputs) D.append(el('h4', { text: `outputs (${pt.outputs.length})` }), valueList(pt.outputs));
    if (pt.encodings && typeof pt.encodings === 'object') {
      const keys = Object.keys(pt.encodings);
      D.append(el('h4', { text: `encodings (${keys.length} quantized values)` }));
      const tb = el('table', { class: 'enc' }, el('thead', null, el('tr', null, ...[['value'], ['dtype'], ['gran.', 'granularity'], ['scale'], ['zp', 'zero point'], ['axis'], ['bits']].map(([h, t]) => el('th', { scope: 'col', title: t || null, 'aria-label': t || null, text: h })))));
      const body = el('tbody');
      const num4 = (v) => (typeof v === 'number' && !Number.isInteger(v) ? +v.toPrecision(4) : v);
      const short = (v) => {
        if (v == null) return '';
        const s = Array.isArray(v) ? `[${v.slice(0, 3).map(num4).join(', ')}${v.length > 3 ? `, … ${v.length}` : ''}]` : typeof v === 'object' ? JSON.stringify(v) : String(num4(v));
        return s.length > 40 ? s.slice(0, 39) + '…' : s;
      };
      for (const k of keys.slice(0, 500)) {
        const e = pt.encodings[k] || {};
        body.append(el('tr', null, el('td', { text: k }), el('td', { text: short(e.dtype) }), el('td', { text: short(e.granularity).replace('per_', '') }), el('td', { text: short(e.scale), title: typeof e.scale === 'object' ? JSON.stringify(e.scale) : null }),
          el('td', { text: short(e.zero_point) }), el('td', { text: short(e.axis) }), el('td', { text: short(e.bits) + (e.requantize ? ' (requantize ' + (e.requantize.as || '') + ')' : '') })));
      }
      tb.append(body);
      D.append(tb);
    }
    if (Array.isArray(pt.nodes)) {
      D.append(el('h4', { text: `nodes (${pt.nodes.length})` }));
      const ul = el('ul', { class: 'part-nodes' });
      for (const nm of pt.nodes.slice(0, 300)) { const i = nodeByName.get(nm); ul.append(el('li', null, i !== undefined ? nodeButton(i) : nm)); }
      if (pt.nodes.length > 300) ul.append(el('li', { class: 'more', text: `... ${pt.nodes.length - 300} more (filter the table by placement)` }));
      D.append(ul);
    }
  }
  function selectNode(i, from) {
    if (i === undefined || i < 0 || i >= N) return;
    if (graphOf[i] !== cur) showGraph(graphOf[i]);
    if (isFolded(i) && !showFolded) { showFolded = true; $('show-folded').checked = true; relayout(true); }
    const p = nodePart[i];
    if (p >= 0 && !expanded.has(p)) { expanded.add(p); relayout(true); }
    sel = { kind: 'node', i };
    canvas.dataset.selected = nodes[i].name;
    canvas.dataset.selectedKind = 'node';
    const b = selectedBox();
    if (b && from !== 'graph') centreOn(b, true);
    redraw();
    renderNodeDetail(i);
    status(`Selected node ${nodes[i].name} (${nodes[i].op}), ${placeWord(nodes[i].placement)}${p >= 0 ? ' in partition ' + p : ''}${nodes[i].reason ? ', reason ' + reasonCode(nodes[i]) : ''}`);
    table.select(i, from !== 'table');
  }
  function selectPart(p) {
    const pg = partGraph(p);
    if (pg != null && pg !== cur && graphNodes.has(pg)) showGraph(pg);
    sel = { kind: 'part', p };
    canvas.dataset.selected = 'P' + p;
    canvas.dataset.selectedKind = 'partition';
    const b = selectedBox();
    if (b) centreOn(b, false);
    redraw();
    renderPartDetail(p);
  }

  /* pointer: drag pans, click selects, wheel zooms */
  let drag = null;
  canvas.addEventListener('pointerdown', (e) => { drag = { x: e.clientX, y: e.clientY, tx: view.tx, ty: view.ty, moved: false }; canvas.setPointerCapture(e.pointerId); });
  canvas.addEventListener('pointermove', (e) => {
    if (!drag) return;
    const dx = e.clientX - drag.x, dy = e.clientY - drag.y;
    if (Math.abs(dx) + Math.abs(dy) > 3) { drag.moved = true; canvas.classList.add('dragging'); }
    view.tx = drag.tx + dx; view.ty = drag.ty + dy;
    redraw();
  });
  canvas.addEventListener('pointerup', (e) => {
    const d = drag;
    drag = null;
    canvas.classList.remove('dragging');
    if (!d || d.moved) return;
    const r = canvas.getBoundingClientRect();
    const b = hit(e.clientX - r.left, e.clientY - r.top);
    if (!b) return;
    if (b.kind === 'part') { togglePart(b.p, true); selectPart(b.p); }
    else if (b.kind === 'region') selectPart(b.p);
    else {
      const ps = piecesOf(nodes[b.i]);
      if (ps && placeWord(nodes[b.i].placement) === 'decomposed' && !openDec.has(b.i)) { openDec.add(b.i); relayout(true); }
      selectNode(b.i, 'graph');
    }
  });
  canvas.addEventListener('dblclick', (e) => {
    const r = canvas.getBoundingClientRect();
    const b = hit(e.clientX - r.left, e.clientY - r.top);
    if (b && b.kind === 'region') togglePart(b.p, false);
  });
  canvas.addEventListener('wheel', (e) => {
    e.preventDefault();
    const r = canvas.getBoundingClientRect();
    zoomAt(Math.exp(-e.deltaY * 0.0015), e.clientX - r.left, e.clientY - r.top);
  }, { passive: false });
  canvas.addEventListener('keydown', (e) => {
    const r = canvas.getBoundingClientRect(), step = 60;
    const k = e.key;
    if (k === '+' || k === '=') zoomAt(1.25, r.width / 2, r.height / 2);
    else if (k === '-') zoomAt(0.8, r.width / 2, r.height / 2);
    else if (k === '0') fit();
    else if (k === 'ArrowLeft') view.tx += step;
    else if (k === 'ArrowRight') view.tx -= step;
    else if (k === 'ArrowUp') view.ty += step;
    else if (k === 'ArrowDown') view.ty -= step;
    else return;
    e.preventDefault();
    redraw();
  });
  $('fit').onclick = fit;
  $('zoom-in').onclick = () => { const r = canvas.getBoundingClientRect(); zoomAt(1.25, r.width / 2, r.height / 2); };
  $('zoom-out').onclick = () => { const r = canvas.getBoundingClientRect(); zoomAt(0.8, r.width / 2, r.height / 2); };
  $('expand-all').onclick = () => { for (const i of graphNodes.get(cur) || []) if (nodePart[i] >= 0) expanded.add(nodePart[i]); relayout(false); status('All partitions of this graph expanded'); };
  $('collapse-all').onclick = () => { expanded.clear(); relayout(false); status('All partitions collapsed'); };
  $('graph-select').onchange = (e) => showGraph(e.target.value);
  $('show-folded').onchange = (e) => { showFolded = e.target.checked; relayout(false); status(`Folded and removed nodes ${showFolded ? 'shown' : 'hidden'}`); };

  /* ------------------------------------------------------------ node table (virtualised) */
  const COLS = [
    { k: 'name', label: 'Name', get: (i) => nodes[i].name },
    { k: 'op', label: 'Op', get: (i) => nodes[i].op },
    { k: 'place', label: 'Placement', get: (i) => (nodePart[i] >= 0 ? 'P' + nodePart[i] : placeWord(nodes[i].placement)) },
    { k: 'reason', label: 'Reason', get: (i) => reasonCode(nodes[i]) },
    { k: 'message', label: 'Message', get: (i) => (nodes[i].reason && nodes[i].reason.message) || nodes[i].why || '' },
  ];
  const table = (function () {
    const scroller = $('table-scroll'), tbody = $('tbody'), RH = 25;
    const lower = nodes.map((n) => String(n.name).toLowerCase());
    const lowerOp = nodes.map((n) => String(n.op).toLowerCase());
    let rows = [], sortK = null, sortDir = 1, active = 0, selected = -1;
    const f = { q: '', placement: '', reason: '', op: '' };
    const head = $('thead-row');
    for (const c of COLS)
      head.append(el('th', { scope: 'col', class: 'c-' + c.k, 'aria-sort': 'none' }, el('button', { type: 'button', 'data-col': c.k, text: c.label, onclick: () => sortBy(c.k) })));
    function apply() {
      const q = f.q.toLowerCase();
      rows = [];
      for (let i = 0; i < N; i++) {
        if (q && !lower[i].includes(q) && !lowerOp[i].includes(q)) continue;
        if (f.op && nodes[i].op !== f.op) continue;
        if (f.reason && (f.reason === '(none)' ? nodes[i].reason : reasonCode(nodes[i]) !== f.reason)) continue;
        if (f.placement) {
          const w = placeWord(nodes[i].placement);
          if (f.placement.startsWith('P:') ? nodePart[i] !== +f.placement.slice(2) : w !== f.placement) continue;
        }
        rows.push(i);
      }
      if (sortK) doSort();
      active = 0;
      $('table-count').textContent = `${rows.length.toLocaleString('en-US')} of ${N.toLocaleString('en-US')} nodes`;
      $('node-table').setAttribute('aria-rowcount', rows.length + 1);
      scroller.scrollTop = 0;
      render();
    }
    function doSort() {
      const c = COLS.find((x) => x.k === sortK);
      const key = new Map();
      if (sortK === 'place') for (const i of rows) key.set(i, nodePart[i] >= 0 ? nodePart[i] : 1e9);
      const get = c.get;
      rows.sort((a, b) => {
        if (sortK === 'place') { const d = key.get(a) - key.get(b); if (d) return d * sortDir; }
        const x = get(a), y = get(b);
        return (x < y ? -1 : x > y ? 1 : a - b) * sortDir;
      });
    }
    function sortBy(k) {
      sortDir = sortK === k ? -sortDir : 1;
      sortK = k;
      for (const th of head.children) th.setAttribute('aria-sort', th.className === 'c-' + k ? (sortDir > 0 ? 'ascending' : 'descending') : 'none');
      doSort();
      render();
    }
    function render() {
      const top = scroller.scrollTop, hgt = scroller.clientHeight || 400;
      const first = Math.max(0, Math.floor(top / RH) - 10), last = Math.min(rows.length, Math.ceil((top + hgt) / RH) + 10);
      tbody.textContent = '';
      const sp = (h) => el('tr', { class: 'spacer', 'aria-hidden': 'true' }, el('td', { colspan: COLS.length, style: `height:${h}px` }));
      if (first > 0) tbody.append(sp(first * RH));
      for (let r = first; r < last; r++) {
        const i = rows[r], n = nodes[i];
        const tr = el('tr', { class: 'row' + (r === active ? ' active' : ''), id: 'row-' + r, 'aria-rowindex': r + 2, 'aria-selected': i === selected ? 'true' : 'false', 'data-node': n.name, style: `height:${RH}px` });
        for (const c of COLS) {
          const v = c.get(i);
          tr.append(el('td', { title: v, class: c.k === 'reason' && v ? 'mono' : null, text: v }));
        }
        tr.addEventListener('click', () => { active = r; selectNode(i, 'table'); });
        tbody.append(tr);
      }
      if (last < rows.length) tbody.append(sp((rows.length - last) * RH));
      if (rows.length) $('node-table').setAttribute('aria-activedescendant', 'row-' + active);
      else $('node-table').removeAttribute('aria-activedescendant');
    }
    scroller.addEventListener('scroll', () => requestAnimationFrame(render));
    const grid = $('node-table');
    grid.addEventListener('keydown', (e) => {
      const page = Math.max(1, Math.floor(scroller.clientHeight / RH) - 1);
      let a = active;
      if (e.key === 'ArrowDown') a++;
      else if (e.key === 'ArrowUp') a--;
      else if (e.key === 'PageDown') a += page;
      else if (e.key === 'PageUp') a -= page;
      else if (e.key === 'Home') a = 0;
      else if (e.key === 'End') a = rows.length - 1;
      else if (e.key === 'Enter' || e.key === ' ') { if (rows.length) selectNode(rows[active], 'table'); e.preventDefault(); return; }
      else return;
      e.preventDefault();
      active = Math.max(0, Math.min(rows.length - 1, a));
      reveal(active);
      render();
      if (rows.length) status(`Row ${active + 1} of ${rows.length}: ${nodes[rows[active]].name}, ${nodes[rows[active]].op}, ${COLS[2].get(rows[active])}${nodes[rows[active]].reason ? ', ' + reasonCode(nodes[rows[active]]) : ''}`);
    });
    function reveal(r) {
      const y = r * RH, hh = scroller.clientHeight - 30;
      if (y < scroller.scrollTop) scroller.scrollTop = y;
      else if (y + RH > scroller.scrollTop + hh) scroller.scrollTop = y + RH - hh;
    }
    function select(i, scroll) {
      selected = i;
      let r = rows.indexOf(i);
      if (r < 0 && scroll) { f.q = ''; f.placement = f.reason = f.op = ''; syncInputs(); apply(); r = rows.indexOf(i); }
      if (r >= 0) { active = r; if (scroll) reveal(r); }
      render();
    }
    function syncInputs() { $('search').value = f.q; $('f-placement').value = f.placement; $('f-reason').value = f.reason; $('f-op').value = f.op; }
    function set(k, v) { f[k] = v; syncInputs(); apply(); }
    /* filter choices from the report */
    const opt = (s, v, t) => s.append(el('option', { value: v, text: t }));
    const pl = $('f-placement');
    opt(pl, '', 'all');
    const words = new Map();
    for (let i = 0; i < N; i++) { const w = placeWord(nodes[i].placement); words.set(w, (words.get(w) || 0) + 1); }
    for (const [w, c] of words) opt(pl, w, `${w} (${c})`);
    for (const p of [...partByIndex.keys()].slice(0, 2000)) opt(pl, 'P:' + p, `partition ${p}`);
    const rs = $('f-reason');
    opt(rs, '', 'all');
    const rc = new Map();
    for (let i = 0; i < N; i++) if (nodes[i].reason) { const c = reasonCode(nodes[i]); rc.set(c, (rc.get(c) || 0) + 1); }
    for (const [c, n] of [...rc].sort((a, b) => b[1] - a[1])) opt(rs, c, `${c} (${n})`);
    opt(rs, '(none)', '(no reason)');
    const os = $('f-op');
    opt(os, '', 'all');
    const oc = new Map();
    for (const n of nodes) oc.set(n.op, (oc.get(n.op) || 0) + 1);
    for (const [o, n] of [...oc].sort((a, b) => (a[0] < b[0] ? -1 : 1))) opt(os, o, `${o} (${n})`);
    let st = null;
    $('search').addEventListener('input', (e) => { clearTimeout(st); st = setTimeout(() => { f.q = e.target.value.trim(); apply(); }, N > 5000 ? 120 : 0); });
    pl.onchange = (e) => { f.placement = e.target.value; apply(); };
    rs.onchange = (e) => { f.reason = e.target.value; apply(); };
    os.onchange = (e) => { f.op = e.target.value; apply(); };
    return { apply, select, set, render, rows: () => rows };
  })();
  function setFilter(k, v) { table.set(k, v); $('nodes-section').scrollIntoView(); $('node-table').focus(); }

  /* ------------------------------------------------------------ partitions list */
  function renderPartitions() {
    const box = $('partitions');
    if (!parts.length) { box.append(el('p', { class: 'hint', text: 'No partition: every node is on CPU.' })); return; }
    const tb = el('table', { id: 'part-table' }, el('thead', null, el('tr', null, ...['partition', 'target', 'graph', 'nodes', 'inputs', 'outputs', 'boundary bytes', 'encodings'].map((h) => el('th', { scope: 'col', text: h })))));
    const body = el('tbody');
    let shown = 0;
    function more(k) {
      for (const p of parts.slice(shown, shown + k)) {
        const pi = typeof p.index === 'number' ? p.index : parts.indexOf(p);
        const enc = p.encodings && typeof p.encodings === 'object' ? Object.keys(p.encodings).length : 0;
        const list = (a) => (Array.isArray(a) ? `${a.length}: ${label(a.join(', '), 80)}` : '');
        body.append(el('tr', { class: 'prow', 'data-part': pi, tabindex: 0, onclick: () => selectPart(pi), onkeydown: (e) => { if (e.key === 'Enter') selectPart(pi); } },
          el('td', null, el('span', { class: 'sw-inline', style: `display:inline-block;width:10px;height:10px;margin-right:4px;background:hsl(${hue(pi)},60%,70%)` }), `P${pi}`),
          el('td', { text: targetNames(p.target).join(', ') }), el('td', { text: p.graph != null ? p.graph : '' }),
          el('td', { text: Array.isArray(p.nodes) ? p.nodes.length : '' }), el('td', { class: 'mono', text: list(p.inputs) }), el('td', { class: 'mono', text: list(p.outputs) }),
          el('td', { text: p.boundary_bytes == null ? 'not static' : fmt(p.boundary_bytes) }), el('td', { text: enc ? `${enc} values` : '' })));
      }
      shown = Math.min(parts.length, shown + k);
    }
    more(300);
    tb.append(body);
    box.append(tb);
    if (shown < parts.length) {
      const b = el('button', { type: 'button', text: `Show all ${parts.length} partitions`, onclick: () => { more(parts.length); b.remove(); } });
      box.append(b);
    }
  }

  /* ------------------------------------------------------------ start */
  function renderLegend() {
    const lg = $('legend');
    const item = (cls, text) => lg.append(el('li', null, el('span', { class: 'sw ' + cls, 'aria-hidden': 'true' }), text));
    item('part', 'delegated: partition colour, hatched, labelled P<index>');
    item('cpu', 'on CPU: red border, labelled CPU and its reason');
    item('dec', 'decomposed: dotted border, click to show its pieces');
    item('fold', 'folded or removed: dashed grey');
  }
  renderSummary();
  renderLegend();
  renderPartitions();
  for (const g of graphNames) $('graph-select').append(el('option', { value: g, text: `${g} (${(graphNodes.get(g) || []).length} nodes)` }));
  resize();
  showGraph(cur);
  table.apply();
  window.addEventListener('resize', () => { resize(); redraw(); });
  /* for scripts and tests: where things are, in page coordinates */
  window.carveMap = {
    report: R,
    boxOf(what) {
      const k = typeof what === 'number' ? L.boxOfPart.get(what) : L.boxOfNode.get(nodeByName.get(what));
      if (k === undefined) return null;
      const b = L.boxes[k], r = canvas.getBoundingClientRect();
      return { kind: b.kind, x: r.left + view.tx + (b.x + b.w / 2) * view.s, y: r.top + view.ty + (b.y + Math.min(b.h, BOXH) / 2) * view.s, w: b.w * view.s, h: b.h * view.s };
    },
    centre(what) {
      /* the node's or partition's graph first */
      const i = typeof what === 'number' ? undefined : nodeByName.get(what);
      const g = typeof what === 'number' ? partGraph(what) || cur : i !== undefined ? graphOf[i] : cur;
      if (g !== cur && graphNodes.has(g)) showGraph(g);
      const k = typeof what === 'number' ? L.boxOfPart.get(what) : L.boxOfNode.get(i);
      if (k !== undefined) { centreOn(L.boxes[k], true); draw(); }
    },
    showGraph,
  };
  document.body.dataset.loadMs = Math.round(performance.now() - t0);
  document.body.dataset.ready = '1';
})();
