"""drarena: DR-Arena on a frozen web."""

__version__ = "0.1.0"
