// The corpus of make_golden.js, and the surrogateescape mapping it uses.
"use strict";
const fs = require("fs");
const path = require("path");

// Length of the well-formed UTF-8 sequence at bytes[i] (Unicode Table 3-7),
// or 0 when bytes[i] starts none.
function utf8Length(bytes, i) {
  const c = bytes[i];
  if (c < 0x80) return 1;
  let len = 0, lo = 0x80, hi = 0xbf;
  if (c >= 0xc2 && c <= 0xdf) len = 2;
  else if (c >= 0xe0 && c <= 0xef) {
    len = 3;
    if (c === 0xe0) lo = 0xa0;
    if (c === 0xed) hi = 0x9f;
  } else if (c >= 0xf0 && c <= 0xf4) {
    len = 4;
    if (c === 0xf0) lo = 0x90;
    if (c === 0xf4) hi = 0x8f;
  } else return 0;
  if (i + len > bytes.length || bytes[i + 1] < lo || bytes[i + 1] > hi) return 0;
  for (let k = 2; k < len; ++k) if ((bytes[i + k] & 0xc0) !== 0x80) return 0;
  return len;
}

// Python's bytes.decode("utf-8", "surrogateescape"): a byte outside
// well-formed UTF-8 becomes the lone surrogate U+DC00 + byte.
function surrogateEscapeDecode(bytes) {
  let out = "";
  for (let i = 0; i < bytes.length;) {
    const len = utf8Length(bytes, i);
    if (len === 0) {
      out += String.fromCharCode(0xdc00 + bytes[i]);
      i += 1;
    } else {
      out += bytes.subarray(i, i + len).toString("utf8");
      i += len;
    }
  }
  return out;
}

// Python's str.encode("utf-8", "surrogateescape"), its inverse.
function surrogateEscapeEncode(text) {
  const out = [];
  for (const ch of text) {
    const cp = ch.codePointAt(0);
    if (cp >= 0xdc80 && cp <= 0xdcff) out.push(cp - 0xdc00);
    else out.push(...Buffer.from(ch, "utf8"));
  }
  return Buffer.from(out);
}

const PARAGRAPH =
    "It was the best of times, it was the worst of times; the Committee's " +
    "report (No. 42-B, dated 1859-11-26) ran to 1,024 pages, cost $3.50 a " +
    "copy and sold 12,345,678 copies.  Mr. O'Neill didn't read it: he said " +
    "\"I'll wait for the film\", and—naturally—he'd already seen the play " +
    "twice.\n\tIndented lines, trailing spaces   \nand e-mail like " +
    "jane.doe+news@example.org or https://example.com/a?b=c&d=e#f are here " +
    "too.   THE END...\n\n";

// Probes whose ids show how tiktoken classes a code point: c + "'s" keeps
// "'s" (338) only after a letter or number; "a\n\n" + c + "b" keeps "\n\n"
// (628) only when c is white space.
const PROBED = [0x09, 0x0b, 0x1c, 0x1f, 0x85, 0xa0, 0xad, 0x1680, 0x180e,
                0x2000, 0x200b, 0x2028, 0x2029, 0x202f, 0x205f, 0x3000,
                0xfeff, 0x2160, 0xb2, 0xbd, 0x0663, 0xff11, 0x02b0, 0x1e290];

