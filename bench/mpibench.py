"""storlab under mpirun against IOR and mdtest (both IOR's, run through the same Debian OpenMPI),
with 1, 2 and 4 ranks, in one run (see bench/run).

I/O: every rank writes then reads a file of its own (IOR -F, file per process; storlab
--target DIR/%r), 1 MiB transfers, one contiguous block per rank (IOR -b, -s 1; storlab
--size), POSIX calls. On tmpfs (buffered: the engines' own cost) and on ext4 on a loop device
with O_DIRECT in both tools (IOR --posix.odirect, storlab --direct; the image on tmpfs, see
below). Beside them, the machine's limit: bench/ioloop.c, the bare pwrite/pread loop on every
rank between MPI barriers (built here with Debian's mpicc). The figure compared is each tool's
aggregate: all ranks' bytes over the phase's time, IOR's "Max(MiB)" of its summary and
storlab's stored phase (the common interval).

Metadata: `storlab meta` and mdtest with one worker per rank, a directory each (mdtest -u,
storlab --unique-dir), 10,000 files of 4 KiB per rank, phases create, stat, read, remove.

Also stated: storlab's start skew, how far after the earliest rank each rank's measured interval
began (median and largest over ranks and repetitions).

mdtest and IOR are not built here (their code and any recipe for building them stay out of
this repository): give them in $MDTEST and $IOR, or have them on PATH. storlab's MPI build is
made here (cargo build --release --features mpi, into target/mpi).
"""
import json
import os
import shutil
import statistics
import subprocess
import tempfile

from metabench import mdtest_rates, Ext4OnLoop

MPIRUN = ["mpirun", "--allow-run-as-root", "--oversubscribe", "--bind-to", "none", "--mca", "btl", "self,vader"]
META_PHASES = ["create", "stat", "read", "remove"]


def storlab_io(storlab, target, db, ranks, size_mib, direct):
    for r in range(ranks):
        os.makedirs(os.path.join(target, str(r)), exist_ok=True)
    cmd = MPIRUN + ["-n", str(ranks), storlab, "run", "--target", os.path.join(target, "%r"),
                    "--phase", "write", "--phase", "read", "--size", f"{size_mib}m", "--bs", "1m",
                    "--db", db, "--json", "-q"] + (["--direct"] if direct else [])
    run = json.loads(subprocess.run(cmd, check=True, capture_output=True, text=True).stdout)
    assert run["status"] == "ok", run["status_detail"]
    rates = {p["kind"]: p["result"]["all_done"]["bytes_per_sec"] / 2**20 for p in run["phases"]}
    skews = []
    # One rank under mpirun runs as a plain storlab run, with no rank rows.
    for seq in (0, 1) if ranks > 1 else ():
        starts = [p["start_seconds"] for p in run["rank_phases"] if p["seq"] == seq]
        skews += [s - min(starts) for s in starts]
    return rates, skews


def ior_io(ior, target, ranks, size_mib, direct):
    work = tempfile.mkdtemp(prefix="ior-", dir=target)
    cmd = MPIRUN + ["-n", str(ranks), ior, "-a", "POSIX", "-F", "-w", "-r", "-t", "1m", "-b", f"{size_mib}m",
                    "-s", "1", "-i", "1", "-o", os.path.join(work, "f")] + (["--posix.odirect"] if direct else [])
    try:
        out = subprocess.run(cmd, check=True, capture_output=True, text=True).stdout
    finally:
        shutil.rmtree(work, ignore_errors=True)
    rates, summary = {}, False
    for line in out.splitlines():
        if line.startswith("Summary of all tests"):
            summary = True
        elif summary and line.split() and line.split()[0] in ("write", "read"):
            rates[line.split()[0]] = float(line.split()[1])
    assert set(rates) == {"write", "read"}, out
    return rates


def storlab_meta(storlab, target, db, ranks, items):
    for r in range(ranks):
        os.makedirs(os.path.join(target, str(r)), exist_ok=True)
    cmd = MPIRUN + ["-n", str(ranks), storlab, "meta", "--target", os.path.join(target, "%r"), "--threads", "1",
                    "--files-per-thread", str(items), "--phase", ",".join(META_PHASES), "--file-size", "4096",
                    "--unique-dir", "--db", db, "--json", "-q"]
    run = json.loads(subprocess.run(cmd, check=True, capture_output=True, text=True).stdout)
    assert run["status"] == "ok", run["status_detail"]
    for p in run["phases"]:
        assert p["params"]["meta"]["entries"] == ranks * items, p["params"]
    return {p["kind"]: p["result"]["all_done"]["iops"] for p in run["phases"]}


def loop_io(ioloop, target, ranks, size_mib, direct):
    """The machine's limit (bench/ioloop.c): the bare pwrite/pread loop on every rank."""
    work = tempfile.mkdtemp(prefix="ioloop-", dir=target)
    try:
        out = subprocess.run(MPIRUN + ["-n", str(ranks), ioloop, work, str(size_mib), "1024", "1" if direct else "0"],
                             check=True, capture_output=True, text=True).stdout
    finally:
        shutil.rmtree(work, ignore_errors=True)
    return {k: float(v) for k, v in (line.split() for line in out.splitlines())}


def build_ioloop():
    out = os.path.abspath("target/bench/ioloop")
    os.makedirs(os.path.dirname(out), exist_ok=True)
    subprocess.run(["mpicc", "-O2", "-Wall", "-o", out, os.path.join(os.path.dirname(__file__), "ioloop.c")], check=True)
    return out


