//! Problem sizes given on the command line: a named [`Size`], then the generic options
//! (`--size`, `--blocks`, `--block-len`, `--iterations`) and `--param FIELD=VALUE`
//! overrides, turned into one workload's `Params` and checked by its `validate`.
//!
//! # How the generic options map onto a workload
//!
//! A blocked workload cuts each axis of its array (rows and columns, or a 1-D length)
//! into blocks. On every blocked axis:
//!
//! - `--size N` sets the extent of the axis (all axes: a 2-D array becomes `N × N`);
//! - `--block-len L` sets the block extent on the axis (2-D blocks become `L × L`);
//! - `--blocks B` sets the number of blocks on the axis: the block extent becomes
//!   `extent / B` (with `--block-len L` and no `--size`, the extent becomes `B × L`).
//!
//! An option not given keeps the named size's value, so `--size N` alone keeps the
//! block extents (and so the task granularity) and changes the number of blocks.
//! `--iterations` sets the iteration count. The per-workload fields are listed in each
//! module's documentation; workloads without blocked axes (`random-dag`, `overhead`)
//! map `--size` (and `overhead` `--iterations`) onto one field and refuse the others.
//!
//! `--param FIELD=VALUE` sets any numeric (or, for `random-dag`'s `hints`, boolean)
//! field of the workload's `Params` by its serialised name, and wins over the generic
//! options for that field: `--size 256 --param rows=128` is 128 × 256, `--block-len 8
//! --param block_cols=16` gives 8 × 16 blocks, and `--blocks 4 --param rows=64` cuts the
//! 64 rows into 4 blocks. After all overrides the workload's `Params::validate` checks
//! every constraint its code relies on, and its message names the option that sets
//! the offending field.
//!
//! Sizes are bounded so that no count overflows and no run exhausts memory before its
//! first task: one array holds at most [`MAX_ELEMENTS`] elements (and its bytes fit in
//! `usize`), and a workload cuts an array into at most [`MAX_BLOCKS`] blocks (or
//! creates that many data or tasks up front). The products are computed with checked
//! arithmetic, and a refusal names the fields and their values, e.g. `jacobi-2d: rows
//! (--size) / block_rows (--block-len) × cols (--size) / block_cols (--block-len) = 8192
//! × 8192 = 67108864 blocks, more than the limit of 2^24`.
//!
//! Work that could not finish is refused the same way: a run describes at most
//! [`MAX_TASKS`] tasks (an iterative workload: its blocks times its iterations), and
//! sweeps at most [`MAX_SWEPT_BYTES`] (its data's bytes times its iterations).

use serde::de::DeserializeOwned;
use serde::Serialize;
use serde_json::{Map, Value};

use crate::{Control, Size};

/// Most elements of one array of a workload (2^48): bounds the index arithmetic of the
/// initial values and the references well inside 64 bits.
pub const MAX_ELEMENTS: u128 = 1 << 48;

/// Most blocks of one array, and most data or tasks a workload creates before its
/// tasks run (random-dag's data and tasks, overhead's chains and fan): 2^24. Each is a
/// datum or task record of its own, so more would exhaust the memory of the machine
/// before the first task runs, whatever the data's size.
pub const MAX_BLOCKS: u128 = 1 << 24;

/// Most tasks one run of a workload describes (2^32): at the runtime's cost of about a
/// microsecond per task (`docs/guide.md`, "How large a task should be"), more than an
/// hour of overhead alone; larger counts are refused rather than left to run for days.
pub const MAX_TASKS: u128 = 1 << 32;

/// Most bytes a workload's iterations sweep (2^48, 256 TiB: its data's bytes times its
/// iterations): hours of memory traffic on any machine; more is refused rather than
/// left to run for days.
pub const MAX_SWEPT_BYTES: u128 = 1 << 48;

/// A problem size: a named [`Size`], then explicit overrides (see the [module
/// docs](self)).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct SizeSpec {
    /// The named size the overrides apply to.
    pub base: Size,
    /// `--size N`: the extent of every blocked axis.
    pub size: Option<usize>,
    /// `--blocks B`: blocks along every blocked axis.
    pub blocks: Option<usize>,
    /// `--block-len L`: the block extent along every blocked axis.
    pub block_len: Option<usize>,
    /// `--iterations N`.
    pub iterations: Option<usize>,
    /// `--param FIELD=VALUE`, in order.
    pub fields: Vec<(String, String)>,
}

