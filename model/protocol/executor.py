"""The coordinator's executor as an explicit FIFO queue of jobs (``ProtocolConfig.executor_queue``).

``StreamWriteOperatorCoordinator`` runs its handlers on one single-threaded executor (``NonThrownExecutor``,
"meta-event-handle", ``hudi-semantics.md`` 4.1): ``notifyCheckpointComplete(n)`` is ``executor.execute(() -> {
committed = commitInstants(n); scheduleTableServices(committed); if (committed) syncHiveAsync(); })``, and
``handleEventFromOperator`` queues the same way. Hudi 1.1 answers instant requests on a second single thread
(``instantRequestExecutor``, so that a request does not wait behind event handling); a request there still
waits while the commit or the table-service scheduling holds the instant lock its ``startInstant`` needs (Hudi
#19902: the instant RPC can time out while the instant lock is held). The model keeps one queue -- the order a
request observes in that case, and the single executor of the designs where requests share it -- with one job
running at a time:

* :func:`enqueue` -- a job joins the queue when its message arrives (``deliver-ack``, ``request-instant``);
* :func:`run_head` -- ``run-job``: the oldest job's effect: a :class:`CommitJob` commits
  (:func:`model.protocol.coordinator.notify_checkpoint_complete`) and, when it committed and
  ``table_service`` is not "none", the tail of the same job, ``scheduleTableServices``, becomes the next job
  (a :class:`TableServiceJob`; ``CompactionUtil.scheduleCompaction`` writes a plan after a commit -- the
  delta-time trigger that also schedules without one is not modelled); a :class:`RequestJob` runs
  ``handleInstantRequest`` and grants the instant to the task if it is still the attempt that asked (in
  blocking mode past the ``CommitGuard``: with ``request_thread="own"`` the request waited on it before it
  joined the queue, and Hudi does not check it again before ``startInstant``, so an event buffered meanwhile --
  async event delivery -- does not stop a new instant; with ``"executor"`` ``run-job`` is refused while the
  guard would wait); a :class:`TableServiceJob` only occupies the thread (its
  timeline effect, a compaction plan, is the table machine's, :mod:`model.table_machine`);
* blocking mode (``CommitGuard``, ``ProtocolConfig.request_thread``): with ``"own"`` a request joins the queue
  only once the guard let it through (the wait is the task's ``blocked`` status, off the executor); with
  ``"executor"`` it joins at once, and at the head, while the guard would wait
  (:func:`model.protocol.state.guard_holds_executor`), it holds the thread: ``run-job`` is refused and only
  the guard's timeout (``instant-timeout``) ends it;
* :func:`mark_overdue` -- a request timed out behind a slow table-service job: the job is past one RPC
  timeout, and how much longer it runs is not modelled (a later request behind it times out only through the
  ``request-timeout`` fault).

The spec has no durations: "slow" is the job's declared property (``table_service="slow"``: longer than the
RPC timeout), so a request behind it times out for certain (``request-expired``); behind any other job a
timeout is the ``request-timeout`` fault (a commit slowed by storage).
"""

from __future__ import annotations

from dataclasses import replace

from . import coordinator, writer
from .state import State
from .values import CommitJob, RequestJob, TableServiceJob


def enqueue(s: State, job) -> State:
    """``executor.execute(job)``: the job joins the end of the queue."""
    return replace(s, executor=s.executor + (job,))


def run_head(s: State) -> State:
    """``run-job``: the oldest job leaves the queue and takes effect (see the module docstring)."""
    job, rest = s.executor[0], s.executor[1:]
    s = replace(s, executor=rest)
    if type(job) is CommitJob:
        before = len(s.history.commits)
        s = coordinator.notify_checkpoint_complete(s, job.checkpoint)
        committed = any(c.outcome == "committed" for c in s.history.commits[before:])
        if committed and s.config.table_service != "none":
            # scheduleTableServices(committed): the same Runnable goes on, ahead of every queued job
            s = replace(s, executor=(TableServiceJob(s.config.table_service == "slow"),) + s.executor)
        return s
    if type(job) is RequestJob:
        s, instant = coordinator.handle_instant_request(s, job.key, guard_passed=True)
        w = s.writers[job.task]
        if w.attempt == job.attempt:  # the answer to a failed attempt reaches no one
            s = replace(s, writers=s.writers[:job.task] + (writer.grant(w, instant),) + s.writers[job.task + 1:])
        return s
    return s  # TableServiceJob: scheduleCompaction / clean scheduling; only the thread's time is modelled


def mark_overdue(s: State, position: int) -> State:
    """The slow table-service jobs ahead of ``position`` outlasted a request's RPC timeout."""
    jobs = tuple(replace(j, overdue=True) if i < position and type(j) is TableServiceJob and j.slow else j
                 for i, j in enumerate(s.executor))
    return replace(s, executor=jobs)
