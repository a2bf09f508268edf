"""Runs storlab and its peers side by side and prints ratios (see bench/run)."""
import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

p = argparse.ArgumentParser()
p.add_argument("--storlab", required=True)
p.add_argument("--preadloop", required=True)
p.add_argument("--metaloop", default="")
p.add_argument("--out", required=True)
p.add_argument("--seconds", type=int, default=10)
p.add_argument("--repeat", type=int, default=5)
p.add_argument("--only", default="")
p.add_argument("--meta-workers", default="1,2",
               help="storlab meta against mdtest: worker counts (a larger machine: 1,2,16)")
# Another build of storlab (an earlier commit's) run beside this one in the I/O comparisons 1
# and 2, so that a change to the engine is measured before and after in one run.
p.add_argument("--baseline", default="")
args = p.parse_args()

SECS = args.seconds
lines = []


def say(s=""):
    print(s, flush=True)
    lines.append(s)


def fio(name, filename, **kw):
    cmd = ["fio", f"--name={name}", f"--filename={filename}", f"--runtime={SECS}", "--time_based",
           "--norandommap", "--randrepeat=0", "--output-format=json"]
    cmd += [f"--{k.replace('_', '-')}={v}" for k, v in kw.items()]
    j = json.loads(subprocess.run(cmd, check=True, capture_output=True, text=True).stdout)
    job = j["jobs"][0]
    d = job["write"] if kw.get("rw", "").endswith("write") else job["read"]
    return {"iops": d["iops"], "bw": d["bw_bytes"]}


def storlab(target, db, *flags, binary=None):
    cmd = [binary or args.storlab, "run", "--target", target, "--runtime", f"{SECS}s", "--db", db, "--json", *flags]
    out = subprocess.run(cmd, check=True, capture_output=True, text=True).stdout
    done = json.loads(out)["phases"][0]["result"]["all_done"]
    return {"iops": done["iops"], "bw": done["bytes_per_sec"], "run": json.loads(out)}


def loop(filename):
    out = subprocess.run([args.preadloop, filename, str(SECS), "4096"], check=True, capture_output=True, text=True).stdout
    return {"iops": float(out.split()[1])}


def median(runs, key):
    return statistics.median(r[key] for r in runs)


def compare(title, where, contenders, key, unit):
    """contenders: list of (name, callable). Alternates them `repeat` times; medians and ratios."""
    res = {n: [] for n, _ in contenders}
    for _ in range(args.repeat):
        for n, f in contenders:
            res[n].append(f())
    say(f"### {title}")
    say(f"({where}; median of {args.repeat} alternating runs of {SECS} s each)")
    say("")
    base = median(res[contenders[0][0]], key)
    say(f"| tool | {unit} (median) | all runs | storlab ÷ tool |")
    say("|---|---|---|---|")
    for n, _ in contenders:
        m = median(res[n], key)
        scale = 1.0 if unit == "IOPS" else 1024 * 1024
        allr = ", ".join(f"{r[key] / scale:.0f}" for r in res[n])
        say(f"| {n} | {m / scale:,.0f} | {allr} | {base / m:.3f} |")
    say("")
    return res


def baseline(target, *flags):
    """The --baseline build as one more contender, when given."""
    if not args.baseline:
        return []
    # Its own database: an earlier build may not read a schema this one has moved on.
    return [("storlab baseline", lambda: storlab(target, db + ".baseline", *flags, binary=args.baseline))]


def want(name):
    return not args.only or name in args.only.split(",")


