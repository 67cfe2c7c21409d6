//! Handle tables: every object C holds is a 64-bit handle into a table, never a pointer.
//!
//! A handle packs a slot index (low 32 bits), the slot's generation (the next 24 bits,
//! never zero) and the kind of object (the top 8 bits, never zero: one per table, so
//! that the first datum and the first team, both slot 0 of generation 1, differ).
//! Freeing an object bumps its slot's generation, so a freed handle, a handle of
//! another kind, a null handle (all zero) or made-up bits are all told apart from live
//! ones by a lookup, and get an error code: C never hands Locus a pointer it must
//! trust, and AddressSanitizer sees no use after free even when C code uses a handle it
//! freed. (A generation wraps after 2^24 reuses of one slot.)

/// The lock of a table: a spin lock that yields, as the core's short locks: every
/// spawn looks a handle up, and a lookup holds it for a few instructions, which a
/// futex-based mutex doubles (its unlock is a second atomic read-modify-write).
type Lock<T> = spin::mutex::SpinMutex<T, spin::relax::Yield>;
type Guard<'a, T> = spin::mutex::SpinMutexGuard<'a, T>;

use crate::status::{locus_status, CResult, Fail};

/// One slot: its current generation and the object, if live.
struct Slot<T> {
    generation: u32,
    value: Option<T>,
}

/// The kinds of handles, one per table: a handle's top byte is its kind's position
/// here plus one.
const KINDS: [&str; 6] = ["settings", "runtime", "data", "report", "team", "graph"];

/// Bits of a handle's generation.
const GENERATION_BITS: u32 = 24;

/// The tag of `kind` in [`KINDS`]; an unknown kind fails to compile (the tables are
/// statics).
const fn kind_tag(kind: &str) -> u8 {
    let mut k = 0;
    while k < KINDS.len() {
        let (a, b) = (KINDS[k].as_bytes(), kind.as_bytes());
        if a.len() == b.len() {
            let mut i = 0;
            while i < a.len() && a[i] == b[i] {
                i += 1;
            }
            if i == a.len() {
                return k as u8 + 1;
            }
        }
        k += 1;
    }
    panic!("a handle kind not listed in KINDS")
}

/// The slots of a table, with the indices of the free ones (a stack: the slot freed
/// last is reused first), so that making an object takes constant time however many
/// are alive.
struct Slots<T> {
    slots: Vec<Slot<T>>,
    free: Vec<u32>,
    live: usize,
}

impl<T> Slots<T> {
    /// The live object at `index` of `generation`, if any.
    fn get(&self, index: usize, generation: u32) -> Option<&T> {
        match self.slots.get(index) {
            Some(Slot {
                generation: g,
                value: Some(v),
            }) if *g == generation && generation != 0 => Some(v),
            _ => None,
        }
    }

    /// The live object at `index` of `generation`, if any, to change.
    fn get_mut(&mut self, index: usize, generation: u32) -> Option<&mut T> {
        match self.slots.get_mut(index) {
            Some(Slot {
                generation: g,
                value: Some(v),
            }) if *g == generation && generation != 0 => Some(v),
            _ => None,
        }
    }

    /// Empties slot `index` (live) and puts it on the free stack.
    fn take(&mut self, index: usize) -> Option<T> {
        let value = self.slots[index].value.take();
        if value.is_some() {
            self.live -= 1;
            self.free.push(index as u32);
        }
        value
    }
}

/// A table of objects of one kind, addressed by handles.
pub(crate) struct Table<T> {
    kind: &'static str,
    tag: u8,
    slots: Lock<Slots<T>>,
}

impl<T> Table<T> {
    /// A table of handles of `kind`, one of [`KINDS`].
    pub(crate) const fn new(kind: &'static str) -> Self {
        Table {
            kind,
            tag: kind_tag(kind),
            slots: Lock::new(Slots {
                slots: Vec::new(),
                free: Vec::new(),
                live: 0,
            }),
        }
    }

