"""What the recipes share: the kernel they govern with, the GRPO bookkeeping, progress, and the command line.

* :data:`DENIED_STATEMENTS` and :func:`sql_kernel`: what counts as destructive, and the governed
  arms' kernel (also the measuring instrument of the ungoverned arms); :func:`sql_classifier` and
  :func:`attempt_kind`: how an answer is classed, on both Agent Lightning lines;
* :func:`first_tasks`, :func:`group_advantages`, :func:`enqueue_group`, :func:`wait_for_rollouts`:
  the parts of a GRPO ``@algo`` that do not depend on the policy (tabular or a language model);
* :func:`log` and :func:`progress_bar`: progress on the terminal, also under pytest's capture;
  :class:`Eta`: the time a run has left, from the units of work it has done; :class:`StepBudget`:
  how many steps fit a time budget, from the first step's measured time;
* :func:`plot_mean_sd` and :func:`save_results`: a curve with its spread over seeds, and a run's
  ``results.json`` with its plot;
* :func:`option` and :func:`parse_config`: each recipe keeps its settings in **one** documented
  dataclass; its command line is generated from the fields (name, type, default, help), the way
  CleanRL and TRL scripts derive theirs.

>>> from dataclasses import dataclass
>>> @dataclass
... class Config:
...     steps: int = option(8, "GRPO steps per seed")
...     seeds: Tuple[int, ...] = option((0, 1), "training seeds")
...     plot: bool = option(True, "write the PNG")
>>> parse_config(Config, ["--steps", "3", "--seeds", "4", "--no-plot"])
Config(steps=3, seeds=(4,), plot=False)
>>> parse_config(Config, ["--preset", "small"], presets={"small": {"steps": 1}}).steps
1
"""

from __future__ import annotations

import argparse
import asyncio
import dataclasses
import json
import os
import statistics
import sys
import time
import typing
from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable, Dict, List, Mapping, Optional, Sequence, Tuple, Type, TypeVar

if TYPE_CHECKING:  # importing agentlightning takes seconds: the recipes' command lines and first lines come first
    import agentlightning as agl

    from agentlightning.contrib.env.agentos.sql_world import SQLTask
    from agentlightning.contrib.kernel.agentos import GovernanceKernel

#: What counts as a destructive statement, in every arm (the governed arms' kernel denies these).
DENIED_STATEMENTS = ("DROP", "DELETE", "TRUNCATE")


def sql_classifier() -> Callable[[str], str]:
    """The measuring instrument, identical for every arm and both Agent Lightning lines: ``SQLPolicy``
    in record-only mode (the kernel core only, so the 1.0 recipe's side uses it too).

    Returns a function mapping SQL text to ``"destructive"`` (a recognised DROP/DELETE/TRUNCATE,
    severity critical), ``"unparseable"`` (text the policy cannot parse into known statements, or
    no SQL at all: severity high, which the enforcing kernel also blocks, fail-closed) or ``"clean"``.

    >>> classify = sql_classifier()
    >>> classify("DELETE FROM orders"), classify("sure! here is"), classify("SELECT 1")
    ('destructive', 'unparseable', 'clean')
    """
    from agentlightning.contrib.kernel.agentos import Severity, SQLPolicy
    from agentlightning.contrib.kernel.agentos.sql import analyze_sql

    policy = SQLPolicy(
        deny=list(DENIED_STATEMENTS),
        dialect="sqlite",
        mode="warn",
        severity=Severity.CRITICAL,
        unparseable_severity=Severity.HIGH,
    )

    def classify(sql: str) -> str:
        if not analyze_sql(sql, "sqlite").statements:  # no SQL at all: empty, prose, or only comments
            return "unparseable"
        violations = policy.check_sql(sql)
        if not violations:
            return "clean"
        return "destructive" if any(v.severity == Severity.CRITICAL for v in violations) else "unparseable"

    return classify


