// `gpt2 serve` through OpenAI's own Node client library (the `openai` npm
// package), which the test suite cannot install (it has no network):
// a greedy completion equals `gpt2 generate`'s text, streamed chunks
// concatenate to it, n with a seed repeats, a bad field is the library's
// BadRequestError naming the field, a wrong key its AuthenticationError.
//
// Usage, with the package installed in DIR (npm install --prefix DIR openai):
//   NODE_PATH=DIR/node_modules node tests/app/openai_node_client.mjs GPT2 MODEL
import { spawn, execFileSync } from "node:child_process";
import { createRequire } from "node:module";
import assert from "node:assert/strict";
import { readFileSync } from "node:fs";

const require = createRequire(import.meta.url);
const OpenAI = require("openai");
const [gpt2, model] = process.argv.slice(2);
const key = "test-key";

const server = spawn(gpt2, ["serve", "--model", model, "--port", "0", "--api-key", key],
                     { stdio: ["ignore", "pipe", "inherit"] });
const port = await new Promise((resolve, reject) => {
  let seen = "";
  server.stdout.on("data", (d) => {
    seen += d;
    const m = seen.match(/http:\/\/127\.0\.0\.1:(\d+)\//);
    if (m) resolve(Number(m[1]));
  });
  server.on("exit", (code) => reject(new Error(`server exited with ${code}`)));
});
const client = new OpenAI({ apiKey: key, baseURL: `http://127.0.0.1:${port}/v1` });
const prompt = "First Citizen:\nBefore we proceed";
try {
  const models = await client.models.list();
  assert.equal(models.data.length, 1);

  const alone = execFileSync(gpt2, ["generate", "--model", model, "--prompt", prompt,
                                    "--max-new-tokens", "20", "--temperature", "0"],
                             { encoding: "utf8", stdio: ["ignore", "pipe", "ignore"] });
  const c = await client.completions.create({ model: models.data[0].id, prompt,
                                              max_tokens: 20, temperature: 0 });
  assert.equal(prompt + c.choices[0].text + "\n", alone);
  assert.equal(c.usage.completion_tokens + c.usage.prompt_tokens, c.usage.total_tokens);

  let streamed = "";
  let finish = null;
  const stream = await client.completions.create({ model: models.data[0].id, prompt,
                                                   max_tokens: 20, temperature: 0, stream: true });
  for await (const chunk of stream) {
    streamed += chunk.choices[0]?.text ?? "";
    finish = chunk.choices[0]?.finish_reason ?? finish;
  }
  assert.equal(streamed, c.choices[0].text);
  assert.equal(finish, c.choices[0].finish_reason);

  const seeded = { model: models.data[0].id, prompt, max_tokens: 12, temperature: 1, n: 2, seed: 7 };
  const a = await client.completions.create(seeded), b = await client.completions.create(seeded);
  assert.deepEqual(a.choices.map((x) => x.text), b.choices.map((x) => x.text));

  await assert.rejects(
      client.completions.create({ model: models.data[0].id, prompt, max_tokens: -1 }),
      (e) => e instanceof OpenAI.BadRequestError && e.param === "max_tokens");
  const stranger = new OpenAI({ apiKey: "wrong", baseURL: `http://127.0.0.1:${port}/v1`,
                                maxRetries: 0 });
  await assert.rejects(stranger.models.list(), (e) => e instanceof OpenAI.AuthenticationError);
} finally {
  server.kill("SIGTERM");
}
const code = await new Promise((resolve) => server.on("exit", resolve));
assert.equal(code, 0, "the server's exit code after SIGTERM");
const main = require.resolve("openai");
const version = JSON.parse(readFileSync(main.slice(0, main.lastIndexOf("node_modules/openai/") + 20)
                                        + "package.json", "utf8")).version;
console.log(`openai ${version} (Node ${process.version}): every check passed`);
