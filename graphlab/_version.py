"""The package version, on the ground floor so any layer can read it without importing the package face."""
__version__ = "0.1.0"

__all__ = ["__version__"]
