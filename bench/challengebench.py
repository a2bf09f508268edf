"""The data challenge (see bench/run: --only challenge; --only challenge-long adds the hour).

1. Throughput: `storlab challenge run` on a tmpfs pool (2 writers and 2 readers, 64 MiB files in
   1 MiB requests, 64 files: 4 GiB written and 4 GiB read, every block stamped and verified)
   against `storlab run` moving the same bytes with the same request size (a 2-thread
   sequential write of 2 GiB per thread, then the read of it, verified). Wall time of each whole
   command, alternating; aggregate MiB/s = (bytes written + bytes read) / seconds. The
   challenge's catalogue, sampling and flow control are the difference.
2. The catalogue with small files: 20,000 files of 4 KiB through their whole life (assigned,
   written, read and verified, deleted) on tmpfs, with SQLite (one host, 2 writers, 2 readers)
   and with PostgreSQL (three agents, separate processes, 2 writers and 2 readers each). Files/s
   = 20,000 / the wall time from the first process's start to the last one's end.
3. Database growth per hour of samples: the size of the sample table's rows (SQLite's dbstat)
   per stored sample row, times the rows an hour stores (3600 / interval per pool and host).
4. (--only challenge-long) An hour's challenge: peak RSS (VmHWM) after 10 and after 60 minutes.

Everything on tmpfs (/dev/shm): the figures are the software's, not the virtual disk's. The
PostgreSQL server is Debian's with its defaults (fsync on), started for this and stopped after.
"""
import os
import shutil
import sqlite3
import statistics
import subprocess
import tempfile
import time

import dbbench

MIB = 1024 * 1024


def timed(cmd, env=None):
    t = time.perf_counter()
    out = subprocess.run(cmd, check=True, capture_output=True, env=env)
    return time.perf_counter() - t, out


def fresh(path):
    shutil.rmtree(path, ignore_errors=True)
    os.makedirs(path)
    return path


def throughput(storlab, say, repeat, work):
    pool = os.path.join(work, "pool")
    ch, rn = [], []
    moved = 2 * 64 * 64 * MIB
    for i in range(repeat):
        fresh(pool)
        t, _ = timed([storlab, "challenge", "run", "--pool", f"P1={pool}", "--writers", "2", "--readers", "2",
                      "--file-size", "64m", "--bs", "1m", "--files", "64", "--backlog", "8",
                      "--db", os.path.join(work, f"ch{i}.db")])
        ch.append(moved / MIB / t)
        fresh(pool)
        t, _ = timed([storlab, "run", "--target", pool, "--phase", "write", "--phase", "read", "--threads", "2",
                      "--size", "2g", "--bs", "1m", "--verify", "--db", os.path.join(work, f"run{i}.db")])
        rn.append(moved / MIB / t)
    fresh(pool)
    mc, mr = statistics.median(ch), statistics.median(rn)
    say("### 1. Throughput: the challenge against `storlab run` moving the same bytes")
    say(f"(tmpfs; 4 GiB written and 4 GiB read, 1 MiB requests, every block verified; median of {repeat} alternating runs)")
    say("")
    say("| command | aggregate MiB/s (median) | all runs | ÷ storlab run |")
    say("|---|---|---|---|")
    say(f"| storlab run (2 threads: write, then read) | {mr:.0f} | {', '.join(f'{x:.0f}' for x in rn)} | 1.000 |")
    say(f"| storlab challenge run (2 writers + 2 readers) | {mc:.0f} | {', '.join(f'{x:.0f}' for x in ch)} | {mc / mr:.3f} |")
    say("")


