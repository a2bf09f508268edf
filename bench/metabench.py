"""storlab meta against mdtest (IOR's, run through Debian's OpenMPI) and a minimal C loop of the
same system calls (bench/metaloop.c, the machine's limit), in one run (see bench/run).

The same shapes for all three: W workers (threads for storlab and the loop, MPI ranks for
mdtest), N files each, 4 KiB written on create and read back (mdtest -w 4096 -e 4096: storlab
refuses a read phase of empty files, and mdtest's "read" of an empty file is only an open and a
close), one directory per worker (mdtest -u, storlab --unique-dir) or one shared by all, phases
create, stat, read, remove. Each rate is counted the same way: all the items over the time from
the first worker's start to the last one's end. On tmpfs (/dev/shm) for the engines' own cost and
on ext4 on a loop device whose image lives on tmpfs (so that the disk's erratic cache does not
decide the figure; ext4's own work is what is measured). The tools run in turn, repeated, and
the medians are compared.

Then memory: storlab meta's peak RSS over 1,000,000 files against a 100,000-file run.

mdtest is not built here (its code and any recipe for building it stay out of this repository):
give its path in $MDTEST, or have `mdtest` on PATH; without it the mdtest columns say so.
"""
import json
import os
import shutil
import statistics
import subprocess
import tempfile

from scanbench import peak_rss_kib

PHASES = ["create", "stat", "read", "remove"]
MDTEST_NAMES = {"create": "File creation", "stat": "File stat", "read": "File read", "remove": "File removal"}
SIZE = 4096


def storlab_rates(storlab, target, db, workers, items, shared):
    cmd = [storlab, "meta", "--target", target, "--threads", str(workers), "--files-per-thread", str(items),
           "--phase", ",".join(PHASES), "--file-size", str(SIZE), "--db", db, "--json", "-q",
           "--shared-dir" if shared else "--unique-dir"]
    out = subprocess.run(cmd, check=True, capture_output=True, text=True).stdout
    run = json.loads(out)
    assert run["status"] == "ok", run["status_detail"]
    rates = {}
    for p in run["phases"]:
        params = p["params"]["meta"]
        assert params["errors"] == 0 and params["entries"] == workers * items, params
        rates[p["kind"]] = p["result"]["all_done"]["iops"]
    return rates


def loop_rates(metaloop, target, workers, items, shared):
    work = tempfile.mkdtemp(prefix="metaloop-", dir=target)
    try:
        out = subprocess.run([metaloop, work, str(workers), str(items), "1" if shared else "0", str(SIZE),
                              ",".join(PHASES)], check=True, capture_output=True, text=True).stdout
    finally:
        shutil.rmtree(work, ignore_errors=True)
    return {k: float(v) for k, v in (line.split() for line in out.splitlines())}


def mdtest_rates(mdtest, target, workers, items, shared):
    work = tempfile.mkdtemp(prefix="mdtest-", dir=target)
    cmd = ["mpirun", "--allow-run-as-root", "--oversubscribe", "--bind-to", "none", "-np", str(workers),
           "--mca", "btl", "self,vader", mdtest, "-F", "-n", str(items), "-w", str(SIZE), "-e", str(SIZE),
           "-i", "1", "-d", work] + ([] if shared else ["-u"])
    try:
        out = subprocess.run(cmd, check=True, capture_output=True, text=True).stdout
    finally:
        shutil.rmtree(work, ignore_errors=True)
    rates, summary = {}, False
    for line in out.splitlines():
        if line.startswith("SUMMARY rate"):
            summary = True
        if not summary:
            continue
        for ours, theirs in MDTEST_NAMES.items():
            if line.strip().startswith(theirs + " "):
                # "   File creation     max   min   mean   stddev": with one iteration, all one.
                rates[ours] = float(line.strip()[len(theirs):].split()[2])
    missing = [p for p in PHASES if p not in rates]
    assert not missing, f"mdtest printed no rate for {missing}:\n{out}"
    return rates


