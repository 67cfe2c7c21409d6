//! Reading Matrix Market files (`--matrix FILE.mtx`) into a [`Csr`] matrix.
//!
//! Accepted: the `coordinate` format with `real`, `integer` or `pattern` entries (a
//! pattern entry is 1), `general` or `symmetric` (an off-diagonal entry stands for
//! itself and its mirror; either triangle is accepted). Comment lines (`%`) and blank
//! lines may appear anywhere after the banner; duplicate entries are summed in file
//! order. Refused, with a message naming the line: the `array` (dense) format,
//! `complex` entries, `skew-symmetric` and `hermitian` matrices, a missing or bad size
//! line, an index out of range, a value that is not a finite number (`nan`, `inf`),
//! more or fewer entries than the size line declares, a matrix whose row pointers do
//! not fit in memory, a line longer than the format's 1024 characters
//! ([`MAX_LINE_BYTES`]), more than [`MAX_COMMENT_BYTES`] of comment and blank lines, a
//! file that is not a regular file or a pipe (a directory, a device such as
//! `/dev/zero`).
//!
//! Why a parser of our own: the maintained crates that read the format either give no
//! line number at all (`sprs::io::read_matrix_market` answers `BadMatrixMarketFile`,
//! `matrix-market-rs` an error kind), or give one only for syntax errors, not for an
//! index out of range or a count that does not match, and bring a dense linear-algebra
//! library and a parser generator with them (`nalgebra-sparse`'s `io` feature:
//! `nalgebra`, `pest`). The format's coordinate subset is a banner, a size line and
//! one entry per line; reading it here is shorter than adapting one of them.

use std::io::BufRead;

use crate::csr::Csr;

/// Why a Matrix Market file could not be read: the file, the line (1-based; 0 when the
/// file could not be opened) and what is wrong there.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct MtxError {
    /// The file as given.
    pub path: String,
    /// The line, counting from 1; 0 for an error before the first line.
    pub line: usize,
    /// What is wrong.
    pub message: String,
}

impl std::fmt::Display for MtxError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        if self.line == 0 {
            write!(f, "{}: {}", self.path, self.message)
        } else {
            write!(f, "{}:{}: {}", self.path, self.line, self.message)
        }
    }
}

impl std::error::Error for MtxError {}

#[derive(Clone, Copy, PartialEq, Eq)]
enum Field {
    Real,
    Pattern,
}

/// Reads the Matrix Market file at `path`.
///
/// ```
/// let path = std::env::temp_dir().join(format!("locus-doc-{}.mtx", std::process::id()));
/// std::fs::write(&path, "%%MatrixMarket matrix coordinate real symmetric\n2 2 2\n1 1 4\n2 1 -1\n")?;
/// let a = locus_bench::mtx::read(path.to_str().unwrap())?;
/// assert_eq!((a.rows, a.nnz()), (2, 3));
/// std::fs::remove_file(&path)?;
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub fn read(path: &str) -> Result<Csr, MtxError> {
    use std::os::unix::fs::FileTypeExt;
    let refuse = |message: String| MtxError {
        path: path.to_string(),
        line: 0,
        message,
    };
    let file = std::fs::File::open(path).map_err(|e| refuse(format!("cannot open: {e}")))?;
    let kind = file
        .metadata()
        .map_err(|e| refuse(format!("cannot open: {e}")))?
        .file_type();
    if !(kind.is_file() || kind.is_fifo()) {
        return Err(refuse(
            "not a regular file (a directory, a device or a socket)".into(),
        ));
    }
    parse(path, std::io::BufReader::new(file))
}

/// Longest line read, in bytes without its line end: the Matrix Market format limits
/// lines to 1024 characters (Boisvert, Pozo and Remington, "The Matrix Market Exchange
/// Formats: Initial Design", 1996, section 2). A longer line is refused as soon as its
/// 1025th byte is read, so a file without line ends (`/dev/zero`) costs no more.
pub const MAX_LINE_BYTES: usize = 1024;

/// Most bytes of comment and blank lines in one file (16 MiB): the format allows them
/// anywhere after the banner, and real files carry a header of a few kilobytes. With
/// the entries bounded by the size line, this bounds what a file can make Locus read.
pub const MAX_COMMENT_BYTES: u64 = 16 << 20;

