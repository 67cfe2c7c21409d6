//! Chrome trace event JSON (the format Perfetto and `chrome://tracing` open), written
//! as a stream: processes and rows (metadata), complete events (slices), flow events
//! (arrows between slices) and counter events.
//!
//! The writer knows no engine: it takes rows, names, nanosecond times and arguments, so
//! the `threads` engine (through [`TraceRecorder`](super::TraceRecorder)) and the
//! simulator emit the same format. Times are printed from integers
//! (microseconds with three decimals), so equal inputs give byte-identical files.

use std::fmt::Write as _;
use std::io::{self, Write};

/// Colour names the trace viewers reserve, one per node (modulo their number).
const NODE_COLOURS: [&str; 8] = [
    "thread_state_running",
    "rail_response",
    "rail_animation",
    "thread_state_iowait",
    "rail_idle",
    "olive",
    "rail_load",
    "thread_state_runnable",
];

/// The reserved colour name of a node's tasks.
pub fn node_colour(node: usize) -> &'static str {
    NODE_COLOURS[node % NODE_COLOURS.len()]
}

/// A value of an event's `args`.
#[derive(Clone, Copy, Debug)]
pub enum Arg<'a> {
    /// An integer.
    Int(u64),
    /// A signed integer (e.g. -1 for "none").
    Signed(i64),
    /// A string.
    Str(&'a str),
}

/// A Chrome trace being written to `W`.
pub struct ChromeTrace<W: Write> {
    out: W,
    first: bool,
}

impl<W: Write> ChromeTrace<W> {
    /// Starts a trace (writes the opening of the event array).
    pub fn new(mut out: W) -> io::Result<Self> {
        out.write_all(b"{\"displayTimeUnit\":\"ns\",\"traceEvents\":[\n")?;
        Ok(ChromeTrace { out, first: true })
    }

    fn separator(&mut self) -> io::Result<()> {
        if self.first {
            self.first = false;
            Ok(())
        } else {
            self.out.write_all(b",\n")
        }
    }

    /// Names the process (the trace's title in the viewer).
    pub fn process_name(&mut self, pid: u32, name: &str) -> io::Result<()> {
        self.separator()?;
        write!(
            self.out,
            "{{\"ph\":\"M\",\"pid\":{pid},\"tid\":0,\"name\":\"process_name\",\"args\":{{\"name\":{}}}}}",
            quote(name)
        )
    }

    /// Names process `pid` and places it at `sort_index` (processes sort by index).
    pub fn sorted_process_name(&mut self, pid: u32, sort_index: u32, name: &str) -> io::Result<()> {
        self.process_name(pid, name)?;
        self.separator()?;
        write!(
            self.out,
            "{{\"ph\":\"M\",\"pid\":{pid},\"tid\":0,\"name\":\"process_sort_index\",\"args\":{{\"sort_index\":{sort_index}}}}}"
        )
    }

    /// A counter event (`ph: C`): series `key` of counter `name` of process `pid` takes
    /// `value` at `at_ns`. Perfetto names the track `NAME KEY` (e.g. `remote bytes`).
    pub fn counter(
        &mut self,
        pid: u32,
        (name, key): (&str, &str),
        at_ns: u64,
        value: u64,
    ) -> io::Result<()> {
        self.separator()?;
        write!(
            self.out,
            "{{\"ph\":\"C\",\"pid\":{pid},\"tid\":0,\"name\":{},\"ts\":{},\"args\":{{{}:{value}}}}}",
            quote(name),
            micros(at_ns),
            quote(key)
        )
    }

    /// The start of flow `id` (`ph: s`), inside the slice that runs at `at_ns` on row
    /// `tid` of process `pid`.
    pub fn flow_start(&mut self, pid: u32, tid: u32, id: u64, at_ns: u64) -> io::Result<()> {
        self.separator()?;
        write!(
            self.out,
            "{{\"ph\":\"s\",\"pid\":{pid},\"tid\":{tid},\"name\":\"made ready\",\"cat\":\"dependence\",\"id\":{id},\"ts\":{}}}",
            micros(at_ns)
        )
    }

