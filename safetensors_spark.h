/* safetensors_spark.h - v0.1.0 - strict, fast safetensors reading and writing in one C header.

   Tensors held by C/C++ programs become safetensors files (and, in later layers, sharded datasets)
   that PyTorch loads without conversion, and such files are read back zero-copy. The parser agrees
   with the Hugging Face reference reader on every verdict, validation is never optional, and the
   writer produces the reference writer's exact bytes. No dependencies beyond the C library and POSIX.

   Do this:
      #define STS_IMPLEMENTATION
   before you include this file in *one* C or C++ file to create the implementation.

   TABLE OF CONTENTS                                      (grep for the >>anchor)
      compile-time options ..................................... below
      quick start ................................................ below
      documentation: rules, ownership, limits, threads, errors ... below
      declarations ............................................. >>api
      implementation
         1  config, util: hooks, limits, checked math, LE I/O, errors   >>util
         2  json: strict RFC 8259 scanner pieces                         >>json
         3  dtype: the 22-dtype table                                    >>dtype
         4  header: parse + mandatory validation, name index             >>header
         5  io: sources (memory, mmap, header-only, callback), sinks     >>io
         6  writer: reference-identical single-file writer               >>writer
      license ................................................... end of file

   COMPILE-TIME OPTIONS                                   (define before including)
      STS_IMPLEMENTATION     emit the implementation in this translation unit
      STS_STATIC             give every public function internal linkage (static)
      STS_NO_STDIO           leave out everything that touches paths or file descriptors
                             (sts_open, sts_write_path); memory and callbacks remain
      STS_NO_MMAP            sts_open reads files into memory instead of mapping them
      STS_NO_SIMD            use portable scalar code only (results are bit-identical)
      STS_MALLOC(ctx,size), STS_REALLOC(ctx,p,old,new), STS_FREE(ctx,p,size)
                             the default allocator: define all three or none (default: libc)
      STS_ASSERT(x)          checks of programmer errors only, never of file content
                             (default: assert from <assert.h>)

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
          const float *data = (const float *)sts_data(f, t);   // zero-copy, points into bytes
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
   Names and strings are (pointer, length): an escaped NUL ("\u0000") is legal in a name.

   Limits. Header length at most 100,000,000 bytes and at most 127 nested JSON containers, both as
   the reference. sts_options can lower them, never raise them (a larger value is clamped). Tensor
   counts are limited only by the header length. All size arithmetic is overflow-checked.

   Thread safety. No global or thread-local state. An sts_file is read-only after it is returned:
   any number of threads may call the accessors on it at once. Writers share nothing.

   Errors. Every fallible call returns an sts_result and, when the sts_error pointer is not NULL,
   fills it: the code, the byte offset in the file where known (STS_OFFSET_UNKNOWN otherwise), the
   rule broken, and a message naming the rule and the tensor. Out-parameters are untouched on error.
   The library never aborts on file content; STS_ASSERT guards only against misuse of the API.

   BF16. BF16 is a valid dtype even though the official header JSON Schema's dtype pattern
   ([UIF])(8|16|32|64|128|256) does not match it; every place that accepts it says so.
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
    X(STS_ERR_HEADER_TOO_SMALL,               "HEADER_TOO_SMALL", "HeaderTooSmall", "the file is shorter than 8 bytes") \
    X(STS_ERR_HEADER_TOO_LARGE,               "HEADER_TOO_LARGE", "HeaderTooLarge", "the header length is over the limit") \
    X(STS_ERR_INVALID_HEADER_LENGTH,          "INVALID_HEADER_LENGTH", "InvalidHeaderLength", "the header runs past the end of the file") \
    X(STS_ERR_INVALID_HEADER,                 "INVALID_HEADER", "InvalidHeader", "the header is not valid UTF-8") \
    X(STS_ERR_INVALID_HEADER_DESERIALIZATION, "INVALID_HEADER_DESERIALIZATION", "InvalidHeaderDeserialization", "the header JSON is malformed or has the wrong shape") \
    X(STS_ERR_INVALID_OFFSET,                 "INVALID_OFFSET", "InvalidOffset", "tensor data offsets are not contiguous from 0") \
    X(STS_ERR_VALIDATION_OVERFLOW,            "VALIDATION_OVERFLOW", "ValidationOverflow", "a tensor's size overflows 64 bits") \
    X(STS_ERR_MISALIGNED_SLICE,               "MISALIGNED_SLICE", "MisalignedSlice", "a tensor's size is not a whole number of bytes") \
    X(STS_ERR_TENSOR_INVALID_INFO,            "TENSOR_INVALID_INFO", "TensorInvalidInfo", "a tensor's offsets disagree with its dtype and shape") \
    X(STS_ERR_METADATA_INCOMPLETE_BUFFER,     "METADATA_INCOMPLETE_BUFFER", "MetadataIncompleteBuffer", "the data section does not end at the end of the file") \
    X(STS_ERR_NOMEM,                          "NOMEM", NULL, "an allocation failed") \
    X(STS_ERR_IO,                             "IO", NULL, "an operating-system I/O call failed") \
    X(STS_ERR_INVALID_ARGUMENT,               "INVALID_ARGUMENT", NULL, "an argument is invalid") \
    X(STS_ERR_UNSUPPORTED,                    "UNSUPPORTED", NULL, "the operation is not supported") \
    X(STS_ERR_NOT_FOUND,                      "NOT_FOUND", NULL, "no such tensor, key or file") \
    X(STS_ERR_DUPLICATE_KEY,                  "DUPLICATE_KEY", NULL, "a name or key appears twice") \
    X(STS_ERR_OPTION,                         "OPTION", NULL, "a write option is invalid or inconsistent") \
    X(STS_ERR_EXISTS,                         "EXISTS", NULL, "the output folder is not empty") \
    X(STS_ERR_SCHEMA,                         "SCHEMA", NULL, "a row does not match the schema") \
    X(STS_ERR_DATASET,                        "DATASET", NULL, "a dataset, manifest, index or commit message is inconsistent")

#define STS__RESULT_ENUM(e, name, variant, text) e,
typedef enum sts_result { STS_RESULT_LIST(STS__RESULT_ENUM) STS_RESULT_COUNT } sts_result;

/* ---- rules ----------------------------------------------------------------------------------
   Every rejection names the rule it broke. X(enumerator, result code, id, statement of the rule).
   For rules of the format, the result code's reference variant is the reference's verdict. */
#define STS_RULE_LIST(X) \
    X(STS_RULE_NONE,              STS_OK, "none", "no rule was broken") \
    X(STS_RULE_FILE_TOO_SMALL,    STS_ERR_HEADER_TOO_SMALL, "file.too_small", "a file holds at least the 8-byte header length") \
    X(STS_RULE_HEADER_TOO_LARGE,  STS_ERR_HEADER_TOO_LARGE, "header.too_large", "the header length N is at most 100,000,000 (or the tightened limit); checked before the file size") \
    X(STS_RULE_HEADER_LENGTH,     STS_ERR_INVALID_HEADER_LENGTH, "header.length", "8 + N does not pass the end of the file") \
    X(STS_RULE_HEADER_UTF8,       STS_ERR_INVALID_HEADER, "header.utf8", "all N header bytes, padding included, are UTF-8 without overlongs, surrogates or code points over U+10FFFF") \
    X(STS_RULE_JSON_SYNTAX,       STS_ERR_INVALID_HEADER_DESERIALIZATION, "json.syntax", "the header is one RFC 8259 JSON value, optionally surrounded by space, TAB, LF or CR") \
    X(STS_RULE_JSON_STRING,       STS_ERR_INVALID_HEADER_DESERIALIZATION, "json.string", "strings hold no raw control characters, only valid escapes, and no unpaired surrogate escapes") \
    X(STS_RULE_JSON_NUMBER,       STS_ERR_INVALID_HEADER_DESERIALIZATION, "json.number", "numbers follow the JSON grammar (no leading zeros, no bare '-') and, in ignored fields, fit a 64-bit float") \
    X(STS_RULE_JSON_DEPTH,        STS_ERR_INVALID_HEADER_DESERIALIZATION, "json.depth", "at most 127 nested containers (or the tightened limit), the top-level object included, ignored fields too") \
    X(STS_RULE_HEADER_OBJECT,     STS_ERR_INVALID_HEADER_DESERIALIZATION, "header.object", "the top-level value is an object") \
    X(STS_RULE_METADATA_TYPE,     STS_ERR_INVALID_HEADER_DESERIALIZATION, "metadata.type", "__metadata__ is null or an object") \
    X(STS_RULE_METADATA_VALUE,    STS_ERR_INVALID_HEADER_DESERIALIZATION, "metadata.value", "every __metadata__ value is a string") \
    X(STS_RULE_METADATA_TWICE,    STS_ERR_INVALID_HEADER_DESERIALIZATION, "metadata.twice", "__metadata__ appears at most once") \
    X(STS_RULE_ENTRY_TYPE,        STS_ERR_INVALID_HEADER_DESERIALIZATION, "tensor.entry", "a tensor entry is an object, or an array of exactly [dtype, shape, data_offsets]") \
    X(STS_RULE_FIELD_TWICE,       STS_ERR_INVALID_HEADER_DESERIALIZATION, "tensor.field_twice", "dtype, shape and data_offsets appear at most once in an entry") \
    X(STS_RULE_FIELD_MISSING,     STS_ERR_INVALID_HEADER_DESERIALIZATION, "tensor.field_missing", "dtype, shape and data_offsets are all present in an entry") \
    X(STS_RULE_DTYPE,             STS_ERR_INVALID_HEADER_DESERIALIZATION, "tensor.dtype", "dtype is a string that is exactly one of the 22 dtype names") \
    X(STS_RULE_SHAPE,             STS_ERR_INVALID_HEADER_DESERIALIZATION, "tensor.shape", "shape is an array of integers in [0, 2^64)") \
    X(STS_RULE_OFFSETS,           STS_ERR_INVALID_HEADER_DESERIALIZATION, "tensor.data_offsets", "data_offsets is an array of exactly two integers in [0, 2^64)") \
    X(STS_RULE_STRICT_LEADING_WS, STS_ERR_INVALID_HEADER_DESERIALIZATION, "strict.leading_whitespace", "strict: the header begins with '{'") \
    X(STS_RULE_STRICT_PADDING,    STS_ERR_INVALID_HEADER_DESERIALIZATION, "strict.padding", "strict: only spaces (0x20) follow the top-level object") \
    X(STS_RULE_STRICT_DUPLICATE,  STS_ERR_INVALID_HEADER_DESERIALIZATION, "strict.duplicate_key", "strict: no tensor name and no __metadata__ key appears twice") \
    X(STS_RULE_STRICT_POSITIONAL, STS_ERR_INVALID_HEADER_DESERIALIZATION, "strict.positional_entry", "strict: a tensor entry is an object, not an array") \
    X(STS_RULE_STRICT_UNKNOWN,    STS_ERR_INVALID_HEADER_DESERIALIZATION, "strict.unknown_field", "strict: a tensor entry has no field but dtype, shape and data_offsets") \
    X(STS_RULE_STRICT_META_NULL,  STS_ERR_INVALID_HEADER_DESERIALIZATION, "strict.metadata_null", "strict: __metadata__ is an object when present, not null") \
    X(STS_RULE_STRICT_NAME_NUL,   STS_ERR_INVALID_HEADER_DESERIALIZATION, "strict.name_nul", "strict: tensor names contain no NUL character") \
    X(STS_RULE_OFFSETS_CONTIGUOUS, STS_ERR_INVALID_OFFSET, "offsets.contiguous", "sorted by (begin, end), each tensor begins where the previous one ended, the first at 0, and end >= begin") \
    X(STS_RULE_NUMEL_OVERFLOW,    STS_ERR_VALIDATION_OVERFLOW, "size.numel_overflow", "the product of the shape, taken in order, fits in 64 bits") \
    X(STS_RULE_BITS_OVERFLOW,     STS_ERR_VALIDATION_OVERFLOW, "size.bits_overflow", "element count x dtype bits fits in 64 bits") \
    X(STS_RULE_BYTE_ALIGNED,      STS_ERR_MISALIGNED_SLICE, "size.byte_aligned", "element count x dtype bits is a multiple of 8 (F4, F6 only)") \
    X(STS_RULE_SIZE_MATCH,        STS_ERR_TENSOR_INVALID_INFO, "size.matches_offsets", "end - begin equals element count x dtype bits / 8") \
    X(STS_RULE_FILE_SIZE,         STS_ERR_METADATA_INCOMPLETE_BUFFER, "file.size", "8 + N + the last tensor's end equals the file size: no trailing bytes, no truncation") \
    X(STS_RULE_ALLOC,             STS_ERR_NOMEM, "alloc", "memory allocations succeed") \
    X(STS_RULE_IO,                STS_ERR_IO, "io", "operating-system I/O calls succeed") \
    X(STS_RULE_ARGUMENT,          STS_ERR_INVALID_ARGUMENT, "argument", "arguments satisfy the documented preconditions") \
    X(STS_RULE_UNSUPPORTED,       STS_ERR_UNSUPPORTED, "unsupported", "the operation is supported for these arguments") \
    X(STS_RULE_NOT_FOUND,         STS_ERR_NOT_FOUND, "not_found", "the named tensor, key or file exists") \
    X(STS_RULE_WRITE_DUPLICATE,   STS_ERR_DUPLICATE_KEY, "write.duplicate_name", "writer: tensor names and metadata keys are unique") \
    X(STS_RULE_WRITE_RESERVED,    STS_ERR_INVALID_ARGUMENT, "write.reserved_name", "writer: no tensor is named __metadata__") \
    X(STS_RULE_WRITE_TEXT,        STS_ERR_INVALID_ARGUMENT, "write.text", "writer: names and metadata are valid UTF-8, and names hold no NUL") \
    X(STS_RULE_WRITE_DTYPE,       STS_ERR_INVALID_ARGUMENT, "write.dtype", "writer: the dtype is one of the 22 and the shape pointer is set when rank > 0") \
    X(STS_RULE_WRITE_DATA_SIZE,   STS_ERR_INVALID_ARGUMENT, "write.data_size", "writer: data_size equals the shape's byte size, and data or a producer is given") \
    X(STS_RULE_WRITE_PRODUCER,    STS_ERR_INVALID_ARGUMENT, "write.producer", "writer: a producer emits exactly data_size bytes and succeeds") \
    X(STS_RULE_WRITE_TOTAL,       STS_ERR_VALIDATION_OVERFLOW, "write.total_size", "writer: 8 + N + the total data size fits in 64 bits") \
    X(STS_RULE_OPTION,            STS_ERR_OPTION, "option", "dataset: write options are valid and consistent with the schema (the message names the option and the value)") \
    X(STS_RULE_EXISTS,            STS_ERR_EXISTS, "dataset.exists", "dataset: the output folder is empty, unless overwrite is set") \
    X(STS_RULE_ROW_DTYPE,         STS_ERR_SCHEMA, "row.dtype", "dataset: a column's tensors all have the dtype of its first row") \
    X(STS_RULE_ROW_SHAPE,         STS_ERR_SCHEMA, "row.shape", "dataset: in batch mode every row has the first row's shape; arrays match their shapes option") \
    X(STS_RULE_ROW_VALUE,         STS_ERR_SCHEMA, "row.value", "dataset: a tensor's bytes match its dtype and shape; a key is UTF-8 without NUL") \
    X(STS_RULE_DUPLICATE_KEY,     STS_ERR_DUPLICATE_KEY, "dataset.duplicate_key", "dataset: with duplicatesStrategy=fail no tensor key is written twice, across shards and tasks") \
    X(STS_RULE_MESSAGE,           STS_ERR_DATASET, "dataset.message", "dataset: commit messages come from this library's task writers and agree with each other") \
    X(STS_RULE_SHARD,             STS_ERR_DATASET, "dataset.shard", "dataset: every shard exists with its recorded size and a valid header") \
    X(STS_RULE_STATE,             STS_ERR_INVALID_ARGUMENT, "writer.state", "dataset: a task writer takes rows, then one commit, and nothing after a failure") \
    X(STS_RULE_DATASET_MANIFEST,  STS_ERR_DATASET, "dataset.manifest", "dataset: dataset_manifest.json is valid and every shard it lists exists with the listed size") \
    X(STS_RULE_DATASET_INDEX,     STS_ERR_DATASET, "dataset.index", "dataset: _tensor_index.json is valid, current (the manifest's dataset_id) and agrees with the shards' headers") \
    X(STS_RULE_READ_SCHEMA,       STS_ERR_SCHEMA, "read.schema", "dataset: a schema is given or inferred, and every file agrees with an explicit one")

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
    int header_only;            /* read 8 + N bytes only; sts_data() then returns NULL */
    int no_mmap;                /* sts_open: read the file into memory rather than map it */
    int no_fsync;               /* sts_write_path: skip fsync (faster, not crash-safe) */
    uint64_t hash_seed;         /* name-index seed; 0 = derived per file from address entropy */
    /* Fault injection for tests: called before each write-side system call on files the library
       creates ("write", "pwrite", "ftruncate", "fsync", "rename", "link"); a nonzero return is
       taken as that call's errno. Leave NULL in production. */
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
   opts->header_only reads exactly 8 + N bytes. Files over 4 GiB work on 64-bit hosts. */
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
   temporary is removed and an existing file at path is untouched. */