impl From<Size> for SizeSpec {
    fn from(base: Size) -> Self {
        SizeSpec {
            base,
            ..SizeSpec::default()
        }
    }
}

/// One blocked axis of a workload: the fields holding its extent and its block extent.
#[derive(Clone, Copy, Debug)]
pub(crate) enum Axis {
    /// The axis's extent and block extent are fields (`rows`, `block_rows`).
    Extent(&'static str, &'static str),
    /// The number of blocks and the block extent are fields (`jacobi-1d`: `blocks`,
    /// `block_len`); the extent is their product.
    Count(&'static str, &'static str),
}

/// How the generic options map onto a workload's fields.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Options {
    /// The workload's name, for messages.
    pub name: &'static str,
    /// Blocked axes: `--size`, `--blocks` and `--block-len` apply to each.
    pub axes: &'static [Axis],
    /// The field `--size` sets when there are no blocked axes.
    pub size: Option<&'static str>,
    /// The field `--iterations` sets.
    pub iterations: Option<&'static str>,
}

impl Options {
    /// The option that sets `field`, for messages: `rows (--size)`, `dims (--param dims)`.
    pub fn label(&self, field: &str) -> String {
        let mut by = Vec::new();
        for axis in self.axes {
            match *axis {
                Axis::Extent(n, _) if n == field => by.push("--size"),
                Axis::Extent(_, b) | Axis::Count(_, b) if b == field => by.push("--block-len"),
                Axis::Count(k, _) if k == field => by.push("--blocks"),
                _ => {}
            }
        }
        if self.size == Some(field) {
            by.push("--size");
        }
        if self.iterations == Some(field) {
            by.push("--iterations");
        }
        match by.first() {
            Some(option) => format!("{field} ({option})"),
            None => format!("{field} (--param {field})"),
        }
    }

    /// `Err` unless `value` is at least 1.
    pub fn positive(&self, field: &str, value: usize) -> Result<(), String> {
        if value == 0 {
            Err(format!(
                "{}: {} must be at least 1",
                self.name,
                self.label(field)
            ))
        } else {
            Ok(())
        }
    }

    /// `Err` unless both are at least 1 and `block` divides `extent`.
    pub fn divides(
        &self,
        (n, extent): (&str, usize),
        (b, block): (&str, usize),
    ) -> Result<(), String> {
        self.positive(n, extent)?;
        self.positive(b, block)?;
        if extent % block != 0 {
            return Err(format!(
                "{}: {} = {extent} is not a multiple of {} = {block}",
                self.name,
                self.label(n),
                self.label(b)
            ));
        }
        Ok(())
    }

    /// `Err` if the elements of one array of `T` with these extents (fields and values)
    /// exceed [`MAX_ELEMENTS`], or its bytes do not fit in `usize`. The message names
    /// the fields and their values.
    pub fn elements<T>(&self, extents: &[(&str, usize)]) -> Result<(), String> {
        let factors: Vec<(String, usize)> =
            extents.iter().map(|&(f, v)| (self.label(f), v)).collect();
        let total = self.product("elements", &factors, MAX_ELEMENTS, "2^48")?;
        let bytes = total.checked_mul(std::mem::size_of::<T>() as u128);
        match bytes.and_then(|b| usize::try_from(b).ok()) {
            Some(_) => Ok(()),
            None => Err(format!(
                "{}: {} = {total} elements of {} bytes do not fit in this machine's address space",
                self.name,
                labels(&factors),
                std::mem::size_of::<T>()
            )),
        }
    }

    /// `Err` if the blocks `(extent field, extent, block field, block)` cut along each
    /// axis (`extent / block` each; the blocks must divide) exceed [`MAX_BLOCKS`].
    pub fn blocks(&self, axes: &[(&str, usize, &str, usize)]) -> Result<(), String> {
        let factors: Vec<(String, usize)> = axes
            .iter()
            .map(|&(n, extent, b, block)| {
                (
                    format!("{} / {}", self.label(n), self.label(b)),
                    extent.checked_div(block).unwrap_or(0),
                )
            })
            .collect();
        self.product("blocks", &factors, MAX_BLOCKS, "2^24")
            .map(drop)
    }

