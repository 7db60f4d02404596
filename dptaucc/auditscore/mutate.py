"""Mutants of privacy code, made from the syntax tree: the bugs nobody wrote by hand.

Each operator rewrites one spot of a module's source and leaves every other byte as it was
(so line numbers, comments and coverage data keep matching):

=========  =================================================================================
operator   what it does
=========  =================================================================================
``x2``     a numeric constant doubled (``1`` → ``2``, ``0.5`` → ``1.0``)
``half``   a numeric constant halved (whole numbers only when even: ``4`` → ``2``)
``plus1``  a numeric constant + 1
``minus1`` a numeric constant − 1
``op``     an operator swapped: ``+ −``, ``* /``, ``// → *``, ``** → *``, ``| &``,
           ``< <=``, ``> >=``, ``== !=``, ``is / is not``, ``and or``, ``x += → x −=``,
           a unary minus dropped, and the functions ``min max``, ``minimum maximum``,
           ``floor ceil``, ``argmin argmax``
``args``   two neighbouring arguments of a call swapped (positional, unless the function is
           commutative such as ``max``; or the values of two keyword arguments that are
           neither strings nor the ledger, sampler or step)
``exact``  a noisy value replaced by its exact input: a ``*_mechanism(x, …)`` call kept (its
           ledger entry and its audit report stay) but ``x`` returned (for a choice, the
           argmax of its utilities); or ``x + noise`` → ``x`` where ``noise`` is a draw
``reuse``  a draw reused: a second draw of a function (same call text as an earlier one in
           the same statement, or in an earlier statement of the same block) replaced by the
           first one's value
=========  =================================================================================

A *draw* is a call of a method named like a sampler's (:data:`DRAW_NAMES`). A mutant whose
tree equals the original's (``2`` → ``2.0`` in a float context is not one: trees differ) is
dropped. Mutant ids hash the file, the enclosing function, the operator, the text before and
after and the occurrence: they survive edits elsewhere in the file.

>>> src = "def f(x, rng):\\n    return x + rng.laplace(0.0, 2.0)\\n"
>>> sorted({m.operator for m in mutants_of("m.py", src)})
['args', 'exact', 'half', 'minus1', 'op', 'plus1', 'x2']
>>> [m.apply(src).splitlines()[1].strip() for m in mutants_of("m.py", src)
...  if m.operator == "exact"]
['return (x)']
"""

from __future__ import annotations

import ast
import hashlib
from collections.abc import Iterator
from dataclasses import dataclass, field

__all__ = ["DRAW_NAMES", "OPERATORS", "Mutant", "mutants_of"]

OPERATORS = ("x2", "half", "plus1", "minus1", "op", "args", "exact", "reuse")

#: method or function names of a random draw (numpy Generator, the samplers, the kernels)
DRAW_NAMES = frozenset({
    "random", "standard_normal", "standard_exponential", "standard_gamma", "discrete_laplace",
    "laplace", "gumbel", "choose", "integers", "normal", "exponential", "uniform", "geometric",
    "binomial", "choice", "permutation", "bounded_discrete_laplace", "exact_choose",
    "bounded_domain_laplace", "folded_geometric", "multivariate_normal",
})
#: keyword arguments never swapped (objects, labels: a swap only raises or renames)
_FIXED_KEYWORDS = frozenset({"ledger", "sampler", "step", "note", "random_state", "rng",
                             "dtype", "out", "axis", "keepdims", "kind"})
_BINOPS = {ast.Add: (ast.Sub, "+", "-"), ast.Sub: (ast.Add, "-", "+"),
           ast.Mult: (ast.Div, "*", "/"), ast.Div: (ast.Mult, "/", "*"),
           ast.FloorDiv: (ast.Mult, "//", "*"), ast.Pow: (ast.Mult, "**", "*"),
           ast.BitOr: (ast.BitAnd, "|", "&"), ast.BitAnd: (ast.BitOr, "&", "|")}
_CMPOPS = {ast.Lt: "<=", ast.LtE: "<", ast.Gt: ">=", ast.GtE: ">", ast.Eq: "!=", ast.NotEq: "==",
           ast.Is: "is not", ast.IsNot: "is"}
