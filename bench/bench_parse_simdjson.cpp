/* bench_parse_simdjson.cpp - the simdjson baseline of bench_parse: On-Demand walks every field of a
   safetensors header (every key unescaped, the dtype string, every shape dimension and both data
   offsets as integers, every __metadata__ pair) and folds them into a checksum so that nothing can
   be skipped. It neither validates the schema nor builds an index; that is the library's extra work.

   Built only when Debian's libsimdjson-dev is installed (bench/parse.mk); otherwise the stub at the
   end says so and bench_parse prints the reason instead of a figure. */
#include <stddef.h>
#include <stdint.h>

extern "C" {
/* 1 = simdjson is linked; the walk functions below are real. */
int bench_simdjson_available(void);
/* The simdjson version string, or the reason it is missing. */
const char *bench_simdjson_about(void);
/* The padding simdjson needs after the input: buf must have len + this many readable bytes. */
size_t bench_simdjson_padding(void);
/* Walks the header; returns the number of tensor entries (-1 on a simdjson error) and adds a fold
   of every value to *acc. */
long bench_simdjson_walk(const char *buf, size_t len, size_t capacity, uint64_t *acc);
}

#if defined(__has_include)
#if __has_include(<simdjson.h>)
#define BENCH_HAVE_SIMDJSON 1
#endif
#endif

#ifdef BENCH_HAVE_SIMDJSON
#include <simdjson.h>

#include <string_view>

namespace {
simdjson::ondemand::parser g_parser;

uint64_t fold_str(std::string_view s) {
    return s.size() * 31u + (s.empty() ? 0u : static_cast<unsigned char>(s[0]));
}
}  // namespace

extern "C" int bench_simdjson_available(void) { return 1; }
#define BENCH_STR2(x) #x
#define BENCH_STR(x) BENCH_STR2(x)
extern "C" const char *bench_simdjson_about(void) { return "simdjson " BENCH_STR(SIMDJSON_VERSION) " (libsimdjson-dev), On-Demand, built with -march=native"; }
extern "C" size_t bench_simdjson_padding(void) { return simdjson::SIMDJSON_PADDING; }

extern "C" long bench_simdjson_walk(const char *buf, size_t len, size_t capacity, uint64_t *acc) {
    using namespace simdjson;
    uint64_t a = 0;
    long tensors = 0;
    padded_string_view in(buf, len, capacity);
    ondemand::document doc;
    if (g_parser.iterate(in).get(doc)) return -1;
    ondemand::object top;
    if (doc.get_object().get(top)) return -1;
    for (auto field : top) {
        std::string_view key;
        if (field.unescaped_key().get(key)) return -1;
        a += fold_str(key);
        ondemand::object obj;
        if (field.value().get_object().get(obj)) return -1;
        if (key == "__metadata__") {
            for (auto kv : obj) {
                std::string_view k, v;
                if (kv.unescaped_key().get(k) || kv.value().get_string().get(v)) return -1;
                a += fold_str(k) + fold_str(v);
            }
            continue;
        }
        tensors++;
        for (auto f : obj) {
            std::string_view k;
            if (f.unescaped_key().get(k)) return -1;
            if (k == "dtype") {
                std::string_view v;
                if (f.value().get_string().get(v)) return -1;
                a += fold_str(v);
            } else {  /* shape and data_offsets: arrays of unsigned integers */
                ondemand::array arr;
                if (f.value().get_array().get(arr)) return -1;
                for (auto d : arr) {
                    uint64_t x;
                    if (d.get_uint64().get(x)) return -1;
                    a += x;
                }
            }
        }
    }
    *acc += a;
    return tensors;
}

#else

extern "C" int bench_simdjson_available(void) { return 0; }
extern "C" const char *bench_simdjson_about(void) {
    return "simdjson not installed (apt-get install libsimdjson-dev, or make deps)";
}
extern "C" size_t bench_simdjson_padding(void) { return 0; }
extern "C" long bench_simdjson_walk(const char *buf, size_t len, size_t capacity, uint64_t *acc) {
    (void)buf; (void)len; (void)capacity; (void)acc;
    return -1;
}

#endif
