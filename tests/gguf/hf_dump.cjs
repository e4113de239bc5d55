// hf_dump.cjs - prints @huggingface/gguf's reading of GGUF files in gguf_dump.c's line format
// (tests/gguf/hf_check.sh compares the two). Usage: HF_GGUF=<path of the package> node hf_dump.cjs FILE...
"use strict";
const { gguf } = require(process.env.HF_GGUF);

const hex = (s) => Buffer.from(s, "utf8").toString("hex");
const T = { UINT8: 0, INT8: 1, UINT16: 2, INT16: 3, UINT32: 4, INT32: 5, FLOAT32: 6, BOOL: 7, STRING: 8, ARRAY: 9,
            UINT64: 10, INT64: 11, FLOAT64: 12 };
function value(type, v) {
  switch (type) {
    case T.UINT8: case T.UINT16: case T.UINT32: case T.UINT64: return "u" + v.toString();
    case T.INT8: case T.INT16: case T.INT32: case T.INT64: return "i" + v.toString();
    case T.FLOAT32: case T.FLOAT64: {
      const dv = new DataView(new ArrayBuffer(8));
      dv.setFloat64(0, v);
      return "f" + dv.getBigUint64(0).toString(16).padStart(16, "0");
    }
    case T.BOOL: return v ? "b1" : "b0";
    case T.STRING: return "s" + hex(v);
    default: throw new Error("type " + type);
  }
}
async function main() {
  let rc = 0;
  for (const path of process.argv.slice(2)) {
    console.log("file " + path.split("/").pop());
    let r;
    try {
      r = await gguf(path, { allowLocalFile: true, typedMetadata: true });
    } catch (e) {
      console.log("error " + e.message);
      rc = 1;
      continue;
    }
    console.log("version " + r.metadata.version);
    for (const [key, e] of Object.entries(r.typedMetadata)) {
      if (key === "version" || key === "tensor_count" || key === "kv_count") continue;
      const v = e.type === T.ARRAY ? "a" + e.subType + "[" + e.value.map((x) => value(e.subType, x)).join(",") + "]"
                                   : value(e.type, e.value);
      console.log("kv " + hex(key) + " " + e.type + " " + v);
    }
    r.tensorInfos.forEach((t, i) => {
      if (i === 0) {
        console.log("big_endian " + (r.littleEndian ? 0 : 1));
        console.log("data_offset " + r.tensorDataOffset.toString());
      }
      const dims = t.shape.length ? t.shape.map((d) => d.toString()).join(",") : "-";
      console.log("tensor " + hex(t.name) + " " + t.dtype + " " + dims + " " + t.offset.toString());
    });
  }
  process.exitCode = rc;
}
main();
