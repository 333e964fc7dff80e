"""heaplayout: a heap-layout optimizer for C and C++ programs.

The Python side holds the command line and the analyses; the placing allocator is the C
library in runtime/ (libheaplayout.so), loaded into the program with LD_PRELOAD.
"""

__version__ = "0.1.0"