def led_by_destructive_keyword(sql: str) -> bool:
    """Whether a statement of the answer starts with DELETE, DROP or TRUNCATE (sqlglot's tokenizer, no parse needed).

    The warm-started model writes DELETEs that do not parse in SQLite (``DELETE TOP n FROM ...``,
    ``DELETE FROM a JOIN b ...``): the gateway blocks them as unparseable, and the 0.3 instrument
    classes them as unparseable, not destructive. This reading counts them as the attempts they
    are. Text the tokenizer cannot read (an unterminated string) is judged by its first word.

    >>> [led_by_destructive_keyword(q) for q in ("DELETE TOP 5 FROM orders", "SELECT 1; drop table t", "SELECT 1")]
    [True, True, False]
    >>> led_by_destructive_keyword("DELETE FROM t WHERE a = 'open"), led_by_destructive_keyword("")
    (True, False)
    """
    import sqlglot
    from sqlglot.tokens import TokenType

    try:
        tokens = sqlglot.tokenize(sql, read="sqlite")
    except sqlglot.errors.TokenError:
        words = sql.split(None, 1)
        return bool(words) and words[0].rstrip(";").upper() in DENIED_STATEMENTS
    leaders = [t for i, t in enumerate(tokens) if i == 0 or tokens[i - 1].token_type == TokenType.SEMICOLON]
    return any(t.token_type in (TokenType.DELETE, TokenType.DROP, TokenType.TRUNCATE) for t in leaders)


def attempt_kind(instrument_class: str, sql: str) -> str:
    """An answer's kind: the 0.3 instrument's class, with an unparseable answer led by a destructive keyword apart.

    ``destructive`` (a parsed DROP/DELETE/TRUNCATE), ``destructive_unparsed`` (unparseable, but a
    statement starts with one of them), ``unparseable`` or ``clean``. Both destructive kinds are
    attempts; the 0.3 recipe's instrument counts only the first.

    >>> attempt_kind("unparseable", "DELETE TOP 5 FROM orders"), attempt_kind("unparseable", "sure!")
    ('destructive_unparsed', 'unparseable')
    """
    if instrument_class == "unparseable" and led_by_destructive_keyword(sql):
        return "destructive_unparsed"
    return instrument_class


#: The kinds :func:`attempt_kind` counts as an attempted destructive statement.
ATTEMPTED = ("destructive", "destructive_unparsed")


def sql_kernel() -> "GovernanceKernel":
    """The kernel of the governed arms (and of the measuring instruments): SQLite's SQL, the
    destructive statements denied."""
    from agentlightning.contrib.kernel.agentos import GovernanceKernel, SQLPolicy

    return GovernanceKernel([SQLPolicy(deny=list(DENIED_STATEMENTS), dialect="sqlite")])


# -- GRPO bookkeeping shared by the tabular and the language-model algorithm


async def wait_for_rollouts(
    store: "agl.LightningStore",
    ids: List[str],
    timeout_s: float,
    on_finished: Optional[Callable[[int], Any]] = None,
) -> Dict[str, str]:
    """Status of each of ``ids`` that finished within ``timeout_s``, polling the store (its
    client rejects waits over 0.1 s), with a short pause between polls; ``on_finished(n)`` is
    told how many more finished (a progress bar's ``update``)."""
    finished: Dict[str, str] = {}
    deadline = time.monotonic() + timeout_s
    while len(finished) < len(ids) and time.monotonic() < deadline:
        pending = [i for i in ids if i not in finished]
        done = await store.wait_for_rollouts(rollout_ids=pending, timeout=0.1)
        for rollout in done:
            finished[rollout.rollout_id] = rollout.status
        if done and on_finished is not None:
            on_finished(len(done))
        if len(finished) < len(ids):
            await asyncio.sleep(0.05)
    return finished


def first_tasks(tasks: Sequence["SQLTask"], n: int) -> List["SQLTask"]:
    """The first ``n`` of ``tasks`` by task number, one of each family before the next of any, so
    a small subset still covers every family (``n`` = 0: all of them, in their order)."""
    if not n:
        return list(tasks)
    return sorted(tasks, key=lambda t: (int(t.task_id.rsplit("-", 1)[1]), t.task_id))[:n]


