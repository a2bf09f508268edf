"""The results database: SQLite against PostgreSQL (see bench/run, --only db).

1. Storing a run with 600,000 interval samples (what a 10 ms interval over 100 minutes stores):
   the run is the one bench/reportbench.py makes (a real short run whose phase then gets
   600,000 samples), then `storlab db copy` moves it into a new SQLite file and into a new
   PostgreSQL database. Both copies read the same source and store through the same code as a
   run's phase (one transaction; SQLite: one prepared insert per sample; PostgreSQL: COPY in
   binary), so the difference between them is the storing.
2. `storlab results list` over 10,000 runs: the default listing (newest 50) and all 10,000.

Both databases live on tmpfs (/dev/shm): the figures are the software's cost, not the virtual
disk's. The PostgreSQL server is Debian's, started for the benchmark with its default settings
(fsync and synchronous commit on) and stopped after it.
"""
import os
import pwd
import shutil
import socket
import sqlite3
import statistics
import subprocess
import tempfile
import time
import uuid

import reportbench


def pg_bin():
    versions = sorted(int(v) for v in os.listdir("/usr/lib/postgresql") if v.isdigit())
    return f"/usr/lib/postgresql/{versions[-1]}/bin"


class Server:
    """A PostgreSQL server in a temp dir on tmpfs, run as the postgres user, socket only."""

    def __init__(self):
        self.dir = tempfile.mkdtemp(prefix="storlab-dbbench-pg-", dir="/dev/shm")
        pw = pwd.getpwnam("postgres")
        os.chown(self.dir, pw.pw_uid, pw.pw_gid)
        with socket.socket() as s:
            s.bind(("127.0.0.1", 0))
            self.port = s.getsockname()[1]
        self.user = ["runuser", "-u", "postgres", "--"]
        subprocess.run(self.user + [f"{pg_bin()}/initdb", "-D", f"{self.dir}/data", "-U", "storlab",
                                    "--auth-local=trust", "-E", "UTF8", "--locale=C"], check=True, capture_output=True)
        with open(f"{self.dir}/data/postgresql.conf", "a") as f:
            f.write(f"listen_addresses = ''\nport = {self.port}\nunix_socket_directories = '{self.dir}'\n")
        subprocess.run(self.user + [f"{pg_bin()}/pg_ctl", "-D", f"{self.dir}/data", "-l", f"{self.dir}/log", "-w",
                                    "start"], check=True, capture_output=True)

    def url(self, db):
        return f"postgres://storlab@/{db}?host={self.dir}&port={self.port}"

    def createdb(self, db):
        subprocess.run(["psql", "-h", self.dir, "-p", str(self.port), "-U", "storlab", "-d", "postgres", "-qc",
                        f"CREATE DATABASE {db}"], check=True)

    def stop(self):
        subprocess.run(self.user + [f"{pg_bin()}/pg_ctl", "-D", f"{self.dir}/data", "-m", "fast", "-w", "stop"],
                       capture_output=True)
        shutil.rmtree(self.dir, ignore_errors=True)


def timed(cmd):
    t = time.perf_counter()
    subprocess.run(cmd, check=True, capture_output=True)
    return time.perf_counter() - t


def many_runs(storlab, work, n):
    """A SQLite file with `n` runs (one made by storlab, copied n times with new ids and UUIDs)."""
    db = os.path.join(work, "many.db")
    subprocess.run([storlab, "run", "--target", work, "--phase", "randread", "--bs", "4k", "--size", "1m",
                    "--runtime", "0.2s", "--db", db, "--tag", "fs=tmpfs"], check=True, capture_output=True)
    con = sqlite3.connect(db)
    cols = [r[1] for r in con.execute("PRAGMA table_info(runs)")]
    (row,) = con.execute(f"SELECT {', '.join(cols)} FROM runs").fetchall()
    base = dict(zip(cols, row))
    rows = []
    for i in range(2, n + 1):
        r = dict(base, id=i, uuid=str(uuid.uuid4()), status="ok")
        rows.append(tuple(r[c] for c in cols))
    con.executemany(f"INSERT INTO runs ({', '.join(cols)}) VALUES ({', '.join('?' * len(cols))})", rows)
    con.executemany("INSERT INTO tags (run_id, key, value) VALUES (?, 'fs', 'tmpfs')", [(i,) for i in range(2, n + 1)])
    con.commit()
    con.close()
    return db


def run(storlab, say, repeat):
    work = tempfile.mkdtemp(prefix="storlab-dbbench-", dir="/dev/shm")
    server = Server()
    try:
        big, _ = reportbench.big_run(storlab, work)
        sq, pg = [], []
        for i in range(repeat):
            # Alternating, each into a new database.
            target = os.path.join(work, f"copy{i}.db")
            sq.append(timed([storlab, "db", "copy", "--from", big, "--to", target]))
            server.createdb(f"big{i}")
            url = server.url(f"big{i}")
            subprocess.run([storlab, "db", "migrate", "--db", url], check=True, capture_output=True)
            subprocess.run([storlab, "db", "migrate", "--db", target], check=True, capture_output=True)
            pg.append(timed([storlab, "db", "copy", "--from", big, "--to", url]))
            os.remove(target)
        say("### 1. Storing a run with 600,000 samples: `storlab db copy` of it into a new database")
        say(f"(tmpfs; both databases migrated first; the same source read by both; median of {repeat} alternating runs)")
        say("")
        say("| into | seconds (median) | all runs | ÷ SQLite |")
        say("|---|---|---|---|")
        ms, mp = statistics.median(sq), statistics.median(pg)
        say(f"| SQLite | {ms:.3f} | {', '.join(f'{t:.3f}' for t in sq)} | 1.000 |")
        say(f"| PostgreSQL | {mp:.3f} | {', '.join(f'{t:.3f}' for t in pg)} | {mp / ms:.3f} |")
        say("")
        n = 10_000
        many = many_runs(storlab, work, n)
        server.createdb("many")
        url = server.url("many")
        subprocess.run([storlab, "db", "copy", "--from", many, "--to", url], check=True, capture_output=True)
        say(f"### 2. `storlab results list` over {n:,} runs")
        say(f"(tmpfs; the whole command, process start included; median of {max(repeat, 5)} alternating runs)")
        say("")
        say("| listing | SQLite ms (median) | PostgreSQL ms (median) | PostgreSQL ÷ SQLite |")
        say("|---|---|---|---|")
        for label, extra in (("newest 50 (the default)", []), (f"all {n:,}", ["--limit", str(n)]),
                             (f"all {n:,}, by tag", ["--limit", str(n), "--tag", "fs=tmpfs"])):
            a, b = [], []
            for _ in range(max(repeat, 5)):
                a.append(timed([storlab, "results", "list", "--db", many] + extra))
                b.append(timed([storlab, "results", "list", "--db", url] + extra))
            ma, mb = statistics.median(a) * 1000, statistics.median(b) * 1000
            say(f"| {label} | {ma:.1f} | {mb:.1f} | {mb / ma:.3f} |")
        say("")
    finally:
        server.stop()
        shutil.rmtree(work, ignore_errors=True)
