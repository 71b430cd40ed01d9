//! The few OpenTelemetry protocol messages the exporter sends, written as
//! protobuf by hand: varints, fixed-width numbers and length-delimited
//! fields, with the field numbers of `opentelemetry/proto` (logs v1,
//! metrics v1, common v1, resource v1, and the collector's export
//! services). Reading is limited to the export responses' partial success.

use serde_json::Value;

/// A protobuf message being written.
#[derive(Debug, Default, Clone)]
pub struct Msg(pub Vec<u8>);

impl Msg {
    fn key(&mut self, field: u32, wire: u8) {
        varint(&mut self.0, (u64::from(field) << 3) | u64::from(wire));
    }

    pub fn uint(&mut self, field: u32, v: u64) -> &mut Self {
        self.key(field, 0);
        varint(&mut self.0, v);
        self
    }

    pub fn int(&mut self, field: u32, v: i64) -> &mut Self {
        self.uint(field, v as u64)
    }

    pub fn fixed64(&mut self, field: u32, v: u64) -> &mut Self {
        self.key(field, 1);
        self.0.extend_from_slice(&v.to_le_bytes());
        self
    }

    pub fn double(&mut self, field: u32, v: f64) -> &mut Self {
        self.fixed64(field, v.to_bits())
    }

    pub fn bytes(&mut self, field: u32, v: &[u8]) -> &mut Self {
        self.key(field, 2);
        varint(&mut self.0, v.len() as u64);
        self.0.extend_from_slice(v);
        self
    }

    pub fn str(&mut self, field: u32, v: &str) -> &mut Self {
        self.bytes(field, v.as_bytes())
    }

    pub fn msg(&mut self, field: u32, m: &Msg) -> &mut Self {
        self.bytes(field, &m.0)
    }

    /// A packed `repeated fixed64` / `repeated double` from raw words.
    pub fn packed_fixed64(&mut self, field: u32, words: &[u64]) -> &mut Self {
        let mut b = Vec::with_capacity(words.len() * 8);
        for w in words {
            b.extend_from_slice(&w.to_le_bytes());
        }
        self.bytes(field, &b)
    }
}

fn varint(out: &mut Vec<u8>, mut v: u64) {
    while v >= 0x80 {
        out.push((v as u8) | 0x80);
        v >>= 7;
    }
    out.push(v as u8);
}

/// `common.v1.KeyValue { key = 1; value = 2 }`.
pub fn key_value(key: &str, value: &Msg) -> Msg {
    let mut kv = Msg::default();
    kv.str(1, key).msg(2, value);
    kv
}

/// `common.v1.AnyValue` holding a string.
pub fn any_str(s: &str) -> Msg {
    let mut m = Msg::default();
    m.str(1, s);
    m
}

/// `common.v1.AnyValue` for a JSON value: string 1, bool 2, int 3,
/// double 4, array 5 (`ArrayValue { values = 1 }`), key-value list 6
/// (`KeyValueList { values = 1 }`); `None` for null.
pub fn any_json(v: &Value) -> Option<Msg> {
    let mut m = Msg::default();
    match v {
        Value::Null => return None,
        Value::Bool(b) => {
            m.uint(2, u64::from(*b));
        }
        Value::Number(n) => match n.as_i64() {
            Some(i) => {
                m.int(3, i);
            }
            None => {
                m.double(4, n.as_f64().unwrap_or(f64::NAN));
            }
        },
        Value::String(s) => {
            m.str(1, s);
        }
        Value::Array(items) => {
            let mut arr = Msg::default();
            for item in items {
                arr.msg(1, &any_json(item).unwrap_or_default());
            }
            m.msg(5, &arr);
        }
        Value::Object(map) => {
            let mut list = Msg::default();
            for (k, item) in map {
                if let Some(value) = any_json(item) {
                    list.msg(1, &key_value(k, &value));
                }
            }
            m.msg(6, &list);
        }
    }
    Some(m)
}

/// What a collector's export response says it rejected (a partial
/// success): `ExportLogsServiceResponse { partial_success = 1 }` whose
/// message is `{ rejected_* = 1 (int64); error_message = 2 }`; the metrics
/// response has the same shape.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct PartialSuccess {
    pub rejected: i64,
    pub message: String,
}

/// The partial success in a response body, `None` when there is none (an
/// empty body or an empty message is full success). An undecodable body is
/// an error: the collector answered 2xx, but what it kept is unknown.
pub fn partial_success(body: &[u8]) -> Result<Option<PartialSuccess>, String> {
    let mut found = None;
    for (field, value) in fields(body)? {
        if let (1, Field::Bytes(inner)) = (field, value) {
            let mut ps = PartialSuccess::default();
            for (f, v) in fields(inner)? {
                match (f, v) {
                    (1, Field::Varint(n)) => ps.rejected = n as i64,
                    (2, Field::Bytes(b)) => ps.message = String::from_utf8_lossy(b).into_owned(),
                    _ => {}
                }
            }
            if ps != PartialSuccess::default() {
                found = Some(ps);
            }
        }
    }
    Ok(found)
}

enum Field<'a> {
    Varint(u64),
    Bytes(&'a [u8]),
    Other,
}

/// The top-level fields of a message.
fn fields(mut b: &[u8]) -> Result<Vec<(u64, Field<'_>)>, String> {
    let bad = || "the response is not a protobuf message".to_owned();
    let mut out = Vec::new();
    while !b.is_empty() {
        let key = read_varint(&mut b).ok_or_else(bad)?;
        let value = match key & 7 {
            0 => Field::Varint(read_varint(&mut b).ok_or_else(bad)?),
            1 | 5 => {
                let n = if key & 7 == 1 { 8 } else { 4 };
                b = b.get(n..).ok_or_else(bad)?;
                Field::Other
            }
            2 => {
                let n = read_varint(&mut b).ok_or_else(bad)? as usize;
                let v = b.get(..n).ok_or_else(bad)?;
                b = &b[n..];
                Field::Bytes(v)
            }
            _ => return Err(bad()),
        };
        out.push((key >> 3, value));
    }
    Ok(out)
}

fn read_varint(b: &mut &[u8]) -> Option<u64> {
    let mut v = 0u64;
    for shift in (0..64).step_by(7) {
        let (&byte, rest) = b.split_first()?;
        *b = rest;
        v |= u64::from(byte & 0x7f) << shift;
        if byte < 0x80 {
            return Some(v);
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn varints_are_little_endian_groups_of_seven() {
        let mut m = Msg::default();
        m.uint(1, 300);
        assert_eq!(m.0, [0x08, 0xac, 0x02]);
        let mut m = Msg::default();
        m.int(3, -1);
        assert_eq!(m.0.len(), 11);
    }

    #[test]
    fn a_partial_success_is_read_and_an_empty_one_is_none() {
        let mut inner = Msg::default();
        inner.int(1, 2).str(2, "two were bad");
        let mut resp = Msg::default();
        resp.msg(1, &inner);
        assert_eq!(
            partial_success(&resp.0).unwrap(),
            Some(PartialSuccess {
                rejected: 2,
                message: "two were bad".into()
            })
        );
        assert_eq!(partial_success(&[]).unwrap(), None);
        let mut empty = Msg::default();
        empty.msg(1, &Msg::default());
        assert_eq!(partial_success(&empty.0).unwrap(), None);
        assert!(partial_success(&[0x0a, 0x05, 0x01]).is_err());
    }
}
