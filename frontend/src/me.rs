//! The signed-in user, as `/api/v1/session` describes them: the header and
//! the buttons a page offers read it.

use leptos::prelude::*;

/// Who uses the dashboard; anonymous until `/api/v1/session` answers.
pub type MeSignal = RwSignal<failpass_shared::api::session::Me>;

/// The signed-in user (for the header and the buttons a page offers).
pub fn use_me() -> MeSignal {
    use_context::<MeSignal>().unwrap_or_else(|| RwSignal::new(Default::default()))
}
