// The server's pages, made a little handier where a script runs (each works without one).
// A page answered to a form's post names the form's page: the address bar goes back to
// it, so a reload shows the page rather than posting again.
const page = document.querySelector('meta[name="failpass-page"]');
if (page && window.history && history.replaceState) history.replaceState(null, '', page.content);
// A choice marked data-autosubmit (the Oracles page's project) applies when it changes.
for (const choice of document.querySelectorAll('[data-autosubmit]')) {
  choice.addEventListener('change', () => choice.form && choice.form.submit());
}
