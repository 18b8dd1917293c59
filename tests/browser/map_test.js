// map_test.js: opens a partition map page (carve report / carve lower --html)
// from disk in Debian's chromium, headless, and checks what a person would
// see against the report it was made from: the summary's numbers, the CPU
// reasons chart, a search by name, a filter by reason (exactly the report's
// nodes with that reason), a table row click selecting the graph node and a
// graph click selecting the table row, a collapsed partition expanding on
// click, decomposed pieces, encodings, keyboard use of the table, no console
// errors, no network request, and the load time. Screenshots go to --shots.
//
//   node map_test.js --page MAP.html --report REPORT.json --shots DIR --name NAME
//        [--node NAME] [--max-load-ms MS] [--expect-collapsed] [--expect-encodings]
'use strict';
const fs = require('fs');
const os = require('os');
const path = require('path');
const puppeteer = require('puppeteer-core');

const args = {};
for (let i = 2; i < process.argv.length; i++) {
  const a = process.argv[i];
  if (!a.startsWith('--')) continue;
  const next = process.argv[i + 1];
  if (next === undefined || next.startsWith('--')) args[a.slice(2)] = true;
  else { args[a.slice(2)] = next; i++; }
}
for (const k of ['page', 'report', 'shots', 'name'])
  if (!args[k]) { console.error(`map_test: --${k} is required`); process.exit(2); }

let failures = 0, passes = 0;
function check(ok, what, detail) {
  if (ok) { passes++; console.log(`ok   ${what}`); }
  else { failures++; console.log(`FAIL ${what}${detail !== undefined ? ': ' + detail : ''}`); }
}
const R = JSON.parse(fs.readFileSync(args.report, 'utf8'));
const nodes = R.nodes;
const num = (s) => Number(String(s).replace(/,/g, ''));

