//! The generator build.rs runs on each `adapters/<host>/adapter.json`: the
//! file read with serde into the [`Adapter`] type of src/hosts/spec.rs, and
//! that value written back out as the Rust literal of a `static`, so the
//! adapters are data in the binary and nothing is parsed at run time. The
//! spec types (their fields, defaults and serde attributes) are the one
//! description of the file: this generator knows no field of it.
//!
//! Reading is as strict as the types are: an unknown key, a missing or
//! mistyped field, an unknown enum value or canonical event, or a number
//! that is not an integer fails the build with a message naming the file
//! and the field (as a JSON pointer), and so does a key twice in one object
//! (an event twice, say), which serde alone would let the last one win.
//!
//! Compiled twice: into build.rs, and into the crate's unit tests, which
//! hold it to those rules.

use std::fmt;

use serde::Deserialize;
use serde::de::{
    self, DeserializeSeed, Deserializer, IntoDeserializer, MapAccess, SeqAccess, Visitor,
};
use serde::ser::{self, Serialize};
use serde_json::{Map, Value};

use super::spec::{Adapter, type_name};

/// The literal of the `Adapter` that the adapter file `text` describes,
/// `file` naming it in the panic at the first thing wrong with it.
pub fn adapter(file: &str, text: &str) -> String {
    let mut out = String::new();
    literal(file, text).render(0, &mut out);
    out
}

/// The adapter file `text` as the engine's type, `file` naming it in the
/// panic at the first thing wrong with it.
pub fn read(file: &str, text: &str) -> Adapter {
    let mut doc = parse_strict(text).unwrap_or_else(|e| panic!("{file}: {e}"));
    // The file's own pointer to its schema, for editors; not the engine's.
    if let Some(schema) = doc.as_object_mut().and_then(|o| o.remove("$schema"))
        && !(schema.is_string() || schema.is_null())
    {
        panic!(
            "{file}: /$schema: expected a string, found {}",
            type_name(&schema)
        );
    }
    // Leaked so the adapter can lend its strings for `'static`, as the
    // static it becomes does: the file is read once, by build.rs or a test.
    let doc: &'static Value = Box::leak(Box::new(doc));
    Adapter::deserialize(Node {
        v: doc,
        path: String::new(),
    })
    .unwrap_or_else(|e| panic!("{file}: {e}"))
}

fn literal(file: &str, text: &str) -> Lit {
    read(file, text)
        .serialize(LitSer)
        .unwrap_or_else(|e| panic!("{file}: {e}"))
}

// ------------------------------------------------------------ strict JSON

/// The file as a `Value` (keys in file order), refusing a key that appears
/// twice in one object: a typed parse refuses a struct field twice, and
/// an event, tool or template key twice would otherwise be silently lost.
fn parse_strict(text: &str) -> Result<Value, serde_json::Error> {
    let mut d = serde_json::Deserializer::from_str(text);
    let v = Strict(String::new()).deserialize(&mut d)?;
    d.end()?;
    Ok(v)
}

/// Reads one value at this JSON pointer.
struct Strict(String);

impl<'de> DeserializeSeed<'de> for Strict {
    type Value = Value;

    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<Value, D::Error> {
        d.deserialize_any(self)
    }
}

