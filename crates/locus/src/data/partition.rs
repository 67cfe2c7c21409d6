//! Partitioned data: a datum cut into parts, each part a datum of its own for
//! declarations, with dependences by overlap.
//!
//! # Segments
//!
//! Once a datum (the *whole*) is partitioned, its contents live in *segments*: disjoint
//! sets of its elements that together cover it, each a versioned (or shared) datum of
//! its own with its own version chain and buffer. The segments are the finest common
//! refinement of every partition made of the whole: a 1-D partition splits segments at
//! its parts' bounds, so that each part is a union of segments. A segment stores its
//! elements in the order of the whole (a tile of a row-major matrix is stored row after
//! row of the tile: tile-major). Segments are made, and split, only between runs
//! ([`Runtime::partition`](crate::Runtime::partition)); each starts with a copy of its
//! elements, on the node of the buffer it was cut from.
//!
//! # Accesses
//!
//! A part and the whole are [`Data`] handles like any other. At submission an access to
//! either resolves to the segments it covers ([`resolve`]):
//!
//! - covered by one segment, contiguously (a part of a disjoint partition, or a range
//!   inside one): the access binds to that segment directly, and its view is the
//!   segment's buffer, no copy;
//! - covering several segments (the whole, a part of an overlapping partition): the
//!   access binds to each of them (reads, writes and read-writes as declared) and the
//!   body sees a *gathered* copy, in a buffer of its own on the executing node: filled
//!   from the segments before the body for reads and read-writes, and scattered back
//!   into the segments' new versions after the body for writes and read-writes.
//!
//! Dependences are therefore the segments' own: two accesses depend on each other
//! exactly when they share a segment and one writes it, in submission order, with the
//! same renaming as any datum (a reader of the old version never waits for a writer
//! of a new one).

// Runs of elements are lists of ranges, and a list of one run is what is meant.
#![allow(clippy::single_range_in_vec_init)]

use std::collections::BTreeMap;
use std::ops::{Index, Range};
use std::sync::Arc;

use locus_mem::pool::{AllocError, Pools};

use super::access::{Binding, Declared, Gather, Kind, Mode};
use super::handle::{Data, DataInner, Element};
use super::shared::SharedSetup;
use super::version::VersionCounts;
use crate::error::Error;

/// How to cut a datum into parts ([`Runtime::partition`](crate::Runtime::partition)).
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Partition {
    /// Consecutive ranges of `len` elements each, the last one shorter if `len` does
    /// not divide the datum's length.
    Blocks {
        /// Elements per part (at least 1).
        len: usize,
    },
    /// The given ranges, in this order; they may overlap, and need not cover the datum.
    Ranges(Vec<Range<usize>>),
    /// The tiles of a row-major `rows x cols` matrix, `tile_rows x tile_cols` each,
    /// which must divide the matrix's extents; parts in row-major order of tiles. A
    /// tile's view is its elements row after row (`tile_cols` per row).
    Tiles {
        /// Rows of the matrix.
        rows: usize,
        /// Columns of the matrix (row-major: consecutive elements of a row are
        /// consecutive in the datum).
        cols: usize,
        /// Rows of a tile.
        tile_rows: usize,
        /// Columns of a tile.
        tile_cols: usize,
    },
}

impl Partition {
    /// Most parts one partition makes, and most stored segments a partitioned datum
    /// holds (2^20). Each part and each segment is a datum of its own (its versions,
    /// its buffer, its name): 2^20 parts of one element take 1.7 GB and 1.4 s to make
    /// and 0.75 s to fetch (release build, 2-core host). A partition that would
    /// make more (`Partition::blocks(1)` over more than 2^20 elements, or a partition
    /// whose bounds would cut the datum into more segments) is refused with
    /// [`Error::Config`] before anything is made; so is a tile partition whose tiles
    /// hold more than 2^24 rows in all (a matrix of more than 2^24 rows, or fewer
    /// rows cut into several tile columns). `docs/guide.md`, "Partitioned data", states
    /// the limits.
    ///
    /// ```
    /// use locus::Partition;
    /// assert_eq!(Partition::blocks(1).parts_of(Partition::MAX_PARTS), Ok(1 << 20));
    /// let e = Partition::blocks(1).parts_of(Partition::MAX_PARTS + 1).unwrap_err();
    /// assert!(e.contains("more than the limit of 2^20"), "{e}");
    /// ```
    pub const MAX_PARTS: usize = 1 << 20;

    /// Most runs of elements the tiles of one tile partition hold together (2^24): a
    /// tile is one run per row.
    const MAX_RUNS: usize = 1 << 24;

    /// [`Partition::Blocks`]: parts of `len` elements.
    pub fn blocks(len: usize) -> Self {
        Partition::Blocks { len }
    }

