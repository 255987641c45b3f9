// Starts the dashboard (a file of its own: the Content-Security-Policy allows no inline script).
import init from '/pkg/failpass_frontend.js';
// Said only where a script runs: without one the page shows its <noscript> links instead.
const loading = document.getElementById('boot');
if (loading) loading.textContent = 'Loading failpass…';
init().catch((e) => {
  const boot = document.getElementById('boot');
  if (boot) boot.textContent = 'failpass could not start in this browser: ' + e;
});
