"""Text and Graphviz renderings of a :class:`~._tree_view.TreeView`."""

import numpy as np

from ._tree_view import node_colours

__all__ = ["render_text", "render_dot", "render_dot_trees"]


def render_text(view, show_info=False):
    """The ``export_text`` report: one line per branch and leaf."""
    lines = [f"# {note}" for note in view.notes]

    def recurse(v, depth):
        indent = "|   " * depth + "|--- "
        if v.is_leaf:
            extra = ", ".join(v.info_lines())
            tail = f"  ({extra})" if show_info and extra and not v.truncated else ""
            lines.append(indent + v.label + tail)
            return
        rows, thr = v.split
        lhs = " ".join(rows)
        conds = ((f"{v.tag} {lhs} <=", f"{v.tag} >") if v.tag else (f"{lhs} <=", f"{lhs} > "))
        for child, cond in zip(v.children, conds):
            lines.append(f"{indent}{cond} {thr}")
            recurse(child, depth + 1)

    recurse(view.root, 0)
    return "\n".join(lines) + "\n"


def _escape(text, special_characters):
    text = text.replace("\\", "\\\\").replace('"', '\\"')
    if special_characters:
        text = text.replace("<=", "&le;").replace(">", "&gt;")
    return text


def _dot_head(*, filled, rounded, fontname, rotate):
    styles = []
    if filled:
        styles.append("filled")
    if rounded:
        styles.append("rounded")
    head = ["digraph Tree {"]
    attrs = 'shape=box'
    if styles:
        attrs += f', style="{", ".join(styles)}"'
    attrs += f', color="black", fontname="{fontname}"'
    head.append(f"node [{attrs}] ;")
    head.append(f'edge [fontname="{fontname}"] ;')
    if rotate:
        head.append("rankdir=LR ;")
    return head


def _dot_body(view, node_id, *, label, filled, leaves_parallel, impurity, node_ids,
              proportion, rotate, special_characters, decimals):
    """The node, edge and rank lines of ``view``; ``node_id(node)`` is the
    dot id of heap node ``node``."""
    colours = node_colours(view) if filled else {}
    total = view.root.samples
    lines, edges, leaves = [], [], []

    def text_of(v, is_root):
        show = label == "all" or (label == "root" and is_root)
        parts = []
        if node_ids:
            parts.append(("node #" if show else "#") + str(v.node))
        if v.is_leaf:
            parts.append(v.label)
        else:
            rows, thr = v.split
            parts.extend(rows[:-1])
            parts.append(f"{rows[-1]} <= {thr}")
        if impurity and view.classification and v.value is not None and v.value.size > 1:
            gini = 1.0 - float(np.sum(np.asarray(v.value, dtype=float) ** 2))
            if np.isfinite(gini):
                parts.append(("gini = " if show else "") + f"{gini:.{decimals + 1}g}")
        n = v.samples
        if n is not None:
            if proportion and total:
                parts.append(("samples = " if show else "") + f"{100 * n / total:.1f}%")
            else:
                parts.append(("samples = " if show else "") + f"{n:.0f}")
        if v.info:
            parts.append(v.info)
        return "\\n".join(_escape(p, special_characters) for p in parts)

    def visit(v, parent, is_left):
        fill = f', fillcolor="{colours[v.node]}"' if v.node in colours else ""
        lines.append(f'{node_id(v.node)} [label="{text_of(v, parent is None)}"{fill}] ;')
        if v.is_leaf:
            leaves.append(node_id(v.node))
        if parent is not None:
            edge = f"{node_id(parent)} -> {node_id(v.node)}"
            if parent == view.root.node:  # label the root's edges, as scikit-learn
                angle = (-1 if rotate else 1) * (45 if is_left else -45)
                edge += (f' [labeldistance=2.5, labelangle={angle}, '
                         f'headlabel="{"True" if is_left else "False"}"]')
            edges.append(edge + " ;")
        for k, c in enumerate(v.children):
            visit(c, v.node, k == 0)

    visit(view.root, None, True)
    body = lines + edges
    if leaves_parallel and leaves:
        body.append("{rank=same ; " + "; ".join(leaves) + "} ;")
    return body


def render_dot(view, *, label="all", filled=False, leaves_parallel=False, impurity=True,
               node_ids=False, proportion=False, rotate=False, rounded=False,
               special_characters=False, fontname="helvetica", decimals=2):
    """The ``export_graphviz`` dot source (scikit-learn's layout of the file)."""
    head = _dot_head(filled=filled, rounded=rounded, fontname=fontname, rotate=rotate)
    body = _dot_body(view, str, label=label, filled=filled, leaves_parallel=leaves_parallel,
                     impurity=impurity, node_ids=node_ids, proportion=proportion,
                     rotate=rotate, special_characters=special_characters, decimals=decimals)
    return "\n".join(head + body + ["}"]) + "\n"


def render_dot_trees(views, titles, *, label="all", filled=False, leaves_parallel=False,
                     impurity=True, node_ids=False, proportion=False, rotate=False,
                     rounded=False, special_characters=False, fontname="helvetica",
                     decimals=2):
    """The dot source of several trees: one graph, one ``cluster_<t>``
    subgraph per view, labelled ``titles[t]``. Node ``i`` of view ``t`` has
    the id ``t<t>_<i>`` (ids are unique in the graph); the texts, options
    and root edge labels are :func:`render_dot`'s, per tree."""
    out = _dot_head(filled=filled, rounded=rounded, fontname=fontname, rotate=rotate)
    for t, (view, title) in enumerate(zip(views, titles)):
        out.append(f"subgraph cluster_{t} {{")
        out.append(f'label="{_escape(title, special_characters)}" ;')
        out.append(f'fontname="{fontname}" ;')
        out.extend(_dot_body(view, lambda node, t=t: f"t{t}_{node}", label=label,
                             filled=filled, leaves_parallel=leaves_parallel,
                             impurity=impurity, node_ids=node_ids, proportion=proportion,
                             rotate=rotate, special_characters=special_characters,
                             decimals=decimals))
        out.append("}")
    return "\n".join(out + ["}"]) + "\n"
