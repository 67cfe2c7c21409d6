//! Reports of runs: the whole report as JSON, and its main figures.

use std::ffi::{c_char, CString};

use crate::handles::Table;
use crate::status::{guard, locus_status, put, Fail};

/// The report of one run, from `locus_run`; freed by
/// `locus_report_free`. The all-zero value is the null handle.
#[repr(C)]
#[allow(non_camel_case_types)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct locus_report {
    /// Opaque: a slot and its generation in Locus's table of reports.
    pub bits: u64,
}

pub(crate) static REPORTS: Table<locus::Report> = Table::new("report");

/// The main figures of a report (every field of the JSON report is described in
/// Locus's `docs/guide.md`, "Reading the report").
#[repr(C)]
#[allow(non_camel_case_types)]
#[derive(Clone, Copy, Debug, Default)]
pub struct locus_figures {
    /// Wall-clock time of the run, seconds.
    pub wall_s: f64,
    /// Tasks run (the root excluded).
    pub tasks: u64,
    /// Bytes read by tasks from buffers on their own node.
    pub read_local_bytes: u64,
    /// Bytes read from buffers on other nodes.
    pub read_remote_bytes: u64,
    /// Bytes written to buffers on the task's own node.
    pub write_local_bytes: u64,
    /// Bytes written to buffers on other nodes.
    pub write_remote_bytes: u64,
    /// Local bytes over all bytes accessed (paper 1's R_loc^RT), 0 to 1.
    pub r_loc_rt: f64,
    /// Successful steals from a worker of the same node.
    pub steals_same_node: u64,
    /// Successful steals from a worker of another node.
    pub steals_remote: u64,
    /// Peak bytes in use in the per-node pools.
    pub peak_bytes: u64,
}

/// Writes the report as one JSON object (the format of `locus run --json`'s runtime
/// part) to `*json`, a NUL-terminated string to free with `locus_string_free`.
///
/// # Safety
///
/// `json` is NULL (an error) or valid for a write.
#[no_mangle]
pub unsafe extern "C" fn locus_report_json(
    report: locus_report,
    json: *mut *mut c_char,
) -> locus_status {
    guard(|| {
        if json.is_null() {
            return Err(crate::status::null("json"));
        }
        let text = REPORTS
            .with(report.bits, |r| serde_json::to_string(r))?
            .map_err(|e| Fail::new(locus_status::LOCUS_E_INTERNAL, e.to_string()))?;
        let c = CString::new(text)
            .map_err(|e| Fail::new(locus_status::LOCUS_E_INTERNAL, e.to_string()))?;
        // SAFETY: non-NULL, valid for a write by the caller's contract.
        unsafe { put(json, c.into_raw(), "json") }
    })
}

/// Writes the report's main figures to `*figures`.
///
/// # Safety
///
/// `figures` is NULL (an error) or valid for a write.
#[no_mangle]
pub unsafe extern "C" fn locus_report_figures(
    report: locus_report,
    figures: *mut locus_figures,
) -> locus_status {
    guard(|| {
        if figures.is_null() {
            return Err(crate::status::null("figures"));
        }
        let f = REPORTS.with(report.bits, |r| locus_figures {
            wall_s: r.wall_s,
            tasks: r.tasks,
            read_local_bytes: r.locality.read_local_bytes,
            read_remote_bytes: r.locality.read_remote_bytes,
            write_local_bytes: r.locality.write_local_bytes,
            write_remote_bytes: r.locality.write_remote_bytes,
            r_loc_rt: r.locality.r_loc_rt,
            steals_same_node: r.steals.same_node,
            steals_remote: r.steals.remote,
            peak_bytes: r.memory.peak_bytes,
        })?;
        // SAFETY: non-NULL, valid for a write by the caller's contract.
        unsafe { put(figures, f, "figures") }
    })
}

/// Frees a report.
#[no_mangle]
pub extern "C" fn locus_report_free(report: locus_report) -> locus_status {
    guard(|| REPORTS.remove(report.bits).map(drop))
}

/// Frees a string Locus returned (`locus_report_json`). NULL is accepted and does
/// nothing.
///
/// # Safety
///
/// `s` is NULL or a string Locus returned and that was not freed yet: a string
/// from anywhere else, or freed twice, is undefined behaviour (strings are not
/// handles and cannot be checked).
#[no_mangle]
pub unsafe extern "C" fn locus_string_free(s: *mut c_char) {
    if !s.is_null() {
        // SAFETY: made by `CString::into_raw` in this library (the caller's contract).
        drop(unsafe { CString::from_raw(s) });
    }
}
