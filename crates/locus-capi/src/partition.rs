//! Partitioned data: `locus_partition`.
//!
//! A C datum is a Locus datum of bytes that records its element size, so a partition
//! given in elements is the same partition in bytes: blocks of `block_len * elem_size`
//! bytes, ranges scaled by the element size, and the tiles of a row-major matrix of
//! `cols * elem_size` bytes per row. Each part is a datum handle like any other (freed
//! with `locus_data_free` or with its runtime), declared in accesses as a whole datum;
//! the semantics are the Rust API's (`Runtime::partition`, `docs/guide.md`,
//! "Partitioned data").

use locus::Partition;

use crate::data::{data_of, locus_data, store};
use crate::runtime::{locus_runtime, runtime_of};
use crate::status::{guard, in_call, locus_status, put, CResult, Fail};

/// How to cut a datum (`locus_partition_spec::kind`).
#[repr(C)]
#[allow(non_camel_case_types)]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum locus_partition_kind {
    /// Consecutive parts of `block_len` elements, the last one shorter.
    LOCUS_PARTITION_BLOCKS = 0,
    /// The `range_count` ranges at `ranges`, in that order (they may overlap).
    LOCUS_PARTITION_RANGES = 1,
    /// The `tile_rows x tile_cols` tiles of a row-major `rows x cols` matrix, in
    /// row-major order of tiles; a tile's view holds its elements row after row.
    LOCUS_PARTITION_TILES = 2,
}

/// A range of elements, `begin` included, `end` excluded.
#[repr(C)]
#[allow(non_camel_case_types)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct locus_range {
    /// First element.
    pub begin: usize,
    /// One past the last element.
    pub end: usize,
}

/// A partition, in elements: `kind` (a `locus_partition_kind`) says which fields count.
#[repr(C)]
#[allow(non_camel_case_types)]
#[derive(Clone, Copy, Debug)]
pub struct locus_partition_spec {
    /// A `locus_partition_kind`.
    pub kind: u32,
    /// `LOCUS_PARTITION_BLOCKS`: elements per part (at least 1).
    pub block_len: usize,
    /// `LOCUS_PARTITION_RANGES`: the ranges (NULL only when `range_count` is 0).
    pub ranges: *const locus_range,
    /// `LOCUS_PARTITION_RANGES`: how many ranges.
    pub range_count: usize,
    /// `LOCUS_PARTITION_TILES`: rows of the matrix.
    pub rows: usize,
    /// `LOCUS_PARTITION_TILES`: columns of the matrix.
    pub cols: usize,
    /// `LOCUS_PARTITION_TILES`: rows of a tile (must divide `rows`).
    pub tile_rows: usize,
    /// `LOCUS_PARTITION_TILES`: columns of a tile (must divide `cols`).
    pub tile_cols: usize,
}

fn argument(name: &str, message: String) -> Fail {
    Fail::new(
        locus_status::LOCUS_E_ARGUMENT,
        format!("partition of `{name}`: {message}"),
    )
}

/// `n` elements in bytes, or an error naming `what`.
fn bytes(name: &str, what: &str, n: usize, elem: usize) -> CResult<usize> {
    n.checked_mul(elem)
        .ok_or_else(|| argument(name, format!("{what} = {n} elements overflows")))
}

/// The partition in bytes, and how many parts it makes. The partition is checked in
/// elements first, so that its errors speak of the caller's elements (checked here
/// also so that a caller's array too small for the parts is an error before anything
/// is partitioned).
///
/// # Safety
///
/// `spec.ranges` is NULL or valid for reads of `spec.range_count` ranges.
unsafe fn in_bytes(
    name: &str,
    spec: &locus_partition_spec,
    elem: usize,
    count: usize,
) -> CResult<(Partition, usize)> {
    let config = |message: String| {
        Fail::new(
            locus_status::LOCUS_E_CONFIG,
            format!("partition of `{name}`: {message}"),
        )
    };
    match spec.kind {
        0 => {
            if spec.block_len == 0 {
                return Err(argument(name, "block_len is 0".into()));
            }
            let parts = Partition::blocks(spec.block_len)
                .parts_of(count)
                .map_err(config)?;
            let len = bytes(name, "block_len", spec.block_len, elem)?;
            Ok((Partition::blocks(len), parts))
        }
        1 => {
            let ranges: &[locus_range] = if spec.range_count == 0 {
                &[]
            } else if spec.ranges.is_null() {
                return Err(crate::status::null("spec->ranges"));
            } else {
                // SAFETY: non-NULL and valid for `range_count` ranges by the caller's
                // contract.
                unsafe { std::slice::from_raw_parts(spec.ranges, spec.range_count) }
            };
            let parts = Partition::ranges(ranges.iter().map(|r| r.begin..r.end))
                .parts_of(count)
                .map_err(config)?;
            let scaled = ranges
                .iter()
                .map(|r| {
                    Ok(bytes(name, "a range's begin", r.begin, elem)?
                        ..bytes(name, "a range's end", r.end, elem)?)
                })
                .collect::<CResult<Vec<_>>>()?;
            Ok((Partition::ranges(scaled), parts))
        }
        2 => {
            if spec.tile_rows == 0 || spec.tile_cols == 0 {
                return Err(argument(name, "a tile extent is 0".into()));
            }
            let parts = Partition::tiles(spec.rows, spec.cols, spec.tile_rows, spec.tile_cols)
                .parts_of(count)
                .map_err(config)?;
            let cols = bytes(name, "cols", spec.cols, elem)?;
            let tile_cols = bytes(name, "tile_cols", spec.tile_cols, elem)?;
            Ok((
                Partition::tiles(spec.rows, cols, spec.tile_rows, tile_cols),
                parts,
            ))
        }
        k => Err(argument(name, format!("unknown partition kind {k}"))),
    }
}

