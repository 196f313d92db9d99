//! Stub, replaced below.
use super::{ImportError, ImportOptions, Imported};

/// Imports a guidellm export.
pub fn import(_bytes: &[u8], _options: &ImportOptions) -> Result<Imported, ImportError> {
    Err(ImportError::Whole("not yet".into()))
}
