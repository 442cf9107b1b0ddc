"""The one pass manager: named stages, each a list of passes run to a fixed point.

    stages = [Stage("cleanup", (drop_identities, fold_batchnorm)), Stage("rules", (table,))]
    graph, trace = run_stages(graph, stages, skip={"conv_pad_to_pad_valid"})
    trace.rules()        # {"silu_to_logistic_mul": 16, ...}: rules that fired, all stages

Within a stage the passes run in order, round after round, until a round changes nothing
(at most `max_rounds`, else `PassError` names the stage and the passes still changing). With
`verify`, the verifier runs after every pass that changed the graph and `PassError` names the
stage and the pass that broke it. `skip` names passes (by `__name__`) or single rules of a rule
set (a pass with `rule_names()` and `without(names)`, like a legalize table); an unknown name is an
`UnknownPassError` listing every known one. `mdla_ir.run_passes` and `mdla_legalize.legalize`
both run through here.
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Iterable, Sequence
from dataclasses import dataclass
from typing import Any, Protocol, runtime_checkable

from mdla_ir.errors import IRError, VerifyError
from mdla_ir.graph import Graph
from mdla_ir.passes.rewrite import PassResult
from mdla_ir.verify import problems

Pass = Callable[[Graph], PassResult]
MAX_ROUNDS = 16


class PassError(VerifyError):
    """A pass broke the graph (`problems` lists what the verifier found), or a stage did not
    reach a fixed point; `stage` and `pass_name` say where."""

    def __init__(
        self, message: str, stage: str, pass_name: str | None, found: Sequence[str] = ()
    ) -> None:
        super().__init__(message)
        self.stage, self.pass_name, self.problems = stage, pass_name, list(found)


class UnknownPassError(IRError):
    """`skip` names a pass or rule no stage has; `known` lists the names it could have used."""

    def __init__(self, message: str, unknown: Sequence[str], known: Sequence[str]) -> None:
        super().__init__(message)
        self.unknown, self.known = list(unknown), list(known)


@runtime_checkable
class RuleSet(Protocol):
    """A pass made of named rules, of which the manager can skip single ones."""

    def __call__(self, graph: Graph) -> PassResult: ...
    def rule_names(self) -> tuple[str, ...]: ...
    def without(self, names: Collection[str]) -> Pass: ...


@dataclass(frozen=True, slots=True)
class Stage:
    name: str
    passes: tuple[Pass, ...]


@dataclass(frozen=True, slots=True)
class Fired:
    """`name` (a rule, or a pass without rules) changed the graph `count` times in `stage`."""

    stage: str
    name: str
    count: int


@dataclass(frozen=True, slots=True)
class Trace:
    fired: tuple[Fired, ...] = ()  # rules of rule sets, per stage
    changed: tuple[Fired, ...] = ()  # passes that changed the graph (times), per stage
    rounds: tuple[tuple[str, int], ...] = ()  # rounds each stage took to its fixed point

    def rules(self) -> dict[str, int]:
        """Rule name -> times it fired, summed over the stages."""
        out: dict[str, int] = {}
        for f in self.fired:
            out[f.name] = out.get(f.name, 0) + f.count
        return out


def pass_name(p: Any) -> str:
    return str(getattr(p, "__name__", type(p).__name__))


def known_names(stages: Iterable[Stage]) -> list[str]:
    """Every name `skip` accepts: pass names and the rule names of rule sets, in order."""
    names: list[str] = []
    for stage in stages:
        for p in stage.passes:
            for n in (pass_name(p), *(p.rule_names() if isinstance(p, RuleSet) else ())):
                if n not in names:
                    names.append(n)
    return names


def check_skip(stages: Sequence[Stage], skip: Collection[str]) -> None:
    known = known_names(stages)
    unknown = sorted(set(skip) - set(known))
    if unknown:
        raise UnknownPassError(
            f"unknown rule(s) {', '.join(unknown)}: known rules are {', '.join(known)}",
            unknown,
            known,
        )


def _without(p: Pass, skip: Collection[str]) -> Pass | None:
    if pass_name(p) in skip:
        return None
    if isinstance(p, RuleSet) and set(p.rule_names()) & set(skip):
        return p.without(skip)
    return p


def run_stage(
    graph: Graph, stage: Stage, verify: bool = True, max_rounds: int = MAX_ROUNDS
) -> tuple[Graph, Trace]:
    """`stage`'s passes, round after round, until a round changes nothing."""
    fired: dict[str, int] = {}
    changed_by: dict[str, int] = {}
    for rounds in range(1, max_rounds + 1):
        changed: list[str] = []
        for p in stage.passes:
            result = p(graph)
            name = pass_name(p)
            found = problems(result.graph) if verify and result.changed else []
            if found:
                raise PassError(
                    f"stage `{stage.name}`: pass `{name}` broke graph `{graph.name}`:\n  "
                    + "\n  ".join(found),
                    stage.name,
                    name,
                    found,
                )
            graph = result.graph
            if result.changed:
                changed.append(name)
                changed_by[name] = changed_by.get(name, 0) + 1
                for rule, n in result.fired.items():
                    fired[rule] = fired.get(rule, 0) + n
        if not changed:
            return graph, Trace(
                tuple(Fired(stage.name, r, n) for r, n in fired.items()),
                tuple(Fired(stage.name, p, n) for p, n in changed_by.items()),
                ((stage.name, rounds),),
            )
    raise PassError(
        f"stage `{stage.name}` did not reach a fixed point in {max_rounds} rounds: "
        f"{', '.join(changed)} still changed the graph",
        stage.name,
        None,
    )


def run_stages(
    graph: Graph,
    stages: Sequence[Stage],
    skip: Collection[str] = (),
    verify: bool = True,
    max_rounds: int = MAX_ROUNDS,
) -> tuple[Graph, Trace]:
    """Run `stages` in order, each to its fixed point, without the passes and rules in `skip`."""
    check_skip(stages, skip)
    trace = Trace()
    for stage in stages:
        kept = tuple(q for q in (_without(p, skip) for p in stage.passes) if q is not None)
        graph, t = run_stage(graph, Stage(stage.name, kept), verify, max_rounds)
        trace = Trace(trace.fired + t.fired, trace.changed + t.changed, trace.rounds + t.rounds)
    return graph, trace