impl<'de> Visitor<'de> for Strict {
    type Value = Value;

    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("a JSON value")
    }

    fn visit_bool<E: de::Error>(self, b: bool) -> Result<Value, E> {
        Ok(Value::Bool(b))
    }

    fn visit_i64<E: de::Error>(self, n: i64) -> Result<Value, E> {
        Ok(Value::from(n))
    }

    fn visit_u64<E: de::Error>(self, n: u64) -> Result<Value, E> {
        Ok(Value::from(n))
    }

    fn visit_f64<E: de::Error>(self, n: f64) -> Result<Value, E> {
        Ok(Value::from(n))
    }

    fn visit_str<E: de::Error>(self, s: &str) -> Result<Value, E> {
        Ok(Value::String(s.to_owned()))
    }

    fn visit_string<E: de::Error>(self, s: String) -> Result<Value, E> {
        Ok(Value::String(s))
    }

    fn visit_unit<E: de::Error>(self) -> Result<Value, E> {
        Ok(Value::Null)
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Value, A::Error> {
        let mut out = Vec::new();
        while let Some(v) = seq.next_element_seed(Strict(format!("{}/{}", self.0, out.len())))? {
            out.push(v);
        }
        Ok(Value::Array(out))
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Value, A::Error> {
        let mut out = Map::new();
        while let Some(key) = map.next_key::<String>()? {
            if out.contains_key(&key) {
                let what = if self.0 == "/events" { "event" } else { "key" };
                return Err(de::Error::custom(format!(
                    "{}: {what} `{key}` twice",
                    or_root(&self.0)
                )));
            }
            let v = map.next_value_seed(Strict(pointer(&self.0, &key)))?;
            out.insert(key, v);
        }
        Ok(Value::Object(out))
    }
}

/// `path` extended by one object key, as a JSON pointer.
fn pointer(path: &str, key: &str) -> String {
    format!("{path}/{}", key.replace('~', "~0").replace('/', "~1"))
}

fn or_root(path: &str) -> &str {
    if path.is_empty() { "/" } else { path }
}

// ------------------------------------------------------------- the errors

/// What is wrong, and where: the JSON pointer of the innermost value that
/// refused (set once, as the error leaves that value).
#[derive(Debug)]
pub struct Error {
    path: Option<String>,
    message: String,
}

impl Error {
    fn at(mut self, path: &str) -> Error {
        self.path.get_or_insert_with(|| or_root(path).to_owned());
        self
    }
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter) -> fmt::Result {
        match &self.path {
            Some(p) => write!(f, "{p}: {}", self.message),
            None => f.write_str(&self.message),
        }
    }
}

impl std::error::Error for Error {}

impl de::Error for Error {
    fn custom<T: fmt::Display>(message: T) -> Error {
        Error {
            path: None,
            message: message.to_string(),
        }
    }

    fn invalid_type(found: de::Unexpected, expected: &dyn de::Expected) -> Error {
        let found = match found {
            de::Unexpected::Bool(_) => "a boolean",
            de::Unexpected::Unsigned(_) | de::Unexpected::Signed(_) | de::Unexpected::Float(_) => {
                "a number"
            }
            de::Unexpected::Str(_) | de::Unexpected::Char(_) => "a string",
            de::Unexpected::Unit | de::Unexpected::Option => "null",
            de::Unexpected::Seq => "an array",
            de::Unexpected::Map => "an object",
            _ => "something else",
        };
        // A `&'static str` field expects "a borrowed string": to the file
        // it is a string like any other.
        let expected = expected.to_string().replace("borrowed string", "string");
        de::Error::custom(format_args!("expected {expected}, found {found}"))
    }
}

impl ser::Error for Error {
    fn custom<T: fmt::Display>(message: T) -> Error {
        de::Error::custom(message)
    }
}

// ------------------------------------------------------------ file → type

/// One value of the file and its JSON pointer, as a serde `Deserializer`
/// that lends out its strings for `'static` and names the pointer of the
/// value an error came from.
struct Node {
    v: &'static Value,
    path: String,
}

impl<'de> Deserializer<'de> for Node {
    type Error = Error;

    fn deserialize_any<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, Error> {
        let result = match self.v {
            Value::Null => visitor.visit_unit(),
            Value::Bool(b) => visitor.visit_bool(*b),
            Value::Number(n) => match (n.as_u64(), n.as_i64(), n.as_f64()) {
                (Some(u), _, _) => visitor.visit_u64(u),
                (_, Some(i), _) => visitor.visit_i64(i),
                (_, _, Some(f)) => visitor.visit_f64(f),
                _ => Err(de::Error::custom(format_args!(
                    "the number {n} is not supported"
                ))),
            },
            Value::String(s) => visitor.visit_borrowed_str(s),
            Value::Array(items) => visitor.visit_seq(Items {
                items: items.iter(),
                index: 0,
                path: &self.path,
            }),
            Value::Object(map) => visitor.visit_map(Entries {
                entries: map.iter(),
                value: None,
                path: &self.path,
            }),
        };
        result.map_err(|e: Error| e.at(&self.path))
    }

    fn deserialize_option<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, Error> {
        if self.v.is_null() {
            return visitor.visit_none().map_err(|e: Error| e.at(&self.path));
        }
        let path = self.path.clone();
        visitor.visit_some(self).map_err(|e| e.at(&path))
    }

