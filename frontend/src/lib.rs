//! failpass dashboard: Leptos, client-side rendered, compiled to WebAssembly.

mod api;
mod app;
mod components;
mod load;
mod me;
mod pages;
mod router;

use wasm_bindgen::JsCast;
use wasm_bindgen::prelude::wasm_bindgen;

#[wasm_bindgen(start)]
pub fn start() {
    // The size build (`cargo xtask`, which sets `erase_components`) aborts on
    // a panic without running any hook: the hook is only for other builds.
    #[cfg(not(erase_components))]
    console_error_panic_hook::set_once();
    let Some(doc) = web_sys::window().and_then(|w| w.document()) else { return };
    if let Some(boot) = doc.get_element_by_id("boot") {
        boot.remove();
    }
    // The page's body goes into the shell's <main>, under the server's header.
    if let Some(main) = doc.get_element_by_id("main").and_then(|m| m.dyn_into::<web_sys::HtmlElement>().ok()) {
        leptos::mount::mount_to(main, app::App).forget();
    }
}
