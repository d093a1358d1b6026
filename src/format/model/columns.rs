//! A cell's request records and gauge readings on disk as columns (schema 3): one array a
//! field, times at microsecond precision, a column whose values are all equal written once,
//! a column of absent values left out. Four times smaller than a record an object (schema
//! 2), which still reads: the loader takes either shape, whatever the file's version.

use serde::de::{self, DeserializeOwned, MapAccess, SeqAccess, Visitor};
use serde::{Deserialize, Deserializer, Serialize, Serializer};

use super::{GaugeSample, RequestRecord, TokenSource};

/// One field's values down the rows: each written (an array), or one for every row (the
/// value alone).
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(untagged)]
pub enum Column<T> {
    Each(Vec<T>),
    All(T),
}

/// Read by looking at the value once: an array is `Each`, anything else `All` (serde's
/// untagged enum would buffer every value of every column to try one shape, then the other:
/// most of a cell file's parse time).
impl<'de, T: Deserialize<'de>> Deserialize<'de> for Column<T> {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        deserializer.deserialize_any(ColumnVisitor(std::marker::PhantomData))
    }
}

struct ColumnVisitor<T>(std::marker::PhantomData<T>);

impl<'de, T: Deserialize<'de>> Visitor<'de> for ColumnVisitor<T> {
    type Value = Column<T>;

    fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
        f.write_str("an array of a column's values, or one value for every row")
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Self::Value, A::Error> {
        let mut values = Vec::with_capacity(seq.size_hint().unwrap_or(0).min(4096));
        while let Some(v) = seq.next_element()? {
            values.push(v);
        }
        Ok(Column::Each(values))
    }

    fn visit_unit<E: de::Error>(self) -> Result<Self::Value, E> {
        T::deserialize(de::value::UnitDeserializer::new()).map(Column::All)
    }

    fn visit_none<E: de::Error>(self) -> Result<Self::Value, E> {
        self.visit_unit()
    }

    fn visit_bool<E: de::Error>(self, v: bool) -> Result<Self::Value, E> {
        T::deserialize(Present(de::value::BoolDeserializer::new(v))).map(Column::All)
    }

    fn visit_u64<E: de::Error>(self, v: u64) -> Result<Self::Value, E> {
        T::deserialize(Present(de::value::U64Deserializer::new(v))).map(Column::All)
    }

    fn visit_i64<E: de::Error>(self, v: i64) -> Result<Self::Value, E> {
        T::deserialize(Present(de::value::I64Deserializer::new(v))).map(Column::All)
    }

    fn visit_f64<E: de::Error>(self, v: f64) -> Result<Self::Value, E> {
        T::deserialize(Present(de::value::F64Deserializer::new(v))).map(Column::All)
    }

    fn visit_str<E: de::Error>(self, v: &str) -> Result<Self::Value, E> {
        T::deserialize(Present(de::value::StrDeserializer::new(v))).map(Column::All)
    }
}

/// One present value: read as itself, or as `Some` of itself where an `Option` is asked for
/// (serde's value deserializers answer an `Option` only with `None`).
struct Present<D>(D);

impl<'de, D: Deserializer<'de>> Deserializer<'de> for Present<D> {
    type Error = D::Error;

    fn deserialize_any<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, Self::Error> {
        self.0.deserialize_any(visitor)
    }

    fn deserialize_option<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, Self::Error> {
        visitor.visit_some(self.0)
    }

    fn deserialize_enum<V: Visitor<'de>>(
        self,
        name: &'static str,
        variants: &'static [&'static str],
        visitor: V,
    ) -> Result<V::Value, Self::Error> {
        self.0.deserialize_enum(name, variants, visitor)
    }

    serde::forward_to_deserialize_any! {
        bool i8 i16 i32 i64 i128 u8 u16 u32 u64 u128 f32 f64 char str string
        bytes byte_buf unit unit_struct newtype_struct seq tuple
        tuple_struct map struct identifier ignored_any
    }
}