    fn deserialize_enum<V: Visitor<'de>>(
        self,
        _name: &'static str,
        _variants: &'static [&'static str],
        visitor: V,
    ) -> Result<V::Value, Error> {
        let result = match self.v {
            Value::String(s) => visitor.visit_enum(s.as_str().into_deserializer()),
            other => Err(de::Error::invalid_type(unexpected(other), &visitor)),
        };
        result.map_err(|e: Error| e.at(&self.path))
    }

    serde::forward_to_deserialize_any! {
        bool i8 i16 i32 i64 i128 u8 u16 u32 u64 u128 f32 f64 char str string
        bytes byte_buf unit unit_struct newtype_struct seq tuple
        tuple_struct map struct identifier ignored_any
    }
}

fn unexpected(v: &Value) -> de::Unexpected<'_> {
    match v {
        Value::Null => de::Unexpected::Unit,
        Value::Bool(b) => de::Unexpected::Bool(*b),
        Value::Number(_) => de::Unexpected::Other("a number"),
        Value::String(s) => de::Unexpected::Str(s),
        Value::Array(_) => de::Unexpected::Seq,
        Value::Object(_) => de::Unexpected::Map,
    }
}

/// An array's items, each at its index.
struct Items<'p> {
    items: std::slice::Iter<'static, Value>,
    index: usize,
    path: &'p str,
}

impl<'de> SeqAccess<'de> for Items<'_> {
    type Error = Error;

    fn next_element_seed<T: DeserializeSeed<'de>>(
        &mut self,
        seed: T,
    ) -> Result<Option<T::Value>, Error> {
        let Some(v) = self.items.next() else {
            return Ok(None);
        };
        let path = format!("{}/{}", self.path, self.index);
        self.index += 1;
        seed.deserialize(Node { v, path }).map(Some)
    }
}

/// An object's entries, each value at its key.
struct Entries<'p> {
    entries: serde_json::map::Iter<'static>,
    value: Option<(&'static String, &'static Value)>,
    path: &'p str,
}

impl<'de> MapAccess<'de> for Entries<'_> {
    type Error = Error;

    fn next_key_seed<K: DeserializeSeed<'de>>(
        &mut self,
        seed: K,
    ) -> Result<Option<K::Value>, Error> {
        let Some((k, v)) = self.entries.next() else {
            return Ok(None);
        };
        self.value = Some((k, v));
        let key: de::value::BorrowedStrDeserializer<'de, Error> =
            de::value::BorrowedStrDeserializer::new(k.as_str());
        seed.deserialize(key).map(Some)
    }

    fn next_value_seed<V: DeserializeSeed<'de>>(&mut self, seed: V) -> Result<V::Value, Error> {
        let (k, v) = self
            .value
            .take()
            .ok_or_else(|| de::Error::custom("a value before its key"))?;
        seed.deserialize(Node {
            v,
            path: pointer(self.path, k),
        })
    }
}

// --------------------------------------------------------- type → literal

/// Writes any value of the spec types as its Rust literal: a struct as
/// `Name { field: … }`, a list as `&[…]`, a tuple as `(…)`, an option as
/// `Some(…)` or `None`, an enum value as `Type::Variant` (or
/// `Type::Variant(…)`), a string in Rust's escapes.
struct LitSer;

impl ser::Serializer for LitSer {
    type Ok = Lit;
    type Error = Error;
    type SerializeSeq = List;
    type SerializeTuple = List;
    type SerializeTupleStruct = ser::Impossible<Lit, Error>;
    type SerializeTupleVariant = ser::Impossible<Lit, Error>;
    type SerializeMap = ser::Impossible<Lit, Error>;
    type SerializeStruct = Fields;
    type SerializeStructVariant = ser::Impossible<Lit, Error>;

    fn serialize_bool(self, b: bool) -> Result<Lit, Error> {
        Ok(Lit::Atom(b.to_string()))
    }

    fn serialize_i8(self, n: i8) -> Result<Lit, Error> {
        self.serialize_i64(n.into())
    }

    fn serialize_i16(self, n: i16) -> Result<Lit, Error> {
        self.serialize_i64(n.into())
    }

    fn serialize_i32(self, n: i32) -> Result<Lit, Error> {
        self.serialize_i64(n.into())
    }

    fn serialize_i64(self, n: i64) -> Result<Lit, Error> {
        Ok(Lit::Atom(n.to_string()))
    }

    fn serialize_u8(self, n: u8) -> Result<Lit, Error> {
        self.serialize_u64(n.into())
    }

