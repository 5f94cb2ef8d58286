"""The writer tasks freeze their Python worker's long-lived objects once (:func:`pipeline.executor.
freeze_worker_heap`, ``gc.freeze``), so PySpark's ``gc.collect()`` after each task does not walk the modules again;
what a later task allocates -- cyclic garbage included -- must stay collectable. A helper that froze on every
call (keeping each task's objects forever) is caught: the check runs in a fresh interpreter, as a worker is."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent

_PROBE = r"""
import gc, json, weakref
import pipeline.executor as ex

class Node:
    pass

def cycle():
    a, b = Node(), Node()
    a.other, b.other = b, a
    return a

walked_before = len(gc.get_objects())
before = cycle()                        # garbage-to-be allocated before the first task: frozen with the modules
first = ex.freeze_worker_heap()          # the first task of the worker
walked_after = len(gc.get_objects())
frozen = gc.get_freeze_count()
task_obj = cycle()                      # a task's objects, in a reference cycle
ref = weakref.ref(task_obj)
second = ex.freeze_worker_heap()         # the next task of the same worker
del task_obj
gc.collect()                            # what the daemon runs after the task
print(json.dumps({"first": first, "second": second, "frozen": frozen, "frozen_after": gc.get_freeze_count(),
                  "walked_before": walked_before, "walked_after": walked_after, "task_cycle_freed": ref() is None}))
"""


def test_the_worker_heap_is_frozen_once_and_task_garbage_stays_collectable():
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")])}
    out = subprocess.run([sys.executable, "-c", _PROBE], capture_output=True, text=True, env=env, check=True)
    got = json.loads(out.stdout.strip().splitlines()[-1])
    assert got["first"] is True and got["second"] is False
    # the modules are frozen: a full collection walks a small fraction of what it walked before
    assert got["frozen"] > 20_000 and got["walked_after"] < got["walked_before"] / 4
    assert got["frozen_after"] == got["frozen"]  # the second task froze nothing of its own
    assert got["task_cycle_freed"]  # ... so its cyclic garbage is freed by the daemon's collection