STSDEF sts_result sts_write_path(const char *path, const sts_tensor_spec *specs, size_t n,
                                 const sts_kv *meta, size_t n_meta, const sts_options *opts, sts_error *err);
#endif
/* Releases memory the library handed out (sts_write_memory), with the options' allocator. */
STSDEF void sts_free(const sts_options *opts, void *ptr, size_t size);

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
   Owns: allocator hooks, limits, checked u64 arithmetic, little-endian loads and stores (byte
   assembly: never depends on host endianness), the seeded name hash and open-addressing index,
   the stable merge sort, error filling with a small formatter (no stdio needed).
   May call: the C library only.
   ============================================================================================== */
#include <string.h>
#include <stdarg.h>

#if !defined(STS_MALLOC) && !defined(STS_REALLOC) && !defined(STS_FREE)
#  include <stdlib.h>
#  define STS_MALLOC(ctx, size) ((void)(ctx), malloc(size))
#  define STS_REALLOC(ctx, p, old, size) ((void)(ctx), (void)(old), realloc((p), (size)))
#  define STS_FREE(ctx, p, size) ((void)(ctx), (void)(size), free(p))
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
#else
#  define STS__PRIVATE static
#  define STS__LIKELY(x) (x)
#  define STS__UNLIKELY(x) (x)
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
STS__PRIVATE int sts__mem_valid(const sts__mem *m) {  /* all three hooks or none */
    int n = (m->a.alloc != NULL) + (m->a.realloc != NULL) + (m->a.free != NULL);
    return n == 0 || n == 3;
}
STS__PRIVATE void *sts__alloc(const sts__mem *m, size_t size) {
    if (size == 0) size = 1;
    if (m->a.alloc) return m->a.alloc(m->a.user, size);
    return STS_MALLOC(m->a.user, size);
}
STS__PRIVATE void *sts__realloc(const sts__mem *m, void *p, size_t old_size, size_t size) {
    if (size == 0) size = 1;
    if (!p) return sts__alloc(m, size);
    if (m->a.realloc) return m->a.realloc(m->a.user, p, old_size, size);
    return STS_REALLOC(m->a.user, p, old_size, size);
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

/* ---- little-endian loads and stores by byte assembly ---- */
STS__PRIVATE uint64_t sts__le64(const uint8_t *p) {
    return (uint64_t)p[0] | (uint64_t)p[1] << 8 | (uint64_t)p[2] << 16 | (uint64_t)p[3] << 24 |
           (uint64_t)p[4] << 32 | (uint64_t)p[5] << 40 | (uint64_t)p[6] << 48 | (uint64_t)p[7] << 56;
}
STS__PRIVATE void sts__st64(uint8_t *p, uint64_t v) {
    int i;
    for (i = 0; i < 8; i++) p[i] = (uint8_t)(v >> (8 * i));
}

/* ---- error filling ----
   A tiny formatter so that messages need no stdio: %s C string, %q (pointer, size_t) quoted and
   escaped, truncated at a character boundary, %U uint64_t, %z size_t, %d int, %x int as a byte
   in hex (0x1f), %S (const uint64_t *, size_t) a shape, %% percent. */
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
        case 's': { const char *a = va_arg(ap, const char *); if (!a) a = "(null)"; sts__buf_put(b, a, strlen(a)); break; }
        case 'q': { const char *a = va_arg(ap, const char *); size_t n = va_arg(ap, size_t); sts__buf_quote(b, a, n, 80); break; }
        case 'U': sts__buf_u64(b, va_arg(ap, uint64_t)); break;
        case 'z': sts__buf_u64(b, (uint64_t)va_arg(ap, size_t)); break;
        case 'S': { const uint64_t *d = va_arg(ap, const uint64_t *); size_t n = va_arg(ap, size_t), i;
                    sts__buf_put(b, "[", 1);
                    for (i = 0; i < n && i < 8; i++) { if (i) sts__buf_put(b, ", ", 2); sts__buf_u64(b, d[i]); }
                    if (n > 8) sts__buf_put(b, ", ...", 5);
                    sts__buf_put(b, "]", 1); break; }
        case 'x': { static const char hx[] = "0123456789abcdef"; unsigned v = (unsigned)va_arg(ap, int) & 0xff; char t[4];
                    t[0] = '0'; t[1] = 'x'; t[2] = hx[v >> 4]; t[3] = hx[v & 15]; sts__buf_put(b, t, 4); break; }
        case 'd': { int v = va_arg(ap, int); if (v < 0) { sts__buf_put(b, "-", 1); sts__buf_u64(b, (uint64_t)0 - (uint64_t)(int64_t)v); } else sts__buf_u64(b, (uint64_t)v); break; }
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
STS__PRIVATE sts_result sts__fail(sts_error *err, sts_rule rule, uint64_t offset, const char *fmt, ...) {
    sts_result r;
    va_list ap;
    va_start(ap, fmt);
    r = sts__failv(err, sts__rule_codes[rule], rule, offset, fmt, ap);
    va_end(ap);
    return r;
}
STS__PRIVATE sts_result sts__fail_code(sts_error *err, sts_result code, sts_rule rule, uint64_t offset,
                                       const char *fmt, ...) {
    sts_result r;
    va_list ap;
    va_start(ap, fmt);
    r = sts__failv(err, code, rule, offset, fmt, ap);
    va_end(ap);
    return r;
}
STS__PRIVATE sts_result sts__nomem(sts_error *err, const char *what) {
    return sts__fail(err, STS_RULE_ALLOC, STS_OFFSET_UNKNOWN, "out of memory while allocating %s", what);
}
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
        b = (uint64_t)p[left - 4] | (uint64_t)p[left - 3] << 8 | (uint64_t)p[left - 2] << 16 | (uint64_t)p[left - 1] << 24;
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
   two field offsets, so the same code indexes tensors, metadata keys and dataset keys. */
#define STS__EMPTY 0xffffffffu
typedef struct sts__index {
    uint32_t *slots;
    size_t mask;               /* capacity - 1, capacity a power of two >= 2 x items */
} sts__index;
typedef struct sts__names {
    const void *items;         /* item i is at items + i * stride; its name at ptr_off, length at len_off */
    size_t stride, ptr_off, len_off;
    const void *hashes;        /* item i's uint64_t hash is at hashes + i * hash_stride */
    size_t hash_stride;
} sts__names;

STS__PRIVATE const char *sts__name_of(const sts__names *k, size_t i, size_t *len) {
    const char *item = (const char *)k->items + i * k->stride;
    const char *p;
    memcpy(&p, item + k->ptr_off, sizeof p);
    memcpy(len, item + k->len_off, sizeof *len);
    return p;
}
STS__PRIVATE int sts__index_init(const sts__mem *m, sts__index *ix, size_t items) {
    size_t cap = 8, bytes;
    while (cap < items * 2) { if (cap > ((size_t)-1 >> 2)) return 0; cap <<= 1; }
    if (!sts__mulsz(cap, sizeof(uint32_t), &bytes)) return 0;
    ix->slots = (uint32_t *)sts__alloc(m, bytes);
    if (!ix->slots) return 0;
    memset(ix->slots, 0xff, bytes);
    ix->mask = cap - 1;
    return 1;
}
STS__PRIVATE void sts__index_free(const sts__mem *m, sts__index *ix) {
    if (ix->slots) sts__free(m, ix->slots, (ix->mask + 1) * sizeof(uint32_t));
    ix->slots = NULL;
    ix->mask = 0;
}
/* The slot holding `name`, or the empty slot where it would go. */
STS__PRIVATE size_t sts__index_probe(const sts__index *ix, const sts__names *k, uint64_t h,
                                     const char *name, size_t len) {
    size_t pos = (size_t)h & ix->mask;
    for (;;) {
        uint32_t it = ix->slots[pos];
        if (it == STS__EMPTY) return pos;
        uint64_t ih;
        memcpy(&ih, (const char *)k->hashes + (size_t)it * k->hash_stride, sizeof ih);
        if (ih == h) {
            size_t ilen;
            const char *ip = sts__name_of(k, it, &ilen);
            if (ilen == len && (len == 0 || memcmp(ip, name, len) == 0)) return pos;
        }
        pos = (pos + 1) & ix->mask;
    }
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

/* ---- UTF-8 validation (RFC 3629: no overlongs, no surrogates, nothing above U+10FFFF) ----
   Returns n when valid, else the index of the first byte of the bad sequence. */
STS__PRIVATE size_t sts__utf8_check(const uint8_t *s, size_t n) {
    size_t i = 0;
    while (i < n) {
#ifdef STS__SSE2
        while (i + 64 <= n) {  /* ASCII runs, 64 bytes a step */
            __m128i a = _mm_loadu_si128((const __m128i *)(const void *)(s + i)), b = _mm_loadu_si128((const __m128i *)(const void *)(s + i + 16));
            __m128i c = _mm_loadu_si128((const __m128i *)(const void *)(s + i + 32)), d = _mm_loadu_si128((const __m128i *)(const void *)(s + i + 48));
            if (_mm_movemask_epi8(_mm_or_si128(_mm_or_si128(a, b), _mm_or_si128(c, d)))) break;
            i += 64;
        }
        if (i >= n) break;
#endif
        if (i + 16 <= n) {
            uint64_t a, b;
            memcpy(&a, s + i, 8);
            memcpy(&b, s + i + 8, 8);
            if (((a | b) & 0x8080808080808080ull) == 0) { i += 16; continue; }
        }
        if (s[i] < 0x80) { i++; continue; }
        {
            uint8_t c = s[i], lo = 0x80, hi = 0xBF;
            size_t need, k;
            if (c < 0xC2) return i;                     /* stray continuation, or C0/C1 overlong */
            else if (c < 0xE0) need = 1;
            else if (c < 0xF0) { need = 2; if (c == 0xE0) lo = 0xA0; else if (c == 0xED) hi = 0x9F; }
            else if (c < 0xF5) { need = 3; if (c == 0xF0) lo = 0x90; else if (c == 0xF4) hi = 0x8F; }
            else return i;
            if (n - i <= need) return i;
            if (s[i + 1] < lo || s[i + 1] > hi) return i;
            for (k = 2; k <= need; k++) if ((s[i + k] & 0xC0) != 0x80) return i;
            i += need + 1;
        }
    }
    return n;
}

/* ==============================================================================================
   >>json  2. json
   Owns: the pieces of a strict RFC 8259 scanner over a byte range: whitespace, strings (escape
   and surrogate checks, unescaping), unsigned 64-bit integers (overflow detected, never through
   double), literals, and an iterative skip of any value with an explicit depth counter. No
   allocation, no recursion. UTF-8 has been validated before the scanner runs.
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
    sts_result code;          /* STS_OK: the rule's own code; else report this code (other documents) */
    const char *doc;          /* names the document in messages, or NULL for a header */
} sts__json;

typedef struct sts__str { const char *p; size_t n; int esc; } sts__str; /* raw bytes between quotes */

STS__PRIVATE uint64_t sts__json_off(const sts__json *j, const uint8_t *at) {
    return j->off0 + (uint64_t)(at - j->base);
}
STS__PRIVATE sts_result sts__json_fail(sts__json *j, sts_rule rule, const uint8_t *at, const char *fmt, ...) {
    sts_result r, code = j->code != STS_OK ? j->code : sts__rule_codes[rule];
    va_list ap;
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
/* Offset of the first '"', '\\' or control byte in p[0..n), or n. */
STS__PRIVATE size_t sts__str_stop(const uint8_t *p, size_t n) {
    size_t i = 0;
#ifdef STS__SSE2
    const __m128i q = _mm_set1_epi8('"'), bs = _mm_set1_epi8('\\'), ctl = _mm_set1_epi8(0x1f);
    while (i + 16 <= n) {
        __m128i v = _mm_loadu_si128((const __m128i *)(const void *)(p + i));
        __m128i hit = _mm_or_si128(_mm_or_si128(_mm_cmpeq_epi8(v, q), _mm_cmpeq_epi8(v, bs)),
                                   _mm_cmpeq_epi8(_mm_max_epu8(v, ctl), ctl));
        int mask = _mm_movemask_epi8(hit);
        if (mask) return i + (size_t)__builtin_ctz((unsigned)mask);
        i += 16;
    }
#else
    while (i + 8 <= n) {  /* SWAR: the lowest flagged byte is exact */
        uint64_t x = sts__le64(p + i), ones = 0x0101010101010101ull, high = 0x8080808080808080ull;
        uint64_t xq = x ^ (ones * '"'), xb = x ^ (ones * '\\');
        uint64_t t = ((xq - ones) & ~xq) | ((xb - ones) & ~xb) | ((x - ones * 0x20) & ~x);
        t &= high;
        if (t) {
            size_t k = 0;
            while (!(t & 0x80)) { t >>= 8; k++; }
            return i + k;
        }
        i += 8;
    }
#endif
    while (i < n && p[i] != '"' && p[i] != '\\' && p[i] >= 0x20) i++;
    return i;
}
/* A string at the cursor ('"'); leaves the cursor after the closing quote. */
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
        else if (u < 0x10000) { *o++ = (uint8_t)(0xE0 | u >> 12); *o++ = (uint8_t)(0x80 | (u >> 6 & 63)); *o++ = (uint8_t)(0x80 | (u & 63)); }
        else { *o++ = (uint8_t)(0xF0 | u >> 18); *o++ = (uint8_t)(0x80 | (u >> 12 & 63)); *o++ = (uint8_t)(0x80 | (u >> 6 & 63)); *o++ = (uint8_t)(0x80 | (u & 63)); }
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
        if (p < end && *p >= '0' && *p <= '9') return sts__json_fail(j, STS_RULE_JSON_NUMBER, start, "number with a leading zero");
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
    if (STS__UNLIKELY(p >= end || *p < '0' || *p > '9')) {
        if (p < end && *p == '-') {
            sts_result r = sts__json_number(j);
            if (r != STS_OK) return r;
            return sts__json_fail(j, rule, start, "%s must be an unsigned integer, found a negative number", field);
        }
        return sts__json_fail(j, rule, start, "%s must hold unsigned integers, found %s", field, sts__json_what(j));
    }
    v = (uint64_t)(*p++ - '0');
    if (v == 0) {
        if (p < end && *p >= '0' && *p <= '9') return sts__json_fail(j, STS_RULE_JSON_NUMBER, start, "number with a leading zero");
    } else {
        while (p < end && *p >= '0' && *p <= '9') {
            uint64_t d = (uint64_t)(*p - '0');
            if (v >= 1844674407370955161ull && (v > 1844674407370955161ull || d > 5)) {
                j->p = p;
                while (j->p < end && *j->p >= '0' && *j->p <= '9') j->p++;
                return sts__json_fail(j, rule, start, "%s value does not fit in 64 bits", field);
            }
            v = v * 10 + d;
            p++;
        }
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
static const char sts__f64_midpoint[] = "179769313486231580793728971405303415079934132710037826936173778980444968292764750946649017977587207096330286416692887910946555547851940402630657488671505820681908902000708383676273854845817711531764475730270069855571366959622842914819860834936475292719074168444365510704342711559699508093042880177904174497792";  /* 2^1024 - 2^970 */
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
        if (j->p >= j->end) return sts__json_fail(j, STS_RULE_JSON_SYNTAX, j->p, "expected a value, found the end of the header");
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
                if (j->p >= j->end || *j->p != '"') return sts__json_fail(j, STS_RULE_JSON_SYNTAX, j->p, "expected a string key, found %s", sts__json_what(j));
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
                    if (j->p >= j->end || *j->p != '"') return sts__json_fail(j, STS_RULE_JSON_SYNTAX, j->p, "expected a string key, found %s", sts__json_what(j));
                    if ((r = sts__json_string(j, &s)) != STS_OK) return r;
                    if ((r = sts__json_expect(j, ':', "':'")) != STS_OK) return r;
                }
                break;
            }
            if (j->p < j->end && *j->p == (obj ? '}' : ']')) { j->p++; level--; j->depth--; continue; }
            return sts__json_fail(j, STS_RULE_JSON_SYNTAX, j->p, obj ? "expected ',' or '}', found %s" : "expected ',' or ']', found %s", sts__json_what(j));
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
        return sts__fail_code(j->err, STS_ERR_NOMEM, STS_RULE_ALLOC, STS_OFFSET_UNKNOWN, "out of memory while tokenizing %s", j->doc ? j->doc : "JSON");
    t = &d->tok[d->n++];
    t->type = type; t->esc = (uint8_t)esc; t->count = 0; t->next = (uint32_t)d->n; t->at = at; t->len = len;
    return STS_OK;
}
/* Tokenize one JSON value (surrounded by optional whitespace). `what` names the document and
   `code` is the result reported for its problems. The text is checked as UTF-8 first. */
