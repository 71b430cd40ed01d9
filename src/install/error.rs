//! Why a snapshot could not be made, read, checked or removed, and why the
//! drift classifier could not tell where one stands. What a host file says
//! is [`HostFileError`]; what a hook source says is [`SourceError`].

use std::path::PathBuf;

use super::hostfile::HostFileError;
use super::manifest::{MANIFEST_FILE, SCHEMA_VERSION};
use crate::escape::escape;
use crate::hash::SourceError;

#[derive(Debug, thiserror::Error)]
pub enum SnapshotError {
    #[error(transparent)]
    Source(#[from] SourceError),
    #[error(transparent)]
    HostFile(#[from] HostFileError),

    // ---------------------------------------------------------------- files
    #[error("cannot read `{}`: {error}", path.display())]
    Read {
        path: PathBuf,
        error: std::io::Error,
    },
    #[error("cannot open `{}`: {error}", path.display())]
    Open {
        path: PathBuf,
        error: std::io::Error,
    },
    #[error("cannot lock `{}`: {error}", path.display())]
    Lock {
        path: PathBuf,
        error: std::io::Error,
    },
    #[error("cannot remove `{}`: {error}", path.display())]
    Remove {
        path: PathBuf,
        error: std::io::Error,
    },

    // ---------------------------------------------------------------- sync
    #[error("the source path `{}` is not UTF-8", path.display())]
    SourceNotUtf8 { path: PathBuf },
    #[error(
        "the snapshot root `{}` is inside the hook source `{}`, so a snapshot would copy itself",
        root.display(),
        hook_source.display()
    )]
    RootInSource { root: PathBuf, hook_source: PathBuf },
    #[error(
        "the hook source `{}` is inside the snapshot root `{}`",
        hook_source.display(),
        root.display()
    )]
    SourceInRoot { hook_source: PathBuf, root: PathBuf },
    #[error(
        "the source has its own `{MANIFEST_FILE}`, a name the snapshot keeps for its manifest; \
         rename it"
    )]
    OwnManifest,
    #[error("cannot create the snapshot root `{}`: {error}", root.display())]
    CreateRoot {
        root: PathBuf,
        error: std::io::Error,
    },
    #[error(
        "`{}` exists but is not a keryx-hooks snapshot ({error}); move it away and run again",
        dir.display()
    )]
    NotASnapshot {
        dir: PathBuf,
        error: Box<SnapshotError>,
    },
    #[error("`{}` is not a directory; move it away and run again", dir.display())]
    NotADirectory { dir: PathBuf },
    /// `what`: a path under `dir`, or "the temp directory".
    #[error("cannot write {what} under `{}`: {error}", dir.display())]
    Write {
        dir: PathBuf,
        what: String,
        error: std::io::Error,
    },
    #[error("cannot move the new snapshot into place: {0}")]
    Swap(#[source] std::io::Error),
    /// A failed sync, which left the installed snapshot at `dir` as it was.
    #[error("{error}; the installed snapshot `{}` is unchanged", dir.display())]
    Unchanged {
        dir: PathBuf,
        error: Box<SnapshotError>,
    },

    // ---------------------------------------------------------------- remove
    #[error("`{}` is not a snapshot key", escape(key))]
    NotAKey { key: String },
    #[error("`{}` is not a snapshot directory; left alone", dir.display())]
    NotASnapshotDir { dir: PathBuf },
    #[error("`{}` carries no keryx-hooks manifest ({error}); left alone", dir.display())]
    NoManifest {
        dir: PathBuf,
        error: Box<SnapshotError>,
    },

    // ---------------------------------------------------------------- manifest
    #[error("`{}` is not a keryx-hooks manifest: {error}", path.display())]
    NotAManifest {
        path: PathBuf,
        error: serde_json::Error,
    },
    #[error("`{}` is invalid: {error}", path.display())]
    InvalidManifest {
        path: PathBuf,
        error: Box<SnapshotError>,
    },
    #[error(
        "schemaVersion `{found}` is not `{SCHEMA_VERSION}` (written by another keryx-hooks version)"
    )]
    SchemaVersion { found: String },
    #[error("sourcePath is not absolute")]
    SourcePathNotAbsolute,
    #[error("sourceHash is not a sha256")]
    SourceHashNotSha256,
    #[error("the {host} wiring path `{path}` is not absolute")]
    WiringNotAbsolute { host: String, path: String },
    #[error("file path `{path}` is not allowed")]
    PathNotAllowed { path: String },
    #[error("the sha256 of `{path}` is malformed")]
    MalformedSha256 { path: String },
    #[error("it lists no `hooks.json`")]
    NoHooksJson,
    /// A checked manifest that still names no `hooks.json` (its reader
    /// refuses one).
    #[error("its manifest lists no `hooks.json`")]
    ManifestLacksHooksJson,
    #[error("sourceHash does not match the file list")]
    HashMismatch,
    #[error("cannot write the manifest in `{}`: {error}", dir.display())]
    WriteManifest { dir: PathBuf, error: std::io::Error },
    #[error("{0}")]
    Serialize(#[source] serde_json::Error),

    // ---------------------------------------------------------------- verify
    #[error("cannot read the snapshot: {0}")]
    Walk(#[source] walkdir::Error),
    #[error("cannot read `{rel}`: {error}")]
    ReadEntry { rel: String, error: walkdir::Error },
    #[error("`{rel}` in the snapshot is not a regular file")]
    NotRegular { rel: String },
    #[error("`{rel}` in the snapshot is not in its manifest")]
    NotInManifest { rel: String },
    #[error("the exec bit of `{rel}` differs from the manifest")]
    ExecBit { rel: String },
    #[error("`{rel}` differs from the manifest")]
    Differs { rel: String },
    #[error("`{rel}` is missing from the snapshot")]
    Missing { rel: String },

    // ---------------------------------------------------------------- drift
    #[error("unknown host `{}`", escape(host))]
    UnknownHost { host: String },
}
