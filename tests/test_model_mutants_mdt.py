"""Focused tests for model.mdt that `make mutate` showed unchecked by the fast tests: the indexing machine's
state description and config dict (printed in every counterexample and trace header), the MDT file-group
mapping of record keys (Java's ``String#hashCode`` and ``Math.abs``) and the table-config keys."""

from __future__ import annotations

import ctypes
import math

import pytest

from model.mdt import machine as M
from model.mdt import partitions as P

RUN = [("w1", "start"), ("i", "schedule"), ("w1", "write"), ("i", "execute"), ("w1", "commit"), ("w2", "start")]
T = "2026010100000000"  # + one digit: the machine's times are EPOCH + a counter


def test_indexing_describe_along_a_run():
    cfg = M.IndexingConfig()
    s = M.initial_state(cfg)
    assert M.describe(s) == (f"[w1=idle, w2=idle] indexer=idle lock=None partitions=['files'] inflight=[] "
                             f"| DT: {T}0->{T}1.deltacommit[completed] | MDT: files: base 0, logs ['0000w']")
    for a in RUN[:2]:
        s = M.step(cfg, s, a)
    assert M.describe(s) == (
        f"[w1=requested@{T}2, w2=idle] indexer=scheduled@{T}3 upto {T}0 todo [] lock=None partitions=['files'] "
        f"inflight=[] | DT: {T}0->{T}1.deltacommit[completed], {T}2.deltacommit[requested], {T}3.indexing[requested] "
        f"| MDT: files: base 0, logs ['0000w']")
    for a in RUN[2:]:
        s = M.step(cfg, s, a)
    assert M.describe(s) == (
        f"[w1=mdt-done@{T}2, w2=requested@{T}5] indexer=catching-up@{T}3 upto {T}0 todo ['{T}0', '{T}2'] lock=w1 "
        f"partitions=['files'] inflight=['record_index'] | DT: {T}0->{T}1.deltacommit[completed], "
        f"{T}2.deltacommit[inflight], {T}3.indexing[inflight], {T}5.deltacommit[requested] "
        f"| MDT: files: base 0, logs ['0000w', '0002w']; record_index: base 1, logs []")


def test_indexing_config_dict_names_the_settings():
    d = M.IndexingConfig().to_dict()
    assert d["settings"] == {"mode": "OPTIMISTIC_CONCURRENCY_CONTROL", "lock_provider": "InProcessLockProvider"}
    assert d["writers"] == 2 and d["partition"] == "record_index"


def test_partition_properties_and_file_group_ids():
    states = P.PartitionStates(available=frozenset({"files", "column_stats"}),
                               inflight=frozenset({"record_index", "bloom_filters"}))
    assert states.as_properties() == {"hoodie.table.metadata.partitions": "column_stats,files",
                                      "hoodie.table.metadata.partitions.inflight": "bloom_filters,record_index"}
    assert P.file_group_ids("record_index", 2) == ("record-index-0000-0", "record-index-0001-0")
    assert P.file_group_ids("files") == ("files-0000-0",)
    with pytest.raises(ValueError) as e:
        P.file_group_ids("files", 0)
    assert str(e.value) == "a metadata partition has at least one file group, not 0"


def java_hash(key: str) -> int:
    """``String#hashCode`` computed the Java way: UTF-16 code units, a 32-bit signed int that wraps."""
    units = key.encode("utf-16-be")
    h = ctypes.c_int32(0)
    for i in range(0, len(units), 2):
        h = ctypes.c_int32(31 * h.value + int.from_bytes(units[i:i + 2], "big"))
    return h.value


def java_file_group_index(key: str, count: int) -> int:
    """``mapRecordKeyToFileGroupIndex``: ``Math.abs(Math.abs(h) % count)`` with Java's ``Math.abs``
    (``Integer.MIN_VALUE`` stays negative) and a remainder that truncates toward zero."""
    h = java_hash(key)
    a = h if h == -2**31 else abs(h)
    return abs(int(math.fmod(a, count)))


KEYS = ["", "k0", "hello", "Aa", "BB", "polygenelubricants", "key-00042", "zzzzzzzz", "uuid-7f3a9c", "\U00010000",
        "a\U0001F600b", "\uffff", "record_key_with_a_long_name_0123456789"]


@pytest.mark.parametrize("count", [1, 2, 3, 7, 10, 64])
def test_file_group_index_is_javas(count):
    for key in KEYS:
        assert P.file_group_index(key, count) == java_file_group_index(key, count), key


def test_file_group_index_known_java_hash_codes():
    # "hello".hashCode() == 99162322; "polygenelubricants".hashCode() == Integer.MIN_VALUE
    assert P.file_group_index("hello", 1000) == 99162322 % 1000
    assert P.file_group_index("polygenelubricants", 10) == 8  # Math.abs(MIN_VALUE % 10) == 8
    assert P.file_group_index("polygenelubricants", 7) == abs(int(math.fmod(-2**31, 7)))
    assert java_hash("hello") == 99162322 and java_hash("polygenelubricants") == -2**31
    assert any(java_hash(k) < 0 for k in KEYS) and any(java_hash(k) > 0 for k in KEYS)
    assert java_hash("\U00010000") == 31 * 0xD800 + 0xDC00  # a supplementary character hashes as two units
