//! failpass dashboard: Leptos, client-side rendered, compiled to WebAssembly.

mod api;
mod app;
mod components;
mod load;
mod me;
mod pages;
mod router;

use wasm_bindgen::prelude::wasm_bindgen;

#[wasm_bindgen(start)]
pub fn start() {
    // The size build (`cargo xtask`, which sets `erase_components`) aborts on
    // a panic without running any hook: the hook is only for other builds.
    #[cfg(not(erase_components))]
    console_error_panic_hook::set_once();
    if let Some(boot) = web_sys::window().and_then(|w| w.document()).and_then(|d| d.get_element_by_id("boot")) {
        boot.remove();
    }
    leptos::mount::mount_to_body(app::App);
}
