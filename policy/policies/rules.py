"""The decision rules every causal policy shares, written once.

- Slack: ticks left before the deadline minus ticks of work left.
- The safety net: once not on spot with the slack down to two changeovers (one to start
  on-demand, one spent on a spot start that may be preempted) plus the time a failed launch
  request takes, on-demand to the end, so the deadline is never missed.
- The uniform-progress line: where progress would be at a uniform pace, ``ep(t) = K·t/T``
  ("Can't Be Late"); a job is behind it by ``n`` changeovers when its progress is below
  ``ep(t) − n·D``.
- A running spot instance is kept until it is preempted, unless the job is late (slack below
  zero: the deadline is lost wherever it runs): a late job goes on-demand to the end, idle or
  on spot, where no preemption can delay it more.

:class:`Guardrails` applies the last two, with the "on-demand to the end" latch; policies
choose only where it leaves them free.
"""

from __future__ import annotations

from spotwise.policy.policies.base import ON_DEMAND, SPOT0, JobContext, Observation


def slack_ticks(obs: Observation, context: JobContext) -> float:
    """Ticks left before the deadline minus ticks of work left."""
    job = context.job
    return (job.deadline - obs.tick) - (job.work - obs.progress)


def uniform_progress_line(context: JobContext, tick: float) -> float:
    """ep(t): the progress at ``tick`` of a job that works at a uniform pace to its deadline."""
    job = context.job
    return job.work / job.deadline_exact * tick


def behind_the_line(obs: Observation, context: JobContext, changeovers: float) -> bool:
    """Whether the job's progress is more than ``changeovers`` changeovers behind
    :func:`uniform_progress_line`."""
    lag = changeovers * context.job.changeover
    return obs.progress < uniform_progress_line(context, obs.tick) - lag


def safety_margin(changeover: float, wait: float) -> float:
    """The slack at which only on-demand can still surely finish: two changeovers (one to start
    on-demand, one spent on a spot start that may be preempted) plus ``wait``, the time before
    the job can act again (a failed request's ticks; the fleet's wait between asks). Any one
    unit for the three."""
    return 2 * changeover + wait


def slack_exhausted(obs: Observation, context: JobContext) -> bool:
    """The slack is down to the safety margin (a failed request the wait): only on-demand can
    still surely finish."""
    return slack_ticks(obs, context) <= safety_margin(context.job.changeover, context.probe_ticks)


def late(obs: Observation, context: JobContext) -> bool:
    """The deadline is lost: less time is left than work, even with no changeover."""
    return slack_ticks(obs, context) < 0


def safety_net(obs: Observation, context: JobContext) -> bool:
    """True when only on-demand can still surely meet the deadline (not on spot), or the job
    is late (idle or on spot)."""
    return late(obs, context) or (obs.state < SPOT0 and slack_exhausted(obs, context))


class Guardrails:
    """Keep a running spot instance until it is preempted, unless the job is late (or, with
    ``moves``, leave the choice to stay or move to the policy); once the safety net is due,
    on-demand to the end."""

    def __init__(self, context: JobContext, *, moves: bool = False) -> None:
        self.context, self.moves = context, moves
        self.engaged = False
        """Whether the safety net has taken over (for the rest of the job)."""

    def fixed(self, obs: Observation) -> int | None:
        """The instance the rules impose at this tick, or None when the policy may choose."""
        if obs.state >= SPOT0 and not late(obs, self.context):
            return None if self.moves else obs.state
        if self.engaged or safety_net(obs, self.context):
            self.engaged = True
            return ON_DEMAND
        return None
