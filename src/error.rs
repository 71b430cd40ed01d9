//! The error every command returns, classified for the exit-code table and
//! printed as `error:` / `caused by:` / `hint:`.

use std::fmt;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ErrorKind {
    /// The user asked for something that cannot be done (exit 1).
    User,
    /// A config file is wrong (exit 1).
    Config,
    /// keryx-hooks itself failed (exit 1).
    Internal,
}

#[derive(Debug)]
pub struct CommandError {
    pub kind: ErrorKind,
    pub message: String,
    pub causes: Vec<String>,
    pub hint: Option<String>,
}

impl CommandError {
    pub fn user(message: impl Into<String>) -> Self {
        CommandError {
            kind: ErrorKind::User,
            message: message.into(),
            causes: Vec::new(),
            hint: None,
        }
    }
    pub fn config(message: impl Into<String>) -> Self {
        CommandError {
            kind: ErrorKind::Config,
            ..CommandError::user(message)
        }
    }
    pub fn internal(message: impl Into<String>) -> Self {
        CommandError {
            kind: ErrorKind::Internal,
            ..CommandError::user(message)
        }
    }
    pub fn hint(mut self, hint: impl Into<String>) -> Self {
        self.hint = Some(hint.into());
        self
    }
    pub fn cause(mut self, cause: impl fmt::Display) -> Self {
        self.causes.push(cause.to_string());
        self
    }
}

impl fmt::Display for CommandError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "error: {}", self.message)?;
        for c in &self.causes {
            write!(f, "\ncaused by: {c}")?;
        }
        if let Some(h) = &self.hint {
            write!(f, "\nhint: {h}")?;
        }
        Ok(())
    }
}

impl From<std::io::Error> for CommandError {
    fn from(e: std::io::Error) -> Self {
        CommandError::internal(e.to_string())
    }
}

pub type CmdResult = Result<ExitStatus, CommandError>;

/// Every way the process exits, in one table (ARCHITECTURE §2): human
/// commands exit 0, 1 or 2; under `run` and the built-in bodies the host
/// protocol picks the code; a panic outside `run` is 101, as the standard
/// runtime makes it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ExitStatus {
    /// Fine.
    Success,
    /// A problem found, or a user or config error.
    Failure,
    /// The command line was wrong.
    Usage,
    /// What the host protocol wants (`run`, the spawned built-ins).
    Host(u8),
    /// A panic escaped.
    Panic,
}

impl ExitStatus {
    /// The number the process exits with.
    pub fn code(self) -> u8 {
        match self {
            ExitStatus::Success => 0,
            ExitStatus::Failure => 1,
            ExitStatus::Usage => 2,
            ExitStatus::Host(n) => n,
            ExitStatus::Panic => 101,
        }
    }

    /// What an error of `kind` exits with.
    pub fn of_error(kind: ErrorKind) -> ExitStatus {
        match kind {
            ErrorKind::User | ErrorKind::Config | ErrorKind::Internal => ExitStatus::Failure,
        }
    }
}

impl From<ExitStatus> for std::process::ExitCode {
    fn from(s: ExitStatus) -> Self {
        std::process::ExitCode::from(s.code())
    }
}
