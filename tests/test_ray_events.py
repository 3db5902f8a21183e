"""The Ray sweep's task events (where each unit runs, its phases) on a fake Ray as strict as the real one where it
counts: a call to an actor that has not started waits in its caller and dies with it (Ray 2.60 here: three tasks
that each called an actor still starting, then were killed; none of their calls reached it)."""

import threading
from types import SimpleNamespace

import pytest

from compilebench.run.dispatch import Target, Unit

ray_queue = pytest.importorskip("ray.util.queue", reason="pip install compilebench[ray]")


class Seen:
    def __init__(self):
        self.log = []

    def started(self, slot, unit):
        self.log.append(("started", slot))

    def phase(self, slot, phase):
        self.log.append((phase, slot))

    def finished(self, slot):
        self.log.append(("finished", slot))

    def note(self, message):
        self.log.append(("note", message))


class Method:
    def __init__(self, call):
        self.call = call

    def remote(self, *args):
        return self.call(*args)


class QueueActor:
    """ray.util.queue's actor as Ray runs one: it starts when Ray gets to it, here as late as Ray may (when a caller
    first waits on one of its calls); until then each call is held by the task that made it, and lost with it."""

    def __init__(self):
        self.cond, self.items, self.started, self.killed, self.reading = FakeRay.cond, [], False, False, False
        # where the relay is behind (LaggingRay): it reads nothing until the driver, told of a task's end, calls
        # the actor again
        self.behind, self.end_told = FakeRay.relay_behind, False
        self.qsize = Method(lambda: ("actor call", len(self.items)))
        self.put_nowait = Method(self._put)

    def _put(self, item):
        with self.cond:
            if not self.started:
                return  # held by its caller, which dies next (FakeRay.task): it never arrives
            self.items.append(item)
            self.behind = self.behind and not self.end_told
            self.cond.notify_all()


class FakeQueue:
    def __init__(self, actor_options=None):
        self.actor = QueueActor()
        FakeRay.queues.append(self)

    def get(self, block=True):
        a = self.actor
        with a.cond:
            a.reading = True
            a.cond.notify_all()
            a.cond.wait_for(lambda: (a.items and not a.behind) or a.killed)
            a.reading = False
            if a.killed:
                raise RuntimeError("the queue actor was killed")
            return a.items.pop(0)


class FakeRay:
    cond = threading.Condition()
    queues: list = []
    relay_behind = False

    class exceptions:
        class RayError(Exception):
            pass

    class WorkerCrashedError(exceptions.RayError):
        pass

    @classmethod
    def remote(cls, fn):
        from compilebench.run import ray_cluster

        assert fn is ray_cluster.run_unit
        return SimpleNamespace(options=lambda **kw: Method(cls.task))

    @staticmethod
    def task(job, timeout_s, threads, unit_id, events):
        # the task says where it runs, as run_unit does first, then its worker's parent (the Ray worker) is killed
        events.actor.put_nowait.remote((unit_id, "10.0.0.9 CPU task 77", "start"))
        return ("lost task", unit_id)

    @classmethod
    def get(cls, ref):
        if ref[0] == "actor call":
            queue = cls.queues[-1].actor
            with cls.cond:
                queue.started = True
            return ref[1]
        raise cls.WorkerCrashedError("The worker died unexpectedly while executing this task.")

    @classmethod
    def wait(cls, refs, num_returns=1, timeout=None):
        # the task lived on for seconds after it told: its events reached the driver's relay before its end did
        a = cls.queues[-1].actor
        with cls.cond:
            cls.cond.wait_for(lambda: not a.items and a.reading)
        return refs[:num_returns], refs[num_returns:]

    @classmethod
    def kill(cls, actor):
        with cls.cond:
            actor.killed = True
            cls.cond.notify_all()


class LaggingRay(FakeRay):
    """The worst order Ray may give on a loaded machine: the task's death reaches the driver while its start event
    still waits in the queue, unread by the relay."""

    @classmethod
    def wait(cls, refs, num_returns=1, timeout=None):
        with cls.cond:
            cls.queues[-1].actor.end_told = True
        return refs[:num_returns], refs[num_returns:]


@pytest.mark.parametrize("ray", [FakeRay, LaggingRay], ids=["relay-ahead", "relay-behind"])
def test_a_lost_ray_task_names_where_it_ran_though_the_event_queue_started_after_it(monkeypatch, ray):
    """Whichever reaches the driver first, the task's death or its start event: a lost task's end waits for the
    relay to pass on what the queue held (a marker put after it), so it still says where the task ran (a loaded
    run of the slow tests once read 'Ray task lost: WorkerCrashedError' with no place)."""
    from compilebench.run import ray_cluster

    monkeypatch.setattr(ray_queue, "Queue", FakeQueue)
    monkeypatch.setattr(FakeRay, "relay_behind", ray is LaggingRay)
    dispatcher = object.__new__(ray_cluster.RayDispatcher)  # its cluster checks are test_ray's
    dispatcher.ray, dispatcher.timeout_s, dispatcher.cpus, dispatcher.gpu = ray, None, 2, False
    job = SimpleNamespace(to_dict=dict, repeat=1, compile_cache="cold", cases=("a case",))
    delivered, seen = [], Seen()
    unit = Unit(Target("CPU", "x", {}), ())
    dispatcher.run([unit], lambda u: SimpleNamespace(job=job), seen, lambda u, j, results: delivered.extend(results))
    assert [r.status for r in delivered] == ["crashed"]
    assert delivered[0].message == ("Ray task lost on 10.0.0.9 CPU task 77: WorkerCrashedError: The worker died "
                                    "unexpectedly while executing this task.")
    assert seen.log == [("started", "10.0.0.9 CPU task 77"), ("finished", "10.0.0.9 CPU task 77")]


def test_a_task_event_that_arrives_after_its_end_never_shows_a_finished_case_as_running():
    from compilebench.run.ray_cluster import _Running

    seen = Seen()
    unit = Unit(Target("CPU", "x", {}), ())
    running = _Running([unit, unit], seen)
    running.event(0, "10.0.0.1 GPU 0", "start")
    running.event(0, "10.0.0.1 GPU 0", "compile")
    assert running.end(0) == "10.0.0.1 GPU 0"  # a lost task's result names where it ran
    running.event(0, "10.0.0.1 GPU 0", None)  # its own end, relayed late
    assert running.end(1) is None  # ended before its start event came
    running.event(1, "10.0.0.2 GPU 1", "start")
    assert seen.log == [("started", "10.0.0.1 GPU 0"), ("compile", "10.0.0.1 GPU 0"), ("finished", "10.0.0.1 GPU 0")]
