"""What pyproject.toml cannot yet say but experimentally: the engine's one-pass strip
(ARCHITECTURE.md, "Keeping up with floods"). Optional: where it does not build, phux runs on
the pure-Python path it is checked against."""

from setuptools import Extension, setup

setup(ext_modules=[Extension("phux.engine._strip", ["src/phux/engine/_strip.c"], optional=True)])