(async () => {
  fs.mkdirSync(args.shots, { recursive: true });
  const profile = fs.mkdtempSync(path.join(os.tmpdir(), 'carve-chromium-'));
  const browser = await puppeteer.launch({
    executablePath: process.env.CHROMIUM || '/usr/bin/chromium',
    headless: true,
    userDataDir: profile,
    args: ['--no-sandbox', '--disable-gpu', '--disable-background-networking', '--disable-component-update',
      '--disable-sync', '--no-first-run', '--disable-dev-shm-usage', '--window-size=1400,1000'],
  });
  const errors = [], requests = [];
  try {
    const page = await browser.newPage();
    await page.setViewport({ width: 1400, height: 1000 });
    page.on('console', (m) => { if (m.type() === 'error' || m.type() === 'warning' && /error/i.test(m.text())) errors.push('console: ' + m.text()); });
    page.on('pageerror', (e) => errors.push('page error: ' + e.message));
    await page.setRequestInterception(true);
    page.on('request', (r) => {
      const u = r.url();
      if (u.startsWith('file:') || u.startsWith('data:') || u.startsWith('blob:')) r.continue();
      else { requests.push(u); r.abort(); }
    });
    const shot = (what) => page.screenshot({ path: path.join(args.shots, `${args.name}-${what}.png`) });
    const t0 = Date.now();
    await page.goto('file://' + path.resolve(args.page), { waitUntil: 'load', timeout: 120000 });
    await page.waitForSelector('body[data-ready="1"]', { timeout: 120000 });
    const loadMs = Date.now() - t0;
    const scriptMs = await page.$eval('body', (b) => +b.dataset.loadMs);
    const maxLoad = +(args['max-load-ms'] || 20000);
    check(loadMs < maxLoad, `page loads in ${loadMs} ms (its script ${scriptMs} ms), under ${maxLoad} ms`);
    await shot('summary');
    const collapsedAtStart = await page.$eval('#graph', (e) => e.dataset.expanded === '');
    if (args['expect-collapsed']) check(collapsedAtStart, 'a large graph starts with its partitions collapsed');
    else {
      /* a smaller graph: its partitions of up to 100 nodes start expanded */
      const g0 = (R.graphs && R.graphs[0] && R.graphs[0].name) || 'main';
      const byName = new Map(nodes.map((n) => [n.name, n]));
      const want = R.partitions.filter((p) => p.nodes.length && p.nodes.length <= 100 && byName.get(p.nodes[0]).graph === g0).map((p) => p.index).sort((a, b) => a - b).join(',');
      const got = await page.$eval('#graph', (e) => e.dataset.expanded);
      check(got === want, 'a smaller graph starts with its partitions of up to 100 nodes expanded', `${got} vs ${want}`);
    }

    /* the summary: every count of the report, and the reasons chart */
    const counts = R.counts || {};
    for (const [k, v] of Object.entries(counts)) {
      if (typeof v === 'object') continue;
      const shown = await page.$eval(`#summary [data-k="${k}"] dd`, (e) => e.textContent).catch(() => null);
      check(shown !== null && num(shown) === v, `summary ${k} shows ${v}`, shown);
    }
    if (R.rounds != null) check(num(await page.$eval('#summary [data-k="rounds"] dd', (e) => e.textContent)) === R.rounds, `summary rounds shows ${R.rounds}`);
    const tl = Array.isArray(R.targets) && R.targets.length ? R.targets : Array.isArray(R.target) ? R.target : [R.target];
    const tname = tl.map((t) => (typeof t === 'object' ? t.name : t)).join(', ');
    check((await page.$eval('#summary [data-k="target"] dd', (e) => e.textContent)) === tname, `summary target shows ${tname}`);
    const byReason = {};
    for (const n of nodes) if (n.placement === 'cpu' && n.reason) byReason[n.reason.code] = (byReason[n.reason.code] || 0) + 1;
    const cr = counts.cpu_reasons || byReason;
    check(JSON.stringify(Object.keys(cr).sort()) === JSON.stringify(Object.keys(byReason).sort()), 'the report counts CPU reasons as its nodes say');
    for (const [code, n] of Object.entries(cr)) {
      const shown = await page.$eval(`#reasons .bar[data-reason="${code}"] .n`, (e) => e.textContent).catch(() => null);
      check(shown !== null && num(shown) === n, `reasons chart: ${code} ${n}`, shown);
    }
    if (R.folding && R.folding.enabled && R.folding.nodes_folded != null)
      check(num(await page.$eval('#folding [data-k="fold.nodes_folded"] dd', (e) => e.textContent)) === R.folding.nodes_folded, 'folding figures shown');
    if (R.time_ms) check(await page.$(`#times [data-k="time.total"]`) !== null, 'time figures shown');
    await page.$eval('#graph-section', (e) => e.scrollIntoView());
    await shot('graph');

    /* rows of the (virtualised) table: scroll through it */
    async function tableRows() {
      return page.evaluate(async () => {
        const sc = document.getElementById('table-scroll');
        const seen = new Set();
        sc.scrollTop = 0;
        for (let guard = 0; guard < 100000; guard++) {
          await new Promise((r) => requestAnimationFrame(() => requestAnimationFrame(r)));
          for (const tr of sc.querySelectorAll('tr.row')) seen.add(tr.dataset.node);
          if (sc.scrollTop + sc.clientHeight >= sc.scrollHeight - 1) break;
          sc.scrollTop += sc.clientHeight - 30;
        }
        return [...seen];
      });
    }
    const countText = () => page.$eval('#table-count', (e) => e.textContent);
    check((await countText()).startsWith(`${nodes.length.toLocaleString('en-US')} of ${nodes.length.toLocaleString('en-US')}`), 'the table holds every node', await countText());

    /* search by name */
    const target = args.node || nodes[Math.floor(nodes.length / 2)].name;
    await page.click('#search', { clickCount: 3 });
    await page.type('#search', target);
    const expectSearch = nodes.filter((n) => n.name.toLowerCase().includes(target.toLowerCase()) || n.op.toLowerCase().includes(target.toLowerCase())).length;
    /* typing fires one search per key: wait until the table shows the
     * whole query's result (a loaded machine may still be on a prefix) */
    await page.waitForFunction((t, n) => {
      const c = document.getElementById('table-count').textContent;
      return [...document.querySelectorAll('#tbody tr.row')].some((r) => r.dataset.node === t) && c.startsWith(`${n.toLocaleString('en-US')} of `);
    }, { timeout: 30000 }, target, expectSearch)
      .then(() => check(true, `search finds ${target}`), () => check(false, `search finds ${target}`));
    check(num((await countText()).split(' of ')[0]) === expectSearch, `search shows ${expectSearch} matching nodes`, await countText());

    /* a table row click selects the node in the graph */
    await page.click(`#tbody tr.row[data-node="${target.replace(/"/g, '\\"')}"]`);
    await page.waitForFunction((t) => document.getElementById('graph').dataset.selected === t, { timeout: 30000 }, target)
      .then(() => check(true, 'clicking the row selects the graph node'), () => check(false, 'clicking the row selects the graph node'));
    check((await page.$eval('#detail h3', (e) => e.textContent)) === target, 'the detail panel names the node');
    const inView = await page.evaluate((t) => {
      const b = window.carveMap.boxOf(t), r = document.getElementById('graph').getBoundingClientRect();
      return b && b.x >= r.left && b.x <= r.right && b.y >= r.top && b.y <= r.bottom;
    }, target);
    check(inView, 'the graph shows the selected node in view');
    const tn = nodes.find((n) => n.name === target);
    if (tn.inputs) check((await page.$$eval('#detail ul.mono li', (l) => l.length)) >= tn.inputs.length + tn.outputs.length, 'the detail panel lists its inputs and outputs');
    await page.$eval('#graph-section', (e) => e.scrollIntoView());
    await shot('selected');

    /* filter by each reason: exactly the report's nodes with it */
    await page.click('#search', { clickCount: 3 });
    await page.keyboard.press('Backspace');
    await page.waitForFunction((n) => document.getElementById('table-count').textContent.startsWith(n), { timeout: 30000 }, nodes.length.toLocaleString('en-US'));
    const reasons = [...new Set(nodes.filter((n) => n.reason).map((n) => n.reason.code))];
    for (const code of reasons.slice(0, 6)) {
      await page.select('#f-reason', code);
      const want = nodes.filter((n) => n.reason && n.reason.code === code).map((n) => n.name).sort();
      const got = (await tableRows()).sort();
      check(JSON.stringify(got) === JSON.stringify(want), `filter by reason ${code} shows exactly its ${want.length} nodes`, `${got.length} shown`);
    }
    await page.select('#f-reason', '');
    /* filter by placement cpu */
    await page.select('#f-placement', 'cpu');
    const wantCpu = nodes.filter((n) => n.placement === 'cpu').length;
    check(num((await countText()).split(' of ')[0]) === wantCpu, `filter by placement cpu shows ${wantCpu}`, await countText());
    await page.select('#f-placement', '');

    /* sorting by op puts the rows in order */
    await page.click('th.c-op button');
    const ops = await page.$$eval('#tbody tr.row td:nth-child(2)', (l) => l.map((e) => e.textContent));
    check(ops.length > 0 && ops.every((o, i) => i === 0 || ops[i - 1] <= o), 'sorting by op orders the rows');
    check((await page.$eval('th.c-op', (e) => e.getAttribute('aria-sort'))) === 'ascending', 'the sorted column says so (aria-sort)');

    /* keyboard: the table takes focus, arrows move, Enter selects */
    await page.focus('#node-table');
    await page.keyboard.press('ArrowDown');
    await page.keyboard.press('ArrowDown');
    await page.keyboard.press('Enter');
    const third = await page.$eval('#tbody tr.row.active', (e) => e.dataset.node);
    check((await page.$eval('#graph', (e) => e.dataset.selected)) === third, 'keyboard: arrows and Enter select a node', third);
    const a11y = await page.$eval('#node-table', (t) => { const id = t.getAttribute('aria-activedescendant'); const r = id && document.getElementById(id); return r && r.dataset.node; });
    check(a11y === third, 'the table tells assistive technology its active row (aria-activedescendant)');
    const snap = await page.accessibility.snapshot({ root: await page.$('#detail') });
    check(JSON.stringify(snap || {}).includes(third), 'the selection is text a screen reader reaches (accessibility tree)');

    /* a click on a graph node selects its table row */
    const shown = (n) => n.placement !== 'folded' && n.placement !== 'removed';
    const other = nodes.find((n) => n.placement === 'cpu' && n.name !== target) || nodes.find((n) => n.name !== target && shown(n));
    if (other) {
      await page.$eval('#graph-section', (e) => e.scrollIntoView());
      await page.evaluate((t) => window.carveMap.centre(t), other.name);
      const b = await page.evaluate((t) => window.carveMap.boxOf(t), other.name);
      await page.mouse.click(b.x, b.y);
      await page.waitForFunction((t) => { const r = document.querySelector('#tbody tr.row[aria-selected="true"]'); return r && r.dataset.node === t; }, { timeout: 30000 }, other.name)
        .then(() => check(true, `clicking graph node ${other.name} selects its table row`), () => check(false, `clicking graph node ${other.name} selects its table row`));
    }

    /* a collapsed partition expands on click and shows its nodes */
    const mainName = (R.graphs && R.graphs[0] && R.graphs[0].name) || 'main';
    const graphOfNode = new Map(nodes.map((n) => [n.name, n.graph || 'main']));
    const main = R.partitions.filter((p) => p.nodes.length && graphOfNode.get(p.nodes[0]) === mainName);
    if (main.length) {
      const p = main.reduce((a, b) => (b.nodes.length > a.nodes.length ? b : a));
      await page.click('#collapse-all');
      const before = await page.$eval('#graph', (e) => +e.dataset.drawnNodes);
      await page.evaluate((i) => window.carveMap.centre(i), p.index);
      const b = await page.evaluate((i) => window.carveMap.boxOf(i), p.index);
      check(b && b.kind === 'part', `partition ${p.index} is one box when collapsed`);
      await page.$eval('#graph-section', (e) => e.scrollIntoView());
      await shot('collapsed');
      const b2 = await page.evaluate((i) => window.carveMap.boxOf(i), p.index);
      await page.mouse.click(b2.x, b2.y);
      await page.waitForFunction((i) => document.getElementById('graph').dataset.expanded.split(',').includes(String(i)), { timeout: 30000 }, p.index)
        .then(() => check(true, `clicking partition ${p.index} expands it`), () => check(false, `clicking partition ${p.index} expands it`));
      const after = await page.$eval('#graph', (e) => +e.dataset.drawnNodes);
      /* the graph draws the input model's nodes; nodes carve made
       * (recomposed, fused) are in the partition's list and the summary */
      const inputNames = new Set(nodes.map((n) => n.name));
      const drawable = nodes.filter((n) => n.placement === p.index).length;
      const made = p.nodes.filter((nm) => !inputNames.has(nm)).length;
      check(after - before === drawable && drawable + made === p.nodes.length,
        `expanding it draws its ${drawable} input nodes (${made} more made by carve)`, `${after - before}`);
      const listed = await page.$$eval('#detail ul.part-nodes li:not(.more)', (l) => l.map((e) => e.textContent));
      check(listed.length === Math.min(300, p.nodes.length) && listed.every((n, k) => n === p.nodes[k]), 'the detail panel lists the partition\'s nodes');
      const shownIn = num(await page.$eval('#detail [data-k="node_count"] dd', (e) => e.textContent));
      check(shownIn === p.nodes.length, 'the partition\'s node count is shown');
      await shot('expanded');
    }

    /* folded and removed nodes: hidden in the graph until asked for */
    const g0 = await page.$eval('#graph', (e) => e.dataset.graph);
    const folded = nodes.filter((n) => (n.graph || 'main') === g0 && (n.placement === 'folded' || n.placement === 'removed')).length;
    if (await page.$eval('#show-folded', (e) => e.checked)) await page.click('#show-folded');
    const drawnOff = await page.$eval('#graph', (e) => +e.dataset.drawnNodes);
    await page.click('#show-folded');
    const drawnOn = await page.$eval('#graph', (e) => +e.dataset.drawnNodes);
    check(drawnOn - drawnOff === folded, `"Show folded nodes" draws the graph's ${folded} folded and removed nodes`, drawnOn - drawnOff);

    /* decomposed nodes: their pieces */
    const dec = nodes.find((n) => n.placement === 'decomposed');
    if (dec) {
      await page.select('#f-placement', 'decomposed');
      await page.click(`#tbody tr.row[data-node="${dec.name}"]`);
      await page.waitForFunction((t) => document.getElementById('graph').dataset.selected === t, { timeout: 30000 }, dec.name);
      const pieces = await page.$$eval('#detail ul.pieces li', (l) => l.length);
      check(pieces === dec.decomposed.length, `decomposed node ${dec.name} shows its ${dec.decomposed.length} pieces`, pieces);
      await page.click('#toggle-pieces');
      const h = await page.evaluate((t) => window.carveMap.boxOf(t).h, dec.name);
      check(h > 40, 'its pieces open in the graph');
      await page.select('#f-placement', '');
    }

    /* quantized partitions: their encodings */
    const qp = R.partitions.find((p) => p.encodings);
    if (args['expect-encodings']) check(!!qp, 'the report has encodings');
    if (qp) {
      await page.click(`#part-table tr.prow[data-part="${qp.index}"]`);
      const rows = await page.$$eval('#detail table.enc tbody tr', (l) => l.length);
      const want = Math.min(500, Object.keys(qp.encodings).length);
      check(rows === want, `partition ${qp.index} shows its ${want} encodings`, rows);
      await page.$eval('#graph-section', (e) => e.scrollIntoView());
      await shot('encodings');
    }

    /* subgraphs: reachable from their node */
    const withSub = nodes.find((n) => n.subgraphs && n.subgraphs.length);
    if (withSub) {
      await page.click('#search', { clickCount: 3 });
      await page.type('#search', withSub.name);
      await page.select('#f-op', withSub.op);
      await page.click('th.c-name button'); /* exact name first */
      await page.waitForSelector(`#tbody tr.row[data-node="${withSub.name}"]`);
      await page.click(`#tbody tr.row[data-node="${withSub.name}"]`);
      const sg = withSub.subgraphs[0].graph;
      await page.click(`#detail .subgraph-link[data-graph="${sg}"]`);
      check((await page.$eval('#graph', (e) => e.dataset.graph)) === sg, `node ${withSub.name} opens its subgraph ${sg}`);
      const inSub = nodes.filter((n) => n.graph === sg && n.placement !== 'folded' && n.placement !== 'removed').map((n) => n.name);
      const drawn = await page.evaluate((names) => names.every((n) => window.carveMap.boxOf(n)), inSub);
      check(drawn, `subgraph ${sg} draws its ${inSub.length} nodes`);
      await page.$eval('#graph-section', (e) => e.scrollIntoView());
      await shot('subgraph');
      await page.click('#graph-crumb button');
      check((await page.$eval('#graph', (e) => e.dataset.graph)) === withSub.graph, 'the subgraph leads back to its node');
    }
    /* several targets: what each earlier target said of a node */
    const refused = nodes.find((n) => Array.isArray(n.refused_by) && n.refused_by.length);
    if (refused) {
      await page.click('#search', { clickCount: 3 });
      await page.type('#search', refused.name);
      await page.select('#f-op', refused.op);
      await page.waitForSelector(`#tbody tr.row[data-node="${refused.name}"]`);
      await page.click(`#tbody tr.row[data-node="${refused.name}"]`);
      const items = await page.$$eval('#detail ul.refused-by li', (l) => l.map((e) => e.textContent));
      check(items.length === refused.refused_by.length && items.every((t, k) => t.startsWith(refused.refused_by[k].target + ': ' + refused.refused_by[k].code)), `node ${refused.name} lists the targets that refused it`, items.join(' | '));
    }
    /* sections the page does not know are shown as they are */
    for (const k of Object.keys(R))
      if (!['schema_version', 'carve_version', 'target', 'targets', 'nodes', 'partitions', 'folding', 'rounds', 'time_ms', 'graphs', 'counts'].includes(k))
        check(await page.$(`#extra [data-section="${k}"]`) !== null, `unknown section ${k} is shown`);
    if (Array.isArray(R.recomposed) && R.recomposed.length && R.recomposed[0].nodes)
      check((await page.$$eval('#recomposed li', (l) => l.length)) === R.recomposed.length, `recomposed: ${R.recomposed.length} patterns listed`);
    check((await page.title()) === 'carve partition map', 'names and messages are text, never markup', await page.title());

    check(requests.length === 0, 'no network request', requests.join(' '));
    check(errors.length === 0, 'no console error', errors.join(' | '));
  } catch (e) {
    check(false, 'the test ran to its end', e.stack || e);
  } finally {
    await browser.close();
    fs.rmSync(profile, { recursive: true, force: true });
  }
  console.log(`${args.name}: ${passes} passed, ${failures} failed`);
  process.exit(failures ? 1 : 0);
})();