    /// [`Partition::Ranges`]: the given ranges.
    pub fn ranges(ranges: impl IntoIterator<Item = Range<usize>>) -> Self {
        Partition::Ranges(ranges.into_iter().collect())
    }

    /// [`Partition::Tiles`]: the `tile_rows x tile_cols` tiles of a row-major `rows x
    /// cols` matrix.
    pub fn tiles(rows: usize, cols: usize, tile_rows: usize, tile_cols: usize) -> Self {
        Partition::Tiles {
            rows,
            cols,
            tile_rows,
            tile_cols,
        }
    }

    /// How many parts the partition cuts a datum of `len` elements into, or why it
    /// cannot (the message [`Runtime::partition`](crate::Runtime::partition) gives).
    ///
    /// ```
    /// use locus::Partition;
    /// assert_eq!(Partition::blocks(4).parts_of(10), Ok(3));
    /// assert!(Partition::ranges([2..2]).parts_of(4).is_err());
    /// ```
    pub fn parts_of(&self, len: usize) -> Result<usize, String> {
        part_runs(self, len).map(|(runs, _)| runs.len())
    }
}

/// The parts of a partitioned datum: one [`Data`] handle each, in the partition's order;
/// for tiles, also addressed by tile coordinates ([`tile`](Self::tile)).
pub struct Parts<T> {
    parts: Vec<Data<T>>,
    /// Tiles per column and per row of tiles, for a tile partition.
    grid: Option<(usize, usize)>,
}

impl<T: Element> Parts<T> {
    /// Number of parts.
    pub fn len(&self) -> usize {
        self.parts.len()
    }

    /// Whether there is no part.
    pub fn is_empty(&self) -> bool {
        self.parts.is_empty()
    }

    /// Part `i`, if there is one.
    pub fn get(&self, i: usize) -> Option<&Data<T>> {
        self.parts.get(i)
    }

    /// The tile in row `i` and column `j` of tiles, for a tile partition; `None` out of
    /// range or for a partition of ranges.
    pub fn tile(&self, i: usize, j: usize) -> Option<&Data<T>> {
        let (rows, cols) = self.grid?;
        (i < rows && j < cols).then(|| &self.parts[i * cols + j])
    }

    /// Rows and columns of tiles, for a tile partition.
    pub fn grid(&self) -> Option<(usize, usize)> {
        self.grid
    }

    /// The parts, in order.
    pub fn iter(&self) -> std::slice::Iter<'_, Data<T>> {
        self.parts.iter()
    }
}

impl<T> std::fmt::Debug for Parts<T> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Parts")
            .field("parts", &self.parts)
            .field("grid", &self.grid)
            .finish()
    }
}

impl<T> Index<usize> for Parts<T> {
    type Output = Data<T>;

    fn index(&self, i: usize) -> &Data<T> {
        &self.parts[i]
    }
}

impl<'p, T> IntoIterator for &'p Parts<T> {
    type Item = &'p Data<T>;
    type IntoIter = std::slice::Iter<'p, Data<T>>;

    fn into_iter(self) -> Self::IntoIter {
        self.parts.iter()
    }
}

/// Runs of elements of a whole, in order.
type Runs = Vec<Range<usize>>;

/// Rows and columns of tiles.
type Grid = (usize, usize);

/// What makes a part a part: its whole, and the elements of the whole it covers.
pub(crate) struct PartOf {
    pub(crate) root: Arc<DataInner>,
    /// Runs of elements of the whole, sorted and disjoint; the part's elements are
    /// their concatenation.
    pub(crate) runs: Vec<Range<usize>>,
}

/// The segments of a partitioned whole (module doc).
pub(crate) struct Table {
    segments: Vec<Segment>,
    /// Every run of every segment, sorted by first element: finds the segments an
    /// access covers by binary search.
    index: Vec<IndexRun>,
}

struct Segment {
    data: Arc<DataInner>,
    /// Runs of elements of the whole, sorted; stored in this order.
    runs: Vec<Range<usize>>,
}

#[derive(Clone)]
struct IndexRun {
    whole: Range<usize>,
    segment: usize,
    /// Element offset of the run inside its segment.
    offset: usize,
}

impl Table {
    fn new(segments: Vec<Segment>) -> Self {
        let mut index = Vec::new();
        for (s, segment) in segments.iter().enumerate() {
            let mut offset = 0;
            for run in &segment.runs {
                index.push(IndexRun {
                    whole: run.clone(),
                    segment: s,
                    offset,
                });
                offset += run.len();
            }
        }
        index.sort_by_key(|r| r.whole.start);
        Table { segments, index }
    }

    /// Whether every segment is one run (a 1-D table, which a new partition may split).
    fn one_dimensional(&self) -> bool {
        self.segments.iter().all(|s| s.runs.len() == 1)
    }