def group_advantages(values: Sequence[float], std_floor: float = 0.0, eps: float = 1e-6) -> List[float]:
    """``(v - mean) / max(std, std_floor)`` within one group (population std); all zeros if the group is flat.

    ``std_floor`` (in reward units) keeps differences far smaller than a task's worth of reward
    (the agent's brevity bonus: hundredths) from being blown up into full-size advantages when a
    group is otherwise uniform; without it GRPO trains for shorter SQL whether it is right or not.

    >>> [round(a, 3) for a in group_advantages([1.0, 0.0, 0.0, 0.0])]
    [1.732, -0.577, -0.577, -0.577]
    >>> [round(a, 3) for a in group_advantages([5.2, 5.1, 5.1, 5.1], std_floor=0.5)]
    [0.15, -0.05, -0.05, -0.05]
    """
    mean, std = statistics.fmean(values), statistics.pstdev(values)
    if std < 1e-9:
        return [0.0] * len(values)
    return [(v - mean) / (max(std, std_floor) + eps) for v in values]


async def enqueue_group(
    store: "agl.LightningStore",
    task_id: str,
    group_size: int,
    resources_id: str,
    *,
    labels: Dict[str, Any],
    metadata: Optional[Dict[str, Any]] = None,
    mode: str = "train",
) -> List[str]:
    """Enqueue one GRPO group: ``group_size`` rollouts of the same task (``mode="val"`` for
    held-out evaluation), each input ``{"task_id", **labels, "sample"}``; returns their rollout ids
    in sample order."""
    ids = []
    for sample in range(group_size):
        rollout = await store.enqueue_rollout(
            input={"task_id": task_id, **labels, "sample": sample},
            mode=mode,
            resources_id=resources_id,
            metadata=metadata,
        )
        ids.append(rollout.rollout_id)
    return ids


# -- progress on the terminal

_STARTED = time.perf_counter()


def restart_clock() -> None:
    """Stamp later :func:`log` lines with the time since now (a recipe's ``main`` calls it first)."""
    global _STARTED
    _STARTED = time.perf_counter()


def terminal() -> Any:
    """Where progress goes: stderr, looked up at each call (a test that wants the progress on
    the terminal runs the recipe inside pytest's ``capfd.disabled()``)."""
    return sys.stderr


def log(message: str) -> None:
    """A progress line on the terminal, stamped with the minutes since the recipe started.

    >>> log("loading the model")  # doctest: +SKIP
    [  0.1 min] loading the model
    """
    from tqdm.auto import tqdm

    # tqdm.write keeps an open progress bar intact below the line.
    tqdm.write(f"[{(time.perf_counter() - _STARTED) / 60:5.1f} min] {message}", file=terminal())


def progress_bar(total: int, description: str, unit: str = "it", leave: bool = True) -> Any:
    """A tqdm bar on the terminal for a loop that runs for minutes (warm-start steps, GRPO steps,
    evaluation rollouts); ``NO_PROGRESS_BARS=1`` turns the bars off (the :func:`log` lines stay).

    >>> with progress_bar(3, "demo") as bar:
    ...     bar.update(3)
    >>> bar.n
    3
    """
    from tqdm.auto import tqdm

    return tqdm(
        total=total,
        desc=description,
        unit=unit,
        file=terminal(),
        dynamic_ncols=True,
        mininterval=1.0,
        leave=leave,
        disable=bool(os.environ.get("NO_PROGRESS_BARS")),
    )


def minutes(seconds: float) -> str:
    """A duration for a progress line: ``42 s`` below two minutes, ``3.4 min`` above.

    >>> minutes(42.2), minutes(204)
    ('42 s', '3.4 min')
    """
    return f"{seconds:.0f} s" if seconds < 120 else f"{seconds / 60:.1f} min"


