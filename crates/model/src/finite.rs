//! Whether a value holds only finite figures: the store's check before a write, so that it
//! stores only what it can read back (a NaN or an infinity becomes JSON's null or SQL's NULL,
//! and a figure that must be a number then no longer reads). [`first_non_finite`] walks any
//! serializable value and names the first figure that is not a finite number by its path
//! (`phases[2].result.all_done.bytes_per_sec`).
//!
//! A serde `Serializer` of our own (no crate does only this): it writes nothing, and fails at
//! the first float that is not finite, with the path it reached.

use serde::ser::{self, Serialize};

/// The path and value of the first figure in `value` that is not a finite number, if any.
pub fn first_non_finite<T: Serialize + ?Sized>(value: &T) -> Option<String> {
    let mut w = Walker { path: Vec::new() };
    match value.serialize(&mut w) {
        Ok(()) => None,
        Err(NonFinite(at)) => Some(at),
    }
}

/// The first figure found that is not finite: its path and value, in words.
#[derive(Debug)]
struct NonFinite(String);

impl std::fmt::Display for NonFinite {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for NonFinite {}

impl ser::Error for NonFinite {
    fn custom<M: std::fmt::Display>(msg: M) -> Self {
        NonFinite(msg.to_string())
    }
}

struct Walker {
    path: Vec<String>,
}

impl Walker {
    fn float(&self, v: f64) -> Result<(), NonFinite> {
        if v.is_finite() {
            return Ok(());
        }
        let mut at = String::new();
        for p in &self.path {
            if !p.starts_with('[') && !at.is_empty() {
                at.push('.');
            }
            at.push_str(p);
        }
        let at = if at.is_empty() { "the value".to_string() } else { at };
        Err(NonFinite(format!("{at} = {v}")))
    }

    fn within<T: Serialize + ?Sized>(&mut self, key: String, v: &T) -> Result<(), NonFinite> {
        self.path.push(key);
        let r = v.serialize(&mut *self);
        self.path.pop();
        r
    }
}

/// The walker as each compound's serializer: the position in a sequence, the key of a map.
struct Compound<'a> {
    w: &'a mut Walker,
    index: usize,
    key: Option<String>,
}

impl<'a> ser::Serializer for &'a mut Walker {
    type Ok = ();
    type Error = NonFinite;
    type SerializeSeq = Compound<'a>;
    type SerializeTuple = Compound<'a>;
    type SerializeTupleStruct = Compound<'a>;
    type SerializeTupleVariant = Compound<'a>;
    type SerializeMap = Compound<'a>;
    type SerializeStruct = Compound<'a>;
    type SerializeStructVariant = Compound<'a>;

