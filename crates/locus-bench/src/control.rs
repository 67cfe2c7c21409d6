//! Control programs of the kernels: who submits the tasks.
//!
//! With [`Control::Sequential`] the run's root task submits every task. With
//! [`Control::Parallel`] the root only submits *creator* tasks, and each creator submits
//! the tasks of one band of the iteration space (a group of blocks for one iteration or
//! step) from its nested scope, so that task creation is spread over the workers
//! (paper 1 section 4.3: "a parallel control program to prevent sequential task creation
//! from becoming a performance bottleneck").
//!
//! # Why creators carry tokens
//!
//! A task spawned from inside a task binds each read to the version current when it is
//! spawned. Two creators whose tasks touch the same datum, one of them writing it, would
//! therefore race: the reader's tasks would bind to whichever version the writer's
//! creator had submitted so far. Every creator thus declares one-word *token* data that
//! mirror, band by band, the data its tasks read and write: a creator writes the token of
//! each band its tasks write and reads the tokens of the bands its tasks read. Since a
//! task finishes when its body returns (its children are not awaited), a token version is
//! produced as soon as its creator has submitted its tasks. The root submits creators in
//! the order of the sequential program, so the tokens order the creators exactly as the
//! conflicting submissions of the sequential program are ordered: a creator runs only
//! after every creator whose versions its tasks read, and (through those same reads, for
//! the kernels here) after every creator whose tasks read the versions it replaces.
//! Creators themselves stay far ahead of the computation: they wait for each other's
//! submissions, never for the tasks they submit.

use std::fmt;
use std::str::FromStr;

use locus::{Data, Read, ReadWrite, Runtime, Scope, Write};
use serde::{Deserialize, Serialize};

/// Who submits a kernel's tasks.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Control {
    /// The root task submits every task.
    #[default]
    Sequential,
    /// Creator tasks submit the tasks of one band each, from their nested scopes.
    Parallel,
}

impl Control {
    /// Both control programs.
    pub const ALL: [Control; 2] = [Control::Sequential, Control::Parallel];

    /// The name used on the command line (`seq`, `parallel`).
    pub fn name(self) -> &'static str {
        match self {
            Control::Sequential => "seq",
            Control::Parallel => "parallel",
        }
    }
}

impl fmt::Display for Control {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

impl FromStr for Control {
    type Err = String;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        match s {
            "seq" | "sequential" => Ok(Control::Sequential),
            "par" | "parallel" => Ok(Control::Parallel),
            _ => Err(format!(
                "unknown control program `{s}` (expected seq or parallel)"
            )),
        }
    }
}

/// Most creators per iteration (or step) for kernels whose bands are groups of blocks.
pub(crate) const MAX_CREATORS: usize = 16;

/// Splits `0..n` into at most `parts` contiguous, nearly equal, non-empty ranges.
pub(crate) fn split(n: usize, parts: usize) -> Vec<std::ops::Range<usize>> {
    let parts = parts.clamp(1, n.max(1));
    (0..parts)
        .map(|p| p * n / parts..(p + 1) * n / parts)
        .filter(|r| !r.is_empty())
        .collect()
}

/// Spawns a creator: a control task declaring `tokens`, whose body runs `submit` in
/// its nested scope. A control task sees no buffer, so creators run even when an engine
/// skips task bodies (a simulation at paper sizes), and the kernel's tasks are all
/// submitted whatever the engine.
///
/// A refused declaration inside `submit` has already failed the run, which reports it;
/// the creator has nothing to add.
pub(crate) fn spawn_creator<L, F>(s: &Scope, tokens: L, submit: F) -> Result<(), locus::Error>
where
    L: locus::AccessList,
    F: FnOnce(&Scope) -> Result<(), locus::Error> + Send + 'static,
{
    s.spawn_control("creator", tokens, move |ctx| {
        let _ = submit(ctx.scope());
    })
}

/// One token per band, for creators of a sweep over bands.
pub(crate) struct BandTokens {
    /// Two sets for out-of-place sweeps (the tokens follow the data's double buffering);
    /// in-place sweeps use the first only.
    sets: [Vec<Data<u64>>; 2],
}

impl BandTokens {
    /// Tokens for `bands` bands.
    pub(crate) fn new(rt: &Runtime, bands: usize) -> Self {
        let set = |k: usize| {
            (0..bands)
                .map(|g| rt.data::<u64>(format!("token{k}.{g}"), 1))
                .collect()
        };
        BandTokens {
            sets: [set(0), set(1)],
        }
    }

    /// Creator of band `g` of iteration `t` of an out-of-place (Jacobi) sweep whose
    /// tasks read bands `g-1..=g+1` of iteration `t - 1` and write band `g`.
    pub(crate) fn jacobi(&self, t: usize, g: usize) -> (Vec<Read<u64>>, Write<u64>) {
        let (src, dst) = (&self.sets[t % 2], &self.sets[(t + 1) % 2]);
        let reads = neighbours(g, src.len()).map(|h| src[h].read()).collect();
        (reads, dst[g].write())
    }

    /// Creator of band `g` of an in-place (Gauss-Seidel) sweep whose tasks read band
    /// `g-1` of this iteration, bands `g..=g+1` of the previous one, and write band `g`.
    pub(crate) fn seidel(&self, g: usize) -> (Vec<Read<u64>>, ReadWrite<u64>) {
        let tokens = &self.sets[0];
        let reads = neighbours(g, tokens.len())
            .filter(|&h| h != g)
            .map(|h| tokens[h].read())
            .collect();
        (reads, tokens[g].read_write())
    }

    /// The token of band `g` (first set), for kernels with their own creator pattern.
    pub(crate) fn get(&self, g: usize) -> &Data<u64> {
        &self.sets[0][g]
    }
}

/// Bands `g-1..=g+1` that exist among `bands`.
fn neighbours(g: usize, bands: usize) -> impl Iterator<Item = usize> {
    g.saturating_sub(1)..(g + 2).min(bands)
}

/// An optional access as a list of zero or one access, whose view is a `Vec` of zero or
/// one slice.
pub(crate) fn opt<A>(access: Option<A>) -> Vec<A> {
    access.into_iter().collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn split_covers_everything_once() {
        for n in 0..40 {
            for parts in 1..20 {
                let ranges = split(n, parts);
                assert!(ranges.len() <= parts);
                let flat: Vec<usize> = ranges.into_iter().flatten().collect();
                assert_eq!(flat, (0..n).collect::<Vec<_>>());
            }
        }
    }

    #[test]
    fn control_names_round_trip() {
        for c in Control::ALL {
            assert_eq!(c.name().parse::<Control>().unwrap(), c);
        }
        assert!("sideways".parse::<Control>().is_err());
    }
}
