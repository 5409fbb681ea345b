//! Strict serde readers for the JSON inputs (plans, arrivals): what serde's derive accepts but
//! docs/plan.schema.json forbids is refused here, so that the error carries the field's path.
//!
//! - A struct only from a JSON object: the derive also reads the positional form (an array of
//!   the field values in declaration order), which no schema allows. [`object`],
//!   [`objects`] and [`Object`] read through `deserialize_map`.
//! - `null` is no value: an `Option` field is absent or holds a value. [`present`] reads the
//!   value itself (`null` is then "invalid type: null, expected …").
//! - Slot counts a planner takes have a bound ([`MAX_JOB_SLOTS`]): [`job_slots`],
//!   [`opt_job_slots`].
//!
//! All of them go through the caller's deserializer, so `serde_path_to_error` still tracks the
//! path inside the object.

use crate::planner::cpu::MAX_JOB_SLOTS;
use serde::de::value::MapAccessDeserializer;
use serde::de::{self, Deserialize, Deserializer, MapAccess, SeqAccess, Unexpected, Visitor};
use std::fmt;
use std::marker::PhantomData;

/// A `T` read from a JSON object only (never from the positional array form).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Object<T>(pub T);

impl<'de, T: Deserialize<'de>> Deserialize<'de> for Object<T> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V<T>(PhantomData<T>);
        impl<'de, T: Deserialize<'de>> Visitor<'de> for V<T> {
            type Value = T;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("a JSON object")
            }
            fn visit_map<A: MapAccess<'de>>(self, map: A) -> Result<T, A::Error> {
                T::deserialize(MapAccessDeserializer::new(map))
            }
        }
        d.deserialize_map(V(PhantomData)).map(Object)
    }
}

/// A list of objects (each element through [`Object`]).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Objects<T>(pub Vec<T>);

impl<'de, T: Deserialize<'de>> Deserialize<'de> for Objects<T> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V<T>(PhantomData<T>);
        impl<'de, T: Deserialize<'de>> Visitor<'de> for V<T> {
            type Value = Vec<T>;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("a JSON array of objects")
            }
            fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Vec<T>, A::Error> {
                // no size hint: the input decides how much is allocated, one element at a time
                let mut out = Vec::new();
                while let Some(Object(x)) = seq.next_element::<Object<T>>()? {
                    out.push(x);
                }
                Ok(out)
            }
        }
        d.deserialize_seq(V(PhantomData)).map(Objects)
    }
}

/// `Option<T>` field: absent (with `#[serde(default)]`) or a value; `null` is refused.
pub fn present<'de, D: Deserializer<'de>, T: Deserialize<'de>>(
    d: D,
) -> Result<Option<T>, D::Error> {
    T::deserialize(d).map(Some)
}

/// `Option<T>` field holding an object (never an array, never `null`).
pub fn object<'de, D: Deserializer<'de>, T: Deserialize<'de>>(d: D) -> Result<Option<T>, D::Error> {
    Object::<T>::deserialize(d).map(|o| Some(o.0))
}

/// `Option<Vec<T>>` field holding a list of objects (never `null`).
pub fn objects<'de, D: Deserializer<'de>, T: Deserialize<'de>>(
    d: D,
) -> Result<Option<Vec<T>>, D::Error> {
    Objects::<T>::deserialize(d).map(|o| Some(o.0))
}

/// A slot count of at most [`MAX_JOB_SLOTS`].
pub fn job_slots<'de, D: Deserializer<'de>>(d: D) -> Result<u64, D::Error> {
    let n = u64::deserialize(d)?;
    if n > MAX_JOB_SLOTS {
        return Err(de::Error::invalid_value(Unexpected::Unsigned(n), &BoundMsg));
    }
    Ok(n)
}

/// An optional slot count of at most [`MAX_JOB_SLOTS`] (`null` refused).
pub fn opt_job_slots<'de, D: Deserializer<'de>>(d: D) -> Result<Option<u64>, D::Error> {
    job_slots(d).map(Some)
}

struct BoundMsg;
impl de::Expected for BoundMsg {
    fn fmt(&self, f: &mut fmt::Formatter) -> fmt::Result {
        write!(
            f,
            "at most {MAX_JOB_SLOTS} slots (the planner's bound, docs/plan-format.md)"
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde::Deserialize;

    #[derive(Debug, Deserialize, PartialEq)]
    #[serde(deny_unknown_fields)]
    struct Inner {
        #[serde(default, deserialize_with = "present")]
        a: Option<u32>,
    }

    #[derive(Debug, Deserialize, PartialEq)]
    #[serde(deny_unknown_fields)]
    struct Outer {
        #[serde(default, deserialize_with = "object")]
        one: Option<Inner>,
        #[serde(default, deserialize_with = "objects")]
        many: Option<Vec<Inner>>,
    }

    fn read(text: &str) -> Result<Outer, String> {
        let de = &mut serde_json::Deserializer::from_str(text);
        serde_path_to_error::deserialize::<_, Object<Outer>>(de)
            .map(|o| o.0)
            .map_err(|e| format!("{}: {}", e.path(), e.inner()))
    }

    #[test]
    fn objects_read_and_positional_forms_and_nulls_are_refused_with_the_path() {
        assert_eq!(
            read(r#"{"one":{"a":1},"many":[{}]}"#).unwrap(),
            Outer {
                one: Some(Inner { a: Some(1) }),
                many: Some(vec![Inner { a: None }]),
            }
        );
        // serde's derive alone takes all of these
        assert!(read("[null, null]")
            .unwrap_err()
            .starts_with(".: invalid type: sequence"));
        assert!(read(r#"{"one":[1]}"#)
            .unwrap_err()
            .starts_with("one: invalid type: sequence"));
        let e = read(r#"{"many":[{},[1]]}"#).unwrap_err();
        assert!(e.starts_with("many[1]: invalid type: sequence"), "{e}");
        let e = read(r#"{"many":[{"a":null}]}"#).unwrap_err();
        assert!(e.starts_with("many[0].a: invalid type: null"), "{e}");
        assert!(read(r#"{"one":null}"#)
            .unwrap_err()
            .starts_with("one: invalid type: null"));
        assert!(read(r#"{"many":null}"#)
            .unwrap_err()
            .starts_with("many: invalid type: null"));
        // duplicate fields stay refused (the derive's own check, through the map)
        let e = read(r#"{"one":{"a":1,"a":2}}"#).unwrap_err();
        assert!(e.contains("duplicate field `a`"), "{e}");
    }
}
