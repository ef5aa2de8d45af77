"""Time a full graph extraction (update_graph over every stored chunk) on a copy of an index."""
import shutil, sqlite3, sys, time
from pathlib import Path
from navigator.index import store
from navigator.index.graph import update_graph
src, dst = Path(sys.argv[1]), Path(sys.argv[2])
shutil.rmtree(dst, ignore_errors=True); dst.mkdir(parents=True)
for name in ("nav.db",):
    shutil.copy(src / name, dst / name)
conn = store.connect(dst, create=False)
conn.execute("DELETE FROM meta WHERE key='graph_version'")
best = []
for _ in range(3):
    conn.execute("DELETE FROM meta WHERE key='graph_version'")
    t = time.perf_counter(); conn.execute("BEGIN IMMEDIATE"); update_graph(conn, {}, []); conn.execute("COMMIT")
    best.append(time.perf_counter() - t)
print(f"graph extraction of every file: {min(best):.2f}s (best of 3: {', '.join(f'{b:.2f}' for b in best)})")
print("defs", conn.execute("SELECT COUNT(*) FROM graph_defs").fetchone()[0], "refs", conn.execute("SELECT COUNT(*) FROM graph_refs").fetchone()[0])
