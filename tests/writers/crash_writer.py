"""A long recording for the crash tests: adopts (or creates) a session and records forever,
printing `D <uuid>` for every row a flush reported durable. The test kills it with SIGKILL.

usage: crash_writer.py PROJECTS_DIR CWD SESSION_ID SEED
"""

from __future__ import annotations

import random
import sys
from pathlib import Path

sys.path[:0] = [str(Path(__file__).resolve().parents[2]), str(Path(__file__).resolve().parents[1])]

from writers.conversations import Script  # noqa: E402

from storage.recorder import SessionRecorder  # noqa: E402


def main() -> None:
    projects, cwd, sid, seed = Path(sys.argv[1]), sys.argv[2], sys.argv[3], int(sys.argv[4])
    rnd = random.Random(seed)
    existing = list(projects.glob(f"*/{sid}.jsonl"))
    if existing:
        rec = SessionRecorder.adopt(existing[0], interval=0.02)
    else:
        rec = SessionRecorder.create(projects, cwd, session_id=sid, interval=0.02)
    script = Script(rec)
    out = sys.stdout
    out.write("READY\n")
    out.flush()
    i = 0
    while True:
        i += 1
        kind = rnd.random()
        if kind < 0.4:
            script.play(("text", f"step {seed}.{i} " + "y" * rnd.choice([10, 1000, 50_000, 400_000])))
        elif kind < 0.8:
            n = rnd.randint(1, 4)
            order = list(range(n))
            rnd.shuffle(order)
            script.play(("tools", n, order))
        elif kind < 0.95:
            script.play(("agent", f"READ /work/{i}.txt"))
        else:
            script.play(("compact", f"summary {i}"))
        if rnd.random() < 0.5:
            for uid in rec.flush():
                out.write(f"D {uid}\n")
            out.flush()


if __name__ == "__main__":
    main()
