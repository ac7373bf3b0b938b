"""embscope: the vocabulary layers (input embedding and output head) of a
language-model checkpoint, from Python.

    import embscope
    m = embscope.open("meta-llama/Llama-3.1-8B")   # any MODEL the CLI takes
    m.info()                                       # dict, as `info --json`
    m.lookup(["king", "#11734"])                   # float32 array (n, hidden)
    m.neighbors("king - man + woman", k=10)        # list of dicts
    embscope.diff(base, tuned)                     # dict, as `diff --json`

Reports are the commands' ``--json`` documents as dicts, rows are numpy
arrays (copies), errors raise :class:`Error` with the command line's
one-line message, and its ``note:`` lines are :class:`Note` warnings.
"""

from ._embscope import Error, Model, Note, __version__, diff, main, open

__all__ = ["Error", "Model", "Note", "__version__", "diff", "main", "open"]
