//! Teams and attached data: `locus_team_*`, `locus_attach_*`, `locus_detach`.
//!
//! A team (`locus::Team`, ForestGOMP's *bubble*) is a set of nodes that a task and all
//! its descendants are placed on as a unit: a task spawned with `locus_task::team` set
//! belongs to it, and so does every task its body spawns at any depth (unless one names
//! another team). Attaching a datum to a worker, a node or a team (MaMI's
//! `mami_attach`) makes the placement policies treat it as that owner's data wherever
//! its pages lie. The semantics are the Rust API's (`Runtime::team`, `Runtime::attach`,
//! `docs/guide.md`, "Teams and attached data").
//!
//! A team is a handle like a datum: freed by `locus_team_free` or with its runtime. A
//! task already spawned into a team keeps it after the handle is freed, and so do the
//! data attached to it. A datum attached to a team holds the team and the team holds
//! the datum, so freeing a datum's handle detaches it (nothing could detach it
//! afterwards, and the pair would never be freed).
//!
//! What may be called where: every function here may be called from a body (and the
//! run's root) except `locus_team_move`, which may move memory: from a body it is
//! refused, as `locus_migrate` is.

use locus::{Attach, Team};

use crate::data::{data_of, locus_data};
use crate::handles::Table;
use crate::memory::{between_runs, move_failed, put_pages};
use crate::runtime::{locus_runtime, runtime_of};
use crate::status::{guard, in_call, locus_status, put, CResult, Fail};

/// A team: tasks placed as a unit on a set of nodes. Made by `locus_team_create` or
/// `locus_team_spread`, freed by `locus_team_free` or with its runtime. The all-zero
/// value is the null handle (in `locus_task::team`: no team).
#[repr(C)]
#[allow(non_camel_case_types)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct locus_team {
    /// Opaque: a slot and its generation in Locus's table of teams.
    pub bits: u64,
}

/// A team in the table.
pub(crate) struct TeamEntry {
    team: Team,
    /// The handle bits of the runtime that made it.
    pub(crate) runtime: u64,
}

pub(crate) static TEAMS: Table<TeamEntry> = Table::new("team");

/// The team of `handle`, cloned out of the table.
fn team(handle: locus_team) -> CResult<(Team, u64)> {
    TEAMS.with(handle.bits, |e| (e.team.clone(), e.runtime))
}

/// The team of `handle` if it belongs to runtime `runtime`.
pub(crate) fn team_of(handle: locus_team, runtime: u64) -> CResult<Team> {
    let (team, owner) = team(handle)?;
    if owner != runtime {
        return Err(Fail::new(
            locus_status::LOCUS_E_WRONG_RUNTIME,
            format!("team {:#x} belongs to another runtime", handle.bits),
        ));
    }
    Ok(team)
}

/// The node list of a call: `count` nodes at `nodes` (NULL allowed only when `count`
/// is 0, which Locus then refuses as an empty team).
///
/// # Safety
///
/// `nodes` is NULL or valid for reads of `count` values.
unsafe fn node_list<'a>(nodes: *const usize, count: usize) -> CResult<&'a [usize]> {
    if count == 0 {
        return Ok(&[]);
    }
    if nodes.is_null() {
        return Err(crate::status::null("nodes"));
    }
    // SAFETY: non-NULL and valid for `count` values by the caller's contract.
    Ok(unsafe { std::slice::from_raw_parts(nodes, count) })
}

/// Stores a team and writes its handle to `out`.
///
/// # Safety
///
/// `out` is valid for a write (checked non-NULL by the caller).
unsafe fn store(team: Team, runtime: u64, out: *mut locus_team) -> CResult {
    let bits = TEAMS.insert(TeamEntry { team, runtime });
    // SAFETY: forwarded from the caller.
    unsafe { put(out, locus_team { bits }, "out") }
}

/// Makes a team on the `count` nodes at `nodes` (in the order its tasks are dealt to
/// them), non-strict, and writes its handle to `*out`. A task spawned into it without
/// an affinity of its own gets a node hint to one of its nodes, round robin; so do its
/// descendants. An empty list, or a node outside the topology or without workers, is
/// `LOCUS_E_CONFIG`, naming it.
///
/// # Safety
///
/// `nodes` is valid for reads of `count` values (NULL is an error unless `count` is
/// 0); `out` is NULL (an error) or valid for a write.
#[no_mangle]
pub unsafe extern "C" fn locus_team_create(
    runtime: locus_runtime,
    nodes: *const usize,
    count: usize,
    out: *mut locus_team,
) -> locus_status {
    guard(|| {
        if out.is_null() {
            return Err(crate::status::null("out"));
        }
        // SAFETY: forwarded from the caller.
        let nodes = unsafe { node_list(nodes, count) }?;
        let rt = runtime_of(runtime)?;
        let team = rt.team(nodes).map_err(in_call("locus_team_create"))?;
        // SAFETY: `out` checked non-NULL above.
        unsafe { store(team, runtime.bits, out) }
    })
}

