//! Receipt → bytes. Renderers are pure: they take a receipt (or a reviewer
//! tool's report) and return bytes, so tests compare bytes and the CLI decides
//! where they go.

pub mod answers;
pub mod capacity;
mod cells;
pub mod compare;
pub mod csv;
pub mod demo;
pub mod diagnosis;
pub mod frontier;
pub mod gate;
pub mod import;
pub mod mutate;
pub mod quality;
pub mod record;
pub mod report;
pub mod rows;
pub mod sensitivity;
pub mod server_timing;
pub mod stalls;
pub mod text;
pub mod verify;