_CMPTEXT = {ast.Lt: "<", ast.LtE: "<=", ast.Gt: ">", ast.GtE: ">=", ast.Eq: "==",
            ast.NotEq: "!=", ast.Is: "is", ast.IsNot: "is not"}
_NAME_SWAPS = {"min": "max", "max": "min", "minimum": "maximum", "maximum": "minimum",
               "floor": "ceil", "ceil": "floor", "argmin": "argmax", "argmax": "argmin",
               "nanmin": "nanmax", "nanmax": "nanmin"}
_CHOICE_WORDS = ("exponential", "choice", "choose", "select")
#: functions whose positional arguments commute: swapping two of them changes nothing
_COMMUTATIVE = frozenset({"min", "max", "minimum", "maximum", "fmin", "fmax", "add", "multiply",
                          "hypot", "logical_and", "logical_or", "logical_xor", "union",
                          "intersection", "gcd", "lcm"})


@dataclass(frozen=True)
class Mutant:
    """One mutation of one file: byte edits of its UTF-8 source, and where it sits."""

    id: str
    path: str                       # repository-relative, '/'-separated
    function: str                   # qualified name of the enclosing function, or <module>
    operator: str                   # one of OPERATORS
    line: int                       # first line of the mutated code (1-based)
    lines: tuple[int, int]          # the enclosing statement's lines (header of a compound)
    original: str                   # the text replaced (first edit)
    replacement: str                # its replacement
    paper_only: bool                # inside a branch or function only paper mode runs
    edits: tuple[tuple[int, int, str], ...] = field(repr=False, default=())
    mutated_line: str = field(repr=False, default="")  # the mutated source's line, stripped

    @property
    def description(self) -> str:
        """``operator: before → after``, whitespace collapsed, long texts cut."""
        def short(text: str) -> str:
            text = " ".join(text.split())
            return text if len(text) <= 70 else text[:67] + "..."
        if self.operator == "reuse":
            return f"reuse: {short(self.original)} drawn once, its value used again"
        return f"{self.operator}: {short(self.original)} → {short(self.replacement)}"

    def apply(self, source: str) -> str:
        """The mutated source (``source`` must be the text the mutant was made from)."""
        data = source.encode("utf-8")
        for start, end, text in sorted(self.edits, reverse=True):
            data = data[:start] + text.encode("utf-8") + data[end:]
        return data.decode("utf-8")


class _Source:
    """Byte offsets of a module's lines (ast columns count UTF-8 bytes)."""

    def __init__(self, text: str):
        self.data = text.encode("utf-8")
        self.starts = [0]
        for line in self.data.splitlines(keepends=True):
            self.starts.append(self.starts[-1] + len(line))

    def offset(self, line: int, col: int) -> int:
        return self.starts[line - 1] + col

    def span(self, node: ast.AST) -> tuple[int, int]:
        return (self.offset(node.lineno, node.col_offset),
                self.offset(node.end_lineno, node.end_col_offset))

    def text(self, start: int, end: int) -> str:
        return self.data[start:end].decode("utf-8")

    def of(self, node: ast.AST) -> str:
        return self.text(*self.span(node))


def _callee(call: ast.Call) -> str:
    f = call.func
    return f.attr if isinstance(f, ast.Attribute) else f.id if isinstance(f, ast.Name) else ""


def _is_draw(node: ast.AST) -> bool:
    return isinstance(node, ast.Call) and _callee(node) in DRAW_NAMES


def _contains_draw(node: ast.AST) -> bool:
    return any(_is_draw(n) or (isinstance(n, ast.Call) and _callee(n).endswith("_mechanism"))
               for n in ast.walk(node))


def _mentions_paper(node: ast.AST, src: _Source) -> bool:
    return "paper" in src.of(node)


def _negated(test: ast.AST) -> bool:
    return (isinstance(test, ast.UnaryOp) and isinstance(test.op, ast.Not)) or (
        isinstance(test, ast.Compare) and any(isinstance(o, ast.NotEq) for o in test.ops))


