"""Recipes for every model and artifact set the site ships (run by build.py in the test venv, PYTHONPATH=pysrc).

``python -m artifacts DEST [--cache DIR]`` makes them all in DEST and writes DEST/manifest.json (see README.md).
"""