function validCases(testDir) {
  const cases = [
    ["empty", ""],
    ["hello world", "hello world"],
    ["endoftext as text", "<|endoftext|>"],
    ["endoftext as text in a sentence", "Hello<|endoftext|>World"],
    ["endoftext allowed", "Hello<|endoftext|>World", true],
    ["endoftext allowed twice", "<|endoftext|><|endoftext|>", true],
    ["endoftext allowed with spaces", "a <|endoftext|> b", true],
    ["endoftext allowed, no special in text", "plain text", true],
    ["contractions lower", "don't can't I'm you're we've they'll she'd it's"],
    ["contractions upper", "DON'T CAN'T I'M YOU'RE WE'VE THEY'LL SHE'D IT'S"],
    ["contractions mixed", "Don'T I'M i'm 'S 's 'sss ''s"],
    ["apostrophe runs", "rock 'n' roll '' ''' 'tis"],
    ["numbers", "0 1 12 123 1234 12345 3.14159 1,000,000 -42 +7 1e10"],
    ["numbers glued", "abc123def 123abc 2024-06-01T12:00:00Z"],
    ["spaces runs", "a b  c   d    e     f"],
    ["leading spaces", "   leading"],
    ["trailing spaces", "trailing   "],
    ["only spaces", "     "],
    ["tabs", "\tstart\tmiddle\t\tend\t"],
    ["newlines", "\nstart\nmiddle\n\nend\n"],
    ["crlf", "line one\r\nline two\r\n\r\n"],
    ["mixed whitespace", " \t\n \r\n\t  x \n\n \t"],
    ["only newlines", "\n\n\n"],
    ["punctuation", "Hello, world! (Really?) [yes] {no} <tag/> #1 @you $5 %"],
    ["symbols", "~!@#$%^&*()_+-=`[]\\{}|;:\",./<>? ...---"],
    ["code", "def f(x):\n    return x ** 2  # square\n\nprint(f(3))\n"],
    ["chinese", "我爱北京天安门。今天天气很好！"],
    ["japanese", "こんにちは、世界。カタカナとひらがな"],
    ["korean", "안녕하세요 세계"],
    ["arabic", "مرحبا بالعالم، كيف حالك؟"],
    ["hindi", "नमस्ते दुनिया, आप कैसे हैं?"],
    ["cyrillic", "Привет, мир! Как дела?"],
    ["greek", "Γειά σου Κόσμε"],
    ["hebrew", "שלום עולם"],
    ["thai", "สวัสดีชาวโลก"],
    ["latin accents precomposed", "café naïve résumé Zürich Ørsted"],
    ["combining marks", "cafe\u0301 nai\u0308ve a\u0301\u0302\u0303 \u0301x"],
    ["emoji", "I ❤️ NY 😀😃 👍🏽 🇫🇷"],
    ["emoji zwj", "👨‍👩‍👧‍👦 🏳️‍🌈 👩🏾‍💻"],
    ["mixed scripts", "abcПриветмир123٣٤٥日本語ok"],
    ["non-latin numbers", "٣٤٥ ١٢ १२३ Ⅻ ½ ² １２３ ①"],
    ["fullwidth", "ＡＢＣ　ｄｅｆ！"],
    ["zero width", "a\u200bb\u200cc\u200dd\ufeffe"],
    ["nbsp", "a\u00a0b \u00a0c\u00a0 d"],
    ["ideographic space", "日本\u3000語 \u3000x"],
    ["line separators", "a\u2028b\u2029c\u0085d"],
    ["control chars", "\x00\x01\x07\x1b[0m\x7f"],
    ["long paragraph", PARAGRAPH.repeat(3)],
    ["long word", "a".repeat(3000)],
    ["long mixed word", "abcdefghij".repeat(300)],
    ["long number", "1234567890".repeat(200)],
    ["long space run then word", " ".repeat(1000) + "x"],
    ["long punctuation", "!?".repeat(1000)],
    ["url", "https://www.example.com/path/to/page.html?query=1&x=%20"],
    ["repeated words", "the the the the the the the the"],
    ["capitalisation", "Hello HELLO hello hELLO"],
  ];
  for (const cp of PROBED) {
    const c = String.fromCodePoint(cp);
    const hex = cp.toString(16).toUpperCase().padStart(4, "0");
    cases.push([`letter probe U+${hex}`, c + "'s"]);
    cases.push([`space probe U+${hex}`, "a\n\n" + c + "b"]);
  }
  const shakespeare = fs.readFileSync(
      path.join(testDir, "data", "tinyshakespeare", "input.txt"));
  cases.push(["tiny shakespeare first 10000 bytes",
              shakespeare.subarray(0, 10000).toString("utf8")]);
  return cases;
}

