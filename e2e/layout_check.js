// What a page at this width hides or shrinks: controls past the screen's
// edges (outside a container that scrolls sideways) and text drawn smaller
// than 12 px (SVG text as drawn, after its scaling). Returns one line each.
return (() => {
  // A document without a body (an SVG or an image opened on its own) has no layout to check.
  if (!document.body) return [];
  const width = document.documentElement.clientWidth;
  const found = [];
  const name = (el) => {
    const t = (el.getAttribute('aria-label') || el.textContent || el.getAttribute('name') || '').trim().replace(/\s+/g, ' ');
    return el.tagName.toLowerCase() + (el.className && typeof el.className === 'string' ? '.' + el.className.split(' ')[0] : '') + ' "' + t.slice(0, 40) + '"';
  };
  const shown = (el) => {
    const r = el.getBoundingClientRect();
    if (r.width < 2 || r.height < 2) return false;
    for (let p = el; p; p = p.parentElement) {
      const s = getComputedStyle(p);
      if (s.visibility === 'hidden' || s.display === 'none' || s.clip === 'rect(0px, 0px, 0px, 0px)') return false;
    }
    return !el.closest('.skip-link, .visually-hidden, noscript');
  };
  const scrolls = (el) => {
    for (let p = el.parentElement; p && p !== document.body; p = p.parentElement) {
      const o = getComputedStyle(p).overflowX;
      if ((o === 'auto' || o === 'scroll') && p.getBoundingClientRect().right <= width + 1) return true;
    }
    return false;
  };
  for (const el of document.querySelectorAll('a[href], button, input:not([type=hidden]), select, textarea, summary')) {
    if (!shown(el) || scrolls(el)) continue;
    const r = el.getBoundingClientRect();
    if (r.right > width + 1 || r.left < -1) found.push('off-screen (' + Math.round(r.left) + '..' + Math.round(r.right) + ' of ' + width + ' px): ' + name(el));
  }
  const walk = document.createTreeWalker(document.body, NodeFilter.SHOW_TEXT);
  const seen = new Set();
  while (walk.nextNode()) {
    const el = walk.currentNode.parentElement;
    if (!el || seen.has(el) || !walk.currentNode.textContent.trim()) continue;
    seen.add(el);
    if (!shown(el)) continue;
    let size = parseFloat(getComputedStyle(el).fontSize);
    if (el instanceof SVGElement && el.getScreenCTM) {
      const m = el.getScreenCTM();
      if (m) size *= Math.hypot(m.a, m.b);
    }
    if (size < 11.95) found.push('text ' + size.toFixed(1) + ' px: ' + name(el));
  }
  if (document.documentElement.scrollWidth > width + 1) {
    // Name the first element that reaches past the edge, outside any scroller.
    const wide = [...document.body.querySelectorAll('*')].find((el) => shown(el) && !scrolls(el) && el.getBoundingClientRect().right > width + 1);
    found.push('the page scrolls sideways: ' + document.documentElement.scrollWidth + ' px wide in ' + width + (wide ? ', first past the edge: ' + name(wide) : ''));
  }
  return found;
})();