/// Makes one team per node with workers, in node order (ForestGOMP's `spread`: a
/// nested parallel region with one team per node), writes their handles to
/// `teams[0..n]` and `n` to `*count`. `capacity` is the length of `teams`: if it is
/// less than `n`, no team is made, `*count` is still `n`, and the status is
/// `LOCUS_E_SIZE`, so that a caller can ask for the number first with `capacity` 0.
///
/// # Safety
///
/// `teams` is valid for writes of `capacity` handles (NULL allowed when `capacity` is
/// 0); `count` is NULL (an error) or valid for a write.
#[no_mangle]
pub unsafe extern "C" fn locus_team_spread(
    runtime: locus_runtime,
    teams: *mut locus_team,
    capacity: usize,
    count: *mut usize,
) -> locus_status {
    guard(|| {
        if count.is_null() {
            return Err(crate::status::null("count"));
        }
        if capacity > 0 && teams.is_null() {
            return Err(crate::status::null("teams"));
        }
        let rt = runtime_of(runtime)?;
        let made = rt.spread();
        let n = made.len();
        // SAFETY: `count` checked non-NULL, valid for a write by the caller's contract.
        unsafe { put(count, n, "count") }?;
        if capacity < n {
            return Err(Fail::new(
                locus_status::LOCUS_E_SIZE,
                format!("locus_team_spread: {n} teams, room for {capacity}"),
            ));
        }
        for (i, team) in made.into_iter().enumerate() {
            // SAFETY: `i < n <= capacity`, and `teams` is valid for `capacity` handles.
            unsafe { store(team, runtime.bits, teams.add(i)) }?;
        }
        Ok(())
    })
}

/// Frees a team's handle. Tasks already spawned into it stay its members (and their
/// children join it); the data attached to it stay attached.
#[no_mangle]
pub extern "C" fn locus_team_free(team: locus_team) -> locus_status {
    guard(|| TEAMS.remove(team.bits).map(drop))
}

/// Makes the team strict (only its nodes' workers run its tasks) or not (its tasks may
/// be stolen by other nodes' workers once its own are busy: the default). Applies to
/// the tasks spawned afterwards.
#[no_mangle]
pub extern "C" fn locus_team_set_strict(team: locus_team, strict: bool) -> locus_status {
    guard(|| TEAMS.with(team.bits, |e| e.team.set_strict(strict)))
}

/// Writes the team's nodes, in the order its tasks are dealt to them, to
/// `nodes[0..n]` and `n` to `*count`; with `capacity` less than `n`, writes only
/// `*count` and returns `LOCUS_E_SIZE` (ask with `capacity` 0 first).
///
/// # Safety
///
/// `nodes` is valid for writes of `capacity` values (NULL allowed when `capacity` is
/// 0); `count` is NULL (an error) or valid for a write.
#[no_mangle]
pub unsafe extern "C" fn locus_team_nodes(
    team: locus_team,
    nodes: *mut usize,
    capacity: usize,
    count: *mut usize,
) -> locus_status {
    guard(|| {
        if count.is_null() {
            return Err(crate::status::null("count"));
        }
        if capacity > 0 && nodes.is_null() {
            return Err(crate::status::null("nodes"));
        }
        let list = TEAMS.with(team.bits, |e| e.team.nodes())?;
        // SAFETY: `count` checked non-NULL, valid for a write by the caller's contract.
        unsafe { put(count, list.len(), "count") }?;
        if capacity < list.len() {
            return Err(Fail::new(
                locus_status::LOCUS_E_SIZE,
                format!(
                    "locus_team_nodes: the team has {} nodes, room for {capacity}",
                    list.len()
                ),
            ));
        }
        // SAFETY: `nodes` is valid for `capacity >= list.len()` values, and cannot
        // overlap a fresh Vec.
        unsafe { std::ptr::copy_nonoverlapping(list.as_ptr(), nodes, list.len()) };
        Ok(())
    })
}

/// Writes to `*count` how many data are attached to the team (`locus_attach_team`).
///
/// # Safety
///
/// `count` is NULL (an error) or valid for a write.
#[no_mangle]
pub unsafe extern "C" fn locus_team_attached(team: locus_team, count: *mut usize) -> locus_status {
    guard(|| {
        if count.is_null() {
            return Err(crate::status::null("count"));
        }
        let n = TEAMS.with(team.bits, |e| e.team.attached())?;
        // SAFETY: checked non-NULL above; valid for a write by the caller's contract.
        unsafe { put(count, n, "count") }
    })
}

