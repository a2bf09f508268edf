"""`storlab fio` against fio on fio's own example job files, the same file given to both.

Each example (tests/fixtures/fio-examples, copied from fio's examples/) is adapted the same way
for both tools: its runtime, size and place replaced (time-based, `SECONDS` s, 512 MiB per job,
in a directory of the bench's), then run by `fio FILE --output-format=json` and by `storlab fio
FILE --output-format=json`, alternating which goes first, `repeat` times. Both tools' figures
are read from fio's JSON document (storlab writes the same keys): the sum over the file's jobs
of read and write IOPS and bytes/s; the ratio is storlab ÷ fio.

Two places: tmpfs (/dev/shm, buffered: the engines' own cost) and an ext4 filesystem on a loop
device backed by a file on the virtual disk, with O_DIRECT (direct=1: the device's behaviour).
fio and storlab both run libaio (Linux AIO) where the examples ask for it.

Third, fio's client/server mode on tmpfs: each tool's server on 127.0.0.1 (`storlab fio --server`,
`fio --server`) driven by fio's client, its per-host figures beside the same tool run locally.
"""
import json
import os
import re
import statistics
import subprocess
import tempfile

from iozonebench import welch

EXAMPLES = ["fio-rand-read.fio", "fio-seq-read.fio", "fio-rand-write.fio", "fio-rand-RW.fio", "fio-seq-write.fio",
            "aio-read.fio"]
DROP = re.compile(r"^\s*(runtime|timeout|size|directory|direct|buffered|time_based)\b")


def adapt(text, where, direct, secs):
    """The example with its place, size, time and O_DIRECT replaced; everything else as written."""
    out, placed = [], False
    for line in text.splitlines():
        if DROP.match(line):
            continue
        out.append(line)
        if not placed and line.strip() == "[global]":
            out += [f"directory={where}", f"direct={direct}", "size=512m", f"runtime={secs}", "time_based"]
            placed = True
    if not placed:
        out = ["[global]", f"directory={where}", f"direct={direct}", "size=512m", f"runtime={secs}", "time_based"] + out
    return "\n".join(out) + "\n"


def totals(doc):
    """Sum over the document's jobs (a client's: its servers' entries, not "All clients") of
    read + write IOPS and bytes/s."""
    iops = bw = 0.0
    jobs = doc.get("jobs") or [j for j in doc["client_stats"] if j["jobname"] != "All clients"]
    for j in jobs:
        for d in ("read", "write"):
            iops += j[d]["iops"]
            bw += j[d]["bw_bytes"]
    return iops, bw


def clear(where):
    for f in os.listdir(where):
        if os.path.isfile(os.path.join(where, f)):
            os.remove(os.path.join(where, f))


def one(tool, storlab, job, db, where):
    # The files stay between runs of one example: a job that names its filename reads (or
    # overwrites) the same laid-out file with either tool.
    if tool == "fio":
        cmd = ["fio", job, "--output-format=json"]
    else:
        cmd = [storlab, "fio", job, "--output-format=json", "--db", db, "-q"]
    out = subprocess.run(cmd, check=True, capture_output=True, text=True).stdout
    # fio may print notes before its document.
    return totals(json.loads(out[out.index("{"):]))


def place(name, where, direct, storlab, say, repeat, secs, db, examples):
    say(f"### {name}")
    say(f"(median of {repeat} alternating runs of {secs} s each; sums over each file's jobs)")
    say("")
    say("| example | fio IOPS | storlab IOPS | IOPS storlab ÷ fio | Welch, 95 % (IOPS) | fio MiB/s | storlab MiB/s | MiB/s storlab ÷ fio |")
    say("|---|---|---|---|---|---|---|---|")
    tmp = tempfile.mkdtemp(prefix="storlab-fiobench-")
    try:
        for ex in EXAMPLES:
            job = os.path.join(tmp, ex)
            with open(os.path.join(examples, ex)) as f:
                text = adapt(f.read(), where, direct, secs)
            with open(job, "w") as f:
                f.write(text)
            clear(where)
            res = {"fio": [], "storlab": []}
            for r in range(repeat):
                for tool in (("fio", "storlab") if r % 2 == 0 else ("storlab", "fio")):
                    res[tool].append(one(tool, storlab, job, db, where))
            med = {t: (statistics.median(x[0] for x in v), statistics.median(x[1] for x in v)) for t, v in res.items()}
            (fi, fb), (si, sb) = med["fio"], med["storlab"]
            w = welch([x[0] for x in res["storlab"]], [x[0] for x in res["fio"]])
            say(f"| {ex} | {fi:,.0f} | {si:,.0f} | {si / fi:.3f} | {w} | {fb / 2**20:,.0f} | {sb / 2**20:,.0f} | {sb / fb:.3f} |")
            clear(where)
    finally:
        for f in os.listdir(tmp):
            os.remove(os.path.join(tmp, f))
        os.rmdir(tmp)
    say("")


