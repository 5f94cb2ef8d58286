"""Issue #15 item 11: tables whose column type changes between commits, compared as Hudi reads them.

No real fixture has a column whose type changes, so these tables are written with the project's own Hudi
writer (``lakeio.hudiformat``, COW and MOR, table version 8): commit 1 writes a column as int64, commits 2
and 3 as string, for a data column ``v`` (partitions ``x`` and ``y``; later commits touch ``x`` only, so
``y``'s base file keeps int64) and for the partition column ``p`` (1 -> "1": the same folder ``p=1``). MOR
commit 2 appends a string log block to an int64 base file. The writer refuses a schema change
(``conform_schema``: "schema evolution is not supported"), so the smallest honest way is used: between
commit 1 and 2 the writer's table schema is replaced (``HudiTableWriter._set_schema``, the one place it is
set), so commit 2's files and commit metadata carry the evolved Avro schema, as a Hudi writer with a
promoted column type (long -> string) writes them. ``hoodie.populate.meta.fields=false`` is not written:
the writer always populates the meta columns.

Shown here, on these tables:

* the model's as-of slices read through the table-bound reader equal hudi-rs ``read()`` at every completed
  instant, rows and Arrow schema (``test_real_tables.assert_as_of_rows_match``, the fixtures' comparison);
* a plain ``HudiFileGroupReader`` would have differed: it types the column by each file (int64 ``1`` where
  ``read()`` gives ``"1"``), and on MOR it cannot merge the string log into the int64 base at all -- a
  named hudi-rs limitation (``PLAIN_READER_MOR_ERROR``);
* a wrong log-file choice (every later log of the chosen slice) is still caught on the MOR table.
"""

from __future__ import annotations

import datetime as dt
import re

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from lakeio.audit import audit_table
from lakeio.hudiformat import HudiTableWriter
from lakeio.hudiformat.schema import data_schema
from lakeio.ondisk import read_table
from model.instant import Action

from test_real_tables import _rows, _slice_key, as_of_reads, assert_as_of_rows_match, read_slices, same_schema

hudi = pytest.importorskip("hudi")

KEY = "_hoodie_record_key"
#: What hudi-rs 0.5.0 ``HudiFileGroupReader(base_uri).read_file_slice_from_paths`` raises for an int64 base
#: file with a string log block of the same column (the table-bound reader and ``read()`` read it).
PLAIN_READER_MOR_ERROR = ("reconcile: column '{column}' type Utf8 incompatible with target Int64 "
                          "(not a name-metadata difference)")


class Clock:
    """17-digit UTC times one second apart."""

    def __init__(self):
        self.t = dt.datetime(2026, 1, 1, 12, 0, 0)

    def __call__(self) -> str:
        self.t += dt.timedelta(seconds=1)
        return self.t.strftime("%Y%m%d%H%M%S") + "000"


def _batch(keys, ts, parts, vals, ptype=pa.string(), vtype=pa.int64()):
    return pa.table({"key": keys, "ts": pa.array(ts, pa.int64()), "p": pa.array(parts, ptype),
                     "v": pa.array(vals, vtype)})


#: column -> the three commits; the column is int64 in commit 1 and string afterwards.
COMMITS = {
    "v": [  # a data column
        _batch(["a", "b", "d"], [1, 1, 1], ["x", "x", "y"], [1, 2, 4]),
        _batch(["b", "c"], [2, 2], ["x", "x"], ["two", "three"], vtype=pa.string()),
        _batch(["a", "c"], [3, 3], ["x", "x"], ["one", "three'"], vtype=pa.string()),
    ],
    "p": [  # the partition column (paths p=1, p=2 either way)
        _batch(["a", "b", "d"], [1, 1, 1], [1, 1, 2], [1, 2, 4], ptype=pa.int64()),
        _batch(["b", "c"], [2, 2], ["1", "1"], [20, 30]),
        _batch(["a", "c"], [3, 3], ["1", "1"], [10, 31]),
    ],
}
#: (key, p, v) of hudi-rs read() at the latest instant: the evolved column typed string everywhere.
LATEST = {
    "v": [("a", "x", "one"), ("b", "x", "two"), ("c", "x", "three'"), ("d", "y", "4")],
    "p": [("a", "1", 10), ("b", "1", 20), ("c", "1", 31), ("d", "2", 4)],
}
CASES = [("cow", "v"), ("mor", "v"), ("cow", "p"), ("mor", "p")]