    /// `Err` if the things counted by `fields` (values multiplied) exceed
    /// [`MAX_BLOCKS`]: what a workload creates before its tasks run.
    pub fn count(&self, what: &str, fields: &[(&str, usize)]) -> Result<(), String> {
        let factors: Vec<(String, usize)> =
            fields.iter().map(|&(f, v)| (self.label(f), v)).collect();
        self.product(what, &factors, MAX_BLOCKS, "2^24").map(drop)
    }

    /// `Err` if the tasks counted by `fields` (values multiplied) exceed
    /// [`MAX_TASKS`].
    pub fn tasks(&self, fields: &[(&str, usize)]) -> Result<(), String> {
        let factors: Vec<(String, usize)> =
            fields.iter().map(|&(f, v)| (self.label(f), v)).collect();
        self.product("tasks", &factors, MAX_TASKS, "2^32").map(drop)
    }

    /// The product of the factors' values, computed without overflow; `Err` naming the
    /// factors and values if it exceeds `limit`.
    fn product(
        &self,
        what: &str,
        factors: &[(String, usize)],
        limit: u128,
        limit_text: &str,
    ) -> Result<u128, String> {
        let total = factors
            .iter()
            .try_fold(1u128, |acc, &(_, v)| acc.checked_mul(v as u128));
        match total {
            Some(total) if total <= limit => Ok(total),
            _ => {
                let values = factors
                    .iter()
                    .map(|(_, v)| v.to_string())
                    .collect::<Vec<_>>()
                    .join(" × ");
                let total = total.map_or_else(|| "more than 2^128".to_string(), |t| t.to_string());
                let equals = if factors.len() > 1 {
                    format!("{values} = {total}")
                } else {
                    total
                };
                Err(format!(
                    "{}: {} = {equals} {what}, more than the limit of {limit_text}",
                    self.name,
                    labels(factors)
                ))
            }
        }
    }
}

/// `rows (--size) × cols (--size)`.
fn labels(factors: &[(String, usize)]) -> String {
    factors
        .iter()
        .map(|(label, _)| label.as_str())
        .collect::<Vec<_>>()
        .join(" × ")
}

/// A workload's parameters, as the size specification builds them.
pub(crate) trait KernelParams: Serialize + DeserializeOwned {
    /// How the generic options map onto the fields.
    const OPTIONS: Options;

    /// The parameters of a named size.
    fn named(size: Size) -> Self;

    /// Every constraint the workload relies on.
    fn validate(&self) -> Result<(), String>;

    /// Bytes of the workload's data (one version of its main arrays).
    fn data_bytes(&self) -> u64;
}

/// Implements [`KernelParams`] for the `Params` of a workload module, which has
/// `tiny()`, `Default` (the small size), `validate()` and, unless `paper: none` (then
/// `Paper` and `PaperSgi` give the defaults), `paper()` and `paper_sgi()` (paper 1
/// Table 3 for the Opteron-64 and for the SGI-192).
macro_rules! kernel_params {
    ($options:expr, paper: none, bytes: |$p:ident| $bytes:expr) => {
        kernel_params!(@impl $options, Params::default(), Params::default(), |$p| $bytes);
    };
    ($options:expr, bytes: |$p:ident| $bytes:expr) => {
        kernel_params!(@impl $options, Params::paper(), Params::paper_sgi(), |$p| $bytes);
    };
    (@impl $options:expr, $paper:expr, $paper_sgi:expr, |$p:ident| $bytes:expr) => {
        impl $crate::size::KernelParams for Params {
            const OPTIONS: $crate::size::Options = $options;

            fn named(size: $crate::Size) -> Self {
                match size {
                    $crate::Size::Tiny => Params::tiny(),
                    $crate::Size::Small => Params::default(),
                    $crate::Size::Paper => $paper,
                    $crate::Size::PaperSgi => $paper_sgi,
                }
            }

            fn validate(&self) -> Result<(), String> {
                Params::validate(self)
            }

            fn data_bytes(&self) -> u64 {
                let $p = self;
                $bytes
            }
        }
    };
}
pub(crate) use kernel_params;

/// Bytes of an array of `T` with these extents (saturating).
pub(crate) fn bytes<T>(extents: &[usize]) -> u64 {
    extents
        .iter()
        .fold(std::mem::size_of::<T>() as u64, |acc, &e| {
            acc.saturating_mul(e as u64)
        })
}