STS__PRIVATE sts_result sts__jdoc_parse(sts__jdoc *d, const void *text, size_t len, const sts__mem *m, const char *what,
                                        sts_result code, sts_error *err) {
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
    j.code = code;
    j.doc = what;
    if ((bad = sts__utf8_check(d->text, len)) != len)
        return sts__fail_code(err, code, STS_RULE_HEADER_UTF8, (uint64_t)bad, "%s is not valid UTF-8 at byte %U", what, (uint64_t)bad);
    for (;;) {
        sts__json_ws(&j);
        if (j.p >= j.end) { r = sts__json_fail(&j, STS_RULE_JSON_SYNTAX, j.p, "expected a value, found the end"); goto fail; }
        switch (*j.p) {
        case '{': case '[': {
            uint8_t type = *j.p;
            if ((r = sts__json_enter(&j)) != STS_OK) goto fail;
            if ((r = sts__jdoc_push(d, &j, type, (size_t)(j.p - j.base), 1, 0)) != STS_OK) goto fail;
            stack[level++] = (uint32_t)(d->n - 1);
            j.p++;
            sts__json_ws(&j);
            if (j.p < j.end && *j.p == (type == '{' ? '}' : ']')) { j.p++; level--; j.depth--; d->tok[stack[level]].next = (uint32_t)d->n; goto after_value; }
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
            if ((r = sts__jdoc_push(d, &j, '0', (size_t)(start - j.base), (size_t)(j.p - start), 0)) != STS_OK) goto fail;
            break;
        }
        default: {
            const uint8_t *start = j.p;
            if ((r = sts__json_literal(&j)) != STS_OK) goto fail;
            if ((r = sts__jdoc_push(d, &j, *start, (size_t)(start - j.base), (size_t)(j.p - start), 0)) != STS_OK) goto fail;
            break;
        }
        }
    after_value:
        for (;;) {
            sts__jtok *parent;
            if (level == 0) {
                sts__json_ws(&j);
                if (j.p < j.end) { r = sts__json_fail(&j, STS_RULE_JSON_SYNTAX, j.p, "unexpected byte %x after the value", (int)*j.p); goto fail; }
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
            r = sts__json_fail(&j, STS_RULE_JSON_SYNTAX, j.p, parent->type == '{' ? "expected ',' or '}', found %s" : "expected ',' or ']', found %s", sts__json_what(&j));
            goto fail;
        }
        continue;
    key: {
            sts__str s;
            size_t at;
            sts__json_ws(&j);
            if (j.p >= j.end || *j.p != '"') { r = sts__json_fail(&j, STS_RULE_JSON_SYNTAX, j.p, "expected a string key, found %s", sts__json_what(&j)); goto fail; }
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
        if (kt->esc ? sts__jdoc_is(d, k, key) : (kt->len == klen && memcmp(d->text + kt->at, key, klen) == 0)) found = k + 1;
        k = d->tok[k + 1].next;  /* past the value */
    }
    return found;
}
/* Element i of array token `arr` (linear in i: walk with sts__jdoc_first/next for loops). */
STS__PRIVATE uint32_t sts__jdoc_next(const sts__jdoc *d, uint32_t t) { return d->tok[t].next; }
/* A number token as u64 (digits only, no sign, fraction or exponent, no overflow). */
STS__PRIVATE int sts__jdoc_u64(const sts__jdoc *d, uint32_t t, uint64_t *v) {
    const sts__jtok *tk = &d->tok[t];
    const uint8_t *p = d->text + tk->at;
    uint64_t x = 0;
    size_t i;
    if (tk->type != '0' || tk->len == 0) return 0;
    for (i = 0; i < tk->len; i++) {
        uint64_t dg;
        if (p[i] < '0' || p[i] > '9') return 0;
        dg = (uint64_t)(p[i] - '0');
        if (x > (UINT64_MAX - dg) / 10) return 0;
        x = x * 10 + dg;
    }
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
static const unsigned char sts__dtype_bits[] = { STS_DTYPE_LIST(STS__DTYPE_BITS) 0 };

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
    if (len == 3 || len == 4) {
        uint32_t w = (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (len == 4 ? (uint32_t)p[3] << 24 : 0u);
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
typedef struct sts__info {      /* per tensor or metadata entry, beside the public struct */
    uint64_t hash;              /* of the unescaped name */
    uint64_t key_off;           /* file offset of its key in the header */
    uint64_t shape_at;          /* tensors: index of its first dim in shapes; metadata: 1 = dead */
} sts__info;

struct sts_file {
    sts__mem mem;
    const uint8_t *header;      /* the N header bytes */
    uint64_t header_len;        /* N */
    const uint8_t *data;        /* start of the data section, or NULL when header-only */
    uint64_t file_size;
    uint64_t seed;              /* name hash seed */
    sts_tensor *tensors;        /* data-offset order once parsed */
    sts__info *info;            /* parallel to tensors */
    size_t count, cap, info_cap;
    sts__index index;           /* tensor names */
    uint64_t *shapes;           /* all dims, tensors point into it */
    size_t nshapes, shapes_cap;
    sts_kv *meta;
    sts__info *meta_info;       /* parallel to meta */
    size_t meta_count, meta_cap, meta_info_cap;
    sts__index meta_index;
    int has_meta;
    sts__chunk *arena;          /* unescaped strings */
    void *owned;                /* bytes the file owns: a mapping or a heap block */
    size_t owned_size;
    void (*release)(sts_file *f);  /* releases `owned` (unmap or free) */
};

STS__PRIVATE char *sts__arena_alloc(sts_file *f, size_t n) {
    size_t bytes;
    sts__chunk *c;
    if (n > (size_t)-1 - sizeof(sts__chunk)) return NULL;
    bytes = sizeof(sts__chunk) + n;
    c = (sts__chunk *)sts__alloc(&f->mem, bytes);
    if (!c) return NULL;
    c->next = f->arena;
    c->size = bytes;
    f->arena = c;
    return (char *)(c + 1);
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
    sts__free(&m, f->info, f->info_cap * sizeof *f->info);
    sts__free(&m, f->shapes, f->shapes_cap * sizeof *f->shapes);
    sts__free(&m, f->meta, f->meta_cap * sizeof *f->meta);
    sts__free(&m, f->meta_info, f->meta_info_cap * sizeof *f->meta_info);
    sts__index_free(&m, &f->index);
    sts__index_free(&m, &f->meta_index);
    for (c = f->arena; c;) { sts__chunk *next = c->next; sts__free(&m, c, c->size); c = next; }
    sts__free(&m, f, sizeof *f);
}

/* ---- rules 1 to 3: the 8-byte prefix against the file size ---- */
STS__PRIVATE uint64_t sts__max_header(const sts_options *o) {
    return o && o->max_header_size && o->max_header_size < STS_MAX_HEADER_SIZE ? o->max_header_size : STS_MAX_HEADER_SIZE;
}
STS__PRIVATE sts_result sts__check_prefix(const uint8_t *prefix, uint64_t file_size, const sts_options *o,
                                          uint64_t *n, sts_error *err) {
    uint64_t hn, max = sts__max_header(o);
    if (file_size < 8)
        return sts__fail(err, STS_RULE_FILE_TOO_SMALL, 0, "the file has %U bytes; the header length alone needs 8", file_size);
    hn = sts__le64(prefix);
    if (hn > max)  /* checked before the file size, as the reference does */
        return sts__fail(err, STS_RULE_HEADER_TOO_LARGE, 0, "header length %U is over the limit of %U bytes", hn, max);
    if (hn > file_size - 8)
        return sts__fail(err, STS_RULE_HEADER_LENGTH, 0, "header length %U runs past the end of the %U-byte file", hn, file_size);
    *n = hn;
    return STS_OK;
}

/* ---- the schema-aware parse ---- */
typedef struct sts__parser {
    sts__json j;
    sts_file *f;
    int strict;
    int meta_seen;
    char field[72];         /* unescaped field keys and dtype values */
    const uint8_t *last_end;  /* fast path: the previous entry's end offset as text ... */
    size_t last_end_len;
    uint64_t last_end_val;    /* ... and its value (writer order: it is the next begin) */
} sts__parser;

enum { STS__F_DTYPE = 1, STS__F_SHAPE = 2, STS__F_OFFSETS = 4 };

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
STS__PRIVATE sts_result sts__parse_shape(sts__parser *ps, uint64_t *shape_at, uint32_t *rank) {
    sts__json *j = &ps->j;
    sts_file *f = ps->f;
    sts_result r;
    size_t start = f->nshapes;
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
        if (STS__UNLIKELY(f->nshapes == f->shapes_cap) &&
            !sts__grow(&f->mem, (void **)&f->shapes, &f->shapes_cap, f->nshapes + 1, sizeof *f->shapes))
            return sts__nomem(j->err, "tensor shapes");
        f->shapes[f->nshapes++] = v;
        sts__json_ws(j);
        if (STS__LIKELY(j->p < j->end && *j->p == ',')) { j->p++; continue; }
        if (STS__LIKELY(j->p < j->end && *j->p == ']')) { j->p++; break; }
        return sts__json_fail(j, STS_RULE_JSON_SYNTAX, j->p, "expected ',' or ']' in shape, found %s", sts__json_what(j));
    }
    j->depth--;
    *shape_at = start;
    *rank = (uint32_t)(f->nshapes - start);
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
    if (j->p < j->end && *j->p == ']') return sts__json_fail(j, STS_RULE_OFFSETS, at, "data_offsets is empty; it needs [begin, end]");
    if ((r = sts__json_u64(j, begin, STS_RULE_OFFSETS, "data_offsets")) != STS_OK) return r;
    sts__json_ws(j);
    if (j->p < j->end && *j->p == ']') return sts__json_fail(j, STS_RULE_OFFSETS, at, "data_offsets has 1 element; it needs [begin, end]");
    if ((r = sts__json_expect(j, ',', "','")) != STS_OK) return r;
    sts__json_ws(j);
    if ((r = sts__json_u64(j, end, STS_RULE_OFFSETS, "data_offsets")) != STS_OK) return r;
    sts__json_ws(j);
    if (j->p < j->end && *j->p == ',') return sts__json_fail(j, STS_RULE_OFFSETS, at, "data_offsets has more than 2 elements; it needs [begin, end]");
    if ((r = sts__json_expect(j, ']', "']'")) != STS_OK) return r;
    j->depth--;
    return STS_OK;
}
/* Up to 19 digits (no overflow possible) followed by `stop`; 0 digits on any other form, which
   the general path then reports exactly. */
STS__PRIVATE size_t sts__fast_u64(const uint8_t *p, const uint8_t *end, uint8_t stop, uint64_t *v) {
    size_t n = 0;
    uint64_t x = 0;
    while (p + n < end && n < 20 && p[n] >= '0' && p[n] <= '9') x = x * 10 + (uint64_t)(p[n++] - '0');
    if (n == 0 || n > 19 || p + n >= end || p[n] != stop || (p[0] == '0' && n > 1)) return 0;
    *v = x;
    return n;
}
/* The writer's exact entry bytes, {"dtype":"X","shape":[..],"data_offsets":[b,e]}, with a local
   cursor. Returns 1 and fills the outputs, or 0 having changed nothing (the shape pool is rolled
   back), in which case the general path parses the same bytes and reports any problem. */
STS__PRIVATE int sts__parse_entry_fast(sts__parser *ps, sts_dtype *dtype, uint64_t *shape_at, uint32_t *rank, uint64_t *begin, uint64_t *end) {
    sts__json *j = &ps->j;
    sts_file *f = ps->f;
    const uint8_t *p = j->p, *e = j->end, *q;
    size_t start = f->nshapes, n;
    uint64_t v;
    if (j->depth + 2 > j->max_depth || e - p < 48 || memcmp(p, "{\"dtype\":\"", 10) != 0) return 0;
    p += 10;
    for (q = p; q < e && q - p < 12 && ((*q >= 'A' && *q <= 'Z') || (*q >= '0' && *q <= '9') || *q == '_'); q++) {}
    if (q >= e || *q != '"' || !sts_dtype_from_name((const char *)p, (size_t)(q - p), dtype)) return 0;
    p = q + 1;
    if (e - p < 11 || memcmp(p, ",\"shape\":[", 10) != 0) return 0;
    p += 10;
    if (*p == ']') p++;
    else for (;;) {
        uint8_t stop;
        if (p >= e) goto undo;
        for (q = p; q < e && *q >= '0' && *q <= '9'; q++) {}
        if (q >= e) goto undo;
        stop = *q == ',' ? ',' : ']';
        if (!(n = sts__fast_u64(p, e, stop, &v))) goto undo;
        if (STS__UNLIKELY(f->nshapes == f->shapes_cap) &&
            !sts__grow(&f->mem, (void **)&f->shapes, &f->shapes_cap, f->nshapes + 1, sizeof *f->shapes)) goto undo;
        f->shapes[f->nshapes++] = v;
        p += n + 1;
        if (stop == ']') break;
    }
    if (e - p < 19 || memcmp(p, ",\"data_offsets\":[", 17) != 0) goto undo;
    p += 17;
    if (ps->last_end && ps->last_end_len < (size_t)(e - p) && memcmp(p, ps->last_end, ps->last_end_len) == 0 && p[ps->last_end_len] == ',') {
        *begin = ps->last_end_val;  /* writer order: this begin is the previous end, byte for byte */
        p += ps->last_end_len + 1;
    } else {
        if (!(n = sts__fast_u64(p, e, ',', begin))) goto undo;
        p += n + 1;
    }
    if (!(n = sts__fast_u64(p, e, ']', end))) goto undo;
    if (e - (p + n) < 2 || p[n + 1] != '}') goto undo;
    ps->last_end = p;
    ps->last_end_len = n;
    ps->last_end_val = *end;
    j->p = p + n + 2;
    *shape_at = start;
    *rank = (uint32_t)(f->nshapes - start);
    return 1;
undo:
    f->nshapes = start;
    return 0;
}
/* One tensor entry, object or positional array; appends it to the file's table. */
STS__PRIVATE sts_result sts__parse_entry(sts__parser *ps, const char *name, size_t name_len, uint64_t key_off) {
    sts__json *j = &ps->j;
    sts_file *f = ps->f;
    sts_tensor *t;
    sts__info *in;
    sts_result r;
    sts_dtype dtype = STS_DTYPE_COUNT;
    uint64_t shape_at = 0, begin = 0, end = 0;
    uint32_t rank = 0;
    int have = 0;
    const uint8_t *open = j->p;
    if (STS__LIKELY(sts__parse_entry_fast(ps, &dtype, &shape_at, &rank, &begin, &end))) goto add;
    if (j->p >= j->end || (*j->p != '{' && *j->p != '['))
        return sts__json_fail(j, STS_RULE_ENTRY_TYPE, j->p, "a tensor entry must be an object, found %s", sts__json_what(j));
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
        if ((r = sts__parse_shape(ps, &shape_at, &rank)) != STS_OK) return r;
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
                return sts__json_fail(j, STS_RULE_JSON_SYNTAX, j->p, "expected a field name, found %s", sts__json_what(j));
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
            case STS__F_SHAPE: r = sts__parse_shape(ps, &shape_at, &rank); break;
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
            return sts__json_fail(j, STS_RULE_JSON_SYNTAX, j->p, "expected ',' or '}' in a tensor entry, found %s", sts__json_what(j));
        }
        if (STS__UNLIKELY(have != (STS__F_DTYPE | STS__F_SHAPE | STS__F_OFFSETS)))
            return sts__json_fail(j, STS_RULE_FIELD_MISSING, open, "missing field %s",
                                  !(have & STS__F_DTYPE) ? "\"dtype\"" : !(have & STS__F_SHAPE) ? "\"shape\"" : "\"data_offsets\"");
    }
    j->depth--;
add:
    if (STS__UNLIKELY(f->count == f->cap) &&
        !sts__grow(&f->mem, (void **)&f->tensors, &f->cap, f->count + 1, sizeof *f->tensors))
        return sts__nomem(j->err, "the tensor table");
    if (STS__UNLIKELY(f->count == f->info_cap) &&
        !sts__grow(&f->mem, (void **)&f->info, &f->info_cap, f->count + 1, sizeof *f->info))
        return sts__nomem(j->err, "the tensor table");
    t = &f->tensors[f->count];
    in = &f->info[f->count];
    f->count++;
    t->name = name;
    t->name_len = name_len;
    t->dtype = dtype;
    t->rank = rank;
    t->shape = NULL;
    t->begin = begin;
    t->end = end;
    in->hash = sts__hash(name, name_len, f->seed);
    in->key_off = key_off;
    in->shape_at = shape_at;
    return STS_OK;
arity:
    return sts__json_fail(j, STS_RULE_ENTRY_TYPE, open, "a positional tensor entry must have exactly 3 elements [dtype, shape, data_offsets]");
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
        return sts__json_fail(j, STS_RULE_METADATA_TYPE, j->p, "__metadata__ must be an object or null, found %s", sts__json_what(j));
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
            return sts__json_fail(j, STS_RULE_JSON_SYNTAX, j->p, "expected a string key in __metadata__, found %s", sts__json_what(j));
        if ((r = sts__json_string(j, &k)) != STS_OK) return r;
        if ((r = sts__json_expect(j, ':', "':'")) != STS_OK) return r;
        sts__json_ws(j);
        if (j->p >= j->end || *j->p != '"')
            return sts__json_fail(j, STS_RULE_METADATA_VALUE, j->p, "__metadata__ value of %q must be a string, found %s", k.p, k.n, sts__json_what(j));
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
        f->meta_info[f->meta_count].shape_at = 0;
        f->meta_count++;
        sts__json_ws(j);
        if (j->p < j->end && *j->p == ',') { j->p++; sts__json_ws(j); continue; }
        if (j->p < j->end && *j->p == '}') { j->p++; break; }
        return sts__json_fail(j, STS_RULE_JSON_SYNTAX, j->p, "expected ',' or '}' in __metadata__, found %s", sts__json_what(j));
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
        const char *name;
        size_t name_len;
        const uint8_t *kat = j->p;
        if (STS__UNLIKELY(j->p >= j->end || *j->p != '"'))
            return sts__json_fail(j, STS_RULE_JSON_SYNTAX, j->p, "expected a string key, found %s", sts__json_what(j));
        if ((r = sts__json_string(j, &k)) != STS_OK) return r;
        if (STS__LIKELY(j->p < j->end && *j->p == ':')) j->p++;
        else if ((r = sts__json_expect(j, ':', "':'")) != STS_OK) return r;
        sts__json_ws(j);
        if ((r = sts__str_value(ps, &k, &name, &name_len)) != STS_OK) return r;
        if (name_len == 12 && memcmp(name, "__metadata__", 12) == 0) {
            if ((r = sts__parse_metadata(ps, kat)) != STS_OK) return r;
        } else {
            if (ps->strict && k.esc && memchr(name, 0, name_len))
                return sts__json_fail(j, STS_RULE_STRICT_NAME_NUL, kat, "tensor name %q contains NUL", name, name_len);
            j->ctx = name;
            j->ctx_len = name_len;
            r = sts__parse_entry(ps, name, name_len, sts__json_off(j, kat));
            j->ctx = NULL;
            if (r != STS_OK) return r;
        }
        sts__json_ws(j);
        if (STS__LIKELY(j->p < j->end && *j->p == ',')) { j->p++; sts__json_ws(j); continue; }
        if (STS__LIKELY(j->p < j->end && *j->p == '}')) { j->p++; break; }
        return sts__json_fail(j, STS_RULE_JSON_SYNTAX, j->p, "expected ',' or '}' after a tensor entry, found %s", sts__json_what(j));
    }
    j->depth--;
    if (ps->strict) {
        while (j->p < j->end && *j->p == ' ') j->p++;
        if (j->p < j->end && STS__IS_WS(*j->p))
            return sts__json_fail(j, STS_RULE_STRICT_PADDING, j->p, "padding byte %x; only spaces may follow the object", (int)*j->p);
    } else sts__json_ws(j);
    if (j->p < j->end)
        return sts__json_fail(j, STS_RULE_JSON_SYNTAX, j->p, "unexpected byte %x after the top-level object", (int)*j->p);
    return STS_OK;
}

/* ---- after the JSON: duplicates, order, the reference's checks ---- */
STS__PRIVATE sts__names sts__tensor_names(const sts_file *f) {
    sts__names k;
    k.items = f->tensors; k.stride = sizeof(sts_tensor);
    k.ptr_off = offsetof(sts_tensor, name); k.len_off = offsetof(sts_tensor, name_len);
    k.hashes = f->info ? (const void *)&f->info[0].hash : NULL; k.hash_stride = sizeof(sts__info);
    return k;
}
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
        uint32_t prev = f->meta_index.slots[pos];
        if (prev != STS__EMPTY) {
            if (strict)
                return sts__fail(err, STS_RULE_STRICT_DUPLICATE, f->meta_info[i].key_off,
                                 "__metadata__ key %q appears twice (first at byte %U)", kv->key, kv->key_len, f->meta_info[prev].key_off);
            f->meta_info[prev].shape_at = 1;  /* dead */
            dups++;
        }
        f->meta_index.slots[pos] = (uint32_t)i;
    }
    if (!dups) return STS_OK;
    for (i = o = 0; i < f->meta_count; i++)  /* compact, keeping header order */
        if (!f->meta_info[i].shape_at) { f->meta[o] = f->meta[i]; f->meta_info[o] = f->meta_info[i]; o++; }
    f->meta_count = o;
    sts__index_free(&f->mem, &f->meta_index);
    if (!sts__index_init(&f->mem, &f->meta_index, o)) return sts__nomem(err, "the metadata index");
    for (i = 0; i < o; i++)
        f->meta_index.slots[sts__index_probe(&f->meta_index, &k, f->meta_info[i].hash, f->meta[i].key, f->meta[i].key_len)] = (uint32_t)i;
    return STS_OK;
}
/* Tensor names: index them in header order, last one wins; then put the survivors in
   (begin, end) order, stable, remapping the index. */
