"""The ``embscope`` command: the command line run in this process."""

import signal
import sys

from ._embscope import main as _main


def main():
    # Ctrl-C ends the command at once, as it ends the binary: Python's own
    # handler would only note it, and the scan never looks.
    signal.signal(signal.SIGINT, signal.SIG_DFL)
    sys.exit(_main(["embscope", *sys.argv[1:]]))


if __name__ == "__main__":
    main()