    fn serialize_u16(self, n: u16) -> Result<Lit, Error> {
        self.serialize_u64(n.into())
    }

    fn serialize_u32(self, n: u32) -> Result<Lit, Error> {
        self.serialize_u64(n.into())
    }

    fn serialize_u64(self, n: u64) -> Result<Lit, Error> {
        Ok(Lit::Atom(n.to_string()))
    }

    fn serialize_f32(self, n: f32) -> Result<Lit, Error> {
        self.serialize_f64(n.into())
    }

    fn serialize_f64(self, n: f64) -> Result<Lit, Error> {
        Err(ser::Error::custom(format_args!(
            "the number {n} is not supported: only integers are"
        )))
    }

    fn serialize_char(self, c: char) -> Result<Lit, Error> {
        Ok(Lit::Atom(format!("{c:?}")))
    }

    fn serialize_str(self, s: &str) -> Result<Lit, Error> {
        Ok(Lit::str(s))
    }

    fn serialize_bytes(self, _: &[u8]) -> Result<Lit, Error> {
        Err(unsupported("bytes"))
    }

    fn serialize_none(self) -> Result<Lit, Error> {
        Ok(Lit::Atom("None".into()))
    }

    fn serialize_some<T: Serialize + ?Sized>(self, v: &T) -> Result<Lit, Error> {
        Ok(Lit::Wrap("Some".into(), Box::new(v.serialize(LitSer)?)))
    }

    fn serialize_unit(self) -> Result<Lit, Error> {
        Ok(Lit::Atom("()".into()))
    }

    fn serialize_unit_struct(self, name: &'static str) -> Result<Lit, Error> {
        Ok(Lit::Atom(name.into()))
    }

    fn serialize_unit_variant(
        self,
        name: &'static str,
        _index: u32,
        variant: &'static str,
    ) -> Result<Lit, Error> {
        Ok(Lit::Atom(format!("{name}::{variant}")))
    }

    fn serialize_newtype_struct<T: Serialize + ?Sized>(
        self,
        name: &'static str,
        v: &T,
    ) -> Result<Lit, Error> {
        Ok(Lit::Wrap(name.into(), Box::new(v.serialize(LitSer)?)))
    }

    fn serialize_newtype_variant<T: Serialize + ?Sized>(
        self,
        name: &'static str,
        _index: u32,
        variant: &'static str,
        v: &T,
    ) -> Result<Lit, Error> {
        Ok(Lit::Wrap(
            format!("{name}::{variant}"),
            Box::new(v.serialize(LitSer)?),
        ))
    }

    fn serialize_seq(self, len: Option<usize>) -> Result<List, Error> {
        Ok(List {
            items: Vec::with_capacity(len.unwrap_or_default()),
            tuple: false,
        })
    }

    fn serialize_tuple(self, len: usize) -> Result<List, Error> {
        Ok(List {
            items: Vec::with_capacity(len),
            tuple: true,
        })
    }

    fn serialize_tuple_struct(
        self,
        _: &'static str,
        _: usize,
    ) -> Result<Self::SerializeTupleStruct, Error> {
        Err(unsupported("a tuple struct"))
    }

    fn serialize_tuple_variant(
        self,
        _: &'static str,
        _: u32,
        _: &'static str,
        _: usize,
    ) -> Result<Self::SerializeTupleVariant, Error> {
        Err(unsupported("a tuple variant"))
    }

    fn serialize_map(self, _: Option<usize>) -> Result<Self::SerializeMap, Error> {
        Err(unsupported("a map (a table is a list of pairs)"))
    }

    fn serialize_struct(self, name: &'static str, len: usize) -> Result<Fields, Error> {
        Ok(Fields {
            name,
            fields: Vec::with_capacity(len),
        })
    }

    fn serialize_struct_variant(
        self,
        _: &'static str,
        _: u32,
        _: &'static str,
        _: usize,
    ) -> Result<Self::SerializeStructVariant, Error> {
        Err(unsupported("a struct variant"))
    }
}

fn unsupported(what: &str) -> Error {
    ser::Error::custom(format_args!("{what} has no literal here"))
}

/// The items of a list (`&[…]`) or a tuple (`(…)`).
struct List {
    items: Vec<Lit>,
    tuple: bool,
}

