// The server's pages, made a little handier where a script runs (each works without one).
// A page answered to a form's post names the form's page: the address bar goes back to
// it, so a reload shows the page rather than posting again.
const page = document.querySelector('meta[name="failpass-page"]');
if (page && window.history && history.replaceState) history.replaceState(null, '', page.content);
// A choice marked data-autosubmit (the Oracles page's project) applies when it changes.
for (const choice of document.querySelectorAll('[data-autosubmit]')) {
  choice.addEventListener('change', () => choice.form && choice.form.submit());
}
// A region marked data-refresh="MS" (the Runners page's figures) is fetched again every
// MS milliseconds while the tab is shown, and swapped in place: the page stays put.
for (const region of document.querySelectorAll('[data-refresh][id]')) {
  const every = Math.max(1000, Number(region.dataset.refresh) || 0);
  setInterval(async () => {
    if (document.hidden) return;
    try {
      const r = await fetch(location.href, { headers: { accept: 'text/html', 'x-failpass-refresh': '1' }, credentials: 'same-origin' });
      if (!r.ok) return;
      const fresh = new DOMParser().parseFromString(await r.text(), 'text/html').getElementById(region.id);
      // Keep what a reader opened ("Every column") across the swap.
      const open = [...region.querySelectorAll('details')].map((d) => d.open);
      if (fresh) region.replaceChildren(...fresh.childNodes);
      region.querySelectorAll('details').forEach((d, i) => { if (open[i]) d.open = true; });
    } catch (_) { /* the next tick tries again */ }
  }, every);
}
