"""The command line: ``main`` (the click group, ``reconciler.cli.main``) and the modules below it,
one concept each: ``watch`` and ``pull`` (commands of their own, which ``main`` adds to its group),
the options commands share as decorators (``observe``, ``confine``, ``environments``), the flags of
``PlanOptions`` and ``Connection`` (``flags``) and what the command modules share (``common``).

Every command pays the imports of this package: a module here imports click and light modules at
its top, and a command imports its work inside its callback (docs/ARCHITECTURE.md, "Start-up").
"""