STS__PRIVATE sts_result sts__finish_tensors(sts_file *f, int strict, sts_error *err) {
    static const uint64_t no_dims[1] = { 0 };
    sts__names k = sts__tensor_names(f);
    size_t n = f->count, i, live, dead = 0;
    int sorted = 1;
    uint64_t cursor, total;
    const sts_tensor *prev = NULL;
    if (!sts__index_init(&f->mem, &f->index, n)) return sts__nomem(err, "the tensor index");
    for (i = 0; i < n; i++) {
        sts_tensor *t = &f->tensors[i];
        size_t pos = sts__index_probe(&f->index, &k, f->info[i].hash, t->name, t->name_len);
        uint32_t was = f->index.slots[pos];
        if (STS__UNLIKELY(was != STS__EMPTY)) {
            if (strict)
                return sts__fail(err, STS_RULE_STRICT_DUPLICATE, f->info[i].key_off,
                                 "tensor name %q appears twice (first at byte %U)", t->name, t->name_len, f->info[was].key_off);
            f->tensors[was].dtype = STS_DTYPE_COUNT;  /* the earlier entry vanishes */
            dead++;
        }
        f->index.slots[pos] = (uint32_t)i;
        if (STS__LIKELY(t->dtype != STS_DTYPE_COUNT) && prev && dead == 0 &&
            (t->begin < prev->begin || (t->begin == prev->begin && t->end < prev->end)))
            sorted = 0;
        prev = t;
    }
    live = n - dead;
    if (!sorted || dead) {
        size_t *idx = NULL, *tmp = NULL, *ord;
        uint32_t *pos = NULL;
        sts_tensor *nt = NULL;
        sts__info *ni = NULL;
        size_t bytes_idx, bytes_t, bytes_i, bytes_pos, o;
        if (!sts__mulsz(live ? live : 1, sizeof(size_t), &bytes_idx) || !sts__mulsz(live ? live : 1, sizeof(sts_tensor), &bytes_t) ||
            !sts__mulsz(live ? live : 1, sizeof(sts__info), &bytes_i) || !sts__mulsz(n, sizeof(uint32_t), &bytes_pos))
            return sts__nomem(err, "the tensor order");
        idx = (size_t *)sts__alloc(&f->mem, bytes_idx);
        tmp = (size_t *)sts__alloc(&f->mem, bytes_idx);
        pos = (uint32_t *)sts__alloc(&f->mem, bytes_pos);
        nt = (sts_tensor *)sts__alloc(&f->mem, bytes_t);
        ni = (sts__info *)sts__alloc(&f->mem, bytes_i);
        if (!idx || !tmp || !pos || !nt || !ni) {
            sts__free(&f->mem, idx, bytes_idx); sts__free(&f->mem, tmp, bytes_idx); sts__free(&f->mem, pos, bytes_pos);
            sts__free(&f->mem, nt, bytes_t); sts__free(&f->mem, ni, bytes_i);
            return sts__nomem(err, "the tensor order");
        }
        for (i = o = 0; i < n; i++) if (f->tensors[i].dtype != STS_DTYPE_COUNT) idx[o++] = i;
        ord = sts__msort(idx, tmp, live, sts__by_offsets, f->tensors);
        for (o = 0; o < live; o++) { nt[o] = f->tensors[ord[o]]; ni[o] = f->info[ord[o]]; pos[ord[o]] = (uint32_t)o; }
        for (i = 0; i <= f->index.mask; i++)
            if (f->index.slots[i] != STS__EMPTY) f->index.slots[i] = pos[f->index.slots[i]];
        sts__free(&f->mem, idx, bytes_idx); sts__free(&f->mem, tmp, bytes_idx); sts__free(&f->mem, pos, bytes_pos);
        sts__free(&f->mem, f->tensors, f->cap * sizeof *f->tensors);
        sts__free(&f->mem, f->info, f->info_cap * sizeof *f->info);
        f->tensors = nt; f->info = ni;
        f->count = f->cap = f->info_cap = live;
        n = live;
    }
    /* The reference's checks, in its order, over the tensors in (begin, end) order. */
    cursor = 0;
    for (i = 0; i < n; i++) {
        sts_tensor *t = &f->tensors[i];
        const uint64_t *dims = f->shapes ? f->shapes + f->info[i].shape_at : no_dims;
        uint64_t numel = 1, bits, off = f->info[i].key_off;
        uint32_t d;
        t->shape = dims;
        if (STS__UNLIKELY(t->begin != cursor || t->end < t->begin)) {
            if (t->end < t->begin)
                return sts__fail(err, STS_RULE_OFFSETS_CONTIGUOUS, off, "tensor %q: data_offsets [%U, %U] end before they begin",
                                 t->name, t->name_len, t->begin, t->end);
            if (i == 0)
                return sts__fail(err, STS_RULE_OFFSETS_CONTIGUOUS, off, "tensor %q: data_offsets [%U, %U], but the first tensor must begin at 0",
                                 t->name, t->name_len, t->begin, t->end);
            return sts__fail(err, STS_RULE_OFFSETS_CONTIGUOUS, off,
                             "tensor %q: data_offsets [%U, %U] begin at %U, but tensor %q ends at %U (%s)",
                             t->name, t->name_len, t->begin, t->end, t->begin, f->tensors[i - 1].name, f->tensors[i - 1].name_len,
                             cursor, t->begin > cursor ? "a hole" : "an overlap");
        }
        for (d = 0; d < t->rank; d++)
            if (STS__UNLIKELY(!sts__mul64(numel, dims[d], &numel)))
                return sts__fail(err, STS_RULE_NUMEL_OVERFLOW, off, "tensor %q: the product of shape %S overflows 64 bits at dimension %z",
                                 t->name, t->name_len, dims, (size_t)t->rank, (size_t)d);
        if (STS__UNLIKELY(!sts__mul64(numel, sts__dtype_bits[t->dtype], &bits)))
            return sts__fail(err, STS_RULE_BITS_OVERFLOW, off, "tensor %q: %U elements of %s overflow 64 bits when counted in bits",
                             t->name, t->name_len, numel, sts__dtype_names[t->dtype]);
        if (STS__UNLIKELY(bits % 8))
            return sts__fail(err, STS_RULE_BYTE_ALIGNED, off, "tensor %q: %U elements of %s are %U bits, not a whole number of bytes",
                             t->name, t->name_len, numel, sts__dtype_names[t->dtype], bits);
        if (STS__UNLIKELY(t->end - t->begin != bits / 8))
            return sts__fail(err, STS_RULE_SIZE_MATCH, off, "tensor %q: %s %S needs %U bytes, but data_offsets [%U, %U] hold %U",
                             t->name, t->name_len, sts__dtype_names[t->dtype], dims, (size_t)t->rank, bits / 8, t->begin, t->end, t->end - t->begin);
        cursor = t->end;
    }
    if (!sts__add64(8 + f->header_len, cursor, &total) || total > f->file_size)
        return sts__fail(err, STS_RULE_FILE_SIZE, f->file_size,
                         "the data section needs %U bytes, but the file ends %U bytes after the header (truncated)",
                         cursor, f->file_size - 8 - f->header_len);
    if (total < f->file_size)
        return sts__fail(err, STS_RULE_FILE_SIZE, total, "the data section ends at file byte %U, but the file has %U bytes (trailing bytes)",
                         total, f->file_size);
    return STS_OK;
}
/* Parse and validate f->header (N bytes) against f->file_size. */
STS__PRIVATE sts_result sts__parse_core(sts_file *f, const sts_options *o, sts_error *err) {
    sts__parser ps;
    sts_result r;
    size_t n = (size_t)f->header_len, bad;
    int strict = o && o->strict;
    bad = sts__utf8_check(f->header, n);
    if (bad != n)
        return sts__fail(err, STS_RULE_HEADER_UTF8, 8 + (uint64_t)bad, "byte %x at file offset %U is not part of a valid UTF-8 sequence",
                         (int)f->header[bad], 8 + (uint64_t)bad);
    memset(&ps, 0, sizeof ps);
    ps.j.off0 = 8;
    ps.j.p = ps.j.base = f->header;
    ps.j.end = f->header + n;
    ps.j.err = err;
    ps.j.max_depth = o && o->max_depth && o->max_depth < STS_MAX_DEPTH ? o->max_depth : STS_MAX_DEPTH;
    ps.f = f;
    ps.strict = strict;
    f->seed = sts__seed_from(f, o ? o->hash_seed : 0);
    {   /* size the tables from the header length (a writer's entry takes ~100 bytes, ~2 dims) */
        size_t guess = n / 96 + 16;
        if (!sts__grow(&f->mem, (void **)&f->tensors, &f->cap, guess, sizeof *f->tensors) ||
            !sts__grow(&f->mem, (void **)&f->info, &f->info_cap, guess, sizeof *f->info) ||
            !sts__grow(&f->mem, (void **)&f->shapes, &f->shapes_cap, guess * 2, sizeof *f->shapes))
            return sts__nomem(err, "the tensor table");
    }
    if ((r = sts__parse_json(&ps)) != STS_OK) return r;
    if ((r = sts__finish_metadata(f, strict, err)) != STS_OK) return r;
    return sts__finish_tensors(f, strict, err);
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
    if (!out || (!bytes && size)) return sts__fail(err, STS_RULE_ARGUMENT, STS_OFFSET_UNKNOWN, "sts_parse needs bytes and out");
    if (!sts__mem_valid(&m)) return sts__fail(err, STS_RULE_ARGUMENT, STS_OFFSET_UNKNOWN, "the allocator needs all three hooks or none");
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
    if (!out || (!prefix && prefix_size)) return sts__fail(err, STS_RULE_ARGUMENT, STS_OFFSET_UNKNOWN, "sts_parse_header needs a prefix and out");
    if (!sts__mem_valid(&m)) return sts__fail(err, STS_RULE_ARGUMENT, STS_OFFSET_UNKNOWN, "the allocator needs all three hooks or none");
    if (file_size >= 8 && prefix_size < 8)
        return sts__fail(err, STS_RULE_ARGUMENT, STS_OFFSET_UNKNOWN, "the prefix holds %z bytes; at least 8 are needed", prefix_size);
    if ((r = sts__check_prefix((const uint8_t *)prefix, file_size, opts, &n, err)) != STS_OK) return r;
    if (prefix_size - 8 < n)
        return sts__fail(err, STS_RULE_ARGUMENT, STS_OFFSET_UNKNOWN, "the prefix holds %z bytes but the header needs %U", prefix_size, 8 + n);
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
    it = f->index.slots[sts__index_probe(&f->index, &k, sts__hash(name, name_len, f->seed), name, name_len)];
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
STSDEF const sts_kv *sts_metadata_at(const sts_file *f, size_t i) { return f && i < f->meta_count ? &f->meta[i] : NULL; }
STSDEF const sts_kv *sts_metadata_find(const sts_file *f, const char *key, size_t key_len) {
    sts__names k;
    uint32_t it;
    if (!f || f->meta_count == 0 || (!key && key_len)) return NULL;
    k = sts__meta_names(f);
    it = f->meta_index.slots[sts__index_probe(&f->meta_index, &k, sts__hash(key, key_len, f->seed), key, key_len)];
    return it == STS__EMPTY ? NULL : &f->meta[it];
}

/* ==============================================================================================
   >>io  5. io
   Owns: opening a file from a user pread-style source, from a path by mmap (with a read-into-
   memory fallback), or header-only (exactly 8 + N bytes read); the fd sink; atomic publication
   of a file (temporary in the same folder, fsync, rename, fsync of the folder); random bytes for
   temporary names; errno names for messages.
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
    if (!src || !src->read || !out) return sts__fail(err, STS_RULE_ARGUMENT, STS_OFFSET_UNKNOWN, "sts_open_source needs a source with read, and out");
    if (!sts__mem_valid(&m)) return sts__fail(err, STS_RULE_ARGUMENT, STS_OFFSET_UNKNOWN, "the allocator needs all three hooks or none");
    if (src->size >= 8 && (r = src->read(src->user, 0, prefix, 8)) != STS_OK)
        return sts__fail_code(err, r, STS_RULE_IO, 0, "the source failed reading the header length (%s)", sts_result_name(r));
    if ((r = sts__check_prefix(prefix, src->size, opts, &n, err)) != STS_OK) return r;
    if (!(f = sts__file_new(&m))) return sts__nomem(err, "the file handle");
    if (!(f->owned = sts__alloc(&m, (size_t)n))) { sts_close(f); return sts__nomem(err, "the header buffer"); }
    f->owned_size = (size_t)n;
    f->release = sts__release_heap;
    if (n && (r = src->read(src->user, 8, f->owned, (size_t)n)) != STS_OK) {
        sts_close(f);
        return sts__fail_code(err, r, STS_RULE_IO, 8, "the source failed reading the %U-byte header (%s)", n, sts_result_name(r));
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
STS__PRIVATE sts_result sts__fail_errno(sts_error *err, int e, const char *what, const char *path) {
    return sts__fail(err, STS_RULE_IO, STS_OFFSET_UNKNOWN, "%s %q failed: %s (errno %d)", what, path, path ? strlen(path) : (size_t)0,
                     sts__errno_name(e), e);
}
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
#ifndef STS_NO_MMAP
STS__PRIVATE void sts__release_map(sts_file *f) {
    munmap(f->owned, f->owned_size);
    f->owned = NULL;
}
#endif
STSDEF sts_result sts_open(const char *path, const sts_options *opts, sts_file **out, sts_error *err) {
    sts__mem m = sts__mem_from(opts);
    struct stat st;
    uint8_t prefix[8];
    uint64_t size, n;
    sts_file *f;
    sts_result r;
    int fd, e;
    if (!path || !out) return sts__fail(err, STS_RULE_ARGUMENT, STS_OFFSET_UNKNOWN, "sts_open needs a path and out");
    if (!sts__mem_valid(&m)) return sts__fail(err, STS_RULE_ARGUMENT, STS_OFFSET_UNKNOWN, "the allocator needs all three hooks or none");
    do fd = open(path, O_RDONLY | O_CLOEXEC); while (fd < 0 && errno == EINTR);
    if (fd < 0) return sts__fail_errno(err, errno, "open", path);
    if (fstat(fd, &st) != 0) { e = errno; close(fd); return sts__fail_errno(err, e, "stat", path); }
    if (S_ISDIR(st.st_mode)) { close(fd); return sts__fail_errno(err, EISDIR, "open", path); }
    size = (uint64_t)st.st_size;
    if (size >= 8 && (e = sts__pread_all(fd, prefix, 8, 0)) != 0) { close(fd); return sts__fail_errno(err, e, "read", path); }
    if ((r = sts__check_prefix(prefix, size, opts, &n, err)) != STS_OK) { close(fd); return r; }
    if (!(f = sts__file_new(&m))) { close(fd); return sts__nomem(err, "the file handle"); }
    f->header_len = n;
    f->file_size = size;
    if (opts && opts->header_only) {  /* exactly 8 + N bytes are read */
        if (!(f->owned = sts__alloc(&m, (size_t)n))) { close(fd); sts_close(f); return sts__nomem(err, "the header buffer"); }
        f->owned_size = (size_t)n;
        f->release = sts__release_heap;
        if (n && (e = sts__pread_all(fd, f->owned, n, 8)) != 0) { close(fd); sts_close(f); return sts__fail_errno(err, e, "read", path); }
        close(fd);
        f->header = (const uint8_t *)f->owned;
        return sts__finish_open(f, opts, out, err);
    }
    if (size > (uint64_t)(size_t)-1) { close(fd); sts_close(f); return sts__fail(err, STS_RULE_UNSUPPORTED, STS_OFFSET_UNKNOWN, "%q is too large for this address space", path, strlen(path)); }
