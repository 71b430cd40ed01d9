//! Why a host file (a settings file, a plugin package, Codex's trust state)
//! could not be read, edited or written. Each message is the sentence the
//! user reads; those about a file's text start "it …" and are put after
//! the file's name by [`HostFileError::Edit`] or [`HostFileError::In`].

use std::path::PathBuf;

use crate::textfile::json::ParseError;

use super::file::MAX_HOST_FILE_BYTES;

#[derive(Debug, thiserror::Error)]
pub enum HostFileError {
    // ---------------------------------------------------------------- files
    #[error("cannot read `{}`: {error}", path.display())]
    Read {
        path: PathBuf,
        error: std::io::Error,
    },
    #[error("`{}` links to a directory", path.display())]
    LinksToDirectory { path: PathBuf },
    #[error(
        "`{}` is a symlink to `{target}`, which does not exist; fix or remove the link, then run \
         this again",
        path.display()
    )]
    DeadLink { path: PathBuf, target: String },
    #[error("`{}` is a directory", path.display())]
    Directory { path: PathBuf },
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
    #[error("cannot create `{}`: {error}", path.display())]
    CreateDir {
        path: PathBuf,
        error: std::io::Error,
    },
    #[error("cannot create a temp directory: {0}")]
    TempDir(#[source] std::io::Error),
    #[error("`{}` is not a regular file (a FIFO, device or socket); left as it is", path.display())]
    NotRegular { path: PathBuf },
    #[error(
        "`{}` is larger than {} MiB, too large for a host config file; left as it is",
        path.display(),
        MAX_HOST_FILE_BYTES / (1024 * 1024)
    )]
    TooLarge { path: PathBuf },
    #[error(
        "`{}` is not UTF-8 text (invalid byte at offset {offset}); left as it is",
        path.display()
    )]
    NotUtf8 { path: PathBuf, offset: usize },
    #[error("cannot resolve the project `{}`: {error}", root.display())]
    ProjectRoot {
        root: PathBuf,
        error: std::io::Error,
    },
    #[error("`{}` is a symlink that leads nowhere; remove it, then run this again", path.display())]
    LeadsNowhere { path: PathBuf },
    #[error(
        "`{}` resolves to `{}`, outside the project `{}` (through a symlink); refusing to write \
         a project-scope file there; nothing was written",
        path.display(),
        real.display(),
        root.display()
    )]
    OutsideProject {
        path: PathBuf,
        real: PathBuf,
        root: PathBuf,
    },
    /// `what`: "write", "flush", "create a temp file for", ….
    #[error("cannot {what} `{}`: {error}; the file is unchanged", path.display())]
    Write {
        path: PathBuf,
        what: &'static str,
        error: std::io::Error,
    },
    #[error("cannot write `{}`: {error}", path.display())]
    WriteTemp {
        path: PathBuf,
        error: std::io::Error,
    },
    #[error("cannot remove `{}`: {error}", path.display())]
    Remove {
        path: PathBuf,
        error: std::io::Error,
    },

    // ---------------------------------------------------------------- hosts
    #[error("cannot tell where this keryx-hooks binary is")]
    NoBinary,
    #[error("{host} runs keryx-hooks itself; there is no config file to wire")]
    RunsItself { host: &'static str },
    #[error("{host} is wired through a plugin file, not a settings file")]
    PluginFileHost { host: &'static str },
    #[error("a plugin file is generated whole, not edited")]
    PluginFileEdit,
    #[error("{host} has no plugin or extension format; wire it with `--format settings`")]
    NoPluginFormat { host: &'static str },

    // ---------------------------------------------------------------- plugins
    /// `left_alone` adds "; left alone" (uninstall says so).
    #[error(
        "`{}` was not written by keryx-hooks{}",
        path.display(),
        if *left_alone { "; left alone" } else { "" }
    )]
    NotWrittenByUs { path: PathBuf, left_alone: bool },
    #[error(
        "`{}` is not a keryx-hooks {noun}{}",
        path.display(),
        if *left_alone { "; left alone" } else { "" }
    )]
    NotOurPackage {
        path: PathBuf,
        noun: &'static str,
        left_alone: bool,
    },
    #[error(
        "`{}` exists and is not a keryx-hooks {noun}; move it away or choose another place \
         (`--out DIR`); nothing was written",
        path.display()
    )]
    Occupied { path: PathBuf, noun: &'static str },
    #[error("internal error: generated hooks.json does not parse: {0}")]
    GeneratedHooks(#[source] serde_json::Error),
    #[error("internal error: {0}")]
    Generated(&'static str),
    #[error("{0}")]
    Serialize(#[source] serde_json::Error),

    // ---------------------------------------------------------------- imports
    #[error("{host} has no config file")]
    NoConfigFile { host: &'static str },
    #[error("`{}`: {error}; nothing was taken out", path.display())]
    NotTakenOut {
        path: PathBuf,
        error: Box<HostFileError>,
    },
    #[error(
        "`{}` changed since the import; its bytes from before are in `{}`",
        path.display(),
        backup.display()
    )]
    ChangedSinceImport { path: PathBuf, backup: PathBuf },
    /// The directory of the import records could not be made.
    #[error("{0}")]
    RecordDir(#[source] std::io::Error),

    // ---------------------------------------------------------------- text
    #[error("it is not valid JSON (with comments) at {0}")]
    Json(#[source] ParseError),
    #[error("it is not valid TOML at line {line}, column {column}: {message}")]
    Toml {
        line: usize,
        column: usize,
        message: String,
    },
    /// The host reads the file more strictly than keryx-hooks' editor
    /// does, and would skip it, hooks and all.
    #[error(
        "{host} would not load it ({why}), so it runs none of the hooks in it; fix that by hand"
    )]
    HostWouldNotLoad { host: &'static str, why: String },
    #[error("its top level is not an object")]
    TopLevelNotObject,
    /// `shape`: "an object", "a table", ….
    #[error("its `hooks` is not {shape}")]
    HooksShape { shape: &'static str },
    #[error("its `hooks.{key}` is not {shape}")]
    EventShape { key: String, shape: &'static str },
    #[error("internal error: the edit did not settle")]
    Unsettled,
    #[error("internal error: the edited text failed its check ({why}); nothing was written")]
    FailedCheck { why: String },
    /// A whole file that does not parse (Codex's trust state, a hooks
    /// source it reviews).
    #[error("`{}` is not valid {format}: {message}", path.display())]
    Unparsable {
        path: PathBuf,
        format: &'static str,
        message: String,
    },

    // ---------------------------------------------------------------- context
    /// What is wrong with the text of `path`, found while editing it.
    #[error("cannot edit `{}`: {error}; nothing was written", path.display())]
    Edit {
        path: PathBuf,
        error: Box<HostFileError>,
    },
    /// What is wrong with the text of `path`, found while reading it.
    #[error("`{}`: {error}", path.display())]
    In {
        path: PathBuf,
        error: Box<HostFileError>,
    },
}

impl HostFileError {
    /// Whether this is a file its host would skip (see
    /// [`HostFileError::HostWouldNotLoad`]), however it was reached.
    pub fn host_would_not_load(&self) -> bool {
        match self {
            HostFileError::HostWouldNotLoad { .. } => true,
            HostFileError::In { error, .. } | HostFileError::Edit { error, .. } => {
                error.host_would_not_load()
            }
            _ => false,
        }
    }

    /// Whether the message already names `path` (so a caller does not name
    /// it twice).
    pub fn names(&self, path: &std::path::Path) -> bool {
        self.to_string().contains(&path.display().to_string())
    }
}
