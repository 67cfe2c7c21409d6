//! Teams (scopes placed as a unit) and data attached to an owner: ForestGOMP's bubbles
//! and MaMI's `mami_attach` (`locus::Team`, `Runtime::attach`).

use locus::{Affinity, Attach, RegionPolicy, Runtime, Topology};

/// `n` one-element data, each written by one task.
fn slots(rt: &Runtime, n: usize) -> Vec<locus::Data<u64>> {
    (0..n).map(|i| rt.data(format!("slot{i}"), 1)).collect()
}

fn fetch_all(rt: &Runtime, slots: &[locus::Data<u64>]) -> Vec<u64> {
    slots.iter().map(|d| rt.fetch(d).unwrap()[0]).collect()
}

fn runtime(spec: &str) -> Runtime {
    Runtime::builder()
        .topology(Topology::from_spec(spec).unwrap())
        .build()
        .unwrap()
}

/// Every task of a strict team, and every task its tasks spawn, runs on the team's
/// nodes; one team per node with `spread`.
#[test]
fn a_team_and_its_descendants_run_on_its_nodes() {
    let rt = runtime("4x1");
    let teams = rt.spread();
    assert_eq!(teams.len(), 4);
    let out = slots(&rt, 4 * 8);
    rt.run(|s| {
        for (k, team) in teams.iter().enumerate() {
            team.set_strict(true);
            let out = out.clone();
            s.task("leader", ())
                .team(team)
                .spawn_control(move |ctx| {
                    for i in 0..8 {
                        let slot = out[k * 8 + i].clone();
                        ctx.scope()
                            .spawn("member", slot.write(), |c, o| o[0] = c.node() as u64)
                            .unwrap();
                    }
                })
                .unwrap();
        }
    })
    .unwrap();
    let got = fetch_all(&rt, &out);
    for (k, chunk) in got.chunks(8).enumerate() {
        assert!(chunk.iter().all(|&n| n == k as u64), "team {k}: {chunk:?}");
    }
}

/// A two-node team deals its tasks to its nodes in turn; a task's own hint wins.
#[test]
fn a_team_on_several_nodes_deals_its_tasks_round_robin() {
    let rt = runtime("4x1");
    let team = rt.team(&[3, 1]).unwrap();
    team.set_strict(true);
    let out = slots(&rt, 5);
    rt.run(|s| {
        for slot in &out[..4] {
            s.task("member", slot.write())
                .team(&team)
                .spawn(|c, o| o[0] = c.node() as u64)
                .unwrap();
        }
        s.task("own hint", out[4].write())
            .team(&team)
            .affinity(Affinity::node(2).strict())
            .spawn(|c, o| o[0] = c.node() as u64)
            .unwrap();
    })
    .unwrap();
    assert_eq!(fetch_all(&rt, &out), vec![3, 1, 3, 1, 2]);
}

/// Re-placing a team between phases moves its later tasks, and its attached data
/// when asked.
#[test]
fn moving_a_team_takes_its_data_along_or_not() {
    let rt = runtime("4x1");
    let team = rt.team(&[0]).unwrap();
    team.set_strict(true);
    let a = rt.shared::<u64>("a", 4096, RegionPolicy::Bind(0)).unwrap();
    let b = rt.shared::<u64>("b", 4096, RegionPolicy::Bind(0)).unwrap();
    rt.attach(&a, Attach::Team(team.clone())).unwrap();
    assert_eq!(team.attached(), 1);
    let moved = rt.move_team(&team, &[2], false).unwrap();
    assert_eq!(moved.pages, 0);
    assert_eq!(rt.bytes_per_node(&a).unwrap()[0], 8 * 4096);
    let moved = rt.move_team(&team, &[3], true).unwrap();
    assert_eq!(moved.pages, 8);
    assert_eq!(rt.bytes_per_node(&a).unwrap()[3], 8 * 4096);
    // Only attached data move.
    assert_eq!(rt.bytes_per_node(&b).unwrap()[0], 8 * 4096);
    let node = rt.data::<u64>("node", 1);
    rt.run(|s| {
        s.task("after", node.write())
            .team(&team)
            .spawn(|c, o| o[0] = c.node() as u64)
            .unwrap();
    })
    .unwrap();
    assert_eq!(rt.fetch(&node).unwrap(), vec![3]);
    // Another runtime cannot detach it.
    assert!(matches!(
        runtime("1x1").detach(&a),
        Err(locus::Error::ForeignData { .. })
    ));
    assert_eq!(team.attached(), 1);
    // Detached, a datum stays when its team moves.
    rt.detach(&a).unwrap();
    assert_eq!(team.attached(), 0);
    assert_eq!(rt.move_team(&team, &[1], true).unwrap().pages, 0);
}

