/* The machine's limit for mpirun storlab run's write and read: each MPI rank writes then reads a
 * file of its own with the bare system calls storlab's psync back-end makes (pwrite, pread of
 * one buffer, in order), with no timing per I/O, no histogram, no checks and no accounting; the
 * ranks meet (MPI_Barrier) before each phase and the rate is counted as storlab and IOR count
 * theirs: all ranks' bytes over the time from the earliest rank's start to the latest rank's
 * end. storlab's and IOR's rates are held against it in bench/mpibench.py.
 *
 * Usage: mpirun -n RANKS ioloop DIR SIZE_MIB BLOCK_KIB DIRECT
 *   Rank r uses DIR/ioloop.r (made, then removed); DIRECT 1 opens it with O_DIRECT. Rank 0
 *   prints "write MIB_PER_SECOND" and "read MIB_PER_SECOND". */
#define _GNU_SOURCE
#include <fcntl.h>
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static void fail(const char *what) {
    perror(what);
    MPI_Abort(MPI_COMM_WORLD, 1);
}

/* One phase on every rank: the rate of all ranks together, on rank 0 (elsewhere 0). */
static double phase(int fd, char *buf, size_t block, size_t blocks, int writing) {
    MPI_Barrier(MPI_COMM_WORLD);
    double start = MPI_Wtime();
    for (size_t i = 0; i < blocks; i++) {
        ssize_t n = writing ? pwrite(fd, buf, block, (off_t)(i * block)) : pread(fd, buf, block, (off_t)(i * block));
        if (n != (ssize_t)block)
            fail(writing ? "pwrite" : "pread");
    }
    double end = MPI_Wtime(), first, last;
    MPI_Reduce(&start, &first, 1, MPI_DOUBLE, MPI_MIN, 0, MPI_COMM_WORLD);
    MPI_Reduce(&end, &last, 1, MPI_DOUBLE, MPI_MAX, 0, MPI_COMM_WORLD);
    int ranks;
    MPI_Comm_size(MPI_COMM_WORLD, &ranks);
    return (double)ranks * (double)(block * blocks) / (last - first) / (1 << 20);
}

int main(int argc, char **argv) {
    MPI_Init(&argc, &argv);
    if (argc != 5) {
        fprintf(stderr, "usage: ioloop DIR SIZE_MIB BLOCK_KIB DIRECT\n");
        MPI_Abort(MPI_COMM_WORLD, 2);
    }
    int rank;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    size_t block = (size_t)atol(argv[3]) << 10, blocks = ((size_t)atol(argv[2]) << 20) / block;
    int direct = atoi(argv[4]);
    char path[4096];
    snprintf(path, sizeof path, "%s/ioloop.%d", argv[1], rank);
    char *buf = NULL;
    if (posix_memalign((void **)&buf, 4096, block))
        fail("posix_memalign");
    memset(buf, 0x5a, block);
    int fd = open(path, O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC | (direct ? O_DIRECT : 0), 0644);
    if (fd < 0)
        fail(path);
    double w = phase(fd, buf, block, blocks, 1);
    double r = phase(fd, buf, block, blocks, 0);
    close(fd);
    unlink(path);
    if (rank == 0)
        printf("write %.1f\nread %.1f\n", w, r);
    free(buf);
    MPI_Finalize();
    return 0;
}
