/* Links static_a.c and static_b.c; calls into both private copies. */
#include <stdio.h>

int static_a_run(const char *dir);
int static_b_run(void);

int main(int argc, char **argv) {
    int a = static_a_run(argc > 1 ? argv[1] : NULL), b = static_b_run();
    if (a || b) fprintf(stderr, "static_a_run: %d, static_b_run: %d\n", a, b);
    return a || b;
}
