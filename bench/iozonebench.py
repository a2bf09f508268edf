"""storlab iozone against the real IOzone, same flags, same files.

IOzone is not in Debian and its code is never committed here (nor a recipe that builds it):
give the path of an iozone you built from its public source in $IOZONE, or have `iozone` on
PATH; without it bench/compare.py skips this comparison and says so. The figures in
bench/iozone-results.md came from IOzone 3.489 (linux-AMD64 target, gcc with -fcommon).

For each test IOzone reports "Children see throughput" (with stonewalling: what the workers
moved until the first finished) and "Parent sees throughput" (everything over the wall time).
Both tools' figures are read from their own IOzone-layout output; the ratio is storlab ÷ IOzone.
"""
import os
import re
import shutil
import statistics
import subprocess
import tempfile

LINE = re.compile(r"(Children see|Parent sees) throughput for\s+\d+\s+(.+?)\s+=\s+([\d.]+)")


def figures(text):
    out = {}
    for kind, who, v in LINE.findall(text):
        out[(who.strip(), kind)] = float(v)
    return out


def run_pair(storlab, iozone, flags, where, db, repeat, prepare=lambda: None):
    """Runs both tools `repeat` times, alternating which goes first (A B B A ...), each run
    starting from the same state (`prepare`: a fresh filesystem on the disk)."""
    res = {"storlab": [], "iozone": []}
    for r in range(repeat):
        for tool in (("storlab", "iozone") if r % 2 == 0 else ("iozone", "storlab")):
            prepare()
            files = [os.path.join(where, f"{tool}.{i}") for i in range(2)]
            if tool == "storlab":
                cmd = [storlab, "iozone", *flags, "-F", *files, "--db", db]
            else:
                cmd = [iozone, *flags, "-F", *files]
            out = subprocess.run(cmd, check=True, capture_output=True, text=True, cwd=where).stdout
            res[tool].append(figures(out))
            for f in files:
                if os.path.exists(f):
                    os.remove(f)
    return res


# Student's t, 0.975 quantile, by degrees of freedom (the usual table; between rows the
# smaller df's value is used, which errs towards "no significant difference").
T975 = [(1, 12.71), (2, 4.30), (3, 3.18), (4, 2.78), (5, 2.57), (6, 2.45), (7, 2.36), (8, 2.31), (9, 2.26),
        (10, 2.23), (12, 2.18), (15, 2.13), (20, 2.09), (30, 2.04), (60, 2.00), (10**9, 1.96)]


def welch(a, b):
    """Welch's t-test of two samples: 'differs' or 'no significant difference' at 95 %."""
    va, vb = statistics.variance(a) / len(a), statistics.variance(b) / len(b)
    if va + vb == 0:
        return "differs" if statistics.mean(a) != statistics.mean(b) else "no significant difference"
    t = (statistics.mean(a) - statistics.mean(b)) / (va + vb) ** 0.5
    df = (va + vb) ** 2 / (va ** 2 / (len(a) - 1) + vb ** 2 / (len(b) - 1))
    crit = [c for d, c in T975 if d <= df][-1]
    return f"{'differs' if abs(t) > crit else 'no significant difference'} (t {t:.2f}, df {df:.1f})"


def table(say, title, where, flags, res, repeat):
    say(f"### {title}")
    say(f"({where}; `{' '.join(flags)} -F f0 f1`; median of {repeat} runs, alternating which tool goes first; kB/sec as IOzone prints it)")
    say("")
    say("| test | figure | storlab | IOzone | storlab ÷ IOzone | Welch, 95 % | storlab, all runs | IOzone, all runs |")
    say("|---|---|---|---|---|---|---|---|")
    keys = [k for k in res["iozone"][0] if k in res["storlab"][0]]
    for k in keys:
        s = statistics.median(r[k] for r in res["storlab"])
        i = statistics.median(r[k] for r in res["iozone"])
        alls = ", ".join(f"{r[k] / 1e6:.2f}M" for r in res["storlab"])
        alli = ", ".join(f"{r[k] / 1e6:.2f}M" for r in res["iozone"])
        w = welch([r[k] for r in res["storlab"]], [r[k] for r in res["iozone"]])
        say(f"| {k[0]} | {k[1]} | {s:,.0f} | {i:,.0f} | {s / i:.3f} | {w} | {alls} | {alli} |")
    say("")


def run(storlab, iozone, say, repeat):
    shm = tempfile.mkdtemp(prefix="storlab-iozbench-", dir="/dev/shm")
    db = os.path.join(shm, "b.db")
    try:
        flags = ["-s", "512m", "-r", "64k", "-i", "0", "-i", "1", "-i", "2", "-t", "2"]
        res = run_pair(storlab, iozone, flags, shm, db, repeat)
        table(say, "IOzone -i 0 -i 1 -i 2, throughput mode, 2 workers", "tmpfs (/dev/shm)", flags, res, repeat)
        # O_DIRECT on a loop-mounted ext4 whose image lives on the root filesystem's disk.
        img_dir = tempfile.mkdtemp(prefix="storlab-iozbench-", dir="/var/tmp")
        img = os.path.join(img_dir, "ext4.img")
        mnt = os.path.join(img_dir, "mnt")
        os.makedirs(mnt)
        with open(img, "wb") as f:
            f.truncate(4 << 30)
        lo = subprocess.run(["losetup", "--find", "--show", img], check=True, capture_output=True, text=True).stdout.strip()

        def fresh_fs():
            # The virtual disk remembers: writes onto blocks a previous run freed, and that
            # run's write-back, change the next run's figures several-fold. Every run gets a
            # new filesystem and an empty page cache.
            subprocess.run(["umount", mnt], capture_output=True)
            subprocess.run(["mkfs.ext4", "-q", "-F", "-E", "nodiscard", lo], check=True)
            subprocess.run(["mount", lo, mnt], check=True)
            subprocess.run(["sync"], check=True)
            with open("/proc/sys/vm/drop_caches", "w") as f:
                f.write("3\n")

        try:
            try:
                flags = ["-s", "512m", "-r", "64k", "-i", "0", "-i", "1", "-i", "2", "-t", "2", "-I"]
                res = run_pair(storlab, iozone, flags, mnt, db, repeat, fresh_fs)
                table(say, "IOzone -i 0 -i 1 -i 2 -I, throughput mode, 2 workers", "loop-mounted ext4 on the virtual disk (a new filesystem for every run), O_DIRECT", flags, res, repeat)
            finally:
                subprocess.run(["umount", mnt])
        finally:
            subprocess.run(["losetup", "-d", lo])
            shutil.rmtree(img_dir, ignore_errors=True)
    finally:
        shutil.rmtree(shm, ignore_errors=True)
