//! Mistakes a program can make with the Rust API that must fail loudly, never give a
//! wrong value or hang: children of a task that declares nothing, an affinity to
//! another runtime's datum, a helper thread of a body calling `run` or `fetch`; and
//! both forms of `RuntimeBuilder::window`.

use std::sync::{Arc, Mutex};

use locus::{Affinity, Config, Data, Error, Runtime, Scope, Topology};

mod common;
use common::within;

fn runtime(spec: &str) -> Runtime {
    Runtime::builder()
        .topology(Topology::from_spec(spec).unwrap())
        .config(Config::DsaOpt)
        .build()
        .unwrap()
}

/// fib(`n`) into `out`, by tasks that declare `out` with `declare` (or nothing), each
/// handing its children the data they write through handles.
fn fib(scope: &Scope, n: u64, out: Data<u64>, declare: bool) {
    let weak = out.weak_write();
    let body = move |ctx: &locus::TaskCtx| {
        if n < 2 {
            ctx.scope()
                .spawn("leaf", out.write(), move |_, o| o[0] = n)
                .unwrap();
            return;
        }
        let (a, b) = (
            ctx.scope().data::<u64>("a", 1),
            ctx.scope().data::<u64>("b", 1),
        );
        fib(ctx.scope(), n - 1, a.clone(), declare);
        fib(ctx.scope(), n - 2, b.clone(), declare);
        ctx.scope()
            .spawn("sum", (a.read(), b.read(), out.write()), |_, (a, b, o)| {
                o[0] = a[0] + b[0]
            })
            .unwrap();
    };
    if declare {
        scope.spawn("fib", weak, move |ctx, ()| body(ctx)).unwrap();
    } else {
        scope.spawn("fib", (), move |ctx, ()| body(ctx)).unwrap();
    }
}

/// A recursive program whose tasks forgot to declare the datum their children write
/// used to run as control tasks and give fib(20) = 0 with no error; the first child
/// writing the undeclared datum is now refused, naming it, its parent, and the way to
/// a control task.
#[test]
fn children_writing_what_their_parent_did_not_declare_fail_the_run() {
    let rt = runtime("2x1");
    let out = rt.data::<u64>("out", 1);
    let failed = rt.run(|s| fib(s, 20, out.clone(), false)).unwrap_err();
    let message = failed.error.to_string();
    assert!(
        matches!(failed.error, Error::Declaration { .. }),
        "{message}"
    );
    // The first refusal is the run's error: the top task's child writing `out`, or,
    // when a nested task on the other worker is refused first, its child writing that
    // task's `a` or `b`.
    assert!(
        ["out", "a", "b"].iter().any(|d| {
            message.contains(&format!("`{d}` is not declared by the parent task `fib`"))
        }),
        "{message}"
    );
    assert!(message.contains("spawn_control"), "{message}");
}

/// The same program declaring what the children write (weakly) is correct.
#[test]
fn children_writing_what_their_parent_declared_give_the_right_value() {
    let rt = runtime("2x1");
    let out = rt.data::<u64>("out", 1);
    rt.run(|s| fib(s, 12, out.clone(), true)).unwrap();
    assert_eq!(rt.fetch(&out).unwrap(), vec![144]);
}

/// A task declaring nothing has a domain of its own: it may spawn children on data
/// created in its scope and wait for them.
#[test]
fn a_task_declaring_nothing_waits_for_children_on_its_own_data() {
    let rt = runtime("2x1");
    let got = Arc::new(Mutex::new(None));
    let slot = got.clone();
    rt.run(|s| {
        s.spawn("parent", (), move |ctx, ()| {
            let x = ctx.scope().data::<u64>("x", 2);
            ctx.scope()
                .spawn("child", x.write(), |_, v| v.fill(5))
                .unwrap();
            *slot.lock().unwrap() = Some(ctx.fetch(&x).unwrap());
        })
        .unwrap();
    })
    .unwrap();
    assert_eq!(got.lock().unwrap().take(), Some(vec![5, 5]));
}

