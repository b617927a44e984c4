"""``kind: Policy`` documents (docs/manifests.md, "Policy"): their model, and their rules compiled once.

A Policy document is validated like every manifest (``FILE:LINE:COL: PATH: message``), then each
rule's CEL ``condition`` is parsed by cel-python (``celpy``) and checked before any request:

- a syntax error, at the expression's line;
- a variable other than ``op``, ``before``, ``after`` and ``plan`` (and the ones a macro binds:
  ``op.changes.exists(c, ...)``), or an unknown function;
- a member selection that names no field: ``before``/``after`` against the manifest models of the
  kinds the rule matches (all kinds when it names none), ``op`` and ``plan`` against their fixed shape.

A ``fields`` glob that can never match a manifest field of the matched kinds is refused too.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Annotated, Any, Literal

from pydantic import MISSING, AfterValidator, Field, ValidationError

from reconciler.errors import PlanError
from reconciler.manifests import policy_fields as F
from reconciler.manifests.fields import Doc, NonEmpty, Required, Strict, _unique, problem
from reconciler.manifests.messages import Ctx, report, show, suggest
from reconciler.manifests.yamlload import Problem, YamlDocument
from reconciler.model import SPACED_KINDS

RULE_ACTIONS = ("create", "update", "delete", "replace")
VARIABLES = ("op", "before", "after", "plan")
#: ``op`` as CEL sees it; ``changes`` items are {path, before, after}.
OP_TREE: F.FieldTree = {"action": F.LEAF, "kind": F.LEAF, "name": F.LEAF, "space": F.LEAF, "address": F.LEAF,
                        "changes": {F.LIST: {"path": F.LEAF, "before": F.ANY, "after": F.ANY}}}
#: ``plan`` as CEL sees it: the summary's counts.
SUMMARY_KEYS = (*RULE_ACTIONS, "unmanaged", "ignored")
PLAN_TREE: F.FieldTree = {"summary": {k: F.LEAF for k in SUMMARY_KEYS}}
#: Macros binding a variable in their first argument (``list.exists(x, x > 1)``).
BINDING_MACROS = ("all", "exists", "exists_one", "map", "filter")
#: Global functions and macros CEL offers (cel-python's base functions, ``has`` and ``dyn``).
_FUNCTIONS = ("has", "dyn", "size", "int", "uint", "double", "string", "bytes", "bool", "list", "map", "type",
              "duration", "timestamp", "matches", "contains", "startsWith", "endsWith", "null_type")


def _address_globs(globs: list[str]) -> list[str]:
    for i, glob in enumerate(globs):
        if "/" not in glob or "" in glob.split("/"):  # an empty part matches no address
            raise problem("an address glob is KIND/NAME (KIND/SPACE/NAME for " + ", ".join(SPACED_KINDS)
                          + "), e.g. Integration/*-prod", i)
    return globs


class Match(Strict):
    """What a rule applies to: every condition given must hold."""

    actions: Annotated[list[Literal["create", "update", "delete", "replace"]], AfterValidator(_unique)] | MISSING = Doc(
        "Actions of the operation: create, update, delete, replace.")
    kinds: Annotated[list[Literal[F.ALL_KINDS]], AfterValidator(_unique)] | MISSING = Doc(  # type: ignore[valid-type]
        "Kinds of the resource.")
    addresses: Annotated[list[NonEmpty], AfterValidator(_address_globs)] | MISSING = Doc(
        "Address globs: KIND/NAME or KIND/SPACE/NAME (* ? [..]).")
    fields: list[NonEmpty] | MISSING = Doc(
        "Field-path globs (dotted manifest names, * one segment): a change must touch one.")


class Rule(Strict):
    """One rule: match, an optional CEL condition, an effect."""

    name: NonEmpty = Required("The rule's name (what --approve names); unique across policies.")
    match: Match | MISSING = Doc("What the rule applies to.")
    condition: NonEmpty | MISSING = Doc("A CEL expression over op, before, after and plan.")
    effect: Literal["deny", "require_approval", "warn"] = Required("deny, require_approval or warn.")
    message: str | MISSING = Doc("What the verdict says.")


class Policy(Strict):
    """A set of rules evaluated on every plan."""

    refused = {"space": "'space' does not apply to Policy"}
    kind: Literal["Policy"] = Required("The document's kind.")
    name: NonEmpty = Required("The policy's name.")
    rules: list[Rule] = Field(description="The rules.", min_length=1)


@dataclass(frozen=True)
class CompiledRule:
    """A rule ready to evaluate. ``uses``: the CEL variables its condition reads; ``plan_only``: a
    rule with no ``match`` whose condition reads only ``plan`` (it fires once for the plan)."""

    name: str
    policy: str
    effect: str
    message: str
    source: str  # FILE:LINE of the rule
    actions: frozenset[str] = frozenset()
    kinds: frozenset[str] = frozenset()
    addresses: tuple[str, ...] = ()
    fields: tuple[str, ...] = ()
    condition: str | None = None
    program: Any = field(default=None, compare=False, repr=False)
    uses: frozenset[str] = frozenset()
    #: per variable, the first-level fields the condition selects (None: the value is used whole), so
    #: that only those are converted to CEL (a dataset's examples are not, unless asked for)
    selects: Mapping[str, frozenset[str] | None] = field(default_factory=dict, compare=False)

    @property
    def plan_only(self) -> bool:
        return (self.condition is not None and not (self.actions or self.kinds or self.addresses or self.fields)
                and self.uses <= {"plan"})


def _members(tree: Any) -> Iterator[tuple[list[str], Any]]:
    """Each member chain rooted at an identifier: (['before', 'experiment_retention', 'keep_last'],
    the node of the last selection), outermost chains only."""
    from lark import Token, Tree

    def chain(node: Any) -> list[str] | None:
        if not isinstance(node, Tree):
            return None
        if node.data in ("member", "primary") and len(node.children) == 1:
            return chain(node.children[0])
        if node.data == "ident" and isinstance(node.children[0], Token):
            return [str(node.children[0])]
        if node.data == "member_dot":
            base = chain(node.children[0])
            return None if base is None else [*base, str(node.children[1])]
        return None

    def walk(node: Any) -> Iterator[tuple[list[str], Any]]:
        if not isinstance(node, Tree):
            return
        if node.data == "member_dot":
            found = chain(node)
            if found is not None:
                yield found, node
                return
        yield from (m for child in node.children for m in walk(child))

    yield from walk(tree)


def _selections(ast: Any) -> dict[str, frozenset[str] | None]:
    """For each variable, the first-level fields its member chains select; None where the variable is
    also used whole (``before == after``, ``before['x']``, a macro over it)."""
    idents = Counter(str(node.children[0]) for node in ast.iter_subtrees() if node.data == "ident")
    chains: dict[str, list[str]] = {}
    for chain, _ in _members(ast):
        chains.setdefault(chain[0], []).append(chain[1])
    return {name: frozenset(chains[name]) if len(chains.get(name, ())) == count else None
            for name, count in idents.items() if name in VARIABLES}


#: Limits of a condition (a Policy may come from a fork's pull request, and its plan runs in CI):
#: how deep its expressions nest, how deep its parse tree is, how deep macros (``all``, ``exists``,
#: ``map``...) nest, and the steps one evaluation may take. What the limits leave possible grows
#: with the plan, not beyond. cel-python evaluates recursively, about two and a half Python frames
#: a node of the tree: ``MAX_TREE_DEPTH`` leaves room in Python's 1,000 for the command's own
#: frames, and holds 32 levels of parentheses around a short expression.
MAX_DEPTH = 32
MAX_TREE_DEPTH = 350
MAX_MACRO_NESTING = 3
STEP_BUDGET = 100_000


def _depths(ast: Any) -> tuple[int, int, int]:
    """The levels of nested expressions, the parse tree's depth in nodes and the deepest nesting of
    binding macros (iteratively: a tree too deep for recursion is measured too)."""
    from lark import Tree

    levels, deepest, nesting = 0, 0, 0
    stack: list[tuple[Tree[Any], int, int, int]] = [(ast, 0, 1, 0)]
    while stack:
        node, level, depth, macros = stack.pop()
        if node.data == "member_dot_arg" and str(node.children[1]) in BINDING_MACROS:  # member "." IDENT (...)
            macros += 1
        level += node.data == "expr"  # one level of the expression (the grammar's levels below it are not)
        levels, deepest, nesting = max(levels, level), max(deepest, depth), max(nesting, macros)
        stack.extend((child, level, depth + 1, macros) for child in node.children if isinstance(child, Tree))
    return levels, deepest, nesting


class BudgetExceeded(PlanError):
    """A condition took more than ``STEP_BUDGET`` steps in one evaluation."""


def _budgeted_runner() -> Any:
    """cel-python's interpreter, counting its steps: past ``STEP_BUDGET`` in one evaluation it
    raises ``BudgetExceeded`` (not a CEL error, which reads as false: a deny rule would not fire)."""
    import celpy
    from celpy.evaluation import Evaluator

    class Counted(Evaluator):
        def __init__(self, ast: Any, activation: Any, steps: list[int], where: str) -> None:
            super().__init__(ast, activation=activation)
            self.steps, self.where = steps, where

        def visit_children(self, tree: Any) -> Any:
            self.steps[0] -= 1
            if self.steps[0] < 0:
                raise BudgetExceeded(f"{self.where}: the rule's condition took more than {STEP_BUDGET:,} steps on "
                                     "one object and was stopped; simplify it (nested macros over long lists)")
            return super().visit_children(tree)

        def sub_evaluator(self, ast: Any) -> Any:
            return Counted(ast, self.activation, self.steps, self.where)

    class Runner(celpy.InterpretedRunner):
        where: str  # FILE:LINE: rule NAME, set by compile_policy

        def evaluate(self, context: Any) -> Any:
            return Counted(self.ast, self.new_activation(), [STEP_BUDGET], self.where).evaluate(context)

    return Runner


def _check_condition(text: str, kinds: Sequence[str], say: Any) -> tuple[Any, frozenset[str]]:
    """Compile ``text``; ``say(message, line_offset, column)`` reports each problem. Returns the
    program (None when the text does not parse or is too deep to examine further) and the variables
    the condition reads. A policy with a problem gives no rule (``compile_policy``), whatever the
    program."""
    import celpy
    from celpy.celparser import CELParseError
    from lark import Token, Tree

    env = celpy.Environment(runner_class=_budgeted_runner())
    try:
        ast = env.compile(text)  # lark's LALR parser: no recursion, whatever the depth
    except CELParseError as exc:
        lines = text.splitlines()  # a condition is not empty
        line, column = exc.line or 1, exc.column or 1
        near = lines[min(line, len(lines)) - 1][column - 1:column + 19]
        say(f"condition is not valid CEL: unexpected {near!r} at line {line}, column {column} of the expression"
            if near else "condition is not valid CEL: the expression ends too early", line - 1, column)
        return None, frozenset()
    levels, depth, nesting = _depths(ast)
    if levels > MAX_DEPTH or depth > MAX_TREE_DEPTH or nesting > MAX_MACRO_NESTING:
        say(f"condition is nested too deeply (more than {MAX_DEPTH} levels)" if levels > MAX_DEPTH else
            f"condition is too long a chain of operators, selections or indexes (its parse tree is {depth} "
            f"deep; at most {MAX_TREE_DEPTH})" if depth > MAX_TREE_DEPTH else
            f"condition nests macros (all, exists, exists_one, map, filter) {nesting} deep; at most "
            f"{MAX_MACRO_NESTING}", 0, 1)
        return None, frozenset()
    def line_of(node: Tree[Any]) -> tuple[int, int]:
        return node.meta.line - 1, node.meta.column  # the parser propagates positions to every node

    bound: set[str] = set()
    for node in ast.iter_subtrees():
        if node.data == "member_dot_arg" and (macro := str(node.children[1])) in BINDING_MACROS:
            args = node.children[2].children if len(node.children) > 2 else []  # member "." IDENT "(" [exprlist] ")"
            names = list(args[0].scan_values(lambda v: isinstance(v, Token))) if args else []
            variable = str(names[0]) if len(names) == 1 and names[0].type == "IDENT" else None
            if variable is not None:
                bound.add(variable)
            if len(args) != 2 or variable is None:  # cel-python fails on it at each evaluation: read as false
                say(f"{macro}() takes a variable and an expression, e.g. op.changes.{macro}(c, c.path == 'name')",
                    *line_of(node))
    uses: set[str] = set()

    for node in ast.iter_subtrees():
        if node.data == "ident":
            ident = str(node.children[0])
            if ident in VARIABLES:
                uses.add(ident)
            elif ident not in bound:
                hint = suggest(ident, VARIABLES)
                say(f"unknown variable '{ident}' in condition; CEL sees op, before, after and plan"
                    + (f" (did you mean '{hint}'?)" if hint else ""), *line_of(node))
        elif node.data == "ident_arg":
            function = str(node.children[0])
            if function not in _FUNCTIONS:
                say(f"unknown function '{function}' in condition", *line_of(node))
    for chain, node in _members(ast):
        root, path = chain[0], chain[1:]
        if root in ("before", "after"):
            ok = F.path_exists(path, map(F.kind_tree, kinds))
            known = "any kind" if set(kinds) == set(F.ALL_KINDS) else ", ".join(kinds)
            what = f"no field '{'.'.join(path)}' in the manifests of {known}"
        elif root in ("op", "plan"):
            ok = F.path_exists(path, [OP_TREE if root == "op" else PLAN_TREE])
            what = f"'{root}' has no field '{'.'.join(path)}'"
        else:
            continue
        if not ok:
            say(f"{what} ({root}.{'.'.join(path)} in condition)", *line_of(node))
    return env.program(ast), frozenset(uses)


def compile_policy(doc: YamlDocument, problems: list[Problem], base_dir: str) -> list[CompiledRule]:
    """The rules of one Policy document; every problem is appended at its ``file:line``. After a
    problem the loader raises (``load_manifests``): the rules are returned still, so that a name used
    twice is reported with the rest (``check_names``)."""
    ctx = Ctx(doc.file, doc.marks, problems, base_dir, lambda: f"Policy/{doc.value.get('name', '?')}", doc.refused)
    try:
        policy: Policy | None = Policy.model_validate(doc.value)
    except ValidationError as exc:
        report(exc, Policy, ctx)
        policy = None
    rules: list[CompiledRule] = []
    for i, rule in _valid_rules(policy, doc.value):
        at = ("rules", i)
        match = rule.match if rule.match is not MISSING else Match()
        kinds = tuple(match.kinds) if match.kinds is not MISSING else F.ALL_KINDS
        if rule.condition is MISSING and rule.match is MISSING:
            ctx.problem(at, "a rule needs a match, a condition or both")  # a list item: one mark, key and value
            continue
        if match.fields is not MISSING:
            for j, glob in enumerate(match.fields):
                if not F.glob_can_match(glob, kinds):
                    known = "any kind" if set(kinds) == set(F.ALL_KINDS) else ", ".join(kinds)
                    ctx.problem((*at, "match", "fields", j), f"'{glob}' matches no manifest field of "
                                + known + " (field paths are dotted manifest names; * is one segment)")
        program, uses, selects = None, frozenset[str](), {}
        if rule.condition is not MISSING:
            line, column = ctx.mark((*at, "condition"))
            block = "\n" in rule.condition  # a block scalar (| or >) starts on the line after its key

            def say(message: str, line_offset: int, col: int, line: int = line, column: int = column, i: int = i,
                    block: bool = block) -> None:
                shown_col = col if (block or line_offset) else column + col - 1
                problems.append(Problem(doc.file, line + line_offset + (1 if block else 0), shown_col,
                                        show(("rules", i, "condition")), message))

            program, uses = _check_condition(rule.condition, kinds, say)
            selects = _selections(program.ast) if program is not None else {}
        line = ctx.mark(at)[0]
        if program is not None:
            program.where = f"{doc.file}:{line}: rule {rule.name}"
        rules.append(CompiledRule(
            name=rule.name, policy=str(doc.value.get("name")), effect=rule.effect,
            message=rule.message if rule.message is not MISSING else "", source=f"{doc.file}:{line}",
            actions=frozenset(match.actions) if match.actions is not MISSING else frozenset(),
            kinds=frozenset(match.kinds) if match.kinds is not MISSING else frozenset(),
            addresses=tuple(match.addresses) if match.addresses is not MISSING else (),
            fields=tuple(match.fields) if match.fields is not MISSING else (),
            condition=rule.condition if rule.condition is not MISSING else None, program=program, uses=uses,
            selects=selects))
    return rules


def _valid_rules(policy: Policy | None, value: Any) -> Iterator[tuple[int, Rule]]:
    """The rules to check further: all of a valid policy; else each one that is valid alone (its
    problems are reported already), so one bad rule does not hide the others' problems."""
    if policy is not None:
        yield from enumerate(policy.rules)
        return
    raw = value.get("rules")  # a Policy document is a mapping (the loader read its kind)
    for i, item in enumerate(raw if isinstance(raw, list) else []):
        try:
            yield i, Rule.model_validate(item)
        except ValidationError:
            continue


def check_names(rules: Iterable[CompiledRule], problems: list[Problem]) -> None:
    """Rule names are unique across every policy (``--approve`` names a rule)."""
    seen: dict[str, CompiledRule] = {}
    for rule in rules:
        first = seen.setdefault(rule.name, rule)
        if first is not rule:
            file, _, line = rule.source.rpartition(":")
            problems.append(Problem(file, int(line), 1, "name",
                                    f"rule '{rule.name}' is already defined at {first.source}; rule names are unique"))