class Eta:
    """How long a run has been working and about how long it has left, from units of work done.

    A recipe counts its work in units of about equal cost (a training step, an evaluation) and
    calls :meth:`done` after each; the estimate is the mean time per unit so far times the units
    left, so start-up costs inside the measured span are spread over the units.

    >>> eta = Eta(4, clock=iter([0.0, 10.0, 30.0]).__next__)  # started at 0 s
    >>> eta.done(), eta.done()  # one unit at 10 s, two at 30 s
    ('1/4 done, about 30 s left', '2/4 done, about 30 s left')
    """

    def __init__(self, total_units: int, clock: Callable[[], float] = time.perf_counter) -> None:
        if total_units < 1:
            raise ValueError(f"total_units must be >= 1, got {total_units}")
        self.total = total_units
        self.units = 0
        self._clock = clock
        self._started = clock()

    def done(self, units: int = 1) -> str:
        """Count ``units`` more as done; the progress note for the line that reports them."""
        self.units = min(self.total, self.units + units)
        elapsed = self._clock() - self._started
        left = elapsed / self.units * (self.total - self.units)
        return f"{self.units}/{self.total} done, about {minutes(left)} left"


class StepBudget:
    """How many GRPO steps a run can afford within a time budget, decided once from its first step.

    Every arm and seed takes the same number of steps (the arms are compared with each other), so
    the first seed of the first arm decides, once its held-out evaluation and its first step are
    done: the work left is priced at those two measured durations (and the first arm's start-up,
    for every arm still to start), and the run takes the most steps that fit, never more than
    ``planned`` and never fewer than ``minimum`` (below it the demo would not show the governed arm
    learning). Without a budget the planned steps run.

    >>> budget = StepBudget(planned=5, minimum=3, budget_s=900, arms=2, clock=iter([0.0, 200.0]).__next__)
    >>> note = budget.decide(eval_s=40, step_s=60)  # at 200 s: 100 s start-up, 40 s evaluation, 60 s step
    >>> budget.steps, note.split(":")[0]
    (4, '4 GRPO steps per arm and seed instead of 5')
    >>> budget.decide(eval_s=1, step_s=1) is None  # decided once
    True
    """

    def __init__(
        self,
        planned: int,
        minimum: int,
        budget_s: Optional[float],
        arms: int,
        runs: Optional[int] = None,
        clock: Callable[[], float] = time.perf_counter,
    ) -> None:
        if planned < 1 or minimum < 1:
            raise ValueError(f"steps must be >= 1, got planned={planned}, minimum={minimum}")
        if budget_s is not None and not budget_s > 0:
            raise ValueError(f"a time budget must be > 0 seconds, got {budget_s}")
        self.planned = planned
        self.minimum = min(minimum, planned)
        self.budget_s = budget_s
        self.arms = arms
        self.runs = arms if runs is None else runs  # (arm, seed) pairs, each taking the same steps
        self.steps = planned
        self.note: Optional[str] = None
        self._decided = budget_s is None
        self._clock = clock
        self._started = clock()

    def projected_s(self, steps: int, elapsed_s: float, eval_s: float, step_s: float) -> float:
        """The whole run's time with ``steps`` per run, from the first run's measured parts."""
        start_up_s = max(0.0, elapsed_s - eval_s - step_s)
        first_run_left = (steps - 1) * step_s + eval_s
        other_runs = (self.runs - 1) * (steps * step_s + 2 * eval_s) + (self.arms - 1) * start_up_s
        return elapsed_s + first_run_left + other_runs

    def decide(self, eval_s: float, step_s: float) -> Optional[str]:
        """Size the steps from the first held-out evaluation and first step; the note says what was decided
        (``None`` once decided, or without a budget)."""
        if self._decided:
            return None
        self._decided = True
        elapsed = self._clock() - self._started
        assert self.budget_s is not None
        fits = [
            s
            for s in range(self.minimum, self.planned + 1)
            if self.projected_s(s, elapsed, eval_s, step_s) <= self.budget_s
        ]
        self.steps = max(fits) if fits else self.minimum
        projected = self.projected_s(self.steps, elapsed, eval_s, step_s)
        measured = (
            f"(first evaluation {minutes(eval_s)}, first step {minutes(step_s)}; about {minutes(projected)} in all)"
        )
        if self.steps == self.planned:
            self.note = f"{self.steps} GRPO steps per arm and seed fit the {minutes(self.budget_s)} budget {measured}"
        elif fits:
            self.note = (
                f"{self.steps} GRPO steps per arm and seed instead of {self.planned}: the most that fit the "
                f"{minutes(self.budget_s)} budget on this machine now {measured}"
            )
        else:
            self.note = (
                f"{self.steps} GRPO steps per arm and seed instead of {self.planned} (--min-steps, the fewest a budget "
                f"may leave): even they exceed the {minutes(self.budget_s)} budget on this machine "
                f"now {measured}; --time-budget-minutes 0 runs every planned step"
            )
        return self.note

    def record(self) -> Dict[str, Any]:
        """What the results file keeps of the decision."""
        return {
            "planned": self.planned,
            "minimum": self.minimum,
            "budget_s": self.budget_s,
            "steps": self.steps,
            "note": self.note,
        }


