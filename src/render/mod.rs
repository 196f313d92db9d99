//! Receipt → bytes. Renderers are pure: they take a receipt and return bytes,
//! so tests compare bytes and the CLI decides where they go.

pub mod json;
pub mod text;
