#!/usr/bin/env node
// Writes tests/text/golden.json: GPT-2 token ids for a varied corpus.
//
//   mkdir -p /tmp/ref && cd /tmp/ref && npm install tiktoken@1.0.22
//   NODE_PATH=/tmp/ref/node_modules node tests/text/make_golden.js
//
// Valid UTF-8 cases are encoded by tiktoken (get_encoding("gpt2")). tiktoken
// takes JS strings, which cannot carry invalid UTF-8, so those cases come
// from a small reference written here from OpenAI's encoder.py: the bytes
// are decoded as Python's errors="surrogateescape" would (each stray byte
// becomes a lone surrogate U+DC80..U+DCFF), split with GPT-2's pattern, each
// piece turned back into its bytes and merged by encoder.py's bpe(). That
// reference must first reproduce tiktoken on every valid case and on random
// strings, or the script stops.
"use strict";
const fs = require("fs");
const path = require("path");
const { get_encoding } = require("tiktoken");
const C = require("./golden_corpus.js");

const here = __dirname;
const bpeDir = path.join(here, "..", "..", "gpt2", "text", "gpt2-bpe");
const tiktokenDir = path.dirname(require.resolve("tiktoken"));
const tiktokenVersion =
    JSON.parse(fs.readFileSync(path.join(tiktokenDir, "package.json"))).version;
const enc = get_encoding("gpt2");

// ---- reference: encoder.py over surrogate-escaped text ---------------------

// bytes_to_unicode() of encoder.py.
const byteSymbol = [];
{
  let next = 256;
  for (let b = 0; b < 256; ++b) {
    const self = (b >= 0x21 && b <= 0x7e) || (b >= 0xa1 && b <= 0xac) ||
                 (b >= 0xae && b <= 0xff);
    byteSymbol.push(String.fromCodePoint(self ? b : next++));
  }
}
const encoder = JSON.parse(fs.readFileSync(path.join(bpeDir, "encoder.json")));
const ranks = new Map();
fs.readFileSync(path.join(bpeDir, "vocab.bpe"), "utf8").split("\n").slice(1)
    .filter((line) => line.length > 0)
    .forEach((line, rank) => ranks.set(line, rank));

// encoder.py's bpe(): merge every occurrence of the lowest-ranked pair.
function bpe(bytes) {
  let word = Array.from(bytes, (b) => byteSymbol[b]);
  while (word.length > 1) {
    let best = null;
    for (let i = 0; i + 1 < word.length; ++i) {
      const r = ranks.get(word[i] + " " + word[i + 1]);
      if (r !== undefined && (best === null || r < best.r)) {
        best = { r, a: word[i], b: word[i + 1] };
      }
    }
    if (best === null) break;
    const merged = [];
    for (let i = 0; i < word.length; ++i) {
      if (i + 1 < word.length && word[i] === best.a && word[i + 1] === best.b) {
        merged.push(best.a + best.b);
        ++i;
      } else {
        merged.push(word[i]);
      }
    }
    word = merged;
  }
  return word.map((symbols) => encoder[symbols]);
}

// GPT-2's pattern with \s as Unicode White_Space (what tiktoken's engine
// means by \s; JS's own \s differs at U+0085 and U+FEFF).
const PATTERN = new RegExp(
    "'s|'t|'re|'ve|'m|'ll|'d| ?\\p{L}+| ?\\p{N}+" +
    "| ?[^\\p{White_Space}\\p{L}\\p{N}]+" +
    "|\\p{White_Space}+(?!\\P{White_Space})|\\p{White_Space}+", "gu");

function referenceEncode(bytes) {
  const text = C.surrogateEscapeDecode(bytes);
  const pieces = text.match(PATTERN) || [];
  if (pieces.join("") !== text) throw new Error("pattern skipped characters");
  const ids = [];
  for (const piece of pieces) {
    ids.push(...bpe(C.surrogateEscapeEncode(piece)));
  }
  return ids;
}

