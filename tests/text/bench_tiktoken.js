#!/usr/bin/env node
// bench_tiktoken.js FILE: single-thread throughput of tiktoken's "gpt2"
// encoding (WASM) on FILE, median of 5 runs after one warm-up; prints MB/s
// and token count. The baseline for bench_tokenize on the same file.
// Needs the npm package tiktoken, e.g. installed outside the repo:
//   cd /tmp/ref && npm install tiktoken
//   NODE_PATH=/tmp/ref/node_modules node tests/text/bench_tiktoken.js FILE
"use strict";
const fs = require("fs");
const path = require("path");
const { get_encoding } = require("tiktoken");

if (process.argv.length !== 3) {
  console.error("usage: node bench_tiktoken.js FILE");
  process.exit(2);
}
const bytes = fs.readFileSync(process.argv[2]);
const text = bytes.toString("utf8");
const enc = get_encoding("gpt2");

// tiktoken's package.json is not exported; read it beside the entry point.
function version() {
  const dir = path.dirname(require.resolve("tiktoken"));
  return JSON.parse(fs.readFileSync(path.join(dir, "package.json"))).version;
}
let tokens = enc.encode_ordinary(text).length;  // warm-up
const seconds = [];
for (let run = 0; run < 5; ++run) {
  const start = process.hrtime.bigint();
  tokens = enc.encode_ordinary(text).length;
  seconds.push(Number(process.hrtime.bigint() - start) / 1e9);
}
seconds.sort((a, b) => a - b);
const mb = bytes.length / 1e6;
console.log(
    `tiktoken ${version()} (WASM)  ` +
    `${(mb / seconds[2]).toFixed(2)} MB/s (median of 5; min ` +
    `${(mb / seconds[4]).toFixed(2)}, max ${(mb / seconds[0]).toFixed(2)})` +
    `  ${bytes.length} bytes  ${tokens} tokens`);
enc.free();