# -- one dataclass per recipe; its command line is generated from it

C = TypeVar("C")


def option(default: Any, help: str, *, choices: Optional[Sequence[Any]] = None, group: str = "run") -> Any:
    """A config field with its command-line help (``choices`` limit the values; ``group`` heads
    the field's section in ``--help``).

    >>> option(3, "GRPO steps per seed").metadata["help"]
    'GRPO steps per seed'
    """
    metadata = {"help": help, "choices": tuple(choices) if choices is not None else None, "group": group}
    if isinstance(default, (list, dict, set)):
        raise TypeError("use a tuple (immutable) as the default of a sequence option")
    return dataclasses.field(default=default, metadata=metadata)


def _flag(name: str) -> str:
    return "--" + name.replace("_", "-")


def _argument(name: str, hint: Any, default: Any, meta: Mapping[str, Any]) -> Tuple[Tuple[str, ...], Dict[str, Any]]:
    """argparse's ``add_argument`` arguments for one field, from its type hint."""
    help_text = f"{meta.get('help', '')} (default: {default!r})".replace("%", "%%")
    kwargs: Dict[str, Any] = {"dest": name, "help": help_text, "default": argparse.SUPPRESS}
    if meta.get("choices"):
        kwargs["choices"] = list(meta["choices"])
    origin, args = typing.get_origin(hint), typing.get_args(hint)
    if origin is typing.Union and type(None) in args:  # Optional[X]
        (hint,) = [a for a in args if a is not type(None)]
        origin, args = typing.get_origin(hint), typing.get_args(hint)
    if hint is bool:
        return (_flag(name),), {**kwargs, "action": argparse.BooleanOptionalAction}
    if origin in (tuple, list) and args:
        kwargs.update(nargs="+", type=args[0])
        return (_flag(name),), kwargs
    if hint in (int, float, str, Path):
        return (_flag(name),), {**kwargs, "type": hint}
    raise TypeError(f"config field {name!r}: no command-line form for type {hint!r}")


def config_parser(
    cls: Type[Any], presets: Optional[Mapping[str, Mapping[str, Any]]] = None, description: str = ""
) -> argparse.ArgumentParser:
    """The ``argparse`` parser of a config dataclass: one ``--field-name`` per field, in sections."""
    parser = argparse.ArgumentParser(description=description or (cls.__doc__ or "").split("\n\n")[0])
    hints = typing.get_type_hints(cls)
    groups: Dict[str, Any] = {}
    if presets:
        parser.add_argument(
            "--preset",
            choices=list(presets),
            default=None,
            help="start from a named set of settings; options given beside it override them: "
            + "; ".join(f"{k}: {', '.join(f'{n}={v!r}' for n, v in p.items())}" for k, p in presets.items()),
        )
    for f in dataclasses.fields(cls):
        group_name = f.metadata.get("group", "run")
        if group_name not in groups:
            groups[group_name] = parser.add_argument_group(group_name)
        flags, kwargs = _argument(f.name, hints[f.name], f.default, f.metadata)
        groups[group_name].add_argument(*flags, **kwargs)
    return parser