/// An affinity to an attached datum is an affinity to its owner, wherever its pages
/// lie; detached, it goes by the pages again.
#[test]
fn an_attached_datum_is_its_owners() {
    let rt = runtime("4x1");
    let v = rt.shared::<u64>("v", 4096, RegionPolicy::Bind(0)).unwrap();
    let node = slots(&rt, 3);
    let team = rt.team(&[1]).unwrap();
    let on = |slot: usize| {
        let node = node[slot].clone();
        let v = v.clone();
        rt.run(move |s| {
            s.task("reader", (v.read(), node.write()))
                .affinity(Affinity::data(&v).strict())
                .spawn(|c, (_, o)| o[0] = c.node() as u64)
                .unwrap();
        })
        .unwrap();
    };
    rt.attach(&v, Attach::Node(2)).unwrap();
    on(0);
    rt.attach(&v, Attach::Team(team.clone())).unwrap();
    on(1);
    rt.detach(&v).unwrap();
    on(2);
    assert_eq!(fetch_all(&rt, &node), vec![2, 1, 0]);
    // Its pages never moved.
    assert_eq!(rt.bytes_per_node(&v).unwrap()[0], 8 * 4096);
}

#[test]
fn bad_teams_and_attachments_are_errors() {
    let rt = runtime("2x1");
    assert!(rt.team(&[]).is_err());
    assert!(rt.team(&[2]).is_err());
    let v = rt.data::<u64>("v", 4);
    assert!(rt.attach(&v, Attach::Worker(2)).is_err());
    assert!(rt.attach(&v, Attach::Node(5)).is_err());
    let other = runtime("2x1");
    let foreign = other.team(&[0]).unwrap();
    assert!(rt.attach(&v, Attach::Team(foreign.clone())).is_err());
    assert!(rt.move_team(&foreign, &[1], false).is_err());
    let team = rt.team(&[0]).unwrap();
    assert!(rt.move_team(&team, &[9], false).is_err());
    let w = other.data::<u64>("w", 4);
    assert!(rt.attach(&w, Attach::Node(0)).is_err());
    // A task of another runtime's team is refused, and fails the run.
    let err = rt.run(|s| {
        let _ = s.task("t", v.write()).team(&foreign).spawn(|_, _| {});
    });
    assert!(err.is_err());
}

/// Work-pushing counts an attached datum's bytes on its owner's node: a task reading
/// a datum whose pages lie on the submitter's node is pushed to the node it is
/// attached to.
#[test]
fn pushing_sends_a_reader_to_the_owner_of_its_data() {
    let rt = Runtime::builder()
        .topology(Topology::from_spec("4x1").unwrap())
        .config(locus::Config::DsaOpt)
        .build()
        .unwrap();
    let v = rt
        .shared::<u64>("v", 1 << 16, RegionPolicy::Bind(0))
        .unwrap();
    let pushes = |rt: &Runtime| {
        let out = rt.data::<u64>("out", 1);
        rt.run(|s| {
            s.spawn("reader", (v.read(), out.write()), |_, (x, o)| o[0] = x[0])
                .unwrap();
        })
        .unwrap()
        .report
        .pushes
        .attempted
    };
    let before = pushes(&rt);
    rt.attach(&v, Attach::Node(2)).unwrap();
    let attached = pushes(&rt);
    assert_eq!((before, attached), (0, 1));
}

/// A team does not keep its attached data alive: a datum its user drops leaves the
/// team's list (and its memory is freed).
#[test]
fn a_dropped_datum_leaves_its_team() {
    let rt = runtime("2x1");
    let team = rt.team(&[1]).unwrap();
    let v = rt.shared::<u64>("v", 4096, RegionPolicy::Bind(0)).unwrap();
    rt.attach(&v, Attach::Team(team.clone())).unwrap();
    assert_eq!(team.attached(), 1);
    drop(v);
    assert_eq!(team.attached(), 0);
    assert_eq!(rt.move_team(&team, &[0], true).unwrap().pages, 0);
}