    fn serialize_f32(self, v: f32) -> Result<(), NonFinite> {
        self.float(v as f64)
    }
    fn serialize_f64(self, v: f64) -> Result<(), NonFinite> {
        self.float(v)
    }
    fn serialize_bool(self, _: bool) -> Result<(), NonFinite> {
        Ok(())
    }
    fn serialize_i8(self, _: i8) -> Result<(), NonFinite> {
        Ok(())
    }
    fn serialize_i16(self, _: i16) -> Result<(), NonFinite> {
        Ok(())
    }
    fn serialize_i32(self, _: i32) -> Result<(), NonFinite> {
        Ok(())
    }
    fn serialize_i64(self, _: i64) -> Result<(), NonFinite> {
        Ok(())
    }
    fn serialize_u8(self, _: u8) -> Result<(), NonFinite> {
        Ok(())
    }
    fn serialize_u16(self, _: u16) -> Result<(), NonFinite> {
        Ok(())
    }
    fn serialize_u32(self, _: u32) -> Result<(), NonFinite> {
        Ok(())
    }
    fn serialize_u64(self, _: u64) -> Result<(), NonFinite> {
        Ok(())
    }
    fn serialize_i128(self, _: i128) -> Result<(), NonFinite> {
        Ok(())
    }
    fn serialize_u128(self, _: u128) -> Result<(), NonFinite> {
        Ok(())
    }
    fn serialize_char(self, _: char) -> Result<(), NonFinite> {
        Ok(())
    }
    fn serialize_str(self, _: &str) -> Result<(), NonFinite> {
        Ok(())
    }
    fn serialize_bytes(self, _: &[u8]) -> Result<(), NonFinite> {
        Ok(())
    }
    fn serialize_none(self) -> Result<(), NonFinite> {
        Ok(())
    }
    fn serialize_some<T: Serialize + ?Sized>(self, v: &T) -> Result<(), NonFinite> {
        v.serialize(self)
    }
    fn serialize_unit(self) -> Result<(), NonFinite> {
        Ok(())
    }
    fn serialize_unit_struct(self, _: &'static str) -> Result<(), NonFinite> {
        Ok(())
    }
    fn serialize_unit_variant(self, _: &'static str, _: u32, _: &'static str) -> Result<(), NonFinite> {
        Ok(())
    }
    fn serialize_newtype_struct<T: Serialize + ?Sized>(self, _: &'static str, v: &T) -> Result<(), NonFinite> {
        v.serialize(self)
    }
    fn serialize_newtype_variant<T: Serialize + ?Sized>(
        self,
        _: &'static str,
        _: u32,
        variant: &'static str,
        v: &T,
    ) -> Result<(), NonFinite> {
        self.within(variant.to_string(), v)
    }
    fn serialize_seq(self, _: Option<usize>) -> Result<Compound<'a>, NonFinite> {
        Ok(Compound {
            w: self,
            index: 0,
            key: None,
        })
    }
    fn serialize_tuple(self, _: usize) -> Result<Compound<'a>, NonFinite> {
        Ok(Compound {
            w: self,
            index: 0,
            key: None,
        })
    }
    fn serialize_tuple_struct(self, _: &'static str, _: usize) -> Result<Compound<'a>, NonFinite> {
        Ok(Compound {
            w: self,
            index: 0,
            key: None,
        })
    }
    fn serialize_tuple_variant(
        self,
        _: &'static str,
        _: u32,
        _: &'static str,
        _: usize,
    ) -> Result<Compound<'a>, NonFinite> {
        Ok(Compound {
            w: self,
            index: 0,
            key: None,
        })
    }
    fn serialize_map(self, _: Option<usize>) -> Result<Compound<'a>, NonFinite> {
        Ok(Compound {
            w: self,
            index: 0,
            key: None,
        })
    }
    fn serialize_struct(self, _: &'static str, _: usize) -> Result<Compound<'a>, NonFinite> {
        Ok(Compound {
            w: self,
            index: 0,
            key: None,
        })
    }
    fn serialize_struct_variant(
        self,
        _: &'static str,
        _: u32,
        _: &'static str,
        _: usize,
    ) -> Result<Compound<'a>, NonFinite> {
        Ok(Compound {
            w: self,
            index: 0,
            key: None,
        })
    }
}

impl Compound<'_> {
    fn element<T: Serialize + ?Sized>(&mut self, v: &T) -> Result<(), NonFinite> {
        let key = format!("[{}]", self.index);
        self.index += 1;
        self.w.within(key, v)
    }
}

impl ser::SerializeSeq for Compound<'_> {
    type Ok = ();
    type Error = NonFinite;
    fn serialize_element<T: Serialize + ?Sized>(&mut self, v: &T) -> Result<(), NonFinite> {
        self.element(v)
    }
    fn end(self) -> Result<(), NonFinite> {
        Ok(())
    }
}

impl ser::SerializeTuple for Compound<'_> {
    type Ok = ();
    type Error = NonFinite;
    fn serialize_element<T: Serialize + ?Sized>(&mut self, v: &T) -> Result<(), NonFinite> {
        self.element(v)
    }
    fn end(self) -> Result<(), NonFinite> {
        Ok(())
    }
}

impl ser::SerializeTupleStruct for Compound<'_> {
    type Ok = ();
    type Error = NonFinite;
    fn serialize_field<T: Serialize + ?Sized>(&mut self, v: &T) -> Result<(), NonFinite> {
        self.element(v)
    }
    fn end(self) -> Result<(), NonFinite> {
        Ok(())
    }
}