/// The parameters `spec` names for the workload of `P` under `control`: the named size,
/// then the `--param` fields, then the generic options on the fields `--param` left;
/// validated.
pub(crate) fn resolve<P: KernelParams>(spec: &SizeSpec, control: Control) -> Result<P, String> {
    let o = P::OPTIONS;
    let name = o.name;
    let mut object = match serde_json::to_value(P::named(spec.base)) {
        Ok(Value::Object(m)) => m,
        _ => unreachable!("parameters serialise to a JSON object"),
    };
    // Paper 3's KASTORS Jacobi has a paper size of its own: `--affinity` with a paper
    // size starts from it, not from paper 1's.
    if name == "jacobi-2d" && spec.base.is_paper() {
        if let Some((_, mode)) = spec.fields.iter().find(|(k, _)| k == "--affinity") {
            let mode: crate::affinity::AffinityMode =
                serde_json::from_value(Value::String(mode.clone()))
                    .map_err(|_| format!("{name}: --affinity {}: not a mode", one_line(mode)))?;
            if let Ok(Value::Object(m)) =
                serde_json::to_value(crate::jacobi_2d::Params::kastors(mode))
            {
                object = m;
            }
        }
    }
    let mut by_param: Vec<&str> = Vec::new();
    for (key, value) in &spec.fields {
        set_field(&o, &mut object, key, value)?;
        by_param.push(key);
    }
    let by_param = |field: &str| by_param.contains(&field);
    // A generic option sets a field unless `--param` set it: the specific one wins.
    let set = |object: &mut Map<String, Value>, field: &str, v: usize| {
        if !by_param(field) {
            object.insert(field.to_string(), Value::from(v as u64));
        }
    };
    let generic = [
        ("--size", spec.size),
        ("--blocks", spec.blocks),
        ("--block-len", spec.block_len),
        ("--iterations", spec.iterations),
    ];
    for (option, value) in generic {
        if value == Some(0) {
            return Err(format!("{name}: {option} must be at least 1"));
        }
    }
    if o.axes.is_empty() {
        for (option, value) in &generic[1..3] {
            if value.is_some() {
                return Err(format!(
                    "{name}: {option} means nothing for {name} (it has no blocks){}",
                    o.size
                        .map(|f| format!("; --size sets {f}"))
                        .unwrap_or_default()
                ));
            }
        }
        match (o.size, spec.size) {
            (Some(field), Some(v)) => set(&mut object, field, v),
            (None, Some(_)) => return Err(format!("{name}: --size means nothing for {name}")),
            (_, None) => {}
        }
    }
    for axis in o.axes {
        let (extent, block) = axis_values(name, &object, *axis)?;
        // The options as they apply to this axis: a field `--param` set stays as set
        // (a block count set by `--param` acts as `--blocks`).
        let (size, blocks, block_len) = match *axis {
            Axis::Extent(n, b) => (
                spec.size.filter(|_| !by_param(n)),
                spec.blocks,
                spec.block_len.filter(|_| !by_param(b)),
            ),
            Axis::Count(k, b) => (
                spec.size,
                if by_param(k) {
                    Some(extent / block.max(1))
                } else {
                    spec.blocks
                },
                spec.block_len.filter(|_| !by_param(b)),
            ),
        };
        let (n, b) = match (size, blocks, block_len) {
            (Some(s), Some(k), Some(l)) => {
                if s as u128 != k as u128 * l as u128 {
                    return Err(format!(
                        "{name}: --size {s} is not --blocks {k} × --block-len {l}"
                    ));
                }
                (s, l)
            }
            (Some(s), Some(k), None) => (s, per_block(name, s, &format!("--size {s}"), k)?),
            (None, Some(k), None) => (
                extent,
                per_block(name, extent, &extent_label(&o, *axis), k)?,
            ),
            (None, Some(k), Some(l)) => match k.checked_mul(l) {
                Some(n) => (n, l),
                None => return Err(format!("{name}: --blocks {k} × --block-len {l} overflows")),
            },
            (s, None, l) => (s.unwrap_or(extent), l.unwrap_or(block)),
        };
        match *axis {
            Axis::Extent(nf, bf) => {
                set(&mut object, nf, n);
                set(&mut object, bf, b);
            }
            Axis::Count(kf, bf) => {
                o.positive(bf, b)?;
                if n % b != 0 {
                    return Err(format!(
                        "{name}: --size {n} is not a multiple of {} = {b}",
                        o.label(bf)
                    ));
                }
                set(&mut object, kf, n / b);
                set(&mut object, bf, b);
            }
        }
    }
    if let Some(v) = spec.iterations {
        match o.iterations {
            Some(field) => set(&mut object, field, v),
            None => {
                return Err(format!(
                    "{name}: --iterations means nothing for {name} (it has no iterations)"
                ))
            }
        }
    }
    // Workloads with a control program have a `control` field.
    if let Some(field) = object.get_mut("control") {
        *field = serde_json::to_value(control).expect("a control program serialises");
    }
    let p: P = serde_json::from_value(Value::Object(object))
        .map_err(|e| format!("{name}: bad parameters: {e}"))?;
    p.validate()?;
    Ok(p)
}