    fn lock(&self) -> Guard<'_, Slots<T>> {
        // No code path panics while holding the lock with the table half-updated, so a
        // table whose holder panicked is consistent: the lock keeps no poison.
        self.slots.lock()
    }

    /// Stores `value` and returns its handle.
    pub(crate) fn insert(&self, value: T) -> u64 {
        let mut table = self.lock();
        let index = match table.free.pop() {
            Some(i) => i as usize,
            None => {
                table.slots.push(Slot {
                    generation: 0,
                    value: None,
                });
                table.slots.len() - 1
            }
        };
        table.live += 1;
        let slot = &mut table.slots[index];
        // Generation 0 is never used, so the all-zero handle is never live.
        slot.generation = ((slot.generation + 1) & ((1 << GENERATION_BITS) - 1)).max(1);
        slot.value = Some(value);
        (u64::from(self.tag) << 56) | (u64::from(slot.generation) << 32) | index as u64
    }

    fn not_live(&self, handle: u64) -> Fail {
        let tag = (handle >> 56) as usize;
        let what = if handle == 0 {
            format!("null {} handle", self.kind)
        } else if tag != usize::from(self.tag) && (1..=KINDS.len()).contains(&tag) {
            format!(
                "handle {handle:#x} is a {} handle where a {} handle is expected",
                KINDS[tag - 1],
                self.kind
            )
        } else {
            format!(
                "{} handle {handle:#x} is freed or was never made by Locus",
                self.kind
            )
        };
        Fail::new(locus_status::LOCUS_E_HANDLE, what)
    }

    /// The slot index and generation of `handle`, if it is of this table's kind
    /// (else a generation no slot has).
    fn slot_index(&self, handle: u64) -> (usize, u32) {
        let generation = (handle >> 32) as u32 & ((1 << GENERATION_BITS) - 1);
        let generation = if (handle >> 56) as u8 == self.tag {
            generation
        } else {
            0
        };
        ((handle & 0xffff_ffff) as usize, generation)
    }

    /// Runs `f` on the live object of `handle`, under the table's lock: `f` must not
    /// call back into C or into the runtime (which may run task bodies).
    #[inline]
    pub(crate) fn with<R>(&self, handle: u64, f: impl FnOnce(&mut T) -> R) -> CResult<R> {
        let (index, generation) = self.slot_index(handle);
        let mut table = self.lock();
        match table.get_mut(index, generation) {
            Some(v) => Ok(f(v)),
            None => Err(self.not_live(handle)),
        }
    }

    /// Runs `f` on the live object of `handle`, if it is one, under the table's lock
    /// (as [`Table::with`], without an error for a handle that is not).
    #[inline(always)]
    pub(crate) fn get_with<R>(&self, handle: u64, f: impl FnOnce(&T) -> R) -> Option<R> {
        let (index, generation) = self.slot_index(handle);
        self.lock().get(index, generation).map(f)
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
        self.lock().live
    }

    /// Removes and returns the object of `handle`.
    pub(crate) fn remove(&self, handle: u64) -> CResult<T> {
        let (index, generation) = self.slot_index(handle);
        let mut table = self.lock();
        if table.get_mut(index, generation).is_none() {
            return Err(self.not_live(handle));
        }
        table.take(index).ok_or_else(|| self.not_live(handle))
    }

    /// Removes every object for which `doomed` holds, and returns them (to be dropped
    /// after the lock is released).
    pub(crate) fn remove_where(&self, mut doomed: impl FnMut(&T) -> bool) -> Vec<T> {
        let mut table = self.lock();
        let mut out = Vec::new();
        for index in 0..table.slots.len() {
            if table.slots[index].value.as_ref().is_some_and(&mut doomed) {
                out.extend(table.take(index));
            }
        }
        out
    }
}

/// A locked table, for looking up several handles under one lock.
pub(crate) struct Locked<'t, T> {
    table: &'t Table<T>,
    slots: Guard<'t, Slots<T>>,
}

impl<T> Locked<'_, T> {
    /// The live object of `handle`.
    pub(crate) fn get(&self, handle: u64) -> CResult<&T> {
        let (index, generation) = self.table.slot_index(handle);
        self.slots
            .get(index, generation)
            .ok_or_else(|| self.table.not_live(handle))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn freed_null_and_made_up_handles_are_refused() {
        let t = Table::new("data");
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

    #[test]
    fn freed_slots_are_reused_last_freed_first_and_counted() {
        let t = Table::new("data");
        let handles: Vec<u64> = (0..100).map(|i| t.insert(i)).collect();
        assert_eq!(t.live(), 100);
        for &h in &handles[10..20] {
            t.remove(h).unwrap();
        }
        assert_eq!(t.remove_where(|v| *v >= 90).len(), 10);
        assert_eq!(t.live(), 80);
        // The slot freed last (99, by remove_where) is reused first, then 98, ...
        let again = t.insert(1000);
        assert_eq!(again & 0xffff_ffff, 99);
        assert_eq!(t.live(), 81);
        // Freed handles stay dead; the live ones keep their objects.
        assert!(t.with(handles[15], |v| *v).is_err());
        assert!(t.with(handles[99], |v| *v).is_err());
        assert_eq!(t.with(handles[50], |v| *v).unwrap(), 50);
        assert_eq!(t.with(again, |v| *v).unwrap(), 1000);
        // Every freed slot is reused before the table grows.
        for i in 0..19 {
            t.insert(2000 + i);
        }
        assert_eq!(t.live(), 100);
        assert_eq!(t.insert(3000) & 0xffff_ffff, 100);
    }

    #[test]
    fn a_handle_of_another_kind_is_refused_and_named() {
        let (data, teams) = (Table::new("data"), Table::new("team"));
        let (d, t) = (data.insert(1), teams.insert(2));
        // Slot 0 of generation 1 in both tables: told apart by their kind.
        assert_eq!(d & 0xff_ffff_ffff_ffff, t & 0xff_ffff_ffff_ffff);
        let err = data.with(t, |v| *v).unwrap_err();
        assert!(
            err.message
                .contains("is a team handle where a data handle is expected"),
            "{}",
            err.message
        );
        assert!(teams.remove(d).is_err());
        assert_eq!(data.with(d, |v| *v).unwrap(), 1);
        let tags: std::collections::HashSet<u8> = KINDS.iter().map(|k| kind_tag(k)).collect();
        assert_eq!(tags.len(), KINDS.len());
    }
}
