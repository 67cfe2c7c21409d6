//! The `overhead` graph (`crates/locus-bench/src/overhead.rs`) as fork-join rounds: the
//! graph has no fork-join form that keeps its dependences, so each step of the chains is
//! one `rayon::scope` that spawns one task per chain (advancing its word) and, where
//! Locus's control program interleaves a fan-out/fan-in round, one task that writes the
//! source word, spawns `fan` tasks in a nested scope (each reading it and writing its own
//! word) and then adds them to the total. The scope's end is a barrier that the dataflow
//! versions do not have: this measures rayon's cost per spawned closure, on the same
//! number of tiny tasks.
//!
//! Verification: every chain's word and the total equal the sequential loop's.

use crate::Outcome;

/// One step of a chain.
fn step(x: u64, k: u64) -> u64 {
    x.wrapping_mul(3).wrapping_add(k)
}

/// One word per cache line, as Locus gives each datum its own block.
#[derive(Clone, Copy, Default)]
#[repr(align(64))]
struct Word(u64);

/// One fan-out/fan-in round `r`.
fn round(r: u64, source: &mut Word, fans: &mut [Word], total: &mut Word) {
    source.0 = r;
    let s = source.0;
    rayon::scope(|scope| {
        for (k, f) in fans.iter_mut().enumerate() {
            scope.spawn(move |_| f.0 = step(s, k as u64));
        }
    });
    total.0 = fans.iter().fold(total.0, |t, f| t.wrapping_add(f.0));
}

/// Runs the kernel with the arguments after its name.
pub fn run(args: &[String]) -> Result<Outcome, String> {
    if args.len() != 4 {
        return Err("expected CHAINS LENGTH ROUNDS FAN".into());
    }
    let [chains, length, rounds, fan] = crate::numbers(args, [0; 4])?;
    if fan == 0 {
        return Err("FAN must be at least 1".into());
    }
    let mut chain = vec![Word::default(); chains];
    let mut fans = vec![Word::default(); fan];
    let (mut source, mut total) = (Word::default(), Word::default());
    // A round after every `every` chain steps, as Locus's control program interleaves them.
    let every = length.checked_div(rounds).unwrap_or(1).max(1);

    let ((), wall_s) = crate::timed(|| {
        let mut done = 0;
        for i in 0..length {
            let due = i % every == 0 && done < rounds;
            if due {
                done += 1;
            }
            let r = done as u64;
            let (source, fans, total) = (&mut source, &mut fans, &mut total);
            rayon::scope(|scope| {
                for (c, w) in chain.iter_mut().enumerate() {
                    let k = (c * length + i) as u64;
                    scope.spawn(move |_| w.0 = step(w.0, k));
                }
                if due {
                    scope.spawn(move |_| round(r, source, fans, total));
                }
            });
        }
        while done < rounds {
            done += 1;
            round(done as u64, &mut source, &mut fans, &mut total);
        }
    });

    let mut verified = chain.iter().enumerate().all(|(c, w)| {
        let want = (0..length).fold(0u64, |x, i| step(x, (c * length + i) as u64));
        w.0 == want
    });
    let want_total = (1..=rounds as u64).fold(0u64, |t, r| {
        (0..fan as u64).fold(t, |t, k| t.wrapping_add(step(r, k)))
    });
    verified &= total.0 == want_total;
    Ok(Outcome {
        tasks: chains * length + rounds * (fan + 2),
        wall_s,
        verified,
        params: format!(
            "{{\"chains\": {chains}, \"length\": {length}, \"rounds\": {rounds}, \"fan\": {fan}}}"
        ),
    })
}
