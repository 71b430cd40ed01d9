//! Config files read and edited as text, below everything that reads host
//! or hooks files: the installer, the commands that edit hooks files, and the
//! write gate. JSON keeps every value's byte span so edits are splices of
//! the original bytes; TOML is viewed as JSON for comparisons.

pub mod edit;
pub mod json;
pub mod toml;