impl<T: Clone + PartialEq> Column<T> {
    fn of(values: Vec<T>) -> Column<T> {
        if values.len() >= 2 && values.windows(2).all(|w| w[0] == w[1]) {
            Column::All(values[0].clone())
        } else {
            Column::Each(values)
        }
    }

    /// The value of row `i` (`check` has made sure there is one).
    fn at(&self, i: usize) -> T {
        match self {
            Column::Each(v) => v[i].clone(),
            Column::All(x) => x.clone(),
        }
    }

    fn check(&self, rows: usize, name: &str) -> Result<(), String> {
        match self {
            Column::Each(v) if v.len() != rows => Err(format!("column {name}: {} values for {rows} rows", v.len())),
            _ => Ok(()),
        }
    }
}

impl Column<u64> {
    fn zero() -> Self {
        Column::All(0)
    }

    fn is_zero(&self) -> bool {
        match self {
            Column::All(x) => *x == 0,
            Column::Each(v) => v.iter().all(|x| *x == 0),
        }
    }
}

impl<T> Column<Option<T>> {
    fn none() -> Self {
        Column::All(None)
    }

    fn is_none(&self) -> bool {
        match self {
            Column::All(x) => x.is_none(),
            Column::Each(v) => v.iter().all(Option::is_none),
        }
    }
}

/// Seconds at microsecond precision (the clock's own is finer than any figure reads).
fn us(x: f64) -> f64 {
    (x * 1e6).round() / 1e6
}

#[derive(Debug, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
struct RequestColumns {
    rows: usize,
    send_s: Column<f64>,
    #[serde(default = "Column::none", skip_serializing_if = "Column::is_none")]
    first_token_s: Column<Option<f64>>,
    #[serde(default = "Column::none", skip_serializing_if = "Column::is_none")]
    last_token_s: Column<Option<f64>>,
    #[serde(default = "Column::none", skip_serializing_if = "Column::is_none")]
    end_s: Column<Option<f64>>,
    tokens: Column<u64>,
    chunks: Column<u64>,
    window_tokens: Column<u64>,
    #[serde(default = "Column::none", skip_serializing_if = "Column::is_none")]
    window_last_token_s: Column<Option<f64>>,
    token_source: Column<TokenSource>,
    #[serde(default = "Column::none", skip_serializing_if = "Column::is_none")]
    prompt_tokens: Column<Option<u32>>,
    #[serde(default = "Column::none", skip_serializing_if = "Column::is_none")]
    cached_prompt_tokens: Column<Option<u64>>,
    #[serde(default = "Column::none", skip_serializing_if = "Column::is_none")]
    finish_reason: Column<Option<String>>,
    #[serde(default = "Column::none", skip_serializing_if = "Column::is_none")]
    error: Column<Option<String>>,
    #[serde(default = "Column::none", skip_serializing_if = "Column::is_none")]
    server_decode_tps: Column<Option<f64>>,
    #[serde(default = "Column::zero", skip_serializing_if = "Column::is_zero")]
    reasoning_chunks: Column<u64>,
    #[serde(default = "Column::none", skip_serializing_if = "Column::is_none")]
    first_answer_s: Column<Option<f64>>,
    #[serde(default = "Column::zero", skip_serializing_if = "Column::is_zero")]
    turn: Column<u64>,
}

impl RequestColumns {
    fn of(records: &[RequestRecord]) -> RequestColumns {
        let col = |f: &dyn Fn(&RequestRecord) -> f64| Column::of(records.iter().map(|r| us(f(r))).collect());
        let opt =
            |f: &dyn Fn(&RequestRecord) -> Option<f64>| Column::of(records.iter().map(|r| f(r).map(us)).collect());
        macro_rules! plain {
            ($field:ident) => {
                Column::of(records.iter().map(|r| r.$field.clone()).collect())
            };
        }
        RequestColumns {
            rows: records.len(),
            send_s: col(&|r| r.send_s),
            first_token_s: opt(&|r| r.first_token_s),
            last_token_s: opt(&|r| r.last_token_s),
            end_s: opt(&|r| r.end_s),
            tokens: plain!(tokens),
            chunks: plain!(chunks),
            window_tokens: plain!(window_tokens),
            window_last_token_s: opt(&|r| r.window_last_token_s),
            token_source: plain!(token_source),
            prompt_tokens: plain!(prompt_tokens),
            cached_prompt_tokens: plain!(cached_prompt_tokens),
            finish_reason: plain!(finish_reason),
            error: plain!(error),
            server_decode_tps: opt(&|r| r.server_decode_tps),
            reasoning_chunks: plain!(reasoning_chunks),
            first_answer_s: opt(&|r| r.first_answer_s),
            turn: plain!(turn),
        }
    }