    /// The pieces of each segment that `runs` (pairs of view offset and elements of the
    /// whole) cover, by segment, merged where contiguous in both.
    fn cover(&self, runs: &[(usize, Range<usize>)]) -> BTreeMap<usize, Vec<Piece>> {
        let mut out: BTreeMap<usize, Vec<Piece>> = BTreeMap::new();
        for (view, run) in runs {
            let first = self.index.partition_point(|r| r.whole.end <= run.start);
            for r in self.index[first..]
                .iter()
                .take_while(|r| r.whole.start < run.end)
            {
                let lo = run.start.max(r.whole.start);
                let hi = run.end.min(r.whole.end);
                if lo >= hi {
                    continue;
                }
                let piece = Piece {
                    view: view + (lo - run.start),
                    segment: r.offset + (lo - r.whole.start),
                    len: hi - lo,
                };
                let pieces = out.entry(r.segment).or_default();
                match pieces.last_mut() {
                    Some(last)
                        if last.view + last.len == piece.view
                            && last.segment + last.len == piece.segment =>
                    {
                        last.len += piece.len;
                    }
                    _ => pieces.push(piece),
                }
            }
        }
        out
    }
}

/// Part of a gathered view: `len` elements at `view` in the view and at `segment` in
/// the segment's buffer.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Piece {
    pub(crate) view: usize,
    pub(crate) segment: usize,
    pub(crate) len: usize,
}

/// A declaration resolved against the segments of partitioned data.
pub(crate) enum Resolved {
    /// A datum that is not partitioned, or an access inside one segment: bound as is.
    Plain(Declared),
    /// An access covering several segments (or none: an empty range): one declaration
    /// per segment, with the pieces the view gathers from it.
    Gathered {
        outer: Declared,
        leaves: Vec<(Declared, Vec<Piece>)>,
    },
}

impl Resolved {
    /// The declarations the task binds to versions.
    pub(crate) fn leaves(&self) -> impl Iterator<Item = &Declared> {
        let (one, many) = match self {
            Resolved::Plain(d) => (Some(d), &[][..]),
            Resolved::Gathered { leaves, .. } => (None, &leaves[..]),
        };
        one.into_iter().chain(many.iter().map(|(d, _)| d))
    }

    /// The declaration as the task made it.
    pub(crate) fn outer(&self) -> &Declared {
        match self {
            Resolved::Plain(d) => d,
            Resolved::Gathered { outer, .. } => outer,
        }
    }
}

impl DataInner {
    /// The segments of a partitioned whole, or of the whole a part belongs to.
    fn table(&self) -> Option<Arc<Table>> {
        match &self.extras.part_of {
            Some(part) => part.root.table(),
            None => self.extras.segments.get(),
        }
    }

    /// Whether the datum is partitioned or a part (its contents live in segments).
    pub(crate) fn is_partitioned(&self) -> bool {
        self.extras.part_of.is_some() || self.extras.segments.is_set()
    }
}

/// Resolves a validated declaration against the segments (module doc, "Accesses").
pub(crate) fn resolve(d: Declared) -> Resolved {
    let Some(table) = d.data.table() else {
        return Resolved::Plain(d);
    };
    // The declared elements, as runs of the whole with their offset in the view.
    let mut runs = Vec::new();
    match &d.data.extras.part_of {
        None => runs.push((0, d.range.clone())),
        Some(part) => {
            let mut at = 0;
            for run in &part.runs {
                let lo = d.range.start.max(at);
                let hi = d.range.end.min(at + run.len());
                if lo < hi {
                    let start = run.start + (lo - at);
                    runs.push((lo - d.range.start, start..start + (hi - lo)));
                }
                at += run.len();
            }
        }
    }
    let covered = table.cover(&runs);
    let leaf = |s: usize, pieces: &[Piece]| {
        let segment = &table.segments[s];
        let start = pieces.iter().map(|p| p.segment).min().unwrap_or(0);
        let end = pieces.iter().map(|p| p.segment + p.len).max().unwrap_or(0);
        let whole = start == 0 && end == segment.data.len;
        let covered: usize = pieces.iter().map(|p| p.len).sum();
        let mode = match d.mode {
            // A write must leave every element of the segment's new version defined:
            // one covering part of a segment keeps the rest (never the case for a
            // part, which is a union of segments, but kept sound whatever the table).
            Mode::Write if covered != segment.data.len => Mode::ReadWrite,
            mode => mode,
        };
        Declared {
            data: segment.data.clone(),
            mode,
            weak: d.weak,
            range: if d.mode.writes() || whole {
                0..segment.data.len
            } else {
                start..end
            },
            reducer: d.reducer.clone(),
        }
    };
    if let Some((&s, pieces)) = covered.iter().next() {
        if covered.len() == 1 && pieces.len() == 1 && pieces[0].len == d.range.len() {
            let direct = leaf(s, pieces);
            // A view straight into the segment's buffer: the declared range inside it.
            if !direct.mode.writes() || pieces[0].len == table.segments[s].data.len {
                return Resolved::Plain(Declared {
                    range: pieces[0].segment..pieces[0].segment + pieces[0].len,
                    ..direct
                });
            }
        }
    }
    let leaves = covered
        .iter()
        .map(|(&s, pieces)| (leaf(s, pieces), pieces.clone()))
        .collect();
    Resolved::Gathered { outer: d, leaves }
}

