from navigator.core.version import __version__  # noqa: F401  (navigator.__version__, as packages have it)