#ifndef STS_NO_MMAP
    if (!(opts && opts->no_mmap)) {
        void *p = mmap(NULL, (size_t)size, PROT_READ, MAP_PRIVATE, fd, 0);
        if (p != MAP_FAILED) { f->owned = p; f->owned_size = (size_t)size; f->release = sts__release_map; }
    }
#endif
    if (!f->owned) {  /* no mmap, or it failed: read the whole file */
        if (!(f->owned = sts__alloc(&m, (size_t)size))) { close(fd); sts_close(f); return sts__nomem(err, "the file buffer"); }
        f->owned_size = (size_t)size;
        f->release = sts__release_heap;
        if ((e = sts__pread_all(fd, f->owned, size, 0)) != 0) { close(fd); sts_close(f); return sts__fail_errno(err, e, "read", path); }
    }
    close(fd);
    f->header = (const uint8_t *)f->owned + 8;
    f->data = f->header + n;
    return sts__finish_open(f, opts, out, err);
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
        for (i = 0; i < n; i++) { if (i % 8 == 0) h = sts__fold(h ^ STS__K2, (uint64_t)i ^ STS__K3); p[i] = (uint8_t)(h >> (8 * (i % 8))); }
    }
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
    if (base_len == 0) return sts__fail(err, STS_RULE_ARGUMENT, STS_OFFSET_UNKNOWN, "%q names a folder, not a file", path, strlen(path));
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
STS__PRIVATE int sts__fsync_dir(const char *path) {
    const char *slash = strrchr(path, '/');
    char small[512], *dir = small;
    size_t len = slash ? (size_t)(slash - path) : 0;
    int fd, e = 0;
    if (!slash) { dir = (char *)"."; len = 1; }
    else if (len == 0) { dir = (char *)"/"; len = 1; }
    else if (len < sizeof small) { memcpy(small, path, len); small[len] = 0; }
    else return 0;  /* very long folder names: skip the folder sync rather than allocate here */
    do fd = open(dir, O_RDONLY | O_CLOEXEC); while (fd < 0 && errno == EINTR);
    if (fd < 0) return errno;
    if (fsync(fd) != 0 && errno != EINVAL && errno != EBADF) e = errno;  /* some file systems refuse folder syncs */
    close(fd);
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
    if (sync_dir && (e = sts__fsync_dir(a->path)) != 0) return sts__fail_errno(err, e, "fsync the folder of", a->path);
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
#endif /* STS_NO_STDIO */

/* ==============================================================================================
   >>writer  6. writer
   Owns: the single-file writer. A plan checks every spec and the metadata (names, dtypes,
   sizes, overflow, duplicates, the header cap) before a byte is written, sorts the tensors as
   the reference writer does, and sizes the header exactly; rendering emits the reference's bytes.
   Tensor data goes straight from the caller's pointer or producer to the sink: no staging copy.
   May call: util, json (escaping rules), dtype, header (limits), io.
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
    if ((r = s->sink->write(s->sink->user, bytes, len)) != STS_OK || (s->flush && (r = s->flush(s->sink->user)) != STS_OK)) {
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
    size_t order_bytes, begin_bytes;
    uint64_t json_len;      /* unpadded header JSON */
    uint64_t header_len;    /* N: padded to a multiple of 8 */
    uint64_t data_len;
} sts__plan;

