// fleetplane fleet page: a client of the API (docs/api.md) with the token the user pastes.
// The map is the node list followed by the node watch stream (list, then watch from the list's
// resourceVersion; BOOKMARK moves the revision on; a 410 lists again). Changes are collected
// and applied to the DOM once per animation frame, so a few thousand nodes changing at once
// cost one layout. Every string from the server is put in the page with textContent.
'use strict';

(function () {
  const PHASES = ['enrolled', 'inspecting', 'provisioning', 'validating', 'available',
    'in_service', 'draining', 'maintenance', 'repairing', 'failed', 'retiring', 'retired'];
  const TOKEN_KEY = 'fleetplane.token';
  const PAGE = 5000; // the API's largest list page
  const BB_PERIOD_MS = 10000; // budgets and breakers are not watchable: read them this often

  const $ = (id) => document.getElementById(id);
  const nodes = new Map(); // name -> node document
  const squares = new Map(); // name -> element
  const racks = new Map(); // "site\u0000rack" -> .nodes element
  const sites = new Map(); // site -> .racks element
  const dirty = new Set();
  let frame = 0;
  let token = sessionStorage.getItem(TOKEN_KEY) || '';
  let rv = '0';
  let watchAbort = null;
  let generation = 0; // bumped on every (re)connect: a stale loop stops
  let selected = '';
  let bbTimer = 0;

  function el(tag, cls, text) {
    const e = document.createElement(tag);
    if (cls) e.className = cls;
    if (text !== undefined && text !== null) e.textContent = String(text);
    return e;
  }

  function rvOf(n) {
    return Number((n && n.metadata && n.metadata.resourceVersion) || 0);
  }

  // Stores n unless the map already holds a later revision of it (the answer to a drain can
  // arrive after the watch already delivered what followed it). Returns 1 when stored.
  function put(n) {
    const name = n.metadata.name;
    const have = nodes.get(name);
    if (have && rvOf(have) > rvOf(n)) return 0;
    nodes.set(name, n);
    schedule(name);
    return 1;
  }

  function phaseClass(p) {
    return 'ph-' + (PHASES.includes(p) ? p : 'unknown');
  }

  // ---------------------------------------------------------------- API calls

  class ApiError extends Error {
    constructor(status, detail) {
      super(detail);
      this.status = status;
    }
  }

  async function problem(resp) {
    let detail = resp.status + ' ' + resp.statusText;
    try {
      const p = await resp.json();
      if (p && typeof p.detail === 'string') detail = resp.status + ': ' + p.detail;
    } catch (e) { /* not a problem document */ }
    return new ApiError(resp.status, detail);
  }

  async function api(method, path, body, signal) {
    const opt = { method, headers: { Authorization: 'Bearer ' + token }, signal };
    if (body !== undefined) {
      opt.headers['Content-Type'] = 'application/json';
      opt.body = JSON.stringify(body);
    }
    const resp = await fetch(path, opt);
    if (!resp.ok) throw await problem(resp);
    return resp.json();
  }

  // Every page of a list; returns {items, rv} with the first page's revision (a watch from it
  // sees every change made while the later pages were read).
  async function listAll(path, signal) {
    const items = [];
    let cont = '';
    let first = '';
    for (;;) {
      const sep = path.includes('?') ? '&' : '?';
      const page = await api('GET', path + sep + 'limit=' + PAGE +
        (cont ? '&continue=' + encodeURIComponent(cont) : ''), undefined, signal);
      items.push(...page.items);
      if (!first) first = page.metadata.resourceVersion;
      cont = page.metadata.continue || '';
      if (!cont) return { items, rv: first };
    }
  }

  // ---------------------------------------------------------------- the map

  function schedule(name) {
    dirty.add(name);
    if (!frame) frame = requestAnimationFrame(flush);
  }

  function rackBox(site, rack) {
    const key = site + '\u0000' + rack;
    let box = racks.get(key);
    if (box) return box;
    let siteRacks = sites.get(site);
    if (!siteRacks) {
      const s = el('section', 'site');
      s.dataset.site = site;
      s.append(el('h2', '', 'site ' + (site || '(none)')));
      siteRacks = el('div', 'racks');
      s.append(siteRacks);
      insertSorted($('map'), s, site, (c) => c.dataset.site);
      sites.set(site, siteRacks);
    }
    const r = el('div', 'rack');
    r.dataset.rack = rack;
    r.append(el('h3', '', 'rack ' + (rack || '(none)')));
    box = el('div', 'nodes');
    r.append(box);
    insertSorted(siteRacks, r, rack, (c) => c.dataset.rack);
    racks.set(key, box);
    return box;
  }

  // Inserts child into parent before the first child whose key sorts after key.
  function insertSorted(parent, child, key, keyOf) {
    let before = null;
    for (const c of parent.children) {
      const k = keyOf(c);
      if (k !== undefined && k > key) { before = c; break; }
    }
    parent.insertBefore(child, before);
  }

  function flush() {
    frame = 0;
    for (const name of dirty) {
      const n = nodes.get(name);
      let sq = squares.get(name);
      if (!n) {
        if (sq) { sq.remove(); squares.delete(name); }
        continue;
      }
      const spec = n.spec || {};
      const st = n.status || {};
      const site = String(spec.site || ''), rack = String(spec.rack || '');
      if (!sq) {
        sq = el('div', '');
        sq.dataset.name = name;
        squares.set(name, sq);
      }
      if (sq.dataset.site !== site || sq.dataset.rack !== rack || !sq.parentNode) {
        sq.dataset.site = site;
        sq.dataset.rack = rack;
        insertSorted(rackBox(site, rack), sq, name, (c) => c.dataset.name);
      }
      const holds = Array.isArray(st.holds) ? st.holds : [];
      sq.className = 'node ' + phaseClass(st.phase) + (holds.length ? ' held' : '') +
        (name === selected ? ' sel' : '');
      sq.dataset.phase = String(st.phase || '');
      sq.dataset.holds = String(holds.length);
      sq.title = name + ': ' + (st.phase || '?') + (holds.length ? ' (held: ' +
        holds.map((h) => h.owner + ': ' + h.reason).join('; ') + ')' : '');
    }
    if (selected && dirty.has(selected)) renderDetailNode();
    if (dirty.size) soonBB();
    dirty.clear();
    renderSummary();
  }

  function renderSummary() {
    const by = {};
    let held = 0;
    for (const n of nodes.values()) {
      const p = (n.status && n.status.phase) || '?';
      by[p] = (by[p] || 0) + 1;
      if (n.status && Array.isArray(n.status.holds) && n.status.holds.length) held++;
    }
    const parts = [nodes.size + ' nodes'];
    for (const p of PHASES) if (by[p]) parts.push(p + ' ' + by[p]);
    parts.push(held + ' held');
    $('summary').textContent = parts.join(' · ');
  }

  function renderLegend() {
    const lg = $('legend');
    lg.replaceChildren();
    for (const p of PHASES) {
      const s = el('span');
      s.append(el('i', phaseClass(p)), p);
      lg.append(s);
    }
    const s = el('span');
    s.append(el('i', 'ph-unknown held'), 'held');
    lg.append(s);
  }

  // ---------------------------------------------------------------- list and watch

  function setConn(text, cls) {
    const c = $('conn');
    c.textContent = text;
    c.className = 'conn ' + (cls || '');
  }

  async function relist(gen) {
    const got = await listAll('/v1/nodes', watchAbort.signal);
    if (gen !== generation) return;
    const seen = new Set();
    for (const n of got.items) {
      const name = n.metadata.name;
      seen.add(name);
      nodes.set(name, n);
      schedule(name);
    }
    for (const name of nodes.keys()) {
      if (!seen.has(name)) { nodes.delete(name); schedule(name); }
    }
    rv = got.rv;
  }

  // One watch stream from rv until it ends. Returns 'gone' for a 410 (list again), 'end'
  // otherwise.
  async function watchOnce(gen) {
    const resp = await fetch('/v1/nodes?watch=1&resourceVersion=' + encodeURIComponent(rv),
      { headers: { Authorization: 'Bearer ' + token }, signal: watchAbort.signal });
    if (resp.status === 410) return 'gone';
    if (!resp.ok) throw await problem(resp);
    setConn('live', 'live');
    const reader = resp.body.getReader();
    const dec = new TextDecoder();
    let buf = '';
    for (;;) {
      const { value, done } = await reader.read();
      if (done || gen !== generation) return 'end';
      buf += dec.decode(value, { stream: true });
      let nl;
      while ((nl = buf.indexOf('\n')) >= 0) {
        const line = buf.slice(0, nl).trim();
        buf = buf.slice(nl + 1);
        if (!line) continue;
        const ev = JSON.parse(line);
        const o = ev.object || {};
        const md = o.metadata || {};
        if (ev.type === 'ERROR') return o.status === 410 ? 'gone' : 'end';
        if (md.resourceVersion) rv = md.resourceVersion;
        if (ev.type === 'BOOKMARK') continue;
        if (!md.name) continue;
        if (ev.type === 'DELETED') {
          nodes.delete(md.name);
          schedule(md.name);
        } else {
          put(o);
        }
      }
    }
  }

  async function run(gen) {
    let delay = 500;
    let needList = true;
    while (gen === generation) {
      try {
        if (needList) {
          setConn('listing…');
          await relist(gen);
          needList = false;
        }
        const why = await watchOnce(gen);
        if (why === 'gone') needList = true;
        delay = 500;
      } catch (e) {
        if (gen !== generation) return;
        if (e instanceof ApiError && (e.status === 401 || e.status === 403)) {
          logout(e.message);
          return;
        }
        setConn('reconnecting: ' + e.message, 'down');
      }
      if (gen !== generation) return;
      setConn('reconnecting…', 'down');
      await new Promise((res) => setTimeout(res, delay));
      delay = Math.min(delay * 2, 10000);
    }
  }

  // ---------------------------------------------------------------- budgets and breakers

  function row(tbody, cells) {
    const tr = el('tr');
    for (const c of cells) {
      if (c instanceof Node) { const td = el('td'); td.append(c); tr.append(td); }
      else tr.append(el('td', '', c));
    }
    tbody.append(tr);
    return tr;
  }

  function emptyRow(tbody, cols, text) {
    const td = el('td', 'empty', text);
    td.colSpan = cols;
    const tr = el('tr');
    tr.append(td);
    tbody.append(tr);
  }

  // Budgets count nodes by phase: read them again a second after nodes change (one read for a
  // burst of changes).
  let bbSoon = 0;
  function soonBB() {
    if (bbSoon || !bbTimer) return;
    bbSoon = setTimeout(() => { bbSoon = 0; refreshBB(); }, 1000);
  }

  async function refreshBB() {
    const gen = generation;
    if (!token) return;
    try {
      const [b, k] = await Promise.all([api('GET', '/v1/budgets'), api('GET', '/v1/breakers')]);
      if (gen !== generation) return;
      const bt = $('budgets').tBodies[0];
      bt.replaceChildren();
      for (const d of b.items || []) {
        const spec = d.spec || {};
        const doms = (d.status && d.status.domains) || [];
        if (!doms.length) row(bt, [d.metadata.name, spec.domain, '', '', '', spec.maxUnavailable, '']);
        for (const v of doms) {
          row(bt, [d.metadata.name, spec.domain, v.value, v.nodes, v.unavailable, v.max,
            (v.waiting || []).join(', ')]);
        }
      }
      if (!bt.children.length) emptyRow(bt, 7, 'no budgets');
      const kt = $('breakers').tBodies[0];
      kt.replaceChildren();
      for (const br of k.items || []) {
        const reset = el('button', '', 'Reset');
        reset.type = 'button';
        reset.addEventListener('click', () => resetBreaker(br.metadata.name));
        row(kt, [br.metadata.name, br.openedAt, (br.nodes || []).join(', '), br.reason, reset]);
      }
      if (!kt.children.length) emptyRow(kt, 5, 'no breaker is open');
      $('bb-err').textContent = '';
    } catch (e) {
      if (gen === generation) $('bb-err').textContent = e.message;
    }
  }

  async function resetBreaker(name) {
    const reason = window.prompt('Reset breaker ' + name + ': reason');
    if (!reason) return;
    try {
      await api('POST', '/v1/breakers/' + encodeURIComponent(name) + ':reset', { reason });
      $('bb-err').textContent = '';
    } catch (e) {
      $('bb-err').textContent = 'reset ' + name + ': ' + e.message;
    }
    refreshBB();
  }

  // ---------------------------------------------------------------- the node page

  function renderDetailNode() {
    const n = nodes.get(selected);
    if (!n) { $('d-phase').textContent = 'deleted'; return; }
    const st = n.status || {};
    const spec = n.spec || {};
    $('d-name').textContent = selected;
    const ph = $('d-phase');
    ph.textContent = st.phase || '?';
    ph.className = 'badge ' + phaseClass(st.phase);
    $('d-since').textContent = st.phaseSince ? 'since ' + st.phaseSince : '';
    $('d-place').textContent = 'site ' + (spec.site || '-') + ' · rack ' + (spec.rack || '-') +
      (spec.gpus ? ' · ' + (spec.gpus.count || 0) + ' × ' + (spec.gpus.model || 'GPU') : '') +
      (st.operation ? ' · running ' + st.operation : '');
    const ht = $('d-holds').tBodies[0];
    ht.replaceChildren();
    for (const h of st.holds || []) row(ht, [h.owner, h.reason, h.since]);
    if (!ht.children.length) emptyRow(ht, 3, 'no holds');
    const ct = $('d-conds').tBodies[0];
    ct.replaceChildren();
    for (const c of st.conditions || []) {
      const tr = row(ct, [c.type, c.status, c.reason, c.message, c.since]);
      if (['True', 'False', 'Unknown'].includes(c.status)) tr.children[1].className = c.status;
    }
    if (!ct.children.length) emptyRow(ct, 5, 'no conditions');
  }

  let detailSeq = 0;
  async function loadDetailLists() {
    const name = selected;
    const seq = ++detailSeq;
    const q = encodeURIComponent(name);
    try {
      const [ops, evs] = await Promise.all([
        api('GET', '/v1/operations?node=' + q + '&limit=500'),
        listAll('/v1/events?object=' + encodeURIComponent('node/' + name))]);
      if (seq !== detailSeq) return;
      const ot = $('d-ops').tBodies[0];
      ot.replaceChildren();
      const items = (ops.items || []).slice().sort((a, b) =>
        String((b.status || {}).startedAt || b.metadata.createdAt || '').localeCompare(
          String((a.status || {}).startedAt || a.metadata.createdAt || '')));
      for (const o of items.slice(0, 30)) {
        const s = o.status || {};
        const steps = (o.spec && o.spec.steps) || [];
        row(ot, [o.metadata.name, s.state, (s.step || 0) + '/' + steps.length,
          s.startedAt || '', s.lastError || '']);
      }
      if (!ot.children.length) emptyRow(ot, 5, 'no operations');
      const et = $('d-events').tBodies[0];
      et.replaceChildren();
      for (const e of evs.items.slice(-50).reverse()) row(et, [e.time, e.type, e.reason, e.actor, e.message]);
      if (!et.children.length) emptyRow(et, 5, 'no events');
    } catch (e) {
      if (seq === detailSeq) $('d-err').textContent = e.message;
    }
  }

  function openDetail(name) {
    const prev = squares.get(selected);
    if (prev) prev.classList.remove('sel');
    selected = name;
    const sq = squares.get(name);
    if (sq) sq.classList.add('sel');
    $('detail').hidden = false;
    $('d-err').textContent = '';
    $('d-ok').textContent = '';
    $('d-ops').tBodies[0].replaceChildren();
    $('d-events').tBodies[0].replaceChildren();
    renderDetailNode();
    loadDetailLists();
  }

  function closeDetail() {
    const prev = squares.get(selected);
    if (prev) prev.classList.remove('sel');
    selected = '';
    $('detail').hidden = true;
  }

  async function act(verb) {
    const name = selected;
    if (!name) return;
    const reason = $('d-reason').value.trim();
    $('d-err').textContent = '';
    $('d-ok').textContent = '';
    for (const b of [$('d-drain'), $('d-resume')]) b.disabled = true;
    try {
      const n = await api('POST', '/v1/nodes/' + encodeURIComponent(name) + ':' + verb,
        verb === 'resume' && !reason ? {} : { reason });
      if (name === selected) $('d-ok').textContent = verb + ' accepted';
      if (n && n.metadata && nodes.has(name)) put(n);
      if (name === selected) loadDetailLists();
    } catch (e) {
      if (name === selected) $('d-err').textContent = verb + ' ' + name + ' refused: ' + e.message;
    } finally {
      for (const b of [$('d-drain'), $('d-resume')]) b.disabled = false;
    }
  }

  // ---------------------------------------------------------------- token and start

  function stop() {
    generation++;
    if (watchAbort) watchAbort.abort();
    watchAbort = null;
    clearInterval(bbTimer);
    bbTimer = 0;
    clearTimeout(bbSoon);
    bbSoon = 0;
  }

  function logout(msg) {
    stop();
    token = '';
    sessionStorage.removeItem(TOKEN_KEY);
    nodes.clear();
    squares.clear();
    racks.clear();
    sites.clear();
    dirty.clear();
    $('map').replaceChildren();
    closeDetail();
    $('app').hidden = true;
    $('logout').hidden = true;
    $('login').hidden = false;
    $('login-err').textContent = msg || '';
    $('summary').textContent = '';
    setConn('not connected');
    $('token').focus();
  }

  function start() {
    stop();
    $('login').hidden = true;
    $('app').hidden = false;
    $('logout').hidden = false;
    const gen = generation;
    watchAbort = new AbortController();
    run(gen);
    refreshBB();
    bbTimer = setInterval(refreshBB, BB_PERIOD_MS);
  }

  document.addEventListener('DOMContentLoaded', () => {
    renderLegend();
    $('login-form').addEventListener('submit', (ev) => {
      ev.preventDefault();
      const t = $('token').value.trim();
      if (!t) { $('login-err').textContent = 'paste a token first'; return; }
      token = t;
      $('token').value = '';
      sessionStorage.setItem(TOKEN_KEY, token);
      start();
    });
    $('logout').addEventListener('click', () => logout(''));
    $('map').addEventListener('click', (ev) => {
      const t = ev.target;
      if (t instanceof HTMLElement && t.classList.contains('node')) openDetail(t.dataset.name);
    });
    $('d-close').addEventListener('click', closeDetail);
    $('d-drain').addEventListener('click', () => act('drain'));
    $('d-resume').addEventListener('click', () => act('resume'));
    $('d-actions').addEventListener('submit', (ev) => ev.preventDefault());
    if (token) start();
    else logout('');
  });
})();
