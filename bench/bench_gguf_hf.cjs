// bench_gguf_hf.cjs - @huggingface/gguf's gguf() on a file, timed: the local file (allowLocalFile), and
// an https URL whose fetch answers the Range requests from the file's bytes in memory (no disk). Prints
// "<label> <GB/s median> (<min>-<max>) <ms median>" lines (GB/s of header bytes) for bench_gguf.c.
// Usage: HF_GGUF=<package> node bench_gguf_hf.cjs FILE RUNS HEADER_BYTES
"use strict";
const fs = require("fs");
const { gguf } = require(process.env.HF_GGUF);

async function main() {
  const [file, runsArg, headerArg] = process.argv.slice(2);
  const runs = Number(runsArg), header = Number(headerArg);
  const size = fs.statSync(file).size;
  const fd = fs.openSync(file, "r");
  const head = Buffer.alloc(Math.min(size, 64 * 1024 * 1024));  // more than the parser asks for
  fs.readSync(fd, head, 0, head.length, 0);
  fs.closeSync(fd);
  const memFetch = async (url, init) => {
    const m = /bytes=(\d+)-(\d+)/.exec(init.headers.Range);
    const a = Number(m[1]), b = Math.min(Number(m[2]), size - 1);
    const body = a < head.length ? head.subarray(a, Math.min(b + 1, head.length)) : Buffer.alloc(0);
    return new Response(body, { status: 206, headers: { "content-range": `bytes ${a}-${b}/${size}` } });
  };
  const cases = [
    ["local file (allowLocalFile)", () => gguf(file, { allowLocalFile: true })],
    ["from memory (fetch of Range requests)", () => gguf("https://example.invalid/model.gguf", { fetch: memFetch })],
  ];
  for (const [label, run] of cases) {
    const r = await run();  // warm-up, and a check
    if (r.tensorInfos.length < 1 || r.metadata["tokenizer.ggml.merges"].length !== 280147) throw new Error("misread");
    const s = [];
    for (let k = 0; k < runs; k++) {
      const t0 = process.hrtime.bigint();
      await run();
      s.push(Number(process.hrtime.bigint() - t0) / 1e9);
    }
    s.sort((x, y) => x - y);
    const med = runs % 2 ? s[(runs - 1) / 2] : (s[runs / 2 - 1] + s[runs / 2]) / 2;
    const gbs = (t) => header / t / 1e9;
    console.log(`  ${label.padEnd(44)} ${gbs(med).toFixed(3)} GB/s (${gbs(s[runs - 1]).toFixed(3)}-` +
                `${gbs(s[0]).toFixed(3)})   ${(med * 1e3).toFixed(2)} ms`);
  }
}
main().catch((e) => { console.error("bench_gguf_hf: " + e.stack); process.exitCode = 1; });
