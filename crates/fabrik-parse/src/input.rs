//! Opening inputs (files, `-` for stdin, gzip detected by its magic bytes) and reading them line
//! by line without ever holding more than one line.
//!
//! Hand-written rather than `BufRead::read_until`: lines are handed out as borrowed slices of the
//! reader's own buffer (no copy unless a line straddles two reads), their length is capped so a
//! pathological input cannot grow memory, and CR and ANSI colour are removed on the way.

use std::fs::File;
use std::io::{self, BufRead, BufReader, Read};
use std::path::Path;

use flate2::read::MultiGzDecoder;

/// Lines longer than this are cut: no NCCL line comes close, and the cap keeps memory flat.
pub const MAX_LINE: usize = 64 * 1024;

const BUF_SIZE: usize = 1 << 20;

/// Opens `path` (`-` is stdin) for reading, decompressing gzip when the content starts with the
/// gzip magic bytes whatever the file is called.
pub fn open_input(path: &Path) -> io::Result<Box<dyn BufRead>> {
    let raw: Box<dyn Read> = if path.as_os_str() == "-" {
        Box::new(io::stdin())
    } else {
        Box::new(File::open(path)?)
    };
    let mut reader = BufReader::with_capacity(BUF_SIZE, raw);
    let head = reader.fill_buf()?;
    if head.len() >= 2 && head[0] == 0x1f && head[1] == 0x8b {
        Ok(Box::new(BufReader::with_capacity(
            BUF_SIZE,
            MultiGzDecoder::new(reader),
        )))
    } else {
        Ok(Box::new(reader))
    }
}

/// Calls `f` with every line of `reader` (without its `\n` or `\r\n`, ANSI escapes removed, cut to
/// [`MAX_LINE`] bytes), including a last line that has no newline. Returns the number of lines.
pub fn for_each_line<R: BufRead + ?Sized>(
    reader: &mut R,
    mut f: impl FnMut(&[u8]),
) -> io::Result<u64> {
    let mut carry: Vec<u8> = Vec::new();
    // True while skipping the rest of a line that already exceeded MAX_LINE.
    let mut overflow = false;
    let mut clean: Vec<u8> = Vec::new();
    let mut count = 0u64;
    loop {
        let buf = match reader.fill_buf() {
            Ok(b) => b,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
            Err(e) => return Err(e),
        };
        if buf.is_empty() {
            break;
        }
        let len = buf.len();
        let mut start = 0;
        while let Some(pos) = memchr::memchr(b'\n', &buf[start..]) {
            let end = start + pos;
            if carry.is_empty() && !overflow {
                let line = &buf[start..end.min(start + MAX_LINE)];
                emit(line, &mut clean, &mut f);
            } else {
                if !overflow {
                    let room = MAX_LINE.saturating_sub(carry.len());
                    carry.extend_from_slice(&buf[start..end.min(start + room)]);
                }
                emit(&carry, &mut clean, &mut f);
                carry.clear();
                overflow = false;
            }
            count += 1;
            start = end + 1;
        }
        if start < len && !overflow {
            let room = MAX_LINE.saturating_sub(carry.len());
            let take = (len - start).min(room);
            carry.extend_from_slice(&buf[start..start + take]);
            if carry.len() >= MAX_LINE {
                overflow = true;
            }
        }
        reader.consume(len);
    }
    if !carry.is_empty() {
        emit(&carry, &mut clean, &mut f);
        count += 1;
    }
    Ok(count)
}

fn emit(line: &[u8], clean: &mut Vec<u8>, f: &mut impl FnMut(&[u8])) {
    let line = line.strip_suffix(b"\r").unwrap_or(line);
    if memchr::memchr(0x1b, line).is_none() {
        f(line);
        return;
    }
    strip_ansi(line, clean);
    f(clean);
}

/// Removes ANSI escape sequences (CSI `ESC [ ... final`, and two-byte `ESC x`).
pub fn strip_ansi(line: &[u8], out: &mut Vec<u8>) {
    out.clear();
    let mut i = 0;
    while i < line.len() {
        let b = line[i];
        if b != 0x1b {
            out.push(b);
            i += 1;
            continue;
        }
        i += 1;
        if i < line.len() && line[i] == b'[' {
            i += 1;
            while i < line.len() && !(0x40..=0x7e).contains(&line[i]) {
                i += 1;
            }
            i += 1;
        } else {
            i += 1;
        }
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::expect_used)]
mod tests {
    use super::*;

    fn lines_of(input: &[u8], cap: usize) -> Vec<Vec<u8>> {
        let mut reader = BufReader::with_capacity(cap, input);
        let mut out = Vec::new();
        for_each_line(&mut reader, |l| out.push(l.to_vec())).unwrap();
        out
    }

    #[test]
    fn splits_crlf_ansi_and_unterminated_last_line() {
        let input = b"a\r\n\x1b[32mgreen\x1b[0m text\nlast";
        let got = lines_of(input, 4);
        assert_eq!(
            got,
            vec![b"a".to_vec(), b"green text".to_vec(), b"last".to_vec()]
        );
    }

    #[test]
    fn lines_straddling_buffers_are_joined() {
        let input = b"first line\nsecond line is longer\n";
        for cap in [1, 2, 3, 7, 64] {
            let got = lines_of(input, cap);
            assert_eq!(
                got,
                vec![b"first line".to_vec(), b"second line is longer".to_vec()],
                "cap {cap}"
            );
        }
    }

    #[test]
    fn overlong_lines_are_cut_not_kept() {
        let mut input = vec![b'x'; MAX_LINE * 3];
        input.extend_from_slice(b"\nnext\n");
        let got = lines_of(&input, 4096);
        assert_eq!(got.len(), 2);
        assert_eq!(got[0].len(), MAX_LINE);
        assert_eq!(got[1], b"next".to_vec());
    }

    #[test]
    fn gzip_is_detected_by_magic() {
        use flate2::write::GzEncoder;
        use std::io::Write;
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("log.txt");
        let mut enc = GzEncoder::new(Vec::new(), flate2::Compression::fast());
        enc.write_all(b"one\ntwo\n").unwrap();
        std::fs::write(&path, enc.finish().unwrap()).unwrap();
        let mut r = open_input(&path).unwrap();
        let mut got = Vec::new();
        for_each_line(&mut r, |l| {
            got.push(String::from_utf8_lossy(l).into_owned())
        })
        .unwrap();
        assert_eq!(got, vec!["one", "two"]);
    }
}
