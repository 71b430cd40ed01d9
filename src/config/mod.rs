//! Hook configuration: the schema, the typed model, matchers, and the
//! layered loader with every load error.

pub mod builtin;
pub mod condition;
pub mod diagnostic;
pub mod literals;
pub mod load;
pub mod locate;
pub mod managed;
pub mod matcher;
pub mod model;
pub mod rules;
pub mod schema;
pub mod suggest;

use crate::paths::Locations;

/// The sources for a load from `locations`, with the user layer taken from
/// `user_file` when given (an installed snapshot).
pub fn sources(locations: &Locations, user_file: Option<std::path::PathBuf>) -> load::Sources {
    load::Sources {
        user_file: user_file.unwrap_or_else(|| locations.user_hooks_file()),
        project_file: locations.project_hooks_file(),
        project_root: locations.project_root.clone(),
        cache_dir: Some(locations.config_cache_dir()),
    }
}
