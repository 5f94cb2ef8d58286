"""Focused tests for model.trace that `make mutate` showed unchecked by the fast tests: which headers mark a
write-ahead log (a trace that may lack its end marker: the pipeline's ``trace.jsonl``), and the line number
a :class:`TraceError` carries."""

from __future__ import annotations

import json

import pytest

from model.protocol.config import ProtocolConfig
from model.trace import TraceError, header, is_write_ahead, parse_trace


def test_write_ahead_is_the_flag_or_a_version_1_pipeline_trace():
    assert is_write_ahead({"write_ahead": True})
    assert not is_write_ahead({"write_ahead": False}) and not is_write_ahead({})
    assert not is_write_ahead({"write_ahead": 1})  # the flag must be true itself
    assert is_write_ahead({"version": 1, "driver": "pipeline"})
    assert not is_write_ahead({"version": 2, "driver": "pipeline"})
    assert not is_write_ahead({"version": 1, "driver": "explore"})
    assert is_write_ahead({"version": 2, "driver": "pipeline", "write_ahead": True})


def test_a_write_ahead_trace_without_end_marker_is_read_as_incomplete():
    hdr = header(ProtocolConfig(), 3, "pipeline")
    assert hdr["write_ahead"] is True
    text = json.dumps(hdr) + "\n" + json.dumps({"step": 1, "kind": "ingest", "task": 0}) + "\n"
    tr = parse_trace(text)
    assert tr.write_ahead and not tr.complete and len(tr.events) == 1
    explore = dict(hdr, driver="explore")
    del explore["write_ahead"]
    with pytest.raises(TraceError) as e:
        parse_trace(json.dumps(explore) + "\n" + json.dumps({"step": 1, "kind": "ingest", "task": 0}) + "\n")
    assert e.value.line == 0 and str(e.value).startswith("no end marker")
    v1 = dict(explore, version=1, driver="pipeline")
    assert parse_trace(json.dumps(v1) + "\n").write_ahead


def test_trace_error_carries_line_and_problem():
    e = TraceError(3, "bad version")
    assert (e.line, e.problem, str(e)) == (3, "bad version", "line 3: bad version")
    e = TraceError(0, "no end marker")
    assert (e.line, str(e)) == (0, "no end marker") and isinstance(e, ValueError)
