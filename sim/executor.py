"""A single-threaded executor in simulated time: the coordinator's ``instantRequestExecutor`` and its
``meta-event-handle`` (commit) executor.

Hudi's coordinator runs its handlers on single-threaded executors: jobs run one at a time, in the order they
were submitted. A SimPy process models one job: :meth:`Executor.take` returns an event that fires when the
thread takes the job (at once when the thread is idle, else when every job ahead of it is done); the job
runs in the caller's process (the model's handler, then a timeout for the time it takes) and hands the
thread on with :meth:`Executor.give`. A caller that gives up before the thread took its job (a crash while
queued) also calls ``give``, which takes the job out of the queue.

Only the grant is an event: the hand-over is not (the next job's grant is scheduled when the previous job
ends, at the same simulated time). ``simpy.Resource`` does the same with a request event *and* a release
event per job, and several Python calls around each; this is the part of it the simulation needs.
"""

from __future__ import annotations

from collections import deque

from simpy import Environment
from simpy.events import Event, Timeout


class Executor:
    """One thread, a FIFO queue of jobs (see the module docstring)."""

    __slots__ = ("env", "holder", "queue")

    def __init__(self, env: Environment):
        self.env = env
        self.holder: Event | None = None  # the grant of the job the thread is running
        self.queue: deque[Event] = deque()  # grants of the jobs waiting, oldest first

    def take(self) -> Event:
        """An event that fires when the thread takes the caller's job (FIFO)."""
        if self.holder is None:
            self.holder = grant = Timeout(self.env, 0)  # (an event that fires now: Event + succeed in one call)
        else:
            grant = Event(self.env)
            self.queue.append(grant)
        return grant

    def give(self, grant: Event) -> None:
        """The job of ``grant`` is done (the next job is taken now) or was given up while queued."""
        if self.holder is grant:
            if self.queue:
                self.holder = nxt = self.queue.popleft()
                nxt.succeed()
            else:
                self.holder = None
        else:
            self.queue.remove(grant)

    @property
    def busy(self) -> bool:
        return self.holder is not None

    def __len__(self) -> int:
        """Jobs waiting (the one running excluded)."""
        return len(self.queue)