impl List {
    fn push<T: Serialize + ?Sized>(&mut self, v: &T) -> Result<(), Error> {
        self.items.push(v.serialize(LitSer)?);
        Ok(())
    }

    fn done(self) -> Lit {
        if self.tuple {
            Lit::Tuple(self.items)
        } else {
            Lit::Slice(self.items)
        }
    }
}

impl ser::SerializeSeq for List {
    type Ok = Lit;
    type Error = Error;

    fn serialize_element<T: Serialize + ?Sized>(&mut self, v: &T) -> Result<(), Error> {
        self.push(v)
    }

    fn end(self) -> Result<Lit, Error> {
        Ok(self.done())
    }
}

impl ser::SerializeTuple for List {
    type Ok = Lit;
    type Error = Error;

    fn serialize_element<T: Serialize + ?Sized>(&mut self, v: &T) -> Result<(), Error> {
        self.push(v)
    }

    fn end(self) -> Result<Lit, Error> {
        Ok(self.done())
    }
}

/// A struct's fields, in declaration order.
struct Fields {
    name: &'static str,
    fields: Vec<(&'static str, Lit)>,
}

impl ser::SerializeStruct for Fields {
    type Ok = Lit;
    type Error = Error;

    fn serialize_field<T: Serialize + ?Sized>(
        &mut self,
        key: &'static str,
        v: &T,
    ) -> Result<(), Error> {
        self.fields.push((key, v.serialize(LitSer)?));
        Ok(())
    }

    fn end(self) -> Result<Lit, Error> {
        Ok(Lit::Struct(self.name, self.fields))
    }
}

// ---------------------------------------------------------- Rust literals

/// A Rust expression, printed on one line when it fits and indented
/// otherwise.
enum Lit {
    Atom(String),
    Struct(&'static str, Vec<(&'static str, Lit)>),
    Slice(Vec<Lit>),
    Tuple(Vec<Lit>),
    /// `Some(x)`, `Json::Arr(x)`: a path applied to one expression.
    Wrap(String, Box<Lit>),
}

const WIDTH: usize = 100;

impl Lit {
    fn str(s: &str) -> Lit {
        Lit::Atom(format!("{s:?}"))
    }

    fn flat(&self, out: &mut String) {
        let list = |items: &mut dyn Iterator<Item = &Lit>, out: &mut String| {
            for (i, l) in items.enumerate() {
                if i > 0 {
                    out.push_str(", ");
                }
                l.flat(out);
            }
        };
        match self {
            Lit::Atom(s) => out.push_str(s),
            Lit::Struct(name, fields) => {
                out.push_str(name);
                out.push_str(" {");
                for (i, (f, l)) in fields.iter().enumerate() {
                    out.push_str(if i > 0 { ", " } else { " " });
                    out.push_str(f);
                    out.push_str(": ");
                    l.flat(out);
                }
                out.push_str(" }");
            }
            Lit::Slice(items) => {
                out.push_str("&[");
                list(&mut items.iter(), out);
                out.push(']');
            }
            Lit::Tuple(items) => {
                out.push('(');
                list(&mut items.iter(), out);
                out.push(')');
            }
            Lit::Wrap(path, inner) => {
                out.push_str(path);
                out.push('(');
                inner.flat(out);
                out.push(')');
            }
        }
    }

