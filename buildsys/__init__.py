"""The jobs of build.py (the command line), one module each: the venv, downloads, Pyodide, wheels, kernels,
the JavaScript library, the npm packages, the site, the test site, serving."""