class Ext4OnLoop:
    """ext4 on a loop device over an image (on tmpfs unless `image_dir` says where), mounted in a
    temporary directory; `direct_io` turns the loop's direct I/O on (its I/O bypasses the
    image's page cache, so that O_DIRECT reaches the disk)."""

    def __init__(self, size_mib, image_dir="/dev/shm", direct_io=False):
        self.image = tempfile.mktemp(prefix="metabench-ext4-", suffix=".img", dir=image_dir)
        self.mnt = tempfile.mkdtemp(prefix="metabench-ext4-")
        self.dev = None
        with open(self.image, "wb") as f:
            f.truncate(size_mib << 20)
        try:
            self.dev = subprocess.run(["losetup", "--find", "--show"] + (["--direct-io=on"] if direct_io else [])
                                      + [self.image], check=True,
                                      capture_output=True, text=True).stdout.strip()
            # Inodes enough for a million files and their journal in memory's reach.
            subprocess.run(["mkfs.ext4", "-q", "-F", "-i", "4096", self.dev], check=True)
            subprocess.run(["mount", self.dev, self.mnt], check=True)
        except Exception:
            self.close()
            raise

    def close(self):
        subprocess.run(["umount", self.mnt], stderr=subprocess.DEVNULL)
        if self.dev:
            subprocess.run(["losetup", "-d", self.dev], stderr=subprocess.DEVNULL)
        shutil.rmtree(self.mnt, ignore_errors=True)
        if os.path.exists(self.image):
            os.unlink(self.image)


def run(storlab, metaloop, say, repeat, items=20000):
    mdtest = os.environ.get("MDTEST") or shutil.which("mdtest")
    if mdtest and not shutil.which("mpirun"):
        say("mdtest given but no mpirun: install openmpi-bin.")
        mdtest = None
    shm = tempfile.mkdtemp(prefix="storlab-metabench-", dir="/dev/shm")
    db = os.path.join(shm, "results.db")
    ext4 = Ext4OnLoop(8192)
    try:
        say(f"mdtest: {mdtest or 'not given ($MDTEST or mdtest on PATH); its columns are left empty'}")
        say("")
        for fs, target in (("tmpfs (/dev/shm)", shm), ("ext4 on a loop device (image on tmpfs)", ext4.mnt)):
            # A first run of each, not counted: the filesystem's caches of inodes and entries
            # grown, and each tool's binary read, before the first measured run.
            storlab_rates(storlab, target, db, 2, items, False)
            if mdtest:
                mdtest_rates(mdtest, target, 2, items, False)
            loop_rates(metaloop, target, 2, items, False)
            for workers in (1, 2):
                for shared in (False, True):
                    res = {"storlab": [], "mdtest": [], "loop": []}
                    for r in range(repeat):
                        # The order turns each repetition, so that none of the three always goes first.
                        order = [("storlab", lambda: storlab_rates(storlab, target, db, workers, items, shared)),
                                 ("mdtest", lambda: mdtest_rates(mdtest, target, workers, items, shared)),
                                 ("loop", lambda: loop_rates(metaloop, target, workers, items, shared))]
                        order = order[r % 3:] + order[:r % 3]
                        for name, f in order:
                            if name == "mdtest" and not mdtest:
                                continue
                            # The last tool's dirty data and journal written out first, not
                            # during the next tool's run.
                            subprocess.run(["sync"], check=True)
                            res[name].append(f())
                    med = {t: {p: statistics.median(x[p] for x in v) for p in PHASES} for t, v in res.items() if v}
                    where = "one shared directory" if shared else "a directory per worker"
                    say(f"### {fs}: {workers} worker{'s' if workers > 1 else ''}, {items:,} files each, {where}")
                    say(f"(4 KiB files; ops/s, median of {repeat} runs in turn)")
                    say("")
                    say("| phase | storlab | mdtest | C loop | storlab ÷ mdtest | storlab ÷ C loop |")
                    say("|---|---|---|---|---|---|")
                    for p in PHASES:
                        s = med["storlab"][p]
                        m = med.get("mdtest", {}).get(p)
                        c = med["loop"][p]
                        ms = f"{m:,.0f}" if m else "—"
                        mr = f"{s / m:.2f}" if m else "—"
                        say(f"| {p} | {s:,.0f} | {ms} | {c:,.0f} | {mr} | {s / c:.2f} |")
                    say("")
        small, big = 50_000, 500_000
        cmd = lambda n: [storlab, "meta", "--target", shm, "--threads", "2", "--files-per-thread", str(n),
                         "--phase", "create,stat,remove", "--db", db, "--json", "-q"]
        rss_small = peak_rss_kib(cmd(small))
        rss_big = peak_rss_kib(cmd(big))
        say("### storlab meta: peak memory (tmpfs)")
        say("(2 workers, empty files, create, stat and remove; peak RSS of the process)")
        say("")
        say(f"100,000 files: {rss_small / 1024:.1f} MiB; 1,000,000 files: {rss_big / 1024:.1f} MiB "
            f"(1M ÷ 100k: {rss_big / rss_small:.3f})")
        say("")
    finally:
        ext4.close()
        shutil.rmtree(shm, ignore_errors=True)
