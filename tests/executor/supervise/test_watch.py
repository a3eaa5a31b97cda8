"""The watchers of one instance: what each does to a command whose training loop has ended."""

from __future__ import annotations

from typing import Any

from spotwise.executor.launchers.base import Placement
from spotwise.executor.supervise.watch import Drill, Every, Stall, Steps, Watch, duration


class Quiet:
    """An instance whose command has stepped, announced itself and then gone quiet for a
    minute (no heartbeat): hung, or past its training loop in a long tail."""

    def __init__(self, *events: dict[str, Any]) -> None:
        self.placement = Placement(market="spot", pool="z0", price=1.0)
        self.events = [{"event": "fresh", "step": 0}, *events]
        self.notices = self.kills = 0

    def quiet_s(self) -> float:
        return 60.0

    def steps_taken(self) -> int:
        return 5

    def notice(self) -> None:
        self.notices += 1

    def kill(self) -> None:
        self.kills += 1


TRAINED = {"event": "trained", "step": 5, "epoch": 1}


def watch_of(instance: Quiet) -> Watch:
    return Watch(instance=instance, launched_at=0.0, started_at=0.0)  # type: ignore[arg-type]


def test_a_quiet_command_is_killed_as_hung_unless_its_training_loop_has_ended() -> None:
    hung, tail = Quiet(), Quiet(TRAINED)
    stall = Stall(stall_s=10.0)
    hung_watch, tail_watch = watch_of(hung), watch_of(tail)
    stall.tick(hung_watch, now=70.0)
    stall.tick(tail_watch, now=70.0)
    assert hung.kills == 1 and hung_watch.stalled
    assert tail.kills == 0 and not tail_watch.stalled


def test_no_drill_and_no_move_once_the_training_loop_has_ended() -> None:
    training, tail = Quiet(), Quiet(TRAINED)
    drill = Drill(after_s=1.0, every=True)
    assert drill.due(watch_of(training), now=0.0) is False  # its clock starts at the step
    moves: list[Watch] = []

    def move(watch: Watch) -> bool:
        moves.append(watch)
        return True

    every = Every(1.0, 0.0, move)
    for instance in (training, tail):
        watch = watch_of(instance)
        watch.stepping_at = 0.0
        assert drill.due(watch, now=5.0) is (instance is training)
        every.tick(watch, now=5.0)
    assert [w.instance for w in moves] == [training]
    assert drill.too_late  # said at the end: no drill reached the job before its loop ended


def test_the_trained_event_is_seen_when_it_comes_after_others() -> None:
    instance = Quiet()
    watch = watch_of(instance)
    assert not watch.trained
    instance.events += [{"event": "loss", "value": 0.5}, TRAINED]
    assert watch.trained


class Stepping(Quiet):
    """An instance whose guard started at step 100 of 1,100 and whose heartbeat counts the
    steps it has taken since."""

    def __init__(self) -> None:
        super().__init__()
        self.events = [{"event": "resumed", "step": 100, "total_steps": 1100}]
        self.taken = 0

    def steps_taken(self) -> int:
        return self.taken


def test_the_steps_taken_their_share_and_the_time_left_are_said_every_so_often() -> None:
    said: list[str] = []
    steps = Steps(every_s=30.0, progress=said.append)
    instance = Stepping()
    watch = watch_of(instance)
    steps.tick(watch, now=0.0)  # its pace is measured from here
    instance.taken = 100
    steps.tick(watch, now=10.0)  # not yet due
    instance.taken = 300
    steps.tick(watch, now=30.0)
    assert said == ["step 400 of 1,100 (36%), 10 steps/s, about 70 s left"]
    instance.taken = 800
    steps.tick(watch, now=80.0)
    assert said[-1] == "step 900 of 1,100 (82%), 10 steps/s, about 20 s left"
    instance.events.append(TRAINED)
    steps.tick(watch, now=200.0)  # its loop has ended: nothing more to say
    assert len(said) == 2


class Remote(Quiet):
    """An instance on a cloud: its heartbeat is not read here, only its events."""

    steps_taken = None  # type: ignore[assignment]


def test_a_command_that_says_its_steps_only_in_events_gets_its_step_said() -> None:
    said: list[str] = []
    steps = Steps(every_s=1.0, progress=said.append)
    instance = Remote()
    watch = watch_of(instance)
    steps.tick(watch, now=0.0)
    instance.events.append({"event": "report", "step": 50, "value": 0.1})
    steps.tick(watch, now=5.0)
    assert said == ["step 50, 10 steps/s"]


def test_times_left_read_as_a_person_reads_them() -> None:
    assert [duration(s) for s in (45, 720, 12_600)] == ["45 s", "12 min", "3.5 h"]