    fn records(self) -> Result<Vec<RequestRecord>, String> {
        let n = self.rows;
        self.send_s.check(n, "send_s")?;
        self.first_token_s.check(n, "first_token_s")?;
        self.last_token_s.check(n, "last_token_s")?;
        self.end_s.check(n, "end_s")?;
        self.tokens.check(n, "tokens")?;
        self.chunks.check(n, "chunks")?;
        self.window_tokens.check(n, "window_tokens")?;
        self.window_last_token_s.check(n, "window_last_token_s")?;
        self.token_source.check(n, "token_source")?;
        self.prompt_tokens.check(n, "prompt_tokens")?;
        self.cached_prompt_tokens.check(n, "cached_prompt_tokens")?;
        self.finish_reason.check(n, "finish_reason")?;
        self.error.check(n, "error")?;
        self.server_decode_tps.check(n, "server_decode_tps")?;
        self.reasoning_chunks.check(n, "reasoning_chunks")?;
        self.first_answer_s.check(n, "first_answer_s")?;
        self.turn.check(n, "turn")?;
        Ok((0..n)
            .map(|i| RequestRecord {
                send_s: self.send_s.at(i),
                first_token_s: self.first_token_s.at(i),
                last_token_s: self.last_token_s.at(i),
                end_s: self.end_s.at(i),
                tokens: self.tokens.at(i),
                chunks: self.chunks.at(i),
                window_tokens: self.window_tokens.at(i),
                window_last_token_s: self.window_last_token_s.at(i),
                token_source: self.token_source.at(i),
                prompt_tokens: self.prompt_tokens.at(i),
                cached_prompt_tokens: self.cached_prompt_tokens.at(i),
                finish_reason: self.finish_reason.at(i),
                error: self.error.at(i),
                server_decode_tps: self.server_decode_tps.at(i),
                reasoning_chunks: self.reasoning_chunks.at(i),
                first_answer_s: self.first_answer_s.at(i),
                turn: self.turn.at(i),
            })
            .collect())
    }
}

#[derive(Debug, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
struct GaugeColumns {
    rows: usize,
    t_s: Column<f64>,
    running: Column<f64>,
    #[serde(default = "Column::none", skip_serializing_if = "Column::is_none")]
    waiting: Column<Option<f64>>,
}

impl GaugeColumns {
    fn of(samples: &[GaugeSample]) -> GaugeColumns {
        GaugeColumns {
            rows: samples.len(),
            t_s: Column::of(samples.iter().map(|g| us(g.t_s)).collect()),
            running: Column::of(samples.iter().map(|g| g.running).collect()),
            waiting: Column::of(samples.iter().map(|g| g.waiting).collect()),
        }
    }

    fn samples(self) -> Result<Vec<GaugeSample>, String> {
        let n = self.rows;
        self.t_s.check(n, "t_s")?;
        self.running.check(n, "running")?;
        self.waiting.check(n, "waiting")?;
        Ok((0..n)
            .map(|i| GaugeSample { t_s: self.t_s.at(i), running: self.running.at(i), waiting: self.waiting.at(i) })
            .collect())
    }
}

