"""The ``tlc`` command (:mod:`.cli`) and its larger subcommands: ``tlc run`` (:mod:`.run`),
``tlc interpret``, ``tlc tune`` and ``mpirun tlc run`` (:mod:`.distributed`).  Tools call the
API; the API never imports a tool."""
