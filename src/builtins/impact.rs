//! The shipped impact-evidence provider (placeholder while being written).

use std::path::PathBuf;

use toml_edit::TableLike;

use super::ports::{ImpactEvidenceInput, ImpactEvidenceProvider, ImpactEvidenceResult};

#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct ImpactLimits;

impl ImpactLimits {
    pub fn from_table(_t: Option<&dyn TableLike>) -> ImpactLimits {
        ImpactLimits
    }
}

#[derive(Debug, Clone)]
pub struct RepoImpactProvider {
    #[allow(dead_code)]
    cache_dir: Option<PathBuf>,
}

impl RepoImpactProvider {
    pub fn new(_limits: ImpactLimits, cache_dir: Option<PathBuf>) -> Self {
        RepoImpactProvider { cache_dir }
    }
}

impl ImpactEvidenceProvider for RepoImpactProvider {
    fn evidence_for(&self, _input: &ImpactEvidenceInput) -> Result<ImpactEvidenceResult, String> {
        Ok(ImpactEvidenceResult::default())
    }
}
