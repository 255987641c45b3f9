//! Browser tests live in `tests/`; run them with `cargo xtask test`.