STS__PRIVATE void sts__plan_free(sts__plan *pl) {
    sts__free(&pl->mem, pl->order, pl->order_bytes);
    sts__free(&pl->mem, pl->begin, pl->begin_bytes);
    pl->order = NULL;
    pl->begin = NULL;
}
/* Bytes a string takes in the header: the reference escapes '"', '\\' and control characters
   (\b \f \n \r \t, else \u00XX in lowercase hex) and writes everything else raw. */
STS__PRIVATE uint64_t sts__esc_len(const char *s, size_t n) {
    uint64_t len = 2;
    size_t i;
    for (i = 0; i < n; i++) {
        unsigned char c = (unsigned char)s[i];
        if (c >= 0x20 && c != '"' && c != '\\') len += 1;
        else if (c == '"' || c == '\\' || c == 8 || c == 9 || c == 10 || c == 12 || c == 13) len += 2;
        else len += 6;
    }
    return len;
}
STS__PRIVATE uint8_t *sts__esc_put(uint8_t *o, const char *s, size_t n) {
    static const char hex[] = "0123456789abcdef";
    size_t i;
    *o++ = '"';
    for (i = 0; i < n; i++) {
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
STS__PRIVATE uint64_t sts__digits(uint64_t v) {
    uint64_t d = 1;
    while (v >= 10) { v /= 10; d++; }
    return d;
}
STS__PRIVATE uint8_t *sts__u64_put(uint8_t *o, uint64_t v) {
    uint8_t t[20];
    int i = 20;
    do { t[--i] = (uint8_t)('0' + v % 10); v /= 10; } while (v);
    memcpy(o, t + i, (size_t)(20 - i));
    return o + (20 - i);
}
STS__PRIVATE sts_result sts__check_text(const char *s, size_t n, int is_name, const char *what, sts_error *err) {
    if (!s && n) return sts__fail(err, STS_RULE_ARGUMENT, STS_OFFSET_UNKNOWN, "%s is NULL with length %z", what, n);
    if (n && sts__utf8_check((const uint8_t *)s, n) != n)
        return sts__fail(err, STS_RULE_WRITE_TEXT, STS_OFFSET_UNKNOWN, "%s %q is not valid UTF-8", what, s, n);
    if (is_name && n && memchr(s, 0, n))
        return sts__fail(err, STS_RULE_WRITE_TEXT, STS_OFFSET_UNKNOWN, "%s %q contains NUL, which strict readers reject", what, s, n);
    return STS_OK;
}
typedef struct sts__spec_order { const sts_tensor_spec *specs; } sts__spec_order;
STS__PRIVATE int sts__by_layout(const void *ctx, size_t a, size_t b) {  /* rank descending, then name bytes */
    const sts_tensor_spec *s = ((const sts__spec_order *)ctx)->specs;
    size_t la = s[a].name_len, lb = s[b].name_len, m = la < lb ? la : lb;
    int c;
    if (s[a].dtype != s[b].dtype) return s[a].dtype > s[b].dtype;
    c = m ? memcmp(s[a].name, s[b].name, m) : 0;
    return c < 0 || (c == 0 && la < lb);
}
/* Every check, the layout and the exact header size, before any byte is written. */
STS__PRIVATE sts_result sts__plan_make(sts__plan *pl, const sts_tensor_spec *specs, size_t n, const sts_kv *meta, size_t n_meta,
                                       const sts_options *o, sts_error *err) {
    sts__index ix;
    sts__names k;
    uint64_t *hashes = NULL, len, cursor = 0, max = sts__max_header(o), seed;
    size_t i, hbytes = 0, *tmp = NULL, *sorted;
    sts_result r = STS_OK;
    memset(pl, 0, sizeof *pl);
    pl->mem = sts__mem_from(o);
    pl->n = n;
    ix.slots = NULL;
    if (!sts__mem_valid(&pl->mem)) return sts__fail(err, STS_RULE_ARGUMENT, STS_OFFSET_UNKNOWN, "the allocator needs all three hooks or none");
    if ((!specs && n) || (!meta && n_meta)) return sts__fail(err, STS_RULE_ARGUMENT, STS_OFFSET_UNKNOWN, "specs or metadata are NULL with a nonzero count");
    if (n > 0xfffffffeu || n_meta > 0xfffffffeu) return sts__fail(err, STS_RULE_ARGUMENT, STS_OFFSET_UNKNOWN, "too many tensors or metadata entries");
    len = 2;  /* {} */
    for (i = 0; i < n; i++) {
        const sts_tensor_spec *s = &specs[i];
        uint64_t numel = 1, bits;
        uint32_t d;
        if ((r = sts__check_text(s->name, s->name_len, 1, "tensor name", err)) != STS_OK) return r;
        if (s->name_len == 12 && memcmp(s->name, "__metadata__", 12) == 0)
            return sts__fail(err, STS_RULE_WRITE_RESERVED, STS_OFFSET_UNKNOWN, "a tensor may not be named \"__metadata__\": readers take it for the metadata");
        if ((unsigned)s->dtype >= (unsigned)STS_DTYPE_COUNT)
            return sts__fail(err, STS_RULE_WRITE_DTYPE, STS_OFFSET_UNKNOWN, "tensor %q: dtype %d is not one of the 22", s->name, s->name_len, (int)s->dtype);
        if (s->rank && !s->shape)
            return sts__fail(err, STS_RULE_WRITE_DTYPE, STS_OFFSET_UNKNOWN, "tensor %q: rank %d but no shape", s->name, s->name_len, (int)s->rank);
        for (d = 0; d < s->rank; d++)
            if (!sts__mul64(numel, s->shape[d], &numel))
                return sts__fail(err, STS_RULE_NUMEL_OVERFLOW, STS_OFFSET_UNKNOWN, "tensor %q: the product of shape %S overflows 64 bits",
                                 s->name, s->name_len, s->shape, (size_t)s->rank);
        if (!sts__mul64(numel, sts__dtype_bits[s->dtype], &bits))
            return sts__fail(err, STS_RULE_BITS_OVERFLOW, STS_OFFSET_UNKNOWN, "tensor %q: %U elements of %s overflow 64 bits when counted in bits",
                             s->name, s->name_len, numel, sts__dtype_names[s->dtype]);
        if (bits % 8)
            return sts__fail(err, STS_RULE_BYTE_ALIGNED, STS_OFFSET_UNKNOWN, "tensor %q: %U elements of %s are %U bits, not a whole number of bytes",
                             s->name, s->name_len, numel, sts__dtype_names[s->dtype], bits);
        if (bits / 8 != s->data_size)
            return sts__fail(err, STS_RULE_WRITE_DATA_SIZE, STS_OFFSET_UNKNOWN, "tensor %q: %s %S is %U bytes, but data_size is %U",
                             s->name, s->name_len, sts__dtype_names[s->dtype], s->shape, (size_t)s->rank, bits / 8, s->data_size);
        if (s->data_size && !s->data && !s->produce)
            return sts__fail(err, STS_RULE_WRITE_DATA_SIZE, STS_OFFSET_UNKNOWN, "tensor %q has neither data nor a producer", s->name, s->name_len);
        /* "name":{"dtype":"X","shape":[..],"data_offsets":[b,e]}  (offsets added below) */
        len += sts__esc_len(s->name, s->name_len) + 1 + 10 + strlen(sts__dtype_names[s->dtype]) + 11 + 19 + 2 + (i ? 1 : 0);
        for (d = 0; d < s->rank; d++) len += sts__digits(s->shape[d]) + (d ? 1 : 0);
    }
    if (meta) {
        len += 16 + 1 + (n ? 1 : 0);  /* "__metadata__":{ } and the comma after it */
        for (i = 0; i < n_meta; i++) {
            if ((r = sts__check_text(meta[i].key, meta[i].key_len, 0, "metadata key", err)) != STS_OK) return r;
            if ((r = sts__check_text(meta[i].value, meta[i].value_len, 0, "metadata value", err)) != STS_OK) return r;
            len += sts__esc_len(meta[i].key, meta[i].key_len) + 1 + sts__esc_len(meta[i].value, meta[i].value_len) + (i ? 1 : 0);
        }
    }
    /* duplicates: one index for the names, then one for the metadata keys */
    if (!sts__mulsz((n > n_meta ? n : n_meta) + 1, sizeof *hashes, &hbytes) || !(hashes = (uint64_t *)sts__alloc(&pl->mem, hbytes)))
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
            r = sts__fail(err, STS_RULE_WRITE_DUPLICATE, STS_OFFSET_UNKNOWN, "tensor name %q is given twice", specs[i].name, specs[i].name_len);
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
            r = sts__fail(err, STS_RULE_WRITE_DUPLICATE, STS_OFFSET_UNKNOWN, "metadata key %q is given twice", meta[i].key, meta[i].key_len);
            goto done;
        }
        ix.slots[pos] = (uint32_t)i;
    }
    /* layout: the reference's order, contiguous offsets */
    if (!sts__mulsz(n ? n : 1, sizeof(size_t), &pl->order_bytes) || !sts__mulsz(n ? n : 1, sizeof(uint64_t), &pl->begin_bytes) ||
        !(pl->order = (size_t *)sts__alloc(&pl->mem, pl->order_bytes)) || !(tmp = (size_t *)sts__alloc(&pl->mem, pl->order_bytes)) ||
        !(pl->begin = (uint64_t *)sts__alloc(&pl->mem, pl->begin_bytes))) {
        r = sts__nomem(err, "the writer's layout");
        goto done;
    }
    {
        sts__spec_order ctx;
        ctx.specs = specs;
        int in_order = 1;
        for (i = 0; i < n; i++) pl->order[i] = i;
        for (i = 1; i < n && in_order; i++) in_order = !sts__by_layout(&ctx, i, i - 1);  /* often already sorted */
        if (!in_order) {
            sorted = sts__msort(pl->order, tmp, n, sts__by_layout, &ctx);
            if (sorted != pl->order) memcpy(pl->order, sorted, n * sizeof(size_t));
        }
    }
    for (i = 0; i < n; i++) {
        size_t s = pl->order[i];
        pl->begin[s] = cursor;
        len += sts__digits(cursor);
        if (!sts__add64(cursor, specs[s].data_size, &cursor)) {
            r = sts__fail(err, STS_RULE_WRITE_TOTAL, STS_OFFSET_UNKNOWN, "the total data size overflows 64 bits at tensor %q", specs[s].name, specs[s].name_len);
            goto done;
        }
        len += sts__digits(cursor);
    }
    pl->json_len = len;
    pl->header_len = (len + 7) / 8 * 8;
    pl->data_len = cursor;
    if (pl->header_len > max)
        r = sts__fail(err, STS_RULE_HEADER_TOO_LARGE, STS_OFFSET_UNKNOWN, "the header would be %U bytes, over the limit of %U", pl->header_len, max);
    else if (!sts__add64(8 + pl->header_len, cursor, &len))
        r = sts__fail(err, STS_RULE_WRITE_TOTAL, STS_OFFSET_UNKNOWN, "8 + %U header bytes + %U data bytes overflow 64 bits", pl->header_len, cursor);
done:
    sts__index_free(&pl->mem, &ix);
    sts__free(&pl->mem, hashes, hbytes);
    sts__free(&pl->mem, tmp, pl->order_bytes);
    if (r != STS_OK) sts__plan_free(pl);
    return r;
}
/* The 8-byte length and the padded header: exactly 8 + header_len bytes into dst. */
STS__PRIVATE void sts__plan_render(const sts__plan *pl, const sts_tensor_spec *specs, const sts_kv *meta, size_t n_meta, uint8_t *dst) {
    uint8_t *o = dst + 8, *end = dst + 8 + pl->header_len;
    size_t i;
    uint32_t d;
    sts__st64(dst, pl->header_len);
    *o++ = '{';
    if (meta) {
        memcpy(o, "\"__metadata__\":{", 16); o += 16;
        for (i = 0; i < n_meta; i++) {
            if (i) *o++ = ',';
            o = sts__esc_put(o, meta[i].key, meta[i].key_len);
            *o++ = ':';
            o = sts__esc_put(o, meta[i].value, meta[i].value_len);
        }
        *o++ = '}';
        if (pl->n) *o++ = ',';
    }
    for (i = 0; i < pl->n; i++) {
        const sts_tensor_spec *s = &specs[pl->order[i]];
        const char *dn = sts__dtype_names[s->dtype];
        size_t dl = strlen(dn);
        if (i) *o++ = ',';
        o = sts__esc_put(o, s->name, s->name_len);
        memcpy(o, ":{\"dtype\":\"", 11); o += 11;
        memcpy(o, dn, dl); o += dl;
        memcpy(o, "\",\"shape\":[", 11); o += 11;
        for (d = 0; d < s->rank; d++) { if (d) *o++ = ','; o = sts__u64_put(o, s->shape[d]); }
        memcpy(o, "],\"data_offsets\":[", 18); o += 18;
        o = sts__u64_put(o, pl->begin[pl->order[i]]);
        *o++ = ',';
        o = sts__u64_put(o, pl->begin[pl->order[i]] + s->data_size);
        *o++ = ']';
        *o++ = '}';
    }
    *o++ = '}';
    STS_ASSERT((uint64_t)(o - dst - 8) == pl->json_len);
    while (o < end) *o++ = ' ';
}
/* Header, then each tensor's bytes in layout order, straight to the sink. A gathering sink
   (the fd sink) is flushed through `flush` before the header buffer is released. */
