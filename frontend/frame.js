// A server page answered to a form's post names the form's page: the address
// bar goes back to it, so a reload shows the page rather than posting again.
const page = document.querySelector('meta[name="failpass-page"]');
if (page && window.history && history.replaceState) history.replaceState(null, '', page.content);
