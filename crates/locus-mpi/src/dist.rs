//! Distributions: which rank owns each datum of a distributed program.
//!
//! Data are numbered (a block's linear index, a tile's `i * cols + j`); a distribution
//! maps that number to the rank that owns the datum, and the owner runs every task that
//! writes it ("owner computes", as in StarPU-MPI and ScaLAPACK). The 1-D and 2-D block
//! and block-cyclic layouts are ScaLAPACK's; a user function covers the rest.

use std::fmt;
use std::sync::Arc;

/// A `p × q` grid of ranks, row-major: rank `r` sits at `(r / q, r % q)`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ProcessGrid {
    /// Rows of the grid.
    pub p: usize,
    /// Columns of the grid.
    pub q: usize,
}

impl ProcessGrid {
    /// The squarest grid of `ranks` ranks (`p <= q`, `p` the largest divisor of `ranks`
    /// not above its square root): 4 ranks make 2 × 2, 6 make 2 × 3, 7 make 1 × 7.
    pub fn squarest(ranks: usize) -> Self {
        let ranks = ranks.max(1);
        let p = (1..=ranks)
            .take_while(|p| p * p <= ranks)
            .filter(|p| ranks % p == 0)
            .last()
            .unwrap_or(1);
        ProcessGrid { p, q: ranks / p }
    }

    /// Ranks in the grid.
    pub fn ranks(&self) -> usize {
        self.p * self.q
    }

    /// The rank at grid position `(i, j)`.
    pub fn rank(&self, i: usize, j: usize) -> usize {
        i * self.q + j
    }
}

/// Which rank owns datum `i`.
#[derive(Clone)]
pub enum Distribution {
    /// `len` data in `ranks` contiguous runs of nearly equal length: datum `i` belongs
    /// to rank `i * ranks / len`.
    Block {
        /// Data distributed.
        len: usize,
        /// Ranks.
        ranks: usize,
    },
    /// Runs of `block` data dealt to the ranks in turn: datum `i` belongs to rank
    /// `(i / block) % ranks`.
    BlockCyclic {
        /// Data per run.
        block: usize,
        /// Ranks.
        ranks: usize,
    },
    /// A `rows × cols` array of data (datum `i` at `(i / cols, i % cols)`) cut into one
    /// rectangle per rank of `grid`: row `r` goes to grid row `r * p / rows`, column `c`
    /// to grid column `c * q / cols`.
    Block2d {
        /// Rows of data.
        rows: usize,
        /// Columns of data.
        cols: usize,
        /// The ranks' grid.
        grid: ProcessGrid,
    },
    /// A `rows × cols` array of data (datum `i` at `(i / cols, i % cols)`) dealt
    /// cyclically over `grid` in both dimensions: `(r, c)` belongs to the rank at
    /// `(r % p, c % q)` (ScaLAPACK's 2-D block-cyclic layout, one datum per block).
    BlockCyclic2d {
        /// Columns of data.
        cols: usize,
        /// The ranks' grid.
        grid: ProcessGrid,
    },
    /// A user function from a datum's number to its rank.
    Custom(Arc<dyn Fn(usize) -> usize + Send + Sync>),
}

impl fmt::Debug for Distribution {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Distribution::Block { len, ranks } => write!(f, "block({len} over {ranks})"),
            Distribution::BlockCyclic { block, ranks } => {
                write!(f, "block-cyclic({block} over {ranks})")
            }
            Distribution::Block2d { rows, cols, grid } => {
                write!(f, "block-2d({rows}x{cols} over {}x{})", grid.p, grid.q)
            }
            Distribution::BlockCyclic2d { cols, grid } => {
                write!(
                    f,
                    "block-cyclic-2d({cols} columns over {}x{})",
                    grid.p, grid.q
                )
            }
            Distribution::Custom(_) => write!(f, "custom"),
        }
    }
}

impl Distribution {
    /// A user-defined distribution.
    pub fn custom(owner: impl Fn(usize) -> usize + Send + Sync + 'static) -> Self {
        Distribution::Custom(Arc::new(owner))
    }

    /// The rank owning datum `i`.
    pub fn owner(&self, i: usize) -> usize {
        match *self {
            Distribution::Block { len, ranks } => i * ranks.max(1) / len.max(1),
            Distribution::BlockCyclic { block, ranks } => (i / block.max(1)) % ranks.max(1),
            Distribution::Block2d { rows, cols, grid } => {
                let (r, c) = (i / cols.max(1), i % cols.max(1));
                grid.rank(r * grid.p / rows.max(1), c * grid.q / cols.max(1))
            }
            Distribution::BlockCyclic2d { cols, grid } => {
                let (r, c) = (i / cols.max(1), i % cols.max(1));
                grid.rank(r % grid.p, c % grid.q)
            }
            Distribution::Custom(ref f) => f(i),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn squarest_grids() {
        let g = |n| {
            let g = ProcessGrid::squarest(n);
            (g.p, g.q)
        };
        assert_eq!(g(1), (1, 1));
        assert_eq!(g(2), (1, 2));
        assert_eq!(g(4), (2, 2));
        assert_eq!(g(6), (2, 3));
        assert_eq!(g(7), (1, 7));
        assert_eq!(g(64), (8, 8));
    }

    #[test]
    fn block_1d_is_contiguous_and_balanced() {
        let d = Distribution::Block { len: 10, ranks: 4 };
        let owners: Vec<usize> = (0..10).map(|i| d.owner(i)).collect();
        assert_eq!(owners, [0, 0, 0, 1, 1, 2, 2, 2, 3, 3]);
    }

    #[test]
    fn block_cyclic_1d_deals_runs() {
        let d = Distribution::BlockCyclic { block: 2, ranks: 3 };
        let owners: Vec<usize> = (0..8).map(|i| d.owner(i)).collect();
        assert_eq!(owners, [0, 0, 1, 1, 2, 2, 0, 0]);
    }

    #[test]
    fn block_2d_cuts_rectangles() {
        // 4 x 4 data over 2 x 2 ranks: each rank a 2 x 2 quadrant.
        let d = Distribution::Block2d {
            rows: 4,
            cols: 4,
            grid: ProcessGrid { p: 2, q: 2 },
        };
        let owners: Vec<usize> = (0..16).map(|i| d.owner(i)).collect();
        assert_eq!(owners, [0, 0, 1, 1, 0, 0, 1, 1, 2, 2, 3, 3, 2, 2, 3, 3]);
    }

    #[test]
    fn block_cyclic_2d_deals_both_ways() {
        let d = Distribution::BlockCyclic2d {
            cols: 3,
            grid: ProcessGrid { p: 2, q: 2 },
        };
        let owners: Vec<usize> = (0..9).map(|i| d.owner(i)).collect();
        assert_eq!(owners, [0, 1, 0, 2, 3, 2, 0, 1, 0]);
    }

    #[test]
    fn custom_calls_the_function() {
        let d = Distribution::custom(|i| (i * 7) % 3);
        assert_eq!(d.owner(2), 2);
        assert_eq!(format!("{d:?}"), "custom");
    }
}
