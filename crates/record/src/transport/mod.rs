//! How to reach the server: the HTTP client behind the [`client::Transport`]
//! seam, TLS trust, the endpoint and its headers, the preflight that checks
//! the server before any load, and the error text a failed request keeps.

pub mod client;
pub mod endpoint;
pub mod error_text;
pub mod headers;
pub mod preflight;
pub mod secret_forms;
pub mod tls;
