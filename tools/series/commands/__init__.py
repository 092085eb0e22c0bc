"""One module per command: its ``OPTIONS`` and ``run(series, ui, *, ...) -> Exit``.

What a declaration holds, and the options several commands share, is in
series.commands.options; series.cli.table has one row per module.
"""
