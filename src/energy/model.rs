//! The power model (`tt_core::energy::model`, pure: parsed from text) and, here, reading it from
//! a file.

pub use tt_core::energy::model::*;

use std::path::Path;

/// Read, parse and validate a model file.
pub fn from_path(path: &Path) -> Result<PowerModel, ModelError> {
    let text = std::fs::read_to_string(path).map_err(|source| ModelError::Io {
        path: path.display().to_string(),
        source,
    })?;
    from_str(&text)
}