/// The leaves of every resolved declaration ([`Resolved::leaves`]), in order: what a
/// task validates against its parent's domain and binds to versions. Inlined into the
/// submission, which every task goes through.
#[inline(always)]
pub(crate) fn leaves_of(resolved: &[Resolved]) -> smallvec::SmallVec<[&Declared; 4]> {
    let mut out = smallvec::SmallVec::new();
    for r in resolved {
        match r {
            // A push, not an extend over the chained iterator of `leaves`: most tasks
            // have only plain declarations.
            Resolved::Plain(d) => out.push(d),
            Resolved::Gathered { leaves, .. } => out.extend(leaves.iter().map(|(d, _)| d)),
        }
    }
    out
}

/// A task's resolved declarations may not cover one segment twice when one of the
/// accesses writes it (the rule for a datum declared twice, for overlapping parts),
/// nor read a segment of shared data a failed writer left partly written.
///
/// Only tasks declaring partitioned data need it: without, every leaf is a declaration
/// that `validate` has checked against the others and for poison already. `names` are
/// the declared data's names, in the order of `resolved`, for the error.
///
/// Two leaves of one declaration never clash (a gathered access covers each segment
/// once); two of different declarations clash on the same segment when one writes,
/// whether each covers several segments or exactly that one: `v.read_range(4..8)` and
/// `parts[1].write()`, with `v` in blocks of 4, both resolve to segment 1 alone.
pub(crate) fn check_leaves(resolved: &[Resolved], names: &[String]) -> Result<(), String> {
    debug_assert_eq!(resolved.len(), names.len(), "one name per declaration");
    // Every segment read, the one a part resolves to included (the declaration itself
    // was checked, not the segment).
    let unpoisoned = |leaf: &Declared, name: &str| match leaf
        .mode
        .reads()
        .then(|| leaf.data.poisoned_by())
        .flatten()
    {
        Some(task) => Err(Error::Poisoned {
            data: name.to_string(),
            task,
        }
        .to_string()),
        None => Ok(()),
    };
    // Each leaf seen: its segment, whether it writes, its declaration.
    let mut seen: smallvec::SmallVec<[(u64, bool, usize); 4]> = smallvec::SmallVec::new();
    for (i, r) in resolved.iter().enumerate() {
        let name = &names[i];
        if let (Resolved::Gathered { .. }, Mode::Reduce) = (r, r.outer().mode) {
            return Err(format!(
                "a reduction into `{name}` covers several stored segments of partitioned \
                 data; reduce into a part of a disjoint partition, or into unpartitioned data"
            ));
        }
        for leaf in r.leaves() {
            unpoisoned(leaf, name)?;
            if let Some(&(_, _, j)) = seen.iter().find(|(id, writes, j)| {
                *id == leaf.data.id && *j != i && (*writes || leaf.mode.exclusive())
            }) {
                let other = &names[j];
                return Err(format!(
                    "`{other}` and `{name}` overlap and one access writes the overlap; \
                     declare one access covering both instead"
                ));
            }
            seen.push((leaf.data.id, leaf.mode.exclusive(), i));
        }
    }
    Ok(())
}

/// What making segments needs from the runtime.
pub(crate) struct SegmentMaker<'a> {
    pub(crate) runtime: u64,
    pub(crate) versions: &'static VersionCounts,
    pub(crate) shared: &'a Arc<SharedSetup>,
    pub(crate) pools: &'a Arc<Pools>,
    /// Where a reduction left open on a datum being split is combined, if its buffer
    /// does not say.
    pub(crate) node: usize,
}

