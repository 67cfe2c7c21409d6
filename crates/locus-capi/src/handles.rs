//! Handle tables: every object C holds is a 64-bit handle into a table, never a pointer.
//!
//! A handle packs a slot index (low 32 bits) and the slot's generation (high 32 bits,
//! never zero). Freeing an object bumps its slot's generation, so a freed handle, a
//! handle of another kind, a null handle (all zero) or made-up bits are all told apart
//! from live ones by a lookup, and get an error code: C never hands Locus a pointer it
//! must trust, and AddressSanitizer sees no use after free even when C code uses a
//! handle it freed.

use std::sync::{Mutex, MutexGuard};

use crate::status::{locus_status, CResult, Fail};

/// One slot: its current generation and the object, if live.
struct Slot<T> {
    generation: u32,
    value: Option<T>,
}

/// A table of objects of one kind, addressed by handles.
pub(crate) struct Table<T> {
    kind: &'static str,
    slots: Mutex<Vec<Slot<T>>>,
}

impl<T> Table<T> {
    pub(crate) const fn new(kind: &'static str) -> Self {
        Table {
            kind,
            slots: Mutex::new(Vec::new()),
        }
    }

    fn lock(&self) -> MutexGuard<'_, Vec<Slot<T>>> {
        // No code path panics while holding the lock with the table half-updated; a
        // poisoned lock still holds a consistent table.
        self.slots.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Stores `value` and returns its handle.
    pub(crate) fn insert(&self, value: T) -> u64 {
        let mut slots = self.lock();
        let index = match slots.iter().position(|s| s.value.is_none()) {
            Some(i) => i,
            None => {
                slots.push(Slot {
                    generation: 0,
                    value: None,
                });
                slots.len() - 1
            }
        };
        let slot = &mut slots[index];
        // Generation 0 is never used, so the all-zero handle is never live.
        slot.generation = slot.generation.wrapping_add(1).max(1);
        slot.value = Some(value);
        (u64::from(slot.generation) << 32) | index as u64
    }

    fn not_live(&self, handle: u64) -> Fail {
        let what = if handle == 0 {
            format!("null {} handle", self.kind)
        } else {
            format!(
                "{} handle {handle:#x} is freed or was never made by Locus",
                self.kind
            )
        };
        Fail::new(locus_status::LOCUS_E_HANDLE, what)
    }

    fn slot_index(handle: u64) -> (usize, u32) {
        ((handle & 0xffff_ffff) as usize, (handle >> 32) as u32)
    }

    /// Runs `f` on the live object of `handle`, under the table's lock: `f` must not
    /// call back into C or into the runtime (which may run task bodies).
    pub(crate) fn with<R>(&self, handle: u64, f: impl FnOnce(&mut T) -> R) -> CResult<R> {
        let (index, generation) = Self::slot_index(handle);
        let mut slots = self.lock();
        match slots.get_mut(index) {
            Some(Slot {
                generation: g,
                value: Some(v),
            }) if *g == generation && generation != 0 => Ok(f(v)),
            _ => Err(self.not_live(handle)),
        }
    }

    /// Runs `f` with the whole table locked, for lookups of several handles at once;
    /// `get` of the guard checks each one.
    pub(crate) fn with_all<R>(&self, f: impl FnOnce(&mut Locked<'_, T>) -> R) -> R {
        let mut locked = Locked {
            table: self,
            slots: self.lock(),
        };
        f(&mut locked)
    }

    /// Number of live objects.
    pub(crate) fn live(&self) -> usize {
        self.lock().iter().filter(|s| s.value.is_some()).count()
    }

    /// Removes and returns the object of `handle`.
    pub(crate) fn remove(&self, handle: u64) -> CResult<T> {
        let (index, generation) = Self::slot_index(handle);
        let mut slots = self.lock();
        match slots.get_mut(index) {
            Some(slot) if slot.generation == generation && generation != 0 => {
                slot.value.take().ok_or_else(|| self.not_live(handle))
            }
            _ => Err(self.not_live(handle)),
        }
    }

    /// Removes every object for which `doomed` holds, and returns them (to be dropped
    /// after the lock is released).
    pub(crate) fn remove_where(&self, mut doomed: impl FnMut(&T) -> bool) -> Vec<T> {
        let mut slots = self.lock();
        let mut out = Vec::new();
        for slot in slots.iter_mut() {
            if slot.value.as_ref().is_some_and(&mut doomed) {
                out.extend(slot.value.take());
            }
        }
        out
    }
}

/// A locked table, for looking up several handles under one lock.
pub(crate) struct Locked<'t, T> {
    table: &'t Table<T>,
    slots: MutexGuard<'t, Vec<Slot<T>>>,
}

impl<T> Locked<'_, T> {
    /// The live object of `handle`.
    pub(crate) fn get(&self, handle: u64) -> CResult<&T> {
        let (index, generation) = Table::<T>::slot_index(handle);
        match self.slots.get(index) {
            Some(Slot {
                generation: g,
                value: Some(v),
            }) if *g == generation && generation != 0 => Ok(v),
            _ => Err(self.table.not_live(handle)),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn freed_null_and_made_up_handles_are_refused() {
        let t = Table::new("thing");
        let a = t.insert(1);
        assert_eq!(t.with(a, |v| *v).unwrap(), 1);
        assert_eq!(t.remove(a).unwrap(), 1);
        assert!(t.with(a, |v| *v).is_err(), "freed");
        assert!(t.remove(a).is_err(), "freed twice");
        assert!(t.with(0, |v| *v).is_err(), "null");
        // The slot is reused with a new generation: the old handle stays dead.
        let b = t.insert(2);
        assert_eq!(a & 0xffff_ffff, b & 0xffff_ffff);
        assert_ne!(a, b);
        assert!(t.with(a, |v| *v).is_err());
        assert_eq!(t.with(b, |v| *v).unwrap(), 2);
        assert!(t.with(b + 1, |v| *v).is_err(), "made-up index");
        assert!(t.with(b ^ (1 << 40), |v| *v).is_err(), "made-up generation");
    }
}