def small_files(storlab, say, repeat, work):
    n = 20_000
    pool_a, pool_b = os.path.join(work, "a"), os.path.join(work, "b")
    sq, pg = [], []
    server = dbbench.Server()
    try:
        for i in range(repeat):
            fresh(pool_a), fresh(pool_b)
            t, _ = timed([storlab, "challenge", "run", "--pool", f"P1={pool_a}", "--pool", f"P2={pool_b}",
                          "--writers", "2", "--readers", "2", "--file-size", "4k", "--bs", "4k",
                          "--files", str(n), "--backlog", "256", "--db", os.path.join(work, f"small{i}.db")])
            sq.append(n / t)
            fresh(pool_a), fresh(pool_b)
            server.createdb(f"small{i}")
            url = server.url(f"small{i}")
            made = subprocess.run([storlab, "challenge", "create", "--db", url, "--pool", f"P1={pool_a}",
                                   "--pool", f"P2={pool_b}", "--file-size", "4k", "--bs", "4k", "--files", str(n),
                                   "--backlog", "256"], check=True, capture_output=True, text=True)
            cid = made.stdout.strip()
            t0 = time.perf_counter()
            agents = [subprocess.Popen([storlab, "challenge", "agent", cid, "--db", url, "--pool", f"P1={pool_a}",
                                        "--pool", f"P2={pool_b}", "--writers", "2", "--readers", "2"],
                                       stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL) for _ in range(3)]
            codes = [a.wait() for a in agents]
            t = time.perf_counter() - t0
            if any(codes):
                raise RuntimeError(f"an agent failed: exit codes {codes}")
            pg.append(n / t)
    finally:
        server.stop()
    fresh(pool_a), fresh(pool_b)
    say("### 2. The catalogue with small files: 20,000 files of 4 KiB through their whole life")
    say(f"(tmpfs, two pools; median of {repeat} runs)")
    say("")
    say("| catalogue | files/s (median) | all runs | target |")
    say("|---|---|---|---|")
    say(f"| SQLite, one host (2 writers, 2 readers) | {statistics.median(sq):.0f} | {', '.join(f'{x:.0f}' for x in sq)} | ≥ 5,000 |")
    say(f"| PostgreSQL, three agents (2 writers, 2 readers each) | {statistics.median(pg):.0f} | {', '.join(f'{x:.0f}' for x in pg)} | ≥ 2,000 |")
    say("")


def growth(storlab, say, work):
    pool = fresh(os.path.join(work, "g"))
    pools = []
    for p in range(4):
        os.makedirs(os.path.join(pool, f"p{p}"))
        pools += ["--pool", f"P{p + 1}={os.path.join(pool, f'p{p}')}"]
    db = os.path.join(work, "growth.db")
    subprocess.run([storlab, "challenge", "run", *pools, "--file-size", "64k", "--bs", "64k", "--duration", "20s",
                    "--interval", "50ms", "--lt", "1s", "--db", db], check=True, capture_output=True)
    con = sqlite3.connect(db)
    (rows,) = con.execute("SELECT COUNT(*) FROM challenge_samples").fetchone()
    (size,) = con.execute("SELECT SUM(pgsize) FROM dbstat WHERE name LIKE '%challenge_samples%'").fetchone()
    con.close()
    per_row = size / rows
    per_hour = 3600 / 10 * per_row  # one pool, one host, 10 s samples
    say("### 3. Database growth per hour of samples")
    say("")
    say(f"{rows} sample rows took {size / 1024:.0f} KiB of SQLite pages (table and key): {per_row:.0f} bytes a row. "
        f"At the default 10 s interval that is {per_hour / 1024:.1f} KiB per pool and host per hour: "
        f"{per_hour * 15 * 24 / MIB:.1f} MiB an hour for the seed's 15 pools and 24 client hosts "
        f"({per_hour * 15 * 24 * 24 * 7 / 2**30:.2f} GiB over a seven-day challenge).")
    say("")
    shutil.rmtree(pool, ignore_errors=True)


def hwm(pid):
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith("VmHWM:"):
                return int(line.split()[1])
    return 0


def long_run(storlab, say, work, minutes=60):
    pool = fresh(os.path.join(work, "long"))
    p = subprocess.Popen([storlab, "challenge", "run", "--pool", f"P1={pool}", "--writers", "2", "--readers", "2",
                          "--file-size", "16m", "--bs", "1m", "--duration", f"{minutes}m",
                          "--db", os.path.join(work, "long.db")], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    time.sleep(600)
    at10 = hwm(p.pid)
    time.sleep(minutes * 60 - 600 - 20)
    at60 = hwm(p.pid)
    p.wait()
    say(f"### 4. An hour's challenge: peak RSS")
    say("")
    say(f"Peak RSS (VmHWM) after 10 minutes {at10 / 1024:.1f} MiB, after {minutes - 1} minutes {at60 / 1024:.1f} MiB: "
        f"{at60 / at10:.3f}× (target: within 10 %).")
    say("")


def run(storlab, say, repeat, long=False):
    work = tempfile.mkdtemp(prefix="storlab-challengebench-", dir="/dev/shm")
    try:
        throughput(storlab, say, repeat, work)
        small_files(storlab, say, repeat, work)
        growth(storlab, say, work)
        if long:
            long_run(storlab, say, work)
    finally:
        shutil.rmtree(work, ignore_errors=True)