impl SegmentMaker<'_> {
    /// A segment of `root` over `runs`, holding a copy of the elements of `source`
    /// (a datum over `source_runs`, which contain `runs`) if it has contents.
    fn segment(
        &self,
        root: &DataInner,
        runs: Vec<Range<usize>>,
        source: &DataInner,
        source_runs: &[Range<usize>],
    ) -> Result<Segment, Error> {
        let len: usize = runs.iter().map(Range::len).sum();
        let shared = source
            .shared
            .as_ref()
            .map(|s| (self.shared, s.region.policy()));
        let name = match (runs.first(), runs.len()) {
            (Some(r), 1) => format!("{}[{}..{}]", root.name, r.start, r.end),
            (Some(r), _) => format!("{}[{}..; {} runs]", root.name, r.start, runs.len()),
            (None, _) => format!("{}[]", root.name),
        };
        let data = DataInner::create(
            self.runtime,
            name,
            len,
            root.elem_size,
            self.versions,
            shared,
        )?;
        // A reduction left open on the source is combined first: the new segment
        // starts from the contents every earlier access would see.
        // SAFETY: no run is in progress (the caller holds the run lock).
        unsafe { source.combine_now(self.pools, self.node) }
            .map_err(|e| e.into_error("partition", source))?;
        let from = source.current();
        let es = root.elem_size;
        if let Some(src) = from.buffer().filter(|b| !b.is_accounted_only()) {
            let bytes = len * es;
            let to = data.current();
            let node = src.main_node();
            let dst = to
                .buffer_or_alloc(|| self.pools.alloc(node, bytes))
                .map_err(|e| Error::OutOfMemory {
                    task: format!("partition({})", root.name),
                    bytes,
                    message: e.to_string(),
                })?;
            if !dst.is_accounted_only() {
                for piece in pieces_within(source_runs, &runs) {
                    // SAFETY: (1) `from` is produced (no run is in progress: the
                    // caller holds the run lock) and its buffer holds the source's
                    // elements; `dst` was just made for the new segment, which no task
                    // can reach yet; (2) the pieces lie inside both (the source's runs
                    // contain the segment's); (3) distinct buffers, so no overlap.
                    unsafe {
                        std::ptr::copy_nonoverlapping(
                            src.as_ptr().add(piece.segment * es),
                            dst.as_mut_ptr().add(piece.view * es),
                            piece.len * es,
                        )
                    };
                }
            }
            if let Some(shared) = dst.shared() {
                shared.touch(0, bytes, node);
            }
        }
        Ok(Segment {
            data: Arc::new(data),
            runs,
        })
    }
}

/// The runs of elements of each part of `partition` over a datum of `len` elements, and
/// the tile grid; bad partitions are errors.
fn part_runs(partition: &Partition, len: usize) -> Result<(Vec<Runs>, Option<Grid>), String> {
    let at_most = |parts: usize, what: &str| {
        if parts > Partition::MAX_PARTS {
            Err(format!(
                "{what} make {parts} parts, more than the limit of 2^20 \
                 (Partition::MAX_PARTS)"
            ))
        } else {
            Ok(())
        }
    };
    match *partition {
        Partition::Blocks { len: block } => {
            if block == 0 {
                return Err("blocks of 0 elements".into());
            }
            at_most(
                len.div_ceil(block),
                &format!("blocks of {block} elements over {len}"),
            )?;
            Ok((
                (0..len)
                    .step_by(block)
                    .map(|s| vec![s..s.saturating_add(block).min(len)])
                    .collect(),
                None,
            ))
        }
        Partition::Ranges(ref ranges) => {
            at_most(ranges.len(), &format!("{} ranges", ranges.len()))?;
            let mut parts = Vec::with_capacity(ranges.len());
            for r in ranges {
                if r.start >= r.end || r.end > len {
                    return Err(format!(
                        "range {}..{} is empty or out of bounds (length {len})",
                        r.start, r.end
                    ));
                }
                parts.push(vec![r.clone()]);
            }
            Ok((parts, None))
        }
        Partition::Tiles {
            rows,
            cols,
            tile_rows,
            tile_cols,
        } => {
            if rows.checked_mul(cols) != Some(len) {
                return Err(format!(
                    "a {rows} x {cols} matrix has {} elements, the datum {len}",
                    rows as u128 * cols as u128
                ));
            }
            if tile_rows == 0 || tile_cols == 0 {
                return Err(format!("tiles of {tile_rows} x {tile_cols} elements"));
            }
            if rows % tile_rows != 0 || cols % tile_cols != 0 {
                return Err(format!(
                    "{tile_rows} x {tile_cols} tiles do not divide a {rows} x {cols} matrix"
                ));
            }
            let grid = (rows / tile_rows, cols / tile_cols);
            at_most(
                grid.0 * grid.1,
                &format!("{tile_rows} x {tile_cols} tiles of a {rows} x {cols} matrix"),
            )?;
            // A run per row of a tile.
            let runs = rows * grid.1;
            if runs > Partition::MAX_RUNS {
                return Err(format!(
                    "{tile_rows} x {tile_cols} tiles of a {rows} x {cols} matrix hold {runs} \
                     runs of elements (one per row of a tile), more than the limit of 2^24"
                ));
            }
            let mut parts = Vec::with_capacity(grid.0 * grid.1);
            for i in 0..grid.0 {
                for j in 0..grid.1 {
                    parts.push(
                        (0..tile_rows)
                            .map(|r| {
                                let start = (i * tile_rows + r) * cols + j * tile_cols;
                                start..start + tile_cols
                            })
                            .collect(),
                    );
                }
            }
            Ok((parts, Some(grid)))
        }
    }
}