/// Cuts `data` into parts as `spec` says (between runs: from inside a task body it is
/// `LOCUS_E_STATE`) and
/// writes a handle for each part to `parts[0..n]`, and `n` to `*count`. `capacity` is
/// the length of `parts`: if it is less than `n`, nothing is partitioned, `*count` is
/// still `n`, and the status is `LOCUS_E_SIZE`, so that a caller can ask for the
/// number first with `capacity` 0. A part's element size is the datum's; its count is
/// its length in elements. Bad partitions (a range past the end, tiles that do not
/// divide the matrix, a kind that does not exist) are `LOCUS_E_ARGUMENT` or
/// `LOCUS_E_CONFIG`, naming the datum.
///
/// # Safety
///
/// `spec` is NULL (an error) or valid for a read, with `spec->ranges` valid for reads
/// of `spec->range_count` ranges when the kind is `LOCUS_PARTITION_RANGES`; `parts` is
/// valid for writes of `capacity` handles (NULL allowed when `capacity` is 0); `count`
/// is NULL (an error) or valid for a write.
#[no_mangle]
pub unsafe extern "C" fn locus_partition(
    runtime: locus_runtime,
    data: locus_data,
    spec: *const locus_partition_spec,
    parts: *mut locus_data,
    capacity: usize,
    count: *mut usize,
) -> locus_status {
    guard(|| {
        if spec.is_null() {
            return Err(crate::status::null("spec"));
        }
        if count.is_null() {
            return Err(crate::status::null("count"));
        }
        if capacity > 0 && parts.is_null() {
            return Err(crate::status::null("parts"));
        }
        if crate::task::in_body() {
            // As the memory calls: not allowed now, rather than a bad configuration.
            return Err(Fail::new(
                locus_status::LOCUS_E_STATE,
                "locus_partition: not allowed inside a task body (partition before the run)",
            ));
        }
        let rt = runtime_of(runtime)?;
        let (whole, elem, elements) = data_of(data, runtime.bits)?;
        // SAFETY: non-NULL, valid for a read by the caller's contract.
        let spec = unsafe { &*spec };
        // SAFETY: forwarded from the caller.
        let (partition, n) = unsafe { in_bytes(whole.name(), spec, elem, elements) }?;
        // SAFETY: `count` checked non-NULL, valid for a write by the caller's contract.
        unsafe { put(count, n, "count") }?;
        if capacity < n {
            return Err(Fail::new(
                locus_status::LOCUS_E_SIZE,
                format!(
                    "partition of `{}`: {n} parts, room for {capacity}",
                    whole.name()
                ),
            ));
        }
        let made = rt
            .partition(&whole, partition)
            .map_err(in_call("locus_partition"))?;
        debug_assert_eq!(made.len(), n, "the part count checked above is Locus's");
        for (i, part) in made.iter().enumerate().take(capacity) {
            let count = part.len() / elem;
            // SAFETY: `i < capacity`, and `parts` is valid for `capacity` handles.
            unsafe { store(part.clone(), elem, count, runtime.bits, parts.add(i)) }?;
        }
        // SAFETY: as above.
        unsafe { put(count, made.len(), "count") }
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bad_kinds_and_zero_extents_are_refused_before_partitioning() {
        let spec = |kind, block_len, tile| locus_partition_spec {
            kind,
            block_len,
            ranges: std::ptr::null(),
            range_count: 0,
            rows: 4,
            cols: 4,
            tile_rows: tile,
            tile_cols: tile,
        };
        // SAFETY: no ranges are read (range_count is 0).
        unsafe {
            assert!(in_bytes("d", &spec(9, 1, 1), 8, 16).is_err());
            assert!(in_bytes("d", &spec(0, 0, 1), 8, 16).is_err());
            assert!(in_bytes("d", &spec(2, 1, 0), 8, 16).is_err());
            let (p, n) = in_bytes("d", &spec(0, 5, 1), 8, 16).unwrap();
            assert_eq!((p, n), (Partition::blocks(40), 4));
            let (p, n) = in_bytes("d", &spec(2, 1, 2), 8, 16).unwrap();
            assert_eq!((p, n), (Partition::tiles(4, 32, 2, 16), 4));
        }
    }

    /// Bad partitions are told in the caller's elements, not in the bytes Locus
    /// partitions (a datum of 4 doubles).
    #[test]
    fn errors_speak_of_elements() {
        let range = [locus_range { begin: 2, end: 2 }];
        let ranges = locus_partition_spec {
            kind: 1,
            block_len: 0,
            ranges: range.as_ptr(),
            range_count: 1,
            rows: 0,
            cols: 0,
            tile_rows: 0,
            tile_cols: 0,
        };
        let tiles = locus_partition_spec {
            kind: 2,
            ranges: std::ptr::null(),
            range_count: 0,
            rows: 2,
            cols: 3,
            tile_rows: 1,
            tile_cols: 1,
            ..ranges
        };
        // SAFETY: `range` holds the one range `ranges` names; `tiles` reads none.
        let (r, t) = unsafe { (in_bytes("x", &ranges, 8, 4), in_bytes("x", &tiles, 8, 4)) };
        let message = |f: CResult<(Partition, usize)>| {
            let f = f.unwrap_err();
            assert_eq!(f.status, locus_status::LOCUS_E_CONFIG);
            f.message
        };
        assert_eq!(
            message(r),
            "partition of `x`: range 2..2 is empty or out of bounds (length 4)"
        );
        assert_eq!(
            message(t),
            "partition of `x`: a 2 x 3 matrix has 6 elements, the datum 4"
        );
    }
}
