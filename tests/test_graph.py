"""The compiled graph: small hand-checked loops, then every algorithm against networkx's on
random graphs (networkx is the oracle; our own structure exists because importing networkx costs
more than half of the validate budget)."""

from __future__ import annotations

import networkx as nx
from hypothesis import given, settings

from engine.graph.loop_graph import (
    back_edges,
    can_reach,
    closed_components,
    compile_graph,
    failure_terminals,
    immediate_dominators,
    reachable_from,
    retry_edges,
    shortest_path_length,
    success_terminals,
)
from engine.model.loop import Loop
from tests.lint_helpers import make_loop, random_loops
from tests.properties import examples

FIX_UNTIL_GREEN = make_loop(
    {
        "check": {"action": "make test", "on_yes": "done", "on_no": "fix"},
        "fix": {
            "action": "fix it",
            "next": "check",
            "max_retries": 3,
            "on_retry_exhausted": "gave_up",
        },
        "done": {"terminal": True},
        "gave_up": {"terminal": True, "failure": True},
    }
)


def test_edges_follow_state_targets_in_file_order() -> None:
    graph = compile_graph(FIX_UNTIL_GREEN)
    assert graph.nodes == ("check", "fix", "done", "gave_up")
    assert [tuple(e) for e in graph.out_edges["fix"]] == [
        ("fix", "check", "next"),
        ("fix", "gave_up", "retry_exhausted"),
    ]
    assert graph.successors("check") == ("fix", "done")
    assert success_terminals(graph) == {"done"}
    assert failure_terminals(graph) == {"gave_up"}


def test_current_is_resolved_and_unknown_targets_are_kept_aside() -> None:
    loop = make_loop({"poll": {"action": "x", "on_no": "$current", "on_yes": "nowhere"}})
    graph = compile_graph(loop)
    assert [tuple(e) for e in graph.out_edges["poll"]] == [("poll", "poll", "no")]
    assert [tuple(e) for e in graph.dangling] == [("poll", "nowhere", "yes")]


def test_fix_until_green_retry_is_the_edge_back_to_check() -> None:
    """check -> fix is the first entry; fix -> check closes the cycle and counts a retry."""
    assert retry_edges(compile_graph(FIX_UNTIL_GREEN)) == {("fix", "check")}


def test_eval_harness_retry_is_check_to_execute_not_discover_to_execute() -> None:
    loop = make_loop(
        {
            "discover": {"action": "next item", "on_yes": "execute", "on_no": "done"},
            "execute": {"action": "run it", "next": "check"},
            "check": {"action": "grade", "on_yes": "discover", "on_no": "execute"},
            "done": {"terminal": True},
        }
    )
    assert retry_edges(compile_graph(loop)) == {("check", "execute"), ("check", "discover")}


def test_steps_to_success_count_non_terminal_states() -> None:
    graph = compile_graph(FIX_UNTIL_GREEN)
    assert shortest_path_length(graph, "check", {"done"}) == 1
    assert shortest_path_length(graph, "fix", {"done"}) == 2
    assert shortest_path_length(graph, "done", {"gave_up"}) is None


def test_closed_cycle_is_found() -> None:
    loop = make_loop(
        {
            "a": {"action": "x", "on_yes": "b", "on_no": "end"},
            "b": {"action": "x", "on_yes": "c", "on_no": "c"},
            "c": {"action": "x", "next": "b"},
            "end": {"terminal": True},
        }
    )
    graph = compile_graph(loop)
    assert closed_components(graph, graph.nodes) == [["b", "c"]]


# --- networkx as the oracle on random graphs ---------------------------------------------


def _nx(loop: Loop) -> nx.MultiDiGraph:
    return compile_graph(loop).to_networkx()


@settings(max_examples=examples(300), deadline=None)
@given(random_loops())
def test_reachability_matches_networkx(loop: Loop) -> None:
    graph, oracle = compile_graph(loop), _nx(loop)
    assert reachable_from(graph, loop.initial) == nx.descendants(oracle, loop.initial) | {
        loop.initial
    }
    targets = set(graph.terminals)
    expected = set(targets)
    for t in targets:
        expected |= nx.ancestors(oracle, t)
    assert can_reach(graph, targets) == expected


@settings(max_examples=examples(300), deadline=None)
@given(random_loops())
def test_shortest_path_length_matches_networkx(loop: Loop) -> None:
    graph, oracle = compile_graph(loop), _nx(loop)
    lengths = nx.single_source_shortest_path_length(oracle, loop.initial)
    for node in graph.nodes:
        assert shortest_path_length(graph, loop.initial, {node}) == lengths.get(node)
    goal = success_terminals(graph)
    best = min((lengths[t] for t in goal if t in lengths), default=None)
    assert shortest_path_length(graph, loop.initial, goal) == best


@settings(max_examples=examples(300), deadline=None)
@given(random_loops())
def test_immediate_dominators_match_networkx(loop: Loop) -> None:
    ours = immediate_dominators(compile_graph(loop), loop.initial)
    theirs = dict(nx.immediate_dominators(_nx(loop), loop.initial))
    theirs.setdefault(loop.initial, loop.initial)  # networkx >= 3.5 leaves the start out
    assert ours == theirs


@settings(max_examples=examples(300), deadline=None)
@given(random_loops())
def test_back_edges_match_networkx_dfs_tree(loop: Loop) -> None:
    """An edge is a back edge iff its target is an ancestor of (or is) its source in the DFS tree
    networkx builds visiting successors in the same (file) order; removing them leaves a DAG."""
    graph, oracle = compile_graph(loop), _nx(loop)
    tree = nx.dfs_tree(oracle, loop.initial)
    reach = set(tree.nodes)
    expected = {
        (u, v, key)
        for u, v, key in oracle.edges(keys=True)
        if u in reach and (u == v or v in nx.ancestors(tree, u))
    }
    found = back_edges(graph, loop.initial)
    assert {tuple(e) for e in found} == expected
    rest = oracle.subgraph(reach).copy()
    rest.remove_edges_from((e.source, e.target, e.label) for e in found)
    assert nx.is_directed_acyclic_graph(rest)


@settings(max_examples=examples(200), deadline=None)
@given(random_loops())
def test_closed_components_match_networkx_condensation(loop: Loop) -> None:
    graph, oracle = compile_graph(loop), _nx(loop)
    expected = []
    for comp in nx.strongly_connected_components(oracle):
        cyclic = len(comp) > 1 or oracle.has_edge(next(iter(comp)), next(iter(comp)))
        leaves = any(v not in comp for u in comp for v in oracle.successors(u))
        if cyclic and not leaves:
            expected.append(sorted(comp, key=graph.order.__getitem__))
    assert sorted(closed_components(graph, graph.nodes)) == sorted(expected)
