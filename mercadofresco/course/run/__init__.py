"""One learner's run, set apart and watched: a user and a working copy of its own (`sandbox`), its processes
measured and killed (`watch`) within the limits (`limits`), its cells run by nbval (`nbrun`), and the pytest
plugin that hands the notebook's end to the checker (`nbplugin`)."""
