// A time-series line chart drawn as hand-written SVG.
//
// Why not a charting library: the pages must work offline and be embedded
// in the binary, so a library would have to be vendored, pinned, bundled at
// build time and kept patched, for six small line charts that need about
// 150 lines. SVG also scales crisply, takes the page's CSS colours (dark
// mode included), and its paths are plain DOM the browser test can read.
//
// TimeChart draws the last `spanMs` of points {t: unix ms, [key]: number or
// null} on an x axis ending now (shorter while the history is younger);
// null leaves a gap (no observation in that window). The y axis starts at 0
// and ends at a round number above the data and the target line, if the
// target is within sight of the data.
'use strict';

class TimeChart {
  // options: {title, unit, series: [{key, label, color}], target: number or
  // null (a dashed line: an SLO), spanMs, format(v) -> text}
  constructor(container, options) {
    this.o = Object.assign({ spanMs: 5 * 60 * 1000, target: null, format: (v) => String(v) }, options);
    this.width = 480;
    this.height = 170;
    this.pad = { left: 48, right: 10, top: 8, bottom: 20 };
    this.root = Swiftlet.el('div', { class: 'panel chart', 'data-chart': this.o.id || '' });
    this.root.append(Swiftlet.el('h2', {}, this.o.title));
    this.legend = Swiftlet.el('div', { class: 'legend' });
    this.root.append(this.legend);
    this.svg = this.make('svg', { viewBox: `0 0 ${this.width} ${this.height}`, role: 'img',
                                 'aria-label': this.o.title });
    this.root.append(this.svg);
    container.append(this.root);
    this.values = this.o.series.map(() => null);
  }

  make(tag, attrs) {
    const e = document.createElementNS('http://www.w3.org/2000/svg', tag);
    for (const [k, v] of Object.entries(attrs || {})) e.setAttribute(k, v);
    return e;
  }

  setTarget(value) { this.o.target = value; }

  // Redraws from `points` (sorted by t) for the window ending at `nowMs`.
  update(points, nowMs) {
    const o = this.o, p = this.pad;
    // The axis spans spanMs, or less while the history is younger (at
    // least kMinSpanMs), so a server that just started is not a sliver at
    // the right edge.
    const kMinSpanMs = 30 * 1000;
    const age = points.length ? nowMs - points[0].t : 0;
    const span = Math.min(o.spanMs, Math.max(kMinSpanMs, age));
    const x0 = nowMs - span;
    const plotW = this.width - p.left - p.right, plotH = this.height - p.top - p.bottom;
    const shown = points.filter((pt) => pt.t >= x0 && pt.t <= nowMs);
    let max = 0;
    for (const pt of shown) {
      for (const s of o.series) {
        const v = pt[s.key];
        if (v !== null && v !== undefined && isFinite(v)) max = Math.max(max, v);
      }
    }
    // The target line is drawn when it is within sight of the data; far
    // above it, it would flatten every line to the floor, so the legend
    // names it instead.
    const hasTarget = o.target !== null && isFinite(o.target) && o.target > 0;
    const targetOnScale = hasTarget && o.target <= 4 * max;
    if (targetOnScale) max = Math.max(max, o.target * 1.1);
    const top = niceCeiling(max);
    // Round steps: a top of 2.5 or 5 (x 10^k) splits in five, others in four.
    const mantissa = top / Math.pow(10, Math.floor(Math.log10(top)));
    const ticks = mantissa === 2.5 || mantissa === 5 ? 5 : 4;
    const x = (t) => p.left + ((t - x0) / span) * plotW;
    const y = (v) => p.top + plotH - (v / top) * plotH;

    this.svg.replaceChildren();
    for (let i = 0; i <= ticks; ++i) {
      const v = (top * i) / ticks;
      this.svg.append(this.make('line', { class: i === 0 ? 'axis' : 'gridline', x1: p.left, x2: p.left + plotW,
                                          y1: y(v), y2: y(v) }));
      const label = this.make('text', { x: p.left - 4, y: y(v) + 3, 'text-anchor': 'end' });
      label.textContent = o.format(v);
      this.svg.append(label);
    }
    const stepS = span <= 90 * 1000 ? 15 : span <= 180 * 1000 ? 30 : 60;
    for (let s = 0; s * 1000 <= span; s += stepS) {
      const label = this.make('text', { x: x(nowMs - s * 1000), y: this.height - 5,
                                        'text-anchor': s === 0 ? 'end' : 'middle' });
      label.textContent = s === 0 ? 'now' : '-' + (s % 60 === 0 ? `${s / 60}m` : s > 60 ? `${Math.floor(s / 60)}m${s % 60}s` : `${s}s`);
      this.svg.append(label);
    }
    if (targetOnScale) {
      this.svg.append(this.make('line', { class: 'target', x1: p.left, x2: p.left + plotW,
                                          y1: y(o.target), y2: y(o.target) }));
      const label = this.make('text', { class: 'target-label', x: p.left + plotW - 2, y: y(o.target) - 3,
                                        'text-anchor': 'end' });
      label.textContent = 'target ' + o.format(o.target);
      this.svg.append(label);
    }
    this.targetNote = hasTarget && !targetOnScale ? `target ${o.format(o.target)}, off the scale` : '';
    o.series.forEach((s, i) => {
      let d = '';
      let pen = false;
      let drawn = 0;
      let last = null;
      let lastT = 0;
      let high = 0;
      for (const pt of shown) {
        const v = pt[s.key];
        if (v === null || v === undefined || !isFinite(v)) { pen = false; continue; }
        d += (pen ? 'L' : 'M') + x(pt.t).toFixed(1) + ' ' + y(v).toFixed(1);
        pen = true;
        ++drawn;
        last = v;
        lastT = pt.t;
        high = Math.max(high, v);
      }
      // A lone point between gaps is a dot, or it would not show.
      // data-points and data-max say what is drawn, for tests and tools.
      const path = this.make('path', { class: 'series', d, stroke: s.color, 'data-series': s.key,
                                       'data-points': drawn, 'data-max': high });
      this.svg.append(path);
      if (drawn === 1 && last !== null) {
        this.svg.append(this.make('circle', { cx: x(lastT), cy: y(last), r: 2, fill: s.color }));
      }
      this.values[i] = shown.length ? shown[shown.length - 1][s.key] : null;
    });
    this.drawLegend();
  }

  drawLegend() {
    this.legend.replaceChildren();

    this.o.series.forEach((s, i) => {
      const v = this.values[i];
      // A style property, not a style attribute: the page's CSP allows
      // only the former.
      const swatch = Swiftlet.el('span', { class: 'swatch' });
      swatch.style.background = s.color;
      const item = Swiftlet.el('span', {}, swatch, s.label + ' ');
      item.append(Swiftlet.el('b', { 'data-value': s.key },
                              v === null || v === undefined || !isFinite(v) ? '–' : this.o.format(v)));
      this.legend.append(item);
    });
    if (this.targetNote) this.legend.append(Swiftlet.el('span', { class: 'target-note' }, this.targetNote));
  }
}

// The smallest of 1, 2, 2.5, 5 x 10^k at or above v (1 when v is 0).
function niceCeiling(v) {
  if (!(v > 0)) return 1;
  const base = Math.pow(10, Math.floor(Math.log10(v)));
  for (const m of [1, 2, 2.5, 5, 10]) {
    if (m * base >= v) return m * base;
  }
  return 10 * base;
}