// mulberry32: a small seeded generator, so the corpus is reproducible.
function rng(seed) {
  return () => {
    seed = (seed + 0x6d2b79f5) | 0;
    let t = Math.imul(seed ^ (seed >>> 15), 1 | seed);
    t = (t + Math.imul(t ^ (t >>> 7), 61 | t)) ^ t;
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

// Strings from an alphabet of every character class above.
function randomValidStrings(n, seed) {
  const next = rng(seed);
  const alphabet = Array.from(
      "aZst'07 \n\t\r.,!-éü中語😀\u0301\u00a0\u3000\u0085٣Ⅻ½א");
  const out = [];
  for (let i = 0; i < n; ++i) {
    let s = "";
    const len = Math.floor(next() * 40);
    for (let k = 0; k < len; ++k) s += alphabet[Math.floor(next() * alphabet.length)];
    out.push(s);
  }
  return out;
}

function invalidCases() {
  const b = (...parts) => Buffer.concat(parts.map(
      (p) => typeof p === "string" ? Buffer.from(p, "utf8") : Buffer.from(p)));
  const cases = [
    ["lone 0xFF", b([0xff])],
    ["0xFF between letters", b("a", [0xff], "b")],
    ["0xFF between words", b("hello ", [0xff], " world")],
    ["space then invalid", b("a  ", [0xff], "b")],
    ["newlines then invalid", b("a\n\n", [0xfe], "b")],
    ["truncated 3-byte in word", b("don", [0xe2, 0x80], "t")],
    ["truncated 2-byte at end", b("caf", [0xc3])],
    ["truncated after valid", b(" é", [0xc3])],
    ["overlong slash", b("a", [0xc0, 0xaf], "b")],
    ["encoded surrogate", b("x", [0xed, 0xa0, 0x80], "y")],
    ["above U+10FFFF", b("x", [0xf4, 0x90, 0x80, 0x80], "y")],
    ["0xF5", b("x ", [0xf5], " y")],
    ["lone continuations", b([0x80, 0x80, 0x80], "abc", [0xbf])],
    ["invalid joins punctuation", b("!!", [0xfe, 0xfe], "??")],
    ["apostrophe then invalid then s", b("'", [0xff], "s")],
    ["invalid then contraction", b([0xff], "'s it", [0xff], "'ll")],
    ["digits around invalid", b("123", [0xff], "456")],
    ["truncated CJK", b("日本", [0xe8, 0xaa], "語")],
    ["truncated emoji", b([0xf0, 0x9f, 0x98], "x 😀")],
    ["half of NEL", b("a ", [0xc2], " b")],
    ["invalid at start of line", b("x\n", [0x9f], "y\n")],
    ["long invalid run", b(Array(300).fill(0xff))],
  ];
  const next = rng(777);
  for (let i = 0; i < 10; ++i) {
    const bytes = [];
    const len = 1 + Math.floor(next() * 60);
    for (let k = 0; k < len; ++k) {
      // ASCII letters, spaces and punctuation, and bytes >= 0x80.
      const r = next();
      bytes.push(r < 0.4 ? 0x61 + Math.floor(next() * 26)
                 : r < 0.55 ? 0x20 : r < 0.65 ? 0x21 + Math.floor(next() * 15)
                 : 0x80 + Math.floor(next() * 128));
    }
    if (!bytes.some((x) => x >= 0x80)) bytes.push(0xff);
    cases.push([`random bytes ${i} (seed 777)`, b(bytes)]);
  }
  return cases;
}

module.exports = { surrogateEscapeDecode, surrogateEscapeEncode, validCases,
                   randomValidStrings, invalidCases };
