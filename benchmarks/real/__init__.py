"""The real-program corpus: packaged C/C++ programs nobody here wrote, with generated inputs.

corpus.toml lists the programs; corpus.py reads it; generators/ writes the inputs;
outputs.py normalizes and compares outputs; run.py is the one command (docs/real-programs.md).
"""
