"""The compiled state graph and what is computed from it: routing, diagrams, simulation."""