class _Collector(ast.NodeVisitor):
    """Walks a module and lists candidate edits with their context."""

    def __init__(self, path: str, src: _Source):
        self.path, self.src = path, src
        self.scope: list[str] = []
        self.stmts: list[ast.stmt] = []
        self.paper: list[bool] = []
        #: (operator, edits, node, function, statement lines, paper only)
        self.found: list[tuple] = []
        self.unsafe = 0  # depth inside lambdas and comprehensions
        self.context: dict[int, tuple] = {}  # id(call) -> (function, lines, paper only)

    # -- context --------------------------------------------------------------------------
    def _stmt_lines(self) -> tuple[int, int]:
        stmt = self.stmts[-1]
        header = {ast.If: "test", ast.While: "test", ast.For: "iter", ast.With: "items",
                  ast.FunctionDef: "args", ast.Try: None}
        for kind, attr in header.items():
            if isinstance(stmt, kind):
                if attr is None:
                    return stmt.lineno, stmt.lineno
                last = getattr(stmt, attr)
                last = last[-1] if isinstance(last, list) and last else last
                end = getattr(last, "end_lineno", None) or stmt.lineno
                return stmt.lineno, end
        return stmt.lineno, stmt.end_lineno or stmt.lineno

    def add(self, operator: str, edits: list[tuple[int, int, str]], node: ast.AST) -> None:
        if self.stmts:
            self.found.append((operator, edits, node, ".".join(self.scope) or "<module>",
                               self._stmt_lines(), any(self.paper)))

    def visit_FunctionDef(self, node):  # noqa: N802 - ast visitor names
        self.scope.append(node.name)
        self.paper.append("paper" in node.name)
        for stmt in node.body:
            self.visit(stmt)
        self.paper.pop()
        self.scope.pop()

    visit_AsyncFunctionDef = visit_FunctionDef

    def visit_ClassDef(self, node):  # noqa: N802
        self.scope.append(node.name)
        for stmt in node.body:
            self.visit(stmt)
        self.scope.pop()

    def visit_If(self, node):  # noqa: N802
        self.stmts.append(node)
        self.visit(node.test)
        self.stmts.pop()
        paper = _mentions_paper(node.test, self.src)
        for branch, is_else in ((node.body, False), (node.orelse, True)):
            self.paper.append(paper and (_negated(node.test) == is_else))
            for stmt in branch:
                self.visit(stmt)
            self.paper.pop()

    _BLOCKS = ("body", "orelse", "finalbody", "handlers")

    def visit(self, node):
        if not isinstance(node, ast.stmt) or isinstance(
                node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef, ast.If)):
            return super().visit(node)
        if isinstance(node, ast.Expr) and isinstance(node.value, ast.Constant):
            return None  # a docstring
        self.stmts.append(node)
        if isinstance(node, ast.AugAssign):
            self.visit_AugAssign(node)
        else:
            for name, value in ast.iter_fields(node):
                if name not in self._BLOCKS and name != "annotation":
                    self._visit_field(value)
        self.stmts.pop()
        for name in self._BLOCKS:
            for child in getattr(node, name, None) or []:
                self.visit(child)
        return None

    def generic_visit(self, node):
        if isinstance(node, ast.arg):
            return  # annotations
        lam = isinstance(node, (ast.Lambda, ast.ListComp, ast.SetComp, ast.DictComp,
                                ast.GeneratorExp))
        self.unsafe += lam
        super().generic_visit(node)
        self.unsafe -= lam

    def _visit_field(self, value):
        if isinstance(value, list):
            for v in value:
                if isinstance(v, ast.AST):
                    self.visit(v)
        elif isinstance(value, ast.AST):
            self.visit(value)

    def visit_ExceptHandler(self, node):  # noqa: N802
        for stmt in node.body:
            self.visit(stmt)

    # -- operators ------------------------------------------------------------------------
    def visit_Constant(self, node):  # noqa: N802
        v = node.value
        if isinstance(v, bool) or not isinstance(v, (int, float)) or v == 0:
            return
        start, end = self.src.span(node)
        options = {"x2": v * 2, "plus1": v + 1, "minus1": v - 1}
        if isinstance(v, float):
            options["half"] = v / 2
        elif v % 2 == 0:
            options["half"] = v // 2
        for operator, new in options.items():
            self.add(operator, [(start, end, repr(new))], node)

    def visit_BinOp(self, node):  # noqa: N802
        swap = _BINOPS.get(type(node.op))
        if swap is not None:
            self._swap_between(node.left, node.right, swap[1], swap[2], node)
        if isinstance(node.op, (ast.Add, ast.Sub)):
            for keep, noise in ((node.left, node.right), (node.right, node.left)):
                if _contains_draw(noise) and not _contains_draw(keep) and not (
                        isinstance(node.op, ast.Sub) and keep is node.right):
                    self.add("exact", [(*self.src.span(node), f"({self.src.of(keep)})")], node)
        self.generic_visit(node)

    def visit_AugAssign(self, node):  # noqa: N802 - called by visit, inside the statement
        swap = _BINOPS.get(type(node.op))
        if swap is not None:
            self._swap_between(node.target, node.value, swap[1] + "=", swap[2] + "=", node)
        self.visit(node.value)

    def visit_Compare(self, node):  # noqa: N802
        left = node.left
        for op, right in zip(node.ops, node.comparators, strict=True):
            if type(op) in _CMPOPS:
                self._swap_between(left, right, _CMPTEXT[type(op)], _CMPOPS[type(op)], node)
            left = right
        self.generic_visit(node)

    def visit_BoolOp(self, node):  # noqa: N802
        old, new = ("and", "or") if isinstance(node.op, ast.And) else ("or", "and")
        for a, b in zip(node.values, node.values[1:], strict=False):
            self._swap_between(a, b, old, new, node)
        self.generic_visit(node)

    def visit_UnaryOp(self, node):  # noqa: N802
        if isinstance(node.op, ast.USub) and not isinstance(node.operand, ast.Constant):
            self.add("op", [(*self.src.span(node), f"({self.src.of(node.operand)})")], node)
        self.generic_visit(node)

    def _swap_between(self, a, b, old: str, new: str, node) -> None:
        start, end = self.src.span(a)[1], self.src.span(b)[0]
        between = self.src.text(start, end)
        stripped = between.replace("(", " ").replace(")", " ").split()
        if " ".join(stripped) != old:
            return  # a comment or an unexpected layout between the operands: leave it
        pos = between.find(old)
        self.add("op", [(start + pos, start + pos + len(old.encode("utf-8")), new)], node)

    def visit_Call(self, node):  # noqa: N802
        name = _callee(node)
        if self.stmts:
            self.context[id(node)] = (".".join(self.scope) or "<module>", self._stmt_lines(),
                                      any(self.paper))
        if name in _NAME_SWAPS:
            f = node.func
            fstart, fend = self.src.span(f)
            if isinstance(f, ast.Attribute):
                fstart = fend - len(name)
            self.add("op", [(fstart, fend, _NAME_SWAPS[name])], node)
        positional = [a for a in node.args if not isinstance(a, ast.Starred)]
        if len(positional) == len(node.args) and name not in _COMMUTATIVE:
            for a, b in zip(positional, positional[1:], strict=False):
                self._swap_nodes(a, b, node)
        kws = [k for k in node.keywords if k.arg and k.arg not in _FIXED_KEYWORDS
               and not (isinstance(k.value, ast.Constant) and isinstance(k.value.value, str))]
        for a, b in zip(kws, kws[1:], strict=False):
            self._swap_nodes(a.value, b.value, node)
        if name.endswith("_mechanism"):
            self._exact_release(node, name)
        self.generic_visit(node)

    def _swap_nodes(self, a, b, node) -> None:
        ta, tb = self.src.of(a), self.src.of(b)
        if ta != tb:
            self.add("args", [(*self.src.span(a), tb), (*self.src.span(b), ta)], node)

    def _exact_release(self, node: ast.Call, name: str) -> None:
        data = node.args[0] if node.args else next(
            (k.value for k in node.keywords if k.arg in ("values", "utilities", "profiles")),
            None)
        if data is None:
            return
        x = self.src.of(data)
        if any(w in name for w in _CHOICE_WORDS):
            weights = next((k.value for k in node.keywords if k.arg == "weights"), None)
            scores = (f"({x}) @ __import__('numpy').asarray({self.src.of(weights)}).T"
                      if weights is not None else x)
            x = f"__import__('numpy').asarray({scores}).argmax(axis=1)"
        self.add("exact", [(*self.src.span(node), f"({self.src.of(node)}, {x})[1]")], node)


