"""storlab report on a run with 600,000 interval samples (see bench/run).

The run is a real one (a short storlab run on tmpfs); its one phase then gets 600,000 interval
samples written into the database directly — what a 10 ms interval over 100 minutes would store —
with throughput and latency that vary as a real device's do. The report must render in under
2 s and stay under 5 MiB.
"""
import json
import math
import os
import random
import shutil
import sqlite3
import statistics
import subprocess
import tempfile
import time


def big_run(storlab, work):
    """A SQLite file in `work` holding one real run whose phase has 600,000 samples; (path, run id)."""
    db = os.path.join(work, "r.db")
    out = subprocess.run([storlab, "run", "--target", work, "--phase", "randread", "--bs", "4k", "--size", "16m",
                          "--runtime", "1s", "--db", db, "--json"], check=True, capture_output=True, text=True).stdout
    run_id = json.loads(out)["id"]
    con = sqlite3.connect(db)
    (phase_id,) = con.execute("SELECT id FROM phases WHERE run_id = ?", (run_id,)).fetchone()
    con.execute("DELETE FROM samples WHERE phase_id = ?", (phase_id,))
    rnd = random.Random(7)
    n, dt = 600_000, 0.01
    rows = []
    for i in range(n):
        wave = 1.0 + 0.3 * math.sin(i / 5000.0)
        ops = int(2000 * wave * rnd.uniform(0.9, 1.1))
        p50 = int(400_000 * rnd.uniform(0.9, 1.1))
        spike = 20 if rnd.random() < 1e-4 else 1
        rows.append((phase_id, i, i * dt, (i + 1) * dt, 0, ops * 4096, 0, ops, 0, p50, int(p50 * 1.5),
                     int(p50 * 3 * spike), int(p50 * 5 * spike), int(p50 * 8 * spike), 0))
    con.executemany("INSERT INTO samples VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?,?,?)", rows)
    con.commit()
    con.close()
    return db, run_id


def run(storlab, say, repeat):
    work = tempfile.mkdtemp(prefix="storlab-reportbench-", dir="/dev/shm")
    try:
        db, run_id = big_run(storlab, work)
        html = os.path.join(work, "report.html")
        times = []
        for _ in range(repeat):
            t = time.perf_counter()
            subprocess.run([storlab, "report", str(run_id), "--db", db, "-o", html], check=True, capture_output=True)
            times.append(time.perf_counter() - t)
        size = os.path.getsize(html)
        say("### report: one run with 600,000 interval samples")
        say(f"(tmpfs database; the whole `storlab report` command, reading the samples included; median of {repeat} runs)")
        say("")
        say(f"seconds: {statistics.median(times):.3f} (all runs: {', '.join(f'{t:.3f}' for t in times)}); "
            f"file: {size / 1048576:.2f} MiB ({size:,} bytes)")
        say("")
    finally:
        shutil.rmtree(work, ignore_errors=True)