STS__PRIVATE sts_result sts__plan_emit_data(const sts__plan *pl, const sts_tensor_spec *specs, const sts_sink *sink,
                                            sts_result (*flush)(void *user), sts_error *err);
STS__PRIVATE sts_result sts__plan_emit(const sts__plan *pl, const sts_tensor_spec *specs, const sts_kv *meta, size_t n_meta,
                                       const sts_sink *sink, sts_result (*flush)(void *user), sts_error *err) {
    size_t hbytes = (size_t)(8 + pl->header_len);
    uint8_t *hdr;
    sts_result r;
    if (!(hdr = (uint8_t *)sts__alloc(&pl->mem, hbytes))) return sts__nomem(err, "the header");
    sts__plan_render(pl, specs, meta, n_meta, hdr);
    r = sink->write(sink->user, hdr, hbytes);
    if (r != STS_OK) r = sts__fail_code(err, r, STS_RULE_IO, 0, "the sink failed writing the header (%s)", sts_result_name(r));
    else r = sts__plan_emit_data(pl, specs, sink, flush, err);
    if (r == STS_OK && flush && (r = flush(sink->user)) != STS_OK)
        r = sts__fail_code(err, r, STS_RULE_IO, STS_OFFSET_UNKNOWN, "the sink failed (%s)", sts_result_name(r));
    sts__free(&pl->mem, hdr, hbytes);
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
                    return sts__fail_code(err, r, STS_RULE_IO, off, "the sink failed writing tensor %q (%s)", s->name, s->name_len, sts_result_name(r));
                p += chunk; left -= chunk;
            }
        } else {
            sts_stream st;
            st.sink = sink; st.flush = flush; st.left = s->data_size; st.failed = STS_OK; st.sink_failed = 0;
            r = s->produce(s->produce_user, s, &st);
            if (st.sink_failed)
                return sts__fail_code(err, st.failed, STS_RULE_IO, off, "the sink failed writing tensor %q (%s)", s->name, s->name_len, sts_result_name(st.failed));
            if (r != STS_OK)
                return sts__fail_code(err, r, STS_RULE_WRITE_PRODUCER, off, "the producer of tensor %q failed (%s)", s->name, s->name_len, sts_result_name(r));
            if (st.failed != STS_OK)
                return sts__fail(err, STS_RULE_WRITE_PRODUCER, off, "the producer of tensor %q emitted more than its %U bytes", s->name, s->name_len, s->data_size);
            if (st.left)
                return sts__fail(err, STS_RULE_WRITE_PRODUCER, off, "the producer of tensor %q emitted %U of its %U bytes",
                                 s->name, s->name_len, s->data_size - st.left, s->data_size);
        }
        off += s->data_size;
    }
    return STS_OK;
}

