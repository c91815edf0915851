"""``shutdown-lint map ENTRY``: the tree of what a program starts and how each piece stops.

``model`` (the nodes and their four endings), ``entry`` (a script, ``-m module`` or a console
script to a file and a function), ``builder`` (the walk from the entrypoint across the project's
modules, with the rules' own findings attached to the nodes by line), ``tree``/``html``
(renderers; JSON is ``model.MapResult.to_dict``, its schema ``schema.json``). See docs/map.md.
"""
