//! Fallible allocation of the kernels' own buffers: initial data, sequential references
//! and the vectors of the verification.
//!
//! Their sizes come from the user (`--size`, `--param`), so a size the host cannot hold
//! (or that an address-space limit forbids) must be an error, as it is for the runtime's
//! pools, never an abort of the process through the global allocator. Every such
//! buffer is reserved with `try_reserve_exact` first; a refusal is
//! [`Error::OutOfMemory`](crate::Error::OutOfMemory), naming the buffer and its bytes.

use crate::Error;

/// An empty vector with room for `len` elements of `T`, or the error naming `what`.
pub(crate) fn with_capacity<T>(what: &str, len: usize) -> Result<Vec<T>, Error> {
    let mut v = Vec::new();
    v.try_reserve_exact(len).map_err(|_| Error::OutOfMemory {
        what: what.to_string(),
        bytes: (len as u128 * std::mem::size_of::<T>() as u128).min(u64::MAX as u128) as u64,
    })?;
    Ok(v)
}

/// `len` copies of `value` (the fallible `vec![value; len]`).
pub(crate) fn filled<T: Clone>(what: &str, len: usize, value: T) -> Result<Vec<T>, Error> {
    let mut v = with_capacity(what, len)?;
    v.resize(len, value);
    Ok(v)
}

/// The `len` items of `items` (the fallible `collect()` of an iterator of known
/// length); items beyond `len` are not taken.
pub(crate) fn collected<T>(
    what: &str,
    len: usize,
    items: impl IntoIterator<Item = T>,
) -> Result<Vec<T>, Error> {
    let mut v = with_capacity(what, len)?;
    v.extend(items.into_iter().take(len));
    Ok(v)
}

/// A copy of `values` (the fallible `to_vec()` / `clone()`).
pub(crate) fn copied<T: Clone>(what: &str, values: &[T]) -> Result<Vec<T>, Error> {
    let mut v = with_capacity(what, values.len())?;
    v.extend_from_slice(values);
    Ok(v)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sizes_the_host_cannot_hold_are_errors() {
        match filled::<f64>("the reference's array", usize::MAX / 16, 0.0) {
            Err(Error::OutOfMemory { what, bytes }) => {
                assert_eq!(what, "the reference's array");
                assert_eq!(bytes, (usize::MAX / 16 * 8) as u64);
            }
            other => panic!("expected OutOfMemory, got {:?}", other.map(|v| v.len())),
        }
        let e = collected::<u64>("keys", usize::MAX / 8, 0..).unwrap_err();
        assert!(e.to_string().contains("keys"), "{e}");
        assert_eq!(filled("x", 3, 7u8).unwrap(), vec![7; 3]);
        assert_eq!(collected("x", 2, 5..).unwrap(), vec![5, 6]);
        assert_eq!(copied("x", &[1, 2]).unwrap(), vec![1, 2]);
    }
}