shm = tempfile.mkdtemp(prefix="storlab-bench-", dir="/dev/shm")
disk = tempfile.mkdtemp(prefix="storlab-bench-", dir="/var/tmp")
db = os.path.join(shm, "bench.db")
try:
    say(f"# storlab benchmarks — {time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}")
    say("")
    say(f"Machine: {os.cpu_count()} CPUs, kernel {os.uname().release}; fio {subprocess.run(['fio', '--version'], capture_output=True, text=True).stdout.strip()}.")
    say("")
    shm_file = os.path.join(shm, "file.dat")
    if any(want(n) for n in ("psync", "uring", "rate", "memory", "libaio")):
        subprocess.run(["dd", "if=/dev/urandom", f"of={shm_file}", "bs=1M", "count=1024", "status=none"], check=True)

    if want("psync"):
        compare("1. 4 KiB random read, psync, 1 worker, 1 GiB file", "tmpfs (/dev/shm): the engine's own cost",
                [("storlab", lambda: storlab(shm_file, db, "--phase", "randread", "--bs", "4k", "--engine", "psync")),
                 ("fio", lambda: fio("r", shm_file, ioengine="psync", rw="randread", bs="4k", size="1g")),
                 ("pread loop", lambda: loop(shm_file))] + baseline(shm_file, "--phase", "randread", "--bs", "4k", "--engine", "psync"),
                "iops", "IOPS")

    if want("uring"):
        compare("2. 4 KiB random read, io_uring, queue depth 16, 1 worker, 1 GiB file", "tmpfs (/dev/shm)",
                [("storlab", lambda: storlab(shm_file, db, "--phase", "randread", "--bs", "4k", "--engine", "io_uring", "--iodepth", "16")),
                 ("fio", lambda: fio("r", shm_file, ioengine="io_uring", rw="randread", bs="4k", size="1g", iodepth=16))]
                + baseline(shm_file, "--phase", "randread", "--bs", "4k", "--engine", "io_uring", "--iodepth", "16"),
                "iops", "IOPS")

    if want("libaio"):
        # Linux AIO on a buffered file does each read inside io_submit (fio's libaio does the
        # same): the engines' own cost at each depth.
        for qd in (1, 16, 64):
            compare(f"4. 4 KiB random read, libaio, queue depth {qd}, buffered, 1 GiB file", "tmpfs (/dev/shm)",
                    [("storlab", lambda qd=qd: storlab(shm_file, db, "--phase", "randread", "--bs", "4k", "--engine", "libaio", "--iodepth", str(qd))),
                     ("fio", lambda qd=qd: fio("r", shm_file, ioengine="libaio", rw="randread", bs="4k", size="1g", iodepth=qd))],
                    "iops", "IOPS")
        # O_DIRECT on ext4 over a loop device whose own I/O goes to its image with O_DIRECT
        # (losetup --direct-io=on): asynchronous AIO to a device-like disk.
        image = os.path.join(disk, "ext4.img")
        point = os.path.join(shm, "ext4")
        os.mkdir(point)
        with open(image, "wb") as f:
            f.truncate(1536 << 20)
        dev = subprocess.run(["losetup", "--find", "--show", "--direct-io=on", image], check=True, capture_output=True, text=True).stdout.strip()
        try:
            subprocess.run(["mkfs.ext4", "-q", "-F", dev], check=True)
            subprocess.run(["mount", dev, point], check=True)
            try:
                ext4_file = os.path.join(point, "file.dat")
                subprocess.run(["dd", "if=/dev/urandom", f"of={ext4_file}", "bs=1M", "count=1024", "oflag=direct", "status=none"], check=True)
                for qd in (1, 16, 64):
                    compare(f"5. 4 KiB random read, libaio, queue depth {qd}, O_DIRECT, 1 GiB file", "ext4 on a loop device (direct-io=on) over the virtual disk",
                            [("storlab", lambda qd=qd: storlab(ext4_file, db, "--phase", "randread", "--bs", "4k", "--engine", "libaio", "--iodepth", str(qd), "--direct")),
                             ("fio", lambda qd=qd: fio("r", ext4_file, ioengine="libaio", rw="randread", bs="4k", size="1g", iodepth=qd, direct=1))],
                            "iops", "IOPS")
            finally:
                subprocess.run(["umount", point], check=False)
        finally:
            subprocess.run(["losetup", "-d", dev], check=False)

    if want("direct"):
        disk_file = os.path.join(disk, "file.dat")
        subprocess.run(["dd", "if=/dev/urandom", f"of={disk_file}", "bs=1M", "count=1024", "oflag=direct", "status=none"], check=True)
        compare("3a. 4 KiB random read, O_DIRECT, io_uring, queue depth 32, 1 GiB file", "root filesystem (virtual disk): the device bounds both",
                [("storlab", lambda: storlab(disk_file, db, "--phase", "randread", "--bs", "4k", "--engine", "io_uring", "--iodepth", "32", "--direct")),
                 ("fio", lambda: fio("r", disk_file, ioengine="io_uring", rw="randread", bs="4k", size="1g", iodepth=32, direct=1))], "iops", "IOPS")
        compare("3b. 1 MiB sequential write, O_DIRECT, psync, 1 GiB file", "root filesystem (virtual disk)",
                [("storlab", lambda: storlab(disk_file, db, "--phase", "rewrite", "--bs", "1m", "--engine", "psync", "--direct")),
                 ("fio", lambda: fio("w", disk_file, ioengine="psync", rw="write", bs="1m", size="1g", direct=1))], "bw", "MiB/s")
        compare("3c. 1 MiB sequential read, O_DIRECT, psync, 1 GiB file", "root filesystem (virtual disk)",
                [("storlab", lambda: storlab(disk_file, db, "--phase", "read", "--bs", "1m", "--engine", "psync", "--direct")),
                 ("fio", lambda: fio("r", disk_file, ioengine="psync", rw="read", bs="1m", size="1g", direct=1))], "bw", "MiB/s")

    if want("rate"):
        r = storlab(shm_file, db, "--phase", "randread", "--bs", "4k", "--engine", "psync", "--rate", "20000iops")["run"]
        detail = json.loads(subprocess.run([args.storlab, "results", "show", str(r["id"]), "--samples", "--json", "--db", db],
                                           check=True, capture_output=True, text=True).stdout)
        samples = detail["phases"][0]["result"]["samples"]
        whole = [s for s in samples[1:] if s["t_end"] - s["t_start"] > 0.999]
        devs = [abs(s["ops_read"] - 20000) / 20000 * 100 for s in whole]
        say("### 4. Rate control: 4 KiB random read held at 20,000 IOPS")
        say(f"(tmpfs; {SECS} s; {len(whole)} whole 1 s intervals after the first)")
        say("")
        say(f"I/Os per interval: {', '.join(str(s['ops_read']) for s in whole)}")
        say(f"largest deviation from 20,000: {max(devs):.3f} %; achieved {r['phases'][0]['result']['rate']['achieved']:.1f} IOPS; "
            f"late I/Os (> 1 ms behind schedule): {r['phases'][0]['result']['rate']['late_ios']}")
        say("")

    if want("memory"):
        def rss(seconds):
            pid = os.fork()
            if pid == 0:
                devnull = os.open(os.devnull, os.O_WRONLY)
                os.dup2(devnull, 1)
                os.dup2(devnull, 2)
                os.execv(args.storlab, [args.storlab, "run", "--target", shm_file, "--phase", "randread", "--bs", "4k",
                                        "--runtime", f"{seconds}s", "--db", db, "--threads", "2"])
            _, status, ru = os.wait4(pid, 0)
            return ru.ru_maxrss  # KiB
        short, long_ = rss(10), rss(60)
        say("### 5. Memory: peak RSS of a 60 s run against a 10 s run")
        say("(tmpfs, 2 workers, 4 KiB random read)")
        say("")
        say(f"10 s: {short / 1024:.1f} MiB; 60 s: {long_ / 1024:.1f} MiB; ratio {long_ / short:.3f}")
        say("")
    here = os.path.dirname(os.path.abspath(__file__))
    sys.path.insert(0, here)
    storlab_bin = os.path.abspath(args.storlab)

    def separate(filename, title, body):
        """Runs `body`, whose lines go to their own file bench/FILENAME instead of results.md."""
        kept = list(lines)
        del lines[:]
        say(f"# {title} — {time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}")
        say("")
        say(f"Machine: {os.cpu_count()} CPUs, kernel {os.uname().release}.")
        say("")
        body()
        with open(os.path.join(here, filename), "w") as f:
            f.write("\n".join(lines) + "\n")
        lines[:] = kept

    if want("scan"):
        import scanbench
        separate("scan-results.md", "storlab scan benchmarks", lambda: scanbench.run(storlab_bin, say, args.repeat))
    if want("iozone"):
        import iozonebench
        iozone_bin = os.environ.get("IOZONE") or shutil.which("iozone")
        if iozone_bin:
            separate("iozone-results.md", "storlab iozone against IOzone",
                     lambda: iozonebench.run(storlab_bin, os.path.abspath(iozone_bin), say, args.repeat))
        else:
            # Without IOzone there is nothing to hold storlab against; bench/iozone-results.md
            # keeps the last measured comparison rather than being overwritten by an empty one.
            print("bench: iozone skipped: no IOzone given ($IOZONE or iozone on PATH); "
                  "bench/iozone-results.md left as it was", file=sys.stderr)
    if want("db"):
        import dbbench
        separate("db-results.md", "storlab results database: SQLite and PostgreSQL",
                 lambda: dbbench.run(storlab_bin, say, args.repeat))
    if want("monitor"):
        import monitorbench
        separate("monitor-results.md", "storlab monitor benchmarks",
                 lambda: monitorbench.run(storlab_bin, say, args.repeat))

    if want("challenge") or want("challenge-long"):
        import challengebench
        separate("challenge-results.md", "storlab challenge benchmarks",
                 lambda: challengebench.run(storlab_bin, say, args.repeat,
                                                  long="challenge-long" in args.only.split(",")))
    if want("meta"):
        import metabench
        separate("meta-results.md", "storlab meta against mdtest",
                 lambda: metabench.run(storlab_bin, os.path.abspath(args.metaloop), say, args.repeat,
                                             workers_list=tuple(int(w) for w in args.meta_workers.split(","))))
    if want("fio"):
        import fiobench
        separate("fio-results.md", "storlab fio against fio, on fio's own example job files",
                 lambda: fiobench.run(storlab_bin, say, args.repeat, SECS))
    if want("mpi"):
        import mpibench
        separate("mpi-results.md", "storlab under mpirun against IOR and mdtest",
                 lambda: mpibench.run(say, args.repeat))
    if want("report"):
        import reportbench
        separate("report-results.md", "storlab report benchmark", lambda: reportbench.run(storlab_bin, say, args.repeat))
finally:
    shutil.rmtree(shm, ignore_errors=True)
    shutil.rmtree(disk, ignore_errors=True)

if any(want(n) for n in ("psync", "uring", "direct", "rate", "memory", "libaio")):
    with open(args.out, "w") as f:
        f.write("\n".join(lines) + "\n")