impl ser::SerializeTupleVariant for Compound<'_> {
    type Ok = ();
    type Error = NonFinite;
    fn serialize_field<T: Serialize + ?Sized>(&mut self, v: &T) -> Result<(), NonFinite> {
        self.element(v)
    }
    fn end(self) -> Result<(), NonFinite> {
        Ok(())
    }
}

/// A map's key as a path step: its text where it is a string or a number.
struct KeyText(Option<String>);

impl ser::Serializer for &mut KeyText {
    type Ok = ();
    type Error = NonFinite;
    type SerializeSeq = ser::Impossible<(), NonFinite>;
    type SerializeTuple = ser::Impossible<(), NonFinite>;
    type SerializeTupleStruct = ser::Impossible<(), NonFinite>;
    type SerializeTupleVariant = ser::Impossible<(), NonFinite>;
    type SerializeMap = ser::Impossible<(), NonFinite>;
    type SerializeStruct = ser::Impossible<(), NonFinite>;
    type SerializeStructVariant = ser::Impossible<(), NonFinite>;
    fn serialize_str(self, v: &str) -> Result<(), NonFinite> {
        self.0 = Some(v.to_string());
        Ok(())
    }
    fn serialize_u64(self, v: u64) -> Result<(), NonFinite> {
        self.0 = Some(v.to_string());
        Ok(())
    }
    fn serialize_i64(self, v: i64) -> Result<(), NonFinite> {
        self.0 = Some(v.to_string());
        Ok(())
    }
    fn serialize_u32(self, v: u32) -> Result<(), NonFinite> {
        self.serialize_u64(v as u64)
    }
    fn serialize_u128(self, v: u128) -> Result<(), NonFinite> {
        self.0 = Some(v.to_string());
        Ok(())
    }
    fn serialize_i128(self, v: i128) -> Result<(), NonFinite> {
        self.0 = Some(v.to_string());
        Ok(())
    }
    fn serialize_i32(self, v: i32) -> Result<(), NonFinite> {
        self.serialize_i64(v as i64)
    }
    fn serialize_u16(self, v: u16) -> Result<(), NonFinite> {
        self.serialize_u64(v as u64)
    }
    fn serialize_i16(self, v: i16) -> Result<(), NonFinite> {
        self.serialize_i64(v as i64)
    }
    fn serialize_u8(self, v: u8) -> Result<(), NonFinite> {
        self.serialize_u64(v as u64)
    }
    fn serialize_i8(self, v: i8) -> Result<(), NonFinite> {
        self.serialize_i64(v as i64)
    }
    fn serialize_bool(self, v: bool) -> Result<(), NonFinite> {
        self.0 = Some(v.to_string());
        Ok(())
    }
    fn serialize_char(self, v: char) -> Result<(), NonFinite> {
        self.0 = Some(v.to_string());
        Ok(())
    }
    fn serialize_f32(self, v: f32) -> Result<(), NonFinite> {
        self.0 = Some(v.to_string());
        Ok(())
    }
    fn serialize_f64(self, v: f64) -> Result<(), NonFinite> {
        self.0 = Some(v.to_string());
        Ok(())
    }
    fn serialize_bytes(self, _: &[u8]) -> Result<(), NonFinite> {
        Ok(())
    }
    fn serialize_none(self) -> Result<(), NonFinite> {
        Ok(())
    }
    fn serialize_some<T: Serialize + ?Sized>(self, v: &T) -> Result<(), NonFinite> {
        v.serialize(self)
    }
    fn serialize_unit(self) -> Result<(), NonFinite> {
        Ok(())
    }
    fn serialize_unit_struct(self, name: &'static str) -> Result<(), NonFinite> {
        self.0 = Some(name.to_string());
        Ok(())
    }
    fn serialize_unit_variant(self, _: &'static str, _: u32, variant: &'static str) -> Result<(), NonFinite> {
        self.0 = Some(variant.to_string());
        Ok(())
    }
    fn serialize_newtype_struct<T: Serialize + ?Sized>(self, _: &'static str, v: &T) -> Result<(), NonFinite> {
        v.serialize(self)
    }
    fn serialize_newtype_variant<T: Serialize + ?Sized>(
        self,
        _: &'static str,
        _: u32,
        variant: &'static str,
        _: &T,
    ) -> Result<(), NonFinite> {
        self.0 = Some(variant.to_string());
        Ok(())
    }
    fn serialize_seq(self, _: Option<usize>) -> Result<Self::SerializeSeq, NonFinite> {
        Err(NonFinite("a sequence as a key".into()))
    }
    fn serialize_tuple(self, _: usize) -> Result<Self::SerializeTuple, NonFinite> {
        Err(NonFinite("a tuple as a key".into()))
    }
    fn serialize_tuple_struct(self, _: &'static str, _: usize) -> Result<Self::SerializeTupleStruct, NonFinite> {
        Err(NonFinite("a tuple as a key".into()))
    }
    fn serialize_tuple_variant(
        self,
        _: &'static str,
        _: u32,
        _: &'static str,
        _: usize,
    ) -> Result<Self::SerializeTupleVariant, NonFinite> {
        Err(NonFinite("a tuple as a key".into()))
    }
    fn serialize_map(self, _: Option<usize>) -> Result<Self::SerializeMap, NonFinite> {
        Err(NonFinite("a map as a key".into()))
    }
    fn serialize_struct(self, _: &'static str, _: usize) -> Result<Self::SerializeStruct, NonFinite> {
        Err(NonFinite("a struct as a key".into()))
    }
    fn serialize_struct_variant(
        self,
        _: &'static str,
        _: u32,
        _: &'static str,
        _: usize,
    ) -> Result<Self::SerializeStructVariant, NonFinite> {
        Err(NonFinite("a struct as a key".into()))
    }
}