def served(storlab, say, repeat, secs, db, examples, where):
    """Each tool's per-host figures through its server (fio's client on this host, the server
    on 127.0.0.1) against the same tool run here: fio's client/server mode costs nothing where
    the ratios are 1 within the runs' spread."""
    say("### 3. client/server on tmpfs: each tool's server driven by fio's client, against the same tool run locally")
    say(f"(median of {repeat} alternating runs of {secs} s each; fio {subprocess.run(['fio', '--version'], capture_output=True, text=True).stdout.strip()}'s client for both servers)")
    say("")
    say("| example | storlab local IOPS | storlab --server IOPS | served ÷ local | fio local IOPS | fio --server IOPS | served ÷ local |")
    say("|---|---|---|---|---|---|---|")
    ports = {"storlab": 18901, "fio": 18902}
    servers = [
        subprocess.Popen([storlab, "fio", f"--server=ip:127.0.0.1,{ports['storlab']}", "--db", db],
                         stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL),
        subprocess.Popen(["fio", f"--server=ip:127.0.0.1,{ports['fio']}"], stdout=subprocess.DEVNULL,
                         stderr=subprocess.DEVNULL),
    ]
    tmp = tempfile.mkdtemp(prefix="storlab-fiobench-")
    try:
        import time
        time.sleep(1)
        for ex in ["fio-rand-read.fio", "fio-seq-read.fio", "fio-rand-write.fio"]:
            job = os.path.join(tmp, ex)
            with open(os.path.join(examples, ex)) as f:
                text = adapt(f.read(), where, 0, secs)
            with open(job, "w") as f:
                f.write(text)
            clear(where)
            res = {k: [] for k in ("storlab", "storlab-net", "fio", "fio-net")}
            for r in range(repeat):
                order = list(res) if r % 2 == 0 else list(reversed(list(res)))
                for k in order:
                    if k.endswith("-net"):
                        port = ports[k[:-4]]
                        cmd = ["fio", f"--client=ip:127.0.0.1,{port}", job, "--output-format=json"]
                        out = subprocess.run(cmd, check=True, capture_output=True, text=True).stdout
                        res[k].append(totals(json.loads(out[out.index("{"):])))
                    else:
                        res[k].append(one(k, storlab, job, db, where))
            m = {k: statistics.median(x[0] for x in v) for k, v in res.items()}
            say(f"| {ex} | {m['storlab']:,.0f} | {m['storlab-net']:,.0f} | {m['storlab-net'] / m['storlab']:.3f} | "
                f"{m['fio']:,.0f} | {m['fio-net']:,.0f} | {m['fio-net'] / m['fio']:.3f} |")
            clear(where)
    finally:
        for p in servers:
            p.terminate()
            p.wait()
        for f in os.listdir(tmp):
            os.remove(os.path.join(tmp, f))
        os.rmdir(tmp)
    say("")


def run(storlab, say, repeat, secs=10):
    examples = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tests", "fixtures", "fio-examples")
    say(f"fio: {subprocess.run(['fio', '--version'], capture_output=True, text=True).stdout.strip()}; both run libaio's jobs as Linux AIO.")
    say("")
    shm = tempfile.mkdtemp(prefix="storlab-fiobench-", dir="/dev/shm")
    db = os.path.join(shm, "bench.db")
    work = os.path.join(shm, "work")
    os.mkdir(work)
    try:
        place("1. tmpfs (/dev/shm), buffered: the engines' own cost", work, 0, storlab, say, repeat, secs, db, examples)
        served(storlab, say, repeat, secs, db, examples, work)
    finally:
        for f in os.listdir(work):
            os.remove(os.path.join(work, f))
        os.rmdir(work)
    back = tempfile.mkdtemp(prefix="storlab-fiobench-", dir="/var/tmp")
    img, mnt, loop = os.path.join(back, "disk.img"), os.path.join(back, "mnt"), None
    try:
        subprocess.run(["truncate", "-s", "8G", img], check=True)
        loop = subprocess.run(["losetup", "--find", "--show", "--direct-io=on", img], check=True, capture_output=True,
                              text=True).stdout.strip()
        subprocess.run(["mkfs.ext4", "-q", "-F", loop], check=True)
        os.mkdir(mnt)
        subprocess.run(["mount", loop, mnt], check=True)
        place(f"2. ext4 on a loop device ({loop}, a file on the virtual disk), O_DIRECT: the device's behaviour", mnt, 1,
              storlab, say, repeat, secs, db, examples)
    finally:
        subprocess.run(["umount", mnt], capture_output=True)
        if loop:
            subprocess.run(["losetup", "-d", loop], capture_output=True)
        for p in (img,):
            if os.path.exists(p):
                os.remove(p)
        if os.path.isdir(mnt):
            os.rmdir(mnt)
        os.rmdir(back)
        if os.path.exists(db):
            os.remove(db)
        os.rmdir(shm)