    /// Appends the expression, `indent` being the current line's indent.
    fn render(&self, indent: usize, out: &mut String) {
        let mut one = String::new();
        self.flat(&mut one);
        let column = out.len() - out.rfind('\n').map_or(0, |i| i + 1);
        // One column is kept for the `,` a field or item is followed by.
        if column + one.len() < WIDTH {
            out.push_str(&one);
            return;
        }
        let pad = " ".repeat(indent + 4);
        let close = " ".repeat(indent);
        match self {
            Lit::Atom(s) => out.push_str(s),
            Lit::Struct(name, fields) => {
                out.push_str(name);
                out.push_str(" {\n");
                for (f, l) in fields {
                    out.push_str(&pad);
                    out.push_str(f);
                    out.push_str(": ");
                    l.render(indent + 4, out);
                    out.push_str(",\n");
                }
                out.push_str(&close);
                out.push('}');
            }
            Lit::Slice(items) | Lit::Tuple(items) => {
                let (open, end) = if matches!(self, Lit::Slice(_)) {
                    ("&[\n", ']')
                } else {
                    ("(\n", ')')
                };
                out.push_str(open);
                for l in items {
                    out.push_str(&pad);
                    l.render(indent + 4, out);
                    out.push_str(",\n");
                }
                out.push_str(&close);
                out.push(end);
            }
            Lit::Wrap(path, inner) => {
                out.push_str(path);
                out.push('(');
                inner.render(indent, out);
                out.push(')');
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use serde_json::{Value, json};

    use super::{WIDTH, adapter, literal};

    const FILE: &str = "adapters/t/adapter.json";

    /// The smallest adapter the generator takes, with one event.
    fn base() -> Value {
        json!({
            "name": "t",
            "displayName": "T",
            "encoder": "template",
            "timeout": { "unit": "seconds" },
            "configFiles": { "format": "json", "user": [], "project": [] },
            "closesStdin": false,
            "exitRule": "exit 0",
            "events": {
                "E": { "event": "Stop", "fields": [{ "to": "reason", "from": "why" }] }
            }
        })
    }

    /// The generated literal on one line, or the build failure's message.
    fn generate_text(text: &str) -> Result<String, String> {
        let one_line = || {
            let mut out = String::new();
            literal(FILE, text).flat(&mut out);
            out
        };
        std::panic::catch_unwind(one_line).map_err(|e| {
            e.downcast_ref::<String>()
                .cloned()
                .or_else(|| e.downcast_ref::<&str>().map(|s| (*s).to_owned()))
                .unwrap_or_default()
        })
    }

    /// `base()` with the value at `pointer` replaced (or added, for a new
    /// key of an existing object; removed, for `None`).
    fn generate_with(pointer: &str, value: Option<Value>) -> Result<String, String> {
        let mut doc = base();
        let (parent, key) = pointer.rsplit_once('/').unwrap();
        let obj = doc
            .pointer_mut(parent)
            .and_then(Value::as_object_mut)
            .unwrap_or_else(|| panic!("{pointer}"));
        match value {
            Some(v) => obj.insert(key.to_owned(), v),
            None => obj.remove(key),
        };
        generate_text(&doc.to_string())
    }

    fn accepted(pointer: &str, value: Value) -> String {
        generate_with(pointer, Some(value.clone()))
            .unwrap_or_else(|e| panic!("{pointer} = {value}: {e}"))
    }

    fn refused(pointer: &str, value: Option<Value>) -> String {
        let e = generate_with(pointer, value.clone())
            .expect_err(&format!("{pointer} = {value:?} should fail the build"));
        assert!(e.starts_with(&format!("{FILE}: ")), "{e}");
        e
    }

    /// What build.rs wrote for each real adapter is this generator's output,
    /// laid out to be read: a line too long for [`WIDTH`] is broken at its
    /// fields and items, so only a single long string exceeds it.
    #[test]
    fn the_generated_file_is_this_generators_readable_output() {
        let data = include_str!(concat!(env!("OUT_DIR"), "/adapter_data.rs"));
        for (name, text) in crate::hosts::ADAPTER_SOURCES {
            let id = name.to_ascii_uppercase().replace('-', "_");
            let literal = adapter(&format!("adapters/{name}/adapter.json"), text);
            assert!(
                data.contains(&format!("pub(super) static {id}: Adapter = {literal};\n")),
                "{name}"
            );
            let mut one_line = String::new();
            super::literal(name, text).flat(&mut one_line);
            assert!(one_line.len() > WIDTH && literal.lines().count() > 1);
            for line in literal.lines().filter(|l| l.len() > WIDTH) {
                let s = line.trim_start();
                let s = s.split_once(": \"").map_or(s, |(_, rest)| rest);
                let s = s.trim_end_matches(',');
                // A string in a template is `Json::Str("…")`.
                let s = s.strip_suffix(')').unwrap_or(s);
                assert!(
                    s.ends_with('"') && !s.contains("\", \""),
                    "{name}: a long line is one string: {line}"
                );
            }
        }
    }

    #[test]
    fn absent_fields_get_their_defaults() {
        let out = generate_text(&base().to_string()).unwrap();
        for default in [
            "notice: None",
            "sources: &[]",
            "default: None",
            "match_all: None",
            "passthrough: false",
            "host_fields: false",
            "hook_env: &[]",
            "ignore: &[]",
            "tools: &[]",
            "mcp: None",
            "wire: true",
            "kind: ValueKind::String",
            "transform: None",
            "required: false",
            "values: &[]",
            "require: &[]",
            "refine: None",
            "skip: None",
            "deny: None",
            "unmapped: &[]",
            "bridges: &[]",
            "notes: &[]",
        ] {
            assert!(out.contains(default), "{default} in\n{out}");
        }
        let out = accepted("/events/E/deny", json!({ "stderr": "$reason" }));
        assert!(
            out.contains(
                r#"deny: Some(Output { stdout: None, stderr: Some("$reason"), exit: 0 })"#
            ),
            "{out}"
        );
    }

    /// `null` is `None` for every optional field, as a typed parse reads it.
    #[test]
    fn null_is_none_for_optional_fields() {
        for pointer in [
            "/matchAll",
            "/notice",
            "/mcp",
            "/$schema",
            "/timeout/default",
        ] {
            accepted(pointer, Value::Null);
        }
        let out = accepted(
            "/events/E/skip",
            json!({ "when": "x", "equals": null, "why": "y" }),
        );
        assert!(out.contains("equals: None"), "{out}");
    }

    /// `from` is a string or a list of strings, and nothing else; one
    /// string is a list of one.
    #[test]
    fn from_is_a_string_or_a_list_of_strings() {
        let from = "/events/E/fields/0/from";
        for (value, literal) in [
            (json!("a"), r#"from: &["a"]"#),
            (json!("a\"b"), r#"from: &["a\"b"]"#),
            (json!(["a", "b"]), r#"from: &["a", "b"]"#),
            (json!([]), "from: &[]"),
        ] {
            let out = accepted(from, value);
            assert!(out.contains(literal), "{literal} in\n{out}");
        }
        for bad in [
            json!(1),
            json!([1]),
            json!(null),
            json!({ "a": "b" }),
            json!(["a", ["b"]]),
        ] {
            let e = refused(from, Some(bad.clone()));
            assert!(e.contains(from), "{bad}: {e}");
            assert!(e.contains("a string"), "{bad}: {e}");
        }
    }

    #[test]
    fn tables_are_sorted_and_templates_keep_the_files_order() {
        let out = accepted("/tools", json!({ "b": "Bash", "a": "Agent" }));
        assert!(
            out.contains(r#"tools: &[("a", "Agent"), ("b", "Bash")]"#),
            "{out}"
        );
        let out = accepted(
            "/events/E/deny",
            json!({ "stdout": { "z": 1, "a": [true, null, -2, "$reason"], "m": {} }, "exit": 2 }),
        );
        assert!(
            out.contains(
                r#"("z", Json::Int(1)), ("a", Json::Arr(&[Json::Bool(true), Json::Null, Json::Int(-2), Json::Str("$reason")])), ("m", Json::Obj(&[]))"#
            ),
            "{out}"
        );
        assert!(out.contains("exit: 2"), "{out}");
        let out = accepted(
            "/events",
            json!({ "Z": { "event": "Stop" }, "A": { "event": "PreToolUse", "wire": false } }),
        );
        let (z, a) = (out.find(r#"name: "Z""#), out.find(r#"name: "A""#));
        assert!(z.is_some() && a.is_some() && z < a, "{out}");
        assert!(
            out.contains("event: Event::PreToolUse, wire: false"),
            "{out}"
        );
    }

    /// Every file error fails the build, naming the file, the field's JSON
    /// pointer and what is wrong.
    #[test]
    fn what_a_typed_parse_refuses_fails_the_build() {
        let cases: [(&str, Option<Value>, &str); 27] = [
            ("/extra", Some(json!(1)), "/: unknown field `extra`"),
            (
                "/events/E/frm",
                Some(json!("x")),
                "/events/E: unknown field `frm`",
            ),
            (
                "/events/E/fields/0/kind",
                Some(json!("any")),
                "/events/E/fields/0: unknown field `kind`",
            ),
            (
                "/mcp",
                Some(json!({ "prefix": "mcp_", "server": "x" })),
                "/mcp: unknown field `server`",
            ),
            (
                "/events/E/deny",
                Some(json!({ "stdout": { "a": "$reason" }, "code": 2 })),
                "/events/E/deny: unknown field `code`",
            ),
            ("/name", None, "/: missing field `name`"),
            ("/events", None, "/: missing field `events`"),
            ("/events/E/event", None, "/events/E: missing field `event`"),
            (
                "/events/E/refine",
                Some(json!({ "when": "x" })),
                "/events/E/refine: missing field `event`",
            ),
            (
                "/configFiles/homeEnv",
                Some(json!({ "var": "X" })),
                "/configFiles/homeEnv: missing field `replaces`",
            ),
            (
                "/events/E/event",
                Some(json!("BeforeTool")),
                "/events/E/event: unknown event `BeforeTool`",
            ),
            (
                "/bridges",
                Some(json!([{ "event": "SubagentStart", "via": "Nope", "tool": "Agent" }])),
                "/bridges/0/via: unknown event `Nope`",
            ),
            (
                "/encoder",
                Some(json!("Template")),
                "/encoder: unknown variant `Template`",
            ),
            (
                "/timeout/unit",
                Some(json!("minutes")),
                "/timeout/unit: unknown variant `minutes`",
            ),
            (
                "/configFiles/format",
                Some(json!("yaml")),
                "/configFiles/format: unknown variant `yaml`",
            ),
            (
                "/events/E/fields/0/type",
                Some(json!("int")),
                "/events/E/fields/0/type: unknown variant `int`",
            ),
            (
                "/events/E/fields/0/transform",
                Some(json!("upper")),
                "/events/E/fields/0/transform: unknown variant `upper`",
            ),
            (
                "/events/E/deny",
                Some(json!({ "stdout": { "a": 1.5 } })),
                "/events/E/deny/stdout/a: the number 1.5 is not supported",
            ),
            (
                "/events/E/deny",
                Some(json!({ "exit": 300 })),
                "/events/E/deny/exit: invalid value: integer `300`, expected u8",
            ),
            (
                "/events/E/deny",
                Some(json!({ "stdout": "x" })),
                "/events/E/deny/stdout: expected an object, found a string",
            ),
            (
                "/timeout/default",
                Some(json!(1.5)),
                "/timeout/default: expected u64, found a number",
            ),
            (
                "/events/E/wire",
                Some(json!(null)),
                "/events/E/wire: expected a boolean, found null",
            ),
            (
                "/closesStdin",
                Some(json!("no")),
                "/closesStdin: expected a boolean, found a string",
            ),
            (
                "/sources",
                Some(json!(null)),
                "/sources: expected a sequence, found null",
            ),
            (
                "/tools",
                Some(json!({ "a/b": 1 })),
                "/tools/a~1b: expected a string, found a number",
            ),
            (
                "/events",
                Some(json!(["Stop"])),
                "/events: expected an object of host events, found an array",
            ),
            (
                "/events/E/require",
                Some(json!(["a", 1])),
                "/events/E/require/1: expected a string, found a number",
            ),
        ];
        for (pointer, value, message) in cases {
            let e = refused(pointer, value);
            assert!(e.contains(message), "{pointer}: {e}");
        }
    }

    /// A key twice in one object fails too: an event twice, a tool twice, a
    /// struct field twice.
    #[test]
    fn a_key_twice_fails_the_build() {
        let text = base().to_string();
        for (from, to, message) in [
            (
                r#""events":{"E":"#,
                r#""events":{"E":{"event":"Stop"},"E":"#,
                "/events: event `E` twice",
            ),
            (
                r#""name":"t""#,
                r#""name":"t","name":"t""#,
                "/: key `name` twice",
            ),
            (
                r#""unit":"seconds""#,
                r#""unit":"seconds","unit":"seconds""#,
                "/timeout: key `unit` twice",
            ),
        ] {
            assert!(text.contains(from), "{from} in {text}");
            let e = generate_text(&text.replacen(from, to, 1)).unwrap_err();
            assert!(e.starts_with(&format!("{FILE}: ")), "{e}");
            assert!(e.contains(message), "{e}");
        }
        let text = base().to_string().replacen(
            r#""closesStdin""#,
            r#""tools":{"a":"Agent","a":"Bash"},"closesStdin""#,
            1,
        );
        let e = generate_text(&text).unwrap_err();
        assert!(e.contains("/tools: key `a` twice"), "{e}");
    }

    #[test]
    fn text_that_is_not_json_fails_the_build() {
        let e = generate_text("{").unwrap_err();
        assert!(e.starts_with(&format!("{FILE}: ")), "{e}");
        let e = generate_text(&format!("{} 1", base())).unwrap_err();
        assert!(e.contains("trailing characters"), "{e}");
    }
}