/// Partitions `data` (module doc): refines its segments so that every new part is a
/// union of them, and returns the parts. The caller holds the run lock.
pub(crate) fn partition<T: Element>(
    data: &Data<T>,
    partition: &Partition,
    maker: &SegmentMaker<'_>,
) -> Result<Parts<T>, Error> {
    let root = &data.inner;
    let refuse =
        |message: String| Error::Config(format!("partition of `{}`: {message}", root.name));
    if root.extras.part_of.is_some() {
        return Err(refuse(
            "it is a part; partition the whole datum instead".into(),
        ));
    }
    if let Some(reason) = &root.extras.unavailable {
        return Err(refuse(format!("it has no memory: {reason}")));
    }
    let (parts, grid) = part_runs(partition, root.len).map_err(refuse)?;
    let mut slot = root.extras.segments.lock();
    let table = match slot.as_ref() {
        None if grid.is_some() => {
            // The tiles themselves.
            let whole = [0..root.len];
            let segments = parts
                .iter()
                .map(|runs| maker.segment(root, runs.clone(), root, &whole))
                .collect::<Result<Vec<_>, _>>()?;
            Table::new(segments)
        }
        None => {
            let whole = Segment {
                data: root.clone(),
                runs: vec![0..root.len],
            };
            split(root, &[whole], &parts, maker)?
        }
        Some(table) if table.one_dimensional() && grid.is_none() => {
            split(root, &table.segments, &parts, maker)?
        }
        Some(table) => {
            // Tiles are never split: every part must be a union of segments.
            for runs in &parts {
                let view: Vec<(usize, Range<usize>)> =
                    runs.iter().map(|r| (0, r.clone())).collect();
                for (s, pieces) in table.cover(&view) {
                    let covered: usize = pieces.iter().map(|p| p.len).sum();
                    if covered != table.segments[s].data.len {
                        return Err(refuse(format!(
                            "a part cuts the existing segment `{}`: a datum partitioned \
                             into tiles can be partitioned again only into unions of them",
                            table.segments[s].data.name
                        )));
                    }
                }
            }
            Table::new(
                table
                    .segments
                    .iter()
                    .map(|s| Segment {
                        data: s.data.clone(),
                        runs: s.runs.clone(),
                    })
                    .collect(),
            )
        }
    };
    let first = slot.is_none();
    *slot = Some(Arc::new(table));
    drop(slot);
    if first {
        // The whole's own version chain is no longer used: its contents are in the
        // segments now, and its buffer goes back to its pool.
        root.follow(super::version::Version::initial(
            0,
            maker.versions,
            root.shared.as_ref(),
        ));
    }
    let parts = parts
        .into_iter()
        .enumerate()
        .map(|(k, runs)| {
            let name = match grid {
                Some((_, cols)) => format!("{}[{},{}]", root.name, k / cols, k % cols),
                None => format!("{}[{}..{}]", root.name, runs[0].start, runs[0].end),
            };
            Data::from_inner(Arc::new(DataInner::part(
                root.clone(),
                name,
                runs,
                maker.versions,
            )))
        })
        .collect();
    Ok(Parts { parts, grid })
}

/// The segments that splitting one-run segments over `runs` at `bounds` (sorted,
/// without duplicates) makes, counted before any is made: each run, cut at the bounds
/// strictly inside it.
fn segments_after_split<'a>(
    runs: impl Iterator<Item = &'a Range<usize>>,
    bounds: &[usize],
) -> usize {
    runs.map(|run| {
        let first = bounds.partition_point(|&b| b <= run.start);
        let end = bounds.partition_point(|&b| b < run.end);
        end.saturating_sub(first) + 1
    })
    .sum()
}

/// A 1-D table split at every bound of `parts`.
fn split(
    root: &DataInner,
    segments: &[Segment],
    parts: &[Vec<Range<usize>>],
    maker: &SegmentMaker<'_>,
) -> Result<Table, Error> {
    let mut bounds: Vec<usize> = parts
        .iter()
        .flat_map(|runs| runs.iter().flat_map(|r| [r.start, r.end]))
        .collect();
    bounds.sort_unstable();
    bounds.dedup();
    let made = segments_after_split(segments.iter().map(|s| &s.runs[0]), &bounds);
    if made > Partition::MAX_PARTS {
        return Err(Error::Config(format!(
            "partition of `{}`: its bounds and those of earlier partitions would cut it into \
             {made} stored segments, more than the limit of 2^20 (Partition::MAX_PARTS)",
            root.name
        )));
    }
    let mut out = Vec::new();
    for s in segments {
        let run = s.runs[0].clone();
        let inside: Vec<usize> = bounds
            .iter()
            .copied()
            .filter(|&b| b > run.start && b < run.end)
            .collect();
        if inside.is_empty() {
            if std::ptr::eq(&*s.data, root) {
                // The unpartitioned whole, kept whole: still a segment of its own.
                out.push(maker.segment(root, vec![run.clone()], root, &[run])?);
            } else {
                out.push(Segment {
                    data: s.data.clone(),
                    runs: s.runs.clone(),
                });
            }
            continue;
        }
        let mut start = run.start;
        for b in inside.into_iter().chain([run.end]) {
            out.push(maker.segment(root, vec![start..b], &s.data, &s.runs)?);
            start = b;
        }
    }
    Ok(Table::new(out))
}

