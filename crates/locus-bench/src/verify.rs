//! Comparing a run's result with its sequential reference, element by element and bit
//! for bit.
//!
//! Every kernel's reference performs the same floating-point operations in the same
//! order as its tasks, so results must be identical to the bit: values are compared by
//! their bit patterns ([`f64::to_bits`]), never with `==`, so that `-0.0` differs from
//! `0.0` and a NaN equals only the same NaN. A failed comparison names the first
//! differing element, by its index in the reference's layout (the whole array,
//! row-major), with both values.

use std::fmt;

/// A value compared by its bit pattern.
pub trait Exact: Copy + fmt::Debug {
    /// The value's bits.
    fn bits(self) -> u64;
    /// The value whose bits are `bits` (truncated to the type's width).
    fn from_bits(bits: u64) -> Self;
}

impl Exact for f64 {
    fn bits(self) -> u64 {
        self.to_bits()
    }
    fn from_bits(bits: u64) -> Self {
        f64::from_bits(bits)
    }
}

impl Exact for f32 {
    fn bits(self) -> u64 {
        u64::from(self.to_bits())
    }
    fn from_bits(bits: u64) -> Self {
        f32::from_bits(bits as u32)
    }
}

impl Exact for u64 {
    fn bits(self) -> u64 {
        self
    }
    fn from_bits(bits: u64) -> Self {
        bits
    }
}

impl Exact for u32 {
    fn bits(self) -> u64 {
        u64::from(self)
    }
    fn from_bits(bits: u64) -> Self {
        bits as u32
    }
}

/// The first element where a run's result differs from its reference.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Mismatch {
    /// What was compared: `array`, `centroids`, `assignments`, `datum 3`, ...
    pub what: String,
    /// Index of the element in the reference's layout (the whole array, row-major).
    pub index: usize,
    /// The run's value, with its bits.
    pub got: String,
    /// The reference's value, with its bits.
    pub want: String,
}

impl fmt::Display for Mismatch {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "first mismatch at {}[{}]: got {}, want {}",
            self.what, self.index, self.got, self.want
        )
    }
}

fn show<T: Exact>(v: T) -> String {
    format!("{v:?} (bits {:#x})", v.bits())
}

/// Collects the comparisons of one result, block by block, and keeps the mismatch of
/// the lowest index (blocks may be compared in any order).
#[derive(Debug, Default)]
pub(crate) struct Check {
    first: Option<Mismatch>,
}

impl Check {
    pub(crate) fn new() -> Self {
        Check::default()
    }

    /// Compares the run's `got` with the reference's `want` at `index` of `what`.
    pub(crate) fn element<T: Exact>(&mut self, what: &str, index: usize, got: T, want: T) {
        if got.bits() == want.bits() {
            return;
        }
        if self
            .first
            .as_ref()
            .is_some_and(|m| m.what == what && m.index <= index)
        {
            return;
        }
        if self.first.as_ref().is_some_and(|m| m.what != what) {
            // An earlier comparison (another part of the result) already failed.
            return;
        }
        self.first = Some(Mismatch {
            what: what.to_string(),
            index,
            got: show(got),
            want: show(want),
        });
    }

    /// Compares a block of the result: `got[q]` with `want[index(q)]`.
    pub(crate) fn block<T: Exact>(
        &mut self,
        what: &str,
        got: &[T],
        want: &[T],
        index: impl Fn(usize) -> usize,
    ) {
        for (q, &g) in got.iter().enumerate() {
            let i = index(q);
            match want.get(i) {
                Some(&w) => self.element(what, i, g, w),
                None => self.missing(what, i),
            }
        }
    }

    /// Compares a whole result with its reference, element by element.
    pub(crate) fn all<T: Exact>(&mut self, what: &str, got: &[T], want: &[T]) {
        self.block(what, got, want, |q| q);
        if want.len() > got.len() {
            self.missing(what, got.len());
        }
    }

    /// The result and the reference differ in length at `index`.
    fn missing(&mut self, what: &str, index: usize) {
        if self.first.is_none() {
            self.first = Some(Mismatch {
                what: what.to_string(),
                index,
                got: "no element".into(),
                want: "an element".into(),
            });
        }
    }

    /// The first mismatch, if any.
    pub(crate) fn finish(self) -> Option<Mismatch> {
        self.first
    }
}

/// The first mismatch of `got` against `want`, compared bit for bit.
pub fn first_mismatch<T: Exact>(what: &str, got: &[T], want: &[T]) -> Option<Mismatch> {
    let mut check = Check::new();
    check.all(what, got, want);
    check.finish()
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;

    /// `v` with its lowest bit flipped: one unit in the last place for a float.
    pub(crate) fn flip<T: Exact>(v: T) -> T {
        T::from_bits(v.bits() ^ 1)
    }

    #[test]
    fn floats_are_compared_bit_for_bit() {
        // `==` says these are equal; their bits differ.
        assert!(first_mismatch("a", &[0.0f64], &[-0.0]).is_some());
        assert!(first_mismatch("a", &[0.0f32], &[-0.0]).is_some());
        // `==` says a NaN differs from itself; the same bits are the same value.
        let nan = f64::NAN;
        assert_eq!(first_mismatch("a", &[1.0, nan], &[1.0, nan]), None);
        let other_nan = f64::from_bits(nan.to_bits() | 1);
        let m = first_mismatch("a", &[1.0, nan], &[1.0, other_nan]).unwrap();
        assert_eq!(m.index, 1);
        // One unit in the last place.
        let m = first_mismatch("a", &[1.0, 2.0, 3.0], &[1.0, 2.0, flip(3.0)]).unwrap();
        assert_eq!((m.what.as_str(), m.index), ("a", 2));
        assert!(m.to_string().contains("a[2]"), "{m}");
    }

    #[test]
    fn the_lowest_index_is_reported_whatever_the_block_order() {
        let want = [0u64, 1, 2, 3, 4, 5];
        let mut check = Check::new();
        // Blocks of two, compared last block first; elements 1 and 4 differ.
        check.block("keys", &[4, 50], &want, |q| 4 + q);
        check.block("keys", &[2, 3], &want, |q| 2 + q);
        check.block("keys", &[0, 10], &want, |q| q);
        let m = check.finish().unwrap();
        assert_eq!(m.index, 1);
        assert!(m.got.starts_with("10") && m.want.starts_with('1'), "{m}");
    }

    #[test]
    fn a_shorter_result_is_a_mismatch() {
        let m = first_mismatch("a", &[1u32], &[1, 2]).unwrap();
        assert_eq!(m.index, 1);
        assert!(first_mismatch("a", &[1u32, 2], &[1, 2]).is_none());
    }
}