STSDEF sts_result sts_write_size(const sts_tensor_spec *specs, size_t n, const sts_kv *meta, size_t n_meta, const sts_options *opts,
                                 uint64_t *header_size, uint64_t *file_size, sts_error *err) {
    sts__plan pl;
    sts_result r = sts__plan_make(&pl, specs, n, meta, n_meta, opts, err);
    if (r != STS_OK) return r;
    if (header_size) *header_size = pl.header_len;
    if (file_size) *file_size = 8 + pl.header_len + pl.data_len;
    sts__plan_free(&pl);
    sts__ok(err);
    return STS_OK;
}
STSDEF sts_result sts_write(const sts_tensor_spec *specs, size_t n, const sts_kv *meta, size_t n_meta, const sts_sink *sink,
                            const sts_options *opts, sts_error *err) {
    sts__plan pl;
    sts_result r;
    if (!sink || !sink->write) return sts__fail(err, STS_RULE_ARGUMENT, STS_OFFSET_UNKNOWN, "sts_write needs a sink with write");
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
STSDEF sts_result sts_write_memory(const sts_tensor_spec *specs, size_t n, const sts_kv *meta, size_t n_meta, const sts_options *opts,
                                   void **out, size_t *out_size, sts_error *err) {
    sts__plan pl;
    sts__memsink ms;
    sts_sink sink;
    sts_result r;
    uint64_t total;
    if (!out || !out_size) return sts__fail(err, STS_RULE_ARGUMENT, STS_OFFSET_UNKNOWN, "sts_write_memory needs out and out_size");
    if ((r = sts__plan_make(&pl, specs, n, meta, n_meta, opts, err)) != STS_OK) return r;
    total = 8 + pl.header_len + pl.data_len;
    if (total > (uint64_t)(size_t)-1) { sts__plan_free(&pl); return sts__fail(err, STS_RULE_UNSUPPORTED, STS_OFFSET_UNKNOWN, "%U bytes do not fit in memory here", total); }
    ms.len = 0;
    ms.cap = (size_t)total;
    if (!(ms.p = (uint8_t *)sts__alloc(&pl.mem, ms.cap))) { sts__plan_free(&pl); return sts__nomem(err, "the output buffer"); }
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
STSDEF sts_result sts_write_path(const char *path, const sts_tensor_spec *specs, size_t n, const sts_kv *meta, size_t n_meta,
                                 const sts_options *opts, sts_error *err) {
    sts__plan pl;
    sts__atomic a;
    sts__fdsink *fs;
    sts_sink sink;
    sts_result r;
    if (!path) return sts__fail(err, STS_RULE_ARGUMENT, STS_OFFSET_UNKNOWN, "sts_write_path needs a path");
    if ((r = sts__plan_make(&pl, specs, n, meta, n_meta, opts, err)) != STS_OK) return r;
    if (!(fs = (sts__fdsink *)sts__alloc(&pl.mem, sizeof *fs))) { sts__plan_free(&pl); return sts__nomem(err, "the file sink"); }
    if ((r = sts__atomic_begin(&a, path, &pl.mem, err)) != STS_OK) { sts__free(&pl.mem, fs, sizeof *fs); sts__plan_free(&pl); return r; }
    fs->mem = &pl.mem;
    fs->fd = a.fd;
    fs->err_no = 0;
    fs->n = 0;
    fs->pending = 0;
    sink.write = sts__fdsink_write;
    sink.user = fs;
    r = sts__plan_emit(&pl, specs, meta, n_meta, &sink, sts__fdsink_flush_cb, err);
    sts__plan_free(&pl);
    if (r != STS_OK && fs->err_no) sts__fail_errno(err, fs->err_no, "write", path);
    sts__free(&pl.mem, fs, sizeof *fs);
    if (r != STS_OK) {
        sts__atomic_abort(&a);
        return r;
    }
    if ((r = sts__atomic_commit(&a, !(opts && opts->no_fsync), err)) != STS_OK) return r;
    sts__ok(err);
    return STS_OK;
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
