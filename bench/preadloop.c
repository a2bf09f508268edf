/* The machine's limit for 4 KiB random reads with pread(2): a minimal loop with no timing per
 * I/O, no histogram and no accounting, against which storlab's engine cost is measured.
 * Usage: preadloop FILE SECONDS BLOCK  -> prints "IOPS <n>" */
#define _GNU_SOURCE
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

static double now(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return t.tv_sec + t.tv_nsec / 1e9;
}

int main(int argc, char **argv) {
    if (argc != 4) { fprintf(stderr, "usage: preadloop FILE SECONDS BLOCK\n"); return 2; }
    int fd = open(argv[1], O_RDONLY);
    if (fd < 0) { perror(argv[1]); return 1; }
    struct stat st;
    fstat(fd, &st);
    double secs = atof(argv[2]);
    size_t bs = (size_t)atol(argv[3]);
    uint64_t blocks = (uint64_t)st.st_size / bs;
    char *buf = aligned_alloc(4096, bs);
    uint64_t x = 88172645463325252ull, n = 0;
    double start = now(), end = start + secs;
    for (;;) {
        for (int i = 0; i < 1024; i++) {
            x ^= x << 13; x ^= x >> 7; x ^= x << 17;
            if (pread(fd, buf, bs, (off_t)((x % blocks) * bs)) != (ssize_t)bs) { perror("pread"); return 1; }
        }
        n += 1024;
        if (now() >= end) break;
    }
    printf("IOPS %.0f\n", n / (now() - start));
    return 0;
}
