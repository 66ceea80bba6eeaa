"""Looking at a tree: an indented terminal view and Graphviz DOT."""

from __future__ import annotations

from drarena.corpus.records import Tree
from drarena.corpus.trees import stats_of

MAX_INDENT = 32


def _short(text: str, limit: int) -> str:
    text = " ".join(text.split())
    return text if len(text) <= limit else text[: limit - 1] + "…"


def render_text(tree: Tree, width: int = 100) -> str:
    """One line per node, indented by depth: [relation] title (chars) url."""
    stats = stats_of(tree)  # graph.stats when well formed (a file may hold anything there)
    lines = [
        f"{tree.id}: {len(tree.nodes)} nodes, depth {stats.get('max_depth', '?')}, "
        f"per depth {stats.get('nodes_per_depth', '?')}"
    ]

    # depth first with a stack of its own, not recursion: a tree file a user made (edges
    # checked, depth not) may be deeper than Python's recursion limit
    stack = [(tree.root, 0)]
    while stack:
        node_id, indent = stack.pop()
        node = tree.node(node_id)
        edge = tree.edge_to(node_id)
        rel = f"[{edge.relation}] " if edge else ""
        mark = " +" if node.expanded else ""
        # indented up to MAX_INDENT levels, deeper ones marked with their depth: a chain
        # thousands deep would otherwise print the square of its depth in spaces
        pad = "  " * min(indent, MAX_INDENT) + (f"[depth {indent}] " if indent > MAX_INDENT else "")
        head = f"{pad}{rel}{_short(node.title or node.url, width)}"
        lines.append(f"{head}  ({node.chars} chars){mark}  {node.url}")
        stack.extend((child.id, indent + 1) for child in reversed(tree.children(node_id)))
    return "\n".join(lines) + "\n"


def _esc(text: str) -> str:
    return " ".join(text.split()).replace("\\", "\\\\").replace('"', '\\"')


def _q(text: str) -> str:
    """A DOT quoted string."""
    return f'"{_esc(text)}"'


def render_dot(tree: Tree) -> str:
    """Graphviz DOT: nodes labelled by title, edges by relation and anchor text."""
    out = [
        f"digraph {_q(tree.id)} {{",
        "  rankdir=LR;",
        '  node [shape=box, fontsize=10, style="rounded"];',
        "  edge [fontsize=8];",
    ]
    for node in tree.nodes:
        title = _esc(_short(node.title or node.url, 48))
        label = f'"{title}\\n{node.chars} chars, depth {node.depth}"'  # \n: DOT line break
        out.append(f"  {_q(node.id)} [label={label}, tooltip={_q(node.url)}];")
    for edge in tree.edges:
        label = f"{edge.relation}: {_short(edge.anchor, 32)}"
        out.append(f"  {_q(edge.source)} -> {_q(edge.target)} [label={_q(label)}];")
    out.append("}")
    return "\n".join(out) + "\n"
