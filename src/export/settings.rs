//! Where records go: `[export]` of a settings layer. This is the one place
//! the exporter's settings are resolved. Layers are read from the highest
//! down and the first one that sets `export.endpoint` decides the
//! endpoint and its headers together (a lower layer never adds headers to,
//! or redirects, a higher layer's collector). Today the only layer is the
//! user's `runtime.toml`; a managed layer above it is one more entry at the
//! front of [`layers`].

use std::path::{Path, PathBuf};

use toml_edit::{Item, TableLike};

use super::http::{Url, parse_url};
use crate::escape::escape;
use crate::settings::Here;

/// The settings the exporter uses.
#[derive(Debug, Clone)]
pub struct ExportSettings {
    pub endpoint: Url,
    /// As written, for messages.
    pub endpoint_text: String,
    pub headers: Vec<(String, String)>,
    /// The file they came from.
    pub source: PathBuf,
}

/// The layers that may set `[export]`, highest first.
pub fn layers(here: &Here) -> Vec<PathBuf> {
    vec![here.runtime_settings_file()]
}

/// The export settings of the first layer that sets `export.endpoint`;
/// `Ok(None)` when no layer does. A layer that cannot be read, or whose
/// `[export]` is wrong, is an error naming the file and key: the exporter
/// never falls through to a lower layer past a broken higher one.
pub fn resolve(layers: &[PathBuf]) -> Result<Option<ExportSettings>, String> {
    for path in layers {
        let text = match std::fs::read_to_string(path) {
            Ok(t) => t,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => continue,
            Err(e) => return Err(format!("cannot read `{}`: {e}", shown(path))),
        };
        if text.len() > crate::settings::MAX_BYTES {
            return Err(format!(
                "`{}` is larger than a settings file may be",
                shown(path)
            ));
        }
        let doc = toml_edit::Document::parse(text.as_str())
            .map_err(|e| format!("`{}` is not TOML: {}", shown(path), e.message()))?;
        if let Some(s) = from_table(doc.as_table().get("export"), path)? {
            return Ok(Some(s));
        }
    }
    Ok(None)
}

/// `[export]` of one layer; `Ok(None)` when it sets no endpoint.
pub fn from_table(item: Option<&Item>, path: &Path) -> Result<Option<ExportSettings>, String> {
    let Some(item) = item else {
        return Ok(None);
    };
    let at = |key: &str| format!("`export.{key}` in `{}`", shown(path));
    let table = item
        .as_table_like()
        .ok_or_else(|| format!("`export` in `{}` must be a table (`[export]`)", shown(path)))?;
    for (key, _) in table.iter() {
        if !["endpoint", "headers"].contains(&key) {
            return Err(format!(
                "unknown key {}; `[export]` has `endpoint` and `headers`",
                at(&escape(key))
            ));
        }
    }
    let Some(endpoint) = table.get("endpoint") else {
        if table.get("headers").is_some() {
            return Err(format!(
                "{} is set but `export.endpoint` is not",
                at("headers")
            ));
        }
        return Ok(None);
    };
    let endpoint_text = endpoint
        .as_str()
        .ok_or_else(|| format!("{} must be a URL string", at("endpoint")))?
        .to_owned();
    let url =
        parse_url(&endpoint_text).map_err(|e| format!("{}: {}", at("endpoint"), escape(&e)))?;
    let headers = match table.get("headers") {
        None => Vec::new(),
        Some(h) => headers(h.as_table_like().ok_or_else(|| {
            format!(
                "{} must be a table of header names to values",
                at("headers")
            )
        })?)
        .map_err(|e| format!("{}: {e}", at("headers")))?,
    };
    Ok(Some(ExportSettings {
        endpoint: url,
        endpoint_text,
        headers,
        source: path.to_path_buf(),
    }))
}

/// The reserved headers the exporter writes itself.
const OWN_HEADERS: [&str; 6] = [
    "host",
    "content-type",
    "content-length",
    "connection",
    "transfer-encoding",
    "user-agent",
];

fn headers(t: &dyn TableLike) -> Result<Vec<(String, String)>, String> {
    let mut out = Vec::new();
    for (name, value) in t.iter() {
        let token = !name.is_empty()
            && name
                .bytes()
                .all(|b| b.is_ascii_alphanumeric() || b"!#$%&'*+-.^_`|~".contains(&b));
        if !token {
            return Err(format!("`{}` is not an HTTP header name", escape(name)));
        }
        if OWN_HEADERS.contains(&name.to_ascii_lowercase().as_str()) {
            return Err(format!("`{name}` is set by the exporter itself"));
        }
        let value = value
            .as_str()
            .ok_or_else(|| format!("the value of `{name}` must be a string"))?;
        if value.bytes().any(|b| b.is_ascii_control() && b != b'\t') {
            return Err(format!("the value of `{name}` holds a control character"));
        }
        out.push((name.to_owned(), value.to_owned()));
    }
    Ok(out)
}

fn shown(p: &Path) -> String {
    escape(&p.display().to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn layer(dir: &Path, name: &str, text: &str) -> PathBuf {
        let p = dir.join(name);
        std::fs::write(&p, text).unwrap();
        p
    }

    #[test]
    fn the_highest_layer_with_an_endpoint_decides_endpoint_and_headers() {
        let d = tempfile::tempdir().unwrap();
        let high = layer(
            d.path(),
            "high.toml",
            "[export]\nendpoint = \"http://collector.example:4318\"\nheaders = { authorization = \"Bearer t\" }\n",
        );
        let low = layer(
            d.path(),
            "low.toml",
            "[export]\nendpoint = \"http://127.0.0.1:9\"\nheaders = { x-other = \"y\" }\n",
        );
        let none = d.path().join("absent.toml");
        let s = resolve(&[none.clone(), high.clone(), low.clone()])
            .unwrap()
            .unwrap();
        assert_eq!(s.endpoint.host, "collector.example");
        assert_eq!(
            s.headers,
            [("authorization".to_owned(), "Bearer t".to_owned())]
        );
        assert_eq!(s.source, high);
        let s = resolve(std::slice::from_ref(&low)).unwrap().unwrap();
        assert_eq!(s.endpoint.port, 9);
        assert!(resolve(&[none]).unwrap().is_none());
    }

    #[test]
    fn a_broken_export_table_is_an_error_naming_file_and_key() {
        let d = tempfile::tempdir().unwrap();
        for (text, says) in [
            ("export = 1\n", "must be a table"),
            ("[export]\nendpoint = 3\n", "`export.endpoint`"),
            ("[export]\nendpoint = \"https://x\"\n", "http://"),
            (
                "[export]\nendpont = \"http://x\"\n",
                "unknown key `export.endpont`",
            ),
            (
                "[export]\nheaders = { a = \"b\" }\n",
                "`export.endpoint` is not",
            ),
            (
                "[export]\nendpoint = \"http://x\"\nheaders = { \"a b\" = \"c\" }\n",
                "header name",
            ),
            (
                "[export]\nendpoint = \"http://x\"\nheaders = { host = \"c\" }\n",
                "by the exporter",
            ),
            (
                "[export]\nendpoint = \"http://x\"\nheaders = { a = \"b\\r\\nc: d\" }\n",
                "control",
            ),
            ("[export\n", "not TOML"),
        ] {
            let p = layer(d.path(), "r.toml", text);
            let low = layer(
                d.path(),
                "low.toml",
                "[export]\nendpoint = \"http://ok:1\"\n",
            );
            let e = resolve(&[p, low]).unwrap_err();
            assert!(e.contains(says) && e.contains("r.toml"), "{text}: {e}");
        }
    }
}