/// One line of `reader` without its line end, at most [`MAX_LINE_BYTES`] long; `None`
/// at the end of the input.
fn bounded_line(reader: &mut impl BufRead, buf: &mut Vec<u8>) -> Result<Option<String>, String> {
    use std::io::Read;
    buf.clear();
    // The line, its line end (`\r\n` at most) and one byte more tell a long line.
    let limit = MAX_LINE_BYTES as u64 + 3;
    let read = reader
        .by_ref()
        .take(limit)
        .read_until(b'\n', buf)
        .map_err(|e| format!("cannot read: {e}"))?;
    if read == 0 {
        return Ok(None);
    }
    if buf.last() == Some(&b'\n') {
        buf.pop();
        if buf.last() == Some(&b'\r') {
            buf.pop();
        }
    }
    if buf.len() > MAX_LINE_BYTES {
        return Err(format!(
            "the line is longer than {MAX_LINE_BYTES} characters, the format's limit"
        ));
    }
    String::from_utf8(std::mem::take(buf))
        .map(Some)
        .map_err(|_| "the line is not UTF-8 text".into())
}

/// Reads a Matrix Market text from `reader`; `path` names it in errors. Lines are read
/// up to [`MAX_LINE_BYTES`], comment and blank lines up to [`MAX_COMMENT_BYTES`] in all.
pub fn parse(path: &str, mut reader: impl BufRead) -> Result<Csr, MtxError> {
    let mut line_no = 0;
    let err = |line: usize, message: String| MtxError {
        path: path.to_string(),
        line,
        message,
    };
    let mut buf = Vec::new();
    let mut comment_bytes = 0u64;
    let mut next = |line_no: &mut usize| -> Result<Option<String>, MtxError> {
        *line_no += 1;
        let line = bounded_line(&mut reader, &mut buf).map_err(|m| err(*line_no, m))?;
        if let Some(l) = &line {
            let t = l.trim();
            if *line_no > 1 && (t.is_empty() || t.starts_with('%')) {
                comment_bytes += l.len() as u64 + 1;
                if comment_bytes > MAX_COMMENT_BYTES {
                    return Err(err(
                        *line_no,
                        format!(
                            "more than {} MiB of comment and blank lines",
                            MAX_COMMENT_BYTES >> 20
                        ),
                    ));
                }
            }
        }
        Ok(line)
    };
    let banner = next(&mut line_no)?.ok_or_else(|| err(1, "empty file".into()))?;
    let words: Vec<String> = banner
        .split_whitespace()
        .map(str::to_ascii_lowercase)
        .collect();
    if words.first().map(String::as_str) != Some("%%matrixmarket") || words.len() != 5 {
        return Err(err(
            1,
            "expected the banner `%%MatrixMarket matrix coordinate real|integer|pattern general|symmetric`".into(),
        ));
    }
    if words[1] != "matrix" {
        return Err(err(1, format!("object `{}` is not `matrix`", words[1])));
    }
    if words[2] != "coordinate" {
        return Err(err(
            1,
            format!("format `{}` is not supported (only `coordinate`)", words[2]),
        ));
    }
    let field = match words[3].as_str() {
        "real" | "integer" => Field::Real,
        "pattern" => Field::Pattern,
        other => {
            return Err(err(
                1,
                format!("field `{other}` is not supported (real, integer or pattern)"),
            ))
        }
    };
    let symmetric = match words[4].as_str() {
        "general" => false,
        "symmetric" => true,
        other => {
            return Err(err(
                1,
                format!("symmetry `{other}` is not supported (general or symmetric)"),
            ))
        }
    };
    // The size line: the first line that is neither a comment nor blank.
    let (rows, cols, entries) = loop {
        let Some(l) = next(&mut line_no)? else {
            return Err(err(line_no, "end of file before the size line".into()));
        };
        let t = l.trim();
        if t.is_empty() || t.starts_with('%') {
            continue;
        }
        let nums: Vec<Option<usize>> = t.split_whitespace().map(|s| s.parse().ok()).collect();
        if let [Some(r), Some(c), Some(n)] = nums[..] {
            break (r, c, n);
        }
        return Err(err(
            line_no,
            format!(
                "expected the size line `ROWS COLS ENTRIES` (three non-negative integers), got `{}`",
                crate::size::one_line(t)
            ),
        ));
    };
    if rows > u32::MAX as usize || cols > u32::MAX as usize {
        return Err(err(
            line_no,
            format!("{rows} x {cols} is larger than 2^32 - 1 rows or columns"),
        ));
    }
    if symmetric && rows != cols {
        return Err(err(
            line_no,
            format!("a symmetric matrix must be square, not {rows} x {cols}"),
        ));
    }
    let mut triplets: Vec<(u32, u32, f64)> = Vec::new();
    triplets
        .try_reserve(entries.min(1 << 28))
        .map_err(|_| err(line_no, format!("cannot hold {entries} entries")))?;
    let mut seen = 0usize;
    while let Some(l) = next(&mut line_no)? {
        let t = l.trim();
        if t.is_empty() || t.starts_with('%') {
            continue;
        }
        if seen == entries {
            return Err(err(
                line_no,
                format!("more entries than the {entries} the size line declares"),
            ));
        }
        seen += 1;
        let parts: Vec<&str> = t.split_whitespace().collect();
        let want = if field == Field::Pattern { 2 } else { 3 };
        if parts.len() != want {
            return Err(err(
                line_no,
                format!(
                    "expected `ROW COL{}`, got `{}`",
                    if want == 3 { " VALUE" } else { "" },
                    crate::size::one_line(t)
                ),
            ));
        }
        let index = |s: &str, what: &str, max: usize| -> Result<u32, MtxError> {
            match s.parse::<usize>() {
                Ok(i) if (1..=max).contains(&i) => Ok((i - 1) as u32),
                _ => Err(err(
                    line_no,
                    format!(
                        "{what} index `{}` is not in 1..={max}",
                        crate::size::one_line(s)
                    ),
                )),
            }
        };
        let i = index(parts[0], "row", rows)?;
        let j = index(parts[1], "column", cols)?;
        let v = if field == Field::Pattern {
            1.0
        } else {
            parts[2]
                .parse::<f64>()
                .ok()
                .filter(|v| v.is_finite())
                .ok_or_else(|| {
                    err(
                        line_no,
                        format!(
                            "value `{}` is not a finite number",
                            crate::size::one_line(parts[2])
                        ),
                    )
                })?
        };
        triplets.push((i, j, v));
        if symmetric && i != j {
            triplets.push((j, i, v));
        }
    }
    if seen < entries {
        return Err(err(
            line_no,
            format!("end of file after {seen} of the {entries} entries the size line declares"),
        ));
    }
    Csr::from_triplets(rows, cols, triplets).map_err(|e| {
        err(
            line_no,
            format!("a matrix of {rows} x {cols} with {entries} entries: {e}"),
        )
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn text(s: &str) -> Result<Csr, MtxError> {
        parse("m.mtx", s.as_bytes())
    }

    #[test]
    fn general_symmetric_and_pattern_read_to_the_same_rows() {
        let general = text(
            "%%MatrixMarket matrix coordinate real general\n% comment\n3 3 5\n1 1 2\n2 1 -1\n1 2 -1\n3 3 1.5\n2 2 2\n",
        )
        .unwrap();
        assert_eq!(general.row_ptr, vec![0, 2, 4, 5]);
        assert_eq!(general.col_idx, vec![0, 1, 0, 1, 2]);
        assert_eq!(general.vals, vec![2.0, -1.0, -1.0, 2.0, 1.5]);
        let symmetric = text(
            "%%MatrixMarket matrix coordinate integer symmetric\n3 3 4\n1 1 2\n2 1 -1\n2 2 2\n\n3 3 1.5\n",
        );
        // An integer file holding 1.5 still reads (values are read as numbers).
        let symmetric = symmetric.unwrap();
        assert_eq!(symmetric, general);
        let pattern =
            text("%%MatrixMarket matrix coordinate pattern general\n2 3 2\n2 3\n1 1\n").unwrap();
        assert_eq!((pattern.rows, pattern.cols), (2, 3));
        assert_eq!(pattern.row_ptr, vec![0, 1, 2]);
        assert_eq!(pattern.col_idx, vec![0, 2]);
        assert_eq!(pattern.vals, vec![1.0, 1.0]);
    }

    #[test]
    fn duplicates_are_summed() {
        let a =
            text("%%MatrixMarket matrix coordinate real general\n1 1 2\n1 1 2\n1 1 0.5\n").unwrap();
        assert_eq!(a.vals, vec![2.5]);
    }

    #[test]
    fn malformed_files_name_their_line() {
        let cases = [
            ("", 1, "empty file"),
            (
                "%%MatrixMarket matrix array real general\n2 2\n",
                1,
                "array",
            ),
            (
                "%%MatrixMarket matrix coordinate complex general\n",
                1,
                "complex",
            ),
            (
                "%%MatrixMarket matrix coordinate real hermitian\n",
                1,
                "hermitian",
            ),
            (
                "%%MatrixMarket vector coordinate real general\n",
                1,
                "vector",
            ),
            ("not a banner\n", 1, "banner"),
            (
                "%%MatrixMarket matrix coordinate real general\n%\n2 x 2\n",
                3,
                "size line",
            ),
            (
                "%%MatrixMarket matrix coordinate real general\n",
                2,
                "before the size line",
            ),
            (
                "%%MatrixMarket matrix coordinate real symmetric\n2 3 1\n",
                2,
                "square",
            ),
            (
                "%%MatrixMarket matrix coordinate real general\n2 2 2\n1 1 1\n3 1 1\n",
                4,
                "row index `3`",
            ),
            (
                "%%MatrixMarket matrix coordinate real general\n2 2 1\n1 0 1\n",
                3,
                "column index `0`",
            ),
            (
                "%%MatrixMarket matrix coordinate real general\n2 2 1\n1 1 one\n",
                3,
                "not a finite number",
            ),
            (
                "%%MatrixMarket matrix coordinate real general\n2 2 1\n1 1 nan\n",
                3,
                "value `nan` is not a finite number",
            ),
            (
                "%%MatrixMarket matrix coordinate real general\n2 2 1\n1 1 -inf\n",
                3,
                "value `-inf` is not a finite number",
            ),
            (
                "%%MatrixMarket matrix coordinate real general\n2 2 1\n1 1\n",
                3,
                "ROW COL VALUE",
            ),
            (
                "%%MatrixMarket matrix coordinate pattern general\n2 2 1\n1 1 1\n",
                3,
                "ROW COL`",
            ),
            (
                "%%MatrixMarket matrix coordinate real general\n2 2 1\n1 1 1\n2 2 1\n",
                4,
                "more entries",
            ),
            (
                "%%MatrixMarket matrix coordinate real general\n2 2 3\n1 1 1\n2 2 1\n",
                5,
                "2 of the 3",
            ),
        ];
        for (file, line, what) in cases {
            let e = text(file).unwrap_err();
            assert_eq!(e.line, line, "{file:?}: {e}");
            let shown = e.to_string();
            assert!(shown.contains(what), "{file:?}: {shown}");
            assert!(shown.starts_with(&format!("m.mtx:{line}: ")), "{shown}");
            assert!(!shown.contains('\n'), "{shown}");
        }
    }

    /// A reader of `prefix`, then `fill` bytes forever.
    struct Endless {
        prefix: std::io::Cursor<Vec<u8>>,
        fill: Vec<u8>,
        read: u64,
    }

    impl std::io::Read for Endless {
        fn read(&mut self, out: &mut [u8]) -> std::io::Result<usize> {
            let n = self.prefix.read(out)?;
            if n > 0 {
                return Ok(n);
            }
            for (o, f) in out.iter_mut().zip(self.fill.iter().cycle()) {
                *o = *f;
            }
            self.read += out.len() as u64;
            Ok(out.len())
        }
    }

    /// Lines without end (`/dev/zero`, a file with no line end) and endless comments
    /// are refused after a bounded read, naming the line.
    #[test]
    fn long_lines_and_endless_comments_are_refused_early() {
        let banner = "%%MatrixMarket matrix coordinate real general\n";
        for (prefix, fill, line, what) in [
            ("", &b"\0"[..], 1, "longer than 1024"),
            (banner, b"1", 2, "longer than 1024"),
            (
                banner,
                b"%\n",
                2 + (MAX_COMMENT_BYTES / 2) as usize,
                "comment",
            ),
        ] {
            let mut reader = std::io::BufReader::new(Endless {
                prefix: std::io::Cursor::new(prefix.as_bytes().to_vec()),
                fill: fill.to_vec(),
                read: 0,
            });
            let e = parse("m.mtx", &mut reader).unwrap_err();
            assert_eq!(e.line, line, "{e}");
            assert!(e.to_string().contains(what), "{e}");
            assert!(
                reader.get_ref().read <= MAX_COMMENT_BYTES + (1 << 16),
                "{e}"
            );
        }
        // The longest line the format allows is read.
        let long = format!(
            "{banner}%{}\n1 1 1\n1 1 2\n",
            "x".repeat(MAX_LINE_BYTES - 1)
        );
        assert_eq!(text(&long).unwrap().vals, vec![2.0]);
        let longer = format!("{banner}%{}\n1 1 0\n", "x".repeat(MAX_LINE_BYTES));
        assert!(text(&longer).unwrap_err().message.contains("longer"));
    }

    #[test]
    fn devices_and_directories_are_refused() {
        for path in ["/dev/zero", "/"] {
            let e = read(path).unwrap_err();
            assert_eq!(e.line, 0, "{e}");
            assert!(e.to_string().contains("not a regular file"), "{e}");
        }
    }

    #[test]
    fn a_missing_file_is_an_error() {
        let e = read("/nonexistent/locus/m.mtx").unwrap_err();
        assert_eq!(e.line, 0);
        assert!(e.to_string().contains("cannot open"), "{e}");
    }
}