/// A list of records read from either shape: an array of objects (schema 2) or columns.
fn rows_or_columns<'de, D, T, C>(d: D, columns: fn(C) -> Result<Vec<T>, String>) -> Result<Vec<T>, D::Error>
where
    D: Deserializer<'de>,
    T: DeserializeOwned,
    C: DeserializeOwned,
{
    struct Either<T, C>(fn(C) -> Result<Vec<T>, String>);
    impl<'de, T: DeserializeOwned, C: DeserializeOwned> Visitor<'de> for Either<T, C> {
        type Value = Vec<T>;
        fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
            f.write_str("columns (an object of arrays) or a list of records")
        }
        fn visit_seq<A: SeqAccess<'de>>(self, seq: A) -> Result<Vec<T>, A::Error> {
            Vec::<T>::deserialize(de::value::SeqAccessDeserializer::new(seq))
        }
        fn visit_map<A: MapAccess<'de>>(self, map: A) -> Result<Vec<T>, A::Error> {
            let c = C::deserialize(de::value::MapAccessDeserializer::new(map))?;
            (self.0)(c).map_err(de::Error::custom)
        }
    }
    d.deserialize_any(Either(columns))
}

/// `#[serde(with = "columns::requests")]`.
pub mod requests {
    use super::*;

    pub fn serialize<S: Serializer>(records: &[RequestRecord], s: S) -> Result<S::Ok, S::Error> {
        RequestColumns::of(records).serialize(s)
    }

    pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<Vec<RequestRecord>, D::Error> {
        rows_or_columns(d, RequestColumns::records)
    }
}

/// `#[serde(with = "columns::gauge")]`.
pub mod gauge {
    use super::*;

    pub fn serialize<S: Serializer>(samples: &[GaugeSample], s: S) -> Result<S::Ok, S::Error> {
        GaugeColumns::of(samples).serialize(s)
    }

    pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<Vec<GaugeSample>, D::Error> {
        rows_or_columns(d, GaugeColumns::samples)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn record(i: u64) -> RequestRecord {
        RequestRecord {
            send_s: 0.1 * i as f64 + 0.000_000_4,
            first_token_s: Some(0.2 * i as f64),
            last_token_s: (i != 1).then_some(1.5),
            end_s: Some(1.6),
            tokens: 10 + i,
            chunks: 10,
            window_tokens: 8,
            window_last_token_s: Some(1.5),
            token_source: TokenSource::Usage,
            prompt_tokens: Some(256),
            cached_prompt_tokens: Some(i * 64),
            finish_reason: (i == 2).then(|| "length".to_string()),
            error: None,
            server_decode_tps: Some(41.25),
            reasoning_chunks: if i == 1 { 5 } else { 0 },
            first_answer_s: (i == 1).then_some(0.9),
            turn: i,
        }
    }

    #[test]
    fn records_round_trip_through_columns_at_microsecond_precision() {
        let records: Vec<RequestRecord> = (0..3).map(record).collect();
        let text = serde_json::to_string(&RequestColumns::of(&records)).unwrap();
        // Equal values once, absent ones left out, times to the microsecond.
        assert!(text.contains("\"chunks\":10,") && text.contains("\"token_source\":\"usage\""), "{text}");
        assert!(!text.contains("\"error\""), "{text}");
        assert!(
            text.contains("\"reasoning_chunks\":[0,5,0]") && text.contains("\"first_answer_s\":[null,0.9,null]"),
            "{text}"
        );
        assert!(text.contains("\"send_s\":[0.0,0.1,0.2]"), "{text}");
        let back = rows_or_columns(&mut serde_json::Deserializer::from_str(&text), RequestColumns::records).unwrap();
        let rounded: Vec<RequestRecord> =
            records.iter().map(|r| RequestRecord { send_s: us(r.send_s), ..r.clone() }).collect();
        assert_eq!(back, rounded);
        // The schema-2 shape reads too.
        let rows = serde_json::to_string(&records).unwrap();
        let back = rows_or_columns(&mut serde_json::Deserializer::from_str(&rows), RequestColumns::records).unwrap();
        assert_eq!(back, records);
    }

    #[test]
    fn a_column_of_another_length_is_refused_by_name() {
        let text = r#"{"rows":2,"send_s":[0.1],"tokens":1,"chunks":1,"window_tokens":0,"token_source":"usage"}"#;
        let e = rows_or_columns(&mut serde_json::Deserializer::from_str(text), RequestColumns::records).unwrap_err();
        assert!(e.to_string().contains("column send_s: 1 values for 2 rows"), "{e}");
    }
}
