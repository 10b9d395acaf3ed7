"""The package version, in the lowest layer so that every package can name it (result-store hashes, reports).

>>> __version__
'0.1.0'
"""

__version__ = "0.1.0"
