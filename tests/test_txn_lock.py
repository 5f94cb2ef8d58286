"""The table's transaction lock: one lock file for the pipeline's commits, the metadata table and the indexer;
re-entrant in the holding thread, exclusive against other threads and other processes."""

import subprocess
import sys
import threading

import pytest

from lakeio.errors import UserError
from lakeio.ondisk.mdt_lock import TxnLock
from pipeline.multiwriter import txn_lock

PROBE = """
import sys
from lakeio.errors import UserError
from lakeio.ondisk.mdt_lock import TxnLock
try:
    with TxnLock(sys.argv[1], wait_s=0.3):
        print("got")
except UserError as e:
    print("busy")
"""


def _other_process(table) -> str:
    return subprocess.run([sys.executable, "-c", PROBE, str(table)], capture_output=True, text=True,
                          timeout=60).stdout.strip()


def _other_thread(table) -> str:
    out = []

    def probe():
        try:
            with TxnLock(table, wait_s=0.3):
                out.append("got")
        except UserError:
            out.append("busy")

    t = threading.Thread(target=probe)
    t.start()
    t.join(30)
    return out[0]


def test_the_pipeline_commit_and_the_metadata_table_share_one_reentrant_lock(tmp_path):
    outer = txn_lock(tmp_path)
    assert outer.path == TxnLock(tmp_path).path
    with outer:
        # the commit's metadata-table update takes the same lock in the same thread: no wait (it used to wait
        # 60 s for itself and fail the batch)
        with TxnLock(tmp_path, wait_s=0.3) as inner:
            assert inner.held
            assert _other_thread(tmp_path) == "busy"
            assert _other_process(tmp_path) == "busy"
        # the inner release keeps the outer hold
        assert _other_process(tmp_path) == "busy"
        assert _other_thread(tmp_path) == "busy"
    assert _other_thread(tmp_path) == "got"
    assert _other_process(tmp_path) == "got"


def test_a_busy_lock_is_one_line_naming_the_file(tmp_path):
    with TxnLock(tmp_path):
        with pytest.raises(UserError, match=r"hoodie-lab-txn.lock: transaction lock busy for 0.2 s"):
            t_err = []

            def probe():
                try:
                    TxnLock(tmp_path, wait_s=0.2).acquire()
                except UserError as e:
                    t_err.append(e)

            t = threading.Thread(target=probe)
            t.start()
            t.join(30)
            raise t_err[0]
