//! Little-endian fields in and out of a payload: fio's wire is little-endian whatever the host
//! (its `cpu_to_le*` on every field), strings fixed-size and NUL-padded.

/// A payload being written.
#[derive(Default)]
pub(crate) struct Put(pub(crate) Vec<u8>);

impl Put {
    pub(crate) fn u8(&mut self, v: u8) {
        self.0.push(v);
    }
    pub(crate) fn u16(&mut self, v: u16) {
        self.0.extend_from_slice(&v.to_le_bytes());
    }
    pub(crate) fn u32(&mut self, v: u32) {
        self.0.extend_from_slice(&v.to_le_bytes());
    }
    pub(crate) fn u64(&mut self, v: u64) {
        self.0.extend_from_slice(&v.to_le_bytes());
    }
    /// `s` in a field of `len` bytes, cut to leave its NUL (fio's snprintf into the field).
    pub(crate) fn text(&mut self, s: &str, len: usize) {
        let b = s.as_bytes();
        let n = b.len().min(len - 1);
        self.0.extend_from_slice(&b[..n]);
        self.zeros(len - n);
    }
    pub(crate) fn zeros(&mut self, n: usize) {
        self.0.resize(self.0.len() + n, 0);
    }
}

/// A payload being read; reading past its end gives zeros and marks it short.
pub(crate) struct Take<'a> {
    pub(crate) b: &'a [u8],
    pub(crate) at: usize,
    pub(crate) short: bool,
}

impl<'a> Take<'a> {
    pub(crate) fn new(b: &'a [u8]) -> Take<'a> {
        Take { b, at: 0, short: false }
    }
    pub(crate) fn bytes(&mut self, n: usize) -> &'a [u8] {
        let start = self.at.min(self.b.len());
        let end = (self.at + n).min(self.b.len());
        if end - start < n {
            self.short = true;
        }
        self.at += n;
        &self.b[start..end]
    }
    fn array<const N: usize>(&mut self) -> [u8; N] {
        let mut a = [0u8; N];
        let got = self.bytes(N);
        a[..got.len()].copy_from_slice(got);
        a
    }
    pub(crate) fn u8(&mut self) -> u8 {
        self.array::<1>()[0]
    }
    pub(crate) fn u16(&mut self) -> u16 {
        u16::from_le_bytes(self.array())
    }
    pub(crate) fn u32(&mut self) -> u32 {
        u32::from_le_bytes(self.array())
    }
    pub(crate) fn u64(&mut self) -> u64 {
        u64::from_le_bytes(self.array())
    }
    /// A NUL-padded text field of `len` bytes.
    pub(crate) fn text(&mut self, len: usize) -> String {
        let b = self.bytes(len);
        let end = b.iter().position(|&c| c == 0).unwrap_or(b.len());
        String::from_utf8_lossy(&b[..end]).into_owned()
    }
}