/// A copy of a partitioned datum or part, gathered from its segments' current
/// versions.
///
/// # Safety
///
/// No run is in progress (nothing writes the segments' buffers meanwhile).
pub(crate) unsafe fn gather_out<T: Element>(
    data: &Arc<DataInner>,
    pools: &Arc<Pools>,
    node: usize,
) -> Result<Vec<T>, Error> {
    let fetch_error = |message: String| Error::Declaration {
        task: "fetch".into(),
        message,
    };
    let mut out = Vec::new();
    out.try_reserve_exact(data.len)
        .map_err(|e| Error::OutOfMemory {
            task: format!("fetch({})", data.name),
            bytes: data.bytes(),
            message: e.to_string(),
        })?;
    out.resize(data.len, T::zeroed());
    let leaves = segments_covering(data);
    let bytes: &mut [u8] = bytemuck::cast_slice_mut(&mut out);
    let es = data.elem_size;
    for (segment, pieces) in leaves {
        if let Some(task) = segment.poisoned_by() {
            return Err(Error::Poisoned {
                data: data.name.clone(),
                task,
            });
        }
        // SAFETY: no run is in progress (the caller's contract).
        unsafe { segment.combine_now(pools, node) }.map_err(|e| e.into_error("fetch", &segment))?;
        let version = segment.current();
        if !version.is_produced() {
            return Err(fetch_error(format!(
                "`{}` is being written by a run in progress",
                data.name
            )));
        }
        let Some(buffer) = version.buffer() else {
            continue; // never written: zeros
        };
        if buffer.is_accounted_only() {
            return Err(Error::Config(format!(
                "fetch({}): the buffer holds no memory (a simulation with skipped bodies)",
                data.name
            )));
        }
        for p in pieces {
            let (from, len) = (p.segment * es, p.len * es);
            // SAFETY: the caller guarantees nothing writes the buffer; the piece lies
            // inside the segment's buffer (resolved against its runs) and inside `out`.
            let src = unsafe { std::slice::from_raw_parts(buffer.as_ptr().add(from), len) };
            bytes[p.view * es..p.view * es + len].copy_from_slice(src);
        }
    }
    Ok(out)
}

/// The pieces of `runs` (elements of the whole, in order) inside a datum over
/// `source` (runs of the whole, in its storage order): `view` counts along `runs`,
/// `segment` along `source`.
fn pieces_within(source: &[Range<usize>], runs: &[Range<usize>]) -> Vec<Piece> {
    let mut out = Vec::new();
    let mut view = 0;
    for run in runs {
        let mut at = 0;
        for s in source {
            let lo = run.start.max(s.start);
            let hi = run.end.min(s.end);
            if lo < hi {
                out.push(Piece {
                    view: view + (lo - run.start),
                    segment: at + (lo - s.start),
                    len: hi - lo,
                });
            }
            at += s.len();
        }
        view += run.len();
    }
    out
}

/// Bytes of a partitioned datum or part on each node, by the node of each segment's
/// current buffer (page by page for shared data); `None` for data not partitioned.
pub(crate) fn bytes_per_node(data: &Arc<DataInner>, nodes: usize) -> Option<Vec<u64>> {
    if !data.is_partitioned() {
        return None;
    }
    let mut out = vec![0u64; nodes];
    let es = data.elem_size;
    let leaves = segments_covering(data);
    for (segment, pieces) in leaves {
        let version = segment.current();
        let Some(buffer) = version.buffer() else {
            continue;
        };
        for p in pieces {
            match buffer.shared() {
                Some(s) => s.region.bytes_by_node(p.segment * es, p.len * es, |n, b| {
                    if let Some(n) = n {
                        out[n] += b as u64;
                    }
                }),
                None => out[buffer.main_node()] += (p.len * es) as u64,
            }
        }
    }
    Some(out)
}