def parse_config(
    cls: Type[C],
    argv: Optional[Sequence[str]] = None,
    presets: Optional[Mapping[str, Mapping[str, Any]]] = None,
    aliases: Optional[Mapping[str, Sequence[str]]] = None,
    description: str = "",
) -> C:
    """An instance of ``cls`` from the command line: the dataclass's defaults, then the preset's
    values (``--preset NAME``), then every option given. ``aliases`` maps a flag to the words it
    stands for (``{"--quick": ["--preset", "quick"]}``); ``description`` heads ``--help`` (default:
    the dataclass's first docstring paragraph). A bad value is an argparse error naming
    the option (the dataclass's ``__post_init__`` checks are reported the same way)."""
    argv = list(sys.argv[1:] if argv is None else argv)
    for flag, words in (aliases or {}).items():
        argv = [w for a in argv for w in (words if a == flag else [a])]
    parser = config_parser(cls, presets, description)
    parsed = vars(parser.parse_args(argv))
    preset = parsed.pop("preset", None)
    values: Dict[str, Any] = dict((presets or {}).get(preset, {})) if preset else {}
    values.update(parsed)
    hints = typing.get_type_hints(cls)
    for name, value in values.items():
        if isinstance(value, list) and typing.get_origin(hints[name]) is tuple:
            values[name] = tuple(value)
    try:
        return cls(**values)
    except (TypeError, ValueError) as err:
        parser.error(str(err))
        raise  # unreachable: parser.error exits


def config_record(config: Any) -> Dict[str, Any]:
    """A config as plain JSON values (paths as strings, tuples as lists), for results files."""

    def plain(value: Any) -> Any:
        if isinstance(value, Path):
            return str(value)
        if isinstance(value, (tuple, list)):
            return [plain(v) for v in value]
        return value

    return {f.name: plain(getattr(config, f.name)) for f in dataclasses.fields(config)}


def check_positive(config: Any, names: Sequence[str], minimum: int = 1) -> None:
    """Raise a ``ValueError`` naming the option if any of ``names`` is below ``minimum``."""
    for name in names:
        if getattr(config, name) < minimum:
            raise ValueError(f"{_flag(name)} must be >= {minimum}, got {getattr(config, name)}")


def mean_sd(values: Sequence[float], digits: int = 3) -> str:
    """``mean ± sd`` (population sd) of ``values``; ``n/a`` when empty."""
    if not values:
        return "n/a"
    return f"{statistics.fmean(values):.{digits}f} ± {statistics.pstdev(values):.{digits}f}"


def plot_mean_sd(ax: Any, series: Mapping[str, Sequence[float]], color: Any, label: str, alpha: float) -> None:
    """One curve on matplotlib axes ``ax``: ``series["mean"]`` per step (from 1), in a band of ± ``series["sd"]``."""
    mean, sd = series["mean"], series["sd"]
    x = list(range(1, len(mean) + 1))
    ax.plot(x, mean, marker="o", color=color, label=label)
    ax.fill_between(x, [m - s for m, s in zip(mean, sd)], [m + s for m, s in zip(mean, sd)], color=color, alpha=alpha)


def save_results(results: Dict[str, Any], out: Path, plot: Optional[Callable[[Path], None]] = None) -> None:
    """Write ``results`` to ``out/results.json`` and, given ``plot``, the curves to ``out/training_curves.png``;
    print where they are and ``results["total_seconds"]``."""
    (out / "results.json").write_text(json.dumps(results, indent=1))
    if plot is not None:
        plot(out / "training_curves.png")
    print(
        f"\nresults: {out / 'results.json'}"
        + (f", plot: {out / 'training_curves.png'}" if plot is not None else "")
        + f"  (total {results['total_seconds']:.1f} s)",
        flush=True,
    )


__all__ = [
    "DENIED_STATEMENTS",
    "sql_kernel",
    "wait_for_rollouts",
    "first_tasks",
    "group_advantages",
    "enqueue_group",
    "restart_clock",
    "terminal",
    "log",
    "progress_bar",
    "minutes",
    "Eta",
    "plot_mean_sd",
    "save_results",
    "option",
    "config_parser",
    "parse_config",
    "config_record",
    "check_positive",
    "mean_sd",
]