def write_evolved_table(path, ttype: str, column: str = "v"):
    w = HudiTableWriter(path, ttype, 8, record_key="key", ordering_field="ts", partition_field="p")
    clock = Clock()
    for records in COMMITS[column]:
        if w._data_schema is not None and data_schema(records.schema) != w._data_schema:
            w._set_schema(data_schema(records.schema))  # the evolved schema (module doc)
        t = clock()
        w.start(t)
        w.commit(t, clock(), w.write_batch(t, records))
    return path


@pytest.fixture(scope="module", params=CASES, ids=[f"{t}-{c}" for t, c in CASES])
def evolved(request, tmp_path_factory):
    ttype, column = request.param
    return ttype, column, write_evolved_table(tmp_path_factory.mktemp(f"{ttype}{column}") / "t", ttype, column)


def test_the_table_really_evolves_and_is_valid(evolved):
    ttype, column, path = evolved
    t = read_table(path)
    types = {pq.read_schema(f).field(column).type for f in path.rglob("*.parquet")}
    assert types == {pa.int64(), pa.string()}  # files of both schemas on disk
    assert audit_table(path).ok
    table = hudi.HudiTable(str(path))
    assert table.get_schema().field(column).type == pa.string()
    model = sorted(_slice_key(s.partition, s.file_id, s.base_file.name if s.base_file else None,
                              [lf.name for lf in s.log_files]) for s in t.view().latest_file_slices())
    rs = sorted(_slice_key(s.partition_path, s.file_id, s.base_file_name, s.log_file_names)
                for s in table.get_file_slices())
    assert model == rs
    if ttype == "mor":
        assert any(s.log_file_names for s in table.get_file_slices())


def test_as_of_rows_through_the_table_bound_reader_match_hudi_rs_read(evolved):
    _, column, path = evolved
    assert assert_as_of_rows_match(path) == len(COMMITS[column])
    latest = _rows(hudi.HudiTable(str(path)).read(), KEY)
    assert [(r["key"], r["p"], r["v"]) for r in latest] == LATEST[column]


def _plain_reader(path):
    """The old comparison's reader: not bound to the table (types each file by its own schema)."""
    return lambda table, version, opts: hudi.HudiFileGroupReader(str(path))


def test_the_old_plain_reader_comparison_would_have_differed(evolved):
    ttype, column, path = evolved
    reads = as_of_reads(path, _plain_reader(path))
    inst, batches, read = next(reads)  # as of commit 1: every file is int64, read() types the column string
    assert not same_schema(batches, read)
    assert _rows(batches, KEY) != _rows(read, KEY)
    first = {r[column] for r in COMMITS[column][0].to_pylist()}
    assert {r[column] for r in _rows(batches, KEY)} == first
    assert {r[column] for r in _rows(read, KEY)} == {str(x) for x in first}
    if ttype == "cow":
        # later instants read, but the untouched partition's int64 base file still differs in type
        for inst, batches, read in reads:
            assert not same_schema(batches, read), f"as of {inst}"
    else:
        # named limitation: the plain reader cannot merge a string log block into the int64 base
        with pytest.raises(Exception, match=re.escape(PLAIN_READER_MOR_ERROR.format(column=column))):
            next(reads)


@pytest.mark.parametrize("column", ["v", "p"])
def test_a_wrong_log_file_choice_is_still_caught_on_the_evolved_mor_table(tmp_path, column):
    """As ``test_real_tables.test_as_of_comparison_catches_a_naive_as_of``: every later log of the chosen
    slice (``latest_file_slices_as_of``) gives wrong rows through the table-bound reader; a reader bound to
    ``as_of`` would hide it."""
    path = write_evolved_table(tmp_path / "t", "mor", column)
    t = read_table(path)
    table, view = hudi.HudiTable(str(path)), t.view()
    mismatches = hidden = 0
    for inst in t.timeline.completed([Action.DELTACOMMIT]):
        opts = hudi.HudiReadOptions().with_as_of_timestamp(inst.requested_time)
        expected = _rows(table.read(opts), KEY)
        naive = view.latest_file_slices_as_of(inst.requested_time)
        mismatches += _rows(read_slices(table.create_file_group_reader_with_options(), naive), KEY) != expected
        hidden += _rows(read_slices(table.create_file_group_reader_with_options(opts), naive), KEY) != expected
    assert mismatches > 0 and hidden == 0