/// `Err` unless a workload's iterations fit the bounds of work that can finish: its
/// blocks (one task each per iteration) times its iterations at most [`MAX_TASKS`], its
/// data's bytes times its iterations at most [`MAX_SWEPT_BYTES`]. Every iterative
/// workload's `Params::validate` ends with it.
pub(crate) fn finishes<P: KernelParams>(p: &P) -> Result<(), String> {
    let o = P::OPTIONS;
    let Some(field) = o.iterations else {
        return Ok(());
    };
    let Ok(Value::Object(object)) = serde_json::to_value(p) else {
        unreachable!("parameters serialise to a JSON object")
    };
    let data_bytes = p.data_bytes();
    let get = |f: &str| object.get(f).and_then(Value::as_u64).unwrap_or(0) as usize;
    let iterations = (o.label(field), get(field));
    let mut blocks = Vec::new();
    for axis in o.axes {
        match *axis {
            Axis::Extent(n, b) => blocks.push((
                format!("{} / {}", o.label(n), o.label(b)),
                get(n).checked_div(get(b)).unwrap_or(0),
            )),
            Axis::Count(k, _) => blocks.push((o.label(k), get(k))),
        }
    }
    if !blocks.is_empty() {
        blocks.push(iterations.clone());
        o.product("tasks", &blocks, MAX_TASKS, "2^32")?;
    }
    let bytes = usize::try_from(data_bytes).unwrap_or(usize::MAX);
    o.product(
        "bytes swept",
        &[("bytes of data".to_string(), bytes), iterations],
        MAX_SWEPT_BYTES,
        "2^48",
    )
    .map(drop)
}

/// What holds an axis's extent, for messages: `rows (--size)`, or for a [`Axis::Count`]
/// axis `blocks × block_len`.
fn extent_label(o: &Options, axis: Axis) -> String {
    match axis {
        Axis::Extent(n, _) => o.label(n),
        Axis::Count(k, b) => format!("{k} × {b}"),
    }
}

/// `(extent, block extent)` of an axis in `object`; an extent of a block count times a
/// block extent that overflows is an error.
fn axis_values(
    name: &str,
    object: &Map<String, Value>,
    axis: Axis,
) -> Result<(usize, usize), String> {
    let get = |f: &str| {
        object
            .get(f)
            .and_then(Value::as_u64)
            .expect("axis fields are numbers") as usize
    };
    match axis {
        Axis::Extent(n, b) => Ok((get(n), get(b))),
        Axis::Count(k, b) => {
            let (count, len) = (get(k), get(b));
            match count.checked_mul(len) {
                Some(extent) => Ok((extent, len)),
                None => Err(format!(
                    "{name}: {k} {count} × {b} {len} overflows: no datum holds that many \
                     elements"
                )),
            }
        }
    }
}

/// The block extent of `blocks` blocks over `extent`.
fn per_block(name: &str, extent: usize, what: &str, blocks: usize) -> Result<usize, String> {
    // No blocks (`--param blocks=0` on a block-count axis) cut nothing.
    if blocks == 0 {
        return Err(format!("{name}: the number of blocks must be at least 1"));
    }
    if extent % blocks != 0 {
        return Err(format!(
            "{name}: --blocks {blocks} does not divide {what} = {extent}"
        ));
    }
    Ok(extent / blocks)
}

/// `text` with control characters, Unicode line separators and the bidirectional
/// formatting characters escaped (`\n`, `\u{202e}`), so that a message or a table
/// quoting what a user typed, or what a file holds, stays on one line and shows the
/// text in its order: the characters of Unicode's "Bidi_Control" property (UAX #9,
/// "Unicode Bidirectional Algorithm", table 4) reorder what follows them on a terminal.
///
/// ```
/// assert_eq!(locus_bench::size::one_line("a\nb\u{202e}c"), "a\\nb\\u{202e}c");
/// ```
pub fn one_line(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        let bidi = matches!(c, '\u{061c}' | '\u{200e}' | '\u{200f}' | '\u{202a}'..='\u{202e}' | '\u{2066}'..='\u{2069}');
        if c.is_control() || c == '\u{2028}' || c == '\u{2029}' || bidi {
            out.extend(c.escape_default());
        } else {
            out.push(c);
        }
    }
    out
}