impl ser::SerializeMap for Compound<'_> {
    type Ok = ();
    type Error = NonFinite;
    fn serialize_key<T: Serialize + ?Sized>(&mut self, k: &T) -> Result<(), NonFinite> {
        let mut t = KeyText(None);
        // A key that is a float is checked as a figure too.
        k.serialize(&mut *self.w)?;
        let _ = k.serialize(&mut t);
        self.key = t.0;
        Ok(())
    }
    fn serialize_value<T: Serialize + ?Sized>(&mut self, v: &T) -> Result<(), NonFinite> {
        let key = self.key.take().unwrap_or_else(|| format!("[{}]", self.index));
        self.index += 1;
        self.w.within(key, v)
    }
    fn end(self) -> Result<(), NonFinite> {
        Ok(())
    }
}

impl ser::SerializeStruct for Compound<'_> {
    type Ok = ();
    type Error = NonFinite;
    fn serialize_field<T: Serialize + ?Sized>(&mut self, key: &'static str, v: &T) -> Result<(), NonFinite> {
        self.w.within(key.to_string(), v)
    }
    fn end(self) -> Result<(), NonFinite> {
        Ok(())
    }
}

impl ser::SerializeStructVariant for Compound<'_> {
    type Ok = ();
    type Error = NonFinite;
    fn serialize_field<T: Serialize + ?Sized>(&mut self, key: &'static str, v: &T) -> Result<(), NonFinite> {
        self.w.within(key.to_string(), v)
    }
    fn end(self) -> Result<(), NonFinite> {
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[derive(serde::Serialize)]
    struct Inner {
        mean: f64,
        kept: Option<f64>,
    }

    #[derive(serde::Serialize)]
    struct Outer {
        name: String,
        phases: Vec<Inner>,
        by: std::collections::BTreeMap<String, f64>,
    }

    #[test]
    fn the_first_figure_that_is_not_finite_is_named_by_its_path() {
        let mut o = Outer {
            name: "x".into(),
            phases: vec![
                Inner { mean: 1.0, kept: None },
                Inner {
                    mean: 2.0,
                    kept: Some(3.0),
                },
            ],
            by: [("a".to_string(), 1.0)].into(),
        };
        assert_eq!(first_non_finite(&o), None);
        o.phases[1].kept = Some(f64::INFINITY);
        assert_eq!(first_non_finite(&o).as_deref(), Some("phases[1].kept = inf"));
        o.phases[1].kept = None;
        o.by.insert("b".into(), f64::NAN);
        assert_eq!(first_non_finite(&o).as_deref(), Some("by.b = NaN"));
        assert_eq!(
            first_non_finite(&f64::NEG_INFINITY).as_deref(),
            Some("the value = -inf")
        );
    }
}
