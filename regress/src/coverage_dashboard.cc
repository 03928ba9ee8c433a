// The coverage dashboard (coverage.html): one static file. The run's coverage.json and history are
// embedded as JSON; the page's script builds the tables, the heat map of functional bins and the
// holes from them, and draws the charts with Chart.js when it is inlined. When it has rendered,
// the body carries data-rendered="true" and data-charts="N" (what the browser test reads).
#include <algorithm>

#include "coverage_report.h"

namespace loom::regress {

using nlohmann::json;

namespace {

// JSON or a script inside <script>: no "</" may end the element early.
std::string script_safe(std::string s) {
  for (size_t p = 0; (p = s.find("</", p)) != std::string::npos; p += 3) s.replace(p, 2, "<\\/");
  return s;
}

std::string html_escape(const std::string& s) {
  std::string o;
  for (char c : s) {
    if (c == '<')
      o += "&lt;";
    else if (c == '>')
      o += "&gt;";
    else if (c == '&')
      o += "&amp;";
    else if (c == '"')
      o += "&quot;";
    else
      o += c;
  }
  return o;
}

constexpr const char* kStyle = R"css(
body { font: 14px/1.4 system-ui, sans-serif; margin: 24px; color: #222; }
h1 { font-size: 20px; } h2 { font-size: 16px; margin-top: 28px; }
.tiles { display: flex; gap: 12px; flex-wrap: wrap; }
.tile { border: 1px solid #ccc; border-radius: 6px; padding: 8px 14px; min-width: 110px; }
.tile b { display: block; font-size: 20px; }
table { border-collapse: collapse; margin: 8px 0; }
th, td { border: 1px solid #ddd; padding: 3px 8px; text-align: right; }
th:first-child, td:first-child { text-align: left; }
.heat td.bin { width: 18px; height: 18px; padding: 0; border: 1px solid #fff; }
.chart { max-width: 900px; height: 320px; }
.note { color: #a40; }
)css";

// Builds the page from the embedded data; every number shown comes from coverage.json.
constexpr const char* kScript = R"js(
(function () {
  const cov = JSON.parse(document.getElementById('coverage-data').textContent);
  const history = JSON.parse(document.getElementById('history-data').textContent);
  const el = (tag, attrs, text) => {
    const e = document.createElement(tag);
    for (const k in attrs || {}) e.setAttribute(k, attrs[k]);
    if (text !== undefined) e.textContent = text;
    return e;
  };
  const color = (pct) => `hsl(${Math.round(1.2 * pct)}, 70%, 80%)`;
  const pctText = (f) => f && f.points ? `${f.percent.toFixed(1)}% (${f.hit}/${f.points})` : '-';
  const kinds = ['line', 'branch', 'toggle', 'cover'];

  const tiles = document.getElementById('tiles');
  const tile = (name, value) => { const t = el('div', {class: 'tile'}, name); t.appendChild(el('b', {}, value)); tiles.appendChild(t); };
  if (cov.isa) tile('ISA bins', `${cov.isa.hit}/${cov.isa.total}`);
  if (cov.rtl) for (const k of kinds) tile(k, cov.rtl[k].points ? `${cov.rtl[k].percent.toFixed(1)}%` +
      (cov.rtl[k].waived ? ` (${cov.rtl[k].raw_percent.toFixed(1)}% without waivers)` : '') : '-');

  // Code coverage per module.
  const modules = document.getElementById('modules');
  if (cov.rtl) {
    const t = el('table', {id: 'module-table'});
    const head = el('tr');
    for (const h of ['module'].concat(kinds)) head.appendChild(el('th', {}, h));
    t.appendChild(head);
    for (const m of Object.keys(cov.rtl.modules).sort()) {
      const r = el('tr', {'data-module': m});
      r.appendChild(el('td', {}, m));
      for (const k of kinds) {
        const f = cov.rtl.modules[m][k];
        const c = el('td', {}, pctText(f));
        if (f && f.points) c.style.background = color(f.percent);
        r.appendChild(c);
      }
      t.appendChild(r);
    }
    modules.appendChild(t);
  } else {
    modules.appendChild(el('p', {}, 'No RTL coverage in this run (loom regress --coverage with jobs on the rtl backend).'));
  }

  // Functional bins as a heat map: one row per group, one cell per bin, colored by hits.
  const heat = document.getElementById('heatmap');
  const groups = new Map();
  if (cov.isa) for (const b of cov.isa.bins) {
    if (!groups.has(b.group)) groups.set(b.group, []);
    groups.get(b.group).push({name: b.name, hits: b.hits});
  }
  if (cov.rtl) for (const p of cov.rtl.cover_properties) {
    const dot = p.instance.lastIndexOf('.');
    const g = 'cover ' + p.instance.substring(0, dot);
    if (!groups.has(g)) groups.set(g, []);
    groups.get(g).push({name: p.instance.substring(dot + 1), hits: p.hits});
  }
  const ht = el('table', {class: 'heat', id: 'heat-table'});
  for (const [g, bins] of groups) {
    const r = el('tr');
    r.appendChild(el('td', {}, g));
    for (const b of bins) {
      const c = el('td', {class: 'bin', title: `${g}: ${b.name}: ${b.hits} hits`, 'data-hits': b.hits});
      c.style.background = b.hits ? `hsl(120, 60%, ${Math.max(35, 85 - 8 * Math.log10(b.hits))}%)` : 'hsl(0, 75%, 60%)';
      r.appendChild(c);
    }
    ht.appendChild(r);
  }
  heat.appendChild(ht);

  // Holes: every unhit functional bin, then the code coverage holes (the first of each kind).
  const holes = document.getElementById('holes');
  const list = el('ul', {id: 'hole-list'});
  for (const [g, bins] of groups) for (const b of bins) if (!b.hits) list.appendChild(el('li', {class: 'hole'}, `${g}: ${b.name}`));
  holes.appendChild(list);
  if (cov.rtl) for (const k of ['line', 'branch', 'toggle']) {
    const h = cov.rtl.holes[k];
    // Toggles by signal where the report has them: "the upper bits of every index" reads better
    // than a list of bits.
    const bySignal = k === 'toggle' ? cov.rtl.toggle_holes_by_signal : undefined;
    holes.appendChild(el('h3', {}, `${k}: ${h.count} not hit` + (bySignal ? `, in ${bySignal.count} signals` : '') +
        ((bySignal || h).count > (bySignal || h).listed.length ? ` (first ${(bySignal || h).listed.length})` : '')));
    const ul = el('ul', bySignal ? {id: 'toggle-signals'} : {});
    if (bySignal)
      for (const x of bySignal.listed) ul.appendChild(el('li', {}, `${x.module} ${x.signal}${x.bits}: ${x.unhit} of ${x.points} bits`));
    else
      for (const x of h.listed) ul.appendChild(el('li', {}, `${x.module} ${x.file}:${x.line} ${x.what}`));
    holes.appendChild(ul);
  }
  // Waivers: what the toggle figures leave out, and why; a contradicted one first.
  if (cov.rtl && cov.rtl.waivers) {
    const w = cov.rtl.waivers;
    holes.appendChild(el('h3', {}, `waived: ${w.structural} structural and ${w.bounded} bounded toggle points (${w.source})`));
    const ul = el('ul', {id: 'waivers'});
    const listed = w.listed.slice().sort((a, b) => (b.hit > 0) - (a.hit > 0));
    for (const x of listed) {
      const li = el('li', {class: x.hit ? 'contradicted' : 'waiver'},
          `${x.module} ${x.signal}${x.bits}: ${x.waived} waived, ${x.class}: ${x.reason}` + (x.hit ? ` (CONTRADICTED: ${x.hit} toggled)` : ''));
      ul.appendChild(li);
    }
    holes.appendChild(ul);
  }

  // Charts, when Chart.js is inlined.
  let charts = 0;
  if (typeof Chart !== 'undefined') {
    Chart.defaults.animation = false;
    if (cov.rtl) {
      const names = Object.keys(cov.rtl.modules).sort();
      new Chart(document.getElementById('module-chart'), {
        type: 'bar',
        data: {labels: names, datasets: ['line', 'branch', 'toggle'].map((k) => ({label: k, data: names.map((m) => (cov.rtl.modules[m][k] || {}).percent ?? null)}))},
        options: {maintainAspectRatio: false, scales: {y: {min: 0, max: 100, title: {display: true, text: '%'}}}},
      });
      ++charts;
    }
    const series = ['isa'].concat(kinds);
    new Chart(document.getElementById('trend-chart'), {
      type: 'line',
      data: {labels: history.map((h, i) => `${i + 1}: ${h.time}`),
             datasets: series.map((k) => ({label: k, data: history.map((h) => k === 'isa' ? (h.isa ? 100 * h.isa.hit / h.isa.total : null) : (h[k] ?? null))}))},
      options: {maintainAspectRatio: false, scales: {y: {min: 0, max: 100, title: {display: true, text: '%'}}}},
    });
    ++charts;
  } else {
    for (const id of ['module-chart', 'trend-chart']) document.getElementById(id).replaceWith(el('p', {class: 'note'}, 'Chart.js was not available when this page was written: charts left out.'));
  }
  document.body.dataset.charts = String(charts);
  document.body.dataset.rendered = 'true';
})();
)js";

}  // namespace

std::string coverage_dashboard_html(const std::string& suite, const json& coverage, const std::vector<json>& history,
                                    const std::string& chart_js) {
  std::string h =
      "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n<title>Coverage: " + html_escape(suite) +
      "</title>\n<style>" + kStyle + "</style>\n";
  if (!chart_js.empty()) h += "<script>" + script_safe(chart_js) + "</script>\n";
  h += "</head>\n<body>\n<h1>Coverage: " + html_escape(suite) + "</h1>\n";
  if (!history.empty()) h += "<p>Run of " + html_escape(history.back().value("time", "")) + ".</p>\n";
  h += "<div class=\"tiles\" id=\"tiles\"></div>\n"
       "<h2>RTL code coverage per module</h2>\n<div id=\"modules\"></div>\n"
       "<div class=\"chart\"><canvas id=\"module-chart\"></canvas></div>\n"
       "<h2>Functional bins</h2>\n<p>ISA bins (accel/isa_coverage) and the RTL's cover properties; red: not hit.</p>\n"
       "<div id=\"heatmap\"></div>\n"
       "<h2>Holes</h2>\n<div id=\"holes\"></div>\n"
       "<h2>Trends over runs</h2>\n<div class=\"chart\"><canvas id=\"trend-chart\"></canvas></div>\n";
  h += "<script type=\"application/json\" id=\"coverage-data\">" + script_safe(coverage.dump()) + "</script>\n";
  h += "<script type=\"application/json\" id=\"history-data\">" + script_safe(json(history).dump()) + "</script>\n";
  h += std::string("<script>") + kScript + "</script>\n</body>\n</html>\n";
  return h;
}

}  // namespace loom::regress