/// Sets `key` to `value` in the parameters, keeping the field's JSON type.
fn set_field(
    o: &Options,
    object: &mut Map<String, Value>,
    key: &str,
    value: &str,
) -> Result<(), String> {
    let name = o.name;
    let (shown_key, shown_value) = (one_line(key), one_line(value));
    // The options of their own (`--affinity MODE`, `--matrix FILE`) come as
    // `--NAME=VALUE` and set the text field NAME of the workloads that have one.
    if let Some(option) = key.strip_prefix("--") {
        return match object.get(option) {
            Some(Value::String(_) | Value::Null) => {
                object.insert(option.to_string(), Value::String(value.to_string()));
                Ok(())
            }
            _ => Err(format!(
                "{name}: --{} means nothing for {name}",
                one_line(option)
            )),
        };
    }
    let fields = || {
        object
            .iter()
            .filter(|(_, v)| !v.is_string() && !v.is_null())
            .map(|(k, _)| k.as_str())
            .collect::<Vec<_>>()
            .join(", ")
    };
    let new = match object.get(key) {
        None => {
            return Err(format!(
                "{name}: unknown --param `{shown_key}` (fields: {}; size=tiny|small|paper)",
                fields()
            ))
        }
        Some(Value::String(_) | Value::Null) => {
            return Err(format!("{name}: --param {shown_key}: use --{shown_key}"));
        }
        Some(Value::Bool(_)) => match value {
            "true" => Value::Bool(true),
            "false" => Value::Bool(false),
            _ => {
                return Err(format!(
                    "{name}: --param {shown_key}={shown_value}: expected true or false"
                ))
            }
        },
        Some(_) => match value.parse::<u64>() {
            Ok(v) if usize::try_from(v).is_ok() => Value::from(v),
            _ => {
                return Err(format!(
                    "{name}: --param {shown_key}={shown_value}: expected a non-negative integer"
                ))
            }
        },
    };
    object.insert(key.to_string(), new);
    Ok(())
}

#[cfg(test)]
mod tests {
    use crate::{Control, Size, SizeSpec, Workload};

    fn params(name: &str, size: Size) -> serde_json::Value {
        Workload::new(name, &SizeSpec::from(size), Control::Sequential)
            .unwrap()
            .params()
    }

    /// Paper 1 Table 3 tunes the block sizes per machine, and runs blur-roberts on a
    /// larger image on the SGI-192.
    #[test]
    fn paper_sizes_follow_the_machine() {
        assert_eq!(Size::paper_for("sgi-uv2000"), Size::PaperSgi);
        assert_eq!(Size::paper_for("opteron-64"), Size::Paper);
        assert_eq!(Size::paper_for("4x2"), Size::Paper);
        let (o, s) = (
            params("jacobi-2d", Size::Paper),
            params("jacobi-2d", Size::PaperSgi),
        );
        assert_eq!(
            (o["block_rows"].as_u64(), o["block_cols"].as_u64()),
            (Some(1 << 10), Some(1 << 6))
        );
        assert_eq!(
            (s["block_rows"].as_u64(), s["block_cols"].as_u64()),
            (Some(1 << 8), Some(1 << 8))
        );
        assert_eq!(o["rows"], s["rows"]);
        let (o, s) = (
            params("blur-roberts", Size::Paper),
            params("blur-roberts", Size::PaperSgi),
        );
        assert_eq!(
            (o["rows"].as_u64(), s["rows"].as_u64()),
            (Some(1 << 15), Some(1 << 16))
        );
        assert_eq!(s["block_rows"].as_u64(), Some(1 << 10));
        assert_eq!(
            params("bitonic", Size::PaperSgi)["block_len"].as_u64(),
            Some(1 << 17)
        );
        assert_eq!(
            params("seidel-3d", Size::PaperSgi)["block_rows"].as_u64(),
            Some(1 << 8)
        );
        assert_eq!("paper-sgi".parse::<Size>(), Ok(Size::PaperSgi));
    }
}
