"""Appends numbered lines of random sizes to one file through a WriteQueue, for the test that two
writer processes never interleave a line.

usage: line_writer.py FILE WRITER_ID COUNT SEED
"""

from __future__ import annotations

import random
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from storage.jsonline import dump_line  # noqa: E402
from storage.writequeue import WriteQueue  # noqa: E402


def main() -> None:
    path, wid, count, seed = Path(sys.argv[1]), sys.argv[2], int(sys.argv[3]), int(sys.argv[4])
    rnd = random.Random(seed)
    queue = WriteQueue(interval=0.005)
    for seq in range(count):
        size = rnd.choice([1, 100, 5000, 70_000, 300_000])
        queue.put(path, dump_line({"writer": wid, "seq": seq, "pad": wid * size}), f"{wid}:{seq}")
        if rnd.random() < 0.2:
            queue.flush()
    queue.close()


if __name__ == "__main__":
    main()
