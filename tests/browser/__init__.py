"""Every notebook and lab opened in JupyterLab in headless Chromium."""