    /// The end of flow `id` (`ph: f`, bound to the enclosing slice), at the start of the
    /// slice at `at_ns` on row `tid` of process `pid`.
    pub fn flow_end(&mut self, pid: u32, tid: u32, id: u64, at_ns: u64) -> io::Result<()> {
        self.separator()?;
        write!(
            self.out,
            "{{\"ph\":\"f\",\"bp\":\"e\",\"pid\":{pid},\"tid\":{tid},\"name\":\"made ready\",\"cat\":\"dependence\",\"id\":{id},\"ts\":{}}}",
            micros(at_ns)
        )
    }

    /// A global instant event (`ph: i`, scope `g`): a line across the whole trace at
    /// `at_ns`, named `name`, with `args`.
    pub fn global_instant(
        &mut self,
        name: &str,
        at_ns: u64,
        args: &[(&str, Arg<'_>)],
    ) -> io::Result<()> {
        self.separator()?;
        write!(
            self.out,
            "{{\"ph\":\"i\",\"s\":\"g\",\"pid\":0,\"tid\":0,\"name\":{},\"ts\":{}",
            quote(name),
            micros(at_ns)
        )?;
        self.args(args)
    }

    /// Names row `tid` and fixes its position (rows sort by index).
    pub fn thread_name(&mut self, pid: u32, tid: u32, name: &str) -> io::Result<()> {
        self.sorted_thread_name(pid, tid, tid, name)
    }

    /// Names row `tid` and places it at `sort_index` (rows sort by index).
    pub fn sorted_thread_name(
        &mut self,
        pid: u32,
        tid: u32,
        sort_index: u32,
        name: &str,
    ) -> io::Result<()> {
        self.separator()?;
        write!(
            self.out,
            "{{\"ph\":\"M\",\"pid\":{pid},\"tid\":{tid},\"name\":\"thread_name\",\"args\":{{\"name\":{}}}}},\n\
             {{\"ph\":\"M\",\"pid\":{pid},\"tid\":{tid},\"name\":\"thread_sort_index\",\"args\":{{\"sort_index\":{sort_index}}}}}",
            quote(name)
        )
    }

    /// One row per worker, row `w` named `worker W (node N)` after `worker_node[w]`,
    /// the rows of a node together (by node, then by worker).
    pub fn worker_rows(&mut self, pid: u32, worker_node: &[usize]) -> io::Result<()> {
        let mut order: Vec<usize> = (0..worker_node.len()).collect();
        order.sort_by_key(|&w| (worker_node[w], w));
        for (rank, &w) in order.iter().enumerate() {
            let name = format!("worker {w} (node {})", worker_node[w]);
            self.sorted_thread_name(pid, w as u32, rank as u32, &name)?;
        }
        Ok(())
    }

    /// A complete event (`ph: X`) on row `tid`, from `start_ns` for `dur_ns`.
    #[allow(clippy::too_many_arguments)]
    pub fn complete(
        &mut self,
        pid: u32,
        tid: u32,
        name: &str,
        category: &str,
        colour: Option<&str>,
        start_ns: u64,
        dur_ns: u64,
        args: &[(&str, Arg<'_>)],
    ) -> io::Result<()> {
        self.separator()?;
        write!(
            self.out,
            "{{\"ph\":\"X\",\"pid\":{pid},\"tid\":{tid},\"name\":{},\"cat\":{},\"ts\":{},\"dur\":{}",
            quote(name),
            quote(category),
            micros(start_ns),
            micros(dur_ns)
        )?;
        if let Some(c) = colour {
            write!(self.out, ",\"cname\":{}", quote(c))?;
        }
        self.args(args)
    }

    /// `,"args":{...}}`: the arguments of an event, and its end.
    fn args(&mut self, args: &[(&str, Arg<'_>)]) -> io::Result<()> {
        self.out.write_all(b",\"args\":{")?;
        for (i, (key, value)) in args.iter().enumerate() {
            if i > 0 {
                self.out.write_all(b",")?;
            }
            match value {
                Arg::Int(v) => write!(self.out, "{}:{v}", quote(key))?,
                Arg::Signed(v) => write!(self.out, "{}:{v}", quote(key))?,
                Arg::Str(s) => write!(self.out, "{}:{}", quote(key), quote(s))?,
            }
        }
        self.out.write_all(b"}}")
    }

    /// Closes the event array and returns the writer.
    pub fn finish(mut self) -> io::Result<W> {
        self.out.write_all(b"\n]}\n")?;
        self.out.flush()?;
        Ok(self.out)
    }
}

/// Nanoseconds as microseconds with three decimals, from integers.
fn micros(ns: u64) -> String {
    format!("{}.{:03}", ns / 1000, ns % 1000)
}

/// A JSON string literal (RFC 8259: quote, backslash and control characters escaped).
fn quote(s: &str) -> String {
    let mut out = String::with_capacity(s.len() + 2);
    out.push('"');
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            c if (c as u32) < 0x20 => {
                let _ = write!(out, "\\u{:04x}", c as u32);
            }
            c => out.push(c),
        }
    }
    out.push('"');
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn writes_valid_json_with_exact_times() {
        let mut t = ChromeTrace::new(Vec::new()).unwrap();
        t.process_name(0, "locus sim").unwrap();
        t.thread_name(0, 1, "worker 1 (node 0)").unwrap();
        t.complete(
            0,
            1,
            "jacobi \"b\"",
            "node 0",
            Some(node_colour(0)),
            1_234_567,
            1_001,
            &[("node", Arg::Int(0)), ("mode", Arg::Str("run"))],
        )
        .unwrap();
        let bytes = t.finish().unwrap();
        let v: serde_json::Value = serde_json::from_slice(&bytes).unwrap();
        let events = v["traceEvents"].as_array().unwrap();
        assert_eq!(events.len(), 4);
        let x = &events[3];
        assert_eq!(x["ph"], "X");
        assert_eq!(x["name"], "jacobi \"b\"");
        assert_eq!(x["ts"].as_f64().unwrap(), 1234.567);
        assert_eq!(x["dur"].as_f64().unwrap(), 1.001);
        assert_eq!(x["args"]["mode"], "run");
    }

    #[test]
    fn quotes_every_character_serde_json_reads_back() {
        let nasty = "a\"b\\c\nd\re\tf\u{1}g\u{1f}h\u{7f}é✓";
        let back: String = serde_json::from_str(&quote(nasty)).unwrap();
        assert_eq!(back, nasty);
    }

    #[test]
    fn worker_rows_are_grouped_by_node() {
        let mut t = ChromeTrace::new(Vec::new()).unwrap();
        // Round-robin placement: workers 0 and 2 on node 0, 1 and 3 on node 1.
        t.worker_rows(0, &[0, 1, 0, 1]).unwrap();
        let v: serde_json::Value = serde_json::from_slice(&t.finish().unwrap()).unwrap();
        let events = v["traceEvents"].as_array().unwrap();
        let index = |tid: u64| {
            events
                .iter()
                .find(|e| e["name"] == "thread_sort_index" && e["tid"] == tid)
                .unwrap()["args"]["sort_index"]
                .as_u64()
                .unwrap()
        };
        assert_eq!([index(0), index(2), index(1), index(3)], [0, 1, 2, 3]);
        let name = events
            .iter()
            .find(|e| e["name"] == "thread_name" && e["tid"] == 2)
            .unwrap();
        assert_eq!(name["args"]["name"], "worker 2 (node 0)");
    }
}