// ---- the corpus ------------------------------------------------------------

function same(a, b) {
  return a.length === b.length && a.every((x, i) => x === b[i]);
}

const cases = [];
let checked = 0;
for (const [name, text, allowSpecial] of C.validCases(here)) {
  const ids = Array.from(allowSpecial ? enc.encode(text, "all")
                                      : enc.encode_ordinary(text));
  if (!allowSpecial) {
    const ref = referenceEncode(Buffer.from(text, "utf8"));
    if (!same(ref, ids)) throw new Error(`reference differs on ${name}`);
    ++checked;
  }
  cases.push({ name, text, allow_special: !!allowSpecial,
               reference: "tiktoken", ids });
}
const random = C.randomValidStrings(2000, 12345);
random.forEach((text, i) => {
  const ids = Array.from(enc.encode_ordinary(text));
  if (!same(referenceEncode(Buffer.from(text, "utf8")), ids)) {
    throw new Error(`reference differs on random string ${i}: ` +
                    JSON.stringify(text));
  }
});
for (const [name, bytes] of C.invalidCases()) {
  if (Buffer.from(bytes.toString("utf8"), "utf8").equals(bytes)) {
    throw new Error(`case ${name} is valid UTF-8`);
  }
  cases.push({ name, bytes_hex: bytes.toString("hex"), allow_special: false,
               reference: "surrogateescape", ids: referenceEncode(bytes) });
}

// tiktoken's class of every code point but the surrogates, as the probes
// of golden_corpus.js's PROBED show it: "s" white space, "w" letter or
// number, "o" anything else; written as runs "<first code point, hex>:<c>".
const runs = [];
let last = null;
for (let cp = 0; cp <= 0x10ffff; ++cp) {
  if (cp === 0xd800) cp = 0xe000;
  const c = String.fromCodePoint(cp);
  const space = Array.from(enc.encode_ordinary("a\n\n" + c + "b"));
  const word = Array.from(enc.encode_ordinary(c + "'s"));
  const cls = space[0] === 64 && space[1] === 628 ? "s"
              : word[word.length - 1] === 338 ? "w" : "o";
  if (cls !== last) runs.push(cp.toString(16) + ":" + cls);
  last = cls;
}

const golden = {
  made_by: {
    command: "NODE_PATH=/tmp/ref/node_modules node tests/text/make_golden.js",
    script: "tests/text/make_golden.js with tests/text/golden_corpus.js",
    tiktoken: `npm package tiktoken ${tiktokenVersion}, ` +
              "get_encoding(\"gpt2\"): encode_ordinary(text), or " +
              "encode(text, \"all\") where allow_special",
    node: process.version,
    surrogateescape: "invalid UTF-8: encoder.py's algorithm in make_golden.js " +
        "on the bytes decoded with Python's errors=\"surrogateescape\"; it " +
        `matched tiktoken on all ${checked} valid cases without special ` +
        `tokens and ${random.length} random strings (seed 12345)`,
    code_point_classes: "tiktoken's class of each code point (surrogates " +
        "excepted; a run lasts to the next): s = white space (\"a\\n\\n\" + c " +
        "+ \"b\" keeps \"\\n\\n\", 628), w = letter or number (c + \"'s\" " +
        "ends in \"'s\", 338), o = other",
  },
  cases,
};
// One case per line, so a regenerated file diffs by case.
const lines = cases.map((c) => "  " + JSON.stringify(c));
fs.writeFileSync(path.join(here, "golden.json"),
                 `{"made_by": ${JSON.stringify(golden.made_by, null, 2)},\n` +
                 `"code_point_classes": "${runs.join(" ")}",\n` +
                 `"cases": [\n${lines.join(",\n")}\n]}\n`);
console.log(`wrote ${cases.length} cases to tests/text/golden.json`);
enc.free();
