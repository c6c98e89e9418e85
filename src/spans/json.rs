//! JSON text to [`Spans`]: one pass over the characters, counting lines and columns,
//! recording where each value (and each key) starts under its path. It runs on text
//! serde_json has already parsed, so it need not judge JSON; on text it cannot follow it
//! stops, with what it has recorded so far.

use std::iter::Peekable;
use std::str::Chars;

use super::place::{Pos, Spans, item, join};

/// The spans of a JSON text's values.
pub fn index(text: &str) -> Spans {
    let mut s = Scanner {
        chars: text.chars().peekable(),
        pos: Pos { line: 1, column: 1 },
        spans: Spans::default(),
    };
    s.value("", None);
    s.spans
}

/// A serde_json syntax error's place in characters: serde_json counts the column in
/// bytes, which is off on a line with anything beyond ASCII before the error.
pub fn syntax_error(text: &str, e: &serde_json::Error) -> Pos {
    let line = text.lines().nth(e.line().saturating_sub(1)).unwrap_or("");
    let mut bytes = e.column().min(line.len());
    while !line.is_char_boundary(bytes) {
        bytes += 1;
    }
    Pos {
        line: e.line() as u32,
        column: line[..bytes].chars().count().max(1) as u32,
    }
}

struct Scanner<'a> {
    chars: Peekable<Chars<'a>>,
    /// Where the next character is.
    pos: Pos,
    spans: Spans,
}

impl Scanner<'_> {
    fn bump(&mut self) -> Option<char> {
        let c = self.chars.next()?;
        if c == '\n' {
            self.pos.line += 1;
            self.pos.column = 1;
        } else {
            self.pos.column += 1;
        }
        Some(c)
    }

    fn skip_whitespace(&mut self) {
        while self.chars.peek().is_some_and(|c| c.is_ascii_whitespace()) {
            self.bump();
        }
    }

    /// A value at `path`; false when the text cannot be followed further.
    fn value(&mut self, path: &str, key: Option<Pos>) -> bool {
        self.skip_whitespace();
        self.spans.record(path, key, self.pos);
        match self.chars.peek() {
            Some('{') => self.object(path),
            Some('[') => self.array(path),
            Some('"') => self.string().is_some(),
            Some(_) => {
                // A number, true, false or null: up to the next delimiter.
                while self
                    .chars
                    .peek()
                    .is_some_and(|c| !matches!(c, ',' | ']' | '}') && !c.is_ascii_whitespace())
                {
                    self.bump();
                }
                true
            }
            None => false,
        }
    }

    fn object(&mut self, path: &str) -> bool {
        self.bump();
        let mut seen = std::collections::HashSet::new();
        loop {
            self.skip_whitespace();
            let at = self.pos;
            match self.chars.peek() {
                Some('}') => {
                    self.bump();
                    return true;
                }
                Some('"') => {}
                _ => return false,
            }
            let Some(key) = self.string() else {
                return false;
            };
            if !seen.insert(key.clone()) {
                self.spans
                    .duplicates
                    .push((path.to_string(), key.clone(), at));
            }
            self.skip_whitespace();
            if self.bump() != Some(':') || !self.value(&join(path, &key), Some(at)) {
                return false;
            }
            self.skip_whitespace();
            match self.bump() {
                Some(',') => {}
                Some('}') => return true,
                _ => return false,
            }
        }
    }

    fn array(&mut self, path: &str) -> bool {
        self.bump();
        self.skip_whitespace();
        if self.chars.peek() == Some(&']') {
            self.bump();
            return true;
        }
        for i in 0.. {
            if !self.value(&item(path, i), None) {
                return false;
            }
            self.skip_whitespace();
            match self.bump() {
                Some(',') => {}
                Some(']') => return true,
                _ => return false,
            }
        }
        false
    }

    /// A string, decoded (a key must read as serde reads it: `"a\u0062"` is `ab`).
    fn string(&mut self) -> Option<String> {
        self.bump();
        let mut out = String::new();
        loop {
            match self.bump()? {
                '"' => return Some(out),
                '\\' => match self.bump()? {
                    'u' => out.push(self.unicode_escape()?),
                    c => out.push(match c {
                        'b' => '\u{8}',
                        'f' => '\u{c}',
                        'n' => '\n',
                        'r' => '\r',
                        't' => '\t',
                        other => other,
                    }),
                },
                c => out.push(c),
            }
        }
    }

    /// After `\u`: four hex digits, and a second `\uXXXX` when they are a high surrogate.
    fn unicode_escape(&mut self) -> Option<char> {
        let hi = self.hex4()?;
        if !(0xD800..0xDC00).contains(&hi) {
            return Some(char::from_u32(hi).unwrap_or('\u{FFFD}'));
        }
        if self.chars.peek() != Some(&'\\') {
            return Some('\u{FFFD}');
        }
        self.bump();
        if self.bump()? != 'u' {
            return Some('\u{FFFD}');
        }
        let lo = self.hex4()?;
        let c = 0x10000 + ((hi - 0xD800) << 10) + lo.wrapping_sub(0xDC00);
        Some(char::from_u32(c).unwrap_or('\u{FFFD}'))
    }

    fn hex4(&mut self) -> Option<u32> {
        let mut v = 0;
        for _ in 0..4 {
            v = v * 16 + self.bump()?.to_digit(16)?;
        }
        Some(v)
    }
}