def _reuse_edits(tree: ast.Module, src: _Source) -> Iterator[tuple[list, ast.AST, ast.AST]]:
    """Pairs (earlier draw, later draw with the same text) a walrus can join safely."""
    for func in ast.walk(tree):
        if not isinstance(func, (ast.FunctionDef, ast.AsyncFunctionDef)):
            continue
        # every block of the function: its statements in order
        blocks = [getattr(n, f) for n in ast.walk(func) for f in ("body", "orelse", "finalbody")
                  if isinstance(getattr(n, f, None), list)]
        for block in blocks:
            seen: list[tuple[int, ast.Call]] = []
            for i, stmt in enumerate(block):
                if isinstance(stmt, (ast.FunctionDef, ast.ClassDef, ast.AsyncFunctionDef)):
                    continue
                draws = [n for n in _shallow_nodes(stmt) if _is_draw(n)]
                draws.sort(key=lambda n: src.span(n))
                for call in draws:
                    text = src.of(call)
                    first = next((c for _, c in seen if src.of(c) == text), None)
                    if first is not None:
                        yield [(*src.span(first), f"(_mutant_draw := {src.of(first)})"),
                               (*src.span(call), "_mutant_draw")], first, call
                    seen.append((i, call))


def _shallow_nodes(stmt: ast.stmt) -> Iterator[ast.AST]:
    """The nodes of a statement that run whenever it does, once, in order: not inside a
    nested block, a lambda, a comprehension, a conditional expression or a short circuit."""
    stack: list[ast.AST] = [stmt]
    while stack:
        node = stack.pop()
        yield node
        for name, value in ast.iter_fields(node):
            if name in ("body", "orelse", "finalbody", "handlers"):
                continue
            for child in value if isinstance(value, list) else [value]:
                if isinstance(child, ast.AST) and not isinstance(child, (
                        ast.Lambda, ast.ListComp, ast.SetComp, ast.DictComp, ast.GeneratorExp,
                        ast.IfExp, ast.BoolOp, ast.stmt)):
                    stack.append(child)