/// Re-places the team on the `count` nodes at `nodes` (paper 2's "update memory
/// hints"): its tasks spawned from now on go there. With `take_data`, every datum
/// attached to it migrates too, the `k`-th to the `k mod count`-th new node (as
/// `locus_migrate`); without, they stay where they are. Writes the pages moved to
/// `*pages` (which may be NULL). Between runs: from a body it is `LOCUS_E_STATE`, and
/// so is a move with data to migrate while another thread runs a program on the
/// runtime (re-placing the team alone is allowed then: it applies to the tasks
/// spawned afterwards). A team of another runtime is `LOCUS_E_WRONG_RUNTIME`; the node
/// list as for `locus_team_create`; other errors as for `locus_migrate`.
///
/// # Safety
///
/// `nodes` is valid for reads of `count` values (NULL is an error unless `count` is
/// 0); `pages` is NULL or valid for a write.
#[no_mangle]
pub unsafe extern "C" fn locus_team_move(
    runtime: locus_runtime,
    team: locus_team,
    nodes: *const usize,
    count: usize,
    take_data: bool,
    pages: *mut u64,
) -> locus_status {
    guard(|| {
        between_runs("locus_team_move")?;
        // SAFETY: forwarded from the caller.
        let nodes = unsafe { node_list(nodes, count) }?;
        let rt = runtime_of(runtime)?;
        let team = team_of(team, runtime.bits)?;
        let moved = rt
            .move_team(&team, nodes, take_data)
            .map_err(move_failed("locus_team_move"))?;
        // SAFETY: forwarded from the caller.
        unsafe { put_pages(pages, moved.pages) };
        Ok(())
    })
}

/// The common part of the attach calls: the runtime and the datum, then `owner`.
fn attach(
    call: &'static str,
    runtime: locus_runtime,
    data: locus_data,
    owner: impl FnOnce() -> CResult<Attach>,
) -> CResult {
    let rt = runtime_of(runtime)?;
    let (d, _, _) = data_of(data, runtime.bits)?;
    rt.attach(&d, owner()?).map_err(in_call(call))?;
    Ok(())
}

/// Attaches the datum to worker `worker` (MaMI's `mami_attach`): from now on the
/// placement policies treat it as that worker's data wherever its pages lie (an
/// affinity to the datum, `LOCUS_AFFINITY_DATA`, is an affinity to the worker;
/// work-pushing and the `auto` migration setting count its bytes on the worker's
/// node). Its memory does not move. Attaching again replaces the owner. A worker that
/// does not exist is `LOCUS_E_CONFIG`; a datum of another runtime
/// `LOCUS_E_WRONG_RUNTIME`.
#[no_mangle]
pub extern "C" fn locus_attach_worker(
    runtime: locus_runtime,
    data: locus_data,
    worker: usize,
) -> locus_status {
    guard(|| {
        attach("locus_attach_worker", runtime, data, || {
            Ok(Attach::Worker(worker))
        })
    })
}

/// As `locus_attach_worker`, to node `node` (an affinity to the datum is an affinity
/// to the node). A node outside the topology is `LOCUS_E_CONFIG`.
#[no_mangle]
pub extern "C" fn locus_attach_node(
    runtime: locus_runtime,
    data: locus_data,
    node: usize,
) -> locus_status {
    guard(|| {
        attach("locus_attach_node", runtime, data, || {
            Ok(Attach::Node(node))
        })
    })
}

/// As `locus_attach_worker`, to a team: the datum counts on the team's first node and
/// migrates with the team when `locus_team_move` is asked to take its data. A team of
/// another runtime is `LOCUS_E_WRONG_RUNTIME`.
#[no_mangle]
pub extern "C" fn locus_attach_team(
    runtime: locus_runtime,
    data: locus_data,
    team: locus_team,
) -> locus_status {
    guard(|| {
        attach("locus_attach_team", runtime, data, || {
            Ok(Attach::Team(team_of(team, runtime.bits)?))
        })
    })
}

/// Detaches the datum from its owner, if it has one: the policies go by where its
/// memory lies again. Freeing a datum's handle detaches it too.
#[no_mangle]
pub extern "C" fn locus_detach(runtime: locus_runtime, data: locus_data) -> locus_status {
    guard(|| {
        let rt = runtime_of(runtime)?;
        let (d, _, _) = data_of(data, runtime.bits)?;
        rt.detach(&d).map_err(in_call("locus_detach"))?;
        Ok(())
    })
}
