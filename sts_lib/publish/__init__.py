"""Publishing the course from a repository of one's own: its home (``_config.yml``'s ``repository:``) and the sync
that writes it into every chapter and exercise source (:mod:`sts_lib.publish.home`).

Tooling: nothing in the core, the speed path or the chapters imports it. ``python -m sts_lib.publish sync``
(run by ``make notebooks`` and ``make exercises``) rewrites the sources; ``--check`` only reports.
"""

from .home import Home, HomeError, read_home, sync

__all__ = ["Home", "HomeError", "read_home", "sync"]