def _mutant_id(path: str, function: str, operator: str, original: str, replacement: str,
               k: int) -> str:
    key = "\x1f".join((path, function, operator, original, replacement, str(k)))
    return hashlib.sha1(key.encode("utf-8")).hexdigest()[:12]


def mutants_of(path: str, source: str, functions: tuple[str, ...] | None = None
               ) -> list[Mutant]:
    """Every mutant of one module's ``source`` (``path`` names it in ids and reports),
    in source order; ``functions``: only inside these (qualified names or their prefixes).

    >>> src = "def f(x):\\n    return x * 2\\n\\ndef g(y):\\n    return y - 1\\n"
    >>> [(m.function, m.line, m.description) for m in mutants_of("m.py", src)][:2]
    [('f', 2, 'op: * → /'), ('f', 2, 'x2: 2 → 4')]
    >>> [m.description for m in mutants_of("m.py", src, functions=("g",))]
    ['op: - → +', 'x2: 1 → 2', 'plus1: 1 → 2', 'minus1: 1 → 0']
    """
    tree = ast.parse(source)
    src = _Source(source)
    collector = _Collector(path, src)
    collector.visit(tree)
    found = list(collector.found)
    # draws reused: context (function, lines) of the later draw
    for edits, _first, later in _reuse_edits(tree, src):
        ctx = collector.context.get(id(later))
        if ctx is None:
            continue
        found.append(("reuse", edits, later, *ctx))
    original_dump = ast.dump(tree)
    seen: dict[tuple, int] = {}
    out = []
    for operator, edits, node, function, lines, paper in sorted(
            found, key=lambda f: (f[1][0][0], OPERATORS.index(f[0]))):
        if functions is not None and not any(
                function == f or function.startswith(f + ".") for f in functions):
            continue
        start, end, replacement = edits[0]
        original = src.text(start, end)
        mutant = Mutant("", path, function, operator, node.lineno, lines, original,
                        replacement, paper, tuple(edits))
        text = mutant.apply(source)
        try:
            mutated = ast.parse(text)
        except SyntaxError:
            continue
        if ast.dump(mutated) == original_dump:
            continue
        key = (function, operator, original, replacement)
        k = seen.get(key, 0)
        seen[key] = k + 1
        out.append(Mutant(_mutant_id(path, function, operator, original, replacement, k),
                          path, function, operator, node.lineno, lines, original,
                          replacement, paper, tuple(edits),
                          " ".join(text.splitlines()[node.lineno - 1].split())))
    return out
