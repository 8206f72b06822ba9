"""A class on JupyterHub and Binder: the image repo2docker builds, a hub of learners."""