/// An affinity to another runtime's datum used to be accepted, its node read in the
/// other runtime's topology (node 3 of four became node 1 of two).
#[test]
fn an_affinity_to_another_runtimes_datum_is_refused() {
    let (rt, other) = (runtime("2x1"), runtime("4x1"));
    let foreign = other.data_from("foreign", &[1u64; 512]).unwrap();
    other.migrate(&foreign, 3).unwrap_or_else(|e| {
        // Versioned data move between runs too; the refusal does not depend on it.
        panic!("{e}")
    });
    let x = rt.data::<u64>("x", 1);
    let mut spawned = None;
    let failed = rt
        .run(|s| {
            spawned = Some(
                s.task("placed", x.write())
                    .affinity(Affinity::data(&foreign).strict())
                    .spawn(|_, v| v[0] = 1),
            );
        })
        .unwrap_err();
    let refused = spawned.unwrap().unwrap_err();
    for e in [&refused, &failed.error] {
        assert!(
            matches!(e, Error::ForeignData { task, data } if task == "placed" && data == "foreign"),
            "{e}"
        );
    }
    // An affinity to the runtime's own datum is taken.
    rt.run(|s| {
        s.task("placed", x.write())
            .affinity(Affinity::data(&x).strict())
            .spawn(|_, v| v[0] = 2)
            .unwrap();
    })
    .unwrap();
    assert_eq!(rt.fetch(&x).unwrap(), vec![2]);
}

/// A body that joins a helper thread calling `run` or `fetch` on the same runtime used
/// to wait forever (the helper waited for the run, the run for the body); the helper's
/// calls are now refused, so the body goes on.
#[test]
fn run_and_fetch_from_a_helper_thread_of_a_body_are_refused_not_a_deadlock() {
    let (refusals, after) = within(60, || {
        let rt = Arc::new(runtime("2x1"));
        let x = rt.data_from("x", &[7u64; 4]).unwrap();
        let refusals = Arc::new(Mutex::new(Vec::new()));
        let (rt2, x2, slot) = (rt.clone(), x.clone(), refusals.clone());
        rt.run(|s| {
            s.spawn("joins a helper", (), move |_, ()| {
                let helper = std::thread::spawn(move || {
                    let fetched = rt2.fetch(&x2).map(|_| ());
                    let ran = rt2.run(|_| ()).map(|_| ()).map_err(|e| e.error);
                    [fetched, ran]
                });
                *slot.lock().unwrap() = helper.join().unwrap().to_vec();
            })
            .unwrap();
        })
        .unwrap();
        let refusals = refusals.lock().unwrap().clone();
        (refusals, rt.fetch(&x).unwrap())
    });
    assert_eq!(refusals.len(), 2);
    for (op, refusal) in ["fetch", "run"].into_iter().zip(&refusals) {
        let e = refusal.as_ref().unwrap_err();
        assert!(
            matches!(e, Error::RunInProgress { op: o } if o == op),
            "{op}: {e}"
        );
        assert!(e.to_string().contains("in progress"), "{e}");
    }
    assert_eq!(after, vec![7; 4], "fetch works once the run is over");
}

/// The window takes a `usize`, so that an argument whose type comes from the call
/// compiles as it did before `window_bound` existed; `window_bound` takes an `Option`.
#[test]
fn window_takes_a_count_and_window_bound_an_option() {
    let text = "3";
    let window = |b: locus::RuntimeBuilder| {
        let rt = b
            .topology(Topology::from_spec("2x1").unwrap())
            .build()
            .unwrap();
        let finished = rt.run(|_| ()).unwrap();
        finished.report.settings.get("window").unwrap().to_string()
    };
    assert_eq!(
        window(Runtime::builder().window(text.parse().unwrap())),
        "3"
    );
    assert_eq!(window(Runtime::builder().window(16)), "16");
    assert_eq!(window(Runtime::builder().window_bound(Some(5))), "5");
    assert_eq!(window(Runtime::builder().window_bound(None)), "unbounded");
}
