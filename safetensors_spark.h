/* safetensors_spark.h - v0.1.0 - strict, fast safetensors reading and writing in one C header.

   Tensors held by C/C++ programs become safetensors files and sharded safetensors datasets (the
   safetensors-spark connector's layout: shards, dataset_manifest.json, _tensor_index) that PyTorch
   loads without conversion, and both are read back zero-copy. The parser agrees with the Hugging
   Face reference reader on every verdict, validation is never optional, and the writer produces the
   reference writer's exact bytes. Dtype codecs convert between the 22 dtypes (SIMD where the CPU
   has it). One format-independent reader (the archive) opens safetensors files, sharded
   checkpoints, datasets, .npy and GGUF files alike, through providers chosen by probing. No
   dependencies beyond the C library and POSIX.

   Do this:
      #define STS_IMPLEMENTATION
   before you include this file in *one* C or C++ file to create the implementation.

   TABLE OF CONTENTS                                      (grep for the >>anchor)
      compile-time options ..................................... below
      quick start ................................................ >>quickstart
      documentation: rules, ownership, limits, threads, errors, types ... below
      declarations ............................................. >>api
      implementation
         1  config, util: hooks, limits, checked math, LE I/O, errors    >>util
         2  json: strict RFC 8259 scanner pieces                          >>json
         3  dtype: the 22-dtype table                                     >>dtype
         4  header: parse + mandatory validation, name index              >>header
         5  io: every system call: sources, sinks, files and folders      >>io
               the task writers' write-behind thread                      >>write_behind
               a few jobs at once: the commit's threads                   >>parallel
         6  writer: reference-identical single-file writer                >>writer
         7  codec: dtype conversions, truncation and RNE, SIMD             >>codec
               CRC-32C, the shards' checksum                              >>crc32c
               SHA-256, the digest of files and tensors                   >>sha256
               dequantisation: ggml block types (Q4_K, ...) to F32        >>dequant
         8a dataset common: names, schema columns, the manifest reader    >>dataset_common
         8  dataset write                                                 >>dataset_write
               write options, typed and as strings                        >>ds_options
               the task writer and its shards                             >>task_writer
               batch mode: files laid out per batch, rows in place        >>batch
               KV mode: one buffered shard, rolled on its real size        >>kv
               commit messages                                            >>commit_message
               the dataset commit, reindex and abort                      >>commit
         9  dataset read                                                  >>dataset_read
               the key table: O(1) lookups                                >>key_table
               files, the manifest, the tensor index                      >>index
               schema, open, lookups                                      >>ds_open
               scans with projection and pushdown                         >>scan
               check and clean: everything a folder promises               >>check
         10 archive: one reader for every tensor container                  >>archive
               GGUF v2/v3: ggml's types, a validated reader in both orders   >>gguf
               the GGUF writer: specs and typed KVs as a GGUF v3 file         >>gguf_write
         11 lineage: the dataset record MLflow stores, with its digest      >>lineage
      license ................................................... end of file
   A new section goes after every section it calls, with a banner: ">>anchor  N. title", an "Owns:"
   line and a "May call:" line; add its anchor here. `make test-layers` (tests/check_layers.py)
   checks the calls against the banners, that nothing after io makes a system call, and this table.

   COMPILE-TIME OPTIONS                                   (define before including)
      STS_IMPLEMENTATION     emit the implementation in this translation unit
      STS_STATIC             give every public function internal linkage (static)
      STS_NO_STDIO           leave out everything that touches paths or file descriptors
                             (sts_open, sts_write_path, the dataset layers, the archive's path
                             inputs and its sharded and dataset providers); memory and
                             callbacks remain
      STS_NO_MMAP            sts_open reads files into memory instead of mapping them
      STS_NO_SIMD            use portable scalar code only (results are bit-identical)
      STS_NO_THREADS         the dataset writer makes its writes on the caller's thread (by
                             default each task writer has one POSIX I/O thread; link with
                             -pthread where the C library needs it)
      STS_MALLOC(ctx,size), STS_REALLOC(ctx,p,old,new), STS_FREE(ctx,p,size)
                             the default allocator: define all three or none (default: libc)
      STS_ASSERT(x)          checks of programmer errors only, never of file content
                             (default: assert from <assert.h>)
      STS_CONVERT_NT_BYTES   output size from which sts_convert's SIMD kernels use non-temporal
                             stores (default 16 MiB; larger than the caches is what pays)
      STS_KV_CHUNK_BYTES     the KV writer's buffer piece: a shard's data is held and written
                             in chunks of this size (default 4 MiB; at least 4 KiB). The writer's
                             fuzz target uses 16 KiB, to reach chunk edges with small rows

   QUICK START (this exact block is compiled and run by the tests)
   >>quickstart
      #define STS_IMPLEMENTATION
      #include "safetensors_spark.h"
      #include <stdio.h>
      #include <string.h>

      int main(void) {
          float w[6] = {1, 2, 3, 4, 5, 6};
          uint64_t shape[2] = {2, 3};
          sts_tensor_spec spec;
          memset(&spec, 0, sizeof spec);     // zero = defaults (C++ too)
          spec.name = "weight"; spec.name_len = 6;
          spec.dtype = STS_DTYPE_F32; spec.rank = 2; spec.shape = shape;
          spec.data = w; spec.data_size = sizeof w;

          void *bytes; size_t size; sts_error err;
          if (sts_write_memory(&spec, 1, NULL, 0, NULL, &bytes, &size, &err) != STS_OK) {
              fprintf(stderr, "%s: %s\n", sts_result_name(err.code), err.message);
              return 1;
          }
          sts_file *f;
          if (sts_parse(bytes, size, NULL, &f, &err) != STS_OK) {
              fprintf(stderr, "%s: %s\n", sts_result_name(err.code), err.message);
              return 1;
          }
          const sts_tensor *t = sts_find(f, "weight", 6);
          const float *data = (const float *)sts_data(f, t);   // zero-copy; little-endian (x86, ARM)
          printf("%.*s %s [%llu,%llu] last=%g\n", (int)t->name_len, t->name, sts_dtype_name(t->dtype),
                 (unsigned long long)t->shape[0], (unsigned long long)t->shape[1], data[5]);
          sts_close(f);
          sts_free(NULL, bytes, size);
          return 0;
      }
   <<quickstart

   DOCUMENTATION

   Validation. Every success of sts_parse / sts_parse_header / sts_open / sts_open_source means the
   whole header was checked; there is no "parsed but unchecked" state. The rules are applied in the
   reference's order, so the first broken rule (and therefore the verdict) is the reference's:
      1. file shorter than 8 bytes                    -> STS_ERR_HEADER_TOO_SMALL
      2. N > 100,000,000 (before the file-size check) -> STS_ERR_HEADER_TOO_LARGE
      3. 8 + N past the end of the file               -> STS_ERR_INVALID_HEADER_LENGTH
      4. header bytes (padding too) not UTF-8         -> STS_ERR_INVALID_HEADER
      5. JSON, type and dtype problems                -> STS_ERR_INVALID_HEADER_DESERIALIZATION
      6. tensors sorted by (begin, end), then each:   begin != cursor or end < begin -> INVALID_OFFSET,
         shape product / bit size overflow -> VALIDATION_OVERFLOW, bits % 8 -> MISALIGNED_SLICE,
         end - begin != size -> TENSOR_INVALID_INFO
      7. 8 + N + last end != file size                -> STS_ERR_METADATA_INCOMPLETE_BUFFER
   The full table (rule id -> result code -> reference variant) is STS_RULE_LIST below; the
   result code maps to the reference's variant through sts_result_variant(). With
   sts_options.strict, what the format text forbids but the reference tolerates is rejected too
   (STS_RULE_STRICT_*): duplicate keys, whitespace before '{', padding other than 0x20, positional
   tensor entries, unknown fields, "__metadata__": null, NUL inside tensor names. The writer is
   always strict.

   Ownership.
      - sts_parse / sts_parse_header borrow the caller's bytes: names, metadata and data pointers
        point into them, so the bytes must outlive the sts_file. Nothing is copied except names or
        metadata strings that contain JSON escapes; those are unescaped into memory the sts_file owns.
      - sts_open / sts_open_source own what they map or read; sts_close releases it.
      - Tensor and metadata pointers stay valid until sts_close. sts_close(NULL) is a no-op.
      - sts_write_memory returns a buffer from the options' allocator: release it with sts_free.
      - The writer never retains the caller's specs, data or metadata after it returns.
      - Datasets: an sts_dataset owns its files' mappings, its key table and its schema. An sts_view
        from sts_dataset_get or sts_dataset_column points into the dataset (key, shape) and, with
        data, into a file's mapping: it lives until sts_dataset_close. Views from sts_scan_next live
        until the next sts_scan_next or sts_scan_close (their data pointers, until the dataset closes).
      - A task writer copies what it keeps of a row (the caller's cells may change once
        sts_task_write returns) and never retains the write config or schema. sts_task_commit hands
        out the commit message: free it with sts_free(opts, message, len + 1), after it has been
        passed to sts_dataset_commit or sts_dataset_abort (which only borrow the messages).
   Names and strings are (pointer, length): an escaped NUL ("\u0000") is legal in a name.

   Limits. Header length at most 100,000,000 bytes and at most 127 nested JSON containers, both as
   the reference. sts_options can lower them, never raise them (a larger value is clamped). Tensor
   counts are limited only by the header length. All size arithmetic is overflow-checked.

   Thread safety. No locks and no thread-local state. An sts_file is read-only after it is returned:
   any number of threads may call the accessors on it at once. Writers share nothing; a dataset job
   runs one sts_task_writer per thread (or process) and commits once. The only global is the codec's
   CPU-feature word, computed on first use with relaxed atomics (racing threads store the same
   value). A task writer's own I/O thread touches only that writer's queued buffers, files and
   running CRC-32C. A dataset commit builds its key index and renders its index files on
   commit_threads threads that never allocate, and reads its shards' headers on several threads
   only with libc's allocator and no hooks. An
   sts_dataset may be shared by threads: its lazily mapped shards and key map are published with
   compare-and-swap (GCC/Clang atomics; other compilers: one thread at a time). An sts_archive
   likewise: its lazily opened shards and descriptor tables are published with compare-and-swap,
   so any number of threads may find, view, read and materialise at once; an sts_cursor belongs
   to one thread; a callback source of a shared archive must allow concurrent reads.

   Errors. Every fallible call returns an sts_result and, when the sts_error pointer is not NULL,
   fills it: the code, the byte offset in the file where known (STS_OFFSET_UNKNOWN otherwise), the
   rule broken, and a message naming the rule and the tensor. Out-parameters are untouched on error.
   The library never aborts on file content; STS_ASSERT guards only against misuse of the API.

   BF16. BF16 is a valid dtype even though the official header JSON Schema's dtype pattern
   ([UIF])(8|16|32|64|128|256) does not match it; every place that accepts it says so.

   Types beyond safetensors (decided before layer 10). sts_dtype is the safetensors dtype and stays
   exactly that: one enumerator per reference dtype, its value being the reference writer's sort
   rank (the writer's layout depends on it), never extended. Containers with other element types
   (GGUF's block-quantised Q4_0 ... IQ4_XS, its I8 ... F64, .npy's byte orders) are described in
   layer 10 by a type descriptor, not an sts_dtype: its name, whether it is a plain number type,
   bits per element (plain) or elements and bytes per block (quantised), and the matching sts_dtype
   when there is one (STS_DTYPE_COUNT when none). A descriptor with a matching sts_dtype is what the
   codecs and the safetensors writer accept; a block type goes through its own dequantiser first.
*/
#ifndef STS_INCLUDE_SAFETENSORS_SPARK_H
#define STS_INCLUDE_SAFETENSORS_SPARK_H

/* The implementation uses POSIX (open, pread, fsync, ftruncate, mmap). In strict ISO modes
   (-std=c99) the C library hides POSIX unless asked; ask for it here (also when only the
   declarations are included, since the implementation may follow in the same translation unit),
   which hides nothing the TU already had. If other system headers come before this one in such a
   TU, define _POSIX_C_SOURCE 200809L yourself. */
#if !defined(STS_NO_STDIO) && defined(__STRICT_ANSI__) && \
    !defined(_POSIX_C_SOURCE) && !defined(_XOPEN_SOURCE) && !defined(_GNU_SOURCE) && !defined(_DEFAULT_SOURCE)
#  define _POSIX_C_SOURCE 200809L
#endif

#include <stddef.h>
#include <stdint.h>

#define STS_VERSION_MAJOR 0
#define STS_VERSION_MINOR 1
#define STS_VERSION_PATCH 0
#define STS_VERSION_STRING "0.1.0"

#ifndef STSDEF
#  ifdef STS_STATIC
#    if defined(__GNUC__) || defined(__clang__)
#      define STSDEF static __attribute__((unused))
#    else
#      define STSDEF static
#    endif
#  else
#    define STSDEF extern
#  endif
#endif

#define STS_MAX_HEADER_SIZE 100000000u /* the reference's cap on N, in bytes */
#define STS_MAX_DEPTH 127u             /* nested JSON containers, the top-level object included */
#define STS_OFFSET_UNKNOWN UINT64_MAX  /* sts_error.offset when no file position applies */

#ifdef __cplusplus
extern "C" {
#endif

/* >>api ======================================================================================== */

/* ---- results --------------------------------------------------------------------------------
   One list generates the enum, sts_result_name() and sts_result_variant().
   X(enumerator, name, reference variant or NULL, meaning) */
#define STS_RESULT_LIST(X) \
    X(STS_OK,                                 "OK", NULL, "success") \
    X(STS_ERR_HEADER_TOO_SMALL,               "HEADER_TOO_SMALL", "HeaderTooSmall", \
        "the file is shorter than 8 bytes") \
    X(STS_ERR_HEADER_TOO_LARGE,               "HEADER_TOO_LARGE", "HeaderTooLarge", \
        "the header length is over the limit") \
    X(STS_ERR_INVALID_HEADER_LENGTH,          "INVALID_HEADER_LENGTH", "InvalidHeaderLength", \
        "the header runs past the end of the file") \
    X(STS_ERR_INVALID_HEADER,                 "INVALID_HEADER", "InvalidHeader", "the header is not valid UTF-8") \
    X(STS_ERR_INVALID_HEADER_DESERIALIZATION, "INVALID_HEADER_DESERIALIZATION", "InvalidHeaderDeserialization", \
        "the header JSON is malformed or has the wrong shape") \
    X(STS_ERR_INVALID_OFFSET,                 "INVALID_OFFSET", "InvalidOffset", \
        "tensor data offsets are not contiguous from 0") \
    X(STS_ERR_VALIDATION_OVERFLOW,            "VALIDATION_OVERFLOW", "ValidationOverflow", \
        "a tensor's size overflows 64 bits") \
    X(STS_ERR_MISALIGNED_SLICE,               "MISALIGNED_SLICE", "MisalignedSlice", \
        "a tensor's size is not a whole number of bytes") \
    X(STS_ERR_TENSOR_INVALID_INFO,            "TENSOR_INVALID_INFO", "TensorInvalidInfo", \
        "a tensor's offsets disagree with its dtype and shape") \
    X(STS_ERR_METADATA_INCOMPLETE_BUFFER,     "METADATA_INCOMPLETE_BUFFER", "MetadataIncompleteBuffer", \
        "the data section does not end at the end of the file") \
    X(STS_ERR_NOMEM,                          "NOMEM", NULL, "an allocation failed") \
    X(STS_ERR_IO,                             "IO", NULL, "an operating-system I/O call failed") \
    X(STS_ERR_INVALID_ARGUMENT,               "INVALID_ARGUMENT", NULL, "an argument is invalid") \
    X(STS_ERR_UNSUPPORTED,                    "UNSUPPORTED", NULL, "the operation is not supported") \
    X(STS_ERR_NOT_FOUND,                      "NOT_FOUND", NULL, "no such tensor, key or file") \
    X(STS_ERR_DUPLICATE_KEY,                  "DUPLICATE_KEY", NULL, "a name or key appears twice") \
    X(STS_ERR_OPTION,                         "OPTION", NULL, "a write option is invalid or inconsistent") \
    X(STS_ERR_EXISTS,                         "EXISTS", NULL, "the output folder is not empty") \
    X(STS_ERR_SCHEMA,                         "SCHEMA", NULL, "a row does not match the schema") \
    X(STS_ERR_DATASET,                        "DATASET", NULL, \
        "a dataset, manifest, index or commit message is inconsistent") \
    X(STS_ERR_CHECKSUM,                       "CHECKSUM", NULL, "bytes do not have the expected digest") \
    X(STS_ERR_FORMAT,                         "FORMAT", NULL, \
        "a container other than a safetensors file (an index, a .npy or GGUF file) is malformed")

#define STS__RESULT_ENUM(e, name, variant, text) e,
typedef enum sts_result { STS_RESULT_LIST(STS__RESULT_ENUM) STS_RESULT_COUNT } sts_result;

/* ---- rules ----------------------------------------------------------------------------------
   Every rejection names the rule it broke. X(enumerator, result code, id, statement of the rule).
   For rules of the format, the result code's reference variant is the reference's verdict. */
#define STS_RULE_LIST(X) \
    X(STS_RULE_NONE,              STS_OK, "none", "no rule was broken") \
    X(STS_RULE_FILE_TOO_SMALL,    STS_ERR_HEADER_TOO_SMALL, "file.too_small", \
        "a file holds at least the 8-byte header length") \
    X(STS_RULE_HEADER_TOO_LARGE,  STS_ERR_HEADER_TOO_LARGE, "header.too_large", \
        "the header length N is at most 100,000,000 (or the tightened limit); checked before the file size") \
    X(STS_RULE_HEADER_LENGTH,     STS_ERR_INVALID_HEADER_LENGTH, "header.length", \
        "8 + N does not pass the end of the file") \
    X(STS_RULE_HEADER_UTF8,       STS_ERR_INVALID_HEADER, "header.utf8", \
        "all N header bytes, padding included, are UTF-8 without overlongs, surrogates or code points over U+10FFFF") \
    X(STS_RULE_JSON_SYNTAX,       STS_ERR_INVALID_HEADER_DESERIALIZATION, "json.syntax", \
        "the header is one RFC 8259 JSON value, optionally surrounded by space, TAB, LF or CR") \
    X(STS_RULE_JSON_STRING,       STS_ERR_INVALID_HEADER_DESERIALIZATION, "json.string", \
        "strings hold no raw control characters, only valid escapes, and no unpaired surrogate escapes") \
    X(STS_RULE_JSON_NUMBER,       STS_ERR_INVALID_HEADER_DESERIALIZATION, "json.number", \
        "numbers follow the JSON grammar (no leading zeros, no bare '-') and, in ignored fields, fit a 64-bit float") \
    X(STS_RULE_JSON_DEPTH,        STS_ERR_INVALID_HEADER_DESERIALIZATION, "json.depth", \
        "at most 127 nested containers (or the tightened limit), the top-level object included, ignored fields too") \
    X(STS_RULE_HEADER_OBJECT,     STS_ERR_INVALID_HEADER_DESERIALIZATION, "header.object", \
        "the top-level value is an object") \
    X(STS_RULE_METADATA_TYPE,     STS_ERR_INVALID_HEADER_DESERIALIZATION, "metadata.type", \
        "__metadata__ is null or an object") \
    X(STS_RULE_METADATA_VALUE,    STS_ERR_INVALID_HEADER_DESERIALIZATION, "metadata.value", \
        "every __metadata__ value is a string") \
    X(STS_RULE_METADATA_TWICE,    STS_ERR_INVALID_HEADER_DESERIALIZATION, "metadata.twice", \
        "__metadata__ appears at most once") \
    X(STS_RULE_ENTRY_TYPE,        STS_ERR_INVALID_HEADER_DESERIALIZATION, "tensor.entry", \
        "a tensor entry is an object, or an array of exactly [dtype, shape, data_offsets]") \
    X(STS_RULE_FIELD_TWICE,       STS_ERR_INVALID_HEADER_DESERIALIZATION, "tensor.field_twice", \
        "dtype, shape and data_offsets appear at most once in an entry") \
    X(STS_RULE_FIELD_MISSING,     STS_ERR_INVALID_HEADER_DESERIALIZATION, "tensor.field_missing", \
        "dtype, shape and data_offsets are all present in an entry") \
    X(STS_RULE_DTYPE,             STS_ERR_INVALID_HEADER_DESERIALIZATION, "tensor.dtype", \
        "dtype is a string that is exactly one of the 22 dtype names") \
    X(STS_RULE_SHAPE,             STS_ERR_INVALID_HEADER_DESERIALIZATION, "tensor.shape", \
        "shape is an array of integers in [0, 2^64)") \
    X(STS_RULE_OFFSETS,           STS_ERR_INVALID_HEADER_DESERIALIZATION, "tensor.data_offsets", \
        "data_offsets is an array of exactly two integers in [0, 2^64)") \
    X(STS_RULE_STRICT_LEADING_WS, STS_ERR_INVALID_HEADER_DESERIALIZATION, "strict.leading_whitespace", \
        "strict: the header begins with '{'") \
    X(STS_RULE_STRICT_PADDING,    STS_ERR_INVALID_HEADER_DESERIALIZATION, "strict.padding", \
        "strict: only spaces (0x20) follow the top-level object") \
    X(STS_RULE_STRICT_DUPLICATE,  STS_ERR_INVALID_HEADER_DESERIALIZATION, "strict.duplicate_key", \
        "strict: no tensor name and no __metadata__ key appears twice") \
    X(STS_RULE_STRICT_POSITIONAL, STS_ERR_INVALID_HEADER_DESERIALIZATION, "strict.positional_entry", \
        "strict: a tensor entry is an object, not an array") \
    X(STS_RULE_STRICT_UNKNOWN,    STS_ERR_INVALID_HEADER_DESERIALIZATION, "strict.unknown_field", \
        "strict: a tensor entry has no field but dtype, shape and data_offsets") \
    X(STS_RULE_STRICT_META_NULL,  STS_ERR_INVALID_HEADER_DESERIALIZATION, "strict.metadata_null", \
        "strict: __metadata__ is an object when present, not null") \
    X(STS_RULE_STRICT_NAME_NUL,   STS_ERR_INVALID_HEADER_DESERIALIZATION, "strict.name_nul", \
        "strict: tensor names contain no NUL character") \
    X(STS_RULE_OFFSETS_CONTIGUOUS, STS_ERR_INVALID_OFFSET, "offsets.contiguous", \
        "sorted by (begin, end), each tensor begins where the previous one ended, the first at 0, and end >= begin") \
    X(STS_RULE_NUMEL_OVERFLOW,    STS_ERR_VALIDATION_OVERFLOW, "size.numel_overflow", \
        "the product of the shape, taken in order, fits in 64 bits") \
    X(STS_RULE_BITS_OVERFLOW,     STS_ERR_VALIDATION_OVERFLOW, "size.bits_overflow", \
        "element count x dtype bits fits in 64 bits") \
    X(STS_RULE_BYTE_ALIGNED,      STS_ERR_MISALIGNED_SLICE, "size.byte_aligned", \
        "element count x dtype bits is a multiple of 8 (F4, F6 only)") \
    X(STS_RULE_SIZE_MATCH,        STS_ERR_TENSOR_INVALID_INFO, "size.matches_offsets", \
        "end - begin equals element count x dtype bits / 8") \
    X(STS_RULE_FILE_SIZE,         STS_ERR_METADATA_INCOMPLETE_BUFFER, "file.size", \
        "8 + N + the last tensor's end equals the file size: no trailing bytes, no truncation") \
    X(STS_RULE_ALLOC,             STS_ERR_NOMEM, "alloc", "memory allocations succeed") \
    X(STS_RULE_IO,                STS_ERR_IO, "io", "operating-system I/O calls succeed") \
    X(STS_RULE_DURABLE,           STS_ERR_IO, "io.durable", \
        "a durable write's final folder fsync succeeds (when it fails, the new files are already in place, " \
        "published, but may not survive a crash)") \
    X(STS_RULE_ARGUMENT,          STS_ERR_INVALID_ARGUMENT, "argument", \
        "arguments satisfy the documented preconditions") \
    X(STS_RULE_UNSUPPORTED,       STS_ERR_UNSUPPORTED, "unsupported", \
        "the operation is supported for these arguments") \
    X(STS_RULE_NOT_FOUND,         STS_ERR_NOT_FOUND, "not_found", "the named tensor, key or file exists") \
    X(STS_RULE_WRITE_DUPLICATE,   STS_ERR_DUPLICATE_KEY, "write.duplicate_name", \
        "writer: tensor names and metadata keys are unique") \
    X(STS_RULE_WRITE_RESERVED,    STS_ERR_INVALID_ARGUMENT, "write.reserved_name", \
        "writer: no tensor is named __metadata__") \
    X(STS_RULE_WRITE_TEXT,        STS_ERR_INVALID_ARGUMENT, "write.text", \
        "writer: names and metadata are valid UTF-8, and names hold no NUL") \
    X(STS_RULE_WRITE_DTYPE,       STS_ERR_INVALID_ARGUMENT, "write.dtype", \
        "writer: the dtype is one of the 22 and the shape pointer is set when rank > 0") \
    X(STS_RULE_WRITE_DATA_SIZE,   STS_ERR_INVALID_ARGUMENT, "write.data_size", \
        "writer: data_size equals the shape's byte size, and data or a producer is given") \
    X(STS_RULE_WRITE_PRODUCER,    STS_ERR_INVALID_ARGUMENT, "write.producer", \
        "writer: a producer emits exactly data_size bytes and succeeds") \
    X(STS_RULE_WRITE_TOTAL,       STS_ERR_VALIDATION_OVERFLOW, "write.total_size", \
        "writer: 8 + N + the total data size fits in 64 bits") \
    X(STS_RULE_OPTION,            STS_ERR_OPTION, "option", \
        "dataset: write options are valid and consistent with the schema (the message names the option " \
        "and the value)") \
    X(STS_RULE_EXISTS,            STS_ERR_EXISTS, "dataset.exists", \
        "dataset: the output folder is empty, unless overwrite is set") \
    X(STS_RULE_ROW_DTYPE,         STS_ERR_SCHEMA, "row.dtype", \
        "dataset: a column's tensors all have the dtype of its first row") \
    X(STS_RULE_ROW_SHAPE,         STS_ERR_SCHEMA, "row.shape", \
        "dataset: in batch mode every row has the first row's shape; arrays match their shapes option") \
    X(STS_RULE_ROW_VALUE,         STS_ERR_SCHEMA, "row.value", \
        "dataset: a tensor's bytes match its dtype and shape; a key is UTF-8 without NUL; a row's names fit " \
        "a shard's 100,000,000-byte header") \
    X(STS_RULE_DUPLICATE_KEY,     STS_ERR_DUPLICATE_KEY, "dataset.duplicate_key", \
        "dataset: with duplicatesStrategy=fail no tensor key is written twice, across shards and tasks") \
    X(STS_RULE_MESSAGE,           STS_ERR_DATASET, "dataset.message", \
        "dataset: commit messages come from this library's task writers and agree with each other") \
    X(STS_RULE_SHARD,             STS_ERR_DATASET, "dataset.shard", \
        "dataset: every shard exists with its recorded size and a valid header") \
    X(STS_RULE_STATE,             STS_ERR_INVALID_ARGUMENT, "writer.state", \
        "dataset: a task writer takes rows, then one commit, and nothing after a failure") \
    X(STS_RULE_DATASET_MANIFEST,  STS_ERR_DATASET, "dataset.manifest", \
        "dataset: dataset_manifest.json is valid and every shard it lists exists with the listed size") \
    X(STS_RULE_DATASET_INDEX,     STS_ERR_DATASET, "dataset.index", \
        "dataset: _tensor_index.json is valid, current (the manifest's dataset_id) and agrees with the " \
        "shards' headers") \
    X(STS_RULE_READ_SCHEMA,       STS_ERR_SCHEMA, "read.schema", \
        "dataset: a schema is given or inferred, and every file agrees with an explicit one") \
    X(STS_RULE_DATASET_ORPHAN,    STS_ERR_DATASET, "dataset.orphan", \
        "dataset: every part-* shard beside a manifest is one it names (others were left by jobs that did not " \
        "commit)") \
    X(STS_RULE_DATASET_TEMPORARY, STS_ERR_DATASET, "dataset.temporary", \
        "dataset: no writer's temporary is left in the folder") \
    X(STS_RULE_DATASET_LOCK,      STS_ERR_DATASET, "dataset.lock", \
        "dataset: no job holds the folder (a lock is a job writing, or one that crashed)") \
    X(STS_RULE_DATASET_CHECKSUM,  STS_ERR_DATASET, "dataset.checksum", \
        "dataset: a shard's bytes have the CRC-32C its manifest records") \
    X(STS_RULE_DATASET_PUBLISHED, STS_ERR_DATASET, "dataset.published", \
        "dataset: sts_dataset_discard and sts_dataset_abort remove no shard of the published dataset (a message " \
        "naming one is refused and nothing of it is removed)") \
    X(STS_RULE_PROBE,             STS_ERR_UNSUPPORTED, "archive.probe", \
        "archive: a registered provider supports the source (the message gives every provider's reason)") \
    X(STS_RULE_PROVIDER,          STS_ERR_FORMAT, "archive.provider", \
        "archive: a provider's tensors have unique names, sizes that match their types and shapes, and bytes " \
        "inside their file") \
    X(STS_RULE_VIEW,              STS_ERR_UNSUPPORTED, "archive.view", \
        "archive: a zero-copy view needs bytes that are mapped or in memory, aligned for the type and in the " \
        "host's byte order") \
    X(STS_RULE_WINDOW,            STS_ERR_INVALID_ARGUMENT, "archive.window", \
        "archive: a window read or cursor lies inside its tensor") \
    X(STS_RULE_SHA256,            STS_ERR_CHECKSUM, "archive.sha256", \
        "archive: bytes have the SHA-256 digest the caller expects") \
    X(STS_RULE_SHARDED_INDEX,     STS_ERR_FORMAT, "sharded.index", \
        "sharded checkpoint: the index is a JSON object whose weight_map maps unique tensor names to shard " \
        "file names in the index's folder") \
    X(STS_RULE_SHARDED_SHARD,     STS_ERR_FORMAT, "sharded.shard", \
        "sharded checkpoint: each shard is a valid safetensors file holding exactly the tensors the index " \
        "gives it") \
    X(STS_RULE_NPY_HEADER,        STS_ERR_FORMAT, "npy.header", \
        ".npy: the magic, version 1, 2 or 3, a header dict with descr, fortran_order and shape, and exactly " \
        "the shape's bytes after it") \
    X(STS_RULE_NPY_FORTRAN,       STS_ERR_UNSUPPORTED, "npy.fortran_order", \
        ".npy: arrays are in C order (Fortran order is not supported)") \
    X(STS_RULE_GGUF_MAGIC,        STS_ERR_FORMAT, "gguf.magic", "GGUF: the file begins with the four bytes GGUF") \
    X(STS_RULE_GGUF_VERSION,      STS_ERR_UNSUPPORTED, "gguf.version", \
        "GGUF: the version, read in either byte order, is 2 or 3 (1 is obsolete; 0 and versions above 3 are not " \
        "read)") \
    X(STS_RULE_GGUF_TRUNCATED,    STS_ERR_FORMAT, "gguf.truncated", \
        "GGUF: every fixed-size field of the header (counts, types, dimensions, offsets, values) lies inside the " \
        "file") \
    X(STS_RULE_GGUF_COUNT,        STS_ERR_FORMAT, "gguf.count", \
        "GGUF: the tensor and KV counts are below 2^63 and their smallest encodings fit in the file") \
    X(STS_RULE_GGUF_STRING,       STS_ERR_FORMAT, "gguf.string", \
        "GGUF: a string is at most 2^30 bytes long (ggml's limit) and its bytes lie inside the file") \
    X(STS_RULE_GGUF_ARRAY,        STS_ERR_FORMAT, "gguf.array", \
        "GGUF: an array has at most 2^30 items (ggml's limit) and their smallest encodings fit in the file") \
    X(STS_RULE_GGUF_VALUE_TYPE,   STS_ERR_FORMAT, "gguf.value_type", \
        "GGUF: a value type is one of the 13, and an array's items are not arrays (ggml refuses nested arrays)") \
    X(STS_RULE_GGUF_KEY,          STS_ERR_FORMAT, "gguf.key", "GGUF: no key is empty") \
    X(STS_RULE_GGUF_DUPLICATE_KEY, STS_ERR_FORMAT, "gguf.duplicate_key", "GGUF: no key appears twice") \
    X(STS_RULE_GGUF_ALIGNMENT,    STS_ERR_FORMAT, "gguf.alignment", \
        "GGUF: general.alignment, when present, is a UINT32 (not an array) and a power of two") \
    X(STS_RULE_GGUF_NAME,         STS_ERR_FORMAT, "gguf.name", \
        "GGUF: a tensor name is at most 63 bytes (ggml's GGML_MAX_NAME, 64, counts the NUL)") \
    X(STS_RULE_GGUF_DUPLICATE_NAME, STS_ERR_FORMAT, "gguf.duplicate_name", \
        "GGUF: no tensor name appears twice (compared up to a NUL, as ggml compares them)") \
    X(STS_RULE_GGUF_N_DIMS,       STS_ERR_FORMAT, "gguf.n_dims", "GGUF: a tensor has at most 4 dimensions") \
    X(STS_RULE_GGUF_SHAPE,        STS_ERR_FORMAT, "gguf.shape", \
        "GGUF: every dimension is below 2^63 (ggml reads them as signed 64-bit numbers)") \
    X(STS_RULE_GGUF_OVERFLOW,     STS_ERR_FORMAT, "gguf.overflow", \
        "GGUF: element counts pass ggml's bound (below 2^63 - 1) without a product that wraps; byte sizes, padded " \
        "sizes and the data section's size fit in 64 bits") \
    X(STS_RULE_GGUF_TYPE,         STS_ERR_UNSUPPORTED, "gguf.type", \
        "GGUF: a tensor's type id is one of ggml's types from F32 (0) to MXFP4 (39), not a removed one") \
    X(STS_RULE_GGUF_BLOCK,        STS_ERR_FORMAT, "gguf.block", \
        "GGUF: the first (innermost) dimension is a multiple of the type's block size") \
    X(STS_RULE_GGUF_OFFSET,       STS_ERR_FORMAT, "gguf.offset", \
        "GGUF: each tensor's offset is the sum of the padded sizes of the tensors before it (aligned, in order, " \
        "contiguous)") \
    X(STS_RULE_GGUF_DATA,         STS_ERR_FORMAT, "gguf.data", \
        "GGUF: the data section starts inside the file and holds every tensor's bytes padded to the alignment") \
    X(STS_RULE_GGUF_STRICT_BOOL,  STS_ERR_FORMAT, "gguf.strict_bool", "GGUF strict: a BOOL byte is 0 or 1") \
    X(STS_RULE_GGUF_STRICT_KEY,   STS_ERR_FORMAT, "gguf.strict_key", \
        "GGUF strict: a key is ASCII, at most 65535 bytes, lower_snake_case segments ([a-z0-9_]+) joined by dots") \
    X(STS_RULE_GGUF_STRICT_UTF8,  STS_ERR_FORMAT, "gguf.strict_utf8", "GGUF strict: STRING values are UTF-8") \
    X(STS_RULE_GGUF_STRICT_NAME,  STS_ERR_FORMAT, "gguf.strict_name", \
        "GGUF strict: tensor names are UTF-8 without NUL") \
    X(STS_RULE_GGUF_STRICT_ALIGNMENT, STS_ERR_FORMAT, "gguf.strict_alignment", \
        "GGUF strict: general.alignment is a multiple of 8") \
    X(STS_RULE_GGUF_STRICT_PADDING, STS_ERR_FORMAT, "gguf.strict_padding", \
        "GGUF strict: the padding between the tensor infos and the data section is 0x00 bytes") \
    X(STS_RULE_GGUF_STRICT_BIG_ENDIAN, STS_ERR_FORMAT, "gguf.strict_big_endian", \
        "GGUF strict: a big-endian file is version 3 (the version that introduced big-endian files)") \
    X(STS_RULE_GGUF_STRICT_REQUIRED, STS_ERR_FORMAT, "gguf.strict_required", \
        "GGUF strict: general.architecture is a STRING; with a quantised tensor, general.quantization_version is " \
        "a UINT32")

#define STS__RULE_ENUM(e, code, id, text) e,
typedef enum sts_rule { STS_RULE_LIST(STS__RULE_ENUM) STS_RULE_COUNT } sts_rule;

typedef struct sts_error {
    sts_result code;    /* what went wrong */
    uint64_t offset;    /* byte offset in the file where known, else STS_OFFSET_UNKNOWN */
    char message[256];  /* "<rule id>: <what, naming the tensor>"; NUL-terminated, no TAB or newline */
    sts_rule rule;      /* the rule broken (STS_RULE_NONE on success) */
} sts_error;

STSDEF const char *sts_result_name(sts_result r);    /* "OK", "HEADER_TOO_LARGE", ...; "?" if out of range */
STSDEF const char *sts_result_variant(sts_result r); /* "HeaderTooLarge", ...; NULL if the reference has none */
STSDEF const char *sts_result_text(sts_result r);    /* one-line meaning */
STSDEF const char *sts_rule_id(sts_rule r);          /* "offsets.contiguous", ... */
STSDEF const char *sts_rule_text(sts_rule r);        /* the rule, stated */
STSDEF sts_result sts_rule_result(sts_rule r);       /* the code a rejection under this rule returns */

/* ---- dtypes ---------------------------------------------------------------------------------
   One enumerator per reference dtype, in the reference writer's rank order (the enum value is the
   rank). X(enumerator suffix, bits per element). BF16 is accepted although it lies outside the
   official schema's dtype regex ([UIF])(8|16|32|64|128|256). */
#define STS_DTYPE_LIST(X) \
    X(BOOL, 8) X(F4, 4) X(F6_E2M3, 6) X(F6_E3M2, 6) X(U8, 8) X(I8, 8) X(F8_E5M2, 8) X(F8_E4M3, 8) \
    X(F8_E8M0, 8) X(F8_E4M3FNUZ, 8) X(F8_E5M2FNUZ, 8) X(I16, 16) X(U16, 16) X(F16, 16) \
    X(BF16, 16) X(I32, 32) X(U32, 32) X(F32, 32) X(C64, 64) X(F64, 64) X(I64, 64) X(U64, 64)

#define STS__DTYPE_ENUM(name, bits) STS_DTYPE_##name,
typedef enum sts_dtype { STS_DTYPE_LIST(STS__DTYPE_ENUM) STS_DTYPE_COUNT } sts_dtype;

STSDEF const char *sts_dtype_name(sts_dtype d);      /* "BF16"; "?" if out of range */
STSDEF unsigned sts_dtype_bits(sts_dtype d);         /* 4, 6, 8, 16, 32 or 64; 0 if out of range */
/* Exact, case-sensitive lookup of a header spelling. Returns 1 and sets *out, or 0. */
STSDEF int sts_dtype_from_name(const char *name, size_t len, sts_dtype *out);

/* ---- options --------------------------------------------------------------------------------- */
typedef struct sts_allocator {         /* all three or none; user is passed back unchanged */
    void *(*alloc)(void *user, size_t size);
    void *(*realloc)(void *user, void *ptr, size_t old_size, size_t new_size);
    void (*free)(void *user, void *ptr, size_t size);
    void *user;
} sts_allocator;

typedef struct sts_options {    /* zero-initialise: {0} means every default */
    sts_allocator allocator;    /* run-time allocator; all zero = STS_MALLOC & co */
    uint64_t max_header_size;   /* 0 = STS_MAX_HEADER_SIZE; may only tighten */
    uint32_t max_depth;         /* 0 = STS_MAX_DEPTH; may only tighten */
    int strict;                 /* also reject what the format text forbids (STS_RULE_STRICT_*) */
    int header_only;            /* read 8 + N bytes only (map them from 4 MiB); sts_data() then returns NULL */
    int no_mmap;                /* sts_open: read the file into memory rather than map it */
    int no_fsync;               /* sts_write_path: skip fsync (faster, not crash-safe) */
    uint64_t hash_seed;         /* name-index seed; 0 = derived per file from address entropy */
    /* Fault injection for tests: called before each write-side system call on files the library
       creates ("write", "pwrite", "ftruncate", "fsync", "rename", "link") and before the fsync of a
       folder after a durable publication ("fsync_dir"); a nonzero return is taken as that call's
       errno. Leave NULL in production. */
    int (*io_fault)(void *user, const char *op);
    void *io_fault_user;
} sts_options;

/* ---- one file, read side --------------------------------------------------------------------- */
typedef struct sts_file sts_file;

typedef struct sts_tensor {
    const char *name;       /* unescaped; not NUL-terminated in general */
    size_t name_len;
    sts_dtype dtype;
    uint32_t rank;
    const uint64_t *shape;  /* rank entries */
    uint64_t begin, end;    /* byte offsets relative to the start of the data section */
} sts_tensor;

typedef struct sts_kv {     /* a __metadata__ entry, unescaped, (pointer, length) */
    const char *key;
    size_t key_len;
    const char *value;
    size_t value_len;
} sts_kv;

/* Parse a whole file held in memory. The bytes must outlive *out (see Ownership). */
STSDEF sts_result sts_parse(const void *bytes, size_t size, const sts_options *opts, sts_file **out,
                            sts_error *err);
/* Parse from a buffer that holds at least the first 8 + N bytes of a file of file_size bytes
   (for callers that fetched the header themselves). Fully validated; data pointers are NULL. */
STSDEF sts_result sts_parse_header(const void *prefix, size_t prefix_size, uint64_t file_size,
                                   const sts_options *opts, sts_file **out, sts_error *err);

/* A pread-style source for remote or custom storage: read exactly len bytes at offset. */
typedef struct sts_source {
    sts_result (*read)(void *user, uint64_t offset, void *dst, size_t len);
    void *user;
    uint64_t size;          /* the file's size in bytes */
} sts_source;
/* Reads exactly 8 + N bytes through the source and validates them. Data pointers are NULL;
   a tensor's bytes lie at sts_tensor_file_offset(). */
STSDEF sts_result sts_open_source(const sts_source *src, const sts_options *opts, sts_file **out,
                                  sts_error *err);
#ifndef STS_NO_STDIO
/* Maps the file (or reads it, under STS_NO_MMAP, opts->no_mmap, or when mmap fails), or with
   opts->header_only reads exactly 8 + N bytes; a header of 4 MiB or more is mapped instead (its
   pages only), unless no_mmap. Files over 4 GiB work on 64-bit hosts. */
STSDEF sts_result sts_open(const char *path, const sts_options *opts, sts_file **out, sts_error *err);
#endif
STSDEF void sts_close(sts_file *f);

STSDEF size_t sts_count(const sts_file *f);
STSDEF const sts_tensor *sts_at(const sts_file *f, size_t i);   /* data-offset order; NULL if i >= count */
STSDEF const sts_tensor *sts_find(const sts_file *f, const char *name, size_t name_len); /* O(1); NULL if absent */
STSDEF const void *sts_data(const sts_file *f, const sts_tensor *t); /* zero-copy; NULL if header-only */
STSDEF uint64_t sts_tensor_nbytes(const sts_tensor *t);              /* end - begin */
STSDEF uint64_t sts_tensor_numel(const sts_tensor *t);               /* product of the shape */
STSDEF uint64_t sts_tensor_file_offset(const sts_file *f, const sts_tensor *t); /* 8 + N + begin */
STSDEF uint64_t sts_header_size(const sts_file *f);                  /* N */
STSDEF uint64_t sts_file_size(const sts_file *f);
STSDEF int sts_has_metadata(const sts_file *f);                      /* __metadata__ present, even {} */
STSDEF size_t sts_metadata_count(const sts_file *f);
STSDEF const sts_kv *sts_metadata_at(const sts_file *f, size_t i);   /* header order, duplicates removed */
STSDEF const sts_kv *sts_metadata_find(const sts_file *f, const char *key, size_t key_len);

/* ---- one file, write side --------------------------------------------------------------------
   The layout is the reference writer's: tensors sorted by descending dtype rank then by name
   bytes, contiguous offsets from 0, compact JSON with __metadata__ first, spaces to a multiple of
   8. Everything is checked before the first byte is written. */
typedef struct sts_stream sts_stream;   /* where a producer pushes a tensor's bytes */
struct sts_tensor_spec;
/* Called once, in layout order, to emit exactly spec->data_size bytes with sts_stream_write. */
typedef sts_result (*sts_produce_fn)(void *user, const struct sts_tensor_spec *spec, sts_stream *out);

typedef struct sts_tensor_spec {
    const char *name;
    size_t name_len;
    sts_dtype dtype;
    uint32_t rank;
    const uint64_t *shape;
    const void *data;        /* data_size bytes, little-endian; or NULL to use produce */
    uint64_t data_size;      /* must equal the shape's byte size */
    sts_produce_fn produce;  /* used when data is NULL and data_size > 0 */
    void *produce_user;
} sts_tensor_spec;

typedef struct sts_sink {    /* consume exactly len bytes or fail */
    sts_result (*write)(void *user, const void *bytes, size_t len);
    void *user;
} sts_sink;

STSDEF sts_result sts_stream_write(sts_stream *out, const void *bytes, size_t len);

/* meta == NULL: no __metadata__ key; meta != NULL with n_meta == 0: "__metadata__":{} */
STSDEF sts_result sts_write_size(const sts_tensor_spec *specs, size_t n, const sts_kv *meta, size_t n_meta,
                                 const sts_options *opts, uint64_t *header_size, uint64_t *file_size,
                                 sts_error *err);
STSDEF sts_result sts_write(const sts_tensor_spec *specs, size_t n, const sts_kv *meta, size_t n_meta,
                            const sts_sink *sink, const sts_options *opts, sts_error *err);
STSDEF sts_result sts_write_memory(const sts_tensor_spec *specs, size_t n, const sts_kv *meta, size_t n_meta,
                                   const sts_options *opts, void **out, size_t *out_size, sts_error *err);
#ifndef STS_NO_STDIO
/* Atomic: a temporary in the same folder, fsync, rename, fsync of the folder. On any failure the
   temporary is removed and an existing file at path is untouched, but for the last step: when the
   folder's fsync fails, the new file is in place already and the error's rule is
   STS_RULE_DURABLE (io.durable). */
STSDEF sts_result sts_write_path(const char *path, const sts_tensor_spec *specs, size_t n,
                                 const sts_kv *meta, size_t n_meta, const sts_options *opts, sts_error *err);
#endif
/* Releases memory the library handed out (sts_write_memory), with the options' allocator. */
STSDEF void sts_free(const sts_options *opts, void *ptr, size_t size);

/* ---- codecs ----------------------------------------------------------------------------------
   sts_convert turns `count` elements of src_dtype at src into dst_dtype at dst. Both buffers hold
   little-endian values (the file's byte order) on every host, and neither needs any alignment.

   Supported (sts_convert_supported says the same):
      - any numeric source (BOOL, U8..U64, I8..I64, F16, BF16, F32, F64 and the five F8 formats)
        to any of the 12 seed dtypes F16 F32 F64 BF16 U8 I8 U16 I16 U32 I32 U64 I64;
      - C64 to F32 or F64: dst receives 2 x count values, (re, im) interleaved;
      - any dtype to itself: a plain copy (F4/F6 too, when count x bits is a whole number of bytes).
   Not supported: F4 and F6 to anything else, and any other target (BOOL, F8, C64 from a real
   source) -> STS_ERR_UNSUPPORTED.

   Semantics (format/SPECIFICATION.md has the full table):
      - decoding every source is exact; F8_E4M3 is the OCP "fn" variant (no infinities, S.1111.111
        is NaN), E8M0 is 2^(e-127) with 0xFF NaN, the FNUZ variants have biases 8 / 16 and 0x80 as
        their only NaN; BOOL is 0 for a zero byte and 1 for any other.
      - `rounding` governs F16 and BF16 targets only. STS_ROUND_TRUNCATE is IEEE round-toward-zero:
        subnormals kept, finite overflow to +-max finite (+-65504 for F16), Inf stays Inf; for F32
        sources into BF16 it is exactly the top 16 bits, except that a NaN whose kept bits would
        read as Inf gets its quiet bit. STS_ROUND_NEAREST_EVEN is IEEE rounding as numpy/PyTorch
        (overflow gives Inf).
      - every other float target (F32 from F64 or a 32/64-bit integer, F64 from a 64-bit integer)
        rounds to nearest even, as C and numpy do; integers never pass through double.
      - float -> integer truncates toward zero and saturates at the target's range (+-Inf too);
        NaN -> 0. integer -> integer saturates. Both in either rounding mode.
      - NaN stays NaN with its sign; it leaves as a quiet NaN keeping the top payload bits (what
        F16C and ARM FCVT do), except BF16 -> F32, a bit move, and F32 -> BF16 truncation above.
   Arguments: dst/src may be NULL only when count is 0; the byte sizes must fit in size_t; dtypes
   and rounding must be in range. Those give STS_ERR_INVALID_ARGUMENT, unsupported pairs
   STS_ERR_UNSUPPORTED; nothing is written then. Buffers must not overlap, except for a
   same-dtype copy (memmove).
   Speed: F32 <-> F16/BF16 run SIMD kernels (SSE2, AVX2+F16C, AVX-512BW chosen at run time; NEON on
   little-endian AArch64) that give the scalar path's exact bits; STS_NO_SIMD keeps only scalar
   code. One thread; large outputs use non-temporal stores. */
typedef enum sts_rounding {
    STS_ROUND_TRUNCATE = 0,       /* the original connector's rule (default) */
    STS_ROUND_NEAREST_EVEN = 1,   /* numpy astype / PyTorch .to() */
    STS_ROUNDING_COUNT
} sts_rounding;

STSDEF sts_result sts_convert(void *dst, sts_dtype dst_dtype, const void *src, sts_dtype src_dtype,
                              size_t count, sts_rounding rounding);
/* The same, and fills *err (when not NULL) with a message naming the dtypes and the problem. */
STSDEF sts_result sts_convert_ex(void *dst, sts_dtype dst_dtype, const void *src, sts_dtype src_dtype,
                                 size_t count, sts_rounding rounding, sts_error *err);
/* 1 if sts_convert accepts the pair (for some count), else 0. */
STSDEF int sts_convert_supported(sts_dtype dst, sts_dtype src);
/* The instruction set the SIMD kernels use on this machine: "avx512bw", "avx2+f16c", "sse2",
   "neon" or "scalar". */
STSDEF const char *sts_convert_isa(void);

/* ---- SHA-256 ---------------------------------------------------------------------------------
   FIPS 180-4. The digest of a whole safetensors file is its oid in the Hugging Face Hub's LFS
   listing. The x86 SHA extensions (SHA-NI) are used where the CPU has them, portable code
   otherwise (STS_NO_SIMD: always); both give the same digests. Feed the bytes in any pieces:
   init, update as often as needed, final. sts_sha256_final leaves *s initialised again, ready for
   the next message. An sts_sha256 is a plain value (put it on the stack; copy it to fork a digest)
   used by one thread at a time. update's data may be NULL when len is 0. */
typedef struct sts_sha256 {
    uint32_t h[8];      /* the chaining value */
    uint64_t len;       /* bytes taken so far */
    uint8_t buf[64];    /* a block waiting for its last bytes */
    size_t fill;        /* bytes in buf */
    int use_hw;         /* set by init: 1 when the SHA extensions run */
} sts_sha256;
STSDEF void sts_sha256_init(sts_sha256 *s);
STSDEF void sts_sha256_update(sts_sha256 *s, const void *data, size_t len);
STSDEF void sts_sha256_final(sts_sha256 *s, uint8_t digest[32]);
/* One call: the digest of len bytes in memory. (Not named sts_sha256: C gives a typedef and a
   function one name space, and that name is the state's.) */
STSDEF void sts_sha256_memory(const void *data, size_t len, uint8_t digest[32]);
STSDEF void sts_sha256_hex(const uint8_t digest[32], char hex[65]);              /* lowercase, NUL-terminated */
/* 1 if hex holds exactly len = 64 hex digits (either case), digest then filled; else 0, digest untouched. */
STSDEF int sts_sha256_parse_hex(const char *hex, size_t len, uint8_t digest[32]);
STSDEF const char *sts_sha256_isa(void);  /* "sha-ni" or "scalar": what sts_sha256_init picks here */

/* ---- dequantisation of ggml block types ------------------------------------------------------
   The block-quantised tensors of GGUF files, decoded to F32: Q8_0, Q4_0, Q4_1, Q5_0, Q5_1 (blocks
   of 32 elements) and the k-quants Q2_K, Q3_K, Q4_K, Q5_K, Q6_K (super-blocks of 256), named as
   ggml names them. src holds count / block_elems whole blocks in ggml's layout, little-endian
   whatever the host; dst receives count floats (host order). Each value is the exact product of
   its fp16 scale and small integers; the types with a minimum subtract or add it once, rounded
   once to nearest even: y = d * q (Q8_0, Q4_0, Q5_0, Q3_K, Q6_K), d * q + m (Q4_1, Q5_1),
   d * q - m (Q2_K, Q4_K, Q5_K). SIMD kernels (SSE2, AVX2 + F16C chosen at run time; NEON on
   little-endian AArch64) give the scalar code's exact bits; a NaN scale gives NaNs whose payload
   may differ between paths. No alignment needed;
   dst and src must not overlap. count 0 is a no-op (the pointers may then be NULL).
   STS_ERR_UNSUPPORTED for any other type name (or NULL), STS_ERR_INVALID_ARGUMENT for a count not
   a whole number of blocks, or a NULL pointer with count > 0. */
STSDEF sts_result sts_dequantize(float *dst, const void *src, const char *type_name, size_t count);
/* 1 for the ten types above, else 0. */
STSDEF int sts_dequantize_supported(const char *type_name);
/* 1 and the block geometry (elements and bytes per block) for the ten types; else 0, nothing written. */
STSDEF int sts_dequantize_block(const char *type_name, uint32_t *block_elems, uint32_t *block_bytes);

#ifndef STS_NO_STDIO
/* ---- dataset write (layer 8) ------------------------------------------------------------------
   The write path of the safetensors-spark connector. A job is: sts_dataset_prepare once (checks
   the options, the input schema and the output folder), one task writer per task (a thread or a
   process) that takes rows and whose commit returns a JSON commit message, and one
   sts_dataset_commit that merges the messages and publishes the index and, last, the manifest.
   Limits. What a task writer accepts, its dataset commit and the reader take: every limit is
   checked by sts_dataset_prepare and sts_task_open, or by the first row that meets it, never
   first at commit. Column names, kv_separator and ranks have no limit of their own; what remains:
     - a file's header holds at most STS_MAX_HEADER_SIZE bytes: names no file can hold (the
       columns, with kv_separator in KV mode) are refused by prepare (STS_RULE_OPTION), a row whose
       tensors alone need more by sts_task_write (STS_RULE_ROW_VALUE; batch mode: the first row);
     - a dataset schema dim is a signed 64-bit integer (-1 says "varies"): batch_size and the
       shapes option's dims are at most 2^63 - 1 (STS_RULE_OPTION), and a tensor dim over it (only
       an empty tensor can have one) refuses its row (STS_RULE_ROW_SHAPE);
     - a batch file holds at most 2^63 - 1 bytes, a file offset (STS_RULE_WRITE_TOTAL, first row);
     - a KV task writer holds at most 2^32 - 1 tensor names (STS_RULE_ROW_VALUE): use more tasks. */
typedef enum sts_value_kind {
    STS_VALUE_TENSOR = 1,   /* bytes + dtype + shape, written as-is (the connector's Tensor Struct) */
    STS_VALUE_ARRAY = 2,    /* numeric elements encoded to the `dtype` option */
    STS_VALUE_STRING = 3,   /* text: only the key column (name_col) of KV mode */
    STS_VALUE_KIND_COUNT    /* one past the last kind (0 is not a kind) */
} sts_value_kind;

typedef struct sts_column {     /* one column of the input schema */
    const char *name;           /* NUL-terminated, unique, non-empty */
    sts_value_kind kind;
    sts_dtype elem;             /* STS_VALUE_ARRAY: the C element type: F32 float, F64 double, I32 int32_t,
                                   I64 int64_t, I16 int16_t, I8 int8_t, U8 uint8_t */
} sts_column;

typedef struct sts_value {      /* one cell of a row; rows are arrays of cells in schema order */
    const void *data;           /* tensor bytes (little-endian), array elements (C values in the host's byte
                                   order: the writer stores them little-endian), or string bytes */
    uint64_t size;              /* tensor: bytes; array: element count; string: bytes */
    sts_dtype dtype;            /* tensor only */
    uint32_t rank;              /* tensor only */
    const uint64_t *shape;      /* tensor only */
} sts_value;

typedef enum sts_tail { STS_TAIL_WRITE = 0, STS_TAIL_DROP = 1, STS_TAIL_PAD = 2, STS_TAIL_COUNT } sts_tail;
typedef enum sts_duplicates {
    STS_DUPLICATES_FAIL = 0, STS_DUPLICATES_LAST_WIN = 1, STS_DUPLICATES_COUNT
} sts_duplicates;
/* KV mode: where a shard's tensors sit. SORTED (the default) is the reference writer's layout
   (sts_write's bytes); ARRIVAL keeps the rows' order and writes a shard while it fills, behind
   header room reserved ahead of its data (format/SPECIFICATION.md 12.2.3) */
typedef enum sts_kv_layout { STS_KV_SORTED = 0, STS_KV_ARRIVAL = 1, STS_KV_LAYOUT_COUNT } sts_kv_layout;

typedef struct sts_shape_option {   /* per-sample shape of a numeric-array column */
    const char *column;
    uint32_t rank;
    const uint64_t *dims;
} sts_shape_option;

typedef struct sts_write_config {   /* zero = every default; strings are borrowed until the call returns */
    uint64_t batch_size;            /* batch mode: rows per file (> 0, at most 2^63 - 1) */
    const char *name_col;           /* KV mode: the string column holding each row's key */
    const char *kv_separator;       /* NULL = "__"; never empty */
    sts_duplicates duplicates;      /* KV mode */
    int generate_index;             /* write _tensor_index.csv and _tensor_index.json */
    uint32_t target_shard_size_mb;  /* 0 = 300; 50..1000; checked in batch mode too */
    int has_dtype;                  /* dtype below is set */
    sts_dtype dtype;                /* encoding of numeric-array columns: one of the 12 seed dtypes */
    sts_rounding rounding;          /* F16/BF16 targets: STS_ROUND_TRUNCATE (0, default) or STS_ROUND_NEAREST_EVEN */
    const char *columns;            /* comma-separated columns to write; NULL = all but name_col */
    const char *shapes;             /* JSON object {"col": [d0, ...]}, the connector's form */
    const sts_shape_option *shape_list; /* or the same, typed */
    size_t n_shapes;
    sts_tail tail;                  /* batch mode: what to do with a last, partial batch */
    int overwrite;                  /* replace an existing dataset at commit; default: refuse a non-empty folder */
    int no_fsync;                   /* durable = 0: skip every fsync (fast, not crash-safe). sts_options.no_fsync
                                       does the same: either one turns fsync off, in prepare, the task
                                       writers, the dataset commit and reindex alike */
    int no_io_thread;               /* io_thread = 0: the caller's thread makes every write itself
                                       (default: one I/O thread per task writer, see sts_task_open) */
    uint64_t target_shard_bytes;    /* not a connector option: the KV roll-over size in bytes, any size > 0,
                                       instead of target_shard_size_mb (small shards for tests and small
                                       jobs); 0 = unset. Setting both is refused */
    uint32_t commit_threads;        /* sts_dataset_commit: threads that build the key index and render the
                                       index files (0..64), the caller's thread writing them meanwhile;
                                       0 = one per online CPU, at most 16, once the dataset has 16,384
                                       keys; 1 = the caller's thread only. The bytes are the same on any
                                       number */
    sts_kv_layout kv_layout;        /* KV mode: STS_KV_SORTED (0, default) or STS_KV_ARRIVAL */
} sts_write_config;

/* Set one option the way the connector spells it (names case-insensitive; values as strings):
   batch_size, name_col, kv_separator, duplicatesStrategy (fail|lastWin), generate_index
   (true|false), target_shard_size_mb, dtype, columns, shapes, tail_strategy (drop|pad|write),
   mode (error|errorifexists|overwrite), durable (true|false), rounding (truncate|nearest_even),
   io_thread (true|false), commit_threads (0 to 64), kv_layout (sorted|arrival).
   "path" is accepted and ignored. String values are borrowed: keep them alive. */
STSDEF sts_result sts_write_config_set(sts_write_config *cfg, const char *key, const char *value, sts_error *err);

typedef struct sts_task_writer sts_task_writer;

typedef struct sts_dataset_summary {
    uint64_t shards, samples, bytes, tensors;
} sts_dataset_summary;

/* Once per job, before any task: validates the options against the schema and prepares dir
   (created when missing; a non-empty folder is refused unless overwrite). */
STSDEF sts_result sts_dataset_prepare(const char *dir, const sts_write_config *cfg, const sts_column *schema,
                                      size_t ncols,
                                      const sts_options *opts, sts_error *err);
/* A task writer: files appear under temporary (hidden) names until its commit. Unless io_thread
   is off (or STS_NO_THREADS is defined), it starts one POSIX thread that writes and fsyncs
   finished buffers while the caller's thread encodes the next rows (link with -pthread where the
   C library needs it). An I/O failure on that thread is reported by the next call. Memory stays
   within the shard target (KV) or a few 2 MiB buffers per column (batch). */
STSDEF sts_result sts_task_open(const char *dir, uint32_t task_id, const sts_write_config *cfg,
                                const sts_column *schema,
                                size_t ncols, const sts_options *opts, sts_task_writer **out, sts_error *err);
/* One row: ncols cells in schema order. A rejected row changes nothing; an I/O failure is sticky. */
STSDEF sts_result sts_task_write(sts_task_writer *w, const sts_value *row, sts_error *err);
/* Finishes the last file, renames the task's files to their final names and returns the commit
   message (NUL-terminated JSON; free it with sts_free(opts, message, len + 1)). */
STSDEF sts_result sts_task_commit(sts_task_writer *w, char **message, size_t *message_len, sts_error *err);
/* Frees the writer; when it was not committed, its files are removed first (abort). */
STSDEF void sts_task_close(sts_task_writer *w);
typedef struct sts_task_progress {
    uint64_t rows;      /* rows accepted so far */
    uint64_t shards;    /* KV mode: shards sealed so far, so the one filling is number `shards` (its file is
                           begun at the seal, or with kv_layout = arrival once it is an eighth full, half
                           for the task's first);
                           batch mode: files begun so far (each at its first row) */
} sts_task_progress;
/* Where a task writer stands; all zero for NULL. */
STSDEF sts_task_progress sts_task_get_progress(const sts_task_writer *w);
/* Merges the messages of every task (one a task id: a second attempt's, or a message given twice,
   is refused): checks them and their shards (existence, size, header), cross-task duplicates, then
   writes the index (when asked) and dataset_manifest.json last. On failure nothing is published;
   the tasks' shards and the job's lock stay, for a corrected commit or for sts_dataset_abort,
   which removes them. One exception, told apart by its rule: when a durable commit's last step,
   the folder's fsync, fails (STS_ERR_IO, STS_RULE_DURABLE), the dataset is published already. */
STSDEF sts_result sts_dataset_commit(const char *dir, const sts_write_config *cfg, const char *const *messages,
                                     const size_t *lens, size_t n, const sts_options *opts,
                                     sts_dataset_summary *summary,
                                     sts_error *err);
/* Rebuilds _tensor_index.csv and _tensor_index.json from the shards' headers: the manifest's
   shards (keeping its dataset_id, mode and duplicates strategy), or every *.safetensors in name
   order when there is no manifest (keys are then tensor names; a repeated name keeps the last
   file's). Shards are checked as the dataset commit checks them. Both files are replaced or
   neither: on a failure the old index (or none) is back in place (but for STS_RULE_DURABLE: the
   new files are in place, the folder's fsync failed). */
STSDEF sts_result sts_dataset_reindex(const char *dir, const sts_options *opts, sts_dataset_summary *summary,
                                      sts_error *err);
/* Ends a job without publishing: removes the shards its committed task messages name (never a
   published dataset's) and releases the folder when a message names its job, or when no message is
   given (a driver that aborts before any task committed). Releasing it, it first removes this
   library's temporaries (hidden files of writers that died or were never committed), as prepare
   does: call it once every task writer of the job has ended. An allocation that fails (NOMEM)
   may leave shards and the lock: the job is not over, and a second call finishes it. */
STSDEF sts_result sts_dataset_abort(const char *dir, const char *const *messages, const size_t *lens, size_t n,
                                    const sts_options *opts, sts_error *err);
/* Drops some task outputs while the job goes on: removes the shards these messages name (a
   speculative attempt that lost, the first attempt of a retried task) and keeps the folder's lock.
   Both this and sts_dataset_abort refuse a message that names a shard of the published dataset
   (DATASET, dataset.published; a call after the job's commit, or a stale message), removing
   nothing it names, and go on with the other messages. */
STSDEF sts_result sts_dataset_discard(const char *dir, const char *const *messages, const size_t *lens, size_t n,
                                      const sts_options *opts, sts_error *err);

/* ---- dataset read (layer 9) -------------------------------------------------------------------
   Open a dataset (a folder with or without dataset_manifest.json, or a single file), settle its
   schema, look keys up in O(1) through the tensor index (or a map built once from the headers),
   and scan it wide (a row per file, a column per tensor name) or long (a row per tensor) with
   column pruning and filters pushed down to the index or to header-only reads. After open, a
   dataset is read-only: any number of threads may call get and run scans on it at once. */
typedef struct sts_dataset sts_dataset;

#define STS_DIM_ANY UINT64_MAX          /* in a schema shape: any size */

typedef struct sts_schema_column {      /* an explicit schema column */
    const char *name;
    size_t name_len;
    int has_dtype;                      /* check the dtype */
    sts_dtype dtype;
    int has_shape;                      /* check the shape (STS_DIM_ANY matches any size) */
    uint32_t rank;
    const uint64_t *shape;
} sts_schema_column;

typedef struct sts_read_config {        /* zero = defaults */
    const sts_schema_column *schema;    /* explicit schema, or */
    size_t nschema;
    int infer_schema;                   /* infer from the tensor index, else the first file's header */
    int no_index;                       /* ignore _tensor_index.json even when present */
    int verify_checksums;               /* a file's first mapping for data reads all of it and compares its
                                           CRC-32C with the manifest's crc32c (dataset.checksum) */
} sts_read_config;

typedef struct sts_dataset_info {
    size_t files;                       /* shards (or files) in name order */
    int has_manifest, has_index;
    int index_stale;                    /* _tensor_index.json belongs to another dataset_id: ignored */
    int kv;                             /* the manifest says KV mode */
    uint64_t total_samples, total_bytes;
    size_t columns;                     /* schema width */
    size_t manifest_columns;            /* columns of the manifest's schema (0: none, or no manifest) */
} sts_dataset_info;

typedef struct sts_view {               /* a tensor found by key or by a scan */
    const char *key;                    /* the tensor's name; not NUL-terminated in general */
    size_t key_len;
    size_t file;                        /* index of its file */
    sts_dtype dtype;
    uint32_t rank;
    const uint64_t *shape;
    uint64_t nbytes;
    const void *data;                   /* zero-copy into the file's mapping; NULL when not asked for */
    int present;                        /* wide rows: 0 = the file has no such tensor (null) */
} sts_view;

typedef struct sts_scan_stats {         /* what a scan (or the dataset's lookups) actually read */
    uint64_t files_opened;              /* files whose header was read */
    uint64_t header_bytes;              /* 8 + N per opened file */
    uint64_t data_bytes;                /* tensor bytes handed out */
    uint64_t files_mapped;              /* files mapped for data */
} sts_scan_stats;

typedef struct sts_scan_spec {
    int long_form;                      /* 0: wide (a row per file); 1: long (a row per tensor) */
    const char *const *columns;         /* wide: projection by name (NULL = every schema column) */
    size_t ncolumns;
    int with_data;                      /* hand out data pointers (maps files); 0 = header bytes only */
    const char *const *keys;            /* long: keep only these keys (equality / IN list) */
    const size_t *key_lens;             /* NULL: NUL-terminated keys */
    size_t nkeys;
    const sts_dtype *dtypes;            /* long: keep only these dtypes */
    size_t ndtypes;
    int has_shape;                      /* long: keep only this shape (STS_DIM_ANY matches any size) */
    uint32_t rank;
    const uint64_t *shape;
    size_t file_begin, file_end;        /* the files to visit, [begin, end); end 0 = all: one range per thread */
} sts_scan_spec;

typedef struct sts_scan sts_scan;

STSDEF sts_result sts_dataset_open(const char *path, const sts_read_config *cfg, const sts_options *opts,
                                   sts_dataset **out, sts_error *err);
STSDEF void sts_dataset_close(sts_dataset *ds);
STSDEF sts_dataset_info sts_dataset_describe(const sts_dataset *ds);
STSDEF const char *sts_dataset_file(const sts_dataset *ds, size_t i);        /* file name (NUL-terminated) */
/* the manifest's samples_count (real rows, never padding); UINT64_MAX when unknown */
STSDEF uint64_t sts_dataset_file_samples(const sts_dataset *ds, size_t i);
/* File i's position in dataset_manifest.json's "shards" (name order when there is no manifest). */
STSDEF size_t sts_dataset_file_order(const sts_dataset *ds, size_t i);
STSDEF const sts_view *sts_dataset_column(const sts_dataset *ds, size_t i);  /* schema column i: key = name */
/* Column i of the manifest's "schema" as written (KV mode: the columns, not the per-key tensors;
   batch mode: [batch_size] + the sample shape): key = name, a dim of -1 (rows differ) is
   STS_DIM_ANY; data NULL. NULL when i >= info.manifest_columns. */
STSDEF const sts_view *sts_dataset_manifest_column(const sts_dataset *ds, size_t i);
/* O(1): the tensor named key, through the index (or a map built once from the headers).
   with_data maps its file (once per file) and checks the index against the file's header. */
STSDEF sts_result sts_dataset_get(const sts_dataset *ds, const char *key, size_t key_len, int with_data,
                                  sts_view *out, sts_error *err);
STSDEF sts_scan_stats sts_dataset_stats(const sts_dataset *ds);               /* lookups so far */

/* Shard assignment: which of n workers (DataLoader workers, DDP or MPI ranks) reads which shard,
   the one rule every consumer uses. round_robin: shard i goes to worker i mod n. balance (the
   connector's rule): shards taken in order, each to the worker with the fewest samples so far,
   a tie to the lower worker id. Every shard goes to exactly one worker. */
typedef enum sts_assign_strategy {
    STS_ASSIGN_BALANCE = 0, STS_ASSIGN_ROUND_ROBIN = 1, STS_ASSIGN_STRATEGY_COUNT
} sts_assign_strategy;
/* "balance" or "round_robin"; else STS_ERR_INVALID_ARGUMENT naming it ("unknown strategy 'x'"). */
STSDEF sts_result sts_assign_strategy_parse(const char *name, sts_assign_strategy *out, sts_error *err);
STSDEF const char *sts_assign_strategy_name(sts_assign_strategy s);   /* NULL when out of range */
/* n shards in order, shard i holding samples[i] samples (samples may be NULL for round_robin):
   owner[i] gets its worker, 0 .. workers - 1. workers == 0: "num_workers must be > 0". */
STSDEF sts_result sts_assign(const uint64_t *samples, size_t n, uint32_t workers, sts_assign_strategy s,
                             uint32_t *owner, sts_error *err);
/* A dataset's shards in the manifest's order (sts_dataset_file_order): owner[i] gets the worker of
   file i (sts_dataset_file). balance needs every shard's samples_count (a manifest). */
STSDEF sts_result sts_dataset_assign(const sts_dataset *ds, uint32_t workers, sts_assign_strategy s, uint32_t *owner,
                                     sts_error *err);

STSDEF sts_result sts_scan_open(const sts_dataset *ds, const sts_scan_spec *spec, sts_scan **out, sts_error *err);
/* The next row: wide, *cells gets *ncells views, one per projected column (possibly none: a row
   is still a row); long, *cells gets one view. At the end *cells is NULL. Each view names its
   file. Views live until the next call. */
STSDEF sts_result sts_scan_next(sts_scan *s, const sts_view **cells, size_t *ncells, sts_error *err);
STSDEF size_t sts_scan_files(const sts_scan *s);                              /* files the plan visits */
STSDEF sts_scan_stats sts_scan_get_stats(const sts_scan *s);
STSDEF void sts_scan_close(sts_scan *s);

/* ---- check and clean (layer 9) ------------------------------------------------------------------
   sts_dataset_check finds what is wrong with a dataset folder (or a file) and reports each problem
   as an sts_error (code, rule, message naming the file and the tensor): the manifest against the
   shards (existence, sizes, totals, sample counts, the schema against every header), every shard's
   header strictly, with data every shard's bytes against the manifest's crc32c, the index against
   every header both ways, _tensor_index.csv against _tensor_index.json and its weight_map, orphan
   shards (part-* files the manifest does not name: left by a job that did not commit), writers'
   temporaries and a job lock. sts_dataset_clean removes what check calls left behind: orphans (only
   next to a manifest), temporaries, and a lock whose process is gone; only files of this library's
   naming, never a shard the manifest names. */
typedef void (*sts_problem_fn)(void *user, const sts_error *problem);
typedef struct sts_check_config {       /* zero = defaults */
    int data;                           /* also read every shard's bytes: crc32c and full validation */
    sts_problem_fn problem;             /* each problem found (may be NULL) */
    void *user;
} sts_check_config;
typedef struct sts_check_report {
    uint64_t shards, tensors, bytes;    /* what was checked */
    uint64_t checksums;                 /* shards whose bytes matched their crc32c (data only) */
    uint64_t problems;
} sts_check_report;
/* STS_OK: no problem; STS_ERR_DATASET: problems were found (each through cfg->problem, and the
   first in *err); another code: the check itself could not run (err says why). */
STSDEF sts_result sts_dataset_check(const char *path, const sts_check_config *cfg, const sts_options *opts,
                                    sts_check_report *report, sts_error *err);
typedef void (*sts_clean_fn)(void *user, const char *name, const char *why);
typedef struct sts_clean_config {       /* zero = defaults */
    int dry_run;                        /* say what would be removed; remove nothing */
    int force;                          /* also clear a lock whose process may live (another host, or running) */
    sts_clean_fn removed;               /* each file removed (or that would be), with the reason */
    void *user;
} sts_clean_config;
/* Removes orphan shards (a manifest is needed to tell them), writers' temporaries and a stale job
   lock. A lock whose process still runs (or of another host) refuses the clean with EXISTS unless
   force. *count gets the number of files removed (or that would be). */
STSDEF sts_result sts_dataset_clean(const char *dir, const sts_clean_config *cfg, const sts_options *opts,
                                    size_t *count, sts_error *err);
#endif /* STS_NO_STDIO */

/* ---- archive (layer 10): one reader for every tensor container ---------------------------------
   Open a file, a folder or bytes without saying what they are: every registered provider probes a
   bounded prefix (STS_PROBE_BYTES), the most confident wins (ties: the one registered first), and
   it opens the container as an archive: a format id and version, typed metadata, and a descriptor
   per tensor, found by name in O(1). Built-in providers: safetensors (one file), sharded checkpoints
   (model.safetensors.index.json or our _tensor_index.json, shards opened lazily, each validated the
   first time it is touched), our datasets (a folder with dataset_manifest.json), .npy and GGUF
   (v2/v3, both byte orders, ggml's block types described by sts_type). A tensor's
   bytes come as a zero-copy view (mapped, aligned, host byte order), a window read, a cursor over
   chunks, or materialised through a caller's factory (wrap a view, or copy once, converting dtype,
   swapping byte order and checking SHA-256 in the same pass). An archive may be shared by threads:
   any number may find, view, read and materialise at once (a callback source must then allow
   concurrent reads); a cursor belongs to one thread. */
#define STS_PROBE_BYTES 4096u        /* the most any probe sees of a source: its first bytes */

typedef struct sts_type {            /* an element type (safetensors dtypes and others, e.g. GGUF blocks) */
    const char *name;                /* "F32", "BF16", "Q4_0", ... */
    int plain;                       /* 1: a number type of `bits` bits an element; 0: blocks */
    uint32_t bits;                   /* plain: bits per element (4, 6, 8, ... 64) */
    uint32_t block_elems;            /* elements per block (1 for plain types) */
    uint32_t block_bytes;            /* bytes per block (plain: bits / 8, 0 below a byte) */
    uint32_t align;                  /* the alignment a zero-copy view needs (bytes) */
    uint32_t swap;                   /* plain: the byte-swapping unit (2, 4, 8; 0 = none) */
    sts_dtype dtype;                 /* the matching safetensors dtype, STS_DTYPE_COUNT when none */
} sts_type;
STSDEF const sts_type *sts_type_of(sts_dtype d);                   /* NULL when d is out of range */
/* The bytes of n elements of t: 0 with *ok = 0 when n is not a whole number of blocks or bytes,
   or the size overflows. */
STSDEF uint64_t sts_type_bytes(const sts_type *t, uint64_t n, int *ok);

typedef enum sts_meta_type {
    STS_META_STRING = 1, STS_META_UINT, STS_META_INT, STS_META_FLOAT, STS_META_BOOL, STS_META_ARRAY
} sts_meta_type;
typedef struct sts_meta {            /* a typed key/value (array items have no key) */
    const char *key;
    size_t key_len;
    sts_meta_type type;
    const char *str;                 /* STRING: (str, str_len), not NUL-terminated in general */
    size_t str_len;
    uint64_t u;                      /* UINT; BOOL 0 or 1 */
    int64_t i;                       /* INT */
    double f;                        /* FLOAT */
    const struct sts_meta *items;    /* ARRAY: count items */
    uint64_t count;
    uint32_t format_type;            /* the format's own type code, where it has one (else 0) */
} sts_meta;

typedef struct sts_tensor_desc {
    const char *name;                /* not NUL-terminated in general */
    size_t name_len;
    const sts_type *type;
    uint32_t rank;
    const uint64_t *shape;           /* row-major: the outermost dimension first */
    const uint64_t *format_shape;    /* the format's own order (GGUF: innermost first); else = shape */
    uint64_t numel, nbytes;
    size_t file;                     /* its file in the archive (sts_archive_file) */
    uint64_t offset;                 /* byte offset of its first byte in that file */
    uint64_t alignment;              /* the largest power of two, at most 4096, dividing offset */
    int big_endian;                  /* the elements' byte order in the file */
    const sts_meta *extras;          /* the format's other facts about this tensor */
    size_t n_extras;
    size_t index;                    /* its position: sts_archive_at(a, index) */
} sts_tensor_desc;

typedef struct sts_input {           /* zero-initialise, then set exactly one of path, bytes, source */
    const char *path;                /* a file, or a folder (sharded checkpoint, dataset) */
    const void *bytes;               /* bytes in memory, borrowed until the archive closes */
    size_t size;
    const sts_source *source;        /* a pread-style callback (copied; its user outlives the archive) */
    int no_mmap;                     /* path: read with pread, never map (no views) */
} sts_input;

typedef struct sts_probe_input {     /* what a probe sees */
    const uint8_t *prefix;           /* the source's first min(size, STS_PROBE_BYTES) bytes (none: folder) */
    size_t prefix_len;
    uint64_t size;                   /* the source's size (0 for a folder) */
    const char *path;                /* the path when the input is one, else NULL */
    int is_dir;                      /* the path is a folder */
} sts_probe_input;
typedef struct sts_probe_result {
    int supported;                   /* 1: this provider can open the source */
    int confidence;                  /* 0..100 */
    uint32_t version;                /* the format version seen (0: none) */
    char reason[160];                /* why (or why not); NUL-terminated */
} sts_probe_result;

typedef struct sts_builder sts_builder;  /* what a provider's open fills */
typedef struct sts_provider {
    const char *format;              /* "safetensors", "gguf", ...: the archive's format id */
    const char *name;                /* this provider, for messages and sts inspect --probe */
    /* Never fails: fills *out (zeroed before the call). Must read nothing but in. */
    void (*probe)(void *user, const sts_probe_input *in, sts_probe_result *out);
    /* Reads the source through sts_builder_read and adds metadata and tensors. */
    sts_result (*open)(void *user, sts_builder *b, sts_error *err);
    void *user;
} sts_provider;

/* For providers: the source under the builder, and what the archive will hold. */
STSDEF uint64_t sts_builder_size(const sts_builder *b);
STSDEF const char *sts_builder_path(const sts_builder *b);           /* NULL unless a path */
STSDEF const void *sts_builder_bytes(const sts_builder *b);          /* all bytes when mapped or in memory */
STSDEF const sts_options *sts_builder_options(const sts_builder *b);
STSDEF sts_result sts_builder_read(sts_builder *b, uint64_t offset, void *dst, size_t len, sts_error *err);
STSDEF void sts_builder_set_version(sts_builder *b, uint32_t version);
/* Copies the entry (key, strings and array items, deeply). */
STSDEF sts_result sts_builder_add_meta(sts_builder *b, const sts_meta *m, sts_error *err);
/* Copies the descriptor (name, shapes, extras); file must be 0, offset + nbytes within the source,
   nbytes the type's size of the shape, names unique. format_shape NULL means shape. */
STSDEF sts_result sts_builder_add_tensor(sts_builder *b, const sts_tensor_desc *d, sts_error *err);

typedef struct sts_registry sts_registry;   /* the caller's: no global state */
/* builtins: register safetensors, sharded checkpoints, datasets, .npy and GGUF first (in that order). */
STSDEF sts_result sts_registry_new(const sts_options *opts, int builtins, sts_registry **out, sts_error *err);
STSDEF sts_result sts_registry_add(sts_registry *r, const sts_provider *p, sts_error *err); /* copied */
STSDEF size_t sts_registry_count(const sts_registry *r);
STSDEF const sts_provider *sts_registry_at(const sts_registry *r, size_t i);
STSDEF void sts_registry_free(sts_registry *r);
/* Every provider's verdict on in: results[i] for provider i (sts_registry_count entries); *winner
   gets the chosen one (or SIZE_MAX when none supports it: STS_ERR_UNSUPPORTED, every reason in
   the message). r NULL: the built-ins. */
STSDEF sts_result sts_probe(const sts_registry *r, const sts_input *in, const sts_options *opts,
                            sts_probe_result *results, size_t nresults, size_t *winner, sts_error *err);

typedef struct sts_archive sts_archive;
typedef struct sts_archive_stats {   /* what the archive has read so far (atomic counters) */
    uint64_t files_opened;           /* files opened (the source itself, and each shard) */
    uint64_t reads;                  /* reads made (system calls or callback requests) */
    uint64_t bytes_read;             /* bytes they returned (views and mapped copies not counted) */
} sts_archive_stats;

STSDEF sts_result sts_archive_open(const sts_registry *r, const sts_input *in, const sts_options *opts,
                                   sts_archive **out, sts_error *err);
STSDEF void sts_archive_close(sts_archive *a);
STSDEF const char *sts_archive_format(const sts_archive *a);       /* the winner's format id */
STSDEF const char *sts_archive_provider(const sts_archive *a);     /* the winner's name */
STSDEF uint32_t sts_archive_version(const sts_archive *a);
STSDEF size_t sts_archive_count(const sts_archive *a);             /* tensors */
STSDEF uint64_t sts_archive_total_bytes(const sts_archive *a);     /* their bytes (a sharded index's total_size) */
STSDEF size_t sts_archive_meta_count(const sts_archive *a);
STSDEF const sts_meta *sts_archive_meta_at(const sts_archive *a, size_t i);
STSDEF const sts_meta *sts_archive_meta_find(const sts_archive *a, const char *key, size_t key_len);
/* Tensor i's name without touching any file (sharded checkpoints: from the index). */
STSDEF const char *sts_archive_name(const sts_archive *a, size_t i, size_t *len);
/* Descriptors: the first touch of a lazy shard opens and validates it (and may fail). */
STSDEF sts_result sts_archive_at(const sts_archive *a, size_t i, const sts_tensor_desc **out, sts_error *err);
STSDEF sts_result sts_archive_find(const sts_archive *a, const char *name, size_t len, const sts_tensor_desc **out,
                                   sts_error *err);
STSDEF size_t sts_archive_files(const sts_archive *a);
STSDEF const char *sts_archive_file(const sts_archive *a, size_t i);  /* a path, or "<memory>" / "<source>" */
STSDEF sts_archive_stats sts_archive_get_stats(const sts_archive *a);

/* A pointer to the tensor's bytes when they are mapped or in memory, aligned for its type and in the
   host's byte order; otherwise STS_ERR_UNSUPPORTED saying why there is no view. */
STSDEF sts_result sts_archive_view(const sts_archive *a, const sts_tensor_desc *d, const void **out, sts_error *err);
/* Bytes [offset, offset + len) of the tensor, as stored, into dst; nothing outside them is read. */
STSDEF sts_result sts_archive_read(const sts_archive *a, const sts_tensor_desc *d, uint64_t offset, void *dst,
                                   size_t len, sts_error *err);

typedef struct sts_cursor sts_cursor;  /* single-consumer chunks of a window */
/* A window [offset, offset + len) of the tensor in chunks of at most `chunk` bytes (0: 1 MiB).
   With sha256 (32 bytes) and the whole tensor as the window, the digest is checked as the last
   chunk is handed out: a mismatch fails that call. */
STSDEF sts_result sts_cursor_open(const sts_archive *a, const sts_tensor_desc *d, uint64_t offset, uint64_t len,
                                  size_t chunk, const uint8_t *sha256, sts_cursor **out, sts_error *err);
/* The next chunk (into the mapping, or the cursor's buffer: valid until the next call); *len 0 at the end. */
STSDEF sts_result sts_cursor_next(sts_cursor *c, const void **chunk, size_t *len, sts_error *err);
STSDEF void sts_cursor_close(sts_cursor *c);

/* SHA-256 of a tensor's bytes, or of a whole file of the archive (a safetensors file's digest is
   the Hugging Face Hub's LFS oid). */
STSDEF sts_result sts_archive_sha256(const sts_archive *a, const sts_tensor_desc *d, uint8_t digest[32],
                                     sts_error *err);
STSDEF sts_result sts_archive_file_sha256(const sts_archive *a, size_t file, uint8_t digest[32], sts_error *err);

typedef struct sts_factory {         /* the caller's tensor type */
    /* Destination memory for nbytes bytes of `type` (the target type when converting); NULL fails. */
    void *(*allocate)(void *user, const sts_tensor_desc *d, const sts_type *type, uint64_t nbytes);
    /* Offered a zero-copy view: return 1 to keep it (it lives until the archive closes), 0 to get a copy. */
    int (*wrap)(void *user, const sts_tensor_desc *d, const void *view);
    /* Called with what allocate gave when materialising then fails (a digest mismatch); may be NULL. */
    void (*release)(void *user, const sts_tensor_desc *d, void *ptr, uint64_t nbytes);
    void *user;
} sts_factory;
typedef enum sts_zero_copy {
    STS_ZERO_COPY_PREFER = 0,        /* wrap a view when there is one and wrap takes it, else copy */
    STS_ZERO_COPY_NEVER = 1,         /* always copy */
    STS_ZERO_COPY_REQUIRE = 2        /* wrap or fail (STS_ERR_UNSUPPORTED, saying why) */
} sts_zero_copy;
typedef struct sts_materialize_options {  /* zero = defaults */
    sts_zero_copy zero_copy;
    int convert;                     /* convert the elements to `target` through the codecs (a block type
                                        sts_dequantize_supported names is decoded to F32 first) */
    sts_dtype target;
    sts_rounding rounding;           /* for F16 / BF16 targets */
    const uint8_t *sha256;           /* 32 bytes: the expected digest of the tensor's stored bytes */
} sts_materialize_options;
typedef struct sts_materialized {
    void *data;                      /* the view (wrapped) or the factory's memory */
    uint64_t nbytes;
    const sts_type *type;            /* the type of data's elements (host byte order) */
    int wrapped;                     /* 1: a zero-copy view, 0: a copy */
} sts_materialized;
/* One pass over the tensor's bytes: hash (when asked), swap to host order (block types: their
   multi-byte fields, for the GGUF types that list them), convert (or decode) or copy. */
STSDEF sts_result sts_archive_materialize(const sts_archive *a, const sts_tensor_desc *d, const sts_factory *f,
                                          const sts_materialize_options *o, sts_materialized *out, sts_error *err);

/* ---- GGUF writer: tensors and typed KVs as a GGUF v3 file that ggml's loader reads --------------
   Tensors are sts_tensor_spec, as for sts_write: row-major shapes (written in ggml's order,
   innermost first), little-endian data or a producer, laid out in the order given. Their dtypes
   are those GGUF has: F32, F16, BF16, F64, I8, I16, I32, I64; at most 4 dimensions; names of at
   most 63 bytes (ggml's limit), UTF-8 without NUL, unique. KVs are sts_meta with keys (UTF-8
   without NUL: ggml reads keys up to one), unique,
   written in the order given. A value's GGUF type is its format_type where that says one
   consistently with its type (UINT: UINT16, UINT32, UINT64; INT: INT8 to INT64; FLOAT: FLOAT32
   or FLOAT64; values must fit), else STRING, UINT64, INT64, FLOAT64, BOOL or ARRAY; GGUF's UINT8
   code is 0, the "none" of format_type, so a scalar UINT8 is written as UINT64. An ARRAY's items
   have type u when its format_type is ARRAY (9), as the GGUF provider gives them, else the first
   item's; items are not arrays (ggml refuses nested arrays), and an empty array needs u. The
   key general.alignment (a UINT, written as UINT32: a power of two and a multiple of 8) sets the
   data alignment, 32 by default. Every file written passes the GGUF provider's rules in strict
   mode, but gguf.strict_key (keys are the caller's) and gguf.strict_required (the caller's KVs
   must hold general.architecture). Failures name their rule (write.*, gguf.*). */
STSDEF sts_result sts_gguf_write(const sts_tensor_spec *specs, size_t n, const sts_meta *kvs, size_t n_kv,
                                 const sts_sink *sink, const sts_options *opts, sts_error *err);
/* The file's size, without writing it (the same checks). */
STSDEF sts_result sts_gguf_write_size(const sts_tensor_spec *specs, size_t n, const sts_meta *kvs, size_t n_kv,
                                      const sts_options *opts, uint64_t *file_size, sts_error *err);
#ifndef STS_NO_STDIO
/* Atomically: a temporary beside path, fsync (unless opts->no_fsync), rename, fsync of the folder;
   as sts_write_path, a failure leaves path as it was but for STS_RULE_DURABLE (the folder's fsync
   failed after the rename: the new file is in place). */
STSDEF sts_result sts_gguf_write_path(const char *path, const sts_tensor_spec *specs, size_t n, const sts_meta *kvs,
                                      size_t n_kv, const sts_options *opts, sts_error *err);
#endif

/* ---- lineage (section 11): the dataset record MLflow stores --------------------------------------
   What MLflow would store for a dataset folder if a Python user logged
   MetaDataset(source, name=NAME, schema=Schema([TensorSpec(...) per manifest column])) with
   mlflow.log_input: one JSON object whose values are strings, in MLflow's order (name, digest,
   source, source_type, schema) plus "profile" (which a MetaDataset lacks) and, when given,
   "context" (log_input's context, which MLflow keeps as the input tag mlflow.data.context).
   Every JSON text is written as Python's json.dumps writes it (", " and ": ", ASCII only, bytes
   that are not UTF-8 as the surrogate escapes \udc80..\udcff of Python's file names), so the
   record and its digest are the bytes MLflow computes. format/SPECIFICATION.md section 16. */
#ifndef STS_NO_STDIO
typedef struct sts_lineage_config {     /* zero = every default */
    const char *name;       /* NULL = "safetensors_dataset" */
    const char *uri;        /* NULL: the folder as Python's os.path.abspath gives it, source_type "local";
                               else the source's URI, source_type its scheme ("file" and none: "local") */
    const char *context;    /* NULL: no "context" field */
} sts_lineage_config;
/* The record of the dataset in dir (its dataset_manifest.json must exist and be valid), as
   NUL-terminated JSON in *out (free it with sts_free(opts, *out, *out_len + 1)). Deterministic:
   the same folder and config give the same bytes. */
STSDEF sts_result sts_dataset_lineage(const char *dir, const sts_lineage_config *cfg, const sts_options *opts,
                                      char **out, size_t *out_len, sts_error *err);
/* The numpy name of a dtype in a record: numpy's own where numpy has the type ("float32", "bool",
   "complex64"), else the ml_dtypes name that numpy resolves once ml_dtypes is imported ("bfloat16",
   "float8_e4m3fn", ...). NULL when out of range. */
STSDEF const char *sts_lineage_dtype_name(sts_dtype d);
#endif

#ifdef __cplusplus
}
#endif
#endif /* STS_INCLUDE_SAFETENSORS_SPARK_H */

/* ============================================================================================== */
/*                                        IMPLEMENTATION                                          */
/* ============================================================================================== */
#if defined(STS_IMPLEMENTATION) && !defined(STS__IMPLEMENTATION_INCLUDED)
#define STS__IMPLEMENTATION_INCLUDED

/* ==============================================================================================
   >>util  1. config, util
   Owns: allocator hooks, the result and rule tables, checked u64 arithmetic, the decimal digit
   reader, little-endian loads and stores (byte assembly: never depends on host endianness), the
   seeded name hash and open-addressing index, the stable merge sort, UTF-8 validation, error
   filling with a small formatter (no stdio needed).
   May call: the C library only.
   ============================================================================================== */
#include <string.h>
#include <stdarg.h>

#if !defined(STS_MALLOC) && !defined(STS_REALLOC) && !defined(STS_FREE)
#  include <stdlib.h>
#  define STS_MALLOC(ctx, size) ((void)(ctx), malloc(size))
#  define STS_REALLOC(ctx, p, old, size) ((void)(ctx), (void)(old), realloc((p), (size)))
#  define STS_FREE(ctx, p, size) ((void)(ctx), (void)(size), free(p))
#  define STS__LIBC_ALLOC 1  /* thread-safe: work that allocates may run on several threads */
#elif defined(STS_MALLOC) && defined(STS_REALLOC) && defined(STS_FREE)
   /* all three given: use them */
#else
#  error "safetensors_spark.h: define all of STS_MALLOC, STS_REALLOC and STS_FREE, or none"
#endif

#ifndef STS_ASSERT
#  include <assert.h>
#  define STS_ASSERT(x) assert(x)
#endif

#if defined(__GNUC__) || defined(__clang__)
#  define STS__PRIVATE static __attribute__((unused))
#  define STS__LIKELY(x) __builtin_expect(!!(x), 1)
#  define STS__UNLIKELY(x) __builtin_expect(!!(x), 0)
#  define STS__PREFETCH_W(p) __builtin_prefetch((p), 1)   /* a line about to be written */
#else
#  define STS__PRIVATE static
#  define STS__LIKELY(x) (x)
#  define STS__UNLIKELY(x) (x)
#  define STS__PREFETCH_W(p) ((void)0)
#endif
/* Always inlined: the few helpers that must not cost a call (SIMD steps, the digit reader). */
#if defined(__GNUC__) || defined(__clang__)
#  define STS__INLINE static __inline__ __attribute__((always_inline, unused))
#elif defined(_MSC_VER)
#  define STS__INLINE static __forceinline
#else
#  define STS__INLINE static
#endif

#if !defined(STS_NO_SIMD) && (defined(__SSE2__) || defined(_M_X64) || (defined(_M_IX86_FP) && _M_IX86_FP >= 2))
#  define STS__SSE2 1
#  include <emmintrin.h>
#endif

/* ---- results and rules: tables generated from the X-macro lists ---- */
#define STS__RESULT_NAME(e, name, variant, text) name,
#define STS__RESULT_VARIANT(e, name, variant, text) variant,
#define STS__RESULT_TEXT(e, name, variant, text) text,
static const char *const sts__result_names[] = { STS_RESULT_LIST(STS__RESULT_NAME) "?" };
static const char *const sts__result_variants[] = { STS_RESULT_LIST(STS__RESULT_VARIANT) NULL };
static const char *const sts__result_texts[] = { STS_RESULT_LIST(STS__RESULT_TEXT) "?" };
#define STS__RULE_ID(e, code, id, text) id,
#define STS__RULE_TEXT(e, code, id, text) text,
#define STS__RULE_CODE(e, code, id, text) code,
static const char *const sts__rule_ids[] = { STS_RULE_LIST(STS__RULE_ID) "?" };
static const char *const sts__rule_texts[] = { STS_RULE_LIST(STS__RULE_TEXT) "?" };
static const sts_result sts__rule_codes[] = { STS_RULE_LIST(STS__RULE_CODE) STS_ERR_INVALID_ARGUMENT };

STSDEF const char *sts_result_name(sts_result r) {
    return (unsigned)r < (unsigned)STS_RESULT_COUNT ? sts__result_names[r] : "?";
}
STSDEF const char *sts_result_variant(sts_result r) {
    return (unsigned)r < (unsigned)STS_RESULT_COUNT ? sts__result_variants[r] : NULL;
}
STSDEF const char *sts_result_text(sts_result r) {
    return (unsigned)r < (unsigned)STS_RESULT_COUNT ? sts__result_texts[r] : "?";
}
STSDEF const char *sts_rule_id(sts_rule r) {
    return (unsigned)r < (unsigned)STS_RULE_COUNT ? sts__rule_ids[r] : "?";
}
STSDEF const char *sts_rule_text(sts_rule r) {
    return (unsigned)r < (unsigned)STS_RULE_COUNT ? sts__rule_texts[r] : "?";
}
STSDEF sts_result sts_rule_result(sts_rule r) {
    return (unsigned)r < (unsigned)STS_RULE_COUNT ? sts__rule_codes[r] : STS_ERR_INVALID_ARGUMENT;
}

/* ---- allocation ---- */
/* The environment every internal routine gets: the allocator and the I/O fault hook. */
typedef struct sts__mem {
    sts_allocator a;
    int (*io_fault)(void *user, const char *op);
    void *io_fault_user;
    void (*fresh)(void *p, size_t n);  /* io's hint for a large block of libc's (sts__mem_io); NULL: none */
} sts__mem;

STS__PRIVATE sts__mem sts__mem_from(const sts_options *o) {
    sts__mem m;
    memset(&m, 0, sizeof m);
    if (o) { m.a = o->allocator; m.io_fault = o->io_fault; m.io_fault_user = o->io_fault_user; }
    return m;
}
/* 0 to go ahead with the system call `op`, else the errno the test hook injects. */
STS__PRIVATE int sts__fault(const sts__mem *m, const char *op) {
    return m && m->io_fault ? m->io_fault(m->io_fault_user, op) : 0;
}
/* Whether work that allocates or makes hooked system calls may run on several threads: only
   with libc's allocator and no hooks (a user's allocator or io_fault hook sees one thread). */
STS__PRIVATE int sts__mem_shared(const sts__mem *m) {
#ifdef STS__LIBC_ALLOC
    return !m->a.alloc && !m->io_fault;
#else
    (void)m;
    return 0;
#endif
}
STS__PRIVATE int sts__mem_valid(const sts__mem *m) {  /* all three hooks or none */
    int n = (m->a.alloc != NULL) + (m->a.realloc != NULL) + (m->a.free != NULL);
    return n == 0 || n == 3;
}
/* A block of libc's of at least STS__FRESH_MIN bytes (a table, a header) goes through m->fresh
   before its pages are first touched: io asks for huge pages, one page fault a 2 MiB. */
#define STS__FRESH_MIN ((size_t)4 << 20)
STS__PRIVATE void *sts__alloc(const sts__mem *m, size_t size) {
    void *p;
    if (size == 0) size = 1;
    if (m->a.alloc) return m->a.alloc(m->a.user, size);
    p = STS_MALLOC(m->a.user, size);
    if (p && m->fresh && size >= STS__FRESH_MIN) m->fresh(p, size);
    return p;
}
STS__PRIVATE void *sts__realloc(const sts__mem *m, void *p, size_t old_size, size_t size) {
    void *q;
    if (size == 0) size = 1;
    if (!p) return sts__alloc(m, size);
    if (m->a.realloc) return m->a.realloc(m->a.user, p, old_size, size);
    q = STS_REALLOC(m->a.user, p, old_size, size);
    if (q && m->fresh && size >= STS__FRESH_MIN) m->fresh(q, size);
    return q;
}
STS__PRIVATE void sts__free(const sts__mem *m, void *p, size_t size) {
    if (!p) return;
    if (m->a.free) { m->a.free(m->a.user, p, size ? size : 1); return; }
    STS_FREE(m->a.user, p, size ? size : 1);
}
STSDEF void sts_free(const sts_options *opts, void *ptr, size_t size) {
    sts__mem m = sts__mem_from(opts);
    sts__free(&m, ptr, size);
}

/* ---- checked arithmetic: 1 on success, 0 on overflow ---- */
STS__PRIVATE int sts__add64(uint64_t a, uint64_t b, uint64_t *r) {
    *r = a + b;
    return *r >= a;
}
STS__PRIVATE int sts__mul64(uint64_t a, uint64_t b, uint64_t *r) {
#if defined(__GNUC__) || defined(__clang__)
    return !__builtin_mul_overflow(a, b, r);
#else
    if ((a | b) >> 32 && b != 0 && a > UINT64_MAX / b) return 0;
    *r = a * b;
    return 1;
#endif
}
/* n * size as size_t, checked */
STS__PRIVATE int sts__mulsz(size_t n, size_t size, size_t *r) {
    if (size != 0 && n > (size_t)-1 / size) return 0;
    *r = n * size;
    return 1;
}

/* ---- decimal digits: the one reader of unsigned integers in text ----
   The run of ASCII digits at p (before end): returns how many digits it has (0 when p holds none;
   all of them, however many) and stores their value in *v; *big is 1 when the value does not fit
   in 64 bits (*v is then meaningless), else 0. Never through double. Signs, leading zeros, blanks
   and what may follow are each caller's grammar. Fewer than 20 digits always fit, so the exact
   test (x * 10 + d > 2^64 - 1) runs from the 20th digit on; a caller that never reads *big (the
   fast path, which takes at most 19 digits) loses the test to dead-code elimination. */
STS__INLINE size_t sts__dec_u64(const uint8_t *p, const uint8_t *end, uint64_t *v, int *big) {
    size_t n = 0;
    uint64_t x = 0;
    int over = 0;
    while (p + n < end && p[n] >= '0' && p[n] <= '9') {
        uint64_t d = (uint64_t)(p[n] - '0');
        if (STS__UNLIKELY(n >= 19) && (x > 1844674407370955161ull || (x == 1844674407370955161ull && d > 5))) over = 1;
        x = x * 10 + d;
        n++;
    }
    *v = x;
    *big = over;
    return n;
}

/* ---- little-endian loads and stores by byte assembly ---- */
STS__INLINE uint64_t sts__le64(const uint8_t *p) {
    return (uint64_t)p[0] | (uint64_t)p[1] << 8 | (uint64_t)p[2] << 16 | (uint64_t)p[3] << 24 |
           (uint64_t)p[4] << 32 | (uint64_t)p[5] << 40 | (uint64_t)p[6] << 48 | (uint64_t)p[7] << 56;
}
/* The host's byte order, asked at run time (no macro to trust): 1 on a big-endian host. */
STS__PRIVATE int sts__host_big_endian(void) {
    const uint16_t one = 1;
    uint8_t first;
    memcpy(&first, &one, 1);
    return first == 0;
}
/* n host-order values of esz bytes (2, 4 or 8) from src as little-endian bytes into dst. */
STS__PRIVATE void sts__to_le(uint8_t *dst, const uint8_t *src, size_t n, size_t esz) {
    size_t i, b;
    if (!sts__host_big_endian()) { memcpy(dst, src, n * esz); return; }
    for (i = 0; i < n; i++)
        for (b = 0; b < esz; b++) dst[i * esz + b] = src[i * esz + esz - 1 - b];
}
STS__PRIVATE void sts__st64(uint8_t *p, uint64_t v) {
    int i;
    for (i = 0; i < 8; i++) p[i] = (uint8_t)(v >> (8 * i));
}

/* ---- error filling ----
   A tiny formatter so that messages need no stdio: %s C string, %q (pointer, size_t) quoted and
   escaped, truncated at a character boundary, %U uint64_t, %z size_t, %d int, %x int as a byte
   in hex (0x1f), %S (const uint64_t *, size_t) a shape, %D the same for a schema's shape
   (STS_DIM_ANY as -1), %% percent. */
typedef struct sts__buf { char *p; size_t n, cap; } sts__buf;

STS__PRIVATE void sts__buf_put(sts__buf *b, const char *s, size_t n) {
    while (n-- && b->n + 1 < b->cap) b->p[b->n++] = *s++;
    if (b->cap) b->p[b->n] = 0;
}
STS__PRIVATE void sts__buf_u64(sts__buf *b, uint64_t v) {
    char t[24];
    int i = 24;
    do { t[--i] = (char)('0' + v % 10); v /= 10; } while (v);
    sts__buf_put(b, t + i, (size_t)(24 - i));
}
/* Quote a name for a message: JSON-style escapes, raw UTF-8, at most `limit` source bytes. */
STS__PRIVATE void sts__buf_quote(sts__buf *b, const char *s, size_t n, size_t limit) {
    static const char hex[] = "0123456789abcdef";
    size_t i, shown = n;
    if (!s) { sts__buf_put(b, n ? "(null)" : "\"\"", n ? 6 : 2); return; }
    if (shown > limit) {  /* cut at a UTF-8 character boundary */
        shown = limit;
        while (shown > 0 && ((unsigned char)s[shown] & 0xC0) == 0x80) shown--;
    }
    sts__buf_put(b, "\"", 1);
    for (i = 0; i < shown; i++) {
        unsigned char c = (unsigned char)s[i];
        if (c == '"' || c == '\\') { char e[2]; e[0] = '\\'; e[1] = (char)c; sts__buf_put(b, e, 2); }
        else if (c < 0x20 || c == 0x7f) {
            char e[6]; e[0] = '\\'; e[1] = 'u'; e[2] = '0'; e[3] = '0'; e[4] = hex[c >> 4]; e[5] = hex[c & 15];
            sts__buf_put(b, e, 6);
        } else sts__buf_put(b, (const char *)&s[i], 1);
    }
    sts__buf_put(b, "\"", 1);
    if (shown < n) sts__buf_put(b, "...", 3);
}
STS__PRIVATE void sts__vformat(sts__buf *b, const char *fmt, va_list ap) {
    const char *s;
    for (s = fmt; *s; s++) {
        if (*s != '%' || !s[1]) { sts__buf_put(b, s, 1); continue; }
        switch (*++s) {
        case 's': { const char *a = va_arg(ap, const char *); if (!a) a = "(null)";
                    sts__buf_put(b, a, strlen(a)); break; }
        case 'q': { const char *a = va_arg(ap, const char *); size_t n = va_arg(ap, size_t);
                    sts__buf_quote(b, a, n, 80); break; }
        case 'U': sts__buf_u64(b, va_arg(ap, uint64_t)); break;
        case 'z': sts__buf_u64(b, (uint64_t)va_arg(ap, size_t)); break;
        case 'S': case 'D': {
                    int any = *s == 'D';
                    const uint64_t *d = va_arg(ap, const uint64_t *); size_t n = va_arg(ap, size_t), i;
                    sts__buf_put(b, "[", 1);
                    for (i = 0; i < n && i < 8; i++) {
                        if (i) sts__buf_put(b, ", ", 2);
                        if (any && d[i] == UINT64_MAX) sts__buf_put(b, "-1", 2);
                        else sts__buf_u64(b, d[i]);
                    }
                    if (n > 8) sts__buf_put(b, ", ...", 5);
                    sts__buf_put(b, "]", 1); break; }
        case 'x': { static const char hx[] = "0123456789abcdef";
                    unsigned v = (unsigned)va_arg(ap, int) & 0xff;
                    char t[4];
                    t[0] = '0'; t[1] = 'x'; t[2] = hx[v >> 4]; t[3] = hx[v & 15]; sts__buf_put(b, t, 4); break; }
        case 'd': { int v = va_arg(ap, int);
                    if (v < 0) { sts__buf_put(b, "-", 1); sts__buf_u64(b, (uint64_t)0 - (uint64_t)(int64_t)v); }
                    else sts__buf_u64(b, (uint64_t)v);
                    break; }
        default: sts__buf_put(b, s, 1); break;
        }
    }
}
/* A full buffer may end inside a UTF-8 sequence: cut back to the last complete character. */
STS__PRIVATE void sts__buf_trim(sts__buf *b) {
    size_t i, need;
    if (b->n + 1 < b->cap || b->n == 0) return;
    i = b->n;
    while (i > 0 && ((unsigned char)b->p[i - 1] & 0xC0) == 0x80) i--;  /* back over continuation bytes */
    if (i == 0 || (unsigned char)b->p[i - 1] < 0x80) return;
    need = (unsigned char)b->p[i - 1] >= 0xF0 ? 4 : (unsigned char)b->p[i - 1] >= 0xE0 ? 3 : 2;
    if (b->n - (i - 1) < need) { b->n = i - 1; b->p[b->n] = 0; }
}
/* Fill *err (when given) and return the code. The message is "<rule id>: <formatted>". */
STS__PRIVATE sts_result sts__failv(sts_error *err, sts_result code, sts_rule rule, uint64_t offset,
                                   const char *fmt, va_list ap) {
    if (err) {
        sts__buf b;
        const char *id = sts_rule_id(rule);
        b.p = err->message; b.n = 0; b.cap = sizeof err->message;
        err->message[0] = 0;
        err->code = code;
        err->offset = offset;
        err->rule = rule;
        sts__buf_put(&b, id, strlen(id));
        sts__buf_put(&b, ": ", 2);
        sts__vformat(&b, fmt, ap);
        sts__buf_trim(&b);
    }
    return code;
}
STS__PRIVATE sts_result sts__fail_f(sts_error *err, sts_rule rule, uint64_t offset, const char *fmt, ...) {
    sts_result r;
    va_list ap;
    va_start(ap, fmt);
    r = sts__failv(err, sts__rule_codes[rule], rule, offset, fmt, ap);
    va_end(ap);
    return r;
}
/* sts__fail where no file position applies (the offset is STS_OFFSET_UNKNOWN). */
STS__PRIVATE sts_result sts__failx_f(sts_error *err, sts_rule rule, const char *fmt, ...) {
    sts_result r;
    va_list ap;
    va_start(ap, fmt);
    r = sts__failv(err, sts__rule_codes[rule], rule, STS_OFFSET_UNKNOWN, fmt, ap);
    va_end(ap);
    return r;
}
STS__PRIVATE sts_result sts__fail_code_f(sts_error *err, sts_result code, sts_rule rule, uint64_t offset,
                                         const char *fmt, ...) {
    sts_result r;
    va_list ap;
    va_start(ap, fmt);
    r = sts__failv(err, code, rule, offset, fmt, ap);
    va_end(ap);
    return r;
}
STS__PRIVATE sts_result sts__nomem_f(sts_error *err, const char *what) {
    return sts__failx_f(err, STS_RULE_ALLOC, "out of memory while allocating %s", what);
}
/* The failure helpers as callers see them: their result is plainly not STS_OK. A variadic function
   is never inlined, so without this the optimiser could not tell that `return sts__failx(...)`
   never returns STS_OK, and a caller's out-parameter would count as unset on an STS_OK path: gcc
   -O2 and -O3 would warn (maybe-uninitialized) in users' programs, mostly under STS_STATIC. */
STS__INLINE sts_result sts__err(sts_result r) { return r != STS_OK ? r : STS_ERR_INVALID_ARGUMENT; }
#define sts__fail(...) sts__err(sts__fail_f(__VA_ARGS__))
#define sts__failx(...) sts__err(sts__failx_f(__VA_ARGS__))
#define sts__fail_code(...) sts__err(sts__fail_code_f(__VA_ARGS__))
#define sts__nomem(err, what) sts__err(sts__nomem_f((err), (what)))
STS__PRIVATE void sts__ok(sts_error *err) {
    if (err) { err->code = STS_OK; err->offset = STS_OFFSET_UNKNOWN; err->rule = STS_RULE_NONE; err->message[0] = 0; }
}

/* ---- growable arrays: double the capacity, checked ---- */
STS__PRIVATE int sts__grow(const sts__mem *m, void **p, size_t *cap, size_t need, size_t elem) {
    size_t ncap = *cap ? *cap : 16, old_bytes, new_bytes;
    void *np;
    if (need <= *cap) return 1;
    while (ncap < need) { if (ncap > (size_t)-1 / 2) return 0; ncap *= 2; }
    if (!sts__mulsz(ncap, elem, &new_bytes)) return 0;
    old_bytes = *cap * elem;
    np = sts__realloc(m, *p, old_bytes, new_bytes);
    if (!np) return 0;
    *p = np;
    *cap = ncap;
    return 1;
}

/* ---- seeded 64-bit hash for names ----
   Multiply-fold rounds over 16-byte blocks; the per-file seed enters both operands of every
   multiply, so an input cannot zero a round without knowing the seed. */
STS__PRIVATE uint64_t sts__fold(uint64_t a, uint64_t b) {
#if defined(__SIZEOF_INT128__)
    __extension__ typedef unsigned __int128 sts__u128;
    sts__u128 r = (sts__u128)a * b;
    return (uint64_t)r ^ (uint64_t)(r >> 64);
#else
    uint64_t al = a & 0xffffffffu, ah = a >> 32, bl = b & 0xffffffffu, bh = b >> 32;
    uint64_t ll = al * bl, lh = al * bh, hl = ah * bl, hh = ah * bh;
    uint64_t mid = (ll >> 32) + (lh & 0xffffffffu) + (hl & 0xffffffffu);
    uint64_t lo = (ll & 0xffffffffu) | (mid << 32);
    uint64_t hi = hh + (lh >> 32) + (hl >> 32) + (mid >> 32);
    return lo ^ hi;
#endif
}
#define STS__K0 0xa0761d6478bd642full
#define STS__K1 0xe7037ed1a0b428dbull
#define STS__K2 0x8ebc6af09c88c6e3ull
#define STS__K3 0x589965cc75374cc3ull
STS__PRIVATE uint64_t sts__hash(const void *data, size_t n, uint64_t seed) {
    const uint8_t *p = (const uint8_t *)data;
    uint64_t h = seed ^ STS__K0, a, b;
    size_t left = n;
    while (left > 16) {
        h = sts__fold(sts__le64(p) ^ h ^ STS__K1, sts__le64(p + 8) ^ (h << 23 | h >> 41) ^ STS__K2);
        p += 16;
        left -= 16;
    }
    if (left >= 8) {
        a = sts__le64(p);
        b = sts__le64(p + left - 8);  /* overlapping read of the last 8 bytes */
    } else if (left >= 4) {
        a = (uint64_t)p[0] | (uint64_t)p[1] << 8 | (uint64_t)p[2] << 16 | (uint64_t)p[3] << 24;
        b = (uint64_t)p[left - 4] | (uint64_t)p[left - 3] << 8 | (uint64_t)p[left - 2] << 16 |
            (uint64_t)p[left - 1] << 24;
    } else if (left > 0) {
        a = (uint64_t)p[0] << 16 | (uint64_t)p[left >> 1] << 8 | p[left - 1];
        b = 0;
    } else {
        a = b = 0;
    }
    h = sts__fold(a ^ h ^ STS__K1, b ^ (h << 23 | h >> 41) ^ STS__K3);
    return sts__fold(h ^ STS__K2, (uint64_t)n ^ STS__K0 ^ seed);
}
/* A per-object seed from address entropy (ASLR): no global state, no system call. */
STS__PRIVATE uint64_t sts__seed_from(const void *obj, uint64_t user_seed) {
    uintptr_t a = (uintptr_t)obj, b = (uintptr_t)&a;
    if (user_seed) return user_seed;
    return sts__fold((uint64_t)a ^ STS__K2, (uint64_t)b ^ STS__K3) | 1u;
}

/* ---- the name index: open addressing over uint32 item indices ----
   Items live in caller arrays; the index reads an item's (pointer, length) through a stride and
   two field offsets, so the same code indexes tensors, metadata keys and dataset keys. An index
   made by sts__index_init holds plain item indices and compares the items' stored hashes; one made
   by sts__index_init_tagged (for items that keep no hash) packs the top bits of each item's hash
   above its index in the slot, so a probe rejects almost every other name without touching it, at
   4 bytes a slot and up to 80% load. Read slots through sts__index_item, fill them through
   sts__index_put: both kinds work alike. */
#define STS__EMPTY 0xffffffffu
typedef struct sts__index {
    uint32_t *slots;
    size_t mask;               /* capacity - 1, capacity a power of two */
    uint32_t tags;             /* 0, or the slot bits that hold a hash tag (~mask, tagged indexes) */
} sts__index;
typedef struct sts__names {
    const void *items;         /* item i is at items + i * stride; its name at ptr_off, length at len_off */
    size_t stride, ptr_off, len_off;
    const void *hashes;        /* item i's uint64_t hash is at hashes + i * hash_stride; NULL: tagged */
    size_t hash_stride;
} sts__names;

STS__PRIVATE const char *sts__name_of(const sts__names *k, size_t i, size_t *len) {
    const char *item = (const char *)k->items + i * k->stride;
    const char *p;
    memcpy(&p, item + k->ptr_off, sizeof p);
    memcpy(len, item + k->len_off, sizeof *len);
    return p;
}
/* Capacity: a power of two >= 8 with items <= capacity * num / den. */
STS__PRIVATE int sts__index_alloc(const sts__mem *m, sts__index *ix, size_t items, size_t num, size_t den,
                                  int tagged) {
    size_t cap = 8, bytes;
    while (cap / den * num < items) { if (cap > ((size_t)-1 >> 2)) return 0; cap <<= 1; }
    if (tagged && (uint64_t)cap > (uint64_t)1 << 32) return 0;  /* the item index must fit in a slot */
    if (!sts__mulsz(cap, sizeof(uint32_t), &bytes)) return 0;
    ix->slots = (uint32_t *)sts__alloc(m, bytes);
    if (!ix->slots) return 0;
    memset(ix->slots, 0xff, bytes);
    ix->mask = cap - 1;
    ix->tags = tagged ? ~(uint32_t)ix->mask : 0;
    return 1;
}
STS__PRIVATE int sts__index_init(const sts__mem *m, sts__index *ix, size_t items) {
    return sts__index_alloc(m, ix, items, 1, 2, 0);
}
/* Item indices must stay below sts__index_room(): the top index would read as an empty slot. */
STS__PRIVATE int sts__index_init_tagged(const sts__mem *m, sts__index *ix, size_t items) {
    return sts__index_alloc(m, ix, items, 4, 5, 1);
}
STS__PRIVATE size_t sts__index_room(const sts__index *ix) { return (ix->mask + 1) / 5 * 4; }
STS__PRIVATE void sts__index_free(const sts__mem *m, sts__index *ix) {
    if (ix->slots) sts__free(m, ix->slots, (ix->mask + 1) * sizeof(uint32_t));
    ix->slots = NULL;
    ix->mask = 0;
    ix->tags = 0;
}
STS__PRIVATE uint32_t sts__index_item(const sts__index *ix, size_t pos) {
    uint32_t s = ix->slots[pos];
    return s == STS__EMPTY ? STS__EMPTY : s & ~ix->tags;
}
STS__PRIVATE void sts__index_put(sts__index *ix, size_t pos, uint32_t item, uint64_t h) {
    ix->slots[pos] = ((uint32_t)(h >> 32) & ix->tags) | item;
}
/* The slot holding `name`, or the empty slot where it would go. */
STS__PRIVATE int sts__index_is(const sts__names *k, uint32_t it, uint64_t h, const char *name, size_t len) {
    uint64_t ih = h;
    size_t ilen;
    const char *ip;
    if (k->hashes) memcpy(&ih, (const char *)k->hashes + (size_t)it * k->hash_stride, sizeof ih);
    if (ih != h) return 0;
    ip = sts__name_of(k, it, &ilen);
    return ilen == len && (len == 0 || memcmp(ip, name, len) == 0);
}
STS__PRIVATE size_t sts__index_probe(const sts__index *ix, const sts__names *k, uint64_t h,
                                     const char *name, size_t len) {
    size_t pos = (size_t)h & ix->mask;
    uint32_t want = (uint32_t)(h >> 32) & ix->tags;
#ifdef STS__SSE2
    if (ix->tags) {  /* four slots a step: the first empty one, and the tags equal to want before it */
        const __m128i empty = _mm_set1_epi32(-1), tags = _mm_set1_epi32((int)ix->tags), w = _mm_set1_epi32((int)want);
        while (pos + 4 <= ix->mask + 1) {
            __m128i v = _mm_loadu_si128((const __m128i *)(const void *)(ix->slots + pos));
            unsigned me = (unsigned)_mm_movemask_ps(_mm_castsi128_ps(_mm_cmpeq_epi32(v, empty)));
            unsigned mt = (unsigned)_mm_movemask_ps(_mm_castsi128_ps(_mm_cmpeq_epi32(_mm_and_si128(v, tags), w)));
            unsigned stop = me & (0u - me);  /* the first empty slot's bit, or 0 */
            if (stop) mt &= stop - 1;        /* (an empty slot's tag bits may equal want: never one before it) */
            while (mt) {
                unsigned i = (unsigned)__builtin_ctz(mt);
                if (sts__index_is(k, ix->slots[pos + i] & ~ix->tags, h, name, len)) return pos + i;
                mt &= mt - 1;
            }
            if (stop) return pos + (size_t)__builtin_ctz(stop);
            pos = (pos + 4) & ix->mask;
        }
    }
#endif
    for (;;) {
        uint32_t s = ix->slots[pos];
        if (s == STS__EMPTY) return pos;
        if ((s & ix->tags) == want && sts__index_is(k, s & ~ix->tags, h, name, len)) return pos;
        pos = (pos + 1) & ix->mask;
    }
}
/* A tagged index moved to a capacity for `items`; the names are hashed again with seed. */
STS__PRIVATE int sts__index_resize_tagged(const sts__mem *m, sts__index *ix, const sts__names *k, uint64_t seed,
                                          size_t items) {
    sts__index nix;
    size_t i;
    if (!sts__index_init_tagged(m, &nix, items)) return 0;
    for (i = 0; ix->slots && i <= ix->mask; i++) {
        uint32_t it = sts__index_item(ix, i);
        size_t len, pos;
        const char *p;
        uint64_t h;
        if (it == STS__EMPTY) continue;
        p = sts__name_of(k, it, &len);
        h = sts__hash(p, len, seed);
        for (pos = (size_t)h & nix.mask; nix.slots[pos] != STS__EMPTY; pos = (pos + 1) & nix.mask) {}
        sts__index_put(&nix, pos, it, h);
    }
    sts__index_free(m, ix);
    *ix = nix;
    return 1;
}

/* ---- stable bottom-up merge sort of indices (no recursion) ---- */
typedef int (*sts__less_fn)(const void *ctx, size_t a, size_t b);
/* Sorts idx[0..n) by less; tmp holds n entries. Returns the array holding the result. */
STS__PRIVATE size_t *sts__msort(size_t *idx, size_t *tmp, size_t n, sts__less_fn less, const void *ctx) {
    size_t width, i, *src = idx, *dst = tmp, *sw;
    for (width = 1; width < n; width *= 2) {
        for (i = 0; i < n; i += 2 * width) {
            size_t lo = i, mid = i + width < n ? i + width : n, hi = i + 2 * width < n ? i + 2 * width : n;
            size_t a = lo, b = mid, o = lo;
            while (a < mid && b < hi) dst[o++] = less(ctx, src[b], src[a]) ? src[b++] : src[a++];
            while (a < mid) dst[o++] = src[a++];
            while (b < hi) dst[o++] = src[b++];
        }
        sw = src; src = dst; dst = sw;
        if (width > n / 2) break;
    }
    return src;
}

/* Sorts n records of `size` bytes at base in place, stably, by less(base, i, j). Returns 0 (base
   unchanged) when the scratch cannot be allocated. */
STS__PRIVATE int sts__sort_records(const sts__mem *m, void *base, size_t n, size_t size, sts__less_fn less) {
    size_t i, bytes, ibytes, *idx, *tmp, *ord;
    uint8_t *sorted, *b = (uint8_t *)base;
    int ok;
    if (n < 2) return 1;
    if (!sts__mulsz(n, size, &bytes) || !sts__mulsz(n, sizeof *idx, &ibytes)) return 0;
    idx = (size_t *)sts__alloc(m, ibytes);
    tmp = (size_t *)sts__alloc(m, ibytes);
    sorted = (uint8_t *)sts__alloc(m, bytes);
    ok = idx && tmp && sorted;
    if (ok) {
        for (i = 0; i < n; i++) idx[i] = i;
        ord = sts__msort(idx, tmp, n, less, base);
        for (i = 0; i < n; i++) memcpy(sorted + i * size, b + ord[i] * size, size);
        memcpy(b, sorted, bytes);
    }
    sts__free(m, idx, ibytes);
    sts__free(m, tmp, ibytes);
    sts__free(m, sorted, bytes);
    return ok;
}

/* ---- UTF-8 validation (RFC 3629: no overlongs, no surrogates, nothing above U+10FFFF) ----
   sts__utf8_seq: the length of the multi-byte sequence at s (s[0] >= 0x80, n bytes readable), or 0
   when it is not a valid one. sts__utf8_check: n when s[0..n) is valid, else the index of the
   first byte of the bad sequence. */
STS__PRIVATE size_t sts__utf8_seq(const uint8_t *s, size_t n) {
    uint8_t c = s[0], lo = 0x80, hi = 0xBF;
    size_t need, k;
    if (c < 0xC2) return 0;                     /* stray continuation, or C0/C1 overlong */
    else if (c < 0xE0) need = 1;
    else if (c < 0xF0) { need = 2; if (c == 0xE0) lo = 0xA0; else if (c == 0xED) hi = 0x9F; }
    else if (c < 0xF5) { need = 3; if (c == 0xF0) lo = 0x90; else if (c == 0xF4) hi = 0x8F; }
    else return 0;
    if (n <= need) return 0;
    if (s[1] < lo || s[1] > hi) return 0;
    for (k = 2; k <= need; k++) if ((s[k] & 0xC0) != 0x80) return 0;
    return need + 1;
}
STS__PRIVATE size_t sts__utf8_check(const uint8_t *s, size_t n) {
    size_t i = 0;
    while (i < n) {
#ifdef STS__SSE2
        while (i + 64 <= n) {  /* ASCII runs, 64 bytes a step */
            __m128i a = _mm_loadu_si128((const __m128i *)(const void *)(s + i));
            __m128i b = _mm_loadu_si128((const __m128i *)(const void *)(s + i + 16));
            __m128i c = _mm_loadu_si128((const __m128i *)(const void *)(s + i + 32));
            __m128i d = _mm_loadu_si128((const __m128i *)(const void *)(s + i + 48));
            if (_mm_movemask_epi8(_mm_or_si128(_mm_or_si128(a, b), _mm_or_si128(c, d)))) break;
            i += 64;
        }
        if (i >= n) break;
#endif
        if (i + 8 <= n) {  /* short ASCII runs (names, keys) a word at a time */
            uint64_t a;
            memcpy(&a, s + i, 8);
            if ((a & 0x8080808080808080ull) == 0) { i += 8; continue; }
        } else if (n >= 8 && i + 8 > n) {  /* the last bytes: one word ending at n, when ASCII */
            uint64_t a;
            memcpy(&a, s + n - 8, 8);
            if ((a & 0x8080808080808080ull) == 0) return n;
        }
        if (s[i] < 0x80) { i++; continue; }
        {
            size_t k = sts__utf8_seq(s + i, n - i);
            if (!k) return i;
            i += k;
        }
    }
    return n;
}

/* ==============================================================================================
   >>json  2. json
   Owns: the pieces of a strict RFC 8259 scanner over a byte range: whitespace, strings (escape
   and surrogate checks, unescaping), unsigned 64-bit integers (JSON's grammar over util's digit
   reader: overflow detected, never through double), the float-range check of ignored numbers,
   literals, and an iterative skip of any value with an explicit depth counter; no allocation, no
   recursion. UTF-8 has been validated before the scanner runs. Also the token tape for our own
   small documents (commit messages, manifests, options): one growable token array built
   iteratively, the only allocation in this section.
   May call: util.
   ============================================================================================== */
typedef struct sts__json {
    const uint8_t *p, *end;   /* cursor and end of the text */
    const uint8_t *base;      /* text start: reported offset = off0 + (p - base) */
    uint64_t off0;            /* 8 for a safetensors header, 0 for other documents */
    sts_error *err;
    uint32_t depth, max_depth;
    const char *ctx;          /* tensor name named in messages, or NULL */
    size_t ctx_len;
    sts_rule doc_rule;        /* STS_RULE_NONE for a header; else every problem breaks this rule of the document */
    const char *doc;          /* names the document in messages, or NULL for a header */
} sts__json;

typedef struct sts__str { const char *p; size_t n; int esc; } sts__str; /* raw bytes between quotes */

STS__PRIVATE uint64_t sts__json_off(const sts__json *j, const uint8_t *at) {
    return j->off0 + (uint64_t)(at - j->base);
}
STS__PRIVATE sts_result sts__json_fail_f(sts__json *j, sts_rule rule, const uint8_t *at, const char *fmt, ...) {
    sts_result r, code;
    va_list ap;
    /* a document of ours: its own rule, the JSON detail in the message */
    if (j->doc_rule != STS_RULE_NONE) rule = j->doc_rule;
    code = sts__rule_codes[rule];
    if (!j->err) return code;
    va_start(ap, fmt);
    r = sts__failv(j->err, code, rule, sts__json_off(j, at), fmt, ap);
    va_end(ap);
    {
        sts__buf b;
        b.p = j->err->message; b.n = strlen(b.p); b.cap = sizeof j->err->message;
        if (j->ctx) { sts__buf_put(&b, " in tensor ", 11); sts__buf_quote(&b, j->ctx, j->ctx_len, 80); }
        if (j->doc) { sts__buf_put(&b, " in ", 4); sts__buf_put(&b, j->doc, strlen(j->doc)); }
        sts__buf_put(&b, " at byte ", 9);
        sts__buf_u64(&b, sts__json_off(j, at));
        sts__buf_trim(&b);
    }
    return r;
}
#define sts__json_fail(...) sts__err(sts__json_fail_f(__VA_ARGS__))  /* see sts__err */
STS__PRIVATE const char *sts__json_what(const sts__json *j) {  /* the token at the cursor, for messages */
    if (j->p >= j->end) return j->doc ? "the end of the text" : "the end of the header";
    switch (*j->p) {
    case '{': return "an object"; case '[': return "an array"; case '"': return "a string";
    case 't': case 'f': return "a boolean"; case 'n': return "null";
    case '-': case '0': case '1': case '2': case '3': case '4': case '5': case '6': case '7': case '8': case '9':
        return "a number";
    default: return "an unexpected character";
    }
}
#define STS__IS_WS(c) ((c) == ' ' || (c) == '\n' || (c) == '\r' || (c) == '\t')
STS__PRIVATE void sts__json_ws(sts__json *j) {
    while (j->p < j->end && STS__IS_WS(*j->p)) j->p++;
}
/* Skip whitespace and require byte c. */
STS__PRIVATE sts_result sts__json_expect(sts__json *j, char c, const char *what) {
    sts__json_ws(j);
    if (STS__LIKELY(j->p < j->end && *j->p == (uint8_t)c)) { j->p++; return STS_OK; }
    return sts__json_fail(j, STS_RULE_JSON_SYNTAX, j->p, "expected %s, found %s", what, sts__json_what(j));
}
STS__PRIVATE sts_result sts__json_enter(sts__json *j) {
    if (STS__UNLIKELY(++j->depth > j->max_depth))
        return sts__json_fail(j, STS_RULE_JSON_DEPTH, j->p, "more than %U nested containers", (uint64_t)j->max_depth);
    return STS_OK;
}
STS__PRIVATE int sts__hexval(uint8_t c) {
    if (c >= '0' && c <= '9') return c - '0';
    c |= 0x20;
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    return -1;
}
STS__PRIVATE int sts__hex4(const uint8_t *p, unsigned *v) {
    int a = sts__hexval(p[0]), b = sts__hexval(p[1]), c = sts__hexval(p[2]), d = sts__hexval(p[3]);
    if ((a | b | c | d) < 0) return 0;
    *v = (unsigned)(a << 12 | b << 8 | c << 4 | d);
    return 1;
}
/* Offset of the first '"', '\\', control byte or byte >= 0x80 in p[0..n), or n: where a string
   scanner has something to judge. */
STS__INLINE size_t sts__str_stop(const uint8_t *p, size_t n) {
    size_t i = 0;
#ifdef STS__SSE2
    const __m128i q = _mm_set1_epi8('"'), bs = _mm_set1_epi8('\\'), ctl = _mm_set1_epi8(0x1f);
    while (i + 16 <= n) {
        __m128i v = _mm_loadu_si128((const __m128i *)(const void *)(p + i));
        __m128i hit = _mm_or_si128(_mm_or_si128(_mm_cmpeq_epi8(v, q), _mm_cmpeq_epi8(v, bs)),
                                   _mm_cmpeq_epi8(_mm_max_epu8(v, ctl), ctl));
        int mask = _mm_movemask_epi8(_mm_or_si128(hit, v));
        if (mask) return i + (size_t)__builtin_ctz((unsigned)mask);
        i += 16;
    }
#else
    while (i + 8 <= n) {  /* SWAR: the lowest flagged byte is exact */
        uint64_t x = sts__le64(p + i), ones = 0x0101010101010101ull, high = 0x8080808080808080ull;
        uint64_t xq = x ^ (ones * '"'), xb = x ^ (ones * '\\');
        uint64_t t = ((xq - ones) & ~xq) | ((xb - ones) & ~xb) | ((x - ones * 0x20) & ~x) | x;
        t &= high;
        if (t) {
            size_t k = 0;
            while (!(t & 0x80)) { t >>= 8; k++; }
            return i + k;
        }
        i += 8;
    }
#endif
    while (i < n && p[i] != '"' && p[i] != '\\' && p[i] >= 0x20 && p[i] < 0x80) i++;
    return i;
}
/* A string at the cursor ('"'); leaves the cursor after the closing quote. Its bytes >= 0x80 are
   checked as UTF-8 here: with the grammar, which takes no such byte outside a string, a text that
   parses is valid UTF-8 without a pass of its own (the header's parser relies on it). */
STS__PRIVATE sts_result sts__json_string(sts__json *j, sts__str *s) {
    const uint8_t *start = ++j->p, *p = start, *end = j->end;
    s->esc = 0;
    for (;;) {
        p += sts__str_stop(p, (size_t)(end - p));
        if (STS__UNLIKELY(p >= end))
            return sts__json_fail(j, STS_RULE_JSON_SYNTAX, p, "unterminated string");
        if (STS__LIKELY(*p == '"')) break;
        if (*p < 0x20)
            return sts__json_fail(j, STS_RULE_JSON_STRING, p, "raw control character %x in a string", (int)*p);
        if (*p >= 0x80) {
            size_t k = sts__utf8_seq(p, (size_t)(end - p));
            if (!k) return sts__json_fail(j, STS_RULE_HEADER_UTF8, p, "byte %x is not part of a valid UTF-8 sequence",
                                          (int)*p);
            p += k;
            continue;
        }
        /* backslash */
        s->esc = 1;
        if (end - p < 2) return sts__json_fail(j, STS_RULE_JSON_SYNTAX, p, "unterminated escape");
        switch (p[1]) {
        case '"': case '\\': case '/': case 'b': case 'f': case 'n': case 'r': case 't': p += 2; break;
        case 'u': {
            unsigned u, u2;
            if (end - p < 6 || !sts__hex4(p + 2, &u))
                return sts__json_fail(j, STS_RULE_JSON_STRING, p, "\\u must be followed by 4 hex digits");
            if (u >= 0xDC00 && u <= 0xDFFF)
                return sts__json_fail(j, STS_RULE_JSON_STRING, p, "unpaired low surrogate escape");
            if (u >= 0xD800 && u <= 0xDBFF) {
                if (end - p < 12 || p[6] != '\\' || p[7] != 'u' || !sts__hex4(p + 8, &u2) || u2 < 0xDC00 || u2 > 0xDFFF)
                    return sts__json_fail(j, STS_RULE_JSON_STRING, p, "unpaired high surrogate escape");
                p += 12;
            } else p += 6;
            break;
        }
        default:
            return sts__json_fail(j, STS_RULE_JSON_STRING, p, "invalid escape sequence");
        }
    }
    s->p = (const char *)start;
    s->n = (size_t)(p - start);
    j->p = p + 1;
    return STS_OK;
}
/* Unescape a scanned (valid) raw string into dst (room for n bytes); returns the length. */
STS__PRIVATE size_t sts__json_unescape(const char *raw, size_t n, char *dst) {
    const uint8_t *p = (const uint8_t *)raw, *end = p + n;
    uint8_t *o = (uint8_t *)dst;
    while (p < end) {
        unsigned u, u2;
        if (*p != '\\') { *o++ = *p++; continue; }
        switch (p[1]) {
        case 'b': *o++ = 8; p += 2; continue;
        case 'f': *o++ = 12; p += 2; continue;
        case 'n': *o++ = 10; p += 2; continue;
        case 'r': *o++ = 13; p += 2; continue;
        case 't': *o++ = 9; p += 2; continue;
        case 'u': break;
        default: *o++ = p[1]; p += 2; continue;
        }
        sts__hex4(p + 2, &u);
        p += 6;
        if (u >= 0xD800 && u <= 0xDBFF) {
            sts__hex4(p + 2, &u2);
            p += 6;
            u = 0x10000 + ((u - 0xD800) << 10) + (u2 - 0xDC00);
        }
        if (u < 0x80) *o++ = (uint8_t)u;
        else if (u < 0x800) { *o++ = (uint8_t)(0xC0 | u >> 6); *o++ = (uint8_t)(0x80 | (u & 63)); }
        else if (u < 0x10000) {
            *o++ = (uint8_t)(0xE0 | u >> 12); *o++ = (uint8_t)(0x80 | (u >> 6 & 63)); *o++ = (uint8_t)(0x80 | (u & 63));
        } else {
            *o++ = (uint8_t)(0xF0 | u >> 18); *o++ = (uint8_t)(0x80 | (u >> 12 & 63));
            *o++ = (uint8_t)(0x80 | (u >> 6 & 63)); *o++ = (uint8_t)(0x80 | (u & 63));
        }
    }
    return (size_t)(o - (uint8_t *)dst);
}
/* Skip a JSON number (grammar checked, value ignored). */
STS__PRIVATE sts_result sts__json_number(sts__json *j) {
    const uint8_t *p = j->p, *end = j->end, *start = p;
    if (p < end && *p == '-') p++;
    if (p >= end || *p < '0' || *p > '9') return sts__json_fail(j, STS_RULE_JSON_NUMBER, start, "invalid number");
    if (*p == '0') {
        p++;
        if (p < end && *p >= '0' && *p <= '9')
            return sts__json_fail(j, STS_RULE_JSON_NUMBER, start, "number with a leading zero");
    } else while (p < end && *p >= '0' && *p <= '9') p++;
    if (p < end && *p == '.') {
        p++;
        if (p >= end || *p < '0' || *p > '9') return sts__json_fail(j, STS_RULE_JSON_NUMBER, start, "invalid fraction");
        while (p < end && *p >= '0' && *p <= '9') p++;
    }
    if (p < end && (*p == 'e' || *p == 'E')) {
        p++;
        if (p < end && (*p == '+' || *p == '-')) p++;
        if (p >= end || *p < '0' || *p > '9') return sts__json_fail(j, STS_RULE_JSON_NUMBER, start, "invalid exponent");
        while (p < end && *p >= '0' && *p <= '9') p++;
    }
    j->p = p;
    return STS_OK;
}
/* An integer in [0, 2^64) at the cursor. Anything else that JSON allows (sign, fraction,
   exponent, too many digits) breaks `rule`; what JSON forbids breaks json.number. */
STS__PRIVATE sts_result sts__json_u64(sts__json *j, uint64_t *out, sts_rule rule, const char *field) {
    const uint8_t *p = j->p, *end = j->end, *start = p;
    uint64_t v;
    size_t n;
    int big;
    if (STS__UNLIKELY(p >= end || *p < '0' || *p > '9')) {
        if (p < end && *p == '-') {
            sts_result r = sts__json_number(j);
            if (r != STS_OK) return r;
            return sts__json_fail(j, rule, start, "%s must be an unsigned integer, found a negative number", field);
        }
        return sts__json_fail(j, rule, start, "%s must hold unsigned integers, found %s", field, sts__json_what(j));
    }
    n = sts__dec_u64(p, end, &v, &big);
    if (*p == '0' && n > 1) return sts__json_fail(j, STS_RULE_JSON_NUMBER, start, "number with a leading zero");
    p += n;
    if (STS__UNLIKELY(big)) {
        j->p = p;
        return sts__json_fail(j, rule, start, "%s value does not fit in 64 bits", field);
    }
    if (STS__UNLIKELY(p < end && (*p == '.' || *p == 'e' || *p == 'E'))) {
        sts_result r = sts__json_number(j);
        if (r != STS_OK) return r;
        return sts__json_fail(j, rule, start, "%s must be an integer, found a fraction or exponent", field);
    }
    j->p = p;
    *out = v;
    return STS_OK;
}
/* The reference buffers tensor entries (unknown fields included) through serde's `flatten`,
   which turns every number that is not an integer of 64 bits into an f64 and rejects one that
   rounds to infinity. This decides the same thing exactly, without floating point: the value is
   finite iff it is below the midpoint between the largest double and 2^1024 (ties go to even,
   i.e. to infinity). A zero significand is finite whatever its exponent. */
static const char sts__f64_midpoint[] =  /* 2^1024 - 2^970 */
    "17976931348623158079372897140530341507993413271003782693617377898044496829276475094664901797758720709633"
    "02864166928879109465555478519404026306574886715058206819089020007083836762738548458177115317644757302700"
    "69855571366959622842914819860834936475292719074168444365510704342711559699508093042880177904174497792";
STS__PRIVATE int sts__json_f64_finite(const uint8_t *p, const uint8_t *end) {
    const uint8_t *digits = NULL, *q;
    int64_t e10 = 0, exp = 0;   /* decimal exponent of the first significant digit */
    size_t ndig = 0, i;
    int seen_point = 0, exp_neg = 0, exp_huge = 0;
    if (p < end && *p == '-') p++;
    for (q = p; q < end && ((*q >= '0' && *q <= '9') || *q == '.'); q++) {
        if (*q == '.') { seen_point = 1; continue; }
        if (!digits) {
            if (*q == '0') { if (seen_point) e10--; continue; }
            digits = q;
            e10 += seen_point ? -1 : 0;
        } else if (!seen_point) e10++;
        ndig++;
    }
    if (!digits) return 1;  /* zero */
    if (q < end && (*q == 'e' || *q == 'E')) {
        q++;
        if (q < end && (*q == '+' || *q == '-')) exp_neg = *q++ == '-';
        for (; q < end && *q >= '0' && *q <= '9'; q++) {
            if (exp > 100000000) exp_huge = 1;
            else exp = exp * 10 + (*q - '0');
        }
    }
    if (exp_huge) return exp_neg;  /* astronomically small is 0, large is infinite */
    e10 += exp_neg ? -exp : exp;
    if (e10 != 308) return e10 < 308;
    for (i = 0, q = digits; i < sizeof sts__f64_midpoint - 1; i++) {  /* compare digit strings */
        int d;
        while (q < end && *q == '.') q++;
        d = (i < ndig && q < end && *q >= '0' && *q <= '9') ? *q++ : '0';
        if (d != sts__f64_midpoint[i]) return d < sts__f64_midpoint[i];
    }
    for (; i < ndig; i++) {  /* beyond the midpoint's digits: any nonzero digit is above it */
        while (q < end && *q == '.') q++;
        if (q < end && *q > '0' && *q <= '9') return 0;
        q++;
    }
    return 0;  /* exactly the midpoint: rounds to infinity */
}
STS__PRIVATE sts_result sts__json_literal(sts__json *j) {
    static const char *const lits[3] = { "true", "false", "null" };
    size_t k;
    for (k = 0; k < 3; k++) {
        size_t n = strlen(lits[k]);
        if ((size_t)(j->end - j->p) >= n && memcmp(j->p, lits[k], n) == 0) { j->p += n; return STS_OK; }
    }
    return sts__json_fail(j, STS_RULE_JSON_SYNTAX, j->p, "expected a value, found %s", sts__json_what(j));
}
/* Skip one value of any kind, iteratively. Containers count toward the depth limit. */
STS__PRIVATE sts_result sts__json_skip(sts__json *j) {
    uint64_t kinds[(STS_MAX_DEPTH + 64) / 64];  /* bit set = the open container is an object */
    uint32_t level = 0, base_depth = j->depth;
    sts_result r;
    sts__str s;
    (void)base_depth;  /* only asserted */
    memset(kinds, 0, sizeof kinds);
    for (;;) {
        sts__json_ws(j);
        if (j->p >= j->end)
            return sts__json_fail(j, STS_RULE_JSON_SYNTAX, j->p, "expected a value, found the end of the header");
        switch (*j->p) {
        case '{': case '[': {
            int obj = *j->p == '{';
            if ((r = sts__json_enter(j)) != STS_OK) return r;
            j->p++;
            if (obj) kinds[level >> 6] |= (uint64_t)1 << (level & 63);
            else kinds[level >> 6] &= ~((uint64_t)1 << (level & 63));
            level++;
            sts__json_ws(j);
            if (j->p < j->end && *j->p == (obj ? '}' : ']')) { j->p++; level--; j->depth--; goto after_value; }
            if (obj) {
                if (j->p >= j->end || *j->p != '"')
                    return sts__json_fail(j, STS_RULE_JSON_SYNTAX, j->p, "expected a string key, found %s",
                                          sts__json_what(j));
                if ((r = sts__json_string(j, &s)) != STS_OK) return r;
                if ((r = sts__json_expect(j, ':', "':'")) != STS_OK) return r;
            }
            continue;
        }
        case '"': if ((r = sts__json_string(j, &s)) != STS_OK) return r; break;
        case '-': case '0': case '1': case '2': case '3': case '4': case '5': case '6': case '7': case '8': case '9': {
            const uint8_t *start = j->p;
            if ((r = sts__json_number(j)) != STS_OK) return r;
            if (!sts__json_f64_finite(start, j->p))
                return sts__json_fail(j, STS_RULE_JSON_NUMBER, start, "number out of the range of a 64-bit float");
            break;
        }
        default: if ((r = sts__json_literal(j)) != STS_OK) return r; break;
        }
    after_value:
        for (;;) {
            int obj;
            if (level == 0) { STS_ASSERT(j->depth == base_depth); return STS_OK; }
            obj = (int)(kinds[(level - 1) >> 6] >> ((level - 1) & 63) & 1);
            sts__json_ws(j);
            if (j->p < j->end && *j->p == ',') {
                j->p++;
                if (obj) {
                    sts__json_ws(j);
                    if (j->p >= j->end || *j->p != '"')
                        return sts__json_fail(j, STS_RULE_JSON_SYNTAX, j->p, "expected a string key, found %s",
                                              sts__json_what(j));
                    if ((r = sts__json_string(j, &s)) != STS_OK) return r;
                    if ((r = sts__json_expect(j, ':', "':'")) != STS_OK) return r;
                }
                break;
            }
            if (j->p < j->end && *j->p == (obj ? '}' : ']')) { j->p++; level--; j->depth--; continue; }
            return sts__json_fail(j, STS_RULE_JSON_SYNTAX, j->p,
                                  obj ? "expected ',' or '}', found %s" : "expected ',' or ']', found %s",
                                  sts__json_what(j));
        }
    }
}

/* ---- a token tape for small documents (commit messages, manifests, options) ----
   One growable array of tokens (no allocation per token), built iteratively. Each token knows
   where its subtree ends, so walking an object or array skips children in O(1). */
typedef struct sts__jtok {
    uint8_t type;           /* '{' '[' '"' '0' (number) 't' 'f' 'n' */
    uint8_t esc;            /* string holds escapes */
    uint32_t count;         /* containers: members (objects) or elements (arrays) */
    uint32_t next;          /* index of the first token after this subtree */
    size_t at, len;         /* strings: the raw bytes between the quotes; others: the token text start */
} sts__jtok;
typedef struct sts__jdoc {
    sts__mem mem;
    const uint8_t *text;
    sts__jtok *tok;
    size_t n, cap;
} sts__jdoc;

STS__PRIVATE void sts__jdoc_free(sts__jdoc *d) {
    sts__free(&d->mem, d->tok, d->cap * sizeof *d->tok);
    d->tok = NULL;
    d->n = d->cap = 0;
}
STS__PRIVATE sts_result sts__jdoc_push(sts__jdoc *d, sts__json *j, uint8_t type, size_t at, size_t len, int esc) {
    sts__jtok *t;
    if (d->n >= 0xfffffff0u) return sts__json_fail(j, STS_RULE_JSON_SYNTAX, j->p, "too many JSON tokens");
    if (d->n == d->cap && !sts__grow(&d->mem, (void **)&d->tok, &d->cap, d->n + 1, sizeof *d->tok))
        return sts__fail_code(j->err, STS_ERR_NOMEM, STS_RULE_ALLOC, STS_OFFSET_UNKNOWN,
                              "out of memory while tokenizing %s", j->doc ? j->doc : "JSON");
    t = &d->tok[d->n++];
    t->type = type; t->esc = (uint8_t)esc; t->count = 0; t->next = (uint32_t)d->n; t->at = at; t->len = len;
    return STS_OK;
}
/* Tokenize one JSON value (surrounded by optional whitespace). `what` names the document and
   `rule` is the rule its problems break. The text is checked as UTF-8 first. */
STS__PRIVATE sts_result sts__jdoc_parse(sts__jdoc *d, const void *text, size_t len, const sts__mem *m, const char *what,
                                        sts_rule rule, sts_error *err) {
    uint32_t stack[STS_MAX_DEPTH + 1];
    uint32_t level = 0;
    sts__json j;
    sts_result r;
    size_t bad;
    memset(d, 0, sizeof *d);
    d->mem = *m;
    d->text = (const uint8_t *)text;
    memset(&j, 0, sizeof j);
    j.p = j.base = d->text;
    j.end = d->text + len;
    j.err = err;
    j.max_depth = STS_MAX_DEPTH;
    j.doc_rule = rule;
    j.doc = what;
    if ((bad = sts__utf8_check(d->text, len)) != len)
        return sts__fail(err, rule, (uint64_t)bad, "%s is not valid UTF-8 at byte %U", what, (uint64_t)bad);
    for (;;) {
        sts__json_ws(&j);
        if (j.p >= j.end) {
            r = sts__json_fail(&j, STS_RULE_JSON_SYNTAX, j.p, "expected a value, found the end");
            goto fail;
        }
        switch (*j.p) {
        case '{': case '[': {
            uint8_t type = *j.p;
            if ((r = sts__json_enter(&j)) != STS_OK) goto fail;
            if ((r = sts__jdoc_push(d, &j, type, (size_t)(j.p - j.base), 1, 0)) != STS_OK) goto fail;
            stack[level++] = (uint32_t)(d->n - 1);
            j.p++;
            sts__json_ws(&j);
            if (j.p < j.end && *j.p == (type == '{' ? '}' : ']')) {
                j.p++; level--; j.depth--;
                d->tok[stack[level]].next = (uint32_t)d->n;
                goto after_value;
            }
            if (type == '{') goto key;
            continue;
        }
        case '"': {
            sts__str s;
            size_t at = (size_t)(j.p - j.base) + 1;
            if ((r = sts__json_string(&j, &s)) != STS_OK) goto fail;
            if ((r = sts__jdoc_push(d, &j, '"', at, s.n, s.esc)) != STS_OK) goto fail;
            break;
        }
        case '-': case '0': case '1': case '2': case '3': case '4': case '5': case '6': case '7': case '8': case '9': {
            const uint8_t *start = j.p;
            if ((r = sts__json_number(&j)) != STS_OK) goto fail;
            if ((r = sts__jdoc_push(d, &j, '0', (size_t)(start - j.base), (size_t)(j.p - start), 0)) != STS_OK)
                goto fail;
            break;
        }
        default: {
            const uint8_t *start = j.p;
            if ((r = sts__json_literal(&j)) != STS_OK) goto fail;
            if ((r = sts__jdoc_push(d, &j, *start, (size_t)(start - j.base), (size_t)(j.p - start), 0)) != STS_OK)
                goto fail;
            break;
        }
        }
    after_value:
        for (;;) {
            sts__jtok *parent;
            if (level == 0) {
                sts__json_ws(&j);
                if (j.p < j.end) {
                    r = sts__json_fail(&j, STS_RULE_JSON_SYNTAX, j.p, "unexpected byte %x after the value", (int)*j.p);
                    goto fail;
                }
                return STS_OK;
            }
            parent = &d->tok[stack[level - 1]];
            parent->count++;
            sts__json_ws(&j);
            if (j.p < j.end && *j.p == ',') {
                j.p++;
                if (parent->type == '{') goto key;
                break;
            }
            if (j.p < j.end && *j.p == (parent->type == '{' ? '}' : ']')) {
                j.p++; level--; j.depth--;
                parent->next = (uint32_t)d->n;
                continue;
            }
            r = sts__json_fail(&j, STS_RULE_JSON_SYNTAX, j.p,
                               parent->type == '{' ? "expected ',' or '}', found %s" : "expected ',' or ']', found %s",
                               sts__json_what(&j));
            goto fail;
        }
        continue;
    key: {
            sts__str s;
            size_t at;
            sts__json_ws(&j);
            if (j.p >= j.end || *j.p != '"') {
                r = sts__json_fail(&j, STS_RULE_JSON_SYNTAX, j.p, "expected a string key, found %s",
                                   sts__json_what(&j));
                goto fail;
            }
            at = (size_t)(j.p - j.base) + 1;
            if ((r = sts__json_string(&j, &s)) != STS_OK) goto fail;
            if ((r = sts__jdoc_push(d, &j, '"', at, s.n, s.esc)) != STS_OK) goto fail;
            if ((r = sts__json_expect(&j, ':', "':'")) != STS_OK) goto fail;
        }
    }
fail:
    sts__jdoc_free(d);
    return r;
}
/* A string token's unescaped bytes: into dst (room for len bytes) when escaped, else in place. */
STS__PRIVATE const char *sts__jdoc_str(const sts__jdoc *d, uint32_t t, char *dst, size_t *len) {
    const sts__jtok *tk = &d->tok[t];
    if (!tk->esc) { *len = tk->len; return (const char *)d->text + tk->at; }
    *len = sts__json_unescape((const char *)d->text + tk->at, tk->len, dst);
    return dst;
}
/* 1 when string token t equals s exactly (after unescaping). */
STS__PRIVATE int sts__jdoc_is(const sts__jdoc *d, uint32_t t, const char *s) {
    char buf[64];
    size_t n, sl = strlen(s);
    const char *p;
    if (!t || d->tok[t].type != '"' || (d->tok[t].esc && d->tok[t].len > sizeof buf)) return 0;
    p = sts__jdoc_str(d, t, buf, &n);
    return n == sl && memcmp(p, s, n) == 0;
}
/* The value of key `key` in object token `obj` (the last one if repeated), or 0 when absent
   (token 0 is always the root, never a member value). */
STS__PRIVATE uint32_t sts__jdoc_get(const sts__jdoc *d, uint32_t obj, const char *key) {
    size_t klen = strlen(key);
    uint32_t i, k, found = 0;
    if (d->tok[obj].type != '{') return 0;
    for (i = 0, k = obj + 1; i < d->tok[obj].count; i++) {
        const sts__jtok *kt = &d->tok[k];
        if (kt->esc ? sts__jdoc_is(d, k, key) : (kt->len == klen && memcmp(d->text + kt->at, key, klen) == 0))
            found = k + 1;
        k = d->tok[k + 1].next;  /* past the value */
    }
    return found;
}
/* The first token after t's subtree. To walk the d->tok[c].count members of container c: an
   array's elements are c + 1, then sts__jdoc_next of each; an object's keys are c + 1, then
   sts__jdoc_next(d, key + 1) (past the key's value). */
STS__PRIVATE uint32_t sts__jdoc_next(const sts__jdoc *d, uint32_t t) { return d->tok[t].next; }
/* A number token as u64 (digits only, no sign, fraction or exponent, no overflow). */
STS__PRIVATE int sts__jdoc_u64(const sts__jdoc *d, uint32_t t, uint64_t *v) {
    const sts__jtok *tk = &d->tok[t];
    uint64_t x;
    int big;
    if (tk->type != '0' || tk->len == 0) return 0;
    if (sts__dec_u64(d->text + tk->at, d->text + tk->at + tk->len, &x, &big) != tk->len || big) return 0;
    *v = x;
    return 1;
}

/* ==============================================================================================
   >>dtype  3. dtype
   Owns: the 22-dtype table (name, bits per element, writer rank = enum value) and the exact,
   case-sensitive name lookup.
   May call: util.
   ============================================================================================== */
#define STS__DTYPE_NAME(name, bits) #name,
#define STS__DTYPE_BITS(name, bits) bits,
static const char *const sts__dtype_names[] = { STS_DTYPE_LIST(STS__DTYPE_NAME) "?" };
#define STS__DTYPE_NAME_LEN(name, bits) sizeof(#name) - 1,
static const unsigned char sts__dtype_bits[] = { STS_DTYPE_LIST(STS__DTYPE_BITS) 0 };
static const unsigned char sts__dtype_name_len[] = { STS_DTYPE_LIST(STS__DTYPE_NAME_LEN) 1 };

STSDEF const char *sts_dtype_name(sts_dtype d) {
    return (unsigned)d < (unsigned)STS_DTYPE_COUNT ? sts__dtype_names[d] : "?";
}
STSDEF unsigned sts_dtype_bits(sts_dtype d) {
    return (unsigned)d < (unsigned)STS_DTYPE_COUNT ? sts__dtype_bits[d] : 0u;
}
/* Names of 3 or 4 bytes (14 of the 22, the common ones) are matched as one 32-bit word; the
   rest by length, then bytes. BF16 matches here although it lies outside the official schema's
   dtype regex ([UIF])(8|16|32|64|128|256): the reference accepts it. */
#define STS__W4(a, b, c, d) ((uint32_t)(a) | (uint32_t)(b) << 8 | (uint32_t)(c) << 16 | (uint32_t)(d) << 24)
STSDEF int sts_dtype_from_name(const char *name, size_t len, sts_dtype *out) {
    const uint8_t *p = (const uint8_t *)name;
    sts_dtype d = STS_DTYPE_COUNT;
    if (!name) return 0;
    if (len == 2) {  /* the one-byte dtypes, the usual KV index's */
        if (p[1] == '8') d = p[0] == 'U' ? STS_DTYPE_U8 : p[0] == 'I' ? STS_DTYPE_I8 : STS_DTYPE_COUNT;
        else if (p[0] == 'F' && p[1] == '4') d = STS_DTYPE_F4;
    } else if (len == 3 || (len == 4 && p[3])) {  /* a 4th byte of 0 would read as a 3-byte name: "U16\0" is not U16 */
        uint32_t w = (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 |
                     (len == 4 ? (uint32_t)p[3] << 24 : 0u);
        switch (w) {
        case STS__W4('F', '3', '2', 0): d = STS_DTYPE_F32; break;
        case STS__W4('B', 'F', '1', '6'): d = STS_DTYPE_BF16; break;  /* outside the schema regex, accepted */
        case STS__W4('F', '1', '6', 0): d = STS_DTYPE_F16; break;
        case STS__W4('F', '6', '4', 0): d = STS_DTYPE_F64; break;
        case STS__W4('I', '6', '4', 0): d = STS_DTYPE_I64; break;
        case STS__W4('I', '3', '2', 0): d = STS_DTYPE_I32; break;
        case STS__W4('I', '1', '6', 0): d = STS_DTYPE_I16; break;
        case STS__W4('U', '6', '4', 0): d = STS_DTYPE_U64; break;
        case STS__W4('U', '3', '2', 0): d = STS_DTYPE_U32; break;
        case STS__W4('U', '1', '6', 0): d = STS_DTYPE_U16; break;
        case STS__W4('C', '6', '4', 0): d = STS_DTYPE_C64; break;
        case STS__W4('B', 'O', 'O', 'L'): d = STS_DTYPE_BOOL; break;
        default: break;
        }
    } else {
        int i;
        for (i = 0; i < (int)STS_DTYPE_COUNT; i++) {
            const char *n = sts__dtype_names[i];
            if (strlen(n) == len && memcmp(n, name, len) == 0) { d = (sts_dtype)i; break; }
        }
    }
    if (d == STS_DTYPE_COUNT) return 0;
    if (out) *out = d;
    return 1;
}

/* ==============================================================================================
   >>header  4. header
   Owns: struct sts_file; the parse of one header (UTF-8, JSON with the safetensors schema,
   duplicates, strict checks) and its mandatory validation in the reference's order; the name
   index; accessors. Input is the N header bytes plus the file size; the data section may be
   absent (header-only).
   May call: util, json, dtype.
   ============================================================================================== */
typedef struct sts__chunk { struct sts__chunk *next; size_t size; } sts__chunk; /* arena block */
typedef struct sts__info {      /* per metadata entry, beside the public struct */
    uint64_t hash;              /* of the unescaped key */
    uint64_t key_off;           /* file offset of its key in the header */
    uint64_t dead;              /* 1: a later duplicate replaced it */
} sts__info;

/* Memory per tensor: the public sts_tensor (48 bytes on LP64), 4 to 5 bytes of tagged index, and
   shapes stored once per distinct shape (a checkpoint repeats a few shapes; a dataset shard one
   per column). A tensor's key offset, for messages, is derived from its name (sts__key_off). */
struct sts_file {
    sts__mem mem;
    const uint8_t *header;      /* the N header bytes */
    uint64_t header_len;        /* N */
    const uint8_t *data;        /* start of the data section, or NULL when header-only */
    uint64_t file_size;
    uint64_t seed;              /* name hash seed */
    sts_tensor *tensors;        /* data-offset order once parsed */
    size_t count, cap;
    sts__index index;           /* tensor names, tagged */
    sts_kv *meta;
    sts__info *meta_info;       /* parallel to meta */
    size_t meta_count, meta_cap, meta_info_cap;
    sts__index meta_index;
    int has_meta;
    sts__chunk *arena;          /* shapes and unescaped strings; blocks never move */
    char *arena_at;             /* free space in the newest block */
    size_t arena_left;
    void *owned;                /* bytes the file owns: a mapping or a heap block */
    size_t owned_size;
    void (*release)(sts_file *f);  /* releases `owned` (unmap or free) */
};

/* n bytes from the arena, 8-byte aligned. Blocks grow from 256 bytes to 64 KiB. */
STS__PRIVATE char *sts__arena_alloc(sts_file *f, size_t n) {
    size_t need = n ? (n + 7) & ~(size_t)7 : 8, bytes;
    sts__chunk *c;
    char *p;
    if (n > (size_t)-1 - sizeof(sts__chunk) - 64 * 1024) return NULL;
    if (need > f->arena_left) {
        size_t last = f->arena ? f->arena->size : 128;
        bytes = last < 64 * 1024 ? last * 2 : 64 * 1024;
        if (bytes < sizeof(sts__chunk) + need) bytes = sizeof(sts__chunk) + need;
        c = (sts__chunk *)sts__alloc(&f->mem, bytes);
        if (!c) return NULL;
        c->next = f->arena;
        c->size = bytes;
        f->arena = c;
        f->arena_at = (char *)(c + 1);
        f->arena_left = bytes - sizeof(sts__chunk);
    }
    p = f->arena_at;
    if (need >= f->arena_left) f->arena_left = 0;
    else { f->arena_at += need; f->arena_left -= need; }
    return p;
}

/* ---- file lifetime ---- */
STS__PRIVATE sts_file *sts__file_new(const sts__mem *m) {
    sts_file *f = (sts_file *)sts__alloc(m, sizeof *f);
    if (!f) return NULL;
    memset(f, 0, sizeof *f);
    f->mem = *m;
    return f;
}
STSDEF void sts_close(sts_file *f) {
    sts__mem m;
    sts__chunk *c;
    if (!f) return;
    m = f->mem;
    if (f->release) f->release(f);
    sts__free(&m, f->tensors, f->cap * sizeof *f->tensors);
    sts__free(&m, f->meta, f->meta_cap * sizeof *f->meta);
    sts__free(&m, f->meta_info, f->meta_info_cap * sizeof *f->meta_info);
    sts__index_free(&m, &f->index);
    sts__index_free(&m, &f->meta_index);
    for (c = f->arena; c;) { sts__chunk *next = c->next; sts__free(&m, c, c->size); c = next; }
    sts__free(&m, f, sizeof *f);
}

/* ---- rules 1 to 3: the 8-byte prefix against the file size ---- */
STS__PRIVATE uint64_t sts__max_header(const sts_options *o) {
    if (o && o->max_header_size && o->max_header_size < STS_MAX_HEADER_SIZE) return o->max_header_size;
    return STS_MAX_HEADER_SIZE;
}
STS__PRIVATE sts_result sts__check_prefix(const uint8_t *prefix, uint64_t file_size, const sts_options *o,
                                          uint64_t *n, sts_error *err) {
    uint64_t hn, max = sts__max_header(o);
    if (file_size < 8)
        return sts__fail(err, STS_RULE_FILE_TOO_SMALL, 0,
                         "the file has %U bytes; the header length alone needs 8", file_size);
    hn = sts__le64(prefix);
    if (hn > max)  /* checked before the file size, as the reference does */
        return sts__fail(err, STS_RULE_HEADER_TOO_LARGE, 0, "header length %U is over the limit of %U bytes", hn, max);
    if (hn > file_size - 8)
        return sts__fail(err, STS_RULE_HEADER_LENGTH, 0,
                         "header length %U runs past the end of the %U-byte file", hn, file_size);
    *n = hn;
    return STS_OK;
}

/* ---- the schema-aware parse ---- */
#define STS__SHAPE_CACHE 64     /* distinct shapes remembered while parsing (direct-mapped) */
typedef struct sts__parser {
    sts__json j;
    sts_file *f;
    int strict;
    int meta_seen;
    char field[72];         /* unescaped field keys and dtype values */
    const uint8_t *last_end;  /* fast path: the previous entry's end offset as text ... */
    size_t last_end_len;
    uint64_t last_end_val;    /* ... and its value (writer order: it is the next begin) */
    uint64_t dt_word, dt_mask; /* fast path: the previous dtype's name and closing quote (a word) */
    size_t dt_len;             /* ... its length (0: none yet) */
    sts_dtype dt;
    uint64_t *dims;           /* the shape being parsed: dims_local, or a heap block past 16 dims */
    size_t ndims, dims_cap;
    uint64_t dims_local[16];
    struct { const uint64_t *dims; size_t rank; } shapes[STS__SHAPE_CACHE];  /* stored in the arena */
    size_t dup_at, dup_was;   /* strict mode: the first repeated tensor name (entries), reported later */
    size_t dead;              /* entries a later one of the same name replaced */
} sts__parser;

enum { STS__F_DTYPE = 1, STS__F_SHAPE = 2, STS__F_OFFSETS = 4 };

/* A name the header held without escapes: it lies in the header bytes, between its quotes, so
   those bytes (name - 1 .. name + len + 1) are already its JSON string. */
STS__PRIVATE int sts__name_raw(const sts_file *f, const sts_tensor *t) {
    uintptr_t p = (uintptr_t)t->name, h = (uintptr_t)f->header;
    return p > h && p - h <= f->header_len;
}
/* A tensor's key in the header, for messages: a name without escapes points just past the key's
   opening quote; an unescaped copy in the arena is preceded by the key's offset. */
STS__PRIVATE uint64_t sts__key_off(const sts_file *f, const sts_tensor *t) {
    uint64_t off;
    if (sts__name_raw(f, t)) return 8 + (uint64_t)((uintptr_t)t->name - (uintptr_t)f->header) - 1;
    memcpy(&off, t->name - 8, sizeof off);
    return off;
}
STS__PRIVATE int sts__dim_push(sts__parser *ps, uint64_t v) {
    if (STS__UNLIKELY(ps->ndims == ps->dims_cap)) {
        size_t ncap = ps->dims_cap * 2, bytes;
        uint64_t *nd;
        if (!sts__mulsz(ncap, sizeof *nd, &bytes)) return 0;
        if (ps->dims == ps->dims_local) {
            if (!(nd = (uint64_t *)sts__alloc(&ps->f->mem, bytes))) return 0;
            memcpy(nd, ps->dims, ps->ndims * sizeof *nd);
        } else if (!(nd = (uint64_t *)sts__realloc(&ps->f->mem, ps->dims, ps->dims_cap * sizeof *nd, bytes)))
            return 0;
        ps->dims = nd;
        ps->dims_cap = ncap;
    }
    ps->dims[ps->ndims++] = v;
    return 1;
}
/* The parsed shape (ps->dims) as stored dims: the same pointer for a shape seen before. */
STS__PRIVATE const uint64_t *sts__shape_store(sts__parser *ps) {
    static const uint64_t no_dims[1] = { 0 };
    size_t n = ps->ndims, i, slot;
    uint64_t h = n;
    const uint64_t *was;
    uint64_t *dst;
    if (n == 0) return no_dims;
    for (i = 0; i < n; i++) h = (h ^ ps->dims[i]) * STS__K1;
    slot = (size_t)(h >> 58) % STS__SHAPE_CACHE;
    if (ps->shapes[slot].rank == n) {
        for (i = 0, was = ps->shapes[slot].dims; i < n && was[i] == ps->dims[i]; i++) {}
        if (i == n) return was;
    }
    if (n > ((size_t)-1 >> 4) || !(dst = (uint64_t *)(void *)sts__arena_alloc(ps->f, n * sizeof *dst))) return NULL;
    memcpy(dst, ps->dims, n * sizeof *dst);
    ps->shapes[slot].dims = dst;
    ps->shapes[slot].rank = n;
    return dst;
}

/* A scanned string as (pointer, length), unescaped into the arena when it has escapes. */
STS__PRIVATE sts_result sts__str_value(sts__parser *ps, const sts__str *s, const char **p, size_t *n) {
    char *dst;
    if (!s->esc) { *p = s->p; *n = s->n; return STS_OK; }
    dst = sts__arena_alloc(ps->f, s->n);
    if (!dst) return sts__nomem(ps->j.err, "an unescaped string");
    *n = sts__json_unescape(s->p, s->n, dst);
    *p = dst;
    return STS_OK;
}
/* A top-level key: as sts__str_value, but an unescaped copy is preceded by the key's file offset
   (see sts__key_off). */
STS__PRIVATE sts_result sts__key_value(sts__parser *ps, const sts__str *s, const uint8_t *kat, const char **p,
                                       size_t *n) {
    char *dst;
    uint64_t off;
    if (!s->esc) { *p = s->p; *n = s->n; return STS_OK; }
    dst = sts__arena_alloc(ps->f, 8 + s->n);
    if (!dst) return sts__nomem(ps->j.err, "an unescaped string");
    off = sts__json_off(&ps->j, kat);
    memcpy(dst, &off, sizeof off);
    *n = sts__json_unescape(s->p, s->n, dst + 8);
    *p = dst + 8;
    return STS_OK;
}
/* Which known field a key names (keys compare after unescaping), 0 for unknown. */
STS__PRIVATE int sts__field_id(sts__parser *ps, const sts__str *k) {
    const char *p = k->p;
    size_t n = k->n;
    if (k->esc) {
        if (n > sizeof ps->field) return 0;  /* at most 6 raw bytes per character: too long for a field */
        n = sts__json_unescape(p, n, ps->field);
        p = ps->field;
    }
    if (n == 5 && memcmp(p, "dtype", 5) == 0) return STS__F_DTYPE;
    if (n == 5 && memcmp(p, "shape", 5) == 0) return STS__F_SHAPE;
    if (n == 12 && memcmp(p, "data_offsets", 12) == 0) return STS__F_OFFSETS;
    return 0;
}
STS__PRIVATE sts_result sts__parse_dtype(sts__parser *ps, sts_dtype *d) {
    sts__json *j = &ps->j;
    const uint8_t *at = j->p;
    const char *p;
    size_t n;
    sts__str s;
    sts_result r;
    if (j->p >= j->end || *j->p != '"')
        return sts__json_fail(j, STS_RULE_DTYPE, at, "dtype must be a string, found %s", sts__json_what(j));
    if ((r = sts__json_string(j, &s)) != STS_OK) return r;
    p = s.p;
    n = s.n;
    if (s.esc && n <= sizeof ps->field) { n = sts__json_unescape(p, n, ps->field); p = ps->field; }
    if (s.esc && s.n > sizeof ps->field) n = 0, p = "";  /* too long to be a dtype name */
    if (STS__UNLIKELY(!sts_dtype_from_name(p, n, d)))
        return sts__json_fail(j, STS_RULE_DTYPE, at, "unknown dtype %q (names are exact and case-sensitive)", s.p, s.n);
    return STS_OK;
}
STS__PRIVATE sts_result sts__parse_shape(sts__parser *ps) {
    sts__json *j = &ps->j;
    sts_result r;
    ps->ndims = 0;
    if (j->p >= j->end || *j->p != '[')
        return sts__json_fail(j, STS_RULE_SHAPE, j->p, "shape must be an array, found %s", sts__json_what(j));
    if ((r = sts__json_enter(j)) != STS_OK) return r;
    j->p++;
    sts__json_ws(j);
    if (j->p < j->end && *j->p == ']') j->p++;
    else for (;;) {
        uint64_t v;
        sts__json_ws(j);
        if ((r = sts__json_u64(j, &v, STS_RULE_SHAPE, "shape")) != STS_OK) return r;
        if (!sts__dim_push(ps, v)) return sts__nomem(j->err, "tensor shapes");
        sts__json_ws(j);
        if (STS__LIKELY(j->p < j->end && *j->p == ',')) { j->p++; continue; }
        if (STS__LIKELY(j->p < j->end && *j->p == ']')) { j->p++; break; }
        return sts__json_fail(j, STS_RULE_JSON_SYNTAX, j->p,
                              "expected ',' or ']' in shape, found %s", sts__json_what(j));
    }
    j->depth--;
    return STS_OK;
}
STS__PRIVATE sts_result sts__parse_offsets(sts__parser *ps, uint64_t *begin, uint64_t *end) {
    sts__json *j = &ps->j;
    const uint8_t *at = j->p;
    sts_result r;
    if (j->p >= j->end || *j->p != '[')
        return sts__json_fail(j, STS_RULE_OFFSETS, at, "data_offsets must be an array, found %s", sts__json_what(j));
    if ((r = sts__json_enter(j)) != STS_OK) return r;
    j->p++;
    sts__json_ws(j);
    if (j->p < j->end && *j->p == ']')
        return sts__json_fail(j, STS_RULE_OFFSETS, at, "data_offsets is empty; it needs [begin, end]");
    if ((r = sts__json_u64(j, begin, STS_RULE_OFFSETS, "data_offsets")) != STS_OK) return r;
    sts__json_ws(j);
    if (j->p < j->end && *j->p == ']')
        return sts__json_fail(j, STS_RULE_OFFSETS, at, "data_offsets has 1 element; it needs [begin, end]");
    if ((r = sts__json_expect(j, ',', "','")) != STS_OK) return r;
    sts__json_ws(j);
    if ((r = sts__json_u64(j, end, STS_RULE_OFFSETS, "data_offsets")) != STS_OK) return r;
    sts__json_ws(j);
    if (j->p < j->end && *j->p == ',')
        return sts__json_fail(j, STS_RULE_OFFSETS, at, "data_offsets has more than 2 elements; it needs [begin, end]");
    if ((r = sts__json_expect(j, ']', "']'")) != STS_OK) return r;
    j->depth--;
    return STS_OK;
}
/* The number of leading decimal digits in a little-endian word (8 when all are): a byte's
   borrow or carry reaches only the bytes above a non-digit, so the lowest flag is exact. */
STS__INLINE size_t sts__digits8(uint64_t w) {
    uint64_t m = ((w - 0x3030303030303030ull) | (w + 0x4646464646464646ull)) & 0x8080808080808080ull;
    size_t k;
    if (!m) return 8;
#if defined(__GNUC__) || defined(__clang__)
    k = (size_t)__builtin_ctzll(m) >> 3;
#else
    for (k = 0; !(m >> (8 * k) & 0x80); k++) {}
#endif
    return k;
}
/* The value of k leading ASCII digits (1 <= k <= 8) of a little-endian word: the digits moved to
   the top (the zero bytes below read as leading zeros), then pairs, quads and octets combined. */
STS__INLINE uint64_t sts__swar8(uint64_t w, size_t k) {
    uint64_t d;
    w <<= 8 * (8 - k);
    d = (w & 0x0F0F0F0F0F0F0F0Full) * 2561 >> 8;
    d = (d & 0x00FF00FF00FF00FFull) * 6553601 >> 16;
    return (d & 0x0000FFFF0000FFFFull) * 42949672960001ull >> 32;
}
/* Up to 19 digits (no overflow possible), no leading zero, followed by ',' or ']' (p[n]); 0
   digits on any other form, which the general path then reports exactly. Numbers of 8 digits
   or more, and the last bytes of the header, come here from sts__fast_u64. */
STS__PRIVATE size_t sts__fast_u64_long(const uint8_t *p, const uint8_t *end, uint64_t *v) {
    static const uint64_t pow10[9] = { 1, 10, 100, 1000, 10000, 100000, 1000000, 10000000, 100000000 };
    uint64_t x = 0;
    size_t n = 0;
    int big;
    while (end - (p + n) >= 8) {  /* eight bytes a step, as a little-endian word (any host) */
        uint64_t w = sts__le64(p + n);
        size_t k = sts__digits8(w);
        if (k == 0) break;
        if (n + k > 19) return 0;
        x = x * pow10[k] + sts__swar8(w, k);
        n += k;
        if (k < 8) goto done;
    }
    {   /* the last bytes of the header, one at a time */
        uint64_t y;
        size_t r = sts__dec_u64(p + n, end, &y, &big);
        if (n + r > 19) return 0;
        x = x * pow10[r < 9 ? r : 0] + y;
        if (r > 8) return 0;
        n += r;
    }
done:
    if (n == 0 || p + n >= end || (p[n] != ',' && p[n] != ']') || (p[0] == '0' && n > 1)) return 0;
    *v = x;
    return n;
}
/* The same contract, inline: a number of up to 7 digits (most dims) is one word's work, one of
   8 to 15 (offsets into files of 10 MB to 1 PB) two words'. */
STS__INLINE size_t sts__fast_u64(const uint8_t *p, const uint8_t *end, uint64_t *v) {
    static const uint64_t pow10[8] = { 1, 10, 100, 1000, 10000, 100000, 1000000, 10000000 };
    if (STS__LIKELY(end - p > 16)) {
        uint64_t w = sts__le64(p), w2;
        size_t k = sts__digits8(w), k2;
        if (k < 8) {
            if (k == 0 || (p[k] != ',' && p[k] != ']') || (p[0] == '0' && k > 1)) return 0;
            *v = sts__swar8(w, k);
            return k;
        }
        w2 = sts__le64(p + 8);
        k2 = sts__digits8(w2);
        if (k2 < 8) {
            if ((p[8 + k2] != ',' && p[8 + k2] != ']') || p[0] == '0') return 0;
            *v = sts__swar8(w, 8) * pow10[k2] + (k2 ? sts__swar8(w2, k2) : 0);
            return 8 + k2;
        }
    }
    return sts__fast_u64_long(p, end, v);
}
/* Whether n bytes at a and at b are equal, for a few bytes (a number's text): word compares. */
STS__INLINE int sts__eq_short(const uint8_t *a, const uint8_t *b, size_t n) {
    size_t i = 0;
    for (; i + 8 <= n; i += 8)
        if (sts__le64(a + i) != sts__le64(b + i)) return 0;
    for (; i < n; i++)
        if (a[i] != b[i]) return 0;
    return 1;
}
/* Whether the n bytes at p (readable) are the literal lit, 8 <= n <= 24: three word compares,
   which fold to constants (a call to memcmp cost more than the compare). */
#define STS__LIT_EQ(p, lit) sts__lit_eq((p), (lit), sizeof(lit) - 1)
STS__INLINE int sts__lit_eq(const uint8_t *p, const char *lit, size_t n) {
    uint64_t a, b, c, d, e = 0, f = 0;
    memcpy(&a, p, 8); memcpy(&b, p + n - 8, 8);
    memcpy(&c, lit, 8); memcpy(&d, lit + n - 8, 8);
    if (n > 16) { memcpy(&e, p + 8, 8); memcpy(&f, lit + 8, 8); }
    return ((a ^ c) | (b ^ d) | (e ^ f)) == 0;
}
/* The writer's exact entry bytes, {"dtype":"X","shape":[..],"data_offsets":[b,e]}, with a local
   cursor. Returns 1 and fills the outputs (the dims in ps->dims), or 0 having moved nothing, in
   which case the general path parses the same bytes and reports any problem; -1 when the dims
   cannot grow (NOMEM, as the general path would say: an allocation that failed is never retried
   behind the caller's allocator). */
STS__PRIVATE int sts__parse_entry_fast(sts__parser *ps, sts_dtype *dtype, uint64_t *begin, uint64_t *end) {
    sts__json *j = &ps->j;
    const uint8_t *p = j->p, *e = j->end, *q;
    size_t n;
    uint64_t v;
    if (j->depth + 2 > j->max_depth || e - p < 48 || !STS__LIT_EQ(p, "{\"dtype\":\"")) return 0;
    p += 10;
    if (ps->dt_len && ((sts__le64(p) ^ ps->dt_word) & ps->dt_mask) == 0) {  /* the previous entry's dtype */
        *dtype = ps->dt;
        q = p + ps->dt_len;
    } else {
        for (q = p; q < p + 13 && *q != '"'; q++) {}  /* e - p >= 38 here; a name with escapes matches no dtype */
        if (*q != '"' || !sts_dtype_from_name((const char *)p, (size_t)(q - p), dtype)) return 0;
        if (q - p < 8) {  /* every dtype name: it and its quote fit a word */
            ps->dt_len = (size_t)(q - p);
            ps->dt_mask = ~(uint64_t)0 >> (8 * (7 - ps->dt_len));
            ps->dt_word = sts__le64(p) & ps->dt_mask;
            ps->dt = *dtype;
        }
    }
    p = q + 1;
    if (e - p < 11 || !STS__LIT_EQ(p, ",\"shape\":[")) return 0;
    p += 10;
    ps->ndims = 0;
    if (*p == ']') p++;
    else for (;;) {
        uint8_t stop;
        if (!(n = sts__fast_u64(p, e, &v))) return 0;
        stop = p[n];
        if (STS__LIKELY(ps->ndims < ps->dims_cap)) ps->dims[ps->ndims++] = v;
        else if (!sts__dim_push(ps, v)) return -1;
        p += n + 1;
        if (stop == ']') break;
    }
    if (e - p < 19 || !STS__LIT_EQ(p, ",\"data_offsets\":[")) return 0;
    p += 17;
    if (ps->last_end && ps->last_end_len < (size_t)(e - p) && sts__eq_short(p, ps->last_end, ps->last_end_len) &&
        p[ps->last_end_len] == ',') {
        *begin = ps->last_end_val;  /* writer order: this begin is the previous end, byte for byte */
        p += ps->last_end_len + 1;
    } else {
        if (!(n = sts__fast_u64(p, e, begin)) || p[n] != ',') return 0;
        p += n + 1;
    }
    if (!(n = sts__fast_u64(p, e, end)) || p[n] != ']') return 0;
    if (e - (p + n) < 2 || p[n + 1] != '}') return 0;
    ps->last_end = p;
    ps->last_end_len = n;
    ps->last_end_val = *end;
    j->p = p + n + 2;
    return 1;
}
/* The tensor names as items of the index. */
STS__PRIVATE sts__names sts__tensor_names(const sts_file *f) {
    sts__names k;
    k.items = f->tensors; k.stride = sizeof(sts_tensor);
    k.ptr_off = offsetof(sts_tensor, name); k.len_off = offsetof(sts_tensor, name_len);
    k.hashes = NULL; k.hash_stride = 0;
    return k;
}
#define STS__PROJECT_AT 1024  /* entries parsed before the table and the index are sized from them */
/* Room for one more tensor. The table is sized to the count the header's length projects from
   the bytes parsed so far, so a header of uniform entries fills it once; the index is moved to
   that count with it, while it holds few names (see sts__parse_core). */
STS__PRIVATE int sts__tensor_room(sts__parser *ps) {
    sts_file *f = ps->f;
    size_t used = (size_t)(ps->j.p - ps->j.base), want, bytes, items;
    sts_tensor *nt;
    if (f->count < f->cap) return 1;
    want = f->count + f->count / 16 + 16;
    if (used && f->count < ((size_t)-1 >> 8) && (size_t)f->header_len / used < 256) {
        size_t projected = (size_t)((uint64_t)f->count * f->header_len / used);
        if (projected + projected / 32 + 16 > want) want = projected + projected / 32 + 16;
    }
    if (!sts__mulsz(want, sizeof *nt, &bytes)) return 0;
    if (!(nt = (sts_tensor *)sts__realloc(&f->mem, f->tensors, f->cap * sizeof *nt, bytes))) return 0;
    f->tensors = nt;
    f->cap = want;
    /* the index, whose size doubles: for the projection when the entries are clearly shorter than
       a checkpoint's (under 93 bytes), else for the lower estimate, a checkpoint's 140 bytes */
    items = used && (uint64_t)used < (uint64_t)f->count * 93 ? want : (size_t)(f->header_len / 140) + 16;
    if (items > want) items = want;
    if (items > sts__index_room(&f->index)) {
        sts__names k = sts__tensor_names(f);
        if (!sts__index_resize_tagged(&f->mem, &f->index, &k, f->seed, items)) return 0;
    }
    return 1;
}
/* Indexes the newest tensor, in header order: a repeated name replaces the earlier entry, which
   is marked dead (the reference's map keeps the last); strict mode reports the first repeat once
   the JSON is known to be well-formed. */
STS__PRIVATE int sts__index_newest(sts__parser *ps, uint64_t h) {
    sts_file *f = ps->f;
    size_t i = f->count - 1, pos;
    uint32_t was;
    sts__names k = sts__tensor_names(f);
    const sts_tensor *t = &f->tensors[i];
    if (STS__UNLIKELY(f->count > sts__index_room(&f->index)) &&
        !sts__index_resize_tagged(&f->mem, &f->index, &k, f->seed, f->count + f->count / 2))
        return 0;
    pos = sts__index_probe(&f->index, &k, h, t->name, t->name_len);
    was = sts__index_item(&f->index, pos);
    if (STS__UNLIKELY(was != STS__EMPTY)) {
        if (ps->dup_at == (size_t)-1) { ps->dup_at = i; ps->dup_was = was; }
        f->tensors[was].dtype = STS_DTYPE_COUNT;  /* the earlier entry vanishes */
        ps->dead++;
    }
    sts__index_put(&f->index, pos, (uint32_t)i, h);
    return 1;
}
/* One tensor entry, object or positional array; appends it to the file's table and the index
   (h: the name's hash, whose home slot the caller prefetched). */
STS__PRIVATE sts_result sts__parse_entry(sts__parser *ps, const char *name, size_t name_len, uint64_t h) {
    sts__json *j = &ps->j;
    sts_file *f = ps->f;
    sts_tensor *t;
    sts_result r;
    sts_dtype dtype = STS_DTYPE_COUNT;
    const uint64_t *dims;
    uint64_t begin = 0, end = 0;
    int have = 0;
    const uint8_t *open = j->p;
    ps->ndims = 0;
    {
        int fast = sts__parse_entry_fast(ps, &dtype, &begin, &end);
        if (STS__LIKELY(fast > 0)) goto add;
        if (fast < 0) return sts__nomem(j->err, "tensor shapes");
    }
    if (j->p >= j->end || (*j->p != '{' && *j->p != '['))
        return sts__json_fail(j, STS_RULE_ENTRY_TYPE, j->p,
                              "a tensor entry must be an object, found %s", sts__json_what(j));
    if ((r = sts__json_enter(j)) != STS_OK) return r;
    if (*j->p == '[') {  /* positional form [dtype, shape, data_offsets] */
        if (ps->strict)
            return sts__json_fail(j, STS_RULE_STRICT_POSITIONAL, open, "positional (array) tensor entry");
        j->p++;
        sts__json_ws(j);
        if (j->p < j->end && *j->p == ']') goto arity;
        if ((r = sts__parse_dtype(ps, &dtype)) != STS_OK) return r;
        sts__json_ws(j);
        if (j->p < j->end && *j->p == ']') goto arity;
        if ((r = sts__json_expect(j, ',', "','")) != STS_OK) return r;
        sts__json_ws(j);
        if ((r = sts__parse_shape(ps)) != STS_OK) return r;
        sts__json_ws(j);
        if (j->p < j->end && *j->p == ']') goto arity;
        if ((r = sts__json_expect(j, ',', "','")) != STS_OK) return r;
        sts__json_ws(j);
        if ((r = sts__parse_offsets(ps, &begin, &end)) != STS_OK) return r;
        sts__json_ws(j);
        if (j->p < j->end && *j->p == ',') goto arity;
        if ((r = sts__json_expect(j, ']', "']'")) != STS_OK) return r;
        have = STS__F_DTYPE | STS__F_SHAPE | STS__F_OFFSETS;
    } else {
        j->p++;
        sts__json_ws(j);
        if (j->p < j->end && *j->p == '}') j->p++;
        else for (;;) {
            sts__str k;
            int id;
            const uint8_t *kat = j->p;
            if (STS__UNLIKELY(j->p >= j->end || *j->p != '"'))
                return sts__json_fail(j, STS_RULE_JSON_SYNTAX, j->p,
                                      "expected a field name, found %s", sts__json_what(j));
            if ((r = sts__json_string(j, &k)) != STS_OK) return r;
            if (STS__LIKELY(j->p < j->end && *j->p == ':')) j->p++;
            else if ((r = sts__json_expect(j, ':', "':'")) != STS_OK) return r;
            sts__json_ws(j);
            id = sts__field_id(ps, &k);
            if (STS__UNLIKELY(have & id))
                return sts__json_fail(j, STS_RULE_FIELD_TWICE, kat, "field %q appears twice", k.p, k.n);
            have |= id;
            switch (id) {
            case STS__F_DTYPE: r = sts__parse_dtype(ps, &dtype); break;
            case STS__F_SHAPE: r = sts__parse_shape(ps); break;
            case STS__F_OFFSETS: r = sts__parse_offsets(ps, &begin, &end); break;
            default:
                if (ps->strict) return sts__json_fail(j, STS_RULE_STRICT_UNKNOWN, kat, "unknown field %q", k.p, k.n);
                r = sts__json_skip(j);  /* ignored, but still checked and counted toward depth */
                break;
            }
            if (r != STS_OK) return r;
            sts__json_ws(j);
            if (STS__LIKELY(j->p < j->end && *j->p == ',')) { j->p++; sts__json_ws(j); continue; }
            if (STS__LIKELY(j->p < j->end && *j->p == '}')) { j->p++; break; }
            return sts__json_fail(j, STS_RULE_JSON_SYNTAX, j->p,
                                  "expected ',' or '}' in a tensor entry, found %s", sts__json_what(j));
        }
        if (STS__UNLIKELY(have != (STS__F_DTYPE | STS__F_SHAPE | STS__F_OFFSETS)))
            return sts__json_fail(j, STS_RULE_FIELD_MISSING, open, "missing field %s",
                                  !(have & STS__F_DTYPE) ? "\"dtype\""
                                  : !(have & STS__F_SHAPE) ? "\"shape\"" : "\"data_offsets\"");
    }
    j->depth--;
add:
    if (STS__UNLIKELY(ps->ndims > 0xffffffffu)) return sts__nomem(j->err, "tensor shapes");
    if (!(dims = sts__shape_store(ps))) return sts__nomem(j->err, "tensor shapes");
    if (STS__UNLIKELY(f->count == f->cap) && !sts__tensor_room(ps)) return sts__nomem(j->err, "the tensor table");
    t = &f->tensors[f->count++];
    t->name = name;
    t->name_len = name_len;
    t->dtype = dtype;
    t->rank = (uint32_t)ps->ndims;
    t->shape = dims;
    t->begin = begin;
    t->end = end;
    if (!sts__index_newest(ps, h)) { f->count--; return sts__nomem(j->err, "the tensor index"); }
    return STS_OK;
arity:
    return sts__json_fail(j, STS_RULE_ENTRY_TYPE, open,
                          "a positional tensor entry must have exactly 3 elements [dtype, shape, data_offsets]");
}
STS__PRIVATE sts_result sts__parse_metadata(sts__parser *ps, const uint8_t *key_at) {
    sts__json *j = &ps->j;
    sts_file *f = ps->f;
    sts_result r;
    if (ps->meta_seen) return sts__json_fail(j, STS_RULE_METADATA_TWICE, key_at, "__metadata__ appears twice");
    ps->meta_seen = 1;
    if (j->p < j->end && *j->p == 'n' && j->end - j->p >= 4 && memcmp(j->p, "null", 4) == 0) {
        if (ps->strict) return sts__json_fail(j, STS_RULE_STRICT_META_NULL, j->p, "__metadata__ is null");
        j->p += 4;  /* null means absent */
        return STS_OK;
    }
    if (j->p >= j->end || *j->p != '{')
        return sts__json_fail(j, STS_RULE_METADATA_TYPE, j->p,
                              "__metadata__ must be an object or null, found %s", sts__json_what(j));
    if ((r = sts__json_enter(j)) != STS_OK) return r;
    j->p++;
    f->has_meta = 1;
    sts__json_ws(j);
    if (j->p < j->end && *j->p == '}') { j->p++; j->depth--; return STS_OK; }
    for (;;) {
        sts__str k, v;
        const uint8_t *kat = j->p;
        sts_kv *kv;
        if (j->p >= j->end || *j->p != '"')
            return sts__json_fail(j, STS_RULE_JSON_SYNTAX, j->p,
                                  "expected a string key in __metadata__, found %s", sts__json_what(j));
        if ((r = sts__json_string(j, &k)) != STS_OK) return r;
        if ((r = sts__json_expect(j, ':', "':'")) != STS_OK) return r;
        sts__json_ws(j);
        if (j->p >= j->end || *j->p != '"')
            return sts__json_fail(j, STS_RULE_METADATA_VALUE, j->p,
                                  "__metadata__ value of %q must be a string, found %s", k.p, k.n, sts__json_what(j));
        if ((r = sts__json_string(j, &v)) != STS_OK) return r;
        if ((f->meta_count == f->meta_cap &&
             !sts__grow(&f->mem, (void **)&f->meta, &f->meta_cap, f->meta_count + 1, sizeof *f->meta)) ||
            (f->meta_count == f->meta_info_cap &&
             !sts__grow(&f->mem, (void **)&f->meta_info, &f->meta_info_cap, f->meta_count + 1, sizeof *f->meta_info)))
            return sts__nomem(j->err, "the metadata table");
        kv = &f->meta[f->meta_count];
        if ((r = sts__str_value(ps, &k, &kv->key, &kv->key_len)) != STS_OK) return r;
        if ((r = sts__str_value(ps, &v, &kv->value, &kv->value_len)) != STS_OK) return r;
        f->meta_info[f->meta_count].hash = sts__hash(kv->key, kv->key_len, f->seed);
        f->meta_info[f->meta_count].key_off = sts__json_off(j, kat);
        f->meta_info[f->meta_count].dead = 0;
        f->meta_count++;
        sts__json_ws(j);
        if (j->p < j->end && *j->p == ',') { j->p++; sts__json_ws(j); continue; }
        if (j->p < j->end && *j->p == '}') { j->p++; break; }
        return sts__json_fail(j, STS_RULE_JSON_SYNTAX, j->p,
                              "expected ',' or '}' in __metadata__, found %s", sts__json_what(j));
    }
    j->depth--;
    return STS_OK;
}
STS__PRIVATE sts_result sts__parse_json(sts__parser *ps) {
    sts__json *j = &ps->j;
    sts_result r;
    if (ps->strict && j->p < j->end && STS__IS_WS(*j->p))
        return sts__json_fail(j, STS_RULE_STRICT_LEADING_WS, j->p, "whitespace before '{'");
    sts__json_ws(j);
    if (j->p >= j->end) return sts__json_fail(j, STS_RULE_JSON_SYNTAX, j->p, "empty header: expected a JSON object");
    if (*j->p != '{') {
        const char *what = sts__json_what(j);
        if (strcmp(what, "an unexpected character") == 0)
            return sts__json_fail(j, STS_RULE_JSON_SYNTAX, j->p, "expected a JSON object, found byte %x", (int)*j->p);
        return sts__json_fail(j, STS_RULE_HEADER_OBJECT, j->p, "the header must be a JSON object, found %s", what);
    }
    if ((r = sts__json_enter(j)) != STS_OK) return r;
    j->p++;
    sts__json_ws(j);
    if (j->p < j->end && *j->p == '}') j->p++;
    else for (;;) {
        sts__str k;
        const char *name = NULL;
        size_t name_len = 0;
        const uint8_t *kat = j->p;
        if (STS__UNLIKELY(j->p >= j->end || *j->p != '"'))
            return sts__json_fail(j, STS_RULE_JSON_SYNTAX, j->p, "expected a string key, found %s", sts__json_what(j));
        if ((r = sts__json_string(j, &k)) != STS_OK) return r;
        if (STS__LIKELY(j->p < j->end && *j->p == ':')) j->p++;
        else if ((r = sts__json_expect(j, ':', "':'")) != STS_OK) return r;
        sts__json_ws(j);
        if ((r = sts__key_value(ps, &k, kat, &name, &name_len)) != STS_OK) return r;
        if (name_len == 12 && memcmp(name, "__metadata__", 12) == 0) {
            if ((r = sts__parse_metadata(ps, kat)) != STS_OK) return r;
        } else {
            uint64_t h;
            if (ps->strict && k.esc && memchr(name, 0, name_len))
                return sts__json_fail(j, STS_RULE_STRICT_NAME_NUL, kat, "tensor name %q contains NUL", name, name_len);
            j->ctx = name;
            j->ctx_len = name_len;
            h = sts__hash(name, name_len, ps->f->seed);
            STS__PREFETCH_W(&ps->f->index.slots[(size_t)h & ps->f->index.mask]);
            r = sts__parse_entry(ps, name, name_len, h);
            j->ctx = NULL;
            if (r != STS_OK) return r;
        }
        sts__json_ws(j);
        if (STS__LIKELY(j->p < j->end && *j->p == ',')) { j->p++; sts__json_ws(j); continue; }
        if (STS__LIKELY(j->p < j->end && *j->p == '}')) { j->p++; break; }
        return sts__json_fail(j, STS_RULE_JSON_SYNTAX, j->p,
                              "expected ',' or '}' after a tensor entry, found %s", sts__json_what(j));
    }
    j->depth--;
    if (ps->strict) {
        while (j->p < j->end && *j->p == ' ') j->p++;
        if (j->p < j->end && STS__IS_WS(*j->p))
            return sts__json_fail(j, STS_RULE_STRICT_PADDING, j->p,
                                  "padding byte %x; only spaces may follow the object", (int)*j->p);
    } else sts__json_ws(j);
    if (j->p < j->end)
        return sts__json_fail(j, STS_RULE_JSON_SYNTAX, j->p,
                              "unexpected byte %x after the top-level object", (int)*j->p);
    return STS_OK;
}

/* ---- after the JSON: duplicates, order, the reference's checks ---- */
STS__PRIVATE sts__names sts__meta_names(const sts_file *f) {
    sts__names k;
    k.items = f->meta; k.stride = sizeof(sts_kv);
    k.ptr_off = offsetof(sts_kv, key); k.len_off = offsetof(sts_kv, key_len);
    k.hashes = f->meta_info ? (const void *)&f->meta_info[0].hash : NULL; k.hash_stride = sizeof(sts__info);
    return k;
}
STS__PRIVATE int sts__by_offsets(const void *ctx, size_t a, size_t b) {
    const sts_tensor *t = (const sts_tensor *)ctx;
    return t[a].begin < t[b].begin || (t[a].begin == t[b].begin && t[a].end < t[b].end);
}
/* Metadata keys: last one wins (the reference's map), or an error in strict mode. */
STS__PRIVATE sts_result sts__finish_metadata(sts_file *f, int strict, sts_error *err) {
    sts__names k;
    size_t i, o, dups = 0;
    if (f->meta_count == 0) return STS_OK;
    k = sts__meta_names(f);
    if (!sts__index_init(&f->mem, &f->meta_index, f->meta_count)) return sts__nomem(err, "the metadata index");
    for (i = 0; i < f->meta_count; i++) {
        const sts_kv *kv = &f->meta[i];
        size_t pos = sts__index_probe(&f->meta_index, &k, f->meta_info[i].hash, kv->key, kv->key_len);
        uint32_t prev = sts__index_item(&f->meta_index, pos);
        if (prev != STS__EMPTY) {
            if (strict)
                return sts__fail(err, STS_RULE_STRICT_DUPLICATE, f->meta_info[i].key_off,
                                 "__metadata__ key %q appears twice (first at byte %U)", kv->key, kv->key_len,
                                 f->meta_info[prev].key_off);
            f->meta_info[prev].dead = 1;
            dups++;
        }
        sts__index_put(&f->meta_index, pos, (uint32_t)i, f->meta_info[i].hash);
    }
    if (!dups) return STS_OK;
    for (i = o = 0; i < f->meta_count; i++)  /* compact, keeping header order */
        if (!f->meta_info[i].dead) { f->meta[o] = f->meta[i]; f->meta_info[o] = f->meta_info[i]; o++; }
    f->meta_count = o;
    sts__index_free(&f->mem, &f->meta_index);
    if (!sts__index_init(&f->mem, &f->meta_index, o)) return sts__nomem(err, "the metadata index");
    for (i = 0; i < o; i++) {
        size_t pos = sts__index_probe(&f->meta_index, &k, f->meta_info[i].hash, f->meta[i].key, f->meta[i].key_len);
        sts__index_put(&f->meta_index, pos, (uint32_t)i, f->meta_info[i].hash);
    }
    return STS_OK;
}
/* The survivors of repeated names in (begin, end) order, stable; the index follows them. */
STS__PRIVATE sts_result sts__order_tensors(sts_file *f, size_t live, sts_error *err) {
    size_t *idx = NULL, *tmp = NULL, *ord, n = f->count, i, o;
    uint32_t *pos = NULL;
    sts_tensor *nt = NULL;
    size_t bytes_idx, bytes_t, bytes_pos;
    if (!sts__mulsz(live ? live : 1, sizeof(size_t), &bytes_idx) ||
        !sts__mulsz(live ? live : 1, sizeof(sts_tensor), &bytes_t) || !sts__mulsz(n, sizeof(uint32_t), &bytes_pos))
        return sts__nomem(err, "the tensor order");
    idx = (size_t *)sts__alloc(&f->mem, bytes_idx);
    tmp = (size_t *)sts__alloc(&f->mem, bytes_idx);
    pos = (uint32_t *)sts__alloc(&f->mem, bytes_pos);
    nt = (sts_tensor *)sts__alloc(&f->mem, bytes_t);
    if (!idx || !tmp || !pos || !nt) {
        sts__free(&f->mem, idx, bytes_idx); sts__free(&f->mem, tmp, bytes_idx); sts__free(&f->mem, pos, bytes_pos);
        sts__free(&f->mem, nt, bytes_t);
        return sts__nomem(err, "the tensor order");
    }
    for (i = o = 0; i < n; i++) if (f->tensors[i].dtype != STS_DTYPE_COUNT) idx[o++] = i;
    ord = sts__msort(idx, tmp, live, sts__by_offsets, f->tensors);
    for (o = 0; o < live; o++) { nt[o] = f->tensors[ord[o]]; pos[ord[o]] = (uint32_t)o; }
    for (i = 0; i <= f->index.mask; i++) {
        uint32_t s = f->index.slots[i];
        if (s != STS__EMPTY) f->index.slots[i] = (s & f->index.tags) | pos[s & ~f->index.tags];
    }
    sts__free(&f->mem, idx, bytes_idx); sts__free(&f->mem, tmp, bytes_idx); sts__free(&f->mem, pos, bytes_pos);
    sts__free(&f->mem, f->tensors, f->cap * sizeof *f->tensors);
    f->tensors = nt;
    f->count = f->cap = live;
    return STS_OK;
}
/* Tensor names were indexed as parsed, in header order (sts__index_newest). Report a strict
   duplicate, put the survivors in (begin, end) order, give back the table's slack, then make the
   reference's checks in its order. */
STS__PRIVATE sts_result sts__finish_tensors(sts_file *f, const sts__parser *ps, sts_error *err) {
    size_t n = f->count, i;
    int sorted = 1;
    uint64_t cursor, total;
    sts_result r;
    if (STS__UNLIKELY(ps->strict && ps->dup_at != (size_t)-1)) {
        const sts_tensor *t = &f->tensors[ps->dup_at];
        return sts__fail(err, STS_RULE_STRICT_DUPLICATE, sts__key_off(f, t),
                         "tensor name %q appears twice (first at byte %U)", t->name, t->name_len,
                         sts__key_off(f, &f->tensors[ps->dup_was]));
    }
    for (i = 1; i < n && !ps->dead; i++) {
        const sts_tensor *t = &f->tensors[i], *prev = t - 1;
        if (t->begin < prev->begin || (t->begin == prev->begin && t->end < prev->end)) { sorted = 0; break; }
    }
    if (!sorted || ps->dead) {
        if ((r = sts__order_tensors(f, n - ps->dead, err)) != STS_OK) return r;
        n = f->count;
    } else if (f->cap > n) {  /* give back the slack (a refusal is reported, like any other) */
        sts_tensor *nt = (sts_tensor *)sts__realloc(&f->mem, f->tensors, f->cap * sizeof *nt, (n ? n : 1) * sizeof *nt);
        if (!nt) return sts__nomem(err, "the tensor table");
        f->tensors = nt;
        f->cap = n ? n : 1;
    }
    if (f->index.slots && n < sts__index_room(&f->index) / 8) {  /* sized for far more (a long __metadata__) */
        sts__names k = sts__tensor_names(f);
        if (!sts__index_resize_tagged(&f->mem, &f->index, &k, f->seed, n))
            return sts__nomem(err, "the tensor index");
    }
    cursor = 0;
    for (i = 0; i < n; i++) {
        sts_tensor *t = &f->tensors[i];
        const uint64_t *dims = t->shape;
        uint64_t numel = 1, bits, off;
        uint32_t d;
        if (STS__UNLIKELY(t->begin != cursor || t->end < t->begin)) {
            off = sts__key_off(f, t);
            if (t->end < t->begin)
                return sts__fail(err, STS_RULE_OFFSETS_CONTIGUOUS, off,
                                 "tensor %q: data_offsets [%U, %U] end before they begin",
                                 t->name, t->name_len, t->begin, t->end);
            if (i == 0)
                return sts__fail(err, STS_RULE_OFFSETS_CONTIGUOUS, off,
                                 "tensor %q: data_offsets [%U, %U], but the first tensor must begin at 0",
                                 t->name, t->name_len, t->begin, t->end);
            return sts__fail(err, STS_RULE_OFFSETS_CONTIGUOUS, off,
                             "tensor %q: data_offsets [%U, %U] begin at %U, but tensor %q ends at %U (%s)",
                             t->name, t->name_len, t->begin, t->end, t->begin,
                             f->tensors[i - 1].name, f->tensors[i - 1].name_len,
                             cursor, t->begin > cursor ? "a hole" : "an overlap");
        }
        for (d = 0; d < t->rank; d++)
            if (STS__UNLIKELY(!sts__mul64(numel, dims[d], &numel)))
                return sts__fail(err, STS_RULE_NUMEL_OVERFLOW, sts__key_off(f, t),
                                 "tensor %q: the product of shape %S overflows 64 bits at dimension %z",
                                 t->name, t->name_len, dims, (size_t)t->rank, (size_t)d);
        if (STS__UNLIKELY(!sts__mul64(numel, sts__dtype_bits[t->dtype], &bits)))
            return sts__fail(err, STS_RULE_BITS_OVERFLOW, sts__key_off(f, t),
                             "tensor %q: %U elements of %s overflow 64 bits when counted in bits",
                             t->name, t->name_len, numel, sts__dtype_names[t->dtype]);
        if (STS__UNLIKELY(bits % 8))
            return sts__fail(err, STS_RULE_BYTE_ALIGNED, sts__key_off(f, t),
                             "tensor %q: %U elements of %s are %U bits, not a whole number of bytes",
                             t->name, t->name_len, numel, sts__dtype_names[t->dtype], bits);
        if (STS__UNLIKELY(t->end - t->begin != bits / 8))
            return sts__fail(err, STS_RULE_SIZE_MATCH, sts__key_off(f, t),
                             "tensor %q: %s %S needs %U bytes, but data_offsets [%U, %U] hold %U",
                             t->name, t->name_len, sts__dtype_names[t->dtype], dims, (size_t)t->rank, bits / 8,
                             t->begin, t->end, t->end - t->begin);
        cursor = t->end;
    }
    if (!sts__add64(8 + f->header_len, cursor, &total) || total > f->file_size)
        return sts__fail(err, STS_RULE_FILE_SIZE, f->file_size,
                         "the data section needs %U bytes, but the file ends %U bytes after the header (truncated)",
                         cursor, f->file_size - 8 - f->header_len);
    if (total < f->file_size)
        return sts__fail(err, STS_RULE_FILE_SIZE, total,
                         "the data section ends at file byte %U, but the file has %U bytes (trailing bytes)",
                         total, f->file_size);
    return STS_OK;
}
/* Parse and validate f->header (N bytes) against f->file_size. */
STS__PRIVATE sts_result sts__parse_core(sts_file *f, const sts_options *o, sts_error *err) {
    sts__parser ps;
    sts_result r;
    size_t n = (size_t)f->header_len, bad;
    int strict = o && o->strict;
    memset(&ps, 0, sizeof ps);
    ps.j.off0 = 8;
    ps.j.p = ps.j.base = f->header;
    ps.j.end = f->header + n;
    ps.j.err = err;
    ps.j.max_depth = o && o->max_depth && o->max_depth < STS_MAX_DEPTH ? o->max_depth : STS_MAX_DEPTH;
    ps.f = f;
    ps.strict = strict;
    ps.dims = ps.dims_local;
    ps.dims_cap = sizeof ps.dims_local / sizeof ps.dims_local[0];
    ps.dup_at = (size_t)-1;
    f->seed = sts__seed_from(f, o ? o->hash_seed : 0);
    {   /* size the table and the index from the header length (a checkpoint's entries take 120 to
           140 bytes), at most STS__PROJECT_AT entries: past them sts__tensor_room projects the count
           from the bytes parsed, for entries of any size (a dataset's KV shard: 70 to 80 bytes),
           and both grow once, while little is in them. The index, whose size doubles, is sized for
           the lower estimate: it grows once more if the count passes it. */
        size_t guess = n / 120 + 16;
        if (guess > STS__PROJECT_AT) guess = STS__PROJECT_AT;
        if ((f->tensors = (sts_tensor *)sts__alloc(&f->mem, guess * sizeof *f->tensors)) != NULL) f->cap = guess;
        if (!f->tensors) r = sts__nomem(err, "the tensor table");
        else if (!sts__index_init_tagged(&f->mem, &f->index, guess < n / 140 + 16 ? guess : n / 140 + 16))
            r = sts__nomem(err, "the tensor index");
        else r = sts__parse_json(&ps);
    }
    if (ps.dims != ps.dims_local) sts__free(&f->mem, ps.dims, ps.dims_cap * sizeof *ps.dims);
    /* The reference checks the whole header's UTF-8 before the JSON. The parser checks each
       string's bytes (json_string), and its grammar takes no byte >= 0x80 elsewhere: a header that
       parsed is valid UTF-8. On a failure the whole text is checked, and its first bad byte, if
       any, is the verdict, as if it had been checked first (but for a failed allocation: NOMEM). */
    if (r != STS_OK && r != STS_ERR_NOMEM && (bad = sts__utf8_check(f->header, n)) != n)
        return sts__fail(err, STS_RULE_HEADER_UTF8, 8 + (uint64_t)bad,
                         "byte %x at file offset %U is not part of a valid UTF-8 sequence",
                         (int)f->header[bad], 8 + (uint64_t)bad);
    if (r != STS_OK) return r;
    if ((r = sts__finish_metadata(f, strict, err)) != STS_OK) return r;
    return sts__finish_tensors(f, &ps, err);
}
/* Common tail of every entry point: f has its bytes attached; parse or release. */
STS__PRIVATE sts_result sts__finish_open(sts_file *f, const sts_options *o, sts_file **out, sts_error *err) {
    sts_result r = sts__parse_core(f, o, err);
    if (r != STS_OK) { sts_close(f); return r; }
    if (o && o->header_only) f->data = NULL;
    *out = f;
    sts__ok(err);
    return STS_OK;
}

STSDEF sts_result sts_parse(const void *bytes, size_t size, const sts_options *opts, sts_file **out, sts_error *err) {
    sts__mem m = sts__mem_from(opts);
    sts_file *f;
    uint64_t n;
    sts_result r;
    if (!out || (!bytes && size)) return sts__failx(err, STS_RULE_ARGUMENT, "sts_parse needs bytes and out");
    if (!sts__mem_valid(&m)) return sts__failx(err, STS_RULE_ARGUMENT, "the allocator needs all three hooks or none");
    if ((r = sts__check_prefix((const uint8_t *)bytes, size, opts, &n, err)) != STS_OK) return r;
    if (!(f = sts__file_new(&m))) return sts__nomem(err, "the file handle");
    f->header = (const uint8_t *)bytes + 8;
    f->header_len = n;
    f->file_size = size;
    f->data = f->header + n;
    return sts__finish_open(f, opts, out, err);
}
STSDEF sts_result sts_parse_header(const void *prefix, size_t prefix_size, uint64_t file_size, const sts_options *opts,
                                   sts_file **out, sts_error *err) {
    sts__mem m = sts__mem_from(opts);
    sts_file *f;
    uint64_t n;
    sts_result r;
    if (!out || (!prefix && prefix_size))
        return sts__failx(err, STS_RULE_ARGUMENT, "sts_parse_header needs a prefix and out");
    if (!sts__mem_valid(&m)) return sts__failx(err, STS_RULE_ARGUMENT, "the allocator needs all three hooks or none");
    if (file_size >= 8 && prefix_size < 8)
        return sts__failx(err, STS_RULE_ARGUMENT, "the prefix holds %z bytes; at least 8 are needed", prefix_size);
    if ((r = sts__check_prefix((const uint8_t *)prefix, file_size, opts, &n, err)) != STS_OK) return r;
    if (prefix_size - 8 < n)
        return sts__failx(err, STS_RULE_ARGUMENT,
                          "the prefix holds %z bytes but the header needs %U", prefix_size, 8 + n);
    if (!(f = sts__file_new(&m))) return sts__nomem(err, "the file handle");
    f->header = (const uint8_t *)prefix + 8;
    f->header_len = n;
    f->file_size = file_size;
    f->data = NULL;
    return sts__finish_open(f, opts, out, err);
}

/* ---- accessors ---- */
STSDEF size_t sts_count(const sts_file *f) { return f ? f->count : 0; }
STSDEF const sts_tensor *sts_at(const sts_file *f, size_t i) { return f && i < f->count ? &f->tensors[i] : NULL; }
STSDEF const sts_tensor *sts_find(const sts_file *f, const char *name, size_t name_len) {
    sts__names k;
    uint32_t it;
    if (!f || f->count == 0 || (!name && name_len)) return NULL;
    k = sts__tensor_names(f);
    it = sts__index_item(&f->index,
                         sts__index_probe(&f->index, &k, sts__hash(name, name_len, f->seed), name, name_len));
    return it == STS__EMPTY ? NULL : &f->tensors[it];
}
STSDEF const void *sts_data(const sts_file *f, const sts_tensor *t) {
    if (!f || !t || !f->data) return NULL;
    return f->data + t->begin;
}
STSDEF uint64_t sts_tensor_nbytes(const sts_tensor *t) { return t ? t->end - t->begin : 0; }
STSDEF uint64_t sts_tensor_numel(const sts_tensor *t) {
    uint64_t n = 1;
    uint32_t i;
    if (!t) return 0;
    for (i = 0; i < t->rank; i++) n *= t->shape[i];  /* validated: cannot overflow */
    return n;
}
STSDEF uint64_t sts_tensor_file_offset(const sts_file *f, const sts_tensor *t) {
    return f && t ? 8 + f->header_len + t->begin : 0;
}
STSDEF uint64_t sts_header_size(const sts_file *f) { return f ? f->header_len : 0; }
STSDEF uint64_t sts_file_size(const sts_file *f) { return f ? f->file_size : 0; }
STSDEF int sts_has_metadata(const sts_file *f) { return f ? f->has_meta : 0; }
STSDEF size_t sts_metadata_count(const sts_file *f) { return f ? f->meta_count : 0; }
STSDEF const sts_kv *sts_metadata_at(const sts_file *f, size_t i) {
    return f && i < f->meta_count ? &f->meta[i] : NULL;
}
STSDEF const sts_kv *sts_metadata_find(const sts_file *f, const char *key, size_t key_len) {
    sts__names k;
    uint32_t it;
    if (!f || f->meta_count == 0 || (!key && key_len)) return NULL;
    k = sts__meta_names(f);
    it = sts__index_item(&f->meta_index,
                         sts__index_probe(&f->meta_index, &k, sts__hash(key, key_len, f->seed), key, key_len));
    return it == STS__EMPTY ? NULL : &f->meta[it];
}

/* ==============================================================================================
   >>io  5. io
   Owns: opening a file from a user pread-style source, from a path by mmap (with a read-into-
   memory fallback), or header-only (exactly 8 + N bytes read); the header reader of scans (one
   guessed pread per file, shared buffers, a repeated header parsed once); the fd sink; atomic
   publication of a file (temporary in the same folder, fsync, rename, fsync of the folder);
   random bytes for temporary names; errno names for messages; the threads: the task writers'
   write-behind thread and the jobs run at once (sts__par_run).
   May call: util, header.
   ============================================================================================== */
STS__PRIVATE void sts__release_heap(sts_file *f) {
    sts__free(&f->mem, f->owned, f->owned_size);
    f->owned = NULL;
}
STSDEF sts_result sts_open_source(const sts_source *src, const sts_options *opts, sts_file **out, sts_error *err) {
    sts__mem m = sts__mem_from(opts);
    uint8_t prefix[8];
    uint64_t n;
    sts_file *f;
    sts_result r;
    if (!src || !src->read || !out)
        return sts__failx(err, STS_RULE_ARGUMENT, "sts_open_source needs a source with read, and out");
    if (!sts__mem_valid(&m)) return sts__failx(err, STS_RULE_ARGUMENT, "the allocator needs all three hooks or none");
    if (src->size >= 8 && (r = src->read(src->user, 0, prefix, 8)) != STS_OK)
        return sts__fail_code(err, r, STS_RULE_IO, 0, "the source failed reading the header length (%s)",
                              sts_result_name(r));
    if ((r = sts__check_prefix(prefix, src->size, opts, &n, err)) != STS_OK) return r;
    if (!(f = sts__file_new(&m))) return sts__nomem(err, "the file handle");
    if (!(f->owned = sts__alloc(&m, (size_t)n))) { sts_close(f); return sts__nomem(err, "the header buffer"); }
    f->owned_size = (size_t)n;
    f->release = sts__release_heap;
    if (n && (r = src->read(src->user, 8, f->owned, (size_t)n)) != STS_OK) {
        sts_close(f);
        return sts__fail_code(err, r, STS_RULE_IO, 8, "the source failed reading the %U-byte header (%s)", n,
                              sts_result_name(r));
    }
    f->header = (const uint8_t *)f->owned;
    f->header_len = n;
    f->file_size = src->size;
    f->data = NULL;
    return sts__finish_open(f, opts, out, err);
}

#ifndef STS_NO_STDIO
#include <errno.h>
#include <stdio.h>   /* rename */
#include <fcntl.h>
#include <unistd.h>
#include <time.h>
#include <signal.h>  /* kill(pid, 0): does a lock's process live */
#include <sys/stat.h>
#include <sys/types.h>
#ifndef STS_NO_MMAP
#include <sys/mman.h>
#endif
#ifndef O_CLOEXEC
#define O_CLOEXEC 0
#endif

/* errno as "ENOSPC (no space left on device)": thread-safe, unlike strerror. */
STS__PRIVATE const char *sts__errno_name(int e) {
    switch (e) {
    case ENOENT: return "ENOENT (no such file or directory)";
    case EACCES: return "EACCES (permission denied)";
    case EPERM: return "EPERM (operation not permitted)";
    case EEXIST: return "EEXIST (file exists)";
    case EISDIR: return "EISDIR (is a directory)";
    case ENOTDIR: return "ENOTDIR (not a directory)";
    case ENOSPC: return "ENOSPC (no space left on device)";
    case EIO: return "EIO (input/output error)";
    case EROFS: return "EROFS (read-only file system)";
    case EMFILE: return "EMFILE (too many open files)";
    case ENFILE: return "ENFILE (too many open files in system)";
    case ENOMEM: return "ENOMEM (out of memory)";
    case EINVAL: return "EINVAL (invalid argument)";
    case EFBIG: return "EFBIG (file too large)";
    case ENAMETOOLONG: return "ENAMETOOLONG (file name too long)";
    case EXDEV: return "EXDEV (cross-device link)";
    case ENOTEMPTY: return "ENOTEMPTY (directory not empty)";
#ifdef EDQUOT
    case EDQUOT: return "EDQUOT (disk quota exceeded)";
#endif
    default: return "an operating-system error";
    }
}
STS__PRIVATE sts_result sts__fail_errno_f(sts_error *err, int e, const char *what, const char *path) {
    return sts__failx_f(err, STS_RULE_IO, "%s %q failed: %s (errno %d)", what, path, path ? strlen(path) : (size_t)0,
                        sts__errno_name(e), e);
}
#define sts__fail_errno(err, e, what, path) sts__err(sts__fail_errno_f((err), (e), (what), (path)))  /* see sts__err */
/* A durable publication whose final folder fsync failed: the new files are in place already. */
STS__PRIVATE sts_result sts__fail_durable_f(sts_error *err, int e, const char *path) {
    return sts__failx_f(err, STS_RULE_DURABLE, "fsync the folder of %q failed: %s (errno %d); the new files are in "
                        "place (published) but may not survive a crash", path, strlen(path), sts__errno_name(e), e);
}
#define sts__fail_durable(err, e, path) sts__err(sts__fail_durable_f((err), (e), (path)))  /* see sts__err */
/* Read exactly len bytes at off; 0 on success, else an errno (EIO when the file ended early). */
STS__PRIVATE int sts__pread_all(int fd, void *dst, uint64_t len, uint64_t off) {
    uint8_t *p = (uint8_t *)dst;
    while (len) {
        size_t chunk = len > ((size_t)1 << 30) ? ((size_t)1 << 30) : (size_t)len;
        ssize_t got = pread(fd, p, chunk, (off_t)off);
        if (got < 0) { if (errno == EINTR) continue; return errno; }
        if (got == 0) return EIO;  /* the file shrank under us */
        p += got; off += (uint64_t)got; len -= (uint64_t)got;
    }
    return 0;
}
STS__PRIVATE int sts__write_all(const sts__mem *m, int fd, const void *src, size_t len) {
    const uint8_t *p = (const uint8_t *)src;
    while (len) {
        size_t chunk = len > ((size_t)1 << 30) ? ((size_t)1 << 30) : len;
        ssize_t put;
        int e = sts__fault(m, "write");
        if (e) return e;
        put = write(fd, p, chunk);
        if (put < 0) { if (errno == EINTR) continue; return errno; }
        if (put == 0) return EIO;
        p += put; len -= (size_t)put;
    }
    return 0;
}
/* ---- files and folders ----
   The primitives the later layers use instead of system calls: paths, stat, remove, rename and
   link (hooked like every write-side call), mkdir -p, folder listings, whole files read or mapped,
   and memory hints. Files are opened without blocking and only regular files are read: a FIFO or
   a device among a dataset's files is refused with a message, never waited on. */
#include <dirent.h>

/* dir + "/" + name into p, which holds sts__join_size(dir, name) bytes (NUL included). */
STS__PRIVATE size_t sts__join_size(const char *dir, const char *name) {
    size_t dl = strlen(dir);
    while (dl > 1 && dir[dl - 1] == '/') dl--;
    return dl + 1 + strlen(name) + 1;
}
STS__PRIVATE void sts__join_at(char *p, const char *dir, const char *name) {
    size_t dl = strlen(dir);
    while (dl > 1 && dir[dl - 1] == '/') dl--;
    memcpy(p, dir, dl);
    p[dl] = '/';
    memcpy(p + dl + 1, name, strlen(name) + 1);
}
/* dir + "/" + name, allocated (*size bytes, NUL included); NULL when out of memory. */
STS__PRIVATE char *sts__join(const sts__mem *m, const char *dir, const char *name, size_t *size) {
    char *p;
    *size = sts__join_size(dir, name);
    if (!(p = (char *)sts__alloc(m, *size))) return NULL;
    sts__join_at(p, dir, name);
    return p;
}
/* Python's os.path.abspath: path joined to the working folder when relative, then normalised
   lexically (empty and "." parts dropped, ".." taking back the part before it, nothing past the
   root; exactly two leading slashes kept, as POSIX allows). Allocated (*size bytes, NUL included);
   NULL with *err_no (ENOMEM, or getcwd's errno). */
STS__PRIVATE char *sts__abspath(const sts__mem *m, const char *path, size_t *size, int *err_no) {
    char *cwd = NULL, *out, *p;
    size_t cap = 256, cl = 0, pl = strlen(path), n = 0, i, lead;
    *err_no = 0;
    if (path[0] != '/') {
        for (;;) {
            if (!(cwd = (char *)sts__alloc(m, cap))) { *err_no = ENOMEM; return NULL; }
            if (getcwd(cwd, cap)) break;
            *err_no = errno ? errno : EIO;
            sts__free(m, cwd, cap);
            cwd = NULL;
            if (*err_no != ERANGE || cap > ((size_t)1 << 20)) return NULL;
            cap *= 2;
        }
        cl = strlen(cwd);
    }
    *size = cl + 1 + pl + 1;
    if (!(out = (char *)sts__alloc(m, *size))) {
        sts__free(m, cwd, cap);
        *err_no = ENOMEM;
        return NULL;
    }
    /* the joined text, normalised in place into out: p walks it, parts are appended after a '/' */
    p = out;
    if (cwd) memcpy(p, cwd, cl);
    p[cl] = '/';
    memcpy(p + cl + 1, path, pl + 1);
    if (!cwd) memmove(p, p + 1, pl + 1);  /* absolute: no working folder, no joining slash */
    sts__free(m, cwd, cap);
    lead = p[0] == '/' && p[1] == '/' && p[2] != '/' ? 2 : 1;
    i = 0;
    n = lead;
    while (p[i]) {
        size_t s, len;
        while (p[i] == '/') i++;
        s = i;
        while (p[i] && p[i] != '/') i++;
        len = i - s;
        if (len == 0 || (len == 1 && p[s] == '.')) continue;
        if (len == 2 && p[s] == '.' && p[s + 1] == '.') {
            while (n > lead && out[n - 1] != '/') n--;     /* back over the last part ... */
            if (n > lead) n--;                             /* ... and its slash */
            continue;
        }
        if (n > lead) out[n++] = '/';
        memmove(out + n, p + s, len);
        n += len;
    }
    memset(out, '/', lead);
    out[n] = 0;
    return out;
}
enum { STS__FT_NONE, STS__FT_REG, STS__FT_DIR, STS__FT_OTHER };
typedef struct sts__stat { uint64_t size; int kind; } sts__stat;
/* 0 with *st filled (links followed), or an errno; st->kind is STS__FT_NONE then. */
STS__PRIVATE int sts__stat_path(const char *path, sts__stat *st) {
    struct stat s;
    st->size = 0;
    st->kind = STS__FT_NONE;
    if (stat(path, &s) != 0) return errno ? errno : ENOENT;
    st->size = (uint64_t)s.st_size;
    st->kind = S_ISREG(s.st_mode) ? STS__FT_REG : S_ISDIR(s.st_mode) ? STS__FT_DIR : STS__FT_OTHER;
    return 0;
}
/* The kind of what is at path (STS__FT_NONE when nothing is). */
STS__PRIVATE int sts__path_kind(const char *path) {
    sts__stat st;
    return sts__stat_path(path, &st) == 0 ? st.kind : STS__FT_NONE;
}
/* Removal where failure changes nothing for the caller (temporaries, cleanup): best effort. */
STS__PRIVATE void sts__remove_path(const char *path) { (void)unlink(path); }
/* rename and link: 0 or an errno; m's io_fault hook sees them (m NULL: no hook, for undo steps). */
STS__PRIVATE int sts__rename_path(const sts__mem *m, const char *from, const char *to) {
    int e = sts__fault(m, "rename");
    if (e) return e;
    return rename(from, to) == 0 ? 0 : errno ? errno : EIO;
}
STS__PRIVATE int sts__link_path(const sts__mem *m, const char *from, const char *to) {
    int e = sts__fault(m, "link");
    if (e) return e;
    return link(from, to) == 0 ? 0 : errno ? errno : EIO;
}
/* Moves from to `to` only when nothing is at `to` (EEXIST otherwise), through the "rename" hook:
   a hard link then the unlink of from; where the file system has no hard links, a rename after
   checking that `to` is free (the job lock keeps others out of that moment). 0 or an errno. */
STS__PRIVATE int sts__rename_noreplace(const sts__mem *m, const char *from, const char *to) {
    int e = sts__fault(m, "rename");
    if (e) return e;
    if (link(from, to) == 0) { (void)unlink(from); return 0; }
    e = errno ? errno : EIO;
    if (e == EEXIST) return e;
    if (e == EPERM || e == ENOSYS || e == EMLINK
#ifdef EOPNOTSUPP
        || e == EOPNOTSUPP
#endif
#ifdef ENOTSUP
        || e == ENOTSUP
#endif
    ) {
        struct stat st;
        if (lstat(to, &st) == 0) return EEXIST;
        return rename(from, to) == 0 ? 0 : errno ? errno : EIO;
    }
    return e;
}
/* ftruncate through the hook: 0 or an errno. */
STS__PRIVATE int sts__truncate_fd(const sts__mem *m, int fd, uint64_t size) {
    int e = sts__fault(m, "ftruncate");
    if (e) return e;
    if (size > (uint64_t)INT64_MAX) return EFBIG;
    return ftruncate(fd, (off_t)size) == 0 ? 0 : errno ? errno : EIO;
}
/* mkdir -p: every missing folder of dir is created; dir must end up a folder. */
STS__PRIVATE sts_result sts__make_dirs(const sts__mem *m, const char *dir, sts_error *err) {
    size_t n = strlen(dir), i;
    char *buf;
    int e = 0;
    if (n == 0) return sts__fail_errno(err, ENOENT, "create the folder", dir);
    if (!(buf = (char *)sts__alloc(m, n + 1))) return sts__nomem(err, "a folder name");
    memcpy(buf, dir, n + 1);
    for (i = 1; i <= n && !e; i++) {
        if (buf[i] == '/' || buf[i] == 0) {
            char c = buf[i];
            buf[i] = 0;
            if (mkdir(buf, 0777) != 0 && errno != EEXIST) e = errno;
            buf[i] = c;
        }
    }
    sts__free(m, buf, n + 1);
    if (!e) e = sts__path_kind(dir) == STS__FT_DIR ? 0 : ENOTDIR;
    return e ? sts__fail_errno(err, e, "create the folder", dir) : STS_OK;
}
/* Calls fn(user, name) for every entry of dir but "." and "..", in the folder's order, until fn
   returns something other than STS_OK (which is returned). */
typedef sts_result (*sts__dir_fn)(void *user, const char *name);
STS__PRIVATE sts_result sts__list_dir(const char *dir, sts__dir_fn fn, void *user, sts_error *err) {
    DIR *d = opendir(dir);
    struct dirent *e;
    sts_result r = STS_OK;
    if (!d) return sts__fail_errno(err, errno, "open the folder", dir);
    while (r == STS_OK && (e = readdir(d)) != NULL) {
        if (strcmp(e->d_name, ".") == 0 || strcmp(e->d_name, "..") == 0) continue;
        r = fn(user, e->d_name);
    }
    closedir(d);
    return r;
}
/* Opens path for reading without blocking, and only when it is a regular file (a folder gives
   EISDIR as open would; a FIFO, socket or device is refused at once). *size is its size. */
STS__PRIVATE sts_result sts__open_regular(const char *path, int *fd, uint64_t *size, sts_error *err) {
    struct stat st;
    int e;
#ifdef O_NONBLOCK
    do *fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK); while (*fd < 0 && errno == EINTR);
#else
    do *fd = open(path, O_RDONLY | O_CLOEXEC); while (*fd < 0 && errno == EINTR);
#endif
    if (*fd < 0) return sts__fail_errno(err, errno, "open", path);
    if (fstat(*fd, &st) != 0) { e = errno; close(*fd); *fd = -1; return sts__fail_errno(err, e, "stat", path); }
    if (S_ISDIR(st.st_mode)) { close(*fd); *fd = -1; return sts__fail_errno(err, EISDIR, "open", path); }
    if (!S_ISREG(st.st_mode)) {
        close(*fd);
        *fd = -1;
        return sts__failx(err, STS_RULE_IO, "%q is not a regular file (a FIFO, socket or device): refused rather than "
                          "waited on", path, strlen(path));
    }
    *size = (uint64_t)st.st_size;
    return STS_OK;
}
STS__PRIVATE void sts__close_fd(int fd) { if (fd >= 0) (void)close(fd); }

/* A whole file in memory: mapped read-only, or read into the heap (STS_NO_MMAP, no_mmap, a
   failed mmap or an empty file). `gone` bytes at the front were already given back. */
typedef struct sts__fmap {
    uint8_t *p;
    size_t size;
    size_t gone;
    size_t page;        /* the page size, once asked */
    int mapped;
} sts__fmap;
/* sts_open with header_only maps a header of this size or more rather than reading it: a heap copy
   that large is fresh memory (STS__FRESH_MIN), to be zeroed by the kernel and then copied into. */
#define STS__MAP_HEADER STS__FRESH_MIN
/* Maps (or reads) the size bytes of the open fd; with nul, the heap copy gets a NUL after them
   and is never mapped (text for the JSON readers). */
STS__PRIVATE sts_result sts__map_fd(const sts__mem *m, int fd, uint64_t size, int no_mmap, int nul, sts__fmap *out,
                                    const char *path, sts_error *err) {
    int e;
    memset(out, 0, sizeof *out);
    if (size > (uint64_t)((size_t)-1 >> 1))
        return sts__failx(err, STS_RULE_UNSUPPORTED, "%q is too large for this address space", path, strlen(path));
    out->size = (size_t)size;
#ifndef STS_NO_MMAP
    if (!no_mmap && !nul && size) {
        void *p = mmap(NULL, (size_t)size, PROT_READ, MAP_PRIVATE, fd, 0);
        if (p != MAP_FAILED) { out->p = (uint8_t *)p; out->mapped = 1; return STS_OK; }
    }
#else
    (void)no_mmap;
#endif
    if (!(out->p = (uint8_t *)sts__alloc(m, out->size + (nul ? 1 : 0)))) return sts__nomem(err, "a file's bytes");
    if ((e = sts__pread_all(fd, out->p, size, 0)) != 0) {
        sts__free(m, out->p, out->size + (nul ? 1 : 0));
        out->p = NULL;
        return sts__fail_errno(err, e, "read", path);
    }
    if (nul) out->p[out->size] = 0;
    return STS_OK;
}
/* sts__map_fd on a path (a regular file, opened without blocking). */
STS__PRIVATE sts_result sts__map_path(const sts__mem *m, const char *path, int no_mmap, int nul, sts__fmap *out,
                                      sts_error *err) {
    int fd;
    uint64_t size;
    sts_result r;
    if ((r = sts__open_regular(path, &fd, &size, err)) != STS_OK) return r;
    r = sts__map_fd(m, fd, size, no_mmap, nul, out, path, err);
    sts__close_fd(fd);
    return r;
}
/* Gives back the mapped pages before byte upto, 8 MiB or more at a time (read once, they are not
   looked at again). A hint: heap copies stay whole. */
STS__PRIVATE void sts__map_drop_before(sts__fmap *f, size_t upto) {
#ifndef STS_NO_MMAP
    size_t end;
    if (!f->mapped) return;
    if (!f->page) { long pg = sysconf(_SC_PAGESIZE); f->page = pg > 0 ? (size_t)pg : (size_t)-1; }
    if (upto > f->size) upto = f->size;
    if (upto < f->gone + ((size_t)8 << 20) || f->page == (size_t)-1) return;
    end = upto / f->page * f->page;
    if (end >= f->gone + ((size_t)8 << 20) && munmap(f->p + f->gone, end - f->gone) == 0) f->gone = end;
#else
    (void)f; (void)upto;
#endif
}
/* Releases what sts__map_fd gave; nul must be the value it was given. */
STS__PRIVATE void sts__map_free(const sts__mem *m, sts__fmap *f, int nul) {
#ifndef STS_NO_MMAP
    if (f->mapped) { if (f->size > f->gone) munmap(f->p + f->gone, f->size - f->gone); }
    else
#endif
    if (f->p) sts__free(m, f->p, f->size + (nul ? 1 : 0));
    memset(f, 0, sizeof *f);
}
/* A whole small file (a manifest, a keys list) in memory, NUL-terminated; free with sts__free(m, *out,
   *size + 1). */
STS__PRIVATE sts_result sts__read_file(const sts__mem *m, const char *path, char **out, size_t *size, sts_error *err) {
    sts__fmap f;
    sts_result r = sts__map_path(m, path, 1, 1, &f, err);
    if (r != STS_OK) return r;
    *out = (char *)f.p;
    *size = f.size;
    return STS_OK;
}
/* Large tables ask for transparent huge pages before their pages are first touched: a random
   probe then costs its cache miss without a page walk (measured: p50 -15%, p99 -20% at 1M keys).
   Linux only, when the TU sees madvise (_DEFAULT_SOURCE or _GNU_SOURCE); a hint, never an error. */
STS__PRIVATE void sts__advise_huge(void *p, size_t n) {
#if defined(__linux__) && defined(MADV_HUGEPAGE) && !defined(STS_NO_MMAP)
    const uintptr_t huge = (uintptr_t)2 << 20;
    uintptr_t a = ((uintptr_t)p + huge - 1) & ~(huge - 1), b = ((uintptr_t)p + n) & ~(huge - 1);
    if (b > a) (void)madvise((void *)a, (size_t)(b - a), MADV_HUGEPAGE);
#else
    (void)p; (void)n;
#endif
}

/* The options' memory, with large blocks of libc's advised as above (sts__alloc). */
STS__PRIVATE sts__mem sts__mem_io(const sts_options *o) {
    sts__mem m = sts__mem_from(o);
#if defined(STS__LIBC_ALLOC) && defined(__linux__) && defined(MADV_HUGEPAGE) && !defined(STS_NO_MMAP)
    m.fresh = sts__advise_huge;
#endif
    return m;
}
#ifndef STS_NO_MMAP
STS__PRIVATE void sts__release_map(sts_file *f) {
    munmap(f->owned, f->owned_size);
    f->owned = NULL;
}
#endif
STSDEF sts_result sts_open(const char *path, const sts_options *opts, sts_file **out, sts_error *err) {
    sts__mem m = sts__mem_io(opts);
    sts__fmap map;
    uint8_t prefix[8];
    uint64_t size = 0, n = 0;  /* set before use; zero for -O2 maybe-uninitialized under STS_STATIC */
    sts_file *f;
    sts_result r;
    int fd, e, header_only;
    if (!path || !out) return sts__failx(err, STS_RULE_ARGUMENT, "sts_open needs a path and out");
    if (!sts__mem_valid(&m)) return sts__failx(err, STS_RULE_ARGUMENT, "the allocator needs all three hooks or none");
    if ((r = sts__open_regular(path, &fd, &size, err)) != STS_OK) return r;
#ifdef POSIX_FADV_RANDOM
    /* header-only: no readahead, so a cold file costs the header's pages and not the data's
       (16 KiB a file by default on Linux, 4 KiB with this for a small header). A hint only. */
    if (opts && opts->header_only) (void)posix_fadvise(fd, 0, 0, POSIX_FADV_RANDOM);
#endif
    if (size >= 8 && (e = sts__pread_all(fd, prefix, 8, 0)) != 0) {
        sts__close_fd(fd);
        return sts__fail_errno(err, e, "read", path);
    }
    if ((r = sts__check_prefix(prefix, size, opts, &n, err)) != STS_OK) { sts__close_fd(fd); return r; }
    if (!(f = sts__file_new(&m))) { sts__close_fd(fd); return sts__nomem(err, "the file handle"); }
    f->header_len = n;
    f->file_size = size;
    header_only = opts && opts->header_only;
    if (header_only && ((opts && opts->no_mmap) || n < STS__MAP_HEADER)) {  /* exactly 8 + N bytes are read */
        if (!(f->owned = sts__alloc(&m, (size_t)n))) {
            sts__close_fd(fd);
            sts_close(f);
            return sts__nomem(err, "the header buffer");
        }
        f->owned_size = (size_t)n;
        f->release = sts__release_heap;
        if (n && (e = sts__pread_all(fd, f->owned, n, 8)) != 0) {
            sts__close_fd(fd);
            sts_close(f);
            return sts__fail_errno(err, e, "read", path);
        }
        sts__close_fd(fd);
        f->header = (const uint8_t *)f->owned;
        return sts__finish_open(f, opts, out, err);
    }
    /* the same mapping as every other file; for a large header alone, its first 8 + N bytes: a copy
       would cost fresh pages and their zeroing besides the copy (the commit of a 1M-key dataset reads
       ~80 MB of shard headers that the writer has just left in the page cache) */
    r = sts__map_fd(&m, fd, header_only ? 8 + n : size, opts && opts->no_mmap, 0, &map, path, err);
    sts__close_fd(fd);
    if (r != STS_OK) { sts_close(f); return r; }
    f->owned = map.p;
    f->owned_size = map.size;
#ifndef STS_NO_MMAP
    f->release = map.mapped ? sts__release_map : sts__release_heap;
#else
    f->release = sts__release_heap;
#endif
    f->header = (const uint8_t *)f->owned + 8;
    f->data = f->header + n;
    return sts__finish_open(f, opts, out, err);
}

/* ---- headers read one after another: a dataset's scans ----
   sts__hread reads the headers of many files in turn, each expected to be `size` bytes: the size
   its dataset recorded at open (stat, and the manifest's bytes when there is one). Per file it
   costs open, one pread and close, as a hand-written loop does:
   - the pread asks for the previous file's 8 + N bytes and some slack (4 KiB for the first file),
     or the whole file when it is smaller; a second pread follows only when the 8-byte length says
     the first was short. No fstat and no mmap: the size is the recorded one.
   - the bytes land in one of two buffers the reader keeps (no allocation per file): a header
     byte-identical to the previous file's, in a file of the same size, is not parsed again. The
     parse reads nothing but the N header bytes, the file size and the options (the same ones), so
     it could only give the same verdict and the same tensors; the previous sts_file is returned.
   - every error is sts_open's (header_only): whenever a read is not the normal case (open or pread
     fails, the file ends before the bytes asked for, which the recorded size promised) or the
     prefix or the parse fails, the file is opened again by sts_open, which stats it and gives the
     verdict from its size now. A failing file thus gets exactly the error it always got. What the
     reader cannot see is a file that changed size after the dataset opened while still filling the
     pread: it is checked against the recorded size (mapping the file for its data checks it again).
   - readahead: POSIX_FADV_RANDOM (no readahead: 4 KiB read from the device for a small header
     instead of 16 KiB) only while files are not cached: a file found uncached turns the hint on
     for the next files, a cached one turns it off (the file that shows it was read with readahead).
     Where the TU sees preadv2 and RWF_NOWAIT (glibc with _GNU_SOURCE, Linux 4.14+), the read asks
     the page cache only: EAGAIN means not cached, and a plain read follows. Elsewhere (or where
     the file system refuses RWF_NOWAIT) one read in 16 is timed, and every read while hinting:
     slower than STS__HREAD_COLD_NS means not cached. A cached file costs no hint system call.
   The sts_file returned belongs to the reader and lives until its next open or its free. */
#define STS__HREAD_FIRST 4096
#define STS__HREAD_COLD_NS 25000  /* a pread of a few KiB from the page cache takes well under this */
#include <sys/uio.h>
#if defined(__linux__) && defined(RWF_NOWAIT) && defined(__GLIBC__) && \
    (__GLIBC__ > 2 || (__GLIBC__ == 2 && __GLIBC_MINOR__ >= 26))
#  define STS__NOWAIT 1  /* preadv2 is declared (glibc 2.26+, _GNU_SOURCE) */
#else
#  define STS__NOWAIT 0
#endif
typedef struct sts__hread {
    sts_options opts;           /* header_only; the caller's allocator and limits */
    sts__mem mem;
    uint8_t *buf[2];            /* file bytes: buf[cur] is f's when f_in_buf, the other is free */
    size_t cap[2];
    int cur, f_in_buf;
    sts_file *f;                /* the last header returned, or NULL */
    uint64_t f_size;            /* its file size */
    size_t want;                /* the next pread's length */
    unsigned reads;             /* timed preads so far: one in 16 is timed */
    int cold;                   /* the last timed read looked uncached: hint the next ones */
    int no_nowait;              /* RWF_NOWAIT refused here: timed plain reads */
    int reused;                 /* the last open returned the parse before it (same bytes, same size) */
    int test_cold, test_fallback;  /* tests: hint every file / take sts_open's path every time */
    uint64_t fallbacks, reuses, hints;  /* counts, for tests and profiles */
} sts__hread;
STS__PRIVATE void sts__hread_init(sts__hread *h, const sts__mem *m, const sts_options *o) {
    memset(h, 0, sizeof *h);
    if (o) h->opts = *o;
    h->opts.allocator = m->a;
    h->opts.header_only = 1;
    h->mem = *m;
    h->want = STS__HREAD_FIRST;
}
STS__PRIVATE void sts__hread_free(sts__hread *h) {
    sts_close(h->f);
    sts__free(&h->mem, h->buf[0], h->cap[0]);
    sts__free(&h->mem, h->buf[1], h->cap[1]);
    memset(h->buf, 0, sizeof h->buf);
    h->f = NULL;
}
/* The current file becomes nf (its bytes in buf[b] when in_buf); the previous one is closed. */
STS__PRIVATE void sts__hread_keep(sts__hread *h, sts_file *nf, uint64_t size, int b, int in_buf) {
    sts_close(h->f);
    h->f = nf;
    h->f_size = size;
    h->f_in_buf = in_buf;
    if (in_buf) h->cur = b;
}
STS__PRIVATE uint64_t sts__hread_ns(void) {
#ifdef CLOCK_MONOTONIC
    struct timespec t;
    if (clock_gettime(CLOCK_MONOTONIC, &t) == 0) return (uint64_t)t.tv_sec * 1000000000u + (uint64_t)t.tv_nsec;
#endif
    return 0;
}
STS__PRIVATE sts_result sts__hread_open(sts__hread *h, const char *path, uint64_t size, sts_file **out,
                                        sts_error *err) {
    int b = h->f && h->f_in_buf ? 1 - h->cur : h->cur, fd = -1, timed;
    size_t want = h->want, total;
    uint64_t n, t0 = 0;
    ssize_t got;
    sts_file *nf;
    sts_result r;
    uint8_t *p;
    h->reused = 0;
    if (size < 8 || h->test_fallback) goto exact;  /* an error for sure (or a test): sts_open's */
    if ((uint64_t)want > size) want = (size_t)size;
    if (!sts__grow(&h->mem, (void **)&h->buf[b], &h->cap[b], want, 1)) return sts__nomem(err, "a header buffer");
    do fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK); while (fd < 0 && errno == EINTR);
    if (fd < 0) goto exact;
    p = h->buf[b];
    got = -1;
#ifdef POSIX_FADV_RANDOM
    if (h->cold || h->test_cold) { (void)posix_fadvise(fd, 0, 0, POSIX_FADV_RANDOM); h->hints++; }
#endif
#if STS__NOWAIT
    if (!h->no_nowait) {  /* from the page cache only */
        struct iovec v;
        v.iov_base = p;
        v.iov_len = want;
        do got = preadv2(fd, &v, 1, 0, RWF_NOWAIT); while (got < 0 && errno == EINTR);
        if (got < 0 && errno == EAGAIN) { h->cold = 1; got = 0; }  /* not cached: the plain read below */
        else if (got < 0 && (errno == EOPNOTSUPP || errno == EINVAL || errno == ENOSYS))
            h->no_nowait = 1;  /* not here: timed plain reads from now on */
        else if (got < 0) goto exact;  /* a folder, a FIFO, EIO: sts_open says what */
        else if ((size_t)got == want) h->cold = 0;
        /* a short count is part cached or the end of the file: the plain read tells which */
        if (got >= 0 && (size_t)got < want && sts__pread_all(fd, p + got, want - (size_t)got, (uint64_t)got) != 0)
            goto exact;  /* an error, or the file is shorter than recorded */
    }
#endif
    if (got < 0) {  /* plain, timed now and then */
        timed = h->cold || (h->reads++ & 15) == 0;
        if (timed) t0 = sts__hread_ns();
        do got = pread(fd, p, want, 0); while (got < 0 && errno == EINTR);
        if (timed) h->cold = sts__hread_ns() - t0 > STS__HREAD_COLD_NS;
        if (got != (ssize_t)want) goto exact;  /* an error, or the file is shorter than recorded */
    }
    if (sts__check_prefix(p, size, &h->opts, &n, NULL) != STS_OK) goto exact;
    total = (size_t)(8 + n);  /* n <= size - 8 and want <= size: it fits */
    if (total > want) {  /* the guess was short: the rest of the header */
        if (!sts__grow(&h->mem, (void **)&h->buf[b], &h->cap[b], total, 1)) {
            sts__close_fd(fd);
            return sts__nomem(err, "a header buffer");
        }
        p = h->buf[b];
        if (sts__pread_all(fd, p + want, total - want, want) != 0) goto exact;
    }
    sts__close_fd(fd);
    fd = -1;
    h->want = total + (total < 32768 ? 64 + total / 8 : 4096);
    if (h->f && size == h->f_size && n == h->f->header_len && memcmp(p + 8, h->f->header, (size_t)n) == 0) {
        h->reuses++;  /* the same bytes and size: the same verdict and tensors as the last parse */
        h->reused = 1;
        *out = h->f;
        return STS_OK;
    }
    if (!(nf = sts__file_new(&h->mem))) return sts__nomem(err, "the file handle");
    nf->header = p + 8;
    nf->header_len = n;
    nf->file_size = size;
    if (sts__finish_open(nf, &h->opts, &nf, NULL) != STS_OK) goto exact;  /* closed; the verdict is sts_open's */
    sts__hread_keep(h, nf, size, b, 1);
    *out = nf;
    return STS_OK;
exact:
    sts__close_fd(fd);
    h->fallbacks++;
    if ((r = sts_open(path, &h->opts, &nf, err)) != STS_OK) return r;
    sts__hread_keep(h, nf, sts_file_size(nf), b, 0);
    h->want = (size_t)(8 + sts_header_size(nf)) + 64;
    *out = nf;
    return STS_OK;
}

/* Random bytes from /dev/urandom; falls back to clock and address entropy. */
STS__PRIVATE void sts__random(void *dst, size_t n) {
    uint8_t *p = (uint8_t *)dst;
    size_t i;
    int fd;
    do fd = open("/dev/urandom", O_RDONLY | O_CLOEXEC); while (fd < 0 && errno == EINTR);
    if (fd >= 0) {
        int e = sts__pread_all(fd, p, n, 0);
        close(fd);
        if (e == 0) return;
    }
    {
        uint64_t h = sts__seed_from(dst, 0);
        h ^= sts__fold((uint64_t)time(NULL) ^ STS__K1, (uint64_t)clock() ^ ((uint64_t)getpid() << 32));
        for (i = 0; i < n; i++) {
            if (i % 8 == 0) h = sts__fold(h ^ STS__K2, (uint64_t)i ^ STS__K3);
            p[i] = (uint8_t)(h >> (8 * (i % 8)));
        }
    }
}

/* A random (version 4) UUID, 36 characters and a NUL. */
STS__PRIVATE void sts__uuid4(char out[37]) {
    static const char hex[] = "0123456789abcdef";
    uint8_t b[16];
    int i, o = 0;
    sts__random(b, sizeof b);
    b[6] = (uint8_t)((b[6] & 0x0f) | 0x40);  /* version 4 */
    b[8] = (uint8_t)((b[8] & 0x3f) | 0x80);  /* RFC 4122 variant */
    for (i = 0; i < 16; i++) {
        if (i == 4 || i == 6 || i == 8 || i == 10) out[o++] = '-';
        out[o++] = hex[b[i] >> 4];
        out[o++] = hex[b[i] & 15];
    }
    out[o] = 0;
}
/* ---- processes and files that mark ownership ---- */
/* Creates path with O_EXCL and writes len bytes into it (fsync when durable): 0, EEXIST when it
   exists, or another errno (the file is then removed). The io_fault hook sees "write". */
STS__PRIVATE int sts__create_excl(const sts__mem *m, const char *path, const void *data, size_t len, int durable) {
    int fd, e;
    do fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0666); while (fd < 0 && errno == EINTR);
    if (fd < 0) return errno ? errno : EIO;
    e = sts__write_all(m, fd, data, len);
    if (!e && durable && (e = sts__fault(m, "fsync")) == 0 && fsync(fd) != 0) e = errno;
    if (close(fd) != 0 && !e) e = errno;
    if (e) (void)unlink(path);
    return e;
}
/* This process's id, the host's name (NUL-terminated, cut to cap) and the time in seconds. */
STS__PRIVATE uint64_t sts__pid(void) { return (uint64_t)getpid(); }
STS__PRIVATE void sts__host(char *buf, size_t cap) {
    if (!cap) return;
    if (gethostname(buf, cap) != 0) buf[0] = 0;
    buf[cap - 1] = 0;
}
STS__PRIVATE uint64_t sts__now(void) { time_t t = time(NULL); return t < 0 ? 0 : (uint64_t)t; }
/* Whether process pid of this host lives: 1 yes, 0 no, -1 cannot tell. */
STS__PRIVATE int sts__pid_alive(uint64_t pid) {
    if (pid == 0 || pid > (uint64_t)INT32_MAX) return -1;
    if (kill((pid_t)pid, 0) == 0) return 1;
    return errno == ESRCH ? 0 : errno == EPERM ? 1 : -1;
}

/* ---- atomic publication ---- */
typedef struct sts__atomic {
    sts__mem mem;
    const char *path;   /* final name */
    char *tmp;          /* ".<name>.tmp-<hex>" in the same folder */
    size_t tmp_size;
    int fd;
} sts__atomic;

STS__PRIVATE void sts__atomic_abort(sts__atomic *a) {
    if (a->fd >= 0) close(a->fd);
    if (a->tmp) { unlink(a->tmp); sts__free(&a->mem, a->tmp, a->tmp_size); }
    a->fd = -1;
    a->tmp = NULL;
}
STS__PRIVATE sts_result sts__atomic_begin(sts__atomic *a, const char *path, const sts__mem *m, sts_error *err) {
    static const char hex[] = "0123456789abcdef";
    const char *slash = strrchr(path, '/');
    size_t dir_len = slash ? (size_t)(slash - path) + 1 : 0, base_len = strlen(path) - dir_len, tries;
    a->mem = *m;
    a->path = path;
    a->fd = -1;
    a->tmp = NULL;
    a->tmp_size = 0;
    if (base_len == 0) return sts__failx(err, STS_RULE_ARGUMENT, "%q names a folder, not a file", path, strlen(path));
    a->tmp_size = dir_len + 1 + base_len + 5 + 16 + 1;
    if (!(a->tmp = (char *)sts__alloc(m, a->tmp_size))) return sts__nomem(err, "a temporary file name");
    for (tries = 0; tries < 16; tries++) {
        uint8_t rnd[8];
        char *o = a->tmp;
        size_t i;
        sts__random(rnd, sizeof rnd);
        memcpy(o, path, dir_len); o += dir_len;
        *o++ = '.';
        memcpy(o, path + dir_len, base_len); o += base_len;
        memcpy(o, ".tmp-", 5); o += 5;
        for (i = 0; i < 8; i++) { *o++ = hex[rnd[i] >> 4]; *o++ = hex[rnd[i] & 15]; }
        *o = 0;
        do a->fd = open(a->tmp, O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC, 0666); while (a->fd < 0 && errno == EINTR);
        if (a->fd >= 0) return STS_OK;
        if (errno != EEXIST) {
            int e = errno;
            sts_result r = sts__fail_errno(err, e, "create a temporary beside", path);
            sts__free(m, a->tmp, a->tmp_size);
            a->tmp = NULL;
            return r;
        }
    }
    sts__free(m, a->tmp, a->tmp_size);
    a->tmp = NULL;
    return sts__fail_errno(err, EEXIST, "create a temporary beside", path);
}
/* fsync of the folder that holds path (a rename is durable once its folder is): 0 or an errno. */
STS__PRIVATE int sts__fsync_dir(const sts__mem *m, const char *path) {
    const char *slash = strrchr(path, '/');
    char small[512], *dir = small, *heap = NULL;
    size_t len = slash ? (size_t)(slash - path) : 0;
    int fd, e = 0;
    if (!slash) dir = (char *)".";
    else if (len == 0) dir = (char *)"/";
    else {
        if (len >= sizeof small && !(dir = heap = (char *)sts__alloc(m, len + 1))) return ENOMEM;
        memcpy(dir, path, len);
        dir[len] = 0;
    }
    do fd = open(dir, O_RDONLY | O_CLOEXEC); while (fd < 0 && errno == EINTR);
    if (fd < 0) e = errno;
    else {
        /* some file systems refuse folder syncs (EINVAL, EBADF): not an error */
        if ((e = sts__fault(m, "fsync_dir")) == 0 && fsync(fd) != 0 && errno != EINVAL && errno != EBADF) e = errno;
        close(fd);
    }
    sts__free(m, heap, len + 1);
    return e;
}
/* Seal: fsync (when durable) and close. On failure the temporary is removed. */
STS__PRIVATE sts_result sts__atomic_seal(sts__atomic *a, int durable, sts_error *err) {
    int e;
    if (durable && ((e = sts__fault(&a->mem, "fsync")) != 0 || (fsync(a->fd) != 0 && (e = errno) != 0))) {
        sts__atomic_abort(a);
        return sts__fail_errno(err, e, "fsync", a->path);
    }
    e = close(a->fd) != 0 ? errno : 0;
    a->fd = -1;
    if (e) { sts__atomic_abort(a); return sts__fail_errno(err, e, "close", a->path); }
    return STS_OK;
}
/* Publish a sealed temporary: rename over the final name, then fsync the folder when asked. */
STS__PRIVATE sts_result sts__atomic_publish(sts__atomic *a, int sync_dir, sts_error *err) {
    int e;
    if ((e = sts__fault(&a->mem, "rename")) != 0 || (rename(a->tmp, a->path) != 0 && (e = errno) != 0)) {
        sts__atomic_abort(a);
        return sts__fail_errno(err, e, "rename into", a->path);
    }
    sts__free(&a->mem, a->tmp, a->tmp_size);
    a->tmp = NULL;
    if (sync_dir && (e = sts__fsync_dir(&a->mem, a->path)) != 0) return sts__fail_durable(err, e, a->path);
    return STS_OK;
}
STS__PRIVATE sts_result sts__atomic_commit(sts__atomic *a, int durable, sts_error *err) {
    sts_result r = sts__atomic_seal(a, durable, err);
    return r != STS_OK ? r : sts__atomic_publish(a, durable, err);
}
#include <sys/uio.h>
#define STS__IOV_MAX 1024  /* POSIX guarantees at least 16; Linux and the BSDs allow 1024 */
/* writev until every byte is out; 0 or an errno. Advances iov in place. */
STS__PRIVATE int sts__writev_all(const sts__mem *m, int fd, struct iovec *iov, int n) {
    while (n > 0) {
        ssize_t put;
        int e = sts__fault(m, "write");
        if (e) return e;
        put = writev(fd, iov, n);
        if (put < 0) { if (errno == EINTR) continue; return errno; }
        if (put == 0) return EIO;
        while (n > 0 && (size_t)put >= iov->iov_len) { put -= (ssize_t)iov->iov_len; iov++; n--; }
        if (n > 0) { iov->iov_base = (char *)iov->iov_base + put; iov->iov_len -= (size_t)put; }
    }
    return 0;
}
/* The fd sink gathers writes: up to STS__IOV_MAX pieces (and at least 64 KiB of them) go out in
   one writev, so a shard of a million small tensors does not cost a million system calls. The
   pieces must stay valid until sts__fdsink_flush; the writer guarantees that (data pointers are
   the caller's, the header buffer lives until the end of the emit). */
typedef struct sts__fdsink {
    const sts__mem *mem;
    int fd, err_no, n;
    size_t pending;
    struct iovec iov[STS__IOV_MAX];
} sts__fdsink;
STS__PRIVATE sts_result sts__fdsink_flush(sts__fdsink *s) {
    int e;
    if (!s->n) return STS_OK;
    e = sts__writev_all(s->mem, s->fd, s->iov, s->n);
    s->n = 0;
    s->pending = 0;
    if (e) { s->err_no = e; return STS_ERR_IO; }
    return STS_OK;
}
STS__PRIVATE sts_result sts__fdsink_write(void *user, const void *bytes, size_t len) {
    sts__fdsink *s = (sts__fdsink *)user;
    if (len >= ((size_t)1 << 20)) {  /* large: straight out, after what is queued */
        int e;
        if (sts__fdsink_flush(s) != STS_OK) return STS_ERR_IO;
        if ((e = sts__write_all(s->mem, s->fd, bytes, len)) != 0) { s->err_no = e; return STS_ERR_IO; }
        return STS_OK;
    }
    if (s->n && (const char *)s->iov[s->n - 1].iov_base + s->iov[s->n - 1].iov_len == (const char *)bytes)
        s->iov[s->n - 1].iov_len += len;  /* adjacent in memory: extend the last piece */
    else {
        if (s->n == STS__IOV_MAX && sts__fdsink_flush(s) != STS_OK) return STS_ERR_IO;
        s->iov[s->n].iov_base = (void *)(uintptr_t)bytes;
        s->iov[s->n].iov_len = len;
        s->n++;
    }
    s->pending += len;
    return STS_OK;
}
STS__PRIVATE sts_result sts__fdsink_flush_cb(void *user) { return sts__fdsink_flush((sts__fdsink *)user); }
/* pwrite until every byte is out; 0 or an errno. */
/* Writes larger than STS__FOLIO go in pieces that end on STS__FOLIO-aligned file offsets. Linux
   page caches with large folios size a folio by the write that creates it, and only a folio of
   exactly 2 MiB at an aligned offset is mapped by one page-table entry: a file written in such
   pieces faults in under mmap about 15 times faster than one written in 1 MiB or 4 MiB pieces
   (256 MiB touched page by page: 6 ms against 84-106 ms, Linux 6.18, ext4). Elsewhere the split
   costs one system call per 2 MiB. */
#define STS__FOLIO ((uint64_t)2 << 20)
/* Starts the writeback of a file's dirty pages and returns (Linux's sync_file_range, where the TU
   sees it: _GNU_SOURCE): the disk writes a durable file while the rest of it is still being
   produced, and its fsync waits for the last pieces only. A hint: nothing elsewhere, and errors
   are the fsync's to report. */
STS__PRIVATE void sts__writeback_start(int fd) {
#if defined(__linux__) && defined(SYNC_FILE_RANGE_WRITE)
    (void)sync_file_range(fd, 0, 0, SYNC_FILE_RANGE_WRITE);
#else
    (void)fd;
#endif
}
STS__PRIVATE int sts__pwrite_all(const sts__mem *m, int fd, const void *src, uint64_t len, uint64_t off) {
    const uint8_t *p = (const uint8_t *)src;
    while (len) {
        size_t chunk = len > STS__FOLIO ? (size_t)(STS__FOLIO - off % STS__FOLIO) : (size_t)len;
        ssize_t put;
        int e = sts__fault(m, "pwrite");
        if (e) return e;
        put = pwrite(fd, p, chunk, (off_t)off);
        if (put < 0) { if (errno == EINTR) continue; return errno; }
        if (put == 0) return EIO;
        p += put; off += (uint64_t)put; len -= (uint64_t)put;
    }
    return 0;
}

/* >>write_behind ---- write-behind: the task writer's I/O thread ----
   Row work (checking, encoding, copying) and the system calls that put finished buffers into the
   files run on two threads: the caller's thread queues writes, truncations, seals and the
   faulting-in of memory it is about to fill, and one I/O thread per task writer performs them in
   order (appends the caller groups go out in one writev: the grouping, not the timing, decides
   the calls, so they are the same in every run). A queued buffer comes back through its token
   once written. The caller's thread makes a hooked
   system call of its own only when the queue is idle, so the calls keep one order and the
   io_fault hook sees them one at a time. The first failure is kept and later writes are skipped
   (seals still close their files); the caller reports it at its next step. Without threads
   (STS_NO_THREADS, or io_thread=false) each item runs at once on the caller's thread: the same
   code in one thread. The I/O thread never allocates: buffers come and go on the caller's side.
   Each write to a durable file starts that file's writeback (sts__writeback_start), so the disk
   works while rows come and the seal's fsync waits for the last pieces only. A digest hook
   (sts__wb.digest) sees the bytes of the items marked for it, in the file's order, on the thread
   that writes them, and each such file's end: the KV writer's shard CRC-32C, whose state the
   caller reads only once the queue is idle. A DIGEST item hands the hook bytes ahead of their
   write (a filled KV chunk, while it is still in the cache and the thread has time), so that the
   write finds their CRC made. */
#if !defined(STS_NO_THREADS)
#  include <pthread.h>
#  define STS__THREADS 1
#endif
enum { STS__WB_WRITE, STS__WB_PWRITE, STS__WB_TRUNCATE, STS__WB_SEAL, STS__WB_POPULATE, STS__WB_DIGEST };
#define STS__WB_RING 4096
typedef struct sts__wbitem {
    const uint8_t *p;
    uint64_t len;          /* WRITE, PWRITE: bytes */
    uint64_t off;          /* PWRITE: file offset; TRUNCATE: the size */
    int fd, kind, durable; /* SEAL: fsync when durable, then close; WRITE, PWRITE: when durable, the
                              file's writeback starts after; POPULATE: p, len (sts__populate);
                              DIGEST: p, len to the digest hook, ahead of their write; off: 0, or
                              1 + their CRC-32C when the caller took it as it filled them */
    int more;              /* WRITE: the next item joins this one's writev */
    int digest;            /* WRITE, PWRITE: the bytes go through the queue's digest hook before they are written;
                              SEAL: the hook hears that the file ends */
    int32_t token;         /* handed back once the item ran, or -1 */
    uint32_t shard;        /* the file, for messages */
    uint64_t crc;          /* WRITE, PWRITE with digest: 0, or 1 + the bytes' CRC-32C, taken by the caller */
} sts__wbitem;
typedef struct sts__wb {
    const sts__mem *mem;
    sts__wbitem ring[STS__WB_RING];
    size_t head, n;
    int32_t *back;         /* tokens handed back, not yet taken */
    size_t nback, back_cap;
    int busy, stop, err_no;
    const char *err_op;
    uint32_t err_shard;
    int threaded, started;
    /* the digest hook, on the thread that writes (the caller's without one): (p, n, 0, known) for
       bytes in the file's order (known: their item's crc), (NULL, 0, 0) at the file's end, (p, n, 1)
       for bytes that a later write of this file may bring (a DIGEST item; known: its item's off);
       NULL: none */
    void (*digest)(void *user, const uint8_t *p, uint64_t n, int ahead, uint64_t known);
    void *digest_user;
#ifdef STS__THREADS
    pthread_t th;
    pthread_mutex_t mu;
    pthread_cond_t work, done;
#endif
} sts__wb;
#ifdef STS__THREADS
#  define STS__WB_LOCK(q) do { if ((q)->threaded) pthread_mutex_lock(&(q)->mu); } while (0)
#  define STS__WB_UNLOCK(q) do { if ((q)->threaded) pthread_mutex_unlock(&(q)->mu); } while (0)
#else
#  define STS__WB_LOCK(q) ((void)0)
#  define STS__WB_UNLOCK(q) ((void)0)
#endif
/* Memory the caller is about to fill, its pages faulted in now by the thread that runs the item
   (Linux 5.14's MADV_POPULATE_WRITE, which leaves the bytes alone, so the caller may write them
   meanwhile). A hint: nothing elsewhere, and an error is ignored. */
STS__PRIVATE void sts__populate(const uint8_t *p, uint64_t n) {
#if defined(__linux__) && defined(MADV_POPULATE_WRITE) && !defined(STS_NO_MMAP)
    const uintptr_t page = 4096;
    uintptr_t a = ((uintptr_t)p + page - 1) & ~(page - 1), b = ((uintptr_t)p + (uintptr_t)n) & ~(page - 1);
    if (b > a) (void)madvise((void *)a, (size_t)(b - a), MADV_POPULATE_WRITE);
#else
    (void)p; (void)n;
#endif
}
/* Runs k items (one SEAL/TRUNCATE/PWRITE/POPULATE, or appends to one file); 0 or an errno, *op
   naming the call. */
STS__PRIVATE int sts__wb_run(sts__wb *q, sts__wbitem *it, size_t k, int failed, const char **op) {
    const sts__mem *m = q->mem;
    int e = 0;
    if (it[0].kind == STS__WB_POPULATE) {
        sts__populate(it[0].p, it[0].len);
        return 0;
    }
    if (it[0].kind == STS__WB_SEAL) {
        if (it[0].digest && q->digest) q->digest(q->digest_user, NULL, 0, 0, 0);
        if (!failed && it[0].durable) {
            *op = "fsync";
            if ((e = sts__fault(m, "fsync")) == 0 && fsync(it[0].fd) != 0) e = errno;
        }
        if (close(it[0].fd) != 0 && !e && !failed) { e = errno; *op = "close"; }
        return e;
    }
    if (failed) return 0;
    if (it[0].kind == STS__WB_DIGEST) {
        if (q->digest) q->digest(q->digest_user, it[0].p, it[0].len, 1, it[0].off);
        return 0;
    }
    if (it[0].kind == STS__WB_TRUNCATE) {
        *op = "ftruncate";
        e = sts__truncate_fd(m, it[0].fd, it[0].off);
        return e;
    }
    *op = "write";
    if (it[0].kind == STS__WB_PWRITE) {
        if (it[0].digest && q->digest) q->digest(q->digest_user, it[0].p, it[0].len, 0, it[0].crc);
        e = sts__pwrite_all(m, it[0].fd, it[0].p, it[0].len, it[0].off);
    } else {
        struct iovec iov[STS__IOV_MAX];
        size_t i;
        for (i = 0; i < k; i++) {
            if (it[i].digest && q->digest) q->digest(q->digest_user, it[i].p, it[i].len, 0, it[i].crc);
            iov[i].iov_base = (void *)(uintptr_t)it[i].p;
            iov[i].iov_len = (size_t)it[i].len;
        }
        e = sts__writev_all(m, it[0].fd, iov, (int)k);
    }
    if (!e && it[0].durable) sts__writeback_start(it[0].fd);  /* the seal's fsync finds little left */
    return e;
}
/* 1 when the ring starts with a whole group (an item whose `more` is 0 ends it). */
STS__PRIVATE int sts__wb_ready(const sts__wb *q) {
    size_t i;
    for (i = 0; i < q->n; i++) if (!q->ring[(q->head + i) % STS__WB_RING].more) return 1;
    return 0;
}
/* Takes the group at the head of the ring into `out` (groups hold at most STS__IOV_MAX items). */
STS__PRIVATE size_t sts__wb_take_items(sts__wb *q, sts__wbitem *out) {
    size_t k = 0;
    while (q->n && k < STS__IOV_MAX) {
        out[k++] = q->ring[q->head];
        q->head = (q->head + 1) % STS__WB_RING;
        q->n--;
        if (!out[k - 1].more) break;
    }
    return k;
}
/* After items ran: keep the first failure, hand the tokens back. Under the lock. */
STS__PRIVATE void sts__wb_after(sts__wb *q, const sts__wbitem *it, size_t k, int e, const char *op) {
    size_t i;
    if (e && !q->err_no) { q->err_no = e; q->err_op = op; q->err_shard = it[0].shard; }
    for (i = 0; i < k; i++)
        if (it[i].token >= 0 && q->nback < q->back_cap) q->back[q->nback++] = it[i].token;
}
#ifdef STS__THREADS
STS__PRIVATE void *sts__wb_main(void *arg) {
    sts__wb *q = (sts__wb *)arg;
    sts__wbitem batch[STS__IOV_MAX];
    pthread_mutex_lock(&q->mu);
    for (;;) {
        size_t k;
        int failed, e;
        const char *op = "write";
        while (!(q->n && sts__wb_ready(q)) && !q->stop) pthread_cond_wait(&q->work, &q->mu);
        if (!q->n) break;
        k = sts__wb_take_items(q, batch);
        failed = q->err_no != 0;
        q->busy = 1;
        pthread_cond_broadcast(&q->done);  /* ring room for the caller */
        pthread_mutex_unlock(&q->mu);
        e = sts__wb_run(q, batch, k, failed, &op);
        pthread_mutex_lock(&q->mu);
        sts__wb_after(q, batch, k, e, op);
        q->busy = 0;
        pthread_cond_broadcast(&q->done);
    }
    pthread_mutex_unlock(&q->mu);
    return NULL;
}
#endif
STS__PRIVATE void sts__wb_init(sts__wb *q, const sts__mem *m, int threaded) {
    q->mem = m;
    q->head = q->n = q->nback = q->back_cap = 0;
    q->back = NULL;
    q->busy = q->stop = q->err_no = q->started = 0;
    q->err_op = NULL;
    q->digest = NULL;
    q->digest_user = NULL;
    q->err_shard = 0;
#ifdef STS__THREADS
    q->threaded = threaded;
#else
    (void)threaded;
    q->threaded = 0;
#endif
}
/* Room to hand back `tokens` tokens at once (the caller's side allocates, never the thread). */
STS__PRIVATE int sts__wb_reserve(sts__wb *q, size_t tokens) {
    int ok = 1;
    STS__WB_LOCK(q);
    if (tokens > q->back_cap) {
        size_t cap = tokens + tokens / 2 + 16;
        int32_t *nb = (int32_t *)sts__realloc(q->mem, q->back, q->back_cap * sizeof *q->back, cap * sizeof *q->back);
        if (nb) { q->back = nb; q->back_cap = cap; } else ok = 0;
    }
    STS__WB_UNLOCK(q);
    return ok;
}
/* Starts the I/O thread; when it cannot, the queue runs its items on the caller's thread. */
STS__PRIVATE void sts__wb_start(sts__wb *q) {
#ifdef STS__THREADS
    if (pthread_mutex_init(&q->mu, NULL) != 0) { q->threaded = 0; return; }
    if (pthread_cond_init(&q->work, NULL) != 0) {
        pthread_mutex_destroy(&q->mu);
        q->threaded = 0;
        return;
    }
    if (pthread_cond_init(&q->done, NULL) != 0) {
        pthread_cond_destroy(&q->work);
        pthread_mutex_destroy(&q->mu);
        q->threaded = 0;
        return;
    }
    if (pthread_create(&q->th, NULL, sts__wb_main, q) != 0) {
        pthread_cond_destroy(&q->done); pthread_cond_destroy(&q->work); pthread_mutex_destroy(&q->mu);
        q->threaded = 0;
        return;
    }
    q->started = 1;
#else
    q->threaded = 0;
#endif
}
/* Queues n items under one lock (blocking while the ring is full: it then holds whole groups,
   which the thread takes); without a thread each group runs when it is whole. A POPULATE item
   goes to the front, so memory the caller is about to fill is faulted in before the writes queued
   earlier (a shard's worth at a seal) are done. */
STS__PRIVATE int sts__wb_put_n(sts__wb *q, const sts__wbitem *its, size_t n) {
    size_t i;
#ifdef STS__THREADS
    if (q->threaded && !q->started) sts__wb_start(q);
    if (q->threaded) {
        pthread_mutex_lock(&q->mu);
        for (i = 0; i < n; i++) {
            while (q->n == STS__WB_RING) pthread_cond_wait(&q->done, &q->mu);
            if (its[i].kind == STS__WB_POPULATE) {  /* a hint, in no file's order: ahead of the writes */
                q->head = (q->head + STS__WB_RING - 1) % STS__WB_RING;
                q->ring[q->head] = its[i];
            } else q->ring[(q->head + q->n) % STS__WB_RING] = its[i];
            q->n++;
            if (!its[i].more) pthread_cond_signal(&q->work);
        }
        pthread_mutex_unlock(&q->mu);
        return 1;
    }
#endif
    for (i = 0; i < n; i++) {
        q->ring[(q->head + q->n) % STS__WB_RING] = its[i];
        q->n++;
        while (!its[i].more && q->n) {
            sts__wbitem batch[STS__IOV_MAX];
            const char *op = "write";
            size_t k = sts__wb_take_items(q, batch);
            int e = sts__wb_run(q, batch, k, q->err_no != 0, &op);
            sts__wb_after(q, batch, k, e, op);
        }
    }
    return 1;
}
STS__PRIVATE int sts__wb_put(sts__wb *q, const sts__wbitem *it) { return sts__wb_put_n(q, it, 1); }
/* Waits until every queued item ran; returns the first failure's errno (0 if none). */
STS__PRIVATE int sts__wb_idle(sts__wb *q) {
    int e;
    STS__WB_LOCK(q);
#ifdef STS__THREADS
    if (q->threaded && q->started) while (q->n || q->busy) pthread_cond_wait(&q->done, &q->mu);
#endif
    e = q->err_no;
    STS__WB_UNLOCK(q);
    return e;
}
/* A token handed back, or -1. With `wait`, blocks while the thread still has work that may hand
   one back. */
STS__PRIVATE int32_t sts__wb_take(sts__wb *q, int wait) {
    int32_t t = -1;
    STS__WB_LOCK(q);
    for (;;) {
        if (q->nback) { t = q->back[--q->nback]; break; }
#ifdef STS__THREADS
        if (wait && q->threaded && q->started && (q->n || q->busy)) { pthread_cond_wait(&q->done, &q->mu); continue; }
#endif
        break;
    }
    STS__WB_UNLOCK(q);
    (void)wait;
    return t;
}
/* Runs what is queued, stops the thread and frees the token list. */
STS__PRIVATE void sts__wb_stop(sts__wb *q) {
#ifdef STS__THREADS
    if (q->threaded && q->started) {
        pthread_mutex_lock(&q->mu);
        q->stop = 1;
        pthread_cond_signal(&q->work);
        pthread_mutex_unlock(&q->mu);
        pthread_join(q->th, NULL);
        pthread_cond_destroy(&q->done);
        pthread_cond_destroy(&q->work);
        pthread_mutex_destroy(&q->mu);
        q->started = 0;
    }
#endif
    sts__free(q->mem, q->back, q->back_cap * sizeof *q->back);
    q->back = NULL;
    q->back_cap = q->nback = 0;
}
/* The first failure the queue met (an errno), or 0, without waiting. */
STS__PRIVATE int sts__wb_error(sts__wb *q) {
    int e;
    STS__WB_LOCK(q);
    e = q->err_no;
    STS__WB_UNLOCK(q);
    return e;
}

/* >>parallel ---- a few jobs at once ----
   sts__par_run runs job(ctx, i) for each i in [0, n): jobs 1..n-1 on threads of their own, job 0
   on the caller's thread, and returns when all have finished. sts__par_start starts jobs
   [from, n) on threads and returns at once, so that the caller works beside them until
   sts__par_wait. A thread that cannot start has its job run on the caller's thread (at once, by
   sts__par_start): the result is the same, only later. Without threads every job runs on the
   caller's thread. Jobs must not allocate (the allocator hooks need not be thread-safe)
   and must touch only what their index gives them. */
#define STS__PAR_MAX 64
typedef void (*sts__job_fn)(void *ctx, size_t i);
typedef struct sts__par_job { sts__job_fn fn; void *ctx; size_t i; } sts__par_job;
typedef struct sts__par {
    size_t from, n;
#ifdef STS__THREADS
    sts__par_job jobs[STS__PAR_MAX];
    pthread_t th[STS__PAR_MAX];
    unsigned char started[STS__PAR_MAX];
#endif
} sts__par;
#ifdef STS__THREADS
STS__PRIVATE void *sts__par_main(void *arg) {
    const sts__par_job *j = (const sts__par_job *)arg;
    j->fn(j->ctx, j->i);
    return NULL;
}
#endif
STS__PRIVATE void sts__par_start(sts__par *p, sts__job_fn fn, void *ctx, size_t from, size_t n) {
    size_t i;
    p->from = from;
    p->n = n > STS__PAR_MAX ? STS__PAR_MAX : n;
    for (i = from; i < p->n; i++) {
#ifdef STS__THREADS
        p->jobs[i].fn = fn; p->jobs[i].ctx = ctx; p->jobs[i].i = i;
        p->started[i] = pthread_create(&p->th[i], NULL, sts__par_main, &p->jobs[i]) == 0;
        if (!p->started[i]) fn(ctx, i);
#else
        fn(ctx, i);
#endif
    }
}
STS__PRIVATE void sts__par_wait(sts__par *p) {
#ifdef STS__THREADS
    size_t i;
    for (i = p->from; i < p->n; i++)
        if (p->started[i]) pthread_join(p->th[i], NULL);
#endif
    p->n = p->from;
}
STS__PRIVATE void sts__par_run(sts__job_fn fn, void *ctx, size_t n) {
    sts__par p;
    sts__par_start(&p, fn, ctx, 1, n);
    if (n) fn(ctx, 0);
    sts__par_wait(&p);
}
/* Online CPUs (1 when unknown or without threads), at most STS__PAR_MAX. */
STS__PRIVATE size_t sts__cpus(void) {
#if defined(STS__THREADS) && defined(_SC_NPROCESSORS_ONLN)
    long n = sysconf(_SC_NPROCESSORS_ONLN);
    return n < 1 ? 1 : n > STS__PAR_MAX ? STS__PAR_MAX : (size_t)n;
#else
    return 1;
#endif
}
#endif /* STS_NO_STDIO */

/* ==============================================================================================
   >>writer  6. writer
   Owns: the single-file writer. A plan checks every spec and the metadata (names, dtypes,
   sizes, overflow, duplicates, the header cap) before a byte is written, sorts the tensors as
   the reference writer does, and sizes the header exactly; rendering emits the reference's bytes.
   Tensor data goes straight from the caller's pointer or producer to the sink: no staging copy.
   May call: util, dtype, header (limits), io. Strings are escaped here by the reference writer's
   rule (sts__esc_put), not through json.
   ============================================================================================== */
struct sts_stream {
    const sts_sink *sink;
    sts_result (*flush)(void *user);  /* a gathering sink: pieces go out before the producer reuses its buffer */
    uint64_t left;          /* bytes the producer still owes */
    sts_result failed;
    int sink_failed;
};
STSDEF sts_result sts_stream_write(sts_stream *s, const void *bytes, size_t len) {
    sts_result r;
    if (!s || (!bytes && len)) return STS_ERR_INVALID_ARGUMENT;
    if (s->failed != STS_OK) return s->failed;
    if ((uint64_t)len > s->left) { s->failed = STS_ERR_INVALID_ARGUMENT; return s->failed; }
    if (len == 0) return STS_OK;
    if ((r = s->sink->write(s->sink->user, bytes, len)) != STS_OK ||
        (s->flush && (r = s->flush(s->sink->user)) != STS_OK)) {
        s->failed = r;
        s->sink_failed = 1;
        return r;
    }
    s->left -= len;
    return STS_OK;
}

typedef struct sts__plan {
    sts__mem mem;
    size_t n;
    size_t *order;          /* spec indices in layout order */
    uint64_t *begin;        /* data offset by spec index */
    size_t order_bytes, begin_bytes;  /* order_bytes 0: the order is borrowed from the caller */
    uint64_t json_len;      /* unpadded header JSON */
    uint64_t header_len;    /* N: padded to a multiple of 8 */
    uint64_t data_len;
} sts__plan;

STS__PRIVATE void sts__plan_free(sts__plan *pl) {
    if (pl->order_bytes) sts__free(&pl->mem, pl->order, pl->order_bytes);
    sts__free(&pl->mem, pl->begin, pl->begin_bytes);
    pl->order = NULL;
    pl->begin = NULL;
}
/* 1 when none of the 8 bytes at s needs escaping: no control character, '"' or '\\' (bytes
   >= 0x80 are UTF-8 and go raw). Word-at-a-time tests, exact for "any byte"; byte order free. */
STS__PRIVATE int sts__esc_clean8(const char *s) {
    const uint64_t ones = 0x0101010101010101ull, high = 0x8080808080808080ull;
    uint64_t w, q, b;
    memcpy(&w, s, 8);
    q = w ^ (ones * '"');
    b = w ^ (ones * '\\');
    return (((w - ones * 0x20) & ~w) | ((q - ones) & ~q) | ((b - ones) & ~b)) & high ? 0 : 1;
}
/* Bytes a string takes in the header: the reference escapes '"', '\\' and control characters
   (\b \f \n \r \t, else \u00XX in lowercase hex) and writes everything else raw. */
STS__PRIVATE uint64_t sts__esc_len(const char *s, size_t n) {
    uint64_t len = 2;
    size_t i = 0;
    while (i + 8 <= n && sts__esc_clean8(s + i)) { len += 8; i += 8; }
    for (; i < n; i++) {
        unsigned char c = (unsigned char)s[i];
        if (c >= 0x20 && c != '"' && c != '\\') len += 1;
        else if (c == '"' || c == '\\' || c == 8 || c == 9 || c == 10 || c == 12 || c == 13) len += 2;
        else len += 6;
    }
    return len;
}
STS__PRIVATE uint8_t *sts__esc_put(uint8_t *o, const char *s, size_t n) {
    static const char hex[] = "0123456789abcdef";
    size_t i = 0;
    *o++ = '"';
    while (i + 8 <= n && sts__esc_clean8(s + i)) { memcpy(o, s + i, 8); o += 8; i += 8; }
    for (; i < n; i++) {
        unsigned char c = (unsigned char)s[i];
        if (c >= 0x20 && c != '"' && c != '\\') { *o++ = c; continue; }
        *o++ = '\\';
        switch (c) {
        case '"': *o++ = '"'; break;
        case '\\': *o++ = '\\'; break;
        case 8: *o++ = 'b'; break;
        case 9: *o++ = 't'; break;
        case 10: *o++ = 'n'; break;
        case 12: *o++ = 'f'; break;
        case 13: *o++ = 'r'; break;
        default: *o++ = 'u'; *o++ = '0'; *o++ = '0'; *o++ = (uint8_t)hex[c >> 4]; *o++ = (uint8_t)hex[c & 15]; break;
        }
    }
    *o++ = '"';
    return o;
}
/* Decimal digits of v. With a count-leading-zeros builtin: the bit length gives the digit count
   to within one (x 1233 / 4096 ~ log10 2), one compare settles it; else a few compares. */
STS__PRIVATE uint64_t sts__digits(uint64_t v) {
#if defined(__GNUC__) || defined(__clang__)
    static const uint64_t p10[20] = { 1ull, 10ull, 100ull, 1000ull, 10000ull, 100000ull, 1000000ull, 10000000ull,
                                      100000000ull, 1000000000ull, 10000000000ull, 100000000000ull,
                                      1000000000000ull, 10000000000000ull, 100000000000000ull,
                                      1000000000000000ull, 10000000000000000ull, 100000000000000000ull,
                                      1000000000000000000ull, 10000000000000000000ull };
    unsigned t = (unsigned)(64 - __builtin_clzll(v | 1)) * 1233u >> 12;  /* digits - 1 or digits */
    return (uint64_t)t + ((v | 1) >= p10[t]);
#else
    uint64_t d = 0;
    if (v >= 10000000000ull) { d = 10; v /= 10000000000ull; }  /* a constant divisor: a multiply */
    if (v < 100000) return d + (v < 10 ? 1 : v < 100 ? 2 : v < 1000 ? 3 : v < 10000 ? 4 : 5);
    return d + (v < 1000000 ? 6 : v < 10000000 ? 7 : v < 100000000 ? 8 : v < 1000000000 ? 9 : 10);
#endif
}
/* Two digits a step, from the last back; in 32-bit arithmetic once the value fits (offsets and
   dims usually do), where a division by 100 is a cheaper multiply. */
STS__PRIVATE uint8_t *sts__u64_put(uint8_t *o, uint64_t v) {
    static const char pairs[] = "00010203040506070809101112131415161718192021222324252627282930313233343536373839"
                                "40414243444546474849505152535455565758596061626364656667686970717273747576777879"
                                "8081828384858687888990919293949596979899";
    uint8_t *end = o + sts__digits(v), *p = end;
    uint32_t u, r;
    while (v > 0xffffffffu) {
        r = (uint32_t)(v % 100);
        v /= 100;
        p -= 2;
        p[0] = (uint8_t)pairs[2 * r]; p[1] = (uint8_t)pairs[2 * r + 1];
    }
    u = (uint32_t)v;
    while (u >= 100) {
        r = u % 100;
        u /= 100;
        p -= 2;
        p[0] = (uint8_t)pairs[2 * r]; p[1] = (uint8_t)pairs[2 * r + 1];
    }
    if (u >= 10) { p[-2] = (uint8_t)pairs[2 * u]; p[-1] = (uint8_t)pairs[2 * u + 1]; }
    else p[-1] = (uint8_t)('0' + u);
    return end;
}
STS__PRIVATE sts_result sts__check_text(const char *s, size_t n, int is_name, const char *what, sts_error *err) {
    if (!s && n) return sts__failx(err, STS_RULE_ARGUMENT, "%s is NULL with length %z", what, n);
    if (n && sts__utf8_check((const uint8_t *)s, n) != n)
        return sts__failx(err, STS_RULE_WRITE_TEXT, "%s %q is not valid UTF-8", what, s, n);
    if (is_name && n && memchr(s, 0, n))
        return sts__failx(err, STS_RULE_WRITE_TEXT, "%s %q contains NUL, which strict readers reject", what, s, n);
    return STS_OK;
}
typedef struct sts__spec_order { const sts_tensor_spec *specs; } sts__spec_order;
/* Layout order: dtype rank descending, then name bytes. */
STS__PRIVATE int sts__spec_less(const sts_tensor_spec *a, const sts_tensor_spec *b) {
    size_t la = a->name_len, lb = b->name_len, m = la < lb ? la : lb;
    int c;
    if (a->dtype != b->dtype) return a->dtype > b->dtype;
    c = m ? memcmp(a->name, b->name, m) : 0;
    return c < 0 || (c == 0 && la < lb);
}
STS__PRIVATE int sts__by_layout(const void *ctx, size_t a, size_t b) {
    const sts_tensor_spec *s = ((const sts__spec_order *)ctx)->specs;
    return sts__spec_less(&s[a], &s[b]);
}
/* Sorts idx[0..n) (spec indices) into the reference's layout order, stably. Already sorted input
   (the usual case: callers sort their names) costs one pass. Large inputs are radix-sorted on a
   64-bit key, the dtype rank then 7 name bytes after the names' common prefix, so the names are
   barely touched; runs with equal keys are finished by full comparison. 0 when out of memory. */
STS__PRIVATE int sts__layout_sort(const sts__mem *m, const sts_tensor_spec *specs, size_t *idx, size_t n) {
    sts__spec_order ctx;
    size_t i, j, lcp, *tmp = NULL, *out, bytes = (n ? n : 1) * sizeof(size_t), kbytes = (n ? n : 1) * sizeof(uint64_t);
    uint64_t *key = NULL, *key2 = NULL;
    int in_order = 1;
    ctx.specs = specs;
    for (i = 1; i < n && in_order; i++) in_order = !sts__by_layout(&ctx, idx[i], idx[i - 1]);
    if (in_order) return 1;
    if (!(tmp = (size_t *)sts__alloc(m, bytes))) return 0;
    if (n < 4096) {
        out = sts__msort(idx, tmp, n, sts__by_layout, &ctx);
        if (out != idx) memcpy(idx, out, n * sizeof *idx);
        sts__free(m, tmp, bytes);
        return 1;
    }
    if (!(key = (uint64_t *)sts__alloc(m, kbytes)) || !(key2 = (uint64_t *)sts__alloc(m, kbytes))) {
        sts__free(m, key, kbytes);
        sts__free(m, tmp, bytes);
        return 0;
    }
    {   /* the keys, after the common prefix of every name */
        const sts_tensor_spec *f = &specs[idx[0]];
        static const unsigned shift[7] = { 48, 40, 32, 24, 16, 8, 0 };
        lcp = f->name_len;
        for (i = 1; i < n && lcp; i++) {
            const sts_tensor_spec *t = &specs[idx[i]];
            size_t k = 0, lim = lcp < t->name_len ? lcp : t->name_len;
            if (lim == lcp && memcmp(f->name, t->name, lim) == 0) continue;
            while (k < lim && f->name[k] == t->name[k]) k++;
            lcp = k;
        }
        for (i = 0; i < n; i++) {
            const sts_tensor_spec *t = &specs[idx[i]];
            uint64_t k = (uint64_t)(255 - (unsigned)t->dtype) << 56;
            for (j = 0; j < 7 && lcp + j < t->name_len; j++) k |= (uint64_t)(uint8_t)t->name[lcp + j] << shift[j];
            key[i] = k;
        }
    }
    {   /* LSD radix, a byte a pass; passes where every key has the same byte are skipped */
        size_t count[8][256], pass;
        uint64_t *ks = key, *kd = key2, *ksw;
        size_t *is = idx, *id = tmp, *isw;
        memset(count, 0, sizeof count);
        for (i = 0; i < n; i++)
            for (pass = 0; pass < 8; pass++) count[pass][(key[i] >> (8 * pass)) & 0xff]++;
        for (pass = 0; pass < 8; pass++) {
            size_t sum = 0, c, *cnt = count[pass];
            if (cnt[(ks[0] >> (8 * pass)) & 0xff] == n) continue;
            for (c = 0; c < 256; c++) { size_t t = cnt[c]; cnt[c] = sum; sum += t; }
            for (i = 0; i < n; i++) {
                size_t at = cnt[(ks[i] >> (8 * pass)) & 0xff]++;
                kd[at] = ks[i];
                id[at] = is[i];
            }
            ksw = ks; ks = kd; kd = ksw;
            isw = is; is = id; id = isw;
        }
        if (is != idx) { memcpy(idx, is, n * sizeof *idx); memcpy(key, ks, n * sizeof *key); }
    }
    for (i = 0; i < n; i = j) {  /* equal keys: the names decide */
        for (j = i + 1; j < n && key[j] == key[i]; j++) {}
        if (j - i > 1) {
            out = sts__msort(idx + i, tmp, j - i, sts__by_layout, &ctx);
            if (out != idx + i) memcpy(idx + i, out, (j - i) * sizeof *idx);
        }
    }
    sts__free(m, key, kbytes);
    sts__free(m, key2, kbytes);
    sts__free(m, tmp, bytes);
    return 1;
}
/* Every check, the layout and the exact header size, before any byte is written. */
STS__PRIVATE sts_result sts__plan_make(sts__plan *pl, const sts_tensor_spec *specs, size_t n,
                                       const sts_kv *meta, size_t n_meta, const sts_options *o, sts_error *err) {
    sts__index ix;
    sts__names k;
    uint64_t *hashes = NULL, len, cursor = 0, max = sts__max_header(o), seed;
    size_t i, hbytes = 0;
    sts_result r = STS_OK;
    memset(pl, 0, sizeof *pl);
    pl->mem = sts__mem_from(o);
    pl->n = n;
    ix.slots = NULL;
    if (!sts__mem_valid(&pl->mem))
        return sts__failx(err, STS_RULE_ARGUMENT, "the allocator needs all three hooks or none");
    if ((!specs && n) || (!meta && n_meta))
        return sts__failx(err, STS_RULE_ARGUMENT, "specs or metadata are NULL with a nonzero count");
    if (n > 0xfffffffeu || n_meta > 0xfffffffeu)
        return sts__failx(err, STS_RULE_ARGUMENT, "too many tensors or metadata entries");
    len = 2;  /* {} */
    for (i = 0; i < n; i++) {
        const sts_tensor_spec *s = &specs[i];
        uint64_t numel = 1, bits;
        uint32_t d;
        if ((r = sts__check_text(s->name, s->name_len, 1, "tensor name", err)) != STS_OK) return r;
        if (s->name_len == 12 && memcmp(s->name, "__metadata__", 12) == 0)
            return sts__failx(err, STS_RULE_WRITE_RESERVED,
                              "a tensor may not be named \"__metadata__\": readers take it for the metadata");
        if ((unsigned)s->dtype >= (unsigned)STS_DTYPE_COUNT)
            return sts__failx(err, STS_RULE_WRITE_DTYPE,
                              "tensor %q: dtype %d is not one of the 22", s->name, s->name_len, (int)s->dtype);
        if (s->rank && !s->shape)
            return sts__failx(err, STS_RULE_WRITE_DTYPE,
                              "tensor %q: rank %d but no shape", s->name, s->name_len, (int)s->rank);
        for (d = 0; d < s->rank; d++)
            if (!sts__mul64(numel, s->shape[d], &numel))
                return sts__failx(err, STS_RULE_NUMEL_OVERFLOW, "tensor %q: the product of shape %S overflows 64 bits",
                                  s->name, s->name_len, s->shape, (size_t)s->rank);
        if (!sts__mul64(numel, sts__dtype_bits[s->dtype], &bits))
            return sts__failx(err, STS_RULE_BITS_OVERFLOW,
                              "tensor %q: %U elements of %s overflow 64 bits when counted in bits",
                              s->name, s->name_len, numel, sts__dtype_names[s->dtype]);
        if (bits % 8)
            return sts__failx(err, STS_RULE_BYTE_ALIGNED,
                              "tensor %q: %U elements of %s are %U bits, not a whole number of bytes",
                              s->name, s->name_len, numel, sts__dtype_names[s->dtype], bits);
        if (bits / 8 != s->data_size)
            return sts__failx(err, STS_RULE_WRITE_DATA_SIZE, "tensor %q: %s %S is %U bytes, but data_size is %U",
                              s->name, s->name_len, sts__dtype_names[s->dtype], s->shape, (size_t)s->rank,
                              bits / 8, s->data_size);
        if (s->data_size && !s->data && !s->produce)
            return sts__failx(err, STS_RULE_WRITE_DATA_SIZE,
                              "tensor %q has neither data nor a producer", s->name, s->name_len);
        /* "name":{"dtype":"X","shape":[..],"data_offsets":[b,e]}  (offsets added below) */
        len += sts__esc_len(s->name, s->name_len) + 1 + 10 + strlen(sts__dtype_names[s->dtype]) + 11 + 19 + 2 +
               (i ? 1 : 0);
        for (d = 0; d < s->rank; d++) len += sts__digits(s->shape[d]) + (d ? 1 : 0);
    }
    if (meta) {
        len += 16 + 1 + (n ? 1 : 0);  /* "__metadata__":{ } and the comma after it */
        for (i = 0; i < n_meta; i++) {
            if ((r = sts__check_text(meta[i].key, meta[i].key_len, 0, "metadata key", err)) != STS_OK) return r;
            if ((r = sts__check_text(meta[i].value, meta[i].value_len, 0, "metadata value", err)) != STS_OK) return r;
            len += sts__esc_len(meta[i].key, meta[i].key_len) + 1 + sts__esc_len(meta[i].value, meta[i].value_len) +
                   (i ? 1 : 0);
        }
    }
    /* duplicates: one index for the names, then one for the metadata keys */
    if (!sts__mulsz((n > n_meta ? n : n_meta) + 1, sizeof *hashes, &hbytes) ||
        !(hashes = (uint64_t *)sts__alloc(&pl->mem, hbytes)))
        return sts__nomem(err, "the writer's name index");
    seed = sts__seed_from(hashes, o ? o->hash_seed : 0);
    if (!sts__index_init(&pl->mem, &ix, n)) { r = sts__nomem(err, "the writer's name index"); goto done; }
    k.items = specs; k.stride = sizeof *specs; k.ptr_off = offsetof(sts_tensor_spec, name);
    k.len_off = offsetof(sts_tensor_spec, name_len); k.hashes = hashes; k.hash_stride = sizeof *hashes;
    for (i = 0; i < n; i++) {
        size_t pos;
        hashes[i] = sts__hash(specs[i].name, specs[i].name_len, seed);
        pos = sts__index_probe(&ix, &k, hashes[i], specs[i].name, specs[i].name_len);
        if (ix.slots[pos] != STS__EMPTY) {
            r = sts__failx(err, STS_RULE_WRITE_DUPLICATE,
                           "tensor name %q is given twice", specs[i].name, specs[i].name_len);
            goto done;
        }
        ix.slots[pos] = (uint32_t)i;
    }
    sts__index_free(&pl->mem, &ix);
    if (!sts__index_init(&pl->mem, &ix, n_meta)) { r = sts__nomem(err, "the writer's name index"); goto done; }
    k.items = meta; k.stride = sizeof *meta; k.ptr_off = offsetof(sts_kv, key); k.len_off = offsetof(sts_kv, key_len);
    for (i = 0; i < n_meta; i++) {
        size_t pos;
        hashes[i] = sts__hash(meta[i].key, meta[i].key_len, seed);
        pos = sts__index_probe(&ix, &k, hashes[i], meta[i].key, meta[i].key_len);
        if (ix.slots[pos] != STS__EMPTY) {
            r = sts__failx(err, STS_RULE_WRITE_DUPLICATE,
                           "metadata key %q is given twice", meta[i].key, meta[i].key_len);
            goto done;
        }
        ix.slots[pos] = (uint32_t)i;
    }
    /* layout: the reference's order, contiguous offsets */
    if (!sts__mulsz(n ? n : 1, sizeof(size_t), &pl->order_bytes) ||
        !sts__mulsz(n ? n : 1, sizeof(uint64_t), &pl->begin_bytes) ||
        !(pl->order = (size_t *)sts__alloc(&pl->mem, pl->order_bytes)) ||
        !(pl->begin = (uint64_t *)sts__alloc(&pl->mem, pl->begin_bytes))) {
        r = sts__nomem(err, "the writer's layout");
        goto done;
    }
    for (i = 0; i < n; i++) pl->order[i] = i;
    if (!sts__layout_sort(&pl->mem, specs, pl->order, n)) {
        r = sts__nomem(err, "the writer's layout");
        goto done;
    }
    for (i = 0; i < n; i++) {
        size_t s = pl->order[i];
        pl->begin[s] = cursor;
        len += sts__digits(cursor);
        if (!sts__add64(cursor, specs[s].data_size, &cursor)) {
            r = sts__failx(err, STS_RULE_WRITE_TOTAL,
                           "the total data size overflows 64 bits at tensor %q", specs[s].name, specs[s].name_len);
            goto done;
        }
        len += sts__digits(cursor);
    }
    pl->json_len = len;
    pl->header_len = (len + 7) / 8 * 8;
    pl->data_len = cursor;
    if (pl->header_len > max)
        r = sts__failx(err, STS_RULE_HEADER_TOO_LARGE,
                       "the header would be %U bytes, over the limit of %U", pl->header_len, max);
    else if (!sts__add64(8 + pl->header_len, cursor, &len))
        r = sts__failx(err, STS_RULE_WRITE_TOTAL,
                       "8 + %U header bytes + %U data bytes overflow 64 bits", pl->header_len, cursor);
done:
    sts__index_free(&pl->mem, &ix);
    sts__free(&pl->mem, hashes, hbytes);
    if (r != STS_OK) sts__plan_free(pl);
    return r;
}
/* One entry: "name":{"dtype":"X","shape":[..],"data_offsets":[b,e]}, with a comma before it. */
STS__PRIVATE uint8_t *sts__render_entry(uint8_t *o, const sts_tensor_spec *s, uint64_t begin, int comma) {
    const char *dn = sts__dtype_names[s->dtype];
    size_t dl = strlen(dn);
    uint32_t d;
    if (comma) *o++ = ',';
    o = sts__esc_put(o, s->name, s->name_len);
    memcpy(o, ":{\"dtype\":\"", 11); o += 11;
    memcpy(o, dn, dl); o += dl;
    memcpy(o, "\",\"shape\":[", 11); o += 11;
    for (d = 0; d < s->rank; d++) { if (d) *o++ = ','; o = sts__u64_put(o, s->shape[d]); }
    memcpy(o, "],\"data_offsets\":[", 18); o += 18;
    o = sts__u64_put(o, begin);
    *o++ = ',';
    o = sts__u64_put(o, begin + s->data_size);
    *o++ = ']';
    *o++ = '}';
    return o;
}
/* The most bytes sts__render_entry can write: every name byte escaped to 6, 20-digit numbers. */
STS__PRIVATE uint64_t sts__entry_max(const sts_tensor_spec *s) {
    return 6 * (uint64_t)s->name_len + 21 * (uint64_t)s->rank + 128;
}
/* "__metadata__":{...}, and the comma after it when tensors follow. */
STS__PRIVATE uint8_t *sts__render_meta(uint8_t *o, const sts_kv *meta, size_t n_meta, int comma) {
    size_t i;
    memcpy(o, "\"__metadata__\":{", 16); o += 16;
    for (i = 0; i < n_meta; i++) {
        if (i) *o++ = ',';
        o = sts__esc_put(o, meta[i].key, meta[i].key_len);
        *o++ = ':';
        o = sts__esc_put(o, meta[i].value, meta[i].value_len);
    }
    *o++ = '}';
    if (comma) *o++ = ',';
    return o;
}
/* The 8-byte length and the padded header: exactly 8 + header_len bytes into dst. */
STS__PRIVATE void sts__plan_render(const sts__plan *pl, const sts_tensor_spec *specs, const sts_kv *meta, size_t n_meta,
                                   uint8_t *dst) {
    uint8_t *o = dst + 8, *end = dst + 8 + pl->header_len;
    size_t i;
    sts__st64(dst, pl->header_len);
    *o++ = '{';
    if (meta) o = sts__render_meta(o, meta, n_meta, pl->n != 0);
    for (i = 0; i < pl->n; i++) o = sts__render_entry(o, &specs[pl->order[i]], pl->begin[pl->order[i]], i != 0);
    *o++ = '}';
    STS_ASSERT((uint64_t)(o - dst - 8) == pl->json_len);
    while (o < end) *o++ = ' ';
}
/* Header, then each tensor's bytes in layout order, straight to the sink. The header is rendered
   in pieces of at most 1 MiB (a 100 MB header never sits in memory whole); a gathering sink (the
   fd sink) is flushed through `flush` before a piece's buffer is reused or released. */
STS__PRIVATE sts_result sts__plan_emit_data(const sts__plan *pl, const sts_tensor_spec *specs, const sts_sink *sink,
                                            sts_result (*flush)(void *user), sts_error *err);
/* The 8-byte length and the padded header, in pieces; a gathering sink is flushed before the
   buffer goes. */
STS__PRIVATE sts_result sts__plan_emit_header(const sts__plan *pl, const sts_tensor_spec *specs,
                                              const sts_kv *meta, size_t n_meta,
                                              const sts_sink *sink, sts_result (*flush)(void *user), sts_error *err) {
    uint64_t total = 8 + pl->header_len, sent = 0, need = 8 + 1 + 1 + 7, cap64 = (uint64_t)1 << 20;
    size_t cap, i;
    uint8_t *buf, *o, *end;
    sts_result r = STS_OK;
    if (meta) {  /* the metadata goes as one piece */
        need += 16 + 2;
        for (i = 0; i < n_meta; i++) need += 6 * ((uint64_t)meta[i].key_len + meta[i].value_len) + 8;
    }
    for (i = 0; i < pl->n && need <= cap64; i++) {
        uint64_t e = sts__entry_max(&specs[pl->order[i]]) + 8;
        if (e > need) need = e;
    }
    cap = (size_t)(total < cap64 || need > cap64 ? total : cap64);  /* whole when small, or when one piece is huge */
    if (!(buf = (uint8_t *)sts__alloc(&pl->mem, cap))) return sts__nomem(err, "the header");
    end = buf + cap;
#define STS__HDR_OUT() do { \
        if ((r = sink->write(sink->user, buf, (size_t)(o - buf))) == STS_OK && flush && cap < total) \
            r = flush(sink->user); \
        if (r != STS_OK) { \
            r = sts__fail_code(err, r, STS_RULE_IO, sent, "the sink failed writing the header (%s)", \
                               sts_result_name(r)); \
            goto out; \
        } \
        sent += (uint64_t)(o - buf); \
        o = buf; \
    } while (0)
    o = buf;
    sts__st64(o, pl->header_len);
    o += 8;
    *o++ = '{';
    if (meta) o = sts__render_meta(o, meta, n_meta, pl->n != 0);
    for (i = 0; i < pl->n; i++) {
        const sts_tensor_spec *sp = &specs[pl->order[i]];
        if (cap < total && (uint64_t)(end - o) < sts__entry_max(sp) + 8)
            STS__HDR_OUT();  /* a whole buffer fits exactly */
        o = sts__render_entry(o, sp, pl->begin[pl->order[i]], i != 0);
    }
    *o++ = '}';
    STS_ASSERT(sent + (uint64_t)(o - buf) - 8 == pl->json_len);
    while (sent + (uint64_t)(o - buf) < total) *o++ = ' ';
    STS__HDR_OUT();
#undef STS__HDR_OUT
    if (flush && cap == total && (r = flush(sink->user)) != STS_OK)
        r = sts__fail_code(err, r, STS_RULE_IO, 0, "the sink failed writing the header (%s)", sts_result_name(r));
out:
    sts__free(&pl->mem, buf, cap);
    return r;
}
STS__PRIVATE sts_result sts__plan_emit(const sts__plan *pl, const sts_tensor_spec *specs,
                                       const sts_kv *meta, size_t n_meta,
                                       const sts_sink *sink, sts_result (*flush)(void *user), sts_error *err) {
    sts_result r = sts__plan_emit_header(pl, specs, meta, n_meta, sink, flush, err);
    if (r == STS_OK) r = sts__plan_emit_data(pl, specs, sink, flush, err);
    if (r == STS_OK && flush && (r = flush(sink->user)) != STS_OK)
        r = sts__fail_code(err, r, STS_RULE_IO, STS_OFFSET_UNKNOWN, "the sink failed (%s)", sts_result_name(r));
    return r;
}
STS__PRIVATE sts_result sts__plan_emit_data(const sts__plan *pl, const sts_tensor_spec *specs, const sts_sink *sink,
                                            sts_result (*flush)(void *user), sts_error *err) {
    size_t i;
    sts_result r;
    uint64_t off = 8 + pl->header_len;
    for (i = 0; i < pl->n; i++) {
        const sts_tensor_spec *s = &specs[pl->order[i]];
        if (!s->data_size) continue;
        if (s->data) {
            const uint8_t *p = (const uint8_t *)s->data;
            uint64_t left = s->data_size;
            while (left) {
                size_t chunk = left > ((uint64_t)1 << 30) ? ((size_t)1 << 30) : (size_t)left;
                if ((r = sink->write(sink->user, p, chunk)) != STS_OK)
                    return sts__fail_code(err, r, STS_RULE_IO, off, "the sink failed writing tensor %q (%s)",
                                          s->name, s->name_len, sts_result_name(r));
                p += chunk; left -= chunk;
            }
        } else {
            sts_stream st;
            st.sink = sink; st.flush = flush; st.left = s->data_size; st.failed = STS_OK; st.sink_failed = 0;
            r = s->produce(s->produce_user, s, &st);
            if (st.sink_failed)
                return sts__fail_code(err, st.failed, STS_RULE_IO, off, "the sink failed writing tensor %q (%s)",
                                      s->name, s->name_len, sts_result_name(st.failed));
            if (r != STS_OK)
                return sts__fail_code(err, r, STS_RULE_WRITE_PRODUCER, off, "the producer of tensor %q failed (%s)",
                                      s->name, s->name_len, sts_result_name(r));
            if (st.failed != STS_OK)
                return sts__fail(err, STS_RULE_WRITE_PRODUCER, off,
                                 "the producer of tensor %q emitted more than its %U bytes",
                                 s->name, s->name_len, s->data_size);
            if (st.left)
                return sts__fail(err, STS_RULE_WRITE_PRODUCER, off,
                                 "the producer of tensor %q emitted %U of its %U bytes",
                                 s->name, s->name_len, s->data_size - st.left, s->data_size);
        }
        off += s->data_size;
    }
    return STS_OK;
}

/* Header bytes of one entry without its two offsets, comma included:
   "name":{"dtype":"X","shape":[..],"data_offsets":[,]}, */
STS__PRIVATE uint64_t sts__entry_fixed(const char *name, size_t len, sts_dtype d,
                                       const uint64_t *shape, uint32_t rank) {
    uint64_t n = sts__esc_len(name, len) + strlen(sts__dtype_names[d]) + 44;
    uint32_t i;
    for (i = 0; i < rank; i++) n += sts__digits(shape[i]) + (i ? 1 : 0);
    return n;
}
STSDEF sts_result sts_write_size(const sts_tensor_spec *specs, size_t n, const sts_kv *meta, size_t n_meta,
                                 const sts_options *opts, uint64_t *header_size, uint64_t *file_size, sts_error *err) {
    sts__plan pl;
    sts_result r = sts__plan_make(&pl, specs, n, meta, n_meta, opts, err);
    if (r != STS_OK) return r;
    if (header_size) *header_size = pl.header_len;
    if (file_size) *file_size = 8 + pl.header_len + pl.data_len;
    sts__plan_free(&pl);
    sts__ok(err);
    return STS_OK;
}
STSDEF sts_result sts_write(const sts_tensor_spec *specs, size_t n, const sts_kv *meta, size_t n_meta,
                            const sts_sink *sink, const sts_options *opts, sts_error *err) {
    sts__plan pl;
    sts_result r;
    if (!sink || !sink->write) return sts__failx(err, STS_RULE_ARGUMENT, "sts_write needs a sink with write");
    if ((r = sts__plan_make(&pl, specs, n, meta, n_meta, opts, err)) != STS_OK) return r;
    r = sts__plan_emit(&pl, specs, meta, n_meta, sink, NULL, err);
    sts__plan_free(&pl);
    if (r == STS_OK) sts__ok(err);
    return r;
}
typedef struct sts__memsink { uint8_t *p; size_t len, cap; } sts__memsink;
STS__PRIVATE sts_result sts__memsink_write(void *user, const void *bytes, size_t len) {
    sts__memsink *m = (sts__memsink *)user;
    if (len > m->cap - m->len) return STS_ERR_INVALID_ARGUMENT;
    memcpy(m->p + m->len, bytes, len);
    m->len += len;
    return STS_OK;
}
STSDEF sts_result sts_write_memory(const sts_tensor_spec *specs, size_t n, const sts_kv *meta, size_t n_meta,
                                   const sts_options *opts, void **out, size_t *out_size, sts_error *err) {
    sts__plan pl;
    sts__memsink ms;
    sts_sink sink;
    sts_result r;
    uint64_t total;
    if (!out || !out_size) return sts__failx(err, STS_RULE_ARGUMENT, "sts_write_memory needs out and out_size");
    if ((r = sts__plan_make(&pl, specs, n, meta, n_meta, opts, err)) != STS_OK) return r;
    total = 8 + pl.header_len + pl.data_len;
    if (total > (uint64_t)(size_t)-1) {
        sts__plan_free(&pl);
        return sts__failx(err, STS_RULE_UNSUPPORTED, "%U bytes do not fit in memory here", total);
    }
    ms.len = 0;
    ms.cap = (size_t)total;
    if (!(ms.p = (uint8_t *)sts__alloc(&pl.mem, ms.cap))) {
        sts__plan_free(&pl);
        return sts__nomem(err, "the output buffer");
    }
    sink.write = sts__memsink_write;
    sink.user = &ms;
    r = sts__plan_emit(&pl, specs, meta, n_meta, &sink, NULL, err);
    sts__plan_free(&pl);
    if (r != STS_OK) { sts__free(&pl.mem, ms.p, ms.cap); return r; }
    *out = ms.p;
    *out_size = ms.len;
    sts__ok(err);
    return STS_OK;
}
#ifndef STS_NO_STDIO
/* A file written atomically through emit: a temporary beside path gets a gathering fd sink (pieces
   go out in writev batches, flush empties it), then fsync (unless opts->no_fsync) and rename; on a
   failure the temporary goes and path is as it was. Both file writers (sts_write_path,
   sts_gguf_write_path) use it. */
typedef sts_result (*sts__emit_fn)(void *ctx, const sts_sink *sink, sts_result (*flush)(void *user), sts_error *err);
STS__PRIVATE sts_result sts__write_file_atomic(const char *path, const sts__mem *m, const sts_options *opts,
                                               sts__emit_fn emit, void *ctx, sts_error *err) {
    sts__atomic a;
    sts__fdsink *fs;
    sts_sink sink;
    sts_result r;
    if (!(fs = (sts__fdsink *)sts__alloc(m, sizeof *fs))) return sts__nomem(err, "the file sink");
    if ((r = sts__atomic_begin(&a, path, m, err)) != STS_OK) {
        sts__free(m, fs, sizeof *fs);
        return r;
    }
    fs->mem = m;
    fs->fd = a.fd;
    fs->err_no = 0;
    fs->n = 0;
    fs->pending = 0;
    sink.write = sts__fdsink_write;
    sink.user = fs;
    r = emit(ctx, &sink, sts__fdsink_flush_cb, err);
    if (r != STS_OK && fs->err_no) sts__fail_errno(err, fs->err_no, "write", path);
    sts__free(m, fs, sizeof *fs);
    if (r != STS_OK) {
        sts__atomic_abort(&a);
        return r;
    }
    return sts__atomic_commit(&a, !(opts && opts->no_fsync), err);
}
typedef struct sts__plan_job {
    const sts__plan *pl;
    const sts_tensor_spec *specs;
    const sts_kv *meta;
    size_t n_meta;
} sts__plan_job;
STS__PRIVATE sts_result sts__plan_emit_job(void *ctx, const sts_sink *sink, sts_result (*flush)(void *user),
                                           sts_error *err) {
    const sts__plan_job *j = (const sts__plan_job *)ctx;
    return sts__plan_emit(j->pl, j->specs, j->meta, j->n_meta, sink, flush, err);
}
STSDEF sts_result sts_write_path(const char *path, const sts_tensor_spec *specs, size_t n,
                                 const sts_kv *meta, size_t n_meta, const sts_options *opts, sts_error *err) {
    sts__plan pl;
    sts__plan_job job;
    sts_result r;
    if (!path) return sts__failx(err, STS_RULE_ARGUMENT, "sts_write_path needs a path");
    if ((r = sts__plan_make(&pl, specs, n, meta, n_meta, opts, err)) != STS_OK) return r;
    job.pl = &pl;
    job.specs = specs;
    job.meta = meta;
    job.n_meta = n_meta;
    r = sts__write_file_atomic(path, &pl.mem, opts, sts__plan_emit_job, &job, err);
    sts__plan_free(&pl);
    if (r == STS_OK) sts__ok(err);
    return r;
}
#endif

/* ==============================================================================================
   >>codec  7. codec
   Owns: sts_convert and its helpers. One general mechanism: a source block is decoded into wide
   values (sign, 64-bit magnitude, binary exponent; or Inf / NaN with payload), then encoded into
   the target with one rounding routine for every float target and one saturating routine for
   every integer target. Same-dtype copies and C64 -> F32 are memmove/memcpy. The hot pairs
   (F32 <-> F16, F32 <-> BF16) have kernels: a scalar twin plus SSE2, AVX2+F16C and AVX-512 (F+BW)
   versions picked at run time (per-function target attributes, no -m flags needed), and NEON on
   little-endian AArch64. All give the same bits; the tests check it exhaustively. Also CRC-32C
   (>>crc32c), the shards' checksum: AVX-512 VPCLMULQDQ folds, SSE4.2 + PCLMUL lanes, or a table; SHA-256
   (>>sha256), the digest of files and tensors: the SHA extensions, or a portable loop; and the
   dequantisation of ggml's block types to F32 (>>dequant): SSE2, AVX2 or NEON kernels, or scalar.
   Thread safety: the only state is the CPU-feature word, computed on first use and kept with
   relaxed atomic loads/stores (two threads may both compute it; they store the same value).
   May call: util, dtype.
   ============================================================================================== */

/* Output size (bytes) from which SIMD kernels write with non-temporal stores: the result then
   bypasses the caches, which pays once it is larger than they are. */
#ifndef STS_CONVERT_NT_BYTES
#  define STS_CONVERT_NT_BYTES ((size_t)16 << 20)
#endif

#if !defined(STS_NO_SIMD) && (defined(__GNUC__) || defined(__clang__)) && (defined(__x86_64__) || defined(__i386__))
#  define STS__X86_DYN 1
#  include <immintrin.h>
#  define STS__TARGET_AVX2 __attribute__((target("avx2,f16c")))
#  define STS__TARGET_AVX512 __attribute__((target("avx512f,avx512bw,avx2,f16c")))
#endif
#if !defined(STS_NO_SIMD) && defined(__aarch64__) && defined(__ARM_NEON) && \
    defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__ && (defined(__GNUC__) || defined(__clang__))
#  define STS__NEON 1
#  include <arm_neon.h>
#endif

/* SIMD step helpers are always inlined into their kernels (they take vectors and an nt flag). */
#define STS__VEC STS__INLINE
/* Hosts known little-endian at compile time store 16/32-bit values with one memcpy; others (and
   unknown ones) assemble bytes. Loads are byte assembly everywhere: compilers merge those. */
#if (defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__) || defined(_M_X64) || \
    defined(_M_IX86) || defined(_M_ARM64)
#  define STS__HOST_LE 1
#endif

enum { STS__ISA_SCALAR = 0, STS__ISA_BASE = 1 /* SSE2 or NEON */, STS__ISA_AVX2 = 2, STS__ISA_AVX512 = 3 };

/* ---- little-endian 16/32-bit loads and stores (byte assembly; compilers emit one move) ---- */
STS__PRIVATE uint32_t sts__le16(const uint8_t *p) { return (uint32_t)p[0] | (uint32_t)p[1] << 8; }
STS__PRIVATE uint32_t sts__le32(const uint8_t *p) {
    return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}
STS__PRIVATE void sts__st16(uint8_t *p, uint32_t v) {
#ifdef STS__HOST_LE
    uint16_t t = (uint16_t)v;
    memcpy(p, &t, 2);
#else
    p[0] = (uint8_t)v; p[1] = (uint8_t)(v >> 8);
#endif
}
STS__PRIVATE void sts__st32(uint8_t *p, uint32_t v) {
#ifdef STS__HOST_LE
    memcpy(p, &v, 4);
#else
    p[0] = (uint8_t)v; p[1] = (uint8_t)(v >> 8); p[2] = (uint8_t)(v >> 16); p[3] = (uint8_t)(v >> 24);
#endif
}

/* ---- the hot pairs, one element (the scalar twins of the SIMD kernels) ---- */
STS__PRIVATE uint32_t sts__bf16_to_f32(uint32_t h) { return h << 16; }  /* a bit move, NaNs as they are */

STS__PRIVATE uint32_t sts__f16_to_f32(uint32_t h) {
    uint32_t s = (h & 0x8000u) << 16, e = h >> 10 & 0x1fu, m = h & 0x3ffu;
    if (e == 0x1f) return s | 0x7f800000u | (m ? 0x400000u | m << 13 : 0u); /* NaN leaves quiet, as F16C */
    if (e) return s | (e + 112u) << 23 | m << 13;                            /* rebias 15 -> 127 */
    if (!m) return s;
    e = 113;                                                                 /* subnormal: normalise */
    while (!(m & 0x400u)) { m <<= 1; e--; }
    return s | e << 23 | (m & 0x3ffu) << 13;
}

STS__PRIVATE uint32_t sts__f32_to_bf16(uint32_t x, int rne) {
    if ((x & 0x7fffffffu) > 0x7f800000u)     /* NaN: truncation keeps it unless it would read as Inf */
        return rne || !(x & 0x7f0000u) ? (x >> 16) | 0x40u : x >> 16;
    return rne ? (x + 0x7fffu + (x >> 16 & 1u)) >> 16 : x >> 16;
}

STS__PRIVATE uint32_t sts__f32_to_f16(uint32_t x, int rne) {
    uint32_t s = x >> 16 & 0x8000u, a = x & 0x7fffffffu, r, e, m, sh;
    if (a >= 0x7f800000u) return a == 0x7f800000u ? s | 0x7c00u : s | 0x7e00u | (a >> 13 & 0x3ffu);
    if (a >= 0x38800000u) {                  /* >= 2^-14: a normal F16, or overflow */
        r = a - 0x38000000u;                 /* rebias 127 -> 15, still 23 mantissa bits */
        if (rne) r += 0xfffu + (r >> 13 & 1u);
        r >>= 13;
        return r >= 0x7c00u ? s | (rne ? 0x7c00u : 0x7bffu) : s | r;
    }
    if (a < 0x33000000u) return s;           /* below 2^-25: zero either way (2^-25 is a tie to 0) */
    e = a >> 23; m = (a & 0x7fffffu) | 0x800000u; sh = 126u - e; /* F16 subnormal: m x 2^-24 units */
    r = m >> sh;
    if (rne) {
        uint32_t rem = m & ((1u << sh) - 1u), half = 1u << (sh - 1u);
        r += rem > half || (rem == half && (r & 1u));
    }
    return s | r;
}

/* ---- kernels: n elements, src and dst with no alignment ---- */
typedef void (*sts__kernel)(uint8_t *d, const uint8_t *s, size_t n);
enum { STS__K_BF16_F32, STS__K_F16_F32, STS__K_F32_BF16_RZ, STS__K_F32_BF16_RNE, STS__K_F32_F16_RZ,
       STS__K_F32_F16_RNE, STS__K_COUNT };

#define STS__ONE_BF16_F32(i) sts__st32(d + 4 * (i), sts__bf16_to_f32(sts__le16(s + 2 * (i))))
#define STS__ONE_F16_F32(i) sts__st32(d + 4 * (i), sts__f16_to_f32(sts__le16(s + 2 * (i))))
#define STS__ONE_F32_BF16(i, rne) sts__st16(d + 2 * (i), sts__f32_to_bf16(sts__le32(s + 4 * (i)), rne))
#define STS__ONE_F32_F16(i, rne) sts__st16(d + 2 * (i), sts__f32_to_f16(sts__le32(s + 4 * (i)), rne))
#define STS__ONE_F32_BF16_RZ(i) STS__ONE_F32_BF16(i, 0)
#define STS__ONE_F32_BF16_RNE(i) STS__ONE_F32_BF16(i, 1)
#define STS__ONE_F32_F16_RZ(i) STS__ONE_F32_F16(i, 0)
#define STS__ONE_F32_F16_RNE(i) STS__ONE_F32_F16(i, 1)

/* The scalar kernels: ONE(i) on each element. */
#define STS__KERNEL_C(NAME, ONE) \
    STS__PRIVATE void NAME(uint8_t *d, const uint8_t *s, size_t n) { size_t i; for (i = 0; i < n; i++) ONE(i); }
STS__KERNEL_C(sts__k_bf16_f32_c, STS__ONE_BF16_F32)
STS__KERNEL_C(sts__k_f16_f32_c, STS__ONE_F16_F32)
STS__KERNEL_C(sts__k_f32_bf16_rz_c, STS__ONE_F32_BF16_RZ)
STS__KERNEL_C(sts__k_f32_bf16_rne_c, STS__ONE_F32_BF16_RNE)
STS__KERNEL_C(sts__k_f32_f16_rz_c, STS__ONE_F32_F16_RZ)
STS__KERNEL_C(sts__k_f32_f16_rne_c, STS__ONE_F32_F16_RNE)

/* A kernel (n elements, src and dst with no alignment) from a vector body and its scalar twin, through
   the loop of its instruction set (STS__KLOOP, below); STS__KERNELS6 makes the six of one x86 set. */
#define STS__KERNEL(ATTR, NAME, STEP, SSZ, DSZ, VEC, RNE, ONE) \
    STS__PRIVATE ATTR void NAME(uint8_t *d, const uint8_t *s, size_t n) { STS__KLOOP(STEP, SSZ, DSZ, VEC, RNE, ONE); }

#if defined(STS__SSE2) || defined(STS__X86_DYN)
/* The loop every x86 SIMD kernel shares. VEC(dst, src, nt, rne) converts STEP elements (SSZ bytes
   each at src, DSZ at dst), with non-temporal stores when nt; ONE(i) is the scalar twin for the
   head and the tail. Non-temporal stores need aligned output: when the output is large and its address is a
   multiple of the element size, a scalar head first runs up to a 64-byte boundary. Large arrays
   also prefetch the source 4 KiB ahead into L2, which keeps more reads in flight than the
   hardware prefetcher alone (about 0.72 -> 0.9 of memcpy's rate here); prefetches never fault. */
#define STS__PF_AHEAD 4096
#define STS__KLOOP(STEP, SSZ, DSZ, VEC, RNE, ONE) do { \
        size_t i = 0; \
        if (n >= STS_CONVERT_NT_BYTES / (DSZ) && (uintptr_t)d % (DSZ) == 0) { \
            for (; i < n && (uintptr_t)(d + i * (DSZ)) % 64u != 0; i++) ONE(i); \
            for (; i + (STEP) <= n; i += (STEP)) { \
                _mm_prefetch((const char *)(s + i * (SSZ) + STS__PF_AHEAD), _MM_HINT_T1); \
                if ((STEP) * (SSZ) > 64) \
                    _mm_prefetch((const char *)(s + i * (SSZ) + STS__PF_AHEAD + 64), _MM_HINT_T1); \
                VEC(d + i * (DSZ), s + i * (SSZ), 1, RNE); \
            } \
            _mm_sfence(); \
        } \
        for (; i + (STEP) <= n; i += (STEP)) VEC(d + i * (DSZ), s + i * (SSZ), 0, RNE); \
        for (; i < n; i++) ONE(i); \
    } while (0)
#define STS__KERNELS6(ATTR, SFX) \
    STS__KERNEL(ATTR, sts__k_bf16_f32_##SFX, 32, 2, 4, sts__v_bf16_f32_##SFX, 0, STS__ONE_BF16_F32) \
    STS__KERNEL(ATTR, sts__k_f16_f32_##SFX, 32, 2, 4, sts__v_f16_f32_##SFX, 0, STS__ONE_F16_F32) \
    STS__KERNEL(ATTR, sts__k_f32_f16_rz_##SFX, 32, 4, 2, sts__v_f32_f16_##SFX, 0, STS__ONE_F32_F16_RZ) \
    STS__KERNEL(ATTR, sts__k_f32_f16_rne_##SFX, 32, 4, 2, sts__v_f32_f16_##SFX, 1, STS__ONE_F32_F16_RNE) \
    STS__KERNEL(ATTR, sts__k_f32_bf16_rz_##SFX, 32, 4, 2, sts__v_f32_bf16_##SFX, 0, STS__ONE_F32_BF16_RZ) \
    STS__KERNEL(ATTR, sts__k_f32_bf16_rne_##SFX, 32, 4, 2, sts__v_f32_bf16_##SFX, 1, STS__ONE_F32_BF16_RNE)
#endif

#ifdef STS__SSE2
/* ---- SSE2 (the x86-64 baseline): the BF16 pairs, integer operations only ---- */
STS__VEC void sts__sse_st(uint8_t *p, __m128i v, int nt) {
    if (nt) _mm_stream_si128((__m128i *)(void *)p, v);
    else _mm_storeu_si128((__m128i *)(void *)p, v);
}
STS__VEC __m128i sts__sse_ld(const uint8_t *p) { return _mm_loadu_si128((const __m128i *)(const void *)p); }
/* F32 bits -> BF16 bits in 32-bit lanes, sign-extended so that the signed pack is exact */
STS__VEC __m128i sts__sse_bf16(__m128i x, int rne) {
    const __m128i hi = _mm_srai_epi32(x, 16), q40 = _mm_set1_epi32(0x40);
    const __m128i nan = _mm_cmpgt_epi32(_mm_and_si128(x, _mm_set1_epi32(0x7fffffff)), _mm_set1_epi32(0x7f800000));
    if (rne) {
        __m128i r = _mm_srai_epi32(_mm_add_epi32(x, _mm_add_epi32(_mm_set1_epi32(0x7fff),
                        _mm_and_si128(_mm_srli_epi32(x, 16), _mm_set1_epi32(1)))), 16);
        return _mm_or_si128(_mm_and_si128(nan, _mm_or_si128(hi, q40)), _mm_andnot_si128(nan, r));
    }
    return _mm_or_si128(hi, _mm_and_si128(_mm_and_si128(nan, _mm_cmpeq_epi32(
        _mm_and_si128(x, _mm_set1_epi32(0x7f0000)), _mm_setzero_si128())), q40));
}
STS__VEC void sts__v_bf16_f32_sse2(uint8_t *d, const uint8_t *s, int nt, int rne) {   /* 8 elements */
    (void)rne;
    const __m128i v = sts__sse_ld(s), z = _mm_setzero_si128();
    sts__sse_st(d, _mm_unpacklo_epi16(z, v), nt);
    sts__sse_st(d + 16, _mm_unpackhi_epi16(z, v), nt);
}
STS__VEC void sts__v_f32_bf16_sse2(uint8_t *d, const uint8_t *s, int nt, int rne) {  /* 8 */
    sts__sse_st(d, _mm_packs_epi32(sts__sse_bf16(sts__sse_ld(s), rne), sts__sse_bf16(sts__sse_ld(s + 16), rne)), nt);
}
STS__KERNEL(, sts__k_bf16_f32_sse2, 8, 2, 4, sts__v_bf16_f32_sse2, 0, STS__ONE_BF16_F32)
STS__KERNEL(, sts__k_f32_bf16_rz_sse2, 8, 4, 2, sts__v_f32_bf16_sse2, 0, STS__ONE_F32_BF16_RZ)
STS__KERNEL(, sts__k_f32_bf16_rne_sse2, 8, 4, 2, sts__v_f32_bf16_sse2, 1, STS__ONE_F32_BF16_RNE)
#endif /* STS__SSE2 */

#ifdef STS__X86_DYN
/* ---- AVX2 + F16C: 32 elements a step ---- */
STS__VEC STS__TARGET_AVX2 void sts__avx_st128(uint8_t *p, __m128i v, int nt) {
    if (nt) _mm_stream_si128((__m128i *)(void *)p, v);
    else _mm_storeu_si128((__m128i *)(void *)p, v);
}
STS__VEC STS__TARGET_AVX2 void sts__avx_st256(uint8_t *p, __m256i v, int nt) {
    if (nt) _mm256_stream_si256((__m256i *)(void *)p, v);
    else _mm256_storeu_si256((__m256i *)(void *)p, v);
}
STS__VEC STS__TARGET_AVX2 void sts__v_bf16_f32_avx2(uint8_t *d, const uint8_t *s, int nt, int rne) {
    (void)rne;
    int j;
    for (j = 0; j < 4; j++)
        sts__avx_st256(d + 32 * j, _mm256_slli_epi32(_mm256_cvtepu16_epi32(
            _mm_loadu_si128((const __m128i *)(const void *)(s + 16 * j))), 16), nt);
}
STS__VEC STS__TARGET_AVX2 void sts__v_f16_f32_avx2(uint8_t *d, const uint8_t *s, int nt, int rne) {
    (void)rne;
    int j;
    for (j = 0; j < 4; j++)
        sts__avx_st256(d + 32 * j, _mm256_castps_si256(_mm256_cvtph_ps(
            _mm_loadu_si128((const __m128i *)(const void *)(s + 16 * j)))), nt);
}
/* vcvtps2ph takes its rounding from the immediate, not MXCSR: 0x0B toward zero, 0x08 nearest
   even. NaNs leave quiet with the top payload bits, as in sts__f32_to_f16. */
STS__VEC STS__TARGET_AVX2 void sts__v_f32_f16_avx2(uint8_t *d, const uint8_t *s, int nt, int rne) {
    int j;
    for (j = 0; j < 4; j++) {
        __m256 x = _mm256_loadu_ps((const float *)(const void *)(s + 32 * j));
        __m128i h;
        if (rne) h = _mm256_cvtps_ph(x, 0x08);
        else h = _mm256_cvtps_ph(x, 0x0B);
        sts__avx_st128(d + 16 * j, h, nt);
    }
}
STS__VEC STS__TARGET_AVX2 __m256i sts__avx2_bf16(__m256i x, int rne) {   /* lanes < 65536 */
    const __m256i hi = _mm256_srli_epi32(x, 16), q40 = _mm256_set1_epi32(0x40);
    const __m256i nan = _mm256_cmpgt_epi32(_mm256_and_si256(x, _mm256_set1_epi32(0x7fffffff)),
                                           _mm256_set1_epi32(0x7f800000));
    if (rne) {
        __m256i r = _mm256_srli_epi32(_mm256_add_epi32(x, _mm256_add_epi32(_mm256_set1_epi32(0x7fff),
                        _mm256_and_si256(hi, _mm256_set1_epi32(1)))), 16);
        return _mm256_blendv_epi8(r, _mm256_or_si256(hi, q40), nan);
    }
    return _mm256_or_si256(hi, _mm256_and_si256(_mm256_and_si256(nan, _mm256_cmpeq_epi32(
        _mm256_and_si256(x, _mm256_set1_epi32(0x7f0000)), _mm256_setzero_si256())), q40));
}
STS__VEC STS__TARGET_AVX2 void sts__v_f32_bf16_avx2(uint8_t *d, const uint8_t *s, int nt, int rne) {
    int j;
    for (j = 0; j < 2; j++) {   /* unsigned pack (exact here), then undo its per-half interleave */
        __m256i a = _mm256_loadu_si256((const __m256i *)(const void *)(s + 64 * j));
        __m256i b = _mm256_loadu_si256((const __m256i *)(const void *)(s + 64 * j + 32));
        sts__avx_st256(d + 32 * j, _mm256_permute4x64_epi64(_mm256_packus_epi32(
            sts__avx2_bf16(a, rne), sts__avx2_bf16(b, rne)), 0xD8), nt);
    }
}
STS__KERNELS6(STS__TARGET_AVX2, avx2)

/* ---- AVX-512 (F + BW): 32 elements a step. AVX512_BF16's vcvtneps2bf16 is not used: it flushes
   subnormal inputs, so its bits differ from the scalar rule. The zero-masking forms with a full
   mask compile to the plain instructions; g++ 12 warns falsely on the plain forms' undefined
   pass-through operand. ---- */
#define STS__ALL16 ((__mmask16)0xffff)
#define STS__ALL8 ((__mmask8)0xff)
STS__VEC STS__TARGET_AVX512 void sts__z_st512(uint8_t *p, __m512i v, int nt) {
    if (nt) _mm512_stream_si512((__m512i *)(void *)p, v);
    else _mm512_storeu_si512((__m512i *)(void *)p, v);
}
STS__VEC STS__TARGET_AVX512 __m256i sts__z_ld256(const uint8_t *p) {
    return _mm256_loadu_si256((const __m256i *)(const void *)p);
}
STS__VEC STS__TARGET_AVX512 void sts__v_bf16_f32_avx512(uint8_t *d, const uint8_t *s, int nt, int rne) {
    (void)rne;
    sts__z_st512(d, _mm512_maskz_slli_epi32(STS__ALL16,
        _mm512_maskz_cvtepu16_epi32(STS__ALL16, sts__z_ld256(s)), 16), nt);
    sts__z_st512(d + 64, _mm512_maskz_slli_epi32(STS__ALL16,
        _mm512_maskz_cvtepu16_epi32(STS__ALL16, sts__z_ld256(s + 32)), 16), nt);
}
STS__VEC STS__TARGET_AVX512 void sts__v_f16_f32_avx512(uint8_t *d, const uint8_t *s, int nt, int rne) {
    (void)rne;
    sts__z_st512(d, _mm512_castps_si512(_mm512_maskz_cvtph_ps(STS__ALL16, sts__z_ld256(s))), nt);
    sts__z_st512(d + 64, _mm512_castps_si512(_mm512_maskz_cvtph_ps(STS__ALL16, sts__z_ld256(s + 32))), nt);
}
STS__VEC STS__TARGET_AVX512 void sts__v_f32_f16_avx512(uint8_t *d, const uint8_t *s, int nt, int rne) {
    __m512 a = _mm512_loadu_ps((const void *)s), b = _mm512_loadu_ps((const void *)(s + 64));
    __m256i ha, hb;
    if (rne) { ha = _mm512_maskz_cvtps_ph(STS__ALL16, a, 0x08); hb = _mm512_maskz_cvtps_ph(STS__ALL16, b, 0x08); }
    else { ha = _mm512_maskz_cvtps_ph(STS__ALL16, a, 0x0B); hb = _mm512_maskz_cvtps_ph(STS__ALL16, b, 0x0B); }
    /* whole 64-byte lines */
    sts__z_st512(d, _mm512_maskz_inserti64x4(STS__ALL8, _mm512_castsi256_si512(ha), hb, 1), nt);
}
STS__VEC STS__TARGET_AVX512 __m256i sts__z_bf16(__m512i x, int rne) {  /* vpmovdw keeps the low 16 bits */
    const __m512i hi = _mm512_maskz_srli_epi32(STS__ALL16, x, 16), q40 = _mm512_set1_epi32(0x40);
    const __mmask16 nan = _mm512_cmpgt_epi32_mask(_mm512_and_si512(x, _mm512_set1_epi32(0x7fffffff)),
                                                  _mm512_set1_epi32(0x7f800000));
    if (rne) {
        __m512i r = _mm512_maskz_srli_epi32(STS__ALL16, _mm512_add_epi32(x, _mm512_add_epi32(_mm512_set1_epi32(0x7fff),
                        _mm512_and_si512(hi, _mm512_set1_epi32(1)))), 16);
        return _mm512_maskz_cvtepi32_epi16(STS__ALL16, _mm512_mask_or_epi32(r, nan, hi, q40));
    }
    return _mm512_maskz_cvtepi32_epi16(STS__ALL16, _mm512_mask_or_epi32(hi,
        (__mmask16)(nan & _mm512_testn_epi32_mask(x, _mm512_set1_epi32(0x7f0000))), hi, q40));
}
/* 32 F32 -> 32 BF16. One vpermt2w picks the high halves; a single compare spots Inf or NaN
   anywhere in the 32 lanes, and only then the lane-wise rule above runs (real data has few).
   Nearest-even works on the halves: round up when the low half is above 0x8000, or equal with
   an odd high half. Few instructions per cache line keep more loads in flight: the lane-wise
   form alone ran at ~0.75 of memcpy's rate here, this one at ~0.9. */
STS__VEC STS__TARGET_AVX512 void sts__v_f32_bf16_avx512(uint8_t *d, const uint8_t *s, int nt, int rne) {
    const __m512i a = _mm512_loadu_si512((const void *)s), b = _mm512_loadu_si512((const void *)(s + 64));
    const __m512i odd = _mm512_set_epi32(0x003f003d, 0x003b0039, 0x00370035, 0x00330031, 0x002f002d, 0x002b0029,
                                         0x00270025, 0x00230021, 0x001f001d, 0x001b0019, 0x00170015, 0x00130011,
                                         0x000f000d, 0x000b0009, 0x00070005, 0x00030001);
    const __m512i hi = _mm512_permutex2var_epi16(a, odd, b), k8000 = _mm512_set1_epi32(0x80008000);
    const __m512i one = _mm512_set1_epi32(0x00010001);
    __m512i h = hi;
    if (_mm512_cmpge_epu16_mask(_mm512_and_si512(hi, _mm512_set1_epi32(0x7fff7fff)), _mm512_set1_epi32(0x7f807f80))) {
        h = _mm512_maskz_inserti64x4(STS__ALL8, _mm512_castsi256_si512(sts__z_bf16(a, rne)), sts__z_bf16(b, rne), 1);
    } else if (rne) {
        const __m512i even = _mm512_set_epi32(0x003e003c, 0x003a0038, 0x00360034, 0x00320030, 0x002e002c, 0x002a0028,
                                              0x00260024, 0x00220020, 0x001e001c, 0x001a0018, 0x00160014, 0x00120010,
                                              0x000e000c, 0x000a0008, 0x00060004, 0x00020000);
        const __m512i lo = _mm512_permutex2var_epi16(a, even, b);
        __mmask32 up = _mm512_cmpgt_epu16_mask(lo, k8000) |
                       (_mm512_cmpeq_epi16_mask(lo, k8000) & _mm512_test_epi16_mask(hi, one));
        h = _mm512_mask_add_epi16(hi, up, hi, one);
    }
    sts__z_st512(d, h, nt);   /* whole 64-byte lines */
}
STS__KERNELS6(STS__TARGET_AVX512, avx512)

/* ---- run-time choice ----
   The compiler's own CPU model (libgcc / compiler-rt) answers: it reads cpuid and checks with
   xgetbv that the OS saves the AVX and AVX-512 registers. (Inlining cpuid by hand is fragile: with
   clang 14, <cpuid.h>'s macro clobbered a live rbx under -fno-omit-frame-pointer.) */
STS__PRIVATE int sts__cpu_detect(void) {
#ifdef STS__SSE2
    int lvl = STS__ISA_BASE;
#else
    int lvl = STS__ISA_SCALAR;
#endif
    unsigned a, b, c, d;
    __builtin_cpu_init();
    /* leaf 1: F16C is ECX bit 29 */
    __asm__ __volatile__("cpuid" : "=a"(a), "=b"(b), "=c"(c), "=d"(d) : "a"(1u), "c"(0u));
    (void)a; (void)b; (void)d;
    if (!__builtin_cpu_supports("avx2") || !(c >> 29 & 1u)) return lvl;
    lvl = STS__ISA_AVX2;
    if (__builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw")) lvl = STS__ISA_AVX512;
    return lvl;
}
/* Features beside the level, for the checksums: SSE4.2 (crc32) with PCLMULQDQ. */
#define STS__CPU_CRC 16
/* and for SHA-256: the SHA extensions (cpuid leaf 7, EBX bit 29; clang 14's
   __builtin_cpu_supports has no name for them), with the SSSE3 / SSE4.1 shuffles and blends. */
#define STS__CPU_SHA 32
STS__PRIVATE int sts__cpu_sha(void) {
    unsigned a, b, c, d;
    __asm__ __volatile__("cpuid" : "=a"(a), "=b"(b), "=c"(c), "=d"(d) : "a"(0u), "c"(0u));
    if (a < 7u || !__builtin_cpu_supports("ssse3") || !__builtin_cpu_supports("sse4.1")) return 0;
    __asm__ __volatile__("cpuid" : "=a"(a), "=b"(b), "=c"(c), "=d"(d) : "a"(7u), "c"(0u));
    (void)a; (void)c; (void)d;
    return (int)(b >> 29 & 1u);
}
/* and for CRC-32C in 512-bit folds: VPCLMULQDQ (cpuid leaf 7, ECX bit 10), with the AVX-512 level. */
#define STS__CPU_VCRC 64
STS__PRIVATE int sts__cpu_vpclmul(void) {
    unsigned a, b, c, d;
    __asm__ __volatile__("cpuid" : "=a"(a), "=b"(b), "=c"(c), "=d"(d) : "a"(0u), "c"(0u));
    if (a < 7u) return 0;
    __asm__ __volatile__("cpuid" : "=a"(a), "=b"(b), "=c"(c), "=d"(d) : "a"(7u), "c"(0u));
    (void)a; (void)b; (void)d;
    return (int)(c >> 10 & 1u);
}
/* 0 = not yet known, else (level | features) + 1; only touched through __atomic */
static int sts__cpu_word;
STS__PRIVATE int sts__cpu_all(void) {
    int v = __atomic_load_n(&sts__cpu_word, __ATOMIC_RELAXED);
    if (!v) {
        v = sts__cpu_detect();
        if (__builtin_cpu_supports("sse4.2") && __builtin_cpu_supports("pclmul")) v |= STS__CPU_CRC;
        if (sts__cpu_sha()) v |= STS__CPU_SHA;
        if ((v & STS__CPU_CRC) && (v & (STS__CPU_CRC - 1)) == STS__ISA_AVX512 && sts__cpu_vpclmul()) v |= STS__CPU_VCRC;
        v += 1;
        __atomic_store_n(&sts__cpu_word, v, __ATOMIC_RELAXED);
    }
    return v - 1;
}
STS__PRIVATE int sts__isa(void) { return sts__cpu_all() & (STS__CPU_CRC - 1); }
STS__PRIVATE int sts__cpu_features(void) { return sts__cpu_all() & ~(STS__CPU_CRC - 1); }
#elif defined(STS__SSE2) || defined(STS__NEON)
STS__PRIVATE int sts__isa(void) { return STS__ISA_BASE; }
#else
STS__PRIVATE int sts__isa(void) { return STS__ISA_SCALAR; }
#endif /* STS__X86_DYN */

#ifdef STS__NEON
/* ---- NEON (little-endian AArch64). BF16: integer operations. F16 <-> F32: FCVT, whose result
   depends on FPCR; used only while FPCR has its default rounding (nearest), no default-NaN and no
   half-precision flush (checked on each call), else the scalar twin runs. ---- */
STS__PRIVATE int sts__neon_fpcr_default(void) {
    uint64_t r;
    __asm__ __volatile__("mrs %0, fpcr" : "=r"(r));
    return (r & (3u << 22 | 1u << 25 | 1u << 19)) == 0;    /* RMode, DN, FZ16 */
}
/* The NEON loop: VEC(dst, src, nt, rne) on STEP elements, then the scalar twin for the tail (no
   streaming stores or prefetches: the hardware prefetcher keeps up on the cores we target). */
#define STS__KLOOP(STEP, SSZ, DSZ, VEC, RNE, ONE) do { \
        size_t i = 0; \
        for (; i + (STEP) <= n; i += (STEP)) VEC(d + i * (DSZ), s + i * (SSZ), 0, RNE); \
        for (; i < n; i++) ONE(i); \
    } while (0)
STS__VEC void sts__v_bf16_f32_neon(uint8_t *d, const uint8_t *s, int nt, int rne) {   /* 8 elements */
    uint16x8_t v = vreinterpretq_u16_u8(vld1q_u8(s));
    (void)nt; (void)rne;
    vst1q_u8(d, vreinterpretq_u8_u32(vshll_n_u16(vget_low_u16(v), 16)));
    vst1q_u8(d + 16, vreinterpretq_u8_u32(vshll_n_u16(vget_high_u16(v), 16)));
}
STS__VEC uint16x4_t sts__neon_bf16(uint32x4_t x, int rne) {
    uint32x4_t hi = vshrq_n_u32(x, 16), q40 = vdupq_n_u32(0x40);
    uint32x4_t nan = vcgtq_u32(vandq_u32(x, vdupq_n_u32(0x7fffffffu)), vdupq_n_u32(0x7f800000u));
    if (rne) {
        uint32x4_t r = vshrq_n_u32(vaddq_u32(x, vaddq_u32(vdupq_n_u32(0x7fffu), vandq_u32(hi, vdupq_n_u32(1)))), 16);
        return vmovn_u32(vbslq_u32(nan, vorrq_u32(hi, q40), r));
    }
    return vmovn_u32(vorrq_u32(hi, vandq_u32(vandq_u32(nan, vceqq_u32(vandq_u32(x, vdupq_n_u32(0x7f0000u)),
                                                                      vdupq_n_u32(0))), q40)));
}
STS__VEC void sts__v_f32_bf16_neon(uint8_t *d, const uint8_t *s, int nt, int rne) {   /* 8 */
    uint16x4_t a = sts__neon_bf16(vreinterpretq_u32_u8(vld1q_u8(s)), rne);
    uint16x4_t b = sts__neon_bf16(vreinterpretq_u32_u8(vld1q_u8(s + 16)), rne);
    (void)nt;
    vst1q_u8(d, vreinterpretq_u8_u16(vcombine_u16(a, b)));
}
STS__VEC void sts__v_f16_f32_neon(uint8_t *d, const uint8_t *s, int nt, int rne) {    /* 4 */
    (void)nt; (void)rne;
    vst1q_u8(d, vreinterpretq_u8_f32(vcvt_f32_f16(vreinterpret_f16_u8(vld1_u8(s)))));
}
STS__VEC void sts__v_f32_f16_neon(uint8_t *d, const uint8_t *s, int nt, int rne) {    /* 4, nearest (FPCR) */
    (void)nt; (void)rne;
    vst1_u8(d, vreinterpret_u8_f16(vcvt_f16_f32(vreinterpretq_f32_u8(vld1q_u8(s)))));
}
STS__KERNEL(, sts__k_bf16_f32_neon, 8, 2, 4, sts__v_bf16_f32_neon, 0, STS__ONE_BF16_F32)
STS__KERNEL(, sts__k_f32_bf16_rz_neon, 8, 4, 2, sts__v_f32_bf16_neon, 0, STS__ONE_F32_BF16_RZ)
STS__KERNEL(, sts__k_f32_bf16_rne_neon, 8, 4, 2, sts__v_f32_bf16_neon, 1, STS__ONE_F32_BF16_RNE)
STS__KERNEL(, sts__k_f16_f32_neon, 4, 2, 4, sts__v_f16_f32_neon, 0, STS__ONE_F16_F32)
STS__KERNEL(, sts__k_f32_f16_rne_neon, 4, 4, 2, sts__v_f32_f16_neon, 1, STS__ONE_F32_F16_RNE)
#endif /* STS__NEON */

/* The kernel for hot pair k at instruction-set level isa or below. */
STS__PRIVATE sts__kernel sts__kernel_at(int k, int isa) {
    static const sts__kernel scalar[STS__K_COUNT] = {
        sts__k_bf16_f32_c, sts__k_f16_f32_c, sts__k_f32_bf16_rz_c, sts__k_f32_bf16_rne_c,
        sts__k_f32_f16_rz_c, sts__k_f32_f16_rne_c };
#ifdef STS__X86_DYN
    static const sts__kernel avx512[STS__K_COUNT] = {
        sts__k_bf16_f32_avx512, sts__k_f16_f32_avx512, sts__k_f32_bf16_rz_avx512, sts__k_f32_bf16_rne_avx512,
        sts__k_f32_f16_rz_avx512, sts__k_f32_f16_rne_avx512 };
    static const sts__kernel avx2[STS__K_COUNT] = {
        sts__k_bf16_f32_avx2, sts__k_f16_f32_avx2, sts__k_f32_bf16_rz_avx2, sts__k_f32_bf16_rne_avx2,
        sts__k_f32_f16_rz_avx2, sts__k_f32_f16_rne_avx2 };
    if (isa >= STS__ISA_AVX512) return avx512[k];
    if (isa >= STS__ISA_AVX2) return avx2[k];
#endif
#ifdef STS__SSE2
    if (isa >= STS__ISA_BASE) {
        if (k == STS__K_BF16_F32) return sts__k_bf16_f32_sse2;
        if (k == STS__K_F32_BF16_RZ) return sts__k_f32_bf16_rz_sse2;
        if (k == STS__K_F32_BF16_RNE) return sts__k_f32_bf16_rne_sse2;
    }
#endif
#ifdef STS__NEON
    if (isa >= STS__ISA_BASE) {
        if (k == STS__K_BF16_F32) return sts__k_bf16_f32_neon;
        if (k == STS__K_F32_BF16_RZ) return sts__k_f32_bf16_rz_neon;
        if (k == STS__K_F32_BF16_RNE) return sts__k_f32_bf16_rne_neon;
        if (k == STS__K_F16_F32 && sts__neon_fpcr_default()) return sts__k_f16_f32_neon;
        if (k == STS__K_F32_F16_RNE && sts__neon_fpcr_default()) return sts__k_f32_f16_rne_neon;
    }
#endif
    (void)isa;
    return scalar[k];
}

/* ---- the general mechanism: wide values ----
   A finite value is (-1)^neg x mag x 2^exp exactly; Inf has neg; NaN has neg and its payload
   (the source mantissa bits, top-aligned in mag). Every source decodes exactly into this. */
enum { STS__W_FIN, STS__W_INF, STS__W_NAN };
typedef struct sts__wide { uint64_t mag; int32_t exp; uint8_t neg, cls; } sts__wide;

STS__PRIVATE int sts__clz64(uint64_t x) {   /* x != 0 */
#if defined(__GNUC__) || defined(__clang__)
    return __builtin_clzll(x);
#else
    int n = 0;
    while (!(x >> 63)) { x <<= 1; n++; }
    return n;
#endif
}
/* An IEEE-style binary format (the top exponent is Inf / NaN) with ebits and mbits. */
STS__PRIVATE void sts__wide_ieee(sts__wide *w, uint64_t u, unsigned ebits, unsigned mbits) {
    uint64_t emax = ((uint64_t)1 << ebits) - 1, m = u & (((uint64_t)1 << mbits) - 1), e = u >> mbits & emax;
    int32_t bias = (int32_t)(emax >> 1);
    w->neg = (uint8_t)(u >> (ebits + mbits) & 1);
    w->cls = STS__W_FIN;
    if (e == emax) { w->cls = m ? STS__W_NAN : STS__W_INF; w->mag = m << (64 - mbits); w->exp = 0; }
    else if (e == 0) { w->mag = m; w->exp = 1 - bias - (int32_t)mbits; }
    else { w->mag = m | (uint64_t)1 << mbits; w->exp = (int32_t)e - bias - (int32_t)mbits; }
}
/* The 8-bit formats without IEEE specials. fnuz: 0x80 is the only NaN, no -0, no Inf; else the
   "fn" variant: S.1111.111 is NaN, no Inf. The NaNs carry no payload. */
STS__PRIVATE void sts__wide_f8(sts__wide *w, uint32_t u, unsigned ebits, int32_t bias, int fnuz) {
    unsigned mbits = 7 - ebits;
    uint32_t e = u >> mbits & ((1u << ebits) - 1), m = u & ((1u << mbits) - 1);
    w->neg = (uint8_t)(u >> 7);
    w->cls = STS__W_FIN;
    if (fnuz ? u == 0x80 : (u & 0x7f) == 0x7f) { w->cls = STS__W_NAN; w->mag = 0; w->exp = 0; if (fnuz) w->neg = 0; }
    else if (e == 0) { w->mag = m; w->exp = 1 - bias - (int32_t)mbits; }
    else { w->mag = m | 1u << mbits; w->exp = (int32_t)e - bias - (int32_t)mbits; }
}
STS__PRIVATE void sts__wide_int(sts__wide *w, uint64_t u, unsigned bits, int is_signed) {
    uint64_t mask = bits == 64 ? ~(uint64_t)0 : ((uint64_t)1 << bits) - 1;
    w->cls = STS__W_FIN;
    w->exp = 0;
    w->neg = (uint8_t)(is_signed && (u >> (bits - 1) & 1));
    w->mag = w->neg ? (~u + 1) & mask : u & mask;  /* two's complement magnitude: -2^63 -> 2^63 */
}

/* Decode n elements of dtype t at s. */
STS__PRIVATE void sts__decode(sts__wide *w, const uint8_t *s, sts_dtype t, size_t n) {
    size_t i;
    switch (t) {
    case STS_DTYPE_BOOL: for (i = 0; i < n; i++) sts__wide_int(&w[i], s[i] != 0, 8, 0); break;
    case STS_DTYPE_U8: for (i = 0; i < n; i++) sts__wide_int(&w[i], s[i], 8, 0); break;
    case STS_DTYPE_I8: for (i = 0; i < n; i++) sts__wide_int(&w[i], s[i], 8, 1); break;
    case STS_DTYPE_U16: for (i = 0; i < n; i++) sts__wide_int(&w[i], sts__le16(s + 2 * i), 16, 0); break;
    case STS_DTYPE_I16: for (i = 0; i < n; i++) sts__wide_int(&w[i], sts__le16(s + 2 * i), 16, 1); break;
    case STS_DTYPE_U32: for (i = 0; i < n; i++) sts__wide_int(&w[i], sts__le32(s + 4 * i), 32, 0); break;
    case STS_DTYPE_I32: for (i = 0; i < n; i++) sts__wide_int(&w[i], sts__le32(s + 4 * i), 32, 1); break;
    case STS_DTYPE_U64: for (i = 0; i < n; i++) sts__wide_int(&w[i], sts__le64(s + 8 * i), 64, 0); break;
    case STS_DTYPE_I64: for (i = 0; i < n; i++) sts__wide_int(&w[i], sts__le64(s + 8 * i), 64, 1); break;
    case STS_DTYPE_F16: for (i = 0; i < n; i++) sts__wide_ieee(&w[i], sts__le16(s + 2 * i), 5, 10); break;
    case STS_DTYPE_BF16: for (i = 0; i < n; i++) sts__wide_ieee(&w[i], sts__le16(s + 2 * i), 8, 7); break;
    case STS_DTYPE_F32: for (i = 0; i < n; i++) sts__wide_ieee(&w[i], sts__le32(s + 4 * i), 8, 23); break;
    case STS_DTYPE_F64: for (i = 0; i < n; i++) sts__wide_ieee(&w[i], sts__le64(s + 8 * i), 11, 52); break;
    case STS_DTYPE_F8_E5M2: for (i = 0; i < n; i++) sts__wide_ieee(&w[i], s[i], 5, 2); break;
    case STS_DTYPE_F8_E4M3: for (i = 0; i < n; i++) sts__wide_f8(&w[i], s[i], 4, 7, 0); break;
    case STS_DTYPE_F8_E4M3FNUZ: for (i = 0; i < n; i++) sts__wide_f8(&w[i], s[i], 4, 8, 1); break;
    case STS_DTYPE_F8_E5M2FNUZ: for (i = 0; i < n; i++) sts__wide_f8(&w[i], s[i], 5, 16, 1); break;
    case STS_DTYPE_F8_E8M0:     /* unsigned exponent only: 2^(e-127), 0xFF is NaN */
        for (i = 0; i < n; i++) {
            w[i].neg = 0; w[i].mag = 1; w[i].exp = (int32_t)s[i] - 127;
            w[i].cls = s[i] == 0xff ? STS__W_NAN : STS__W_FIN;
            if (s[i] == 0xff) w[i].mag = 0;
        }
        break;
    default: break;  /* not reached: the pair was checked */
    }
}

/* The one rounding routine for float targets (ebits, mbits, IEEE specials): round-toward-zero or
   to nearest even; overflow goes to Inf (nearest) or the largest finite value (toward zero). */
STS__PRIVATE uint64_t sts__to_ieee(const sts__wide *w, unsigned ebits, unsigned mbits, int rne) {
    const uint64_t sign = (uint64_t)w->neg << (ebits + mbits);
    const uint64_t inf = (((uint64_t)1 << ebits) - 1) << mbits;
    const int bias = (1 << (ebits - 1)) - 1, emin = 1 - bias;
    int e, q, sh;
    uint64_t m, bits;
    if (w->cls == STS__W_NAN) return sign | inf | (uint64_t)1 << (mbits - 1) | w->mag >> (64 - mbits);
    if (w->cls == STS__W_INF) return sign | inf;
    if (w->mag == 0) return sign;
    e = 63 - sts__clz64(w->mag) + w->exp;          /* value in [2^e, 2^(e+1)) */
    if (e > bias) return sign | (rne ? inf : inf - 1);
    q = (e < emin ? emin : e) - (int)mbits;         /* the target's unit in the last place is 2^q */
    sh = q - w->exp;
    if (sh <= 0) m = w->mag << -sh;                 /* exact */
    else if (sh > 64) m = 0;                        /* below half a unit */
    else if (sh == 64) m = rne && w->mag > (uint64_t)1 << 63;
    else {
        uint64_t rem = w->mag & (((uint64_t)1 << sh) - 1), half = (uint64_t)1 << (sh - 1);
        m = w->mag >> sh;
        if (rne) m += rem > half || (rem == half && (m & 1));
    }
    /* m has the implicit bit at position mbits when normal; adding it to (biased exponent - 1)
       carries into the exponent field, and a subnormal (q at emin) has exponent field 0. */
    bits = ((uint64_t)(q + (int)mbits + bias - 1) << mbits) + m;
    if (bits >= inf) return sign | (rne ? inf : inf - 1);
    return sign | bits;
}
/* Integer targets: truncate toward zero, saturate, NaN -> 0. Returns the two's complement bits. */
STS__PRIVATE uint64_t sts__to_int(const sts__wide *w, unsigned bits, int is_signed) {
    const uint64_t umax = bits == 64 ? ~(uint64_t)0 : ((uint64_t)1 << bits) - 1;
    const uint64_t smax = umax >> 1;
    uint64_t t = 0;
    int big = 0;
    if (w->cls == STS__W_NAN) return 0;
    if (w->cls == STS__W_INF) big = 1;
    else if (w->exp >= 0) {
        if (w->mag && (w->exp >= 64 || w->mag > ~(uint64_t)0 >> w->exp)) big = 1;
        else t = w->mag << w->exp;
    } else t = w->exp <= -64 ? 0 : w->mag >> -w->exp;
    if (!is_signed) return w->neg ? 0 : (big || t > umax) ? umax : t;
    if (w->neg) return (big || t > smax + 1) ? (~smax & umax) : (0 - t) & umax;
    return (big || t > smax) ? smax : t;
}
/* Encode n wide values as dtype t at d. rne selects nearest-even for F16 and BF16; the other
   float targets always round to nearest even. */
STS__PRIVATE void sts__encode(uint8_t *d, sts_dtype t, const sts__wide *w, size_t n, int rne) {
    size_t i;
    switch (t) {
    case STS_DTYPE_F16: for (i = 0; i < n; i++) sts__st16(d + 2 * i, (uint32_t)sts__to_ieee(&w[i], 5, 10, rne)); break;
    case STS_DTYPE_BF16: for (i = 0; i < n; i++) sts__st16(d + 2 * i, (uint32_t)sts__to_ieee(&w[i], 8, 7, rne)); break;
    case STS_DTYPE_F32: for (i = 0; i < n; i++) sts__st32(d + 4 * i, (uint32_t)sts__to_ieee(&w[i], 8, 23, 1)); break;
    case STS_DTYPE_F64: for (i = 0; i < n; i++) sts__st64(d + 8 * i, sts__to_ieee(&w[i], 11, 52, 1)); break;
    case STS_DTYPE_U8: for (i = 0; i < n; i++) d[i] = (uint8_t)sts__to_int(&w[i], 8, 0); break;
    case STS_DTYPE_I8: for (i = 0; i < n; i++) d[i] = (uint8_t)sts__to_int(&w[i], 8, 1); break;
    case STS_DTYPE_U16: for (i = 0; i < n; i++) sts__st16(d + 2 * i, (uint32_t)sts__to_int(&w[i], 16, 0)); break;
    case STS_DTYPE_I16: for (i = 0; i < n; i++) sts__st16(d + 2 * i, (uint32_t)sts__to_int(&w[i], 16, 1)); break;
    case STS_DTYPE_U32: for (i = 0; i < n; i++) sts__st32(d + 4 * i, (uint32_t)sts__to_int(&w[i], 32, 0)); break;
    case STS_DTYPE_I32: for (i = 0; i < n; i++) sts__st32(d + 4 * i, (uint32_t)sts__to_int(&w[i], 32, 1)); break;
    case STS_DTYPE_U64: for (i = 0; i < n; i++) sts__st64(d + 8 * i, sts__to_int(&w[i], 64, 0)); break;
    case STS_DTYPE_I64: for (i = 0; i < n; i++) sts__st64(d + 8 * i, sts__to_int(&w[i], 64, 1)); break;
    default: break;  /* not reached: the pair was checked */
    }
}
/* Any supported numeric pair, block by block through wide values. */
STS__PRIVATE void sts__convert_generic(uint8_t *d, sts_dtype dt, const uint8_t *s, sts_dtype st, size_t n, int rne) {
    sts__wide w[256];
    size_t sb = sts_dtype_bits(st) / 8, db = sts_dtype_bits(dt) / 8;
    while (n) {
        size_t k = n < 256 ? n : 256;
        sts__decode(w, s, st, k);
        sts__encode(d, dt, w, k, rne);
        s += k * sb; d += k * db; n -= k;
    }
}

/* ---- pairs ---- */
STS__PRIVATE int sts__cv_source(sts_dtype t) {   /* numeric: has a decoder */
    return (unsigned)t < (unsigned)STS_DTYPE_COUNT && t != STS_DTYPE_F4 && t != STS_DTYPE_F6_E2M3 &&
           t != STS_DTYPE_F6_E3M2 && t != STS_DTYPE_C64;
}
STS__PRIVATE int sts__cv_target(sts_dtype t) {   /* the 12 seed dtypes */
    switch (t) {
    case STS_DTYPE_F16: case STS_DTYPE_F32: case STS_DTYPE_F64: case STS_DTYPE_BF16:
    case STS_DTYPE_U8: case STS_DTYPE_I8: case STS_DTYPE_U16: case STS_DTYPE_I16:
    case STS_DTYPE_U32: case STS_DTYPE_I32: case STS_DTYPE_U64: case STS_DTYPE_I64: return 1;
    default: return 0;
    }
}
STSDEF int sts_convert_supported(sts_dtype dst, sts_dtype src) {
    if ((unsigned)dst >= (unsigned)STS_DTYPE_COUNT || (unsigned)src >= (unsigned)STS_DTYPE_COUNT) return 0;
    if (dst == src) return 1;
    if (src == STS_DTYPE_C64) return dst == STS_DTYPE_F32 || dst == STS_DTYPE_F64;
    return sts__cv_source(src) && sts__cv_target(dst);
}
STS__PRIVATE int sts__hot_pair(sts_dtype dst, sts_dtype src, sts_rounding r) {
    if (src == STS_DTYPE_BF16 && dst == STS_DTYPE_F32) return STS__K_BF16_F32;
    if (src == STS_DTYPE_F16 && dst == STS_DTYPE_F32) return STS__K_F16_F32;
    if (src == STS_DTYPE_F32 && dst == STS_DTYPE_BF16)
        return r == STS_ROUND_NEAREST_EVEN ? STS__K_F32_BF16_RNE : STS__K_F32_BF16_RZ;
    if (src == STS_DTYPE_F32 && dst == STS_DTYPE_F16)
        return r == STS_ROUND_NEAREST_EVEN ? STS__K_F32_F16_RNE : STS__K_F32_F16_RZ;
    return -1;
}

/* sts_convert_ex with the instruction-set level given (the tests drive every level). */
STS__PRIVATE sts_result sts__convert_at(void *dst, sts_dtype dt, const void *src, sts_dtype st, size_t count,
                                        sts_rounding rounding, int isa, sts_error *err) {
    size_t n_out = count, sbytes, dbytes;
    int k;
    if ((unsigned)dt >= (unsigned)STS_DTYPE_COUNT || (unsigned)st >= (unsigned)STS_DTYPE_COUNT)
        return sts__failx(err, STS_RULE_ARGUMENT, "convert: dtype out of range (src %d, dst %d)", (int)st, (int)dt);
    if ((unsigned)rounding >= (unsigned)STS_ROUNDING_COUNT)
        return sts__failx(err, STS_RULE_ARGUMENT,
                          "convert: rounding %d is neither STS_ROUND_TRUNCATE (0) nor STS_ROUND_NEAREST_EVEN (1)",
                          (int)rounding);
    if (!sts_convert_supported(dt, st)) {
        const char *why = st == STS_DTYPE_F4 || st == STS_DTYPE_F6_E2M3 || st == STS_DTYPE_F6_E3M2
            ? "F4 and F6 values have no decoder; they can only be copied to their own dtype"
            : st == STS_DTYPE_C64 ? "C64 converts only to F32 or F64 (interleaved re, im) or to C64"
            : "targets are the 12 seed dtypes F16 F32 F64 BF16 U8 I8 U16 I16 U32 I32 U64 I64 "
              "(or the source's own dtype)";
        return sts__failx(err, STS_RULE_UNSUPPORTED, "convert: no conversion from %s to %s: %s",
                          sts_dtype_name(st), sts_dtype_name(dt), why);
    }
    if (dt == st) {   /* a copy, sub-byte dtypes included */
        unsigned bits = sts_dtype_bits(st);
        if (count > (size_t)-1 / bits)
            return sts__failx(err, STS_RULE_ARGUMENT,
                              "convert: %z %s elements overflow size_t bytes", count, sts_dtype_name(st));
        if (count * bits % 8 != 0)
            return sts__failx(err, STS_RULE_ARGUMENT,
                              "convert: %z %s elements are not a whole number of bytes", count, sts_dtype_name(st));
        sbytes = dbytes = count * bits / 8;
    } else {
        if (st == STS_DTYPE_C64 && !sts__mulsz(count, 2, &n_out))
            return sts__failx(err, STS_RULE_ARGUMENT, "convert: %z C64 elements overflow size_t", count);
        if (!sts__mulsz(count, sts_dtype_bits(st) / 8, &sbytes) || !sts__mulsz(n_out, sts_dtype_bits(dt) / 8, &dbytes))
            return sts__failx(err, STS_RULE_ARGUMENT, "convert: %z elements from %s to %s overflow size_t bytes",
                              count, sts_dtype_name(st), sts_dtype_name(dt));
    }
    if (count && (!dst || !src))
        return sts__failx(err, STS_RULE_ARGUMENT,
                          "convert: %s pointer is NULL with count %z", !dst ? "dst" : "src", count);
    (void)dbytes;
    if (count == 0) { sts__ok(err); return STS_OK; }
    if (dt == st) memmove(dst, src, sbytes);
    else if (st == STS_DTYPE_C64 && dt == STS_DTYPE_F32) memcpy(dst, src, sbytes);  /* same bytes */
    else if (st == STS_DTYPE_C64)
        sts__convert_generic((uint8_t *)dst, dt, (const uint8_t *)src, STS_DTYPE_F32, n_out, 1);
    else if ((k = sts__hot_pair(dt, st, rounding)) >= 0)
        sts__kernel_at(k, isa)((uint8_t *)dst, (const uint8_t *)src, count);
    else sts__convert_generic((uint8_t *)dst, dt, (const uint8_t *)src, st, count, rounding == STS_ROUND_NEAREST_EVEN);
    sts__ok(err);
    return STS_OK;
}
STSDEF sts_result sts_convert_ex(void *dst, sts_dtype dst_dtype, const void *src, sts_dtype src_dtype,
                                 size_t count, sts_rounding rounding, sts_error *err) {
    return sts__convert_at(dst, dst_dtype, src, src_dtype, count, rounding, sts__isa(), err);
}
STSDEF sts_result sts_convert(void *dst, sts_dtype dst_dtype, const void *src, sts_dtype src_dtype,
                              size_t count, sts_rounding rounding) {
    return sts__convert_at(dst, dst_dtype, src, src_dtype, count, rounding, sts__isa(), NULL);
}
STS__PRIVATE const char *sts__isa_name(int isa) {
#ifdef STS__NEON
    if (isa >= STS__ISA_BASE) return "neon";
#endif
    switch (isa) {
    case STS__ISA_AVX512: return "avx512bw";
    case STS__ISA_AVX2: return "avx2+f16c";
    case STS__ISA_BASE: return "sse2";
    default: return "scalar";
    }
}
STSDEF const char *sts_convert_isa(void) { return sts__isa_name(sts__isa()); }

/* >>crc32c ---- CRC-32C (Castagnoli, reflected polynomial 0x82F63B78) ----
   The shard checksum of the manifest. sts__crc32c(crc, p, n) extends crc (0 to start) over n more
   bytes, so a file's value is built piece by piece in file order. Chosen at run time: with AVX-512
   and VPCLMULQDQ, 512-bit carry-less folds from 256 bytes (55 GB/s in cache on the 2-vCPU VM);
   with SSE4.2 and PCLMUL three crc32 lanes joined by a carry-less multiply (27 GB/s); otherwise
   a byte-table loop. All give the same values (the tests compare them). */
static const uint32_t sts__crc_table[256] = {
    0x00000000u, 0xf26b8303u, 0xe13b70f7u, 0x1350f3f4u, 0xc79a971fu, 0x35f1141cu, 0x26a1e7e8u, 0xd4ca64ebu,
    0x8ad958cfu, 0x78b2dbccu, 0x6be22838u, 0x9989ab3bu, 0x4d43cfd0u, 0xbf284cd3u, 0xac78bf27u, 0x5e133c24u,
    0x105ec76fu, 0xe235446cu, 0xf165b798u, 0x030e349bu, 0xd7c45070u, 0x25afd373u, 0x36ff2087u, 0xc494a384u,
    0x9a879fa0u, 0x68ec1ca3u, 0x7bbcef57u, 0x89d76c54u, 0x5d1d08bfu, 0xaf768bbcu, 0xbc267848u, 0x4e4dfb4bu,
    0x20bd8edeu, 0xd2d60dddu, 0xc186fe29u, 0x33ed7d2au, 0xe72719c1u, 0x154c9ac2u, 0x061c6936u, 0xf477ea35u,
    0xaa64d611u, 0x580f5512u, 0x4b5fa6e6u, 0xb93425e5u, 0x6dfe410eu, 0x9f95c20du, 0x8cc531f9u, 0x7eaeb2fau,
    0x30e349b1u, 0xc288cab2u, 0xd1d83946u, 0x23b3ba45u, 0xf779deaeu, 0x05125dadu, 0x1642ae59u, 0xe4292d5au,
    0xba3a117eu, 0x4851927du, 0x5b016189u, 0xa96ae28au, 0x7da08661u, 0x8fcb0562u, 0x9c9bf696u, 0x6ef07595u,
    0x417b1dbcu, 0xb3109ebfu, 0xa0406d4bu, 0x522bee48u, 0x86e18aa3u, 0x748a09a0u, 0x67dafa54u, 0x95b17957u,
    0xcba24573u, 0x39c9c670u, 0x2a993584u, 0xd8f2b687u, 0x0c38d26cu, 0xfe53516fu, 0xed03a29bu, 0x1f682198u,
    0x5125dad3u, 0xa34e59d0u, 0xb01eaa24u, 0x42752927u, 0x96bf4dccu, 0x64d4cecfu, 0x77843d3bu, 0x85efbe38u,
    0xdbfc821cu, 0x2997011fu, 0x3ac7f2ebu, 0xc8ac71e8u, 0x1c661503u, 0xee0d9600u, 0xfd5d65f4u, 0x0f36e6f7u,
    0x61c69362u, 0x93ad1061u, 0x80fde395u, 0x72966096u, 0xa65c047du, 0x5437877eu, 0x4767748au, 0xb50cf789u,
    0xeb1fcbadu, 0x197448aeu, 0x0a24bb5au, 0xf84f3859u, 0x2c855cb2u, 0xdeeedfb1u, 0xcdbe2c45u, 0x3fd5af46u,
    0x7198540du, 0x83f3d70eu, 0x90a324fau, 0x62c8a7f9u, 0xb602c312u, 0x44694011u, 0x5739b3e5u, 0xa55230e6u,
    0xfb410cc2u, 0x092a8fc1u, 0x1a7a7c35u, 0xe811ff36u, 0x3cdb9bddu, 0xceb018deu, 0xdde0eb2au, 0x2f8b6829u,
    0x82f63b78u, 0x709db87bu, 0x63cd4b8fu, 0x91a6c88cu, 0x456cac67u, 0xb7072f64u, 0xa457dc90u, 0x563c5f93u,
    0x082f63b7u, 0xfa44e0b4u, 0xe9141340u, 0x1b7f9043u, 0xcfb5f4a8u, 0x3dde77abu, 0x2e8e845fu, 0xdce5075cu,
    0x92a8fc17u, 0x60c37f14u, 0x73938ce0u, 0x81f80fe3u, 0x55326b08u, 0xa759e80bu, 0xb4091bffu, 0x466298fcu,
    0x1871a4d8u, 0xea1a27dbu, 0xf94ad42fu, 0x0b21572cu, 0xdfeb33c7u, 0x2d80b0c4u, 0x3ed04330u, 0xccbbc033u,
    0xa24bb5a6u, 0x502036a5u, 0x4370c551u, 0xb11b4652u, 0x65d122b9u, 0x97baa1bau, 0x84ea524eu, 0x7681d14du,
    0x2892ed69u, 0xdaf96e6au, 0xc9a99d9eu, 0x3bc21e9du, 0xef087a76u, 0x1d63f975u, 0x0e330a81u, 0xfc588982u,
    0xb21572c9u, 0x407ef1cau, 0x532e023eu, 0xa145813du, 0x758fe5d6u, 0x87e466d5u, 0x94b49521u, 0x66df1622u,
    0x38cc2a06u, 0xcaa7a905u, 0xd9f75af1u, 0x2b9cd9f2u, 0xff56bd19u, 0x0d3d3e1au, 0x1e6dcdeeu, 0xec064eedu,
    0xc38d26c4u, 0x31e6a5c7u, 0x22b65633u, 0xd0ddd530u, 0x0417b1dbu, 0xf67c32d8u, 0xe52cc12cu, 0x1747422fu,
    0x49547e0bu, 0xbb3ffd08u, 0xa86f0efcu, 0x5a048dffu, 0x8ecee914u, 0x7ca56a17u, 0x6ff599e3u, 0x9d9e1ae0u,
    0xd3d3e1abu, 0x21b862a8u, 0x32e8915cu, 0xc083125fu, 0x144976b4u, 0xe622f5b7u, 0xf5720643u, 0x07198540u,
    0x590ab964u, 0xab613a67u, 0xb831c993u, 0x4a5a4a90u, 0x9e902e7bu, 0x6cfbad78u, 0x7fab5e8cu, 0x8dc0dd8fu,
    0xe330a81au, 0x115b2b19u, 0x020bd8edu, 0xf0605beeu, 0x24aa3f05u, 0xd6c1bc06u, 0xc5914ff2u, 0x37faccf1u,
    0x69e9f0d5u, 0x9b8273d6u, 0x88d28022u, 0x7ab90321u, 0xae7367cau, 0x5c18e4c9u, 0x4f48173du, 0xbd23943eu,
    0xf36e6f75u, 0x0105ec76u, 0x12551f82u, 0xe03e9c81u, 0x34f4f86au, 0xc69f7b69u, 0xd5cf889du, 0x27a40b9eu,
    0x79b737bau, 0x8bdcb4b9u, 0x988c474du, 0x6ae7c44eu, 0xbe2da0a5u, 0x4c4623a6u, 0x5f16d052u, 0xad7d5351u,
};
STS__PRIVATE uint32_t sts__crc32c_sw(uint32_t crc, const uint8_t *p, size_t n) {
    crc = ~crc;
    while (n--) crc = sts__crc_table[(crc ^ *p++) & 0xffu] ^ (crc >> 8);
    return ~crc;
}
#ifdef STS__X86_DYN
/* Three lanes at once, joined by carry-less multiplies: a lane's CRC times x^(8L - 33) or
   x^(16L - 33) mod P (reflected), reduced by the crc32 instruction, moves it past one or two lanes
   of L bytes. Long buffers go in 4 KiB lanes; what is left (and every short buffer from 48 bytes)
   in one block of three lanes sized to it, 16 bytes to 1 KiB each (sts__crc_xk[k - 1]: x^(128k - 33)
   for lanes of 16k bytes), so a 1 KiB KV cell too hides the instruction's latency: 3 x 336 + 16. */
static const uint32_t sts__crc_xk[128] = {
    0x493c7d27u, 0xba4fc28eu, 0xddc0152bu, 0x9e4addf8u, 0x39d3b296u, 0x0715ce53u, 0x47db8317u, 0x0d3b6092u,
    0xc96cfdc0u, 0x878a92a7u, 0xdaece73eu, 0xab7aff2au, 0x2162d385u, 0x83348832u, 0x299847d5u, 0xb9e02b86u,
    0x18b33a4eu, 0xb6dd949bu, 0x78d9ccb7u, 0xbac2fd7bu, 0xa60ce07bu, 0xce7f39f4u, 0x61d82e56u, 0xd270f1a2u,
    0xc619809du, 0x2b3cac5du, 0x65863b64u, 0x1b03397fu, 0xebb883bdu, 0xb3e32c28u, 0x064f7f26u, 0xdd7e3b0cu,
    0xf285651cu, 0x10746f3cu, 0xc7a68855u, 0x271d9844u, 0x8e766a0cu, 0x93a5f730u, 0x6cb08e5cu, 0x6b749fb2u,
    0x1393e203u, 0xcec3662eu, 0x96c515bbu, 0xe6fc4e6au, 0x8227bb8au, 0xb0cd4768u, 0x39c7ff35u, 0xd7a4825cu,
    0x0ab3844bu, 0x0167d312u, 0xf6076544u, 0x26f6a60au, 0xa741c1bfu, 0x98d8d9cbu, 0x49c3cc9cu, 0x68bce87au,
    0x57a3d037u, 0x6956fc3bu, 0x42d98888u, 0x3771e98fu, 0xb42ae3d9u, 0x2178513au, 0xe0ac139eu, 0x170076fau,
    0x444dd413u, 0x6f345e45u, 0x41d17b64u, 0xff0dba97u, 0xa2b73df1u, 0xf872e54cu, 0x1e41e9fcu, 0x86d8e4d2u,
    0x651bd98bu, 0x5bb8f1bcu, 0xa90fd27au, 0xb3af077au, 0x4984d782u, 0xca6ef3acu, 0x234e0b26u, 0xdd66cbbbu,
    0x4597456au, 0xe9e28eb4u, 0x7b3ff57au, 0xc9c8b782u, 0x3f70cc6fu, 0x93e106a4u, 0x62ec6c6du, 0xd813b325u,
    0x0df04680u, 0x2342001eu, 0x0a2a8d7eu, 0x6d9a4957u, 0xe8b6368bu, 0xd2c3ed1au, 0x995a5724u, 0x9ef68d35u,
    0x0c139b31u, 0xf2271e60u, 0x0b0bf8cau, 0x2664fd8bu, 0xed64812du, 0x02ee03b2u, 0x8604ae0fu, 0x363bd6b3u,
    0x135c83fdu, 0x5fabe670u, 0x35ec3279u, 0x00bcf5f6u, 0x8ae00689u, 0x17f27698u, 0x58ca5f00u, 0xaa7c7ad5u,
    0xb5cfca28u, 0xded288f8u, 0x59f229bcu, 0x6d390decu, 0x37170390u, 0x6353c1ccu, 0xc4584f5cu, 0xf48642e9u,
    0x531377e2u, 0xdd35bc8du, 0xb25b29f2u, 0x9a5ede41u, 0xa563905du, 0x45cddf4eu, 0xacfa3103u, 0xa51b6135u
};
__attribute__((target("sse4.2,pclmul"))) STS__PRIVATE uint32_t sts__crc_shift(uint32_t c, uint32_t k) {
    __m128i prod = _mm_clmulepi64_si128(_mm_cvtsi32_si128((int)c), _mm_cvtsi32_si128((int)k), 0);
    return (uint32_t)_mm_crc32_u64(0, (uint64_t)_mm_cvtsi128_si64(prod));
}
__attribute__((target("sse4.2,pclmul"))) STS__PRIVATE uint32_t sts__crc32c_hw(uint32_t crc, const uint8_t *p,
        size_t n) {
    uint64_t c = ~crc & 0xffffffffu;
    while (n >= 48) {
        size_t k = n >= 3 * 4096 ? 256 : n / 48 > 64 ? 64 : n / 48, lane = 16 * k, i;
        uint32_t k1 = k == 256 ? 0x82f89c77u : sts__crc_xk[k - 1], k2 = k == 256 ? 0x54a86326u : sts__crc_xk[2 * k - 1];
        uint64_t a = c, b = 0, d = 0, x, y, z;
        for (i = 0; i < lane; i += 16) {  /* two words a lane a step */
            memcpy(&x, p + i, 8);
            memcpy(&y, p + lane + i, 8);
            memcpy(&z, p + 2 * lane + i, 8);
            a = _mm_crc32_u64(a, x);
            b = _mm_crc32_u64(b, y);
            d = _mm_crc32_u64(d, z);
            memcpy(&x, p + i + 8, 8);
            memcpy(&y, p + lane + i + 8, 8);
            memcpy(&z, p + 2 * lane + i + 8, 8);
            a = _mm_crc32_u64(a, x);
            b = _mm_crc32_u64(b, y);
            d = _mm_crc32_u64(d, z);
        }
        c = sts__crc_shift((uint32_t)a, k2) ^ sts__crc_shift((uint32_t)b, k1) ^ (uint32_t)d;
        p += 3 * lane;
        n -= 3 * lane;
    }
    for (; n >= 8; p += 8, n -= 8) {
        uint64_t x;
        memcpy(&x, p, 8);
        c = _mm_crc32_u64(c, x);
    }
    while (n--) c = _mm_crc32_u8((uint32_t)c, *p++);
    return ~(uint32_t)c;
}
/* From 256 bytes with AVX-512 and VPCLMULQDQ: carry-less folds, 256 bytes a step in four 512-bit
   accumulators of four 16-byte lanes each. A lane R (bytes little-endian; its low quadword holds
   the higher powers, H, its high one L: R = H x^64 + L) moves T bits further, R x^T mod P, as
   H (x^(T+63) mod P) + L (x^(T-1) mod P): one carry-less multiply a half, the extra x being the
   one that a multiply of bit-reflected values brings. Each constant below is such a remainder,
   bit-reflected into a quadword (the pairs: low, high). The accumulators then fold into the last,
   its lanes into one, whole 16-byte blocks follow one by one, and the crc32 instruction turns the
   last lane into the CRC (it computes R x^32 mod P); the three-lane loop takes the bytes left. */
#define STS__TARGET_VCRC __attribute__((target("avx512f,avx512vl,avx2,vpclmulqdq,sse4.2,pclmul")))
STS__TARGET_VCRC STS__INLINE __m512i sts__crc_fold512(__m512i a, __m512i k, __m512i d) {  /* a x^T + d */
    return _mm512_ternarylogic_epi64(_mm512_clmulepi64_epi128(a, k, 0x00), _mm512_clmulepi64_epi128(a, k, 0x11), d,
                                     0x96);
}
STS__TARGET_VCRC STS__INLINE __m512i sts__crc_k512(uint64_t lo, uint64_t hi) {
    return _mm512_set_epi64((long long)hi, (long long)lo, (long long)hi, (long long)lo, (long long)hi, (long long)lo,
                            (long long)hi, (long long)lo);
}
STS__TARGET_VCRC STS__PRIVATE uint32_t sts__crc32c_v512(uint32_t crc, const uint8_t *p, size_t n) {
    const __m512i k2048 = sts__crc_k512(0xe9a5d8be00000000ull, 0x1426a81500000000ull);
    __m512i a0, a1, a2, a3, x, y;
    __m256i h;
    __m128i r;
    uint64_t c;
    a0 = _mm512_xor_si512(_mm512_loadu_si512((const void *)p),  /* the running CRC into the first 4 bytes */
                          _mm512_set_epi64(0, 0, 0, 0, 0, 0, 0, (long long)(~crc & 0xffffffffu)));
    a1 = _mm512_loadu_si512((const void *)(p + 64));
    a2 = _mm512_loadu_si512((const void *)(p + 128));
    a3 = _mm512_loadu_si512((const void *)(p + 192));
    p += 256;
    n -= 256;
    for (; n >= 256; p += 256, n -= 256) {
        a0 = sts__crc_fold512(a0, k2048, _mm512_loadu_si512((const void *)p));
        a1 = sts__crc_fold512(a1, k2048, _mm512_loadu_si512((const void *)(p + 64)));
        a2 = sts__crc_fold512(a2, k2048, _mm512_loadu_si512((const void *)(p + 128)));
        a3 = sts__crc_fold512(a3, k2048, _mm512_loadu_si512((const void *)(p + 192)));
    }
    x = sts__crc_fold512(a2, sts__crc_k512(0x1c19243b00000000ull, 0x75bba45b00000000ull), a3);   /* 512 */
    x = sts__crc_fold512(a1, sts__crc_k512(0x6577b24500000000ull, 0x7417153f00000000ull), x);    /* 1024 */
    x = sts__crc_fold512(a0, sts__crc_k512(0x7ccbbbf200000000ull, 0x31c9460800000000ull), x);    /* 1536 */
    /* lanes 0, 1, 2 move 384, 256, 128 bits onto lane 3 */
    y = _mm512_set_epi64(0, 0, 0x3171d43000000000ll, 0x3743f7bd00000000ll, (long long)0xa2158b3400000000ull,
                         0x33ccbbbc00000000ll, 0x6051243f00000000ll, (long long)0xa46ef4aa00000000ull);
    y = _mm512_ternarylogic_epi64(_mm512_clmulepi64_epi128(x, y, 0x00), _mm512_clmulepi64_epi128(x, y, 0x11),
                                  _mm512_maskz_mov_epi64(0xc0, x), 0x96);
    /* the maskz forms: the others leave lanes "undefined", which g++ -O2 reports as uninitialised */
    h = _mm256_xor_si256(_mm512_maskz_extracti64x4_epi64(0x0f, y, 0), _mm512_maskz_extracti64x4_epi64(0x0f, y, 1));
    r = _mm_xor_si128(_mm256_castsi256_si128(h), _mm256_extracti128_si256(h, 1));
    for (; n >= 16; p += 16, n -= 16) {
        const __m128i k128 = _mm_set_epi64x(0x3171d43000000000ll, 0x3743f7bd00000000ll);
        r = _mm_ternarylogic_epi64(_mm_clmulepi64_si128(r, k128, 0x00), _mm_clmulepi64_si128(r, k128, 0x11),
                                   _mm_loadu_si128((const __m128i *)(const void *)p), 0x96);
    }
    c = _mm_crc32_u64(0, (uint64_t)_mm_cvtsi128_si64(r));
    c = _mm_crc32_u64(c, (uint64_t)_mm_extract_epi64(r, 1));
    return sts__crc32c_hw(~(uint32_t)c, p, n);  /* the last 0..15 bytes */
}
#endif
/* use_hw: 0 the portable loop, 2 the three crc32 lanes only, 1 the fastest this CPU has (the tests
   compare them). */
STS__PRIVATE uint32_t sts__crc32c_with(uint32_t crc, const void *p, size_t n, int use_hw) {
#ifdef STS__X86_DYN
    int f = use_hw ? sts__cpu_features() : 0;
    if (use_hw == 1 && n >= 256 && (f & STS__CPU_VCRC)) return sts__crc32c_v512(crc, (const uint8_t *)p, n);
    if (f & STS__CPU_CRC) return sts__crc32c_hw(crc, (const uint8_t *)p, n);
#else
    (void)use_hw;
#endif
    return sts__crc32c_sw(crc, (const uint8_t *)p, n);
}
STS__PRIVATE uint32_t sts__crc32c(uint32_t crc, const void *p, size_t n) { return sts__crc32c_with(crc, p, n, 1); }
/* Joining pieces computed apart (a batch file's header and column regions): with c1 the CRC of A
   and c2 that of B (each started from 0), the CRC of A then B is x^(8|B|) * c1 + c2 (mod P). */
STS__PRIVATE uint32_t sts__crc_mulmod(uint32_t a, uint32_t b) {  /* a * b mod P, reflected: bit 31 is x^0 */
    uint32_t m = 0x80000000u, prod = 0;
    while (m) {
        if (a & m) prod ^= b;
        m >>= 1;
        b = (b >> 1) ^ (0x82F63B78u & (0u - (b & 1u)));
    }
    return prod;
}
STS__PRIVATE uint32_t sts__crc32c_combine(uint32_t c1, uint32_t c2, uint64_t len2) {
    uint32_t xn = 0x80000000u, sq = 0x00800000u;  /* x^0, and x^8: one byte */
    for (; len2; len2 >>= 1, sq = sts__crc_mulmod(sq, sq))
        if (len2 & 1) xn = sts__crc_mulmod(xn, sq);
    return sts__crc_mulmod(xn, c1) ^ c2;
}
/* The CRC of `len` bytes whose n bytes at `at`, of CRC `was`, now have CRC `now`, from the CRC then:
   the CRC is affine, so the two versions differ by was ^ now (the change's own), carried past the
   bytes after it. */
STS__PRIVATE uint32_t sts__crc32c_patch(uint32_t crc, uint64_t len, uint64_t at, uint32_t was, uint32_t now,
                                        uint64_t n) {
    return crc ^ sts__crc32c_combine(was ^ now, 0, len - at - n);
}
/* The CRC of crc's bytes followed by n zero bytes (a batch file's padding rows, which may be
   terabytes of a sparse file): long runs by joins of power-of-two blocks, one per bit of n, so the
   cost is O(log^2 n) whatever n. */
STS__PRIVATE uint32_t sts__crc32c_zeros(uint32_t crc, uint64_t n) {
    static const uint8_t zeros[4096] = { 0 };
    uint64_t left = n;
    if (n > ((uint64_t)1 << 24)) {
        uint32_t block = sts__crc32c(0, zeros, sizeof zeros), z = 0;  /* z: the CRC of the zeros so far (none: 0) */
        uint64_t have = sizeof zeros;                                   /* block: the CRC of `have` zeros */
        for (;;) {
            if (left & have) { z = sts__crc32c_combine(z, block, have); left -= have; }
            if (left <= have || have >> 63) break;  /* no higher bit of n left (left < 4096 now) */
            block = sts__crc32c_combine(block, block, have);
            have *= 2;
        }
        if (left) z = sts__crc32c_combine(z, sts__crc32c(0, zeros, (size_t)left), left);
        return sts__crc32c_combine(crc, z, n);
    }
    while (left) {
        size_t k = left > sizeof zeros ? sizeof zeros : (size_t)left;
        crc = sts__crc32c(crc, zeros, k);
        left -= k;
    }
    return crc;
}

/* >>sha256 ---- SHA-256 (FIPS 180-4): the digest of files and tensors ----
   The Hugging Face Hub lists a safetensors file's SHA-256 as its LFS oid. Whole 64-byte blocks
   are compressed straight from the caller's bytes, a partial one waits in the state's buffer. With
   the SHA extensions (chosen at run time) the rounds run two per _mm_sha256rnds2_epu32 and the
   message schedule in msg1 / msg2; otherwise a portable loop that assembles big-endian words by
   shifts, on any host. Both give the same digests (the tests compare them). */
static const uint32_t sts__sha256_k[64] = {
    0x428a2f98u, 0x71374491u, 0xb5c0fbcfu, 0xe9b5dba5u, 0x3956c25bu, 0x59f111f1u, 0x923f82a4u, 0xab1c5ed5u,
    0xd807aa98u, 0x12835b01u, 0x243185beu, 0x550c7dc3u, 0x72be5d74u, 0x80deb1feu, 0x9bdc06a7u, 0xc19bf174u,
    0xe49b69c1u, 0xefbe4786u, 0x0fc19dc6u, 0x240ca1ccu, 0x2de92c6fu, 0x4a7484aau, 0x5cb0a9dcu, 0x76f988dau,
    0x983e5152u, 0xa831c66du, 0xb00327c8u, 0xbf597fc7u, 0xc6e00bf3u, 0xd5a79147u, 0x06ca6351u, 0x14292967u,
    0x27b70a85u, 0x2e1b2138u, 0x4d2c6dfcu, 0x53380d13u, 0x650a7354u, 0x766a0abbu, 0x81c2c92eu, 0x92722c85u,
    0xa2bfe8a1u, 0xa81a664bu, 0xc24b8b70u, 0xc76c51a3u, 0xd192e819u, 0xd6990624u, 0xf40e3585u, 0x106aa070u,
    0x19a4c116u, 0x1e376c08u, 0x2748774cu, 0x34b0bcb5u, 0x391c0cb3u, 0x4ed8aa4au, 0x5b9cca4fu, 0x682e6ff3u,
    0x748f82eeu, 0x78a5636fu, 0x84c87814u, 0x8cc70208u, 0x90befffau, 0xa4506cebu, 0xbef9a3f7u, 0xc67178f2u,
};
STS__PRIVATE uint32_t sts__sha_ld32(const uint8_t *p) {  /* big-endian */
    return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | (uint32_t)p[3];
}
STS__PRIVATE void sts__sha_st32(uint8_t *p, uint32_t v) {
    p[0] = (uint8_t)(v >> 24);
    p[1] = (uint8_t)(v >> 16);
    p[2] = (uint8_t)(v >> 8);
    p[3] = (uint8_t)v;
}
#define STS__SHA_ROR(x, n) ((x) >> (n) | (x) << (32 - (n)))
/* one round: t1 goes into d (the next e) and into h (the next a); the caller renames the eight */
#define STS__SHA_ROUND(a, b, c, d, e, f, g, h, i) do { \
        uint32_t t1_ = h + (STS__SHA_ROR(e, 6) ^ STS__SHA_ROR(e, 11) ^ STS__SHA_ROR(e, 25)) + \
                       (g ^ (e & (f ^ g))) + sts__sha256_k[i] + w[i]; \
        d += t1_; \
        h = t1_ + (STS__SHA_ROR(a, 2) ^ STS__SHA_ROR(a, 13) ^ STS__SHA_ROR(a, 22)) + ((a & b) | (c & (a | b))); \
    } while (0)
STS__PRIVATE void sts__sha256_blocks_sw(uint32_t st[8], const uint8_t *p, size_t blocks) {
    uint32_t w[64];
    for (; blocks; blocks--, p += 64) {
        uint32_t a = st[0], b = st[1], c = st[2], d = st[3], e = st[4], f = st[5], g = st[6], h = st[7];
        int i;
        for (i = 0; i < 16; i++) w[i] = sts__sha_ld32(p + 4 * i);
        for (i = 16; i < 64; i++) {
            uint32_t x = w[i - 15], y = w[i - 2];
            w[i] = w[i - 16] + w[i - 7] + (STS__SHA_ROR(x, 7) ^ STS__SHA_ROR(x, 18) ^ (x >> 3)) +
                   (STS__SHA_ROR(y, 17) ^ STS__SHA_ROR(y, 19) ^ (y >> 10));
        }
        for (i = 0; i < 64; i += 8) {
            STS__SHA_ROUND(a, b, c, d, e, f, g, h, i);
            STS__SHA_ROUND(h, a, b, c, d, e, f, g, i + 1);
            STS__SHA_ROUND(g, h, a, b, c, d, e, f, i + 2);
            STS__SHA_ROUND(f, g, h, a, b, c, d, e, i + 3);
            STS__SHA_ROUND(e, f, g, h, a, b, c, d, i + 4);
            STS__SHA_ROUND(d, e, f, g, h, a, b, c, i + 5);
            STS__SHA_ROUND(c, d, e, f, g, h, a, b, i + 6);
            STS__SHA_ROUND(b, c, d, e, f, g, h, a, i + 7);
        }
        st[0] += a; st[1] += b; st[2] += c; st[3] += d;
        st[4] += e; st[5] += f; st[6] += g; st[7] += h;
    }
}
#ifdef STS__X86_DYN
/* The SHA extensions keep the eight words in two registers, ABEF and CDGH, A and C in the top
   lanes. sha256rnds2 runs two rounds on them with W + K of those rounds in its low two lanes and
   returns the new ABEF; two rounds later the old ABEF is the new CDGH, so two calls with the
   registers swapped make four rounds and leave each register in its role. The schedule: msg1
   adds sigma0 of the next word to four words 16 back, and msg2 finishes four new words from that
   plus the words 7 back with sigma1 of the words 2 back (two of them just made). */
__attribute__((target("sha,sse4.1"))) STS__PRIVATE void sts__sha256_blocks_hw(uint32_t st[8], const uint8_t *p,
        size_t blocks) {
    const __m128i swap = _mm_set_epi8(12, 13, 14, 15, 8, 9, 10, 11, 4, 5, 6, 7, 0, 1, 2, 3);  /* BE words */
    __m128i abef = _mm_set_epi32((int)st[0], (int)st[1], (int)st[4], (int)st[5]);
    __m128i cdgh = _mm_set_epi32((int)st[2], (int)st[3], (int)st[6], (int)st[7]);
    uint32_t out[8];
    for (; blocks; blocks--, p += 64) {
        const __m128i abef0 = abef, cdgh0 = cdgh;
        __m128i m0 = _mm_shuffle_epi8(_mm_loadu_si128((const __m128i *)(const void *)p), swap);
        __m128i m1 = _mm_shuffle_epi8(_mm_loadu_si128((const __m128i *)(const void *)(p + 16)), swap);
        __m128i m2 = _mm_shuffle_epi8(_mm_loadu_si128((const __m128i *)(const void *)(p + 32)), swap);
        __m128i m3 = _mm_shuffle_epi8(_mm_loadu_si128((const __m128i *)(const void *)(p + 48)), swap);
        int i;
        for (i = 0; i < 16; i++) {  /* four rounds with the words in m0, then the next four words */
            __m128i wk = _mm_add_epi32(m0, _mm_loadu_si128((const __m128i *)(const void *)(sts__sha256_k + 4 * i)));
            __m128i next;
            cdgh = _mm_sha256rnds2_epu32(cdgh, abef, wk);
            abef = _mm_sha256rnds2_epu32(abef, cdgh, _mm_shuffle_epi32(wk, 0x0e));
            if (i < 12) {
                next = _mm_add_epi32(_mm_sha256msg1_epu32(m0, m1), _mm_alignr_epi8(m3, m2, 4));
                next = _mm_sha256msg2_epu32(next, m3);
            } else {
                next = m0;  /* not needed */
            }
            m0 = m1; m1 = m2; m2 = m3; m3 = next;
        }
        abef = _mm_add_epi32(abef, abef0);
        cdgh = _mm_add_epi32(cdgh, cdgh0);
    }
    _mm_storeu_si128((__m128i *)(void *)out, abef);        /* F E B A */
    _mm_storeu_si128((__m128i *)(void *)(out + 4), cdgh);  /* H G D C */
    st[0] = out[3]; st[1] = out[2]; st[4] = out[1]; st[5] = out[0];
    st[2] = out[7]; st[3] = out[6]; st[6] = out[5]; st[7] = out[4];
}
#endif
STS__PRIVATE int sts__sha256_have_hw(void) {
#ifdef STS__X86_DYN
    return (sts__cpu_features() & STS__CPU_SHA) != 0;
#else
    return 0;
#endif
}
STS__PRIVATE void sts__sha256_blocks(sts_sha256 *s, const uint8_t *p, size_t blocks) {
#ifdef STS__X86_DYN
    if (s->use_hw && sts__sha256_have_hw()) { sts__sha256_blocks_hw(s->h, p, blocks); return; }
#endif
    sts__sha256_blocks_sw(s->h, p, blocks);
}
/* With use_hw 0 the portable loop runs (the tests compare the two). */
STS__PRIVATE void sts__sha256_init_with(sts_sha256 *s, int use_hw) {
    static const uint32_t iv[8] = {
        0x6a09e667u, 0xbb67ae85u, 0x3c6ef372u, 0xa54ff53au, 0x510e527fu, 0x9b05688cu, 0x1f83d9abu, 0x5be0cd19u,
    };
    memcpy(s->h, iv, sizeof iv);
    s->len = 0;
    memset(s->buf, 0, sizeof s->buf);
    s->fill = 0;
    s->use_hw = use_hw && sts__sha256_have_hw();
}
STSDEF void sts_sha256_init(sts_sha256 *s) { sts__sha256_init_with(s, 1); }
STSDEF void sts_sha256_update(sts_sha256 *s, const void *data, size_t len) {
    const uint8_t *p = (const uint8_t *)data;
    STS_ASSERT(s && (p || !len) && s->fill < 64);
    if (!len) return;
    s->len += (uint64_t)len;
    if (s->fill) {  /* top up the waiting block first */
        size_t k = 64 - s->fill < len ? 64 - s->fill : len;
        memcpy(s->buf + s->fill, p, k);
        s->fill += k;
        p += k;
        len -= k;
        if (s->fill < 64) return;
        sts__sha256_blocks(s, s->buf, 1);
        s->fill = 0;
    }
    if (len >= 64) {
        sts__sha256_blocks(s, p, len / 64);
        p += len - len % 64;
        len %= 64;
    }
    if (len) {
        memcpy(s->buf, p, len);
        s->fill = len;
    }
}
STSDEF void sts_sha256_final(sts_sha256 *s, uint8_t digest[32]) {
    uint64_t bits = s->len << 3;  /* the message length in bits, mod 2^64 */
    size_t at = s->fill;
    int i;
    STS_ASSERT(at < 64);
    s->buf[at++] = 0x80;
    if (at > 56) {  /* no room for the length: it goes into one more block */
        memset(s->buf + at, 0, 64 - at);
        sts__sha256_blocks(s, s->buf, 1);
        at = 0;
    }
    memset(s->buf + at, 0, 56 - at);
    for (i = 0; i < 8; i++) s->buf[56 + i] = (uint8_t)(bits >> (56 - 8 * i));
    sts__sha256_blocks(s, s->buf, 1);
    for (i = 0; i < 8; i++) sts__sha_st32(digest + 4 * i, s->h[i]);
    sts__sha256_init_with(s, s->use_hw);
}
STSDEF void sts_sha256_memory(const void *data, size_t len, uint8_t digest[32]) {
    sts_sha256 s;
    sts_sha256_init(&s);
    sts_sha256_update(&s, data, len);
    sts_sha256_final(&s, digest);
}
STSDEF void sts_sha256_hex(const uint8_t digest[32], char hex[65]) {
    static const char digits[] = "0123456789abcdef";
    int i;
    for (i = 0; i < 32; i++) {
        hex[2 * i] = digits[digest[i] >> 4];
        hex[2 * i + 1] = digits[digest[i] & 15];
    }
    hex[64] = 0;
}
STS__PRIVATE int sts__sha_nibble(char ch) {
    if (ch >= '0' && ch <= '9') return ch - '0';
    if (ch >= 'a' && ch <= 'f') return ch - 'a' + 10;
    if (ch >= 'A' && ch <= 'F') return ch - 'A' + 10;
    return -1;
}
STSDEF int sts_sha256_parse_hex(const char *hex, size_t len, uint8_t digest[32]) {
    uint8_t d[32];
    int i;
    if (!hex || len != 64) return 0;
    for (i = 0; i < 32; i++) {
        int hi = sts__sha_nibble(hex[2 * i]), lo = sts__sha_nibble(hex[2 * i + 1]);
        if (hi < 0 || lo < 0) return 0;
        d[i] = (uint8_t)(hi << 4 | lo);
    }
    memcpy(digest, d, sizeof d);
    return 1;
}
STSDEF const char *sts_sha256_isa(void) { return sts__sha256_have_hw() ? "sha-ni" : "scalar"; }

/* >>dequant ---- ggml block types to F32: the quantised tensors of GGUF files ----
   Q8_0, Q4_0, Q4_1, Q5_0, Q5_1 (blocks of 32) and Q2_K, Q3_K, Q4_K, Q5_K, Q6_K (super-blocks of
   256), decoded from ggml's block layouts (ggml-common.h): little-endian fp16 scales, decoded
   exactly by sts__f16_to_f32, and integer quants. The arithmetic is fixed so that every path gives
   the same bits: a sub-block's scale is the fp16 scale times a small integer (exact in F32), its
   values that times the quant (exact again: at most 11 + 7 + 5 significant bits), and the types
   with a minimum subtract or add it in one more operation, the only one that rounds. A fused
   multiply-add gives those bits too (its product is exact), so contraction cannot change them.
   The SIMD kernels (SSE2 and AVX2 + F16C chosen at run time, NEON on little-endian AArch64) do
   the same operations lane by lane; the scalar decoders are their twins and run elsewhere
   (STS_NO_SIMD, other CPUs); the tests compare every level with them. */
enum { STS__DQ_Q8_0, STS__DQ_Q4_0, STS__DQ_Q4_1, STS__DQ_Q5_0, STS__DQ_Q5_1, STS__DQ_Q2_K, STS__DQ_Q3_K,
       STS__DQ_Q4_K, STS__DQ_Q5_K, STS__DQ_Q6_K, STS__DQ_COUNT };
typedef struct sts__dq_type { const char *name; uint32_t elems, bytes; } sts__dq_type;
static const sts__dq_type sts__dq_types[STS__DQ_COUNT] = {
    { "Q8_0", 32, 34 }, { "Q4_0", 32, 18 }, { "Q4_1", 32, 20 }, { "Q5_0", 32, 22 }, { "Q5_1", 32, 24 },
    { "Q2_K", 256, 84 }, { "Q3_K", 256, 110 }, { "Q4_K", 256, 144 }, { "Q5_K", 256, 176 }, { "Q6_K", 256, 210 },
};
/* n blocks from b into y (n x elems floats) */
typedef void (*sts__dq_fn)(float *y, const uint8_t *b, size_t n);

STS__PRIVATE float sts__dq_f16(const uint8_t *p) {   /* a little-endian fp16, exactly */
    uint32_t u = sts__f16_to_f32(sts__le16(p));
    float f;
    memcpy(&f, &u, 4);
    return f;
}
STS__PRIVATE int sts__dq_s8(uint32_t v) { return (int)(v & 0x7fu) - (int)(v & 0x80u); }  /* a byte as int8 */

/* Q8_0 (34 bytes): d, 32 int8 quants. y = d * q. */
STS__PRIVATE void sts__dq_q8_0_c(float *y, const uint8_t *b, size_t n) {
    int l;
    for (; n; n--, b += 34, y += 32) {
        const float d = sts__dq_f16(b);
        for (l = 0; l < 32; l++) y[l] = d * (float)sts__dq_s8(b[2 + l]);
    }
}
/* Q4_0 (18): d, 16 bytes; byte l holds element l (low nibble) and l + 16 (high). y = d * (q - 8). */
STS__PRIVATE void sts__dq_q4_0_c(float *y, const uint8_t *b, size_t n) {
    int l;
    for (; n; n--, b += 18, y += 32) {
        const float d = sts__dq_f16(b);
        for (l = 0; l < 16; l++) {
            y[l] = d * (float)((int)(b[2 + l] & 15u) - 8);
            y[l + 16] = d * (float)((int)(b[2 + l] >> 4) - 8);
        }
    }
}
/* Q4_1 (20): d, m, 16 bytes as Q4_0. y = d * q + m. */
STS__PRIVATE void sts__dq_q4_1_c(float *y, const uint8_t *b, size_t n) {
    int l;
    for (; n; n--, b += 20, y += 32) {
        const float d = sts__dq_f16(b), m = sts__dq_f16(b + 2);
        for (l = 0; l < 16; l++) {
            y[l] = d * (float)(b[4 + l] & 15u) + m;
            y[l + 16] = d * (float)(b[4 + l] >> 4) + m;
        }
    }
}
/* Q5_0 (22): d, a 32-bit word of fifth bits (bit j for element j), 16 nibble bytes as Q4_0.
   y = d * (q - 16). */
STS__PRIVATE void sts__dq_q5_0_c(float *y, const uint8_t *b, size_t n) {
    int l;
    for (; n; n--, b += 22, y += 32) {
        const float d = sts__dq_f16(b);
        const uint32_t qh = sts__le32(b + 2);
        for (l = 0; l < 16; l++) {
            y[l] = d * (float)((int)((b[6 + l] & 15u) | (qh >> l & 1u) << 4) - 16);
            y[l + 16] = d * (float)((int)((uint32_t)(b[6 + l] >> 4) | (qh >> (l + 16) & 1u) << 4) - 16);
        }
    }
}
/* Q5_1 (24): d, m, the fifth bits, 16 nibble bytes. y = d * q + m. */
STS__PRIVATE void sts__dq_q5_1_c(float *y, const uint8_t *b, size_t n) {
    int l;
    for (; n; n--, b += 24, y += 32) {
        const float d = sts__dq_f16(b), m = sts__dq_f16(b + 2);
        const uint32_t qh = sts__le32(b + 4);
        for (l = 0; l < 16; l++) {
            y[l] = d * (float)((b[8 + l] & 15u) | (qh >> l & 1u) << 4) + m;
            y[l + 16] = d * (float)((uint32_t)(b[8 + l] >> 4) | (qh >> (l + 16) & 1u) << 4) + m;
        }
    }
}
/* The k-quants' sub-block s of 16 (Q2_K, Q3_K, Q6_K): its elements 16s .. 16s + 15 take 2-bit
   fields from the 32-byte group (s / 8) of the quant bytes, bytes 16 (s % 2) .. + 15, at bit
   2 ((s % 8) / 2). */
/* Q2_K (84): 16 scale bytes (low nibble scale, high nibble min), 64 quant bytes, d, dmin.
   y = (d * sc) * q - dmin * mn. */
STS__PRIVATE void sts__dq_q2_k_c(float *y, const uint8_t *b, size_t n) {
    int s, l;
    for (; n; n--, b += 84) {
        const float d = sts__dq_f16(b + 80), dmin = sts__dq_f16(b + 82);
        for (s = 0; s < 16; s++, y += 16) {
            const uint8_t *q = b + 16 + 32 * (s >> 3) + 16 * (s & 1);
            const int sh = 2 * ((s & 7) >> 1);
            const float dl = d * (float)(b[s] & 15u), ml = dmin * (float)(b[s] >> 4);
            for (l = 0; l < 16; l++) y[l] = dl * (float)(q[l] >> sh & 3) - ml;
        }
    }
}
/* Q3_K's 6-bit scale i (0..15) from its 12 bytes: the low 4 bits in byte i % 8 (low nibble for
   i < 8), the high 2 in byte 8 + i % 4 at bit 2 (i / 4); the value is that minus 32. */
STS__PRIVATE int sts__dq_q3_scale(const uint8_t *sc, int i) {
    uint32_t lo = i < 8 ? sc[i] & 15u : (uint32_t)(sc[i - 8] >> 4);
    uint32_t hi = (uint32_t)sc[8 + (i & 3)] >> (2 * (i >> 2)) & 3u;
    return (int)(lo | hi << 4) - 32;
}
/* Q3_K (110): 32 bytes of high bits (element 16 (s % 2) + l of sub-block s at bit s / 2 of byte
   16 (s % 2) + l), 64 bytes of 2-bit fields, 12 bytes of 6-bit scales, d. The quant is the field
   minus 4 where the high bit is clear. y = (d * sc) * q. */
STS__PRIVATE void sts__dq_q3_k_c(float *y, const uint8_t *b, size_t n) {
    int s, l;
    for (; n; n--, b += 110) {
        const float d = sts__dq_f16(b + 108);
        for (s = 0; s < 16; s++, y += 16) {
            const uint8_t *q = b + 32 + 32 * (s >> 3) + 16 * (s & 1), *hm = b + 16 * (s & 1);
            const int sh = 2 * ((s & 7) >> 1), hb = s >> 1;
            const float dl = d * (float)sts__dq_q3_scale(b + 96, s);
            for (l = 0; l < 16; l++) y[l] = dl * (float)((int)(q[l] >> sh & 3) - (hm[l] >> hb & 1 ? 0 : 4));
        }
    }
}
/* Q4_K / Q5_K: 8 sub-blocks of 32 with 6-bit scales and mins packed in 12 bytes: for j < 4 the
   low 6 bits of bytes j (scale) and j + 4 (min); for j >= 4 byte j + 4's low (scale) and high (min)
   nibble, with the top two bits of bytes j - 4 (scale) and j (min) above them. */
STS__PRIVATE void sts__dq_k4_scales(const uint8_t *p, int j, uint32_t *sc, uint32_t *mn) {
    if (j < 4) { *sc = p[j] & 63u; *mn = p[j + 4] & 63u; }
    else {
        *sc = (p[j + 4] & 15u) | (uint32_t)(p[j - 4] >> 6) << 4;
        *mn = (uint32_t)(p[j + 4] >> 4) | (uint32_t)(p[j] >> 6) << 4;
    }
}
/* Q4_K (144): d, dmin, 12 scale bytes, 128 quant bytes: sub-blocks 2c and 2c + 1 are the low and
   high nibbles of bytes 32c .. 32c + 31. y = (d * sc) * q - dmin * mn. */
STS__PRIVATE void sts__dq_q4_k_c(float *y, const uint8_t *b, size_t n) {
    int s, l;
    for (; n; n--, b += 144) {
        const float d = sts__dq_f16(b), dmin = sts__dq_f16(b + 2);
        for (s = 0; s < 8; s++, y += 32) {
            const uint8_t *q = b + 16 + 32 * (s >> 1);
            const int sh = 4 * (s & 1);
            uint32_t sc, mn;
            float dl, ml;
            sts__dq_k4_scales(b + 4, s, &sc, &mn);
            dl = d * (float)sc;
            ml = dmin * (float)mn;
            for (l = 0; l < 32; l++) y[l] = dl * (float)(q[l] >> sh & 15) - ml;
        }
    }
}
/* Q5_K (176): as Q4_K with 32 bytes of fifth bits before the nibbles: element l of sub-block s has
   bit s of byte l. */
STS__PRIVATE void sts__dq_q5_k_c(float *y, const uint8_t *b, size_t n) {
    int s, l;
    for (; n; n--, b += 176) {
        const float d = sts__dq_f16(b), dmin = sts__dq_f16(b + 2);
        for (s = 0; s < 8; s++, y += 32) {
            const uint8_t *q = b + 48 + 32 * (s >> 1), *qh = b + 16;
            const int sh = 4 * (s & 1);
            uint32_t sc, mn;
            float dl, ml;
            sts__dq_k4_scales(b + 4, s, &sc, &mn);
            dl = d * (float)sc;
            ml = dmin * (float)mn;
            for (l = 0; l < 32; l++) y[l] = dl * (float)((q[l] >> sh & 15) | (qh[l] >> s & 1) << 4) - ml;
        }
    }
}
/* Q6_K (210): 128 bytes of low nibbles, 64 of 2-bit high parts, 16 int8 scales, d. In half h
   (128 elements), quarter k (32): low nibbles from bytes 64h + 32 (k % 2) + l (high nibble for
   k >= 2), high parts from byte 32h + l at bit 2k. y = (d * sc) * (q - 32). */
STS__PRIVATE void sts__dq_q6_k_c(float *y, const uint8_t *b, size_t n) {
    int s, l;
    for (; n; n--, b += 210) {
        const float d = sts__dq_f16(b + 208);
        for (s = 0; s < 16; s++, y += 16) {
            const int h = s >> 3, k = (s & 7) >> 1, l0 = 16 * (s & 1);
            const uint8_t *ql = b + 64 * h + 32 * (k & 1) + l0, *qh = b + 128 + 32 * h + l0;
            const int shl = 4 * (k >> 1), shh = 2 * k;
            const float dl = d * (float)sts__dq_s8(b[192 + s]);
            for (l = 0; l < 16; l++)
                y[l] = dl * (float)((int)((ql[l] >> shl & 15) | (qh[l] >> shh & 3) << 4) - 32);
        }
    }
}

#ifdef STS__SSE2
/* ---- SSE2 (the x86-64 baseline, for CPUs without AVX2): sixteen quants a byte vector as in
   the NEON kernels, byte shifts made of 16-bit shifts and a mask, int8 widened by unpacking
   with itself and arithmetic shifts. The scales come from the scalar helpers. ---- */
STS__VEC void sts__dq_sse16(float *y, __m128 d, __m128i q, __m128 m, int mode) {   /* as sts__dq_neon16 */
    const __m128i lo = _mm_srai_epi16(_mm_unpacklo_epi8(q, q), 8), hi = _mm_srai_epi16(_mm_unpackhi_epi8(q, q), 8);
    __m128i w[4];
    int k;
    w[0] = _mm_srai_epi32(_mm_unpacklo_epi16(lo, lo), 16);
    w[1] = _mm_srai_epi32(_mm_unpackhi_epi16(lo, lo), 16);
    w[2] = _mm_srai_epi32(_mm_unpacklo_epi16(hi, hi), 16);
    w[3] = _mm_srai_epi32(_mm_unpackhi_epi16(hi, hi), 16);
    for (k = 0; k < 4; k++) {
        __m128 v = _mm_mul_ps(d, _mm_cvtepi32_ps(w[k]));
        if (mode == 1) v = _mm_add_ps(v, m);
        else if (mode == 2) v = _mm_sub_ps(v, m);
        _mm_storeu_ps(y + 4 * k, v);
    }
}
STS__VEC __m128i sts__dq_sse_ld(const uint8_t *p) { return _mm_loadu_si128((const __m128i *)(const void *)p); }
STS__VEC __m128i sts__dq_sse_shr(__m128i v, int n) {   /* v >> n in each byte */
    return _mm_and_si128(_mm_srl_epi16(v, _mm_cvtsi32_si128(n)), _mm_set1_epi8((char)(0xff >> n)));
}
STS__VEC __m128i sts__dq_sse_bit4(uint32_t qh, int e0) {   /* as sts__dq_neon_bit4 */
    const __m128i bit = _mm_setr_epi8(1, 2, 4, 8, 16, 32, 64, (char)-128, 1, 2, 4, 8, 16, 32, 64, (char)-128);
    const __m128i bytes = _mm_unpacklo_epi64(_mm_set1_epi8((char)(qh >> e0 & 255u)),
                                             _mm_set1_epi8((char)(qh >> (e0 + 8) & 255u)));
    return _mm_and_si128(_mm_cmpeq_epi8(_mm_and_si128(bytes, bit), bit), _mm_set1_epi8(16));
}
STS__PRIVATE void sts__dq_q8_0_sse2(float *y, const uint8_t *b, size_t n) {
    const __m128 z = _mm_setzero_ps();
    for (; n; n--, b += 34, y += 32) {
        const __m128 d = _mm_set1_ps(sts__dq_f16(b));
        sts__dq_sse16(y, d, sts__dq_sse_ld(b + 2), z, 0);
        sts__dq_sse16(y + 16, d, sts__dq_sse_ld(b + 18), z, 0);
    }
}
STS__INLINE void sts__dq_q45_sse2(float *y, const uint8_t *b, size_t n, size_t bytes, int qs, int five, int mode) {
    const __m128i bias = _mm_set1_epi8((char)(mode ? 0 : five ? 16 : 8)), k15 = _mm_set1_epi8(15);
    for (; n; n--, b += bytes, y += 32) {
        const __m128 d = _mm_set1_ps(sts__dq_f16(b)), m = _mm_set1_ps(mode ? sts__dq_f16(b + 2) : 0.0f);
        const __m128i v = sts__dq_sse_ld(b + qs);
        __m128i lo = _mm_and_si128(v, k15), hi = sts__dq_sse_shr(v, 4);
        if (five) {
            const uint32_t qh = sts__le32(b + qs - 4);
            lo = _mm_or_si128(lo, sts__dq_sse_bit4(qh, 0));
            hi = _mm_or_si128(hi, sts__dq_sse_bit4(qh, 16));
        }
        sts__dq_sse16(y, d, _mm_sub_epi8(lo, bias), m, mode);
        sts__dq_sse16(y + 16, d, _mm_sub_epi8(hi, bias), m, mode);
    }
}
STS__PRIVATE void sts__dq_q4_0_sse2(float *y, const uint8_t *b, size_t n) { sts__dq_q45_sse2(y, b, n, 18, 2, 0, 0); }
STS__PRIVATE void sts__dq_q4_1_sse2(float *y, const uint8_t *b, size_t n) { sts__dq_q45_sse2(y, b, n, 20, 4, 0, 1); }
STS__PRIVATE void sts__dq_q5_0_sse2(float *y, const uint8_t *b, size_t n) { sts__dq_q45_sse2(y, b, n, 22, 6, 1, 0); }
STS__PRIVATE void sts__dq_q5_1_sse2(float *y, const uint8_t *b, size_t n) { sts__dq_q45_sse2(y, b, n, 24, 8, 1, 1); }
STS__PRIVATE void sts__dq_q2_k_sse2(float *y, const uint8_t *b, size_t n) {
    const __m128i k3 = _mm_set1_epi8(3);
    int s;
    for (; n; n--, b += 84) {
        const float d = sts__dq_f16(b + 80), dmin = sts__dq_f16(b + 82);
        for (s = 0; s < 16; s++, y += 16) {
            const __m128i q = sts__dq_sse_ld(b + 16 + 32 * (s >> 3) + 16 * (s & 1));
            const __m128i f = _mm_and_si128(sts__dq_sse_shr(q, 2 * ((s & 7) >> 1)), k3);
            sts__dq_sse16(y, _mm_set1_ps(d * (float)(b[s] & 15u)), f, _mm_set1_ps(dmin * (float)(b[s] >> 4)), 2);
        }
    }
}
STS__PRIVATE void sts__dq_q3_k_sse2(float *y, const uint8_t *b, size_t n) {
    const __m128i k3 = _mm_set1_epi8(3), k1 = _mm_set1_epi8(1), k4 = _mm_set1_epi8(4);
    const __m128 z = _mm_setzero_ps();
    int s;
    for (; n; n--, b += 110) {
        const float d = sts__dq_f16(b + 108);
        for (s = 0; s < 16; s++, y += 16) {
            const __m128i q = sts__dq_sse_ld(b + 32 + 32 * (s >> 3) + 16 * (s & 1));
            const __m128i hm = sts__dq_sse_ld(b + 16 * (s & 1));
            const __m128i lo = _mm_and_si128(sts__dq_sse_shr(q, 2 * ((s & 7) >> 1)), k3);
            const __m128i hi = _mm_and_si128(sts__dq_sse_shr(hm, s >> 1), k1);
            sts__dq_sse16(y, _mm_set1_ps(d * (float)sts__dq_q3_scale(b + 96, s)),
                          _mm_sub_epi8(_mm_or_si128(lo, _mm_slli_epi16(hi, 2)), k4), z, 0);   /* bytes <= 7: no carry */
        }
    }
}
STS__INLINE void sts__dq_k45_sse2(float *y, const uint8_t *b, size_t n, size_t bytes, int qs, int five) {
    const __m128i k15 = _mm_set1_epi8(15), k1 = _mm_set1_epi8(1);
    int s, u;
    for (; n; n--, b += bytes) {
        const float d = sts__dq_f16(b), dmin = sts__dq_f16(b + 2);
        for (s = 0; s < 8; s++, y += 32) {
            uint32_t sc, mn;
            __m128 dl, ml;
            sts__dq_k4_scales(b + 4, s, &sc, &mn);
            dl = _mm_set1_ps(d * (float)sc);
            ml = _mm_set1_ps(dmin * (float)mn);
            for (u = 0; u < 2; u++) {
                const __m128i v = sts__dq_sse_ld(b + qs + 32 * (s >> 1) + 16 * u);
                __m128i q = (s & 1) ? sts__dq_sse_shr(v, 4) : _mm_and_si128(v, k15);
                if (five) {   /* bit s of the qh byte, to bit 4: 0 or 16 */
                    const __m128i h = _mm_and_si128(sts__dq_sse_shr(sts__dq_sse_ld(b + 16 + 16 * u), s), k1);
                    q = _mm_or_si128(q, _mm_slli_epi16(h, 4));
                }
                sts__dq_sse16(y + 16 * u, dl, q, ml, 2);
            }
        }
    }
}
STS__PRIVATE void sts__dq_q4_k_sse2(float *y, const uint8_t *b, size_t n) { sts__dq_k45_sse2(y, b, n, 144, 16, 0); }
STS__PRIVATE void sts__dq_q5_k_sse2(float *y, const uint8_t *b, size_t n) { sts__dq_k45_sse2(y, b, n, 176, 48, 1); }
STS__PRIVATE void sts__dq_q6_k_sse2(float *y, const uint8_t *b, size_t n) {
    const __m128i k15 = _mm_set1_epi8(15), k3 = _mm_set1_epi8(3), k32 = _mm_set1_epi8(32);
    const __m128 z = _mm_setzero_ps();
    int s;
    for (; n; n--, b += 210) {
        const float d = sts__dq_f16(b + 208);
        for (s = 0; s < 16; s++, y += 16) {
            const int h = s >> 3, k = (s & 7) >> 1, l0 = 16 * (s & 1);
            const __m128i ql = sts__dq_sse_ld(b + 64 * h + 32 * (k & 1) + l0);
            const __m128i qh = sts__dq_sse_ld(b + 128 + 32 * h + l0);
            const __m128i lo = (k >> 1) ? sts__dq_sse_shr(ql, 4) : _mm_and_si128(ql, k15);
            const __m128i hi = _mm_slli_epi16(_mm_and_si128(sts__dq_sse_shr(qh, 2 * k), k3), 4);   /* <= 48: no carry */
            sts__dq_sse16(y, _mm_set1_ps(d * (float)sts__dq_s8(b[192 + s])), _mm_sub_epi8(_mm_or_si128(lo, hi), k32), z,
                          0);
        }
    }
}
#endif /* STS__SSE2 */

#ifdef STS__X86_DYN
/* ---- AVX2 + F16C: eight elements a vector. The quant bytes are widened to 32-bit lanes as they
   are loaded (vpmovzxbd / vpmovsxbd from memory, eight bytes at a time), so every field is
   extracted with 32-bit shifts and masks, then converted, multiplied and stored: the scalar
   decoders' operations in the same order, one separate multiply and add or subtract (the target
   has no FMA). A sub-block's scale and minimum are computed as scalars, as the twins do. Plain
   stores only: unlike sts_convert's kernels these read about a quarter of what they write or
   less, and non-temporal stores measured slower (bench/RESULTS.md, issue 14). ---- */
STS__VEC STS__TARGET_AVX2 __m256i sts__dq_u8x8(const uint8_t *p) {
    return _mm256_cvtepu8_epi32(_mm_loadl_epi64((const __m128i *)(const void *)p));
}
STS__VEC STS__TARGET_AVX2 __m256i sts__dq_s8x8(const uint8_t *p) {
    return _mm256_cvtepi8_epi32(_mm_loadl_epi64((const __m128i *)(const void *)p));
}
STS__VEC STS__TARGET_AVX2 float sts__dq_f16c(const uint8_t *p) {   /* vcvtph2ps: sts__f16_to_f32's bits */
    return _mm_cvtss_f32(_mm_cvtph_ps(_mm_cvtsi32_si128((int)sts__le16(p))));
}
/* y[0..7] = d * q, d * q + m, d * q - m (q in 32-bit lanes) */
STS__VEC STS__TARGET_AVX2 void sts__dq_mul(float *y, __m256 d, __m256i q) {
    _mm256_storeu_ps(y, _mm256_mul_ps(d, _mm256_cvtepi32_ps(q)));
}
STS__VEC STS__TARGET_AVX2 void sts__dq_mul_add(float *y, __m256 d, __m256i q, __m256 m) {
    _mm256_storeu_ps(y, _mm256_add_ps(_mm256_mul_ps(d, _mm256_cvtepi32_ps(q)), m));
}
STS__VEC STS__TARGET_AVX2 void sts__dq_mul_sub(float *y, __m256 d, __m256i q, __m256 m) {
    _mm256_storeu_ps(y, _mm256_sub_ps(_mm256_mul_ps(d, _mm256_cvtepi32_ps(q)), m));
}
#define STS__DQ_SRL(x, n) _mm256_srl_epi32((x), _mm_cvtsi32_si128(n))   /* a shift by a run-time count */

STS__PRIVATE STS__TARGET_AVX2 void sts__dq_q8_0_avx2(float *y, const uint8_t *b, size_t n) {
    int k;
    for (; n; n--, b += 34, y += 32) {
        const __m256 d = _mm256_set1_ps(sts__dq_f16c(b));
        for (k = 0; k < 4; k++)
            sts__dq_mul(y + 8 * k, d, sts__dq_s8x8(b + 2 + 8 * k));
    }
}
STS__PRIVATE STS__TARGET_AVX2 void sts__dq_q4_0_avx2(float *y, const uint8_t *b, size_t n) {
    const __m256i k15 = _mm256_set1_epi32(15), k8 = _mm256_set1_epi32(8);
    int k;
    for (; n; n--, b += 18, y += 32) {
        const __m256 d = _mm256_set1_ps(sts__dq_f16c(b));
        for (k = 0; k < 2; k++) {
            const __m256i x = sts__dq_u8x8(b + 2 + 8 * k);
            sts__dq_mul(y + 8 * k, d, _mm256_sub_epi32(_mm256_and_si256(x, k15), k8));
            sts__dq_mul(y + 16 + 8 * k, d, _mm256_sub_epi32(_mm256_srli_epi32(x, 4), k8));
        }
    }
}
STS__PRIVATE STS__TARGET_AVX2 void sts__dq_q4_1_avx2(float *y, const uint8_t *b, size_t n) {
    const __m256i k15 = _mm256_set1_epi32(15);
    int k;
    for (; n; n--, b += 20, y += 32) {
        const __m256 d = _mm256_set1_ps(sts__dq_f16c(b)), m = _mm256_set1_ps(sts__dq_f16c(b + 2));
        for (k = 0; k < 2; k++) {
            const __m256i x = sts__dq_u8x8(b + 4 + 8 * k);
            sts__dq_mul_add(y + 8 * k, d, _mm256_and_si256(x, k15), m);
            sts__dq_mul_add(y + 16 + 8 * k, d, _mm256_srli_epi32(x, 4), m);
        }
    }
}
/* Q5_0 / Q5_1: the fifth bit of element e is bit e of qh: shifted into place lane by lane */
STS__VEC STS__TARGET_AVX2 __m256i sts__dq_bit4(__m256i qh, int e0) {
    const __m256i lane = _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7);
    return _mm256_slli_epi32(_mm256_and_si256(_mm256_srlv_epi32(qh, _mm256_add_epi32(lane, _mm256_set1_epi32(e0))),
                                              _mm256_set1_epi32(1)), 4);
}
STS__PRIVATE STS__TARGET_AVX2 void sts__dq_q5_0_avx2(float *y, const uint8_t *b, size_t n) {
    const __m256i k15 = _mm256_set1_epi32(15), k16 = _mm256_set1_epi32(16);
    int k;
    for (; n; n--, b += 22, y += 32) {
        const __m256 d = _mm256_set1_ps(sts__dq_f16c(b));
        const __m256i qh = _mm256_set1_epi32((int)sts__le32(b + 2));
        for (k = 0; k < 2; k++) {
            const __m256i x = sts__dq_u8x8(b + 6 + 8 * k);
            sts__dq_mul(y + 8 * k, d, _mm256_sub_epi32(_mm256_or_si256(_mm256_and_si256(x, k15),
                                                                      sts__dq_bit4(qh, 8 * k)), k16));
            sts__dq_mul(y + 16 + 8 * k, d, _mm256_sub_epi32(_mm256_or_si256(_mm256_srli_epi32(x, 4),
                                                                           sts__dq_bit4(qh, 16 + 8 * k)), k16));
        }
    }
}
STS__PRIVATE STS__TARGET_AVX2 void sts__dq_q5_1_avx2(float *y, const uint8_t *b, size_t n) {
    const __m256i k15 = _mm256_set1_epi32(15);
    int k;
    for (; n; n--, b += 24, y += 32) {
        const __m256 d = _mm256_set1_ps(sts__dq_f16c(b)), m = _mm256_set1_ps(sts__dq_f16c(b + 2));
        const __m256i qh = _mm256_set1_epi32((int)sts__le32(b + 4));
        for (k = 0; k < 2; k++) {
            const __m256i x = sts__dq_u8x8(b + 8 + 8 * k);
            const __m256i lo = _mm256_or_si256(_mm256_and_si256(x, k15), sts__dq_bit4(qh, 8 * k));
            const __m256i hi = _mm256_or_si256(_mm256_srli_epi32(x, 4), sts__dq_bit4(qh, 16 + 8 * k));
            sts__dq_mul_add(y + 8 * k, d, lo, m);
            sts__dq_mul_add(y + 16 + 8 * k, d, hi, m);
        }
    }
}
STS__PRIVATE STS__TARGET_AVX2 void sts__dq_q2_k_avx2(float *y, const uint8_t *b, size_t n) {
    const __m256i k3 = _mm256_set1_epi32(3);
    int s, k;
    for (; n; n--, b += 84) {
        const float d = sts__dq_f16c(b + 80), dmin = sts__dq_f16c(b + 82);
        for (s = 0; s < 16; s++, y += 16) {
            const uint8_t *q = b + 16 + 32 * (s >> 3) + 16 * (s & 1);
            const int sh = 2 * ((s & 7) >> 1);
            const __m256 dl = _mm256_set1_ps(d * (float)(b[s] & 15u)), ml = _mm256_set1_ps(dmin * (float)(b[s] >> 4));
            for (k = 0; k < 2; k++)
                sts__dq_mul_sub(y + 8 * k, dl, _mm256_and_si256(STS__DQ_SRL(sts__dq_u8x8(q + 8 * k), sh), k3), ml);
        }
    }
}
STS__PRIVATE STS__TARGET_AVX2 void sts__dq_q3_k_avx2(float *y, const uint8_t *b, size_t n) {
    const __m256i k3 = _mm256_set1_epi32(3), k1 = _mm256_set1_epi32(1), k4 = _mm256_set1_epi32(4);
    int s, k;
    for (; n; n--, b += 110) {
        const float d = sts__dq_f16c(b + 108);
        for (s = 0; s < 16; s++, y += 16) {
            const uint8_t *q = b + 32 + 32 * (s >> 3) + 16 * (s & 1), *hm = b + 16 * (s & 1);
            const int sh = 2 * ((s & 7) >> 1), hb = s >> 1;
            const __m256 dl = _mm256_set1_ps(d * (float)sts__dq_q3_scale(b + 96, s));
            for (k = 0; k < 2; k++) {   /* field + 4 * high bit - 4 */
                const __m256i lo = _mm256_and_si256(STS__DQ_SRL(sts__dq_u8x8(q + 8 * k), sh), k3);
                const __m256i hi = _mm256_and_si256(STS__DQ_SRL(sts__dq_u8x8(hm + 8 * k), hb), k1);
                sts__dq_mul(y + 8 * k, dl, _mm256_sub_epi32(_mm256_or_si256(lo, _mm256_slli_epi32(hi, 2)), k4));
            }
        }
    }
}
STS__PRIVATE STS__TARGET_AVX2 void sts__dq_q4_k_avx2(float *y, const uint8_t *b, size_t n) {
    const __m256i k15 = _mm256_set1_epi32(15);
    int c, k;
    for (; n; n--, b += 144, y += 256) {
        const float d = sts__dq_f16c(b), dmin = sts__dq_f16c(b + 2);
        for (c = 0; c < 4; c++) {
            uint32_t sc, mn;
            __m256 dl0, ml0, dl1, ml1;
            sts__dq_k4_scales(b + 4, 2 * c, &sc, &mn);
            dl0 = _mm256_set1_ps(d * (float)sc);
            ml0 = _mm256_set1_ps(dmin * (float)mn);
            sts__dq_k4_scales(b + 4, 2 * c + 1, &sc, &mn);
            dl1 = _mm256_set1_ps(d * (float)sc);
            ml1 = _mm256_set1_ps(dmin * (float)mn);
            for (k = 0; k < 4; k++) {
                const __m256i x = sts__dq_u8x8(b + 16 + 32 * c + 8 * k);
                sts__dq_mul_sub(y + 64 * c + 8 * k, dl0, _mm256_and_si256(x, k15), ml0);
                sts__dq_mul_sub(y + 64 * c + 32 + 8 * k, dl1, _mm256_srli_epi32(x, 4), ml1);
            }
        }
    }
}
STS__PRIVATE STS__TARGET_AVX2 void sts__dq_q5_k_avx2(float *y, const uint8_t *b, size_t n) {
    const __m256i k15 = _mm256_set1_epi32(15), k16 = _mm256_set1_epi32(16);
    int c, k;
    for (; n; n--, b += 176, y += 256) {
        const float d = sts__dq_f16c(b), dmin = sts__dq_f16c(b + 2);
        for (c = 0; c < 4; c++) {
            uint32_t sc, mn;
            __m256 dl0, ml0, dl1, ml1;
            sts__dq_k4_scales(b + 4, 2 * c, &sc, &mn);
            dl0 = _mm256_set1_ps(d * (float)sc);
            ml0 = _mm256_set1_ps(dmin * (float)mn);
            sts__dq_k4_scales(b + 4, 2 * c + 1, &sc, &mn);
            dl1 = _mm256_set1_ps(d * (float)sc);
            ml1 = _mm256_set1_ps(dmin * (float)mn);
            for (k = 0; k < 4; k++) {
                const __m256i x = sts__dq_u8x8(b + 48 + 32 * c + 8 * k), h = sts__dq_u8x8(b + 16 + 8 * k);
                const __m256i h0 = _mm256_and_si256(_mm256_slli_epi32(STS__DQ_SRL(h, 2 * c), 4), k16);
                const __m256i h1 = _mm256_and_si256(_mm256_slli_epi32(STS__DQ_SRL(h, 2 * c + 1), 4), k16);
                sts__dq_mul_sub(y + 64 * c + 8 * k, dl0, _mm256_or_si256(_mm256_and_si256(x, k15), h0), ml0);
                sts__dq_mul_sub(y + 64 * c + 32 + 8 * k, dl1, _mm256_or_si256(_mm256_srli_epi32(x, 4), h1), ml1);
            }
        }
    }
}
STS__PRIVATE STS__TARGET_AVX2 void sts__dq_q6_k_avx2(float *y, const uint8_t *b, size_t n) {
    const __m256i k15 = _mm256_set1_epi32(15), k48 = _mm256_set1_epi32(48), k32 = _mm256_set1_epi32(32);
    int h, g;
    for (; n; n--, b += 210, y += 256) {
        const float d = sts__dq_f16c(b + 208);
        for (h = 0; h < 2; h++)
            for (g = 0; g < 4; g++) {   /* lanes 8g .. 8g + 7 of the four quarters of half h */
                const __m256i l0 = sts__dq_u8x8(b + 64 * h + 8 * g), l1 = sts__dq_u8x8(b + 64 * h + 32 + 8 * g);
                const __m256i qh = sts__dq_u8x8(b + 128 + 32 * h + 8 * g);
                const int s = 8 * h + (g >> 1);                 /* the scale of quarter 0 */
                float *o = y + 128 * h + 8 * g;
                sts__dq_mul(o, _mm256_set1_ps(d * (float)sts__dq_s8(b[192 + s])), _mm256_sub_epi32(_mm256_or_si256(
                    _mm256_and_si256(l0, k15), _mm256_and_si256(_mm256_slli_epi32(qh, 4), k48)), k32));
                sts__dq_mul(o + 32, _mm256_set1_ps(d * (float)sts__dq_s8(b[194 + s])), _mm256_sub_epi32(_mm256_or_si256(
                    _mm256_and_si256(l1, k15), _mm256_and_si256(_mm256_slli_epi32(qh, 2), k48)), k32));
                sts__dq_mul(o + 64, _mm256_set1_ps(d * (float)sts__dq_s8(b[196 + s])), _mm256_sub_epi32(_mm256_or_si256(
                    _mm256_srli_epi32(l0, 4), _mm256_and_si256(qh, k48)), k32));
                sts__dq_mul(o + 96, _mm256_set1_ps(d * (float)sts__dq_s8(b[198 + s])), _mm256_sub_epi32(_mm256_or_si256(
                    _mm256_srli_epi32(l1, 4), _mm256_and_si256(_mm256_srli_epi32(qh, 2), k48)), k32));
            }
    }
}
#endif /* STS__X86_DYN */

#ifdef STS__NEON
/* ---- NEON (little-endian AArch64): sixteen quants a byte vector, fields extracted with byte
   shifts and masks (every quant fits an int8), then widened to four vectors of 32-bit lanes,
   converted, multiplied and stored: the scalar decoders' operations in the same order. The fp16
   scales are decoded by the scalar helper (no FPCR dependence). ---- */
/* y[0..15] = d * q, d * q + m, d * q - m for sixteen int8 quants (mode 0, 1, 2) */
STS__VEC void sts__dq_neon16(float *y, float32x4_t d, int8x16_t q, float32x4_t m, int mode) {
    const int16x8_t lo = vmovl_s8(vget_low_s8(q)), hi = vmovl_s8(vget_high_s8(q));
    const int32x4_t w[4] = { vmovl_s16(vget_low_s16(lo)), vmovl_s16(vget_high_s16(lo)),
                             vmovl_s16(vget_low_s16(hi)), vmovl_s16(vget_high_s16(hi)) };
    int k;
    for (k = 0; k < 4; k++) {
        float32x4_t v = vmulq_f32(d, vcvtq_f32_s32(w[k]));
        if (mode == 1) v = vaddq_f32(v, m);
        else if (mode == 2) v = vsubq_f32(v, m);
        vst1q_f32(y + 4 * k, v);
    }
}
STS__VEC int8x16_t sts__dq_neon_shr(uint8x16_t v, int n) {   /* v >> n in each byte, as int8 */
    return vreinterpretq_s8_u8(vshlq_u8(v, vdupq_n_s8((int8_t)-n)));
}
/* the fifth bits of elements e0 .. e0 + 15 of Q5_0 / Q5_1, as 16 or 0 in each byte */
STS__VEC int8x16_t sts__dq_neon_bit4(uint32_t qh, int e0) {
    static const uint8_t bit[16] = { 1, 2, 4, 8, 16, 32, 64, 128, 1, 2, 4, 8, 16, 32, 64, 128 };
    const uint8x16_t bytes = vcombine_u8(vdup_n_u8((uint8_t)(qh >> e0 & 255u)),
                                         vdup_n_u8((uint8_t)(qh >> (e0 + 8) & 255u)));
    return vreinterpretq_s8_u8(vandq_u8(vtstq_u8(bytes, vld1q_u8(bit)), vdupq_n_u8(16)));
}
STS__PRIVATE void sts__dq_q8_0_neon(float *y, const uint8_t *b, size_t n) {
    const float32x4_t z = vdupq_n_f32(0.0f);
    for (; n; n--, b += 34, y += 32) {
        const float32x4_t d = vdupq_n_f32(sts__dq_f16(b));
        sts__dq_neon16(y, d, vreinterpretq_s8_u8(vld1q_u8(b + 2)), z, 0);
        sts__dq_neon16(y + 16, d, vreinterpretq_s8_u8(vld1q_u8(b + 18)), z, 0);
    }
}
/* Q4_0, Q4_1, Q5_0, Q5_1: nibbles at qs; fifth bits (five) at qs - 4; minimum (mode 1) at 2 */
STS__INLINE void sts__dq_q45_neon(float *y, const uint8_t *b, size_t n, size_t bytes, int qs, int five, int mode) {
    const int8x16_t bias = vdupq_n_s8((int8_t)(mode ? 0 : five ? 16 : 8));
    for (; n; n--, b += bytes, y += 32) {
        const float32x4_t d = vdupq_n_f32(sts__dq_f16(b)), m = vdupq_n_f32(mode ? sts__dq_f16(b + 2) : 0.0f);
        const uint8x16_t v = vld1q_u8(b + qs);
        int8x16_t lo = vreinterpretq_s8_u8(vandq_u8(v, vdupq_n_u8(15)));
        int8x16_t hi = vreinterpretq_s8_u8(vshrq_n_u8(v, 4));
        if (five) {
            const uint32_t qh = sts__le32(b + qs - 4);
            lo = vorrq_s8(lo, sts__dq_neon_bit4(qh, 0));
            hi = vorrq_s8(hi, sts__dq_neon_bit4(qh, 16));
        }
        sts__dq_neon16(y, d, vsubq_s8(lo, bias), m, mode);
        sts__dq_neon16(y + 16, d, vsubq_s8(hi, bias), m, mode);
    }
}
STS__PRIVATE void sts__dq_q4_0_neon(float *y, const uint8_t *b, size_t n) { sts__dq_q45_neon(y, b, n, 18, 2, 0, 0); }
STS__PRIVATE void sts__dq_q4_1_neon(float *y, const uint8_t *b, size_t n) { sts__dq_q45_neon(y, b, n, 20, 4, 0, 1); }
STS__PRIVATE void sts__dq_q5_0_neon(float *y, const uint8_t *b, size_t n) { sts__dq_q45_neon(y, b, n, 22, 6, 1, 0); }
STS__PRIVATE void sts__dq_q5_1_neon(float *y, const uint8_t *b, size_t n) { sts__dq_q45_neon(y, b, n, 24, 8, 1, 1); }
STS__PRIVATE void sts__dq_q2_k_neon(float *y, const uint8_t *b, size_t n) {
    const uint8x16_t k3 = vdupq_n_u8(3);
    int s;
    for (; n; n--, b += 84) {
        const float d = sts__dq_f16(b + 80), dmin = sts__dq_f16(b + 82);
        for (s = 0; s < 16; s++, y += 16) {
            const uint8x16_t q = vld1q_u8(b + 16 + 32 * (s >> 3) + 16 * (s & 1));
            const int8x16_t f = vandq_s8(sts__dq_neon_shr(q, 2 * ((s & 7) >> 1)), vreinterpretq_s8_u8(k3));
            sts__dq_neon16(y, vdupq_n_f32(d * (float)(b[s] & 15u)), f, vdupq_n_f32(dmin * (float)(b[s] >> 4)), 2);
        }
    }
}
STS__PRIVATE void sts__dq_q3_k_neon(float *y, const uint8_t *b, size_t n) {
    const int8x16_t k3 = vdupq_n_s8(3), k1 = vdupq_n_s8(1), k4 = vdupq_n_s8(4);
    const float32x4_t z = vdupq_n_f32(0.0f);
    int s;
    for (; n; n--, b += 110) {
        const float d = sts__dq_f16(b + 108);
        for (s = 0; s < 16; s++, y += 16) {
            const uint8x16_t q = vld1q_u8(b + 32 + 32 * (s >> 3) + 16 * (s & 1)), hm = vld1q_u8(b + 16 * (s & 1));
            const int8x16_t lo = vandq_s8(sts__dq_neon_shr(q, 2 * ((s & 7) >> 1)), k3);
            const int8x16_t hi = vandq_s8(sts__dq_neon_shr(hm, s >> 1), k1);
            sts__dq_neon16(y, vdupq_n_f32(d * (float)sts__dq_q3_scale(b + 96, s)),
                           vsubq_s8(vorrq_s8(lo, vshlq_n_s8(hi, 2)), k4), z, 0);
        }
    }
}
/* Q4_K, Q5_K: nibbles at qs, fifth bits (five) at 16 */
STS__INLINE void sts__dq_k45_neon(float *y, const uint8_t *b, size_t n, size_t bytes, int qs, int five) {
    const uint8x16_t k15 = vdupq_n_u8(15), k16 = vdupq_n_u8(16);
    int s, u;
    for (; n; n--, b += bytes) {
        const float d = sts__dq_f16(b), dmin = sts__dq_f16(b + 2);
        for (s = 0; s < 8; s++, y += 32) {
            uint32_t sc, mn;
            float32x4_t dl, ml;
            sts__dq_k4_scales(b + 4, s, &sc, &mn);
            dl = vdupq_n_f32(d * (float)sc);
            ml = vdupq_n_f32(dmin * (float)mn);
            for (u = 0; u < 2; u++) {
                const uint8x16_t v = vld1q_u8(b + qs + 32 * (s >> 1) + 16 * u);
                uint8x16_t q = (s & 1) ? vshrq_n_u8(v, 4) : vandq_u8(v, k15);
                if (five) {   /* bit s of the qh byte, to bit 4 */
                    const uint8x16_t h = vreinterpretq_u8_s8(sts__dq_neon_shr(vld1q_u8(b + 16 + 16 * u), s));
                    q = vorrq_u8(q, vandq_u8(vshlq_n_u8(h, 4), k16));
                }
                sts__dq_neon16(y + 16 * u, dl, vreinterpretq_s8_u8(q), ml, 2);
            }
        }
    }
}
STS__PRIVATE void sts__dq_q4_k_neon(float *y, const uint8_t *b, size_t n) { sts__dq_k45_neon(y, b, n, 144, 16, 0); }
STS__PRIVATE void sts__dq_q5_k_neon(float *y, const uint8_t *b, size_t n) { sts__dq_k45_neon(y, b, n, 176, 48, 1); }
STS__PRIVATE void sts__dq_q6_k_neon(float *y, const uint8_t *b, size_t n) {
    const uint8x16_t k15 = vdupq_n_u8(15), k3 = vdupq_n_u8(3);
    const int8x16_t k32 = vdupq_n_s8(32);
    const float32x4_t z = vdupq_n_f32(0.0f);
    int s;
    for (; n; n--, b += 210) {
        const float d = sts__dq_f16(b + 208);
        for (s = 0; s < 16; s++, y += 16) {
            const int h = s >> 3, k = (s & 7) >> 1, l0 = 16 * (s & 1);
            const uint8x16_t ql = vld1q_u8(b + 64 * h + 32 * (k & 1) + l0), qh = vld1q_u8(b + 128 + 32 * h + l0);
            const uint8x16_t lo = (k >> 1) ? vshrq_n_u8(ql, 4) : vandq_u8(ql, k15);
            const uint8x16_t hi = vshlq_n_u8(vandq_u8(vreinterpretq_u8_s8(sts__dq_neon_shr(qh, 2 * k)), k3), 4);
            sts__dq_neon16(y, vdupq_n_f32(d * (float)sts__dq_s8(b[192 + s])),
                           vsubq_s8(vreinterpretq_s8_u8(vorrq_u8(lo, hi)), k32), z, 0);
        }
    }
}
#endif /* STS__NEON */

/* The decoder of type t at instruction-set level isa or below. */
STS__PRIVATE sts__dq_fn sts__dq_kernel_at(int t, int isa) {
    static const sts__dq_fn scalar[STS__DQ_COUNT] = {
        sts__dq_q8_0_c, sts__dq_q4_0_c, sts__dq_q4_1_c, sts__dq_q5_0_c, sts__dq_q5_1_c,
        sts__dq_q2_k_c, sts__dq_q3_k_c, sts__dq_q4_k_c, sts__dq_q5_k_c, sts__dq_q6_k_c };
#ifdef STS__X86_DYN
    static const sts__dq_fn avx2[STS__DQ_COUNT] = {
        sts__dq_q8_0_avx2, sts__dq_q4_0_avx2, sts__dq_q4_1_avx2, sts__dq_q5_0_avx2, sts__dq_q5_1_avx2,
        sts__dq_q2_k_avx2, sts__dq_q3_k_avx2, sts__dq_q4_k_avx2, sts__dq_q5_k_avx2, sts__dq_q6_k_avx2 };
#endif
#ifdef STS__SSE2
    static const sts__dq_fn sse2[STS__DQ_COUNT] = {
        sts__dq_q8_0_sse2, sts__dq_q4_0_sse2, sts__dq_q4_1_sse2, sts__dq_q5_0_sse2, sts__dq_q5_1_sse2,
        sts__dq_q2_k_sse2, sts__dq_q3_k_sse2, sts__dq_q4_k_sse2, sts__dq_q5_k_sse2, sts__dq_q6_k_sse2 };
#endif
#ifdef STS__NEON
    static const sts__dq_fn neon[STS__DQ_COUNT] = {
        sts__dq_q8_0_neon, sts__dq_q4_0_neon, sts__dq_q4_1_neon, sts__dq_q5_0_neon, sts__dq_q5_1_neon,
        sts__dq_q2_k_neon, sts__dq_q3_k_neon, sts__dq_q4_k_neon, sts__dq_q5_k_neon, sts__dq_q6_k_neon };
#endif
#ifdef STS__X86_DYN
    if (isa >= STS__ISA_AVX2) return avx2[t];
#endif
#ifdef STS__SSE2
    if (isa >= STS__ISA_BASE) return sse2[t];
#endif
#ifdef STS__NEON
    if (isa >= STS__ISA_BASE) return neon[t];
#endif
    (void)isa;
    return scalar[t];
}
STS__PRIVATE int sts__dq_find(const char *name) {
    int t;
    if (!name) return -1;
    for (t = 0; t < STS__DQ_COUNT; t++)
        if (strcmp(name, sts__dq_types[t].name) == 0) return t;
    return -1;
}
STS__PRIVATE sts_result sts__dequantize_at(float *dst, const void *src, const char *type_name, size_t count, int isa) {
    int t = sts__dq_find(type_name);
    if (t < 0) return STS_ERR_UNSUPPORTED;
    if (count % sts__dq_types[t].elems != 0 || (count && (!dst || !src))) return STS_ERR_INVALID_ARGUMENT;
    if (count) sts__dq_kernel_at(t, isa)(dst, (const uint8_t *)src, count / sts__dq_types[t].elems);
    return STS_OK;
}
STSDEF sts_result sts_dequantize(float *dst, const void *src, const char *type_name, size_t count) {
    return sts__dequantize_at(dst, src, type_name, count, sts__isa());
}
STSDEF int sts_dequantize_supported(const char *type_name) { return sts__dq_find(type_name) >= 0; }
STSDEF int sts_dequantize_block(const char *type_name, uint32_t *block_elems, uint32_t *block_bytes) {
    int t = sts__dq_find(type_name);
    if (t < 0) return 0;
    if (block_elems) *block_elems = sts__dq_types[t].elems;
    if (block_bytes) *block_bytes = sts__dq_types[t].bytes;
    return 1;
}

/* ==============================================================================================
   >>dataset_common  8a. dataset common
   Owns: what the dataset layers (8 write, 9 read) share: the names of our files (shards,
   temporaries, the visible-shard rule of folder listings, natural order), the schema-column form
   of commit messages and manifests, and the one reader of dataset_manifest.json, used by
   sts_dataset_open, sts_dataset_reindex and the commit's protection of published shards alike.
   May call: util, json, dtype, header, io.
   ============================================================================================== */
#ifndef STS_NO_STDIO

/* ---- names ---- */
/* A shard name of this library: part-*.safetensors, no folder. */
STS__PRIVATE int sts__is_shard_name(const char *n) {
    size_t len = strlen(n);
    return len > 12 + 5 && strncmp(n, "part-", 5) == 0 && strcmp(n + len - 12, ".safetensors") == 0 && !strchr(n, '/');
}
/* A temporary of this library: a hidden shard, index or manifest being written. */
STS__PRIVATE int sts__is_temp_name(const char *n) {
    return n[0] == '.' && strstr(n, ".tmp-") != NULL &&
           (strncmp(n, ".part-", 6) == 0 || strncmp(n, "._tensor_index.", 15) == 0 ||
            strncmp(n, ".dataset_manifest.json", 22) == 0);
}
/* The visible-shard rule of folder listings (no manifest): a name that is not hidden and ends in
   .safetensors. Temporaries are hidden, so a reader never sees one. */
STS__PRIVATE int sts__is_visible_shard(const char *n) {
    size_t len = strlen(n);
    return n[0] != '.' && len > 12 && strcmp(n + len - 12, ".safetensors") == 0;
}
/* A shard_path a manifest may hold: a file name in the dataset's folder, never a path. */
STS__PRIVATE int sts__is_file_name(const char *n, size_t len) {
    return len > 0 && !memchr(n, 0, len) && !memchr(n, '/', len) && !(len == 1 && n[0] == '.') &&
           !(len == 2 && n[0] == '.' && n[1] == '.');
}
/* Natural order of file names: runs of digits compare as numbers, so part-99999-... comes before
   part-100000-... and shard 9999 before 10000. This is the "later shard wins" order. */
STS__PRIVATE int sts__natcmp(const char *a, const char *b) {
    while (*a && *b) {
        if (*a >= '0' && *a <= '9' && *b >= '0' && *b <= '9') {
            const char *ea = a, *eb = b;
            size_t la, lb;
            while (*a == '0') a++;
            while (*b == '0') b++;
            for (ea = a; *ea >= '0' && *ea <= '9'; ea++) {}
            for (eb = b; *eb >= '0' && *eb <= '9'; eb++) {}
            la = (size_t)(ea - a); lb = (size_t)(eb - b);
            if (la != lb) return la < lb ? -1 : 1;
            for (; a < ea; a++, b++) if (*a != *b) return *a < *b ? -1 : 1;
            continue;
        }
        if (*a != *b) return (unsigned char)*a < (unsigned char)*b ? -1 : 1;
        a++, b++;
    }
    return *a ? 1 : *b ? -1 : 0;
}
/* A string token's unescaped bytes, copied and NUL-terminated (free len + 1 bytes); NULL when out
   of memory. */
STS__PRIVATE char *sts__jdoc_dup(const sts__mem *m, const sts__jdoc *d, uint32_t t, size_t *len) {
    const sts__jtok *tk = &d->tok[t];
    char *p, *tmp = NULL;
    const char *q;
    if (tk->esc && !(tmp = (char *)sts__alloc(m, tk->len))) return NULL;  /* unescaped, then copied exactly */
    q = sts__jdoc_str(d, t, tmp, len);
    if ((p = (char *)sts__alloc(m, *len + 1)) != NULL) {
        memcpy(p, q, *len);
        p[*len] = 0;
    }
    sts__free(m, tmp, tk->len);
    return p;
}

/* ---- schema columns ----
   The form a commit message and a manifest share: "name": {"dtype": "F32", "shape": [d, ...]},
   a dim being a non-negative integer or -1 (KV: rows differ there). No fixed sizes: any name
   length and any rank that the JSON holds. */
typedef struct sts__scol {
    char *name;                     /* unescaped, NUL-terminated copy */
    size_t name_len;
    sts_dtype dtype;
    uint32_t rank;
    int64_t *dims;                  /* rank entries (-1: any) */
    int rank_varies;                /* KV merge: tasks saw different ranks */
} sts__scol;
STS__PRIVATE void sts__scol_free(const sts__mem *m, sts__scol *c) {
    sts__free(m, c->name, c->name_len + 1);
    sts__free(m, c->dims, (c->rank ? c->rank : 1) * sizeof *c->dims);
    c->name = NULL;
    c->dims = NULL;
}
/* Reads the column whose name is string token `key` (its value follows). `doc` names the document
   and `rule` is the rule a malformed column breaks. */
STS__PRIVATE sts_result sts__scol_read(const sts__mem *m, const sts__jdoc *d, uint32_t key, sts__scol *out,
                                       const char *doc,
                                       sts_rule rule, sts_error *err) {
    uint32_t vt = key + 1, dt, st, e, k;
    char buf[24];
    size_t n;
    const char *p;
    uint64_t v;
    memset(out, 0, sizeof *out);
    if (!(out->name = sts__jdoc_dup(m, d, key, &out->name_len))) return sts__nomem(err, "a schema column");
    dt = d->tok[vt].type == '{' ? sts__jdoc_get(d, vt, "dtype") : 0;
    st = d->tok[vt].type == '{' ? sts__jdoc_get(d, vt, "shape") : 0;
    if (!dt || d->tok[dt].type != '"' || !st || d->tok[st].type != '[') {
        sts_result r = sts__failx(err, rule, "%s: schema column %q needs a dtype string and a shape array", doc,
                                  out->name,
                                  out->name_len);
        sts__scol_free(m, out);
        return r;
    }
    p = d->tok[dt].len <= sizeof buf ? sts__jdoc_str(d, dt, buf, &n) : "";
    if (d->tok[dt].len > sizeof buf) n = 0;
    if (!sts_dtype_from_name(p, n, &out->dtype)) {
        sts_result r = sts__failx(err, rule, "%s: schema column %q has an unknown dtype", doc, out->name,
                                  out->name_len);
        sts__scol_free(m, out);
        return r;
    }
    out->rank = d->tok[st].count;
    if (!(out->dims = (int64_t *)sts__alloc(m, (out->rank ? out->rank : 1) * sizeof *out->dims))) {
        sts__scol_free(m, out);
        return sts__nomem(err, "a schema column");
    }
    for (k = 0, e = st + 1; k < out->rank; k++, e = sts__jdoc_next(d, e)) {
        if (sts__jdoc_u64(d, e, &v) && v <= (uint64_t)INT64_MAX) out->dims[k] = (int64_t)v;
        else if (d->tok[e].type == '0' && d->tok[e].len == 2 && memcmp(d->text + d->tok[e].at, "-1", 2) == 0)
            out->dims[k] = -1;
        else {
            sts_result r = sts__failx(err, rule, "%s: schema column %q: a dim must be a non-negative integer or -1",
                                      doc,
                                      out->name, out->name_len);
            sts__scol_free(m, out);
            return r;
        }
    }
    return STS_OK;
}

/* ---- dataset_manifest.json: the one reader ----
   Rules (format/SPECIFICATION.md, "Reading a manifest"): an object with a "shards" array; each
   shard an object with a shard_path that is a file name in the folder and its exact size in bytes
   (samples_count optional: unknown when absent). Optional, checked when present: mode ("batch" or
   "kv"), duplicates ("fail" or "lastWin"), kv_separator (a non-empty string), dataset_id,
   total_samples, total_bytes, batch_size, schema. Without "mode" (manifests of other writers, such
   as the original connector) the mode is batch_size's (> 0 batch, 0 KV); without either, it is
   read from the first shard: batch when its tensors are exactly the schema's columns (a batch file
   holds one tensor per column), KV otherwise; a dataset without shards is batch. */
typedef struct sts__mshard {
    char *name;                     /* NUL-terminated copy */
    size_t name_len;
    uint64_t bytes;
    uint64_t samples;               /* UINT64_MAX when the manifest gives none */
    uint64_t crc32c;                /* the file's CRC-32C, or UINT64_MAX when the manifest gives none */
} sts__mshard;
typedef struct sts__manifest {
    sts__mem mem;
    sts__mshard *shards;
    size_t nshards, shards_cap;
    sts__scol *cols;
    size_t ncols, cols_cap;
    int kv;
    sts_duplicates dup;
    char *sep;                      /* "__" when absent */
    size_t sep_len;
    char *dataset_id;               /* NULL when absent */
    size_t dataset_id_len;
    uint64_t total_samples, total_bytes, batch_size;
} sts__manifest;
STS__PRIVATE void sts__manifest_free(sts__manifest *mf) {
    size_t i;
    for (i = 0; i < mf->nshards; i++) sts__free(&mf->mem, mf->shards[i].name, mf->shards[i].name_len + 1);
    sts__free(&mf->mem, mf->shards, mf->shards_cap * sizeof *mf->shards);
    for (i = 0; i < mf->ncols; i++) sts__scol_free(&mf->mem, &mf->cols[i]);
    sts__free(&mf->mem, mf->cols, mf->cols_cap * sizeof *mf->cols);
    sts__free(&mf->mem, mf->sep, mf->sep_len + 1);
    sts__free(&mf->mem, mf->dataset_id, mf->dataset_id_len + 1);
    memset(mf, 0, sizeof *mf);
}
#define STS__MANIFEST "dataset_manifest.json"
STS__PRIVATE sts_result sts__manifest_bad(sts_error *err, const char *what, size_t i) {
    return sts__failx(err, STS_RULE_DATASET_MANIFEST, STS__MANIFEST ": shard %z %s", i, what);
}
/* No mode and no batch_size: batch when the first shard's tensors are exactly the schema's columns. */
STS__PRIVATE sts_result sts__manifest_infer_mode(sts__manifest *mf, const char *dir, sts_error *err) {
    sts_options o;
    sts_file *f;
    char *path;
    size_t sz, i;
    sts_result r;
    int batch;
    if (!mf->nshards) { mf->kv = 0; return STS_OK; }
    if (!(path = sts__join(&mf->mem, dir, mf->shards[0].name, &sz))) return sts__nomem(err, "a path");
    memset(&o, 0, sizeof o);
    o.allocator = mf->mem.a;
    o.header_only = 1;
    r = sts_open(path, &o, &f, err);
    sts__free(&mf->mem, path, sz);
    if (r != STS_OK) return r;
    batch = sts_count(f) == mf->ncols;
    for (i = 0; i < mf->ncols && batch; i++) batch = sts_find(f, mf->cols[i].name, mf->cols[i].name_len) != NULL;
    sts_close(f);
    mf->kv = !batch;
    return STS_OK;
}
/* Reads dir's manifest. *found is 0 (and STS_OK returned) when the folder has none. */
STS__PRIVATE sts_result sts__manifest_read(const sts__mem *m, const char *dir, sts__manifest *mf, int *found,
                                           sts_error *err) {
    sts__jdoc d;
    char *path, *text = NULL;
    size_t psz, size = 0, i;
    uint32_t sh, s, t;
    sts_result r = STS_OK;
    int has_mode = 0, has_batch = 0;
    memset(mf, 0, sizeof *mf);
    memset(&d, 0, sizeof d);
    mf->mem = *m;
    *found = 0;
    if (!(path = sts__join(m, dir, STS__MANIFEST, &psz))) return sts__nomem(err, "a path");
    if (sts__path_kind(path) == STS__FT_NONE) { sts__free(m, path, psz); return STS_OK; }
    *found = 1;
    r = sts__read_file(m, path, &text, &size, err);
    sts__free(m, path, psz);
    if (r != STS_OK) return r;
    if ((r = sts__jdoc_parse(&d, text, size, m, STS__MANIFEST, STS_RULE_DATASET_MANIFEST, err)) != STS_OK) goto done;
    sh = d.tok[0].type == '{' ? sts__jdoc_get(&d, 0, "shards") : 0;
    if (!sh || d.tok[sh].type != '[') {
        r = sts__failx(err, STS_RULE_DATASET_MANIFEST, STS__MANIFEST " has no shards array");
        goto done;
    }
    mf->shards_cap = d.tok[sh].count ? d.tok[sh].count : 1;
    if (!(mf->shards = (sts__mshard *)sts__alloc(m, mf->shards_cap * sizeof *mf->shards))) {
        mf->shards_cap = 0;
        r = sts__nomem(err, "the shard list");
        goto done;
    }
    for (i = 0, s = sh + 1; i < d.tok[sh].count; i++, s = sts__jdoc_next(&d, s)) {
        sts__mshard *x = &mf->shards[mf->nshards];
        uint32_t f = d.tok[s].type == '{' ? sts__jdoc_get(&d, s, "shard_path") : 0, b = f ? sts__jdoc_get(&d, s,
                "bytes") : 0;
        if (!f || d.tok[f].type != '"' || !b || !sts__jdoc_u64(&d, b, &x->bytes)) {
            r = sts__manifest_bad(err, "needs shard_path and bytes", i);
            goto done;
        }
        if (!(x->name = sts__jdoc_dup(m, &d, f, &x->name_len))) { r = sts__nomem(err, "a shard name"); goto done; }
        mf->nshards++;
        if (!sts__is_file_name(x->name, x->name_len)) {
            r = sts__failx(err, STS_RULE_DATASET_MANIFEST, STS__MANIFEST ": shard_path %q is not a file name in the "
                    "folder",
                           x->name, x->name_len);
            goto done;
        }
        x->samples = UINT64_MAX;
        x->crc32c = UINT64_MAX;
        if ((t = sts__jdoc_get(&d, s, "crc32c")) != 0 && (!sts__jdoc_u64(&d, t, &x->crc32c) ||
                                                          x->crc32c > 0xffffffffu)) {
            r = sts__manifest_bad(err, "has a crc32c that is not a 32-bit integer", i);
            goto done;
        }
        if ((t = sts__jdoc_get(&d, s, "samples_count")) != 0 && !sts__jdoc_u64(&d, t, &x->samples)) {
            r = sts__manifest_bad(err, "has a samples_count that is not an integer in [0, 2^64)", i);
            goto done;
        }
    }
    if ((t = sts__jdoc_get(&d, 0, "mode")) != 0) {
        has_mode = 1;
        if (sts__jdoc_is(&d, t, "kv")) mf->kv = 1;
        else if (!sts__jdoc_is(&d, t, "batch")) {
            r = sts__failx(err, STS_RULE_DATASET_MANIFEST, STS__MANIFEST ": mode must be \"batch\" or \"kv\"");
            goto done;
        }
    }
    if ((t = sts__jdoc_get(&d, 0, "duplicates")) != 0) {
        if (sts__jdoc_is(&d, t, "lastWin")) mf->dup = STS_DUPLICATES_LAST_WIN;
        else if (!sts__jdoc_is(&d, t, "fail")) {
            r = sts__failx(err, STS_RULE_DATASET_MANIFEST,
                           STS__MANIFEST ": duplicates must be \"fail\" or \"lastWin\"");
            goto done;
        }
    }
    if ((t = sts__jdoc_get(&d, 0, "kv_separator")) != 0) {
        if (d.tok[t].type != '"' || d.tok[t].len == 0) {
            r = sts__failx(err, STS_RULE_DATASET_MANIFEST, STS__MANIFEST ": kv_separator must be a non-empty string");
            goto done;
        }
        if (!(mf->sep = sts__jdoc_dup(m, &d, t, &mf->sep_len))) { r = sts__nomem(err, "the separator"); goto done; }
    } else {
        if (!(mf->sep = (char *)sts__alloc(m, 3))) { r = sts__nomem(err, "the separator"); goto done; }
        memcpy(mf->sep, "__", 3);
        mf->sep_len = 2;
    }
    if ((t = sts__jdoc_get(&d, 0, "dataset_id")) != 0) {
        if (d.tok[t].type != '"') {
            r = sts__failx(err, STS_RULE_DATASET_MANIFEST, STS__MANIFEST ": dataset_id must be a string");
            goto done;
        }
        if (!(mf->dataset_id = sts__jdoc_dup(m, &d, t, &mf->dataset_id_len))) {
            r = sts__nomem(err, "the dataset id");
            goto done;
        }
    }
    if (((t = sts__jdoc_get(&d, 0, "total_samples")) != 0 && !sts__jdoc_u64(&d, t, &mf->total_samples)) ||
        ((t = sts__jdoc_get(&d, 0, "total_bytes")) != 0 && !sts__jdoc_u64(&d, t, &mf->total_bytes)) ||
        ((t = sts__jdoc_get(&d, 0, "batch_size")) != 0 && (has_batch = 1) && !sts__jdoc_u64(&d, t, &mf->batch_size))) {
        r = sts__failx(err, STS_RULE_DATASET_MANIFEST, STS__MANIFEST ": total_samples, total_bytes and batch_size "
                                                                     "must be "
                       "integers in [0, 2^64)");
        goto done;
    }
    if ((sh = sts__jdoc_get(&d, 0, "schema")) != 0) {
        if (d.tok[sh].type != '{') {
            r = sts__failx(err, STS_RULE_DATASET_MANIFEST, STS__MANIFEST ": schema must be an object");
            goto done;
        }
        mf->cols_cap = d.tok[sh].count ? d.tok[sh].count : 1;
        if (!(mf->cols = (sts__scol *)sts__alloc(m, mf->cols_cap * sizeof *mf->cols))) {
            mf->cols_cap = 0;
            r = sts__nomem(err, "the schema");
            goto done;
        }
        for (i = 0, s = sh + 1; i < d.tok[sh].count; i++, s = sts__jdoc_next(&d, s + 1)) {
            if ((r = sts__scol_read(m, &d, s, &mf->cols[i], STS__MANIFEST, STS_RULE_DATASET_MANIFEST, err)) != STS_OK)
                goto done;
            mf->ncols++;
        }
    }
    if (!has_mode) {
        if (has_batch) mf->kv = mf->batch_size == 0;
        else if ((r = sts__manifest_infer_mode(mf, dir, err)) != STS_OK) goto done;
    }
done:
    sts__jdoc_free(&d);
    sts__free(m, text, size + 1);
    if (r != STS_OK) sts__manifest_free(mf);
    return r;
}

/* ---- the job lock ----
   A job owns its output folder from sts_dataset_prepare until its dataset commit or abort: prepare
   creates .sts_job.lock with O_EXCL, naming the job (a random UUID), the process and host that
   prepared it and when; task writers take the job's id from it and their commit messages carry it;
   the dataset commit accepts only messages of the lock's job and removes the lock after the
   manifest is published. A second job gets EXISTS naming the first. The driver and its tasks may be
   different processes, so this is a file, not a process lock; one left by a crash is cleared by
   sts_dataset_clean (`sts clean`). */
#define STS__LOCK ".sts_job.lock"
typedef struct sts__joblock {
    char *job;                      /* the job's id (NUL-terminated) */
    size_t job_len;
    char *host;
    size_t host_len;
    uint64_t pid, started;
} sts__joblock;
STS__PRIVATE void sts__lock_free(const sts__mem *m, sts__joblock *l) {
    sts__free(m, l->job, l->job_len + 1);
    sts__free(m, l->host, l->host_len + 1);
    memset(l, 0, sizeof *l);
}
/* Reads dir's lock; *found is 0 when there is none. A lock that cannot be read names no job. */
STS__PRIVATE sts_result sts__lock_read(const sts__mem *m, const char *dir, sts__joblock *l, int *found,
                                       sts_error *err) {
    char *path, *text = NULL;
    size_t psz, size = 0;
    sts__jdoc d;
    sts_error pe;
    sts_result r;
    uint32_t t;
    memset(l, 0, sizeof *l);
    *found = 0;
    if (!(path = sts__join(m, dir, STS__LOCK, &psz))) return sts__nomem(err, "a path");
    if (sts__path_kind(path) == STS__FT_NONE) { sts__free(m, path, psz); return STS_OK; }
    *found = 1;
    r = sts__read_file(m, path, &text, &size, err);
    sts__free(m, path, psz);
    if (r != STS_OK) return r;
    /* a lock that is not our JSON names no job; one that could not be read for memory is NOMEM */
    r = sts__jdoc_parse(&d, text, size, m, STS__LOCK, STS_RULE_EXISTS, &pe);
    if (r == STS_ERR_NOMEM) {
        if (err) *err = pe;
        sts__free(m, text, size + 1);
        return r;
    }
    if (r != STS_OK) r = STS_OK;  /* names no job */
    else {
        if ((t = sts__jdoc_get(&d, 0, "job")) != 0 && d.tok[t].type == '"' &&
            !(l->job = sts__jdoc_dup(m, &d, t, &l->job_len)))
            r = sts__nomem(err, "a job id");
        if (r == STS_OK && (t = sts__jdoc_get(&d, 0, "host")) != 0 && d.tok[t].type == '"' &&
            !(l->host = sts__jdoc_dup(m, &d, t, &l->host_len)))
            r = sts__nomem(err, "a host name");
        if ((t = sts__jdoc_get(&d, 0, "pid")) != 0) (void)sts__jdoc_u64(&d, t, &l->pid);
        if ((t = sts__jdoc_get(&d, 0, "started")) != 0) (void)sts__jdoc_u64(&d, t, &l->started);
        sts__jdoc_free(&d);
    }
    sts__free(m, text, size + 1);
    if (r != STS_OK) sts__lock_free(m, l);
    return r;
}
/* EXISTS: dir is held by the job of lock l. */
STS__PRIVATE sts_result sts__lock_held(const char *dir, const sts__joblock *l, sts_error *err) {
    return sts__failx(err, STS_RULE_EXISTS, "the output folder %q is held by job %q (process %U on %q, since %U s "
                                            "after the "
                      "epoch); one job writes a folder at a time. If that job is gone, `sts clean` (sts_dataset_clean) "
                      "clears its lock", dir, strlen(dir), l->job ? l->job : "?", l->job ? l->job_len : (size_t)1,
                      l->pid,
                      l->host ? l->host : "?", l->host ? l->host_len : (size_t)1, l->started);
}
/* Takes dir for a new job: creates the lock (O_EXCL), or EXISTS naming the job that holds it. */
/* A lock's path, kept for its removal (which then allocates nothing). */
typedef struct sts__unlock { char *path; size_t size; } sts__unlock;
/* Takes dir's lock for a new job (EXISTS naming the job that holds it); *undo gets the lock's
   path, so that a prepare that fails after this can give the lock back even out of memory. */
STS__PRIVATE sts_result sts__lock_take(const sts__mem *m, const char *dir, int durable, sts__joblock *mine,
                                       sts__unlock *undo, sts_error *err) {
    sts__buf b;
    char text[512], host[256], *path;
    size_t psz;
    int e;
    memset(mine, 0, sizeof *mine);
    memset(undo, 0, sizeof *undo);
    if (!(mine->job = (char *)sts__alloc(m, 37))) return sts__nomem(err, "a job id");
    sts__uuid4(mine->job);
    mine->job_len = 36;
    mine->pid = sts__pid();
    mine->started = sts__now();
    sts__host(host, sizeof host);
    b.p = text; b.n = 0; b.cap = sizeof text;
#define STS__PUT(lit) sts__buf_put(&b, lit, sizeof lit - 1)
    STS__PUT("{\"job\":\"");
    sts__buf_put(&b, mine->job, 36);
    STS__PUT("\",\"pid\":");
    sts__buf_u64(&b, mine->pid);
    STS__PUT(",\"host\":");
    sts__buf_quote(&b, host, strlen(host), sizeof host);
    STS__PUT(",\"started\":");
    sts__buf_u64(&b, mine->started);
    STS__PUT(",\"writer\":\"safetensors_spark.h " STS_VERSION_STRING "\"}\n");
#undef STS__PUT
    if (!(path = sts__join(m, dir, STS__LOCK, &psz))) { sts__lock_free(m, mine); return sts__nomem(err, "a path"); }
    e = sts__create_excl(m, path, text, b.n, durable);
    if (!e) { undo->path = path; undo->size = psz; return STS_OK; }
    sts__free(m, path, psz);
    if (e == EEXIST) {
        sts__joblock held;
        int found;
        sts_result r;
        sts__lock_free(m, mine);
        if ((r = sts__lock_read(m, dir, &held, &found, err)) != STS_OK) return r;
        r = sts__lock_held(dir, &held, err);
        sts__lock_free(m, &held);
        return r;
    }
    sts__lock_free(m, mine);
    return sts__fail_errno(err, e, "create the job lock in", dir);
}
/* The removal of dir's lock when it names job (any lock when job is NULL), in two steps: the
   reading and the path first (only NOMEM fails it: a lock that cannot be read is left alone),
   then the removal, which allocates nothing. A commit readies it before it publishes, so that a
   published dataset never keeps its job's lock for want of memory. */
STS__PRIVATE sts_result sts__unlock_ready(const sts__mem *m, const char *dir, const char *job, size_t job_len,
                                          sts__unlock *u, sts_error *err) {
    sts__joblock l;
    int found;
    sts_result r;
    memset(u, 0, sizeof *u);
    if ((r = sts__lock_read(m, dir, &l, &found, err)) != STS_OK) return r == STS_ERR_NOMEM ? r : STS_OK;
    if (found && (!job || (l.job && l.job_len == job_len && memcmp(l.job, job, job_len) == 0)) &&
        !(u->path = sts__join(m, dir, STS__LOCK, &u->size)))
        r = sts__nomem(err, "a path");
    sts__lock_free(m, &l);
    return r;
}
STS__PRIVATE void sts__unlock_run(const sts__mem *m, sts__unlock *u) {  /* also frees what ready took */
    if (!u->path) return;
    sts__remove_path(u->path);
    sts__free(m, u->path, u->size);
    u->path = NULL;
}
STS__PRIVATE void sts__unlock_drop(const sts__mem *m, sts__unlock *u) {  /* ready, then not run */
    sts__free(m, u->path, u->size);
    u->path = NULL;
}

/* ---- listing ---- */
/* Calls fn(user, name, size, err) for each visible shard of dir that is a regular file (the listing
   of a folder without a manifest); other entries are skipped. */
typedef sts_result (*sts__shard_fn)(void *user, const char *name, uint64_t size, sts_error *err);
typedef struct sts__listing {
    const sts__mem *m;
    const char *dir;
    sts__shard_fn fn;
    void *user;
    sts_error *err;
} sts__listing;
STS__PRIVATE sts_result sts__listing_one(void *user, const char *name) {
    sts__listing *l = (sts__listing *)user;
    sts__stat st;
    char *p;
    size_t sz;
    int e;
    if (!sts__is_visible_shard(name)) return STS_OK;
    if (!(p = sts__join(l->m, l->dir, name, &sz))) return sts__nomem(l->err, "a path");
    e = sts__stat_path(p, &st);
    sts__free(l->m, p, sz);
    if (e || st.kind != STS__FT_REG) return STS_OK;  /* gone meanwhile, or not a regular file */
    return l->fn(l->user, name, st.size, l->err);
}
STS__PRIVATE sts_result sts__list_shards(const sts__mem *m, const char *dir, sts__shard_fn fn, void *user,
                                         sts_error *err) {
    sts__listing l;
    l.m = m; l.dir = dir; l.fn = fn; l.user = user; l.err = err;
    return sts__list_dir(dir, sts__listing_one, &l, err);
}
#endif /* STS_NO_STDIO */

/* ==============================================================================================
   >>dataset_write  8. dataset write
   Owns: the connector's write options (typed and as strings) and their validation against the
   input schema; the output folder check; the task writer: batch mode (files laid out when a
   batch starts, rows written in place with pwrite, zero-copy for large cells) and KV mode (one
   shard buffered, rolled on its real size, duplicates checked across the task); task commit
   messages; the dataset commit (cross-task checks, the tensor index, dataset_manifest.json last).
   May call: util, json, dtype, header, io, writer, codec, dataset common.
   ============================================================================================== */
#ifndef STS_NO_STDIO
#define STS__STAGE ((size_t)STS__FOLIO)  /* batch mode: write-combining buffer per column, flushed at
                                               STS__FOLIO-aligned file offsets (see sts__pwrite_all) */
#ifndef STS_KV_CHUNK_BYTES
#  define STS_KV_CHUNK_BYTES ((size_t)4 << 20)
#endif
#define STS__CHUNK ((size_t)(STS_KV_CHUNK_BYTES))  /* KV mode: data chunk */

/* >>ds_options ---- small text helpers ---- */
STS__PRIVATE int sts__lower(int c) { return c >= 'A' && c <= 'Z' ? c - 'A' + 'a' : c; }
STS__PRIVATE int sts__ieq(const char *a, const char *b) {  /* ASCII case-insensitive equality */
    while (*a && *b && sts__lower((unsigned char)*a) == sts__lower((unsigned char)*b)) a++, b++;
    return *a == 0 && *b == 0;
}
STS__PRIVATE void sts__trim(const char **s, size_t *n) {
    while (*n && (**s == ' ' || **s == '\t')) (*s)++, (*n)--;
    while (*n && ((*s)[*n - 1] == ' ' || (*s)[*n - 1] == '\t')) (*n)--;
}
/* A decimal integer in [0, 2^64), surrounding blanks allowed; 1 on success. */
STS__PRIVATE int sts__text_u64(const char *s, uint64_t *v) {
    size_t n = strlen(s);
    uint64_t x;
    int big;
    sts__trim(&s, &n);
    if (!n || sts__dec_u64((const uint8_t *)s, (const uint8_t *)s + n, &x, &big) != n || big) return 0;
    *v = x;
    return 1;
}
STS__PRIVATE int sts__text_bool(const char *s, int *v) {
    if (sts__ieq(s, "true")) { *v = 1; return 1; }
    if (sts__ieq(s, "false")) { *v = 0; return 1; }
    return 0;
}
STS__PRIVATE int sts__dtype_seed(sts_dtype d) {  /* the 12 dtypes of the connector */
    switch (d) {
    /* BF16: outside the schema regex, accepted */
    case STS_DTYPE_F16: case STS_DTYPE_F32: case STS_DTYPE_F64: case STS_DTYPE_BF16:
    case STS_DTYPE_U8: case STS_DTYPE_I8: case STS_DTYPE_U16: case STS_DTYPE_I16:
    case STS_DTYPE_U32: case STS_DTYPE_I32: case STS_DTYPE_U64: case STS_DTYPE_I64: return 1;
    default: return 0;
    }
}
STS__PRIVATE int sts__elem_ok(sts_dtype d) {  /* C element types an array cell may hold */
    return d == STS_DTYPE_F32 || d == STS_DTYPE_F64 || d == STS_DTYPE_I32 || d == STS_DTYPE_I64 ||
           d == STS_DTYPE_I16 || d == STS_DTYPE_I8 || d == STS_DTYPE_U8;
}
/* Durability, the one rule for every step of a job (prepare, task writers, dataset commit,
   reindex): fsync unless sts_write_config.no_fsync or sts_options.no_fsync is set (either turns
   it off; both fields stay for compatibility). cfg and opts may be NULL. */
STS__PRIVATE int sts__durable(const sts_write_config *cfg, const sts_options *opts) {
    return !(cfg && cfg->no_fsync) && !(opts && opts->no_fsync);
}
STS__PRIVATE sts_result sts__bad_option(sts_error *err, const char *option, const char *value, const char *expect) {
    return sts__failx(err, STS_RULE_OPTION, "%s must be %s, got: %q", option, expect, value, strlen(value));
}

STSDEF sts_result sts_write_config_set(sts_write_config *c, const char *key, const char *value, sts_error *err) {
    uint64_t v;
    int b;
    if (!c || !key || !value)
        return sts__failx(err, STS_RULE_ARGUMENT, "sts_write_config_set needs a config, a key and a value");
    if (sts__ieq(key, "batch_size")) {
        if (!sts__text_u64(value, &v) || v == 0)
            return sts__bad_option(err, "batch_size", value, "an integer greater than 0");
        c->batch_size = v;
    } else if (sts__ieq(key, "name_col")) {
        c->name_col = value[0] ? value : NULL;
    } else if (sts__ieq(key, "kv_separator")) {
        if (!value[0])
            return sts__bad_option(err, "kv_separator", value,
                                   "a non-empty string (an empty one makes keys ambiguous)");
        c->kv_separator = value;
    } else if (sts__ieq(key, "duplicatesStrategy")) {
        if (sts__ieq(value, "fail")) c->duplicates = STS_DUPLICATES_FAIL;
        else if (sts__ieq(value, "lastWin")) c->duplicates = STS_DUPLICATES_LAST_WIN;
        else return sts__bad_option(err, "duplicatesStrategy", value, "fail or lastWin");
    } else if (sts__ieq(key, "generate_index")) {
        if (!sts__text_bool(value, &b)) return sts__bad_option(err, "generate_index", value, "true or false");
        c->generate_index = b;
    } else if (sts__ieq(key, "target_shard_size_mb")) {
        if (!sts__text_u64(value, &v) || v < 50 || v > 1000)
            return sts__bad_option(err, "target_shard_size_mb", value, "an integer between 50 and 1000");
        c->target_shard_size_mb = (uint32_t)v;
    } else if (sts__ieq(key, "dtype")) {
        int i, found = 0;
        for (i = 0; i < (int)STS_DTYPE_COUNT && !found; i++)
            if (sts__ieq(value, sts__dtype_names[i]) && sts__dtype_seed((sts_dtype)i)) {
                c->dtype = (sts_dtype)i;
                found = 1;
            }
        if (!found)
            return sts__bad_option(err, "dtype", value, "one of F16 F32 F64 BF16 U8 I8 U16 I16 U32 I32 U64 I64");
        c->has_dtype = 1;
    } else if (sts__ieq(key, "columns")) {
        c->columns = value;
    } else if (sts__ieq(key, "shapes")) {
        c->shapes = value;
    } else if (sts__ieq(key, "tail_strategy")) {
        if (sts__ieq(value, "write")) c->tail = STS_TAIL_WRITE;
        else if (sts__ieq(value, "drop")) c->tail = STS_TAIL_DROP;
        else if (sts__ieq(value, "pad")) c->tail = STS_TAIL_PAD;
        else return sts__bad_option(err, "tail_strategy", value, "drop, pad or write");
    } else if (sts__ieq(key, "mode")) {
        if (sts__ieq(value, "overwrite")) c->overwrite = 1;
        else if (sts__ieq(value, "error") || sts__ieq(value, "errorifexists") || sts__ieq(value, "default"))
            c->overwrite = 0;
        else return sts__bad_option(err, "mode", value, "error, errorifexists or overwrite (append and ignore are not "
                                                        "supported)");
    } else if (sts__ieq(key, "durable")) {
        if (!sts__text_bool(value, &b)) return sts__bad_option(err, "durable", value, "true or false");
        c->no_fsync = !b;
    } else if (sts__ieq(key, "io_thread")) {
        if (!sts__text_bool(value, &b)) return sts__bad_option(err, "io_thread", value, "true or false");
        c->no_io_thread = !b;
    } else if (sts__ieq(key, "commit_threads")) {
        if (!sts__text_u64(value, &v) || v > STS__PAR_MAX)
            return sts__bad_option(err, "commit_threads", value, "an integer between 0 and 64");
        c->commit_threads = (uint32_t)v;
    } else if (sts__ieq(key, "kv_layout")) {
        if (sts__ieq(value, "sorted")) c->kv_layout = STS_KV_SORTED;
        else if (sts__ieq(value, "arrival")) c->kv_layout = STS_KV_ARRIVAL;
        else return sts__bad_option(err, "kv_layout", value, "sorted or arrival");
    } else if (sts__ieq(key, "rounding")) {
        if (sts__ieq(value, "truncate")) c->rounding = STS_ROUND_TRUNCATE;
        else if (sts__ieq(value, "nearest_even") || sts__ieq(value, "rne")) c->rounding = STS_ROUND_NEAREST_EVEN;
        else return sts__bad_option(err, "rounding", value, "truncate or nearest_even");
    } else if (sts__ieq(key, "path")) {
        /* Spark passes the output path among the options; the path argument is authoritative */
    } else {
        return sts__failx(err, STS_RULE_OPTION, "unknown option %q", key, strlen(key));
    }
    sts__ok(err);
    return STS_OK;
}

/* ---- text output: JSON and CSV into memory, or streamed to a file in 1 MiB pieces ---- */
typedef struct sts__out {
    sts__mem mem;
    char *p;
    size_t n, cap;
    int fd;          /* >= 0: stream to this file */
    int err_no;      /* write failure (errno) */
    int oom;
} sts__out;

STS__PRIVATE void sts__out_init(sts__out *o, const sts__mem *m, int fd) {
    memset(o, 0, sizeof *o);
    o->mem = *m;
    o->fd = fd;
    if (fd >= 0) {
        o->cap = (size_t)1 << 20;
        if (!(o->p = (char *)sts__alloc(m, o->cap))) { o->oom = 1; o->cap = 0; }
    }
}
STS__PRIVATE void sts__out_free(sts__out *o) {
    sts__free(&o->mem, o->p, o->cap);
    o->p = NULL;
    o->cap = o->n = 0;
}
STS__PRIVATE void sts__out_flush(sts__out *o) {
    if (o->fd >= 0 && o->n && !o->err_no && !o->oom) {
        int e = sts__write_all(&o->mem, o->fd, o->p, o->n);
        if (e) o->err_no = e;
    }
    if (o->fd >= 0) o->n = 0;
}
/* Room for n more bytes, or NULL (failure recorded). */
STS__PRIVATE char *sts__out_room(sts__out *o, size_t n) {
    if (o->oom || o->err_no) return NULL;
    if (o->n + n > o->cap) {
        if (o->fd >= 0) sts__out_flush(o);
        if (o->n + n > o->cap && !sts__grow(&o->mem, (void **)&o->p, &o->cap, o->n + n + 1, 1)) {
            o->oom = 1;
            return NULL;
        }
    }
    return o->p + o->n;
}
STS__PRIVATE void sts__out_put(sts__out *o, const char *s, size_t n) {
    char *d = sts__out_room(o, n);
    if (d && n) { memcpy(d, s, n); o->n += n; }  /* s may be NULL with n 0: another output that failed */
}
STS__PRIVATE void sts__out_cstr(sts__out *o, const char *s) { sts__out_put(o, s, strlen(s)); }
/* A large block: straight to the file when streaming (after what is buffered), else copied. */
STS__PRIVATE void sts__out_big(sts__out *o, const uint8_t *s, size_t n) {
    if (o->fd < 0 || n < 4096) { sts__out_put(o, (const char *)s, n); return; }
    sts__out_flush(o);
    if (!o->err_no && !o->oom) {
        int e = sts__write_all(&o->mem, o->fd, s, n);
        if (e) o->err_no = e;
    }
}
STS__PRIVATE void sts__out_u64(sts__out *o, uint64_t v) {
    uint8_t t[20];
    size_t n = (size_t)(sts__u64_put(t, v) - t);
    sts__out_put(o, (const char *)t, n);
}
STS__PRIVATE void sts__out_i64(sts__out *o, int64_t v) {
    if (v < 0) { sts__out_put(o, "-", 1); sts__out_u64(o, (uint64_t)0 - (uint64_t)v); }
    else sts__out_u64(o, (uint64_t)v);
}
STS__PRIVATE void sts__out_json(sts__out *o, const char *s, size_t n) {  /* quoted and escaped as the writer does */
    uint64_t len = sts__esc_len(s, n);
    char *d = len < ((uint64_t)1 << 40) ? sts__out_room(o, (size_t)len) : NULL;
    if (d) o->n += (size_t)(sts__esc_put((uint8_t *)d, s, n) - (uint8_t *)d);
}
STS__PRIVATE void sts__out_csv(sts__out *o, const char *s, size_t n) {  /* RFC 4180: quote when needed, double quotes */
    size_t i;
    int quote = 0;
    for (i = 0; i < n && !quote; i++) quote = s[i] == ',' || s[i] == '"' || s[i] == '\r' || s[i] == '\n';
    if (!quote) { sts__out_put(o, s, n); return; }
    sts__out_put(o, "\"", 1);
    for (i = 0; i < n; i++) { if (s[i] == '"') sts__out_put(o, "\"", 1); sts__out_put(o, s + i, 1); }
    sts__out_put(o, "\"", 1);
}
STS__PRIVATE void sts__out_shape(sts__out *o, const uint64_t *dims, uint32_t rank) {  /* [d0,d1] */
    uint32_t i;
    sts__out_put(o, "[", 1);
    for (i = 0; i < rank; i++) { if (i) sts__out_put(o, ",", 1); sts__out_u64(o, dims[i]); }
    sts__out_put(o, "]", 1);
}
STS__PRIVATE sts_result sts__out_status(const sts__out *o, const char *what, sts_error *err) {
    if (o->oom) return sts__nomem(err, what);
    if (o->err_no) return sts__fail_errno(err, o->err_no, "write", what);
    return STS_OK;
}

/* ---- the resolved configuration ---- */
typedef struct sts__ocol {          /* an output column */
    const char *name;
    size_t name_len;
    size_t in;                      /* index of its cell in a row */
    sts_value_kind kind;
    sts_dtype elem;                 /* arrays: the input element type */
    sts_dtype dtype;                /* output dtype (tensors: set by the first row) */
    int fixed;                      /* dtype and sample shape known */
    uint32_t rank;                  /* sample rank */
    uint64_t *shape;                /* 1 + rank entries: [0] is the batch dimension, the sample follows */
    uint8_t *varies;                /* KV: per sample dim, 1 when rows disagree (schema says -1) */
    uint64_t numel, row_bytes;      /* per sample */
    uint32_t opt_rank;              /* shapes option, when given */
    const uint64_t *opt_dims;
    int has_opt;
    uint8_t *stage;                 /* batch mode write-combining: a buffer of the task writer's pool */
    uint32_t crc;                   /* batch mode: CRC-32C of the column's bytes written so far in this file */
    uint64_t crc_len;
    int stage_id;                   /* its index there, or -1 */
    uint64_t stage_off;
    size_t stage_len;
} sts__ocol;

typedef struct sts__wcfg {
    sts__mem mem;
    int kv;
    uint64_t batch_size;
    const char *sep;
    size_t sep_len;
    sts_duplicates dup;
    int index, overwrite, durable, io_thread;
    int arrival;                    /* KV: kv_layout = arrival */
    uint64_t target;                /* bytes */
    sts_tail tail;
    int has_dtype;
    sts_dtype dtype;
    sts_rounding rounding;
    size_t key_in;                  /* KV: the name_col cell */
    size_t ncells;                  /* schema width */
    sts__ocol *cols;
    size_t ncols;
    char *store;                    /* copies of names, separator and shapes */
    size_t store_size, store_used;
} sts__wcfg;

STS__PRIVATE void *sts__store(sts__wcfg *c, const void *src, size_t n) {  /* copy into the config's storage */
    char *d;
    if (c->store_used + n > c->store_size) return NULL;
    d = c->store + c->store_used;
    if (n) memcpy(d, src, n);
    c->store_used += n;
    return d;
}
STS__PRIVATE void sts__wcfg_free(sts__wcfg *c) {
    size_t i;
    for (i = 0; i < c->ncols; i++) {
        sts__ocol *o = &c->cols[i];
        sts__free(&c->mem, o->shape, (o->rank + 1) * sizeof(uint64_t));
        sts__free(&c->mem, o->varies, o->rank ? o->rank : 1);
    }
    sts__free(&c->mem, c->cols, c->ncols * sizeof *c->cols);
    sts__free(&c->mem, c->store, c->store_size);
    memset(c, 0, sizeof *c);
}
/* sts__wcfg_make's working state, filled phase by phase and freed by it. */
typedef struct sts__wmake {
    const sts_write_config *cfg;
    const sts_column *schema;
    size_t ncols;
    sts__index ix;                  /* the schema's names by hash (sts__wm_find) */
    uint64_t *hashes;               /* per schema column */
    size_t hbytes;
    size_t *sel;                    /* per schema column: 0 = not written, else 1 + its output column */
    size_t nsel;
    size_t store;                   /* bytes of the config's storage (names, separator, dims) */
    sts__jdoc shapes;               /* the shapes option's JSON text, tokenized */
    char *key;                      /* an escaped shapes key, unescaped */
    size_t key_cap;
} sts__wmake;

/* The schema column named (name, len), or (size_t)-1: a hash probe (names are unique by then). */
STS__PRIVATE size_t sts__wm_find(const sts__wmake *m, const char *name, size_t len) {
    uint64_t h = sts__hash(name, len, 0x5eed);
    size_t pos = (size_t)h & m->ix.mask;
    for (; m->ix.slots[pos] != STS__EMPTY; pos = (pos + 1) & m->ix.mask) {
        size_t j = m->ix.slots[pos];
        if (m->hashes[j] == h && strlen(m->schema[j].name) == len && memcmp(m->schema[j].name, name, len) == 0)
            return j;
    }
    return (size_t)-1;
}
/* Phase 1, the mode and the options that need no schema: batch_size or name_col, the shard
   target, kv_separator, the strategies, rounding, dtype. Nothing is allocated yet. */
STS__PRIVATE sts_result sts__wcfg_mode(sts__wcfg *c, const sts_write_config *cfg, const sts_options *opts,
                                       sts_error *err) {
    if (cfg->batch_size && cfg->name_col && cfg->name_col[0])
        return sts__failx(err, STS_RULE_OPTION, "options batch_size and name_col are mutually exclusive; give one "
                                                "(batch_size=%U, name_col=%q)",
                         cfg->batch_size, cfg->name_col, strlen(cfg->name_col));
    if (!cfg->batch_size && !(cfg->name_col && cfg->name_col[0]))
        return sts__failx(err, STS_RULE_OPTION, "one of batch_size (batch mode) or name_col (KV mode) is required");
    if (cfg->batch_size > (uint64_t)INT64_MAX)
        return sts__failx(err, STS_RULE_OPTION, "batch_size must be at most %U (a dataset schema holds it as a signed "
                                                "64-bit dim), got: %U",
                         (uint64_t)INT64_MAX, cfg->batch_size);
    c->kv = !cfg->batch_size;
    c->batch_size = cfg->batch_size;
    if (cfg->target_shard_size_mb && (cfg->target_shard_size_mb < 50 || cfg->target_shard_size_mb > 1000))
        return sts__failx(err, STS_RULE_OPTION, "target_shard_size_mb must be between 50 and 1000, got: %U",
                          (uint64_t)cfg->target_shard_size_mb);
    if (cfg->target_shard_size_mb && cfg->target_shard_bytes)
        return sts__failx(err, STS_RULE_OPTION, "set target_shard_size_mb or target_shard_bytes, not both");
    if (cfg->commit_threads > STS__PAR_MAX)
        return sts__failx(err, STS_RULE_OPTION, "commit_threads must be between 0 and 64, got: %U",
                          (uint64_t)cfg->commit_threads);
    /* MiB, as the connector counts */
    c->target = (uint64_t)(cfg->target_shard_size_mb ? cfg->target_shard_size_mb : 300) << 20;
    if (cfg->target_shard_bytes) c->target = cfg->target_shard_bytes;
    c->sep = cfg->kv_separator ? cfg->kv_separator : "__";
    c->sep_len = strlen(c->sep);
    if (!c->sep_len)
        return sts__failx(err, STS_RULE_OPTION, "kv_separator must not be empty (an empty one makes keys ambiguous)");
    if (sts__utf8_check((const uint8_t *)c->sep, c->sep_len) != c->sep_len)
        return sts__failx(err, STS_RULE_OPTION, "kv_separator must be UTF-8, got: %q", c->sep, c->sep_len);
    if ((unsigned)cfg->duplicates >= (unsigned)STS_DUPLICATES_COUNT)
        return sts__failx(err, STS_RULE_OPTION, "duplicatesStrategy must be fail or lastWin, got: %d",
                          (int)cfg->duplicates);
    if ((unsigned)cfg->tail >= (unsigned)STS_TAIL_COUNT)
        return sts__failx(err, STS_RULE_OPTION, "tail_strategy must be drop, pad or write, got: %d", (int)cfg->tail);
    if ((unsigned)cfg->rounding >= (unsigned)STS_ROUNDING_COUNT)
        return sts__failx(err, STS_RULE_OPTION, "rounding must be truncate or nearest_even, got: %d",
                          (int)cfg->rounding);
    if ((unsigned)cfg->kv_layout >= (unsigned)STS_KV_LAYOUT_COUNT)
        return sts__failx(err, STS_RULE_OPTION, "kv_layout must be sorted or arrival, got: %d", (int)cfg->kv_layout);
    if (cfg->has_dtype && !sts__dtype_seed(cfg->dtype))
        return sts__failx(err, STS_RULE_OPTION, "dtype must be one of F16 F32 F64 BF16 U8 I8 U16 I16 U32 I32 U64 I64, "
                                                "got: %s", sts_dtype_name(cfg->dtype));
    if (cfg->shapes && cfg->shape_list)
        return sts__failx(err, STS_RULE_OPTION, "give shapes either as JSON text or as a typed list, not both");
    c->dup = cfg->duplicates;
    c->index = cfg->generate_index != 0;
    c->overwrite = cfg->overwrite != 0;
    c->durable = sts__durable(cfg, opts);
    c->io_thread = !cfg->no_io_thread;
    c->arrival = cfg->kv_layout == STS_KV_ARRIVAL;  /* read by the KV writer only */
    c->tail = cfg->tail;
    c->has_dtype = cfg->has_dtype;
    c->dtype = cfg->dtype;
    c->rounding = cfg->rounding;
    return STS_OK;
}
/* Phase 2, the schema: names non-empty and UTF-8 (C strings: no NUL), unique; kinds and element
   types valid. Builds the name index the later phases look names up in. */
STS__PRIVATE sts_result sts__wcfg_schema(sts__wcfg *c, sts__wmake *m, sts_error *err) {
    size_t i;
    if (!sts__mulsz(m->ncols, sizeof *m->hashes, &m->hbytes) ||
        !(m->hashes = (uint64_t *)sts__alloc(&c->mem, m->hbytes)) ||
        !sts__index_init(&c->mem, &m->ix, m->ncols)) return sts__nomem(err, "the schema index");
    for (i = 0; i < m->ncols; i++) {
        const sts_column *col = &m->schema[i];
        size_t n = col->name ? strlen(col->name) : 0, pos, j;
        if (!n || sts__utf8_check((const uint8_t *)col->name, n) != n)
            return sts__failx(err, STS_RULE_OPTION, "schema column %z needs a non-empty UTF-8 name", i);
        if ((unsigned)col->kind - (unsigned)STS_VALUE_TENSOR >=
            (unsigned)STS_VALUE_KIND_COUNT - (unsigned)STS_VALUE_TENSOR)
            return sts__failx(err, STS_RULE_OPTION, "schema column %q has an unknown kind %d", col->name, n,
                              (int)col->kind);
        if (col->kind == STS_VALUE_ARRAY && !sts__elem_ok(col->elem))
            return sts__failx(err, STS_RULE_OPTION, "schema column %q: array elements must be F32, F64, I32, I64, "
                                                    "I16, I8 or U8 (C float, double, int32, int64, int16, int8, "
                                                    "uint8), got: %s",
                             col->name, n, sts_dtype_name(col->elem));
        /* names are C strings here: probe by comparing against earlier columns with equal hash */
        m->hashes[i] = sts__hash(col->name, n, 0x5eed);
        pos = (size_t)m->hashes[i] & m->ix.mask;
        for (; m->ix.slots[pos] != STS__EMPTY; pos = (pos + 1) & m->ix.mask) {
            j = m->ix.slots[pos];
            if (m->hashes[j] == m->hashes[i] && strcmp(m->schema[j].name, col->name) == 0)
                return sts__failx(err, STS_RULE_OPTION, "schema column %q appears twice", col->name, n);
        }
        m->ix.slots[pos] = (uint32_t)i;
        m->store += n + 1;
    }
    c->ncells = m->ncols;
    return STS_OK;
}
/* Phase 3, name_col (KV mode): a string column of the schema. */
STS__PRIVATE sts_result sts__wcfg_name_col(sts__wcfg *c, const sts__wmake *m, sts_error *err) {
    const char *name = m->cfg->name_col;
    c->key_in = (size_t)-1;
    if (!c->kv) return STS_OK;
    c->key_in = sts__wm_find(m, name, strlen(name));
    if (c->key_in == (size_t)-1)
        return sts__failx(err, STS_RULE_OPTION, "name_col %q is not a column of the schema", name, strlen(name));
    if (m->schema[c->key_in].kind != STS_VALUE_STRING)
        return sts__failx(err, STS_RULE_OPTION, "name_col %q must be a string column", name, strlen(name));
    return STS_OK;
}
/* Phase 4, the columns option: which cells become tensors (default: all but name_col), each
   written column fit to be one. */
STS__PRIVATE sts_result sts__wcfg_select(sts__wcfg *c, sts__wmake *m, sts_error *err) {
    const sts_write_config *cfg = m->cfg;
    const sts_column *schema = m->schema;
    size_t i, bytes;
    if (!sts__mulsz(m->ncols, sizeof *m->sel, &bytes) || !(m->sel = (size_t *)sts__alloc(&c->mem, bytes)))
        return sts__nomem(err, "the column selection");
    memset(m->sel, 0, bytes);
    if (cfg->columns) {
        const char *p = cfg->columns;
        for (;;) {
            const char *comma = strchr(p, ',');
            size_t n = comma ? (size_t)(comma - p) : strlen(p), at;
            const char *tok = p;
            sts__trim(&tok, &n);
            if (n) {
                at = sts__wm_find(m, tok, n);
                if (at == (size_t)-1)
                    return sts__failx(err, STS_RULE_OPTION, "columns names unknown column %q", tok, n);
                if (m->sel[at]) return sts__failx(err, STS_RULE_OPTION, "columns names %q twice", tok, n);
                if (at == c->key_in)
                    return sts__failx(err, STS_RULE_OPTION, "columns must not include name_col %q: the key is not a "
                                                            "tensor", tok, n);
                m->sel[at] = 1;
                m->nsel++;
            }
            if (!comma) break;
            p = comma + 1;
        }
        if (!m->nsel)
            return sts__failx(err, STS_RULE_OPTION, "columns must name at least one column, got: %q", cfg->columns,
                              strlen(cfg->columns));
    } else {
        for (i = 0; i < m->ncols; i++) if (i != c->key_in) { m->sel[i] = 1; m->nsel++; }
        if (!m->nsel) return sts__failx(err, STS_RULE_OPTION, "the schema has no column to write besides name_col");
    }
    for (i = 0; i < m->ncols; i++) {
        if (!m->sel[i]) continue;
        if (schema[i].kind == STS_VALUE_STRING)
            return sts__failx(err, STS_RULE_OPTION, "columns selects %q, a string column; only the key (name_col) may "
                                                    "be a string", schema[i].name, strlen(schema[i].name));
        if (!c->kv && strcmp(schema[i].name, "__metadata__") == 0)
            return sts__failx(err, STS_RULE_OPTION, "column \"__metadata__\" cannot be written: readers take that "
                                                    "name for the metadata");
        if (schema[i].kind == STS_VALUE_ARRAY && !c->has_dtype)
            return sts__failx(err, STS_RULE_OPTION, "dtype is required because column %q is a numeric array",
                              schema[i].name, strlen(schema[i].name));
        if (c->kv) {  /* key + separator + column must split one way only */
            const char *nm = schema[i].name;
            size_t nl = strlen(nm), at;
            for (at = 0; at + c->sep_len <= nl; at++)
                if (memcmp(nm + at, c->sep, c->sep_len) == 0)
                    return sts__failx(err, STS_RULE_OPTION, "column %q contains kv_separator %q: a tensor name (key + "
                                      "separator + column) could then be read as another key and another column; "
                                      "rename the column or choose another kv_separator", nm, nl, c->sep, c->sep_len);
        }
    }
    return STS_OK;
}
/* Phase 5, the shapes option's JSON text (when given): tokenized, an object, room counted for
   its dims; the typed list's room too. */
STS__PRIVATE sts_result sts__wcfg_shapes_read(sts__wcfg *c, sts__wmake *m, sts_error *err) {
    const sts_write_config *cfg = m->cfg;
    size_t i;
    sts_result r;
    if (cfg->shapes) {
        if ((r = sts__jdoc_parse(&m->shapes, cfg->shapes, strlen(cfg->shapes), &c->mem, "the shapes option",
                                 STS_RULE_OPTION, err)) != STS_OK) return r;
        if (m->shapes.tok[0].type != '{')
            return sts__failx(err, STS_RULE_OPTION, "shapes must be a JSON object like {\"col\": [28, 28]}, got: %q",
                              cfg->shapes, strlen(cfg->shapes));
        m->store += m->shapes.n * 2 * sizeof(uint64_t) + 8;  /* dims, plus alignment per column */
    }
    for (i = 0; i < cfg->n_shapes; i++) m->store += (size_t)cfg->shape_list[i].rank * sizeof(uint64_t) + 8;
    return STS_OK;
}
/* Phase 6, the config's own storage (names, separator, room for dims) and the output columns,
   in schema order. */
STS__PRIVATE sts_result sts__wcfg_outputs(sts__wcfg *c, sts__wmake *m, sts_error *err) {
    size_t i, store = m->store + c->sep_len + 1;
    if (!(c->store = (char *)sts__alloc(&c->mem, store))) return sts__nomem(err, "the write options");
    c->store_size = store;
    c->store_used = 0;
    c->sep = (const char *)sts__store(c, c->sep, c->sep_len + 1);
    if (!(c->cols = (sts__ocol *)sts__alloc(&c->mem, m->nsel * sizeof *c->cols)))
        return sts__nomem(err, "the output columns");
    memset(c->cols, 0, m->nsel * sizeof *c->cols);
    for (i = 0; i < m->ncols; i++) {
        sts__ocol *o;
        if (!m->sel[i]) continue;
        m->sel[i] = c->ncols + 1;
        o = &c->cols[c->ncols++];
        o->name_len = strlen(m->schema[i].name);
        o->name = (const char *)sts__store(c, m->schema[i].name, o->name_len + 1);
        o->in = i;
        o->kind = m->schema[i].kind;
        o->elem = m->schema[i].elem;
        if (o->kind == STS_VALUE_ARRAY) o->dtype = c->dtype;
    }
    return STS_OK;
}
/* Phase 7, the shapes (JSON text or typed list) attached to their columns: each names a numeric
   array column being written, once, with integer dims in [0, 2^63) (a dataset schema's dims). */
STS__PRIVATE sts_result sts__wcfg_shapes(sts__wcfg *c, sts__wmake *m, sts_error *err) {
    const sts_write_config *cfg = m->cfg;
    const sts__jdoc *d = &m->shapes;
    uint32_t t = d->tok ? 1u : 0u;
    size_t count = d->tok ? d->tok[0].count : cfg->n_shapes, k;
    for (k = 0; k < count; k++) {
        const char *cname;
        size_t cn, at;
        sts__ocol *o;
        uint64_t *dims;
        uint32_t rank, e;
        if (d->tok) {  /* a key with escapes is unescaped into memory of its size (never longer than the raw text) */
            if (d->tok[t].esc && !sts__grow(&c->mem, (void **)&m->key, &m->key_cap, d->tok[t].len ? d->tok[t].len : 1,
                                            1))
                return sts__nomem(err, "the shapes option");
            cname = sts__jdoc_str(d, t, m->key, &cn);
        } else {
            cname = cfg->shape_list[k].column ? cfg->shape_list[k].column : "";
            cn = strlen(cname);
        }
        at = sts__wm_find(m, cname, cn);
        o = at != (size_t)-1 && m->sel[at] ? &c->cols[m->sel[at] - 1] : NULL;
        if (!o)
            return sts__failx(err, STS_RULE_OPTION, "shapes names %q, which is not a column being written", cname, cn);
        if (o->kind != STS_VALUE_ARRAY)
            return sts__failx(err, STS_RULE_OPTION, "shapes names %q, a tensor column: its shape comes from its values",
                              cname, cn);
        if (o->has_opt) return sts__failx(err, STS_RULE_OPTION, "shapes names %q twice", cname, cn);
        if (d->tok) {
            uint32_t v = t + 1;
            if (d->tok[v].type != '[')
                return sts__failx(err, STS_RULE_OPTION, "shapes: the shape of %q must be an array of integers", cname,
                                  cn);
            rank = d->tok[v].count;
            dims = (uint64_t *)(void *)(c->store + ((c->store_used + 7) & ~(size_t)7));
            c->store_used = (size_t)((char *)(dims + rank) - c->store);
            for (e = 0, v = v + 1; e < rank; e++, v = sts__jdoc_next(d, v))
                if (!sts__jdoc_u64(d, v, &dims[e]))
                    return sts__failx(err, STS_RULE_OPTION, "shapes: the shape of %q must hold non-negative integers",
                                      cname, cn);
            t = sts__jdoc_next(d, t + 1);
        } else {
            rank = cfg->shape_list[k].rank;
            if (rank && !cfg->shape_list[k].dims)
                return sts__failx(err, STS_RULE_OPTION, "shapes: %q has rank %d but no dims", cname, cn, (int)rank);
            dims = (uint64_t *)(void *)(c->store + ((c->store_used + 7) & ~(size_t)7));
            if (rank) memcpy(dims, cfg->shape_list[k].dims, rank * sizeof *dims);
            c->store_used = (size_t)((char *)(dims + rank) - c->store);
        }
        for (e = 0; e < rank; e++)
            if (dims[e] > (uint64_t)INT64_MAX)
                return sts__failx(err, STS_RULE_OPTION, "shapes: the shape of %q holds %U, over %U, the largest dim a "
                                                        "dataset schema holds",
                                 cname, cn, dims[e], (uint64_t)INT64_MAX);
        o->has_opt = 1;
        o->opt_rank = rank;
        o->opt_dims = dims;
    }
    return STS_OK;
}
/* Phase 8, the header cap: every file holds the tensor names of a row (batch: the columns; KV:
   key + kv_separator + column, the key possibly empty) with their dtypes, shapes and offsets in a
   header of at most STS_MAX_HEADER_SIZE bytes. What is known now is a lower bound (names, array
   dtypes and shapes option dims; at least two bytes a dtype name, one digit a dim or an offset):
   names no file can hold are refused here, not at the first row. Rows are checked exactly. */
STS__PRIVATE sts_result sts__wcfg_header_floor(sts__wcfg *c, sts_error *err) {
    uint64_t json = 1, sep = c->kv ? sts__esc_len(c->sep, c->sep_len) - 2 : 0, most = 0;
    size_t i, at = 0;
    for (i = 0; i < c->ncols; i++) {
        const sts__ocol *o = &c->cols[i];
        uint64_t e = sts__entry_fixed(o->name, o->name_len, o->kind == STS_VALUE_ARRAY ? o->dtype : STS_DTYPE_U8, NULL,
                                      0) + sep + 2;
        uint32_t d;
        /* [batch_size, ...] */
        if (!c->kv)
            e += sts__digits(c->batch_size) + (o->kind == STS_VALUE_ARRAY && (!o->has_opt || o->opt_rank) ? 1 : 0);
        if (o->has_opt) for (d = 0; d < o->opt_rank; d++) e += sts__digits(o->opt_dims[d]) + (d ? 1 : 0);
        else if (o->kind == STS_VALUE_ARRAY) e += 1;  /* [count] */
        json += e;
        if (e > most) { most = e; at = i; }
    }
    if (json <= STS_MAX_HEADER_SIZE) return STS_OK;
    if (c->kv && sep * c->ncols >= c->cols[at].name_len)
        return sts__failx(err, STS_RULE_OPTION, "kv_separator (%U bytes) with column %q: a row's tensor names alone "
                                                "need a %U-byte header, over the %U-byte limit",
                         (uint64_t)c->sep_len, c->cols[at].name, c->cols[at].name_len, json,
                         (uint64_t)STS_MAX_HEADER_SIZE);
    return sts__failx(err, STS_RULE_OPTION, "column %q: %s alone need a %U-byte header, over the %U-byte limit",
                     c->cols[at].name, c->cols[at].name_len,
                     c->kv ? "with kv_separator, a row's tensor names" : "the column names", json,
                     (uint64_t)STS_MAX_HEADER_SIZE);
}
/* Options and schema, checked together before any file is touched, phase by phase. */
STS__PRIVATE sts_result sts__wcfg_make(sts__wcfg *c, const sts_write_config *cfg, const sts_column *schema,
                                       size_t ncols,
                                       const sts_options *opts, sts_error *err) {
    sts__wmake m;
    sts_result r;
    memset(c, 0, sizeof *c);
    c->mem = sts__mem_from(opts);
    if (!sts__mem_valid(&c->mem))
        return sts__failx(err, STS_RULE_ARGUMENT, "the allocator needs all three hooks or none");
    if (!cfg || !schema || !ncols)
        return sts__failx(err, STS_RULE_ARGUMENT, "a config and a schema of at least one column are needed");
    if ((r = sts__wcfg_mode(c, cfg, opts, err)) != STS_OK) return r;
    memset(&m, 0, sizeof m);
    m.cfg = cfg;
    m.schema = schema;
    m.ncols = ncols;
    m.ix.slots = NULL;
    m.store = 64;
    if ((r = sts__wcfg_schema(c, &m, err)) == STS_OK && (r = sts__wcfg_name_col(c, &m, err)) == STS_OK &&
        (r = sts__wcfg_select(c, &m, err)) == STS_OK && (r = sts__wcfg_shapes_read(c, &m, err)) == STS_OK &&
        (r = sts__wcfg_outputs(c, &m, err)) == STS_OK && (r = sts__wcfg_shapes(c, &m, err)) == STS_OK)
        r = sts__wcfg_header_floor(c, err);
    sts__jdoc_free(&m.shapes);
    sts__index_free(&c->mem, &m.ix);
    sts__free(&c->mem, m.hashes, m.hbytes);
    sts__free(&c->mem, m.sel, m.ncols * sizeof *m.sel);
    sts__free(&c->mem, m.key, m.key_cap);
    if (r != STS_OK) sts__wcfg_free(c);
    return r;
}

/* ---- folders ---- */
/* The folder check of prepare: the first entry that makes the folder non-empty (our temporaries
   and the job lock aside); with `remove`, removes the temporaries instead (left by a job that
   crashed: never visible to readers), once the folder is ours. */
typedef struct sts__fcheck {
    const sts__mem *m;
    const char *dir;
    int overwrite, remove;
    sts_result r;
    sts_error *err;
} sts__fcheck;
STS__PRIVATE sts_result sts__folder_entry(void *user, const char *n) {
    sts__fcheck *fc = (sts__fcheck *)user;
    if (strcmp(n, STS__LOCK) == 0) return STS_OK;
    if (sts__is_temp_name(n)) {
        size_t sz;
        char *p;
        if (fc->remove && (p = sts__join(fc->m, fc->dir, n, &sz)) != NULL) {
            sts__remove_path(p);
            sts__free(fc->m, p, sz);
        }
        return STS_OK;
    }
    if (!fc->remove && !fc->overwrite && fc->r == STS_OK)
        fc->r = sts__failx(fc->err, STS_RULE_EXISTS, "the output folder %q is not empty (it holds %q); set "
                                                     "mode=overwrite "
                           "to replace it", fc->dir, strlen(fc->dir), n, strlen(n));
    return STS_OK;
}
STS__PRIVATE sts_result sts__folder_pass(const char *dir, const sts__mem *m, int overwrite, int remove,
                                         sts_error *err) {
    sts__fcheck fc;
    sts_result r;
    fc.m = m; fc.dir = dir; fc.overwrite = overwrite; fc.remove = remove; fc.r = STS_OK; fc.err = err;
    r = sts__list_dir(dir, sts__folder_entry, &fc, err);
    return r != STS_OK ? r : fc.r;
}

/* Takes the folder for a job: created when missing, locked (EXISTS when another job holds it),
   checked (EXISTS when not empty, unless overwrite; the lock is given back then), and cleared of
   temporaries that crashed jobs left. */
STSDEF sts_result sts_dataset_prepare(const char *dir, const sts_write_config *cfg, const sts_column *schema,
                                      size_t ncols, const sts_options *opts, sts_error *err) {
    sts__wcfg c;
    sts__joblock mine;
    sts__unlock undo;
    sts_result r;
    if (!dir || !dir[0]) return sts__failx(err, STS_RULE_ARGUMENT, "sts_dataset_prepare needs a folder");
    if ((r = sts__wcfg_make(&c, cfg, schema, ncols, opts, err)) != STS_OK) return r;
    if ((r = sts__make_dirs(&c.mem, dir, err)) != STS_OK) { sts__wcfg_free(&c); return r; }
    if ((r = sts__lock_take(&c.mem, dir, c.durable, &mine, &undo, err)) != STS_OK) { sts__wcfg_free(&c); return r; }
    if ((r = sts__folder_pass(dir, &c.mem, c.overwrite, 0, err)) != STS_OK)
        sts__unlock_run(&c.mem, &undo);  /* the lock given back, with no allocation */
    else {
        sts__unlock_drop(&c.mem, &undo);
        (void)sts__folder_pass(dir, &c.mem, c.overwrite, 1, NULL);
    }
    sts__lock_free(&c.mem, &mine);
    sts__wcfg_free(&c);
    if (r == STS_OK) sts__ok(err);
    return r;
}

/* >>task_writer ---- the task writer ---- */
typedef struct sts__shard {
    char *path;                     /* final path (dir/name) */
    size_t path_size;
    sts__atomic a;                  /* its temporary until published */
    int state;                      /* 0 open, 1 sealed, 2 published */
    uint64_t bytes, samples, tensors;
    uint32_t crc;                   /* CRC-32C of the whole file, computed while writing */
} sts__shard;

typedef struct sts__key {          /* KV: a tensor name written by this task */
    uint64_t hash;
    const char *name;
    size_t len;
    uint32_t shard;                 /* shard number holding its winner */
    uint32_t ent;                   /* entry index in that shard while it is open */
} sts__key;

enum { STS__CHUNK_FREE, STS__CHUNK_OPEN, STS__CHUNK_LENT };
/* last: flush scratch */
#define STS__DIG_AHEAD 256         /* chunk CRCs made ahead: a 1000 MB shard's 4 MiB chunks */
typedef struct sts__dchunk {
    uint8_t *p;                     /* cap bytes; 2 MiB-aligned inside its block with the default allocator */
    size_t cap, used;
    int state;
    size_t last;
    uint64_t seq;                   /* the open shard's entry count when it opened: chunks fill in this order */
    uint32_t crc;                   /* with crc_on: the CRC-32C of its used bytes, taken by the caller */
    int crc_on;
    uint64_t at;                    /* kv_layout = arrival: where its bytes start in the shard's data */
    uint8_t *block;                 /* what was allocated: block_size bytes */
    size_t block_size;
} sts__dchunk;
typedef struct sts__stagebuf { uint8_t *p; int state; } sts__stagebuf;  /* batch: FREE, OPEN (a column's), LENT */

struct sts_task_writer {
    sts__wcfg c;
    char *dir;
    size_t dir_size;
    uint32_t task;
    char uuid[37];
    sts__joblock job;               /* the job that holds the folder (from its lock) */
    uint32_t batch_hcrc;            /* batch mode: CRC-32C of the open file's 8 + N header bytes */
    sts_result failed;              /* sticky I/O failure */
    int committed;
    uint64_t rows;                  /* rows accepted */
    uint64_t calls;                 /* rows offered: the row number in messages */
    sts__shard *shards;
    size_t nshards, shards_cap;
    /* batch mode: the open batch file */
    sts__plan plan;
    sts_tensor_spec *bspecs;
    uint64_t data_off, batch_rows;
    int batch_open;
    /* KV mode: the open shard */
    sts_tensor_spec *ents;
    size_t nents, ents_cap, ents_room;  /* ents_room: entries every per-entry table holds */
    uint64_t shard_rows, shard_data, shard_fixed;  /* data bytes, header bytes before offsets */
    uint64_t exact;                 /* an exact-based upper bound of the shard's file size; 0 = none */
    uint64_t min_size, empties;     /* smallest non-empty tensor and count of empty ones in the shard */
    /* While the open shard's entries arrive in layout order (the usual case: sorted keys) and none
       is replaced (lastWin), its exact size is kept as rows come, so the roller needs no count. */
    int unsorted;                   /* 0: in order, and the two below are valid */
    uint64_t isum;                  /* the entries' fixed header bytes and offset digits */
    uint32_t idig;                  /* digits of shard_data */
    /* A KV shard's CRC-32C: its data's, taken by the I/O thread as it writes the bytes (the digest
       hook, sts__kv_digest), joined to its header's once the shard is out (sts__wb_sync) */
    uint32_t dig_crc, dig_sealed;   /* the I/O thread's: the file so far; the last file's */
    /* the I/O thread's too: CRCs of the open shard's filled chunks, made ahead of their write (DIGEST
       items, queued while the shard is in order: its chunks then go out whole, in this order) */
    struct { const uint8_t *p; uint64_t n; uint32_t crc; } dig_ahead[STS__DIG_AHEAD];
    size_t dig_head, dig_n;
    uint32_t dig_hcrc;              /* the caller's: the sealed shard's header CRC, its data bytes and */
    uint64_t dig_data;              /* its number, or (size_t)-1 when none waits */
    size_t dig_shard;
    /* Whether each dtype's entries of the open shard came in name order (rows of several dtypes
       whose keys ascend): then the layout order is the dtypes' runs one after another (sts__kv_grouped) */
    int ungrouped;                  /* 1 once one left name order or was replaced */
    size_t gdone;                   /* entries [0, gdone) checked */
    size_t glast[STS_DTYPE_COUNT];  /* per dtype: its last entry ((size_t)-1: none) */
    size_t gcount[STS_DTYPE_COUNT]; /*            and its count */
    /* kv_layout = arrival (12.2.3): once the open shard is an eighth full (or two chunks), its file is begun, the
       last of w->shards, and its filled chunks are lent to the I/O thread, behind `room` bytes kept
       for its header, as soon as what stays held back covers the room the header does not use yet;
       at the seal the header is rendered whole into hmem for the I/O thread too */
    int streaming;
    uint64_t room;
    uint64_t held_at;               /* the open shard's data size at which sts__kv_send_held looks again */
    uint8_t *hmem;
    size_t hmem_cap;
    sts__dchunk *chunks;
    size_t nchunks, chunks_cap, chunk_at;   /* chunk_at: the open shard's current chunk, or (size_t)-1 */
    uint64_t chunk_bytes, chunk_budget;     /* allocated; the cap while a sealed shard is being written (0: none yet) */
    uint32_t *echk;                 /* per entry: the chunk holding its data */
    size_t echk_cap;
    sts__stagebuf *stages;          /* batch: the columns' 2 MiB buffers, lent to the I/O thread when full */
    size_t nstages;
    sts__wb wb;                     /* the I/O thread */
    sts__key *keys;
    size_t nkeys, keys_cap;
    int kidx;                       /* 0 while every name came after all earlier ones (memcmp order): none can
                                       be a duplicate, so none is hashed; 1 once the index below is built */
    sts__index kindex;
    sts__chunk *names;              /* arena of key names */
    sts__chunk *names_spare;        /* its next chunk, being faulted in by the I/O thread, or NULL */
    size_t names_left;
    sts__chunk *shapes;             /* shapes of the open shard that differ from their column's */
    size_t shapes_left;
    uint32_t *efix;                 /* per entry: header bytes without its offsets (sts__entry_fixed) */
    size_t *ord;                    /* the layout order of ents[0..nord), kept across exact counts */
    size_t nord, efix_cap, ord_cap;
    /* KV: one row's tensors, worked out once per row (ncols each) */
    sts_tensor_spec *rspec;         /* name (at the names arena's end), dtype, rank, shape, data_size */
    uint64_t *rhash, *rfix, *rcount;
    uint64_t *rslot;                /* 1 when the cell has its fixed column's dtype and shape; then the key
                                       index slot its name probed: 4 x slot, + 2 for that, + 1 if it was empty */
    uint64_t *cesc, *cpart;         /* per column: its name and the separator as header bytes; the header
                                       bytes of its dtype and column shape (0: not yet) */
    size_t *rrep;                   /* the open shard's entry the tensor replaces (lastWin), else (size_t)-1 */
    size_t *rpos, *rord;            /* 2 x ncols: exact counts' events (place in ord) and their order */
    int phases_only;                /* tests: every row through the phases, none through sts__kv_row_fast */
    sts__fdsink *sink;
    uint8_t *hbuf;                  /* KV: the header's pieces are rendered here (hbuf_cap bytes) */
    size_t hbuf_cap;
};

STS__PRIVATE sts_result sts__never(void *user, const sts_tensor_spec *spec, sts_stream *out) {
    (void)user; (void)spec; (void)out;
    return STS_ERR_INVALID_ARGUMENT;  /* layout-only plans: never called */
}
/* part-TTTTT-SSSS-uuid.safetensors */
STS__PRIVATE void sts__fmt_shard(char *buf, uint32_t task, uint32_t shard, const char *uuid) {
    sts__buf b;
    char t[16];
    int i;
    b.p = buf; b.n = 0; b.cap = 96;
    sts__buf_put(&b, "part-", 5);
    for (i = 0; i < 2; i++) {  /* zero-padded to 5 and 4 digits, more when larger */
        int width = i ? 4 : 5, d;
        sts__buf sb;
        sb.p = t; sb.n = 0; sb.cap = sizeof t;
        sts__buf_u64(&sb, i ? shard : task);
        for (d = (int)sb.n; d < width; d++) sts__buf_put(&b, "0", 1);
        sts__buf_put(&b, t, sb.n);
        sts__buf_put(&b, "-", 1);
    }
    sts__buf_put(&b, uuid, 36);
    sts__buf_put(&b, ".safetensors", 12);
}
/* A new shard record with its temporary file open. */
STS__PRIVATE sts_result sts__shard_open(sts_task_writer *w, sts__shard **out, sts_error *err) {
    char name[96];
    sts__shard *s;
    sts_result r;
    if (w->nshards >= 0xffffffffu) return sts__failx(err, STS_RULE_ARGUMENT, "too many shards");
    if (w->nshards == w->shards_cap && !sts__grow(&w->c.mem, (void **)&w->shards, &w->shards_cap, w->nshards + 1,
                                                  sizeof *w->shards))
        return sts__nomem(err, "the shard list");
    s = &w->shards[w->nshards];
    memset(s, 0, sizeof *s);
    sts__fmt_shard(name, w->task, (uint32_t)w->nshards, w->uuid);
    if (!(s->path = sts__join(&w->c.mem, w->dir, name, &s->path_size))) return sts__nomem(err, "a shard path");
    if ((r = sts__atomic_begin(&s->a, s->path, &w->c.mem, err)) != STS_OK) {
        sts__free(&w->c.mem, s->path, s->path_size);
        return r;
    }
    w->nshards++;
    *out = s;
    return STS_OK;
}
STS__PRIVATE void sts__shard_free(sts_task_writer *w, sts__shard *s, int remove) {
    if (remove) {
        if (s->state < 2) sts__atomic_abort(&s->a);
        else sts__remove_path(s->path);
    } else if (s->state < 2) sts__atomic_abort(&s->a);
    sts__free(&w->c.mem, s->path, s->path_size);
    s->path = NULL;
}
/* The digest hook of a KV task's queue (sts__wb.digest), on the I/O thread: the CRC-32C of the
   shard's data as it is written, in the file's order; at the file's end it is kept for the caller. */
STS__PRIVATE void sts__kv_digest(void *user, const uint8_t *p, uint64_t n, int ahead, uint64_t known) {
    sts_task_writer *w = (sts_task_writer *)user;
    if (ahead) {  /* a filled chunk: its CRC (known: 1 + the one the caller took), while its bytes are in the cache */
        if (w->dig_n < STS__DIG_AHEAD) {
            size_t k = (w->dig_head + w->dig_n++) % STS__DIG_AHEAD;
            w->dig_ahead[k].p = p;
            w->dig_ahead[k].n = n;
            w->dig_ahead[k].crc = known ? (uint32_t)(known - 1) : sts__crc32c(0, p, (size_t)n);
        }
        return;
    }
    if (p) {  /* bytes whose CRC the caller took; the oldest chunk made ahead (unchanged since); others */
        if (known) w->dig_crc = sts__crc32c_combine(w->dig_crc, (uint32_t)(known - 1), n);
        else if (w->dig_n && w->dig_ahead[w->dig_head].p == p && w->dig_ahead[w->dig_head].n == n) {
            w->dig_crc = sts__crc32c_combine(w->dig_crc, w->dig_ahead[w->dig_head].crc, n);
            w->dig_head = (w->dig_head + 1) % STS__DIG_AHEAD;
            w->dig_n--;
        } else w->dig_crc = sts__crc32c(w->dig_crc, p, (size_t)n);
        return;
    }
    w->dig_sealed = w->dig_crc;
    w->dig_crc = 0;
    w->dig_head = w->dig_n = 0;  /* what was not used (the shard left its order) */
}
STS__PRIVATE sts_result sts__task_fail(sts_task_writer *w, sts_result r) {
    if (r != STS_OK && r != STS_ERR_SCHEMA && r != STS_ERR_DUPLICATE_KEY) w->failed = r;
    return r;
}

STSDEF sts_result sts_task_open(const char *dir, uint32_t task_id, const sts_write_config *cfg,
                                const sts_column *schema, size_t ncols,
                                const sts_options *opts, sts_task_writer **out, sts_error *err) {
    sts__wcfg c;
    sts_task_writer *w;
    sts_result r;
    if (!dir || !out) return sts__failx(err, STS_RULE_ARGUMENT, "sts_task_open needs a folder and out");
    if ((r = sts__wcfg_make(&c, cfg, schema, ncols, opts, err)) != STS_OK) return r;
    {
        sts__stat st;
        int e = sts__stat_path(dir, &st);
        if (e || st.kind != STS__FT_DIR) {
            sts__wcfg_free(&c);
            return sts__fail_errno(err, e ? e : ENOTDIR, "use the output folder (call sts_dataset_prepare first)", dir);
        }
    }
    {
        sts__joblock l;
        int found;
        /* the job that holds the folder (none: the writer works alone, and sts_dataset_commit, which
           commits only the messages of the folder's job, refuses its message) */
        if ((r = sts__lock_read(&c.mem, dir, &l, &found, err)) != STS_OK) { sts__wcfg_free(&c); return r; }
        if (!(w = (sts_task_writer *)sts__alloc(&c.mem, sizeof *w))) {
            sts__lock_free(&c.mem, &l);
            sts__wcfg_free(&c);
            return sts__nomem(err, "the task writer");
        }
        memset(w, 0, sizeof *w);
        w->job = l;
    }
    w->c = c;
    w->task = task_id;
    w->kindex.slots = NULL;
    w->chunk_at = (size_t)-1;
    memset(w->glast, 0xff, sizeof w->glast);
    w->dig_shard = (size_t)-1;
    sts__wb_init(&w->wb, &w->c.mem, w->c.io_thread);
    w->wb.digest = sts__kv_digest;  /* used by the KV writer's data pieces only */
    w->wb.digest_user = w;
    {
        size_t i;
        for (i = 0; i < w->c.ncols; i++) { w->c.cols[i].stage = NULL; w->c.cols[i].stage_id = -1; }
    }
    {
        size_t dl = strlen(dir);
        w->dir_size = dl + 1;
        if (!(w->dir = (char *)sts__alloc(&c.mem, w->dir_size))) {
            sts__lock_free(&c.mem, &w->job);
            sts__free(&c.mem, w, sizeof *w);
            sts__wcfg_free(&c);
            return sts__nomem(err, "the task writer");
        }
        memcpy(w->dir, dir, dl + 1);
    }
    sts__uuid4(w->uuid);
    *out = w;
    sts__ok(err);
    return STS_OK;
}

/* ---- cells ---- */
STS__PRIVATE sts_result sts__cell_numel(const sts_value *v, uint64_t *numel) {
    uint64_t n = 1;
    uint32_t d;
    for (d = 0; d < v->rank; d++) if (!sts__mul64(n, v->shape[d], &n)) return STS_ERR_VALIDATION_OVERFLOW;
    *numel = n;
    return STS_OK;
}
/* Undoes sts__col_fix: the column is as sts_task_open left it. */
STS__PRIVATE void sts__col_unfix(sts_task_writer *w, sts__ocol *o) {
    sts__free(&w->c.mem, o->shape, (o->rank + 1) * sizeof(uint64_t));
    sts__free(&w->c.mem, o->varies, o->rank ? o->rank : 1);
    o->shape = NULL;
    o->varies = NULL;
    o->rank = 0;
    o->numel = o->row_bytes = 0;
    o->fixed = 0;
    if (o->kind == STS_VALUE_TENSOR) o->dtype = (sts_dtype)0;
}
/* The first row fixes a column's dtype and sample shape (and shapes option arrays get theirs).
   On failure the column stays unfixed. */
STS__PRIVATE sts_result sts__col_fix(sts_task_writer *w, sts__ocol *o, const sts_value *v, sts_error *err) {
    const sts__mem *m = &w->c.mem;
    uint32_t rank;
    const uint64_t *dims;
    uint64_t one, bits;
    uint32_t d;
    sts_result r = STS_OK;
    if (o->kind == STS_VALUE_TENSOR) { rank = v->rank; dims = v->shape; o->dtype = v->dtype; }
    else if (o->has_opt) { rank = o->opt_rank; dims = o->opt_dims; }
    else { one = v->size; rank = 1; dims = &one; }
    o->rank = rank;  /* before the allocations: what they are freed with */
    if (!(o->shape = (uint64_t *)sts__alloc(m, (rank + 1) * sizeof(uint64_t))) ||
        !(o->varies = (uint8_t *)sts__alloc(m, rank ? rank : 1))) {
        r = sts__nomem(err, "a column shape");
        goto fail;
    }
    o->shape[0] = w->c.batch_size;
    if (rank) memcpy(o->shape + 1, dims, rank * sizeof(uint64_t));
    memset(o->varies, 0, rank ? rank : 1);
    o->numel = 1;
    for (d = 0; d < rank; d++)
        if (!sts__mul64(o->numel, dims[d], &o->numel)) {
            r = sts__failx(err, STS_RULE_NUMEL_OVERFLOW, "column %q: shape %S overflows 64 bits", o->name, o->name_len,
                           dims, (size_t)rank);
            goto fail;
        }
    if (!sts__mul64(o->numel, sts_dtype_bits(o->dtype), &bits) || bits % 8) {
        r = sts__failx(err, STS_RULE_BYTE_ALIGNED, "column %q: a sample of %U %s elements is not a whole number of "
                                                   "bytes",
                      o->name, o->name_len, o->numel, sts_dtype_name(o->dtype));
        goto fail;
    }
    o->row_bytes = bits / 8;
    o->fixed = 1;
    return STS_OK;
fail:
    sts__col_unfix(w, o);
    return r;
}
/* The columns a row fixes (the first accepted row fixes every one, in both modes). When that
   fails, or when `then` (batch: laying out the first file) does, none stays fixed: a refused
   first row changes nothing. */
STS__PRIVATE sts_result sts__cols_fix(sts_task_writer *w, const sts_value *row,
                                      sts_result (*then)(sts_task_writer *, sts_error *), sts_error *err) {
    size_t i;
    sts_result r = STS_OK;
    if (w->c.cols[0].fixed) return then ? then(w, err) : STS_OK;
    for (i = 0; i < w->c.ncols && r == STS_OK; i++) r = sts__col_fix(w, &w->c.cols[i], &row[w->c.cols[i].in], err);
    if (r == STS_OK && then) r = then(w, err);
    if (r != STS_OK) for (i = 0; i < w->c.ncols; i++) sts__col_unfix(w, &w->c.cols[i]);
    return r;
}
/* Checks one cell against its column without changing anything. *bytes gets its output size. */
STS__PRIVATE sts_result sts__cell_check(sts_task_writer *w, const sts__ocol *o, const sts_value *v, uint64_t *bytes,
                                        sts_error *err) {
    uint64_t row = w->calls, numel, bits;
    if (o->kind == STS_VALUE_TENSOR) {
        if ((unsigned)v->dtype >= (unsigned)STS_DTYPE_COUNT)
            return sts__failx(err, STS_RULE_ROW_VALUE, "row %U, column %q: dtype %d is not one of the 22", row, o->name,
                              o->name_len, (int)v->dtype);
        if (v->rank && !v->shape)
            return sts__failx(err, STS_RULE_ROW_VALUE, "row %U, column %q: rank %d but no shape", row, o->name,
                              o->name_len, (int)v->rank);
        if (o->fixed && v->dtype != o->dtype)
            return sts__failx(err, STS_RULE_ROW_DTYPE, "row %U, column %q: dtype %s differs from %s, set by the "
                                                       "column's first row",
                             row, o->name, o->name_len, sts_dtype_name(v->dtype), sts_dtype_name(o->dtype));
        if (sts__cell_numel(v, &numel) != STS_OK || !sts__mul64(numel, sts_dtype_bits(v->dtype), &bits))
            return sts__failx(err, STS_RULE_NUMEL_OVERFLOW, "row %U, column %q: shape %S overflows 64 bits", row,
                              o->name, o->name_len, v->shape, (size_t)v->rank);
        if (!numel) {  /* a dim over 2^63 - 1 is possible only beside a 0 (else the bit count overflowed) */
            uint32_t d;
            for (d = 0; d < v->rank; d++)
                if (v->shape[d] > (uint64_t)INT64_MAX)
                    return sts__failx(err, STS_RULE_ROW_SHAPE,
                                      "row %U, column %q: dim %U is over %U, the largest a dataset schema holds",
                                     row, o->name, o->name_len, v->shape[d], (uint64_t)INT64_MAX);
        }
        if (bits % 8 || bits / 8 != v->size)
            return sts__failx(err, STS_RULE_ROW_VALUE, "row %U, column %q: %s %S needs %U bits, but the cell holds %U "
                                                       "bytes",
                             row, o->name, o->name_len, sts_dtype_name(v->dtype), v->shape, (size_t)v->rank, bits,
                             v->size);
        if (o->fixed && !w->c.kv && (v->rank != o->rank || (v->rank &&
                                                            memcmp(v->shape, o->shape + 1,
                                                                   v->rank * sizeof(uint64_t)) != 0)))
            return sts__failx(err, STS_RULE_ROW_SHAPE, "row %U, column %q: shape %S differs from %S, set by the "
                                                       "column's first row (batch mode stacks rows)",
                             row, o->name, o->name_len, v->shape, (size_t)v->rank, o->shape + 1, (size_t)o->rank);
        *bytes = v->size;
    } else {
        uint64_t want = o->has_opt ? o->numel : (!w->c.kv && o->fixed ? o->numel : v->size);
        if (o->has_opt && !o->fixed) {  /* numel of the option, before the first row fixes it */
            uint32_t d;
            want = 1;
            for (d = 0; d < o->opt_rank; d++)
                if (!sts__mul64(want, o->opt_dims[d], &want))
                    return sts__failx(err, STS_RULE_NUMEL_OVERFLOW, "column %q: its shapes option overflows 64 bits",
                                      o->name, o->name_len);
        }
        if (v->size != want)
            return sts__failx(err, STS_RULE_ROW_SHAPE, "row %U, column %q: the array has %U elements, but %s %U",
                             row, o->name, o->name_len, v->size,
                             o->has_opt ? "its shapes option holds" : "the column's first row had", want);
        if (!sts__mul64(v->size, sts_dtype_bits(o->dtype), &bits))
            return sts__failx(err, STS_RULE_NUMEL_OVERFLOW, "row %U, column %q: %U elements overflow 64 bits", row,
                              o->name, o->name_len, v->size);
        *bytes = bits / 8;
    }
    if (*bytes && !v->data)
        return sts__failx(err, STS_RULE_ROW_VALUE, "row %U, column %q: %U bytes but no data", row, o->name, o->name_len,
                          *bytes);
    return STS_OK;
}
/* Encodes one array cell's elements [from, from + n) into dst, or copies a tensor cell's bytes
   [from, from + n) (a tensor's unit is the byte: F4/F6 and every other dtype alike). */
STS__PRIVATE sts_result sts__cell_encode(sts_task_writer *w, const sts__ocol *o, const sts_value *v, uint64_t from,
                                         size_t n, void *dst, sts_error *err) {
    size_t esz = o->kind == STS_VALUE_ARRAY ? sts_dtype_bits(o->elem) / 8 : 1;
    const uint8_t *src = (const uint8_t *)v->data + from * esz;
    sts_result r = STS_OK;
    if (o->kind == STS_VALUE_ARRAY && esz > 1 && sts__host_big_endian()) {
        /* an array holds C values in the host's order; files and the codecs are little-endian */
        uint8_t le[4096], *d = (uint8_t *)dst;
        size_t per = sizeof le / esz, dsz = sts_dtype_bits(o->dtype) / 8;
        while (n && r == STS_OK) {
            size_t k = n < per ? n : per;
            sts__to_le(le, src, k, esz);
            if (o->elem == o->dtype) memcpy(d, le, k * esz);
            else r = sts_convert(d, o->dtype, le, o->elem, k, w->c.rounding);
            src += k * esz;
            d += k * dsz;
            n -= k;
        }
    } else if (o->kind == STS_VALUE_TENSOR || o->elem == o->dtype) {
        memcpy(dst, src, n * esz);
        return STS_OK;
    } else r = sts_convert(dst, o->dtype, src, o->elem, n, w->c.rounding);
    if (r != STS_OK)
        return sts__fail_code(err, r, STS_RULE_UNSUPPORTED, STS_OFFSET_UNKNOWN,
                              "column %q: cannot encode %s elements as %s (%s)",
                              o->name, o->name_len, sts_dtype_name(o->elem), sts_dtype_name(o->dtype),
                              sts_result_name(r));
    return STS_OK;
}

/* >>batch ---- batch mode ---- */
STS__PRIVATE sts__shard *sts__cur_shard(sts_task_writer *w) { return &w->shards[w->nshards - 1]; }
STS__PRIVATE sts_result sts__io_fail(sts_task_writer *w, int e, const char *what, sts_error *err) {
    return sts__task_fail(w, sts__fail_errno(err, e, what, sts__cur_shard(w)->path));
}
/* A failure the I/O thread met: STS_ERR_IO naming the call and the file; the writer is failed. */
STS__PRIVATE sts_result sts__wb_fail(sts_task_writer *w, sts_error *err) {
    const sts__wb *q = &w->wb;
    const char *path = q->err_shard < w->nshards && w->shards[q->err_shard].path ? w->shards[q->err_shard].path
                                                                                  : w->dir;
    return sts__task_fail(w, sts__fail_errno(err, q->err_no, q->err_op ? q->err_op : "write", path));
}
/* Before a system call of the caller's own: everything queued has run. */
STS__PRIVATE sts_result sts__wb_sync(sts_task_writer *w, sts_error *err) {
    if (sts__wb_idle(&w->wb)) return sts__wb_fail(w, err);
    if (w->dig_shard != (size_t)-1) {  /* a KV shard is out: its CRC-32C, the header's then the data's */
        w->shards[w->dig_shard].crc = sts__crc32c_combine(w->dig_hcrc, w->dig_sealed, w->dig_data);
        w->dig_shard = (size_t)-1;
    }
    return STS_OK;
}
/* A failure seen so far, without waiting. */
STS__PRIVATE sts_result sts__wb_check(sts_task_writer *w, sts_error *err) {
    return sts__wb_error(&w->wb) ? sts__wb_fail(w, err) : STS_OK;
}
/* Queues one write-behind item for the open shard. */
STS__PRIVATE void sts__wb_queue(sts_task_writer *w, int kind, int fd, const uint8_t *p, uint64_t len, uint64_t off,
                                int32_t token) {
    sts__wbitem it;
    memset(&it, 0, sizeof it);
    it.kind = kind; it.fd = fd; it.p = p; it.len = len; it.off = off; it.token = token;
    it.durable = w->c.durable;
    it.shard = (uint32_t)(w->nshards - 1);
    sts__wb_put(&w->wb, &it);
}
/* Batch: a free 2 MiB buffer from the pool (at most 4 a column), waiting for the I/O thread to
   hand one back when all are lent. Returns its index, or -1 when out of memory. */
#define STS__STAGES_PER_COLUMN 4
STS__PRIVATE int sts__stage_take(sts_task_writer *w) {
    size_t i, limit = STS__STAGES_PER_COLUMN * w->c.ncols + 1;
    for (;;) {
        int32_t t;
        while ((t = sts__wb_take(&w->wb, 0)) >= 0) w->stages[t].state = STS__CHUNK_FREE;
        for (i = 0; i < w->nstages; i++)
            if (w->stages[i].state == STS__CHUNK_FREE) { w->stages[i].state = STS__CHUNK_OPEN; return (int)i; }
        if (w->nstages < limit || (t = sts__wb_take(&w->wb, 1)) < 0) break;
        w->stages[t].state = STS__CHUNK_FREE;
    }
    if (!w->stages) {
        if (!(w->stages = (sts__stagebuf *)sts__alloc(&w->c.mem, limit * sizeof *w->stages))) return -1;
        memset(w->stages, 0, limit * sizeof *w->stages);
        if (!sts__wb_reserve(&w->wb, limit)) return -1;
    }
    if (w->nstages >= limit || !(w->stages[w->nstages].p = (uint8_t *)sts__alloc(&w->c.mem, STS__STAGE))) return -1;
    w->stages[w->nstages].state = STS__CHUNK_OPEN;
    return (int)w->nstages++;
}
/* Hands a column's full buffer to the I/O thread (a pwrite at its place in the file). */
STS__PRIVATE sts_result sts__stage_flush(sts_task_writer *w, sts__ocol *o, sts_error *err) {
    (void)err;
    if (!o->stage_len) return STS_OK;
    w->stages[o->stage_id].state = STS__CHUNK_LENT;
    o->crc = sts__crc32c(o->crc, o->stage, o->stage_len);  /* just written to: in the cache */
    o->crc_len += o->stage_len;
    sts__wb_queue(w, STS__WB_PWRITE, sts__cur_shard(w)->a.fd, o->stage, o->stage_len, o->stage_off, o->stage_id);
    o->stage_off += o->stage_len;
    o->stage_len = 0;
    o->stage = NULL;
    o->stage_id = -1;
    return STS_OK;
}
/* Specs of a batch file with `rows` rows; order and offsets come from the plan. */
STS__PRIVATE sts_result sts__batch_plan(sts_task_writer *w, uint64_t rows, sts__plan *pl, sts_error *err) {
    size_t i;
    sts_options o;
    memset(&o, 0, sizeof o);
    o.allocator = w->c.mem.a;
    for (i = 0; i < w->c.ncols; i++) {
        sts__ocol *c = &w->c.cols[i];
        sts_tensor_spec *s = &w->bspecs[i];
        c->shape[0] = rows;
        s->name = c->name; s->name_len = c->name_len; s->dtype = c->dtype; s->rank = c->rank + 1; s->shape = c->shape;
        s->data = NULL; s->produce = sts__never;
        if (!sts__mul64(rows, c->row_bytes, &s->data_size))
            return sts__failx(err, STS_RULE_WRITE_TOTAL, "column %q: %U rows overflow 64 bits", c->name, c->name_len,
                              rows);
    }
    return sts__plan_make(pl, w->bspecs, w->c.ncols, NULL, 0, &o, err);
}
/* The columns make the batch files' header larger than the cap (known from the first row's
   shapes): the refusal names the column with the largest entry. */
STS__PRIVATE sts_result sts__batch_too_large(sts_task_writer *w, sts_error *err) {
    uint64_t most = 0;
    size_t i, at = 0;
    for (i = 0; i < w->c.ncols; i++) {
        const sts__ocol *o = &w->c.cols[i];
        uint64_t e = sts__entry_fixed(o->name, o->name_len, o->dtype, o->shape, o->rank + 1);
        if (e > most) { most = e; at = i; }
    }
    return sts__failx(err, STS_RULE_ROW_VALUE, "row %U, column %q: the files' header needs more than the %U-byte "
                                               "limit (this column's entry alone takes %U bytes)",
                     w->calls, w->c.cols[at].name, w->c.cols[at].name_len, (uint64_t)STS_MAX_HEADER_SIZE, most);
}
/* A full batch file would be larger than a file offset holds (2^63 - 1 bytes): the refusal names
   the column with the largest rows. */
STS__PRIVATE sts_result sts__batch_too_big(sts_task_writer *w, sts_error *err) {
    size_t i, at = 0;
    for (i = 1; i < w->c.ncols; i++) if (w->c.cols[i].row_bytes > w->c.cols[at].row_bytes) at = i;
    return sts__failx(err, STS_RULE_WRITE_TOTAL, "column %q: a file of %U rows (batch_size) would be over %U bytes, "
                                                 "the largest file offset",
                     w->c.cols[at].name, w->c.cols[at].name_len, w->c.batch_size, (uint64_t)INT64_MAX);
}
/* The first row of a batch: lay the whole file out (header for a full batch, size set). */
STS__PRIVATE sts_result sts__batch_begin(sts_task_writer *w, sts_error *err) {
    sts__shard *s;
    uint8_t *hdr;
    size_t hbytes, i;
    sts_result r;
    int e;
    if ((r = sts__wb_check(w, err)) != STS_OK) return r;  /* an earlier file's failure */
    if (!w->bspecs && !(w->bspecs = (sts_tensor_spec *)sts__alloc(&w->c.mem, w->c.ncols * sizeof *w->bspecs)))
        return sts__nomem(err, "the batch layout");
    memset(w->bspecs, 0, w->c.ncols * sizeof *w->bspecs);
    if ((r = sts__batch_plan(w, w->c.batch_size, &w->plan, err)) != STS_OK)
        return r == STS_ERR_HEADER_TOO_LARGE ? sts__batch_too_large(w, err) : r;
    /* past what a file offset (off_t) holds */
    if (w->plan.data_len > (uint64_t)INT64_MAX || 8 + w->plan.header_len > (uint64_t)INT64_MAX - w->plan.data_len) {
        sts__plan_free(&w->plan);
        return sts__batch_too_big(w, err);
    }
    if ((r = sts__shard_open(w, &s, err)) != STS_OK) { sts__plan_free(&w->plan); return sts__task_fail(w, r); }
    hbytes = (size_t)(8 + w->plan.header_len);
    if (hbytes <= STS__STAGE) {  /* the header in a pool buffer, written and the size set on the I/O thread */
        int id = sts__stage_take(w);
        if (id < 0) { sts__plan_free(&w->plan); return sts__task_fail(w, sts__nomem(err, "a batch header")); }
        sts__plan_render(&w->plan, w->bspecs, NULL, 0, w->stages[id].p);
        w->batch_hcrc = sts__crc32c(0, w->stages[id].p, hbytes);
        w->stages[id].state = STS__CHUNK_LENT;
        sts__wb_queue(w, STS__WB_PWRITE, s->a.fd, w->stages[id].p, hbytes, 0, id);
        sts__wb_queue(w, STS__WB_TRUNCATE, s->a.fd, NULL, 0, hbytes + w->plan.data_len, -1);
    } else {
        if ((r = sts__wb_sync(w, err)) != STS_OK) { sts__plan_free(&w->plan); return r; }
        if (!(hdr = (uint8_t *)sts__alloc(&w->c.mem, hbytes))) {
            sts__plan_free(&w->plan);
            return sts__task_fail(w, sts__nomem(err, "a batch header"));
        }
        sts__plan_render(&w->plan, w->bspecs, NULL, 0, hdr);
        w->batch_hcrc = sts__crc32c(0, hdr, hbytes);
        e = sts__pwrite_all(&w->c.mem, s->a.fd, hdr, hbytes, 0);
        sts__free(&w->c.mem, hdr, hbytes);
        if (!e) e = sts__truncate_fd(&w->c.mem, s->a.fd, hbytes + w->plan.data_len);
        if (e) { sts__plan_free(&w->plan); return sts__io_fail(w, e, "write", err); }
    }
    w->data_off = hbytes;
    w->batch_rows = 0;
    w->batch_open = 1;
    for (i = 0; i < w->c.ncols; i++) { w->c.cols[i].stage_len = 0; w->c.cols[i].crc = 0; w->c.cols[i].crc_len = 0; }
    return STS_OK;
}
/* Moves each column's first `rows` rows down to the layout of a `rows`-row file (the tail). */
STS__PRIVATE sts_result sts__batch_shrink(sts_task_writer *w, uint64_t rows, sts_error *err) {
    sts__plan small;
    sts__shard *s = sts__cur_shard(w);
    uint8_t *buf = NULL, *hdr = NULL;
    size_t k, hbytes, bufsz = (size_t)4 << 20;
    sts_result r;
    int e = 0;
    if ((r = sts__wb_sync(w, err)) != STS_OK) return r;  /* every queued column write is in the file */
    if ((r = sts__batch_plan(w, rows, &small, err)) != STS_OK) return sts__task_fail(w, r);
    hbytes = (size_t)(8 + small.header_len);
    if (!(buf = (uint8_t *)sts__alloc(&w->c.mem, bufsz)) || !(hdr = (uint8_t *)sts__alloc(&w->c.mem, hbytes))) {
        sts__free(&w->c.mem, buf, bufsz);
        sts__plan_free(&small);
        return sts__task_fail(w, sts__nomem(err, "the tail batch"));
    }
    /* every byte moves down or stays (a shorter header, earlier offsets): copy front to back, in
       the file's layout order, so no column is overwritten before it has moved */
    for (k = 0; k < w->c.ncols && !e; k++) {
        size_t i = w->plan.order[k];
        uint64_t src = w->data_off + w->plan.begin[i], dst = hbytes + small.begin[i],
        left = rows * w->c.cols[i].row_bytes;
        while (left && src != dst && !e) {
            size_t n = left > bufsz ? bufsz : (size_t)left;
            if ((e = sts__pread_all(s->a.fd, buf, n, src)) == 0) e = sts__pwrite_all(&w->c.mem, s->a.fd, buf, n, dst);
            src += n; dst += n; left -= n;
        }
    }
    if (!e) {
        sts__plan_render(&small, w->bspecs, NULL, 0, hdr);
        w->batch_hcrc = sts__crc32c(0, hdr, hbytes);  /* the columns' bytes move, unchanged */
        e = sts__pwrite_all(&w->c.mem, s->a.fd, hdr, hbytes, 0);
    }
    if (!e) e = sts__truncate_fd(&w->c.mem, s->a.fd, hbytes + small.data_len);
    sts__free(&w->c.mem, buf, bufsz);
    sts__free(&w->c.mem, hdr, hbytes);
    sts__plan_free(&w->plan);
    w->plan = small;
    w->data_off = hbytes;
    return e ? sts__io_fail(w, e, "rewrite the tail batch of", err) : STS_OK;
}
/* Seals the open batch file with `rows` real rows (padding rows are zeros already). */
STS__PRIVATE sts_result sts__batch_end(sts_task_writer *w, uint64_t rows, int shrink, sts_error *err) {
    sts__shard *s = sts__cur_shard(w);
    size_t i;
    sts_result r;
    for (i = 0; i < w->c.ncols; i++)
        if ((r = sts__stage_flush(w, &w->c.cols[i], err)) != STS_OK) return r;
    if (shrink && (r = sts__batch_shrink(w, rows, err)) != STS_OK) return r;
    s->crc = w->batch_hcrc;  /* the file's CRC: the header's, then each column's region in layout order */
    for (i = 0; i < w->c.ncols; i++) {
        size_t ci = w->plan.order[i];
        const sts__ocol *o = &w->c.cols[ci];
        uint64_t region = w->bspecs[ci].data_size;  /* padding rows (tail pad) are the zeros past what was written */
        s->crc = sts__crc32c_combine(s->crc, sts__crc32c_zeros(o->crc, region - o->crc_len), region);
    }
    s->bytes = w->data_off + w->plan.data_len;
    s->samples = rows;
    s->tensors = w->c.ncols;
    sts__plan_free(&w->plan);
    w->batch_open = 0;
    sts__wb_queue(w, STS__WB_SEAL, s->a.fd, NULL, 0, 0, -1);  /* the I/O thread syncs when durable, then closes */
    s->a.fd = -1;
    s->state = 1;
    return STS_OK;
}
STS__PRIVATE sts_result sts__batch_cell(sts_task_writer *w, sts__ocol *o, const sts_value *v, uint64_t bytes,
                                        uint64_t off, sts_error *err) {
    sts_result r;
    if (o->stage_len && o->stage_off + o->stage_len != off && (r = sts__stage_flush(w, o, err)) != STS_OK) return r;
    if (!o->stage_len) o->stage_off = off;
    /* large: zero-copy from the caller's bytes, from the caller's thread (handing them to the I/O
       thread to overlap the checksum measured slower on 2 vCPUs: the hand-over costs more) */
    if ((o->kind == STS_VALUE_TENSOR || (o->elem == o->dtype &&
                                         (sts_dtype_bits(o->elem) == 8 || !sts__host_big_endian()))) &&
        bytes >= STS__STAGE) {
        int e;
        if ((r = sts__stage_flush(w, o, err)) != STS_OK || (r = sts__wb_sync(w, err)) != STS_OK) return r;
        if ((e = sts__pwrite_all(&w->c.mem, sts__cur_shard(w)->a.fd, v->data, bytes, off)) != 0)
            return sts__io_fail(w, e, "write", err);
        o->crc = sts__crc32c(o->crc, v->data, (size_t)bytes);
        o->crc_len += bytes;
        o->stage_off = off + bytes;
        return STS_OK;
    }
    {
        uint64_t from = 0, total = o->kind == STS_VALUE_ARRAY ? v->size : bytes;
        size_t esz = o->kind == STS_VALUE_ARRAY ? sts_dtype_bits(o->dtype) / 8 : 1;
        while (from < total) {  /* elements (arrays) or bytes (tensors), a stage at a time */
            size_t room, n, left, edge;
            if (!o->stage) {
                if ((o->stage_id = sts__stage_take(w)) < 0)
                    return sts__task_fail(w, sts__nomem(err, "a column buffer"));
                o->stage = w->stages[o->stage_id].p;
            }
            /* the stage ends where the file's next STS__FOLIO block begins: each full stage is one
               aligned 2 MiB write, the first of a column's region a shorter one (an element that
               straddles the boundary, in a column at an offset no multiple of its size, moves it) */
            left = STS__STAGE - o->stage_len;
            edge = (size_t)(STS__FOLIO - (o->stage_off + o->stage_len) % STS__FOLIO);
            room = o->stage_len && edge == STS__FOLIO ? 0 : (edge < left && edge >= esz ? edge : left) / esz;
            if (!room) { if ((r = sts__stage_flush(w, o, err)) != STS_OK) return r; continue; }
            n = total - from < room ? (size_t)(total - from) : room;
            if (o->kind == STS_VALUE_ARRAY) r = sts__cell_encode(w, o, v, from, n, o->stage + o->stage_len, err);
            else { memcpy(o->stage + o->stage_len, (const uint8_t *)v->data + from, n); r = STS_OK; }
            if (r != STS_OK) return sts__task_fail(w, r);
            o->stage_len += n * esz;
            from += n;
        }
    }
    return STS_OK;
}
STS__PRIVATE sts_result sts__batch_row(sts_task_writer *w, const sts_value *row, sts_error *err) {
    size_t i;
    sts_result r;
    uint64_t bytes;
    for (i = 0; i < w->c.ncols; i++)  /* check every cell first: a rejected row changes nothing */
        if ((r = sts__cell_check(w, &w->c.cols[i], &row[w->c.cols[i].in], &bytes, err)) != STS_OK) return r;
    if ((r = sts__cols_fix(w, row, w->batch_open ? NULL : sts__batch_begin, err)) != STS_OK) return r;
    for (i = 0; i < w->c.ncols; i++) {
        sts__ocol *o = &w->c.cols[i];
        uint64_t off = w->data_off + w->plan.begin[i] + w->batch_rows * o->row_bytes;
        if ((r = sts__batch_cell(w, o, &row[o->in], o->row_bytes, off, err)) != STS_OK) return r;
    }
    w->batch_rows++;
    w->rows++;
    if (w->batch_rows == w->c.batch_size) return sts__batch_end(w, w->batch_rows, 0, err);
    return STS_OK;
}

/* >>kv ---- KV mode ---- */
/* Copies a name's n bytes inline (names are short: a libc call costs more than the copy): words,
   the last one overlapping, from 8 bytes; else two overlapping halves. Reads and writes stay
   inside [0, n). */
STS__INLINE void sts__kv_copy(void *dst, const void *src, size_t n) {
    uint8_t *d = (uint8_t *)dst;
    const uint8_t *q = (const uint8_t *)src;
    size_t i = 0;
    uint64_t t;
    if (n >= 8) {
        for (; i + 8 < n; i += 8) { memcpy(&t, q + i, 8); memcpy(d + i, &t, 8); }
        memcpy(&t, q + n - 8, 8);
        memcpy(d + n - 8, &t, 8);
    } else if (n >= 4) {  /* two overlapping halves, likewise below */
        uint32_t h;
        memcpy(&h, q, 4); memcpy(d, &h, 4);
        memcpy(&h, q + n - 4, 4); memcpy(d + n - 4, &h, 4);
    } else if (n >= 2) {
        uint16_t h;
        memcpy(&h, q, 2); memcpy(d, &h, 2);
        memcpy(&h, q + n - 2, 2); memcpy(d + n - 2, &h, 2);
    } else if (n) d[0] = q[0];
}
/* Upper bound of the shard's file size with `n` entries, `fixed` header bytes and `data` bytes:
   every offset is counted with as many digits as the data size has. Exact size <= bound. */
STS__PRIVATE uint64_t sts__shard_bound(uint64_t n, uint64_t fixed, uint64_t data, uint64_t *header) {
    uint64_t h = 2 + fixed + n * 2 * sts__digits(data) + 7;
    *header = h;
    return 8 + h + data;
}
/* kv_layout = arrival, the open shard streaming: `len` bytes of chunk c from `p` lent to the I/O
   thread, to file offset `off`; the chunk comes back once its `last` piece is written. `digest`:
   the bytes are the next of the data's CRC-32C, which the I/O thread takes in the file's order (a
   whole chunk's with the caller's CRC, which in-place replacements keep up to date). */
STS__PRIVATE void sts__kv_piece(sts_task_writer *w, sts__dchunk *c, const uint8_t *p, uint64_t len, uint64_t off,
                                int last, int digest) {
    int whole = p == c->p && len == c->used;
    sts__wbitem it;
    memset(&it, 0, sizeof it);
    it.kind = STS__WB_PWRITE;
    it.fd = w->shards[w->nshards - 1].a.fd;
    it.p = p;
    it.len = len;
    it.off = off;
    it.token = last ? (int32_t)(c - w->chunks) : -1;
    it.durable = w->c.durable;
    it.digest = digest;
    it.crc = digest && whole && c->crc_on ? 1 + (uint64_t)c->crc : 0;  /* the caller's, where it has it */
    it.shard = (uint32_t)(w->nshards - 1);
    sts__wb_put(&w->wb, &it);
}
/* A filled chunk of the streaming shard, whole, to its place behind the header's room. */
STS__PRIVATE void sts__kv_send(sts_task_writer *w, sts__dchunk *c) {
    if (c->state != STS__CHUNK_OPEN || !c->used) return;
    c->state = STS__CHUNK_LENT;
    sts__kv_piece(w, c, c->p, c->used, 8 + w->room + c->at, 1, 1);
}
/* The streaming shard's oldest chunk not yet sent, but `skip`: the chunk index, or (size_t)-1. */
STS__PRIVATE size_t sts__kv_oldest(const sts_task_writer *w, size_t skip) {
    size_t k, best = (size_t)-1;
    for (k = 0; k < w->nchunks; k++) {
        const sts__dchunk *c = &w->chunks[k];
        if (k != skip && c->state == STS__CHUNK_OPEN && c->used && (best == (size_t)-1 || c->at < w->chunks[best].at))
            best = k;
    }
    return best;
}
/* kv_layout = arrival: the streaming shard's filled chunks (but `skip`, the one still filling) go
   out, oldest first, while the bytes held back (that one's included) still cover the header's room
   beyond the header so far: a seal at any later row can then fill the room it leaves with the
   shard's last tensors, which are still in memory (sts__kv_stream_seal). As the header grows, less
   is held; a shard of 1 KiB rows at a 300 MiB target holds ~21 MiB as it begins. */
STS__PRIVATE void sts__kv_send_held(sts_task_writer *w, size_t skip) {
    uint64_t json = 1 + w->isum, need = w->room > json ? w->room - json : 0, held = 0;
    size_t k;
    for (k = 0; k < w->nchunks; k++)
        if (w->chunks[k].state == STS__CHUNK_OPEN) held += w->chunks[k].used;
    while ((k = sts__kv_oldest(w, skip)) != (size_t)-1 && held - w->chunks[k].used >= need) {
        held -= w->chunks[k].used;
        sts__kv_send(w, &w->chunks[k]);
    }
    /* asked again once the data has grown by what the oldest still lacks (sooner as the header
       grows), or when a chunk fills */
    w->held_at = k == (size_t)-1 ? (uint64_t)-1 : w->shard_data + (need - (held - w->chunks[k].used));
}
/* A chunk opens: where its bytes start in the shard's data, and who takes their CRC-32C. The I/O
   thread does (a DIGEST item, once the chunk is full) while it has nothing to write; while a
   sealed shard is still going out it has that, and the caller takes the CRC of each cell it
   copies in, from its cache. 1M rows of 1 KiB on the 16-core machine: the I/O thread's CRC was a
   fifth of its time, and it set the pace; this took the task from 0.53 to 0.43 s (medians of 3).
   A shard that goes out alone gains nothing. With kv_layout = arrival the I/O thread writes every
   chunk as it fills: the caller takes them all. */
STS__PRIVATE void sts__kv_chunk_open(sts_task_writer *w, sts__dchunk *c) {
    size_t i;
    c->crc = 0;
    c->crc_on = 0;
    c->at = w->shard_data;
    if (!w->wb.threaded || w->unsorted) return;
    if (w->c.arrival) { c->crc_on = 1; return; }
    for (i = 0; i < w->nchunks && !c->crc_on; i++) c->crc_on = w->chunks[i].state == STS__CHUNK_LENT;
}
/* Room for a cell in the open shard's chunks. Chunks lent to the I/O thread come back as it writes
   them; while a sealed shard is being written, new chunks are allocated only up to the first
   shard's footprint (then the caller waits for chunks to come back), so memory stays near one
   shard's worth. */
STS__PRIVATE void *sts__kv_data(sts_task_writer *w, uint64_t bytes, sts_error *err) {
    sts__dchunk *c;
    size_t i, cap;
    if (bytes > (uint64_t)(size_t)-1) { sts__nomem(err, "a cell"); return NULL; }
    if (w->chunk_at != (size_t)-1) {
        c = &w->chunks[w->chunk_at];
        if (c->cap - c->used >= bytes) { c->used += (size_t)bytes; return c->p + c->used - (size_t)bytes; }
        /* the chunk is full, and no byte of it changes before it is written: in a shard in order, that
           write is the chunk whole, so the I/O thread may take its CRC now (sts__kv_digest), or
           keep the one the caller took */
        if (!w->unsorted && w->wb.threaded && c->used && !w->c.arrival)  /* arrival: the CRC goes with the write */
            sts__wb_queue(w, STS__WB_DIGEST, -1, c->p, c->used, c->crc_on ? (uint64_t)c->crc + 1 : 0, -1);
        if (w->streaming) sts__kv_send_held(w, (size_t)-1);
    }
    cap = bytes > STS__CHUNK ? (size_t)bytes : STS__CHUNK;
    for (;;) {
        int32_t t;
        while ((t = sts__wb_take(&w->wb, 0)) >= 0) w->chunks[t].state = STS__CHUNK_FREE;
        for (i = 0; i < w->nchunks; i++) {
            c = &w->chunks[i];
            if (c->state == STS__CHUNK_FREE && c->cap >= bytes) {
                c->state = STS__CHUNK_OPEN;
                c->seq = w->nents;
                c->used = (size_t)bytes;
                w->chunk_at = i;
                sts__kv_chunk_open(w, c);
                return c->p;
            }
        }
        if (!w->chunk_budget || w->chunk_bytes + cap <= w->chunk_budget || (t = sts__wb_take(&w->wb, 1)) < 0) break;
        w->chunks[t].state = STS__CHUNK_FREE;
    }
    if (w->nchunks == w->chunks_cap && !sts__grow(&w->c.mem, (void **)&w->chunks, &w->chunks_cap, w->nchunks + 1,
                                                  sizeof *w->chunks)) {
        sts__nomem(err, "the shard buffer");
        return NULL;
    }
    c = &w->chunks[w->nchunks];
    c->cap = cap;
    /* A shard's data is written once into fresh memory: with malloc, the chunk starts on a 2 MiB
       boundary of a block 2 MiB larger and asks for huge pages, so filling it takes one page fault
       per 2 MiB, not per 4 KiB (KV rows of 1 KiB on the 2-vCPU VM: ~13 us a fault, 19% of the
       time). The slack is address space only. A caller's allocator gets exactly cap bytes. */
    c->block_size = cap;
    if (!w->c.mem.a.alloc && cap <= (size_t)-1 - STS__FOLIO) c->block_size = cap + (size_t)STS__FOLIO;
    if (!(c->block = (uint8_t *)sts__alloc(&w->c.mem, c->block_size))) {
        sts__nomem(err, "the shard buffer");
        return NULL;
    }
    c->p = c->block;
    if (c->block_size != cap) {
        c->p = c->block + (size_t)((STS__FOLIO - (uintptr_t)c->block % STS__FOLIO) % STS__FOLIO);
        sts__advise_huge(c->p, cap);
    }
    c->used = (size_t)bytes;
    c->state = STS__CHUNK_OPEN;
    c->seq = w->nents;
    w->chunk_bytes += cap;
    w->chunk_at = w->nchunks++;
    if (!sts__wb_reserve(&w->wb, w->nchunks)) {  /* every chunk's token can come back at once */
        sts__nomem(err, "the write queue");
        return NULL;
    }
    sts__kv_chunk_open(w, c);
    return c->p;
}
/* A table that grew to `bytes` from `was`: its new pages faulted in by the I/O thread while the
   caller fills the start of them (a KV task's key set and names, its shard's entries: ~18.7k page faults on
   the caller's thread for 1M rows otherwise). Libc's memory, with an I/O thread, large tables. */
STS__PRIVATE void sts__kv_ahead(sts_task_writer *w, const void *p, size_t was, size_t bytes) {
    if (!w->wb.threaded || w->c.mem.a.alloc || bytes - was < ((size_t)256 << 10)) return;
    sts__wb_queue(w, STS__WB_POPULATE, -1, (const uint8_t *)p + was, bytes - was, 0, -1);
}
/* A chunk of the names arena: cap bytes after its record, faulted in by the I/O thread (where
   sts__kv_ahead does that). */
STS__PRIVATE sts__chunk *sts__kv_names_chunk(sts_task_writer *w, size_t cap) {
    sts__chunk *c = (sts__chunk *)sts__alloc(&w->c.mem, sizeof(sts__chunk) + cap);
    if (!c) return NULL;
    c->next = NULL;
    c->size = sizeof(sts__chunk) + cap;
    sts__kv_ahead(w, c, 0, c->size);
    return c;
}
#define STS__NAMES_CHUNK ((size_t)1 << 20)
/* Room for a row's names (`need` bytes, NULs included) at the end of the names arena: they are
   built there (sts__kv_names) and kept where they are when the row is taken (sts__kv_append);
   the current chunk's tail is left behind when too short. 0 when out of memory (nothing changed). */
STS__PRIVATE int sts__kv_names_room(sts_task_writer *w, size_t need) {
    size_t cap = need > STS__NAMES_CHUNK ? need : STS__NAMES_CHUNK;
    sts__chunk *c = w->names_spare;
    if (c && cap == STS__NAMES_CHUNK) w->names_spare = NULL;
    else if (!(c = sts__kv_names_chunk(w, cap))) return 0;
    c->next = w->names;
    w->names = c;
    w->names_left = cap;
    /* the next chunk now, so that the I/O thread has faulted it in by the time this one is full
       (filled at once, the new chunk's pages fault on the caller's thread first: 2.2k page faults
       there for 1M rows); only where sts__kv_ahead works, and a hint: none is no error */
    if (!w->names_spare && w->wb.threaded && !w->c.mem.a.alloc)
        w->names_spare = sts__kv_names_chunk(w, STS__NAMES_CHUNK);
    return 1;
}
STS__INLINE char *sts__kv_names_end(const sts_task_writer *w) {  /* the arena's first free byte */
    return (char *)(w->names + 1) + (w->names->size - sizeof(sts__chunk) - w->names_left);
}
/* 8-aligned */
STS__PRIVATE const uint64_t *sts__kv_shape_store(sts_task_writer *w, const uint64_t *dims, uint32_t rank) {
    sts__chunk *c;
    uint64_t *p;
    size_t need = (rank ? rank : 1) * sizeof(uint64_t);
    if (w->shapes_left < need) {
        size_t cap = need > 65536 ? need : 65536;
        if (!(c = (sts__chunk *)sts__alloc(&w->c.mem, sizeof(sts__chunk) + cap))) return NULL;
        c->next = w->shapes;
        c->size = sizeof(sts__chunk) + cap;
        w->shapes = c;
        w->shapes_left = cap;
    }
    p = (uint64_t *)(void *)((char *)(w->shapes + 1) + (w->shapes->size - sizeof(sts__chunk) - w->shapes_left));
    if (rank) memcpy(p, dims, rank * sizeof *p);
    w->shapes_left -= need;
    return p;
}
STS__PRIVATE void sts__kv_shapes_free(sts_task_writer *w) {
    sts__chunk *c;
    for (c = w->shapes; c;) { sts__chunk *next = c->next; sts__free(&w->c.mem, c, c->size); c = next; }
    w->shapes = NULL;
    w->shapes_left = 0;
}
STS__PRIVATE sts__names sts__key_names(sts_task_writer *w) {
    sts__names k;
    k.items = w->keys;
    k.stride = sizeof *w->keys;
    k.ptr_off = offsetof(sts__key, name);
    k.len_off = offsetof(sts__key, len);
    k.hashes = &w->keys[0].hash; k.hash_stride = sizeof *w->keys;
    return k;
}
/* Room for `need` entries in ents and its parallel arrays (growing by a quarter: the table is most
   of the writer's memory beside the data, and large blocks grow in place or by remapping). */
STS__PRIVATE int sts__kv_ents_reserve(sts_task_writer *w, size_t need) {
    size_t cap = w->ents_cap < 1024 ? 1024 : w->ents_cap + w->ents_cap / 4, bytes;
    void *p;
    if (need <= w->ents_room) return 1;
    if (cap < need) cap = need;
    if (w->ents_cap < cap) {
        if (!sts__mulsz(cap, sizeof *w->ents, &bytes) || !(p = sts__realloc(&w->c.mem, w->ents,
                w->ents_cap * sizeof *w->ents, bytes))) return 0;
        w->ents = (sts_tensor_spec *)p;
        sts__kv_ahead(w, p, w->ents_cap * sizeof *w->ents, bytes);
        w->ents_cap = cap;
    }
    if (w->efix_cap < cap) {
        if (!sts__mulsz(cap, sizeof *w->efix, &bytes) || !(p = sts__realloc(&w->c.mem, w->efix,
                w->efix_cap * sizeof *w->efix, bytes))) return 0;
        w->efix = (uint32_t *)p;
        sts__kv_ahead(w, p, w->efix_cap * sizeof *w->efix, bytes);
        w->efix_cap = cap;
    }
    if (w->ord_cap < cap) {
        if (!sts__mulsz(cap, sizeof *w->ord, &bytes) || !(p = sts__realloc(&w->c.mem, w->ord,
                w->ord_cap * sizeof *w->ord, bytes))) return 0;
        w->ord = (size_t *)p;
        sts__kv_ahead(w, p, w->ord_cap * sizeof *w->ord, bytes);
        w->ord_cap = cap;
    }
    if (w->echk_cap < cap) {
        if (!sts__mulsz(cap, sizeof *w->echk, &bytes) || !(p = sts__realloc(&w->c.mem, w->echk,
                w->echk_cap * sizeof *w->echk, bytes))) return 0;
        w->echk = (uint32_t *)p;
        sts__kv_ahead(w, p, w->echk_cap * sizeof *w->echk, bytes);
        w->echk_cap = cap;
    }
    w->ents_room = cap;  /* every table holds cap entries now */
    return 1;
}
/* When every dtype's entries of the open shard came in name order (checked from where the last
   call stopped, one comparison an entry), the layout order is the dtypes' runs one after another:
   filled by counting, with no comparison across dtypes. 0 when they did not. */
STS__PRIVATE int sts__kv_grouped(sts_task_writer *w) {
    size_t i, n = w->nents, at[STS_DTYPE_COUNT], pos = 0;
    int d;
    for (i = w->gdone; i < n && !w->ungrouped; i++) {
        const sts_tensor_spec *e = &w->ents[i];
        size_t *last = &w->glast[e->dtype];
        if (*last != (size_t)-1 && !sts__spec_less(&w->ents[*last], e)) w->ungrouped = 1;
        *last = i;
        w->gcount[e->dtype]++;
    }
    w->gdone = i;
    if (w->ungrouped) return 0;
    for (d = STS_DTYPE_COUNT - 1; d >= 0; d--) {  /* dtype rank descending */
        at[d] = pos;
        pos += w->gcount[d];
    }
    for (i = 0; i < n; i++) w->ord[at[w->ents[i].dtype]++] = i;
    w->nord = n;
    return 1;
}
/* Brings the open shard's layout order up to date: by dtype when each dtype's entries came in
   order (sts__kv_grouped), else the entries added since the last count are sorted among
   themselves and merged in (a binary search each, then block copies), so a shard is sorted about
   once however often its exact size is counted. 0 when out of memory. */
STS__PRIVATE int sts__kv_order(sts_task_writer *w) {
    size_t n = w->nents, old = w->nord, i, *m, a, b, o, bytes;
    sts__spec_order ctx;
    if (old == n) return 1;
    if (sts__kv_grouped(w)) return 1;
    for (i = old; i < n; i++) w->ord[i] = i;
    if (!sts__layout_sort(&w->c.mem, w->ents, w->ord + old, n - old)) return 0;
    ctx.specs = w->ents;
    if (old && sts__by_layout(&ctx, w->ord[old], w->ord[old - 1])) {  /* the new ones interleave: merge */
        bytes = n * sizeof *m;
        if (!(m = (size_t *)sts__alloc(&w->c.mem, bytes))) return 0;
        for (a = 0, b = old, o = 0; b < n; b++) {
            size_t lo = a, hi = old;
            while (lo < hi) {
                size_t mid = lo + (hi - lo) / 2;
                if (sts__by_layout(&ctx, w->ord[mid], w->ord[b])) lo = mid + 1; else hi = mid;
            }
            memcpy(m + o, w->ord + a, (lo - a) * sizeof *m);
            o += lo - a;
            a = lo;
            m[o++] = w->ord[b];
        }
        memcpy(m + o, w->ord + a, (old - a) * sizeof *m);
        memcpy(w->ord, m, bytes);
        sts__free(&w->c.mem, m, bytes);
    }
    w->nord = n;
    return 1;
}
/* The exact file size of a shard holding the first n entries of the layout order (n = w->nord:
   the open shard, its order up to date through sts__kv_order; 0: none, the row alone) and this
   row's tensors (w->rspec): each goes to its place in the layout, and an entry it replaces
   (lastWin) drops out of its own place. One pass over the layout order, with the row's few events
   merged in; nothing changes. */
STS__PRIVATE int sts__kv_event_less(const sts_task_writer *w, size_t a, size_t b) {
    size_t nc = w->c.ncols;
    if (w->rpos[a] != w->rpos[b]) return w->rpos[a] < w->rpos[b];
    if ((a >= nc) != (b >= nc)) return a < nc;  /* inserts before the entry at that place */
    return a < nc && sts__spec_less(&w->rspec[a], &w->rspec[b]);
}
STS__PRIVATE uint64_t sts__kv_exact(sts_task_writer *w, size_t n, uint64_t *header) {
    size_t nc = w->c.ncols, i, j, p, cnt = 0, nev = 0, ev = 0;
    uint64_t json = 2, cursor = 0;
    for (i = 0; i < 2 * nc; i++) {  /* events: insert tensor i at rpos[i]; drop entry rrep[i - nc] at rpos[i] */
        const sts_tensor_spec *key = i < nc                       ? &w->rspec[i]
                                     : w->rrep[i - nc] != (size_t)-1 ? &w->ents[w->rrep[i - nc]]
                                                                     : NULL;
        size_t lo = 0, hi = n;
        if (!key) continue;
        while (lo < hi) {
            size_t mid = lo + (hi - lo) / 2;
            if (sts__spec_less(&w->ents[w->ord[mid]], key)) lo = mid + 1; else hi = mid;
        }
        w->rpos[i] = lo;
        for (j = nev; j > 0 && sts__kv_event_less(w, i, w->rord[j - 1]); j--) w->rord[j] = w->rord[j - 1];
        w->rord[j] = i;
        nev++;
    }
#define STS__EMIT(fix, size) \
    do { json += (fix) + sts__digits(cursor); cursor += (size); json += sts__digits(cursor); cnt++; } while (0)
    for (p = 0; p <= n; p++) {
        int drop = 0;
        for (; ev < nev && w->rpos[w->rord[ev]] == p; ev++) {
            i = w->rord[ev];
            if (i < nc) STS__EMIT(w->rfix[i], w->rspec[i].data_size);
            else drop = 1;
        }
        if (p == n) break;
        if (!drop) STS__EMIT(w->efix[w->ord[p]], w->ents[w->ord[p]].data_size);
    }
#undef STS__EMIT
    if (cnt) json -= 1;
    *header = (json + 7) / 8 * 8;
    return 8 + *header + cursor;
}
/* The open shard's header: the 8-byte length and the padded JSON, exactly the reference writer's
   bytes, rendered in pieces of at most 1 MiB into the file sink, with their CRC-32C. Entries go in
   `ord` order (NULL: as stored, the shard in layout order). A run of entries with one dtype and
   shape (the usual KV shard) renders the text between name and offsets once; a name that needs no
   escaping (its fixed bytes tell) is copied; each begin offset is the previous end's digits. */
STS__INLINE uint64_t sts__kv_be64(const uint8_t *p) {
    return (uint64_t)p[0] << 56 | (uint64_t)p[1] << 48 | (uint64_t)p[2] << 40 | (uint64_t)p[3] << 32 |
           (uint64_t)p[4] << 24 | (uint64_t)p[5] << 16 | (uint64_t)p[6] << 8 | p[7];
}
STS__INLINE void sts__kv_put_be64(uint8_t *p, uint64_t v) {
    p[0] = (uint8_t)(v >> 56); p[1] = (uint8_t)(v >> 48); p[2] = (uint8_t)(v >> 40); p[3] = (uint8_t)(v >> 32);
    p[4] = (uint8_t)(v >> 24); p[5] = (uint8_t)(v >> 16); p[6] = (uint8_t)(v >> 8); p[7] = (uint8_t)v;
}
/* run[0..24) holds a number's rl digits right-aligned, '0's before them; sd the same for one of
   sl digits, yd its last eight as digit values in a big-endian word. Adds the second to the first
   in place and returns the digits of the sum. Up to eight digits, one word add: a byte reaching 10
   carries into the next (each byte starts at 246 more), and the bytes that did not get their 246
   back; longer ones digit by digit. */
STS__INLINE size_t sts__kv_dec_add(uint8_t *run, size_t rl, const uint8_t *sd, size_t sl, uint64_t yd) {
    size_t j = 24;
    unsigned carry = 0, t;
    if (sl <= 8) {
        uint64_t a = sts__kv_be64(run + 16) - 0x3030303030303030ull + 0xf6f6f6f6f6f6f6f6ull, s8 = a + yd;
        uint64_t m = (s8 >> 7) & 0x0101010101010101ull;  /* bytes that did not reach 10 */
        sts__kv_put_be64(run + 16, s8 - m * 0xf6 + 0x3030303030303030ull);
        carry = s8 < a;
        j = 16;
    } else while (j > 24 - sl) {
        j--;
        t = (unsigned)(run[j] - '0') + (unsigned)(sd[j] - '0') + carry;
        carry = t >= 10;
        run[j] = (uint8_t)('0' + t - 10 * carry);
    }
    while (carry) {
        j--;
        t = (unsigned)(run[j] - '0') + 1;
        carry = t >= 10;
        run[j] = (uint8_t)('0' + t - 10 * carry);
    }
    if (sl > rl) rl = sl;
    if (rl < 20 && run[23 - rl] != '0') rl++;  /* a carry past the longer of the two */
    return rl;
}
#define STS__KV_MID 256  /* the longest ":{"dtype":..."data_offsets":[" text kept for reuse */
/* A header rendered in place (sts__kv_header's `to`) needs this much room past its end: an entry's
   fixed-size copies (64 bytes of the dtype and shape text, 24 of an offset) may reach beyond it */
#define STS__KV_SLACK 128
STS__PRIVATE uint8_t *sts__kv_mid_put(uint8_t *q, const sts_tensor_spec *e) {
    const char *dn = sts__dtype_names[e->dtype];
    size_t dl = strlen(dn);
    uint32_t d;
    memcpy(q, ":{\"dtype\":\"", 11); q += 11;
    memcpy(q, dn, dl); q += dl;
    memcpy(q, "\",\"shape\":[", 11); q += 11;
    for (d = 0; d < e->rank; d++) { if (d) *q++ = ','; q = sts__u64_put(q, e->shape[d]); }
    memcpy(q, "],\"data_offsets\":[", 18);
    return q + 18;
}
/* Renders the open shard's header (N = hlen: the JSON, `json` bytes, then spaces) in `ord`'s order
   (NULL: the entries' own), through the sink in 1 MiB pieces, or whole into `to`. Offsets run on from
   `base` and start again at 0 with the entry at position `wrap` ((size_t)-1: never): an arrival
   shard whose last tensors' data went in front of the rest (sts__kv_stream_seal). */
STS__PRIVATE sts_result sts__kv_header(sts_task_writer *w, const size_t *ord, uint64_t json, uint64_t hlen,
                                       uint8_t *to, uint32_t *crc, uint64_t base, size_t wrap, sts_error *err) {
    uint64_t total = 8 + hlen, sent = 0, midfix = 0, size = 0, yd = 0;
    size_t cap = total < ((uint64_t)1 << 20) ? (size_t)total + 128 : (size_t)1 << 20, i, midlen = 0, rl = 1, sl = 1;
    /* the offset so far and the last data size in decimal, right-aligned at [24] on '0's: the end
       offset is the begin plus the size, digit by digit (24 bytes copied, rl kept) */
    uint8_t *buf, *o, mid[STS__KV_MID], run[48], sd[48];
    const uint64_t *mshape = NULL;
    uint32_t mrank = 0;
    sts_dtype mdt = STS_DTYPE_COUNT;  /* none yet */
    sts_result r = STS_OK;
    (void)json;  /* checked by STS_ASSERT only */
    if (to) cap = (size_t)total + STS__KV_SLACK;  /* rendered in place: `to` has that much room */
    else if (w->hbuf_cap < cap) {  /* kept from shard to shard: its pages are faulted in once */
        sts__free(&w->c.mem, w->hbuf, w->hbuf_cap);
        w->hbuf_cap = 0;
        if (!(w->hbuf = (uint8_t *)sts__alloc(&w->c.mem, cap))) return sts__nomem(err, "the header");
        w->hbuf_cap = cap;
    }
    buf = to ? to : w->hbuf;
    cap = to ? cap : w->hbuf_cap;
    *crc = 0;
    memset(mid, 0, sizeof mid);
    memset(run, '0', sizeof run);
    memset(sd, '0', sizeof sd);
    if (base) {
        uint8_t tmp[24];
        rl = (size_t)(sts__u64_put(tmp, base) - tmp);
        memcpy(run + 24 - rl, tmp, rl);
    }
#define STS__KV_OUT() do {  /* a piece to the sink (with `to`: only once, the whole header, in place) */ \
        *crc = sts__crc32c(*crc, buf, (size_t)(o - buf)); \
        if (!to && ((r = sts__fdsink_write(w->sink, buf, (size_t)(o - buf))) != STS_OK || \
                    (r = sts__fdsink_flush(w->sink)) != STS_OK)) goto out; \
        sent += (uint64_t)(o - buf); \
        o = buf; \
    } while (0)
    o = buf;
    sts__st64(o, hlen);
    o += 8;
    *o++ = '{';
    for (i = 0; i < w->nents; i++) {
        const sts_tensor_spec *e = &w->ents[ord ? ord[i] : i];
        size_t nl = e->name_len;
        uint64_t need = to ? 0 : 6 * (uint64_t)nl + 21 * (uint64_t)e->rank + 160, esc;  /* `to`: room enough */
        if ((uint64_t)(cap - (size_t)(o - buf)) < need) {
            STS__KV_OUT();
            if (need > cap) {  /* one entry larger than a piece (a huge name or rank): a buffer its size */
                sts__free(&w->c.mem, buf, cap);
                w->hbuf = NULL;
                w->hbuf_cap = 0;
                cap = (size_t)need;
                if (!(o = buf = (uint8_t *)sts__alloc(&w->c.mem, cap))) {
                    r = sts__nomem(err, "the header");
                    goto out;
                }
                w->hbuf = buf;
                w->hbuf_cap = cap;
            }
        }
        if (e->dtype != mdt || e->rank != mrank ||
            (e->rank && e->shape != mshape && memcmp(e->shape, mshape, e->rank * sizeof *mshape) != 0)) {
            uint64_t ml = 40 + strlen(sts__dtype_names[e->dtype]);  /* the text between name and offsets */
            uint32_t d;
            for (d = 0; d < e->rank; d++) ml += sts__digits(e->shape[d]) + (d ? 1 : 0);
            midlen = (size_t)ml;
            midfix = ml + 4;  /* with the comma before, the one between the offsets and "]}" */
            mdt = STS_DTYPE_COUNT;
            if (ml <= STS__KV_MID) { sts__kv_mid_put(mid, e); mdt = e->dtype; mrank = e->rank; mshape = e->shape; }
        }
        if (i) *o++ = ',';
        if (i == wrap) { memset(run, '0', sizeof run); rl = 1; }
        esc = w->efix[ord ? ord[i] : i] - midfix;  /* the name's bytes in the header, quotes included */
        if (esc == nl + 2) { *o++ = '"'; sts__kv_copy(o, e->name, nl); o += nl; *o++ = '"'; }
        else o = sts__esc_put(o, e->name, nl);
        if (mdt != STS_DTYPE_COUNT) {  /* short: one fixed-size copy (the room asked for above covers it) */
            if (midlen <= 64) memcpy(o, mid, 64);
            else memcpy(o, mid, midlen);
            o += midlen;
        }
        else o = sts__kv_mid_put(o, e);
        memcpy(o, run + 24 - rl, 24);  /* begin: the previous end */
        o += rl;
        *o++ = ',';
        if (e->data_size) {
            if (e->data_size != size) {  /* its digits, right-aligned */
                uint8_t tmp[24];
                size = e->data_size;
                sl = (size_t)(sts__u64_put(tmp, size) - tmp);
                memset(sd, '0', 24);
                memcpy(sd + 24 - sl, tmp, sl);
                yd = sts__kv_be64(sd + 16) - 0x3030303030303030ull;
            }
            rl = sts__kv_dec_add(run, rl, sd, sl, yd);
        }
        memcpy(o, run + 24 - rl, 24);
        o += rl;
        *o++ = ']';
        *o++ = '}';
    }
    *o++ = '}';
    STS_ASSERT(sent + (uint64_t)(o - buf) - 8 == json);
    while (sent + (uint64_t)(o - buf) < total) {  /* spaces: to 8 bytes, or the room (kv_layout = arrival) */
        uint64_t n = total - sent - (uint64_t)(o - buf);
        size_t free_ = cap - (size_t)(o - buf);
        if (!free_) { STS__KV_OUT(); continue; }
        if (n > free_) n = free_;
        memset(o, ' ', (size_t)n);
        o += n;
    }
    STS__KV_OUT();
#undef STS__KV_OUT
out:
    if (r != STS_OK) {
        if (!to && w->sink->err_no) sts__fail_errno(err, w->sink->err_no, "write", w->shards[w->nshards - 1].path);
        else if (r != STS_ERR_NOMEM)
            sts__fail_code(err, r, STS_RULE_IO, sent, "the sink failed writing the header (%s)", sts_result_name(r));
    }
    return r;
}
/* The file sink on a shard's file (room for every chunk's token is reserved as chunks are made,
   sts__kv_data). */
STS__PRIVATE sts_result sts__kv_sink(sts_task_writer *w, const sts__shard *s, sts_error *err) {
    if (!w->sink && !(w->sink = (sts__fdsink *)sts__alloc(&w->c.mem, sizeof *w->sink)))
        return sts__nomem(err, "the file sink");
    w->sink->mem = &w->c.mem; w->sink->fd = s->a.fd; w->sink->err_no = 0; w->sink->n = 0; w->sink->pending = 0;
    return STS_OK;
}
/* The shard's data and header are queued or written: its seal is queued (the I/O thread closes the
   file, and its digest hook keeps the data's CRC-32C, joined to the header's by sts__wb_sync), and
   the writer starts the next shard. */
STS__PRIVATE void sts__kv_sealed(sts_task_writer *w, sts__shard *s, uint64_t hlen, uint32_t hcrc) {
    sts__wbitem it;
    memset(&it, 0, sizeof it);
    it.kind = STS__WB_SEAL; it.fd = s->a.fd; it.token = -1; it.durable = w->c.durable; it.digest = 1;
    it.shard = (uint32_t)(w->nshards - 1);
    sts__wb_put(&w->wb, &it);
    s->a.fd = -1;  /* the I/O thread closes it */
    s->bytes = 8 + hlen + w->shard_data;
    s->crc = 0;  /* the header's and the data's CRC joined by sts__wb_sync once the shard is out */
    w->dig_hcrc = hcrc;
    w->dig_data = w->shard_data;
    w->dig_shard = w->nshards - 1;
    s->samples = w->shard_rows;
    s->tensors = w->nents;
    s->state = 1;
    if (!w->chunk_budget) w->chunk_budget = w->chunk_bytes;  /* later shards reuse the first one's chunks */
    w->nents = w->nord = 0;
    w->shard_rows = w->shard_data = w->shard_fixed = 0;
    w->exact = w->min_size = w->empties = 0;
    w->unsorted = 0;
    w->isum = 0;
    w->ungrouped = 0;
    w->gdone = 0;
    memset(w->glast, 0xff, sizeof w->glast);
    memset(w->gcount, 0, sizeof w->gcount);
    w->chunk_at = (size_t)-1;
    sts__kv_shapes_free(w);
}
/* kv_layout = arrival: the open shard's chunks not yet sent, but `skip` (the one still filling),
   to the shard's file in the order they opened. */
STS__PRIVATE void sts__kv_send_all(sts_task_writer *w, size_t skip) {
    size_t k;
    while ((k = sts__kv_oldest(w, skip)) != (size_t)-1) sts__kv_send(w, &w->chunks[k]);
}
/* kv_layout = arrival: the open shard, an eighth of the target or two chunks, starts going out. Its
   header's room is what a full shard would need at the header bytes per data byte seen so far,
   1/32 more, and with a target of 1 MiB or more a page more and its data on a page boundary; the
   roll rule keeps the header inside it (sts__kv_fits). What the room needs held back stays
   (sts__kv_send_held). */
STS__PRIVATE sts_result sts__kv_stream_start(sts_task_writer *w, sts_error *err) {
    sts__shard *s;
    sts_result r;
    uint64_t json = 1 + w->isum, have = (json + 7) / 8 * 8, avail = w->c.target - 8, room;
    if ((r = sts__wb_sync(w, err)) != STS_OK) return r;  /* the previous shard is out */
    if ((r = sts__shard_open(w, &s, err)) != STS_OK) return sts__task_fail(w, r);
    room = w->shard_data ? (uint64_t)((double)avail * (double)json / (double)(json + w->shard_data)) : avail;
    room += room / 32;
    if (avail >= ((uint64_t)1 << 20)) room = (8 + room + 4096 + 4095) / 4096 * 4096 - 8;
    else room = (room + 7) / 8 * 8;  /* small targets (tests): no page to spare */
    if (room > STS_MAX_HEADER_SIZE) room = STS_MAX_HEADER_SIZE / 8 * 8;
    if (room > avail - w->shard_data) room = (avail - w->shard_data) / 8 * 8;  /* 8 + have + data <= target */
    if (room < have) room = have;
    w->room = room;
    w->streaming = 1;
    /* the task's first: from now on its memory is what it holds now, or what the room holds back
       and two chunks more if that is more (the caller waits for a chunk to come back instead) */
    if (!w->chunk_budget) {
        uint64_t held = room - have + 2 * (uint64_t)STS__CHUNK;
        w->chunk_budget = w->chunk_bytes + STS__CHUNK;
        if (held > w->chunk_budget) w->chunk_budget = held;
    }
    sts__kv_send_held(w, w->chunk_at);
    return STS_OK;
}
/* kv_layout = arrival, a streaming shard that would leave more than an eighth of its file unused
   room: once its data is all in the file (the queue idle), the data moves down to 8 + hlen, a
   chunk's worth at a time through a chunk (every one is written), and the file is cut there. Its
   CRC-32C is the same bytes'. */
STS__PRIVATE sts_result sts__kv_compact(sts_task_writer *w, const sts__shard *s, uint64_t hlen, sts_error *err) {
    uint64_t from = 8 + w->room, to = 8 + hlen, n = w->shard_data;
    int e = 0;
    while (n && !e) {
        size_t k = n < w->chunks[0].cap ? (size_t)n : w->chunks[0].cap;
        if ((e = sts__pread_all(s->a.fd, w->chunks[0].p, k, from)) == 0)
            e = sts__pwrite_all(&w->c.mem, s->a.fd, w->chunks[0].p, k, to);
        from += k; to += k; n -= k;
    }
    if (!e) e = sts__truncate_fd(&w->c.mem, s->a.fd, 8 + hlen + w->shard_data);
    return e ? sts__task_fail(w, sts__fail_errno(err, e, "compact", s->path)) : STS_OK;
}
/* The JSON length of the open shard's header with the data of entries [wrap, n) first, from
   offset 0, and that of entries [0, wrap) after it, from `front` (the others' bytes). */
STS__PRIVATE uint64_t sts__kv_json_front(const sts_task_writer *w, size_t wrap, uint64_t front) {
    uint64_t sum = 1 + w->shard_fixed, at = front;
    size_t i;
    for (i = 0; i < w->nents; i++) {
        if (i == wrap) at = 0;
        sum += sts__digits(at);
        at += w->ents[i].data_size;
        sum += sts__digits(at);
    }
    return sum;
}
/* kv_layout = arrival, sealing a streaming shard whose bytes from `held_from` on are still in
   memory: the shard's last tensors whose data goes in front of the rest, into the room the header
   leaves. Returns the first one's index (nents: none), with their bytes in *front and the JSON's
   length then in *json: a run of last tensors, all held, whose bytes are a multiple of 8 (N stays
   one) and leave N = room - front for a JSON whose offsets change with them: the longest within
   the room the JSON leaves now, then shorter by what the JSON outgrows (settled in a try or two;
   four at most). */
STS__PRIVATE size_t sts__kv_front(const sts_task_writer *w, uint64_t held_from, uint64_t *front, uint64_t *json) {
    uint64_t gap = w->room - *json, f, best_f, js, over;
    size_t j, best_j, tries;
    *front = 0;
    for (tries = 0; tries < 4 && gap; tries++) {
        for (j = best_j = w->nents, f = best_f = 0; j; j--) {
            uint64_t sz = w->ents[j - 1].data_size;
            if (f + sz > gap || f + sz > w->shard_data - held_from) break;
            f += sz;
            if (f % 8 == 0) { best_j = j - 1; best_f = f; }
        }
        if (!best_f) break;
        js = sts__kv_json_front(w, best_j, best_f);
        if (best_f + js <= w->room) { *front = best_f; *json = js; return best_j; }
        over = best_f + js - w->room;  /* a run shorter by that much at least (its JSON moves by a few bytes) */
        gap = over < best_f ? best_f - over : 0;
    }
    return w->nents;
}
/* kv_layout = arrival: seals the streaming shard. What it held back goes out: its last tensors in
   front of the data already written, filling the room the header leaves (the header's offsets
   start again at 0 with them), the rest after it; then its header, rendered whole in place in hmem
   (the I/O thread wrote the previous one before this shard's file was begun), padded with spaces
   to N: nothing waits. A shard that held all its data is written compact. When nothing fits the
   room (cells larger than it) and more than an eighth of the file would be unused room, the shard
   is compacted: the rest of its data goes out, then moves down, and N is the compact header's. */
STS__PRIVATE sts_result sts__kv_stream_seal(sts_task_writer *w, sts_error *err) {
    sts__shard *s = &w->shards[w->nshards - 1];
    uint64_t json = 1 + w->isum, hlen = (json + 7) / 8 * 8, hl = w->room, held_from = w->shard_data, front = 0, cut;
    uint32_t hcrc = 0, fcrc = 0;
    sts_result r;
    size_t k, wrap = (size_t)-1, split = (size_t)-1;
    int lead;  /* a front before data already in the file: its CRC joins the header's */
    for (k = 0; k < w->nchunks; k++) {
        const sts__dchunk *c = &w->chunks[k];
        if (c->state == STS__CHUNK_OPEN && c->used && c->at < held_from) held_from = c->at;
    }
    w->streaming = 0;
    STS_ASSERT(hlen <= w->room);
    if (!held_from) front = w->shard_data, hl = hlen, wrap = 0;  /* nothing went out: compact */
    else if ((wrap = sts__kv_front(w, held_from, &front, &json)) < w->nents) {
        hl = w->room - front;
        if ((hl - (json + 7) / 8 * 8) * 8 > 8 + hl + w->shard_data)  /* too coarse: as if none fitted */
            front = 0, json = 1 + w->isum, hl = w->room;
    }
    if (!front) {
        wrap = (size_t)-1;
        sts__kv_send_all(w, (size_t)-1);
        if ((w->room - hlen) * 8 > 8 + w->room + w->shard_data) {
            if ((r = sts__wb_sync(w, err)) != STS_OK || (r = sts__kv_compact(w, s, hlen, err)) != STS_OK) return r;
            hl = hlen;
        }
    }
    /* the held bytes before the cut to their place behind the room (the data's CRC-32C runs on
       through them; the chunk astride the cut, its first part last), then those from the cut to
       the front, 8 + N on (their CRC taken here unless they are the whole data) */
    lead = front && held_from;
    cut = w->shard_data - front;
    if (front) {
        for (k = 0; k < w->nchunks; k++) {
            const sts__dchunk *c = &w->chunks[k];
            if (c->state == STS__CHUNK_OPEN && c->at < cut && c->at + c->used > cut) split = k;
        }
        while ((k = sts__kv_oldest(w, split)) != (size_t)-1 && w->chunks[k].at < cut) sts__kv_send(w, &w->chunks[k]);
        if (split != (size_t)-1)
            sts__kv_piece(w, &w->chunks[split], w->chunks[split].p, cut - w->chunks[split].at,
                          8 + w->room + w->chunks[split].at, 0, 1);
        while ((k = sts__kv_oldest(w, (size_t)-1)) != (size_t)-1) {
            sts__dchunk *c = &w->chunks[k];
            uint64_t lo = cut > c->at ? cut : c->at, n = c->at + c->used - lo;
            if (lead) {
                uint32_t part = lo == c->at && c->crc_on ? c->crc
                                                         : sts__crc32c(0, c->p + (lo - c->at), (size_t)n);
                fcrc = sts__crc32c_combine(fcrc, part, n);
            }
            c->state = STS__CHUNK_LENT;
            sts__kv_piece(w, c, c->p + (lo - c->at), n, 8 + hl + (lo - cut), 1, !lead);
        }
    }
    for (k = 0; k < w->nchunks; k++)  /* an open chunk with no bytes (empty tensors only) */
        if (w->chunks[k].state == STS__CHUNK_OPEN) w->chunks[k].state = STS__CHUNK_FREE;
    if (w->hmem_cap < 8 + hl + STS__KV_SLACK) {
        sts__free(&w->c.mem, w->hmem, w->hmem_cap);
        w->hmem_cap = 0;
        if (!(w->hmem = (uint8_t *)sts__alloc(&w->c.mem, (size_t)(8 + hl + STS__KV_SLACK))))
            return sts__task_fail(w, sts__nomem(err, "the header"));
        w->hmem_cap = (size_t)(8 + hl + STS__KV_SLACK);
    }
    if ((r = sts__kv_header(w, NULL, json, hl, w->hmem, &hcrc, front, wrap, err)) != STS_OK)
        return sts__task_fail(w, r);
    sts__wb_queue(w, STS__WB_PWRITE, s->a.fd, w->hmem, 8 + hl, 0, -1);
    if (lead) hcrc = sts__crc32c_combine(hcrc, fcrc, front);  /* the front joins the header */
    sts__kv_sealed(w, s, hl, hcrc);
    if (lead) w->dig_data -= front;
    return STS_OK;
}
/* Seals the open shard: its header (sorted as the reference writer does) goes into a fresh
   temporary from the caller's thread, then its data, in layout order, is queued for the I/O thread
   straight from the chunks (runs of adjacent tensors in one piece), then the seal. Each chunk comes
   back after its last piece. A shard in layout order has its size and data CRC already; else the
   order is brought up to date, and the size and CRC counted here. A streaming shard (kv_layout =
   arrival) is sealed by sts__kv_stream_seal. */
#define STS__WB_BATCH 64
STS__PRIVATE sts_result sts__kv_flush(sts_task_writer *w, sts_error *err) {
    sts__shard *s;
    sts_result r;
    sts__wbitem it, batch[STS__WB_BATCH];
    size_t i, k, cur = (size_t)-1, group_pieces = 0, *ord = NULL, nbatch = 0;
    uint64_t group_bytes = 0, json, hlen, cursor = 0;
    uint32_t hcrc = 0;
    if (!w->nents) return STS_OK;
    if (w->streaming) return sts__kv_stream_seal(w, err);
    if ((r = sts__wb_sync(w, err)) != STS_OK) return r;  /* the previous shard is out */
    if (w->unsorted) {
        if (!sts__kv_order(w)) return sts__task_fail(w, sts__nomem(err, "the shard's layout"));
        ord = w->ord;
        for (i = 0, json = 1; i < w->nents; i++) {
            json += w->efix[ord[i]] + sts__digits(cursor);
            cursor += w->ents[ord[i]].data_size;
            json += sts__digits(cursor);
        }
    } else json = 1 + w->isum;  /* {} and n entries, n - 1 commas: the first entry's comma pays one brace */
    hlen = (json + 7) / 8 * 8;
    if (hlen > STS_MAX_HEADER_SIZE)
        return sts__task_fail(w, sts__failx(err, STS_RULE_HEADER_TOO_LARGE,
                                            "the header would be %U bytes, over the limit of %U", json,
                                            (uint64_t)STS_MAX_HEADER_SIZE));
    if ((r = sts__shard_open(w, &s, err)) != STS_OK) return sts__task_fail(w, r);
    if ((r = sts__kv_sink(w, s, err)) == STS_OK)
        r = sts__kv_header(w, ord, json, hlen, NULL, &hcrc, 0, (size_t)-1, err);
    if (r != STS_OK) {
        sts__atomic_abort(&s->a);
        sts__free(&w->c.mem, s->path, s->path_size);
        w->nshards--;
        return sts__task_fail(w, r);
    }
    /* pieces: runs of adjacent tensors of one chunk; groups (one writev each): up to STS__IOV_MAX
       pieces or about a chunk's worth of bytes, so chunks come back while the shard goes out. A
       piece is queued once the next one starts (the last one ends its group). */
    memset(&it, 0, sizeof it);
    it.kind = STS__WB_WRITE; it.fd = s->a.fd; it.token = -1; it.shard = (uint32_t)(w->nshards - 1);
    it.digest = 1;  /* the I/O thread takes the data's CRC-32C as it writes it */
    it.durable = w->c.durable;  /* and starts the writeback of what it wrote */
#define STS__KV_PIECE() do { \
        group_bytes += it.len; \
        it.more = ++group_pieces < STS__IOV_MAX && group_bytes < STS__CHUNK; \
        if (!it.more) group_pieces = group_bytes = 0; \
        batch[nbatch++] = it;  /* queued STS__WB_BATCH at a time: one lock, not one a piece */ \
        if (nbatch == STS__WB_BATCH) { sts__wb_put_n(&w->wb, batch, nbatch); nbatch = 0; } \
        it.len = 0; \
        it.token = -1; \
        it.crc = 0; \
    } while (0)
    for (k = 0; k < w->nchunks; k++) w->chunks[k].last = (size_t)-1;
    if (!ord) {  /* in layout order: the data is the shard's chunks, each whole, in the order they opened */
        uint64_t from = 0;
        for (;;) {
            size_t best = (size_t)-1;
            for (k = 0; k < w->nchunks; k++) {
                const sts__dchunk *c = &w->chunks[k];
                if (c->state == STS__CHUNK_OPEN && c->used && c->seq >= from &&
                    (best == (size_t)-1 || c->seq < w->chunks[best].seq)) best = k;
            }
            if (best == (size_t)-1) break;
            from = w->chunks[best].seq + 1;
            w->chunks[best].last = 0;
            if (it.len) STS__KV_PIECE();
            it.p = w->chunks[best].p;
            it.len = w->chunks[best].used;
            it.token = (int32_t)best;
            /* arrival queued no DIGEST item (a replacement in place may change a full chunk): its CRC here */
            it.crc = w->c.arrival && w->chunks[best].crc_on ? 1 + (uint64_t)w->chunks[best].crc : 0;
        }
    } else {
        for (i = 0; i < w->nents; i++) {
            size_t e = ord[i];
            if (w->ents[e].data_size) w->chunks[w->echk[e]].last = i;
        }
        for (i = 0; i < w->nents; i++) {
            const sts_tensor_spec *t = &w->ents[ord[i]];
            size_t ch = w->echk[ord[i]];
            if (!t->data_size) continue;
            if (it.len && (ch != cur || it.p + it.len != (const uint8_t *)t->data)) STS__KV_PIECE();
            if (!it.len) { it.p = (const uint8_t *)t->data; cur = ch; }
            it.len += t->data_size;
            if (w->chunks[ch].last == i) it.token = (int32_t)ch;
        }
    }
#undef STS__KV_PIECE
    if (it.len) { it.more = 0; batch[nbatch++] = it; }
    if (nbatch) sts__wb_put_n(&w->wb, batch, nbatch);
    for (k = 0; k < w->nchunks; k++)
        if (w->chunks[k].state == STS__CHUNK_OPEN)
            w->chunks[k].state = w->chunks[k].last == (size_t)-1 ? STS__CHUNK_FREE : STS__CHUNK_LENT;
    sts__kv_sealed(w, s, hlen, hcrc);
    return STS_OK;
}
STS__PRIVATE sts_result sts__kv_keys_reserve(sts_task_writer *w, size_t more, sts_error *err) {
    size_t need = w->nkeys + more, i;
    /* the key index holds 32-bit entry numbers, STS__EMPTY excepted */
    if ((uint64_t)w->nkeys + more > (uint64_t)STS__EMPTY)
        return sts__failx(err, STS_RULE_ROW_VALUE, "row %U: the task writer holds %U tensor names, and one holds at "
                                                   "most %U (KV mode): use more tasks",
                         w->calls, (uint64_t)w->nkeys, (uint64_t)STS__EMPTY);
    if (need > w->keys_cap) {
        size_t was = w->keys_cap * sizeof *w->keys;
        if (!sts__grow(&w->c.mem, (void **)&w->keys, &w->keys_cap, need, sizeof *w->keys))
            return sts__nomem(err, "the key set");
        sts__kv_ahead(w, w->keys, was, w->keys_cap * sizeof *w->keys);
    }
    if (w->kidx && (!w->kindex.slots || need * 2 > w->kindex.mask + 1)) {  /* rehash at half load */
        sts__index nix;
        sts__names k = sts__key_names(w);
        if (!sts__index_init(&w->c.mem, &nix, need * 2)) return sts__nomem(err, "the key set");
        for (i = 0; i < w->nkeys; i++)
            nix.slots[sts__index_probe(&nix, &k, w->keys[i].hash, w->keys[i].name, w->keys[i].len)] = (uint32_t)i;
        sts__index_free(&w->c.mem, &w->kindex);
        w->kindex = nix;
    }
    return STS_OK;
}
/* The key index, built when the first name comes out of order: every key hashed, room for more. */
STS__PRIVATE sts_result sts__kv_index_build(sts_task_writer *w, size_t more, sts_error *err) {
    size_t i;
    for (i = 0; i < w->nkeys; i++) w->keys[i].hash = sts__hash(w->keys[i].name, w->keys[i].len, 0x6b657973u);
    w->kidx = 1;
    return sts__kv_keys_reserve(w, more, err);
}
/* A KV row on its way in: its key, and what its tensors add to the open shard. */
typedef struct sts__kvrow {
    const char *key;
    size_t klen;
    uint64_t kesc;                  /* the key's bytes in the header */
    size_t names;                   /* bytes of the row's tensor names */
    sts__names kn;                  /* the task's keys, for probes */
    uint64_t add_fixed, add_data;   /* header bytes without offsets, data bytes */
    uint32_t cur;                   /* the number the open shard will get */
    int fresh;                      /* the row adds a sample to the open shard */
    int ino;                        /* the row keeps the open shard in layout order (see unsorted) */
    int inplace;                    /* then, kv_layout = arrival: it replaces its key's tensors where they are */
    int asc;                        /* its names ascend from the task's last (none hashed: w->kidx 0) */
    uint64_t add_sum;               /* then: what it adds to isum */
    uint32_t end_dig;               /* then: digits of shard_data with it */
} sts__kvrow;
STS__INLINE int sts__kv_dims_eq(const uint64_t *a, const uint64_t *b, uint32_t rank) {
    uint32_t d;
    for (d = 0; d < rank; d++) if (a[d] != b[d]) return 0;
    return 1;
}
/* Layout order of two names (memcmp order), eight bytes a step as big-endian words. */
STS__PRIVATE int sts__kv_name_less(const char *a, size_t la, const char *b, size_t lb) {
    size_t m = la < lb ? la : lb, i = 0;
    for (; i + 8 <= m; i += 8) {
        const uint8_t *p = (const uint8_t *)a + i, *q = (const uint8_t *)b + i;
        uint64_t x = (uint64_t)p[0] << 56 | (uint64_t)p[1] << 48 | (uint64_t)p[2] << 40 | (uint64_t)p[3] << 32 |
                     (uint64_t)p[4] << 24 | (uint64_t)p[5] << 16 | (uint64_t)p[6] << 8 | p[7];
        uint64_t y = (uint64_t)q[0] << 56 | (uint64_t)q[1] << 48 | (uint64_t)q[2] << 40 | (uint64_t)q[3] << 32 |
                     (uint64_t)q[4] << 24 | (uint64_t)q[5] << 16 | (uint64_t)q[6] << 8 | q[7];
        if (x != y) return x < y;
    }
    for (; i < m; i++)
        if (a[i] != b[i]) return (unsigned char)a[i] < (unsigned char)b[i];
    return la < lb;
}
/* The key's one pass: 1 when it is UTF-8 without NUL, with *esc its bytes in the header (no
   quotes). Words of plain ASCII (nothing to escape, no control byte) settle the usual key in a
   step or two, the last word overlapping; anything else goes through the full checks. */
STS__INLINE int sts__kv_key_scan(const char *k, size_t n, uint64_t *esc) {
    size_t i = 0;
    uint64_t w;
    if (n >= 8) {
        for (; i + 8 <= n; i += 8) {
            memcpy(&w, k + i, 8);
            if ((w & 0x8080808080808080ull) || !sts__esc_clean8(k + i)) break;
        }
        if (i + 8 > n) {
            memcpy(&w, k + n - 8, 8);
            if (!(w & 0x8080808080808080ull) && sts__esc_clean8(k + n - 8)) { *esc = n; return 1; }
        }
    }
    if (sts__utf8_check((const uint8_t *)k, n) != n || (n && memchr(k, 0, n))) return 0;
    *esc = sts__esc_len(k, n) - 2;
    return 1;
}
/* Row phase 1, the checks: the key, then each cell once (its byte size kept in rspec). Nothing
   changes. */
STS__PRIVATE sts_result sts__kv_check(sts_task_writer *w, const sts_value *row, sts__kvrow *x, sts_error *err) {
    const sts_value *kv = &row[w->c.key_in];
    size_t i, nc = w->c.ncols, names = 0;
    sts_result r;
    x->key = (const char *)kv->data;
    x->klen = (size_t)kv->size;
    x->names = 0;
    x->add_fixed = x->add_data = 0;
    x->cur = (uint32_t)(w->nshards - (size_t)w->streaming);  /* a streaming shard's file is the last */
    x->fresh = 1;
    if (kv->size && !kv->data)
        return sts__failx(err, STS_RULE_ROW_VALUE, "row %U: the key has %U bytes but no data", w->calls, kv->size);
    if (kv->size > ((uint64_t)1 << 30) || !sts__kv_key_scan(x->key, x->klen, &x->kesc))
        return sts__failx(err, STS_RULE_ROW_VALUE, "row %U: key %q must be UTF-8 without NUL", w->calls, x->key,
                          x->klen);
    if (!w->rspec) {  /* the per-row arrays, once */
        w->rspec = (sts_tensor_spec *)sts__alloc(&w->c.mem, nc * sizeof *w->rspec);
        w->rhash = (uint64_t *)sts__alloc(&w->c.mem, 6 * nc * sizeof *w->rhash);
        w->rrep = (size_t *)sts__alloc(&w->c.mem, 5 * nc * sizeof *w->rrep);
        if (!w->rspec || !w->rhash || !w->rrep) {  /* none kept: the next row tries all three again */
            sts__free(&w->c.mem, w->rspec, nc * sizeof *w->rspec);
            sts__free(&w->c.mem, w->rhash, 6 * nc * sizeof *w->rhash);
            sts__free(&w->c.mem, w->rrep, 5 * nc * sizeof *w->rrep);
            w->rspec = NULL; w->rhash = NULL; w->rrep = NULL;
            return sts__nomem(err, "a row's tensors");
        }
        w->rfix = w->rhash + nc; w->rcount = w->rhash + 2 * nc; w->rslot = w->rhash + 3 * nc;
        w->cesc = w->rhash + 4 * nc; w->cpart = w->rhash + 5 * nc;
        for (i = 0; i < nc; i++) {
            const sts__ocol *o = &w->c.cols[i];
            w->cesc[i] = sts__esc_len(w->c.sep, w->c.sep_len) + sts__esc_len(o->name, o->name_len) - 4;
            w->cpart[i] = 0;
        }
        w->rpos = w->rrep + nc; w->rord = w->rrep + 3 * nc;
    }
    for (i = 0; i < nc; i++) {
        sts__ocol *o = &w->c.cols[i];
        const sts_value *v = &row[o->in];
        /* a tensor of its fixed column's dtype and shape (the usual row): checked when the column
           was fixed, so only its size and data are left */
        w->rslot[i] = o->kind == STS_VALUE_TENSOR && o->fixed && v->dtype == o->dtype && v->rank == o->rank &&
                      (!v->rank || (v->shape && sts__kv_dims_eq(v->shape, o->shape + 1, v->rank)));
        if (w->rslot[i] && v->size == o->row_bytes && (v->data || !v->size)) w->rspec[i].data_size = v->size;
        else if ((r = sts__cell_check(w, o, v, &w->rspec[i].data_size, err)) != STS_OK) return r;
        names += x->klen + w->c.sep_len + o->name_len;
    }
    x->names = names;
    return STS_OK;
}
/* A row's tensor name at n: the key, kv_separator and the column's name, then a NUL; its length. */
STS__INLINE size_t sts__kv_name_put(const sts_task_writer *w, char *n, const char *key, size_t klen,
                                    const sts__ocol *o) {
    size_t l = klen + w->c.sep_len + o->name_len;
    sts__kv_copy(n, key, klen);
    sts__kv_copy(n + klen, w->c.sep, w->c.sep_len);
    sts__kv_copy(n + klen + w->c.sep_len, o->name, o->name_len);
    n[l] = 0;
    return l;
}
/* Row phase 2, the tensor names (key + kv_separator + column, each with a NUL, built at the end of
   the names arena, where the new ones stay if the row is taken): each checked against the
   reserved name and the task's keys (duplicatesStrategy=fail) before anything changes; the row's
   entries (rspec, rfix, rhash, rrep) and what they add to the shard. */
STS__PRIVATE sts_result sts__kv_names(sts_task_writer *w, const sts_value *row, sts__kvrow *x, sts_error *err) {
    size_t i, nc = w->c.ncols, pos_end;
    uint64_t add_fixed = 0, add_data = 0;
    sts_result r;
    char *base;
    if (w->names_left < x->names + nc && !sts__kv_names_room(w, x->names + nc))
        return sts__nomem(err, "a row's names");
    base = sts__kv_names_end(w);
    if ((w->kidx || w->nkeys + nc > w->keys_cap || w->nkeys + nc > (size_t)STS__EMPTY) &&
        (r = sts__kv_keys_reserve(w, nc, err)) != STS_OK)
        return sts__task_fail(w, r);
again:
    x->kn = sts__key_names(w);
    x->asc = 0;
    for (i = 0, pos_end = 0; i < nc; i++) {
        sts__ocol *o = &w->c.cols[i];
        const sts_value *v = &row[o->in];
        sts_tensor_spec *e = &w->rspec[i];
        char *n = base + pos_end;
        size_t nl = x->klen + w->c.sep_len + o->name_len, pos;
        uint64_t b = e->data_size;
        uint32_t slot;
        sts__kv_name_put(w, n, x->key, x->klen, o);
        pos_end += nl + 1;
        if (nl == 12 && memcmp(n, "__metadata__", 12) == 0)
            return sts__failx(err, STS_RULE_ROW_VALUE, "row %U: key %q and column %q make the tensor name "
                                                       "\"__metadata__\", which readers take for the metadata",
                             w->calls, x->key, x->klen, o->name, o->name_len);
        if (!w->kidx) {  /* ascending names: new unless this one is not after the last */
            const char *pn = i ? n - (x->klen + w->c.sep_len + w->c.cols[i - 1].name_len + 1) : NULL;
            size_t pl = i ? x->klen + w->c.sep_len + w->c.cols[i - 1].name_len : 0;
            if (!i && w->nkeys) { pn = w->keys[w->nkeys - 1].name; pl = w->keys[w->nkeys - 1].len; }
            if (!pn || sts__kv_name_less(pn, pl, n, nl)) {
                x->asc = 1;
                w->rslot[i] = 2 * (w->rslot[i] & 1) + 1;  /* slot 0, empty: none is probed */
                w->rrep[i] = (size_t)-1;
                w->rhash[i] = 0;  /* hashed if the index is ever built */
                goto named;
            }
            /* the first name out of order: every key hashed into the index, the row named again */
            if ((r = sts__kv_index_build(w, nc, err)) != STS_OK) return sts__task_fail(w, r);
            while (i--) w->rslot[i] = (w->rslot[i] >> 1) & 1;  /* back to the shape flags */
            goto again;
        }
        w->rhash[i] = sts__hash(n, nl, 0x6b657973u);
        pos = sts__index_probe(&w->kindex, &x->kn, w->rhash[i], n, nl);
        slot = w->kindex.slots[pos];
        if (slot != STS__EMPTY && w->c.dup == STS_DUPLICATES_FAIL)
            return sts__failx(err, STS_RULE_DUPLICATE_KEY, "row %U: key %q gives tensor %q, which this task already "
                                                           "wrote (duplicatesStrategy=fail)",
                             w->calls, x->key, x->klen, n, nl);
        w->rrep[i] = slot != STS__EMPTY && w->keys[slot].shard == x->cur ? w->keys[slot].ent : (size_t)-1;
        w->rslot[i] = 4 * (uint64_t)pos + 2 * (w->rslot[i] & 1) + (slot == STS__EMPTY);  /* + the shape flag */
    named:
        memset(e, 0, sizeof *e);
        e->name = n;
        e->name_len = nl;
        e->data_size = b;
        e->dtype = o->kind == STS_VALUE_TENSOR ? v->dtype : o->dtype;
        e->rank = o->kind == STS_VALUE_TENSOR ? v->rank : o->has_opt ? o->opt_rank : 1;
        w->rcount[i] = v->size;
        e->shape = o->kind == STS_VALUE_TENSOR ? v->shape : o->has_opt ? o->opt_dims : &w->rcount[i];
        /* sts__entry_fixed in parts: the key's and the column's bytes, then dtype and shape (the
           column's own, the usual case, counted once) */
        if (w->rslot[i] & 2) {
            if (!w->cpart[i]) w->cpart[i] = sts__entry_fixed("", 0, e->dtype, e->shape, e->rank) - 2;
            w->rfix[i] = 2 + x->kesc + w->cesc[i] + w->cpart[i];
        } else w->rfix[i] = 2 + x->kesc + w->cesc[i] + sts__entry_fixed("", 0, e->dtype, e->shape, e->rank) - 2;
        add_fixed += w->rfix[i];
        add_data += b;
    }
    x->add_fixed = add_fixed;
    x->add_data = add_data;
    x->fresh = w->rrep[0] == (size_t)-1;
    return STS_OK;
}
/* kv_layout = arrival, lastWin: whether t can replace entry `ent` of the open shard where it is:
   the same dtype, shape and bytes, and its data still in a chunk not yet lent (the chunk that took
   it, not opened again since). Then neither the header nor any offset changes. */
STS__PRIVATE int sts__kv_in_place(const sts_task_writer *w, size_t ent, const sts_tensor_spec *t) {
    const sts_tensor_spec *e = &w->ents[ent];
    const sts__dchunk *c = &w->chunks[w->echk[ent]];
    if (e->dtype != t->dtype || e->rank != t->rank || e->data_size != t->data_size ||
        (t->rank && !sts__kv_dims_eq(e->shape, t->shape, t->rank)))
        return 0;
    return !t->data_size || (c->state == STS__CHUNK_OPEN && c->seq <= ent + 1);  /* seq: entries when it opened */
}
/* Whether the row keeps the open shard in layout order: each tensor sorts after the shard's last
   entry and the row's earlier tensors (any order does with kv_layout = arrival), and replaces none.
   Then x->add_sum is its exact share of the header without commas' neighbours: fixed bytes and the
   digits of both offsets. */
STS__INLINE void sts__kv_inrow(sts_task_writer *w, sts__kvrow *x) {
    size_t i, nc = w->c.ncols;
    const sts_tensor_spec *prev = w->nents ? &w->ents[w->nents - 1] : NULL;
    uint64_t c = w->shard_data, sum = 0;
    uint32_t dc = w->nents ? w->idig : 1, de;
    /* names already known to ascend from the task's last key, which is the shard's last entry */
    int named = x->asc && (!prev || (w->nkeys && prev->name == w->keys[w->nkeys - 1].name));
    x->ino = x->inplace = 0;
    if (w->unsorted) return;
    for (i = 0; i < nc; i++) {
        const sts_tensor_spec *t = &w->rspec[i];
        if (w->rrep[i] != (size_t)-1 ||
            (prev && !w->c.arrival && (prev->dtype != t->dtype ? prev->dtype < t->dtype
                                              : !named && !sts__kv_name_less(prev->name, prev->name_len, t->name,
                                                                             t->name_len))))
            break;
        c += t->data_size;
        de = (uint32_t)sts__digits(c);
        sum += w->rfix[i] + dc + de;
        dc = de;
        prev = t;
    }
    if (i < nc) {  /* arrival, lastWin: each tensor replaces one the same size still in memory, or none is */
        if (i || !w->c.arrival) return;
        for (; i < nc; i++)
            if (w->rrep[i] == (size_t)-1 || !sts__kv_in_place(w, w->rrep[i], &w->rspec[i])) return;
        x->inplace = 1;
        x->add_data = x->add_fixed = 0;  /* nothing moves */
    }
    x->ino = 1;
    x->add_sum = sum;
    x->end_dig = dc;
}
/* Whether the open shard takes a row in layout order (sts__kv_inrow: add_sum header bytes,
   add_data data bytes) on its exact size, kept as rows came ({} and the first comma net one
   byte): a streaming shard's header within its room and its data behind that within the target,
   else the whole file within the target and the header within the cap. */
STS__INLINE int sts__kv_fits_in_order(const sts_task_writer *w, uint64_t add_sum, uint64_t add_data) {
    uint64_t header = 1 + w->isum + add_sum;
    if (w->streaming)  /* the header within its room, the data behind it */
        return header <= w->room && 8 + w->room + w->shard_data + add_data <= w->c.target;
    header = (header + 7) / 8 * 8;
    return 8 + header + w->shard_data + add_data <= w->c.target && header <= STS_MAX_HEADER_SIZE;
}
/* Row phase 3, the roll decision: 1 when the open shard (not empty) takes the row without passing
   the target or the header cap, on the real byte count; 0 when it must roll first; -1 when out of
   memory. A cheap upper bound settles most rows (added and replaced tensors all counted as
   added); near the target the exact size of the shard with the row (the writer's layout) decides,
   and later rows add to that exact figure a tight allowance: their own bytes plus the offsets
   they shift across a power of ten (once set, w->exact follows every row until the shard rolls or
   an entry is replaced, so the in-order path, which needs none, leaves it alone). */
STS__PRIVATE int sts__kv_fits(sts_task_writer *w, const sts__kvrow *x) {
    uint64_t nc = w->c.ncols, header, dd, bound;
    int fits;
    if (w->c.arrival && !x->ino) return 0;  /* arrival replaces no entry of the open shard: it rolls */
    if (x->ino) return sts__kv_fits_in_order(w, x->add_sum, x->add_data);  /* w->exact stays 0 (see below) */
    bound = sts__shard_bound(w->nents + nc, w->shard_fixed + x->add_fixed, w->shard_data + x->add_data,
                                      &header);
    fits = bound <= w->c.target && header <= STS_MAX_HEADER_SIZE;
    if (!fits && w->exact) {
        dd = sts__digits(w->shard_data + x->add_data);
        bound = w->exact + x->add_data + x->add_fixed + 2 * nc * dd + 8 +
                2 * dd * (x->add_data / (w->min_size ? w->min_size : 1) + w->empties + 1);
        fits = bound <= w->c.target && bound - w->shard_data - x->add_data <= STS_MAX_HEADER_SIZE;
        if (fits) w->exact = bound;
    }
    if (!fits && header <= (uint64_t)STS_MAX_HEADER_SIZE * 2) {  /* exact: the shard as it would be with this row */
        uint64_t hdr_exact, exact;
        if (!sts__kv_order(w)) return -1;
        exact = sts__kv_exact(w, w->nord, &hdr_exact);
        fits = exact <= w->c.target && hdr_exact <= STS_MAX_HEADER_SIZE;
        if (fits) w->exact = exact;
    }
    return fits;
}
/* Row phase 4, the append: columns fixed by their first row, names kept, data encoded into the
   chunks, entries added to the open shard or replacing theirs there (lastWin). */
STS__PRIVATE sts_result sts__kv_append(sts_task_writer *w, const sts_value *row, const sts__kvrow *x, sts_error *err) {
    size_t i, nc = w->c.ncols;
    sts_result r;
    if (!w->c.cols[0].fixed && (r = sts__cols_fix(w, row, NULL, err)) != STS_OK) return r;
    if (w->nents + nc > w->ents_room && !sts__kv_ents_reserve(w, w->nents + nc))
        return sts__task_fail(w, sts__nomem(err, "the shard table"));
    if (!x->ino && !w->unsorted) {  /* the order breaks here: what came so far is the layout order */
        for (i = 0; i < w->nents; i++) w->ord[i] = i;
        w->nord = w->nents;
        w->unsorted = 1;
    }
    if (x->fresh) w->shard_rows++;  /* a row whose key is in the open shard replaces it (lastWin): no new sample */
    for (i = 0; i < nc; i++) {
        sts__ocol *o = &w->c.cols[i];
        const sts_value *v = &row[o->in];
        const sts_tensor_spec *t = &w->rspec[i];
        uint64_t b = t->data_size;
        size_t pos, ent;
        sts__key *k;
        sts_tensor_spec *e;
        void *dst;
        uint32_t d;
        /* the slot the name probed, unless it was empty and an earlier column took it */
        pos = (size_t)(w->rslot[i] >> 2);
        if (w->kidx && (w->rslot[i] & 1) && w->kindex.slots[pos] != STS__EMPTY)
            pos = sts__index_probe(&w->kindex, &x->kn, w->rhash[i], t->name, t->name_len);
        if (!w->kidx || w->kindex.slots[pos] == STS__EMPTY) {
            char *at = sts__kv_names_end(w);
            k = &w->keys[w->nkeys];
            /* kept where sts__kv_names built it, moved down over the names of keys already known */
            if (t->name != at) memmove(at, t->name, t->name_len + 1);
            k->name = at;
            w->names_left -= t->name_len + 1;
            k->hash = w->rhash[i];
            k->len = t->name_len;
            k->shard = (uint32_t)-1;
            if (w->kidx) w->kindex.slots[pos] = (uint32_t)w->nkeys;
            w->nkeys++;
        } else k = &w->keys[w->kindex.slots[pos]];
        if (k->shard == x->cur && x->inplace) {  /* arrival: the new bytes over the old (sts__kv_in_place) */
            sts__dchunk *c = &w->chunks[w->echk[k->ent]];
            uint8_t *at = (uint8_t *)(uintptr_t)w->ents[k->ent].data;
            uint32_t was = b && c->crc_on ? sts__crc32c(0, at, (size_t)b) : 0;
            if (o->kind == STS_VALUE_TENSOR) { if (b) memcpy(at, v->data, (size_t)b); }
            else if (b && (r = sts__cell_encode(w, o, v, 0, (size_t)v->size, at, err)) != STS_OK)
                return sts__task_fail(w, r);
            if (b && c->crc_on) {
                uint32_t now = sts__crc32c(0, at, (size_t)b);
                c->crc = sts__crc32c_patch(c->crc, c->used, (uint64_t)(at - c->p), was, now, b);
            }
            continue;
        }
        if (k->shard == x->cur) {  /* lastWin inside the open shard: replace the entry in its place */
            ent = k->ent;
            e = &w->ents[ent];
            w->shard_fixed -= w->efix[ent];
            w->shard_data -= e->data_size;
            w->exact = 0;  /* offsets after it move: back to the cheap bound until the next exact count */
            w->ungrouped = 1;  /* replaced in its place: the general order (the sort), as before */
        } else {
            ent = w->nents++;
            e = &w->ents[ent];
            k->shard = x->cur;
            k->ent = (uint32_t)ent;
        }
        memset(e, 0, sizeof *e);
        e->name = k->name;
        e->name_len = t->name_len;
        e->dtype = t->dtype;
        e->data_size = b;
        e->rank = t->rank;
        /* the row's shape: the column's own when equal (the usual case), else a copy */
        if ((w->rslot[i] & 2) ||
            (t->rank == o->rank && (!t->rank || sts__kv_dims_eq(t->shape, o->shape + 1, t->rank))))
            e->shape = o->shape + 1;
        else if (!(e->shape = sts__kv_shape_store(w, t->shape, t->rank)))
            return sts__task_fail(w, sts__nomem(err, "a shape"));
        /* data next to the previous tensor's, so the shard goes out in few large writes */
        if (!(dst = sts__kv_data(w, b, err))) return sts__task_fail(w, STS_ERR_NOMEM);
        e->data = dst;
        w->echk[ent] = (uint32_t)w->chunk_at;
        if (o->kind == STS_VALUE_TENSOR) { if (b) memcpy(dst, v->data, (size_t)b); }  /* a tensor's bytes as they are */
        else if (b && (r = sts__cell_encode(w, o, v, 0, (size_t)v->size, dst, err)) != STS_OK)
            return sts__task_fail(w, r);
        {
            sts__dchunk *c = &w->chunks[w->chunk_at];
            if (c->crc_on && b) c->crc = sts__crc32c(c->crc, dst, (size_t)b);  /* sts__kv_chunk_open */
        }
        /* the schema's shape: dims that differ between rows become -1 */
        if (e->shape == o->shape + 1) {}
        else if (e->rank != o->rank) memset(o->varies, 1, o->rank ? o->rank : 1);
        else for (d = 0; d < e->rank; d++) if (e->shape[d] != o->shape[1 + d]) o->varies[d] = 1;
        w->efix[ent] = (uint32_t)w->rfix[i];
        w->shard_fixed += w->rfix[i];
        w->shard_data += b;
        if (!b) w->empties++;
        else if (!w->min_size || b < w->min_size) w->min_size = b;
    }
    if (x->ino) { w->isum += x->add_sum; w->idig = x->end_dig; }
    w->rows++;
    return STS_OK;
}
/* The row's tensors fit a header on their own (in a shard of their own): the cheap bound settles
   almost every row, the exact count (the row alone, in the writer's layout) the others. */
STS__PRIVATE sts_result sts__kv_alone(sts_task_writer *w, const sts__kvrow *x, sts_error *err) {
    uint64_t header, most = 0;
    size_t i, at = 0;
    /* the usual row: its header with offsets of 20 digits (the most) is far below the cap */
    if (9 + x->add_fixed + 40 * (uint64_t)w->c.ncols <= STS_MAX_HEADER_SIZE) return STS_OK;
    sts__shard_bound(w->c.ncols, x->add_fixed, x->add_data, &header);
    if (header <= STS_MAX_HEADER_SIZE) return STS_OK;
    sts__kv_exact(w, 0, &header);
    if (header <= STS_MAX_HEADER_SIZE) return STS_OK;
    for (i = 0; i < w->c.ncols; i++) if (w->rfix[i] > most) { most = w->rfix[i]; at = i; }
    return sts__failx(err, STS_RULE_ROW_VALUE, "row %U, column %q: its tensors need a %U-byte header (key of %U "
                                               "bytes), over the %U-byte limit",
                     w->calls, w->c.cols[at].name, w->c.cols[at].name_len, header, (uint64_t)x->klen,
                     (uint64_t)STS_MAX_HEADER_SIZE);
}
/* The usual row in one pass: 1 when taken, 0 when the phases above must take it (nothing has
   changed), -1 when it failed the task. Usual: a key of UTF-8 without NUL, names ascending from
   the task's last key (no key index), each cell a tensor of its fixed column's dtype, shape and
   byte count (not empty) and, in the sorted layout, of the shard's last dtype, room in the names,
   keys and entries as they are, and an open shard (not empty) that takes the row without a roll.
   What it changes is what the phases change for such a row (test_kv_fast compares the files). */
STS__PRIVATE int sts__kv_row_fast(sts_task_writer *w, const sts_value *row, sts_error *err) {
    const sts_value *kv = &row[w->c.key_in];
    const sts_tensor_spec *prev = w->nents ? &w->ents[w->nents - 1] : NULL;
    size_t i, nc = w->c.ncols, nl, names = 0, klen = (size_t)kv->size;
    uint64_t kesc, sum = 0, fixed = 0, data = w->shard_data;
    uint32_t dc = w->idig, de, cur = (uint32_t)(w->nshards - (size_t)w->streaming);
    const char *pn;
    char *base, *n;
    if (!prev || w->kidx || w->unsorted || !w->rspec || w->phases_only || !w->nkeys || w->nkeys + nc > w->keys_cap ||
        w->nkeys + nc > (size_t)STS__EMPTY || w->nents + nc > w->ents_room ||
        prev->name != w->keys[w->nkeys - 1].name || !kv->data || kv->size > ((uint64_t)1 << 30) ||
        !sts__kv_key_scan((const char *)kv->data, klen, &kesc))
        return 0;
    for (i = 0; i < nc; i++) {
        const sts__ocol *o = &w->c.cols[i];
        const sts_value *v = &row[o->in];
        if (o->kind != STS_VALUE_TENSOR || !o->fixed || !w->cpart[i] || v->dtype != o->dtype ||
            v->rank != o->rank || v->size != o->row_bytes || !v->size || !v->data ||
            (v->rank && (!v->shape || !sts__kv_dims_eq(v->shape, o->shape + 1, v->rank))) ||
            (!w->c.arrival && v->dtype != prev->dtype))
            return 0;
        data += v->size;
        de = (uint32_t)sts__digits(data);
        w->rfix[i] = 2 + kesc + w->cesc[i] + w->cpart[i];  /* as phase 2 counts it (scratch until taken) */
        fixed += w->rfix[i];
        sum += w->rfix[i] + dc + de;
        dc = de;
        names += klen + w->c.sep_len + o->name_len + 1;
    }
    if (w->names_left < names || 9 + fixed + 40 * (uint64_t)nc > STS_MAX_HEADER_SIZE) return 0;
    if (!sts__kv_fits_in_order(w, sum, data - w->shard_data)) return 0;
    /* the names at the arena's end, each after the last (the phases' order checks) */
    base = n = sts__kv_names_end(w);
    pn = w->keys[w->nkeys - 1].name;
    nl = w->keys[w->nkeys - 1].len;
    for (i = 0; i < nc; i++) {
        const sts__ocol *o = &w->c.cols[i];
        size_t l = sts__kv_name_put(w, n, (const char *)kv->data, klen, o);
        if ((l == 12 && memcmp(n, "__metadata__", 12) == 0) || !sts__kv_name_less(pn, nl, n, l)) return 0;
        pn = n;
        nl = l;
        n += l + 1;
    }
    /* taken: the phases' changes */
    w->shard_rows++;
    for (i = 0, n = base; i < nc; i++) {
        const sts__ocol *o = &w->c.cols[i];
        const sts_value *v = &row[o->in];
        size_t ent = w->nents++;
        uint64_t b = v->size, fix = w->rfix[i];
        sts__key *k = &w->keys[w->nkeys++];
        sts_tensor_spec *e = &w->ents[ent];
        sts__dchunk *c;
        void *dst;
        nl = klen + w->c.sep_len + o->name_len;
        k->name = n;
        k->hash = 0;
        k->len = nl;
        k->shard = cur;
        k->ent = (uint32_t)ent;
        w->names_left -= nl + 1;
        memset(e, 0, sizeof *e);
        e->name = n;
        e->name_len = nl;
        e->dtype = o->dtype;
        e->data_size = b;
        e->rank = o->rank;
        e->shape = o->shape + 1;
        n += nl + 1;
        c = w->chunk_at != (size_t)-1 ? &w->chunks[w->chunk_at] : NULL;
        if (c && c->cap - c->used >= b) { dst = c->p + c->used; c->used += (size_t)b; }  /* sts__kv_data's usual case */
        else if (!(dst = sts__kv_data(w, b, err))) { sts__task_fail(w, STS_ERR_NOMEM); return -1; }
        else c = &w->chunks[w->chunk_at];
        e->data = dst;
        w->echk[ent] = (uint32_t)w->chunk_at;
        memcpy(dst, v->data, (size_t)b);
        if (c->crc_on) c->crc = sts__crc32c(c->crc, dst, (size_t)b);
        w->efix[ent] = (uint32_t)fix;
        w->shard_fixed += fix;
        w->shard_data += b;
        if (!w->min_size || b < w->min_size) w->min_size = b;
    }
    w->isum += sum;
    w->idig = dc;
    w->rows++;
    return 1;
}
/* One KV row: checked, named and checked for duplicates, the open shard rolled when the row would
   push it past the target (or the header cap), then appended. A refused row changes nothing. */
STS__PRIVATE sts_result sts__kv_row(sts_task_writer *w, const sts_value *row, sts_error *err) {
    sts__kvrow x;
    sts_result r;
    size_t i;
    int fast = sts__kv_row_fast(w, row, err);
    if (fast < 0) return STS_ERR_NOMEM;
    if (fast) goto taken;
    if ((r = sts__kv_check(w, row, &x, err)) != STS_OK || (r = sts__kv_names(w, row, &x, err)) != STS_OK ||
        (r = sts__kv_alone(w, &x, err)) != STS_OK) return r;
    sts__kv_inrow(w, &x);
    if (w->nents) {
        int fits = sts__kv_fits(w, &x);
        if (fits < 0) return sts__task_fail(w, sts__nomem(err, "the shard's layout"));
        if (!fits) {
            if ((r = sts__kv_flush(w, err)) != STS_OK) return r;
            x.cur = (uint32_t)w->nshards;
            for (i = 0; i < w->c.ncols; i++) w->rrep[i] = (size_t)-1;  /* the earlier copies stay in the sealed shard */
            x.fresh = 1;
            sts__kv_inrow(w, &x);
        }
    }
    if ((r = sts__kv_append(w, row, &x, err)) != STS_OK) return r;
taken:
    /* kv_layout = arrival: the shard starts going out once it is an eighth full or holds two chunks
       of data (what its room needs stays held back, so a task that ends early is sealed without a
       move, and one that never sent a chunk is written compact); with or without a thread, the
       same calls in one order. 64 MiB tasks at a 300 MiB target on the VM: 1.22-1.55 -> 1.94-2.18
       GB/s (from half the target, moved back when short, to this) */
    if (w->c.arrival) {
        uint64_t size = 8 + (1 + w->isum + 7) / 8 * 8 + w->shard_data;
        if (w->streaming) {
            if (w->shard_data >= w->held_at) sts__kv_send_held(w, w->chunk_at);
        } else if ((size >= w->c.target / 8 || w->shard_data >= 2 * (uint64_t)STS__CHUNK) && size <= w->c.target)
            return sts__kv_stream_start(w, err);
    }
    return STS_OK;
}

STSDEF sts_result sts_task_write(sts_task_writer *w, const sts_value *row, sts_error *err) {
    sts_result r;
    if (!w || !row) return sts__failx(err, STS_RULE_ARGUMENT, "sts_task_write needs a writer and a row");
    if (w->committed) return sts__failx(err, STS_RULE_STATE, "the task writer is already committed");
    if (w->failed != STS_OK)
        return sts__failx(err, STS_RULE_STATE, "the task writer failed earlier (%s); close it to abort",
                          sts_result_name(w->failed));
    r = w->c.kv ? sts__kv_row(w, row, err) : sts__batch_row(w, row, err);
    /* no I/O thread: this row's own write */
    if (r == STS_OK && !w->wb.threaded && w->wb.err_no) r = sts__wb_fail(w, err);
    w->calls++;
    if (r == STS_OK) sts__ok(err);
    return r;
}

/* >>commit_message ---- commit messages ---- */
STS__PRIVATE void sts__out_schema_col(sts__out *o, const sts__ocol *c, int kv, uint64_t batch) {
    uint32_t d;
    sts__out_json(o, c->name, c->name_len);
    sts__out_cstr(o, ":{\"dtype\":");
    sts__out_json(o, sts_dtype_name(c->dtype), strlen(sts_dtype_name(c->dtype)));
    sts__out_cstr(o, ",\"shape\":[");
    if (!kv) { sts__out_u64(o, batch); if (c->rank) sts__out_put(o, ",", 1); }
    for (d = 0; d < c->rank; d++) {
        if (d) sts__out_put(o, ",", 1);
        if (kv && c->varies[d]) sts__out_cstr(o, "-1");
        else sts__out_u64(o, c->shape[1 + d]);
    }
    sts__out_cstr(o, "]}");
}
STSDEF sts_result sts_task_commit(sts_task_writer *w, char **message, size_t *message_len, sts_error *err) {
    sts__out o;
    sts_result r = STS_OK;
    size_t i;
    int first = 1, e;
    if (!w || !message || !message_len)
        return sts__failx(err, STS_RULE_ARGUMENT, "sts_task_commit needs a writer, message and message_len");
    if (w->committed) return sts__failx(err, STS_RULE_STATE, "the task writer is already committed");
    if (w->failed != STS_OK)
        return sts__failx(err, STS_RULE_STATE, "the task writer failed earlier (%s); close it to abort",
                          sts_result_name(w->failed));
    if (w->c.kv) r = sts__kv_flush(w, err);
    else if (w->batch_open) {
        if (w->c.tail == STS_TAIL_DROP) {
            sts__shard *s = sts__cur_shard(w);
            if ((r = sts__wb_sync(w, err)) != STS_OK) return r;  /* its queued writes are done before it goes */
            sts__atomic_abort(&s->a);
            sts__free(&w->c.mem, s->path, s->path_size);
            w->nshards--;
            sts__plan_free(&w->plan);
            w->batch_open = 0;
        } else r = sts__batch_end(w, w->batch_rows, w->c.tail == STS_TAIL_WRITE, err);
    }
    if (r != STS_OK) return r;
    if ((r = sts__wb_sync(w, err)) != STS_OK) return r;  /* every file written, fsynced and closed */
    for (i = 0; i < w->nshards; i++) {  /* final names appear now, then one folder sync */
        sts__shard *s = &w->shards[i];
        if (s->state != 1) continue;
        if ((r = sts__atomic_publish(&s->a, 0, err)) != STS_OK) { s->state = 3; return sts__task_fail(w, r); }
        s->state = 2;
    }
    if (w->nshards && w->c.durable && (e = sts__fsync_dir(&w->c.mem, w->shards[0].path)) != 0)
        return sts__task_fail(w, sts__fail_errno(err, e, "fsync the folder of", w->shards[0].path));
    sts__out_init(&o, &w->c.mem, -1);
    sts__out_cstr(&o, "{\"sts_task_commit\":1,\"writer\":\"safetensors_spark.h " STS_VERSION_STRING "\",\"task\":");
    sts__out_u64(&o, w->task);
    sts__out_cstr(&o, ",\"job\":");
    if (w->job.job) sts__out_json(&o, w->job.job, w->job.job_len);
    else sts__out_cstr(&o, "null");
    sts__out_cstr(&o, ",\"uuid\":\"");
    sts__out_cstr(&o, w->uuid);
    sts__out_cstr(&o, w->c.kv ? "\",\"mode\":\"kv\",\"kv_separator\":" : "\",\"mode\":\"batch\",\"kv_separator\":");
    sts__out_json(&o, w->c.sep, w->c.sep_len);
    sts__out_cstr(&o, w->c.dup == STS_DUPLICATES_FAIL ? ",\"duplicates\":\"fail\",\"batch_size\":"
                                                      : ",\"duplicates\":\"lastWin\",\"batch_size\":");
    sts__out_u64(&o, w->c.batch_size);
    sts__out_cstr(&o, ",\"rows\":");
    sts__out_u64(&o, w->rows);
    sts__out_cstr(&o, ",\"schema\":{");
    for (i = 0; i < w->c.ncols; i++) {
        const sts__ocol *c = &w->c.cols[i];
        if (!c->fixed) continue;
        if (!first) sts__out_put(&o, ",", 1);
        first = 0;
        sts__out_schema_col(&o, c, w->c.kv, w->c.batch_size);
    }
    sts__out_cstr(&o, "},\"shards\":[");
    for (i = 0; i < w->nshards; i++) {
        const sts__shard *s = &w->shards[i];
        const char *name = strrchr(s->path, '/') + 1;
        if (i) sts__out_put(&o, ",", 1);
        sts__out_cstr(&o, "{\"shard_path\":");
        sts__out_json(&o, name, strlen(name));
        sts__out_cstr(&o, ",\"samples_count\":");
        sts__out_u64(&o, s->samples);
        sts__out_cstr(&o, ",\"bytes\":");
        sts__out_u64(&o, s->bytes);
        sts__out_cstr(&o, ",\"tensors\":");
        sts__out_u64(&o, s->tensors);
        sts__out_cstr(&o, ",\"crc32c\":");
        sts__out_u64(&o, s->crc);
        sts__out_put(&o, "}", 1);
    }
    sts__out_cstr(&o, "]}");
    sts__out_put(&o, "", 1);  /* NUL */
    if ((r = sts__out_status(&o, "the commit message", err)) != STS_OK) { sts__out_free(&o); return r; }
    w->committed = 1;
    *message_len = o.n - 1;
    if (o.cap != o.n) {  /* hand out exactly len + 1 bytes, as documented for sts_free */
        char *exact = (char *)sts__realloc(&w->c.mem, o.p, o.cap, o.n);
        if (exact) { o.p = exact; o.cap = o.n; }
        else {
            char *copy = (char *)sts__alloc(&w->c.mem, o.n);
            if (!copy) { sts__out_free(&o); w->committed = 0; return sts__nomem(err, "the commit message"); }
            memcpy(copy, o.p, o.n);
            sts__out_free(&o);
            o.p = copy;
            o.cap = o.n;
        }
    }
    *message = o.p;
    sts__ok(err);
    return STS_OK;
}
STSDEF sts_task_progress sts_task_get_progress(const sts_task_writer *w) {
    sts_task_progress p;
    memset(&p, 0, sizeof p);
    if (w) {
        p.rows = w->rows;
        p.shards = w->nshards - (size_t)w->streaming;  /* a streaming KV shard is still filling */
    }
    return p;
}
STSDEF void sts_task_close(sts_task_writer *w) {
    sts__mem m;
    size_t i;
    sts__chunk *c;
    if (!w) return;
    m = w->c.mem;
    sts__wb_stop(&w->wb);  /* queued items run (after a failure: only the closes) */
    if (w->batch_open) sts__plan_free(&w->plan);
    for (i = 0; i < w->nshards; i++) sts__shard_free(w, &w->shards[i], !w->committed);
    sts__free(&m, w->shards, w->shards_cap * sizeof *w->shards);
    sts__free(&m, w->bspecs, w->c.ncols * sizeof *w->bspecs);
    sts__free(&m, w->ents, w->ents_cap * sizeof *w->ents);
    sts__free(&m, w->efix, w->efix_cap * sizeof *w->efix);
    sts__free(&m, w->echk, w->echk_cap * sizeof *w->echk);
    for (i = 0; i < w->nstages; i++) sts__free(&m, w->stages[i].p, STS__STAGE);
    sts__free(&m, w->stages, w->stages ? (STS__STAGES_PER_COLUMN * w->c.ncols + 1) * sizeof *w->stages : 0);
    sts__free(&m, w->ord, w->ord_cap * sizeof *w->ord);
    sts__free(&m, w->rspec, w->c.ncols * sizeof *w->rspec);
    sts__free(&m, w->rhash, 6 * w->c.ncols * sizeof *w->rhash);
    sts__free(&m, w->rrep, 5 * w->c.ncols * sizeof *w->rrep);
    for (i = 0; i < w->nchunks; i++) sts__free(&m, w->chunks[i].block, w->chunks[i].block_size);
    sts__free(&m, w->chunks, w->chunks_cap * sizeof *w->chunks);
    sts__free(&m, w->keys, w->keys_cap * sizeof *w->keys);
    sts__index_free(&m, &w->kindex);
    for (c = w->names; c;) { sts__chunk *next = c->next; sts__free(&m, c, c->size); c = next; }
    if (w->names_spare) sts__free(&m, w->names_spare, w->names_spare->size);
    sts__kv_shapes_free(w);
    sts__free(&m, w->sink, sizeof *w->sink);
    sts__free(&m, w->hbuf, w->hbuf_cap);
    sts__free(&m, w->hmem, w->hmem_cap);
    sts__free(&m, w->dir, w->dir_size);
    sts__lock_free(&m, &w->job);
    sts__wcfg_free(&w->c);
    sts__free(&m, w, sizeof *w);
}
/* >>commit ---- the dataset commit ---- */
typedef struct sts__cshard {        /* a shard named by a commit message (or a manifest, or a listing) */
    char *name;                     /* NUL-terminated copy, the commit's to free */
    size_t name_len;
    uint64_t samples, bytes, tensors;
    uint64_t crc32c;                /* the file's CRC-32C, or UINT64_MAX when none was recorded */
    size_t msg;
    sts_file *f;                    /* header-only */
    size_t first_ref, max_len;      /* sts__commit_keys: its first tensor's ref, its longest name and */
    uint32_t max_rank;              /* its largest rank */
} sts__cshard;

typedef struct sts__cref {          /* KV: a tensor of the dataset, for the key index */
    uint64_t hash;
    const char *name;
    size_t len;
    uint32_t shard, t;
} sts__cref;

typedef struct sts__commit {
    sts__mem mem;
    const char *dir;
    sts__jdoc *docs;
    size_t ndocs, docs_cap;
    uint64_t *tasks;                /* each message's task id (docs_cap of them) */
    sts__cshard *shards;
    size_t nshards, shards_cap;
    sts__scol *cols;
    size_t ncols, cols_cap;
    int kv;
    uint64_t batch_size;
    const char *sep;                /* the options' or the manifest's: outlives the commit */
    size_t sep_len;
    sts_duplicates dup;
    sts__cref *refs;
    size_t nrefs;
    uint32_t *winner;               /* per ref, 1 when it is its key's winner (batch mode: every ref) */
    size_t winners;                 /* refs that won */
    uint64_t total_size;            /* their data bytes */
    char dataset_id[37];
    sts__manifest man;              /* the published manifest read before: reindex's source, overwrite's old shards */
    sts__joblock lock;              /* commit: the job that holds the folder */
    size_t threads;                 /* threads that render the index; 0: by its size (sts__commit_threads) */
} sts__commit;

STS__PRIVATE sts_result sts__msg_fail(sts_error *err, size_t m, const char *what) {
    return sts__failx(err, STS_RULE_MESSAGE, "commit message %z: %s", m, what);
}
/* Reads message m's fields into the commit (and checks them against the others). */
/* Message m's shards join the commit's list. */
STS__PRIVATE sts_result sts__msg_shards(sts__commit *c, size_t m, uint32_t sh, sts_error *err) {
    const sts__jdoc *d = &c->docs[m];
    uint32_t s, i;
    for (i = 0, s = sh + 1; i < d->tok[sh].count; i++, s = sts__jdoc_next(d, s)) {
        sts__cshard *x = &c->shards[c->nshards];
        uint32_t f;
        if (d->tok[s].type != '{') return sts__msg_fail(err, m, "a shard entry is not an object");
        f = sts__jdoc_get(d, s, "shard_path");
        if (!f || d->tok[f].type != '"') return sts__msg_fail(err, m, "a shard has no shard_path");
        memset(x, 0, sizeof *x);
        if (!(x->name = sts__jdoc_dup(&c->mem, d, f, &x->name_len))) return sts__nomem(err, "a shard name");
        c->nshards++;
        /* never a path: a message cannot point outside dir */
        if (memchr(x->name, 0, x->name_len) || !sts__is_shard_name(x->name))
            return sts__failx(err, STS_RULE_MESSAGE, "commit message %z: shard_path %q is not a shard name of this "
                                                     "library", m,
                              x->name, x->name_len);
        if (!(f = sts__jdoc_get(d, s, "samples_count")) || !sts__jdoc_u64(d, f, &x->samples) ||
            !(f = sts__jdoc_get(d, s, "bytes")) || !sts__jdoc_u64(d, f, &x->bytes) ||
            !(f = sts__jdoc_get(d, s, "tensors")) || !sts__jdoc_u64(d, f, &x->tensors))
            return sts__failx(err, STS_RULE_MESSAGE, "commit message %z: shard %q needs samples_count, bytes and "
                                                     "tensors", m, x->name, x->name_len);
        x->crc32c = UINT64_MAX;
        if ((f = sts__jdoc_get(d, s, "crc32c")) != 0 && (!sts__jdoc_u64(d, f, &x->crc32c) || x->crc32c > 0xffffffffu))
            return sts__failx(err, STS_RULE_MESSAGE, "commit message %z: shard %q has a crc32c that is not a 32-bit "
                              "integer", m, x->name, x->name_len);
        x->msg = m;
    }
    return STS_OK;
}
/* Message m's schema merges into the commit's: tasks agree on dtypes; batch shapes agree past
   the batch dimension; KV dims that differ become -1. */
STS__PRIVATE sts_result sts__msg_schema(sts__commit *c, size_t m, uint32_t sh, sts_error *err) {
    const sts__jdoc *d = &c->docs[m];
    uint32_t s, i, k;
    for (i = 0, s = sh + 1; i < d->tok[sh].count; i++, s = sts__jdoc_next(d, s + 1)) {
        sts__scol col, *have = NULL;
        size_t j;
        sts_result r;
        if ((r = sts__scol_read(&c->mem, d, s, &col, "a commit message", STS_RULE_MESSAGE, err)) != STS_OK) return r;
        for (j = 0; j < c->ncols; j++)
            if (c->cols[j].name_len == col.name_len && memcmp(c->cols[j].name, col.name, col.name_len) == 0)
                have = &c->cols[j];
        if (!have) {
            if (c->ncols == c->cols_cap && !sts__grow(&c->mem, (void **)&c->cols, &c->cols_cap, c->ncols + 1,
                                                      sizeof *c->cols)) {
                sts__scol_free(&c->mem, &col);
                return sts__nomem(err, "the merged schema");
            }
            c->cols[c->ncols++] = col;
            continue;
        }
        r = STS_OK;
        if (have->dtype != col.dtype)
            r = sts__failx(err, STS_RULE_MESSAGE, "tasks disagree on the dtype of column %q (%s and %s)", col.name,
                           col.name_len,
                           sts_dtype_name(have->dtype), sts_dtype_name(col.dtype));
        else if (have->rank != col.rank) {
            if (!c->kv)
                r = sts__failx(err, STS_RULE_MESSAGE, "tasks disagree on the shape of column %q", col.name,
                               col.name_len);
            else have->rank_varies = 1;
        } else
            for (k = 0; k < col.rank && r == STS_OK; k++)
                if (have->dims[k] != col.dims[k]) {
                    if (!c->kv && k > 0)
                        r = sts__failx(err, STS_RULE_MESSAGE, "tasks disagree on the shape of column %q", col.name,
                                       col.name_len);
                    if (c->kv) have->dims[k] = -1;
                }
        sts__scol_free(&c->mem, &col);
        if (r != STS_OK) return r;
    }
    return STS_OK;
}
/* Reads message m's fields into the commit (and checks them against the options and the others).
   With count_only, only counts its shards. */
STS__PRIVATE sts_result sts__msg_read(sts__commit *c, size_t m, size_t *nshards_total, int count_only, sts_error *err) {
    const sts__jdoc *d = &c->docs[m];
    uint32_t t, sh;
    uint64_t v;
    int kv;
    sts_result r;
    if (d->tok[0].type != '{') return sts__msg_fail(err, m, "not a JSON object");
    t = sts__jdoc_get(d, 0, "sts_task_commit");
    if (!t || !sts__jdoc_u64(d, t, &v) || v != 1)
        return sts__msg_fail(err, m, "not a commit message of sts_task_commit (version 1)");
    t = sts__jdoc_get(d, 0, "task");
    if (!t || !sts__jdoc_u64(d, t, &v) || v > 0xffffffffu) return sts__msg_fail(err, m, "task must be a task id");
    if (count_only) c->tasks[m] = v;
    t = sts__jdoc_get(d, 0, "mode");
    if (sts__jdoc_is(d, t, "kv")) kv = 1;
    else if (sts__jdoc_is(d, t, "batch")) kv = 0;
    else return sts__msg_fail(err, m, "mode must be \"kv\" or \"batch\"");
    t = sts__jdoc_get(d, 0, "job");
    if (!t || d->tok[t].type != '"')
        return sts__msg_fail(err, m, "names no job: its task writer was opened in a folder that no job held "
                                     "(call sts_dataset_prepare before the tasks)");
    {
        size_t jl;
        char *job = sts__jdoc_dup(&c->mem, d, t, &jl);
        int same;
        if (!job) return sts__nomem(err, "a job id");
        same = jl == c->lock.job_len && memcmp(job, c->lock.job, jl) == 0;
        if (!same) {
            r = sts__failx(err, STS_RULE_MESSAGE, "commit message %z belongs to job %q, but %q is held by job %q: a "
                           "message of another job is never committed", m, job, jl, c->dir, strlen(c->dir), c->lock.job,
                           c->lock.job_len);
            sts__free(&c->mem, job, jl + 1);
            return r;
        }
        sts__free(&c->mem, job, jl + 1);
    }
    sh = sts__jdoc_get(d, 0, "shards");
    if (!sh || d->tok[sh].type != '[') return sts__msg_fail(err, m, "shards must be an array");
    if (count_only) {
        *nshards_total += d->tok[sh].count;
        return STS_OK;
    }
    if (kv != c->kv)
        return sts__msg_fail(err, m, kv ? "is a KV-mode task, but the options give batch_size" : "is a batch-mode "
                "task, but the options give name_col");
    t = sts__jdoc_get(d, 0, "kv_separator");
    if (!t || d->tok[t].type != '"') return sts__msg_fail(err, m, "kv_separator must be a string");
    {
        size_t n;
        char *sep = sts__jdoc_dup(&c->mem, d, t, &n);
        int same;
        if (!sep) return sts__nomem(err, "a separator");
        same = n == c->sep_len && memcmp(sep, c->sep, n) == 0;
        sts__free(&c->mem, sep, n + 1);
        if (!same) return sts__msg_fail(err, m, "kv_separator differs from the options'");
    }
    t = sts__jdoc_get(d, 0, "duplicates");
    if (!sts__jdoc_is(d, t, c->dup == STS_DUPLICATES_FAIL ? "fail" : "lastWin"))
        return sts__msg_fail(err, m, "duplicatesStrategy differs from the options'");
    t = sts__jdoc_get(d, 0, "batch_size");
    if (!t || !sts__jdoc_u64(d, t, &v) || v != c->batch_size)
        return sts__msg_fail(err, m, "batch_size differs from the options'");
    if ((r = sts__msg_shards(c, m, sh, err)) != STS_OK) return r;
    sh = sts__jdoc_get(d, 0, "schema");
    if (!sh || d->tok[sh].type != '{') return sts__msg_fail(err, m, "schema must be an object");
    return sts__msg_schema(c, m, sh, err);
}
STS__PRIVATE int sts__by_task(const void *ctx, size_t a, size_t b) {
    const uint64_t *t = (const uint64_t *)ctx;
    return t[a] < t[b];
}
STS__PRIVATE int sts__by_shard_name(const void *ctx, size_t a, size_t b) {  /* path order, for listings */
    const sts__cshard *s = (const sts__cshard *)ctx;
    return strcmp(s[a].name, s[b].name) < 0;
}
STS__PRIVATE void sts__commit_free(sts__commit *c) {
    size_t i;
    for (i = 0; i < c->ndocs; i++) sts__jdoc_free(&c->docs[i]);
    sts__free(&c->mem, c->docs, c->docs_cap * sizeof *c->docs);
    sts__free(&c->mem, c->tasks, c->docs_cap * sizeof *c->tasks);
    for (i = 0; i < c->nshards; i++) {
        sts_close(c->shards[i].f);
        sts__free(&c->mem, c->shards[i].name, c->shards[i].name_len + 1);
    }
    sts__free(&c->mem, c->shards, c->shards_cap * sizeof *c->shards);
    for (i = 0; i < c->ncols; i++) sts__scol_free(&c->mem, &c->cols[i]);
    sts__free(&c->mem, c->cols, c->cols_cap * sizeof *c->cols);
    sts__manifest_free(&c->man);
    sts__lock_free(&c->mem, &c->lock);
    sts__free(&c->mem, c->refs, (c->nrefs ? c->nrefs : 1) * sizeof *c->refs);
    sts__free(&c->mem, c->winner, (c->nrefs ? c->nrefs : 1) * sizeof *c->winner);
}
/* The shards the published manifest (if any) lists: never removed by a failed or aborted job,
   even when a stale commit message names them. A manifest that cannot be read protects every shard
   a message names (nothing is removed rather than something live). */
typedef struct sts__live {
    sts__manifest man;
    char **names;
    size_t n;
    int all;            /* the manifest could not be read: every shard counts as published */
    sts_result why;     /* and why (NOMEM when an allocation failed) */
} sts__live;
STS__PRIVATE int sts__by_cstr(const void *ctx, size_t a, size_t b) {
    return strcmp(((char *const *)ctx)[a], ((char *const *)ctx)[b]) < 0;
}
STS__PRIVATE void sts__live_free(const sts__mem *m, sts__live *l) {
    sts__free(m, l->names, (l->n ? l->n : 1) * sizeof *l->names);
    sts__manifest_free(&l->man);
    memset(l, 0, sizeof *l);
}
STS__PRIVATE void sts__live_load(const sts__mem *m, const char *dir, sts__live *l) {
    size_t i;
    int found;
    memset(l, 0, sizeof *l);
    if ((l->why = sts__manifest_read(m, dir, &l->man, &found, NULL)) != STS_OK) { l->all = 1; return; }
    if (!found || !l->man.nshards) return;
    if (!(l->names = (char **)sts__alloc(m, l->man.nshards * sizeof *l->names))) {
        l->all = 1;
        l->why = STS_ERR_NOMEM;
        return;
    }
    l->n = l->man.nshards;
    for (i = 0; i < l->n; i++) l->names[i] = l->man.shards[i].name;
    /* cannot sort: protect every shard */
    if (!sts__sort_records(m, l->names, l->n, sizeof *l->names, sts__by_cstr)) {
        l->all = 1;
        l->why = STS_ERR_NOMEM;
    }
}
STS__PRIVATE int sts__live_has(const sts__live *l, const char *name) {
    size_t lo = 0, hi = l->n;
    if (l->all) return 1;
    while (lo < hi) {
        size_t mid = (lo + hi) / 2;
        int c = strcmp(l->names[mid], name);
        if (!c) return 1;
        if (c < 0) lo = mid + 1; else hi = mid;
    }
    return 0;
}
/* Removes every shard the messages name (the tasks' output): the folder goes back to how it was.
   A message naming a shard of the published dataset is refused whole (dataset.published). Each
   message on its own, so a bad one does not keep the others' shards. Returns the first problem
   with a message, or STS_OK. */
STS__PRIVATE sts_result sts__remove_job(const sts__mem *m, const char *dir, const char *const *messages,
                                        const size_t *lens, size_t n, sts_error *err) {
    sts__live live;
    sts_result r = STS_OK;
    size_t i;
    sts__live_load(m, dir, &live);
    for (i = 0; i < n; i++) {
        sts__jdoc d;
        uint32_t sh, s, j;
        size_t len = lens ? lens[i] : (messages[i] ? strlen(messages[i]) : 0);
        sts_result r1;
        int pass, keep;
        if (!messages[i]) continue;
        if ((r1 = sts__jdoc_parse(&d, messages[i], len, m, "a commit message", STS_RULE_MESSAGE,
                                  r == STS_OK ? err : NULL)) != STS_OK) {  /* err tells the first problem */
            if (r == STS_OK) r = r1;
            continue;
        }
        sh = d.tok[0].type == '{' ? sts__jdoc_get(&d, 0, "shards") : 0;
        if (!sh || d.tok[sh].type != '[') {
            if (r == STS_OK) r = sts__msg_fail(err, i, "shards must be an array");
            sts__jdoc_free(&d);
            continue;
        }
        /* pass 0 refuses a message naming a published shard (or one it cannot check), pass 1 removes */
        for (pass = 0, keep = 0; pass < 2 && !keep; pass++) {
            for (j = 0, s = sh + 1; j < d.tok[sh].count && !keep; j++, s = sts__jdoc_next(&d, s)) {
                uint32_t f = d.tok[s].type == '{' ? sts__jdoc_get(&d, s, "shard_path") : 0;
                char *name, *p;
                size_t nl, sz;
                int ours;
                if (!f || d.tok[f].type != '"') continue;
                if (!(name = sts__jdoc_dup(m, &d, f, &nl))) {
                    if (r == STS_OK) r = sts__nomem(err, "a shard name");
                    keep = pass == 0;
                    continue;
                }
                ours = !memchr(name, 0, nl) && sts__is_shard_name(name);  /* never outside dir */
                if (pass == 0 && ours && sts__live_has(&live, name)) {
                    keep = 1;
                    if (r == STS_OK && live.all && live.why == STS_ERR_NOMEM)
                        r = sts__nomem(err, "the folder's manifest (no shard is removed without it)");
                    else if (r == STS_OK)
                        r = sts__failx(err, STS_RULE_DATASET_PUBLISHED, "commit message %z names %q, %s: nothing "
                                       "it names is removed (was its job committed already?)", i, name, nl,
                                       live.all ? "and the folder's manifest is unreadable (every shard is kept)"
                                                : "a shard of the published dataset");
                } else if (pass == 1 && ours) {
                    if ((p = sts__join(m, dir, name, &sz)) != NULL) {
                        sts__remove_path(p);
                        sts__free(m, p, sz);
                    } else if (r == STS_OK)
                        r = sts__nomem(err, "a shard's path (the shard stays)");
                }
                sts__free(m, name, nl + 1);
            }
        }
        sts__jdoc_free(&d);
    }
    sts__live_free(m, &live);
    return r;
}
STS__PRIVATE sts_result sts__commit_load(sts__commit *c, const char *const *messages, const size_t *lens, size_t n,
                                         sts_error *err) {
    size_t i, total = 0;
    sts_result r;
    if (!(c->docs = (sts__jdoc *)sts__alloc(&c->mem, (n ? n : 1) * sizeof *c->docs)))
        return sts__nomem(err, "the commit messages");
    c->docs_cap = n ? n : 1;
    memset(c->docs, 0, (n ? n : 1) * sizeof *c->docs);
    if (!(c->tasks = (uint64_t *)sts__alloc(&c->mem, (n ? n : 1) * sizeof *c->tasks)))
        return sts__nomem(err, "the commit messages");
    for (i = 0; i < n; i++) {
        size_t len = lens ? lens[i] : (messages[i] ? strlen(messages[i]) : 0);
        if (!messages[i]) return sts__msg_fail(err, i, "is NULL");
        c->ndocs = i + 1;
        if ((r = sts__jdoc_parse(&c->docs[i], messages[i], len, &c->mem, "a commit message", STS_RULE_MESSAGE,
                                 err)) != STS_OK) return r;
        if ((r = sts__msg_read(c, i, &total, 1, err)) != STS_OK) return r;
    }
    if (n > 1) {  /* one message a task: two attempts of a task (or one message twice) would both count */
        size_t *idx = (size_t *)sts__alloc(&c->mem, 2 * n * sizeof *idx), *ord;
        if (!idx) return sts__nomem(err, "the commit messages");
        for (i = 0; i < n; i++) idx[i] = i;
        ord = sts__msort(idx, idx + n, n, sts__by_task, c->tasks);
        for (i = 1; i < n && c->tasks[ord[i - 1]] != c->tasks[ord[i]]; i++) {}
        if (i < n) {
            size_t a = ord[i - 1] < ord[i] ? ord[i - 1] : ord[i], b = ord[i - 1] < ord[i] ? ord[i] : ord[i - 1];
            r = sts__failx(err, STS_RULE_MESSAGE, "commit messages %z and %z are both of task %U: commit one "
                           "message a task (the winning attempt's; sts_dataset_discard removes the other's shards)",
                           a, b, c->tasks[a]);
        }
        sts__free(&c->mem, idx, 2 * n * sizeof *idx);
        if (i < n) return r;
    }
    if (!(c->shards = (sts__cshard *)sts__alloc(&c->mem, (total ? total : 1) * sizeof *c->shards)))
        return sts__nomem(err, "the shard list");
    c->shards_cap = total ? total : 1;
    for (i = 0; i < n; i++)
        if ((r = sts__msg_read(c, i, &total, 0, err)) != STS_OK) return r;
    return STS_OK;
}
/* Shards in path order; each must exist with its recorded size and a valid header. The headers
   are read on several threads (sts__par_run, each thread every T-th shard) when the memory may
   be shared (sts__mem_shared) and the commit has threads; a shard that fails is opened again on
   the caller's thread, which reports the first in order exactly as a one-thread check would. */
typedef struct sts__cparse {
    sts__commit *c;
    char **paths;
    sts_result *res;
    const sts_options *o;
    size_t T;
} sts__cparse;
STS__PRIVATE void sts__cparse_job(void *ctx, size_t i) {
    sts__cparse *p = (sts__cparse *)ctx;
    size_t s;
    for (s = i; s < p->c->nshards; s += p->T) p->res[s] = sts_open(p->paths[s], p->o, &p->c->shards[s].f, NULL);
}
STS__PRIVATE sts_result sts__commit_check_shards(sts__commit *c, sts_error *err) {
    size_t i, T = 1, *psz = NULL;
    char **paths = NULL;
    sts_result *res = NULL;
    sts_options o;
    sts_result r = STS_OK;
    if (!sts__sort_records(&c->mem, c->shards, c->nshards, sizeof *c->shards, sts__by_shard_name))
        return sts__nomem(err, "the shard order");
    for (i = 1; i < c->nshards; i++)
        if (strcmp(c->shards[i - 1].name, c->shards[i].name) == 0)
            return sts__failx(err, STS_RULE_MESSAGE, "shard %q is named by two commit messages", c->shards[i].name,
                              strlen(c->shards[i].name));
    memset(&o, 0, sizeof o);
    o.allocator = c->mem.a;
    o.header_only = 1;
    o.strict = 1;  /* our own files: the writer is strict */
    if (c->nshards > 1 && sts__mem_shared(&c->mem)) {
        T = c->threads ? c->threads : sts__cpus() < 16 ? sts__cpus() : 16;  /* as for the index */
        if (T > c->nshards) T = c->nshards;
    }
    if (T > 1) {  /* every path first, on this thread */
        if (!(paths = (char **)sts__alloc(&c->mem, c->nshards * sizeof *paths)) ||
            !(psz = (size_t *)sts__alloc(&c->mem, c->nshards * sizeof *psz)) ||
            !(res = (sts_result *)sts__alloc(&c->mem, c->nshards * sizeof *res))) {
            r = sts__nomem(err, "the shard paths");
            goto done;
        }
        memset(paths, 0, c->nshards * sizeof *paths);
        for (i = 0; i < c->nshards; i++)
            if (!(paths[i] = sts__join(&c->mem, c->dir, c->shards[i].name, &psz[i]))) {
                r = sts__nomem(err, "a shard path");
                goto done;
            }
        {
            sts__cparse p;
            p.c = c; p.paths = paths; p.res = res; p.o = &o; p.T = T;
            sts__par_run(sts__cparse_job, &p, T);
        }
    }
    for (i = 0; i < c->nshards && r == STS_OK; i++) {
        sts__cshard *s = &c->shards[i];
        size_t sz = 0;
        char *p = paths ? paths[i] : NULL;
        if (!paths || res[i] != STS_OK) {
            if (!p && !(p = sts__join(&c->mem, c->dir, s->name, &sz))) return sts__nomem(err, "a shard path");
            if (s->f) { sts_close(s->f); s->f = NULL; }
            r = sts_open(p, &o, &s->f, err);
        }
        if (r != STS_OK) {
            char inner[256];
            memcpy(inner, err ? err->message : "", err ? sizeof inner : 1);
            /* out of memory is not the shard's fault */
            r = sts__failx(err, r == STS_ERR_NOMEM ? STS_RULE_ALLOC : STS_RULE_SHARD, "shard %q: %s", s->name,
                           strlen(s->name), err ? inner : "unreadable");
        } else if (sts_file_size(s->f) != s->bytes)
            r = sts__failx(err, STS_RULE_SHARD, "shard %q has %U bytes, but its task recorded %U", s->name,
                           strlen(s->name), sts_file_size(s->f), s->bytes);
        else if (s->tensors != UINT64_MAX && sts_count(s->f) != s->tensors)
            r = sts__failx(err, STS_RULE_SHARD, "shard %q holds %z tensors, but its task recorded %U", s->name,
                           strlen(s->name), sts_count(s->f), s->tensors);
        if (sz) sts__free(&c->mem, p, sz);
    }
done:
    if (paths) {
        for (i = 0; i < c->nshards; i++) sts__free(&c->mem, paths[i], paths[i] ? psz[i] : 0);
        sts__free(&c->mem, paths, c->nshards * sizeof *paths);
    }
    if (psz) sts__free(&c->mem, psz, c->nshards * sizeof *psz);
    if (res) sts__free(&c->mem, res, c->nshards * sizeof *res);
    return r;
}
/* Threads for the key index and the index files: the commit's setting, or one per online CPU
   (at most 16) when the dataset has enough keys to share. */
STS__PRIVATE size_t sts__commit_threads(const sts__commit *c) {
    size_t t = c->threads ? c->threads : c->nrefs >= 16384 ? sts__cpus() : 1;
    return t < 1 ? 1 : t > 16 && !c->threads ? 16 : t > STS__PAR_MAX ? STS__PAR_MAX : t;
}
/* ---- the key index, on several threads ----
   Every tensor of the dataset becomes a ref, in path order; in KV mode the refs' keys go through
   one index, duplicates failing or the later copy winning. T jobs (sts__par_run) do it in three
   steps, each job touching only what its number gives it:
   1. refs: job j fills an even range of the refs (name, shard, hash, data bytes) and counts them
      per partition, a function of the key's hash, so that every copy of a key falls in one;
   2. scatter: job j copies its refs' (hash, ref) into the partitions, which stay in ref order;
   3. duplicates: job p indexes partition p alone (tagged slots: a new key rarely touches a ref).
   Each partition meets a key's copies in the order one index over all refs would, so the
   winners are the same on any number of threads, and the first duplicate (fail) is the earliest
   partition's first one. The caller's thread allocates everything first: jobs never allocate. */
typedef struct sts__ckres {       /* one job's results */
    uint64_t bytes, lost_bytes;   /* its refs' data bytes (step 1); the losers' among them (step 3) */
    size_t losers;                /* step 3: refs that lost to another copy of their key (lastWin) */
    size_t dup, was;              /* step 3 (fail): the first ref that met a copy, and the copy; dup SIZE_MAX: none */
    size_t edge[2], edge_len[2];  /* step 1: the shards its range cuts (SIZE_MAX: none), their longest */
    uint32_t edge_rank[2];        /* name and largest rank within the range */
} sts__ckres;
typedef struct sts__ckeys {
    sts__commit *c;
    size_t T;
    size_t *cnt;                  /* [T * T] job j's refs in partition p, then where its next one goes */
    size_t *pstart;               /* [T + 1] partition p holds slots pstart[p] .. pstart[p + 1] */
    uint64_t *ph;                 /* per slot: the ref's hash */
    uint32_t *pk;                 /*           the ref */
    sts__index *ix;               /* [T] */
    sts__ckres *res;              /* [T] */
} sts__ckeys;
STS__PRIVATE size_t sts__ckeys_part(uint64_t h, size_t T) {  /* a key's partition, from all its hash's bits */
    return (size_t)((((h * 0x9e3779b97f4a7c15ull) >> 32) * (uint64_t)T) >> 32);
}
STS__PRIVATE size_t sts__ckeys_lo(const sts__ckeys *q, size_t j) {  /* job j's refs: lo(j) .. lo(j + 1) */
    return (size_t)((uint64_t)q->c->nrefs * j / q->T);
}
STS__PRIVATE size_t sts__ckeys_shard(const sts__commit *c, size_t k) {  /* the shard holding ref k */
    size_t lo = 0, hi = c->nshards;  /* the last shard whose first ref is <= k, then past empty ones */
    while (hi - lo > 1) {
        size_t mid = lo + (hi - lo) / 2;
        if (c->shards[mid].first_ref <= k) lo = mid;
        else hi = mid;
    }
    while (lo < c->nshards && k >= c->shards[lo].first_ref + sts_count(c->shards[lo].f)) lo++;
    return lo;
}
STS__PRIVATE void sts__ckeys_refs(void *ctx, size_t j) {  /* step 1 */
    sts__ckeys *q = (sts__ckeys *)ctx;
    sts__commit *c = q->c;
    sts__ckres *res = &q->res[j];
    size_t k = sts__ckeys_lo(q, j), hi = sts__ckeys_lo(q, j + 1), s, *cnt = q->cnt + j * q->T;
    for (s = k < hi ? sts__ckeys_shard(c, k) : c->nshards; k < hi; s++) {
        sts__cshard *sh = &c->shards[s];
        const sts_file *f = sh->f;
        size_t end = sh->first_ref + sts_count(f), t = k - sh->first_ref, len = 0, lo = k;
        uint32_t rank = 0;
        if (end > hi) end = hi;
        for (; k < end; k++, t++) {
            const sts_tensor *x = sts_at(f, t);
            sts__cref *ref = &c->refs[k];
            ref->name = x->name; ref->len = x->name_len; ref->shard = (uint32_t)s; ref->t = (uint32_t)t;
            if (x->rank > rank) rank = x->rank;
            if (x->name_len > len) len = x->name_len;
            res->bytes += x->end - x->begin;
            c->winner[k] = 1;
            if (c->kv) {
                ref->hash = sts__hash(x->name, x->name_len, 0x6b657973u);
                cnt[sts__ckeys_part(ref->hash, q->T)]++;
            }
        }
        if (lo == sh->first_ref && end == sh->first_ref + sts_count(f)) {  /* the whole shard: this job's */
            sh->max_len = len;
            sh->max_rank = rank;
        } else {  /* shared with the job before or after: the caller takes the larger */
            int e = lo == sh->first_ref;
            res->edge[e] = s; res->edge_len[e] = len; res->edge_rank[e] = rank;
        }
    }
}
STS__PRIVATE void sts__ckeys_scatter(void *ctx, size_t j) {  /* step 2 */
    sts__ckeys *q = (sts__ckeys *)ctx;
    size_t k, hi = sts__ckeys_lo(q, j + 1), *next = q->cnt + j * q->T;
    for (k = sts__ckeys_lo(q, j); k < hi; k++) {
        uint64_t h = q->c->refs[k].hash;
        size_t at = next[sts__ckeys_part(h, q->T)]++;
        q->ph[at] = h;
        q->pk[at] = (uint32_t)k;
    }
}
STS__PRIVATE void sts__ckeys_dups(void *ctx, size_t p) {  /* step 3 */
    sts__ckeys *q = (sts__ckeys *)ctx;
    sts__commit *c = q->c;
    sts__index *ix = &q->ix[p];
    sts__ckres *res = &q->res[p];
    size_t i, base = q->pstart[p];
    for (i = base; i < q->pstart[p + 1]; i++) {
        uint64_t h = q->ph[i];
        size_t k = q->pk[i], pos = (size_t)h & ix->mask, was;
        const sts__cref *ref = &c->refs[k];
        uint32_t want = (uint32_t)(h >> 32) & ix->tags, it = STS__EMPTY;
        for (;; pos = (pos + 1) & ix->mask) {
            uint32_t slot = ix->slots[pos];
            const sts__cref *o;
            if (slot == STS__EMPTY) break;
            if ((slot & ix->tags) != want) continue;
            o = &c->refs[q->pk[base + (slot & ~ix->tags)]];
            if (o->len == ref->len && (!ref->len || memcmp(o->name, ref->name, ref->len) == 0)) {
                it = slot & ~ix->tags;
                break;
            }
        }
        if (it != STS__EMPTY) {
            was = q->pk[base + it];
            if (c->dup == STS_DUPLICATES_FAIL) {
                res->dup = k;
                res->was = was;
                return;
            }
            /* lastWin: the later shard in natural order (task, then shard number) wins */
            if (sts__natcmp(c->shards[c->refs[was].shard].name, c->shards[ref->shard].name) > 0) was = k;
            else sts__index_put(ix, pos, (uint32_t)(i - base), h);
            {
                const sts_tensor *x = sts_at(c->shards[c->refs[was].shard].f, c->refs[was].t);
                c->winner[was] = 0;
                res->losers++;
                res->lost_bytes += x->end - x->begin;
            }
            continue;
        }
        sts__index_put(ix, pos, (uint32_t)(i - base), h);
    }
}
/* The refs, the winners (c->winner), c->total_size and c->winners; in KV mode a duplicated key
   fails (naming the earliest copy found in path order, as one pass would) or the later wins. */
STS__PRIVATE sts_result sts__commit_keys(sts__commit *c, sts_error *err) {
    sts__ckeys q;
    size_t i, j, total = 0, T = 1;
    sts_result r = STS_OK;
    memset(&q, 0, sizeof q);
    for (i = 0; i < c->nshards; i++) {
        c->shards[i].first_ref = total;
        total += sts_count(c->shards[i].f);
    }
    if (c->nshards > 0xfffffffeu || total > 0xfffffffeu)  /* the index and the reader number them in 32 bits */
        return sts__failx(err, STS_RULE_MESSAGE, "the tasks wrote %z shards and %z tensors; a dataset holds fewer "
                                                 "than 2^32 "
                          "of each", c->nshards, total);
    c->nrefs = total;
    if (!(c->refs = (sts__cref *)sts__alloc(&c->mem, (total ? total : 1) * sizeof *c->refs)) ||
        !(c->winner = (uint32_t *)sts__alloc(&c->mem, (total ? total : 1) * sizeof *c->winner)))
        return sts__nomem(err, "the key index");
    q.c = c;
    q.T = T = sts__commit_threads(c);
    q.cnt = (size_t *)sts__alloc(&c->mem, T * T * sizeof *q.cnt);
    q.pstart = (size_t *)sts__alloc(&c->mem, (T + 1) * sizeof *q.pstart);
    q.res = (sts__ckres *)sts__alloc(&c->mem, T * sizeof *q.res);
    if ((q.ix = (sts__index *)sts__alloc(&c->mem, T * sizeof *q.ix)) != NULL) memset(q.ix, 0, T * sizeof *q.ix);
    if (!q.cnt || !q.pstart || !q.res || !q.ix) { r = sts__nomem(err, "the key index"); goto done; }
    memset(q.cnt, 0, T * T * sizeof *q.cnt);
    for (j = 0; j < T; j++) {
        memset(&q.res[j], 0, sizeof q.res[j]);
        q.res[j].dup = q.res[j].edge[0] = q.res[j].edge[1] = (size_t)-1;
    }
    sts__par_run(sts__ckeys_refs, &q, T);
    c->total_size = 0;
    for (j = 0; j < T; j++) {
        c->total_size += q.res[j].bytes;
        for (i = 0; i < 2; i++)
            if (q.res[j].edge[i] != (size_t)-1) {
                sts__cshard *sh = &c->shards[q.res[j].edge[i]];
                if (q.res[j].edge_len[i] > sh->max_len) sh->max_len = q.res[j].edge_len[i];
                if (q.res[j].edge_rank[i] > sh->max_rank) sh->max_rank = q.res[j].edge_rank[i];
            }
    }
    c->winners = total;
    if (!c->kv) goto done;
    /* the partitions' slots, and where each job's refs go in them */
    for (i = 0, q.pstart[0] = 0; i < T; i++) {
        size_t at = q.pstart[i];
        for (j = 0; j < T; j++) {
            size_t n = q.cnt[j * T + i];
            q.cnt[j * T + i] = at;
            at += n;
        }
        q.pstart[i + 1] = at;
        if (!sts__index_init_tagged(&c->mem, &q.ix[i], at - q.pstart[i])) {
            r = sts__nomem(err, "the key index");
            goto done;
        }
    }
    if (!(q.ph = (uint64_t *)sts__alloc(&c->mem, (total ? total : 1) * sizeof *q.ph)) ||
        !(q.pk = (uint32_t *)sts__alloc(&c->mem, (total ? total : 1) * sizeof *q.pk))) {
        r = sts__nomem(err, "the key index");
        goto done;
    }
    sts__par_run(sts__ckeys_scatter, &q, T);
    sts__par_run(sts__ckeys_dups, &q, T);
    for (j = 0, i = (size_t)-1; j < T; j++) {  /* the earliest first duplicate */
        if (q.res[j].dup != (size_t)-1 && (i == (size_t)-1 || q.res[j].dup < q.res[i].dup)) i = j;
        c->total_size -= q.res[j].lost_bytes;
        c->winners -= q.res[j].losers;
    }
    if (i != (size_t)-1) {
        const sts__cref *dup = &c->refs[q.res[i].dup], *was = &c->refs[q.res[i].was];
        r = sts__failx(err, STS_RULE_DUPLICATE_KEY, "key %q is in shard %q and in shard %q (duplicatesStrategy=fail)",
                       dup->name, dup->len, c->shards[was->shard].name, strlen(c->shards[was->shard].name),
                       c->shards[dup->shard].name, strlen(c->shards[dup->shard].name));
    }
done:
    if (q.ix) for (j = 0; j < T; j++) sts__index_free(&c->mem, &q.ix[j]);
    sts__free(&c->mem, q.ix, T * sizeof *q.ix);
    sts__free(&c->mem, q.res, T * sizeof *q.res);
    sts__free(&c->mem, q.pstart, (T + 1) * sizeof *q.pstart);
    sts__free(&c->mem, q.cnt, T * T * sizeof *q.cnt);
    sts__free(&c->mem, q.ph, (total ? total : 1) * sizeof *q.ph);
    sts__free(&c->mem, q.pk, (total ? total : 1) * sizeof *q.pk);
    return r;
}
/* Every shard's name once, as JSON (json 1) or as a CSV field (json 0), in one buffer: names->p +
   at[s] .. at[s + 1]. An index repeats a shard's name for each of its keys (twice in the JSON):
   escaping it once a shard, not once a key, took half the JSON index's instructions. 0 when out
   of memory (o->oom set). */
STS__PRIVATE int sts__commit_names(sts__commit *c, int json, sts__out *names, size_t **at, sts__out *o) {
    size_t s;
    sts__out_init(names, &c->mem, -1);
    if (!(*at = (size_t *)sts__alloc(&c->mem, (c->nshards + 1) * sizeof **at))) { o->oom = 1; return 0; }
    for (s = 0; s < c->nshards; s++) {
        (*at)[s] = names->n;
        if (json) sts__out_json(names, c->shards[s].name, c->shards[s].name_len);
        else sts__out_csv(names, c->shards[s].name, c->shards[s].name_len);
    }
    (*at)[c->nshards] = names->n;
    if (names->oom) {
        sts__free(&c->mem, *at, (c->nshards + 1) * sizeof **at);
        sts__out_free(names);
        o->oom = 1;
        return 0;
    }
    return 1;
}
STS__PRIVATE void sts__commit_names_free(sts__commit *c, sts__out *names, size_t *at) {
    sts__free(&c->mem, at, (c->nshards + 1) * sizeof *at);
    sts__out_free(names);
}
/* The index writers reserve each entry's worst case once (sts__out_room), then fill it with
   plain stores: a million keys make a million entries of a dozen pieces each. */
STS__PRIVATE uint8_t *sts__cput(uint8_t *d, const void *s, size_t n) { memcpy(d, s, n); return d + n; }
#define STS__CPUT(d, lit) sts__cput((d), (lit), sizeof(lit) - 1)
STS__PRIVATE uint8_t *sts__cput_shape(uint8_t *d, const uint64_t *dims, uint32_t rank) {  /* [d0,d1] */
    uint32_t i;
    *d++ = '[';
    for (i = 0; i < rank; i++) { if (i) *d++ = ','; d = sts__u64_put(d, dims[i]); }
    *d++ = ']';
    return d;
}
STS__PRIVATE uint8_t *sts__cput_csv(uint8_t *d, const char *s, size_t n) {  /* RFC 4180: quoted when needed */
    size_t i;
    for (i = 0; i < n; i++)
        if (s[i] == ',' || s[i] == '"' || s[i] == '\r' || s[i] == '\n') break;
    if (i == n) return sts__cput(d, s, n);
    *d++ = '"';
    for (i = 0; i < n; i++) { if (s[i] == '"') *d++ = '"'; *d++ = (uint8_t)s[i]; }
    *d++ = '"';
    return d;
}
/* Worst cases: a JSON string escaped (6 bytes a byte, quotes), a shape of 20-digit dims. */
STS__PRIVATE size_t sts__esc_bound(size_t n) { return n < ((size_t)1 << 40) ? 6 * n + 2 : (size_t)-1 / 2; }
STS__PRIVATE size_t sts__shape_bound(uint32_t rank) { return 2 + 21 * (size_t)rank; }
/* The text of the previous entry's shape and end offset. A number's text is a function of its
   value and a shape's of its dims, so an entry that repeats them copies the text: a KV shard's
   keys usually share one shape (one interned dims array) and each begins where the previous one
   ended. shape_len 0: nothing kept (a shape longer than the buffer is written each time). */
typedef struct sts__crender {
    const uint64_t *dims;
    uint32_t rank;
    unsigned shape_len, end_len;
    uint64_t end;
    uint8_t shape[64], end_text[20];
} sts__crender;
STS__PRIVATE uint8_t *sts__crender_shape(sts__crender *r, uint8_t *d, const sts_tensor *x) {
    uint8_t *d0 = d;
    if (r->shape_len && x->rank == r->rank &&
        (x->shape == r->dims || memcmp(x->shape, r->dims, (size_t)x->rank * sizeof *x->shape) == 0))
        return sts__cput(d, r->shape, r->shape_len);
    d = sts__cput_shape(d, x->shape, x->rank);
    r->shape_len = (size_t)(d - d0) <= sizeof r->shape && x->rank ? (unsigned)(d - d0) : 0;
    if (r->shape_len) { memcpy(r->shape, d0, r->shape_len); r->dims = x->shape; r->rank = x->rank; }
    return d;
}
STS__PRIVATE uint8_t *sts__crender_offsets(sts__crender *r, uint8_t *d, const sts_tensor *x) {  /* b,e */
    uint8_t *e;
    if (r->end_len && x->begin == r->end) d = sts__cput(d, r->end_text, r->end_len);
    else d = sts__u64_put(d, x->begin);
    *d++ = ',';
    e = sts__u64_put(d, x->end);
    r->end = x->end;
    r->end_len = (unsigned)(e - d);
    memcpy(r->end_text, d, r->end_len);
    return e;
}
STS__PRIVATE uint8_t *sts__cput_dtype(uint8_t *d, sts_dtype t) {
    return sts__cput(d, sts__dtype_names[t], sts__dtype_name_len[t]);
}
/* The JSON key of a tensor in the index, written at d (room: sts__commit_key_bound): its name in
   KV mode (copied with its quotes when the header held it unescaped); "shard/column" in batch
   mode, where every file holds the same column names. */
STS__PRIVATE size_t sts__commit_key_bound(const sts__commit *c, const sts__cref *ref, const sts_tensor *x) {
    return sts__esc_bound(x->name_len) + (c->kv ? 0 : sts__esc_bound(c->shards[ref->shard].name_len));
}
STS__PRIVATE uint8_t *sts__commit_key(const sts__commit *c, uint8_t *d, const sts__cref *ref, const sts_tensor *x) {
    uint8_t *p;
    if (c->kv) {
        if (sts__name_raw(c->shards[ref->shard].f, x)) return sts__cput(d, x->name - 1, x->name_len + 2);
        return sts__esc_put(d, x->name, x->name_len);
    }
    p = sts__esc_put(d, c->shards[ref->shard].name, c->shards[ref->shard].name_len);
    p[-1] = '/';                                          /* the shard's closing quote */
    d = sts__esc_put(p, x->name, x->name_len);
    memmove(p, p + 1, (size_t)(d - p - 1));               /* the column's opening quote */
    return d - 1;
}
/* ---- the index's entries, rendered on several threads ----
   Each part of the index (the CSV's rows, the JSON's weight_map, the JSON's tensors) is a run of
   entries, one per winning key. A part is cut into slices: at most STS__SLICE bytes (the
   entries' worst cases summed) and an even share of the keys. A round renders as many slices
   as there are threads at once (sts__par_run), each into a buffer the caller's thread sized
   beforehand, and then writes them in order: the bytes are the same on any number of threads. */
#define STS__SLICE ((size_t)1 << 20)
enum { STS__PART_CSV, STS__PART_WEIGHT_MAP, STS__PART_TENSORS };
typedef struct sts__cslice {
    size_t k0, k1;       /* refs [k0, k1) */
    uint8_t *buf;
    size_t cap, n;       /* n: bytes rendered */
    int first;           /* the part's first entry is here: no separator before it */
} sts__cslice;
typedef struct sts__cpart {
    const sts__commit *c;
    int part;
    const char *names;   /* each shard's name as this part writes it: names + at[s] .. at[s + 1] */
    const size_t *at;
    sts__cslice sl[STS__PAR_MAX];
} sts__cpart;
/* An entry's worst case, room that sts__centry_put never passes, from its name's length and
   its rank. A part's slices are sized with each shard's largest (a few steps a shard, not a
   pass over the keys), or key by key in a shard where that is large. */
STS__PRIVATE size_t sts__centry_bound(const sts__cpart *p, uint32_t s, size_t len, uint32_t rank) {
    const sts__commit *c = p->c;
    size_t fl = p->at[s + 1] - p->at[s], key = sts__esc_bound(len);
    if (p->part == STS__PART_CSV) return 2 * len + fl + sts__shape_bound(rank) + 32;
    if (!c->kv) key += sts__esc_bound(c->shards[s].name_len);
    if (p->part == STS__PART_WEIGHT_MAP) return key + fl + 2;
    return key + fl + (c->kv ? 0 : sts__esc_bound(len)) + sts__shape_bound(rank) + 128;
}
#define STS__ENTRY_LARGE 4096
/* Extends a slice from ref *k while it holds fewer than `share` refs and STS__SLICE bytes (or is
   empty); adds to *keys and *bytes. */
STS__PRIVATE void sts__cslice_fill(const sts__cpart *p, size_t *k, size_t share, size_t *keys, size_t *bytes) {
    const sts__commit *c = p->c;
    while (*k < c->nrefs && *keys < share && *bytes < STS__SLICE) {
        uint32_t s = c->refs[*k].shard;
        const sts__cshard *sh = &c->shards[s];
        size_t b = sts__centry_bound(p, s, sh->max_len, sh->max_rank), n = sh->first_ref + sts_count(sh->f) - *k;
        if (b > STS__ENTRY_LARGE) {  /* this key alone */
            b = sts__centry_bound(p, s, c->refs[*k].len, sts_at(sh->f, c->refs[*k].t)->rank);
            if (*keys && *bytes + b > STS__SLICE) return;
            n = 1;
        } else {
            if (n > share - *keys) n = share - *keys;
            if (n > (STS__SLICE - *bytes) / b) n = (STS__SLICE - *bytes) / b;
            if (!n) {
                if (*keys) return;
                n = 1;
            }
        }
        *bytes += n * b;
        *keys += n;
        *k += n;
    }
}
/* One entry at d. A name the header held unescaped has no quote, CR or LF: in the CSV only a
   comma makes it quoted. */
STS__PRIVATE uint8_t *sts__centry_put(const sts__cpart *p, sts__crender *rs, uint8_t *d, size_t k, int first) {
    const sts__commit *c = p->c;
    const sts__cref *ref = &c->refs[k];
    const sts_file *f = c->shards[ref->shard].f;
    const sts_tensor *x = sts_at(f, ref->t);
    const char *file = p->names + p->at[ref->shard];
    size_t fl = p->at[ref->shard + 1] - p->at[ref->shard];
    if (p->part == STS__PART_CSV) {  /* tensor_key,file_name,"shape",dtype CRLF */
        if (sts__name_raw(f, x) && !memchr(x->name, ',', x->name_len)) d = sts__cput(d, x->name, x->name_len);
        else d = sts__cput_csv(d, x->name, x->name_len);
        *d++ = ',';
        d = sts__cput(d, file, fl);
        d = STS__CPUT(d, ",\"");
        d = sts__crender_shape(rs, d, x);
        d = STS__CPUT(d, "\",");
        d = sts__cput_dtype(d, x->dtype);
        return STS__CPUT(d, "\r\n");
    }
    if (!first) *d++ = ',';
    d = sts__commit_key(c, d, ref, x);
    if (p->part == STS__PART_WEIGHT_MAP) {  /* key: file */
        *d++ = ':';
        return sts__cput(d, file, fl);
    }
    d = STS__CPUT(d, ":{\"file\":");
    d = sts__cput(d, file, fl);
    /* the key is not the name */
    if (!c->kv) { d = STS__CPUT(d, ",\"tensor\":"); d = sts__esc_put(d, x->name, x->name_len); }
    d = STS__CPUT(d, ",\"dtype\":\"");
    d = sts__cput_dtype(d, x->dtype);
    d = STS__CPUT(d, "\",\"shape\":");
    d = sts__crender_shape(rs, d, x);
    d = STS__CPUT(d, ",\"data_offsets\":[");
    d = sts__crender_offsets(rs, d, x);
    return STS__CPUT(d, "]}");
}
STS__PRIVATE void sts__cslice_job(void *ctx, size_t i) {  /* no allocation: runs on any thread */
    sts__cpart *p = (sts__cpart *)ctx;
    sts__cslice *sl = &p->sl[i];
    const uint32_t *winner = p->c->winner;
    sts__crender rs;
    uint8_t *d = sl->buf;
    int first = sl->first;
    size_t k;
    memset(&rs, 0, sizeof rs);
    for (k = sl->k0; k < sl->k1; k++) {
        if (!winner[k]) continue;
        d = sts__centry_put(p, &rs, d, k, first);
        first = 0;
    }
    sl->n = (size_t)(d - sl->buf);
}
/* Writes a part's entries to o; shard names as the part writes them (JSON or CSV). Two sets of
   slices take turns: while the threads render a round into one, the caller's thread writes the
   round before from the other. With one thread the caller's renders too, and starts none. */
STS__PRIVATE void sts__commit_part(sts__commit *c, sts__out *o, int part) {
    sts__cpart p[2];
    sts__out names;
    size_t *at, T = sts__commit_threads(c), share, k = 0, s, i, used[2] = { 0, 0 }, first_win = 0;
    int cur = 0, h;
    memset(p, 0, sizeof p);
    if (!sts__commit_names(c, part != STS__PART_CSV, &names, &at, o)) return;
    for (h = 0; h < 2; h++) { p[h].c = c; p[h].part = part; p[h].names = names.p; p[h].at = at; }
    share = c->nrefs / T + 1;
    while (first_win < c->nrefs && !c->winner[first_win]) first_win++;
    for (;;) {
        sts__par run;
        size_t n = 0;
        while (n < T && k < c->nrefs && !o->oom) {  /* this round's slices, sized here */
            sts__cslice *sl = &p[cur].sl[n];
            size_t bytes = 0, keys = 0;
            sl->k0 = k;
            sts__cslice_fill(&p[cur], &k, share, &keys, &bytes);
            sl->k1 = k;
            sl->first = sl->k0 <= first_win && first_win < sl->k1;
            if (!sts__grow(&c->mem, (void **)&sl->buf, &sl->cap, bytes + 1, 1)) { o->oom = 1; break; }
            n++;
        }
        if (o->oom || o->err_no) n = 0;
        used[cur] = n;
        sts__par_start(&run, sts__cslice_job, &p[cur], T > 1 ? 0 : n, n);
        for (i = 0; T == 1 && i < n; i++) sts__cslice_job(&p[cur], i);  /* one thread: the caller's */
        for (i = 0; i < used[!cur]; i++) sts__out_big(o, p[!cur].sl[i].buf, p[!cur].sl[i].n);
        sts__par_wait(&run);
        used[!cur] = 0;
        if (!n) break;
        cur = !cur;
    }
    for (h = 0; h < 2; h++)
        for (s = 0; s < T; s++) sts__free(&c->mem, p[h].sl[s].buf, p[h].sl[s].cap);
    sts__commit_names_free(c, &names, at);
}
/* _tensor_index.csv: tensor_key,file_name,shape,dtype (RFC 4180, CRLF). */
STS__PRIVATE void sts__commit_csv(sts__commit *c, sts__out *o) {
    sts__out_cstr(o, "tensor_key,file_name,shape,dtype\r\n");
    sts__commit_part(c, o, STS__PART_CSV);
}
/* _tensor_index.json: Hugging Face's sharded-checkpoint index plus per-tensor details. */
STS__PRIVATE void sts__commit_json_index(sts__commit *c, sts__out *o) {
    sts__out_cstr(o, "{\"metadata\":{\"total_size\":");
    sts__out_u64(o, c->total_size);
    sts__out_cstr(o, ",\"tensor_count\":");
    sts__out_u64(o, (uint64_t)c->winners);
    sts__out_cstr(o, ",\"dataset_id\":\"");
    sts__out_cstr(o, c->dataset_id);
    sts__out_cstr(o, c->kv ? "\",\"mode\":\"kv\",\"kv_separator\":" : "\",\"mode\":\"batch\",\"kv_separator\":");
    sts__out_json(o, c->sep, c->sep_len);
    sts__out_cstr(o, ",\"format\":\"safetensors\",\"writer\":\"safetensors_spark.h " STS_VERSION_STRING
                     "\"},\n\"weight_map\":{");
    sts__commit_part(c, o, STS__PART_WEIGHT_MAP);
    sts__out_cstr(o, "},\n\"tensors\":{");
    sts__commit_part(c, o, STS__PART_TENSORS);
    sts__out_cstr(o, "}}\n");
}
STS__PRIVATE void sts__commit_manifest(sts__commit *c, sts__out *o) {
    size_t i;
    uint64_t samples = 0, bytes = 0;
    for (i = 0; i < c->nshards; i++) { samples += c->shards[i].samples; bytes += c->shards[i].bytes; }
    sts__out_cstr(o, "{\n  \"format_version\": \"1.0\",\n  \"safetensors_version\": \"1.0\",\n  \"total_samples\": ");
    sts__out_u64(o, samples);
    sts__out_cstr(o, ",\n  \"total_bytes\": ");
    sts__out_u64(o, bytes);
    sts__out_cstr(o, ",\n  \"shards\": [");
    for (i = 0; i < c->nshards; i++) {
        sts__out_cstr(o, i ? ",\n    {\"shard_path\": " : "\n    {\"shard_path\": ");
        sts__out_json(o, c->shards[i].name, strlen(c->shards[i].name));
        sts__out_cstr(o, ", \"samples_count\": ");
        sts__out_u64(o, c->shards[i].samples);
        sts__out_cstr(o, ", \"bytes\": ");
        sts__out_u64(o, c->shards[i].bytes);
        if (c->shards[i].crc32c != UINT64_MAX) {
            sts__out_cstr(o, ", \"crc32c\": ");
            sts__out_u64(o, c->shards[i].crc32c);
        }
        sts__out_put(o, "}", 1);
    }
    sts__out_cstr(o, c->nshards ? "\n  ],\n  \"schema\": {" : "],\n  \"schema\": {");
    for (i = 0; i < c->ncols; i++) {
        const sts__scol *col = &c->cols[i];
        uint32_t d;
        sts__out_cstr(o, i ? ",\n    " : "\n    ");
        sts__out_json(o, col->name, col->name_len);
        sts__out_cstr(o, ": {\"dtype\": \"");
        sts__out_cstr(o, sts_dtype_name(col->dtype));
        sts__out_cstr(o, "\", \"shape\": [");
        for (d = 0; d < col->rank; d++) {
            if (d) sts__out_cstr(o, ", ");
            sts__out_i64(o, col->rank_varies ? -1 : col->dims[d]);
        }
        sts__out_cstr(o, "]}");
    }
    sts__out_cstr(o, c->ncols ? "\n  },\n  \"dataset_id\": \"" : "},\n  \"dataset_id\": \"");
    sts__out_cstr(o, c->dataset_id);
    sts__out_cstr(o, c->kv ? "\",\n  \"mode\": \"kv\",\n  \"kv_separator\": " : "\",\n  \"mode\": \"batch\",\n  "
            "\"kv_separator\": ");
    sts__out_json(o, c->sep, c->sep_len);
    sts__out_cstr(o, ",\n  \"duplicates\": ");
    sts__out_cstr(o, c->dup == STS_DUPLICATES_FAIL ? "\"fail\"" : "\"lastWin\"");
    sts__out_cstr(o, ",\n  \"batch_size\": ");
    sts__out_u64(o, c->batch_size);
    sts__out_cstr(o, ",\n  \"writer\": \"safetensors_spark.h " STS_VERSION_STRING "\"\n}\n");
}
/* Writes one of the commit's files to a sealed temporary. */
typedef void (*sts__render_fn)(sts__commit *c, sts__out *o);
STS__PRIVATE sts_result sts__commit_file(sts__commit *c, const char *name, sts__render_fn render, int durable,
                                         sts__atomic *a, char **path, size_t *path_size, sts_error *err) {
    sts__out o;
    sts_result r;
    if (!(*path = sts__join(&c->mem, c->dir, name, path_size))) return sts__nomem(err, "a file name");
    if ((r = sts__atomic_begin(a, *path, &c->mem, err)) != STS_OK) return r;
    sts__out_init(&o, &c->mem, a->fd);
    render(c, &o);
    sts__out_flush(&o);
    r = sts__out_status(&o, *path, err);
    sts__out_free(&o);
    if (r != STS_OK) { sts__atomic_abort(a); return r; }
    return sts__atomic_seal(a, durable, err);
}
/* Publishes the index files (a[0..nidx)) and, with_manifest, the manifest (a[nidx]) so that an
   index file that is visible always belongs to the manifest that is visible, at every moment:
   - no old index (the usual case): the index, then the manifest, last;
   - an old index (overwrite, reindex): the old index moves aside, then the manifest, then the new
     index.
   Replaced files are kept under backup names until everything is in place, so a failure puts the
   old files back: both index files or neither (reindex, whose shards do not change), a dataset
   whole or not at all (commit). */
STS__PRIVATE sts_result sts__publish_all(sts__commit *c, sts__atomic *a, char **paths, size_t nidx, int with_manifest,
                                         sts_error *err) {
    static const char *const index_names[2] = { "_tensor_index.csv", "_tensor_index.json" };
    char *old_idx[2] = { NULL, NULL }, *old_bak[2] = { NULL, NULL }, *man_bak = NULL;
    size_t old_idx_sz[2] = { 0, 0 }, old_bak_sz[2] = { 0, 0 }, man_bak_sz = 0, i, placed_idx = 0;
    int moved[2] = { 0, 0 }, man_linked = 0, man_placed = 0, had_old_index = 0, e;
    sts_result r = STS_OK;
    char *man = with_manifest ? paths[nidx] : NULL;
    for (i = 0; i < 2; i++) {  /* the old index files, and their backup names */
        size_t sz;
        char *bn;
        if (!(old_idx[i] = sts__join(&c->mem, c->dir, index_names[i], &old_idx_sz[i]))) {
            r = sts__nomem(err, "a file name");
            goto undo;
        }
        if (sts__path_kind(old_idx[i]) == STS__FT_NONE) continue;
        had_old_index = 1;
        sz = strlen(index_names[i]) + 20;
        if (!(bn = (char *)sts__alloc(&c->mem, sz))) { r = sts__nomem(err, "a file name"); goto undo; }
        memcpy(bn, ".", 1);
        memcpy(bn + 1, index_names[i], strlen(index_names[i]));
        memcpy(bn + 1 + strlen(index_names[i]), ".tmp-backup", 12);
        old_bak[i] = sts__join(&c->mem, c->dir, bn, &old_bak_sz[i]);
        sts__free(&c->mem, bn, sz);
        if (!old_bak[i]) { r = sts__nomem(err, "a file name"); goto undo; }
    }
    if (man && sts__path_kind(man) != STS__FT_NONE) {  /* the old manifest stays until the new one replaces it */
        size_t ml = strlen(man);
        const char *slash = strrchr(man, '/');
        size_t dl = (size_t)(slash - man) + 1;
        man_bak_sz = ml + 16;
        if (!(man_bak = (char *)sts__alloc(&c->mem, man_bak_sz))) { r = sts__nomem(err, "a backup name"); goto undo; }
        memcpy(man_bak, man, dl);
        man_bak[dl] = '.';
        memcpy(man_bak + dl + 1, man + dl, ml - dl);
        memcpy(man_bak + ml + 1, ".tmp-backup", 12);
        sts__remove_path(man_bak);
        if ((e = sts__link_path(&c->mem, man, man_bak)) != 0) {
            r = sts__fail_errno(err, e, "keep a backup of", man);
            goto undo;
        }
        man_linked = 1;
    }
    if (had_old_index) {  /* the old index leaves before the new manifest arrives */
        for (i = 0; i < 2; i++) {
            if (!old_bak[i]) continue;
            sts__remove_path(old_bak[i]);
            if ((e = sts__rename_path(&c->mem, old_idx[i], old_bak[i])) != 0) {
                r = sts__fail_errno(err, e, "move aside", old_idx[i]);
                goto undo;
            }
            moved[i] = 1;
        }
    } else {  /* no old index: the index first, the manifest last */
        for (i = 0; i < nidx; i++) {
            if ((e = sts__rename_path(&c->mem, a[i].tmp, paths[i])) != 0) {
                r = sts__fail_errno(err, e, "rename into", paths[i]);
                goto undo;
            }
            sts__free(&a[i].mem, a[i].tmp, a[i].tmp_size);
            a[i].tmp = NULL;
            placed_idx = i + 1;
        }
    }
    /* a manifest that appeared meanwhile is never replaced (only the one kept as a backup is) */
    if (man) {
        e = man_linked ? sts__rename_path(&c->mem, a[nidx].tmp, man) : sts__rename_noreplace(&c->mem, a[nidx].tmp, man);
        if (e) {
            r = e == EEXIST && !man_linked
                    ? sts__failx(err, STS_RULE_EXISTS, "%q appeared while this job committed: another job published a "
                                 "dataset here; nothing of this job was published", man, strlen(man))
                    : sts__fail_errno(err, e, "rename into", man);
            goto undo;
        }
        sts__free(&a[nidx].mem, a[nidx].tmp, a[nidx].tmp_size);
        a[nidx].tmp = NULL;
        man_placed = 1;
    }
    if (had_old_index)
        for (i = 0; i < nidx; i++) {
            if ((e = sts__rename_path(&c->mem, a[i].tmp, paths[i])) != 0) {
                r = sts__fail_errno(err, e, "rename into", paths[i]);
                goto undo;
            }
            sts__free(&a[i].mem, a[i].tmp, a[i].tmp_size);
            a[i].tmp = NULL;
            placed_idx = i + 1;
        }
    for (i = 0; i < 2; i++) if (moved[i]) sts__remove_path(old_bak[i]);  /* done: the backups go */
    if (man_linked) sts__remove_path(man_bak);
    goto out;
undo:  /* back to the old dataset's files */
    for (i = 0; i < placed_idx; i++) sts__remove_path(paths[i]);
    if (man_placed) {  /* the new manifest is in place: the old one comes back, or none was there */
        if (man_linked) (void)sts__rename_path(NULL, man_bak, man);
        else sts__remove_path(man);
    /* still the same file: rename between two links of it does nothing */
    } else if (man_linked) sts__remove_path(man_bak);
    for (i = 0; i < 2; i++) if (moved[i]) (void)sts__rename_path(NULL, old_bak[i], old_idx[i]);
out:
    for (i = 0; i < 2; i++) {
        sts__free(&c->mem, old_idx[i], old_idx_sz[i]);
        sts__free(&c->mem, old_bak[i], old_bak_sz[i]);
    }
    sts__free(&c->mem, man_bak, man_bak_sz);
    return r;
}
/* overwrite: once the new manifest is published, the old dataset's files go: the shards its
   manifest named that the new one does not, and the old index when no new one was written.
   Nothing else: other part-* files (another job's, a user's) and temporaries stay for sts clean.
   The one path buffer this needs is allocated before the publish (sts__commit_cleanup_ready), so
   nothing after it can fail for memory and leave an old shard behind. */
STS__PRIVATE int sts__shard_listed(const sts__commit *c, const char *n) {  /* in the new, sorted shard list */
    size_t lo = 0, hi = c->nshards;
    while (lo < hi) {
        size_t mid = (lo + hi) / 2;
        int cmp = strcmp(c->shards[mid].name, n);
        if (cmp == 0) return 1;
        if (cmp < 0) lo = mid + 1; else hi = mid;
    }
    return 0;
}
STS__PRIVATE char *sts__commit_cleanup_ready(const sts__commit *c, size_t *size) {
    size_t i;
    *size = sts__join_size(c->dir, "_tensor_index.json");
    for (i = 0; i < c->man.nshards; i++) {
        size_t n = sts__join_size(c->dir, c->man.shards[i].name);
        if (n > *size) *size = n;
    }
    return (char *)sts__alloc(&c->mem, *size);
}
STS__PRIVATE void sts__commit_cleanup(sts__commit *c, int index, char *p) {
    size_t i;
    for (i = 0; i < c->man.nshards; i++) {
        const char *n = c->man.shards[i].name;
        if (sts__shard_listed(c, n)) continue;
        sts__join_at(p, c->dir, n);
        sts__remove_path(p);
    }
    for (i = 0; i < 2 && !index; i++) {
        sts__join_at(p, c->dir, i ? "_tensor_index.json" : "_tensor_index.csv");
        sts__remove_path(p);
    }
}

STSDEF sts_result sts_dataset_commit(const char *dir, const sts_write_config *cfg, const char *const *messages,
                                     const size_t *lens, size_t n,
                                     const sts_options *opts, sts_dataset_summary *summary, sts_error *err) {
    sts__commit c;
    sts__atomic a[3];
    sts__unlock unlock;
    char *paths[3] = { NULL, NULL, NULL }, *old_path = NULL;
    size_t psize[3] = { 0, 0, 0 }, nfiles = 0, i, old_path_size = 0;
    sts_result r;
    int durable, index, overwrite, e;
    memset(&c, 0, sizeof c);
    memset(&unlock, 0, sizeof unlock);
    memset(a, 0, sizeof a);
    for (i = 0; i < 3; i++) a[i].fd = -1;
    c.mem = sts__mem_io(opts);
    c.dir = dir;
    if (!dir || !cfg || (!messages && n))
        return sts__failx(err, STS_RULE_ARGUMENT, "sts_dataset_commit needs a folder, the options and the messages");
    if (!sts__mem_valid(&c.mem))
        return sts__failx(err, STS_RULE_ARGUMENT, "the allocator needs all three hooks or none");
    if (!cfg->batch_size == !(cfg->name_col && cfg->name_col[0]))
        return sts__failx(err, STS_RULE_OPTION, "give exactly one of batch_size (batch mode) or name_col (KV mode)");
    c.kv = !cfg->batch_size;
    c.batch_size = cfg->batch_size;
    c.sep = cfg->kv_separator ? cfg->kv_separator : "__";
    c.sep_len = strlen(c.sep);
    if (!c.sep_len)
        return sts__failx(err, STS_RULE_OPTION, "kv_separator must not be empty (an empty one makes keys ambiguous)");
    c.dup = cfg->duplicates;
    if (cfg->commit_threads > STS__PAR_MAX)
        return sts__failx(err, STS_RULE_OPTION, "commit_threads must be between 0 and 64, got: %U",
                          (uint64_t)cfg->commit_threads);
    c.threads = cfg->commit_threads;
    durable = sts__durable(cfg, opts);
    index = cfg->generate_index != 0;
    overwrite = cfg->overwrite != 0;
    {   /* the folder must be held by a job, and every message must be that job's */
        int found;
        if ((r = sts__lock_read(&c.mem, dir, &c.lock, &found, err)) != STS_OK) goto fail;
        if (!found || !c.lock.job) {
            r = sts__failx(err, STS_RULE_STATE, "no job holds %q%s: sts_dataset_prepare takes the folder for a job, "
                                                "and "
                           "its commit or abort ends it (was this job committed, aborted or cleaned already?)", dir,
                           strlen(dir), found ? " (its lock names no job)" : "");
            goto fail;
        }
    }
    if ((r = sts__commit_load(&c, messages, lens, n, err)) != STS_OK) goto fail;
    if ((r = sts__commit_check_shards(&c, err)) != STS_OK) goto fail;
    if ((r = sts__commit_keys(&c, err)) != STS_OK) goto fail;
    if (overwrite) {  /* the dataset being replaced: only its shards go once the new one is published */
        int found;
        if ((r = sts__manifest_read(&c.mem, dir, &c.man, &found, err)) != STS_OK) goto fail;
    }
    sts__uuid4(c.dataset_id);
    if (index) {
        if ((r = sts__commit_file(&c, "_tensor_index.csv", sts__commit_csv, durable, &a[0], &paths[0], &psize[0],
                                  err)) != STS_OK) goto fail;
        nfiles = 1;
        if ((r = sts__commit_file(&c, "_tensor_index.json", sts__commit_json_index, durable, &a[1], &paths[1],
                                  &psize[1], err)) != STS_OK) goto fail;
        nfiles = 2;
    }
    if ((r = sts__commit_file(&c, "dataset_manifest.json", sts__commit_manifest, durable, &a[nfiles], &paths[nfiles],
                              &psize[nfiles], err)) != STS_OK) goto fail;
    nfiles++;
    if (overwrite && !(old_path = sts__commit_cleanup_ready(&c, &old_path_size))) {
        r = sts__nomem(err, "a file name");
        goto fail;
    }
    if ((r = sts__unlock_ready(&c.mem, dir, c.lock.job, c.lock.job_len, &unlock, err)) != STS_OK) goto fail;
    if ((r = sts__publish_all(&c, a, paths, nfiles - 1, 1, err)) != STS_OK) goto fail;
    if (overwrite) sts__commit_cleanup(&c, index, old_path);
    sts__unlock_run(&c.mem, &unlock);  /* the job ends: the folder is free */
    if (durable && (e = sts__fsync_dir(&c.mem, paths[nfiles - 1])) != 0) {
        r = sts__fail_durable(err, e, paths[nfiles - 1]);  /* published, but not yet durable */
        goto out;
    }
    if (summary) {
        memset(summary, 0, sizeof *summary);
        summary->shards = c.nshards;
        for (i = 0; i < c.nshards; i++) {
            summary->samples += c.shards[i].samples;
            summary->bytes += c.shards[i].bytes;
        }
        summary->tensors = c.winners;
    }
    sts__ok(err);
    r = STS_OK;
    goto out;
fail:  /* nothing is published; the tasks' shards stay for a corrected commit (or sts_dataset_abort) */
    for (i = 0; i < 3; i++) if (a[i].tmp) sts__atomic_abort(&a[i]);
    sts__unlock_drop(&c.mem, &unlock);
out:
    for (i = 0; i < 3; i++) sts__free(&c.mem, paths[i], psize[i]);
    sts__free(&c.mem, old_path, old_path_size);
    sts__commit_free(&c);
    return r;
}
/* The shards of an existing dataset: its manifest's (read by the one manifest reader, whose mode,
   duplicates, separator and dataset_id the index keeps), else the folder's visible shards. */
STS__PRIVATE sts_result sts__reindex_add(void *user, const char *name, uint64_t size, sts_error *err) {
    sts__commit *c = (sts__commit *)user;
    sts__cshard *x;
    size_t n = strlen(name);
    if (c->nshards == c->shards_cap && !sts__grow(&c->mem, (void **)&c->shards, &c->shards_cap, c->nshards + 1,
                                                  sizeof *c->shards))
        return sts__nomem(err, "the shard list");
    x = &c->shards[c->nshards];
    memset(x, 0, sizeof *x);
    if (!(x->name = (char *)sts__alloc(&c->mem, n + 1))) return sts__nomem(err, "a shard name");
    memcpy(x->name, name, n + 1);
    x->name_len = n;
    x->bytes = size;
    x->tensors = UINT64_MAX;
    x->crc32c = UINT64_MAX;
    c->nshards++;
    return STS_OK;
}
STS__PRIVATE sts_result sts__reindex_shards(sts__commit *c, sts_error *err) {
    sts_result r;
    size_t i;
    int found;
    if ((r = sts__manifest_read(&c->mem, c->dir, &c->man, &found, err)) != STS_OK) return r;
    if (!found) {  /* no manifest: every visible shard; a repeated name keeps the last file's */
        c->kv = 1;
        c->dup = STS_DUPLICATES_LAST_WIN;
        if ((r = sts__list_shards(&c->mem, c->dir, sts__reindex_add, c, err)) != STS_OK) return r;
        if (c->nshards == 0)
            return sts__failx(err, STS_RULE_NOT_FOUND, "%q holds no .safetensors file", c->dir, strlen(c->dir));
        return STS_OK;
    }
    c->kv = c->man.kv;
    c->dup = c->man.dup;
    c->sep = c->man.sep;
    c->sep_len = c->man.sep_len;
    if (c->man.dataset_id && c->man.dataset_id_len < sizeof c->dataset_id)
        memcpy(c->dataset_id, c->man.dataset_id, c->man.dataset_id_len + 1);
    for (i = 0; i < c->man.nshards; i++) {
        const sts__mshard *m = &c->man.shards[i];
        if ((r = sts__reindex_add(c, m->name, m->bytes, err)) != STS_OK) return r;
        c->shards[c->nshards - 1].samples = m->samples == UINT64_MAX ? 0 : m->samples;
    }
    return STS_OK;
}
STSDEF sts_result sts_dataset_reindex(const char *dir, const sts_options *opts, sts_dataset_summary *summary,
                                      sts_error *err) {
    sts__commit c;
    sts__atomic a[2];
    char *paths[2] = { NULL, NULL };
    size_t psize[2] = { 0, 0 }, i;
    sts_result r;
    int e;
    memset(&c, 0, sizeof c);
    memset(a, 0, sizeof a);
    a[0].fd = a[1].fd = -1;
    c.mem = sts__mem_from(opts);
    c.dir = dir;
    c.sep = "__";
    c.sep_len = 2;
    if (!dir) return sts__failx(err, STS_RULE_ARGUMENT, "sts_dataset_reindex needs a folder");
    {   /* a job writing the folder would publish its own index: never race it */
        sts__joblock l;
        int found;
        if ((r = sts__lock_read(&c.mem, dir, &l, &found, err)) == STS_OK && found) r = sts__lock_held(dir, &l, err);
        sts__lock_free(&c.mem, &l);
        if (r != STS_OK) goto out;
    }
    if ((r = sts__reindex_shards(&c, err)) != STS_OK) goto out;
    if ((r = sts__commit_check_shards(&c, err)) != STS_OK) goto out;
    if ((r = sts__commit_keys(&c, err)) != STS_OK) goto out;
    if (!c.dataset_id[0]) sts__uuid4(c.dataset_id);
    if ((r = sts__commit_file(&c, "_tensor_index.csv", sts__commit_csv, sts__durable(NULL, opts), &a[0], &paths[0],
                              &psize[0], err)) != STS_OK) goto out;
    if ((r = sts__commit_file(&c, "_tensor_index.json", sts__commit_json_index, sts__durable(NULL, opts), &a[1],
                              &paths[1], &psize[1], err)) != STS_OK) goto out;
    /* both files or neither: the old ones move aside until the new ones are in place */
    if ((r = sts__publish_all(&c, a, paths, 2, 0, err)) != STS_OK) goto out;
    if (sts__durable(NULL, opts) && (e = sts__fsync_dir(&c.mem, paths[1])) != 0) {
        r = sts__fail_durable(err, e, paths[1]);  /* in place, not yet durable */
        goto out;
    }
    if (summary) {
        memset(summary, 0, sizeof *summary);
        summary->shards = c.nshards;
        for (i = 0; i < c.nshards; i++) {
            summary->samples += c.shards[i].samples;
            summary->bytes += c.shards[i].bytes;
        }
        summary->tensors = c.winners;
    }
    sts__ok(err);
out:
    for (i = 0; i < 2; i++) { if (a[i].tmp) sts__atomic_abort(&a[i]); sts__free(&c.mem, paths[i], psize[i]); }
    sts__commit_free(&c);
    return r;
}
STSDEF sts_result sts_dataset_discard(const char *dir, const char *const *messages, const size_t *lens, size_t n,
                                      const sts_options *opts, sts_error *err) {
    sts__mem m = sts__mem_from(opts);
    sts_result r;
    if (!dir || (!messages && n))
        return sts__failx(err, STS_RULE_ARGUMENT, "sts_dataset_discard needs a folder and the messages");
    r = sts__remove_job(&m, dir, messages, lens, n, err);
    if (r == STS_OK) sts__ok(err);
    return r;
}
STSDEF sts_result sts_dataset_abort(const char *dir, const char *const *messages, const size_t *lens, size_t n,
                                    const sts_options *opts, sts_error *err) {
    sts__mem m = sts__mem_from(opts);
    sts_result r;
    if (!dir || (!messages && n))
        return sts__failx(err, STS_RULE_ARGUMENT, "sts_dataset_abort needs a folder and the messages");
    r = sts__remove_job(&m, dir, messages, lens, n, err);
    if (r != STS_ERR_NOMEM) {  /* NOMEM: a shard may stay, and so does the job, for a second call */
        /* the job ends: its lock goes when a message names it, or when no message was given; one
           that stays for want of memory (or a lock that cannot be read) is an error, never an OK */
        sts__joblock l;
        sts__unlock u;
        sts_error le;
        sts_result lr;
        int found, ours = n == 0;
        size_t i;
        memset(&u, 0, sizeof u);
        lr = sts__lock_read(&m, dir, &l, &found, &le);
        if (lr == STS_OK && found && l.job) {
            for (i = 0; i < n && !ours && lr == STS_OK; i++) {
                sts__jdoc d;
                uint32_t t;
                size_t len = lens ? lens[i] : (messages[i] ? strlen(messages[i]) : 0);
                sts_result pr;
                if (!messages[i]) continue;
                pr = sts__jdoc_parse(&d, messages[i], len, &m, "a commit message", STS_RULE_MESSAGE, &le);
                if (pr == STS_ERR_NOMEM) lr = pr;  /* whose message it is cannot be told */
                if (pr != STS_OK) continue;  /* a bad message: remove_job has said so */
                t = d.tok[0].type == '{' ? sts__jdoc_get(&d, 0, "job") : 0;
                if (t && d.tok[t].type == '"' && !d.tok[t].esc && d.tok[t].len == l.job_len &&
                    memcmp(d.text + d.tok[t].at, l.job, l.job_len) == 0)
                    ours = 1;
                sts__jdoc_free(&d);
            }
            if (ours && lr == STS_OK && (lr = sts__unlock_ready(&m, dir, l.job, l.job_len, &u, &le)) == STS_OK) {
                (void)sts__folder_pass(dir, &m, 1, 1, NULL);  /* dead writers' temporaries, while the folder is ours */
                sts__unlock_run(&m, &u);
            }
        }
        sts__lock_free(&m, &l);
        if (lr != STS_OK && r == STS_OK) {  /* the job still holds the folder: call sts_dataset_abort again */
            if (err) *err = le;
            r = lr;
        }
    }
    if (r == STS_OK) sts__ok(err);
    return r;
}
#endif /* STS_NO_STDIO */

/* ==============================================================================================
   >>dataset_read  9. dataset read
   Owns: opening a dataset (manifest, folder listing or single file; the tensor index, checked
   for staleness), the schema (explicit or inferred), the key table (from the index, or built
   once from the headers) with O(1) lookups, lazily mapped files published without locks, and
   scans (wide and long) with projection and pushdown, counting what they read.
   May call: util, json, dtype, header, io, codec (CRC-32C), dataset common.
   ============================================================================================== */
#ifndef STS_NO_STDIO

#if defined(__GNUC__) || defined(__clang__)
#  define STS__LOAD_PTR(p) __atomic_load_n((p), __ATOMIC_ACQUIRE)
#  define STS__CAS_PTR(p, expect, want) \
    __atomic_compare_exchange_n((p), (expect), (want), 0, __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE)
#  define STS__ADD(p, v) ((void)__atomic_fetch_add((p), (v), __ATOMIC_RELAXED))
#  define STS__LOAD64(p) __atomic_load_n((p), __ATOMIC_RELAXED)
#else  /* no atomics known: a dataset is then safe for one thread at a time */
#  define STS__LOAD_PTR(p) (*(p))
#  define STS__CAS_PTR(p, expect, want) (*(p) == *(expect) ? (*(p) = (want), 1) : (*(expect) = *(p), 0))
#  define STS__ADD(p, v) ((void)(*(p) += (v)))
#  define STS__LOAD64(p) (*(p))
#endif

typedef struct sts__dfile {
    char *name;                     /* file name (NUL-terminated) */
    size_t name_len;
    char *path;
    size_t path_size;
    uint64_t size;                  /* from the manifest or stat */
    uint64_t samples;               /* the manifest's samples_count, or UINT64_MAX */
    uint64_t crc32c;                /* the manifest's crc32c, or UINT64_MAX */
    size_t order;                   /* its position in the manifest's "shards" (else in name order) */
    sts_file *map;                  /* mapped and parsed on first data access; published by CAS */
    const uint8_t *lk_data;         /* lookups: NULL until the key table's entries for this file were
                                       checked against its header (at its first lookup with data),
                                       then its data section, or &sts__lk_disagrees; published by CAS */
} sts__dfile;

/* One tensor of the key table. Entries lie one after the other in the table's arena, 8-aligned:
   this 32-byte head, the key's bytes (padded to 8), the shape (rank dims), and, when the tensor's
   name in its file is not the key, the name's length (a u64) and bytes. An entry whose head and
   key fit in 64 bytes starts where they share a cache line (the one before it is padded, `gap`),
   so a lookup reads one line after its slot; nothing points into the index JSON or a header. */
typedef struct sts__dkey {
    uint64_t begin, end;            /* data_offsets */
    uint32_t file;
    uint32_t rank;
    uint32_t len;                   /* of the key */
    uint8_t dtype;                  /* an sts_dtype */
    uint8_t named;                  /* 1: the name in the file follows the shape */
    uint8_t gap;                    /* words of padding after the entry (the next one's head and key
                                       then share a cache line) */
    uint8_t unused;
} sts__dkey;

typedef struct sts__dent {          /* an entry as loaded from index or header, before the arena */
    const char *key, *name;
    size_t len, name_len;
    uint32_t file;
    uint64_t rank;
    sts_dtype dtype;
    const uint64_t *shape;
    uint64_t begin, end;
} sts__dent;

typedef struct sts__keymap {
    sts__mem mem;
    char *arena;                    /* the entries (sts__dkey heads and their tails), from arena + a0 */
    size_t a0;                      /* arena + a0 is 64-byte aligned; offsets are from there */
    size_t used, cap;               /* bytes: used from a0, cap from arena */
    size_t last;                    /* offset of the last entry */
    size_t n;                       /* entries */
    uint64_t *slots;                /* open addressing: hash tag << 32 | entry offset / 8; 0 = empty */
    size_t mask;                    /* slots - 1 */
    uint32_t *byfile;               /* entry offsets / 8 grouped by file, table order inside a file */
    size_t *fstart;                 /* file f's entries: byfile[fstart[f] .. fstart[f + 1]) */
    size_t nfiles;
    uint64_t *hashes;               /* while building: entry i's key hash */
    size_t hashes_cap;
    uint64_t *dims;                 /* while reading the index: the entry's shape */
    size_t dims_cap;
    char *scratch;                  /* while reading the index: unescaped key, then name */
    size_t scratch_cap;
    char last_file[256];            /* while reading the index: the previous entry's file (a copy), */
    size_t last_file_len;           /* its length (0: none) */
    uint32_t last_fi;               /* and its index: entries of one file come together */
    sts__fmap text;                 /* while reading the index: the file's bytes, given back behind the parser */
} sts__keymap;

typedef struct sts__col {           /* a schema column */
    sts_view v;                     /* key = name; dtype/rank/shape when checked */
    int has_dtype, has_shape;
} sts__col;

struct sts_dataset {
    sts__mem mem;
    char *root;                     /* folder, or the single file's folder */
    size_t root_size;
    sts__dfile *files;
    size_t nfiles, files_cap;
    sts__index fix;                 /* file names */
    uint64_t *fhash;
    int has_manifest, has_index, index_stale, kv, lastwin;
    uint64_t total_samples, total_bytes;
    char *dataset_id;               /* the manifest's (NULL: none), to tell a stale index */
    size_t dataset_id_len;
    sts_view *mcols;                /* the manifest's schema (names and dims in mcol_store) */
    size_t nmcols;
    char *mcol_store;
    size_t mcol_store_size;
    uint64_t seed;
    sts__keymap *index;             /* from _tensor_index.json, loaded at open */
    sts__keymap *built;             /* without an index: built once from the headers (CAS) */
    sts__col *cols;
    size_t ncols;
    int explicit_schema;
    int verify;                     /* sts_read_config.verify_checksums */
    char *col_store;
    size_t col_store_size;
    uint64_t st_opened, st_header, st_data, st_mapped;  /* lookups, updated atomically */
};

/* lk_data of a file whose header disagrees with one of its key-table entries: its lookups check
   their entry one by one, to name the key that disagrees */
static const uint8_t sts__lk_disagrees = 0;

/* >>key_table ---- the key table ---- */
#define STS__DK_PAD(n) (((n) + 7) & ~(size_t)7)
STS__PRIVATE const char *sts__dk_key(const sts__dkey *e) { return (const char *)(e + 1); }
STS__PRIVATE const uint64_t *sts__dk_shape(const sts__dkey *e) {
    return (const uint64_t *)(const void *)((const char *)(e + 1) + STS__DK_PAD(e->len));
}
STS__PRIVATE const char *sts__dk_name(const sts__dkey *e, size_t *len) {
    const uint64_t *p;
    if (!e->named) { *len = e->len; return sts__dk_key(e); }
    p = sts__dk_shape(e) + e->rank;
    *len = (size_t)p[0];
    return (const char *)(p + 1);
}
STS__PRIVATE size_t sts__dk_size(const sts__dkey *e) {  /* bytes, head to the next entry */
    size_t n = sizeof *e + STS__DK_PAD(e->len) + (size_t)e->rank * 8 + (size_t)e->gap * 8, nl;
    if (e->named) { sts__dk_name(e, &nl); n += 8 + STS__DK_PAD(nl); }
    return n;
}
STS__PRIVATE const sts__dkey *sts__dk_at(const sts__keymap *k, size_t off8) {
    return (const sts__dkey *)(const void *)(k->arena + k->a0 + off8 * 8);
}
STS__PRIVATE const sts__dkey *sts__dk_first(const sts__keymap *k) { return k->n ? sts__dk_at(k, 0) : NULL; }
STS__PRIVATE const sts__dkey *sts__dk_next(const sts__keymap *k, const sts__dkey *e) {
    const char *p = (const char *)e + sts__dk_size(e);
    return p < k->arena + k->a0 + k->used ? (const sts__dkey *)(const void *)p : NULL;
}
STS__PRIVATE void sts__keymap_drop_text(sts__keymap *k) { sts__map_free(&k->mem, &k->text, 0); }
STS__PRIVATE void sts__keymap_free(sts__keymap *k) {
    sts__mem m;
    if (!k) return;
    m = k->mem;
    sts__keymap_drop_text(k);
    sts__free(&m, k->arena, k->cap);
    if (k->slots) sts__free(&m, k->slots, (k->mask + 1) * sizeof *k->slots);
    sts__free(&m, k->byfile, (k->n ? k->n : 1) * sizeof *k->byfile);
    sts__free(&m, k->fstart, (k->nfiles + 1) * sizeof *k->fstart);
    sts__free(&m, k->hashes, k->hashes_cap * sizeof *k->hashes);
    sts__free(&m, k->dims, k->dims_cap * sizeof *k->dims);
    sts__free(&m, k->scratch, k->scratch_cap);
    sts__free(&m, k, sizeof *k);
}
STS__PRIVATE sts__keymap *sts__keymap_new(const sts_dataset *ds) {
    sts__keymap *k = (sts__keymap *)sts__alloc(&ds->mem, sizeof *k);
    if (!k) return NULL;
    memset(k, 0, sizeof *k);
    k->mem = ds->mem;
    k->nfiles = ds->nfiles;
    if (!(k->fstart = (size_t *)sts__alloc(&k->mem, (k->nfiles + 1) * sizeof *k->fstart))) {
        sts__free(&k->mem, k, sizeof *k);
        return NULL;
    }
    memset(k->fstart, 0, (k->nfiles + 1) * sizeof *k->fstart);  /* counts while building */
    return k;
}
/* Room for `bytes` of entries: the arena grows (huge pages asked for), and its start stays 64-byte
   aligned, moving the entries when a reallocation moved the block to another alignment. */
STS__PRIVATE int sts__km_reserve(sts__keymap *k, size_t bytes) {
    size_t a0;
    if (bytes > (size_t)-1 - 64 || !sts__grow(&k->mem, (void **)&k->arena, &k->cap, bytes + 64, 1)) return 0;
    sts__advise_huge(k->arena, k->cap);
    a0 = (64 - ((uintptr_t)k->arena & 63)) & 63;
    if (a0 != k->a0) { memmove(k->arena + a0, k->arena + k->a0, k->used); k->a0 = a0; }
    return 1;
}
/* Appends an entry (copying its key, shape and name) and its key's hash. */
STS__PRIVATE sts_result sts__keymap_put(sts__keymap *k, uint64_t seed, const sts__dent *d, sts_error *err) {
    int named = d->name_len != d->len || (d->len && d->name != d->key && memcmp(d->name, d->key, d->len) != 0);
    size_t need, at = k->used, hk = sizeof(sts__dkey) + STS__DK_PAD(d->len);
    uint64_t need64;
    sts__dkey *e;
    char *p;
    size_t gap = k->n && hk <= 64 && (at & 63) + hk > 64 ? 64 - (at & 63) : 0;  /* head and key on one cache line */
    at += gap;
    if (d->len > UINT32_MAX || d->rank > UINT32_MAX || (uint64_t)d->name_len > UINT32_MAX)
        return sts__nomem(err, "the key table (a key or shape over 2^32)");
    need64 = sizeof(sts__dkey) + (((uint64_t)d->len + 7) & ~(uint64_t)7) + d->rank * 8 +
             (named ? 8 + (((uint64_t)d->name_len + 7) & ~(uint64_t)7) : 0);
    if (need64 > (uint64_t)((size_t)-1 - at) || (uint64_t)at / 8 > UINT32_MAX || k->n >= UINT32_MAX)
        return sts__nomem(err, "the key table");
    need = (size_t)need64;
    if (k->a0 + at + need > k->cap && !sts__km_reserve(k, at + need)) return sts__nomem(err, "the key table");
    if (k->n == k->hashes_cap && !sts__grow(&k->mem, (void **)&k->hashes, &k->hashes_cap, k->n + 1, sizeof *k->hashes))
        return sts__nomem(err, "the key table");
    p = k->arena + k->a0 + at;
    /* the padding's words are zeroed first: the arena holds no uninitialised bytes */
    if (d->len) memset(p + sizeof *e + STS__DK_PAD(d->len) - 8, 0, 8);
    if (named && d->name_len) memset(p + need - 8, 0, 8);
    e = (sts__dkey *)(void *)p;
    memset(e, 0, sizeof *e);
    e->begin = d->begin; e->end = d->end; e->file = d->file; e->rank = (uint32_t)d->rank; e->len = (uint32_t)d->len;
    e->dtype = (uint8_t)d->dtype; e->named = (uint8_t)named;
    p += sizeof *e;
    if (d->len) memcpy(p, d->key, d->len);
    p += STS__DK_PAD(d->len);
    if (d->rank) memcpy(p, d->shape, (size_t)d->rank * 8);
    p += (size_t)d->rank * 8;
    if (named) {
        uint64_t nl = d->name_len;
        memcpy(p, &nl, 8);
        if (d->name_len) memcpy(p + 8, d->name, d->name_len);
    }
    k->hashes[k->n++] = sts__hash(d->key, d->len, seed);
    k->fstart[d->file + 1]++;
    if (gap) {
        memset(k->arena + k->a0 + k->used, 0, gap);
        ((sts__dkey *)(void *)(k->arena + k->a0 + k->last))->gap = (uint8_t)(gap / 8);
    }
    k->last = at;
    k->used = at + need;
    return STS_OK;
}
/* never 0: a used slot is never 0 */
STS__PRIVATE uint32_t sts__km_tag(uint64_t h) { return (uint32_t)(h >> 32) | 1u; }
/* Indexes the keys; a repeated key keeps the copy in the later file, in natural order (task, then
   shard number), as the writer's lastWin does. Then groups the entries by file and drops what only
   the build needed. */
STS__PRIVATE sts_result sts__keymap_finish(const sts_dataset *ds, sts__keymap *k, sts_error *err) {
    size_t cap = 8, i, f, off = 0;
    const sts__dkey *e;
    while (cap < k->n * 2) { if (cap > ((size_t)-1 >> 5)) return sts__nomem(err, "the key index"); cap <<= 1; }
    if (!(k->slots = (uint64_t *)sts__alloc(&k->mem, cap * sizeof *k->slots))) return sts__nomem(err, "the key index");
    sts__advise_huge(k->slots, cap * sizeof *k->slots);
    memset(k->slots, 0, cap * sizeof *k->slots);
    k->mask = cap - 1;
    if (!(k->byfile = (uint32_t *)sts__alloc(&k->mem, (k->n ? k->n : 1) * sizeof *k->byfile)))
        return sts__nomem(err, "the key index");
    for (f = 0; f < k->nfiles; f++) k->fstart[f + 1] += k->fstart[f];  /* counts -> starts */
    for (i = 0, e = sts__dk_first(k); e; i++, off += sts__dk_size(e) / 8, e = sts__dk_next(k, e)) {
        uint64_t h = k->hashes[i], s;
        uint32_t tag = sts__km_tag(h);
        size_t pos = (size_t)h & k->mask;
#if defined(__GNUC__) || defined(__clang__)
        /* random slots: keep misses in flight */
        if (i + 16 < k->n) __builtin_prefetch(&k->slots[(size_t)k->hashes[i + 16] & k->mask], 1);
#endif
        for (; (s = k->slots[pos]) != 0; pos = (pos + 1) & k->mask) {
            const sts__dkey *was = sts__dk_at(k, (uint32_t)s);
            if ((uint32_t)(s >> 32) == tag && was->len == e->len && (e->len == 0 || memcmp(sts__dk_key(was),
                    sts__dk_key(e), e->len) == 0)) break;
        }
        if (s == 0 || sts__dk_at(k, (uint32_t)s)->file == e->file ||
            sts__natcmp(ds->files[sts__dk_at(k, (uint32_t)s)->file].name, ds->files[e->file].name) <= 0)
            k->slots[pos] = (uint64_t)tag << 32 | off;
        k->byfile[k->fstart[e->file]++] = (uint32_t)off;  /* by file, stable: a file's entries keep the table's order */
    }
    for (f = k->nfiles; f > 0; f--) k->fstart[f] = k->fstart[f - 1];  /* ends -> starts */
    k->fstart[0] = 0;
    sts__free(&k->mem, k->hashes, k->hashes_cap * sizeof *k->hashes);
    sts__free(&k->mem, k->dims, k->dims_cap * sizeof *k->dims);
    sts__free(&k->mem, k->scratch, k->scratch_cap);
    k->hashes = k->dims = NULL;
    k->scratch = NULL;
    k->hashes_cap = k->dims_cap = k->scratch_cap = 0;
    if (k->cap > k->a0 + k->used + k->used / 8 + 128) {  /* give back the doubling's slack */
        void *p = sts__realloc(&k->mem, k->arena, k->cap, k->a0 + k->used + 64);
        if (p) {
            size_t a0;
            k->arena = (char *)p;
            k->cap = k->a0 + k->used + 64;
            a0 = (64 - ((uintptr_t)k->arena & 63)) & 63;
            if (a0 != k->a0) { memmove(k->arena + a0, k->arena + k->a0, k->used); k->a0 = a0; }
        }
    }
    return STS_OK;
}
STS__PRIVATE const sts__dkey *sts__keymap_find(const sts__keymap *k, uint64_t h, const char *key, size_t len) {
    uint32_t tag = sts__km_tag(h);
    size_t pos;
    uint64_t s;
    if (!k || !k->n) return NULL;
    for (pos = (size_t)h & k->mask; (s = k->slots[pos]) != 0; pos = (pos + 1) & k->mask)
        if ((uint32_t)(s >> 32) == tag) {  /* the entry is read only when 32 more bits of the hash match */
            const sts__dkey *e = sts__dk_at(k, (uint32_t)s);
            if (e->len == len && (len == 0 || memcmp(sts__dk_key(e), key, len) == 0)) return e;
        }
    return NULL;
}
STS__PRIVATE size_t sts__ds_file_index(const sts_dataset *ds, const char *name, size_t len) {
    sts__names nm;
    uint32_t it;
    nm.items = ds->files; nm.stride = sizeof *ds->files; nm.ptr_off = offsetof(sts__dfile,
            name); nm.len_off = offsetof(sts__dfile, name_len);
    nm.hashes = ds->fhash; nm.hash_stride = sizeof *ds->fhash;
    it = ds->fix.slots[sts__index_probe(&ds->fix, &nm, sts__hash(name, len, ds->seed), name, len)];
    return it == STS__EMPTY ? (size_t)-1 : it;
}
/* >>index ---- files ---- */
STS__PRIVATE sts_result sts__ds_add_file(sts_dataset *ds, const char *name, size_t len, uint64_t size, sts_error *err) {
    sts__dfile *f;
    if (ds->nfiles == ds->files_cap && !sts__grow(&ds->mem, (void **)&ds->files, &ds->files_cap, ds->nfiles + 1,
                                                  sizeof *ds->files)) return sts__nomem(err, "the file list");
    f = &ds->files[ds->nfiles];
    memset(f, 0, sizeof *f);
    if (!(f->name = (char *)sts__alloc(&ds->mem, len + 1))) return sts__nomem(err, "a file name");
    memcpy(f->name, name, len);
    f->name[len] = 0;
    f->name_len = len;
    ds->nfiles++;  /* counted now, so close frees the name even if the path fails */
    if (!(f->path = sts__join(&ds->mem, ds->root, f->name, &f->path_size))) return sts__nomem(err, "a file path");
    f->size = size;
    f->samples = UINT64_MAX;
    f->crc32c = UINT64_MAX;
    return STS_OK;
}
STS__PRIVATE int sts__by_file_name(const void *ctx, size_t a, size_t b) {  /* name order */
    const sts__dfile *f = (const sts__dfile *)ctx;
    return strcmp(f[a].name, f[b].name) < 0;
}
STS__PRIVATE sts_result sts__ds_sort_files(sts_dataset *ds, sts_error *err) {
    size_t i;
    if (!sts__sort_records(&ds->mem, ds->files, ds->nfiles, sizeof *ds->files, sts__by_file_name))
        return sts__nomem(err, "the file order");
    for (i = 1; i < ds->nfiles; i++)
        if (strcmp(ds->files[i - 1].name, ds->files[i].name) == 0)
            return sts__failx(err, STS_RULE_DATASET_MANIFEST, "the manifest lists shard %q twice", ds->files[i].name,
                              ds->files[i].name_len);
    if (!ds->has_manifest)
        for (i = 0; i < ds->nfiles; i++) ds->files[i].order = i;  /* no manifest: name order */
    return STS_OK;
}
STS__PRIVATE sts_result sts__ds_index_files(sts_dataset *ds, sts_error *err) {
    size_t i;
    sts__names nm;
    if (!(ds->fhash = (uint64_t *)sts__alloc(&ds->mem, (ds->nfiles ? ds->nfiles : 1) * sizeof *ds->fhash)) ||
        !sts__index_init(&ds->mem, &ds->fix, ds->nfiles)) return sts__nomem(err, "the file index");
    nm.items = ds->files; nm.stride = sizeof *ds->files; nm.ptr_off = offsetof(sts__dfile,
            name); nm.len_off = offsetof(sts__dfile, name_len);
    nm.hashes = ds->fhash; nm.hash_stride = sizeof *ds->fhash;
    for (i = 0; i < ds->nfiles; i++) {
        ds->fhash[i] = sts__hash(ds->files[i].name, ds->files[i].name_len, ds->seed);
        ds->fix.slots[sts__index_probe(&ds->fix, &nm, ds->fhash[i], ds->files[i].name,
                                       ds->files[i].name_len)] = (uint32_t)i;
    }
    return STS_OK;
}
/* The shards of dataset_manifest.json (the one reader, sts__manifest_read); each must exist with
   the listed size. */
STS__PRIVATE sts_result sts__ds_manifest(sts_dataset *ds, const sts__manifest *mf, sts_error *err) {
    size_t i;
    sts_result r;
    ds->has_manifest = 1;
    for (i = 0; i < mf->nshards; i++) {
        const sts__mshard *x = &mf->shards[i];
        sts__stat st;
        int e;
        if ((r = sts__ds_add_file(ds, x->name, x->name_len, x->bytes, err)) != STS_OK) return r;
        ds->files[ds->nfiles - 1].samples = x->samples;
        ds->files[ds->nfiles - 1].crc32c = x->crc32c;
        ds->files[ds->nfiles - 1].order = i;
        if ((e = sts__stat_path(ds->files[ds->nfiles - 1].path, &st)) != 0)
            return sts__failx(err, STS_RULE_DATASET_MANIFEST,
                              "shard %q is listed in dataset_manifest.json but missing: %s", x->name,
                              x->name_len, sts__errno_name(e));
        if (st.size != x->bytes)
            return sts__failx(err, STS_RULE_DATASET_MANIFEST,
                              "shard %q has %U bytes, but dataset_manifest.json lists %U", x->name,
                              x->name_len, st.size, x->bytes);
    }
    ds->total_samples = mf->total_samples;
    ds->total_bytes = mf->total_bytes;
    ds->kv = mf->kv;
    ds->lastwin = mf->dup == STS_DUPLICATES_LAST_WIN;
    if (mf->ncols) {  /* the manifest's schema, kept as views: dims 8-aligned, then the name */
        size_t bytes = 0, used = 0;
        for (i = 0; i < mf->ncols; i++) bytes += 8 + (size_t)mf->cols[i].rank * 8 + mf->cols[i].name_len + 1;
        if (!(ds->mcols = (sts_view *)sts__alloc(&ds->mem, mf->ncols * sizeof *ds->mcols)))
            return sts__nomem(err, "the manifest schema");
        ds->nmcols = mf->ncols;
        memset(ds->mcols, 0, mf->ncols * sizeof *ds->mcols);
        if (!(ds->mcol_store = (char *)sts__alloc(&ds->mem, bytes))) return sts__nomem(err, "the manifest schema");
        ds->mcol_store_size = bytes;
        for (i = 0; i < mf->ncols; i++) {
            const sts__scol *c = &mf->cols[i];
            uint64_t *dims = (uint64_t *)(void *)(ds->mcol_store + ((used + 7) & ~(size_t)7));
            char *name = (char *)(dims + c->rank);
            uint32_t d;
            for (d = 0; d < c->rank; d++) dims[d] = c->dims[d] < 0 ? STS_DIM_ANY : (uint64_t)c->dims[d];
            memcpy(name, c->name, c->name_len + 1);
            used = (size_t)(name + c->name_len + 1 - ds->mcol_store);
            ds->mcols[i].key = name;
            ds->mcols[i].key_len = c->name_len;
            ds->mcols[i].dtype = c->dtype;
            ds->mcols[i].rank = c->rank;
            ds->mcols[i].shape = dims;
            ds->mcols[i].file = (size_t)-1;
            ds->mcols[i].present = 1;
        }
    }
    if (mf->dataset_id) {
        if (!(ds->dataset_id = (char *)sts__alloc(&ds->mem, mf->dataset_id_len + 1)))
            return sts__nomem(err, "the dataset id");
        memcpy(ds->dataset_id, mf->dataset_id, mf->dataset_id_len + 1);
        ds->dataset_id_len = mf->dataset_id_len;
    }
    return STS_OK;
}
/* No manifest: the folder's visible shards (sts__list_shards), in name order after sorting. */
STS__PRIVATE sts_result sts__ds_listed(void *user, const char *name, uint64_t size, sts_error *err) {
    return sts__ds_add_file((sts_dataset *)user, name, strlen(name), size, err);
}
STS__PRIVATE sts_result sts__ds_listing(sts_dataset *ds, sts_error *err) {
    sts_result r = sts__list_shards(&ds->mem, ds->root, sts__ds_listed, ds, err);
    if (r == STS_OK && ds->nfiles == 0)
        r = sts__failx(err, STS_RULE_NOT_FOUND, "the folder %q holds no dataset_manifest.json and no .safetensors file",
                       ds->root,
                       strlen(ds->root));
    return r;
}

/* ---- the tensor index ---- */
/* The index's UTF-8 needs no pass of its own: every byte the parser passes is grammar (ASCII) or
   inside a string, whose bytes >= 0x80 the string scanners check (sts__json_string, sts__ix_str), so
   a text that parses is UTF-8. What is behind the parser can go back to the system. */
STS__PRIVATE void sts__index_step(sts__keymap *k, size_t at) { sts__map_drop_before(&k->text, at); }
/* The verdict of a parse that stopped early (r, failed or not): the first byte that is not UTF-8
   decides, as when the whole text was checked first. The bytes given back were all passed by the
   parser, so the check starts there, past the continuation bytes of a character begun before. */
STS__PRIVATE sts_result sts__index_utf8_verdict(sts__keymap *k, sts_result r, sts_error *err) {
    const uint8_t *s = k->text.p;
    size_t a = k->text.gone, n = k->text.size, bad, back = 0;
    while (a && a < n && back < 3 && (s[a] & 0xC0) == 0x80) { a++; back++; }  /* none given back: none to skip */
    if (a >= n || (bad = sts__utf8_check(s + a, n - a)) == n - a) return r;  /* (an empty file: no bytes) */
    return sts__fail(err, STS_RULE_DATASET_INDEX, (uint64_t)(a + bad), "_tensor_index.json is not UTF-8 at byte %U",
                     (uint64_t)(a + bad));
}
/* Room for n bytes at `at` in the scratch buffer (an entry's unescaped key, then its name). */
STS__PRIVATE char *sts__km_scratch(sts__keymap *k, size_t at, size_t n) {
    if (n > (size_t)-1 - at || !sts__grow(&k->mem, (void **)&k->scratch, &k->scratch_cap, at + n, 1)) return NULL;
    return k->scratch + at;
}
/* The fast reader of an index entry in the writer's own form, byte for byte:
     {"file":"F"[,"tensor":"T"],"dtype":"D","shape":[d,...],"data_offsets":[b,e]}
   with no whitespace, no escapes and integers of at most 19 digits without leading zeros. It takes a
   subset of what sts__index_entry takes, with the same values; on anything else it returns 0 with
   j->p unmoved, and the general reader starts over from the same byte (so every error is the
   general reader's); -1 when the shapes cannot grow (NOMEM: a failed allocation is not retried). */
STS__INLINE const uint8_t *sts__ix_lit(const uint8_t *p, const uint8_t *end, const char *lit, size_t n) {
    if (!p || (size_t)(end - p) < n) return NULL;
    /* word compares that fold to constants (libc's memcmp was nine calls an entry) */
    return (n >= 8 && n <= 24 ? sts__lit_eq(p, lit, n) : sts__eq_short(p, (const uint8_t *)lit, n)) ? p + n : NULL;
}
/* up to the closing quote; bytes >= 0x80 checked as UTF-8 in place (a bad one: the general reader's error) */
STS__PRIVATE const uint8_t *sts__ix_str(const uint8_t *p, const uint8_t *end, size_t *n) {
    size_t i = 0, m;
    if (!p) return NULL;
    for (;;) {
        i += sts__str_stop(p + i, (size_t)(end - p) - i);
        if (i >= (size_t)(end - p)) return NULL;
        if (p[i] == '"') break;
        if (p[i] < 0x80 || !(m = sts__utf8_seq(p + i, (size_t)(end - p) - i))) return NULL;
        i += m;
    }
    *n = i;
    return p + i + 1;
}
STS__PRIVATE const uint8_t *sts__ix_u64(const uint8_t *p, const uint8_t *end, uint64_t *v) {  /* then ',' or ']' */
    size_t n = p ? sts__fast_u64(p, end, v) : 0;
    return n ? p + n : NULL;
}
STS__PRIVATE int sts__index_entry_fast(sts_dataset *ds, sts__keymap *k, sts__json *j, sts__dent *e) {
    const uint8_t *p = j->p, *end = j->end, *file, *name = NULL, *dt;
    size_t fl, nl = 0, dl, nd = 0;
    uint64_t b, en;
    sts_dtype dtype;
    uint32_t fi;
    if (j->depth + 1 > j->max_depth) return 0;
    file = p = sts__ix_lit(p, end, "{\"file\":\"", 9);
    p = sts__ix_str(p, end, &fl);
    if (p && end - p > 11 && STS__LIT_EQ(p, ",\"tensor\":\"")) { name = p + 11; p = sts__ix_str(name, end, &nl); }
    dt = p = sts__ix_lit(p, end, ",\"dtype\":\"", 10);
    p = sts__ix_str(p, end, &dl);
    p = sts__ix_lit(p, end, ",\"shape\":[", 10);
    if (!p || !sts_dtype_from_name((const char *)dt, dl, &dtype)) return 0;
    if (p < end && *p == ']') p++;
    else for (;;) {
        uint64_t v;
        if (!(p = sts__ix_u64(p, end, &v))) return 0;
        if (nd == k->dims_cap && !sts__grow(&k->mem, (void **)&k->dims, &k->dims_cap, nd + 1, sizeof *k->dims))
            return -1;
        k->dims[nd++] = v;
        if (*p++ == ']') break;
    }
    p = sts__ix_lit(p, end, ",\"data_offsets\":[", 17);
    p = sts__ix_u64(p, end, &b);
    if (!p || *p != ',') return 0;
    p = sts__ix_u64(p + 1, end, &en);
    p = sts__ix_lit(p, end, "]}", 2);
    if (!p || en < b) return 0;
    if (k->last_file_len && fl == k->last_file_len && sts__eq_short(file, (const uint8_t *)k->last_file, fl))
        fi = k->last_fi;
    else {
        size_t f = sts__ds_file_index(ds, (const char *)file, fl);
        if (f == (size_t)-1) return 0;  /* a stale index: the general reader says so */
        fi = (uint32_t)f;
        k->last_file_len = fl <= sizeof k->last_file ? fl : 0;
        if (k->last_file_len) memcpy(k->last_file, file, fl);
        k->last_fi = fi;
    }
    e->file = fi;
    e->dtype = dtype;
    e->rank = nd;
    e->shape = k->dims;
    e->begin = b;
    e->end = en;
    if (name) { e->name = (const char *)name; e->name_len = nl; }
    else { e->name = e->key; e->name_len = e->len; }
    j->p = p;
    return 1;
}
STS__PRIVATE sts_result sts__index_entry(sts_dataset *ds, sts__keymap *k, sts__json *j, sts__dent *e, sts_error *err) {
    sts_result r;
    int have = 0;
    size_t nd = 0;
    {
        int fast = sts__index_entry_fast(ds, k, j, e);
        if (fast > 0) return STS_OK;
        if (fast < 0) return sts__nomem(err, "index shapes");
    }
    if (j->p >= j->end || *j->p != '{')
        return sts__json_fail(j, STS_RULE_DATASET_INDEX, j->p, "an index entry must be an object");
    if ((r = sts__json_enter(j)) != STS_OK) return r;
    j->p++;
    sts__json_ws(j);
    if (j->p < j->end && *j->p == '}') j->p++;
    else for (;;) {
        sts__str f;
        char fb[80];
        size_t fl = 0;
        if (j->p >= j->end || *j->p != '"')
            return sts__json_fail(j, STS_RULE_JSON_SYNTAX, j->p, "expected a field name");
        if ((r = sts__json_string(j, &f)) != STS_OK) return r;
        if ((r = sts__json_expect(j, ':', "':'")) != STS_OK) return r;
        sts__json_ws(j);
        /* keys compare unescaped */
        if (f.n <= sizeof fb) fl = f.esc ? sts__json_unescape(f.p, f.n, fb) : (memcpy(fb, f.p, f.n), f.n);
        if (fl == 4 && memcmp(fb, "file", 4) == 0) {
            sts__str v;
            size_t fi;
            if (j->p >= j->end || *j->p != '"')
                return sts__json_fail(j, STS_RULE_DATASET_INDEX, j->p, "file must be a string");
            if ((r = sts__json_string(j, &v)) != STS_OK) return r;
            if (v.esc) {  /* JSON writers may escape any character: compare unescaped */
                char nb[512];
                size_t nl = v.n <= sizeof nb ? sts__json_unescape(v.p, v.n, nb) : 0;
                fi = nl ? sts__ds_file_index(ds, nb, nl) : (size_t)-1;
            } else fi = sts__ds_file_index(ds, v.p, v.n);
            if (fi == (size_t)-1)
                return sts__failx(err, STS_RULE_DATASET_INDEX,
                                  "_tensor_index.json: tensor %q is in file %q, which is not a file of the dataset "
                                  "(stale index)",
                                 e->key, e->len, v.p, v.n);
            e->file = (uint32_t)fi;
            have |= 1;
        } else if (fl == 6 && memcmp(fb, "tensor", 6) == 0) {  /* the name in the file, when not the key */
            sts__str v;
            if (j->p >= j->end || *j->p != '"')
                return sts__json_fail(j, STS_RULE_DATASET_INDEX, j->p, "tensor must be a string");
            if ((r = sts__json_string(j, &v)) != STS_OK) return r;
            if (v.esc) {  /* after the key when the key is in the scratch buffer too */
                int key_here = k->scratch && e->key == k->scratch;
                size_t at = key_here ? e->len : 0;
                char *dst = sts__km_scratch(k, at, v.n);
                if (!dst) return sts__nomem(err, "an index name");
                if (key_here) e->key = k->scratch;  /* the buffer may have moved */
                e->name_len = sts__json_unescape(v.p, v.n, dst);
                e->name = dst;
            } else { e->name = v.p; e->name_len = v.n; }
        } else if (fl == 5 && memcmp(fb, "dtype", 5) == 0) {
            sts__str v;
            if (j->p >= j->end || *j->p != '"')
                return sts__json_fail(j, STS_RULE_DATASET_INDEX, j->p, "dtype must be a string");
            if ((r = sts__json_string(j, &v)) != STS_OK) return r;
            {
                char db[80];
                size_t dl = v.esc ? (v.n <= sizeof db ? sts__json_unescape(v.p, v.n, db) : 0) : v.n;
                if (!sts_dtype_from_name(v.esc ? db : v.p, dl, &e->dtype))
                    return sts__json_fail(j, STS_RULE_DATASET_INDEX, j->p, "unknown dtype");
            }
            have |= 2;
        } else if (fl == 5 && memcmp(fb, "shape", 5) == 0) {
            if (j->p >= j->end || *j->p != '[')
                return sts__json_fail(j, STS_RULE_DATASET_INDEX, j->p, "shape must be an array");
            j->p++;
            sts__json_ws(j);
            e->rank = 0;
            nd = 0;
            if (j->p < j->end && *j->p == ']') j->p++;
            else for (;;) {
                uint64_t v;
                sts__json_ws(j);
                if ((r = sts__json_u64(j, &v, STS_RULE_DATASET_INDEX, "shape")) != STS_OK) return r;
                if (nd == k->dims_cap && !sts__grow(&k->mem, (void **)&k->dims, &k->dims_cap, nd + 1, sizeof *k->dims))
                    return sts__nomem(err, "index shapes");
                k->dims[nd++] = v;
                e->rank++;
                sts__json_ws(j);
                if (j->p < j->end && *j->p == ',') { j->p++; continue; }
                if ((r = sts__json_expect(j, ']', "']'")) != STS_OK) return r;
                break;
            }
            have |= 4;
        } else if (fl == 12 && memcmp(fb, "data_offsets", 12) == 0) {
            if ((r = sts__json_expect(j, '[', "'['")) != STS_OK) return r;
            sts__json_ws(j);
            if ((r = sts__json_u64(j, &e->begin, STS_RULE_DATASET_INDEX, "data_offsets")) != STS_OK) return r;
            if ((r = sts__json_expect(j, ',', "','")) != STS_OK) return r;
            sts__json_ws(j);
            if ((r = sts__json_u64(j, &e->end, STS_RULE_DATASET_INDEX, "data_offsets")) != STS_OK) return r;
            if ((r = sts__json_expect(j, ']', "']'")) != STS_OK) return r;
            if (e->end < e->begin)
                return sts__json_fail(j, STS_RULE_DATASET_INDEX, j->p, "data_offsets end before they begin");
            have |= 8;
        } else if ((r = sts__json_skip(j)) != STS_OK) return r;
        sts__json_ws(j);
        if (j->p < j->end && *j->p == ',') { j->p++; sts__json_ws(j); continue; }
        if ((r = sts__json_expect(j, '}', "'}'")) != STS_OK) return r;
        break;
    }
    j->depth--;
    if (have != 15)
        return sts__json_fail(j, STS_RULE_DATASET_INDEX, j->p,
                              "an index entry needs file, dtype, shape and data_offsets");
    if (!e->name) { e->name = e->key; e->name_len = e->len; }
    e->shape = k->dims;
    return STS_OK;
}
/* _tensor_index.json, in phases: the text (mapped, given back behind the parser, its UTF-8 checked
   in its strings), the "tensors" object read entry by entry with the header scanner's pieces (no token
   tape: an index of a million keys is parsed in one pass), the "metadata" object (its dataset_id
   tells a stale index), other members skipped. */
STS__PRIVATE sts_result sts__index_open(sts_dataset *ds, const char *path, sts__keymap **out, sts_error *err) {
    sts__keymap *k;
    sts_result r;
    if (!(k = sts__keymap_new(ds))) return sts__nomem(err, "the tensor index");
    if ((r = sts__map_path(&k->mem, path, 0, 0, &k->text, err)) != STS_OK) { sts__keymap_free(k); return r; }
    /* the entries take a fraction of the JSON (about 1/4 for the writer's index): reserved now, so
       they are not copied as they grow and their pages can be huge from the first touch */
    (void)sts__km_reserve(k, k->text.size / 2);
    STS__ADD(&ds->st_header, (uint64_t)k->text.size);
    *out = k;
    return STS_OK;
}
/* The members of the "tensors" object, j just past its '{'. */
STS__PRIVATE sts_result sts__index_tensors(sts_dataset *ds, sts__keymap *k, sts__json *j, sts_error *err) {
    sts_result r;
    sts__json_ws(j);
    if (j->p < j->end && *j->p == '}') { j->p++; return STS_OK; }
    for (;;) {
        sts__str tk;
        sts__dent e;
        sts__index_step(k, (size_t)(j->p - j->base));
        memset(&e, 0, sizeof e);
        if (j->p >= j->end || *j->p != '"')
            return sts__json_fail(j, STS_RULE_JSON_SYNTAX, j->p, "expected a tensor key");
        if ((r = sts__json_string(j, &tk)) != STS_OK) return r;
        if (tk.esc) {
            char *dst = sts__km_scratch(k, 0, tk.n);
            if (!dst) return sts__nomem(err, "an index key");
            e.len = sts__json_unescape(tk.p, tk.n, dst);
            e.key = dst;
        } else { e.key = tk.p; e.len = tk.n; }
        if ((r = sts__json_expect(j, ':', "':'")) != STS_OK) return r;
        sts__json_ws(j);
        if ((r = sts__index_entry(ds, k, j, &e, err)) != STS_OK) return r;
        if ((r = sts__keymap_put(k, ds->seed, &e, err)) != STS_OK) return r;
        sts__json_ws(j);
        if (j->p < j->end && *j->p == ',') { j->p++; sts__json_ws(j); continue; }
        return sts__json_expect(j, '}', "'}'");
    }
}
/* The "metadata" object at j: *stale is set when the dataset has a dataset_id (its manifest's)
   and the index's is absent or another (an overwrite interrupted between its index and its
   manifest: the manifest is the truth, and keys are found through the headers). A malformed
   metadata object only counts as having no dataset_id. */
STS__PRIVATE sts_result sts__index_metadata(sts_dataset *ds, sts__json *j, int *stale, sts_error *err) {
    const uint8_t *start = j->p;
    sts__jdoc md;
    sts_result r;
    int same = 0;
    if ((r = sts__json_skip(j)) != STS_OK) return r;
    r = sts__jdoc_parse(&md, start, (size_t)(j->p - start), &ds->mem, "_tensor_index.json metadata",
                        STS_RULE_DATASET_INDEX, err);
    if (r == STS_ERR_NOMEM) return r;
    if (r == STS_OK) {
        uint32_t t = sts__jdoc_get(&md, 0, "dataset_id");
        if (t && md.tok[t].type == '"' && ds->dataset_id) {
            size_t n;
            char *id = sts__jdoc_dup(&ds->mem, &md, t, &n);
            if (!id) { sts__jdoc_free(&md); return sts__nomem(err, "the index's dataset id"); }
            same = n == ds->dataset_id_len && memcmp(id, ds->dataset_id, n) == 0;
            sts__free(&ds->mem, id, n + 1);
        }
        sts__jdoc_free(&md);
    }
    *stale = ds->dataset_id && !same;
    return STS_OK;
}
STS__PRIVATE sts_result sts__ds_load_index(sts_dataset *ds, const char *path, sts_error *err) {
    sts__keymap *k = NULL;
    sts__json j;
    sts_result r;
    int have_tensors = 0, have_meta = 0, stale = 0;
    if ((r = sts__index_open(ds, path, &k, err)) != STS_OK) return r;
    memset(&j, 0, sizeof j);
    j.p = j.base = k->text.p;
    j.end = j.p + k->text.size;
    j.err = err;
    j.max_depth = STS_MAX_DEPTH;
    j.doc_rule = STS_RULE_DATASET_INDEX;
    j.doc = "_tensor_index.json";
    sts__json_ws(&j);
    if ((r = sts__json_expect(&j, '{', "'{'")) != STS_OK) goto fail;
    j.depth = 1;
    sts__json_ws(&j);
    if (j.p < j.end && *j.p == '}') j.p++;
    else for (;;) {
        sts__str key;
        sts__index_step(k, (size_t)(j.p - j.base));
        if (j.p >= j.end || *j.p != '"') {
            r = sts__json_fail(&j, STS_RULE_JSON_SYNTAX, j.p, "expected a key");
            goto fail;
        }
        if ((r = sts__json_string(&j, &key)) != STS_OK) goto fail;
        if ((r = sts__json_expect(&j, ':', "':'")) != STS_OK) goto fail;
        sts__json_ws(&j);
        if (!key.esc && key.n == 7 && memcmp(key.p, "tensors", 7) == 0 && j.p < j.end && *j.p == '{') {
            have_tensors = 1;
            if ((r = sts__json_enter(&j)) != STS_OK) goto fail;
            j.p++;
            if ((r = sts__index_tensors(ds, k, &j, err)) != STS_OK) goto fail;
            j.depth--;
        } else if (!key.esc && key.n == 8 && memcmp(key.p, "metadata", 8) == 0 && j.p < j.end && *j.p == '{') {
            have_meta = 1;
            if ((r = sts__index_metadata(ds, &j, &stale, err)) != STS_OK) goto fail;
            if (stale) goto stale;  /* the rest is not read: its UTF-8 is still the verdict */
        } else if ((r = sts__json_skip(&j)) != STS_OK) goto fail;
        sts__json_ws(&j);
        if (j.p < j.end && *j.p == ',') { j.p++; sts__json_ws(&j); continue; }
        if ((r = sts__json_expect(&j, '}', "'}'")) != STS_OK) goto fail;
        break;
    }
    sts__json_ws(&j);
    if (j.p < j.end) {
        r = sts__json_fail(&j, STS_RULE_JSON_SYNTAX, j.p, "unexpected byte after the index");
        goto fail;
    }
    if (!have_tensors) {
        r = sts__failx(err, STS_RULE_DATASET_INDEX, "_tensor_index.json has no \"tensors\" object");
        goto fail;
    }
    if (!have_meta && ds->dataset_id) goto stale;  /* no dataset_id at all: not this dataset's index */
    sts__keymap_drop_text(k);  /* keys and names were copied: the JSON's pages leave the process */
    if ((r = sts__keymap_finish(ds, k, err)) != STS_OK) goto fail;
    ds->index = k;
    ds->has_index = 1;
    return STS_OK;
stale:
    if ((r = sts__index_utf8_verdict(k, STS_OK, err)) != STS_OK) goto fail;
    ds->index_stale = 1;
    sts__keymap_free(k);
    sts__ok(err);
    return STS_OK;
fail:
    r = sts__index_utf8_verdict(k, r, err);  /* not UTF-8: that is the verdict, as when it was checked first */
    sts__keymap_free(k);
    return r;
}

/* ---- files on demand ---- */
/* Puts the file's name into an error from the single-file layer: "<rule>: file "x": <what>". */
STS__PRIVATE sts_result sts__ds_name_file(sts_error *err, sts_result r, const sts__dfile *f) {
    if (err) {
        char inner[256];
        const char *id = sts_rule_id(err->rule), *msg = inner;
        size_t il = strlen(id);
        memcpy(inner, err->message, sizeof inner);
        /* the rule is said once */
        if (strncmp(msg, id, il) == 0 && msg[il] == ':' && msg[il + 1] == ' ') msg += il + 2;
        sts__fail_code(err, r, err->rule, err->offset, "file %q: %s", f->name, f->name_len, msg);
    }
    return r;
}
/* The mapped file (full validation), mapped once; racing threads agree through a CAS. */
STS__PRIVATE sts_result sts__ds_map(const sts_dataset *cds, size_t fi, sts_file **out, sts_error *err) {
    sts_dataset *ds = (sts_dataset *)(uintptr_t)cds;  /* only the CAS-published cache and counters change */
    sts__dfile *f = &ds->files[fi];
    sts_file *have = (sts_file *)STS__LOAD_PTR(&f->map), *mine = NULL, *expect = NULL;
    sts_options o;
    sts_result r;
    if (have) { *out = have; return STS_OK; }
    memset(&o, 0, sizeof o);
    o.allocator = ds->mem.a;
    if ((r = sts_open(f->path, &o, &mine, err)) != STS_OK) return sts__ds_name_file(err, r, f);
    if (sts_file_size(mine) != f->size && ds->has_manifest) {
        sts_close(mine);
        return sts__failx(err, STS_RULE_DATASET_MANIFEST, "file %q changed size since the dataset was opened", f->name,
                          f->name_len);
    }
    if (ds->verify && f->crc32c != UINT64_MAX) {  /* first touch: every byte against the manifest's checksum */
        uint32_t crc = sts__crc32c(0, mine->header - 8, (size_t)sts_file_size(mine));
        if (crc != (uint32_t)f->crc32c) {
            sts_close(mine);
            return sts__failx(err, STS_RULE_DATASET_CHECKSUM, "file %q: its bytes have CRC-32C %U, but "
                              "dataset_manifest.json records %U: the file changed after it was written", f->name,
                              f->name_len, (uint64_t)crc, f->crc32c);
        }
    }
    if (STS__CAS_PTR(&f->map, &expect, mine)) {
        STS__ADD(&ds->st_mapped, 1);
        *out = mine;
    } else {
        sts_close(mine);  /* another thread won */
        *out = expect;
    }
    return STS_OK;
}
/* The header alone (8 + N bytes), owned by the caller. */
STS__PRIVATE sts_result sts__ds_header(const sts_dataset *ds, size_t fi, sts_file **out, sts_scan_stats *st,
                                       sts_error *err) {
    sts_options o;
    sts_result r;
    const sts__dfile *f = &ds->files[fi];
    memset(&o, 0, sizeof o);
    o.allocator = ds->mem.a;
    o.header_only = 1;
    r = sts_open(f->path, &o, out, err);
    if (r != STS_OK) return sts__ds_name_file(err, r, f);
    if (st) { st->files_opened++; st->header_bytes += 8 + sts_header_size(*out); }
    return STS_OK;
}
/* Without an index: the key table built once from every file's header (8 + N bytes each; the
   files are mapped later, one by one, when their data is asked for). */
STS__PRIVATE sts_result sts__ds_keys(const sts_dataset *cds, const sts__keymap **out, sts_error *err) {
    sts_dataset *ds = (sts_dataset *)(uintptr_t)cds;
    sts__keymap *have, *k, *expect = NULL;
    sts__hread hr;
    size_t i;
    sts_result r = STS_OK;
    if (ds->index) { *out = ds->index; return STS_OK; }
    if ((have = (sts__keymap *)STS__LOAD_PTR(&ds->built)) != NULL) { *out = have; return STS_OK; }
    if (!(k = sts__keymap_new(ds))) return sts__nomem(err, "the key table");
    sts__hread_init(&hr, &ds->mem, NULL);  /* the headers one after another, as a scan reads them */
    for (i = 0; i < ds->nfiles && r == STS_OK; i++) {
        sts_file *f;
        size_t t;
        if ((r = sts__hread_open(&hr, ds->files[i].path, ds->files[i].size, &f, err)) != STS_OK) {
            r = sts__ds_name_file(err, r, &ds->files[i]);
            break;
        }
        STS__ADD(&ds->st_opened, 1);
        STS__ADD(&ds->st_header, 8 + sts_header_size(f));
        for (t = 0; t < sts_count(f) && r == STS_OK; t++) {
            const sts_tensor *x = sts_at(f, t);
            sts__dent e;
            e.key = e.name = x->name;
            e.len = e.name_len = x->name_len;
            e.file = (uint32_t)i;
            e.rank = x->rank;
            e.dtype = x->dtype;
            e.shape = x->shape; e.begin = x->begin; e.end = x->end;
            /* batch datasets: every file has the same names; keys are "file/name" as in the index */
            if (ds->has_manifest && !ds->kv) {
                const sts__dfile *df = &ds->files[i];
                size_t kl = df->name_len + 1 + x->name_len;
                char *q = sts__km_scratch(k, 0, kl);
                if (!q) { r = sts__nomem(err, "the key table"); break; }
                memcpy(q, df->name, df->name_len);
                q[df->name_len] = '/';
                memcpy(q + df->name_len + 1, x->name, x->name_len);
                e.key = q;
                e.len = kl;
            }
            r = sts__keymap_put(k, ds->seed, &e, err);
        }  /* the entries hold copies; the reader keeps f until its next file */
    }
    sts__hread_free(&hr);
    if (r == STS_OK) r = sts__keymap_finish(ds, k, err);
    if (r != STS_OK) { sts__keymap_free(k); return r; }
    if (STS__CAS_PTR(&ds->built, &expect, k)) *out = k;
    else { sts__keymap_free(k); *out = expect; }
    return STS_OK;
}
/* Whether the file's header holds the entry's tensor exactly as the entry says. `guess`, when not
   NULL, is tried before the name index (names are unique in a file). */
STS__PRIVATE const sts_tensor *sts__dk_in(const sts__dkey *e, const sts_file *h, const sts_tensor *guess, int *same) {
    size_t nl;
    const char *nm = sts__dk_name(e, &nl);
    const sts_tensor *t = guess && guess->name_len == nl && (nl == 0 || memcmp(guess->name, nm,
            nl) == 0) ? guess : sts_find(h, nm, nl);
    *same = t && t->dtype == (sts_dtype)e->dtype && t->rank == e->rank && t->begin == e->begin && t->end == e->end &&
            (e->rank == 0 || memcmp(t->shape, sts__dk_shape(e), (size_t)e->rank * sizeof *t->shape) == 0);
    return t;
}
/* The first lookup with data of a file checks all the key table's entries for that file against
   its header, once: later lookups then add the offset to the data section. A file that disagrees
   with an entry is marked so, and its lookups check their own entry (to report that key). Racing
   threads reach the same verdict; the CAS keeps one. */
STS__PRIVATE sts_result sts__ds_check_file(const sts_dataset *cds, const sts__keymap *k, size_t fi, const uint8_t **out,
                                           sts_error *err) {
    sts_dataset *ds = (sts_dataset *)(uintptr_t)cds;
    sts_file *f;
    const uint8_t *want, *expect = NULL;
    const sts_tensor *next = NULL;
    size_t i;
    int same = 1;
    sts_result r;
    if ((r = sts__ds_map(ds, fi, &f, err)) != STS_OK) return r;
    next = sts_at(f, 0);
    /* the writer lists a shard's keys in its order: try the next tensor first */
    for (i = k->fstart[fi]; i < k->fstart[fi + 1] && same; i++) {
        const sts_tensor *t = sts__dk_in(sts__dk_at(k, k->byfile[i]), f, next, &same);
        next = t ? sts_at(f, (size_t)(t - sts_at(f, 0)) + 1) : NULL;
    }
    want = same && f->data ? f->data : &sts__lk_disagrees;
    if (!STS__CAS_PTR(&ds->files[fi].lk_data, &expect, want)) want = expect;
    *out = want;
    return STS_OK;
}
/* The data of a key-table entry; the file's header was checked against the table (above). */
STS__PRIVATE sts_result sts__ds_entry_data(const sts_dataset *ds, const sts__keymap *k, const sts__dkey *e,
                                           const void **data, sts_error *err) {
    sts_file *f;
    const sts_tensor *t;
    const uint8_t *base = (const uint8_t *)STS__LOAD_PTR(&ds->files[e->file].lk_data);
    const sts__dfile *df = &ds->files[e->file];
    sts_result r;
    int same;
    if (!base && (r = sts__ds_check_file(ds, k, e->file, &base, err)) != STS_OK) return r;
    if (base != &sts__lk_disagrees) { *data = base + e->begin; return STS_OK; }
    if ((r = sts__ds_map(ds, e->file, &f, err)) != STS_OK) return r;
    t = sts__dk_in(e, f, NULL, &same);
    if (!t)
        return sts__failx(err, STS_RULE_DATASET_INDEX, "the index places %q in file %q, which has no such tensor "
                                                       "(stale index)",
                         sts__dk_key(e), (size_t)e->len, df->name, df->name_len);
    if (t->dtype != (sts_dtype)e->dtype || t->rank != e->rank || t->begin != e->begin || t->end != e->end)
        return sts__failx(err, STS_RULE_DATASET_INDEX, "the index disagrees with the header of file %q about tensor %q",
                         df->name, df->name_len, sts__dk_key(e), (size_t)e->len);
    if (!same)
        return sts__failx(err, STS_RULE_DATASET_INDEX, "the index disagrees with the header of file %q about the "
                                                       "shape of %q",
                         df->name, df->name_len, sts__dk_key(e), (size_t)e->len);
    *data = sts_data(f, t);
    return STS_OK;
}

/* >>ds_open ---- schema ---- */
/* Copies a column (name and dims) into the schema's storage: dims 8-aligned, then the name. */
STS__PRIVATE void sts__col_set(sts_dataset *ds, size_t *used, sts__col *c, const char *name, size_t nl, sts_dtype dt,
                               uint32_t rank, const uint64_t *shape) {
    size_t off = (*used + 7) & ~(size_t)7;
    uint64_t *dims = (uint64_t *)(void *)(ds->col_store + off);
    char *nm = (char *)(dims + rank);
    if (rank) memcpy(dims, shape, rank * sizeof *dims);
    if (nl) memcpy(nm, name, nl);
    nm[nl] = 0;
    c->v.key = nm; c->v.key_len = nl; c->v.dtype = dt; c->v.rank = rank; c->v.shape = dims; c->v.present = 1;
    *used = (size_t)(nm + nl + 1 - ds->col_store);
}
STS__PRIVATE sts_result sts__ds_schema(sts_dataset *ds, const sts_read_config *cfg, sts_error *err) {
    size_t i, n = 0, bytes = 0, used = 0;
    sts_file *f = NULL;
    if (cfg && cfg->nschema) {
        if (!cfg->schema) return sts__failx(err, STS_RULE_ARGUMENT, "nschema is set but schema is NULL");
        for (i = 0; i < cfg->nschema; i++) {
            const sts_schema_column *c = &cfg->schema[i];
            if ((!c->name && c->name_len) || (c->has_shape && c->rank && !c->shape) || (c->has_dtype
                    && (unsigned)c->dtype >= (unsigned)STS_DTYPE_COUNT))
                return sts__failx(err, STS_RULE_ARGUMENT, "schema column %z is malformed", i);
            bytes += c->name_len + 1 + (c->has_shape ? c->rank * sizeof(uint64_t) : 0) + 8;
        }
        n = cfg->nschema;
        ds->explicit_schema = 1;
    } else if (cfg && cfg->infer_schema && ds->index) {  /* the first file's tensors, as the index lists them */
        const sts__keymap *k = ds->index;
        /* file 0's entries, in index order */
        for (i = ds->nfiles ? k->fstart[0] : 0; ds->nfiles && i < k->fstart[1]; i++) {
            const sts__dkey *e = sts__dk_at(k, k->byfile[i]);
            size_t nl;
            sts__dk_name(e, &nl);
            n++;
            bytes += nl + 1 + (size_t)e->rank * 8 + 8;
        }
    } else if (cfg && cfg->infer_schema && ds->nfiles == 0) {
        n = 0;
    } else if (cfg && cfg->infer_schema) {  /* the first file's header */
        sts_scan_stats st;
        sts_result r;
        memset(&st, 0, sizeof st);
        if ((r = sts__ds_header(ds, 0, &f, &st, err)) != STS_OK) return r;
        STS__ADD(&ds->st_opened, 1);
        STS__ADD(&ds->st_header, st.header_bytes);
        n = sts_count(f);
        for (i = 0; i < n; i++) bytes += sts_at(f, i)->name_len + 1 + sts_at(f, i)->rank * 8 + 8;
    } else
        return sts__failx(err, STS_RULE_READ_SCHEMA, "no schema: give an explicit schema or set infer_schema");
    ds->col_store_size = bytes + 8;
    if (!(ds->cols = (sts__col *)sts__alloc(&ds->mem, (n ? n : 1) * sizeof *ds->cols)) ||
        ((ds->ncols = n), !(ds->col_store = (char *)sts__alloc(&ds->mem, ds->col_store_size)))) {
        sts_close(f);
        return sts__nomem(err, "the schema");
    }
    memset(ds->cols, 0, (n ? n : 1) * sizeof *ds->cols);
    ds->ncols = n;
    if (ds->explicit_schema)
        for (i = 0; i < n; i++) {
            const sts_schema_column *sc = &cfg->schema[i];
            sts__col_set(ds, &used, &ds->cols[i], sc->name ? sc->name : "", sc->name_len, sc->dtype,
                         sc->has_shape ? sc->rank : 0, sc->shape);
            ds->cols[i].has_dtype = sc->has_dtype;
            ds->cols[i].has_shape = sc->has_shape;
        }
    else if (f)
        for (i = 0; i < n; i++) {
            const sts_tensor *t = sts_at(f, i);
            sts__col_set(ds, &used, &ds->cols[i], t->name, t->name_len, t->dtype, t->rank, t->shape);
        }
    else if (ds->index) {
        const sts__keymap *k = ds->index;
        size_t m = 0;
        for (i = ds->nfiles ? k->fstart[0] : 0; ds->nfiles && i < k->fstart[1]; i++) {
            const sts__dkey *e = sts__dk_at(k, k->byfile[i]);
            size_t nl;
            const char *nm = sts__dk_name(e, &nl);
            sts__col_set(ds, &used, &ds->cols[m++], nm, nl, (sts_dtype)e->dtype, e->rank, sts__dk_shape(e));
        }
    }
    sts_close(f);
    return STS_OK;
}

STSDEF void sts_dataset_close(sts_dataset *ds) {
    sts__mem m;
    size_t i;
    if (!ds) return;
    m = ds->mem;
    for (i = 0; i < ds->nfiles; i++) {
        sts_close(ds->files[i].map);
        sts__free(&m, ds->files[i].name, ds->files[i].name_len + 1);
        sts__free(&m, ds->files[i].path, ds->files[i].path_size);
    }
    sts__free(&m, ds->files, ds->files_cap * sizeof *ds->files);
    sts__free(&m, ds->fhash, (ds->nfiles ? ds->nfiles : 1) * sizeof *ds->fhash);
    sts__index_free(&m, &ds->fix);
    sts__keymap_free(ds->index);
    sts__keymap_free(ds->built);
    sts__free(&m, ds->cols, (ds->ncols ? ds->ncols : 1) * sizeof *ds->cols);
    sts__free(&m, ds->col_store, ds->col_store_size);
    sts__free(&m, ds->root, ds->root_size);
    sts__free(&m, ds->dataset_id, ds->dataset_id_len + 1);
    sts__free(&m, ds->mcols, ds->nmcols * sizeof *ds->mcols);
    sts__free(&m, ds->mcol_store, ds->mcol_store_size);
    sts__free(&m, ds, sizeof *ds);
}
STSDEF sts_result sts_dataset_open(const char *path, const sts_read_config *cfg, const sts_options *opts,
                                   sts_dataset **out, sts_error *err) {
    sts__mem m = sts__mem_from(opts);
    sts_dataset *ds;
    sts__stat st;
    sts_result r;
    int e;
    if (!path || !out) return sts__failx(err, STS_RULE_ARGUMENT, "sts_dataset_open needs a path and out");
    if (!sts__mem_valid(&m)) return sts__failx(err, STS_RULE_ARGUMENT, "the allocator needs all three hooks or none");
    if ((e = sts__stat_path(path, &st)) != 0) return sts__fail_errno(err, e, "open the dataset", path);
    if (!(ds = (sts_dataset *)sts__alloc(&m, sizeof *ds))) return sts__nomem(err, "the dataset");
    memset(ds, 0, sizeof *ds);
    ds->mem = m;
    ds->seed = sts__seed_from(ds, opts ? opts->hash_seed : 0);
    ds->verify = cfg && cfg->verify_checksums;
    if (st.kind == STS__FT_DIR) {
        sts__manifest mf;
        int found;
        size_t n = strlen(path);
        ds->root_size = n + 1;
        if (!(ds->root = (char *)sts__alloc(&m, ds->root_size))) { r = sts__nomem(err, "the dataset"); goto fail; }
        memcpy(ds->root, path, n + 1);
        if ((r = sts__manifest_read(&m, path, &mf, &found, err)) != STS_OK) goto fail;
        r = found ? sts__ds_manifest(ds, &mf, err) : sts__ds_listing(ds, err);
        sts__manifest_free(&mf);
        if (r != STS_OK) goto fail;
    } else {  /* a single file is a dataset of one file */
        const char *slash = strrchr(path, '/');
        size_t dl = slash ? (slash == path ? 1 : (size_t)(slash - path)) : 1;
        ds->root_size = dl + 1;
        if (!(ds->root = (char *)sts__alloc(&m, ds->root_size))) { r = sts__nomem(err, "the dataset"); goto fail; }
        memcpy(ds->root, slash ? path : ".", dl);
        if (slash && dl == 0) { ds->root[0] = '/'; dl = 1; }
        ds->root[dl] = 0;
        if ((r = sts__ds_add_file(ds, slash ? slash + 1 : path, strlen(slash ? slash + 1 : path), st.size,
                                  err)) != STS_OK) goto fail;
    }
    if ((r = sts__ds_sort_files(ds, err)) != STS_OK) goto fail;
    if ((r = sts__ds_index_files(ds, err)) != STS_OK) goto fail;
    if (st.kind == STS__FT_DIR && !(cfg && cfg->no_index)) {
        char *ip;
        size_t isz;
        if (!(ip = sts__join(&m, path, "_tensor_index.json", &isz))) { r = sts__nomem(err, "a path"); goto fail; }
        r = sts__path_kind(ip) != STS__FT_NONE ? sts__ds_load_index(ds, ip, err) : STS_OK;
        sts__free(&m, ip, isz);
        if (r != STS_OK) goto fail;
    }
    if ((r = sts__ds_schema(ds, cfg, err)) != STS_OK) goto fail;
    *out = ds;
    sts__ok(err);
    return STS_OK;
fail:
    sts_dataset_close(ds);
    return r;
}
STSDEF sts_dataset_info sts_dataset_describe(const sts_dataset *ds) {
    sts_dataset_info i;
    memset(&i, 0, sizeof i);
    if (!ds) return i;
    i.files = ds->nfiles;
    i.has_manifest = ds->has_manifest;
    i.has_index = ds->has_index;
    i.index_stale = ds->index_stale;
    i.kv = ds->kv;
    i.manifest_columns = ds->nmcols;
    i.total_samples = ds->total_samples; i.total_bytes = ds->total_bytes; i.columns = ds->ncols;
    return i;
}
STSDEF const char *sts_dataset_file(const sts_dataset *ds, size_t i) {
    return ds && i < ds->nfiles ? ds->files[i].name : NULL;
}
STSDEF uint64_t sts_dataset_file_samples(const sts_dataset *ds, size_t i) {
    return ds && i < ds->nfiles ? ds->files[i].samples : UINT64_MAX;
}
STSDEF size_t sts_dataset_file_order(const sts_dataset *ds, size_t i) {
    return ds && i < ds->nfiles ? ds->files[i].order : (size_t)-1;
}

/* ---- shard assignment ---- */
static const char *const sts__assign_names[STS_ASSIGN_STRATEGY_COUNT] = { "balance", "round_robin" };
STSDEF const char *sts_assign_strategy_name(sts_assign_strategy s) {
    return (unsigned)s < (unsigned)STS_ASSIGN_STRATEGY_COUNT ? sts__assign_names[s] : NULL;
}
STSDEF sts_result sts_assign_strategy_parse(const char *name, sts_assign_strategy *out, sts_error *err) {
    int i;
    if (!name || !out) return sts__failx(err, STS_RULE_ARGUMENT, "sts_assign_strategy_parse needs a name and out");
    for (i = 0; i < (int)STS_ASSIGN_STRATEGY_COUNT; i++)
        if (strcmp(name, sts__assign_names[i]) == 0) { *out = (sts_assign_strategy)i; return STS_OK; }
    return sts__failx(err, STS_RULE_ARGUMENT, "unknown strategy %q (balance or round_robin)", name, strlen(name));
}
/* balance: a binary min-heap of (samples so far, worker id) over the first min(workers, n) workers
   (a worker above n - 1 could only win a tie against a lower one with the same load: never) */
typedef struct sts__aw { uint64_t load; uint32_t id; } sts__aw;
STS__INLINE int sts__aw_less(const sts__aw *a, const sts__aw *b) {
    return a->load < b->load || (a->load == b->load && a->id < b->id);
}
STSDEF sts_result sts_assign(const uint64_t *samples, size_t n, uint32_t workers, sts_assign_strategy s,
                             uint32_t *owner, sts_error *err) {
    sts__mem m = sts__mem_from(NULL);
    sts__aw *h;
    size_t i, k, hn, bytes;
    if (workers == 0) return sts__failx(err, STS_RULE_ARGUMENT, "num_workers must be > 0");
    if ((unsigned)s >= (unsigned)STS_ASSIGN_STRATEGY_COUNT)
        return sts__failx(err, STS_RULE_ARGUMENT, "unknown strategy %d (balance or round_robin)", (int)s);
    if (n && (!owner || (s == STS_ASSIGN_BALANCE && !samples)))
        return sts__failx(err, STS_RULE_ARGUMENT, "sts_assign needs owner (and samples for balance)");
    if (s == STS_ASSIGN_ROUND_ROBIN) {
        for (i = 0; i < n; i++) owner[i] = (uint32_t)(i % workers);
        sts__ok(err);
        return STS_OK;
    }
    hn = n < workers ? n : workers;
    if (!hn) { sts__ok(err); return STS_OK; }
    if (!sts__mulsz(hn, sizeof *h, &bytes) || !(h = (sts__aw *)sts__alloc(&m, bytes)))
        return sts__nomem(err, "the workers' loads");
    for (i = 0; i < hn; i++) { h[i].load = 0; h[i].id = (uint32_t)i; }  /* ids in order: already a heap */
    for (i = 0; i < n; i++) {
        sts__aw top = h[0];
        owner[i] = top.id;
        top.load = samples[i] > UINT64_MAX - top.load ? UINT64_MAX : top.load + samples[i];
        for (k = 0;;) {  /* sift the new load down */
            size_t c = 2 * k + 1, best = k;
            const sts__aw *bk = &top;
            if (c < hn && sts__aw_less(&h[c], bk)) { best = c; bk = &h[c]; }
            if (c + 1 < hn && sts__aw_less(&h[c + 1], bk)) best = c + 1;
            if (best == k) break;
            h[k] = h[best];
            k = best;
        }
        h[k] = top;
    }
    sts__free(&m, h, bytes);
    sts__ok(err);
    return STS_OK;
}
STSDEF sts_result sts_dataset_assign(const sts_dataset *ds, uint32_t workers, sts_assign_strategy s, uint32_t *owner,
                                     sts_error *err) {
    sts__mem m;
    size_t i, n, *by = NULL, by_bytes = 0, sm_bytes = 0, ow_bytes = 0;
    uint64_t *sm = NULL;
    uint32_t *ow = NULL;
    sts_result r;
    if (!ds) return sts__failx(err, STS_RULE_ARGUMENT, "sts_dataset_assign needs a dataset");
    if (workers == 0) return sts__failx(err, STS_RULE_ARGUMENT, "num_workers must be > 0");
    m = ds->mem;
    n = ds->nfiles;
    if (s == STS_ASSIGN_BALANCE)
        for (i = 0; i < n; i++)
            if (ds->files[i].samples == UINT64_MAX)
                return sts__failx(err, STS_RULE_UNSUPPORTED, "balance needs every shard's samples_count, which "
                                  "dataset_manifest.json gives (shard %q has none)", ds->files[i].name,
                                  ds->files[i].name_len);
    if (!n) { sts__ok(err); return STS_OK; }
    if (!owner) return sts__failx(err, STS_RULE_ARGUMENT, "sts_dataset_assign needs owner");
    /* the files in manifest order: by[order] = file index */
    if (!sts__mulsz(n, sizeof *by, &by_bytes) || !sts__mulsz(n, sizeof *sm, &sm_bytes) ||
        !sts__mulsz(n, sizeof *ow, &ow_bytes) || !(by = (size_t *)sts__alloc(&m, by_bytes)) ||
        !(sm = (uint64_t *)sts__alloc(&m, sm_bytes)) || !(ow = (uint32_t *)sts__alloc(&m, ow_bytes))) {
        r = sts__nomem(err, "the shard order");
        goto done;
    }
    for (i = 0; i < n; i++) by[ds->files[i].order] = i;
    for (i = 0; i < n; i++) sm[i] = ds->files[by[i]].samples;
    if ((r = sts_assign(sm, n, workers, s, ow, err)) == STS_OK)
        for (i = 0; i < n; i++) owner[by[i]] = ow[i];
done:
    sts__free(&m, by, by_bytes);
    sts__free(&m, sm, sm_bytes);
    sts__free(&m, ow, ow_bytes);
    return r;
}
STSDEF const sts_view *sts_dataset_manifest_column(const sts_dataset *ds, size_t i) {
    return ds && i < ds->nmcols ? &ds->mcols[i] : NULL;
}
STSDEF const sts_view *sts_dataset_column(const sts_dataset *ds, size_t i) {
    return ds && i < ds->ncols ? &ds->cols[i].v : NULL;
}
STSDEF sts_scan_stats sts_dataset_stats(const sts_dataset *ds) {
    sts_scan_stats s;
    memset(&s, 0, sizeof s);
    if (!ds) return s;
    s.files_opened = STS__LOAD64(&ds->st_opened); s.header_bytes = STS__LOAD64(&ds->st_header);
    s.data_bytes = STS__LOAD64(&ds->st_data); s.files_mapped = STS__LOAD64(&ds->st_mapped);
    return s;
}
STSDEF sts_result sts_dataset_get(const sts_dataset *ds, const char *key, size_t key_len, int with_data, sts_view *out,
                                  sts_error *err) {
    const sts__keymap *k = NULL;
    const sts__dkey *e;
    sts_result r;
    if (!ds || !out || (!key && key_len))
        return sts__failx(err, STS_RULE_ARGUMENT, "sts_dataset_get needs a dataset, a key and out");
    if ((r = sts__ds_keys(ds, &k, err)) != STS_OK) return r;
    e = sts__keymap_find(k, sts__hash(key, key_len, ds->seed), key, key_len);
    if (!e) return sts__failx(err, STS_RULE_NOT_FOUND, "no tensor %q in the dataset", key, key_len);
    memset(out, 0, sizeof *out);
    out->key = sts__dk_key(e);
    out->key_len = e->len;
    out->file = e->file;
    out->dtype = (sts_dtype)e->dtype;
    out->rank = e->rank;
    out->shape = sts__dk_shape(e); out->nbytes = e->end - e->begin; out->present = 1;
    if (with_data) {
        if ((r = sts__ds_entry_data(ds, k, e, &out->data, err)) != STS_OK) return r;
        STS__ADD(&((sts_dataset *)(uintptr_t)ds)->st_data, out->nbytes);
    }
    return STS_OK;
}

/* >>scan ---- scans ---- */
struct sts_scan {
    const sts_dataset *ds;
    sts_scan_spec spec;
    size_t *plan;                   /* files to visit */
    size_t nplan, at;
    sts_file *hdr;                  /* current file: header-only (the reader's) or mapped (the dataset's) */
    sts__hread hr;                  /* reads the header-only files, one after another */
    size_t cur, t;                  /* current file index, next tensor (long) */
    sts_view *cells;
    size_t ncells;
    const sts__col **proj;          /* wide: projected schema columns */
    size_t *pos;                    /* wide: each column's tensor position in the last file (files of a
                                       dataset mostly list their tensors alike), or (size_t)-1 */
    int row_ok;                     /* wide, no data: the cells hold the last file's row, complete */
    sts__index keys;                /* long: key filter */
    uint64_t *key_hash;
    const sts__keymap *winners;     /* long, lastWin datasets: the key table decides */
    const sts__dkey **expect;       /* index pushdown: the index entries that chose the files, by file */
    size_t nexpect, expect_cap, expect_at;
    sts_scan_stats st;
};
STS__PRIVATE const char *sts__spec_key(const sts_scan_spec *s, size_t i, size_t *len) {
    *len = s->key_lens ? s->key_lens[i] : strlen(s->keys[i]);
    return s->keys[i];
}
STS__PRIVATE int sts__spec_keep(const sts_scan *s, const char *name, size_t len, sts_dtype dt, uint32_t rank,
                                const uint64_t *shape) {
    const sts_scan_spec *sp = &s->spec;
    size_t i;
    if (sp->nkeys) {
        uint64_t h = sts__hash(name, len, s->ds->seed);
        {   /* probe by hand: keys are given as arrays of pointers and lengths */
            size_t pos = (size_t)h & s->keys.mask;
            int found = 0;
            for (; s->keys.slots[pos] != STS__EMPTY; pos = (pos + 1) & s->keys.mask) {
                uint32_t it = s->keys.slots[pos];
                size_t kl;
                const char *kp = sts__spec_key(sp, it, &kl);
                if (s->key_hash[it] == h && kl == len && (len == 0 || memcmp(kp, name, len) == 0)) { found = 1; break; }
            }
            if (!found) return 0;
        }
    }
    if (sp->ndtypes) {
        int ok = 0;
        for (i = 0; i < sp->ndtypes && !ok; i++) ok = sp->dtypes[i] == dt;
        if (!ok) return 0;
    }
    if (sp->has_shape) {
        if (rank != sp->rank) return 0;
        for (i = 0; i < rank; i++) if (sp->shape[i] != STS_DIM_ANY && sp->shape[i] != shape[i]) return 0;
    }
    return 1;
}
STSDEF void sts_scan_close(sts_scan *s) {
    sts__mem m;
    if (!s) return;
    m = s->ds->mem;
    sts__hread_free(&s->hr);
    sts__free(&m, s->plan, (s->ds->nfiles ? s->ds->nfiles : 1) * sizeof *s->plan);
    sts__free(&m, s->cells, (s->ncells ? s->ncells : 1) * sizeof *s->cells);
    sts__free(&m, (void *)s->proj, (s->ncells ? s->ncells : 1) * sizeof *s->proj);
    sts__free(&m, s->pos, (s->ncells ? s->ncells : 1) * sizeof *s->pos);
    sts__index_free(&m, &s->keys);
    sts__free(&m, s->key_hash, (s->spec.nkeys ? s->spec.nkeys : 1) * sizeof *s->key_hash);
    sts__free(&m, (void *)s->expect, s->expect_cap * sizeof *s->expect);
    sts__free(&m, s, sizeof *s);
}
STS__PRIVATE sts_result sts__scan_expect(sts_scan *s, const sts__dkey *e, sts_error *err) {
    if (s->nexpect == s->expect_cap && !sts__grow(&s->ds->mem, (void **)&s->expect, &s->expect_cap, s->nexpect + 1,
                                                  sizeof *s->expect))
        return sts__nomem(err, "a scan plan");
    s->expect[s->nexpect++] = e;
    return STS_OK;
}
STS__PRIVATE int sts__by_entry_file(const void *ctx, size_t a, size_t b) {
    const sts__dkey *const *e = (const sts__dkey *const *)ctx;
    return e[a]->file < e[b]->file;
}
STSDEF sts_result sts_scan_open(const sts_dataset *ds, const sts_scan_spec *spec, sts_scan **out, sts_error *err) {
    sts_scan *s;
    size_t i, begin, end;
    const sts__dkey *e;
    sts_result r = STS_OK;
    if (!ds || !spec || !out)
        return sts__failx(err, STS_RULE_ARGUMENT, "sts_scan_open needs a dataset, a spec and out");
    if ((spec->nkeys && !spec->keys) || (spec->ndtypes && !spec->dtypes) || (spec->has_shape && spec->rank
            && !spec->shape) || (spec->ncolumns && !spec->columns))
        return sts__failx(err, STS_RULE_ARGUMENT, "the scan spec has a count without its array");
    for (i = 0; i < spec->ncolumns; i++)
        if (!spec->columns[i]) return sts__failx(err, STS_RULE_ARGUMENT, "projected column %z is NULL", i);
    for (i = 0; i < spec->nkeys; i++)
        if (!spec->keys[i] && (!spec->key_lens || spec->key_lens[i]))
            return sts__failx(err, STS_RULE_ARGUMENT, "key %z is NULL", i);
    begin = spec->file_begin;
    end = spec->file_end ? spec->file_end : ds->nfiles;
    if (begin > end || end > ds->nfiles)
        return sts__failx(err, STS_RULE_ARGUMENT, "file range [%z, %z) is outside the dataset's %z files", begin, end,
                          ds->nfiles);
    if (!(s = (sts_scan *)sts__alloc(&ds->mem, sizeof *s))) return sts__nomem(err, "a scan");
    memset(s, 0, sizeof *s);
    s->ds = ds;
    s->spec = *spec;
    sts__hread_init(&s->hr, &ds->mem, NULL);
    s->keys.slots = NULL;
    if (!(s->plan = (size_t *)sts__alloc(&ds->mem, (ds->nfiles ? ds->nfiles : 1) * sizeof *s->plan))) {
        sts_scan_close(s);
        return sts__nomem(err, "a scan plan");
    }
    if (!spec->long_form) {  /* wide: the projection */
        size_t n = spec->columns ? spec->ncolumns : ds->ncols;
        s->ncells = n;
        if (!(s->cells = (sts_view *)sts__alloc(&ds->mem, (n ? n : 1) * sizeof *s->cells)) ||
            !(s->proj = (const sts__col **)sts__alloc(&ds->mem, (n ? n : 1) * sizeof *s->proj)) ||
            !(s->pos = (size_t *)sts__alloc(&ds->mem, (n ? n : 1) * sizeof *s->pos))) {
            sts_scan_close(s);
            return sts__nomem(err, "a scan");
        }
        for (i = 0; i < n; i++) {
            size_t c;
            const sts__col *found = NULL;
            if (!spec->columns) found = &ds->cols[i];
            else for (c = 0; c < ds->ncols && !found; c++)
                if (ds->cols[c].v.key_len == strlen(spec->columns[i]) && memcmp(ds->cols[c].v.key, spec->columns[i],
                        ds->cols[c].v.key_len) == 0) found = &ds->cols[c];
            if (!found) {
                r = sts__failx(err, STS_RULE_READ_SCHEMA, "projected column %q is not in the schema", spec->columns[i],
                               strlen(spec->columns[i]));
                sts_scan_close(s);
                return r;
            }
            s->proj[i] = found;
            s->pos[i] = (size_t)-1;
        }
    } else {
        s->ncells = 1;
        if (!(s->cells = (sts_view *)sts__alloc(&ds->mem, sizeof *s->cells))) {
            sts_scan_close(s);
            return sts__nomem(err, "a scan");
        }
        if (spec->nkeys) {
            if (!(s->key_hash = (uint64_t *)sts__alloc(&ds->mem, spec->nkeys * sizeof *s->key_hash))
                || !sts__index_init(&ds->mem, &s->keys, spec->nkeys)) {
                sts_scan_close(s);
                return sts__nomem(err, "the key filter");
            }
            for (i = 0; i < spec->nkeys; i++) {
                size_t len, pos;
                const char *k = sts__spec_key(spec, i, &len);
                s->key_hash[i] = sts__hash(k, len, ds->seed);
                pos = (size_t)s->key_hash[i] & s->keys.mask;
                while (s->keys.slots[pos] != STS__EMPTY) pos = (pos + 1) & s->keys.mask;
                s->keys.slots[pos] = (uint32_t)i;
            }
        }
        if (ds->lastwin && (r = sts__ds_keys(ds, &s->winners, err)) != STS_OK) { sts_scan_close(s); return r; }
    }
    /* the plan: pushdown through the index picks the files before any of them is opened */
    if (spec->long_form && ds->index && (spec->nkeys || spec->ndtypes || spec->has_shape)) {
        unsigned char *want = (unsigned char *)sts__alloc(&ds->mem, ds->nfiles ? ds->nfiles : 1);
        if (!want) { sts_scan_close(s); return sts__nomem(err, "a scan plan"); }
        memset(want, 0, ds->nfiles ? ds->nfiles : 1);
        /* the entries that choose files are kept: each visited file is checked against them, so
           a stale index cannot make rows vanish silently */
        /* O(keys): each key's file (KV: key = name) */
        if (ds->kv && spec->nkeys && !spec->ndtypes && !spec->has_shape) {
            for (i = 0; i < spec->nkeys && r == STS_OK; i++) {
                size_t len;
                const char *k = sts__spec_key(spec, i, &len);
                e = sts__keymap_find(ds->index, sts__hash(k, len, ds->seed), k, len);
                if (e) { want[e->file] = 1; r = sts__scan_expect(s, e, err); }
            }
        } else
            for (e = sts__dk_first(ds->index); e && r == STS_OK; e = sts__dk_next(ds->index, e)) {
                size_t nl;
                const char *nm = sts__dk_name(e, &nl);
                if (sts__spec_keep(s, nm, nl, (sts_dtype)e->dtype, e->rank, sts__dk_shape(e))) {
                    want[e->file] = 1;
                    r = sts__scan_expect(s, e, err);
                }
            }
        for (i = begin; i < end; i++) if (want[i]) s->plan[s->nplan++] = i;
        sts__free(&ds->mem, want, ds->nfiles ? ds->nfiles : 1);
        if (r == STS_OK && s->nexpect) {  /* by file, to check each file as it comes */
            if (!sts__sort_records(&ds->mem, (void *)s->expect, s->nexpect, sizeof *s->expect, sts__by_entry_file))
                r = sts__nomem(err, "a scan plan");
        }
        if (r != STS_OK) { sts_scan_close(s); return r; }
    } else
        for (i = begin; i < end; i++) s->plan[s->nplan++] = i;
    *out = s;
    sts__ok(err);
    return STS_OK;
}
STSDEF size_t sts_scan_files(const sts_scan *s) { return s ? s->nplan : 0; }
STSDEF sts_scan_stats sts_scan_get_stats(const sts_scan *s) {
    sts_scan_stats z;
    memset(&z, 0, sizeof z);
    return s ? s->st : z;
}
/* The index entries that chose file `cur` must all be in its header as the index says. */
STS__PRIVATE sts_result sts__scan_check_expected(sts_scan *s, const sts_file *h, sts_error *err) {
    while (s->expect_at < s->nexpect && s->expect[s->expect_at]->file < s->cur) s->expect_at++;
    for (; s->expect_at < s->nexpect && s->expect[s->expect_at]->file == s->cur; s->expect_at++) {
        const sts__dkey *e = s->expect[s->expect_at];
        const sts__dfile *df = &s->ds->files[s->cur];
        int same;
        const sts_tensor *t = sts__dk_in(e, h, NULL, &same);
        if (!same)
            return sts__failx(err, STS_RULE_DATASET_INDEX, "the index places %q in file %q, whose header %s (stale "
                                                           "index)",
                             sts__dk_key(e), (size_t)e->len, df->name, df->name_len,
                             t ? "disagrees with it" : "has no such tensor");
    }
    return STS_OK;
}
/* The header of file `cur` through the scan's reader (sts__hread), counted; the reader owns it. */
STS__PRIVATE sts_result sts__scan_header(sts_scan *s, sts_file **out, sts_error *err) {
    const sts__dfile *f = &s->ds->files[s->cur];
    sts_result r = sts__hread_open(&s->hr, f->path, f->size, out, err);
    if (r != STS_OK) return sts__ds_name_file(err, r, f);
    s->st.files_opened++;
    s->st.header_bytes += 8 + sts_header_size(*out);
    return STS_OK;
}
/* Opens the next planned file: header-only, or mapped when data is wanted. */
STS__PRIVATE sts_result sts__scan_file(sts_scan *s, sts_error *err) {
    sts_result r;
    sts_file *h;
    s->hdr = NULL;
    s->cur = s->plan[s->at++];
    s->t = 0;
    if (s->spec.with_data && s->spec.long_form && (s->spec.nkeys || s->spec.ndtypes || s->spec.has_shape)) {
        size_t i, n;
        int any = 0;
        if ((r = sts__scan_header(s, &h, err)) != STS_OK) return r;
        n = sts_count(h);
        for (i = 0; i < n && !any; i++) {
            const sts_tensor *t = sts_at(h, i);
            any = sts__spec_keep(s, t->name, t->name_len, t->dtype, t->rank, t->shape);
        }
        if ((r = sts__scan_check_expected(s, h, err)) != STS_OK) return r;
        if (!any) { s->hdr = h; s->t = n; return STS_OK; }
        if ((r = sts__ds_map(s->ds, s->cur, &s->hdr, err)) != STS_OK) return r;
        s->st.files_mapped++;
        return STS_OK;
    }
    if (s->spec.with_data) {
        if ((r = sts__ds_map(s->ds, s->cur, &s->hdr, err)) != STS_OK) return r;
        s->st.files_opened++;
        s->st.files_mapped++;
        s->st.header_bytes += 8 + sts_header_size(s->hdr);
        return sts__scan_check_expected(s, s->hdr, err);
    }
    if ((r = sts__scan_header(s, &s->hdr, err)) != STS_OK) return r;
    return sts__scan_check_expected(s, s->hdr, err);
}
STSDEF sts_result sts_scan_next(sts_scan *s, const sts_view **cells, size_t *ncells, sts_error *err) {
    sts_result r;
    if (!s || !cells || !ncells)
        return sts__failx(err, STS_RULE_ARGUMENT, "sts_scan_next needs a scan, cells and ncells");
    *cells = NULL;
    *ncells = 0;
    if (!s->spec.long_form) {  /* wide: one row per file */
        size_t i;
        if (s->at >= s->nplan) { sts__ok(err); return STS_OK; }  /* the end: *cells stays NULL */
        if ((r = sts__scan_file(s, err)) != STS_OK) { s->row_ok = 0; return r; }
        if (s->row_ok && s->hr.reused && !s->spec.with_data) {  /* the last file's parse again: its cells stand */
            for (i = 0; i < s->ncells; i++) s->cells[i].file = s->cur;
            *cells = s->cells;
            *ncells = s->ncells;
            sts__ok(err);
            return STS_OK;
        }
        s->row_ok = 0;
        for (i = 0; i < s->ncells; i++) {
            const sts__col *c = s->proj[i];
            const sts_tensor *t = sts_at(s->hdr, s->pos[i]);  /* where it was in the last file */
            sts_view *v = &s->cells[i];
            if (!t || t->name_len != c->v.key_len || (t->name_len && memcmp(t->name, c->v.key, t->name_len) != 0)) {
                t = sts_find(s->hdr, c->v.key, c->v.key_len);
                s->pos[i] = t ? (size_t)(t - sts_at(s->hdr, 0)) : (size_t)-1;
            }
            memset(v, 0, sizeof *v);
            v->key = c->v.key; v->key_len = c->v.key_len; v->file = s->cur;
            if (!t) continue;  /* a missing tensor is null */
            if (s->ds->explicit_schema) {
                uint32_t d;
                int bad = (c->has_dtype && t->dtype != c->v.dtype) || (c->has_shape && t->rank != c->v.rank);
                for (d = 0; !bad && c->has_shape && d < t->rank; d++)
                    bad = c->v.shape[d] != STS_DIM_ANY && c->v.shape[d] != t->shape[d];
                if (bad)
                    return sts__failx(err, STS_RULE_READ_SCHEMA,
                                      "file %q: column %q is %s %S, but the schema says %s %D",
                                     s->ds->files[s->cur].name, s->ds->files[s->cur].name_len, c->v.key, c->v.key_len,
                                     sts_dtype_name(t->dtype),
                                     t->shape, (size_t)t->rank, c->has_dtype ? sts_dtype_name(c->v.dtype) : "any",
                                     c->v.shape, (size_t)(c->has_shape ? c->v.rank : 0));
            }
            v->present = 1; v->dtype = t->dtype; v->rank = t->rank; v->shape = t->shape; v->nbytes = t->end - t->begin;
            if (s->spec.with_data) { v->data = sts_data(s->hdr, t); s->st.data_bytes += v->nbytes; }
        }
        s->row_ok = !s->spec.with_data;
        *cells = s->cells;
        *ncells = s->ncells;
        sts__ok(err);
        return STS_OK;
    }
    for (;;) {  /* long: one row per tensor that passes the filters */
        const sts_tensor *t;
        sts_view *v = &s->cells[0];
        if (!s->hdr || s->t >= sts_count(s->hdr)) {
            if (s->at >= s->nplan) { sts__ok(err); return STS_OK; }
            if ((r = sts__scan_file(s, err)) != STS_OK) return r;
            continue;
        }
        t = sts_at(s->hdr, s->t++);
        if (!sts__spec_keep(s, t->name, t->name_len, t->dtype, t->rank, t->shape)) continue;
        if (s->winners) {  /* lastWin: only the winning copy of a key */
            const sts__dkey *e = sts__keymap_find(s->winners, sts__hash(t->name, t->name_len, s->ds->seed), t->name,
                                                  t->name_len);
            if (e && e->file != s->cur) continue;
        }
        memset(v, 0, sizeof *v);
        v->key = t->name; v->key_len = t->name_len; v->file = s->cur; v->dtype = t->dtype; v->rank = t->rank;
        v->shape = t->shape; v->nbytes = t->end - t->begin; v->present = 1;
        if (s->spec.with_data) { v->data = sts_data(s->hdr, t); s->st.data_bytes += v->nbytes; }
        *cells = s->cells;
        *ncells = 1;
        sts__ok(err);
        return STS_OK;
    }
}
/* >>check ---- check and clean ----
   Check reads the manifest with the one manifest reader, each shard's header strictly (and, asked
   for, each shard's bytes against its crc32c), the index through the dataset's key table, and the
   CSV and the JSON's weight_map as text; each problem is reported as it is found and the check goes
   on. Clean removes only files of this library's naming that no published manifest names. */
typedef struct sts__ck {
    sts__mem mem;
    const sts_check_config *cfg;
    sts_check_report rep;
    sts_error first;
    int has_first;
    int nomem;                      /* an allocation failed: the check is incomplete (NOMEM, not a problem) */
    const char *dir;
} sts__ck;
STS__PRIVATE void sts__ck_report(sts__ck *ck, const sts_error *e) {
    if (e->code == STS_ERR_NOMEM) { ck->nomem = 1; return; }  /* the checker's want, not the dataset's fault */
    ck->rep.problems++;
    if (!ck->has_first) { ck->first = *e; ck->has_first = 1; }
    if (ck->cfg && ck->cfg->problem) ck->cfg->problem(ck->cfg->user, e);
}
STS__PRIVATE void sts__ck_fail(sts__ck *ck, sts_rule rule, const char *fmt, ...) {
    sts_error e;
    va_list ap;
    va_start(ap, fmt);
    (void)sts__failv(&e, sts__rule_codes[rule], rule, STS_OFFSET_UNKNOWN, fmt, ap);
    va_end(ap);
    sts__ck_report(ck, &e);
}
/* A problem from a lower layer, with the file named in front. */
STS__PRIVATE void sts__ck_file(sts__ck *ck, const char *file, const sts_error *inner) {
    sts_error e;
    const char *id = sts_rule_id(inner->rule), *msg = inner->message;
    size_t il = strlen(id);
    if (strncmp(msg, id, il) == 0 && msg[il] == ':' && msg[il + 1] == ' ') msg += il + 2;
    (void)sts__fail_code(&e, inner->code, inner->rule, inner->offset, "file %q: %s", file, strlen(file), msg);
    sts__ck_report(ck, &e);
}
STS__PRIVATE int sts__ck_by_name(const void *ctx, size_t a, size_t b) {
    const char *const *n = (const char *const *)ctx;
    return strcmp(n[a], n[b]) < 0;
}
STS__PRIVATE int sts__ck_has(char *const *names, size_t n, const char *name) {  /* sorted names */
    size_t lo = 0, hi = n;
    while (lo < hi) {
        size_t mid = (lo + hi) / 2;
        int c = strcmp(names[mid], name);
        if (!c) return 1;
        if (c < 0) lo = mid + 1; else hi = mid;
    }
    return 0;
}
/* The manifest's shard names, sorted (for orphans); NULL with *n 0 when there are none. */
STS__PRIVATE char **sts__ck_names(const sts__mem *m, const sts__manifest *mf, size_t *n) {
    char **v;
    size_t i;
    *n = 0;
    if (!mf->nshards || !(v = (char **)sts__alloc(m, mf->nshards * sizeof *v))) return NULL;
    for (i = 0; i < mf->nshards; i++) v[i] = mf->shards[i].name;
    if (!sts__sort_records(m, v, mf->nshards, sizeof *v, sts__ck_by_name)) {
        sts__free(m, v, mf->nshards * sizeof *v);
        return NULL;
    }
    *n = mf->nshards;
    return v;
}
STS__PRIVATE int sts__is_backup_name(const char *n) {  /* a commit's backups of the replaced files */
    size_t len = strlen(n);
    return n[0] == '.' && len > 11 && strcmp(n + len - 11, ".tmp-backup") == 0;
}
/* ---- the folder's entries: temporaries, orphans ---- */
typedef struct sts__ck_dir { sts__ck *ck; char **names; size_t nnames; int has_mf; } sts__ck_dir;
STS__PRIVATE sts_result sts__ck_entry(void *user, const char *n) {
    sts__ck_dir *cd = (sts__ck_dir *)user;
    if (sts__is_temp_name(n) || sts__is_backup_name(n))
        sts__ck_fail(cd->ck, STS_RULE_DATASET_TEMPORARY, "%q is a writer's temporary, left by a job or a commit that "
                     "stopped (sts clean removes it)", n, strlen(n));
    else if (cd->has_mf && sts__is_shard_name(n) && !sts__ck_has(cd->names, cd->nnames, n))
        sts__ck_fail(cd->ck, STS_RULE_DATASET_ORPHAN, "%q is a shard that dataset_manifest.json does not name: left by "
                     "a job that did not commit (sts clean removes it)", n, strlen(n));
    return STS_OK;
}
/* ---- one shard against the manifest ---- */
STS__PRIVATE int sts__ck_col_of(const sts__manifest *mf, const sts_tensor *t) {  /* KV: the column a name ends with */
    size_t i;
    int best = -1;
    for (i = 0; i < mf->ncols; i++) {
        size_t cl = mf->cols[i].name_len;
        if (t->name_len >= cl + mf->sep_len && memcmp(t->name + t->name_len - cl, mf->cols[i].name, cl) == 0 &&
            memcmp(t->name + t->name_len - cl - mf->sep_len, mf->sep, mf->sep_len) == 0 &&
            (best < 0 || cl > mf->cols[best].name_len))
            best = (int)i;
    }
    return best;
}
STS__PRIVATE void sts__ck_schema(sts__ck *ck, const sts__manifest *mf, const sts__mshard *x, const sts_file *f) {
    size_t i, n = sts_count(f);
    uint32_t d;
    if (!mf->ncols) return;
    if (!mf->kv) {  /* batch: one tensor per column, [rows] + the sample shape */
        if (n != mf->ncols)
            sts__ck_fail(ck, STS_RULE_DATASET_MANIFEST, "shard %q holds %z tensors, but the manifest's schema has %z "
                         "columns", x->name, x->name_len, n, mf->ncols);
        for (i = 0; i < mf->ncols; i++) {
            const sts__scol *c = &mf->cols[i];
            const sts_tensor *t = sts_find(f, c->name, c->name_len);
            int ok = 1;
            if (!t) {
                sts__ck_fail(ck, STS_RULE_DATASET_MANIFEST, "shard %q has no tensor %q, a column of the manifest's "
                             "schema", x->name, x->name_len, c->name, c->name_len);
                continue;
            }
            ok = t->dtype == c->dtype && t->rank == c->rank && t->rank >= 1;
            for (d = 1; ok && d < t->rank; d++) ok = c->dims[d] < 0 || (uint64_t)c->dims[d] == t->shape[d];
            if (ok && c->dims[0] >= 0 && t->shape[0] > (uint64_t)c->dims[0]) ok = 0;
            if (!ok)
                sts__ck_fail(ck, STS_RULE_DATASET_MANIFEST, "shard %q: %q is %s %S, but the manifest's schema says %s "
                             "with rank %d", x->name, x->name_len, c->name, c->name_len, sts_dtype_name(t->dtype),
                             t->shape, (size_t)t->rank, sts_dtype_name(c->dtype), (int)c->rank);
            else if (x->samples != UINT64_MAX && x->samples > t->shape[0])
                sts__ck_fail(ck, STS_RULE_DATASET_MANIFEST, "shard %q: samples_count %U, but %q holds %U rows",
                             x->name, x->name_len, x->samples, c->name, c->name_len, t->shape[0]);
        }
        return;
    }
    for (i = 0; i < n; i++) {  /* KV: key + separator + column, the column's dtype and shape */
        const sts_tensor *t = sts_at(f, i);
        int ci = sts__ck_col_of(mf, t), ok = 1;
        const sts__scol *c;
        if (ci < 0) {
            sts__ck_fail(ck, STS_RULE_DATASET_MANIFEST, "shard %q: tensor %q ends with no column of the manifest's "
                         "schema", x->name, x->name_len, t->name, t->name_len);
            continue;
        }
        c = &mf->cols[ci];
        if (t->rank != c->rank) {
            int all = 1;
            for (d = 0; d < c->rank; d++) all &= c->dims[d] < 0;
            ok = t->dtype == c->dtype && all;  /* tasks saw different ranks: every dim is -1 */
        } else
            for (d = 0, ok = t->dtype == c->dtype; ok && d < c->rank; d++)
                ok = c->dims[d] < 0 || (uint64_t)c->dims[d] == t->shape[d];
        if (!ok)
            sts__ck_fail(ck, STS_RULE_DATASET_MANIFEST, "shard %q: %q is %s %S, which column %q of the manifest's "
                         "schema (%s, rank %d) does not allow", x->name, x->name_len, t->name, t->name_len,
                         sts_dtype_name(t->dtype), t->shape, (size_t)t->rank, c->name, c->name_len,
                         sts_dtype_name(c->dtype), (int)c->rank);
    }
    if (x->samples != UINT64_MAX && mf->ncols) {  /* each row writes every column once */
        uint64_t rows_max;
        if (!sts__mul64(x->samples, mf->ncols, &rows_max)) rows_max = UINT64_MAX;
        if (n > rows_max || (mf->dup == STS_DUPLICATES_FAIL && n != rows_max))
            sts__ck_fail(ck, STS_RULE_DATASET_MANIFEST, "shard %q holds %z tensors, but samples_count %U rows of %z "
                         "columns make %U", x->name, x->name_len, n, x->samples, mf->ncols, rows_max);
    }
}
STS__PRIVATE void sts__ck_shard(sts__ck *ck, const sts__manifest *mf, const sts__mshard *x, const char *path) {
    sts_options o;
    sts_file *f;
    sts_error e;
    sts__stat st;
    int err_no = sts__stat_path(path, &st);
    if (err_no || st.kind != STS__FT_REG) {
        sts__ck_fail(ck, STS_RULE_DATASET_MANIFEST, "shard %q is listed in dataset_manifest.json but %s", x->name,
                     x->name_len, err_no ? sts__errno_name(err_no) : "is not a regular file");
        return;
    }
    if (mf && st.size != x->bytes)
        sts__ck_fail(ck, STS_RULE_DATASET_MANIFEST, "shard %q has %U bytes, but dataset_manifest.json lists %U",
                     x->name, x->name_len, st.size, x->bytes);
    memset(&o, 0, sizeof o);
    o.allocator = ck->mem.a;
    o.strict = 1;  /* a dataset's shards come from a strict writer */
    o.header_only = !(ck->cfg && ck->cfg->data);
    if (sts_open(path, &o, &f, &e) != STS_OK) { sts__ck_file(ck, x->name, &e); return; }
    ck->rep.shards++;
    ck->rep.tensors += sts_count(f);
    ck->rep.bytes += sts_file_size(f);
    if (!o.header_only && mf && x->crc32c != UINT64_MAX) {
        uint32_t crc = sts__crc32c(0, f->header - 8, (size_t)sts_file_size(f));
        if (crc != (uint32_t)x->crc32c)
            sts__ck_fail(ck, STS_RULE_DATASET_CHECKSUM, "shard %q: its bytes have CRC-32C %U, but "
                                                        "dataset_manifest.json "
                         "records %U: the file changed after it was written", x->name, x->name_len, (uint64_t)crc,
                         x->crc32c);
        else ck->rep.checksums++;
    }
    if (mf) sts__ck_schema(ck, mf, x, f);
    sts_close(f);
}
/* ---- the index against the headers, both ways ---- */
STS__PRIVATE void sts__ck_index(sts__ck *ck, const sts_dataset *ds) {
    const sts__keymap *k = ds->index;
    size_t fi, i;
    for (fi = 0; fi < ds->nfiles; fi++) {
        const sts__dfile *df = &ds->files[fi];
        sts_file *h;
        sts_error e;
        if (sts__ds_header(ds, fi, &h, NULL, &e) != STS_OK) continue;  /* reported with the shard */
        for (i = k->fstart[fi]; i < k->fstart[fi + 1]; i++) {
            const sts__dkey *en = sts__dk_at(k, k->byfile[i]);
            int same;
            const sts_tensor *t = sts__dk_in(en, h, NULL, &same);
            if (!t || !same)
                sts__ck_fail(ck, STS_RULE_DATASET_INDEX, "_tensor_index.json: key %q in file %q: %s", sts__dk_key(en),
                             (size_t)en->len, df->name, df->name_len,
                             t ? "the file's header disagrees (dtype, shape or offsets)"
                               : "the file has no such tensor");
        }
        for (i = 0; i < sts_count(h); i++) {
            const sts_tensor *t = sts_at(h, i);
            const sts__dkey *en;
            char small[256], *key = small;
            size_t kl = t->name_len;
            if (ds->has_manifest && !ds->kv) {  /* batch keys: file/name */
                kl = df->name_len + 1 + t->name_len;
                if (kl > sizeof small && !(key = (char *)sts__alloc(&ck->mem, kl))) { ck->nomem = 1; continue; }
                memcpy(key, df->name, df->name_len);
                key[df->name_len] = '/';
                memcpy(key + df->name_len + 1, t->name, t->name_len);
            } else key = (char *)(uintptr_t)t->name;
            en = sts__keymap_find(k, sts__hash(key, kl, ds->seed), key, kl);
            if (!en)
                sts__ck_fail(ck, STS_RULE_DATASET_INDEX, "tensor %q of file %q is not in _tensor_index.json", key, kl,
                             df->name, df->name_len);
            else if (en->file != fi && !(ds->lastwin && sts__natcmp(ds->files[en->file].name, df->name) > 0))
                sts__ck_fail(ck, STS_RULE_DATASET_INDEX, "tensor %q is in file %q, but _tensor_index.json places it in "
                             "%q", key, kl, df->name, df->name_len, ds->files[en->file].name,
                             ds->files[en->file].name_len);
            if (key != small && key != t->name) sts__free(&ck->mem, key, kl);
        }
        sts_close(h);
    }
}
/* The entry of key (unescaped) in the key table, or NULL. */
STS__PRIVATE const sts__dkey *sts__ck_find(const sts_dataset *ds, const char *key, size_t len) {
    return sts__keymap_find(ds->index, sts__hash(key, len, ds->seed), key, len);
}
/* _tensor_index.csv, row by row (RFC 4180), against the key table. */
STS__PRIVATE size_t sts__csv_field(const char *p, size_t n, size_t at, char *out, size_t *len, int *end_row) {
    size_t o = 0;
    *end_row = 0;
    if (at < n && p[at] == '"') {
        at++;
        while (at < n) {
            if (p[at] == '"') { if (at + 1 < n &&
                                    p[at + 1] == '"') { out[o++] = '"'; at += 2; continue; } at++; break; }
            out[o++] = p[at++];
        }
    } else
        while (at < n && p[at] != ',' && p[at] != '\r' && p[at] != '\n') out[o++] = p[at++];
    *len = o;
    if (at < n && p[at] == ',') return at + 1;
    if (at < n && p[at] == '\r') at++;
    if (at < n && p[at] == '\n') at++;
    *end_row = 1;
    return at;
}
STS__PRIVATE void sts__ck_csv(sts__ck *ck, const sts_dataset *ds, const char *text, size_t n) {
    static const char head[] = "tensor_key,file_name,shape,dtype";
    size_t at, rows = 0, row_no = 1;
    char *f[4];
    size_t fl[4], k;
    int end;
    if (n < sizeof head - 1 || memcmp(text, head, sizeof head - 1) != 0) {
        sts__ck_fail(ck, STS_RULE_DATASET_INDEX, "_tensor_index.csv does not start with the header %s", head);
        return;
    }
    for (k = 0; k < 4; k++) if (!(f[k] = (char *)sts__alloc(&ck->mem, n + 1))) {
        while (k--) sts__free(&ck->mem, f[k], n + 1);
        ck->nomem = 1;
        return;
    }
    at = sizeof head - 1;
    while (at < n && (text[at] == '\r' || text[at] == '\n')) at++;
    while (at < n) {
        const sts__dkey *en;
        char *key = f[0], shape[512];
        size_t kl = 0, c;
        sts__buf b;
        row_no++;
        for (c = 0, end = 0; c < 4 && !end; c++) at = sts__csv_field(text, n, at, f[c], &fl[c], &end);
        if (c != 4 || !end) {
            sts__ck_fail(ck, STS_RULE_DATASET_INDEX, "_tensor_index.csv: row %z does not have 4 fields", row_no);
            while (!end && at < n) at = sts__csv_field(text, n, at, f[3], &fl[3], &end);
            continue;
        }
        rows++;
        if (ds->has_manifest && !ds->kv) {  /* the JSON's key: file/name */
            memmove(f[0] + fl[1] + 1, f[0], fl[0]);
            memcpy(f[0], f[1], fl[1]);
            f[0][fl[1]] = '/';
            kl = fl[1] + 1 + fl[0];
        } else kl = fl[0];
        en = sts__ck_find(ds, key, kl);
        if (!en) {
            sts__ck_fail(ck, STS_RULE_DATASET_INDEX, "_tensor_index.csv row %z: key %q is not in _tensor_index.json",
                         row_no,
                         key, kl);
            continue;
        }
        b.p = shape; b.n = 0; b.cap = sizeof shape;
        sts__buf_put(&b, "[", 1);
        for (c = 0; c < en->rank; c++) { if (c) sts__buf_put(&b, ",", 1); sts__buf_u64(&b, sts__dk_shape(en)[c]); }
        sts__buf_put(&b, "]", 1);
        if (fl[1] != ds->files[en->file].name_len || memcmp(f[1], ds->files[en->file].name, fl[1]) != 0 ||
            fl[2] != b.n || memcmp(f[2], shape, b.n) != 0 || fl[3] != strlen(sts_dtype_name((sts_dtype)en->dtype)) ||
            memcmp(f[3], sts_dtype_name((sts_dtype)en->dtype), fl[3]) != 0)
            sts__ck_fail(ck, STS_RULE_DATASET_INDEX, "_tensor_index.csv row %z (key %q) disagrees with "
                         "_tensor_index.json: a stale CSV (sts index rebuilds both)", row_no, key, kl);
    }
    if (rows != ds->index->n)
        sts__ck_fail(ck, STS_RULE_DATASET_INDEX, "_tensor_index.csv has %z rows, _tensor_index.json %z keys: a stale "
                     "CSV (sts index rebuilds both)", rows, ds->index->n);
    for (k = 0; k < 4; k++) sts__free(&ck->mem, f[k], n + 1);
}
/* The JSON's weight_map and metadata.total_size against its "tensors" (the key table). */
STS__PRIVATE void sts__ck_weight_map(sts__ck *ck, const sts_dataset *ds, const char *text, size_t n) {
    sts__jdoc d;
    uint32_t wm, md, t, s, i;
    uint64_t total = 0, want = 0;
    const sts__dkey *en;
    {   /* the index loaded, so it parses: only memory can fail here */
        sts_result pr = sts__jdoc_parse(&d, text, n, &ck->mem, "_tensor_index.json", STS_RULE_DATASET_INDEX, NULL);
        if (pr == STS_ERR_NOMEM) ck->nomem = 1;
        if (pr != STS_OK) return;
    }
    wm = sts__jdoc_get(&d, 0, "weight_map");
    if (!wm || d.tok[wm].type != '{')
        sts__ck_fail(ck, STS_RULE_DATASET_INDEX, "_tensor_index.json has no weight_map object");
    else {
        if (d.tok[wm].count != ds->index->n)
            sts__ck_fail(ck, STS_RULE_DATASET_INDEX, "_tensor_index.json: weight_map has %z keys, tensors %z",
                         (size_t)d.tok[wm].count, ds->index->n);
        for (i = 0, s = wm + 1; i < d.tok[wm].count; i++, s = sts__jdoc_next(&d, s + 1)) {
            size_t kl, fl;
            char *key = sts__jdoc_dup(&ck->mem, &d, s, &kl), *file;
            if (!key) { ck->nomem = 1; break; }
            file = d.tok[s + 1].type == '"' ? sts__jdoc_dup(&ck->mem, &d, s + 1, &fl) : NULL;
            if (!file && d.tok[s + 1].type == '"') { ck->nomem = 1; sts__free(&ck->mem, key, kl + 1); break; }
            en = sts__ck_find(ds, key, kl);
            if (!en || !file || fl != ds->files[en->file].name_len || memcmp(file, ds->files[en->file].name, fl) != 0)
                sts__ck_fail(ck, STS_RULE_DATASET_INDEX, "_tensor_index.json: weight_map's %q %s", key, kl,
                             en ? "names another file than tensors does" : "is not in tensors");
            sts__free(&ck->mem, key, kl + 1);
            if (file) sts__free(&ck->mem, file, fl + 1);
        }
    }
    md = sts__jdoc_get(&d, 0, "metadata");
    t = md ? sts__jdoc_get(&d, md, "total_size") : 0;
    for (en = sts__dk_first(ds->index); en; en = sts__dk_next(ds->index, en)) want += en->end - en->begin;
    if (!t || !sts__jdoc_u64(&d, t, &total) || total != want)
        sts__ck_fail(ck, STS_RULE_DATASET_INDEX, "_tensor_index.json: metadata.total_size is not the %U bytes of its "
                     "tensors", want);
    sts__jdoc_free(&d);
}
STSDEF sts_result sts_dataset_check(const char *path, const sts_check_config *cfg, const sts_options *opts,
                                    sts_check_report *report, sts_error *err) {
    sts__ck ck;
    sts__manifest mf;
    sts__joblock lock;
    sts__stat st;
    sts_result r;
    int found = 0, lfound = 0, e, mf_ok;
    size_t i;
    memset(&ck, 0, sizeof ck);
    ck.mem = sts__mem_from(opts);
    ck.cfg = cfg;
    ck.dir = path;
    memset(&mf, 0, sizeof mf);
    if (!path) return sts__failx(err, STS_RULE_ARGUMENT, "sts_dataset_check needs a path");
    if (!sts__mem_valid(&ck.mem))
        return sts__failx(err, STS_RULE_ARGUMENT, "the allocator needs all three hooks or none");
    if ((e = sts__stat_path(path, &st)) != 0) return sts__fail_errno(err, e, "check", path);
    if (st.kind != STS__FT_DIR) {  /* one file: strictly valid */
        sts__mshard x;
        const char *slash = strrchr(path, '/');
        memset(&x, 0, sizeof x);
        x.name = (char *)(uintptr_t)(slash ? slash + 1 : path);
        x.name_len = strlen(x.name);
        x.crc32c = UINT64_MAX;
        sts__ck_shard(&ck, NULL, &x, path);
    } else {
        sts_error me;
        r = sts__manifest_read(&ck.mem, path, &mf, &found, &me);
        mf_ok = r == STS_OK;
        if (r == STS_ERR_NOMEM) { if (err) *err = me; return r; }
        if (!mf_ok) { sts__ck_report(&ck, &me); found = 1; }
        if ((r = sts__lock_read(&ck.mem, path, &lock, &lfound, err)) == STS_ERR_NOMEM) {
            sts__manifest_free(&mf);
            return r;
        }
        if (lfound) {
            char host[256];
            int alive;
            sts__host(host, sizeof host);
            alive = !lock.job ? 0 : lock.host && strcmp(lock.host, host) == 0 ? sts__pid_alive(lock.pid) : -1;
            sts__ck_fail(&ck, STS_RULE_DATASET_LOCK, "%q is held by job %q (process %U on %q): %s", path, strlen(path),
                         lock.job ? lock.job : "?", lock.job ? lock.job_len : (size_t)1, lock.pid,
                         lock.host ? lock.host : "?", lock.host ? lock.host_len : (size_t)1,
                         alive == 0 ? "its process is gone, so the job crashed; sts clean clears the lock and what the "
                                      "job left"
                         : alive == 1 ? "its process runs: a job is writing here"
                                      : "on another host: if that job is gone, sts clean --force clears the lock");
            sts__lock_free(&ck.mem, &lock);
        }
        {   /* temporaries and orphans */
            sts__ck_dir cd;
            sts_error le;
            cd.ck = &ck;
            cd.has_mf = found && mf_ok;
            cd.names = cd.has_mf ? sts__ck_names(&ck.mem, &mf, &cd.nnames) : NULL;
            if (!cd.names) cd.nnames = 0;
            if (cd.has_mf && mf.nshards && !cd.names) {  /* out of memory: every shard would read as an orphan */
                sts__manifest_free(&mf);
                return sts__nomem(err, "the manifest's shard names");
            }
            if (sts__list_dir(path, sts__ck_entry, &cd, &le) != STS_OK) sts__ck_report(&ck, &le);
            sts__free(&ck.mem, cd.names, cd.nnames * sizeof *cd.names);
        }
        if (found && mf_ok) {  /* the manifest's shards, totals and schema */
            uint64_t bytes = 0, samples = 0;
            int samples_known = 1;
            for (i = 0; i < mf.nshards; i++) {
                char *p;
                size_t psz;
                if (!(p = sts__join(&ck.mem, path, mf.shards[i].name, &psz))) {
                    sts__manifest_free(&mf);
                    return sts__nomem(err, "a path");
                }
                sts__ck_shard(&ck, &mf, &mf.shards[i], p);
                sts__free(&ck.mem, p, psz);
                bytes += mf.shards[i].bytes;
                if (mf.shards[i].samples == UINT64_MAX) samples_known = 0;
                else samples += mf.shards[i].samples;
            }
            if (bytes != mf.total_bytes)
                sts__ck_fail(&ck, STS_RULE_DATASET_MANIFEST, "dataset_manifest.json: total_bytes is %U, but its "
                                                             "shards' "
                             "bytes add up to %U", mf.total_bytes, bytes);
            if (samples_known && samples != mf.total_samples)
                sts__ck_fail(&ck, STS_RULE_DATASET_MANIFEST, "dataset_manifest.json: total_samples is %U, but its "
                             "shards' samples_count add up to %U", mf.total_samples, samples);
        }
        {   /* the dataset as a reader sees it: the index against the headers, the CSV, the weight_map */
            sts_dataset *ds = NULL;
            sts_read_config rc;
            sts_error oe;
            memset(&rc, 0, sizeof rc);
            rc.infer_schema = 1;
            r = sts_dataset_open(path, &rc, opts, &ds, &oe);
            if (r != STS_OK && oe.rule == STS_RULE_DATASET_INDEX) {
                sts__ck_report(&ck, &oe);
                rc.no_index = 1;
                r = sts_dataset_open(path, &rc, opts, &ds, &oe);
            }
            if (r == STS_ERR_NOMEM) { sts__manifest_free(&mf); *err = oe; return r; }
            if (r == STS_OK && !found) {  /* no manifest: every visible shard, strictly */
                for (i = 0; i < ds->nfiles; i++) {
                    sts__mshard x;
                    memset(&x, 0, sizeof x);
                    x.name = ds->files[i].name;
                    x.name_len = ds->files[i].name_len;
                    x.crc32c = UINT64_MAX;
                    sts__ck_shard(&ck, NULL, &x, ds->files[i].path);
                }
            }
            if (r == STS_OK && ds->index_stale)
                sts__ck_fail(&ck, STS_RULE_DATASET_INDEX, "_tensor_index.json belongs to another dataset (its "
                                                          "dataset_id is "
                             "not the manifest's): sts index rebuilds it");
            if (r == STS_OK && ds->index) {
                char *p, *text;
                size_t psz, tsz;
                sts_error fe;
                sts__ck_index(&ck, ds);
                if (!(p = sts__join(&ck.mem, path, "_tensor_index.csv", &psz))) ck.nomem = 1;
                else {
                    if (sts__path_kind(p) == STS__FT_NONE)
                        sts__ck_fail(&ck, STS_RULE_DATASET_INDEX,
                                     "_tensor_index.json has no _tensor_index.csv beside it");
                    else if (sts__read_file(&ck.mem, p, &text, &tsz, &fe) != STS_OK) sts__ck_report(&ck, &fe);
                    else { sts__ck_csv(&ck, ds, text, tsz); sts__free(&ck.mem, text, tsz + 1); }
                    sts__free(&ck.mem, p, psz);
                }
                if (!(p = sts__join(&ck.mem, path, "_tensor_index.json", &psz))) ck.nomem = 1;
                else {
                    if (sts__read_file(&ck.mem, p, &text, &tsz, &fe) == STS_OK) {
                        sts__ck_weight_map(&ck, ds, text, tsz);
                        sts__free(&ck.mem, text, tsz + 1);
                    } else if (fe.code == STS_ERR_NOMEM) ck.nomem = 1;
                    sts__free(&ck.mem, p, psz);
                }
            } else if (r == STS_OK) {
                char *p;
                size_t psz;
                if (!(p = sts__join(&ck.mem, path, "_tensor_index.csv", &psz))) ck.nomem = 1;
                else {
                    if (sts__path_kind(p) != STS__FT_NONE && !ds->index_stale)
                        sts__ck_fail(&ck, STS_RULE_DATASET_INDEX,
                                     "_tensor_index.csv has no _tensor_index.json beside it");
                    sts__free(&ck.mem, p, psz);
                }
            }
            if (r != STS_OK && !ck.rep.problems) sts__ck_report(&ck, &oe);  /* else what failed it is reported */
            sts_dataset_close(ds);
        }
        sts__manifest_free(&mf);
    }
    if (report) *report = ck.rep;
    if (ck.nomem) return sts__nomem(err, "the check (it stopped short: what it reported holds, the rest is unchecked)");
    if (ck.rep.problems) {
        if (err) *err = ck.first;
        return STS_ERR_DATASET;
    }
    sts__ok(err);
    return STS_OK;
}

/* Clean: temporaries, a stale lock, and (next to a readable manifest) orphan shards. */
typedef struct sts__cl {
    sts__mem mem;
    const sts_clean_config *cfg;
    const char *dir;
    char **names;
    size_t nnames, count;
    int has_mf;
    int nomem;                      /* a left-over stayed for want of memory */
} sts__cl;
STS__PRIVATE void sts__cl_remove(sts__cl *cl, const char *name, const char *why) {
    char *p = NULL;
    size_t sz = 0;
    if (!(cl->cfg && cl->cfg->dry_run) && !(p = sts__join(&cl->mem, cl->dir, name, &sz))) {
        cl->nomem = 1;  /* not removed, so not reported as removed */
        return;
    }
    cl->count++;
    if (cl->cfg && cl->cfg->removed) cl->cfg->removed(cl->cfg->user, name, why);
    if (!p) return;
    sts__remove_path(p);
    sts__free(&cl->mem, p, sz);
}
STS__PRIVATE sts_result sts__cl_entry(void *user, const char *n) {
    sts__cl *cl = (sts__cl *)user;
    if (sts__is_temp_name(n) || sts__is_backup_name(n)) sts__cl_remove(cl, n, "a writer's temporary");
    else if (cl->has_mf && sts__is_shard_name(n) && !sts__ck_has(cl->names, cl->nnames, n))
        sts__cl_remove(cl, n, "a shard the manifest does not name");
    return STS_OK;
}
STSDEF sts_result sts_dataset_clean(const char *dir, const sts_clean_config *cfg, const sts_options *opts,
                                    size_t *count, sts_error *err) {
    sts__cl cl;
    sts__manifest mf;
    sts__joblock lock;
    sts_result r;
    int found = 0, lfound = 0;
    memset(&cl, 0, sizeof cl);
    cl.mem = sts__mem_from(opts);
    cl.cfg = cfg;
    cl.dir = dir;
    if (!dir) return sts__failx(err, STS_RULE_ARGUMENT, "sts_dataset_clean needs a folder");
    if (!sts__mem_valid(&cl.mem))
        return sts__failx(err, STS_RULE_ARGUMENT, "the allocator needs all three hooks or none");
    if (sts__path_kind(dir) != STS__FT_DIR) return sts__fail_errno(err, ENOTDIR, "clean", dir);
    if ((r = sts__lock_read(&cl.mem, dir, &lock, &lfound, err)) != STS_OK) return r;
    if (lfound) {  /* a live job's files are not left-overs: refuse, unless told */
        char host[256];
        int alive;
        sts__host(host, sizeof host);
        /* a lock that names no job was cut short by a crash while prepare wrote it */
        alive = !lock.job ? 0 : lock.host && strcmp(lock.host, host) == 0 ? sts__pid_alive(lock.pid) : -1;
        if (alive != 0 && !(cfg && cfg->force)) {
            r = sts__failx(err, STS_RULE_EXISTS, "%q is held by job %q (process %U on %q), which %s: nothing removed "
                           "(force clears it anyway)", dir, strlen(dir), lock.job ? lock.job : "?",
                           lock.job ? lock.job_len : (size_t)1, lock.pid, lock.host ? lock.host : "?",
                           lock.host ? lock.host_len : (size_t)1,
                           alive == 1 ? "still runs" : "may run on another host");
            sts__lock_free(&cl.mem, &lock);
            return r;
        }
        sts__lock_free(&cl.mem, &lock);
    }
    r = sts__manifest_read(&cl.mem, dir, &mf, &found, NULL);
    if (r == STS_ERR_NOMEM) return sts__nomem(err, "the manifest");
    cl.has_mf = r == STS_OK && found;  /* an unreadable manifest: no shard can be told an orphan */
    if (cl.has_mf) cl.names = sts__ck_names(&cl.mem, &mf, &cl.nnames);
    if (cl.has_mf && mf.nshards && !cl.names) {  /* out of memory: never take the dataset's shards for orphans */
        sts__manifest_free(&mf);
        return sts__nomem(err, "the manifest's shard names");
    }
    r = sts__list_dir(dir, sts__cl_entry, &cl, err);
    if (r == STS_OK) {  /* half an index (a commit stopped between the two files): it goes; sts index rebuilds */
        static const char *const ix[2] = { "_tensor_index.csv", "_tensor_index.json" };
        int have[2], k;
        for (k = 0; k < 2; k++) {
            char *p;
            size_t sz;
            if (!(p = sts__join(&cl.mem, dir, ix[k], &sz))) cl.nomem = 1;  /* unknown: neither is taken for half */
            have[k] = p && sts__path_kind(p) == STS__FT_REG;
            sts__free(&cl.mem, p, sz);
        }
        if (have[0] != have[1] && !cl.nomem)
            sts__cl_remove(&cl, ix[have[0] ? 0 : 1], "half of an index whose other file is missing");
    }
    if (r == STS_OK && lfound) sts__cl_remove(&cl, STS__LOCK, "the lock of a job that is gone");
    if (r == STS_OK && cl.nomem) r = sts__nomem(err, "a path (a left-over stays; clean again)");
    sts__free(&cl.mem, cl.names, cl.nnames * sizeof *cl.names);
    sts__manifest_free(&mf);
    if (count) *count = cl.count;
    if (r == STS_OK) sts__ok(err);
    return r;
}
#endif /* STS_NO_STDIO */

/* ==============================================================================================
   >>archive  10. archive
   Owns: the format-independent reader: element-type descriptors, inputs (a path mapped or read
   with pread, bytes in memory, a callback source), the provider registry and probing, the archive
   (typed metadata, descriptors, the name index, lazily opened files published without locks),
   views, window reads, cursors, SHA-256 of tensors and files, materialising through a factory, and
   the built-in providers: safetensors, sharded checkpoints, datasets, .npy and GGUF (>>gguf), and
   the GGUF writer (>>gguf_write, through the writer's atomic files).
   May call: util, json, dtype, header, io, writer, codec (conversions, SHA-256), dataset common, dataset read.
   ============================================================================================== */
#if defined(__GNUC__) || defined(__clang__)
#  define STS__AR_LOAD(p) __atomic_load_n((p), __ATOMIC_ACQUIRE)
#  define STS__AR_CAS(p, expect, want) \
    __atomic_compare_exchange_n((p), (expect), (want), 0, __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE)
#  define STS__AR_ADD(p, v) ((void)__atomic_fetch_add((p), (v), __ATOMIC_RELAXED))
#  define STS__AR_GET(p) __atomic_load_n((p), __ATOMIC_RELAXED)
#else  /* no atomics known: an archive is then safe for one thread at a time */
#  define STS__AR_LOAD(p) (*(p))
#  define STS__AR_CAS(p, expect, want) (*(p) == *(expect) ? (*(p) = (want), 1) : (*(expect) = *(p), 0))
#  define STS__AR_ADD(p, v) ((void)(*(p) += (v)))
#  define STS__AR_GET(p) (*(p))
#endif

/* ---- element types: the 22 safetensors dtypes; other formats add their own tables ---- */
#define STS__TYPE_ROW(name, bits) \
    { #name, 1, bits, 1, (bits) % 8 ? 0 : (bits) / 8, \
      (bits) < 8 ? 1 : STS_DTYPE_##name == STS_DTYPE_C64 ? 4 : (bits) / 8, \
      (bits) <= 8 ? 0 : STS_DTYPE_##name == STS_DTYPE_C64 ? 4 : (bits) / 8, STS_DTYPE_##name },
static const sts_type sts__types[STS_DTYPE_COUNT] = { STS_DTYPE_LIST(STS__TYPE_ROW) };
STSDEF const sts_type *sts_type_of(sts_dtype d) {
    return (unsigned)d < (unsigned)STS_DTYPE_COUNT ? &sts__types[d] : NULL;
}
STSDEF uint64_t sts_type_bytes(const sts_type *t, uint64_t n, int *ok) {
    uint64_t v;
    *ok = 0;
    if (!t) return 0;
    if (t->plain) {
        if (!sts__mul64(n, t->bits, &v) || v % 8) return 0;
        *ok = 1;
        return v / 8;
    }
    if (!t->block_elems || n % t->block_elems || !sts__mul64(n / t->block_elems, t->block_bytes, &v)) return 0;
    *ok = 1;
    return v;
}

/* ---- the archive's own memory: a chain of blocks freed together ---- */
typedef struct sts__arblock { struct sts__arblock *next; size_t size; } sts__arblock;

typedef struct sts__arpart {        /* a file of the archive, once opened */
    const uint8_t *base;            /* all its bytes when mapped or in memory, else NULL */
    uint64_t size;
    int fd;                         /* read with pread, else -1 */
    int mapped;                     /* base is our mapping (sts__fmap) */
    sts_file *sf;                   /* a shard opened with sts_open (owns base) */
    sts_tensor_desc *descs;         /* this file's tensors, in its entries' order */
    size_t ndescs, descs_cap;
} sts__arpart;
typedef struct sts__arfile {
    char *path;                     /* NUL-terminated; a label ("<memory>") when not a path */
    size_t path_size;               /* 0: path is a literal, not ours */
    sts__arpart *part;              /* published once with compare-and-swap */
    size_t first, count;            /* its entries: a->order[first, first + count) */
} sts__arfile;
typedef struct sts__arent {
    const char *name;               /* the archive's name for the tensor */
    size_t name_len;
    const char *inner;              /* its name inside its file (a dataset key differs) */
    size_t inner_len;
    uint64_t hash;
    size_t file, slot;              /* its file, and its descriptor there: part->descs[slot] */
} sts__arent;

typedef sts_result (*sts__arload_fn)(sts_archive *a, size_t file, sts__arpart **out, sts_error *err);

struct sts_archive {
    sts__mem mem;
    sts_options opts;
    sts__arblock *blocks;
    const char *format, *pname;
    uint32_t version;
    sts_meta *meta;
    size_t nmeta, meta_cap;
    sts__arent *ents;
    size_t nents, ents_cap;
    size_t *order;                  /* entries grouped by file (lazy archives) */
    sts__index ix;
    uint64_t seed;
    sts__arfile *files;
    size_t nfiles, files_cap;
    sts_source src;                 /* the input, when it is a callback */
    int has_src;
    uint64_t total;
    sts__arload_fn load;            /* opens a lazy file; NULL: every part exists from open */
    int allow_extra;                /* a lazy file may hold tensors no entry names (dataset lastWin) */
    const sts_file *direct;         /* one safetensors file: names, lookups and counts are its own, and
                                       file 0's descriptors are built on first use (open stays sts_open's cost) */
    uint64_t st_opened, st_reads, st_bytes;
    char *text;                     /* a sharded index's JSON text (names point into it), or NULL */
    size_t text_size;
};

struct sts_builder {
    sts_archive *a;
    const char *path;
    int is_dir;
    const uint8_t *prefix;          /* the probed prefix: reads inside it are served from it */
    size_t prefix_len;
    sts_tensor_desc *descs;         /* file 0's tensors, as added */
    size_t ndescs, descs_cap;
};

STS__PRIVATE void *sts__ar_alloc(sts_archive *a, size_t n) {
    sts__arblock *b;
    size_t bytes;
    if (n > (size_t)-1 - sizeof(sts__arblock) - 16) return NULL;
    bytes = sizeof(sts__arblock) + ((n + 15) & ~(size_t)15);
    if (!(b = (sts__arblock *)sts__alloc(&a->mem, bytes))) return NULL;
    b->next = a->blocks;
    b->size = bytes;
    a->blocks = b;
    return (void *)(b + 1);
}
STS__PRIVATE char *sts__ar_strdup(sts_archive *a, const char *s, size_t n) {
    char *p = (char *)sts__ar_alloc(a, n + 1);
    if (!p) return NULL;
    if (n) memcpy(p, s, n);
    p[n] = 0;
    return p;
}
STS__PRIVATE uint64_t sts__ar_alignment(uint64_t off) {
    uint64_t al = 1;
    while (al < 4096 && !(off & al)) al <<= 1;
    return al;
}

/* ---- byte access: one file's bytes, whatever holds them ---- */
STS__PRIVATE const char *sts__ar_label(const sts_archive *a, size_t file) {
    return file < a->nfiles ? a->files[file].path : "?";
}
/* The part of file i, opening a lazy one (once: a racing thread's copy is dropped). */
STS__PRIVATE void sts__ar_part_free(sts_archive *a, sts__arpart *p);
STS__PRIVATE sts_result sts__ar_part(const sts_archive *ca, size_t file, sts__arpart **out, sts_error *err) {
    sts_archive *a = (sts_archive *)(uintptr_t)ca;  /* lazy parts are published, never changed */
    sts__arpart *have = (sts__arpart *)STS__AR_LOAD(&a->files[file].part), *mine = NULL, *expect = NULL;
    sts_result r;
    if (have) { *out = have; return STS_OK; }
    if (!a->load) return sts__failx(err, STS_RULE_ARGUMENT, "file %z of the archive is not open", file);
    if ((r = a->load(a, file, &mine, err)) != STS_OK) return r;
    if (STS__AR_CAS(&a->files[file].part, &expect, mine)) { *out = mine; return STS_OK; }
    sts__ar_part_free(a, mine);
    *out = expect;
    return STS_OK;
}
/* Bytes [off, off + len) of a part into dst, counted. */
STS__PRIVATE sts_result sts__ar_fetch(const sts_archive *ca, size_t file, const sts__arpart *p, uint64_t off,
                                      void *dst, size_t len, sts_error *err) {
    sts_archive *a = (sts_archive *)(uintptr_t)ca;
    sts_result r;
    if (!len) return STS_OK;
    if (off > p->size || len > p->size - off)
        return sts__failx(err, STS_RULE_WINDOW, "bytes [%U, +%z) lie past the end of %q (%U bytes)", off, len,
                          sts__ar_label(a, file), strlen(sts__ar_label(a, file)), p->size);
    if (p->base) { memcpy(dst, p->base + off, len); return STS_OK; }
    STS__AR_ADD(&a->st_reads, 1);
#ifndef STS_NO_STDIO
    if (p->fd >= 0) {
        int e = sts__pread_all(p->fd, dst, len, off);
        if (e) return sts__fail_errno(err, e, "read", sts__ar_label(a, file));
        STS__AR_ADD(&a->st_bytes, len);
        return STS_OK;
    }
#endif
    if (!a->has_src) return sts__failx(err, STS_RULE_ARGUMENT, "the archive has no source to read");
    if ((r = a->src.read(a->src.user, off, dst, len)) != STS_OK)
        return sts__fail_code(err, r, STS_RULE_IO, off, "the source failed reading %z bytes at byte %U (%s)", len,
                              off, sts_result_name(r));
    STS__AR_ADD(&a->st_bytes, len);
    return STS_OK;
}

STS__PRIVATE void sts__ar_part_free(sts_archive *a, sts__arpart *p) {
    if (!p) return;
    if (p->sf) sts_close(p->sf);
#ifndef STS_NO_STDIO
    if (p->mapped) {
        sts__fmap m;
        memset(&m, 0, sizeof m);
        m.p = (uint8_t *)(uintptr_t)p->base;
        m.size = (size_t)p->size;
        m.mapped = p->mapped == 1;
        sts__map_free(&a->mem, &m, 0);
    }
    sts__close_fd(p->fd);
#endif
    sts__free(&a->mem, p->descs, p->descs_cap * sizeof *p->descs);
    sts__free(&a->mem, p, sizeof *p);
}
STS__PRIVATE sts__arpart *sts__ar_part_new(sts_archive *a) {
    sts__arpart *p = (sts__arpart *)sts__alloc(&a->mem, sizeof *p);
    if (p) { memset(p, 0, sizeof *p); p->fd = -1; }
    return p;
}

STSDEF void sts_archive_close(sts_archive *a) {
    size_t i;
    sts__arblock *b, *next;
    if (!a) return;
    for (i = 0; i < a->nfiles; i++) {
        sts__ar_part_free(a, a->files[i].part);
        if (a->files[i].path_size) sts__free(&a->mem, a->files[i].path, a->files[i].path_size);
    }
    sts__free(&a->mem, a->files, a->files_cap * sizeof *a->files);
    sts__free(&a->mem, a->meta, a->meta_cap * sizeof *a->meta);
    sts__free(&a->mem, a->ents, a->ents_cap * sizeof *a->ents);
    sts__free(&a->mem, a->order, a->nents * sizeof *a->order);
    sts__index_free(&a->mem, &a->ix);
    sts__free(&a->mem, a->text, a->text_size);
    for (b = a->blocks; b; b = next) { next = b->next; sts__free(&a->mem, b, b->size); }
    sts__free(&a->mem, a, sizeof *a);
}

/* ---- metadata ---- */
STS__PRIVATE sts_result sts__ar_meta_copy(sts_archive *a, sts_meta *dst, const sts_meta *m, int depth,
                                          sts_error *err) {
    uint64_t k;
    *dst = *m;
    if (depth > 64) return sts__failx(err, STS_RULE_PROVIDER, "metadata nested more than 64 arrays deep");
    if (m->key && !(dst->key = sts__ar_strdup(a, m->key, m->key_len))) return sts__nomem(err, "a metadata key");
    if (m->type == STS_META_STRING && !(dst->str = sts__ar_strdup(a, m->str ? m->str : "", m->str_len)))
        return sts__nomem(err, "a metadata string");
    if (m->type == STS_META_ARRAY && m->count) {
        sts_meta *items;
        size_t bytes;
        if (!m->items) return sts__failx(err, STS_RULE_ARGUMENT, "a metadata array of %U items has none", m->count);
        if (m->count > (uint64_t)((size_t)-1 / sizeof *items) || !sts__mulsz((size_t)m->count, sizeof *items, &bytes) ||
            !(items = (sts_meta *)sts__ar_alloc(a, bytes)))
            return sts__nomem(err, "a metadata array");
        for (k = 0; k < m->count; k++) {
            sts_result r = sts__ar_meta_copy(a, &items[k], &m->items[k], depth + 1, err);
            if (r != STS_OK) return r;
        }
        dst->items = items;
    } else if (m->type == STS_META_ARRAY) {
        dst->items = NULL;
    }
    return STS_OK;
}
STS__PRIVATE sts_result sts__ar_add_meta(sts_archive *a, const sts_meta *m, int copy, sts_error *err) {
    if (m->type < STS_META_STRING || m->type > STS_META_ARRAY)
        return sts__failx(err, STS_RULE_ARGUMENT, "metadata %q has no valid type", m->key ? m->key : "",
                          m->key ? m->key_len : (size_t)0);
    if (!sts__grow(&a->mem, (void **)&a->meta, &a->meta_cap, a->nmeta + 1, sizeof *a->meta))
        return sts__nomem(err, "the metadata table");
    if (!copy) { a->meta[a->nmeta++] = *m; return STS_OK; }
    {
        sts_result r = sts__ar_meta_copy(a, &a->meta[a->nmeta], m, 0, err);
        if (r == STS_OK) a->nmeta++;
        return r;
    }
}

/* ---- entries and the name index ---- */
STS__PRIVATE sts_result sts__ar_add_ent(sts_archive *a, const char *name, size_t len, const char *inner,
                                        size_t inner_len, size_t file, sts_error *err) {
    sts__arent *e;
    if (a->nents >= 0xfffffff0u) return sts__failx(err, STS_RULE_PROVIDER, "more than 2^32 - 16 tensors");
    if (!sts__grow(&a->mem, (void **)&a->ents, &a->ents_cap, a->nents + 1, sizeof *a->ents))
        return sts__nomem(err, "the tensor table");
    e = &a->ents[a->nents++];
    e->name = name; e->name_len = len;
    e->inner = inner ? inner : name; e->inner_len = inner ? inner_len : len;
    e->file = file;
    e->slot = 0;
    e->hash = 0;
    return STS_OK;
}
STS__PRIVATE sts__names sts__ar_names(const sts_archive *a) {
    sts__names k;
    k.items = a->ents;
    k.stride = sizeof(sts__arent);
    k.ptr_off = offsetof(sts__arent, name);
    k.len_off = offsetof(sts__arent, name_len);
    k.hashes = a->ents ? (const char *)a->ents + offsetof(sts__arent, hash) : NULL;  /* no offset to NULL */
    k.hash_stride = sizeof(sts__arent);
    return k;
}
/* The name index over every entry; a repeated name breaks `rule`. */
STS__PRIVATE sts_result sts__ar_index(sts_archive *a, sts_rule rule, sts_error *err) {
    sts__names k = sts__ar_names(a);
    size_t i;
    a->seed = sts__seed_from(a, a->opts.hash_seed);
    if (!sts__index_init(&a->mem, &a->ix, a->nents)) return sts__nomem(err, "the name index");
    for (i = 0; i < a->nents; i++) {
        sts__arent *e = &a->ents[i];
        size_t pos;
        e->hash = sts__hash(e->name, e->name_len, a->seed);
        pos = sts__index_probe(&a->ix, &k, e->hash, e->name, e->name_len);
        if (a->ix.slots[pos] != STS__EMPTY)
            return sts__failx(err, rule, "tensor %q appears twice", e->name, e->name_len);
        a->ix.slots[pos] = (uint32_t)i;
    }
    return STS_OK;
}
STS__PRIVATE size_t sts__ar_lookup(const sts_archive *a, const char *name, size_t len) {
    sts__names k = sts__ar_names(a);
    uint32_t it;
    if (a->direct) {
        const sts_tensor *t = sts_find(a->direct, name, len);
        return t ? (size_t)(t - sts_at(a->direct, 0)) : (size_t)-1;
    }
    if (!a->ix.slots) return (size_t)-1;
    it = a->ix.slots[sts__index_probe(&a->ix, &k, sts__hash(name, len, a->seed), name, len)];
    return it == STS__EMPTY ? (size_t)-1 : (size_t)it;
}
/* Groups the entries by file: files[f].first/count over a->order, and each entry's slot. */
STS__PRIVATE sts_result sts__ar_group(sts_archive *a, sts_error *err) {
    size_t i, *fill;
    if (!a->nfiles) return STS_OK;
    if (!(a->order = (size_t *)sts__alloc(&a->mem, (a->nents ? a->nents : 1) * sizeof *a->order)))
        return sts__nomem(err, "the shard table");
    if (!a->nents) { sts__free(&a->mem, a->order, sizeof *a->order); a->order = NULL; return STS_OK; }
    for (i = 0; i < a->nfiles; i++) a->files[i].count = 0;
    for (i = 0; i < a->nents; i++) a->files[a->ents[i].file].count++;
    for (i = 1; i < a->nfiles; i++) a->files[i].first = a->files[i - 1].first + a->files[i - 1].count;
    if (!(fill = (size_t *)sts__alloc(&a->mem, a->nfiles * sizeof *fill))) return sts__nomem(err, "the shard table");
    memset(fill, 0, a->nfiles * sizeof *fill);
    for (i = 0; i < a->nents; i++) {
        size_t f = a->ents[i].file;
        a->ents[i].slot = fill[f];
        a->order[a->files[f].first + fill[f]++] = i;
    }
    sts__free(&a->mem, fill, a->nfiles * sizeof *fill);
    return STS_OK;
}
STS__PRIVATE sts_result sts__ar_add_file(sts_archive *a, char *path, size_t path_size, sts_error *err) {
    sts__arfile *f;
    if (!sts__grow(&a->mem, (void **)&a->files, &a->files_cap, a->nfiles + 1, sizeof *a->files)) {
        if (path_size) sts__free(&a->mem, path, path_size);
        return sts__nomem(err, "the file table");
    }
    f = &a->files[a->nfiles++];
    memset(f, 0, sizeof *f);
    f->path = path;
    f->path_size = path_size;
    return STS_OK;
}

/* ---- the builder: what a provider's open fills ---- */
STSDEF uint64_t sts_builder_size(const sts_builder *b) {
    return b && b->a->nfiles && b->a->files[0].part ? b->a->files[0].part->size : 0;
}
STSDEF const char *sts_builder_path(const sts_builder *b) { return b ? b->path : NULL; }
STSDEF const void *sts_builder_bytes(const sts_builder *b) {
    return b && b->a->nfiles && b->a->files[0].part ? b->a->files[0].part->base : NULL;
}
STSDEF const sts_options *sts_builder_options(const sts_builder *b) { return b ? &b->a->opts : NULL; }
STSDEF void sts_builder_set_version(sts_builder *b, uint32_t version) { if (b) b->a->version = version; }
STSDEF sts_result sts_builder_read(sts_builder *b, uint64_t offset, void *dst, size_t len, sts_error *err) {
    if (!b || (!dst && len)) return sts__failx(err, STS_RULE_ARGUMENT, "sts_builder_read needs a builder and dst");
    if (!b->a->nfiles || !b->a->files[0].part)
        return sts__failx(err, STS_RULE_ARGUMENT, "%q is a folder: it has no bytes to read", b->path ? b->path : "",
                          b->path ? strlen(b->path) : (size_t)0);
    if (offset <= b->prefix_len && len <= b->prefix_len - offset) {  /* already probed: no new request */
        if (len) memcpy(dst, b->prefix + offset, len);
        return STS_OK;
    }
    return sts__ar_fetch(b->a, 0, b->a->files[0].part, offset, dst, len, err);
}
STSDEF sts_result sts_builder_add_meta(sts_builder *b, const sts_meta *m, sts_error *err) {
    if (!b || !m) return sts__failx(err, STS_RULE_ARGUMENT, "sts_builder_add_meta needs a builder and an entry");
    return sts__ar_add_meta(b->a, m, 1, err);
}
/* Checks a descriptor against its file: the type's size of the shape, inside the file. */
STS__PRIVATE sts_result sts__ar_check_desc(const sts_tensor_desc *d, uint64_t file_size, sts_error *err) {
    uint64_t numel = 1, want;
    uint32_t i;
    int ok;
    if (!d->type) return sts__failx(err, STS_RULE_PROVIDER, "tensor %q has no type", d->name, d->name_len);
    if (d->rank && !d->shape) return sts__failx(err, STS_RULE_PROVIDER, "tensor %q has no shape", d->name, d->name_len);
    for (i = 0; i < d->rank; i++)
        if (!sts__mul64(numel, d->shape[i], &numel))
            return sts__failx(err, STS_RULE_PROVIDER, "tensor %q: the shape %S overflows 64 bits", d->name, d->name_len,
                              d->shape, (size_t)d->rank);
    want = sts_type_bytes(d->type, numel, &ok);
    if (!ok || want != d->nbytes || numel != d->numel)
        return sts__failx(err, STS_RULE_PROVIDER, "tensor %q: %U bytes of %s do not hold the shape %S", d->name,
                          d->name_len, d->nbytes, d->type->name, d->shape, (size_t)d->rank);
    if (d->offset > file_size || d->nbytes > file_size - d->offset)
        return sts__fail(err, STS_RULE_PROVIDER, d->offset, "tensor %q: bytes [%U, %U) lie past the end of the "
                         "file (%U bytes)", d->name, d->name_len, d->offset, d->offset + d->nbytes, file_size);
    return STS_OK;
}
STSDEF sts_result sts_builder_add_tensor(sts_builder *b, const sts_tensor_desc *d, sts_error *err) {
    sts_archive *a;
    sts_tensor_desc c;
    sts_result r;
    size_t k, bytes;
    if (!b || !d || (!d->name && d->name_len))
        return sts__failx(err, STS_RULE_ARGUMENT, "sts_builder_add_tensor needs a builder and a named descriptor");
    a = b->a;
    if (d->file != 0 || !a->nfiles || !a->files[0].part)
        return sts__failx(err, STS_RULE_ARGUMENT, "tensor %q: a provider adds tensors of its source (file 0) only",
                          d->name ? d->name : "", d->name_len);
    if ((r = sts__ar_check_desc(d, a->files[0].part->size, err)) != STS_OK) return r;
    c = *d;
    if (!(c.name = sts__ar_strdup(a, d->name ? d->name : "", d->name_len))) return sts__nomem(err, "a tensor name");
    if (!sts__mulsz((size_t)d->rank ? (size_t)d->rank : 1, 2 * sizeof(uint64_t), &bytes) ||
        !(c.shape = (const uint64_t *)sts__ar_alloc(a, bytes)))
        return sts__nomem(err, "a tensor shape");
    if (d->rank) {
        memcpy((uint64_t *)(uintptr_t)c.shape, d->shape, d->rank * sizeof(uint64_t));
        memcpy((uint64_t *)(uintptr_t)c.shape + d->rank, d->format_shape ? d->format_shape : d->shape,
               d->rank * sizeof(uint64_t));
    }
    c.format_shape = c.shape + d->rank;
    c.alignment = sts__ar_alignment(d->offset);
    if (d->n_extras) {
        sts_meta *x;
        if (!d->extras || !sts__mulsz(d->n_extras, sizeof *x, &bytes) || !(x = (sts_meta *)sts__ar_alloc(a, bytes)))
            return d->extras ? sts__nomem(err, "a tensor's extras")
                             : sts__failx(err, STS_RULE_ARGUMENT, "tensor %q: n_extras without extras", d->name,
                                          d->name_len);
        for (k = 0; k < d->n_extras; k++)
            if ((r = sts__ar_meta_copy(a, &x[k], &d->extras[k], 0, err)) != STS_OK) return r;
        c.extras = x;
    } else {
        c.extras = NULL;
    }
    if (!sts__grow(&a->mem, (void **)&b->descs, &b->descs_cap, b->ndescs + 1, sizeof *b->descs))
        return sts__nomem(err, "the tensor table");
    b->descs[b->ndescs++] = c;
    return STS_OK;
}
/* An eager archive: the builder's descriptors become file 0's, one entry each. */
STS__PRIVATE sts_result sts__ar_finish_eager(sts_archive *a, sts_builder *b, sts_error *err) {
    sts__arpart *p = a->files[0].part;
    size_t i;
    sts_result r;
    p->descs = b->descs;
    p->ndescs = b->ndescs;
    p->descs_cap = b->descs_cap;
    b->descs = NULL;
    a->total = 0;
    for (i = 0; i < b->ndescs; i++) {
        sts_tensor_desc *d = &p->descs[i];
        d->index = i;
        d->file = 0;
        if ((r = sts__ar_add_ent(a, d->name, d->name_len, NULL, 0, 0, err)) != STS_OK) return r;
        a->ents[i].slot = i;
        a->total += d->nbytes;
    }
    return sts__ar_index(a, STS_RULE_PROVIDER, err);
}

/* ---- accessors ---- */
STS__PRIVATE size_t sts__ar_count(const sts_archive *a) { return a->direct ? sts_count(a->direct) : a->nents; }
/* Tensor i's file and its slot in that file's descriptors. */
STS__PRIVATE void sts__ar_where(const sts_archive *a, size_t i, size_t *file, size_t *slot) {
    if (a->direct) { *file = 0; *slot = i; return; }
    *file = a->ents[i].file;
    *slot = a->ents[i].slot;
}
STS__PRIVATE void sts__st_desc(sts_tensor_desc *d, const sts_file *sf, const sts_tensor *t, size_t file);
/* A part's descriptors; a direct file's are built on first use and published once. */
STS__PRIVATE sts_result sts__ar_descs(const sts_archive *a, sts__arpart *p, sts_tensor_desc **out, sts_error *err) {
    sts_tensor_desc *have = (sts_tensor_desc *)STS__AR_LOAD(&p->descs), *mine, *expect = NULL;
    size_t i;
    if (have || !p->ndescs || !p->sf) { *out = have; return STS_OK; }
    if (!(mine = (sts_tensor_desc *)sts__alloc(&a->mem, p->ndescs * sizeof *mine)))
        return sts__nomem(err, "the tensor table");
    for (i = 0; i < p->ndescs; i++) {
        sts__st_desc(&mine[i], p->sf, sts_at(p->sf, i), 0);
        mine[i].index = i;
    }
    if (STS__AR_CAS(&p->descs, &expect, mine)) { *out = mine; return STS_OK; }
    sts__free(&a->mem, mine, p->ndescs * sizeof *mine);
    *out = expect;
    return STS_OK;
}
STSDEF const char *sts_archive_format(const sts_archive *a) { return a ? a->format : NULL; }
STSDEF const char *sts_archive_provider(const sts_archive *a) { return a ? a->pname : NULL; }
STSDEF uint32_t sts_archive_version(const sts_archive *a) { return a ? a->version : 0; }
STSDEF size_t sts_archive_count(const sts_archive *a) { return a ? sts__ar_count(a) : 0; }
STSDEF uint64_t sts_archive_total_bytes(const sts_archive *a) { return a ? a->total : 0; }
STSDEF size_t sts_archive_meta_count(const sts_archive *a) { return a ? a->nmeta : 0; }
STSDEF const sts_meta *sts_archive_meta_at(const sts_archive *a, size_t i) {
    return a && i < a->nmeta ? &a->meta[i] : NULL;
}
STSDEF const sts_meta *sts_archive_meta_find(const sts_archive *a, const char *key, size_t key_len) {
    size_t i;
    if (!a || (!key && key_len)) return NULL;
    for (i = a->nmeta; i-- > 0;)  /* the last of a repeated key, as JSON readers do */
        if (a->meta[i].key_len == key_len && (key_len == 0 || memcmp(a->meta[i].key, key, key_len) == 0))
            return &a->meta[i];
    return NULL;
}
STSDEF const char *sts_archive_name(const sts_archive *a, size_t i, size_t *len) {
    if (!a || i >= sts__ar_count(a)) { if (len) *len = 0; return NULL; }
    if (a->direct) { if (len) *len = sts_at(a->direct, i)->name_len; return sts_at(a->direct, i)->name; }
    if (len) *len = a->ents[i].name_len;
    return a->ents[i].name;
}
STSDEF sts_result sts_archive_at(const sts_archive *a, size_t i, const sts_tensor_desc **out, sts_error *err) {
    sts__arpart *p;
    sts_tensor_desc *ds = NULL;
    size_t file, slot;
    sts_result r;
    if (!a || !out) return sts__failx(err, STS_RULE_ARGUMENT, "sts_archive_at needs an archive and out");
    if (i >= sts__ar_count(a))
        return sts__failx(err, STS_RULE_NOT_FOUND, "tensor %z is past the archive's %z tensors", i, sts__ar_count(a));
    sts__ar_where(a, i, &file, &slot);
    if ((r = sts__ar_part(a, file, &p, err)) != STS_OK) return r;
    if ((r = sts__ar_descs(a, p, &ds, err)) != STS_OK) return r;
    *out = &ds[slot];
    return STS_OK;
}
STSDEF sts_result sts_archive_find(const sts_archive *a, const char *name, size_t len, const sts_tensor_desc **out,
                                   sts_error *err) {
    size_t i;
    if (!a || !out || (!name && len))
        return sts__failx(err, STS_RULE_ARGUMENT, "sts_archive_find needs a name and out");
    if ((i = sts__ar_lookup(a, name, len)) == (size_t)-1)
        return sts__failx(err, STS_RULE_NOT_FOUND, "no tensor %q in the archive", name ? name : "", len);
    return sts_archive_at(a, i, out, err);
}
STSDEF size_t sts_archive_files(const sts_archive *a) { return a ? a->nfiles : 0; }
STSDEF const char *sts_archive_file(const sts_archive *a, size_t i) {
    return a && i < a->nfiles ? a->files[i].path : NULL;
}
STSDEF sts_archive_stats sts_archive_get_stats(const sts_archive *a) {
    sts_archive_stats s;
    memset(&s, 0, sizeof s);
    if (!a) return s;
    s.files_opened = STS__AR_GET(&a->st_opened);
    s.reads = STS__AR_GET(&a->st_reads);
    s.bytes_read = STS__AR_GET(&a->st_bytes);
    return s;
}

/* ---- views, windows, cursors ---- */
/* The descriptor's part, checking the descriptor belongs to this archive. */
STS__PRIVATE sts_result sts__ar_desc_part(const sts_archive *a, const sts_tensor_desc *d, sts__arpart **p,
                                          sts_error *err) {
    const sts_tensor_desc *ds;
    size_t file, slot;
    sts_result r;
    if (!a || !d) return sts__failx(err, STS_RULE_ARGUMENT, "an archive and a descriptor are needed");
    if (d->file >= a->nfiles || d->index >= sts__ar_count(a))
        return sts__failx(err, STS_RULE_ARGUMENT, "the descriptor of %q is not this archive's", d->name, d->name_len);
    sts__ar_where(a, d->index, &file, &slot);
    if ((r = sts__ar_part(a, d->file, p, err)) != STS_OK) return r;
    ds = (const sts_tensor_desc *)STS__AR_LOAD(&(*p)->descs);  /* a direct file's: NULL until built */
    if (file != d->file || slot >= (*p)->ndescs || !ds || &ds[slot] != d)
        return sts__failx(err, STS_RULE_ARGUMENT, "the descriptor of %q is not this archive's", d->name, d->name_len);
    return STS_OK;
}
STS__PRIVATE const char *sts__ar_no_view(const sts_archive *a, const sts_tensor_desc *d, const sts__arpart *p) {
    if (!p->base) return a->has_src ? "its bytes come through a callback source, not a mapping"
                                     : "its file is read with pread, not mapped";
    if (d->big_endian != sts__host_big_endian() && (d->type->swap > 1 || !d->type->plain))  /* bytes have no order */
        return d->big_endian ? "its bytes are big-endian and this host is little-endian"
                             : "its bytes are little-endian and this host is big-endian";
    if (d->type->align > 1 && (uintptr_t)(p->base + d->offset) % d->type->align)
        return "its bytes are not aligned for its type";
    return NULL;
}
STSDEF sts_result sts_archive_view(const sts_archive *a, const sts_tensor_desc *d, const void **out, sts_error *err) {
    sts__arpart *p;
    const char *why;
    sts_result r;
    if (!out) return sts__failx(err, STS_RULE_ARGUMENT, "sts_archive_view needs out");
    if ((r = sts__ar_desc_part(a, d, &p, err)) != STS_OK) return r;
    if ((why = sts__ar_no_view(a, d, p)) != NULL)
        return sts__fail(err, STS_RULE_VIEW, d->offset, "no view of tensor %q (%s at byte %U of %q): %s", d->name,
                         d->name_len, d->type->name, d->offset, sts__ar_label(a, d->file),
                         strlen(sts__ar_label(a, d->file)), why);
    *out = p->base + d->offset;
    return STS_OK;
}
STS__PRIVATE sts_result sts__ar_window(const sts_tensor_desc *d, uint64_t offset, uint64_t len, sts_error *err) {
    if (offset > d->nbytes || len > d->nbytes - offset)
        return sts__failx(err, STS_RULE_WINDOW, "the window [%U, +%U) is outside tensor %q (%U bytes)", offset, len,
                          d->name, d->name_len, d->nbytes);
    return STS_OK;
}
STSDEF sts_result sts_archive_read(const sts_archive *a, const sts_tensor_desc *d, uint64_t offset, void *dst,
                                   size_t len, sts_error *err) {
    sts__arpart *p;
    sts_result r;
    if (!dst && len) return sts__failx(err, STS_RULE_ARGUMENT, "sts_archive_read needs dst");
    if ((r = sts__ar_desc_part(a, d, &p, err)) != STS_OK) return r;
    if ((r = sts__ar_window(d, offset, len, err)) != STS_OK) return r;
    return sts__ar_fetch(a, d->file, p, d->offset + offset, dst, len, err);
}

struct sts_cursor {
    const sts_archive *a;
    const sts_tensor_desc *d;
    sts__arpart *p;
    uint64_t at, end;               /* file offsets */
    size_t chunk;
    uint8_t *buf;                   /* chunk bytes, when not mapped */
    size_t bufsize;
    int check;                      /* compare the digest at the end */
    int checked;
    sts_sha256 sha;
    uint8_t expect[32];
};
STSDEF sts_result sts_cursor_open(const sts_archive *a, const sts_tensor_desc *d, uint64_t offset, uint64_t len,
                                  size_t chunk, const uint8_t *sha256, sts_cursor **out, sts_error *err) {
    sts__arpart *p;
    sts_cursor *c;
    sts_result r;
    if (!out) return sts__failx(err, STS_RULE_ARGUMENT, "sts_cursor_open needs out");
    if ((r = sts__ar_desc_part(a, d, &p, err)) != STS_OK) return r;
    if ((r = sts__ar_window(d, offset, len, err)) != STS_OK) return r;
    if (sha256 && (offset != 0 || len != d->nbytes))
        return sts__failx(err, STS_RULE_ARGUMENT, "a digest is checked over the whole of tensor %q, not a window",
                          d->name, d->name_len);
    if (!chunk) chunk = (size_t)1 << 20;
    if (!(c = (sts_cursor *)sts__alloc(&a->mem, sizeof *c))) return sts__nomem(err, "a cursor");
    memset(c, 0, sizeof *c);
    c->a = a; c->d = d; c->p = p;
    c->at = d->offset + offset;
    c->end = c->at + len;
    c->chunk = chunk;
    c->bufsize = p->base || !len ? 0 : (uint64_t)chunk < len ? chunk : (size_t)len;
    if (c->bufsize && !(c->buf = (uint8_t *)sts__alloc(&a->mem, c->bufsize))) {
        sts__free(&a->mem, c, sizeof *c);
        return sts__nomem(err, "a cursor's buffer");
    }
    if (sha256) { c->check = 1; memcpy(c->expect, sha256, 32); sts_sha256_init(&c->sha); }
    *out = c;
    return STS_OK;
}
STS__PRIVATE sts_result sts__ar_digest_check(const sts_tensor_desc *d, const char *file, sts_sha256 *sha,
                                             const uint8_t expect[32], sts_error *err) {
    uint8_t got[32];
    char hg[65], he[65];
    sts_sha256_final(sha, got);
    if (memcmp(got, expect, 32) == 0) return STS_OK;
    sts_sha256_hex(got, hg);
    sts_sha256_hex(expect, he);
    return sts__failx(err, STS_RULE_SHA256, "tensor %q of %q has SHA-256 %s, not the expected %s", d->name,
                      d->name_len, file, strlen(file), hg, he);
}
STSDEF sts_result sts_cursor_next(sts_cursor *c, const void **chunk, size_t *len, sts_error *err) {
    size_t n;
    const uint8_t *p;
    sts_result r;
    if (!c || !chunk || !len)
        return sts__failx(err, STS_RULE_ARGUMENT, "sts_cursor_next needs a cursor, chunk and len");
    if (c->at >= c->end) {
        *chunk = NULL;
        *len = 0;
        if (c->check && !c->checked) {  /* an empty tensor */
            c->checked = 1;
            return sts__ar_digest_check(c->d, sts__ar_label(c->a, c->d->file), &c->sha, c->expect, err);
        }
        return STS_OK;
    }
    n = (uint64_t)c->chunk < c->end - c->at ? c->chunk : (size_t)(c->end - c->at);
    if (c->p->base) p = c->p->base + c->at;
    else {
        if ((r = sts__ar_fetch(c->a, c->d->file, c->p, c->at, c->buf, n, err)) != STS_OK) return r;
        p = c->buf;
    }
    c->at += n;
    if (c->check) {
        sts_sha256_update(&c->sha, p, n);
        if (c->at == c->end) {
            c->checked = 1;
            if ((r = sts__ar_digest_check(c->d, sts__ar_label(c->a, c->d->file), &c->sha, c->expect, err)) != STS_OK)
                return r;
        }
    }
    *chunk = p;
    *len = n;
    return STS_OK;
}
STSDEF void sts_cursor_close(sts_cursor *c) {
    if (!c) return;
    sts__free(&c->a->mem, c->buf, c->bufsize);
    sts__free(&c->a->mem, c, sizeof *c);
}

/* ---- SHA-256 of tensors and files ---- */
STSDEF sts_result sts_archive_sha256(const sts_archive *a, const sts_tensor_desc *d, uint8_t digest[32],
                                     sts_error *err) {
    sts_cursor *c;
    sts_sha256 sha;
    const void *chunk;
    size_t len;
    sts_result r;
    if (!digest) return sts__failx(err, STS_RULE_ARGUMENT, "sts_archive_sha256 needs a digest buffer");
    if ((r = sts_cursor_open(a, d, 0, d ? d->nbytes : 0, (size_t)4 << 20, NULL, &c, err)) != STS_OK) return r;
    sts_sha256_init(&sha);
    while ((r = sts_cursor_next(c, &chunk, &len, err)) == STS_OK && len) sts_sha256_update(&sha, chunk, len);
    sts_cursor_close(c);
    if (r == STS_OK) sts_sha256_final(&sha, digest);
    return r;
}
STSDEF sts_result sts_archive_file_sha256(const sts_archive *a, size_t file, uint8_t digest[32], sts_error *err) {
    sts__arpart *p;
    sts_sha256 sha;
    sts_result r;
    if (!a || !digest || file >= a->nfiles)
        return sts__failx(err, STS_RULE_ARGUMENT, "sts_archive_file_sha256 needs an archive, a file and a digest");
    if ((r = sts__ar_part(a, file, &p, err)) != STS_OK) return r;
#ifndef STS_NO_STDIO
    if (a->files[file].path_size) {  /* a file on disk: read in 1 MiB pieces (measured faster than its mapping) */
        sts_archive *w = (sts_archive *)(uintptr_t)a;
        const char *path = a->files[file].path;
        size_t cap = (size_t)1 << 20;
        uint64_t at = 0, size;
        int fd, e = 0;
        uint8_t *buf;
        if ((r = sts__open_regular(path, &fd, &size, err)) != STS_OK) return r;
        if (size != p->size) {
            sts__close_fd(fd);
            return sts__failx(err, STS_RULE_IO, "%q changed size since it was opened (%U bytes, now %U)", path,
                              strlen(path), p->size, size);
        }
        if (!(buf = (uint8_t *)sts__alloc(&a->mem, cap))) {
            sts__close_fd(fd);
            return sts__nomem(err, "a read buffer");
        }
        sts_sha256_init(&sha);
        while (at < size && !e) {
            size_t n = size - at < cap ? (size_t)(size - at) : cap;
            if ((e = sts__pread_all(fd, buf, n, at)) == 0) sts_sha256_update(&sha, buf, n);
            STS__AR_ADD(&w->st_reads, 1);
            STS__AR_ADD(&w->st_bytes, n);
            at += n;
        }
        sts__free(&a->mem, buf, cap);
        sts__close_fd(fd);
        if (e) return sts__fail_errno(err, e, "read", path);
        sts_sha256_final(&sha, digest);
        return STS_OK;
    }
#endif
    if (p->base) { sts_sha256_memory(p->base, (size_t)p->size, digest); return STS_OK; }
    {
        size_t cap = (size_t)4 << 20;
        uint64_t at = 0;
        uint8_t *buf = (uint8_t *)sts__alloc(&a->mem, cap);
        if (!buf) return sts__nomem(err, "a read buffer");
        sts_sha256_init(&sha);
        while (at < p->size && r == STS_OK) {
            size_t n = p->size - at < cap ? (size_t)(p->size - at) : cap;
            if ((r = sts__ar_fetch(a, file, p, at, buf, n, err)) == STS_OK) sts_sha256_update(&sha, buf, n);
            at += n;
        }
        sts__free(&a->mem, buf, cap);
        if (r == STS_OK) sts_sha256_final(&sha, digest);
        return r;
    }
}

/* ---- materialise through a factory ---- */
/* Block types whose multi-byte fields can be put in the other byte order (the GGUF provider's table). */
STS__PRIVATE int sts__gg_can_swap(const sts_type *t);
STS__PRIVATE void sts__gg_swap_blocks(const sts_type *t, uint8_t *p, size_t n);
/* n units of `unit` bytes (2, 4 or 8) byte-reversed from src to dst (dst == src allowed). */
STS__PRIVATE void sts__swap_units(uint8_t *dst, const uint8_t *src, size_t n, unsigned unit) {
    size_t i;
    unsigned b;
    for (i = 0; i < n; i++, dst += unit, src += unit)
        for (b = 0; b < unit / 2; b++) {
            uint8_t x = src[b], y = src[unit - 1 - b];
            dst[b] = y;
            dst[unit - 1 - b] = x;
        }
}
STSDEF sts_result sts_archive_materialize(const sts_archive *a, const sts_tensor_desc *d, const sts_factory *f,
                                          const sts_materialize_options *o, sts_materialized *out, sts_error *err) {
    static const sts_materialize_options none = { STS_ZERO_COPY_PREFER, 0, STS_DTYPE_F32, STS_ROUND_TRUNCATE, NULL };
    const size_t piece = (size_t)1 << 20;
    const sts_type *tt;
    sts__arpart *p;
    uint64_t out_bytes, done;
    uint8_t *dst, *scratch = NULL;
    sts_sha256 sha;
    int host_be = sts__host_big_endian(), conv, hashed = 0, ok, dq = 0, swap_blocks;
    sts_result r;
    if (!f || !out) return sts__failx(err, STS_RULE_ARGUMENT, "sts_archive_materialize needs a factory and out");
    if (!o) o = &none;
    if ((r = sts__ar_desc_part(a, d, &p, err)) != STS_OK) return r;
    if ((unsigned)o->zero_copy > (unsigned)STS_ZERO_COPY_REQUIRE || (unsigned)o->rounding >= STS_ROUNDING_COUNT ||
        (o->convert && (unsigned)o->target >= (unsigned)STS_DTYPE_COUNT))
        return sts__failx(err, STS_RULE_ARGUMENT, "materialize options out of range for tensor %q", d->name,
                          d->name_len);
    conv = o->convert && o->target != d->type->dtype;
    tt = d->type;
    out_bytes = d->nbytes;
    if (conv) {
        /* a block type the dequantiser decodes: to F32, then through the codecs to the target */
        dq = d->type->dtype == STS_DTYPE_COUNT && !d->type->plain && sts_dequantize_supported(d->type->name);
        if (dq && o->target != STS_DTYPE_F32 && !sts_convert_supported(o->target, STS_DTYPE_F32))
            return sts__failx(err, STS_RULE_UNSUPPORTED, "tensor %q: %s decodes to F32, which does not convert to %s",
                              d->name, d->name_len, d->type->name, sts_dtype_name(o->target));
        if (!dq && (d->type->dtype == STS_DTYPE_COUNT || !sts_convert_supported(o->target, d->type->dtype)))
            return sts__failx(err, STS_RULE_UNSUPPORTED, "tensor %q: %s does not convert to %s", d->name, d->name_len,
                              d->type->name, sts_dtype_name(o->target));
        tt = sts_type_of(o->target);
        out_bytes = sts_type_bytes(tt, d->numel, &ok);
        if (o->target == STS_DTYPE_F32 && d->type->dtype == STS_DTYPE_C64) out_bytes *= 2;
        else if (o->target == STS_DTYPE_F64 && d->type->dtype == STS_DTYPE_C64) out_bytes *= 2;
        if (!ok || out_bytes > (uint64_t)((size_t)-1 >> 1))
            return sts__failx(err, STS_RULE_UNSUPPORTED, "tensor %q: %U elements of %s do not fit in memory", d->name,
                              d->name_len, d->numel, tt->name);
    }
    /* blocks are swapped field by field: to the host's order for a copy, to little-endian for the decoder */
    swap_blocks = !d->type->plain && d->type->block_bytes > 1 && (dq ? d->big_endian : d->big_endian != host_be);
    if (swap_blocks && !sts__gg_can_swap(d->type))
        return sts__failx(err, STS_RULE_UNSUPPORTED, "tensor %q: %s blocks are not swapped to the other byte order "
                          "(their layout has multi-byte fields this library does not swap)", d->name, d->name_len,
                          d->type->name);
    if (!conv && o->zero_copy != STS_ZERO_COPY_NEVER) {
        const char *why = sts__ar_no_view(a, d, p);
        if (!why && f->wrap) {
            const uint8_t *view = p->base + d->offset;
            if (o->sha256) {  /* hashed in place: no copy, one pass */
                sts_sha256_init(&sha);
                sts_sha256_update(&sha, view, (size_t)d->nbytes);
                if ((r = sts__ar_digest_check(d, sts__ar_label(a, d->file), &sha, o->sha256, err)) != STS_OK) return r;
                hashed = 1;
            }
            if (f->wrap(f->user, d, view)) {
                out->data = (void *)(uintptr_t)view;
                out->nbytes = d->nbytes;
                out->type = d->type;
                out->wrapped = 1;
                return STS_OK;
            }
            why = "the factory's wrap declined it";
        } else if (!why) {
            why = "the factory has no wrap";
        }
        if (o->zero_copy == STS_ZERO_COPY_REQUIRE)
            return sts__fail(err, STS_RULE_VIEW, d->offset, "no zero-copy view of tensor %q: %s", d->name, d->name_len,
                             why);
    }
    if (!f->allocate) return sts__failx(err, STS_RULE_ARGUMENT, "the factory has no allocate");
    if (d->nbytes > (uint64_t)((size_t)-1 >> 1))
        return sts__failx(err, STS_RULE_UNSUPPORTED, "tensor %q is too large for this address space", d->name,
                          d->name_len);
    if (!(dst = (uint8_t *)f->allocate(f->user, d, tt, out_bytes)))
        return sts__failx(err, STS_RULE_ALLOC, "the factory allocated nothing for the %U bytes of tensor %q", out_bytes,
                          d->name, d->name_len);
    if (o->sha256 && !hashed) sts_sha256_init(&sha);
    r = STS_OK;
    if (!conv) {  /* a copy: straight into dst, hashed there, swapped in place */
        unsigned unit = d->big_endian != host_be ? d->type->swap : 0;
        size_t step = unit ? piece / unit * unit : swap_blocks ? piece / d->type->block_bytes * d->type->block_bytes
                                                               : piece;
        for (done = 0; done < d->nbytes && r == STS_OK; done += step) {
            size_t n = d->nbytes - done < step ? (size_t)(d->nbytes - done) : step;
            r = sts__ar_fetch(a, d->file, p, d->offset + done, dst + done, n, err);
            if (r != STS_OK) break;
            if (o->sha256 && !hashed) sts_sha256_update(&sha, dst + done, n);
            if (unit > 1) sts__swap_units(dst + done, dst + done, n / unit, unit);
            if (swap_blocks) sts__gg_swap_blocks(d->type, dst + done, n / d->type->block_bytes);
        }
    } else if (dq) {  /* blocks decoded to F32 a piece of whole blocks at a time, then converted when asked */
        size_t bb = d->type->block_bytes, be = d->type->block_elems, per = piece / bb;
        size_t tbytes = (size_t)(out_bytes / (d->numel ? d->numel : 1)), fbytes = per * be * 4;
        uint64_t nblocks = d->nbytes / bb;
        uint8_t *f32 = NULL;
        if ((!p->base || d->big_endian) && !(scratch = (uint8_t *)sts__alloc(&a->mem, piece)))
            r = sts__nomem(err, "a buffer");
        if (r == STS_OK && o->target != STS_DTYPE_F32 && !(f32 = (uint8_t *)sts__alloc(&a->mem, fbytes)))
            r = sts__nomem(err, "a buffer");
        for (done = 0; done < nblocks && r == STS_OK; done += per) {
            size_t n = nblocks - done < per ? (size_t)(nblocks - done) : per, elems = n * be;
            const uint8_t *src;
            uint8_t *to = o->target == STS_DTYPE_F32 ? dst + done * be * 4 : f32;
            if (p->base) src = p->base + d->offset + done * bb;
            else {
                r = sts__ar_fetch(a, d->file, p, d->offset + done * bb, scratch, n * bb, err);
                if (r != STS_OK) break;
                src = scratch;
            }
            if (o->sha256 && !hashed) sts_sha256_update(&sha, src, n * bb);
            if (d->big_endian) {
                if (src != scratch) memcpy(scratch, src, n * bb);
                sts__gg_swap_blocks(d->type, scratch, n);
                src = scratch;
            }
            if (sts_dequantize((float *)(void *)to, src, d->type->name, elems) != STS_OK) {
                r = sts__failx(err, STS_RULE_UNSUPPORTED, "tensor %q: the %s decoder refused %z elements", d->name,
                               d->name_len, d->type->name, elems);
                break;
            }
            if (o->target == STS_DTYPE_F32) continue;
            if (host_be) sts__swap_units(f32, f32, elems, 4);  /* the codecs read little-endian */
            r = sts_convert_ex(dst + done * be * tbytes, o->target, f32, STS_DTYPE_F32, elems, o->rounding, err);
            if (r != STS_OK) break;
            if (host_be && tt->swap > 1) {
                uint8_t *q = dst + done * be * tbytes;
                sts__swap_units(q, q, elems * tbytes / tt->swap, tt->swap);
            }
        }
        sts__free(&a->mem, scratch, piece);
        sts__free(&a->mem, f32, fbytes);
    } else {  /* a conversion: the stored bytes (mapped, or read into scratch), little-endian, then the codec */
        size_t ebytes = d->type->bits / 8, tbytes = (size_t)(out_bytes / (d->numel ? d->numel : 1));
        size_t per = piece / ebytes;
        unsigned unit = d->type->swap;
        if ((!p->base || d->big_endian) && !(scratch = (uint8_t *)sts__alloc(&a->mem, piece)))
            r = sts__nomem(err, "a buffer");
        for (done = 0; done < d->numel && r == STS_OK; done += per) {
            size_t n = d->numel - done < per ? (size_t)(d->numel - done) : per;
            const uint8_t *src;
            if (p->base) src = p->base + d->offset + done * ebytes;
            else {
                r = sts__ar_fetch(a, d->file, p, d->offset + done * ebytes, scratch, n * ebytes, err);
                if (r != STS_OK) break;
                src = scratch;
            }
            if (o->sha256 && !hashed) sts_sha256_update(&sha, src, n * ebytes);
            if (d->big_endian && unit > 1) { sts__swap_units(scratch, src, n * ebytes / unit, unit); src = scratch; }
            r = sts_convert_ex(dst + done * tbytes, o->target, src, d->type->dtype, n, o->rounding, err);
            if (r != STS_OK) break;
            if (host_be && tt->swap > 1)
                sts__swap_units(dst + done * tbytes, dst + done * tbytes, n * tbytes / tt->swap, tt->swap);
        }
        sts__free(&a->mem, scratch, piece);
    }
    if (r == STS_OK && o->sha256 && !hashed)
        r = sts__ar_digest_check(d, sts__ar_label(a, d->file), &sha, o->sha256, err);
    if (r != STS_OK) {
        if (f->release) f->release(f->user, d, dst, out_bytes);
        return r;
    }
    out->data = dst;
    out->nbytes = out_bytes;
    out->type = tt;
    out->wrapped = 0;
    return STS_OK;
}

/* ---- reasons: a probe's sentence, bounded ---- */
STS__PRIVATE void sts__ar_reason(sts_probe_result *o, int supported, int confidence, const char *fmt, ...) {
    sts__buf b;
    va_list ap;
    o->supported = supported;
    o->confidence = confidence;
    b.p = o->reason; b.n = 0; b.cap = sizeof o->reason;
    o->reason[0] = 0;
    va_start(ap, fmt);
    sts__vformat(&b, fmt, ap);
    va_end(ap);
    sts__buf_trim(&b);
}
/* An error from a lower layer, its message prefixed with what it was about ("shard X: ..."). */
STS__PRIVATE sts_result sts__ar_about(sts_error *err, sts_result r, const char *what, const char *name) {
    if (err && r != STS_OK) {
        sts_error e = *err;
        const char *id = sts_rule_id(e.rule), *text = e.message;
        size_t n = strlen(id);
        if (strncmp(text, id, n) == 0 && text[n] == ':' && text[n + 1] == ' ') text += n + 2;  /* said once */
        sts__fail_code(err, e.code, e.rule, e.offset, "%s %q: %s", what, name, strlen(name), text);
    }
    return r;
}

/* ---- provider: one safetensors file ---- */
STS__PRIVATE void sts__st_probe(void *user, const sts_probe_input *in, sts_probe_result *o) {
    uint64_t n;
    size_t i;
    (void)user;
    if (in->is_dir) { sts__ar_reason(o, 0, 0, "a folder, not a file"); return; }
    if (in->prefix_len < 8) {
        sts__ar_reason(o, 1, 5, "%U bytes, too short for a header: the safetensors parser gives the verdict", in->size);
        return;
    }
    n = sts__le64(in->prefix);
    i = 8;
    while (i < in->prefix_len && i - 8 < n && STS__IS_WS(in->prefix[i])) i++;
    if (n < 2 || n > (uint64_t)STS_MAX_HEADER_SIZE || n > in->size - 8 || i >= in->prefix_len || in->prefix[i] != '{') {
        sts__ar_reason(o, 1, 5, "no safetensors header (length %U of %U bytes): the safetensors parser gives the "
                       "verdict", n, in->size);
        return;
    }
    sts__ar_reason(o, 1, 90, "a %U-byte header that opens a JSON object", n);
}
typedef struct sts__st_src { sts_builder *b; } sts__st_src;
STS__PRIVATE sts_result sts__st_read(void *user, uint64_t offset, void *dst, size_t len) {
    return sts_builder_read(((sts__st_src *)user)->b, offset, dst, len, NULL);
}
/* File `file`'s part from a parsed safetensors file: a descriptor per tensor, named by the entries. */
STS__PRIVATE void sts__st_desc(sts_tensor_desc *d, const sts_file *sf, const sts_tensor *t, size_t file) {
    memset(d, 0, sizeof *d);
    d->name = t->name;
    d->name_len = t->name_len;
    d->type = &sts__types[t->dtype];
    d->rank = t->rank;
    d->shape = d->format_shape = t->shape;
    d->numel = sts_tensor_numel(t);
    d->nbytes = t->end - t->begin;
    d->file = file;
    d->offset = sts_tensor_file_offset(sf, t);
    d->alignment = sts__ar_alignment(d->offset);
}
STS__PRIVATE sts_result sts__st_open(void *user, sts_builder *b, sts_error *err) {
    sts_archive *a = b->a;
    sts__arpart *p = a->files[0].part;
    sts_file *sf;
    sts_result r;
    size_t i;
    (void)user;
    if (p->base) r = sts_parse(p->base, (size_t)p->size, &a->opts, &sf, err);
    else {
        sts__st_src s;
        sts_source src;
        s.b = b;
        src.read = sts__st_read;
        src.user = &s;
        src.size = p->size;
        r = sts_open_source(&src, &a->opts, &sf, err);
    }
    if (r != STS_OK) return r;
    p->sf = sf;
    p->ndescs = p->descs_cap = sts_count(sf);  /* the descriptors come on first use */
    a->direct = sf;
    a->total = sf->file_size - 8 - sf->header_len;  /* the tensors tile the data section */
    for (i = 0; i < sts_metadata_count(sf); i++) {
        const sts_kv *kv = sts_metadata_at(sf, i);
        sts_meta m;
        memset(&m, 0, sizeof m);
        m.key = kv->key; m.key_len = kv->key_len;
        m.type = STS_META_STRING;
        m.str = kv->value; m.str_len = kv->value_len;
        if ((r = sts__ar_add_meta(a, &m, 0, err)) != STS_OK) return r;
    }
    return STS_OK;
}

/* ---- provider: .npy (NumPy's format, versions 1 to 3, C order) ---- */
static const struct { char code[3]; sts_dtype dtype; } sts__npy_types[] = {
    { "b1", STS_DTYPE_BOOL }, { "u1", STS_DTYPE_U8 }, { "i1", STS_DTYPE_I8 }, { "u2", STS_DTYPE_U16 },
    { "i2", STS_DTYPE_I16 }, { "u4", STS_DTYPE_U32 }, { "i4", STS_DTYPE_I32 }, { "u8", STS_DTYPE_U64 },
    { "i8", STS_DTYPE_I64 }, { "f2", STS_DTYPE_F16 }, { "f4", STS_DTYPE_F32 }, { "f8", STS_DTYPE_F64 },
    { "c8", STS_DTYPE_C64 },
};
#define STS__NPY_MAX_RANK 64
STS__PRIVATE void sts__npy_probe(void *user, const sts_probe_input *in, sts_probe_result *o) {
    (void)user;
    if (in->is_dir) { sts__ar_reason(o, 0, 0, "a folder, not a file"); return; }
    if (in->prefix_len < 8 || memcmp(in->prefix, "\x93NUMPY", 6) != 0) {
        sts__ar_reason(o, 0, 0, "no \\x93NUMPY magic");
        return;
    }
    o->version = in->prefix[6];
    if (in->prefix[6] < 1 || in->prefix[6] > 3) {
        sts__ar_reason(o, 1, 60, "the .npy magic with version %d.%d, which is not 1, 2 or 3 (open says so)",
                       (int)in->prefix[6], (int)in->prefix[7]);
        return;
    }
    sts__ar_reason(o, 1, 95, "the .npy magic, format version %d.%d", (int)in->prefix[6], (int)in->prefix[7]);
}
typedef struct sts__npy {
    const char *s, *end;
    const char *descr;
    size_t descr_len;
    int fortran, has_descr, has_fortran, has_shape;
    uint32_t rank;
    uint64_t shape[STS__NPY_MAX_RANK];
} sts__npy;
STS__PRIVATE void sts__npy_ws(sts__npy *x) { while (x->s < x->end && (*x->s == ' ' || *x->s == '\t')) x->s++; }
STS__PRIVATE int sts__npy_str(sts__npy *x, const char **p, size_t *n) {  /* a quoted literal without escapes */
    char q;
    const char *st;
    sts__npy_ws(x);
    if (x->s >= x->end || (*x->s != '\'' && *x->s != '"')) return 0;
    q = *x->s++;
    st = x->s;
    while (x->s < x->end && *x->s != q) { if (*x->s == '\\') return 0; x->s++; }
    if (x->s >= x->end) return 0;
    *p = st;
    *n = (size_t)(x->s - st);
    x->s++;
    return 1;
}
STS__PRIVATE int sts__npy_lit(sts__npy *x, const char *w) {
    size_t n = strlen(w);
    sts__npy_ws(x);
    if ((size_t)(x->end - x->s) < n || memcmp(x->s, w, n) != 0) return 0;
    x->s += n;
    return 1;
}
/* The header dict: {'descr': '<f4', 'fortran_order': False, 'shape': (2, 3), } in any key order. */
STS__PRIVATE const char *sts__npy_dict(sts__npy *x) {
    if (!sts__npy_lit(x, "{")) return "the header is not a dict";
    for (;;) {
        const char *k;
        size_t kn;
        if (sts__npy_lit(x, "}")) break;
        if (!sts__npy_str(x, &k, &kn)) return "a dict key is not a quoted string";
        if (!sts__npy_lit(x, ":")) return "a dict key has no ':'";
        if (kn == 5 && memcmp(k, "descr", 5) == 0) {
            if (x->has_descr++) return "descr appears twice";
            if (!sts__npy_str(x, &x->descr, &x->descr_len)) return "descr is not a string (structured dtypes are "
                                                                   "not supported)";
        } else if (kn == 13 && memcmp(k, "fortran_order", 13) == 0) {
            if (x->has_fortran++) return "fortran_order appears twice";
            if (sts__npy_lit(x, "True")) x->fortran = 1;
            else if (!sts__npy_lit(x, "False")) return "fortran_order is not True or False";
        } else if (kn == 5 && memcmp(k, "shape", 5) == 0) {
            if (x->has_shape++) return "shape appears twice";
            if (!sts__npy_lit(x, "(")) return "shape is not a tuple";
            for (;;) {
                uint64_t v;
                size_t used;
                int big;
                if (sts__npy_lit(x, ")")) break;
                sts__npy_ws(x);
                used = sts__dec_u64((const uint8_t *)x->s, (const uint8_t *)x->end, &v, &big);
                if (!used || big) return "a shape dimension is not an integer below 2^64";
                if (used > 1 && *x->s == '0') return "a shape dimension has a leading zero";
                if (x->rank >= STS__NPY_MAX_RANK) return "the shape has more than 64 dimensions";
                x->shape[x->rank++] = v;
                x->s += used;
                if (sts__npy_lit(x, ",")) continue;
                if (sts__npy_lit(x, ")")) break;
                return "the shape tuple is malformed";
            }
        } else {
            return "the dict has a key other than descr, fortran_order and shape";
        }
        if (sts__npy_lit(x, ",")) continue;
        if (sts__npy_lit(x, "}")) break;
        return "the dict is malformed (expected ',' or '}')";
    }
    while (x->s < x->end && (*x->s == ' ' || *x->s == '\t' || *x->s == '\n')) x->s++;
    if (x->s != x->end) return "bytes other than spaces and a newline follow the dict";
    if (!x->has_descr || !x->has_fortran || !x->has_shape) return "descr, fortran_order or shape is missing";
    return NULL;
}
STS__PRIVATE sts_result sts__npy_open(void *user, sts_builder *b, sts_error *err) {
    sts_archive *a = b->a;
    uint8_t pre[12];
    uint64_t size = sts_builder_size(b), hlen, data_at, numel = 1;
    size_t lensz, i;
    char *text;
    sts__npy x;
    const char *why;
    sts_tensor_desc d;
    sts_dtype dt = STS_DTYPE_COUNT;
    sts_result r;
    int ok;
    (void)user;
    if (size < 10 || (r = sts_builder_read(b, 0, pre, size < 12 ? 10 : 12, err)) != STS_OK)
        return size < 10 ? sts__fail(err, STS_RULE_NPY_HEADER, 0, "%U bytes are too short for a .npy header", size)
                         : r;
    if (memcmp(pre, "\x93NUMPY", 6) != 0) return sts__fail(err, STS_RULE_NPY_HEADER, 0, "no \\x93NUMPY magic");
    if (pre[6] < 1 || pre[6] > 3)
        return sts__fail(err, STS_RULE_NPY_HEADER, 6, "format version %d.%d is not 1, 2 or 3", (int)pre[6],
                         (int)pre[7]);
    sts_builder_set_version(b, pre[6]);
    lensz = pre[6] == 1 ? 2 : 4;
    if (lensz == 4 && size < 12) return sts__fail(err, STS_RULE_NPY_HEADER, 8, "the header length is cut off");
    hlen = lensz == 2 ? (uint64_t)pre[8] | (uint64_t)pre[9] << 8
                      : (uint64_t)pre[8] | (uint64_t)pre[9] << 8 | (uint64_t)pre[10] << 16 | (uint64_t)pre[11] << 24;
    data_at = 8 + lensz + hlen;
    if (data_at > size) return sts__fail(err, STS_RULE_NPY_HEADER, 8, "the %U-byte header runs past the end of the "
                                         "%U-byte file", hlen, size);
    if (hlen > ((uint64_t)1 << 24)) return sts__fail(err, STS_RULE_NPY_HEADER, 8, "a %U-byte header is over 16 MiB",
                                                     hlen);
    if (!(text = (char *)sts__ar_alloc(a, (size_t)hlen + 1))) return sts__nomem(err, "the .npy header");
    if ((r = sts_builder_read(b, 8 + lensz, text, (size_t)hlen, err)) != STS_OK) return r;
    if (sts__utf8_check((const uint8_t *)text, (size_t)hlen) != hlen)
        return sts__fail(err, STS_RULE_NPY_HEADER, 8 + lensz, "the header is not %s text", pre[6] == 3 ? "UTF-8"
                                                                                                      : "ASCII");
    memset(&x, 0, sizeof x);
    x.s = text;
    x.end = text + hlen;
    if ((why = sts__npy_dict(&x)) != NULL)
        return sts__fail(err, STS_RULE_NPY_HEADER, 8 + lensz + (uint64_t)(x.s - text), "%s", why);
    if (x.fortran)
        return sts__fail(err, STS_RULE_NPY_FORTRAN, 8 + lensz, "the array is in Fortran order; only C order is read");
    if (x.descr_len == 3 && (x.descr[0] == '<' || x.descr[0] == '>' || x.descr[0] == '|'))
        for (i = 0; i < sizeof sts__npy_types / sizeof sts__npy_types[0]; i++)
            if (memcmp(x.descr + 1, sts__npy_types[i].code, 2) == 0) dt = sts__npy_types[i].dtype;
    if (dt == STS_DTYPE_COUNT || (x.descr[0] == '|' && sts_dtype_bits(dt) > 8))
        return sts__fail(err, STS_RULE_UNSUPPORTED, 8 + lensz, "descr %q is not a supported element type (b1, i1..i8, "
                         "u1..u8, f2, f4, f8, c8 with '<', '>' or '|')", x.descr, x.descr_len);
    memset(&d, 0, sizeof d);
    for (i = 0; i < x.rank; i++)
        if (!sts__mul64(numel, x.shape[i], &numel))
            return sts__fail(err, STS_RULE_NPY_HEADER, 8 + lensz, "the shape %S overflows 64 bits", x.shape,
                             (size_t)x.rank);
    d.type = &sts__types[dt];
    d.nbytes = sts_type_bytes(d.type, numel, &ok);
    if (!ok || d.nbytes != size - data_at)
        return sts__fail(err, STS_RULE_NPY_HEADER, data_at, "the shape %S of %s needs %U data bytes, the file has %U",
                         x.shape, (size_t)x.rank, d.type->name, ok ? d.nbytes : UINT64_MAX, size - data_at);
    if (b->path) {  /* named after the file: "w.npy" holds "w" */
        const char *base = strrchr(b->path, '/'), *dot;
        base = base ? base + 1 : b->path;
        dot = strrchr(base, '.');
        d.name = base;
        d.name_len = dot && dot != base ? (size_t)(dot - base) : strlen(base);
    } else {
        d.name = "array";
        d.name_len = 5;
    }
    d.rank = x.rank;
    d.shape = x.shape;
    d.numel = numel;
    d.offset = data_at;
    d.big_endian = x.descr[0] == '>' && d.type->swap > 1;
    return sts_builder_add_tensor(b, &d, err);
}

#ifndef STS_NO_STDIO
/* ---- lazy shards: sharded checkpoints and datasets ---- */
/* Opens shard `file` (validated as any safetensors file) and gives each of its entries a descriptor. */
STS__PRIVATE sts_result sts__ar_load_shard(sts_archive *a, size_t file, sts__arpart **out, sts_error *err) {
    const sts__arfile *fl = &a->files[file];
    sts__arpart *p;
    sts_file *sf;
    sts_result r;
    size_t k, i;
    sts_rule rule = a->allow_extra ? STS_RULE_DATASET_INDEX : STS_RULE_SHARDED_SHARD;
    sts_options o = a->opts;
    o.header_only = 0;  /* a shard is mapped (or read whole): its tensors are views */
    if ((r = sts_open(fl->path, &o, &sf, err)) != STS_OK) return sts__ar_about(err, r, "shard", fl->path);
    STS__AR_ADD(&a->st_opened, 1);
    if (!(p = sts__ar_part_new(a))) { sts_close(sf); return sts__nomem(err, "a shard"); }
    p->sf = sf;
    p->size = sf->file_size;
    p->base = sf->data ? sf->data - 8 - sf->header_len : NULL;
    if (fl->count && !(p->descs = (sts_tensor_desc *)sts__alloc(&a->mem, fl->count * sizeof *p->descs))) {
        sts__ar_part_free(a, p);
        return sts__nomem(err, "a shard's tensor table");
    }
    p->ndescs = p->descs_cap = fl->count;
    for (k = 0; k < fl->count; k++) {
        size_t ei = a->order[fl->first + k];
        const sts__arent *e = &a->ents[ei];
        const sts_tensor *t = sts_find(sf, e->inner, e->inner_len);
        if (!t) {
            sts__ar_part_free(a, p);
            return sts__failx(err, rule, "the index puts tensor %q in shard %q, which does not hold it", e->name,
                              e->name_len, fl->path, strlen(fl->path));
        }
        sts__st_desc(&p->descs[k], sf, t, file);
        p->descs[k].name = e->name;
        p->descs[k].name_len = e->name_len;
        p->descs[k].index = ei;
    }
    if (!a->allow_extra && sts_count(sf) != fl->count)
        for (i = 0; i < sts_count(sf); i++) {
            const sts_tensor *t = sts_at(sf, i);
            size_t ei = sts__ar_lookup(a, t->name, t->name_len);
            if (ei == (size_t)-1 || a->ents[ei].file != file) {
                sts_result rr = sts__failx(err, rule, ei == (size_t)-1
                                           ? "shard %q holds tensor %q, which the index does not list"
                                           : "shard %q holds tensor %q, which the index puts in another shard",
                                           fl->path, strlen(fl->path), t->name, t->name_len);
                sts__ar_part_free(a, p);
                return rr;
            }
        }
    *out = p;
    return STS_OK;
}
/* A shard file name of an index: a file in the index's folder. */
STS__PRIVATE int sts__ar_plain_name(const char *s, size_t n) {
    if (n == 0 || (n == 1 && s[0] == '.') || (n == 2 && s[0] == '.' && s[1] == '.')) return 0;
    return memchr(s, '/', n) == NULL && memchr(s, 0, n) == NULL;
}
/* The folder of a path ("." when it has none), allocated. */
STS__PRIVATE char *sts__ar_dirname(sts_archive *a, const char *path) {
    const char *slash = strrchr(path, '/');
    if (!slash) return sts__ar_strdup(a, ".", 1);
    return sts__ar_strdup(a, path, slash == path ? 1 : (size_t)(slash - path));
}
typedef struct sts__shname { const char *name; size_t len; uint64_t hash; } sts__shname;

/* A number token "-digits" that fits int64_t. */
STS__PRIVATE int sts__jdoc_neg(const sts__jdoc *d, uint32_t t, int64_t *v) {
    const sts__jtok *tk = &d->tok[t];
    uint64_t x;
    int big;
    if (tk->len < 2 || sts__dec_u64(d->text + tk->at + 1, d->text + tk->at + tk->len, &x, &big) != tk->len - 1 || big ||
        x > (uint64_t)INT64_MAX + 1)
        return 0;
    *v = x == (uint64_t)INT64_MAX + 1 ? INT64_MIN : -(int64_t)x;
    return 1;
}
/* ---- provider: sharded checkpoints (model.safetensors.index.json, _tensor_index.json) ---- */
static const char sts__hf_index[] = "model.safetensors.index.json";
static const char sts__our_index[] = "_tensor_index.json";
STS__PRIVATE int sts__ar_has(const char *dir, const char *name) {
    sts__mem m;
    size_t sz;
    char *p;
    int kind;
    memset(&m, 0, sizeof m);
    if (!(p = sts__join(&m, dir, name, &sz))) return 0;
    kind = sts__path_kind(p);
    sts__free(&m, p, sz);
    return kind == STS__FT_REG;
}
STS__PRIVATE int sts__ar_find_bytes(const uint8_t *p, size_t n, const char *w) {
    size_t k = strlen(w), i;
    for (i = 0; i + k <= n; i++) if (memcmp(p + i, w, k) == 0) return 1;
    return 0;
}
STS__PRIVATE void sts__sh_probe(void *user, const sts_probe_input *in, sts_probe_result *o) {
    size_t i = 0;
    (void)user;
    if (in->is_dir) {
        if (sts__ar_has(in->path, sts__hf_index)) sts__ar_reason(o, 1, 90, "a folder with %s", sts__hf_index);
        else if (sts__ar_has(in->path, sts__our_index))
            sts__ar_reason(o, 1, 60, "a folder with %s", sts__our_index);
        else sts__ar_reason(o, 0, 0, "a folder without %s or %s", sts__hf_index, sts__our_index);
        return;
    }
    while (i < in->prefix_len && STS__IS_WS(in->prefix[i])) i++;
    if (i >= in->prefix_len || in->prefix[i] != '{') { sts__ar_reason(o, 0, 0, "not a JSON object"); return; }
    if (sts__ar_find_bytes(in->prefix, in->prefix_len, "\"weight_map\""))
        sts__ar_reason(o, 1, 85, "a JSON object with a weight_map");
    else sts__ar_reason(o, 1, 20, "a JSON object without weight_map in its first %z bytes", in->prefix_len);
}
/* A JSON scalar of the index's metadata as a typed entry (objects and arrays: their JSON text). */
STS__PRIVATE sts_result sts__sh_meta(sts_archive *a, const sts__jdoc *d, uint32_t k, sts_error *err) {
    const sts__jtok *kt = &d->tok[k], *vt = &d->tok[k + 1];
    sts_meta m;
    char *kb, *vb;
    memset(&m, 0, sizeof m);
    if (!(kb = (char *)sts__ar_alloc(a, kt->len + 1))) return sts__nomem(err, "a metadata key");
    m.key = sts__jdoc_str(d, k, kb, &m.key_len);
    switch (vt->type) {
    case '"':
        if (!(vb = (char *)sts__ar_alloc(a, vt->len + 1))) return sts__nomem(err, "a metadata value");
        m.type = STS_META_STRING;
        m.str = sts__jdoc_str(d, k + 1, vb, &m.str_len);
        break;
    case '0':
        if (sts__jdoc_u64(d, k + 1, &m.u)) m.type = STS_META_UINT;
        else if (vt->len > 1 && d->text[vt->at] == '-' && sts__jdoc_neg(d, k + 1, &m.i)) m.type = STS_META_INT;
        else {
            char num[64];
            size_t n = vt->len < sizeof num - 1 ? vt->len : sizeof num - 1;
            memcpy(num, d->text + vt->at, n);
            num[n] = 0;
            m.type = STS_META_FLOAT;
            m.f = strtod(num, NULL);
        }
        break;
    case 't': case 'f': m.type = STS_META_BOOL; m.u = vt->type == 't'; break;
    case 'n': return STS_OK;
    default: return STS_OK;  /* nested objects and arrays are not metadata values here */
    }
    return sts__ar_add_meta(a, &m, 0, err);
}
STS__PRIVATE sts_result sts__sh_open(void *user, sts_builder *b, sts_error *err) {
    sts_archive *a = b->a;
    const char *label;
    char *text = NULL, *dir;
    size_t len = 0, i, nsh = 0, shcap = 0, mapcount;
    sts__jdoc d;
    sts__index shix;
    sts__names kn;
    sts__shname *sh = NULL;
    uint32_t wm, meta, k;
    uint64_t ts;
    sts_result r;
    (void)user;
    memset(&shix, 0, sizeof shix);
    if (b->is_dir) {  /* the folder's index: Hugging Face's, else ours */
        size_t sz;
        char *ip = sts__join(&a->mem, b->path, sts__ar_has(b->path, sts__hf_index) ? sts__hf_index : sts__our_index,
                             &sz);
        if (!ip) return sts__nomem(err, "a path");
        label = sts__ar_strdup(a, ip, sz - 1);
        r = label ? sts__read_file(&a->mem, ip, &text, &len, err) : sts__nomem(err, "a path");
        sts__free(&a->mem, ip, sz);
        if (r != STS_OK) return r;
        STS__AR_ADD(&a->st_opened, 1);
        dir = sts__ar_strdup(a, b->path, strlen(b->path));
    } else {
        uint64_t size = sts_builder_size(b);
        label = b->path ? b->path : a->files[0].path;
        if (!b->path) return sts__failx(err, STS_RULE_UNSUPPORTED, "a sharded checkpoint's index must be a path (its "
                                        "shards are files beside it)");
        if (size > ((uint64_t)1 << 30)) return sts__failx(err, STS_RULE_SHARDED_INDEX, "%q is over 1 GiB", label,
                                                          strlen(label));
        if (!(text = (char *)sts__alloc(&a->mem, (size_t)size + 1))) return sts__nomem(err, "the index");
        len = (size_t)size;
        text[len] = 0;
        if ((r = sts_builder_read(b, 0, text, len, err)) != STS_OK) { sts__free(&a->mem, text, len + 1); return r; }
        dir = sts__ar_dirname(a, b->path);
    }
    if (!dir || !label) { sts__free(&a->mem, text, len + 1); return sts__nomem(err, "a path"); }
    /* the index replaces the input: the archive's files are its shards */
    for (i = 0; i < a->nfiles; i++) { sts__ar_part_free(a, a->files[i].part); a->files[i].part = NULL; }
    for (i = 0; i < a->nfiles; i++)
        if (a->files[i].path_size) sts__free(&a->mem, a->files[i].path, a->files[i].path_size);
    a->nfiles = 0;
    r = sts__jdoc_parse(&d, text, len, &a->mem, label, STS_RULE_SHARDED_INDEX, err);
    if (r != STS_OK) { sts__free(&a->mem, text, len + 1); return r; }
    /* the text stays: names point into it (or into unescaped copies) */
    a->text = text;  /* freed with the archive, not copied */
    a->text_size = len + 1;
    len = (size_t)-1;
    if (d.tok[0].type != '{') { r = sts__failx(err, STS_RULE_SHARDED_INDEX, "%q is not a JSON object", label,
                                                strlen(label)); goto done; }
    wm = sts__jdoc_get(&d, 0, "weight_map");
    if (!wm || d.tok[wm].type != '{') {
        r = sts__failx(err, STS_RULE_SHARDED_INDEX, "%q has no weight_map object", label, strlen(label));
        goto done;
    }
    if ((meta = sts__jdoc_get(&d, 0, "metadata")) != 0) {
        if (d.tok[meta].type != '{') {
            r = sts__failx(err, STS_RULE_SHARDED_INDEX, "%q: metadata is not an object", label, strlen(label));
            goto done;
        }
        for (i = 0, k = meta + 1; i < d.tok[meta].count; i++, k = sts__jdoc_next(&d, k + 1))
            if ((r = sts__sh_meta(a, &d, k, err)) != STS_OK) goto done;
    }
    mapcount = d.tok[wm].count;
    kn.items = NULL;
    if (!sts__index_init(&a->mem, &shix, mapcount ? mapcount : 1)) {
        r = sts__nomem(err, "the shard table");
        goto done;
    }
    for (i = 0, k = wm + 1; i < mapcount; i++, k = sts__jdoc_next(&d, k + 1)) {
        char *nb, *fb;
        const char *name, *file;
        size_t nlen, flen, pos;
        uint64_t h;
        if (d.tok[k + 1].type != '"') {
            r = sts__fail(err, STS_RULE_SHARDED_INDEX, d.tok[k + 1].at, "%q: weight_map values are file names",
                          label, strlen(label));
            goto done;
        }
        nb = fb = NULL;  /* a buffer only for an escaped string: the others are read in place */
        if ((d.tok[k].esc && !(nb = (char *)sts__ar_alloc(a, d.tok[k].len + 1))) ||
            (d.tok[k + 1].esc && !(fb = (char *)sts__ar_alloc(a, d.tok[k + 1].len + 1)))) {
            r = sts__nomem(err, "a name");
            goto done;
        }
        name = sts__jdoc_str(&d, k, nb, &nlen);
        file = sts__jdoc_str(&d, k + 1, fb, &flen);
        if (!sts__ar_plain_name(file, flen)) {
            r = sts__fail(err, STS_RULE_SHARDED_INDEX, d.tok[k + 1].at, "%q: shard %q of tensor %q is not a file name "
                          "in the index's folder", label, strlen(label), file, flen, name, nlen);
            goto done;
        }
        kn.items = sh; kn.stride = sizeof *sh; kn.ptr_off = offsetof(sts__shname, name);
        kn.len_off = offsetof(sts__shname, len); kn.hashes = sh ? (const char *)sh + offsetof(sts__shname, hash) : NULL;
        kn.hash_stride = sizeof *sh;
        h = sts__hash(file, flen, 0x5eed);
        pos = sh ? sts__index_probe(&shix, &kn, h, file, flen) : (size_t)h & shix.mask;
        if (shix.slots[pos] == STS__EMPTY) {  /* a new shard */
            char *path;
            size_t psz, dl = strlen(dir);
            if (!sts__grow(&a->mem, (void **)&sh, &shcap, nsh + 1, sizeof *sh) ||
                !(path = (char *)sts__alloc(&a->mem, (psz = dl + 1 + flen + 1)))) {
                r = sts__nomem(err, "the shard table");
                goto done;
            }
            memcpy(path, dir, dl);
            path[dl] = '/';
            memcpy(path + dl + 1, file, flen);
            path[dl + 1 + flen] = 0;
            if ((r = sts__ar_add_file(a, path, psz, err)) != STS_OK) goto done;
            sh[nsh].name = file; sh[nsh].len = flen; sh[nsh].hash = h;
            shix.slots[pos] = (uint32_t)nsh++;
        }
        if ((r = sts__ar_add_ent(a, name, nlen, NULL, 0, shix.slots[pos], err)) != STS_OK) goto done;
    }
    if ((r = sts__ar_index(a, STS_RULE_SHARDED_INDEX, err)) != STS_OK) goto done;
    if ((r = sts__ar_group(a, err)) != STS_OK) goto done;
    a->load = sts__ar_load_shard;
    {
        const sts_meta *t = sts_archive_meta_find(a, "total_size", 10);
        ts = t && t->type == STS_META_UINT ? t->u : 0;
        a->total = ts;
    }
    r = STS_OK;
done:
    sts__index_free(&a->mem, &shix);
    sts__free(&a->mem, sh, shcap * sizeof *sh);
    sts__jdoc_free(&d);
    if (len != (size_t)-1) sts__free(&a->mem, text, len + 1);
    return r;
}

/* ---- provider: our datasets (a folder with dataset_manifest.json) ---- */
STS__PRIVATE void sts__ds_probe(void *user, const sts_probe_input *in, sts_probe_result *o) {
    (void)user;
    if (!in->is_dir) { sts__ar_reason(o, 0, 0, "a file, not a dataset folder"); return; }
    if (sts__ar_has(in->path, STS__MANIFEST)) sts__ar_reason(o, 1, 95, "a folder with %s", STS__MANIFEST);
    else sts__ar_reason(o, 0, 0, "a folder without %s", STS__MANIFEST);
}
STS__PRIVATE sts_result sts__ds_ar_open(void *user, sts_builder *b, sts_error *err) {
    sts_archive *a = b->a;
    sts_dataset *ds;
    sts_read_config cfg;
    sts_scan_spec spec;
    sts_scan *sc = NULL;             /* sts_scan_open leaves it unset when it fails */
    sts_dataset_info info;
    const sts_view *cells;
    size_t ncells, i;
    sts_result r;
    (void)user;
    if (!b->is_dir) return sts__failx(err, STS_RULE_ARGUMENT, "a dataset is a folder");
    memset(&cfg, 0, sizeof cfg);
    cfg.infer_schema = 1;
    if ((r = sts_dataset_open(b->path, &cfg, &a->opts, &ds, err)) != STS_OK) return r;
    info = sts_dataset_describe(ds);
    for (i = 0; i < info.files && r == STS_OK; i++) {
        const char *fn = sts_dataset_file(ds, i);
        size_t sz;
        char *p = sts__join(&a->mem, b->path, fn, &sz);
        r = p ? sts__ar_add_file(a, p, sz, err) : sts__nomem(err, "a path");
    }
    memset(&spec, 0, sizeof spec);
    spec.long_form = 1;
    if (r == STS_OK) r = sts_scan_open(ds, &spec, &sc, err);
    while (r == STS_OK && (r = sts_scan_next(sc, &cells, &ncells, err)) == STS_OK && cells) {
        const char *fn = sts_dataset_file(ds, cells->file), *key, *inner;
        size_t fl = strlen(fn), il, kl = cells->key_len;
        /* batch mode: the scan gives the column, the key is "<shard>/<column>" */
        int prefix = !info.kv && !(kl > fl && memcmp(cells->key, fn, fl) == 0 && cells->key[fl] == '/');
        char *kc = (char *)sts__ar_alloc(a, (prefix ? fl + 1 : 0) + kl + 1);
        if (!kc) { r = sts__nomem(err, "a key"); break; }
        if (prefix) { memcpy(kc, fn, fl); kc[fl] = '/'; }
        memcpy(kc + (prefix ? fl + 1 : 0), cells->key, kl);
        kl += prefix ? fl + 1 : 0;
        kc[kl] = 0;
        key = inner = kc;
        il = kl;
        if (!info.kv) { inner = key + fl + 1; il -= fl + 1; }
        r = sts__ar_add_ent(a, key, kl, inner, il, cells->file, err);
        if (r == STS_OK) a->total += cells->nbytes;
    }
    sts_scan_close(sc);
    sts_dataset_close(ds);
    STS__AR_ADD(&a->st_opened, 1);
    if (r != STS_OK) return r;
    a->allow_extra = 1;
    if ((r = sts__ar_index(a, STS_RULE_DATASET_INDEX, err)) != STS_OK) return r;
    if ((r = sts__ar_group(a, err)) != STS_OK) return r;
    a->load = sts__ar_load_shard;
    {
        sts_meta m;
        memset(&m, 0, sizeof m);
        m.key = "mode"; m.key_len = 4; m.type = STS_META_STRING;
        m.str = info.kv ? "kv" : "batch"; m.str_len = info.kv ? 2 : 5;
        if ((r = sts__ar_add_meta(a, &m, 0, err)) != STS_OK) return r;
        m.key = "total_samples"; m.key_len = 13; m.type = STS_META_UINT; m.u = info.total_samples;
        if ((r = sts__ar_add_meta(a, &m, 0, err)) != STS_OK) return r;
    }
    return STS_OK;
}
#endif /* STS_NO_STDIO */

/* >>gguf ---- GGUF v2/v3: ggml's types, a validated reader in both byte orders ----
   The layout, the type table and every rule are in format/SPECIFICATION.md section 15. The checks
   are ggml's loader's (ggml/src/gguf.cpp), in its order, plus what it misses (products that wrap,
   padded sizes that overflow) and, under strict, what gguf.md forbids but ggml accepts. The header
   is read where it lies when the source is mapped or in memory; otherwise through sts_builder_read
   in chunks (the probed prefix, then 128 KiB doubling to 4 MiB, each no longer than the counts
   prove the header to be: nothing past the header is read) that the archive keeps until it
   closes. Keys, strings and names point into those bytes and are never copied: an array of 128k
   strings costs one block of 128k sts_meta items and no string copies. */

/* ggml's element types by id (ggml.h's enum, ggml.c's type traits). Removed ids have no name.
   align is the C alignment of ggml's block struct (ggml_half2 is a uint32_t); plain types map to
   their sts_dtype. */
#define STS__GG_PLAIN(nm, bits, dt) { nm, 1, bits, 1, (bits) / 8, (bits) / 8, (bits) > 8 ? (bits) / 8 : 0, dt }
#define STS__GG_BLOCK(nm, elems, bytes, al) { nm, 0, 0, elems, bytes, al, 0, STS_DTYPE_COUNT }
#define STS__GG_GONE { NULL, 0, 0, 0, 0, 0, 0, STS_DTYPE_COUNT }
#define STS__GG_NTYPES 40u
static const sts_type sts__gg_types[STS__GG_NTYPES] = {
    STS__GG_PLAIN("F32", 32, STS_DTYPE_F32), STS__GG_PLAIN("F16", 16, STS_DTYPE_F16),          /* 0, 1 */
    STS__GG_BLOCK("Q4_0", 32, 18, 2), STS__GG_BLOCK("Q4_1", 32, 20, 4),                      /* 2, 3 */
    STS__GG_GONE, STS__GG_GONE,                                                              /* 4, 5 */
    STS__GG_BLOCK("Q5_0", 32, 22, 2), STS__GG_BLOCK("Q5_1", 32, 24, 4),                      /* 6, 7 */
    STS__GG_BLOCK("Q8_0", 32, 34, 2), STS__GG_BLOCK("Q8_1", 32, 36, 4),                      /* 8, 9 */
    STS__GG_BLOCK("Q2_K", 256, 84, 4), STS__GG_BLOCK("Q3_K", 256, 110, 2),                   /* 10, 11 */
    STS__GG_BLOCK("Q4_K", 256, 144, 4), STS__GG_BLOCK("Q5_K", 256, 176, 4),                  /* 12, 13 */
    STS__GG_BLOCK("Q6_K", 256, 210, 2), STS__GG_BLOCK("Q8_K", 256, 292, 4),                  /* 14, 15 */
    STS__GG_BLOCK("IQ2_XXS", 256, 66, 2), STS__GG_BLOCK("IQ2_XS", 256, 74, 2),               /* 16, 17 */
    STS__GG_BLOCK("IQ3_XXS", 256, 98, 2), STS__GG_BLOCK("IQ1_S", 256, 50, 2),                /* 18, 19 */
    STS__GG_BLOCK("IQ4_NL", 32, 18, 2), STS__GG_BLOCK("IQ3_S", 256, 110, 2),                 /* 20, 21 */
    STS__GG_BLOCK("IQ2_S", 256, 82, 2), STS__GG_BLOCK("IQ4_XS", 256, 136, 2),                /* 22, 23 */
    STS__GG_PLAIN("I8", 8, STS_DTYPE_I8), STS__GG_PLAIN("I16", 16, STS_DTYPE_I16),           /* 24, 25 */
    STS__GG_PLAIN("I32", 32, STS_DTYPE_I32), STS__GG_PLAIN("I64", 64, STS_DTYPE_I64),        /* 26, 27 */
    STS__GG_PLAIN("F64", 64, STS_DTYPE_F64), STS__GG_BLOCK("IQ1_M", 256, 56, 1),             /* 28, 29 */
    STS__GG_PLAIN("BF16", 16, STS_DTYPE_BF16), STS__GG_GONE, STS__GG_GONE, STS__GG_GONE,     /* 30 .. 33 */
    STS__GG_BLOCK("TQ1_0", 256, 54, 2), STS__GG_BLOCK("TQ2_0", 256, 66, 2),                  /* 34, 35 */
    STS__GG_GONE, STS__GG_GONE, STS__GG_GONE, STS__GG_BLOCK("MXFP4", 32, 17, 1),             /* 36 .. 39 */
};
static const char *const sts__gg_gone[STS__GG_NTYPES] = {  /* the removed ids' old names, for messages */
    NULL, NULL, NULL, NULL, "Q4_2", "Q4_3", NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL,
    NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, "Q4_0_4_4", "Q4_0_4_8",
    "Q4_0_8_8", NULL, NULL, "IQ4_NL_4_4", "IQ4_NL_4_8", "IQ4_NL_8_8", NULL,
};
/* The byte-swapping of a block type's multi-byte fields (offset, size), for big-endian files;
   NULL when ggml's layout has none (MXFP4) or has fields not listed here (the type is then not
   swapped: materialising it in the other byte order is refused). */
typedef struct sts__gg_field { uint16_t at, size; } sts__gg_field;
static const sts__gg_field sts__gg_f_d[] = { { 0, 2 }, { 0, 0 } };
static const sts__gg_field sts__gg_f_dm[] = { { 0, 2 }, { 2, 2 }, { 0, 0 } };
static const sts__gg_field sts__gg_f_q5_0[] = { { 0, 2 }, { 2, 4 }, { 0, 0 } };    /* d, qh as ggml's uint32 */
static const sts__gg_field sts__gg_f_q5_1[] = { { 0, 2 }, { 2, 2 }, { 4, 4 }, { 0, 0 } };
static const sts__gg_field sts__gg_f_q2_k[] = { { 80, 2 }, { 82, 2 }, { 0, 0 } };
static const sts__gg_field sts__gg_f_q3_k[] = { { 108, 2 }, { 0, 0 } };
static const sts__gg_field sts__gg_f_q6_k[] = { { 208, 2 }, { 0, 0 } };
static const sts__gg_field sts__gg_f_none[] = { { 0, 0 } };
/* 1 and *fields when type t's blocks can be swapped (fields NULL: nothing to swap); 0 when not. */
STS__PRIVATE int sts__gg_swappable(const sts_type *t, const sts__gg_field **fields) {
    size_t id;
    if (t < sts__gg_types || t >= sts__gg_types + STS__GG_NTYPES) return 0;
    switch (id = (size_t)(t - sts__gg_types)) {
    case 2: case 8: *fields = sts__gg_f_d; return 1;                  /* Q4_0, Q8_0 */
    case 3: case 12: case 13: *fields = sts__gg_f_dm; return 1;       /* Q4_1, Q4_K, Q5_K */
    case 6: *fields = sts__gg_f_q5_0; return 1;
    case 7: *fields = sts__gg_f_q5_1; return 1;
    case 10: *fields = sts__gg_f_q2_k; return 1;
    case 11: *fields = sts__gg_f_q3_k; return 1;
    case 14: *fields = sts__gg_f_q6_k; return 1;
    case 39: *fields = sts__gg_f_none; return 1;                      /* MXFP4: bytes only */
    default: (void)id; return 0;
    }
}
STS__PRIVATE int sts__gg_can_swap(const sts_type *t) {
    const sts__gg_field *f;
    return sts__gg_swappable(t, &f);
}
/* Reverses the multi-byte fields of n blocks of t in place (t swappable). */
STS__PRIVATE void sts__gg_swap_blocks(const sts_type *t, uint8_t *p, size_t n) {
    const sts__gg_field *f = NULL, *k;
    size_t i;
    if (!sts__gg_swappable(t, &f)) return;
    for (i = 0; i < n; i++, p += t->block_bytes)
        for (k = f; k->size; k++) {
            uint8_t *q = p + k->at, x;
            if (k->size == 2) { x = q[0]; q[0] = q[1]; q[1] = x; }
            else { x = q[0]; q[0] = q[3]; q[3] = x; x = q[1]; q[1] = q[2]; q[2] = x; }
        }
}

#define STS__GG_MAX_STRING ((uint64_t)1 << 30)   /* ggml's GGUF_MAX_STRING_LENGTH */
#define STS__GG_MAX_ITEMS ((uint64_t)1 << 30)    /* ggml's GGUF_MAX_ARRAY_ELEMENTS */
#define STS__GG_MAX_NAME 64u                     /* ggml's GGML_MAX_NAME, the NUL included */
#define STS__GG_ARRAY 9u
/* GGUF value types: bytes of a scalar (0: STRING, ARRAY) and names. */
static const uint8_t sts__gg_vsize[13] = { 1, 1, 2, 2, 4, 4, 4, 1, 0, 0, 8, 8, 8 };
static const char *const sts__gg_vname[13] = { "UINT8", "INT8", "UINT16", "INT16", "UINT32", "INT32", "FLOAT32",
                                               "BOOL", "STRING", "ARRAY", "UINT64", "INT64", "FLOAT64" };

typedef struct sts__gg {            /* the reader: the bytes at hand and where they are in the file */
    sts_builder *b;
    sts_archive *a;
    const uint8_t *p, *end;         /* p is at file offset base_off + (p - base) */
    const uint8_t *base;
    uint64_t base_off, size;
    size_t chunk;                   /* the next chunk's size (sources that are not mapped) */
    uint64_t reach;                 /* a file offset the header surely reaches (from the counts) */
    uint64_t prefix;                /* the probed prefix's length: bytes read already */
    int be, strict;
    sts_error *err;
} sts__gg;
typedef struct sts__gg_info {       /* a tensor info as read */
    const char *name;               /* ggml's name: up to the first NUL */
    size_t name_len;
    uint64_t ne[4], numel, nbytes, offset;     /* ggml's order; the offset as stored */
    uint64_t at, off_at;                        /* the file offsets of the info and of its offset field */
    uint32_t n_dims, type;
} sts__gg_info;
typedef struct sts__gg_slot { uint64_t h; size_t i; } sts__gg_slot;   /* i: item + 1; 0 = empty */
typedef struct sts__gg_set { sts__gg_slot *s; size_t mask, n; } sts__gg_set;

STS__INLINE uint64_t sts__gg_pos(const sts__gg *g) { return g->base_off + (uint64_t)(g->p - g->base); }
/* The header holds at least n more bytes from p on: where it surely reaches. Kept as a file offset,
   so that reads further inside the same part (past a key, a name) do not stretch it. */
STS__INLINE void sts__gg_ahead(sts__gg *g, uint64_t n) { g->reach = sts__gg_pos(g) + n; }
STS__INLINE uint32_t sts__gg_32(const sts__gg *g, const uint8_t *p) {
    return g->be ? (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | p[3] : sts__le32(p);
}
STS__INLINE uint64_t sts__gg_64(const sts__gg *g, const uint8_t *p) {
    return g->be ? (uint64_t)sts__gg_32(g, p) << 32 | sts__gg_32(g, p + 4) : sts__le64(p);
}
STS__INLINE uint32_t sts__gg_16(const sts__gg *g, const uint8_t *p) {
    return g->be ? (uint32_t)p[0] << 8 | p[1] : (uint32_t)p[0] | (uint32_t)p[1] << 8;
}
/* n more bytes at p, which the caller knows lie inside the file: a source that is not mapped gets
   a new chunk that starts with the bytes not used yet (earlier chunks stay: strings point there).
   A chunk reaches no further than the header surely does (g->reach) or the probed prefix: what is
   read past the header is at most what the probe read. */
STS__PRIVATE sts_result sts__gg_refill(sts__gg *g, uint64_t n) {
    uint64_t pos = sts__gg_pos(g), left = g->size - pos, more = g->reach > pos ? g->reach - pos : 0;
    size_t keep = (size_t)(g->end - g->p), want;
    uint8_t *buf;
    sts_result r;
    if (n > (uint64_t)((size_t)-1 >> 1)) return sts__nomem(g->err, "the GGUF header");
    if (g->prefix > pos && g->prefix - pos > more) more = g->prefix - pos;
    if (more > (uint64_t)g->chunk) more = g->chunk;
    want = (uint64_t)n > more ? (size_t)n : (size_t)more;
    if ((uint64_t)want > left) want = (size_t)left;
    if (!(buf = (uint8_t *)sts__ar_alloc(g->a, want))) return sts__nomem(g->err, "the GGUF header");
    if (keep) memcpy(buf, g->p, keep);
    if ((r = sts_builder_read(g->b, pos + keep, buf + keep, want - keep, g->err)) != STS_OK) return r;
    g->base = g->p = buf;
    g->end = buf + want;
    g->base_off = pos;
    if (g->chunk < ((size_t)4 << 20)) g->chunk *= 2;
    return STS_OK;
}
/* The label of what is read, for messages: "key 3", "the value of key \"a.b\"", "item 7 of key \"a.b\"",
   "the name of tensor 2", "tensor \"w\"". */
typedef struct sts__gg_what { const char *kind; uint64_t idx; int has_idx; const char *nm; size_t nl; } sts__gg_what;
STS__PRIVATE void sts__gg_label(char *out, size_t cap, const sts__gg_what *w) {
    sts__buf b;
    b.p = out; b.n = 0; b.cap = cap;
    out[0] = 0;
    sts__buf_put(&b, w->kind, strlen(w->kind));
    if (w->has_idx) { sts__buf_put(&b, " ", 1); sts__buf_u64(&b, w->idx); }
    if (w->nm) {
        if (w->has_idx) sts__buf_put(&b, " of key ", 8);
        else sts__buf_put(&b, " ", 1);
        sts__buf_quote(&b, w->nm, w->nl, 64);
    }
    sts__buf_trim(&b);
}
/* The bytes [pos, pos + n) are not all in the file: `rule` at pos, naming what. */
STS__PRIVATE sts_result sts__gg_past_end(sts__gg *g, sts_rule rule, uint64_t pos, uint64_t n, const sts__gg_what *w) {
    char lab[160];
    sts__gg_label(lab, sizeof lab, w);
    return sts__fail(g->err, rule, pos, "%s needs %U bytes at byte %U; the file ends at byte %U", lab, n, pos,
                     g->size);
}
/* Makes n bytes available at p, or fails under `rule` when they pass the end of the file. */
STS__INLINE sts_result sts__gg_need(sts__gg *g, uint64_t n, sts_rule rule, const sts__gg_what *w) {
    uint64_t pos;
    if ((uint64_t)(g->end - g->p) >= n) return STS_OK;
    pos = sts__gg_pos(g);
    if (n > g->size - pos) return sts__gg_past_end(g, rule, pos, n, w);
    return sts__gg_refill(g, n);
}
/* A GGUF string (u64 length, bytes) at p: ggml's limit, then the file's end. */
STS__INLINE sts_result sts__gg_str(sts__gg *g, const char **s, size_t *n, const sts__gg_what *w) {
    uint64_t len, pos;
    sts_result r;
    if ((uint64_t)(g->end - g->p) >= 8) {
        len = sts__gg_64(g, g->p);
        if (len <= (uint64_t)(g->end - g->p) - 8) {  /* the fast path: all of it at hand */
            *s = (const char *)g->p + 8;
            *n = (size_t)len;
            g->p += 8 + len;
            return STS_OK;
        }
    } else if ((r = sts__gg_need(g, 8, STS_RULE_GGUF_TRUNCATED, w)) != STS_OK) {
        return r;
    }
    pos = sts__gg_pos(g);
    len = sts__gg_64(g, g->p);
    if (len > STS__GG_MAX_STRING) {
        char lab[160];
        sts__gg_label(lab, sizeof lab, w);
        return sts__fail(g->err, STS_RULE_GGUF_STRING, pos, "%s is %U bytes long, over ggml's limit of 2^30", lab,
                         len);
    }
    if (len > g->size - pos - 8) return sts__gg_past_end(g, STS_RULE_GGUF_STRING, pos, 8 + len, w);
    if ((r = sts__gg_need(g, 8 + len, STS_RULE_GGUF_STRING, w)) != STS_OK) return r;
    *s = (const char *)g->p + 8;
    *n = (size_t)len;
    g->p += 8 + len;
    return STS_OK;
}

/* ---- a set of names (keys, tensor names): duplicates found in O(1) ---- */
/* Item i's name: a key of the archive's metadata, or a tensor info's name. */
STS__INLINE const char *sts__gg_item(const sts_archive *a, const sts__gg_info *infos, size_t i, size_t *len) {
    if (infos) { *len = infos[i].name_len; return infos[i].name; }
    *len = a->meta[i].key_len;
    return a->meta[i].key;
}
/* Adds item i named (nm, nl) with hash h: 1 when the name is there already (*dup: that item), 0
   when added, -1 when out of memory. */
STS__PRIVATE int sts__gg_set_add(sts_archive *a, sts__gg_set *t, const sts__gg_info *infos, const char *nm,
                                 size_t nl, uint64_t h, size_t i, size_t *dup) {
    size_t pos;
    if ((t->n + 1) * 2 > (t->s ? t->mask + 1 : 0)) {  /* grow to keep the load at most 1/2 */
        size_t cap = t->s ? (t->mask + 1) * 2 : 16, k, bytes;
        sts__gg_slot *ns;
        if (!sts__mulsz(cap, sizeof *ns, &bytes) || !(ns = (sts__gg_slot *)sts__alloc(&a->mem, bytes))) return -1;
        memset(ns, 0, bytes);
        for (k = 0; t->s && k <= t->mask; k++)
            if (t->s[k].i) {
                size_t q = (size_t)t->s[k].h & (cap - 1);
                while (ns[q].i) q = (q + 1) & (cap - 1);
                ns[q] = t->s[k];
            }
        if (t->s) sts__free(&a->mem, t->s, (t->mask + 1) * sizeof *t->s);
        t->s = ns;
        t->mask = cap - 1;
    }
    for (pos = (size_t)h & t->mask; t->s[pos].i; pos = (pos + 1) & t->mask)
        if (t->s[pos].h == h) {
            size_t il;
            const char *ip = sts__gg_item(a, infos, t->s[pos].i - 1, &il);
            if (il == nl && (nl == 0 || memcmp(ip, nm, nl) == 0)) { *dup = t->s[pos].i - 1; return 1; }
        }
    t->s[pos].h = h;
    t->s[pos].i = i + 1;
    t->n++;
    return 0;
}
STS__PRIVATE void sts__gg_set_free(sts_archive *a, sts__gg_set *t) {
    if (t->s) sts__free(&a->mem, t->s, (t->mask + 1) * sizeof *t->s);
    t->s = NULL;
}

/* ---- values ---- */
/* A scalar of value type vt (not STRING or ARRAY) at p, as a typed entry. */
STS__INLINE void sts__gg_scalar(const sts__gg *g, uint32_t vt, const uint8_t *p, sts_meta *m) {
    uint32_t v32;
    uint64_t v64;
    float f32;
    double f64;
    switch (vt) {
    case 0: m->type = STS_META_UINT; m->u = p[0]; break;
    case 1: m->type = STS_META_INT; m->i = (int64_t)p[0] - (p[0] & 0x80 ? 256 : 0); break;
    case 2: m->type = STS_META_UINT; m->u = sts__gg_16(g, p); break;
    case 3: v32 = sts__gg_16(g, p); m->type = STS_META_INT; m->i = (int64_t)v32 - (v32 & 0x8000 ? 65536 : 0); break;
    case 4: m->type = STS_META_UINT; m->u = sts__gg_32(g, p); break;
    case 5:
        v32 = sts__gg_32(g, p);
        m->type = STS_META_INT;
        m->i = (int64_t)(v32 ^ 0x80000000u) - (int64_t)0x80000000;
        break;
    case 6: v32 = sts__gg_32(g, p); memcpy(&f32, &v32, 4); m->type = STS_META_FLOAT; m->f = (double)f32; break;
    case 7: m->type = STS_META_BOOL; m->u = p[0] != 0; break;  /* ggml: any byte but 0 is true */
    case 10: m->type = STS_META_UINT; m->u = sts__gg_64(g, p); break;
    case 11:
        v64 = sts__gg_64(g, p);
        m->type = STS_META_INT;
        m->i = v64 <= (uint64_t)INT64_MAX ? (int64_t)v64 : -(int64_t)(~v64) - 1;
        break;
    default: v64 = sts__gg_64(g, p); memcpy(&f64, &v64, 8); m->type = STS_META_FLOAT; m->f = f64; break;
    }
    m->format_type = vt;
}
STS__PRIVATE sts_result sts__gg_bad_bool(sts__gg *g, uint64_t pos, const sts__gg_what *w, int byte) {
    char lab[160];
    sts__gg_label(lab, sizeof lab, w);
    return sts__fail(g->err, STS_RULE_GGUF_STRICT_BOOL, pos, "%s is a BOOL byte %x, not 0 or 1", lab, byte);
}
STS__PRIVATE sts_result sts__gg_bad_utf8(sts__gg *g, uint64_t pos, const sts__gg_what *w) {
    char lab[160];
    sts__gg_label(lab, sizeof lab, w);
    return sts__fail(g->err, STS_RULE_GGUF_STRICT_UTF8, pos, "%s is a STRING that is not UTF-8", lab);
}
/* The n items of an array of value type vt (the count checked): one block of entries. */
STS__PRIVATE sts_result sts__gg_items(sts__gg *g, uint32_t vt, uint64_t n, sts_meta *m, const char *key, size_t kl) {
    sts_meta *items = NULL, z;
    sts__gg_what w;
    uint64_t k;
    size_t bytes;
    sts_result r;
    w.kind = "item"; w.has_idx = 1; w.nm = key; w.nl = kl; w.idx = 0;
    if (n && (!sts__mulsz((size_t)n, sizeof *items, &bytes) || !(items = (sts_meta *)sts__ar_alloc(g->a, bytes))))
        return sts__nomem(g->err, "the items of a GGUF array");
    memset(&z, 0, sizeof z);
    z.format_type = vt;
    if (vt == 8) {  /* strings: (length, bytes) each, pointing into the header */
        uint64_t rest = g->reach - sts__gg_pos(g) - n * 8;  /* what the header holds after the array, at least */
        z.type = STS_META_STRING;
        for (k = 0; k < n; k++) {
            sts_meta *it = &items[k];
            *it = z;
            w.idx = k;
            sts__gg_ahead(g, (n - k) * 8 + rest);
            if ((r = sts__gg_str(g, &it->str, &it->str_len, &w)) != STS_OK) return r;
            if (g->strict && sts__utf8_check((const uint8_t *)it->str, it->str_len) != it->str_len)
                return sts__gg_bad_utf8(g, sts__gg_pos(g) - it->str_len - 8, &w);
        }
    } else {
        size_t sz = sts__gg_vsize[vt];
        uint64_t rest = g->reach - sts__gg_pos(g) - n * sz;
        for (k = 0; k < n; k++) {
            if ((uint64_t)(g->end - g->p) < sz) {
                w.idx = k;
                sts__gg_ahead(g, (n - k) * sz + rest);
                if ((r = sts__gg_need(g, sz, STS_RULE_GGUF_TRUNCATED, &w)) != STS_OK) return r;
            }
            items[k] = z;
            sts__gg_scalar(g, vt, g->p, &items[k]);
            if (vt == 7 && g->strict && g->p[0] > 1) {
                w.idx = k;
                return sts__gg_bad_bool(g, sts__gg_pos(g), &w, g->p[0]);
            }
            g->p += sz;
        }
    }
    m->type = STS_META_ARRAY;
    m->items = items;
    m->count = n;
    m->u = vt;  /* the items' type, which an empty array keeps too */
    m->format_type = STS__GG_ARRAY;
    return STS_OK;
}
/* strict: a key is ASCII lower_snake_case segments joined by dots, at most 65535 bytes. */
STS__PRIVATE int sts__gg_key_form(const char *k, size_t n) {
    size_t i, seg = 0;
    if (n > 65535) return 0;
    for (i = 0; i < n; i++) {
        char c = k[i];
        if (c == '.') { if (!seg) return 0; seg = 0; continue; }
        if (!((c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '_')) return 0;
        seg++;
    }
    return seg > 0;
}

/* ---- the provider ---- */
STS__PRIVATE void sts__gguf_probe(void *user, const sts_probe_input *in, sts_probe_result *o) {
    uint32_t v;
    int be;
    (void)user;
    if (in->is_dir) { sts__ar_reason(o, 0, 0, "a folder, not a file"); return; }
    if (in->prefix_len < 4 || memcmp(in->prefix, "GGUF", 4) != 0) { sts__ar_reason(o, 0, 0, "no GGUF magic"); return; }
    if (in->prefix_len < 8) { sts__ar_reason(o, 1, 60, "the GGUF magic, then the file ends (open says so)"); return; }
    v = sts__le32(in->prefix + 4);
    be = v && (v & 0xffffu) == 0;
    if (be) v = v >> 24 | (v >> 8 & 0xff00u);
    o->version = v;
    if (v != 2 && v != 3) {
        sts__ar_reason(o, 1, 60, "the GGUF magic with version %U, which is not 2 or 3 (open says so)", (uint64_t)v);
        return;
    }
    sts__ar_reason(o, 1, 95, "the GGUF magic, version %U, %s", (uint64_t)v, be ? "big-endian" : "little-endian");
}
/* The tensor infos: ggml's checks on the name, the shape and the type, in its order. */
STS__PRIVATE sts_result sts__gg_info_read(sts__gg *g, sts__gg_set *names, sts__gg_info *infos, uint64_t i,
                                          uint64_t seed) {
    sts__gg_info *t = &infos[i];
    sts__gg_what w;
    const char *nm = NULL;
    size_t nl = 0, dup;
    uint32_t j;
    const sts_type *ty;
    sts_result r;
    int have;
    memset(t, 0, sizeof *t);
    t->at = sts__gg_pos(g);
    w.kind = "the name of tensor"; w.idx = i; w.has_idx = 1; w.nm = NULL; w.nl = 0;
    if ((r = sts__gg_str(g, &nm, &nl, &w)) != STS_OK) return r;
    if (nl >= STS__GG_MAX_NAME)
        return sts__fail(g->err, STS_RULE_GGUF_NAME, t->at, "tensor %U's name %q is %z bytes; ggml takes at most %d "
                         "(GGML_MAX_NAME is 64 with the NUL)", i, nm, nl, nl, (int)STS__GG_MAX_NAME - 1);
    t->name = nm;
    t->name_len = nl;
    {  /* ggml keeps names as C strings: up to the first NUL */
        const char *z = (const char *)memchr(nm, 0, nl);
        if (z) t->name_len = (size_t)(z - nm);
    }
    have = sts__gg_set_add(g->a, names, infos, t->name, t->name_len, sts__hash(t->name, t->name_len, seed), (size_t)i,
                           &dup);
    if (have < 0) return sts__nomem(g->err, "the tensor names");
    if (have)
        return sts__fail(g->err, STS_RULE_GGUF_DUPLICATE_NAME, t->at, "tensor %q is named twice (tensors %z and %U)",
                         t->name, t->name_len, dup, i);
    if (g->strict && (t->name_len != nl || sts__utf8_check((const uint8_t *)nm, nl) != nl))
        return sts__fail(g->err, STS_RULE_GGUF_STRICT_NAME, t->at, "tensor %U's name %q %s", i, nm, nl,
                         t->name_len != nl ? "holds a NUL" : "is not UTF-8");
    w.kind = "tensor"; w.has_idx = 0; w.nm = t->name; w.nl = t->name_len;
    if ((r = sts__gg_need(g, 4, STS_RULE_GGUF_TRUNCATED, &w)) != STS_OK) return r;
    t->n_dims = sts__gg_32(g, g->p);
    if (t->n_dims > 4)
        return sts__fail(g->err, STS_RULE_GGUF_N_DIMS, sts__gg_pos(g), "tensor %q has %U dimensions; ggml takes at "
                         "most 4", t->name, t->name_len, (uint64_t)t->n_dims);
    g->p += 4;
    for (j = 0; j < 4; j++) {
        t->ne[j] = 1;
        if (j >= t->n_dims) continue;
        if ((r = sts__gg_need(g, 8, STS_RULE_GGUF_TRUNCATED, &w)) != STS_OK) return r;
        t->ne[j] = sts__gg_64(g, g->p);
        if (t->ne[j] > (uint64_t)INT64_MAX)
            return sts__fail(g->err, STS_RULE_GGUF_SHAPE, sts__gg_pos(g), "tensor %q: dimension %U is %U, negative "
                             "as ggml's int64", t->name, t->name_len, (uint64_t)j, t->ne[j]);
        g->p += 8;
    }
    if (t->ne[0] && t->ne[1] && t->ne[2] && t->ne[3]) {
        /* ggml's test (INT64_MAX / ne[k] <= the product before it), in an order that cannot overflow; ggml
           skips it when its int64 product wraps to zero or below, which passing it here rules out */
        const uint64_t mx = (uint64_t)INT64_MAX;
        if (mx / t->ne[1] <= t->ne[0] || mx / t->ne[2] <= t->ne[0] * t->ne[1] ||
            mx / t->ne[3] <= t->ne[0] * t->ne[1] * t->ne[2]) {
            uint64_t wrapped = t->ne[0] * t->ne[1] * t->ne[2] * t->ne[3];
            int missed = wrapped == 0 || wrapped > mx;
            return sts__fail(g->err, STS_RULE_GGUF_OVERFLOW, t->at, "tensor %q: the dimensions %S hold more elements "
                             "than ggml's int64 count allows%s", t->name, t->name_len, t->ne, (size_t)t->n_dims,
                             missed ? " (ggml's check misses it: its product wraps)" : "");
        }
    }
    t->numel = t->ne[0] * t->ne[1] * t->ne[2] * t->ne[3];
    if ((r = sts__gg_need(g, 4, STS_RULE_GGUF_TRUNCATED, &w)) != STS_OK) return r;
    t->type = sts__gg_32(g, g->p);
    if (t->type >= STS__GG_NTYPES || !sts__gg_types[t->type].name) {
        if (t->type < STS__GG_NTYPES)
            return sts__fail(g->err, STS_RULE_GGUF_TYPE, sts__gg_pos(g), "tensor %q has type %U (%s), which ggml "
                             "removed", t->name, t->name_len, (uint64_t)t->type, sts__gg_gone[t->type]);
        return sts__fail(g->err, STS_RULE_GGUF_TYPE, sts__gg_pos(g), "tensor %q has type id %U; ggml's types end at "
                         "39 (MXFP4)", t->name, t->name_len, (uint64_t)t->type);
    }
    ty = &sts__gg_types[t->type];
    if (t->ne[0] % ty->block_elems)
        return sts__fail(g->err, STS_RULE_GGUF_BLOCK, sts__gg_pos(g), "tensor %q of type %s: its first dimension %U "
                         "is not a multiple of the block size %U", t->name, t->name_len, ty->name, t->ne[0],
                         (uint64_t)ty->block_elems);
    if (t->numel / ty->block_elems > UINT64_MAX / ty->block_bytes)
        return sts__fail(g->err, STS_RULE_GGUF_OVERFLOW, sts__gg_pos(g), "tensor %q: %U elements of %s overflow 64 "
                         "bits of bytes", t->name, t->name_len, t->numel, ty->name);
    t->nbytes = t->numel / ty->block_elems * ty->block_bytes;
    g->p += 4;
    if ((r = sts__gg_need(g, 8, STS_RULE_GGUF_TRUNCATED, &w)) != STS_OK) return r;
    t->off_at = sts__gg_pos(g);
    t->offset = sts__gg_64(g, g->p);
    g->p += 8;
    return STS_OK;
}
/* The metadata KVs, each typed and added to the archive as it is read (pointing into the header). */
STS__PRIVATE sts_result sts__gg_kvs(sts__gg *g, uint64_t n_kv, uint64_t after, uint64_t seed, size_t *align_kv,
                                    uint64_t *align_at) {
    sts_archive *a = g->a;
    sts__gg_set keys;
    sts_result r = STS_OK;
    uint64_t i;
    size_t first = a->nmeta;
    memset(&keys, 0, sizeof keys);
    *align_kv = (size_t)-1;
    for (i = 0; i < n_kv && r == STS_OK; i++) {
        sts_meta m;
        sts__gg_what w;
        uint64_t at = sts__gg_pos(g), tat, n = 1;
        uint32_t type, vt;
        size_t dup;
        int have;
        memset(&m, 0, sizeof m);
        sts__gg_ahead(g, (n_kv - i) * 14 + after);  /* a KV takes at least 14 bytes */
        w.kind = "key"; w.idx = i; w.has_idx = 1; w.nm = NULL; w.nl = 0;
        if ((r = sts__gg_str(g, &m.key, &m.key_len, &w)) != STS_OK) break;
        if (!m.key_len) { r = sts__fail(g->err, STS_RULE_GGUF_KEY, at, "key %U is empty", i); break; }
        have = sts__gg_set_add(a, &keys, NULL, m.key, m.key_len, sts__hash(m.key, m.key_len, seed), first + (size_t)i,
                               &dup);
        if (have < 0) { r = sts__nomem(g->err, "the keys"); break; }
        if (have) {
            r = sts__fail(g->err, STS_RULE_GGUF_DUPLICATE_KEY, at, "key %q appears twice (keys %z and %U)", m.key,
                          m.key_len, dup - first, i);
            break;
        }
        if (g->strict && !sts__gg_key_form(m.key, m.key_len)) {
            r = sts__fail(g->err, STS_RULE_GGUF_STRICT_KEY, at, "key %q is not ASCII lower_snake_case segments joined "
                          "by dots (at most 65535 bytes)", m.key, m.key_len);
            break;
        }
        w.kind = "the value of key"; w.has_idx = 0; w.nm = m.key; w.nl = m.key_len;
        tat = sts__gg_pos(g);
        if ((r = sts__gg_need(g, 4, STS_RULE_GGUF_TRUNCATED, &w)) != STS_OK) break;
        vt = type = sts__gg_32(g, g->p);
        g->p += 4;
        if (type == STS__GG_ARRAY) {  /* ggml reads the item type and the count before judging them */
            if ((r = sts__gg_need(g, 12, STS_RULE_GGUF_TRUNCATED, &w)) != STS_OK) break;
            vt = sts__gg_32(g, g->p);
            n = sts__gg_64(g, g->p + 4);
            g->p += 12;
        }
        if (vt > 12 || vt == STS__GG_ARRAY) {
            r = vt == STS__GG_ARRAY
                ? sts__fail(g->err, STS_RULE_GGUF_VALUE_TYPE, tat, "key %q is an array of arrays; nested arrays are "
                            "refused, as ggml refuses them", m.key, m.key_len)
                : sts__fail(g->err, STS_RULE_GGUF_VALUE_TYPE, tat, "key %q has %s type %U, not one of the 13 GGUF "
                            "value types", m.key, m.key_len, type == STS__GG_ARRAY ? "item" : "value", (uint64_t)vt);
            break;
        }
        if (type == STS__GG_ARRAY) {
            uint64_t left = g->size - sts__gg_pos(g), least = n * (vt == 8 ? 8 : sts__gg_vsize[vt]);
            if (n > STS__GG_MAX_ITEMS) {
                r = sts__fail(g->err, STS_RULE_GGUF_ARRAY, tat + 8, "key %q has %U items, over ggml's limit of 2^30",
                              m.key, m.key_len, n);
                break;
            }
            if (least > left) {
                r = sts__fail(g->err, STS_RULE_GGUF_ARRAY, tat + 8, "the %U %s items of key %q need at least %U bytes; "
                              "%U are left in the file", n, sts__gg_vname[vt], m.key, m.key_len, least, left);
                break;
            }
            sts__gg_ahead(g, least + (n_kv - i - 1) * 14 + after);
            if ((r = sts__gg_items(g, vt, n, &m, m.key, m.key_len)) != STS_OK) break;
        } else if (vt == 8) {
            m.type = STS_META_STRING;
            m.format_type = 8;
            if ((r = sts__gg_str(g, &m.str, &m.str_len, &w)) != STS_OK) break;
            if (g->strict && sts__utf8_check((const uint8_t *)m.str, m.str_len) != m.str_len) {
                r = sts__gg_bad_utf8(g, sts__gg_pos(g) - m.str_len - 8, &w);
                break;
            }
        } else {
            if ((r = sts__gg_need(g, sts__gg_vsize[vt], STS_RULE_GGUF_TRUNCATED, &w)) != STS_OK) break;
            sts__gg_scalar(g, vt, g->p, &m);
            if (vt == 7 && g->strict && g->p[0] > 1) { r = sts__gg_bad_bool(g, sts__gg_pos(g), &w, g->p[0]); break; }
            g->p += sts__gg_vsize[vt];
        }
        /* ggml finds general.alignment with strcmp: the first key that reads so up to a NUL */
        if (*align_kv == (size_t)-1 && m.key_len >= 17 && memcmp(m.key, "general.alignment", 17) == 0 &&
            (m.key_len == 17 || m.key[17] == 0)) {
            *align_kv = a->nmeta;
            *align_at = at;
        }
        r = sts__ar_add_meta(a, &m, 0, g->err);
    }
    sts__gg_set_free(a, &keys);
    return r;
}
/* general.alignment: a UINT32 power of two (a multiple of 8 under strict), else 32. */
STS__PRIVATE sts_result sts__gg_alignment(sts__gg *g, size_t kv, uint64_t at, uint64_t *align) {
    const sts_meta *m;
    *align = 32;
    if (kv == (size_t)-1) return STS_OK;
    m = &g->a->meta[kv];
    if (m->format_type != 4 || m->type != STS_META_UINT)
        return sts__fail(g->err, STS_RULE_GGUF_ALIGNMENT, at, "key %q is %s %s, not a UINT32", m->key, m->key_len,
                         m->format_type <= 12 && (sts__gg_vname[m->format_type][0] == 'I' ||
                                                  sts__gg_vname[m->format_type][0] == 'A') ? "an" : "a",
                         m->format_type <= 12 ? sts__gg_vname[m->format_type] : "?");
    if (!m->u || (m->u & (m->u - 1)))
        return sts__fail(g->err, STS_RULE_GGUF_ALIGNMENT, at, "general.alignment is %U, not a power of two", m->u);
    if (g->strict && m->u % 8)
        return sts__fail(g->err, STS_RULE_GGUF_STRICT_ALIGNMENT, at, "general.alignment is %U, not a multiple of "
                         "8 (gguf.md)", m->u);
    *align = m->u;
    return STS_OK;
}
/* strict: general.architecture, and general.quantization_version when a tensor is quantised. */
STS__PRIVATE sts_result sts__gg_required(sts__gg *g, const sts__gg_info *infos, uint64_t n) {
    const sts_meta *arch = sts_archive_meta_find(g->a, "general.architecture", 20);
    const sts_meta *qv = sts_archive_meta_find(g->a, "general.quantization_version", 28);
    uint64_t i;
    if (!arch || arch->type != STS_META_STRING)
        return sts__failx(g->err, STS_RULE_GGUF_STRICT_REQUIRED, "general.architecture is %s (gguf.md requires a "
                          "STRING)", arch ? "not a STRING" : "missing");
    for (i = 0; i < n; i++)
        if (!sts__gg_types[infos[i].type].plain && (!qv || qv->format_type != 4 || qv->type != STS_META_UINT))
            return sts__failx(g->err, STS_RULE_GGUF_STRICT_REQUIRED, "tensor %q is quantised (%s) and "
                              "general.quantization_version is %s (gguf.md requires a UINT32)", infos[i].name,
                              infos[i].name_len, sts__gg_types[infos[i].type].name, qv ? "not a UINT32" : "missing");
    return STS_OK;
}
/* The data section: where it starts, each tensor's offset, and the bytes the file must hold. */
STS__PRIVATE sts_result sts__gg_data(sts__gg *g, const sts__gg_info *infos, uint64_t n, uint64_t align,
                                     uint64_t *data_at) {
    uint64_t pos = sts__gg_pos(g), at = pos, sum = 0, i;
    sts_result r;
    if (n) {  /* ggml seeks to the padded position only when there are tensors */
        int ok = sts__add64(pos, align - 1, &at);
        at &= ~(align - 1);
        if (!ok || at > g->size)
            return sts__fail(g->err, STS_RULE_GGUF_DATA, pos, "the data section would start at byte %U (the %U-byte "
                             "header padded to %U), past the end of the %U-byte file", at, pos, align, g->size);
        if (g->strict && at > pos) {
            sts__gg_what w;
            uint64_t k;
            w.kind = "the padding before the data section"; w.has_idx = 0; w.nm = NULL; w.nl = 0; w.idx = 0;
            if ((r = sts__gg_need(g, at - pos, STS_RULE_GGUF_DATA, &w)) != STS_OK) return r;
            for (k = 0; k < at - pos; k++)
                if (g->p[k])
                    return sts__fail(g->err, STS_RULE_GGUF_STRICT_PADDING, pos + k, "the padding before the data "
                                     "section holds byte %x at byte %U (gguf.md pads with 0x00)", g->p[k], pos + k);
        }
    }
    *data_at = at;
    for (i = 0; i < n; i++) {
        const sts__gg_info *t = &infos[i];
        uint64_t padded;
        if (t->offset != sum)
            return sts__fail(g->err, STS_RULE_GGUF_OFFSET, t->off_at, "tensor %q has offset %U; the padded sizes "
                             "before it put it at %U%s", t->name, t->name_len, t->offset, sum,
                             t->offset % align ? " (and it is not a multiple of the alignment)" : "");
        if (!sts__add64(t->nbytes, align - 1, &padded) || !sts__add64(sum, padded & ~(align - 1), &sum))
            return sts__fail(g->err, STS_RULE_GGUF_OVERFLOW, t->off_at, "tensor %q: its %U bytes padded to %U "
                             "overflow the data section's size", t->name, t->name_len, t->nbytes, align);
    }
    if (sum > g->size - at)
        return sts__fail(g->err, STS_RULE_GGUF_DATA, at, "the data section needs %U bytes (every tensor padded to %U) "
                         "from byte %U; the file ends at byte %U", sum, align, at, g->size);
    return STS_OK;
}
STS__PRIVATE sts_result sts__gguf_open(void *user, sts_builder *b, sts_error *err) {
    sts_archive *a = b->a;
    sts__gg g;
    sts__gg_what w;
    sts__gg_info *infos = NULL;
    sts__gg_set names;
    uint64_t n_tensors, n_kv, i, align = 32, data_at = 0, seed = sts__seed_from(a, a->opts.hash_seed);
    size_t align_kv, info_bytes = 0;
    uint64_t align_at = 0;
    uint32_t v;
    sts_result r;
    (void)user;
    memset(&g, 0, sizeof g);
    memset(&names, 0, sizeof names);
    g.b = b; g.a = a; g.err = err;
    g.size = sts_builder_size(b);
    g.strict = a->opts.strict;
    g.chunk = (size_t)64 << 10;
    g.prefix = b->prefix_len;
    if (sts_builder_bytes(b)) {
        g.base = g.p = (const uint8_t *)sts_builder_bytes(b);
        g.end = g.p + g.size;
    }
    w.kind = "the header"; w.has_idx = 0; w.nm = NULL; w.nl = 0; w.idx = 0;
    if ((r = sts__gg_need(&g, 4, STS_RULE_GGUF_TRUNCATED, &w)) != STS_OK) return r;
    if (memcmp(g.p, "GGUF", 4) != 0)
        return sts__fail(err, STS_RULE_GGUF_MAGIC, 0, "the file begins with %q, not GGUF%s", (const char *)g.p,
                         (size_t)4, memcmp(g.p, "FUGG", 4) == 0 ? " (a byte-reversed magic, which ggml refuses)" : "");
    g.p += 4;
    if ((r = sts__gg_need(&g, 4, STS_RULE_GGUF_TRUNCATED, &w)) != STS_OK) return r;
    v = sts__le32(g.p);
    if (!v) return sts__fail(err, STS_RULE_GGUF_VERSION, 4, "version 0 is not a GGUF version");
    if ((v & 0xffffu) == 0) {  /* ggml's test for the other byte order: the version's low half is zero */
        g.be = 1;
        v = v >> 24 | (v >> 8 & 0xff00u);
    }
    if (v == 1) return sts__fail(err, STS_RULE_GGUF_VERSION, 4, "GGUF version 1 is obsolete (32-bit counts); ggml no "
                                 "longer reads it");
    if (v > 3) return sts__fail(err, STS_RULE_GGUF_VERSION, 4, "GGUF version %U is newer than 3", (uint64_t)v);
    if (g.strict && g.be && v != 3)
        return sts__fail(err, STS_RULE_GGUF_STRICT_BIG_ENDIAN, 4, "a big-endian file of version %U (big-endian files "
                         "came with version 3)", (uint64_t)v);
    sts_builder_set_version(b, v);
    g.p += 4;
    if ((r = sts__gg_need(&g, 16, STS_RULE_GGUF_TRUNCATED, &w)) != STS_OK) return r;
    n_tensors = sts__gg_64(&g, g.p);
    n_kv = sts__gg_64(&g, g.p + 8);
    if (n_tensors > (uint64_t)INT64_MAX || n_kv > (uint64_t)INT64_MAX)
        return sts__fail(err, STS_RULE_GGUF_COUNT, n_tensors > (uint64_t)INT64_MAX ? 8 : 16, "the %s count %U is "
                         "negative as ggml's int64", n_tensors > (uint64_t)INT64_MAX ? "tensor" : "KV",
                         n_tensors > (uint64_t)INT64_MAX ? n_tensors : n_kv);
    g.p += 16;
    /* a KV takes at least 14 bytes (a 1-byte key, its type, a 1-byte value), a tensor info 24 */
    if (n_kv > (g.size - 24) / 14 || n_tensors > (g.size - 24 - n_kv * 14) / 24)
        return sts__fail(err, STS_RULE_GGUF_COUNT, 8, "%U tensors and %U KVs cannot fit in the %U bytes after the "
                         "24-byte header", n_tensors, n_kv, g.size - 24);
    if ((r = sts__gg_kvs(&g, n_kv, n_tensors * 24, seed, &align_kv, &align_at)) != STS_OK) return r;
    if ((r = sts__gg_alignment(&g, align_kv, align_at, &align)) != STS_OK) return r;
    if (n_tensors) {
        if (!sts__mulsz((size_t)n_tensors, sizeof *infos, &info_bytes) ||
            !(infos = (sts__gg_info *)sts__alloc(&a->mem, info_bytes)))
            return sts__nomem(err, "the tensor infos");
    }
    for (i = 0; i < n_tensors && r == STS_OK; i++) {
        sts__gg_ahead(&g, (n_tensors - i) * 24);  /* a tensor info takes at least 24 bytes */
        r = sts__gg_info_read(&g, &names, infos, i, seed);
    }
    sts__gg_set_free(a, &names);
    sts__gg_ahead(&g, 0);
    if (r == STS_OK) r = sts__gg_data(&g, infos, n_tensors, align, &data_at);
    if (r == STS_OK && g.strict) r = sts__gg_required(&g, infos, n_tensors);
    for (i = 0; i < n_tensors && r == STS_OK; i++) {  /* the descriptors: row-major shapes, ggml's order beside */
        const sts__gg_info *t = &infos[i];
        sts_tensor_desc d;
        sts_meta x[2];
        uint64_t shape[4];
        uint32_t j;
        memset(&d, 0, sizeof d);
        memset(x, 0, sizeof x);
        for (j = 0; j < t->n_dims; j++) shape[j] = t->ne[t->n_dims - 1 - j];
        d.name = t->name;
        d.name_len = t->name_len;
        d.type = &sts__gg_types[t->type];
        d.rank = t->n_dims;
        d.shape = shape;
        d.format_shape = t->ne;
        d.numel = t->numel;
        d.nbytes = t->nbytes;
        d.offset = data_at + t->offset;
        d.big_endian = g.be;
        x[0].key = "ggml_type"; x[0].key_len = 9; x[0].type = STS_META_UINT; x[0].u = t->type; x[0].format_type = 4;
        x[1].key = "offset"; x[1].key_len = 6; x[1].type = STS_META_UINT; x[1].u = t->offset; x[1].format_type = 10;
        d.extras = x;
        d.n_extras = 2;
        r = sts_builder_add_tensor(b, &d, err);
    }
    sts__free(&a->mem, infos, info_bytes);
    return r;
}

/* ---- the registry, probing and open ---- */
static const sts_provider sts__builtins[] = {
    { "safetensors", "safetensors", sts__st_probe, sts__st_open, NULL },
#ifndef STS_NO_STDIO
    { "safetensors-sharded", "sharded", sts__sh_probe, sts__sh_open, NULL },
    { "dataset", "dataset", sts__ds_probe, sts__ds_ar_open, NULL },
#endif
    { "npy", "npy", sts__npy_probe, sts__npy_open, NULL },
    { "gguf", "gguf", sts__gguf_probe, sts__gguf_open, NULL },
};
#define STS__NBUILTINS (sizeof sts__builtins / sizeof sts__builtins[0])
struct sts_registry {
    sts__mem mem;
    sts_provider *p;
    size_t n, cap;
};
STSDEF sts_result sts_registry_new(const sts_options *opts, int builtins, sts_registry **out, sts_error *err) {
    sts__mem m = sts__mem_from(opts);
    sts_registry *r;
    size_t i;
    if (!out) return sts__failx(err, STS_RULE_ARGUMENT, "sts_registry_new needs out");
    if (!sts__mem_valid(&m)) return sts__failx(err, STS_RULE_ARGUMENT, "the allocator needs all three hooks or none");
    if (!(r = (sts_registry *)sts__alloc(&m, sizeof *r))) return sts__nomem(err, "the registry");
    memset(r, 0, sizeof *r);
    r->mem = m;
    if (builtins)
        for (i = 0; i < STS__NBUILTINS; i++)
            if (sts_registry_add(r, &sts__builtins[i], err) != STS_OK) { sts_registry_free(r); return STS_ERR_NOMEM; }
    *out = r;
    return STS_OK;
}
STSDEF sts_result sts_registry_add(sts_registry *r, const sts_provider *p, sts_error *err) {
    if (!r || !p || !p->format || !p->probe || !p->open)
        return sts__failx(err, STS_RULE_ARGUMENT, "a provider needs a format id, probe and open");
    if (!sts__grow(&r->mem, (void **)&r->p, &r->cap, r->n + 1, sizeof *r->p)) return sts__nomem(err, "the registry");
    r->p[r->n++] = *p;
    return STS_OK;
}
STSDEF size_t sts_registry_count(const sts_registry *r) { return r ? r->n : STS__NBUILTINS; }
STSDEF const sts_provider *sts_registry_at(const sts_registry *r, size_t i) {
    if (!r) return i < STS__NBUILTINS ? &sts__builtins[i] : NULL;
    return i < r->n ? &r->p[i] : NULL;
}
STSDEF void sts_registry_free(sts_registry *r) {
    if (!r) return;
    sts__free(&r->mem, r->p, r->cap * sizeof *r->p);
    sts__free(&r->mem, r, sizeof *r);
}

/* Sets up file 0 from the input (a folder has none) and the probe prefix. */
STS__PRIVATE sts_result sts__ar_input(sts_archive *a, const sts_input *in, sts_builder *b, uint8_t *pbuf,
                                      sts_error *err) {
    sts__arpart *p;
    sts_result r;
    int kinds = (in->path != NULL) + (in->bytes != NULL || in->size) + (in->source != NULL);
    if (kinds != 1) return sts__failx(err, STS_RULE_ARGUMENT, "an input is exactly one of a path, bytes and a source");
    b->path = in->path;
    if (in->path) {
#ifdef STS_NO_STDIO
        return sts__failx(err, STS_RULE_UNSUPPORTED, "paths are left out of this build (STS_NO_STDIO)");
#else
        sts__stat st;
        size_t sz = strlen(in->path) + 1;
        char *label;
        int fd;
        uint64_t size;
        if (sts__stat_path(in->path, &st) == 0 && st.kind == STS__FT_DIR) {
            b->is_dir = 1;
            return STS_OK;
        }
        if ((r = sts__open_regular(in->path, &fd, &size, err)) != STS_OK) return r;
        STS__AR_ADD(&a->st_opened, 1);
        if (!(label = (char *)sts__alloc(&a->mem, sz))) { sts__close_fd(fd); return sts__nomem(err, "a path"); }
        memcpy(label, in->path, sz);
        if ((r = sts__ar_add_file(a, label, sz, err)) != STS_OK) { sts__close_fd(fd); return r; }
        if (!(p = a->files[0].part = sts__ar_part_new(a))) { sts__close_fd(fd); return sts__nomem(err, "a file"); }
        p->size = size;
        if (!in->no_mmap && !a->opts.no_mmap) {
            sts__fmap m;
            r = sts__map_fd(&a->mem, fd, size, 0, 0, &m, in->path, err);
            sts__close_fd(fd);
            if (r != STS_OK) return r;
            p->base = m.p;
            p->mapped = m.mapped ? 1 : 2;
        } else {
            p->fd = fd;
        }
#endif
    } else {
        if ((r = sts__ar_add_file(a, (char *)(uintptr_t)(in->source ? "<source>" : "<memory>"), 0, err)) != STS_OK)
            return r;
        if (!(p = a->files[0].part = sts__ar_part_new(a))) return sts__nomem(err, "a file");
        if (in->source) {
            if (!in->source->read) return sts__failx(err, STS_RULE_ARGUMENT, "the source has no read");
            a->src = *in->source;
            a->has_src = 1;
            p->size = in->source->size;
        } else {
            p->base = (const uint8_t *)in->bytes;
            p->size = in->size;
        }
    }
    b->prefix_len = p->size < STS_PROBE_BYTES ? (size_t)p->size : STS_PROBE_BYTES;
    if (p->base) b->prefix = p->base;
    else {
        if ((r = sts__ar_fetch(a, 0, p, 0, pbuf, b->prefix_len, err)) != STS_OK) return r;
        b->prefix = pbuf;
    }
    return STS_OK;
}
STS__PRIVATE sts_result sts__ar_new(const sts_options *opts, sts_archive **out, sts_error *err) {
    sts__mem m = sts__mem_from(opts);
    sts_archive *a;
    if (!sts__mem_valid(&m)) return sts__failx(err, STS_RULE_ARGUMENT, "the allocator needs all three hooks or none");
    if (!(a = (sts_archive *)sts__alloc(&m, sizeof *a))) return sts__nomem(err, "the archive");
    memset(a, 0, sizeof *a);
    a->mem = m;
    if (opts) a->opts = *opts;
    *out = a;
    return STS_OK;
}
/* Every provider's probe; the winner (most confident, first registered on a tie) or SIZE_MAX. */
STS__PRIVATE size_t sts__ar_probe_all(const sts_registry *reg, const sts_builder *b, sts_probe_result *res,
                                      size_t nres, sts_probe_result *best) {
    sts_probe_input pi;
    size_t i, n = sts_registry_count(reg), win = (size_t)-1;
    memset(&pi, 0, sizeof pi);
    pi.prefix = b->prefix;
    pi.prefix_len = b->prefix_len;
    pi.size = sts_builder_size(b);
    pi.path = b->path;
    pi.is_dir = b->is_dir;
    for (i = 0; i < n; i++) {
        const sts_provider *p = sts_registry_at(reg, i);
        sts_probe_result r;
        memset(&r, 0, sizeof r);
        p->probe(p->user, &pi, &r);
        r.reason[sizeof r.reason - 1] = 0;
        if (r.confidence < 0) r.confidence = 0;
        if (r.confidence > 100) r.confidence = 100;
        if (res && i < nres) res[i] = r;
        if (r.supported && (win == (size_t)-1 || r.confidence > best->confidence)) { win = i; *best = r; }
    }
    return win;
}
#define STS__AR_GROUP 16u          /* the providers whose reasons are grouped in the message */
STS__PRIVATE void sts__ar_put_name(sts__buf *m, const sts_provider *p) {
    const char *nm = p->name ? p->name : p->format;
    sts__buf_put(m, nm, strlen(nm));
}
STS__PRIVATE sts_result sts__ar_none(const sts_registry *reg, const sts_builder *b, sts_error *err) {
    char msg[1024];
    sts__buf m;
    size_t i, j, n = sts_registry_count(reg), ng = n < STS__AR_GROUP ? n : STS__AR_GROUP;
    sts_probe_result r[STS__AR_GROUP], x;
    sts_probe_input pi;
    memset(&pi, 0, sizeof pi);
    pi.prefix = b->prefix; pi.prefix_len = b->prefix_len; pi.size = sts_builder_size(b);
    pi.path = b->path; pi.is_dir = b->is_dir;
    m.p = msg; m.n = 0; m.cap = sizeof msg;
    msg[0] = 0;
    for (i = 0; i < ng; i++) {
        const sts_provider *p = sts_registry_at(reg, i);
        memset(&r[i], 0, sizeof r[i]);
        p->probe(p->user, &pi, &r[i]);
        r[i].reason[sizeof r[i].reason - 1] = 0;
    }
    /* each reason once, after the names of the providers that gave it ("safetensors, npy: a folder,
       not a file"): the message's 255 characters then hold every built-in's reason */
    for (i = 0; i < n; i++) {
        const char *why;
        for (j = 0; j < i && i < ng && strcmp(r[j].reason, r[i].reason) != 0; j++) continue;
        if (i < ng && j < i) continue;  /* said already */
        if (m.n) sts__buf_put(&m, "; ", 2);
        sts__ar_put_name(&m, sts_registry_at(reg, i));
        if (i < ng) {
            for (j = i + 1; j < ng; j++)
                if (strcmp(r[j].reason, r[i].reason) == 0) {
                    sts__buf_put(&m, ", ", 2);
                    sts__ar_put_name(&m, sts_registry_at(reg, j));
                }
            why = r[i].reason;
        } else {
            const sts_provider *p = sts_registry_at(reg, i);
            memset(&x, 0, sizeof x);
            p->probe(p->user, &pi, &x);
            x.reason[sizeof x.reason - 1] = 0;
            why = x.reason;
        }
        sts__buf_put(&m, ": ", 2);
        sts__buf_put(&m, why, strlen(why));
    }
    if (!n) sts__buf_put(&m, "the registry is empty", 21);
    /* the reasons first: a long path is what the message's 255 characters cut, not the last reasons */
    return sts__failx(err, STS_RULE_PROBE, "no provider opens the input (%s): %q", msg,
                      b->path ? b->path : sts__ar_label(b->a, 0), strlen(b->path ? b->path : sts__ar_label(b->a, 0)));
}
STSDEF sts_result sts_probe(const sts_registry *r, const sts_input *in, const sts_options *opts,
                            sts_probe_result *results, size_t nresults, size_t *winner, sts_error *err) {
    sts_archive *a;
    sts_builder b;
    sts_probe_result best;
    uint8_t pbuf[STS_PROBE_BYTES];
    size_t win;
    sts_result res;
    if (!in) return sts__failx(err, STS_RULE_ARGUMENT, "sts_probe needs an input");
    if ((res = sts__ar_new(opts, &a, err)) != STS_OK) return res;
    memset(&b, 0, sizeof b);
    b.a = a;
    if ((res = sts__ar_input(a, in, &b, pbuf, err)) == STS_OK) {
        win = sts__ar_probe_all(r, &b, results, nresults, &best);
        if (winner) *winner = win;
        res = win == (size_t)-1 ? sts__ar_none(r, &b, err) : STS_OK;
    }
    sts_archive_close(a);
    return res;
}
STSDEF sts_result sts_archive_open(const sts_registry *reg, const sts_input *in, const sts_options *opts,
                                   sts_archive **out, sts_error *err) {
    sts_archive *a;
    sts_builder b;
    sts_probe_result best;
    uint8_t pbuf[STS_PROBE_BYTES];
    const sts_provider *p;
    size_t win;
    sts_result r;
    if (!in || !out) return sts__failx(err, STS_RULE_ARGUMENT, "sts_archive_open needs an input and out");
    if ((r = sts__ar_new(opts, &a, err)) != STS_OK) return r;
    memset(&b, 0, sizeof b);
    b.a = a;
    if ((r = sts__ar_input(a, in, &b, pbuf, err)) != STS_OK) goto fail;
    if ((win = sts__ar_probe_all(reg, &b, NULL, 0, &best)) == (size_t)-1) { r = sts__ar_none(reg, &b, err); goto fail; }
    p = sts_registry_at(reg, win);
    a->version = best.version;
    if (!(a->format = sts__ar_strdup(a, p->format, strlen(p->format))) ||
        !(a->pname = sts__ar_strdup(a, p->name ? p->name : p->format, strlen(p->name ? p->name : p->format)))) {
        r = sts__nomem(err, "the format id");
        goto fail;
    }
    if ((r = p->open(p->user, &b, err)) != STS_OK) goto fail;
    if (b.ndescs || (!a->ix.slots && !a->direct && !a->load && a->nfiles)) {
        if (a->nents) {
            r = sts__failx(err, STS_RULE_ARGUMENT, "a provider adds tensors through the builder only");
            goto fail;
        }
        if ((r = sts__ar_finish_eager(a, &b, err)) != STS_OK) goto fail;
    }
    sts__free(&a->mem, b.descs, b.descs_cap * sizeof *b.descs);
    sts__ok(err);
    *out = a;
    return STS_OK;
fail:
    sts__free(&a->mem, b.descs, b.descs_cap * sizeof *b.descs);
    sts_archive_close(a);
    return r;
}

/* >>gguf_write ---- the GGUF writer: sts_tensor_spec and sts_meta as a GGUF v3 file ----
   Everything is checked before a byte goes out: the header is measured, then rendered into one
   buffer of its exact size, then written with the padding, then each tensor's bytes (the
   caller's pointer or producer, as sts_write streams them) and its padding. Little-endian by
   byte assembly, whatever the host. */
#define STS__GW_NONE 0xFFFFFFFFu
typedef struct sts__gw {            /* the header: measured (o NULL) or rendered */
    uint8_t *o;
    uint64_t n;
} sts__gw;
STS__INLINE void sts__gw_bytes(sts__gw *w, const void *p, size_t len) {
    if (w->o && len) memcpy(w->o + w->n, p, len);
    w->n += len;
}
STS__INLINE void sts__gw_u(sts__gw *w, uint64_t v, unsigned bytes) {
    unsigned i;
    if (w->o)
        for (i = 0; i < bytes; i++) w->o[w->n + i] = (uint8_t)(v >> (8 * i));
    w->n += bytes;
}
STS__INLINE void sts__gw_str(sts__gw *w, const char *s, size_t len) {
    sts__gw_u(w, len, 8);
    sts__gw_bytes(w, s, len);
}
typedef struct sts__gwplan {
    sts__mem mem;
    uint32_t *vt;                   /* per KV: its value type, then its items' type (STS__GW_NONE) */
    uint32_t *gt;                   /* per tensor: its ggml type id */
    uint64_t *off;                  /* per tensor: its offset in the data section */
    uint8_t *hdr;                   /* the header and the padding before the data section */
    size_t vt_bytes, gt_bytes, off_bytes, hdr_bytes;
    uint64_t align, data_at, data_len;
} sts__gwplan;
STS__PRIVATE void sts__gw_free(sts__gwplan *p) {
    sts__free(&p->mem, p->vt, p->vt_bytes);
    sts__free(&p->mem, p->gt, p->gt_bytes);
    sts__free(&p->mem, p->off, p->off_bytes);
    sts__free(&p->mem, p->hdr, p->hdr_bytes);
    p->vt = p->gt = NULL;
    p->off = NULL;
    p->hdr = NULL;
}
/* The GGUF type id of a safetensors dtype, or STS__GW_NONE. */
STS__PRIVATE uint32_t sts__gw_ggml_type(sts_dtype d) {
    switch (d) {
    case STS_DTYPE_F32: return 0;
    case STS_DTYPE_F16: return 1;
    case STS_DTYPE_I8: return 24;
    case STS_DTYPE_I16: return 25;
    case STS_DTYPE_I32: return 26;
    case STS_DTYPE_I64: return 27;
    case STS_DTYPE_F64: return 28;
    case STS_DTYPE_BF16: return 30;
    default: return STS__GW_NONE;
    }
}
/* The value type that m is written as (item: an array's items' type, given), or STS__GW_NONE
   with *why. Range checks included. */
STS__PRIVATE uint32_t sts__gw_vtype(const sts_meta *m, uint32_t want, const char **why) {
    uint32_t vt = want != STS__GW_NONE ? want : m->format_type;
    int given = want != STS__GW_NONE || m->format_type != 0;
    *why = NULL;
    switch (m->type) {
    case STS_META_STRING:
        if (given && vt != 8) break;
        return 8;
    case STS_META_BOOL:
        if (given && vt != 7) break;
        if (m->u > 1) { *why = "a BOOL is 0 or 1"; return STS__GW_NONE; }
        return 7;
    case STS_META_FLOAT:
        if (!given) return 12;
        if (vt != 6 && vt != 12) break;
        return vt;
    case STS_META_UINT:
        if (!given) return 10;
        if (vt != 0 && vt != 2 && vt != 4 && vt != 10) break;
        if ((vt == 0 && m->u > 0xFFu) || (vt == 2 && m->u > 0xFFFFu) || (vt == 4 && m->u > 0xFFFFFFFFu)) {
            *why = "the value does not fit its GGUF type";
            return STS__GW_NONE;
        }
        return vt;
    case STS_META_INT:
        if (!given) return 11;
        if (vt != 1 && vt != 3 && vt != 5 && vt != 11) break;
        if ((vt == 1 && (m->i < -128 || m->i > 127)) || (vt == 3 && (m->i < -32768 || m->i > 32767)) ||
            (vt == 5 && (m->i < -(int64_t)0x80000000 || m->i > 0x7FFFFFFF))) {
            *why = "the value does not fit its GGUF type";
            return STS__GW_NONE;
        }
        return vt;
    case STS_META_ARRAY:
        if (want != STS__GW_NONE) {
            *why = "an array's items are not arrays (ggml refuses nested arrays)";
            return STS__GW_NONE;
        }
        if (m->format_type != 0 && m->format_type != STS__GG_ARRAY) break;
        return STS__GG_ARRAY;
    default:
        *why = "the entry's type is not one of sts_meta_type's";
        return STS__GW_NONE;
    }
    *why = "its format_type is not a GGUF type of its kind";
    return STS__GW_NONE;
}
/* A value of type vt (not ARRAY). */
STS__PRIVATE void sts__gw_value(sts__gw *w, const sts_meta *m, uint32_t vt) {
    float f32;
    uint32_t b32;
    uint64_t b64;
    switch (vt) {
    case 8: sts__gw_str(w, m->str, m->str_len); break;
    case 6: f32 = (float)m->f; memcpy(&b32, &f32, 4); sts__gw_u(w, b32, 4); break;
    case 12: memcpy(&b64, &m->f, 8); sts__gw_u(w, b64, 8); break;
    case 1: case 3: case 5: case 11: sts__gw_u(w, (uint64_t)m->i, sts__gg_vsize[vt]); break;
    default: sts__gw_u(w, m->u, sts__gg_vsize[vt]); break;  /* UINT*, BOOL */
    }
}
/* The whole header (measured when w->o is NULL). */
STS__PRIVATE void sts__gw_header(sts__gw *w, const sts__gwplan *pl, const sts_tensor_spec *specs, size_t n,
                                 const sts_meta *kvs, size_t n_kv) {
    size_t i;
    uint64_t k;
    uint32_t j;
    sts__gw_bytes(w, "GGUF", 4);
    sts__gw_u(w, 3, 4);
    sts__gw_u(w, n, 8);
    sts__gw_u(w, n_kv, 8);
    for (i = 0; i < n_kv; i++) {
        const sts_meta *m = &kvs[i];
        uint32_t vt = pl->vt[2 * i];
        sts__gw_str(w, m->key, m->key_len);
        sts__gw_u(w, vt, 4);
        if (vt != STS__GG_ARRAY) { sts__gw_value(w, m, vt); continue; }
        sts__gw_u(w, pl->vt[2 * i + 1], 4);
        sts__gw_u(w, m->count, 8);
        for (k = 0; k < m->count; k++) sts__gw_value(w, &m->items[k], pl->vt[2 * i + 1]);
    }
    for (i = 0; i < n; i++) {
        const sts_tensor_spec *s = &specs[i];
        sts__gw_str(w, s->name, s->name_len);
        sts__gw_u(w, s->rank, 4);
        for (j = 0; j < s->rank; j++) sts__gw_u(w, s->shape[s->rank - 1 - j], 8);  /* ne0, the innermost, first */
        sts__gw_u(w, pl->gt[i], 4);
        sts__gw_u(w, pl->off[i], 8);
    }
}
/* Duplicate names among n (tensors when specs, else keys): the first repeated index, or SIZE_MAX;
   *oom on allocation failure. */
STS__PRIVATE size_t sts__gw_dup(const sts__mem *m, const sts_tensor_spec *specs, const sts_meta *kvs, size_t n,
                                int *oom) {
    size_t cap = 16, bytes, i, found = (size_t)-1;
    size_t *slot;
    *oom = 0;
    while (cap < n * 2) cap *= 2;
    if (!sts__mulsz(cap, sizeof *slot, &bytes) || !(slot = (size_t *)sts__alloc(m, bytes))) { *oom = 1; return found; }
    memset(slot, 0, bytes);
    for (i = 0; i < n && found == (size_t)-1; i++) {
        const char *nm = specs ? specs[i].name : kvs[i].key;
        size_t nl = specs ? specs[i].name_len : kvs[i].key_len, q;
        for (q = (size_t)sts__hash(nm, nl, 0) & (cap - 1); slot[q]; q = (q + 1) & (cap - 1)) {
            size_t o = slot[q] - 1;
            const char *on = specs ? specs[o].name : kvs[o].key;
            size_t ol = specs ? specs[o].name_len : kvs[o].key_len;
            if (ol == nl && memcmp(on, nm, nl) == 0) { found = i; break; }
        }
        slot[q] = i + 1;
    }
    sts__free(m, slot, bytes);
    return found;
}
STS__PRIVATE sts_result sts__gw_bad(sts_error *err, sts_rule rule, const char *fmt, ...) {
    sts_result r;
    va_list ap;
    va_start(ap, fmt);
    r = sts__failv(err, STS_ERR_INVALID_ARGUMENT, rule, STS_OFFSET_UNKNOWN, fmt, ap);
    va_end(ap);
    return r;
}
/* Checks everything and lays the file out: the header rendered, the offsets, the total. */
STS__PRIVATE sts_result sts__gw_plan(sts__gwplan *pl, const sts_tensor_spec *specs, size_t n, const sts_meta *kvs,
                                     size_t n_kv, const sts_options *opts, sts_error *err) {
    size_t i, dup;
    uint64_t k, at = 0;
    int oom;
    sts__gw w;
    memset(pl, 0, sizeof *pl);
    pl->mem = sts__mem_from(opts);
    pl->align = 32;
    if (!sts__mem_valid(&pl->mem))
        return sts__failx(err, STS_RULE_ARGUMENT, "the allocator needs all three hooks or none");
    if ((n && !specs) || (n_kv && !kvs))
        return sts__failx(err, STS_RULE_ARGUMENT, "sts_gguf_write: NULL specs or kvs with a count");
    if (!sts__mulsz(n_kv ? n_kv : 1, 2 * sizeof *pl->vt, &pl->vt_bytes) ||
        !sts__mulsz(n ? n : 1, sizeof *pl->gt, &pl->gt_bytes) ||
        !sts__mulsz(n ? n : 1, sizeof *pl->off, &pl->off_bytes) ||
        !(pl->vt = (uint32_t *)sts__alloc(&pl->mem, pl->vt_bytes)) ||
        !(pl->gt = (uint32_t *)sts__alloc(&pl->mem, pl->gt_bytes)) ||
        !(pl->off = (uint64_t *)sts__alloc(&pl->mem, pl->off_bytes))) {
        sts__gw_free(pl);
        return sts__nomem(err, "the GGUF writer's layout");
    }
#define STS__GW_FAIL(call) do { sts_result r_ = (call); sts__gw_free(pl); return r_; } while (0)
    for (i = 0; i < n_kv; i++) {  /* the KVs: keys, types, items */
        const sts_meta *m = &kvs[i];
        const char *why;
        uint32_t vt, it = STS__GW_NONE;
        if (!m->key || !m->key_len) STS__GW_FAIL(sts__gw_bad(err, STS_RULE_GGUF_KEY, "KV %z has no key", i));
        /* ggml reads keys up to a NUL ("general.alignment\0x" is its alignment): none is written */
        if (m->key_len > STS__GG_MAX_STRING || sts__utf8_check((const uint8_t *)m->key, m->key_len) != m->key_len ||
            memchr(m->key, 0, m->key_len))
            STS__GW_FAIL(sts__gw_bad(err, STS_RULE_WRITE_TEXT, "key %q is not UTF-8 without NUL of at most 2^30 bytes",
                                     m->key, m->key_len));
        vt = sts__gw_vtype(m, STS__GW_NONE, &why);
        if (m->key_len == 17 && memcmp(m->key, "general.alignment", 17) == 0) {
            if (m->type != STS_META_UINT || (m->format_type != 0 && m->format_type != 4))
                STS__GW_FAIL(sts__gw_bad(err, STS_RULE_GGUF_ALIGNMENT, "general.alignment is a UINT32"));
            if (m->u < 8 || m->u > 0x80000000u || (m->u & (m->u - 1)) || m->u % 8)
                STS__GW_FAIL(sts__gw_bad(err, STS_RULE_GGUF_ALIGNMENT, "general.alignment %U is not a power of two "
                                         "and a multiple of 8", m->u));
            vt = 4;
            pl->align = m->u;
        }
        if (vt == STS__GW_NONE)
            STS__GW_FAIL(sts__gw_bad(err, STS_RULE_GGUF_VALUE_TYPE, "KV %q: %s", m->key, m->key_len, why));
        if (vt == 8 && (m->str_len > STS__GG_MAX_STRING || (m->str_len && !m->str) ||
                        sts__utf8_check((const uint8_t *)m->str, m->str_len) != m->str_len))
            STS__GW_FAIL(sts__gw_bad(err, STS_RULE_GGUF_STRING, "KV %q: a STRING is UTF-8 of at most 2^30 bytes",
                                     m->key, m->key_len));
        if (vt == STS__GG_ARRAY) {
            if (m->count > STS__GG_MAX_ITEMS || (m->count && !m->items))
                STS__GW_FAIL(sts__gw_bad(err, STS_RULE_GGUF_ARRAY, "KV %q: an array has at most 2^30 items (%U)",
                                         m->key, m->key_len, m->count));
            if (m->format_type == STS__GG_ARRAY) it = (uint32_t)m->u;
            else if (m->count) it = sts__gw_vtype(&m->items[0], STS__GW_NONE, &why);
            if (it == STS__GW_NONE || it > 12 || it == STS__GG_ARRAY)
                STS__GW_FAIL(sts__gw_bad(err, STS_RULE_GGUF_VALUE_TYPE, "KV %q: the array's items have no GGUF type "
                                         "(%s)", m->key, m->key_len, m->count ? "nested, or not one of the 13"
                                                                              : "an empty array needs u"));
            for (k = 0; k < m->count; k++) {
                const sts_meta *x = &m->items[k];
                if (sts__gw_vtype(x, it, &why) == STS__GW_NONE)
                    STS__GW_FAIL(sts__gw_bad(err, STS_RULE_GGUF_VALUE_TYPE, "KV %q item %U: %s", m->key, m->key_len,
                                             k, why ? why : "not of the array's item type"));
                if (it == 8 && (x->str_len > STS__GG_MAX_STRING || (x->str_len && !x->str) ||
                                sts__utf8_check((const uint8_t *)x->str, x->str_len) != x->str_len))
                    STS__GW_FAIL(sts__gw_bad(err, STS_RULE_GGUF_STRING, "KV %q item %U: a STRING is UTF-8 of at most "
                                             "2^30 bytes", m->key, m->key_len, k));
            }
        }
        pl->vt[2 * i] = vt;
        pl->vt[2 * i + 1] = it;
    }
    if ((dup = sts__gw_dup(&pl->mem, NULL, kvs, n_kv, &oom)) != (size_t)-1 || oom)
        STS__GW_FAIL(oom ? sts__nomem(err, "a key set")
                         : sts__fail_code(err, STS_ERR_DUPLICATE_KEY, STS_RULE_GGUF_DUPLICATE_KEY, STS_OFFSET_UNKNOWN,
                                          "key %q appears twice", kvs[dup].key, kvs[dup].key_len));
    for (i = 0; i < n; i++) {  /* the tensors: names, types, shapes, sizes, offsets */
        const sts_tensor_spec *s = &specs[i];
        uint64_t numel = 1, nbytes, padded;
        uint32_t j;
        if ((s->name_len && !s->name) || s->name_len > STS__GG_MAX_NAME - 1)
            STS__GW_FAIL(sts__gw_bad(err, STS_RULE_GGUF_NAME, "tensor %q: a name is at most 63 bytes (%z)",
                                     s->name ? s->name : "", s->name ? s->name_len : 0, s->name_len));
        if (sts__utf8_check((const uint8_t *)s->name, s->name_len) != s->name_len ||
            (s->name_len && memchr(s->name, 0, s->name_len)))
            STS__GW_FAIL(sts__gw_bad(err, STS_RULE_WRITE_TEXT, "tensor %q: names are UTF-8 without NUL", s->name,
                                     s->name_len));
        if ((unsigned)s->dtype >= (unsigned)STS_DTYPE_COUNT ||
            (pl->gt[i] = sts__gw_ggml_type(s->dtype)) == STS__GW_NONE)
            STS__GW_FAIL(sts__gw_bad(err, STS_RULE_WRITE_DTYPE, "tensor %q: %s has no GGUF type (GGUF has F32, F16, "
                                     "BF16, F64, I8, I16, I32, I64)", s->name, s->name_len,
                                     (unsigned)s->dtype < (unsigned)STS_DTYPE_COUNT ? sts_dtype_name(s->dtype) : "?"));
        if (s->rank > 4)
            STS__GW_FAIL(sts__gw_bad(err, STS_RULE_GGUF_N_DIMS, "tensor %q has %U dimensions; GGUF takes at most 4",
                                     s->name, s->name_len, (uint64_t)s->rank));
        if (s->rank && !s->shape)
            STS__GW_FAIL(sts__gw_bad(err, STS_RULE_WRITE_DTYPE, "tensor %q: rank %U without a shape", s->name,
                                     s->name_len, (uint64_t)s->rank));
        for (j = 0; j < s->rank; j++) {
            if (s->shape[j] > (uint64_t)INT64_MAX)
                STS__GW_FAIL(sts__gw_bad(err, STS_RULE_GGUF_SHAPE, "tensor %q: dimension %U is 2^63 or more",
                                         s->name, s->name_len, (uint64_t)j));
            if (!sts__mul64(numel, s->shape[j], &numel))
                STS__GW_FAIL(sts__gw_bad(err, STS_RULE_GGUF_OVERFLOW, "tensor %q: its element count overflows",
                                         s->name, s->name_len));
        }
        if (numel >= (uint64_t)INT64_MAX || !sts__mul64(numel, sts_dtype_bits(s->dtype) / 8, &nbytes) ||
            !sts__add64(nbytes, pl->align - 1, &padded))
            STS__GW_FAIL(sts__gw_bad(err, STS_RULE_GGUF_OVERFLOW, "tensor %q: its byte size overflows", s->name,
                                     s->name_len));
        if (s->data_size != nbytes || (nbytes && !s->data && !s->produce))
            STS__GW_FAIL(sts__gw_bad(err, STS_RULE_WRITE_DATA_SIZE, "tensor %q: data_size %U, the shape's bytes %U%s",
                                     s->name, s->name_len, s->data_size, nbytes,
                                     nbytes && !s->data && !s->produce ? ", and no data or producer" : ""));
        padded &= ~(pl->align - 1);
        pl->off[i] = at;
        if (!sts__add64(at, padded, &at))
            STS__GW_FAIL(sts__gw_bad(err, STS_RULE_GGUF_OVERFLOW, "the data section's size overflows at tensor %q",
                                     s->name, s->name_len));
    }
    if ((dup = sts__gw_dup(&pl->mem, specs, NULL, n, &oom)) != (size_t)-1 || oom)
        STS__GW_FAIL(oom ? sts__nomem(err, "a name set")
                         : sts__fail_code(err, STS_ERR_DUPLICATE_KEY, STS_RULE_GGUF_DUPLICATE_NAME, STS_OFFSET_UNKNOWN,
                                          "tensor %q appears twice", specs[dup].name, specs[dup].name_len));
    pl->data_len = at;
    w.o = NULL;
    w.n = 0;
    sts__gw_header(&w, pl, specs, n, kvs, n_kv);
    pl->data_at = (w.n + pl->align - 1) & ~(pl->align - 1);
    if (pl->data_at < w.n || pl->data_at > (uint64_t)((size_t)-1 >> 1) || !sts__add64(pl->data_at, at, &k))
        STS__GW_FAIL(sts__gw_bad(err, STS_RULE_GGUF_OVERFLOW, "the file's size overflows"));
#undef STS__GW_FAIL
    return STS_OK;
}
/* The header rendered (once the plan stands). */
STS__PRIVATE sts_result sts__gw_render(sts__gwplan *pl, const sts_tensor_spec *specs, size_t n, const sts_meta *kvs,
                                       size_t n_kv, sts_error *err) {
    sts__gw w;
    pl->hdr_bytes = (size_t)pl->data_at;
    if (!(pl->hdr = (uint8_t *)sts__alloc(&pl->mem, pl->hdr_bytes ? pl->hdr_bytes : 1))) {
        pl->hdr_bytes = 0;
        return sts__nomem(err, "the GGUF header");
    }
    w.o = pl->hdr;
    w.n = 0;
    sts__gw_header(&w, pl, specs, n, kvs, n_kv);
    memset(pl->hdr + w.n, 0, (size_t)(pl->data_at - w.n));  /* the padding is zeros (gguf.strict_padding) */
    return STS_OK;
}
STS__PRIVATE sts_result sts__gw_zeros(const sts_sink *sink, uint64_t len, sts_error *err) {
    static const uint8_t zeros[4096] = { 0 };
    while (len) {
        size_t c = len < sizeof zeros ? (size_t)len : sizeof zeros;
        sts_result r = sink->write(sink->user, zeros, c);
        if (r != STS_OK) return sts__fail_code(err, r, STS_RULE_IO, STS_OFFSET_UNKNOWN, "the sink failed (%s)",
                                               sts_result_name(r));
        len -= c;
    }
    return STS_OK;
}
STS__PRIVATE sts_result sts__gw_emit(const sts__gwplan *pl, const sts_tensor_spec *specs, size_t n,
                                     const sts_sink *sink, sts_result (*flush)(void *user), sts_error *err) {
    size_t i;
    sts_result r = sink->write(sink->user, pl->hdr, pl->hdr_bytes);
    if (r != STS_OK)
        return sts__fail_code(err, r, STS_RULE_IO, 0, "the sink failed writing the header (%s)", sts_result_name(r));
    for (i = 0; i < n; i++) {
        const sts_tensor_spec *s = &specs[i];
        uint64_t at = pl->data_at + pl->off[i], end = i + 1 < n ? pl->off[i + 1] : pl->data_len;
        if (s->data) {
            const uint8_t *p = (const uint8_t *)s->data;
            uint64_t left = s->data_size;
            while (left) {
                size_t c = left > ((uint64_t)1 << 30) ? ((size_t)1 << 30) : (size_t)left;
                if ((r = sink->write(sink->user, p, c)) != STS_OK)
                    return sts__fail_code(err, r, STS_RULE_IO, at, "the sink failed writing tensor %q (%s)", s->name,
                                          s->name_len, sts_result_name(r));
                p += c;
                left -= c;
            }
        } else if (s->data_size) {
            sts_stream st;
            st.sink = sink; st.flush = flush; st.left = s->data_size; st.failed = STS_OK; st.sink_failed = 0;
            r = s->produce(s->produce_user, s, &st);
            if (st.sink_failed)
                return sts__fail_code(err, st.failed, STS_RULE_IO, at, "the sink failed writing tensor %q (%s)",
                                      s->name, s->name_len, sts_result_name(st.failed));
            if (r != STS_OK)
                return sts__fail_code(err, r, STS_RULE_WRITE_PRODUCER, at, "the producer of tensor %q failed (%s)",
                                      s->name, s->name_len, sts_result_name(r));
            if (st.failed != STS_OK || st.left)
                return sts__fail(err, STS_RULE_WRITE_PRODUCER, at, "the producer of tensor %q emitted %s its %U bytes",
                                 s->name, s->name_len, st.left ? "fewer than" : "more than", s->data_size);
        }
        if ((r = sts__gw_zeros(sink, end - pl->off[i] - s->data_size, err)) != STS_OK) return r;
    }
    if (flush && (r = flush(sink->user)) != STS_OK)
        return sts__fail_code(err, r, STS_RULE_IO, STS_OFFSET_UNKNOWN, "the sink failed (%s)", sts_result_name(r));
    return STS_OK;
}
STSDEF sts_result sts_gguf_write_size(const sts_tensor_spec *specs, size_t n, const sts_meta *kvs, size_t n_kv,
                                      const sts_options *opts, uint64_t *file_size, sts_error *err) {
    sts__gwplan pl;
    sts_result r = sts__gw_plan(&pl, specs, n, kvs, n_kv, opts, err);
    if (r != STS_OK) return r;
    if (file_size) *file_size = pl.data_at + pl.data_len;
    sts__gw_free(&pl);
    sts__ok(err);
    return STS_OK;
}
STSDEF sts_result sts_gguf_write(const sts_tensor_spec *specs, size_t n, const sts_meta *kvs, size_t n_kv,
                                 const sts_sink *sink, const sts_options *opts, sts_error *err) {
    sts__gwplan pl;
    sts_result r;
    if (!sink || !sink->write) return sts__failx(err, STS_RULE_ARGUMENT, "sts_gguf_write needs a sink with write");
    if ((r = sts__gw_plan(&pl, specs, n, kvs, n_kv, opts, err)) != STS_OK) return r;
    if ((r = sts__gw_render(&pl, specs, n, kvs, n_kv, err)) == STS_OK) r = sts__gw_emit(&pl, specs, n, sink, NULL, err);
    sts__gw_free(&pl);
    if (r == STS_OK) sts__ok(err);
    return r;
}
#ifndef STS_NO_STDIO
typedef struct sts__gw_job { const sts__gwplan *pl; const sts_tensor_spec *specs; size_t n; } sts__gw_job;
STS__PRIVATE sts_result sts__gw_emit_job(void *ctx, const sts_sink *sink, sts_result (*flush)(void *user),
                                         sts_error *err) {
    const sts__gw_job *j = (const sts__gw_job *)ctx;
    return sts__gw_emit(j->pl, j->specs, j->n, sink, flush, err);
}
STSDEF sts_result sts_gguf_write_path(const char *path, const sts_tensor_spec *specs, size_t n, const sts_meta *kvs,
                                      size_t n_kv, const sts_options *opts, sts_error *err) {
    sts__gwplan pl;
    sts__gw_job job;
    sts_result r;
    if (!path) return sts__failx(err, STS_RULE_ARGUMENT, "sts_gguf_write_path needs a path");
    if ((r = sts__gw_plan(&pl, specs, n, kvs, n_kv, opts, err)) != STS_OK) return r;
    job.pl = &pl;
    job.specs = specs;
    job.n = n;
    if ((r = sts__gw_render(&pl, specs, n, kvs, n_kv, err)) == STS_OK)
        r = sts__write_file_atomic(path, &pl.mem, opts, sts__gw_emit_job, &job, err);
    sts__gw_free(&pl);
    if (r == STS_OK) sts__ok(err);
    return r;
}
#endif

/* ==============================================================================================
   >>lineage  11. lineage
   Owns: the dataset record MLflow stores (sts_dataset_lineage): the manifest's columns as MLflow
   tensor specs, the local or URI source, MetaDataset's digest, the profile, and JSON text written
   byte for byte as Python's json.dumps writes it.
   May call: util, json, dtype, io, codec (SHA-256), dataset common, dataset write.
   ============================================================================================== */
#ifndef STS_NO_STDIO
STSDEF const char *sts_lineage_dtype_name(sts_dtype d) {
    static const char *const names[STS_DTYPE_COUNT] = {
        "bool", "float4_e2m1fn", "float6_e2m3fn", "float6_e3m2fn", "uint8", "int8", "float8_e5m2",
        "float8_e4m3fn", "float8_e8m0fnu", "float8_e4m3fnuz", "float8_e5m2fnuz", "int16", "uint16", "float16",
        "bfloat16", "int32", "uint32", "float32", "complex64", "float64", "int64", "uint64"
    };
    return (unsigned)d < STS_DTYPE_COUNT ? names[d] : NULL;
}
/* A Python str as json.dumps writes it with ensure_ascii: quoted; \" \\ \b \f \n \r \t; every other
   character outside ' '..'~' as \u and four lowercase hex digits (astral ones as a surrogate pair). Bytes
   that are not UTF-8 become U+DC80..U+DCFF first, as Python's surrogateescape decodes file names. */
STS__PRIVATE void sts__py_str(sts__out *o, const char *text, size_t n) {
    static const char hx[] = "0123456789abcdef";
    const uint8_t *s = (const uint8_t *)text;
    size_t i = 0;
    sts__out_put(o, "\"", 1);
    while (i < n) {
        uint32_t c = s[i];
        size_t len = c < 0x80 ? 1 : c >= 0xF0 ? 4 : c >= 0xE0 ? 3 : 2;
        char u[12];
        if (len > 1) {
            if (len <= n - i && sts__utf8_check(s + i, len) == len) {
                c = len == 2 ? (c & 0x1F) : len == 3 ? (c & 0x0F) : (c & 0x07);
                for (size_t k = 1; k < len; k++) c = c << 6 | (s[i + k] & 0x3F);
            } else {
                c = 0xDC00 + c;
                len = 1;
            }
        }
        i += len;
        if (c >= 0x20 && c <= 0x7E && c != '"' && c != '\\') { char ch = (char)c; sts__out_put(o, &ch, 1); continue; }
        switch (c) {
        case '"': sts__out_put(o, "\\\"", 2); continue;
        case '\\': sts__out_put(o, "\\\\", 2); continue;
        case '\b': sts__out_put(o, "\\b", 2); continue;
        case '\f': sts__out_put(o, "\\f", 2); continue;
        case '\n': sts__out_put(o, "\\n", 2); continue;
        case '\r': sts__out_put(o, "\\r", 2); continue;
        case '\t': sts__out_put(o, "\\t", 2); continue;
        default: break;
        }
        if (c >= 0x10000) {
            uint32_t v = c - 0x10000, hi = 0xD800 + (v >> 10), lo = 0xDC00 + (v & 0x3FF), k;
            for (k = 0; k < 2; k++) {
                uint32_t x = k ? lo : hi;
                u[0] = '\\'; u[1] = 'u';
                u[2] = hx[x >> 12]; u[3] = hx[x >> 8 & 15]; u[4] = hx[x >> 4 & 15]; u[5] = hx[x & 15];
                sts__out_put(o, u, 6);
            }
        } else {
            u[0] = '\\'; u[1] = 'u';
            u[2] = hx[c >> 12]; u[3] = hx[c >> 8 & 15]; u[4] = hx[c >> 4 & 15]; u[5] = hx[c & 15];
            sts__out_put(o, u, 6);
        }
    }
    sts__out_put(o, "\"", 1);
}
STS__PRIVATE void sts__py_cstr(sts__out *o, const char *s) { sts__py_str(o, s, strlen(s)); }
/* Schema.to_dict() of the manifest's columns, as json.dumps writes the list: [{"name": ...,
   "type": "tensor", "tensor-spec": {"dtype": ..., "shape": [...]}}, ...]; in batch mode the
   leading dimension (the batch) is -1. */
STS__PRIVATE void sts__lineage_schema(sts__out *o, const sts__manifest *mf) {
    size_t i;
    uint32_t d;
    sts__out_put(o, "[", 1);
    for (i = 0; i < mf->ncols; i++) {
        const sts__scol *c = &mf->cols[i];
        if (i) sts__out_put(o, ", ", 2);
        sts__out_cstr(o, "{\"name\": ");
        sts__py_str(o, c->name, c->name_len);
        sts__out_cstr(o, ", \"type\": \"tensor\", \"tensor-spec\": {\"dtype\": ");
        sts__py_cstr(o, sts_lineage_dtype_name(c->dtype));
        sts__out_cstr(o, ", \"shape\": [");
        for (d = 0; d < c->rank; d++) {
            if (d) sts__out_put(o, ", ", 2);
            sts__out_i64(o, d == 0 && !mf->kv ? -1 : c->dims[d]);
        }
        sts__out_cstr(o, "]}}");
    }
    sts__out_put(o, "]", 1);
}
/* The scheme of a URI (RFC 3986: a letter, then letters, digits, + - .; before ':'), lowercased as
   urllib.parse.urlparse gives it; "local" for none or "file". Returns 0 when uri has no scheme. */
STS__PRIVATE size_t sts__uri_scheme(const char *uri, char *out, size_t cap) {
    size_t n = 0;
    if (!((uri[0] | 0x20) >= 'a' && (uri[0] | 0x20) <= 'z')) return 0;
    while (uri[n] && uri[n] != ':') {
        char c = uri[n];
        if (!((c | 0x20) >= 'a' && (c | 0x20) <= 'z') && !(c >= '0' && c <= '9') && c != '+' && c != '-' && c != '.')
            return 0;
        n++;
    }
    if (uri[n] != ':' || n + 1 > cap) return 0;  /* a scheme longer than cap - 1: none */
    for (size_t i = 0; i < n; i++) out[i] = (char)(uri[i] >= 'A' && uri[i] <= 'Z' ? uri[i] + 32 : uri[i]);
    out[n] = 0;
    return n;
}
STSDEF sts_result sts_dataset_lineage(const char *dir, const sts_lineage_config *cfg, const sts_options *opts,
                                      char **out, size_t *out_len, sts_error *err) {
    sts__mem m = sts__mem_from(opts);
    sts__manifest mf;
    sts__out src, schema, prof, dig, rec;
    const char *name = cfg && cfg->name ? cfg->name : "safetensors_dataset";
    char scheme[64] = "local", *abs = NULL, hex[65];
    size_t abs_size = 0, i;
    uint64_t rows = 0, bytes = 0;
    uint8_t sha[32];
    sts_sha256 h;
    int found = 0, e = 0, rows_known = 1;
    sts_result r;
    if (!dir || !out || !out_len)
        return sts__failx(err, STS_RULE_ARGUMENT, "sts_dataset_lineage needs dir, out and out_len");
    if ((r = sts__manifest_read(&m, dir, &mf, &found, err)) != STS_OK) return r;
    if (!found) return sts__failx(err, STS_RULE_DATASET_MANIFEST, STS__MANIFEST " not found in %q", dir, strlen(dir));
    if (cfg && cfg->uri) {
        if (!cfg->uri[0]) { sts__manifest_free(&mf); return sts__failx(err, STS_RULE_ARGUMENT, "the uri is empty"); }
        if (!sts__uri_scheme(cfg->uri, scheme, sizeof scheme) || strcmp(scheme, "file") == 0)
            memcpy(scheme, "local", 6);
    } else if (!(abs = sts__abspath(&m, dir, &abs_size, &e))) {
        sts__manifest_free(&mf);
        return e == ENOMEM ? sts__nomem(err, "a path") : sts__fail_errno(err, e, "getcwd for", dir);
    }
    for (i = 0; i < mf.nshards; i++) {
        bytes += mf.shards[i].bytes;
        if (mf.shards[i].samples == UINT64_MAX) rows_known = 0;
        else rows += mf.shards[i].samples;
    }
    if (!rows_known) rows = mf.total_samples;
    sts__out_init(&src, &m, -1);
    sts__out_init(&schema, &m, -1);
    sts__out_init(&prof, &m, -1);
    sts__out_init(&dig, &m, -1);
    sts__out_init(&rec, &m, -1);
    /* source.to_json(): {"uri": ...} */
    sts__out_cstr(&src, "{\"uri\": ");
    if (abs) sts__py_str(&src, abs, strlen(abs));
    else sts__py_cstr(&src, cfg->uri);
    sts__out_put(&src, "}", 1);
    sts__lineage_schema(&schema, &mf);
    /* MetaDataset._compute_digest: sha256(json.dumps({"name", "source", "source_type", "schema"}))[:8];
       no columns: MLflow's schema is None and "schema" is "" */
    sts__out_cstr(&dig, "{\"name\": ");
    sts__py_cstr(&dig, name);
    sts__out_cstr(&dig, ", \"source\": ");
    sts__py_str(&dig, src.p, src.n);
    sts__out_cstr(&dig, ", \"source_type\": ");
    sts__py_cstr(&dig, scheme);
    sts__out_cstr(&dig, ", \"schema\": ");
    if (mf.ncols) sts__out_put(&dig, schema.p, schema.n);
    else sts__out_cstr(&dig, "\"\"");
    sts__out_put(&dig, "}", 1);
    sts__out_cstr(&prof, "{\"num_rows\": ");
    sts__out_u64(&prof, rows);
    sts__out_cstr(&prof, ", \"num_shards\": ");
    sts__out_u64(&prof, (uint64_t)mf.nshards);
    sts__out_cstr(&prof, ", \"total_bytes\": ");
    sts__out_u64(&prof, bytes);
    sts__out_cstr(&prof, mf.kv ? ", \"format\": \"safetensors\", \"mode\": \"kv\"}" :
                                 ", \"format\": \"safetensors\", \"mode\": \"batch\"}");
    if ((r = sts__out_status(&src, "the lineage record", err)) == STS_OK &&
        (r = sts__out_status(&schema, "the lineage record", err)) == STS_OK &&
        (r = sts__out_status(&prof, "the lineage record", err)) == STS_OK &&
        (r = sts__out_status(&dig, "the lineage record", err)) == STS_OK) {
        sts_sha256_init(&h);
        sts_sha256_update(&h, dig.p, dig.n);
        sts_sha256_final(&h, sha);
        sts_sha256_hex(sha, hex);
        hex[8] = 0;
        /* Dataset.to_dict() + MetaDataset's "schema" ({"mlflow_colspec": [...]}), then ours */
        sts__out_cstr(&rec, "{\"name\": ");
        sts__py_cstr(&rec, name);
        sts__out_cstr(&rec, ", \"digest\": ");
        sts__py_cstr(&rec, hex);
        sts__out_cstr(&rec, ", \"source\": ");
        sts__py_str(&rec, src.p, src.n);
        sts__out_cstr(&rec, ", \"source_type\": ");
        sts__py_cstr(&rec, scheme);
        if (mf.ncols) {  /* the text {"mlflow_colspec": [...]}, as one string (dig's buffer reused) */
            dig.n = 0;
            sts__out_cstr(&dig, "{\"mlflow_colspec\": ");
            sts__out_put(&dig, schema.p, schema.n);
            sts__out_put(&dig, "}", 1);
            sts__out_cstr(&rec, ", \"schema\": ");
            sts__py_str(&rec, dig.p, dig.n);
        }
        sts__out_cstr(&rec, ", \"profile\": ");
        sts__py_str(&rec, prof.p, prof.n);
        if (cfg && cfg->context) {
            sts__out_cstr(&rec, ", \"context\": ");
            sts__py_cstr(&rec, cfg->context);
        }
        sts__out_put(&rec, "}", 1);
        if ((r = sts__out_status(&dig, "the lineage record", err)) == STS_OK &&
            (r = sts__out_status(&rec, "the lineage record", err)) == STS_OK) {
            char *t = (char *)sts__alloc(&m, rec.n + 1);
            if (!t) r = sts__nomem(err, "the lineage record");
            else {
                memcpy(t, rec.p, rec.n);
                t[rec.n] = 0;
                *out = t;
                *out_len = rec.n;
            }
        }
    }
    sts__out_free(&src);
    sts__out_free(&schema);
    sts__out_free(&prof);
    sts__out_free(&dig);
    sts__out_free(&rec);
    sts__free(&m, abs, abs_size);
    sts__manifest_free(&mf);
    if (r == STS_OK) sts__ok(err);
    return r;
}
#endif

#endif /* STS_IMPLEMENTATION */

/*
------------------------------------------------------------------------------
This software is available under 2 licenses -- choose whichever you prefer.
------------------------------------------------------------------------------
ALTERNATIVE A - MIT License
Copyright (c) 2026 the safetensors_spark.h authors
Permission is hereby granted, free of charge, to any person obtaining a copy of
this software and associated documentation files (the "Software"), to deal in
the Software without restriction, including without limitation the rights to
use, copy, modify, merge, publish, distribute, sublicense, and/or sell copies
of the Software, and to permit persons to whom the Software is furnished to do
so, subject to the following conditions:
The above copyright notice and this permission notice shall be included in all
copies or substantial portions of the Software.
THE SOFTWARE IS PROVIDED "AS IS", WITHOUT WARRANTY OF ANY KIND, EXPRESS OR
IMPLIED, INCLUDING BUT NOT LIMITED TO THE WARRANTIES OF MERCHANTABILITY,
FITNESS FOR A PARTICULAR PURPOSE AND NONINFRINGEMENT. IN NO EVENT SHALL THE
AUTHORS OR COPYRIGHT HOLDERS BE LIABLE FOR ANY CLAIM, DAMAGES OR OTHER
LIABILITY, WHETHER IN AN ACTION OF CONTRACT, TORT OR OTHERWISE, ARISING FROM,
OUT OF OR IN CONNECTION WITH THE SOFTWARE OR THE USE OR OTHER DEALINGS IN THE
SOFTWARE.
------------------------------------------------------------------------------
ALTERNATIVE B - Public Domain (www.unlicense.org)
This is free and unencumbered software released into the public domain.
Anyone is free to copy, modify, publish, use, compile, sell, or distribute this
software, either in source code form or as a compiled binary, for any purpose,
commercial or non-commercial, and by any means.
In jurisdictions that recognize copyright laws, the author or authors of this
software dedicate any and all copyright interest in the software to the public
domain. We make this dedication for the benefit of the public at large and to
the detriment of our heirs and successors. We intend this dedication to be an
overt act of relinquishment in perpetuity of all present and future rights to
this software under copyright law.
THE SOFTWARE IS PROVIDED "AS IS", WITHOUT WARRANTY OF ANY KIND, EXPRESS OR
IMPLIED, INCLUDING BUT NOT LIMITED TO THE WARRANTIES OF MERCHANTABILITY,
FITNESS FOR A PARTICULAR PURPOSE AND NONINFRINGEMENT. IN NO EVENT SHALL THE
AUTHORS BE LIABLE FOR ANY CLAIM, DAMAGES OR OTHER LIABILITY, WHETHER IN AN
ACTION OF CONTRACT, TORT OR OTHERWISE, ARISING FROM, OUT OF OR IN CONNECTION
WITH THE SOFTWARE OR THE USE OR OTHER DEALINGS IN THE SOFTWARE.
------------------------------------------------------------------------------
*/
