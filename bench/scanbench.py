"""storlab scan against du, pdu, dust, gdu and agedu on generated trees (see bench/run).

Trees are made on the root filesystem (a real disk, as a scan would meet): the speed tree has
300,000 files in 3,000 directories (30 top-level directories of 100 subdirectories of 100
files), with sizes from empty to 1 MiB (sparse, so that making the tree costs no data writes)
and access and modification times spread over two years. The memory tree has 1,000,000 empty
files in 5,000 directories.
"""
import os
import random
import shutil
import statistics
import subprocess
import tempfile
import time


def make_tree(root, tops, subs, files, sized=True, seed=1):
    rnd = random.Random(seed)
    now = time.time()
    os.makedirs(root)
    for t in range(tops):
        for s in range(subs):
            d = os.path.join(root, f"top{t:03d}", f"sub{s:03d}")
            os.makedirs(d)
            for f in range(files):
                p = os.path.join(d, f"f{f:04d}.dat")
                fd = os.open(p, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o644)
                if sized:
                    os.ftruncate(fd, rnd.choice((0, 100, 3000, 20000, 200000, 1 << 20)))
                os.close(fd)
                if sized:
                    a = now - rnd.uniform(0, 730) * 86400
                    m = a - rnd.uniform(0, 100) * 86400
                    os.utime(p, (a, m))


def drop_caches():
    subprocess.run(["sync"], check=True)
    with open("/proc/sys/vm/drop_caches", "w") as f:
        f.write("3\n")


def timed(cmd, cold):
    if cold:
        drop_caches()
    t = time.perf_counter()
    subprocess.run(cmd, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    return time.perf_counter() - t


def peak_rss_kib(cmd):
    pid = os.fork()
    if pid == 0:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, 1)
        os.dup2(devnull, 2)
        os.execvp(cmd[0], cmd)
    _, status, ru = os.wait4(pid, 0)
    assert os.waitstatus_to_exitcode(status) == 0, cmd
    return ru.ru_maxrss


def run(storlab, say, repeat):
    base = tempfile.mkdtemp(prefix="storlab-scanbench-", dir="/var/tmp")
    work = tempfile.mkdtemp(prefix="storlab-scanbench-", dir="/dev/shm")
    try:
        tree = os.path.join(base, "tree300k")
        t0 = time.perf_counter()
        make_tree(tree, 30, 100, 100)
        made = time.perf_counter() - t0
        db = os.path.join(work, "scan.db")
        agedu_index = os.path.join(work, "agedu.dat")
        tools = [
            ("storlab scan", [storlab, "scan", tree, "--age", "60d,160d", "--db", db, "--json"]),
            # The questions of issue 14 on the same walk: per owner, and a glob on every name.
            ("storlab scan --group-by user", [storlab, "scan", tree, "--age", "60d,160d", "--group-by", "user",
                                              "--db", db, "--json"]),
            ("storlab scan --exclude '*.snap'", [storlab, "scan", tree, "--age", "60d,160d", "--exclude", "*.snap",
                                                 "--db", db, "--json"]),
            ("du -s", ["du", "-s", tree]),
            ("pdu", ["pdu", "--max-depth=1", tree]),
            ("dust", ["dust", "-d", "1", tree]),
            ("gdu -n", ["gdu", "-n", "-p", tree]),
            ("agedu -s", ["agedu", "-s", tree, "-f", agedu_index]),
        ]
        tools = [(n, c) for n, c in tools if shutil.which(c[0])]
        for cold in (False, True):
            res = {n: [] for n, _ in tools}
            if not cold:
                for _, c in tools:  # warm the cache (and each tool's binary)
                    timed(c, False)
            reps = repeat if not cold else max(3, repeat // 2)
            for _ in range(reps):
                for n, c in tools:
                    res[n].append(timed(c, cold))
            kind = "cold cache (page cache dropped before every run)" if cold else "warm cache"
            say(f"### scan: 300,000 files in 3,000 directories, {kind}")
            say(f"(root filesystem, virtual disk; tree made in {made:.0f} s; median of {reps} alternating runs; "
                f"storlab with two age thresholds, both histograms and the database write)")
            say("")
            say("| tool | seconds (median) | all runs | storlab ÷ tool (time) |")
            say("|---|---|---|---|")
            base_t = statistics.median(res[tools[0][0]])
            for n, _ in tools:
                m = statistics.median(res[n])
                allr = ", ".join(f"{x:.3f}" for x in res[n])
                say(f"| {n} | {m:.3f} | {allr} | {base_t / m:.3f} |")
            say("")
        rss300 = peak_rss_kib([storlab, "scan", tree, "--db", db, "--json"])
        shutil.rmtree(tree)
        big = os.path.join(base, "tree1m")
        t0 = time.perf_counter()
        make_tree(big, 50, 100, 200, sized=False)
        made = time.perf_counter() - t0
        rss1m = peak_rss_kib([storlab, "scan", big, "--db", db, "--json"])
        rss1m_top = peak_rss_kib([storlab, "scan", big, "--db", db, "--json", "--top", "10", "--group-by", "depth:2"])
        say("### scan: peak memory")
        say(f"(storlab scan's peak RSS; the 1,000,000-file tree has 5,000 directories, made in {made:.0f} s)")
        say("")
        say(f"300,000 files: {rss300 / 1024:.1f} MiB; 1,000,000 files: {rss1m / 1024:.1f} MiB "
            f"(with --top 10 --group-by depth:2: {rss1m_top / 1024:.1f} MiB)")
        say("")
    finally:
        shutil.rmtree(base, ignore_errors=True)
        shutil.rmtree(work, ignore_errors=True)