/// The segments holding a partitioned datum or part, with the pieces of it each holds.
fn segments_covering(data: &Arc<DataInner>) -> Vec<(Arc<DataInner>, Vec<Piece>)> {
    let declared = Declared {
        data: data.clone(),
        mode: Mode::Read,
        weak: false,
        range: 0..data.len,
        reducer: None,
    };
    match resolve(declared) {
        Resolved::Plain(d) => {
            let piece = Piece {
                view: 0,
                segment: d.range.start,
                len: d.range.len(),
            };
            vec![(d.data, vec![piece])]
        }
        Resolved::Gathered { leaves, .. } => leaves.into_iter().map(|(d, p)| (d.data, p)).collect(),
    }
}

/// Makes binding `b`'s gathered view (`gather`: the segments it covers) a buffer of
/// its bytes on `node`, filled from the segments for a read unless bodies are skipped
/// (`skipped`).
pub(crate) fn gather(
    b: &Binding,
    gather: &Gather,
    pools: &Arc<Pools>,
    node: usize,
    skipped: bool,
) -> Result<(), AllocError> {
    if b.bytes == 0 {
        return Ok(());
    }
    let block = pools.alloc(node, b.bytes)?;
    let block = gather.block.get_or_init(|| block);
    if !b.mode.reads() || skipped {
        return Ok(());
    }
    let es = b.data.elem_size;
    for (leaf, pieces) in gather.leaves.iter().zip(&gather.pieces) {
        let src = leaf
            .read()
            .and_then(|v| v.buffer())
            .expect("a gathered read's segment was allocated above");
        for p in pieces {
            // SAFETY: (1) the segment's input version is produced and nobody
            // writes it while this task holds it (as for any read); (2) the piece
            // lies inside the segment's buffer (resolved against its elements) and
            // inside the view's buffer of `b.bytes` bytes; (3) distinct buffers.
            unsafe {
                std::ptr::copy_nonoverlapping(
                    src.as_ptr().add(p.segment * es),
                    block.as_mut_ptr().add(p.view * es),
                    p.len * es,
                )
            };
        }
    }
    Ok(())
}

/// Scatters what a body wrote in its gathered views into the segments' new versions,
/// once the body has returned.
pub(crate) fn scatter(bindings: &[Binding]) {
    for b in bindings.iter().filter(|b| !b.weak && b.mode.writes()) {
        let Kind::Gathered(gather) = &b.kind else {
            continue;
        };
        let Some(block) = gather.block.get() else {
            continue;
        };
        let es = b.data.elem_size;
        for (leaf, pieces) in gather.leaves.iter().zip(&gather.pieces) {
            let dst = leaf
                .output()
                .and_then(|v| v.buffer())
                .expect("a gathered write's segment was allocated before the body");
            for p in pieces {
                // SAFETY: (1) the segment's output version is this task's, not
                // published yet, so nobody else reads or writes it (for shared data,
                // the task waited for the previous writer and readers); (2) the piece
                // lies inside both buffers (as for the gathering); (3) distinct buffers.
                unsafe {
                    std::ptr::copy_nonoverlapping(
                        block.as_ptr().add(p.view * es),
                        dst.as_mut_ptr().add(p.segment * es),
                        p.len * es,
                    )
                };
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The segments a split would make are counted from the bounds alone, so that a
    /// split past [`Partition::MAX_PARTS`] segments is refused before any is made.
    #[test]
    fn segments_after_a_split_are_counted_from_the_bounds() {
        let runs = [0..10, 10..20, 20..21];
        // Bounds on a run's ends cut nothing; bounds inside cut once each.
        assert_eq!(segments_after_split(runs.iter(), &[0, 10, 20, 21]), 3);
        assert_eq!(segments_after_split(runs.iter(), &[0, 3, 5, 10, 15, 20]), 6);
        assert_eq!(segments_after_split(runs.iter(), &[]), 3);
        // Every element a segment: bounds at each index.
        let n = Partition::MAX_PARTS + 2;
        let bounds: Vec<usize> = (0..=n).collect();
        assert_eq!(segments_after_split([0..n].iter(), &bounds), n);
        let halves = [0..n / 2, n / 2..n];
        assert_eq!(segments_after_split(halves.iter(), &bounds), n);
    }

    #[test]
    fn parts_past_the_limits_are_refused_before_they_are_made() {
        let max = Partition::MAX_PARTS;
        assert_eq!(part_runs(&Partition::blocks(1), max).unwrap().0.len(), max);
        for (partition, len) in [
            (Partition::blocks(1), max + 1),
            (Partition::blocks(2), 2 * max + 1),
            (Partition::tiles(1 << 11, 1 << 11, 1, 2), 1 << 22),
            (Partition::tiles(1 << 25, 1, 1 << 20, 1), 1 << 25),
        ] {
            let e = part_runs(&partition, len).unwrap_err();
            assert!(
                e.contains("more than the limit of 2^2"),
                "{partition:?}: {e}"
            );
        }
        let ranges = Partition::ranges((0..=max).map(|i| i..i + 1));
        assert!(part_runs(&ranges, max + 1).unwrap_err().contains("2^20"));
    }
}
