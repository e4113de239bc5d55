/* sts: the safetensors_spark.h command-line tool.
   Exit codes: 0 success, 1 invalid input (a file fails validation, a key is missing, ...),
   2 usage error. Each subcommand answers --help. */
#define STS_IMPLEMENTATION
#include "../safetensors_spark.h"

#include <stdio.h>
#include <string.h>

#define EXIT_INVALID 1
#define EXIT_USAGE 2

typedef struct command {
    const char *name;
    int (*run)(int argc, char **argv);
    const char *usage;
    const char *help;
} command;

static int wants_help(int argc, char **argv) {
    int i;
    for (i = 1; i < argc; i++)
        if (strcmp(argv[i], "--help") == 0 || strcmp(argv[i], "-h") == 0) return 1;
    return 0;
}

/* ---- verify ---- */
static int cmd_verify(int argc, char **argv) {
    sts_options o;
    int i, files = 0, bad = 0, opts_done = 0;
    memset(&o, 0, sizeof o);
    o.header_only = 1; /* validation needs the 8 + N header bytes and the file size only */
    for (i = 1; i < argc; i++) {
        if (!opts_done && strcmp(argv[i], "--") == 0) { opts_done = 1; continue; }
        if (!opts_done && strcmp(argv[i], "--strict") == 0) { o.strict = 1; continue; }
        if (!opts_done && argv[i][0] == '-' && argv[i][1]) {
            fprintf(stderr, "sts verify: unknown option %s\n", argv[i]);
            return EXIT_USAGE;
        }
        files++;
    }
    if (!files) { fprintf(stderr, "sts verify: no files given\nusage: sts verify [--strict] FILE...\n"); return EXIT_USAGE; }
    opts_done = 0;
    for (i = 1; i < argc; i++) {
        sts_file *f;
        sts_error e;
        if (!opts_done && strcmp(argv[i], "--") == 0) { opts_done = 1; continue; }
        if (!opts_done && argv[i][0] == '-' && argv[i][1]) continue;
        if (sts_open(argv[i], &o, &f, &e) == STS_OK) {
            printf("%s\tOK\t%zu\n", argv[i], sts_count(f));
            sts_close(f);
        } else {
            printf("%s\tERR\t%s\t%s\n", argv[i], sts_result_name(e.code), e.message);
            bad = 1;
        }
    }
    return bad ? EXIT_INVALID : 0;
}

/* ---- rules: the validation-rule table ---- */
static int cmd_rules(int argc, char **argv) {
    int i;
    (void)argc; (void)argv;
    printf("| rule | result code | reference variant | rule statement |\n|---|---|---|---|\n");
    for (i = 1; i < (int)STS_RULE_COUNT; i++) {
        sts_result r = sts_rule_result((sts_rule)i);
        const char *v = sts_result_variant(r);
        printf("| `%s` | `%s` | %s | %s |\n", sts_rule_id((sts_rule)i), sts_result_name(r), v ? v : "-",
               sts_rule_text((sts_rule)i));
    }
    return 0;
}

static const command commands[] = {
    { "verify", cmd_verify, "sts verify [--strict] FILE...",
      "Validate each file as the Hugging Face reference does (with --strict, also what the format\n"
      "text forbids). One line per file:\n"
      "  FILE<TAB>OK<TAB>N_TENSORS\n"
      "  FILE<TAB>ERR<TAB>RESULT_NAME<TAB>message\n"
      "Exit 0 if every file is valid, 1 if any is not, 2 on usage errors." },
    { "rules", cmd_rules, "sts rules", "Print the validation-rule table (rule, result code, reference variant)." },
};
#define NCOMMANDS (sizeof commands / sizeof commands[0])

static void usage(FILE *to) {
    size_t i;
    fprintf(to, "sts %s - safetensors_spark.h command-line tool\n\nusage:\n", STS_VERSION_STRING);
    for (i = 0; i < NCOMMANDS; i++) fprintf(to, "  %s\n", commands[i].usage);
    fprintf(to, "\nsts COMMAND --help explains a command. Exit codes: 0 ok, 1 invalid input, 2 usage.\n");
}

int main(int argc, char **argv) {
    size_t i;
    if (argc < 2) { usage(stderr); return EXIT_USAGE; }
    if (strcmp(argv[1], "--help") == 0 || strcmp(argv[1], "-h") == 0 || strcmp(argv[1], "help") == 0) { usage(stdout); return 0; }
    if (strcmp(argv[1], "--version") == 0) { printf("sts %s\n", STS_VERSION_STRING); return 0; }
    for (i = 0; i < NCOMMANDS; i++) {
        if (strcmp(argv[1], commands[i].name) == 0) {
            if (wants_help(argc - 1, argv + 1)) { printf("usage: %s\n\n%s\n", commands[i].usage, commands[i].help); return 0; }
            return commands[i].run(argc - 1, argv + 1);
        }
    }
    fprintf(stderr, "sts: unknown command %s\n\n", argv[1]);
    usage(stderr);
    return EXIT_USAGE;
}
