"""The compiled loop graph: states as nodes, routes as labelled edges, and the few algorithms
lint, `show`, `simulate` and the interpreter need (reachability, shortest paths, dominators,
retry edges).

Why not networkx: `import networkx` alone costs 130-170 ms, more than half of the 0.2 s budget
for `ll-loop validate`. So the compiled graph is this small pure structure, and every algorithm
here is a short linear (or near-linear) function over it. networkx is the *oracle*: `to_networkx()`
builds the equivalent `MultiDiGraph` (imported lazily, only when called) for `show --format json`
and for the tests that check each algorithm below against networkx's on random graphs.

Edges come from `State.targets()` (labels: verdict names, `next`, `terminal:<name>`,
`retry_exhausted`; `$current` already resolved). A terminal ends the run, so it has no outgoing
edges here. Edges to a state that does not exist are kept aside in `dangling` for lint and are
not part of the graph.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass
from types import MappingProxyType
from typing import TYPE_CHECKING, NamedTuple

from engine.model.loop import Loop

if TYPE_CHECKING:
    import networkx


class Edge(NamedTuple):
    """One transition: `source` goes to `target` when `label` happens."""

    source: str
    target: str
    label: str


@dataclass(frozen=True)
class LoopGraph:
    """A loop compiled once; every query below is a pure function of it."""

    name: str
    initial: str
    nodes: tuple[str, ...]  # file order
    order: Mapping[str, int]  # state name -> position in the file
    out_edges: Mapping[str, tuple[Edge, ...]]  # targets sorted by file order, then label
    in_edges: Mapping[str, tuple[Edge, ...]]
    terminals: frozenset[str]
    failures: frozenset[str]  # terminals with `failure: true`
    dangling: tuple[Edge, ...]  # edges whose target is not a state
    on_max_steps: str | None = None

    @property
    def edges(self) -> Iterator[Edge]:
        for node in self.nodes:
            yield from self.out_edges[node]

    def successors(self, node: str) -> tuple[str, ...]:
        """Distinct successors of `node`, in file order."""
        return _distinct(edge.target for edge in self.out_edges.get(node, ()))

    def predecessors(self, node: str) -> tuple[str, ...]:
        return _distinct(edge.source for edge in self.in_edges.get(node, ()))

    def to_networkx(self) -> networkx.MultiDiGraph[str]:
        """The same graph as a networkx `MultiDiGraph` (edge key = label); networkx is imported
        here, never at module level, because its import alone would blow the validate budget."""
        import networkx

        retries = retry_edges(self)
        graph: networkx.MultiDiGraph[str] = networkx.MultiDiGraph(
            name=self.name, initial=self.initial
        )
        for node in self.nodes:
            graph.add_node(
                node,
                terminal=node in self.terminals,
                outcome=_outcome(self, node),
                initial=node == self.initial,
            )
        for edge in self.edges:
            graph.add_edge(
                edge.source,
                edge.target,
                key=edge.label,
                label=edge.label,
                retry=(edge.source, edge.target) in retries,
            )
        return graph


def _outcome(graph: LoopGraph, node: str) -> str | None:
    if node not in graph.terminals:
        return None
    return "failure" if node in graph.failures else "success"


def _distinct(items: Iterable[str]) -> tuple[str, ...]:
    return tuple(dict.fromkeys(items))


def compile_graph(loop: Loop) -> LoopGraph:
    """Build the graph of `loop`: nodes in file order, one edge per route."""
    order = {name: index for index, name in enumerate(loop.states)}
    out: dict[str, list[Edge]] = {name: [] for name in loop.states}
    inc: dict[str, list[Edge]] = {name: [] for name in loop.states}
    dangling: list[Edge] = []
    for state in loop.states.values():
        if state.terminal:
            continue
        for label, target in state.targets().items():
            edge = Edge(state.name, target, label)
            if target in order:
                out[state.name].append(edge)
                inc[target].append(edge)
            else:
                dangling.append(edge)
    for edges in out.values():
        edges.sort(key=lambda e: (order[e.target], e.label))
    for edges in inc.values():
        edges.sort(key=lambda e: (order[e.source], e.label))
    return LoopGraph(
        name=loop.name,
        initial=loop.initial,
        nodes=tuple(loop.states),
        order=MappingProxyType(order),
        out_edges=MappingProxyType({k: tuple(v) for k, v in out.items()}),
        in_edges=MappingProxyType({k: tuple(v) for k, v in inc.items()}),
        terminals=frozenset(s.name for s in loop.states.values() if s.terminal),
        failures=frozenset(s.name for s in loop.states.values() if s.terminal and s.failure),
        dangling=tuple(dangling),
        on_max_steps=loop.on_max_steps,
    )


def successors(graph: LoopGraph, node: str) -> tuple[str, ...]:
    """Distinct successors of `node` in file order."""
    return graph.successors(node)


def success_terminals(graph: LoopGraph) -> frozenset[str]:
    return graph.terminals - graph.failures


def failure_terminals(graph: LoopGraph) -> frozenset[str]:
    return graph.failures


def reachable_from(graph: LoopGraph, *starts: str) -> frozenset[str]:
    """Every state a run can enter from `starts` (included), by BFS; unknown starts ignored."""
    return _closure(graph, starts, graph.successors)


def can_reach(graph: LoopGraph, targets: Iterable[str]) -> frozenset[str]:
    """Every state with a path to one of `targets` (targets included): BFS on reversed edges."""
    return _closure(graph, targets, graph.predecessors)


def _closure(
    graph: LoopGraph, starts: Iterable[str], step: Callable[[str], Iterable[str]]
) -> frozenset[str]:
    """`starts` (known states only) and everything `step` leads to from them, by BFS."""
    seen = {s for s in starts if s in graph.order}
    queue = deque(seen)
    while queue:
        for nxt in step(queue.popleft()):
            if nxt not in seen:
                seen.add(nxt)
                queue.append(nxt)
    return frozenset(seen)


def shortest_path_length(graph: LoopGraph, source: str, targets: Iterable[str]) -> int | None:
    """Fewest edges from `source` to any of `targets` (BFS), or None when none is reachable.

    Since terminals have no outgoing edges, the edge count of a path ending in a terminal is the
    number of steps (non-terminal states executed) that path costs.
    """
    goal = frozenset(targets)
    if source not in graph.order:
        return None
    dist = {source: 0}
    queue = deque([source])
    while queue:
        node = queue.popleft()
        if node in goal:
            return dist[node]
        for nxt in graph.successors(node):
            if nxt not in dist:
                dist[nxt] = dist[node] + 1
                queue.append(nxt)
    return None


def immediate_dominators(graph: LoopGraph, start: str) -> dict[str, str]:
    """Immediate dominator of every state reachable from `start` (start maps to itself).

    Lengauer-Tarjan with path compression (Appel's formulation, iterative), O(m log n). The
    simpler Cooper-Harvey-Kennedy iteration is quadratic on deep dominator trees with a
    high fan-in node — exactly a long loop whose every state routes `on_error: failed`.
    """
    if start not in graph.order:
        return {}
    vertex, parent = _dfs_tree(graph, start)
    number = {node: i for i, node in enumerate(vertex)}
    count = len(vertex)
    semi = list(range(count))  # semidominator, as a DFS number
    ancestor = [-1] * count
    best = list(range(count))
    idom = [0] * count
    samedom = [-1] * count
    bucket: list[list[int]] = [[] for _ in range(count)]

    def lowest_semi(v: int) -> int:
        path = []
        while ancestor[ancestor[v]] != -1:
            path.append(v)
            v = ancestor[v]
        for node in reversed(path):
            up = ancestor[node]
            if semi[best[up]] < semi[best[node]]:
                best[node] = best[up]
            ancestor[node] = ancestor[up]
        return best[path[0]] if path else best[v]

    for n in range(count - 1, 0, -1):
        p = parent[n]
        s = p
        for pred in graph.predecessors(vertex[n]):
            v = number.get(pred)
            if v is None:
                continue  # not reachable from start
            candidate = v if v <= n else semi[lowest_semi(v)]
            s = min(s, candidate)
        semi[n] = s
        bucket[s].append(n)
        ancestor[n], best[n] = p, n
        for v in bucket[p]:
            y = lowest_semi(v)
            if semi[y] == semi[v]:
                idom[v] = p
            else:
                samedom[v] = y
        bucket[p] = []
    for n in range(1, count):
        if samedom[n] != -1:
            idom[n] = idom[samedom[n]]
    return {vertex[n]: vertex[idom[n]] for n in range(count)}


def _dfs_tree(graph: LoopGraph, start: str) -> tuple[list[str], list[int]]:
    """Preorder of the depth-first walk from `start` (successors in file order) and each
    node's tree parent, as preorder numbers (the start is its own parent)."""
    vertex = [start]
    parent = [0]
    number = {start: 0}
    stack: list[tuple[int, Iterator[str]]] = [(0, iter(graph.successors(start)))]
    while stack:
        node, children = stack[-1]
        for child in children:
            if child not in number:
                number[child] = len(vertex)
                vertex.append(child)
                parent.append(node)
                stack.append((number[child], iter(graph.successors(child))))
                break
        else:
            stack.pop()
    return vertex, parent


def back_edges(graph: LoopGraph, start: str) -> list[Edge]:
    """Edges that close a cycle in the depth-first walk from `start` (the retry edges).

    The walk visits successors in file order, so the result is the same on every run and reads
    naturally: an edge back to a state earlier on the current path (often earlier in the file,
    e.g. `check -> fix`) is the retry, the edge that first enters a state is not. Self-loops
    (`$current`) are back edges.
    """
    if start not in graph.order:
        return []
    found: list[Edge] = []
    on_path = {start}
    seen = {start}
    stack: list[tuple[str, Iterator[Edge]]] = [(start, iter(graph.out_edges[start]))]
    while stack:
        node, edges = stack[-1]
        for edge in edges:
            if edge.target in on_path:
                found.append(edge)
            elif edge.target not in seen:
                seen.add(edge.target)
                on_path.add(edge.target)
                stack.append((edge.target, iter(graph.out_edges[edge.target])))
                break
        else:
            stack.pop()
            on_path.discard(node)
    return found


def retry_edges(graph: LoopGraph) -> frozenset[tuple[str, str]]:
    """(source, target) pairs along which entering `target` counts a retry (docs/format.md,
    "Routing")."""
    return frozenset((e.source, e.target) for e in back_edges(graph, graph.initial))


def closed_components(graph: LoopGraph, nodes: Iterable[str]) -> list[list[str]]:
    """Strongly connected sets among `nodes` with a cycle and no edge leaving them (Tarjan,
    iterative). A run entering one never ends except by budget."""
    allowed = set(nodes)
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    on_stack: set[str] = set()
    comp_stack: list[str] = []
    result: list[list[str]] = []
    counter = 0
    for root in graph.nodes:
        if root not in allowed or root in index:
            continue
        index[root] = low[root] = counter
        counter += 1
        comp_stack.append(root)
        on_stack.add(root)
        work: list[tuple[str, Iterator[str]]] = [(root, iter(graph.successors(root)))]
        while work:
            node, children = work[-1]
            advanced = False
            for child in children:
                if child not in allowed:
                    continue
                if child not in index:
                    index[child] = low[child] = counter
                    counter += 1
                    comp_stack.append(child)
                    on_stack.add(child)
                    work.append((child, iter(graph.successors(child))))
                    advanced = True
                    break
                if child in on_stack:
                    low[node] = min(low[node], index[child])
            if advanced:
                continue
            work.pop()
            if work:
                parent = work[-1][0]
                low[parent] = min(low[parent], low[node])
            if low[node] == index[node]:
                component: list[str] = []
                while True:
                    member = comp_stack.pop()
                    on_stack.discard(member)
                    component.append(member)
                    if member == node:
                        break
                members = set(component)
                cyclic = len(component) > 1 or node in graph.successors(node)
                leaves = any(t not in members for m in component for t in graph.successors(m))
                if cyclic and not leaves:
                    result.append(sorted(component, key=graph.order.__getitem__))
    return result
