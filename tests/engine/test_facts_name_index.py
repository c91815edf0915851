"""``ModuleFacts.name_nodes`` / ``attribute_nodes`` answer from the facts' one walk what rules
used to find with a walk of their own (SHD102's uses of a task's name or attribute): the
same nodes, in the same order, for every region of every source the tests know."""

from __future__ import annotations

import libcst as cst

from shutdown_lint.facts import ModuleFacts
from shutdown_lint.traversal import walk
from tests.perf.test_walk import NESTED, _sources


def _walked(region: cst.CSTNode) -> "tuple[dict, dict]":
    """One walk of ``region``: every use of a variable (a ``Name`` outside an attribute's
    ``.attr`` part) by its value, and every ``Attribute`` by its attribute name, in walk order.
    The same walk the rules did once per name, done once for all names."""
    names: dict[str, list[cst.Name]] = {}
    attributes: dict[str, list[cst.Attribute]] = {}

    class V(cst.CSTVisitor):
        def visit_Name(self, n: cst.Name) -> None:
            names.setdefault(n.value, []).append(n)

        def visit_Attribute(self, n: cst.Attribute) -> bool:
            attributes.setdefault(n.attr.value, []).append(n)
            walk(n.value, self)  # the `.attr` part is not a use of a variable
            return False

    walk(region, V())
    return names, attributes


def test_name_and_attribute_index_match_a_walk():
    checked = 0
    for name, code in [*_sources(), ("nested", NESTED)]:
        module = cst.parse_module(code)
        facts = ModuleFacts.build(module)
        values = sorted(facts._names_by_value)[:40]
        attrs = sorted(facts._attributes_by_name)[:40]
        regions = [module] + [fn.node.body for fn in facts.functions[:15]] + [c.node for c in facts.classes[:5]]
        for region in regions:
            walked_names, walked_attributes = _walked(region)
            for v in values:
                assert facts.name_nodes(region, v) == walked_names.get(v, []), (name, v)
                checked += 1
            for a in attrs:
                assert facts.attribute_nodes(region, a) == walked_attributes.get(a, []), (name, a)
    assert checked > 1000
