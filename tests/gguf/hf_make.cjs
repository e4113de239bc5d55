// hf_make.cjs - GGUF files written by @huggingface/gguf's serializer, not by us: headers of typed
// metadata (serializeGgufMetadata) in both byte orders and versions 2 and 3, and our corpus's valid
// files with their metadata edited and their header rebuilt around the original tensor infos and
// data (buildGgufHeader, as the Hub's editor does). Usage: HF_GGUF=<package> node hf_make.cjs CORPUS OUT
"use strict";
const fs = require("fs");
const path = require("path");
const { gguf, serializeGgufMetadata, buildGgufHeader } = require(process.env.HF_GGUF);
const T = { UINT8: 0, INT8: 1, UINT16: 2, INT16: 3, UINT32: 4, INT32: 5, FLOAT32: 6, BOOL: 7, STRING: 8, ARRAY: 9,
            UINT64: 10, INT64: 11, FLOAT64: 12 };

function typed(version, extra) {
  const kv = {
    "general.architecture": { value: "llama", type: T.STRING },
    "general.name": { value: "written by @huggingface/gguf \u2603", type: T.STRING },
    "general.alignment": { value: 32, type: T.UINT32 },
    "hf.u8": { value: 250, type: T.UINT8 }, "hf.i8": { value: -7, type: T.INT8 },
    "hf.u16": { value: 65535, type: T.UINT16 }, "hf.i16": { value: -32768, type: T.INT16 },
    "hf.i32": { value: -123456, type: T.INT32 }, "hf.f32": { value: 0.25, type: T.FLOAT32 },
    "hf.bool": { value: true, type: T.BOOL }, "hf.u64": { value: 18446744073709551615n, type: T.UINT64 },
    "hf.i64": { value: -9007199254740993n, type: T.INT64 }, "hf.f64": { value: Math.PI, type: T.FLOAT64 },
    "tokenizer.ggml.tokens": { value: ["<s>", "</s>", "h\u00e9", ""], type: T.ARRAY, subType: T.STRING },
    "tokenizer.ggml.scores": { value: [0, -1.5, 2.75, 1e-3], type: T.ARRAY, subType: T.FLOAT32 },
    "tokenizer.ggml.token_type": { value: [1, 3, 1, 6], type: T.ARRAY, subType: T.INT32 },
    "hf.empty": { value: [], type: T.ARRAY, subType: T.UINT64 },
    ...extra,
  };
  return { version: { value: version, type: T.UINT32 }, tensor_count: { value: 0n, type: T.UINT64 },
           kv_count: { value: BigInt(Object.keys(kv).length), type: T.UINT64 }, ...kv };
}

async function main() {
  const [corpus, out] = process.argv.slice(2);
  fs.mkdirSync(out, { recursive: true });
  const kinds = [["le_v3", 3, true], ["be_v3", 3, false], ["le_v2", 2, true], ["be_v2", 2, false]];
  for (const [name, version, le] of kinds) {
    fs.writeFileSync(path.join(out, `hf_kv_only_${name}.gguf`), serializeGgufMetadata(typed(version, {}),
                     { littleEndian: le, alignment: 32 }));
  }
  for (const base of ["valid_basic_le_v3.gguf", "valid_basic_be_v3.gguf", "valid_all_types_le_v2.gguf",
                      "valid_align_64.gguf"]) {
    const file = path.join(corpus, base);
    const r = await gguf(file, { allowLocalFile: true, typedMetadata: true });
    const meta = { ...r.typedMetadata };
    // its serializer takes subType 0 (UINT8) for a missing one and throws: those arrays are left out
    for (const k of Object.keys(meta)) if (meta[k].type === T.ARRAY && meta[k].subType === T.UINT8) delete meta[k];
    meta["hf.edited"] = { value: "rebuilt by buildGgufHeader", type: T.STRING };
    meta["hf.list"] = { value: [1, -2, 3], type: T.ARRAY, subType: T.INT16 };
    meta.kv_count = { value: BigInt(Object.keys(meta).length - 3), type: T.UINT64 };
    const bytes = fs.readFileSync(file);
    const alignment = Number(r.metadata["general.alignment"] ?? 32);
    const header = await buildGgufHeader(new Blob([bytes]), meta, {
      littleEndian: r.littleEndian, tensorInfoByteRange: r.tensorInfoByteRange, alignment });
    const data = bytes.subarray(Number(r.tensorDataOffset));
    const head = Buffer.from(await header.arrayBuffer());
    fs.writeFileSync(path.join(out, "hf_rebuilt_" + base), Buffer.concat([head, data]));
  }
}
main().catch((e) => { console.error("hf_make: " + e.stack); process.exitCode = 1; });
