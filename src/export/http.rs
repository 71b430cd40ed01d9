//! A plain HTTP/1.1 POST over `std::net`, which is all OTLP/HTTP needs
//! for an `http://` collector: one request per connection
//! (`Connection: close`), the answer's status, `Retry-After` and body
//! (by `Content-Length`, chunked, or to the end of the stream).

use std::io::{Read, Write};
use std::net::{TcpStream, ToSocketAddrs};
use std::time::Duration;

/// How long connecting, sending and each read may take.
const TIMEOUT: Duration = Duration::from_secs(10);
/// The largest answer read; a collector's export response is a few bytes.
const MAX_ANSWER: u64 = 1 << 20;

/// An `http://host[:port][/path]` endpoint, split.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Url {
    pub host: String,
    pub port: u16,
    /// The path prefix, without a trailing `/` (empty for the root).
    pub path: String,
}

/// Why an endpoint is not one the exporter can send to.
pub fn parse_url(s: &str) -> Result<Url, String> {
    if s.starts_with("https://") {
        return Err(format!(
            "`{s}`: this build sends to `http://` endpoints only; for TLS, run a local collector (or a \
             TLS-terminating proxy) on a loopback `http://` address and let it forward over TLS"
        ));
    }
    let rest = s
        .strip_prefix("http://")
        .ok_or_else(|| format!("`{s}` is not an `http://` URL"))?;
    let (authority, path) = rest.split_at(rest.find('/').unwrap_or(rest.len()));
    if authority.contains('@') || path.contains(['?', '#']) {
        return Err(format!(
            "`{s}`: credentials, queries and fragments are not read from the endpoint (put credentials in `export.headers`)"
        ));
    }
    let (host, port) = match authority.rsplit_once(':') {
        Some((h, p)) if !h.ends_with(']') || h.starts_with('[') => (
            h,
            p.parse::<u16>()
                .map_err(|_| format!("`{s}`: the port `{p}` is not a number from 1 to 65535"))?,
        ),
        _ => (authority, 80),
    };
    if host.is_empty() || port == 0 {
        return Err(format!("`{s}` names no host and port"));
    }
    if !path.chars().all(|c| c.is_ascii_graphic()) {
        return Err(format!("`{s}`: the path must be printable ASCII"));
    }
    Ok(Url {
        host: host
            .trim_start_matches('[')
            .trim_end_matches(']')
            .to_owned(),
        port,
        path: path.trim_end_matches('/').to_owned(),
    })
}

/// A collector's answer.
#[derive(Debug)]
pub struct Answer {
    pub status: u16,
    /// `Retry-After` in seconds, when given as seconds.
    pub retry_after: Option<u64>,
    pub body: Vec<u8>,
}

/// POSTs `body` to `url` + `path` with the content type and `headers`.
pub fn post(
    url: &Url,
    path: &str,
    headers: &[(String, String)],
    body: &[u8],
) -> std::io::Result<Answer> {
    let addr = (url.host.as_str(), url.port)
        .to_socket_addrs()?
        .next()
        .ok_or_else(|| std::io::Error::other(format!("`{}` resolves to no address", url.host)))?;
    let mut stream = TcpStream::connect_timeout(&addr, TIMEOUT)?;
    stream.set_read_timeout(Some(TIMEOUT))?;
    stream.set_write_timeout(Some(TIMEOUT))?;
    let host = if url.host.contains(':') {
        format!("[{}]:{}", url.host, url.port)
    } else {
        format!("{}:{}", url.host, url.port)
    };
    let mut head = format!(
        "POST {}{path} HTTP/1.1\r\nHost: {host}\r\nContent-Type: application/x-protobuf\r\n\
         Content-Length: {}\r\nConnection: close\r\nUser-Agent: keryx-hooks/{}\r\n",
        url.path,
        body.len(),
        env!("CARGO_PKG_VERSION")
    );
    for (k, v) in headers {
        head.push_str(&format!("{k}: {v}\r\n"));
    }
    head.push_str("\r\n");
    stream.write_all(head.as_bytes())?;
    stream.write_all(body)?;
    stream.flush()?;
    let mut raw = Vec::new();
    stream.take(MAX_ANSWER).read_to_end(&mut raw)?;
    parse_answer(&raw)
}

fn parse_answer(raw: &[u8]) -> std::io::Result<Answer> {
    let bad =
        |why: &str| std::io::Error::other(format!("the collector's answer is not HTTP: {why}"));
    let end = raw
        .windows(4)
        .position(|w| w == b"\r\n\r\n")
        .ok_or_else(|| bad("no end of headers"))?;
    let head = String::from_utf8_lossy(&raw[..end]);
    let mut lines = head.split("\r\n");
    let status = lines
        .next()
        .and_then(|l| l.strip_prefix("HTTP/1."))
        .and_then(|l| l.get(2..5))
        .and_then(|c| c.parse::<u16>().ok())
        .ok_or_else(|| bad("no status line"))?;
    let mut retry_after = None;
    let mut length = None;
    let mut chunked = false;
    for line in lines {
        let Some((k, v)) = line.split_once(':') else {
            continue;
        };
        let v = v.trim();
        match k.trim().to_ascii_lowercase().as_str() {
            "retry-after" => retry_after = v.parse().ok(),
            "content-length" => length = v.parse::<usize>().ok(),
            "transfer-encoding" => chunked = v.eq_ignore_ascii_case("chunked"),
            _ => {}
        }
    }
    let rest = &raw[end + 4..];
    let body = if chunked {
        dechunk(rest).ok_or_else(|| bad("a broken chunked body"))?
    } else {
        rest[..length.unwrap_or(rest.len()).min(rest.len())].to_vec()
    };
    Ok(Answer {
        status,
        retry_after,
        body,
    })
}

fn dechunk(mut b: &[u8]) -> Option<Vec<u8>> {
    let mut out = Vec::new();
    loop {
        let eol = b.windows(2).position(|w| w == b"\r\n")?;
        let size_text = std::str::from_utf8(&b[..eol]).ok()?;
        let size = usize::from_str_radix(size_text.split(';').next()?.trim(), 16).ok()?;
        b = &b[eol + 2..];
        if size == 0 {
            return Some(out);
        }
        out.extend_from_slice(b.get(..size)?);
        b = b.get(size + 2..)?;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn endpoints_are_split_and_bad_ones_named() {
        assert_eq!(
            parse_url("http://127.0.0.1:4318").unwrap(),
            Url {
                host: "127.0.0.1".into(),
                port: 4318,
                path: String::new()
            }
        );
        assert_eq!(parse_url("http://c.example/otlp/").unwrap().path, "/otlp");
        assert_eq!(parse_url("http://[::1]:9/").unwrap().host, "::1");
        assert!(
            parse_url("https://c.example")
                .unwrap_err()
                .contains("http://")
        );
        assert!(parse_url("ftp://x").is_err());
        assert!(parse_url("http://u:p@x").is_err());
        assert!(parse_url("http://x:99999").is_err());
        assert!(parse_url("http://").is_err());
    }

    #[test]
    fn answers_by_length_and_chunked() {
        let a = parse_answer(b"HTTP/1.1 503 No\r\nRetry-After: 7\r\nContent-Length: 2\r\n\r\nabXX")
            .unwrap();
        assert_eq!(
            (a.status, a.retry_after, a.body.as_slice()),
            (503, Some(7), &b"ab"[..])
        );
        let a = parse_answer(
            b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n3\r\nabc\r\n1\r\nd\r\n0\r\n\r\n",
        )
        .unwrap();
        assert_eq!(a.body, b"abcd");
        assert!(parse_answer(b"garbage").is_err());
    }
}
