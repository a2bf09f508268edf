/* The machine's limit for metadata phases: a minimal loop doing the system calls storlab meta
 * does for each item (relative to an open directory, as storlab does), with no timing per
 * operation, no histogram, no checks of the results and no accounting. storlab meta's rates are
 * held against it in bench/metabench.py.
 *
 *   create  openat(dir, name, O_CREAT|O_EXCL|O_WRONLY|O_CLOEXEC), write(SIZE) if SIZE > 0, close
 *   stat    fstatat(dir, name, AT_SYMLINK_NOFOLLOW)
 *   read    openat(dir, name, O_RDONLY|O_CLOEXEC), read(SIZE + 1) until a short read, close
 *   remove  unlinkat(dir, name, 0)
 *   mkdir   mkdirat(dir, name, 0755)      rmdir  unlinkat(dir, name, AT_REMOVEDIR)
 *
 * Usage: metaloop DIR WORKERS ITEMS SHARED SIZE PHASES
 *   DIR must exist and be empty; SHARED 1 puts every worker's items in DIR/shared, 0 each in its
 *   own DIR/wN; PHASES is a comma-separated list. Prints "PHASE OPS_PER_SECOND" per phase, the
 *   rate counted as mdtest and storlab count it: all items over the time from the first worker's
 *   start to the last one's end. Removes what it made. */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

static const char *top;
static int workers, shared;
static uint64_t items;
static size_t size;
static pthread_barrier_t start_line;
static double *starts, *ends;

static double now(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return t.tv_sec + t.tv_nsec / 1e9;
}

static void die(const char *what, const char *name) {
    fprintf(stderr, "metaloop: %s %s: %s\n", what, name, strerror(errno));
    exit(1);
}

static void dir_of(int w, char *path, size_t n) {
    if (shared) snprintf(path, n, "%s/shared", top);
    else snprintf(path, n, "%s/w%d", top, w);
}

enum op { CREATE, STAT, READ, REMOVE, MKDIR, RMDIR };
static enum op op;

/* storlab's names, "file.storlab.<w>.<i>" ("dir." for directories; their length matters on
 * ext4, see docs/meta.md), without printf's cost: the loop is to be the cheapest way to the same
 * calls. */
static void item_name(char *out, char prefix, int w, uint64_t i) {
    char digits[24];
    int n = 0;
    const char *kind = prefix == 'd' ? "dir.storlab." : "file.storlab.";
    while (*kind) *out++ = *kind++;
    do { digits[n++] = (char)('0' + w % 10); w /= 10; } while (w);
    while (n) *out++ = digits[--n];
    *out++ = '.';
    do { digits[n++] = (char)('0' + i % 10); i /= 10; } while (i);
    while (n) *out++ = digits[--n];
    *out = 0;
}

static void *worker(void *arg) {
    int w = (int)(intptr_t)arg;
    char path[4096], name[64];
    dir_of(w, path, sizeof path);
    int dir = open(path, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (dir < 0) die("open", path);
    char *buf = calloc(1, size + 1);
    char prefix = (op == MKDIR || op == RMDIR) ? 'd' : 'f';
    pthread_barrier_wait(&start_line);
    starts[w] = now();
    for (uint64_t i = 0; i < items; i++) {
        item_name(name, prefix, w, i);
        switch (op) {
        case CREATE: {
            int fd = openat(dir, name, O_CREAT | O_EXCL | O_WRONLY | O_CLOEXEC, 0644);
            if (fd < 0) die("create", name);
            if (size > 0 && write(fd, buf, size) != (ssize_t)size) die("write", name);
            close(fd);
            break;
        }
        case STAT: {
            struct stat st;
            if (fstatat(dir, name, &st, AT_SYMLINK_NOFOLLOW)) die("stat", name);
            break;
        }
        case READ: {
            int fd = openat(dir, name, O_RDONLY | O_CLOEXEC);
            if (fd < 0) die("open", name);
            size_t got = 0;
            for (;;) {
                ssize_t r = read(fd, buf + got, size + 1 - got);
                if (r < 0) die("read", name);
                got += (size_t)r;
                if (r == 0 || got >= size) break;
            }
            close(fd);
            break;
        }
        case REMOVE:
            if (unlinkat(dir, name, 0)) die("remove", name);
            break;
        case MKDIR:
            if (mkdirat(dir, name, 0755)) die("mkdir", name);
            break;
        case RMDIR:
            if (unlinkat(dir, name, AT_REMOVEDIR)) die("rmdir", name);
            break;
        }
    }
    ends[w] = now();
    close(dir);
    free(buf);
    return NULL;
}

int main(int argc, char **argv) {
    if (argc != 7) {
        fprintf(stderr, "usage: metaloop DIR WORKERS ITEMS SHARED SIZE PHASES\n");
        return 2;
    }
    top = argv[1];
    workers = atoi(argv[2]);
    items = strtoull(argv[3], NULL, 10);
    shared = atoi(argv[4]);
    size = (size_t)strtoull(argv[5], NULL, 10);
    if (workers < 1 || items < 1) {
        fprintf(stderr, "metaloop: WORKERS and ITEMS must be at least 1\n");
        return 2;
    }
    char path[4096];
    for (int w = 0; w < (shared ? 1 : workers); w++) {
        dir_of(w, path, sizeof path);
        if (mkdir(path, 0755)) die("mkdir", path);
    }
    starts = calloc(workers, sizeof *starts);
    ends = calloc(workers, sizeof *ends);
    pthread_t *t = calloc(workers, sizeof *t);
    char *list = strdup(argv[6]);
    for (char *save = NULL, *p = strtok_r(list, ",", &save); p; p = strtok_r(NULL, ",", &save)) {
        static const char *names[] = {"create", "stat", "read", "remove", "mkdir", "rmdir"};
        int known = -1;
        for (int k = 0; k < 6; k++)
            if (!strcmp(p, names[k])) known = k;
        if (known < 0) {
            fprintf(stderr, "metaloop: unknown phase %s (create, stat, read, remove, mkdir, rmdir)\n", p);
            return 2;
        }
        op = (enum op)known;
        pthread_barrier_init(&start_line, NULL, workers);
        for (int w = 0; w < workers; w++) pthread_create(&t[w], NULL, worker, (void *)(intptr_t)w);
        for (int w = 0; w < workers; w++) pthread_join(t[w], NULL);
        pthread_barrier_destroy(&start_line);
        double first = starts[0], last = ends[0];
        for (int w = 1; w < workers; w++) {
            if (starts[w] < first) first = starts[w];
            if (ends[w] > last) last = ends[w];
        }
        printf("%s %.0f\n", p, (double)workers * items / (last - first));
        fflush(stdout);
    }
    for (int w = 0; w < (shared ? 1 : workers); w++) {
        dir_of(w, path, sizeof path);
        rmdir(path);
    }
    return 0;
}