def build_storlab_mpi():
    subprocess.run(["cargo", "build", "--release", "-q", "--features", "mpi", "--target-dir", "target/mpi"], check=True)
    return os.path.abspath("target/mpi/release/storlab")


def run(say, repeat, size_mib=1024, direct_mib=512, items=10000):
    ior = os.environ.get("IOR") or shutil.which("ior")
    mdtest = os.environ.get("MDTEST") or shutil.which("mdtest")
    if not ior:
        say("IOR not given ($IOR or ior on PATH): the MPI comparison is skipped.")
        return
    storlab = build_storlab_mpi()
    ioloop = build_ioloop()
    shm = tempfile.mkdtemp(prefix="storlab-mpibench-", dir="/dev/shm")
    db = os.path.join(shm, "results.db")
    # The image on tmpfs: O_DIRECT goes past ext4's page cache through the block layer and the
    # loop device, without this virtual machine's disk, whose host cache makes O_DIRECT rates
    # swing several-fold from run to run (a trial over an image on the root disk: IOR's read
    # 1,007 MiB/s in one run, 4,215 in the next).
    disk = Ext4OnLoop(6144)
    try:
        say(f"IOR: {ior}; mdtest: {mdtest or 'not given'}; storlab: {storlab} (built with --features mpi)")
        say("")
        skews = []
        for fs, target, direct, mib in (("tmpfs (/dev/shm), buffered", shm, False, size_mib),
                                        ("ext4 on a loop device (its image on tmpfs), O_DIRECT", disk.mnt, True, direct_mib)):
            say(f"### I/O: {fs}, {mib} MiB per rank, 1 MiB transfers")
            say(f"(aggregate MiB/s: the median and the best of {repeat} runs in turn; the best, as IOR's own")
            say("\"Max\" column, is the figure least disturbed by this virtual machine, whose fresh memory")
            say("and disk vary from run to run for both tools alike)")
            say("")
            say("| ranks | phase | storlab median | IOR median | ÷ | storlab best | IOR best | ÷ | loop best | storlab ÷ loop |")
            say("|---|---|---|---|---|---|---|---|---|---|")
            for ranks in (1, 2, 4):
                res = {"storlab": [], "ior": [], "loop": []}
                for r in range(repeat):
                    subprocess.run(["sync"], check=True)
                    res["loop"].append(loop_io(ioloop, target, ranks, mib, direct))
                    subprocess.run(["sync"], check=True)
                    work = tempfile.mkdtemp(prefix="s-", dir=target)
                    if r % 2 == 0:
                        rates, sk = storlab_io(storlab, work, db, ranks, mib, direct)
                        res["storlab"].append(rates)
                        subprocess.run(["sync"], check=True)
                        res["ior"].append(ior_io(ior, target, ranks, mib, direct))
                    else:
                        res["ior"].append(ior_io(ior, target, ranks, mib, direct))
                        subprocess.run(["sync"], check=True)
                        rates, sk = storlab_io(storlab, work, db, ranks, mib, direct)
                        res["storlab"].append(rates)
                    shutil.rmtree(work, ignore_errors=True)
                    if ranks > 1:
                        skews += sk
                for phase in ("write", "read"):
                    s = statistics.median(x[phase] for x in res["storlab"])
                    i = statistics.median(x[phase] for x in res["ior"])
                    sb = max(x[phase] for x in res["storlab"])
                    ib = max(x[phase] for x in res["ior"])
                    lb = max(x[phase] for x in res["loop"])
                    say(f"| {ranks} | {phase} | {s:,.0f} | {i:,.0f} | {s / i:.2f} | {sb:,.0f} | {ib:,.0f} | {sb / ib:.2f} "
                        f"| {lb:,.0f} | {sb / lb:.2f} |")
            say("")
        if skews:
            say("### storlab's start skew between ranks (2 and 4 ranks, both filesystems)")
            say("")
            say(f"median {statistics.median(skews) * 1e3:.2f} ms, largest {max(skews) * 1e3:.2f} ms "
                f"(each rank's measured start after the earliest rank's; {len(skews)} rank-phases)")
            say("")
        if mdtest:
            say(f"### metadata: storlab meta against mdtest, tmpfs, {items:,} files of 4 KiB per rank, a directory each")
            say(f"(ops/s, median of {repeat} runs in turn)")
            say("")
            say("| ranks | phase | storlab | mdtest | storlab ÷ mdtest |")
            say("|---|---|---|---|---|")
            for ranks in (1, 2, 4):
                res = {"storlab": [], "mdtest": []}
                for r in range(repeat):
                    work = tempfile.mkdtemp(prefix="m-", dir=shm)
                    if r % 2 == 0:
                        res["storlab"].append(storlab_meta(storlab, work, db, ranks, items))
                        res["mdtest"].append(mdtest_rates(mdtest, shm, ranks, items, False))
                    else:
                        res["mdtest"].append(mdtest_rates(mdtest, shm, ranks, items, False))
                        res["storlab"].append(storlab_meta(storlab, work, db, ranks, items))
                    shutil.rmtree(work, ignore_errors=True)
                for phase in META_PHASES:
                    s = statistics.median(x[phase] for x in res["storlab"])
                    m = statistics.median(x[phase] for x in res["mdtest"])
                    say(f"| {ranks} | {phase} | {s:,.0f} | {m:,.0f} | {s / m:.2f} |")
            say("")
    finally:
        disk.close()
        shutil.rmtree(shm, ignore_errors=True)
