//! The runtime's side of teams and attached data (`graph::team` explains them).

use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, RwLock};

use super::{Migrated, Runtime};
use crate::data::{Data, Element};
use crate::error::Error;
use crate::graph::{Attach, Team, TeamInner};

impl Runtime {
    /// A team on `nodes` (at least one, each in the topology with workers; in the
    /// order tasks are dealt to them), non-strict. See the module documentation.
    ///
    /// ```
    /// use locus::{Runtime, Topology};
    /// let rt = Runtime::builder().topology(Topology::from_spec("2x1")?).build()?;
    /// let team = rt.team(&[1])?;
    /// team.set_strict(true); // only node 1's workers run its tasks
    /// let out = rt.data::<u64>("out", 1);
    /// rt.run(|s| {
    ///     let out = out.clone();
    ///     s.task("leader", ()).team(&team).spawn_control(move |ctx| {
    ///         // A child of a team's task belongs to the team.
    ///         ctx.scope().spawn("child", out.write(), |c, o| o[0] = c.node() as u64).unwrap();
    ///     }).unwrap();
    /// })?;
    /// assert_eq!(rt.fetch(&out)?, vec![1]);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn team(&self, nodes: &[usize]) -> Result<Team, Error> {
        self.check_team_nodes("team", nodes)?;
        Ok(Team {
            inner: Arc::new(TeamInner {
                runtime: self.id,
                nodes: RwLock::new(nodes.to_vec()),
                strict: AtomicBool::new(false),
                next: AtomicUsize::new(0),
                data: Mutex::new(Vec::new()),
            }),
        })
    }

    /// One team per node with workers, in node order (ForestGOMP's `spread`: a
    /// nested parallel region with one team per node).
    pub fn spread(&self) -> Vec<Team> {
        let mut nodes: Vec<usize> = self.engine.worker_node().to_vec();
        nodes.sort_unstable();
        nodes.dedup();
        nodes
            .into_iter()
            .map(|n| self.team(&[n]).expect("a node with workers"))
            .collect()
    }

    /// Re-places `team` on `nodes` between runs: its tasks spawned from now on go
    /// there. With `take_data`, every datum attached to it migrates too, the `k`-th
    /// to the `k mod n`-th new node (as [`migrate`](Self::migrate)); without, the data
    /// stay where they are. Returns what moved.
    ///
    /// Errors: a team of another runtime, nodes as for [`team`](Self::team), and as
    /// [`migrate`](Self::migrate) (from inside a task, or during a run).
    pub fn move_team(
        &self,
        team: &Team,
        nodes: &[usize],
        take_data: bool,
    ) -> Result<Migrated, Error> {
        let op = "move_team";
        if team.runtime() != self.id {
            return Err(Error::Config(format!(
                "{op}: the team belongs to another runtime"
            )));
        }
        self.check_team_nodes(op, nodes)?;
        let mut moved = Migrated::default();
        if take_data {
            let data = team.attached_data();
            for (k, d) in data.iter().enumerate() {
                let m = self.migrate_inner(d, 0..d.len, nodes[k % nodes.len()])?;
                moved.pages += m.pages;
                moved.bytes += m.bytes;
            }
        }
        *team.inner.nodes.write().expect("team lock") = nodes.to_vec();
        team.inner.next.store(0, Ordering::Relaxed);
        Ok(moved)
    }

    /// Attaches `data` to `owner` (MaMI's `mami_attach`): from now on the placement
    /// policies treat it as the owner's data (module documentation). Attaching again
    /// replaces the owner; a datum attached to a team is in the team's list until it
    /// is detached.
    ///
    /// Errors: a datum or team of another runtime, a worker or node outside the
    /// runtime.
    pub fn attach<T: Element>(&self, data: &Data<T>, owner: Attach) -> Result<(), Error> {
        let op = "attach";
        let inner = &data.inner;
        if inner.runtime != self.id {
            return Err(Error::ForeignData {
                task: op.into(),
                data: inner.name.clone(),
            });
        }
        let node = match &owner {
            Attach::Worker(w) => {
                let workers = self.engine.worker_node();
                match workers.get(*w) {
                    Some(&node) => node,
                    None => {
                        return Err(Error::Config(format!(
                            "{op}: worker {w} does not exist (the runtime has {})",
                            workers.len()
                        )))
                    }
                }
            }
            Attach::Node(n) => {
                self.check_node(op, *n)?;
                *n
            }
            Attach::Team(t) => {
                if t.runtime() != self.id {
                    return Err(Error::Config(format!(
                        "{op}: the team belongs to another runtime"
                    )));
                }
                t.home()
            }
        };
        self.detach(data)?;
        if let Attach::Team(t) = &owner {
            t.inner
                .data
                .lock()
                .expect("team lock")
                .push(Arc::downgrade(inner));
        }
        *inner.extras.owner.lock() = Some((owner, node));
        Ok(())
    }

    /// Detaches `data` from its owner, if it has one; the policies then go by where
    /// its memory lies again.
    ///
    /// Errors: a datum of another runtime.
    pub fn detach<T: Element>(&self, data: &Data<T>) -> Result<(), Error> {
        if data.inner.runtime != self.id {
            return Err(Error::ForeignData {
                task: "detach".into(),
                data: data.inner.name.clone(),
            });
        }
        let previous = data.inner.extras.owner.lock().take();
        if let Some((Attach::Team(t), _)) = previous {
            t.inner
                .data
                .lock()
                .expect("team lock")
                .retain(|d| !std::ptr::eq(d.as_ptr(), Arc::as_ptr(&data.inner)));
        }
        Ok(())
    }

    fn check_team_nodes(&self, op: &str, nodes: &[usize]) -> Result<(), Error> {
        if nodes.is_empty() {
            return Err(Error::Config(format!(
                "{op}: a team needs at least one node"
            )));
        }
        let workers = self.engine.worker_node();
        for &n in nodes {
            self.check_node(op, n)?;
            if !workers.contains(&n) {
                return Err(Error::Config(format!(
                    "{op}: node {n} has no workers, so no task of the team could run there"
                )));
            }
        }
        Ok(())
    }
}
